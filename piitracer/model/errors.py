"""The errors piitracer reports to a person or a program: one root, and the named kinds a caller
can act on, each with its exit code.

Each layer raises its own subclass of one of the kinds below, with a message that names the file,
line, field, step or dataset and what was expected (never a subject value). The CLI catches
``PiitracerError`` only, in one place (``cli/main.py``), and exits with the kind's code: anything
else — a ``KeyError``, a ``TypeError`` — is a bug in piitracer and shows its traceback. The
exit-code table of the documentation is generated from :func:`error_kinds`.

>>> BadKeyError("no audit key").exit_code, BadKeyError.kind
(2, 'bad-key')
>>> [kind.kind for kind in error_kinds()][:3]
['bad-input', 'bad-workspace', 'bad-plan-file']
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


class PiitracerError(Exception):
    """A problem with piitracer's input or environment that a person can act on. Raise one of the
    named kinds below (a subclass of one), never this root itself."""

    kind: ClassVar[str] = "error"
    exit_code: ClassVar[int] = EXIT_ERROR
    what_to_do: ClassVar[str] = ""


class InputError(PiitracerError):
    """An option, a value or a file a person gave is not what the command expects."""

    kind = "bad-input"
    what_to_do = "fix the option, value or file the message names"


class BadWorkspaceError(InputError):
    """``piitracer.yaml`` (or ``catalog.discovered.yaml``) cannot be used as it is."""

    kind = "bad-workspace"
    what_to_do = "fix the file, line and field the message names"


class BadPlanFileError(InputError):
    """A plan file that is not a piitracer plan, or was edited after planning."""

    kind = "bad-plan-file"
    what_to_do = "plan again (`piitracer plan -o`); never edit a plan file"


class BadKeyError(PiitracerError):
    """A key (audit, master, signing) that is missing, unreadable, too short, open to group or
    others, or not the key that is needed: the message says which and how to supply it."""

    kind = "bad-key"
    what_to_do = "give the key the message names (an option or its environment variable), mode 0600"


class NotFoundError(PiitracerError, KeyError):
    """Something a person named (a dataset, a column, a request, a step) does not exist. A
    ``KeyError`` too, so lookups keep their usual contract; shown without KeyError's quotes."""

    kind = "not-found"
    what_to_do = "check the name; the message lists what exists where it can"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class CannotPlanError(PiitracerError):
    """The lineage and the catalog do not allow the plan asked for (an unknown source column, a
    subject value not of its key's type, sources that cannot be batched together)."""

    kind = "cannot-plan"
    what_to_do = "fix the source or subject named; `piitracer lineage show` shows what is known"


class RefusedError(PiitracerError):
    """piitracer refuses to act, before the first step: a plan it did not make here or that was
    altered, a path outside the catalogued location or the warehouse roots, a table that is not
    where the catalog says, a step that cannot be run safely."""

    kind = "refused"
    what_to_do = "read the reason: plan again, fix the catalog or the roots; nothing was changed"


class NeedsApprovalError(RefusedError):
    """A plan that may not run yet: the workspace requires a second person's approval
    (``policy.approval: required``) and no approver other than its planner has given it; the
    message names who may approve."""

    kind = "needs-approval"
    what_to_do = "one of the approvers named approves the plan (the console, or `piitracer approve`); then execute"


class IdentityRefusedError(RefusedError):
    """Who acts is not proven: a rule needs a person (the planner under ``policy.approval:
    required``, an approver, an owner who attests, who executes) to prove who they are with their
    own token, and a name, an account or a token that is not theirs was given."""

    kind = "identity"
    what_to_do = ("prove who you are with your own token (--token-file FILE or $PIITRACER_TOKEN; `piitracer owners "
                  "add NAME` makes one, with the workspace's keys)")


class NotNowError(PiitracerError):
    """A request or plan that is not in a state for what was asked (close before it is watched,
    a closed request planned again)."""

    kind = "not-now"
    what_to_do = "do the step the message names first, or wait for the date it gives"


class UnavailableError(PiitracerError):
    """A system piitracer needs does not answer as configured: Spark, an object store, an Iceberg
    catalog, a table whose metadata cannot be read."""

    kind = "unavailable"
    what_to_do = "check the service, the credentials in the environment, the settings named; retry"


class StepFailedError(PiitracerError):
    """A step of an erasure failed while running; the journal and the audit log record it."""

    kind = "step-failed"
    what_to_do = "fix the cause, then `piitracer execute PLAN --resume` (committed steps are not repeated)"


class CannotVerifyError(PiitracerError):
    """A verification that cannot be made (the plan never ran here, its values are shredded)."""

    kind = "cannot-verify"
    what_to_do = "run `piitracer execute` first; a closed request's proof is its certificate"


class AuditLogError(PiitracerError):
    """The audit log (or its anchor) cannot be opened or used as it is."""

    kind = "audit-log"
    what_to_do = "check the workspace's .piitracer/audit.sqlite and audit.anchor; `piitracer audit verify`"


class NotCertifiableError(PiitracerError):
    """A certificate piitracer will not sign: the audit log is not intact, or the request's latest
    verification is not complete."""

    kind = "not-certifiable"
    exit_code = EXIT_FOUND
    what_to_do = "verify until complete (attest person steps), check the log with `piitracer audit verify`"


def error_kinds() -> list[type[PiitracerError]]:
    """The named kinds, in the order of the documentation's table."""
    return [InputError, BadWorkspaceError, BadPlanFileError, BadKeyError, NotFoundError, CannotPlanError,
            RefusedError, NeedsApprovalError, IdentityRefusedError, NotNowError, UnavailableError, StepFailedError, CannotVerifyError, AuditLogError,
            NotCertifiableError]


def kind_of(error_type: type[PiitracerError]) -> type[PiitracerError]:
    """The named kind an error class belongs to (its nearest named ancestor)."""
    named = set(error_kinds())
    return next((base for base in error_type.__mro__ if base in named), PiitracerError)


def exit_code_table() -> str:
    """The exit codes as a Markdown table: 0, 1, then each kind of error (generated into the CLI
    reference)."""
    rows = ["| exit | kind | when | what to do |", "| --- | --- | --- | --- |",
            "| 0 | ok | the command did what was asked (verify: nothing of the subjects found, every step done) | |",
            "| 1 | found | subject data still found, a step still open, an audit log tampered with | read the findings |"]
    for kind in error_kinds():
        when = " ".join((kind.__doc__ or "").split())
        rows.append(f"| {kind.exit_code} | `{kind.kind}` | {when} | {kind.what_to_do} |")
    return "\n".join(rows)
