"""Real OpenLineage Spark events: the integration's own expected events for CTAS, INSERT (Iceberg
AppendData) and MERGE INTO (Iceberg, Delta) with column lineage, copied unchanged into
tests/data/fixtures/openlineage_spark/ (see its NOTICE).

For each fixture the expected column edges are computed here, from the fixture's own
``columnLineage`` facet, and must equal piitracer's edges exactly: every input field of every
output column, one edge per transformation (a field with none: DIRECT TRANSFORMATION, the value
flows in some unknown way). Each dataset is a catalog entry known by its location, by its table
name (Spark's TABLE ``symlinks``), or by both: all three name the same catalog dataset. Every facet
is read, known to carry no lineage, or reported.

The fixtures are matchers (the integration's tests compare only the fields they hold), so before
ingesting, :func:`as_emitted` fills in what a real event always has and they leave out: an
``eventTime``, a ``run.runId``, a ``job.name`` where missing (the fixture's file name), a
``namespace`` on a symlink that has none (a Hive metastore's, ``hive://metastore:9083``), and
substitutes json-unit's ``${json-unit.regex}`` placeholders by a concrete value matching them
(``.*`` -> ``/lake``). Any other placeholder left (``${...}``, ``{{ ... }}``) fails the test.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from piitracer.ingest.openlineage.events import ingest_openlineage_text
from piitracer.ingest.openlineage.facets import GAP_FACETS, NO_LINEAGE_FACETS, READ_FACETS
from piitracer.model.naming import DatasetNamer, normalise_location, split_table_name
from paths import DATA

FIXTURES = DATA / "fixtures" / "openlineage_spark"
NAMES = sorted(p.name for p in FIXTURES.glob("*.json"))
REGEX_MARK = "${json-unit.regex}"
METASTORE = "hive://metastore:9083"
OPERATIONS = {  # what each fixture's Spark job ran
    "cliSimpleCreateHiveTableAsSelectComplete.json": "CTAS (Hive table)",
    "deltaMergeCommandVerificationComplete.json": "MERGE INTO (Delta)",
    "hiveCreateDataSourceAsSelectCommandCompleteEvent.json": "CTAS (data source table, Hive metastore)",
    "pysparkCLLEnd.json": "CTAS with join, group by, filter",
    "pysparkCTASWithColumnLineageEnd.json": "CTAS",
    "pysparkV2AppendDataCompleteEvent.json": "INSERT INTO (Iceberg)",
    "pysparkV2CreateTableAsSelectCompleteEvent.json": "CTAS (Iceberg)",
    "pysparkV2MergeIntoDeltaTableCompleteEvent.json": "MERGE INTO (Delta)",
    "pysparkV2MergeIntoTableCowCompleteEvent.json": "MERGE INTO (Iceberg copy-on-write)",
}


def test_the_fixtures_are_the_ones_described() -> None:
    assert NAMES == sorted(OPERATIONS)
    assert (FIXTURES / "NOTICE").is_file()


# ---- the fixture as the integration emits it ---------------------------------------------------


def as_emitted(name: str) -> dict[str, Any]:
    """The fixture with the fields a matcher leaves out filled in and placeholders substituted."""
    event = _substituted(json.loads((FIXTURES / name).read_text()))
    leftover = re.findall(r"\$\{[^}]*\}|\{\{[^}]*\}\}", json.dumps(event))
    assert not leftover, f"{name}: placeholders not handled: {leftover}"
    event.setdefault("eventTime", "2026-11-26T10:00:00Z")
    event.setdefault("run", {}).setdefault("runId", "0195f0c8-7d5e-7c3a-9e0a-6f1b2c3d4e5f")
    event.setdefault("job", {}).setdefault("namespace", "spark")
    event["job"].setdefault("name", Path(name).stem)
    for dataset in [*event.get("inputs", []), *event.get("outputs", [])]:
        for identifier in ((dataset.get("facets") or {}).get("symlinks") or {}).get("identifiers", []):
            identifier.setdefault("namespace", METASTORE)
    return event


def _substituted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _substituted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_substituted(item) for item in value]
    if isinstance(value, str) and value.startswith(REGEX_MARK):
        return value[len(REGEX_MARK):].replace(".*", "/lake")
    return value


# ---- the catalog: every dataset of the event, known by location, table name or both ------------


def datasets_of(event: dict[str, Any]) -> list[tuple[str, str | None]]:
    """(location, table name or None) of every dataset the event names, in the event's terms."""
    found: dict[str, str | None] = {}
    for dataset in [*event.get("inputs", []), *event.get("outputs", [])]:
        identifiers = ((dataset.get("facets") or {}).get("symlinks") or {}).get("identifiers", [])
        table = next((i["name"] for i in identifiers if i.get("type") == "TABLE"), None)
        found[dataset["name"]] = table or found.get(dataset["name"])
        for entry in ((dataset.get("facets") or {}).get("columnLineage") or {}).get("fields", {}).values():
            for field in entry["inputFields"]:
                found.setdefault(field["name"], None)
    return sorted(found.items())


def catalog_id(location: str) -> str:
    return "cat." + location.rstrip("/").rsplit("/", 1)[-1].replace("-", "_")


def namer_for(event: dict[str, Any], known_by: str) -> DatasetNamer:
    """The naming rule of a catalog holding every dataset of the event, known by ``location``,
    ``table`` (its table name where it has one, else its location) or ``both``."""
    locations, tables = {}, {}
    for location, table in datasets_of(event):
        if known_by in ("location", "both") or table is None:
            locations[normalise_location(location)] = catalog_id(location)
        if known_by in ("table", "both") and table is not None:
            tables[".".join(split_table_name(table))] = catalog_id(location)
    ids = {catalog_id(location) for location, _ in datasets_of(event)}
    return DatasetNamer(catalog_ids=frozenset(ids), locations=locations, tables=tables)


def expected_edges(event: dict[str, Any]) -> set[tuple]:
    """Every edge the fixture's columnLineage facets state, named by catalog id."""
    tables = {table: location for location, table in datasets_of(event) if table}

    def dataset_id(name: str) -> str:
        return catalog_id(name if name.startswith("/") else tables[name])

    edges = set()
    for output in event.get("outputs", []):
        target = dataset_id(output["name"])
        facet = (output.get("facets") or {}).get("columnLineage") or {}
        for column, entry in (facet.get("fields") or {}).items():
            for field in entry["inputFields"]:
                for transformation in field.get("transformations") or [{"type": "DIRECT", "subtype": "TRANSFORMATION"}]:
                    edges.add((dataset_id(field["name"]), field["field"], target, column,
                               transformation["type"], transformation.get("subtype")))
    return edges


def piitracer_edges(batch) -> set[tuple]:
    return {(e.source.dataset, e.source.column, e.target_dataset, e.target_column, e.kind.value,
             e.subtype.value if e.subtype else None) for e in batch.column_edges}


def ingest(event: dict[str, Any], namer: DatasetNamer, name: str = "event.json"):
    return ingest_openlineage_text(json.dumps(event), file=name, namer=namer)


# ---- a test per fixture ------------------------------------------------------------------------


@pytest.mark.parametrize("known_by", ["both", "location", "table"])
@pytest.mark.parametrize("name", NAMES)
def test_every_column_edge_of_the_fixture_is_ingested_exactly(name: str, known_by: str) -> None:
    event = as_emitted(name)
    expected = expected_edges(event)
    assert expected, f"{name}: the fixture states column lineage"
    batch = ingest(event, namer_for(event, known_by), name)
    assert piitracer_edges(batch) == expected
    assert [p for p in batch.problems if p.severity.value != "info"] == []
    # Each output is its catalog dataset, whichever of its names the catalog knows.
    outputs = {catalog_id(o["name"]) for o in event["outputs"]}
    assert outputs <= {f.dataset for f in batch.datasets}
    assert all(edge.target_dataset in outputs for edge in batch.column_edges)


@pytest.mark.parametrize("name", NAMES)
def test_every_facet_of_the_fixture_is_read_known_to_carry_no_lineage_or_reported(name: str) -> None:
    event = as_emitted(name)
    batch = ingest(event, namer_for(event, "both"), name)
    reported = {re.match(r"[\w ]+ facet '([^']+)'", p.reason).group(1) for p in batch.problems
                if re.match(r"[\w ]+ facet '", p.reason)}
    for facet in sorted(set(_facet_names(event))):
        assert facet in READ_FACETS or facet in NO_LINEAGE_FACETS or facet in reported, facet


def _facet_names(event: dict[str, Any]) -> Iterator[str]:
    for part in ("run", "job"):
        yield from (event.get(part) or {}).get("facets") or {}
    for side in ("inputs", "outputs"):
        for dataset in event.get(side) or []:
            for key in ("facets", "inputFacets", "outputFacets"):
                yield from dataset.get(key) or {}


def test_unknown_facets_are_reported_and_a_lineage_gap_is_a_warning() -> None:
    event = as_emitted("pysparkV2MergeIntoTableCowCompleteEvent.json")
    namer = namer_for(event, "both")
    event["run"]["facets"] = {"spark_unknown": {"inputs": [{"name": "LocalRelation"}]},
                              "processing_engine": {"version": "3.5.1", "name": "spark"}}
    event["outputs"][0]["facets"]["acme_retention"] = {"days": 30}
    event["outputs"][0]["outputFacets"] = {"outputStatistics": {"rowCount": 2}, "acme_audit": {"ok": True}}
    # An input's own columnLineage (how the input was made) is not read either: said, not dropped.
    event["inputs"] = [{"namespace": "file", "name": "/tmp/iceberg/default/updates_cow",
                        "facets": {"columnLineage": copy.deepcopy(event["outputs"][0]["facets"]["columnLineage"])}}]
    second = copy.deepcopy(event)
    second["eventTime"] = "2026-11-26T11:00:00Z"
    text = json.dumps(event) + "\n" + json.dumps(second) + "\n"
    batch = ingest_openlineage_text(text, file="events.jsonl", namer=namer)
    job = "iceberg-namespace/iceberg_integration_test.replace_data.spark_catalog_default_events_cow"
    assert sorted((p.origin.line, p.origin.job, p.severity.value, p.reason) for p in batch.problems) == [
        (1, job, "info", "dataset facet 'acme_retention' is not read by piitracer (2 events from here on): "
                         "any lineage it holds is not in the graph"),
        (1, job, "info", "input dataset facet 'columnLineage' is not read by piitracer (2 events from here on): "
                         "any lineage it holds is not in the graph"),
        (1, job, "info", "output facet 'acme_audit' is not read by piitracer (2 events from here on): "
                         "any lineage it holds is not in the graph"),
        (1, job, "warning", f"run facet 'spark_unknown': {GAP_FACETS['spark_unknown']} (2 events of this job)"),
    ]
    assert piitracer_edges(batch) == expected_edges(event)  # the edges are all there still


def test_two_names_of_one_output_that_are_two_catalog_datasets_are_a_warning() -> None:
    event = as_emitted("pysparkCTASWithColumnLineageEnd.json")
    namer = namer_for(event, "location")
    namer.tables["default.tbl1"] = "cat.other_tbl1"  # the catalog says the table name is another dataset
    namer = DatasetNamer(catalog_ids=namer.catalog_ids | {"cat.other_tbl1"}, locations=namer.locations, tables=namer.tables)
    batch = ingest(event, namer)
    assert [(p.severity.value, p.reason) for p in batch.problems] == [(
        "warning", "outputs[0]: file:/tmp/ctas_load/default.tbl1 is catalog dataset cat.other_tbl1, but its other "
                   "names are cat.tbl1: taken as cat.other_tbl1")]
    assert {e.target_dataset for e in batch.column_edges} == {"cat.other_tbl1"}


def test_in_a_workspace_a_spark_merge_lands_on_the_catalog_entries(tmp_path: Path) -> None:
    """End to end: the events' paths are the cluster's (/tmp/iceberg, mapped by location_roots), and
    the catalog (as `catalog discover` writes it) knows both tables by location only: the MERGE
    target, which Spark names by its TABLE symlink default.events_cow, is still its catalog entry."""
    import yaml

    import piitracer

    (tmp_path / "events").mkdir()
    event = as_emitted("pysparkV2MergeIntoTableCowCompleteEvent.json")
    (tmp_path / "events" / "merge.json").write_text(json.dumps(event))
    config = {
        "lineage": {"openlineage": [{"path": "events"}], "location_roots": {"/tmp/iceberg": "lake"}},
        "catalog": {
            "spark.events": {"format": "iceberg", "location": "lake/default/events_cow",
                             "identifiers": ["event_id"], "subject_key": "event_id", "column_types": {"event_id": "bigint"}},
            "spark.updates": {"format": "parquet", "location": "lake/default/updates_cow"},
        },
    }
    (tmp_path / "piitracer.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    graph = piitracer.build_lineage_graph(piitracer.load_workspace(tmp_path))
    assert {(str(e.source), f"{e.target_dataset}.{e.target_column}", e.kind.value, e.subtype.value)
            for e in graph.column_edges()} == {
        ("spark.events.event_id", "spark.events.event_id", "DIRECT", "TRANSFORMATION"),
        ("spark.updates.event_id", "spark.events.event_id", "DIRECT", "TRANSFORMATION"),
        ("spark.updates.updated_at", "spark.events.last_updated_at", "DIRECT", "TRANSFORMATION")}
    assert graph.dataset("spark.events").aliases == {"file:/tmp/iceberg/default.events_cow"}  # its other name
    assert not graph.has_dataset("default.events_cow")
    assert [p for p in graph.problems if p.severity.value != "info"] == []
