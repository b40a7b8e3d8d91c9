"""The audit report, made from the audit log alone (plus the workspace's lineage): self-contained
HTML with an inline SVG naming every dataset of the plan, coloured by state; Markdown; deadline
status; integrity facts; never a subject value."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from audit_builders import KEY, RAW_VALUES, record_all, verification
from piitracer.api import audit_log, audit_report, record_run, record_verification
from piitracer.cli.main import cli
from piitracer.model.steps import StepRecord
from piitracer.render.lineage_diagram import STATE_FILLS

SVG = "{http://www.w3.org/2000/svg}"
BEFORE_DEADLINE = datetime(2026, 1, 20, tzinfo=timezone.utc)
AFTER_DEADLINE = datetime(2026, 3, 1, tzinfo=timezone.utc)


@pytest.fixture()
def recorded(tmp_path: Path):
    trail = record_all(tmp_path)
    yield trail
    trail.log.close()


class Collector(HTMLParser):
    """Tags, attributes and text of an HTML page; fails on nothing, so we assert on what it saw."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def fresh_report(recorded, fmt: str = "html", now: datetime = BEFORE_DEADLINE) -> str:
    """A report from a newly opened log (as `audit report` would, long after the run)."""
    recorded.log.close()
    with audit_log(recorded.workspace, key=KEY) as log:
        return audit_report(recorded.workspace, log, "dsr-1", fmt, generated_at=now)


def svg_of(page: str) -> ElementTree.Element:
    return ElementTree.fromstring(page[page.index("<svg"):page.index("</svg>") + len("</svg>")])


def node_fills(svg: ElementTree.Element) -> dict[str, set[str]]:
    """Dataset name -> fill colours of the polygons of its graphviz node."""
    fills: dict[str, set[str]] = {}
    for group in svg.iter(f"{SVG}g"):
        if group.get("class") != "node":
            continue
        texts = [t.text for t in group.iter(f"{SVG}text") if t.text]
        if texts:
            fills[texts[0]] = {p.get("fill") for p in group.iter(f"{SVG}polygon")}
    return fills


def test_html_is_self_contained_and_names_every_dataset_in_the_svg(recorded) -> None:
    page = fresh_report(recorded)
    parser = Collector()
    parser.feed(page)
    tags = [t for t, _ in parser.tags]
    assert tags[0] == "html" and "svg" in tags and "table" in tags
    assert "script" not in tags and "link" not in tags and "img" not in tags
    assert not any(v and v.startswith(("http:", "https:", "//")) for _, attrs in parser.tags
                   for k, v in attrs.items() if k in ("src", "href")), "external resource referenced"
    svg = svg_of(page)  # well-formed XML
    texts = {t.text for t in svg.iter(f"{SVG}text") if t.text}
    missing = {d.dataset for d in recorded.plan.datasets} - texts
    assert not missing, f"datasets missing from the diagram: {missing}"


def test_nodes_are_coloured_by_state(recorded) -> None:
    fills = node_fills(svg_of(fresh_report(recorded)))
    assert STATE_FILLS["erased"] in fills["prod.payments"]
    assert STATE_FILLS["manual_review"] in fills["ml.payment_features"]
    assert STATE_FILLS["found"] in fills["risk.card_usage"]
    assert STATE_FILLS["recompute"] in fills["analytics.daily_revenue"]
    assert STATE_FILLS["no_action"] in fills["analytics.v_recent_payments"]
    assert STATE_FILLS["erased"] not in fills["risk.card_usage"]
    assert len({STATE_FILLS[s] for s in ("erased", "pending", "found", "manual_review", "recompute", "no_action")}) == 6


def test_report_has_steps_evidence_integrity_and_no_subject_value(recorded) -> None:
    merkle, head = recorded.log.request_root("dsr-1"), recorded.log.head()[1]
    page = fresh_report(recorded)
    text = "".join((c := Collector(), c.feed(page), c.text)[2])
    for value in RAW_VALUES:
        assert value not in page
    assert merkle in page and head in page and recorded.plan.plan_id in page
    assert "dsr-1" in text and "dsr-2" in text  # the request and the one batched with it
    assert "5001 → 6001" in text  # s002's snapshot before -> after
    assert "part-00000.parquet" in text and "prod.payments.pan" in text  # the finding, by file and value set
    assert "intact" in text and "legend" in page
    for state in ("erased", "pending", "found (still there)", "manual review", "recompute", "no action"):
        assert state in text


def test_deadline_status_open_then_missed(recorded) -> None:
    assert '<span class="verdict open">open</span>' in fresh_report(recorded, now=BEFORE_DEADLINE)
    missed = fresh_report(recorded, now=AFTER_DEADLINE)
    assert '<span class="verdict missed">missed</span>' in missed and "risk.card_usage" in missed


def test_deadline_met_when_verified_and_nothing_open(tmp_path: Path) -> None:
    recorded = record_all(tmp_path, found=None)
    done = [StepRecord(step_id=s.id, order=s.order, dataset=s.dataset, action=s.action.value, state="attested",
                       started_at="2026-01-08T10:00:00+00:00", finished_at="2026-01-08T11:00:00+00:00", run_id="run-0002")
            for s in recorded.plan.steps if s.action.value in ("manual", "manual_review", "recompute")]
    record_run(recorded.log, recorded.plan, done, recorded.workspace)
    page = fresh_report(recorded, now=AFTER_DEADLINE)
    assert '<span class="verdict met">met</span>' not in page  # the person's datasets are not verified attested yet
    with audit_log(recorded.workspace, key=KEY) as log:
        record_verification(log, recorded.plan, verification(recorded.plan, found=None, attested=True))
    page = fresh_report(recorded, now=AFTER_DEADLINE)
    assert '<span class="verdict met">met</span>' in page and "verified complete at 2026-01-09T12:00:00" in page


def test_markdown_report(recorded) -> None:
    text = fresh_report(recorded, "md")
    assert text.startswith("# Erasure audit report: request dsr-1")
    assert "| dataset | format | plan | state |" in text and "| --- |" not in text.replace("|---|", "")
    assert "<svg" not in text and "<span" not in text
    assert "| ml.payment_features | iceberg | manual_review | manual review |" in text
    assert recorded.plan.plan_id in text
    for value in RAW_VALUES:
        assert value not in text


def test_tampered_log_shows_in_the_report(recorded) -> None:
    import sqlite3

    connection = sqlite3.connect(recorded.db)
    (trigger,) = connection.execute("SELECT sql FROM sqlite_master WHERE name = 'entries_no_update'").fetchone()
    connection.execute("DROP TRIGGER entries_no_update")
    connection.execute("UPDATE entries SET body = json_set(body, '$.rows_deleted', 99) WHERE seq = 3")
    connection.execute(trigger)  # tracks covered: the trigger is back, the entry's hash still gives it away
    connection.commit()
    connection.close()
    page = fresh_report(recorded)
    assert "BROKEN" in page and "entry 3:" in page


def test_cli_report_html_and_md_and_errors(recorded, tmp_path: Path) -> None:
    recorded.log.close()
    env = {"PIITRACER_AUDIT_KEY": KEY, "PIITRACER_AUDIT_KEY_FILE": None}
    base = ["--workspace", str(recorded.workspace.root), "audit", "report"]
    out = tmp_path / "report.html"
    result = CliRunner().invoke(cli, [*base, "--request", "dsr-2", "-o", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert "<svg" in out.read_text() and "request dsr-2" in out.read_text()
    result = CliRunner().invoke(cli, [*base, "--request", "dsr-1", "--format", "md"], env=env)
    assert result.exit_code == 0 and result.stdout.startswith("# Erasure audit report")
    result = CliRunner().invoke(cli, [*base, "--request", "nope"], env=env)
    assert result.exit_code == 2 and "no entry for request 'nope'" in result.stderr
    result = CliRunner().invoke(cli, [*base, "--request", "dsr-1"], env={"PIITRACER_AUDIT_KEY": None, "PIITRACER_AUDIT_KEY_FILE": None})
    assert result.exit_code == 2 and "no audit key" in result.stderr


def test_the_report_names_where_a_guard_belongs(recorded) -> None:
    """Issue 52: the plan's guard points, from the plan entry, as a table a person reads."""
    assert [g.dataset for g in recorded.plan.guard_points] == ["prod.payments"]
    page = fresh_report(recorded)
    section = page.split('<h2 id="guard">Where a pipeline guard belongs</h2>', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr>(.*?)</tr>", section)
    assert [re.findall(r"<td>(.*?)</td>", row)[:3] for row in rows[1:]] == [
        ["prod.payments", "aadhaar_ref, pan, phone, user_id", "(not in the lineage)"]]
    text = fresh_report(recorded, "md")
    assert "| prod.payments | aadhaar_ref, pan, phone, user_id | (not in the lineage) |" in text
