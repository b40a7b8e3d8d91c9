"""What a person sees in a terminal: the two consoles (stdout, stderr) and every table and summary
the commands print.

- Names print as they are: the consoles read no markup, so a dbt node id such as
  ``[model.shop.orders]`` in a dataset name, a reason or a path is never taken for a style tag;
  colours are given as styles (``style=``, :class:`~rich.text.Text`), never inside a string.
- ``plan``, ``verify`` and ``requests`` print one line per dataset or request by default, fitted
  to the terminal's width (piped: ``$COLUMNS``, else 120 columns, one width whatever the rows
  hold): cells cropped with ``…``, never a column folded, optional columns given up and named
  (:class:`piitracer.render.tables.FittedTable`). ``--wide`` prints every column, each row whole
  on one line however long.
- The other tables keep names (datasets, steps, requests, states) whole and fold reasons and notes
  at spaces in a terminal; piped (a file, a CI log, grep), the output is plain (no colour) and
  complete: every row on one line, nothing folded or cut, whatever its length. Locations are shown
  relative to the workspace.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from piitracer.model.plan import DeletionPlan
from piitracer.model.verification import ErasureState, VerificationReport
from piitracer.model.workspace import setting_text
from piitracer.render import tables
from piitracer.workspace.layout import StateLayout

# Piped output's width: wide enough that no row of any table is folded or cut (rich pads nothing
# to the width: a table is as wide as its longest row). The --wide tables print at it too.
PIPED_WIDTH = 100_000
# The width the compact tables (plan, verify, requests) fit when piped without $COLUMNS.
PIPED_FIT_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    """A console that prints text as it is (no markup): the terminal's width, or a line per row
    when piped."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, markup=False, width=None if stream.isatty() else PIPED_WIDTH)


if TYPE_CHECKING:  # only named in annotations: importing them would load the demo and the executor
    from piitracer.api import DemoResult
    from piitracer.api.demo_shred import ShredDemoResult
    from piitracer.executor.runner import RunSummary

console = make_console()
err_console = make_console(stderr=True)


def in_words(state: str) -> str:
    """A state as a table shows it: ``awaiting_attestation`` -> ``awaiting attestation`` (the JSON
    output and the audit log keep the identifier). Request states come from the one table the
    console shows too (``render.report_facts.REQUEST_STATE_LABELS``)."""
    from piitracer.render.report_facts import request_state_label

    return request_state_label(state)


def lineage_stats_table(stats: dict) -> Table:
    """``lineage stats``: counts of datasets, columns and edges by type."""
    table = Table(title="lineage", show_header=False)
    for key in ("datasets", "columns", "column_edges", "masked_edges", "units_read", "ingest_problems", "ingest_info"):
        table.add_row(key.replace("_", " "), str(stats[key]))
    for edge_type, count in stats["column_edges_by_type"].items():
        table.add_row(f"  {edge_type}", str(count))
    for relation, count in stats["dataset_edges_by_relation"].items():
        table.add_row(f"  dataset {relation}", str(count))
    return table


def discovery_table(title: str, discovery, place: Callable[[object], str] = str) -> Table:
    """``catalog discover``: a row per discovered table (what its own metadata says) and per view;
    ``place`` shows a location (relative to the workspace when inside it)."""
    table = Table(title=title)
    tables.name_column(table, "dataset", [t.table or t.name for t in discovery.tables] + list(discovery.views))
    tables.name_column(table, "format", [t.format.value for t in discovery.tables] + ["view"])
    tables.text_column(table, "location")
    tables.text_column(table, "columns")
    tables.name_column(table, "write mode", [t.write_mode.value for t in discovery.tables if t.write_mode])
    tables.text_column(table, "retention")
    tables.text_column(table, "notes")
    for found in discovery.tables:
        notes = [*found.refs, *found.features, *(f"problem: {p}" for p in found.problems)]
        if found.shallow_clone_of is not None:
            notes.insert(0, f"shallow clone of {found.shallow_clone_of}")
        if found.format_version:
            notes.insert(0, f"format v{found.format_version}")
        table.add_row(Text(found.table or found.name), found.format.value, Text(place(found.location)),
                      Text(", ".join(found.columns)), found.write_mode.value if found.write_mode else "",
                      Text(retention_text(found.retention)), Text("; ".join(notes)))
    for view, columns in sorted(discovery.views.items()):
        table.add_row(Text(view), "view", "", Text(", ".join(columns)), "", "", "kept by the Spark catalog")
    return table


def discovered_json(found) -> dict:
    """One discovered table as ``catalog discover --output json`` lists it."""
    return {"dataset": found.name, "format": found.format.value,
            "location": str(found.location), "table": found.table, "columns": list(found.columns),
            "write_mode": found.write_mode.value if found.write_mode else None,
            "retention": {k: setting_text(v) for k, v in found.retention.items()},
            "format_version": found.format_version, "refs": list(found.refs),
            "shallow_clone_of": str(found.shallow_clone_of) if found.shallow_clone_of else None,
            "partition_columns": list(found.partition_columns), "features": list(found.features),
            "problems": list(found.problems)}


def retention_text(retention: dict) -> str:
    return ", ".join(f"{k}: {setting_text(v)}" for k, v in retention.items())


def classification_table(verdicts) -> Table:
    """``catalog classify``: a row per column classified as personal data."""
    table = Table(title="personal data columns (a proposal: confirm before relying on it)")
    shown = [v for v in verdicts if v.kind]
    tables.name_column(table, "dataset", [v.dataset for v in shown])
    tables.name_column(table, "column", [v.shown for v in shown])
    tables.name_column(table, "kind", [v.words or "" for v in shown])
    tables.name_column(table, "confidence", [], justify="right")
    tables.name_column(table, "valid/sampled", [], justify="right")
    tables.text_column(table, "reasons")
    for verdict in verdicts:
        if verdict.kind:
            counts = f"{verdict.valid}/{verdict.sampled}" if verdict.valid is not None and verdict.sampled else ""
            table.add_row(Text(verdict.dataset), Text(verdict.shown), Text(verdict.words or ""),
                          f"{verdict.confidence:.2f}", counts, Text("; ".join(verdict.reasons)))
    return table


def drift_table(differences) -> Table:
    """``catalog check``: a row per difference between the catalog and the lakehouse."""
    table = Table(title="catalog vs lakehouse")
    tables.name_column(table, "dataset", [d.dataset for d in differences])
    tables.name_column(table, "field", [d.field for d in differences])
    tables.text_column(table, "catalog")
    tables.text_column(table, "lakehouse")
    tables.name_column(table, "", ["override"])
    for d in differences:
        table.add_row(Text(d.dataset), Text(d.field), Text(d.catalog), Text(d.lakehouse),
                      "drift" if d.drift else "override")
    return table


def request_board_table(shown, now: datetime) -> Table:
    """``piitracer requests``: a row per request, its deadline, days left and state."""
    table = Table(title=f"requests ({len(shown)})")
    tables.name_column(table, "request", [r.request_id for r in shown])
    for name in ("received", "deadline"):
        tables.name_column(table, name, ["0000-00-00"])
    tables.name_column(table, "days left", [], justify="right")
    tables.name_column(table, "subjects", [], justify="right")
    tables.name_column(table, "state", [in_words(r.state.value) for r in shown] + ["awaiting attestation"])
    tables.text_column(table, "last action")
    for r in shown:
        flag = " OVERDUE" if r.overdue(now) else ""
        table.add_row(r.request_id, f"{r.received_at:%Y-%m-%d}", f"{r.deadline_at:%Y-%m-%d}", f"{r.days_left(now)}{flag}",
                      str(r.subjects), in_words(r.state.value), f"{r.last_action} ({r.last_action_at:%Y-%m-%d %H:%M})")
    return table


def print_batch(chosen, budget: float | None, over: bool, out: Path | None) -> None:
    for request in chosen.cannot_wait:
        console.print(Text.assemble(("cannot wait", "yellow"), f": request {request.request_id} is due "
                                    f"{request.deadline_at:%Y-%m-%d}, before the next window; plan it now (--due-within "
                                    "a longer window, or plan it alone)"))
    if chosen.plan is None:
        console.print("no queued request is due within the window: nothing planned", highlight=False)
        return
    estimate = chosen.estimate
    table = Table(title=f"batch of {len(chosen.requests)} request(s): estimate from table metadata")
    tables.name_column(table, "step", [s.step_id for s in estimate.steps])
    tables.name_column(table, "dataset", [s.dataset for s in estimate.steps])
    tables.name_column(table, "action", [s.action for s in estimate.steps])
    for name in ("files", "bytes", f"cost ({estimate.currency})"):
        tables.name_column(table, name, [], justify="right")
    tables.text_column(table, "basis")
    for step in estimate.steps:
        table.add_row(step.step_id, step.dataset, step.action, f"{step.files:,}", f"{step.bytes:,}", f"{step.cost:,.2f}",
                      step.basis + (f"; restore delay {step.delay}" if step.delay else ""))
    console.print(table)
    seconds = estimate.seconds
    timing = (f"about {seconds:,.0f} s at {estimate.throughput:,.0f} bytes/s measured here" if seconds is not None
              else "run time unknown: no rewrite measured on this lakehouse yet")
    console.print(f"total: {estimate.files:,} files, {estimate.bytes:,} bytes, {estimate.cost:,.2f} {estimate.currency}; "
                  f"{timing}", highlight=False)
    if over:
        console.print(Text.assemble(("over budget", "red"), f": {estimate.cost:,.2f} > {budget:,.2f} {estimate.currency}; "
                                    "top costs: " + ", ".join(f"{s.step_id} {s.dataset} {s.cost:,.2f}"
                                                              for s in estimate.top_costs(3))))
    if out is not None:
        console.print(f"wrote {out}: requests {', '.join(r.request_id for r in chosen.requests)} planned", highlight=False)
    else:
        console.print("nothing written (--over-budget OK writes it anyway)", highlight=False)


def chunk_summary(report: VerificationReport) -> str:
    """One line: how the Parquet column chunks of every dataset were proven or decoded, and bytes read."""
    methods = ("dictionary", "pages", "statistics", "page_index", "bloom", "type")
    counts = {m: sum(getattr(d.chunk_proofs, m) for d in report.datasets) for m in (*methods, "decoded")}
    read, total = (sum(d.chunk_proofs.bytes_read for d in report.datasets),
                   sum(d.chunk_proofs.bytes_total for d in report.datasets))
    how = ", ".join(f"{m.replace('_', ' ')} {counts[m]:,}" for m in methods if counts[m])
    proven = sum(counts[m] for m in methods)
    return (f"Parquet column chunks: {counts['decoded']:,} decoded, {proven:,} proven without decoding"
            + (f" ({how})" if how else "") + f"; read {read:,} of {total:,} bytes")


STATE_STYLE = {ErasureState.ERASED: "green", ErasureState.CRYPTO_SHREDDED: "green", ErasureState.ATTESTED: "green",
               ErasureState.NO_ACTION: "dim",
               ErasureState.PENDING: "yellow", ErasureState.AWAITING_ATTESTATION: "yellow", ErasureState.FOUND: "red",
               ErasureState.UNPLANNED: "red", ErasureState.NOT_CHECKED: "red"}


def verification_table(report: VerificationReport) -> Table:
    """One row per dataset: state, files scanned, snapshots checked, findings, pending-until/reason."""
    table = Table(title=f"verification of plan {report.plan_id[:12]} at {report.checked_at:%Y-%m-%d %H:%M:%S} UTC")
    tables.name_column(table, "dataset", [d.dataset for d in report.datasets])
    tables.name_column(table, "state", [in_words(d.state.value) for d in report.datasets])
    for name in ("files", "snapshots", "findings"):
        tables.name_column(table, name, [], justify="right")
    tables.text_column(table, "pending until / reason")
    for item in report.datasets:
        table.add_row(Text(item.dataset), Text(in_words(item.state.value), style=STATE_STYLE[item.state]), str(item.files_scanned),
                      str(item.snapshots_checked), str(len(item.findings)), Text(_detail(item)))
    return table


def demo_summary(result: DemoResult) -> Table:
    """Datasets erased, rows removed, files rewritten, bytes removed, time per phase, the files written."""
    totals = result.totals()
    build = result.build
    if result.verification is not None and result.verification.complete:
        status = "complete (verified" + (", closed)" if result.closed else ")")
    else:
        status = result.run.status if result.run else "not executed"
    table = Table(title=f"piitracer demo: {status}", show_header=False)
    table.add_row("lakehouse", f"{'reused' if build.reused else 'built'}: {build.rows:,} payments up to {build.anchor}")
    table.add_row("subjects", f"{result.subjects} ({result.subject_rows} source rows before the erasure)")
    if result.subject_rows == 0:
        table.add_row("", Text("already erased in this lakehouse: use --rebuild or --subjects N", style="yellow"))
    table.add_row("datasets erased", str(totals["datasets_erased"]))
    table.add_row("rows removed", f"{totals['rows_deleted']:,}")
    table.add_row("files rewritten / removed", f"{totals['files_rewritten']:,} / {totals['files_removed']:,}")
    table.add_row("bytes removed", f"{totals['bytes_removed']:,}")
    if result.run is not None and result.run.awaiting():
        table.add_row("after execute", f"{result.run.status}: {len(result.run.awaiting())} step(s) awaiting attestation: "
                      + ", ".join(f"{r.step.id} {r.step.action.value} {r.step.dataset}" for r in result.run.awaiting()))
    if result.first_verification is not None and result.first_verification is not result.verification:
        table.add_row("first verification", "not complete: verify exits 1 while person steps are open")
    if result.attestations:
        table.add_row("attested (simulated)", ", ".join(f"{e.body['step_id']} by {e.body['attested_by']}"
                                                        for e in result.attestations))
    if result.verification is not None:
        states = Counter(d.state.value for d in result.verification.datasets)
        verdict = (Text("complete: no subject data found, every person step attested", style="green")
                   if result.verification.complete
                   else Text("not complete: subject data found, pending or awaiting attestation", style="red"))
        table.add_row("verification", Text.assemble(verdict, f" ({', '.join(f'{n} {state}' for state, n in sorted(states.items()))})"))
    if result.closed:
        table.add_row("closed", f"{', '.join(result.closed)}: data key destroyed, piitracer's own copies shredded")
    elif result.verification is not None and result.verification.complete:
        table.add_row("not closed", "watching (--no-close); PIITRACER_MASTER_KEY_FILE="
                      f"{StateLayout(result.folder).demo_key('master')} opens the plan for verify")
    if result.audit_intact is not None:
        table.add_row("audit trail", "recorded, chain intact" if result.audit_intact else Text("chain broken", style="red"))
    for phase, seconds in result.seconds.items():
        table.add_row(f"time: {phase}", f"{seconds:.1f} s")
    table.add_row("time: total", f"{sum(result.seconds.values()):.1f} s")
    table.add_row("plan", str(result.plan_path))
    table.add_row("lineage diagram", str(result.diagram_path))
    if result.report_path is not None:
        table.add_row("audit report", str(result.report_path))
    if result.certificate_path is not None:
        table.add_row("erasure certificate", f"{result.certificate_path} (check: piitracer audit check-certificate "
                      f"{result.certificate_path} --public-key {result.public_key_path})")
    return table


def shred_demo_summary(result: ShredDemoResult) -> Group:
    """``demo --shred``: per dataset shred or erase and why, the files each shredded table changed,
    its history read back, then what was checked: the key, the proof, the other people, the
    subject's ciphertext, the decrypted table; times and the files written."""
    verified = result.verification is not None and result.verification.complete
    status = ("complete (verified" + (", closed)" if result.closed else ")") if result.complete
              else "verified, but a check failed" if verified else result.run.status if result.run else "not executed")
    build, run = result.build, (result.run.by_dataset() if result.run else {})
    datasets = Table(title=f"piitracer demo --shred: {status}")
    tables.name_column(datasets, "dataset", [d.dataset for d in result.plan.datasets])
    tables.name_column(datasets, "erasure", ["shred", "erase"])
    for header in ("files changed", "history read back", "other people's rows decrypt", "why"):
        tables.text_column(datasets, header)
    for decision in result.plan.datasets:
        files, history = result.files.get(decision.dataset), result.history.get(decision.dataset)
        done = run.get(decision.dataset, {})
        changed = (f"{files[1]} of {files[0]}" if files else
                   f"{done.get('files_rewritten', 0)} rewritten, {done.get('files_removed', 0)} removed" if done else "")
        read = (f"{history.count} {history.kind}; the subject's {history.subject_rows} rows "
                + ("no longer decrypt" if not history.subject_rows_opened else f"decrypt ({history.subject_rows_opened})")
                if history else f"{done.get('rows_deleted', 0)} rows of the subject deleted, old versions vacuumed" if done else "")
        others = (f"{history.other_rows - history.other_rows_failed:,} of {history.other_rows:,}" if history else "")
        datasets.add_row(decision.dataset, decision.status.value, changed, read, others, decision.reason)
    checked = Table(show_header=False)
    checked.add_row("lakehouse", f"{'reused' if build.reused else 'built'}: {build.rows:,} payments of {build.people} people "
                    f"in {build.loads} loads, pan, phone and aadhaar_ref stored as ciphertext under each person's key")
    if result.key_before is not None and result.key_before.subject_keys == 0:
        checked.add_row("", Text("already shredded in this lakehouse: use --rebuild", style="yellow"))
    if result.key is not None:
        key = ("removed: the vault gives no key for the subject" if result.key.subject_keys == 0
               else f"NOT removed: the vault still gives {result.key.subject_keys} key(s) for the subject")
        checked.add_row("subject's key", Text(f"{key}; {result.key.other_keys:,} other people's keys kept",
                                              style="green" if result.key.ok else "red"))
    if result.verification is not None:
        states = Counter(d.state.value for d in result.verification.datasets)
        from piitracer.render.report_facts import state_label  # a dataset's state in words: crypto-shredded

        counts = ", ".join(f"{n} {state_label(state)}" for state, n in sorted(states.items()))
        checked.add_row("verify", Text(f"{'complete' if verified else 'not complete'} ({counts})",
                                       style="green" if verified else "red"))
    if result.sample is not None:
        checked.add_row("other subjects", Text(f"{result.sample.people} people sampled: {result.sample.matched} of "
                                               f"{result.sample.rows} rows decrypt to their original values",
                                               style="green" if result.sample.ok else "red"))
    tried = sum(h.subject_rows for h in result.history.values())
    opened = sum(h.subject_rows_opened for h in result.history.values())
    checked.add_row("subject's ciphertext", Text(f"{tried - opened} of {tried} rows fail to decrypt, in every version and "
                                                 "snapshot", style="green" if tried and not opened else "red"))
    if result.clear_before is not None and result.clear_after is not None:
        kept = result.clear_after[1:] == result.clear_before[1:]
        checked.add_row("decrypted table", Text(
            f"{result.decrypted}: {result.clear_before[0]} rows of the subject before, {result.clear_after[0]} after; "
            f"{result.clear_after[1]:,} other rows " + ("unchanged (count and checksum)" if kept else "CHANGED"),
            style="green" if kept and not result.clear_after[0] else "red"))
    if result.closed:
        checked.add_row("closed", f"{', '.join(result.closed)}: piitracer's own copy of the subject shredded")
    if result.audit_intact is not None:
        checked.add_row("audit trail", "recorded, chain intact" if result.audit_intact else Text("chain broken", style="red"))
    for phase, seconds in result.seconds.items():
        checked.add_row(f"time: {phase}", f"{seconds:.1f} s")
    checked.add_row("plan", str(result.plan_path))
    if result.certificate_path is not None:
        checked.add_row("erasure certificate", f"{result.certificate_path} (check: piitracer audit check-certificate "
                        f"{result.certificate_path} --public-key {result.public_key_path})")
    return Group(datasets, checked)


def shred_demo_json(result: ShredDemoResult) -> dict:
    """``demo --shred --output json``: what the crypto-shredding demo did and checked (no subject value)."""
    verification = result.verification
    return {"complete": result.complete, "verified": bool(verification is not None and verification.complete),
            "checks_hold": result.checks_hold, "status": result.run.status if result.run else "not executed",
            "lakehouse": {"reused": result.build.reused, "rows": result.build.rows, "people": result.build.people,
                          "loads": result.build.loads},
            "datasets": [{"dataset": d.dataset, "status": d.status.value, "reason": d.reason,
                          **({"files": result.files[d.dataset][0], "files_changed": result.files[d.dataset][1]}
                             if d.dataset in result.files else {}),
                          **({"history": {"kind": h.kind, "count": h.count, "other_rows": h.other_rows,
                                          "other_rows_failed": h.other_rows_failed, "subject_rows": h.subject_rows,
                                          "subject_rows_opened": h.subject_rows_opened}}
                             if (h := result.history.get(d.dataset)) else {})} for d in result.plan.datasets],
            "states": {d.dataset: d.state.value for d in verification.datasets} if verification else {},
            "key": {"subject_keys": result.key.subject_keys, "other_keys": result.key.other_keys} if result.key else None,
            "sample": {"people": result.sample.people, "rows": result.sample.rows, "matched": result.sample.matched}
            if result.sample else None,
            "decrypted_table": {"dataset": result.decrypted, "subject_rows_before": result.clear_before[0],
                                "subject_rows_after": result.clear_after[0], "other_rows": result.clear_after[1],
                                "others_unchanged": result.clear_after[1:] == result.clear_before[1:]}
            if result.clear_before and result.clear_after else None,
            "closed": list(result.closed), "audit_intact": result.audit_intact,
            "seconds": {k: round(v, 3) for k, v in result.seconds.items()}, "plan": str(result.plan_path),
            "certificate": str(result.certificate_path) if result.certificate_path else None,
            "public_key": str(result.public_key_path) if result.public_key_path else None}


def summary_table(summary: RunSummary) -> Table:
    """Datasets, rows removed, files rewritten/removed, bytes removed, time."""
    seconds: dict[str, float] = {}
    for result in summary.results:
        seconds[result.step.dataset] = seconds.get(result.step.dataset, 0.0) + result.seconds
    table = Table(title=f"run {summary.run_id[:12]}: {summary.status} in {summary.seconds:.1f} s")
    tables.name_column(table, "dataset", list(summary.by_dataset()))
    for name in ("rows deleted", "files rewritten", "files removed", "bytes removed", "seconds"):
        tables.name_column(table, name, [], justify="right")
    for dataset, totals in summary.by_dataset().items():
        table.add_row(dataset, str(totals["rows_deleted"]), str(totals["files_rewritten"]), str(totals["files_removed"]),
                      f"{totals['bytes_removed']:,}", f"{seconds.get(dataset, 0.0):.1f}")
    return table


def redacted_json(plan: DeletionPlan) -> str:
    """The plan as JSON for a terminal or a pipe, without -o: subject values replaced (a value must
    not reach a terminal or a CI log); -o writes the executable file, values encrypted."""
    data = json.loads(plan.to_json())
    for number, subject in enumerate(data["subjects"], start=1):
        subject["value"] = f"<redacted subject #{number}>"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def run_json(summary: RunSummary) -> dict:
    """``execute --output json`` (and ``--dry-run``): the run, each step's state, counts and message
    (a dry run's message is the statement it would run, subject values redacted)."""
    return {"run_id": summary.run_id, "plan_id": summary.plan_id, "status": summary.status,
            "seconds": round(summary.seconds, 3), "datasets": summary.by_dataset(),
            "steps": [{"id": r.step.id, "dataset": r.step.dataset, "action": r.step.action.value, "state": r.state,
                       "owner": r.step.owner, "message": r.message, "seconds": round(r.seconds, 3),
                       "outcome": r.outcome.as_dict() if r.outcome else None} for r in summary.results]}


# The line under a fitted table that had to give columns up.
DROPPED = "--wide adds: {columns}"


def fitting_console() -> Console:
    """Where the compact tables of ``plan``, ``verify`` and ``requests`` print: a terminal's own
    width; piped, ``$COLUMNS`` or :data:`PIPED_FIT_WIDTH` — one width, whatever the rows hold."""
    if sys.stdout.isatty():
        return console
    columns = os.environ.get("COLUMNS", "")
    return Console(markup=False, width=int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_FIT_WIDTH)


def wide_console() -> Console:
    """Where ``--wide`` prints: every column whole, each row on one line however long (a terminal
    wraps it; ``less -S`` scrolls it)."""
    return Console(markup=False, width=PIPED_WIDTH)


def print_plan(plan: DeletionPlan, wide: bool = False) -> None:
    """``piitracer plan``'s text: one line per dataset that fits the width, or (``--wide``) every
    step and every column."""
    from piitracer.render.plan_text import plan_compact, plan_tables

    if wide:
        wide_console().print(plan_tables(plan))
    else:
        fitting_console().print(plan_compact(plan))


def print_board(shown, now: datetime, wide: bool = False) -> None:
    """``piitracer requests``: one line per request that fits the width, or (``--wide``) every
    column."""
    if wide:
        wide_console().print(request_board_table(shown, now))
    else:
        fitting_console().print(board_compact(shown, now))


def board_compact(shown, now: datetime) -> Group:
    """The request board, one line per request, fitted to the width it is printed at."""
    columns = [tables.Fit("request", minimum=12), tables.Fit("state", minimum=8),
               tables.Fit("deadline", minimum=10, drop=5), tables.Fit("days left", justify="right", minimum=4, drop=4),
               tables.Fit("subjects", justify="right", minimum=4, drop=2), tables.Fit("received", minimum=10, drop=1),
               tables.Fit("last action", minimum=10, drop=3, flexible=True)]
    rows = [[r.request_id, Text(in_words(r.state.value)), f"{r.deadline_at:%Y-%m-%d}",
             Text(f"{r.days_left(now)}" + (" OVERDUE" if r.overdue(now) else ""), style="red" if r.overdue(now) else ""),
             str(r.subjects), f"{r.received_at:%Y-%m-%d}", f"{r.last_action} ({r.last_action_at:%Y-%m-%d %H:%M})"]
            for r in shown]
    return Group(tables.line(f"requests ({len(shown)})"), tables.FittedTable(
        columns, rows, note_dropped=DROPPED))


def print_verification(report: VerificationReport, wide: bool = False) -> None:
    """``piitracer verify``'s table: one line per dataset that fits the width, or (``--wide``)
    every column."""
    if wide:
        wide_console().print(verification_table(report))
    else:
        fitting_console().print(verification_compact(report))


def verification_compact(report: VerificationReport) -> Group:
    """The verification, one line per dataset, fitted to the width it is printed at."""
    # The columns in --wide's order (a script reading the text finds them where they were).
    columns = [tables.Fit("dataset", minimum=16), tables.Fit("state", minimum=8),
               tables.Fit("files", justify="right", minimum=5, drop=1),
               tables.Fit("snapshots", justify="right", minimum=5, drop=2),
               tables.Fit("findings", justify="right", minimum=4, drop=3),
               tables.Fit("pending until / reason", minimum=12, drop=4, flexible=True)]
    rows = [[item.dataset, Text(in_words(item.state.value), style=STATE_STYLE[item.state]), str(item.files_scanned),
             str(item.snapshots_checked), str(len(item.findings)), _detail(item)] for item in report.datasets]
    return Group(
        tables.line(f"verification of plan {report.plan_id[:12]} at {report.checked_at:%Y-%m-%d %H:%M:%S} UTC"),
        tables.FittedTable(columns, rows, note_dropped=DROPPED))


def _detail(item) -> str:
    detail = item.pending_until or item.reason or ""
    if item.notes:
        detail = (detail + "; " if detail else "") + "; ".join(item.notes)
    return detail


def demo_json(result: DemoResult) -> dict:
    """``demo --output json``: what the demo did and the files it wrote (no subject value)."""
    verification = result.verification
    return {"status": result.run.status if result.run else "not executed",
            "complete": bool(verification is not None and verification.complete),
            "subjects": result.subjects, "subject_rows": result.subject_rows, "totals": result.totals(),
            "states": dict(Counter(d.state.value for d in verification.datasets)) if verification else {},
            "attested": [e.body["step_id"] for e in result.attestations], "closed": list(result.closed),
            "audit_intact": result.audit_intact, "seconds": {k: round(v, 3) for k, v in result.seconds.items()},
            "plan": str(result.plan_path), "lineage_diagram": str(result.diagram_path),
            "audit_report": str(result.report_path) if result.report_path else None,
            "certificate": str(result.certificate_path) if result.certificate_path else None,
            "public_key": str(result.public_key_path) if result.public_key_path else None}


@contextmanager
def progress_bars(on: Console | None = None) -> Iterator[Callable[[str, int, int], None] | None]:
    """Progress bars on stderr for a use case's reports (:mod:`piitracer.model.progress`): one bar
    per phase ("decoding files", "checking datasets"), gone when the work is done. Off — ``None``,
    nothing drawn, nothing reported — when stderr is not a terminal (a CI log, a pipe)."""
    on = on or err_console
    if not on.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bars = Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=on, transient=True)
    phases: dict[str, object] = {}

    def report(what: str, done: int, total: int) -> None:
        if what not in phases:
            phases[what] = bars.add_task(what, total=total)
        bars.update(phases[what], completed=done, total=total)

    with bars:
        yield report
