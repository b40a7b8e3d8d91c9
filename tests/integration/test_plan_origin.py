"""Only plans piitracer made run, whoever holds the audit key.

Reproduced on the main before this change: with the audit key, a plan file edited — a step
re-pointed to another dataset, a delete's value set re-pointed to another column, two steps
swapped, a subject added or replaced — and sealed again ran (and the dry run accepted a swapped
order and a replaced subject). Now ``plan -o`` records the plan's id and its subjects' keyed
digests in the audit log; ``execute`` and ``execute --dry-run`` make the same checks and refuse a
plan whose id or subjects are not recorded there, whatever its seal; and a plan that is recorded
(a key holder can append to the log) must still be what planning its sources and subjects again
in this workspace gives, step by step, or it is refused naming the first differing step.
Every refusal comes before the first step: nothing is journaled and no table file changes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from cli_process import file_digests, run_cli

from piitracer.api import audit_log, load_plan, plan_file_text, record_plan, request_store, seal_plan
from piitracer.audit import load_audit_key
from piitracer.crypto.envelope import load_master_key
from piitracer.ingest.workspace.loader import load_workspace
from piitracer.model.plan import Subject

AUDIT_KEY = "plan-origin-test-audit-key-0123456789"
SUBJECT, OTHER = 7001, 7002


def people() -> pa.Table:
    ids = list(range(SUBJECT, SUBJECT + 40))
    return pa.table({"user_id": pa.array(ids, pa.int64()), "email": [f"u{i}@example.org" for i in ids]})


def build(folder: Path) -> Path:
    """A Parquet source and two derived copies (one keyed by a renamed id, one by e-mail)."""
    tables = {"users": people(), "copy": people(),
              "by_cust": people().rename_columns(["cust", "email"]), "by_mail": people().select(["email"])}
    for name, table in tables.items():
        (folder / "lake" / name).mkdir(parents=True)
        pq.write_table(table, folder / "lake" / name / "part-0.parquet")
    (folder / "sql").mkdir()
    (folder / "sql" / "p.sql").write_text(
        "INSERT INTO shop.copy SELECT user_id, email FROM shop.users;\n"
        "INSERT INTO shop.by_cust SELECT user_id AS cust, email FROM shop.users;\n"
        "INSERT INTO shop.by_mail SELECT email FROM shop.users;\n")
    catalog = {"shop.users": {"format": "parquet", "location": "lake/users", "columns": ["user_id", "email"],
                              "identifiers": ["user_id", "email"], "subject_key": "user_id",
                              "column_types": {"user_id": "bigint", "email": "string"}}}
    for name, columns in (("copy", ["user_id", "email"]), ("by_cust", ["cust", "email"]), ("by_mail", ["email"])):
        catalog[f"shop.{name}"] = {"format": "parquet", "location": f"lake/{name}", "columns": columns}
    config = {"lineage": {"sql": [{"path": "sql"}]}, "spark": {"master": "local[1]"}, "warehouse_roots": ["lake"],
              "catalog": catalog}
    (folder / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return folder


def run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli(folder, AUDIT_KEY, *args)


def digests(folder: Path) -> dict[str, str]:
    """Every file's hash (the lineage store is a cache of the lineage files: re-planning refreshes it)."""
    return file_digests(folder, skip=("lineage",))


@pytest.fixture()
def planned(tmp_path: Path) -> Path:
    folder = build(tmp_path / "ws")
    made = run(folder, "plan", "--source", "shop.users.user_id", "--subject", str(SUBJECT), "--request-id", "r1",
               "-o", "plan.json")
    assert made.returncode == 0, made.stderr
    return folder


def rewrite_plan(folder: Path, change, record: bool = False) -> Path:
    """What a holder of the audit key and the master key can do: open the plan, change it, give it
    its new id, seal it again, write it back encrypted (and, with ``record``, append it to the log)."""
    workspace = load_workspace(folder)
    key = load_audit_key(AUDIT_KEY)
    with request_store(workspace, load_master_key(environ=os.environ)) as store:
        plan = load_plan(folder / "plan.json", store.cipher)
        forged = seal_plan(change(plan).with_id(), key)
        subjects = sorted({s.request_id for s in forged.subjects})
        text = plan_file_text(forged, store.cipher(subjects)) if all(store.has(r) for r in subjects) else forged.to_json()
    path = folder / "forged.json"
    path.write_text(text)
    if record:
        with audit_log(workspace, key=key) as log:
            record_plan(log, forged)
    return path


def step_of(plan, dataset: str):
    return next(s for s in plan.steps if s.dataset == dataset and s.key_column)


def repoint_dataset(plan):
    """The copy's delete re-pointed to another dataset, with that dataset's own key column and value
    set (so every structural check passes: only what planning gives tells it apart)."""
    mail = step_of(plan, "shop.by_mail")
    steps = [s.model_copy(update={"dataset": "shop.by_mail", "key_column": mail.key_column, "values_from": mail.values_from})
             if s is step_of(plan, "shop.copy") else s for s in plan.steps]
    return plan.model_copy(update={"steps": tuple(steps)})


def repoint_values(plan):
    """The copy's delete matched against the e-mail value set instead of the user ids."""
    target = step_of(plan, "shop.copy")
    was = target.values_from[0]
    swapped = (was.model_copy(update={"name": "shop.users.email",
                                      "source": was.source.model_copy(update={"column": "email"})}),)
    steps = [s.model_copy(update={"values_from": swapped}) if s is target else s for s in plan.steps]
    return plan.model_copy(update={"steps": tuple(steps)})


def swap_order(plan):
    """The last two steps swapped (orders renumbered so the file stays well formed)."""
    steps = list(plan.steps)
    steps[-1], steps[-2] = steps[-2], steps[-1]
    renumbered = [s.model_copy(update={"order": n, "depends_on": ()}) for n, s in enumerate(steps, start=1)]
    return plan.model_copy(update={"steps": tuple(renumbered)})


def add_subject(plan):
    extra = Subject(value=str(OTHER), request_id="r1", received_at=plan.subjects[0].received_at)
    return plan.model_copy(update={"subjects": (*plan.subjects, extra)})


def replace_subject(plan):
    return plan.model_copy(update={"subjects": (plan.subjects[0].model_copy(update={"value": str(OTHER)}),)})


FORGERIES = {"re-pointed dataset": repoint_dataset, "re-pointed value set": repoint_values, "swapped order": swap_order,
             "added subject": add_subject, "replaced subject": replace_subject}


def assert_refused(folder: Path, plan_file: str, expected: str) -> None:
    lake, state = digests(folder / "lake"), digests(folder / ".piitracer")
    for extra in ([], ["--dry-run"]):  # the dry run makes exactly the same checks
        refused = run(folder, "execute", plan_file, "--no-concurrent-writers", *extra)
        assert refused.returncode == 2, (extra, refused.stdout + refused.stderr)
        last = refused.stderr.strip().splitlines()[-1]
        assert last.startswith("error: plan ") and expected in last, (extra, last)
        assert "Traceback" not in refused.stderr
    assert digests(folder / "lake") == lake  # no table file changed
    assert digests(folder / ".piitracer") == state  # nothing journaled or recorded
    assert not (folder / ".piitracer" / "journal.sqlite").exists()


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_an_edited_and_resealed_plan_is_refused(planned: Path, name: str) -> None:
    forged = rewrite_plan(planned, FORGERIES[name])
    assert_refused(planned, forged.name, "is not recorded in this workspace's audit log")


@pytest.mark.parametrize("name", ["re-pointed dataset", "re-pointed value set", "swapped order"])
def test_an_edited_plan_recorded_by_a_key_holder_is_refused_naming_the_step(planned: Path, name: str) -> None:
    forged = rewrite_plan(planned, FORGERIES[name], record=True)
    assert_refused(planned, forged.name, "differs in")


def test_a_recorded_subject_swap_is_refused(planned: Path) -> None:
    """A key holder records a plan for another subject: planning it again gives the same steps, but
    its subjects are not those piitracer recorded for that id... unless recorded too; then the plan
    is a genuine plan for that subject (what `plan` would write), and runs only as such."""
    forged = rewrite_plan(planned, replace_subject)
    assert_refused(planned, forged.name, "is not recorded")


def test_a_catalog_changed_since_planning_is_refused(planned: Path) -> None:
    sql = planned / "sql" / "p.sql"  # the pipeline that fills by_mail is gone from the lineage
    sql.write_text("\n".join(line for line in sql.read_text().splitlines() if "by_mail" not in line) + "\n")
    assert_refused(planned, "plan.json", "the lineage or catalog changed since planning")


def test_the_plan_piitracer_wrote_passes_the_checks(planned: Path) -> None:
    """The control: the recorded, unchanged plan passes every check (the dry run lists its steps)."""
    dry = run(planned, "execute", "plan.json", "--dry-run", "--no-concurrent-writers")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    listed = [line.split(" ", 2)[1] for line in dry.stdout.splitlines() if line.startswith("s")]
    assert {"shop.users", "shop.copy", "shop.by_cust", "shop.by_mail"} <= set(listed)
