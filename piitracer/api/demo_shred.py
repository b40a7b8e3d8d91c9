"""``piitracer demo --shred``: the crypto-shredding demo (issue 42). Build a lakehouse whose PII is
ciphertext under each person's key (:mod:`piitracer.demo.shred_lake`), erase one person through
one session (plan, execute, verify, close, certificate) with the demo's own keys, then check
independently what the erasure did (:mod:`piitracer.demo.shred_checks`): no file of a shredded
table changed, every version and snapshot still reads back and decrypts for everyone else, the
person's key is gone and their ciphertext no longer opens, a sample of other people decrypt to
their original values, and the decrypted table lost the person's rows and nothing else."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping

from piitracer.api.demo import PhaseClock, demo_keys
from piitracer.api.plan import plan_requests
from piitracer.api.session import open as open_session
from piitracer.api.wiring import write_private
from piitracer.crypto.signing import public_key_path
from piitracer.demo import SUBJECT_USER_ID
from piitracer.demo import shred_checks as checks
from piitracer.demo.shred_lake import (CLEAR, FOLDERS, SHREDDED_SPECS, SHRED_ROWS, SOURCE_COLUMN, ShredBuild,
                                       build_shred_lake, prepare_shred_workspace)
from piitracer.executor.runner import ExecuteOptions, RunSummary
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.model.verification import VerificationReport

SHRED_DEMO_FOLDER = "demo-shred"


@dataclass
class ShredDemoResult:
    """What :func:`run_shred_demo` did, and what its own checks found after the erasure."""

    folder: Path
    build: ShredBuild
    subjects: int
    plan: DeletionPlan
    plan_path: Path
    run: RunSummary | None = None
    verification: VerificationReport | None = None
    certificate_path: Path | None = None
    public_key_path: Path | None = None
    closed: list[str] = field(default_factory=list)
    audit_intact: bool | None = None
    # The independent checks: shredded dataset -> (files hashed, files changed by the erasure).
    files: dict[str, tuple[int, int]] = field(default_factory=dict)
    history: dict[str, checks.HistoryReadBack] = field(default_factory=dict)
    key_before: checks.KeyCheck | None = None  # before the erasure: no key for the subject means already shredded
    key: checks.KeyCheck | None = None
    sample: checks.SampleCheck | None = None
    decrypted: str = CLEAR  # the table a job decrypted into (erased physically)
    # The decrypted table: (subject rows, other rows, checksum of the other rows) before and after.
    clear_before: tuple[int, int, str] | None = None
    clear_after: tuple[int, int, str] | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Verified complete, and every independent check held."""
        return bool(self.verification is not None and self.verification.complete and self.checks_hold)

    @property
    def checks_hold(self) -> bool:
        """Every independent check held (nothing of a shredded table changed, history decrypts for
        others and not for the subject, the key is gone, the sample decrypts, the decrypted table
        erased with every other row kept)."""
        clear = (self.clear_before is not None and self.clear_after is not None and self.clear_after[0] == 0
                 and self.clear_after[1:] == self.clear_before[1:])
        return (bool(self.files) and all(changed == 0 for _, changed in self.files.values())
                and bool(self.history) and all(h.ok for h in self.history.values())
                and self.key is not None and self.key.ok and self.sample is not None and self.sample.ok and clear)


def run_shred_demo(
    folder: str | os.PathLike[str] = SHRED_DEMO_FOLDER,
    rows: int | None = None,
    rebuild: bool = False,
    close: bool = True,
    spark: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ShredDemoResult:
    """The crypto-shredding demo in ``folder``, as a short script over one session.

    Write the workspace (once) and build its lakehouse (or reuse it), plan the erasure of user
    8841302 from ``prod.payments.user_id``, write ``plan.json`` (0600), execute it, verify, close
    the request and write the signed certificate, with the demo's own keys
    ([`demo_keys`][piitracer.api.demo.demo_keys]). Around the erasure, check independently of the
    verifier what it did to the tables and the vault.

    Args:
        folder: the demo's folder (made when missing); not the main demo's.
        rows: payments to build (default 3,000, about 250 people); at least 100.
        rebuild: build the lakehouse again instead of reusing it.
        close: close the request of a complete erasure (piitracer's own copy of the person shredded).
        spark: settings for the workspace's ``spark:`` section, used when the workspace is first
            written (the resolve step reads the source on local Spark).
        progress: gets one line per phase and step.

    Returns:
        The build, the plan, the run, the verification, the certificate, and the independent checks.

    Raises:
        DemoBuildError: the folder holds another workspace, or too few rows.
        ExecutionError: a step failed (the run is recorded first, as ``execute`` records it).
    """
    say = progress or (lambda message: None)
    phase = PhaseClock()
    seconds = phase.seconds

    root = prepare_shred_workspace(Path(folder), spark=spark)
    keys = demo_keys(root)
    workspace = load_workspace(root)
    built = build_shred_lake(workspace, keys.master, rows=rows or SHRED_ROWS, rebuild=rebuild, progress=say)
    phase("build")
    say(f"lakehouse {'reused' if built.reused else 'built'}: {built.rows:,} payments of {built.people} people, "
        f"{built.loads} loads")
    subjects = [SUBJECT_USER_ID]
    before = {name: checks.file_digests(root / FOLDERS[name]) for name in SHREDDED_SPECS}
    clear_before = checks.plaintext_rows(root, subjects)
    key_before = checks.key_gone(root, keys.master, subjects)

    received = datetime.now(timezone.utc).replace(microsecond=0)
    batch = [Subject(value=str(v), request_id=f"demo-shred-{received:%Y%m%dT%H%M%S}-{i + 1}", received_at=received)
             for i, v in enumerate(subjects)]
    plan_path = root / "plan.json"
    with open_session(workspace, keys) as session:
        planned = session.plan([SOURCE_COLUMN], batch, keep=True, action="planned (demo --shred)")
        write_private(plan_path, planned.text)
        result = ShredDemoResult(folder=root, build=built, subjects=len(batch), plan=planned.plan, plan_path=plan_path,
                                 seconds=seconds, clear_before=clear_before,
                                 key_before=key_before)
        phase("plan")
        say(f"planned {len(planned.plan.steps)} steps: {plan_path}")
        result.run = session.execute(plan_path, ExecuteOptions(no_concurrent_writers=True), on_step=lambda r: say(
            f"  {r.step.id} {r.step.action.value} {r.step.dataset}: {r.state}"))
        phase("execute")
        result.verification = session.verify(plan_path).report
        say("verified: " + ("complete" if result.verification.complete else "not complete"))
        phase("verify")
        if close and result.verification.complete:
            for request_id in plan_requests(planned.plan):
                session.close(request_id, now_reason="demo: closed at once, no watching period")
                result.closed.append(request_id)
        result.audit_intact = session.check_audit().ok
        if result.verification.complete:
            result.public_key_path = public_key_path(session.keys.signing_key_file)
            document = session.certificate(batch[0].request_id)
            result.certificate_path = root / "certificate.json"
            result.certificate_path.write_text(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                                               encoding="utf-8")
    phase("audit")

    # What a reader of the lakehouse finds now, checked apart from the verifier.
    for name in SHREDDED_SPECS:
        result.files[name] = (len(before[name]), checks.changed_files(before[name], checks.file_digests(root / FOLDERS[name])))
        result.history[name] = checks.history_read_back(root, keys.master, name, subjects)
    result.key = checks.key_gone(root, keys.master, subjects)
    result.sample = checks.sample_decrypts(root, keys.master, built.rows, built.seed, subjects)
    result.clear_after = checks.plaintext_rows(root, subjects)
    phase("checks")
    say("checked: " + ("every check held" if result.checks_hold else "a check failed"))
    return result


__all__ = ["SHRED_DEMO_FOLDER", "ShredDemoResult", "run_shred_demo"]
