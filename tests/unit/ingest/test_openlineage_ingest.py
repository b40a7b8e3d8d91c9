"""OpenLineage ingest: facet shapes, symlinks, latest-event-wins, tolerance and error reporting."""

from __future__ import annotations

import json
from pathlib import Path

from openlineage.client.event_v2 import (
    DatasetEvent,
    InputDataset,
    Job,
    JobEvent,
    OutputDataset,
    Run,
    RunEvent,
    RunState,
    StaticDataset,
)
from openlineage.client.facet_v2 import column_lineage_dataset as cl
from openlineage.client.facet_v2 import schema_dataset, symlinks_dataset
from openlineage.client.serde import Serde

from piitracer.ingest.openlineage.events import ingest_openlineage_paths, ingest_openlineage_text
from piitracer.model.lineage import (
    DatasetRelation,
    LineageBatch,
    OriginKind,
    ProblemSeverity,
)
from piitracer.model.naming import DatasetNamer

NAMER = DatasetNamer()
RUN_ID = "0190b7a4-8a4c-7d8e-9a3b-0123456789ab"
HIVE = "hive://metastore"
T0 = "2024-03-01T10:00:00Z"


# ---- building events with the real client --------------------------------------------------


def dataset_facets(columns=None, symlinks=None, lineage=None) -> dict:
    facets = {}
    if columns is not None:
        facets["schema"] = schema_dataset.SchemaDatasetFacet(
            fields=[schema_dataset.SchemaDatasetFacetFields(name=c, type="string") for c in columns]
        )
    if symlinks is not None:
        facets["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
            identifiers=[symlinks_dataset.Identifier(namespace=ns, name=n, type=t) for ns, n, t in symlinks]
        )
    if lineage is not None:
        facets["columnLineage"] = lineage
    return facets


def t(type_: str, subtype: str | None = None, masking: bool | None = None, description: str | None = None):
    return cl.Transformation(type=type_, subtype=subtype, masking=masking, description=description)


def field_in(name: str, column: str, *transformations, namespace: str = HIVE) -> cl.InputField:
    return cl.InputField(namespace=namespace, name=name, field=column, transformations=list(transformations))


def run_event(
    *,
    state: RunState = RunState.COMPLETE,
    time: str = T0,
    job: str = "etl",
    inputs=(),
    outputs=(),
) -> RunEvent:
    return RunEvent(
        eventType=state,
        eventTime=time,
        run=Run(runId=RUN_ID),
        job=Job(namespace="spark", name=job),
        inputs=list(inputs),
        outputs=list(outputs),
    )


def lineage_event(output: str, fields: dict, *, dataset=None, **kwargs) -> RunEvent:
    """A COMPLETE run writing ``output`` with a 1-1/1-2 columnLineage facet."""
    facet = cl.ColumnLineageDatasetFacet(
        fields={col: cl.Fields(inputFields=list(inputs)) for col, inputs in fields.items()},
        dataset=list(dataset or []),
    )
    sources = sorted({f.name for inputs in fields.values() for f in inputs} | {f.name for f in dataset or []})
    return run_event(
        inputs=[InputDataset(namespace=HIVE, name=s) for s in sources],
        outputs=[OutputDataset(namespace=HIVE, name=output, facets=dataset_facets(lineage=facet))],
        **kwargs,
    )


def jsonl(*events) -> str:
    return "\n".join(e if isinstance(e, str) else Serde.to_json(e) for e in events) + "\n"


def edge_set(batch: LineageBatch) -> set[tuple]:
    return {
        (
            str(e.source),
            e.target_dataset,
            e.target_column,
            e.kind.value,
            e.subtype.value if e.subtype else None,
            e.masking,
        )
        for e in batch.column_edges
    }


def flow_set(batch: LineageBatch) -> set[tuple[str, str]]:
    assert all(e.relation is DatasetRelation.FLOW for e in batch.dataset_edges)
    return {(e.source, e.target) for e in batch.dataset_edges}


def ingest(text: str, file: str = "events.jsonl") -> LineageBatch:
    return ingest_openlineage_text(text, file=file, namer=NAMER)


def errors(batch: LineageBatch) -> list[tuple[int | None, str]]:
    return [(p.origin.line, p.reason) for p in batch.problems if p.severity is ProblemSeverity.ERROR]


# ---- facet shapes -----------------------------------------------------------------------------


def test_column_lineage_1_0_transformation_type():
    """Hand-written 1-0-1 shape (older producers): transformationType on the output field."""
    event = {
        "eventType": "COMPLETE",
        "eventTime": T0,
        "run": {"runId": RUN_ID},
        "job": {"namespace": "spark", "name": "legacy"},
        "inputs": [{"namespace": HIVE, "name": "prod.payments"}],
        "outputs": [
            {
                "namespace": HIVE,
                "name": "mart.spend",
                "facets": {
                    "columnLineage": {
                        "_producer": "https://example.com/old-producer",
                        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/ColumnLineageDatasetFacet.json",
                        "fields": {
                            "user_id": {
                                "inputFields": [{"namespace": HIVE, "name": "prod.payments", "field": "user_id"}],
                                "transformationType": "IDENTITY",
                                "transformationDescription": "copied",
                            },
                            "total": {
                                "inputFields": [{"namespace": HIVE, "name": "prod.payments", "field": "amount"}],
                                "transformationType": "AGGREGATION",
                            },
                            "pan_hash": {
                                "inputFields": [{"namespace": HIVE, "name": "prod.payments", "field": "pan"}],
                                "transformationType": "masked",
                                "transformationDescription": "sha2(pan)",
                            },
                            "phone_tail": {
                                "inputFields": [{"namespace": HIVE, "name": "prod.payments", "field": "phone"}],
                                "transformationType": "SUBSTRING",
                            },
                            "city": {
                                "inputFields": [{"namespace": HIVE, "name": "prod.payments", "field": "city"}],
                            },
                        },
                    }
                },
            }
        ],
    }
    batch = ingest(json.dumps(event), file="legacy.json")

    assert batch.problems == ()
    assert edge_set(batch) == {
        ("prod.payments.user_id", "mart.spend", "user_id", "DIRECT", "IDENTITY", False),
        ("prod.payments.amount", "mart.spend", "total", "DIRECT", "AGGREGATION", False),
        ("prod.payments.pan", "mart.spend", "pan_hash", "DIRECT", "TRANSFORMATION", True),
        ("prod.payments.phone", "mart.spend", "phone_tail", "DIRECT", "TRANSFORMATION", False),
        ("prod.payments.city", "mart.spend", "city", "DIRECT", "TRANSFORMATION", False),
    }
    descriptions = {e.target_column: e.description for e in batch.column_edges}
    assert descriptions["user_id"] == "copied" and descriptions["pan_hash"] == "sha2(pan)"
    assert all(e.expression is None for e in batch.column_edges)
    assert flow_set(batch) == {("prod.payments", "mart.spend")}
    origin = batch.column_edges[0].origin
    assert (origin.kind, origin.file, origin.line, origin.job) == (OriginKind.OPENLINEAGE, "legacy.json", 1, "spark/legacy")
    assert batch.units_read == 1


def test_column_lineage_1_1_transformations_per_input_field():
    event = lineage_event(
        "mart.customers",
        {
            "user_id": [field_in("prod.payments", "user_id", t("DIRECT", "IDENTITY"))],
            "pan_hash": [
                field_in("prod.payments", "pan", t("DIRECT", "TRANSFORMATION", masking=True, description="sha2(pan)"))
            ],
            "spend": [
                field_in("prod.payments", "amount", t("DIRECT", "AGGREGATION")),
                field_in("prod.payments", "status", t("INDIRECT", "CONDITIONAL")),
            ],
            "phone": [field_in("prod.contacts", "phone")],  # no transformations: unknown transform
            "tier": [
                field_in("prod.contacts", "score", t("DIRECT", "TRANSFORMATION"), t("INDIRECT", "WINDOW")),
            ],
        },
    )
    batch = ingest(jsonl(event))

    assert batch.problems == ()
    assert edge_set(batch) == {
        ("prod.payments.user_id", "mart.customers", "user_id", "DIRECT", "IDENTITY", False),
        ("prod.payments.pan", "mart.customers", "pan_hash", "DIRECT", "TRANSFORMATION", True),
        ("prod.payments.amount", "mart.customers", "spend", "DIRECT", "AGGREGATION", False),
        ("prod.payments.status", "mart.customers", "spend", "INDIRECT", "CONDITIONAL", False),
        ("prod.contacts.phone", "mart.customers", "phone", "DIRECT", "TRANSFORMATION", False),
        ("prod.contacts.score", "mart.customers", "tier", "DIRECT", "TRANSFORMATION", False),
        ("prod.contacts.score", "mart.customers", "tier", "INDIRECT", "WINDOW", False),
    }
    masked = [e for e in batch.column_edges if e.masking]
    assert [e.description for e in masked] == ["sha2(pan)"]
    assert all(e.expression is None for e in batch.column_edges)
    assert flow_set(batch) == {("prod.payments", "mart.customers"), ("prod.contacts", "mart.customers")}


def test_column_lineage_1_2_dataset_level_indirect_edges():
    event = lineage_event(
        "mart.big_spenders",
        {"user_id": [field_in("prod.payments", "user_id", t("DIRECT", "IDENTITY"))]},
        dataset=[
            field_in("prod.payments", "amount", t("INDIRECT", "FILTER", description="amount > 1000")),
            field_in("prod.payments", "user_id", t("INDIRECT", "GROUP_BY")),
            field_in("prod.users", "user_id", t("INDIRECT", "JOIN"), t("INDIRECT", "SORT")),
        ],
    )
    text = jsonl(event)
    assert '"dataset": [{' in text  # really the 1-2-0 shape

    batch = ingest(text)

    assert batch.problems == ()
    assert edge_set(batch) == {
        ("prod.payments.user_id", "mart.big_spenders", "user_id", "DIRECT", "IDENTITY", False),
        ("prod.payments.amount", "mart.big_spenders", None, "INDIRECT", "FILTER", False),
        ("prod.payments.user_id", "mart.big_spenders", None, "INDIRECT", "GROUP_BY", False),
        ("prod.users.user_id", "mart.big_spenders", None, "INDIRECT", "JOIN", False),
        ("prod.users.user_id", "mart.big_spenders", None, "INDIRECT", "SORT", False),
    }
    dataset_level = [e for e in batch.column_edges if e.target_column is None]
    assert all(e.target is None for e in dataset_level)


def test_unknown_transformation_type_or_subtype_warns_and_keeps_the_flow():
    event = lineage_event(
        "mart.x",
        {
            "a": [field_in("prod.src", "a", t("DIRECT", "TELEPORT"))],
            "b": [field_in("prod.src", "b", t("SIDEWAYS", "IDENTITY"))],
        },
    )
    batch = ingest(jsonl(event))

    assert edge_set(batch) == {
        ("prod.src.a", "mart.x", "a", "DIRECT", "TRANSFORMATION", False),
        ("prod.src.b", "mart.x", "b", "DIRECT", "TRANSFORMATION", False),
    }
    warnings = [p for p in batch.problems if p.severity is ProblemSeverity.WARNING]
    assert len(warnings) == 2 and errors(batch) == []
    reasons = " | ".join(p.reason for p in warnings)
    assert "'TELEPORT'" in reasons and "'SIDEWAYS'" in reasons
    assert "outputs[0].facets.columnLineage.fields.a.inputFields[0].transformations[0].subtype" in reasons
    assert all(p.origin.line == 1 and p.origin.job == "spark/etl" for p in warnings)


# ---- symlinks ---------------------------------------------------------------------------------


def test_symlinks_put_path_named_datasets_on_their_table_id():
    payments_path = ("file", "/wh/prod/payments")
    payments_table = ("file:/wh", "prod.payments", "TABLE")
    write = run_event(
        job="load_payments",
        inputs=[InputDataset(namespace="kafka://broker:9092", name="payments")],
        outputs=[
            OutputDataset(
                *payments_path,
                facets=dataset_facets(
                    columns=["user_id", "pan"],
                    symlinks=[payments_table],
                    lineage=cl.ColumnLineageDatasetFacet(
                        fields={
                            "pan": cl.Fields(
                                inputFields=[
                                    field_in("payments", "card", t("DIRECT", "IDENTITY"), namespace="kafka://broker:9092")
                                ]
                            )
                        }
                    ),
                ),
            )
        ],
    )
    read = run_event(
        job="hash_cards",
        inputs=[InputDataset(*payments_path, facets=dataset_facets(symlinks=[payments_table]))],
        outputs=[
            OutputDataset(
                "file",
                "/wh/mart/cards",
                facets=dataset_facets(
                    symlinks=[("file:/wh", "mart.cards", "TABLE")],
                    lineage=cl.ColumnLineageDatasetFacet(
                        fields={
                            "pan_hash": cl.Fields(
                                inputFields=[
                                    field_in(
                                        payments_path[1],
                                        "pan",
                                        t("DIRECT", "TRANSFORMATION", masking=True),
                                        namespace=payments_path[0],
                                    )
                                ]
                            )
                        }
                    ),
                ),
            )
        ],
    )
    batch = ingest(jsonl(write, read))

    assert batch.problems == ()
    assert edge_set(batch) == {
        ("kafka://broker:9092/payments.card", "prod.payments", "pan", "DIRECT", "IDENTITY", False),
        ("prod.payments.pan", "mart.cards", "pan_hash", "DIRECT", "TRANSFORMATION", True),
    }
    assert flow_set(batch) == {("kafka://broker:9092/payments", "prod.payments"), ("prod.payments", "mart.cards")}
    facts = {f.dataset: f for f in batch.datasets}
    assert set(facts) == {"prod.payments", "mart.cards"}
    assert facts["prod.payments"].columns == ("user_id", "pan")
    assert facts["prod.payments"].aliases == ("file//wh/prod/payments",)
    assert facts["mart.cards"].aliases == ("file//wh/mart/cards",)


def test_without_a_table_symlink_the_own_name_wins_and_symlinks_are_aliases():
    event = run_event(
        outputs=[
            OutputDataset(
                HIVE,
                "prod.events",
                facets=dataset_facets(symlinks=[("s3://bucket", "raw/events", "LOCATION"), ("file:/wh", "x.y", "VIEW")]),
            )
        ]
    )
    batch = ingest(jsonl(event))
    assert [(f.dataset, f.aliases) for f in batch.datasets] == [
        ("prod.events", ("file:/wh/x.y", "s3://bucket/raw/events"))
    ]


# ---- latest event wins ----------------------------------------------------------------------


def test_latest_event_of_a_job_wins_per_output_by_time_not_file_order():
    # The newer event comes first; the older one's wall clock reads later (+05:00 offset).
    newer = lineage_event(
        "mart.out",
        {"a": [field_in("prod.new_src", "a", t("DIRECT", "IDENTITY"))]},
        job="build_out",
        time="2024-03-01T21:00:00Z",
    )
    older = lineage_event(
        "mart.out",
        {"a": [field_in("prod.old_src", "a", t("DIRECT", "IDENTITY"))]},
        job="build_out",
        time="2024-03-02T01:00:00+05:00",  # = 2024-03-01T20:00Z
    )
    other_job = lineage_event(
        "mart.out",
        {"b": [field_in("prod.other_src", "b", t("DIRECT", "TRANSFORMATION"))]},
        job="backfill_out",
        time="2024-01-01T00:00:00Z",
    )
    batch = ingest(jsonl(newer, older, other_job))

    assert batch.problems == ()
    assert edge_set(batch) == {
        ("prod.new_src.a", "mart.out", "a", "DIRECT", "IDENTITY", False),
        ("prod.other_src.b", "mart.out", "b", "DIRECT", "TRANSFORMATION", False),
    }
    assert flow_set(batch) == {("prod.new_src", "mart.out"), ("prod.other_src", "mart.out")}
    assert {e.origin.line for e in batch.column_edges} == {1, 3}
    assert batch.units_read == 3


def test_latest_event_wins_across_files_and_a_tie_goes_to_the_one_read_later(tmp_path: Path):
    first = lineage_event("mart.out", {"a": [field_in("prod.one", "a", t("DIRECT", "IDENTITY"))]})
    second = lineage_event("mart.out", {"a": [field_in("prod.two", "a", t("DIRECT", "IDENTITY"))]})
    folder = tmp_path / "events"
    (folder / "nested").mkdir(parents=True)
    (folder / "a.jsonl").write_text(jsonl(first))
    (folder / "nested" / "b.json").write_text(Serde.to_json(second))
    (folder / "notes.txt").write_text("not events")

    batch = ingest_openlineage_paths([folder], namer=NAMER, display_root=tmp_path)

    assert batch.problems == ()
    assert edge_set(batch) == {("prod.two.a", "mart.out", "a", "DIRECT", "IDENTITY", False)}
    assert {e.origin.file for e in batch.column_edges} == {"events/nested/b.json"}
    assert batch.units_read == 2


# ---- tolerated events -----------------------------------------------------------------------


def test_only_complete_and_job_events_give_lineage_others_only_facts():
    def writes(name: str, source: str, **kwargs):
        return lineage_event(name, {"a": [field_in(source, "a", t("DIRECT", "IDENTITY"))]}, **kwargs)

    start = run_event(
        state=RunState.START,
        outputs=[OutputDataset(HIVE, "mart.started", facets=dataset_facets(columns=["a", "b"]))],
    )
    events = [
        start,
        writes("mart.running", "prod.r", state=RunState.RUNNING),
        writes("mart.failed", "prod.f", state=RunState.FAIL),
        writes("mart.aborted", "prod.ab", state=RunState.ABORT),
        writes("mart.other", "prod.o", state=RunState.OTHER),
        writes("mart.completed", "prod.c"),
        JobEvent(
            eventTime=T0,
            job=Job(namespace="airflow", name="static_dag"),
            inputs=[InputDataset(HIVE, "prod.static_src")],
            outputs=[
                OutputDataset(
                    HIVE,
                    "mart.static",
                    facets=dataset_facets(
                        lineage=cl.ColumnLineageDatasetFacet(
                            fields={"a": cl.Fields(inputFields=[field_in("prod.static_src", "a", t("DIRECT", "IDENTITY"))])}
                        )
                    ),
                )
            ],
        ),
        DatasetEvent(
            eventTime=T0,
            dataset=StaticDataset(HIVE, "prod.described", facets=dataset_facets(columns=["id", "email"])),
        ),
    ]
    batch = ingest(jsonl(*events))

    assert batch.problems == ()
    assert batch.units_read == len(events)
    assert edge_set(batch) == {
        ("prod.c.a", "mart.completed", "a", "DIRECT", "IDENTITY", False),
        ("prod.static_src.a", "mart.static", "a", "DIRECT", "IDENTITY", False),
    }
    assert flow_set(batch) == {("prod.c", "mart.completed"), ("prod.static_src", "mart.static")}
    static_origin = next(e.origin for e in batch.column_edges if e.target_dataset == "mart.static")
    assert static_origin.job == "airflow/static_dag"
    assert [(f.dataset, f.columns) for f in batch.datasets] == [
        ("mart.started", ("a", "b")),
        ("prod.described", ("id", "email")),
    ]


def test_facts_take_the_latest_schema_and_the_union_of_aliases():
    def seen(time: str, columns, symlinks):
        return run_event(
            time=time,
            outputs=[OutputDataset(HIVE, "prod.t", facets=dataset_facets(columns=columns, symlinks=symlinks))],
        )

    batch = ingest(
        jsonl(
            seen("2024-03-02T00:00:00Z", ["a", "b", "c"], [("s3://b", "t2", "LOCATION")]),
            seen("2024-03-01T00:00:00Z", ["a"], [("s3://b", "t1", "LOCATION")]),
            seen("2024-03-03T00:00:00Z", None, [("s3://b", "t3", "LOCATION")]),
        )
    )
    assert [(f.dataset, f.columns, f.aliases, f.origin.line) for f in batch.datasets] == [
        ("prod.t", ("a", "b", "c"), ("s3://b/t1", "s3://b/t2", "s3://b/t3"), 1)
    ]


# ---- broken input ---------------------------------------------------------------------------


def _valid(job: str, output: str) -> str:
    return Serde.to_json(lineage_event(output, {"a": [field_in("prod.src", "a", t("DIRECT", "IDENTITY"))]}, job=job))


def _broken(mutate) -> str:
    event = json.loads(_valid("broken", "mart.broken"))
    mutate(event)
    return json.dumps(event)


def test_jsonl_reports_every_broken_event_with_its_line_and_ingests_the_rest():
    lines = [
        _valid("one", "mart.one"),  # 1
        '{"eventType": "COMPLETE", "eventTime": ',  # 2: bad JSON
        "",  # 3: blank, ignored
        _broken(lambda e: e["run"].pop("runId")),  # 4
        _broken(lambda e: e.update(eventTime=12345)),  # 5
        _broken(lambda e: e.update(inputs="prod.src")),  # 6
        "   ",  # 7: blank
        _valid("two", "mart.two"),  # 8
        "[1, 2]",  # 9: not an object
        _broken(lambda e: e.update(eventType="DONE")),  # 10
    ]
    batch = ingest("\n".join(lines) + "\n")

    assert {e.target_dataset for e in batch.column_edges} == {"mart.one", "mart.two"}
    found = errors(batch)
    assert [line for line, _ in found] == [2, 4, 5, 6, 9, 10]
    reasons = dict(found)
    assert reasons[2].startswith("invalid JSON")
    assert reasons[4] == "run.runId: Field required"
    assert reasons[5] == "eventTime: expected a string"
    assert reasons[6] == "inputs: expected a list"
    assert "expected a JSON object" in reasons[9]
    assert reasons[10].startswith("eventType: expected one of") and "'DONE'" in reasons[10]
    assert all(p.origin.file == "events.jsonl" and p.origin.kind is OriginKind.OPENLINEAGE for p in batch.problems)
    assert batch.units_read == 8


def test_json_array_reports_a_bad_element_at_its_start_line():
    good_one = json.dumps(json.loads(_valid("one", "mart.one")), indent=2)
    bad = json.dumps(json.loads(_broken(lambda e: e["job"].pop("name"))), indent=2)
    good_two = json.dumps(json.loads(_valid("two", "mart.two")), indent=2)
    text = "[\n" + good_one + ",\n" + bad + ",\n" + good_two + "\n]\n"
    bad_line = 2 + good_one.count("\n") + 1

    batch = ingest(text, file="events.json")

    assert {e.target_dataset for e in batch.column_edges} == {"mart.one", "mart.two"}
    assert errors(batch) == [(bad_line, "job.name: Field required")]
    lines = {e.target_dataset: e.origin.line for e in batch.column_edges}
    assert lines == {"mart.one": 2, "mart.two": bad_line + bad.count("\n") + 1}
    assert batch.units_read == 3


def test_truncated_json_array_keeps_the_events_before_the_break():
    elements = [json.dumps(json.loads(_valid(job, f"mart.{job}")), indent=2) for job in ("one", "two", "three")]
    full = "[\n" + ",\n".join(elements) + "\n]\n"
    text = full[: full.index('"mart.three"') + 5]  # cut inside the third event
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        expected_line = exc.lineno
    else:  # pragma: no cover
        raise AssertionError("the text should be broken")

    batch = ingest(text, file="events.json")

    assert {e.target_dataset for e in batch.column_edges} == {"mart.one", "mart.two"}
    assert len(batch.problems) == 1
    (line, reason), = errors(batch)
    assert line == expected_line and reason.startswith("invalid JSON")
    assert batch.units_read == 3


def test_single_json_object_and_empty_files():
    batch = ingest(_valid("one", "mart.one"), file="one.json")
    assert {e.target_dataset for e in batch.column_edges} == {"mart.one"} and batch.problems == ()
    assert ingest("", file="empty.json") == LineageBatch()
    assert ingest("\n\n", file="empty.ndjson") == LineageBatch()


# ---- determinism ----------------------------------------------------------------------------


def test_ingesting_twice_gives_equal_batches(tmp_path: Path):
    text = jsonl(
        lineage_event(
            "mart.customers",
            {
                "pan_hash": [field_in("prod.payments", "pan", t("DIRECT", "TRANSFORMATION", masking=True))],
                "user_id": [field_in("prod.payments", "user_id", t("DIRECT", "IDENTITY"))],
            },
            dataset=[field_in("prod.payments", "amount", t("INDIRECT", "FILTER"))],
        ),
        _valid("two", "mart.two"),
        _broken(lambda e: e["run"].pop("runId")),
    )
    (tmp_path / "e.jsonl").write_text(text)

    first = ingest_openlineage_paths([tmp_path], namer=NAMER)
    second = ingest_openlineage_paths([tmp_path / "e.jsonl"], namer=NAMER)

    assert first == second
    assert first.model_dump_json() == second.model_dump_json()
    assert list(first.column_edges) == sorted(first.column_edges, key=lambda e: e.sort_key())
    assert first.column_edges and len(first.problems) == 1
