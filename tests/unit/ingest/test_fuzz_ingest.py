"""Fuzzing the lineage ingest with hypothesis: OpenLineage event files (valid shapes with odd
values, wrong types, missing and extra fields, deep nesting, huge strings, unicode, lines that are
not JSON or not objects) and SQL files (statements from a small Spark SQL grammar, procedure and
script blocks around them, truncated statements, garbage, invalid UTF-8).

Properties, for every generated file:
- the ingest returns (no exception escapes);
- every problem names the file and a line inside it;
- every event line / statement is counted, and a known-good event or statement placed among the
  bad ones still yields its edge (one bad item is reported and skipped, never a silent drop).

The suite runs a bounded, derandomized number of examples (seconds). The longer search:

    PIITRACER_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest -q tests/unit/ingest/test_fuzz_ingest.py

(random seeds then, so every long run explores new inputs; a failure prints the example to keep).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from piitracer.ingest.openlineage.events import ingest_openlineage_paths, ingest_openlineage_text
from piitracer.ingest.sql.lineage import ingest_sql_paths, ingest_sql_text
from piitracer.model.lineage import ColumnRef, LineageBatch
from piitracer.model.naming import DatasetNamer

EXAMPLES = int(os.environ.get("PIITRACER_FUZZ_EXAMPLES", "40"))
FUZZ = settings(max_examples=EXAMPLES, derandomize=EXAMPLES <= 200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
NAMER = DatasetNamer(spark_catalogs=("spark_catalog",))


# ---- OpenLineage ----------------------------------------------------------------------------------

def event(job: str, output: str, inputs: list[str], fields: dict[str, list[tuple[str, str]]], event_type: str = "COMPLETE") -> dict:
    """A valid 1-1-0 RunEvent: ``fields`` maps output column -> [(input dataset, input column)]."""
    dataset = lambda name: {"namespace": "hive://metastore", "name": name}  # noqa: E731
    lineage = {column: {"inputFields": [{**dataset(d), "field": c, "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}]}
                                        for d, c in sources]} for column, sources in fields.items()}
    return {
        "eventType": event_type, "eventTime": "2026-11-01T10:00:00Z", "producer": "fuzz",
        "run": {"runId": "0b6b6c4e-7a1e-4c59-9d0a-2f3e7d6c1a01"}, "job": {"namespace": "spark", "name": job},
        "inputs": [dataset(d) for d in inputs],
        "outputs": [{**dataset(output), "facets": {"schema": {"fields": [{"name": c, "type": "string"} for c in fields]},
                                                   "columnLineage": {"fields": lineage}}}],
    }


GOOD_EVENT = event("fuzz.good_job", "good.target", ["good.source"], {"email_copy": [("good.source", "email")]})
GOOD_EDGE = (ColumnRef(dataset="good.source", column="email"), "good.target", "email_copy")
TEMPLATE = event("fuzz.job", "lake.out", ["lake.a", "lake.b"], {"x": [("lake.a", "x"), ("lake.b", "y")], "y": [("lake.b", "z")]})

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["", "COMPLETE", "START", "DIRECT", "INDIRECT", "IDENTITY", "MASKED", "2026-13-45T99:00:00Z",
                     "\u2028", "\x00", "Zoë 😀", "x" * 100_000]),
)
json_values = st.recursive(json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                                  st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


def paths_of(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from paths_of(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from paths_of(child, (*prefix, index))


@st.composite
def mutated_events(draw) -> dict:
    """The template with 1-3 places replaced by odd values, removed, or given extra fields."""
    value = json.loads(json.dumps(TEMPLATE))
    for _ in range(draw(st.integers(1, 3))):
        places = [p for p in paths_of(value) if p]
        if not places:
            break
        place = draw(st.sampled_from(places))
        parent = value
        for part in place[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "remove", "extra"]))
        if action == "remove" and isinstance(parent, dict):
            del parent[place[-1]]
        elif action == "extra" and isinstance(parent[place[-1]], dict):
            parent[place[-1]][draw(st.text(max_size=10))] = draw(json_values)
        else:
            parent[place[-1]] = draw(json_values)
    return value


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


event_lines = st.one_of(
    mutated_events().map(lambda e: json.dumps(e, ensure_ascii=False)),
    json_values.map(json.dumps),
    st.text(max_size=60).map(lambda t: t.replace("\n", " ")),  # not JSON (or JSON that is not an object)
    st.integers(900, 5000).map(deep),
    mutated_events().map(lambda e: json.dumps(e)[: len(json.dumps(e)) // 2]),  # truncated
)


def assert_well_reported(batch: LineageBatch, file: str, lines: int) -> None:
    for problem in batch.problems:
        assert problem.origin.file == file, str(problem)
        assert problem.origin.line is None or 1 <= problem.origin.line <= lines, str(problem)
        assert problem.reason.strip(), "a problem must say what was expected"


def has_edge(batch: LineageBatch, edge: tuple[ColumnRef, str, str]) -> bool:
    return any((e.source, e.target_dataset, e.target_column) == edge for e in batch.column_edges)


@FUZZ
@given(lines=st.lists(event_lines, min_size=1, max_size=8), position=st.integers(0, 8))
def test_openlineage_lines_never_crash_and_keep_the_good_event(lines: list[str], position: int) -> None:
    lines = list(lines)
    lines.insert(min(position, len(lines)), json.dumps(GOOD_EVENT))
    text = "\n".join(lines)
    batch = ingest_openlineage_text(text, file="events.jsonl", namer=NAMER)
    assert_well_reported(batch, "events.jsonl", text.count("\n") + 1)
    assert batch.units_read == sum(1 for line in text.split("\n") if line.strip())
    assert has_edge(batch, GOOD_EDGE), [str(p) for p in batch.problems]


@FUZZ
@given(items=st.lists(st.one_of(mutated_events(), json_values), min_size=0, max_size=5), cut=st.integers(0, 400))
def test_openlineage_json_documents_never_crash(items: list, cut: int) -> None:
    whole = json.dumps([GOOD_EVENT, *items], indent=1)
    good_element = json.dumps([GOOD_EVENT], indent=1)[:-2]  # "[" and the first element, without "\n]"
    for text in (whole, whole[: len(whole) - cut]):  # the whole array, and the array cut short
        batch = ingest_openlineage_text(text, file="events.json", namer=NAMER)
        assert_well_reported(batch, "events.json", text.count("\n") + 1)
        if text.startswith(good_element):  # an array broken after its first element still yields it
            assert has_edge(batch, GOOD_EDGE)


@FUZZ
@given(data=st.binary(max_size=200))
def test_openlineage_files_of_any_bytes_never_crash(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("ol")
    (folder / "good.jsonl").write_text(json.dumps(GOOD_EVENT) + "\n")
    (folder / "odd.jsonl").write_bytes(data)  # often not UTF-8
    batch = ingest_openlineage_paths([folder], namer=NAMER, display_root=folder)
    assert has_edge(batch, GOOD_EDGE)
    assert all(p.origin.file in ("good.jsonl", "odd.jsonl") for p in batch.problems)


# ---- SQL ----------------------------------------------------------------------------------------

names = st.sampled_from(["a", "b", "user_id", "email", "amt", "dt", "x1", "`weird col`", "select_"])
tables = st.sampled_from(["db.t1", "db.t2", "lake.db.t3", "t4", "db.`odd table`"])
expressions = st.one_of(
    names, names.map(lambda c: f"sha2(lower({c}), 256)"), st.tuples(names, names).map(lambda p: f"{p[0]} + {p[1]}"),
    names.map(lambda c: f"CASE WHEN {c} IS NULL THEN 0 ELSE 1 END"), names.map(lambda c: f"count({c})"),
    st.tuples(names, names).map(lambda p: f"row_number() OVER (PARTITION BY {p[0]} ORDER BY {p[1]})"),
    st.just("*"), st.sampled_from(["'Zoë 😀'", "1e309", "NULL", "'it''s'"]),
)


@st.composite
def selects(draw) -> str:
    columns = ", ".join(f"{e} AS c{i}" if e != "*" else e for i, e in enumerate(draw(st.lists(expressions, min_size=1, max_size=4))))
    query = f"SELECT {columns} FROM {draw(tables)} s"
    if draw(st.booleans()):
        query += f" JOIN {draw(tables)} j ON s.{draw(names)} = j.{draw(names)}"
    if draw(st.booleans()):
        query += f" WHERE {draw(names)} > 0"
    if draw(st.booleans()):
        query += f" UNION ALL SELECT {columns} FROM {draw(tables)}"
    return query


@st.composite
def statements(draw) -> str:
    kind = draw(st.sampled_from(["insert", "overwrite", "ctas", "merge", "cte", "use", "dml", "block", "garbage"]))
    if kind == "insert":
        return f"INSERT INTO {draw(tables)} {draw(selects())}"
    if kind == "overwrite":
        return f"INSERT OVERWRITE TABLE {draw(tables)} PARTITION (dt) {draw(selects())}"
    if kind == "ctas":
        return f"CREATE TABLE {draw(tables)} AS {draw(selects())}"
    if kind == "merge":
        return (f"MERGE INTO {draw(tables)} t USING ({draw(selects())}) s ON t.{draw(names)} = s.c0 "
                f"WHEN MATCHED THEN UPDATE SET t.{draw(names)} = s.c0 WHEN NOT MATCHED THEN INSERT *")
    if kind == "cte":
        return f"WITH w AS ({draw(selects())}) INSERT INTO {draw(tables)} SELECT * FROM w"
    if kind == "use":
        return f"USE {draw(st.sampled_from(['db', 'lake.db', '`x`']))}"
    if kind == "dml":
        table, column = draw(tables), draw(names)
        return draw(st.sampled_from([
            f"UPDATE {table} t SET {column} = s.c0 FROM ({draw(selects())}) s WHERE t.{column} = s.c0",
            f"UPDATE {table} SET {column} = ({draw(selects())})",
            f"DELETE FROM {table} t USING {draw(tables)} s WHERE t.{column} = s.{draw(names)}",
            f"DELETE FROM {table} WHERE {column} IN ({draw(selects())})",
        ]))
    if kind == "block":
        inner = f"INSERT INTO {draw(tables)} {draw(selects())}"
        return draw(st.sampled_from([
            f"BEGIN {inner}; END",
            f"CREATE PROCEDURE db.p() BEGIN DECLARE v INT64; IF v > 0 THEN {inner}; ELSE {inner}; END IF; END",
            f"CREATE PROC db.p AS BEGIN WHILE 1 = 1 BEGIN {inner}; END END",
            f"CREATE PROCEDURE db.p IS v NUMBER := 0; BEGIN LOOP {inner}; EXIT WHEN v > 1; END LOOP; END p",
            f"BEGIN FOR r IN (SELECT 1) DO {inner}; END FOR; EXCEPTION WHEN ERROR THEN RAISE; END",
            f"EXECUTE IMMEDIATE '{inner}'",
            "END IF", "END", "BEGIN", "ELSE", "LOOP",
        ]))
    return draw(st.text(max_size=80))


sql_items = st.one_of(
    statements(),
    statements().flatmap(lambda s: st.integers(0, len(s)).map(lambda n: s[:n])),  # truncated
    st.integers(500, 3000).map(lambda d: "INSERT INTO db.t SELECT " + "(" * d + "a" + ")" * d + " FROM db.u"),
)
GOOD_SQL = "INSERT INTO good.target SELECT email AS email_copy FROM good.source"


@FUZZ
@given(items=st.lists(sql_items, min_size=1, max_size=6), position=st.integers(0, 6))
def test_sql_files_never_crash_and_keep_the_good_statement(items: list[str], position: int) -> None:
    items = list(items)
    # Garbage may open a quote or comment that swallows what follows; the good statement goes on
    # its own line after a terminator, where the line-based fallback split can still find it.
    items.insert(min(position, len(items)), GOOD_SQL)
    text = ";\n".join(items) + ";\n"
    batch = ingest_sql_text(text, file="pipelines.sql", namer=NAMER)
    assert_well_reported(batch, "pipelines.sql", text.count("\n") + 1)
    assert batch.units_read >= 1
    if all("'" not in i and '"' not in i and "`" not in i.replace("`weird col`", "").replace("`odd table`", "").replace("`x`", "")
           and "/*" not in i and "--" not in i for i in items):
        assert has_edge(batch, (ColumnRef(dataset="good.source", column="email"), "good.target", "email_copy")), \
            [str(p) for p in batch.problems]


@FUZZ
@given(data=st.binary(max_size=200))
def test_sql_files_of_any_bytes_never_crash(tmp_path_factory, data: bytes) -> None:
    folder = tmp_path_factory.mktemp("sql")
    (folder / "a_good.sql").write_text(GOOD_SQL + ";\n")
    (folder / "b_odd.sql").write_bytes(data)
    batch = ingest_sql_paths([folder], namer=NAMER, display_root=folder)
    assert has_edge(batch, (ColumnRef(dataset="good.source", column="email"), "good.target", "email_copy"))
    assert all(p.origin.file in ("a_good.sql", "b_odd.sql") for p in batch.problems)
