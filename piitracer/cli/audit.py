"""``piitracer audit``: verify the tamper-evident audit log, report on a request, make, sign and
check erasure certificates. Use case: :mod:`piitracer.api.audit`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from piitracer.cli import params, suggest
from piitracer.cli.common import EXIT_FOUND, EXIT_OK, echo_json, open_session

# The use cases, the keys' rooms and rich are imported in the commands' bodies: `audit ... --help`
# and a usage mistake load click and this module only.


@click.group()
@params.everything
@click.pass_context
def audit(ctx: click.Context, output: str) -> None:
    """The tamper-evident audit trail: verify it, report on a request, make, sign and check
    erasure certificates."""


@audit.command("verify")
@click.option("--expect-head", metavar="HASH", help="An entry hash noted earlier (e.g. the head an auditor was "
              "given; at least 16 hex digits): the log must still hold that entry.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def audit_verify(ctx: click.Context, output: str, expect_head: str | None) -> None:
    """Recompute the chain, hashes, seals, sequence and Merkle roots; check the log's structure, its
    anchor (audit.anchor), --expect-head and the journal (every executed plan recorded). Exit 0
    intact, 1 tampered (the first problem is named), 2 error (no key, unreadable log)."""
    with open_session(ctx) as session:
        workspace = session.workspace
        result = session.check_audit(expect_head)
    if output == "json":
        click.echo(json.dumps({"ok": result.ok, "entries": result.entries, "head_hash": result.head_hash,
                               "bad_entry": result.problem.seq if result.problem else None,
                               "problem": str(result.problem) if result.problem else None,
                               "checks": list(result.checks)}, indent=2))
    elif result.ok:
        click.echo(f"audit log intact: {result.entries} entries, head {result.head_hash}")
        for check in result.checks:
            click.echo(f"  {check}")
        if not workspace.config.audit.anchor:
            click.echo("  no audit.anchor configured: a log emptied together with the journal is only detected with "
                       "--expect-head")
    else:
        click.echo(f"audit log TAMPERED: {result.problem}", err=True)
    sys.exit(EXIT_OK if result.ok else EXIT_FOUND)


@audit.command("report")
@click.option("--request", "request_id", required=True, metavar="ID", help="The request to report on.")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write here instead of stdout.")
@click.option("--format", "fmt", type=click.Choice(["html", "md"]), default="html", show_default=True,
              help="The report's document format.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def audit_report_command(ctx: click.Context, request_id: str, out: Path | None, fmt: str, output: str) -> None:
    """The audit report of one request, from the audit log (and the workspace's lineage). --format
    chooses the document; with -o, --output json reports the file written as JSON (without -o the
    document itself is the output, so --output json needs -o)."""
    if output == "json" and out is None:
        raise click.UsageError("--output json reports the file written: give -o FILE (the report is html or md)")
    from piitracer.cli.terminal import err_console

    with open_session(ctx) as session:
        text = session.report(request_id, fmt)
    if out is None:
        click.echo(text, nl=False)
        return
    out.write_text(text, encoding="utf-8")
    if output == "json":
        echo_json({"request_id": request_id, "report": str(out), "format": fmt})
    else:
        err_console.print(f"wrote {out}", highlight=False)


@audit.command("keygen")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@params.output
def audit_keygen(path: Path, output: str) -> None:
    """Make an Ed25519 signing key for certificates: the private key at PATH (mode 0600; keep it
    like the audit key, never overwritten) and the public key at PATH.pub (give it to auditors)."""
    from piitracer.crypto.envelope import missing_folder
    from piitracer.crypto.signing import SigningKeyError, generate_signing_key

    if not path.parent.is_dir():  # not made here: where a secret lives, and who may list it, is the owner's choice
        raise SigningKeyError(missing_folder(path))
    public_path, fingerprint = generate_signing_key(path)
    if output == "json":
        click.echo(json.dumps({"signing_key": str(path), "public_key": str(public_path), "fingerprint": fingerprint}))
    else:
        click.echo(f"wrote the signing key {path} (0600) and its public key {public_path}; fingerprint {fingerprint}")


@audit.command("certificate")
@click.option("--request", "request_id", required=True, metavar="ID", help="The request to certify.")
@click.option("-o", "--out", type=click.Path(dir_okay=False, path_type=Path), help="Write the certificate here.")
@params.output
@params.workspace
@params.keys
@click.pass_context
def audit_certificate(ctx: click.Context, request_id: str, out: Path | None, output: str) -> None:
    """A signed erasure certificate of one request: its HMAC'd subjects, each dataset's final state
    with its evidence counts, the attestations, the close (shred time), the Merkle root and chain
    head. Exit 0 written; 1 not certifiable (log not intact, latest verification not complete);
    2 error (no key, unknown request)."""
    from piitracer.crypto.signing import load_signing_key
    from piitracer.render.certificate import certificate_text

    signing_key = params.shared(ctx).get("signing_key_file")
    load_signing_key(signing_key)  # a missing or bad signing key is the first thing said, before the workspace
    with open_session(ctx) as session:
        document = session.certificate(request_id)  # NotCertifiable: 'not certified: ...', exit 1 (cli.main)
    text = json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if out is not None:
        out.write_text(text, encoding="utf-8")
    if output == "json" and out is None:
        click.echo(text, nl=False)
    elif output == "json":
        click.echo(json.dumps({"certificate": str(out), "request_id": request_id}))
    else:
        click.echo(certificate_text(document))
        if out is not None:
            click.echo(f"wrote {out}; check it with: "
                       + suggest.command_line("audit check-certificate", str(out), public_key="KEY.pub"))


@audit.command("check-certificate")
@click.argument("certificate", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--public-key", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The signer's Ed25519 public key (PEM), e.g. the .pub file `audit keygen` wrote.")
@params.output
def audit_check_certificate(certificate: Path, public_key: Path, output: str) -> None:
    """Check a certificate's signature with the signer's public key (no audit key, no workspace
    needed). Exit 0 valid; 1 changed since signing or signed by another key; 2 unreadable file or key."""
    from piitracer.api import check_certificate
    from piitracer.render.certificate import certificate_text

    document, problem = check_certificate(certificate, public_key)
    if output == "json":
        click.echo(json.dumps({"valid": problem is None, "problem": problem,
                               "request_id": (document or {}).get("certificate", {}).get("request_id")
                               if isinstance(document, dict) and isinstance(document.get("certificate"), dict) else None}))
    elif problem is None:
        click.echo("certificate valid: signed by this key and unchanged\n" + certificate_text(document))
    else:
        click.echo(f"certificate NOT valid: {problem}", err=True)
    sys.exit(EXIT_OK if problem is None else EXIT_FOUND)
