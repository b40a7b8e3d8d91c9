"""A typo never erases another person: subject values are parsed strictly against the key column's
type, by one rule for --subject, CSV and JSONL, and bound as typed values everywhere.

Reproduced before this rule: ``plan --subject 4242.9`` then ``execute`` deleted user 4242 in every
table (Spark's lenient cast truncates), and ``"5000\\u0000"`` in a JSONL batch erased user 5000.
Here every hostile form is refused with its position and never its value, on an Iceberg, a Delta
and a Parquet source; an edited plan that smuggles one in is refused at execute; nobody's row
changes; and string keys are compared exactly (normalised only where the catalog says so)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from deltalake import DeltaTable, write_deltalake
from spark_lakehouse import checksum, cow_properties, mor_properties, new_namespace, spark_for, table_rows, write_workspace

import piitracer
from piitracer.api import plan_deletion, write_private
from executor_runs import run_plan
from piitracer.cli.main import cli
from piitracer.formats.values import typed_values
from piitracer.executor.preflight import PlanRefused
from piitracer.model.key_values import exact_values
from piitracer.executor.runner import ExecuteOptions
from piitracer.model.key_values import KeyValueError, parse_key_type, parse_key_value
from piitracer.model.plan import DeletionPlan, Subject
from piitracer.planner.build import PlanningError

RECEIVED = "2026-11-20T09:00:00Z"
USERS = [4242, 5000, 17, 1000, 16, 42, 10, 7]  # what each hostile form would become under a lenient cast
OTHERS = list(range(100_000, 100_400))
# (value as typed, what the message must say). Each one, cast leniently, is a user above.
HOSTILE = [
    ("4242.9", "decimal point"), ("4242.0", "decimal point"), ("1e3", "exponent"), ("0x10", "hexadecimal"),
    (" 17 ", "leading or trailing spaces"), ("17 ", "leading or trailing spaces"), ("+17", "'+' sign"),
    ("0042", "leading zeros"), ("5000\u0000", "control character"), ("5000\u200b", "invisible"),
    ("4242\n", "control character"), ("\ufeff4242", "invisible"), ("١٠", "ASCII digits"), ("4 242", "spaces"),
    ("99999999999999999999", "out of range"), ("-0", "negative zero"), ("7.", "decimal point"),
]


@pytest.mark.parametrize(("value", "reason"), HOSTILE)
def test_each_hostile_form_is_refused_for_a_bigint_key_without_showing_it(value: str, reason: str) -> None:
    with pytest.raises(KeyValueError) as caught:
        parse_key_value(value, parse_key_type("bigint"))
    assert reason in str(caught.value)
    assert value.strip() not in str(caught.value) or not value.strip()


def test_exact_values_are_accepted_typed() -> None:
    assert parse_key_value("4242", parse_key_type("BIGINT")) == 4242
    assert parse_key_value("-17", parse_key_type("int")) == -17
    assert parse_key_value("127", parse_key_type("tinyint")) == 127
    with pytest.raises(KeyValueError, match="out of range"):
        parse_key_value("128", parse_key_type("tinyint"))
    assert str(parse_key_value("12.5", parse_key_type("decimal(10,2)"))) == "12.50"
    with pytest.raises(KeyValueError, match="fraction digits"):
        parse_key_value("12.345", parse_key_type("decimal(10,2)"))  # never rounded
    assert parse_key_value(" Bob@X.com ", parse_key_type("string")) == " Bob@X.com "  # strings exactly
    assert parse_key_value(" Bob@X.com ", parse_key_type("string"), ("trim", "lower")) == "bob@x.com"
    with pytest.raises(KeyValueError, match="control character"):
        parse_key_value("bob@x.com\u0000", parse_key_type("string"))


def test_typed_binding_never_casts() -> None:
    # Even if a value slipped past the parse, binding keeps only values of the key's exact type.
    assert exact_values(["4242.9", " 17 ", "5000\u0000", 4242.9, 5000.0, True], parse_key_type("bigint")) == []
    assert exact_values([4242, "x"], parse_key_type("string")) == ["4242", "x"]  # an id meets a string key as its text
    assert typed_values(["4242.9", " 17 ", 17.0], pa.int64()).to_pylist() == []
    assert typed_values([17, 2**40], pa.int32()).to_pylist() == [17]  # out of the column's range: matches nothing


# ---- on real tables ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def lakehouse(tmp_path_factory, warehouse: Path):
    """An Iceberg source (MoR) with a copy-on-write copy, a Delta table and a Parquet folder, each
    keyed by a bigint user id, holding every user a lenient cast of a hostile form would hit."""
    spark = spark_for(warehouse)
    ns = new_namespace("strict")
    root = tmp_path_factory.mktemp("strict")
    data = [(u, f"u{u}@example.in", float(i)) for i, u in enumerate(USERS + OTHERS)]
    spark.sql(f"CREATE TABLE lake.{ns}.users (user_id BIGINT, email STRING, amount DOUBLE) USING iceberg "
              f"TBLPROPERTIES ({mor_properties()})")
    spark.createDataFrame(data, "user_id BIGINT, email STRING, amount DOUBLE").writeTo(f"lake.{ns}.users").append()
    spark.sql(f"CREATE TABLE lake.{ns}.orders (customer_id BIGINT, amount DOUBLE) USING iceberg TBLPROPERTIES ({cow_properties()})")
    spark.sql(f"INSERT INTO lake.{ns}.orders SELECT user_id, amount FROM lake.{ns}.users")
    arrow = pa.table({"user_id": pa.array([r[0] for r in data], pa.int64()), "email": [r[1] for r in data],
                      "amount": [r[2] for r in data]})
    write_deltalake(str(root / "delta_users"), arrow)
    (root / "parquet_users").mkdir()
    pq.write_table(arrow, root / "parquet_users" / "part-0.parquet")
    columns = ["user_id", "email", "amount"]
    catalog = {
        f"{ns}.users": {"format": "iceberg", "table": f"lake.{ns}.users", "location": str(warehouse / ns / "users"),
                        "columns": columns, "identifiers": ["user_id", "email"], "subject_key": "user_id"},
        f"{ns}.orders": {"format": "iceberg", "write_mode": "copy-on-write", "table": f"lake.{ns}.orders",
                         "location": str(warehouse / ns / "orders"), "columns": ["customer_id", "amount"]},
        f"{ns}.delta_users": {"format": "delta", "location": str(root / "delta_users"), "columns": columns,
                              "identifiers": ["user_id", "email"], "subject_key": "user_id"},
        f"{ns}.parquet_users": {"format": "parquet", "location": str(root / "parquet_users"), "columns": columns,
                                "identifiers": ["user_id", "email"], "subject_key": "user_id"},
    }
    sql = f"INSERT INTO lake.{ns}.orders SELECT user_id AS customer_id, amount FROM lake.{ns}.users;\n"
    ws = piitracer.load_workspace(write_workspace(root / "ws", warehouse, catalog, sql))
    return ns, root, ws, spark


def everything(lake) -> dict[str, tuple[int, str]]:
    ns, root, _, spark = lake
    return {
        "iceberg users": checksum(table_rows(spark, f"lake.{ns}.users")),
        "iceberg orders": checksum(table_rows(spark, f"lake.{ns}.orders")),
        "delta": checksum(tuple(r.values()) for r in DeltaTable(str(root / "delta_users")).to_pyarrow_table().to_pylist()),
        "parquet": checksum(tuple(r.values()) for r in pq.read_table(root / "parquet_users").to_pylist()),
    }


def subjects(*values: str) -> list[Subject]:
    return [Subject(value=v, request_id=f"r{i}", received_at=RECEIVED) for i, v in enumerate(values)]


@pytest.mark.parametrize("source", ["users", "delta_users", "parquet_users"])
def test_no_hostile_form_can_be_planned_on_any_format(lakehouse, source: str) -> None:
    ns, _, ws, _ = lakehouse
    graph = piitracer.build_lineage_graph(ws)
    for value, reason in HOSTILE:
        with pytest.raises(PlanningError) as caught:
            plan_deletion(ws, graph, [f"{ns}.{source}.user_id"], subjects("100001", value), labels=["batch.csv:2", "batch.csv:3"])
        message = str(caught.value)
        assert message.startswith("batch.csv:3: ") and reason in message and f"{ns}.{source}.user_id is bigint" in message
        assert value.strip() not in message


def test_an_edited_plan_with_a_hostile_value_is_refused_and_nothing_changes(lakehouse, tmp_path: Path) -> None:
    ns, _, ws, _ = lakehouse
    before = everything(lakehouse)
    for source in ("users", "delta_users", "parquet_users"):
        plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.{source}.user_id"], subjects("100001"))
        for value in ("4242.9", " 17 ", "5000\u0000", "1e3"):
            data = json.loads(plan.to_json())
            data["subjects"][0]["value"] = value
            edited = DeletionPlan.model_validate(data).with_id()  # an attacker can recompute the id
            with pytest.raises(PlanRefused, match="subject #1 .*the value .*the plan was altered"):
                run_plan(ws, edited, ExecuteOptions(no_concurrent_writers=True))
    assert everything(lakehouse) == before
    assert not (ws.root / ".piitracer" / "journal.sqlite").exists()  # refused runs journal nothing


def test_cli_refuses_every_form_by_position_from_subject_csv_and_jsonl(lakehouse, tmp_path: Path) -> None:
    ns, _, ws, _ = lakehouse
    source = f"{ns}.users.user_id"

    def plan(*args: str) -> tuple[int, str]:
        result = CliRunner(env={"PIITRACER_AUDIT_KEY": "strict-values-audit-key-0123456789"}).invoke(
            cli, ["--workspace", str(ws.root), "plan", "--source", source, *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        return result.exit_code, result.output

    code, out = plan("--subject", "100001", "--subject", "4242.9")
    assert code == 2 and "--subject #2: the value is not an exact bigint" in out and "4242.9" not in out
    csv_file = tmp_path / "batch.csv"
    csv_file.write_text("value,request_id\n100001,a\n 17 ,b\n")  # the CSV reader no longer trims
    code, out = plan("--requests", str(csv_file))
    assert code == 2 and f"{csv_file}:3: the value has leading or trailing spaces" in out
    jsonl = tmp_path / "batch.jsonl"
    jsonl.write_text('{"value": "100001"}\n{"value": "5000\\u0000"}\n{"value": 1e3}\n')
    code, out = plan("--requests", str(jsonl))
    assert code == 2 and f"{jsonl}:2: the value contains a control character (U+0000)" in out
    jsonl.write_text('{"value": 100001}\n{"value": 1e3}\n')
    code, out = plan("--requests", str(jsonl))
    assert code == 2 and f"{jsonl}:2: the value is not an exact bigint: it has a decimal point" in out
    csv_file.write_text("value\n" + "1" * 200_000 + "\n")  # over the csv module's field limit
    code, out = plan("--requests", str(csv_file))
    assert code == 2 and f"{csv_file}:2: not a readable CSV line: field larger than field limit" in out
    code, out = plan("--subject", "100001", "-o", str(tmp_path / "ok.json"))
    assert code == 0


def test_string_keys_are_compared_exactly_unless_the_catalog_normalises_them(tmp_path: Path, warehouse: Path) -> None:
    emails = ["bob@x.com", "Bob@X.com", "alice@x.com"] + [f"user{i}@x.com" for i in range(200)]
    location = tmp_path / "contacts"
    write_deltalake(str(location), pa.table({"email": emails, "n": list(range(len(emails)))}))
    entry = {"format": "delta", "location": str(location), "columns": ["email", "n"], "identifiers": ["email"],
             "subject_key": "email"}
    ws = piitracer.load_workspace(write_workspace(tmp_path / "ws", warehouse, {"crm.contacts": entry}, "-- none\n"))
    rows = lambda: sorted(DeltaTable(str(location)).to_pyarrow_table().column("email").to_pylist())  # noqa: E731
    before = rows()
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), ["crm.contacts.email"], subjects(" bob@x.com", "BOB@X.COM"))
    run_plan(ws, plan, ExecuteOptions(no_concurrent_writers=True))
    assert rows() == before  # neither near-miss is anybody's exact e-mail: nothing deleted

    normalised = {**entry, "normalised": {"email": ["trim", "lower"]}}
    ws2 = piitracer.load_workspace(write_workspace(tmp_path / "ws2", warehouse, {"crm.contacts": normalised}, "-- none\n"))
    plan = plan_deletion(ws2, piitracer.build_lineage_graph(ws2), ["crm.contacts.email"], subjects(" BOB@x.com "))
    assert plan.resolve[0].normalised == {"email": ("trim", "lower")}
    run_plan(ws2, plan, ExecuteOptions(no_concurrent_writers=True))
    assert rows() == sorted(e for e in before if e != "bob@x.com")  # exactly the normalised value, not "Bob@X.com"


def test_a_type_the_catalog_and_the_table_disagree_on_is_refused(lakehouse) -> None:
    ns, _, ws, _ = lakehouse
    entry = ws.config.catalog[f"{ns}.users"].model_copy(update={"column_types": {"user_id": "string"}})
    config = ws.config.model_copy(update={"catalog": {**ws.config.catalog, f"{ns}.users": entry}})
    wrong = type(ws)(root=ws.root, config=config, namer=ws.namer)
    with pytest.raises(PlanningError, match="column_types says string but the table's schema says bigint"):
        plan_deletion(wrong, piitracer.build_lineage_graph(wrong), [f"{ns}.users.user_id"], subjects("100001"))


def test_plan_file_written_by_the_cli_is_private(lakehouse, tmp_path: Path) -> None:
    ns, _, ws, _ = lakehouse
    plan = plan_deletion(ws, piitracer.build_lineage_graph(ws), [f"{ns}.users.user_id"], subjects("100001"))
    write_private(tmp_path / "p.json", plan.to_json())
    assert (tmp_path / "p.json").stat().st_mode & 0o777 == 0o600
    assert plan.resolve[0].key_types == {"user_id": "bigint"}
