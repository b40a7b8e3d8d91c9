"""The audit report of one request: a self-contained HTML page (inline CSS, the lineage diagram as
inline SVG, no external resource of any kind) or Markdown. Everything comes from the request's
audit trail (and, for the diagram, the workspace's lineage graph), so a report can be produced
long after the run from the log alone. No subject value appears: subjects show as HMAC prefixes."""

from __future__ import annotations

import html
import re
from datetime import datetime, timezone
from typing import Any

from piitracer.graph.lineage_graph import LineageGraph
from piitracer.model.audit import RequestTrail
from piitracer.model.lineage import ColumnRef
from piitracer.render.lineage_diagram import STATE_FILLS, lineage_diagram, render_lineage
from piitracer.render.report_facts import (PROOF_HEADERS, SHRED_HEADERS, STATE_LABELS, STATES, ReportFacts, proof_rows,
                                          report_facts, shred_rows)

HMAC_PREFIX = 12  # hex characters of a subject HMAC shown: enough to tell subjects apart
CSS = """
body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1500px}
h1{font-size:22px;margin-bottom:4px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px;margin:8px 0} th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f3f8} td.num{text-align:right} code,.hash{font-family:Menlo,Consolas,monospace;font-size:11px}
.verdict{display:inline-block;padding:2px 8px;border-radius:3px;font-weight:bold}
.met{background:#c8f0c8}.open{background:#ffe2a8}.missed,.broken{background:#f6b3b3}.unknown{background:#eee}.intact{background:#c8f0c8}
.swatch{display:inline-block;width:14px;height:14px;border:1px solid #888;vertical-align:middle;margin:0 4px 0 12px}
.diagram{overflow:auto;border:1px solid #ddd;padding:6px} .diagram svg{max-width:100%;height:auto}
.muted{color:#666;font-size:12px}
"""


def report_html(trail: RequestTrail, graph: LineageGraph | None, generated_at: datetime | None = None) -> str:
    """The HTML report; ``graph`` (the workspace's lineage) draws the diagram, None leaves it out."""
    now = generated_at or datetime.now(timezone.utc)
    facts = report_facts(trail, now)
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>piitracer audit report: {e(facts.request_id)}</title><style>{CSS}</style></head><body>",
        f"<h1>Erasure audit report: request {e(facts.request_id)}</h1>",
        f'<p class="muted">generated {e(now.isoformat(timespec="seconds"))} from the audit log; '
        "no subject value appears in this report.</p>",
        '<h2 id="request">Request</h2>', _html_table(["", ""], _html_rows(_request_rows(facts, trail)), header=False),
        '<h2 id="lineage">Lineage and erasure state</h2>', _legend_html(),
    ]
    if graph is not None:
        parts.append(f'<div class="diagram">{lineage_svg(graph, facts)}</div>')
    parts += [
        '<h2 id="datasets">Datasets</h2>',
        _html_table(["dataset", "format", "plan", "state", "key column", "files scanned", "findings", "note"],
                    [[d["dataset"], d["format"] or "", d["status"], _state_cell(d["state"]), d["key_column"] or "",
                      _num(_ver(d, "files_scanned")), _num(_ver(d, "findings_count")), _note(d)] for d in facts.datasets]),
        '<h2 id="steps">Steps</h2>',
        _html_table(["#", "step", "dataset", "action", "state", "started", "finished", "snapshot before → after",
                     "rows deleted", "files rewritten", "files removed", "bytes removed", "metadata hash", "run"],
                    [[_num(s["order"]), s["step_id"], s["dataset"], s["action"], s["state"], s.get("started_at") or "",
                      s.get("finished_at") or "", _versions(s), _num(s.get("rows_deleted")), _num(s.get("files_rewritten")),
                      _num(s.get("files_removed")), _num(s.get("bytes_removed")), _hash_cell(s.get("metadata_hash"), 16),
                      _hash_cell(s.get("run_id"), 12)] for s in facts.steps]),
        *(['<h2 id="refs">Tags and branches</h2>', f"<p>{html.escape(REFS_NOTE)}</p>",
           _html_table(REF_HEADERS, _ref_rows(facts))] if _ref_rows(facts) else []),
        *(['<h2 id="guard">Where a pipeline guard belongs</h2>', f"<p>{html.escape(GUARD_NOTE)}</p>",
           _html_table(GUARD_HEADERS, _guard_rows(facts))] if facts.guard_points else []),
        *(['<h2 id="estimate">Estimate and run</h2>', _html_table(ESTIMATE_HEADERS, _estimate_rows(facts))]
          if facts.estimate else []),
        '<h2 id="attestations">Attestations</h2>',
        _html_table(ATTESTATION_HEADERS, _attestation_rows(facts)) if facts.attestations
        else '<p class="muted">No person\'s step attested.</p>',
        '<h2 id="verification">Verification evidence</h2>', _verification_html(facts),
        '<h2 id="integrity">Integrity</h2>', _html_table(["", ""], _html_rows(_integrity_rows(facts, trail)), header=False),
        "<p class=\"muted\">Merkle leaves: SHA-256(0x00 ‖ entry hash) of this request's entries in sequence order; "
        "nodes SHA-256(0x01 ‖ left ‖ right), split at the largest power of two (RFC 6962).</p>",
        _html_table(["seq", "kind", "recorded", "entry hash"],
                    [[_num(x.seq), x.kind.value, x.recorded_at, _hash_cell(x.entry_hash, 64)] for x in facts.entries]),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def report_markdown(trail: RequestTrail, generated_at: datetime | None = None) -> str:
    """The Markdown report: the same facts, tables in Markdown, the diagram left to the HTML form."""
    now = generated_at or datetime.now(timezone.utc)
    facts = report_facts(trail, now)
    lines = [f"# Erasure audit report: request {_md(facts.request_id)}", "",
             f"Generated {now.isoformat(timespec='seconds')} from the audit log; no subject value appears in this report. "
             "The lineage diagram coloured by state is in the HTML form (`piitracer audit report --format html`).", "",
             "## Request", "", _md_table(["", ""], [[_strip(a), _strip(b)] for a, b in _request_rows(facts, trail)]), "",
             "## Datasets", "",
             _md_table(["dataset", "format", "plan", "state", "key column", "files scanned", "findings", "note"],
                       [[d["dataset"], d["format"] or "", d["status"], STATE_LABELS[d["state"]], d["key_column"] or "",
                         _text(_ver(d, "files_scanned")), _text(_ver(d, "findings_count")), _note(d)] for d in facts.datasets]), "",
             "## Steps", "",
             _md_table(["#", "step", "dataset", "action", "state", "started", "finished", "snapshot before → after",
                        "rows deleted", "files rewritten", "files removed", "bytes removed", "metadata hash"],
                       [[str(s["order"]), s["step_id"], s["dataset"], s["action"], s["state"], s.get("started_at") or "",
                         s.get("finished_at") or "", _versions(s), _text(s.get("rows_deleted")), _text(s.get("files_rewritten")),
                         _text(s.get("files_removed")), _text(s.get("bytes_removed")), (s.get("metadata_hash") or "")[:16]]
                        for s in facts.steps]), "",
             *(["## Tags and branches", "", REFS_NOTE, "", _md_table(REF_HEADERS, _ref_rows(facts)), ""]
               if _ref_rows(facts) else []),
             *(["## Where a pipeline guard belongs", "", GUARD_NOTE, "", _md_table(GUARD_HEADERS, _guard_rows(facts)), ""]
               if facts.guard_points else []),
             *(["## Estimate and run", "", _md_table(ESTIMATE_HEADERS, _estimate_rows(facts)), ""] if facts.estimate else []),
             "## Attestations", "",
             _md_table(ATTESTATION_HEADERS, _attestation_rows(facts)) if facts.attestations else "No person's step attested.",
             "", "## Verification evidence", ""]
    if facts.verification is None:
        lines.append("No verification recorded yet.")
    else:
        lines.append(f"Checked at {facts.verification['checked_at']}.")
        if shred_rows(facts.verification):
            lines += ["", "Crypto-shredded datasets (checked before the keys were destroyed, searched after):", "",
                      _md_table(SHRED_HEADERS, [[str(c) for c in row] for row in shred_rows(facts.verification)])]
        if proof_rows(facts.verification):
            lines += ["", "How Parquet column chunks were proven:", "",
                      _md_table(PROOF_HEADERS, [[str(c) for c in row] for row in proof_rows(facts.verification)])]
        lines += ["", _md_table(["dataset", "file", "where", "value set", "kind"], _finding_rows(facts)) if _finding_rows(facts)
                  else "No finding: no scanned file holds a subject value."]
    lines += ["", "## Integrity", "", _md_table(["", ""], [[_strip(a), _strip(b)] for a, b in _integrity_rows(facts, trail)]), "",
              "Merkle leaves: SHA-256(0x00 ‖ entry hash) of this request's entries in sequence order; nodes "
              "SHA-256(0x01 ‖ left ‖ right), split at the largest power of two (RFC 6962).", "",
              _md_table(["seq", "kind", "recorded", "entry hash"],
                        [[str(x.seq), x.kind.value, x.recorded_at, x.entry_hash] for x in facts.entries]), ""]
    return "\n".join(lines)


# ---- pieces ---------------------------------------------------------------------------------

GUARD_HEADERS = ["dataset", "columns", "fed by (lineage)", "why"]
GUARD_NOTE = ("An erased person comes back through the jobs that write these datasets (a backfill, a replay, a "
              "restore): put piitracer.guard in them, with the suppression list `piitracer guard export` writes, so "
              "the rows of erased people are dropped before they are written. `piitracer guard scan` finds what got through.")


def _guard_rows(facts: ReportFacts) -> list[list[str]]:
    return [[g["dataset"], ", ".join(g["columns"]), ", ".join(g["fed_by"]) or "(not in the lineage)", g["reason"]]
            for g in facts.guard_points]


REF_HEADERS = ["dataset", "ref", "type", "action", "state", "snapshot before", "snapshot after", "rows removed",
               "data files rewritten"]
REFS_NOTE = ("rewrite_ref keeps a tag or branch under its name and retention, moved to a new snapshot: a query of "
             "that ref returns the same rows as before minus the subjects'. A release_ref step (policy.refs: release) "
             "drops the ref instead.")


def _ref_rows(facts: ReportFacts) -> list[list[str]]:
    """A row per Iceberg tag or branch the plan rewrote or released: which, and its move."""
    rows = []
    for step in facts.steps:
        if step.get("action") not in ("rewrite_ref", "release_ref"):
            continue
        params = {**(step.get("params") or {}), **(step.get("details") or {})}  # the run's facts, else the plan's
        done = step.get("state") == "committed"
        rows.append([step["dataset"], str(params.get("ref", "")), str(params.get("ref_type", "")), step["action"],
                     step["state"], str(step.get("version_before") or params.get("snapshot_id", "")),
                     str(step.get("version_after") or "") if done and step["action"] == "rewrite_ref"
                     else ("dropped" if done else ""),
                     _text(step.get("rows_deleted")) if done else "", _text(step.get("files_rewritten")) if done else ""])
    return rows


ESTIMATE_HEADERS = ["dataset", "estimated files", "estimated bytes", "estimated cost", "bytes the run removed", "note"]


def _estimate_rows(facts: ReportFacts) -> list[list[str]]:
    return [[row["dataset"], f"{row['files']:,}", f"{row['bytes']:,}", f"{row['cost']:,.2f} {row['currency']}",
             "not run yet" if row["removed_bytes"] is None else f"{row['removed_bytes']:,}",
             "upper bound: values resolved at run time" if row["upper_bound"] else "from table metadata"]
            for row in facts.estimate]


ATTESTATION_HEADERS = ["step", "dataset", "action", "attested by", "attested at", "evidence SHA-256"]


def _attestation_rows(facts: ReportFacts) -> list[list[str]]:
    return [[str(a["step_id"]), str(a["dataset"]), str(a["action"]), str(a["attested_by"]), str(a["attested_at"]),
             str(a["evidence_sha256"] or "")] for a in facts.attestations]


def _request_rows(facts: ReportFacts, trail: RequestTrail) -> list[list[str]]:
    d = facts.deadline
    return [
        ["request", html.escape(facts.request_id)],
        ["batched with", html.escape(", ".join(facts.batched_with) or "—")],
        ["subjects (HMAC-SHA256 prefix)", ", ".join(f"<code>{h[:HMAC_PREFIX]}…</code>" for h in facts.subject_hmacs) or "—"],
        ["received", html.escape(facts.received_at or "—")],
        ["deadline", html.escape(d.deadline_at.isoformat() if d.deadline_at else "—")],
        ["deadline status", f'<span class="verdict {d.verdict}">{html.escape(d.verdict)}</span> {html.escape(d.text)}'],
        ["plan", f"<code>{html.escape(facts.plan_id)}</code>"],
        ["sources", html.escape(", ".join(facts.sources))],
    ]


def _integrity_rows(facts: ReportFacts, trail: RequestTrail) -> list[list[str]]:
    chain = ('<span class="verdict intact">intact</span>' if trail.chain_intact
             else f'<span class="verdict broken">BROKEN</span> {html.escape(trail.chain_problem or "")}')
    return [
        ["hash chain (whole log)", f"{chain} ({trail.chain_entries} entries verified)"],
        ["chain head hash", f"<code>{html.escape(trail.chain_head)}</code>"],
        [f"Merkle root of request {html.escape(facts.request_id)}", f"<code>{html.escape(trail.merkle_root)}</code>"],
        ["Merkle leaves", str(len(trail.entries))],
    ]


def lineage_svg(graph: LineageGraph, facts: ReportFacts) -> str:
    """The plan's datasets reached from every identifier of its sources, each coloured by its
    erasure state, as an inline SVG element (no XML prolog or comments): the audit report's
    diagram, and the console's request page."""
    # The plan reaches datasets through every identifier of its sources (the resolve step captures
    # them all: a PAN-only table is the subject's too), so draw the union of those reaches, limited
    # to the plan's datasets; the source key column is highlighted first.
    starts: list[ColumnRef] = []
    for source in facts.sources:
        dataset, _, column = source.rpartition(".")
        if not graph.has_dataset(dataset):
            continue
        catalog = graph.dataset(dataset).catalog
        for name in [column, *(catalog.identifiers if catalog else ())]:
            ref = ColumnRef(dataset=dataset, column=name)
            if graph.has_column(ref) and ref not in starts:
                starts.append(ref)
    states = {d["dataset"]: d["state"] for d in facts.datasets}
    svg = render_lineage(lineage_diagram(graph, starts or None, states, datasets=list(states)), "svg").decode("utf-8")
    # Inline: drop the XML prolog, DOCTYPE and comments graphviz writes before <svg>.
    return svg[svg.index("<svg"):]


def _legend_html() -> str:
    items = "".join(f'<span class="swatch" style="background:{STATE_FILLS[s]}"></span>{html.escape(STATE_LABELS[s])}'
                    for s in STATES)
    return f'<p class="legend">Node colour = erasure state:{items}</p>'


def _verification_html(facts: ReportFacts) -> str:
    if facts.verification is None:
        return "<p>No verification recorded yet.</p>"
    v = facts.verification
    scanned = sum(d["files_scanned"] for d in v["datasets"])
    head = (f"<p>Checked at {html.escape(v['checked_at'])}: {len(v['datasets'])} datasets, {scanned} files scanned, "
            f"{sum(d['findings_count'] for d in v['datasets'])} finding(s).</p>")
    shredded = shred_rows(v)
    if shredded:
        head += ("<h3>Crypto-shredded datasets</h3><p class=\"muted\">Before the keys were destroyed, every row of the "
                 "subjects in every stored file was read and its ciphertext opened under their keys; after, the vault "
                 "gives none of their keys and the decrypted values were searched for in every file and version.</p>"
                 + _html_table(SHRED_HEADERS, [[row[0], row[1], *(_num(n) for n in row[2:])] for row in shredded]))
    proofs = proof_rows(v)
    if proofs:
        head += ("<h3>How Parquet column chunks were proven</h3><p class=\"muted\">A chunk (one column of one row "
                 "group) is proven without decoding its rows by its dictionary, its footer min/max, its page index, its "
                 "Bloom filter, or a type no searched value has; every other chunk is decoded.</p>"
                 + _html_table(PROOF_HEADERS, [[row[0], *(_num(n) for n in row[1:])] for row in proofs]))
    rows = _finding_rows(facts)
    if not rows:
        return head + "<p>No finding: no scanned file holds a subject value.</p>"
    return head + _html_table(["dataset", "file", "where", "value set", "kind"], rows)


def _finding_rows(facts: ReportFacts) -> list[list[str]]:
    if facts.verification is None:
        return []
    return [[d["dataset"], f["file"] or "(logical)", f["where"], f["value_set"], f["kind"]]
            for d in facts.verification["datasets"] for f in d["findings"]]


def _html_table(headers: list[str], rows: list[list[Any]], header: bool = True) -> str:
    """A table; :class:`_Html` cells are inserted as they are, anything else is escaped."""
    head = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>" if header else ""
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    return f"<table>{head}{body}</table>"


class _Html(str):
    """A cell that is already HTML (built and escaped by the helpers here)."""


NUM = "<!--num-->"  # marks a right-aligned cell


def _cell(value: Any) -> str:
    if isinstance(value, _Html):
        return f'<td class="num">{value}</td>' if value.startswith(NUM) else f"<td>{value}</td>"
    return f"<td>{html.escape(str(value))}</td>"


def _html_rows(rows: list[list[str]]) -> list[list[_Html]]:
    return [[_Html(cell) for cell in row] for row in rows]


def _state_cell(state: str) -> _Html:
    return _Html(f'<span class="swatch" style="background:{STATE_FILLS[state]};margin-left:0"></span>{html.escape(STATE_LABELS[state])}')


def _num(value: Any) -> _Html:
    return _Html(NUM + ("" if value is None else html.escape(f"{value:,}" if isinstance(value, int) else str(value))))


def _hash_cell(value: str | None, width: int) -> _Html:
    return _Html(f'<code title="{html.escape(value or "")}">{html.escape((value or "")[:width])}</code>')


def _ver(dataset: dict[str, Any], key: str) -> Any:
    return (dataset.get("verification") or {}).get(key)


def _note(dataset: dict[str, Any]) -> str:
    result = dataset.get("verification") or {}
    return result.get("pending_until") or result.get("reason") or ""


def _versions(step: dict[str, Any]) -> str:
    before, after = step.get("version_before"), step.get("version_after")
    return f"{before or '—'} → {after or '—'}" if before or after else ""


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _strip(cell: str) -> str:
    """Markdown from one of the HTML cells built above: tags dropped, entities unescaped."""
    return html.unescape(re.sub(r"<[^>]+>", "", cell))


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(_md(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_md(str(c)) for c in row) + " |" for row in rows]
    return "\n".join(lines)
