"""Resolve, before anything is deleted: read the subjects' rows in each source and capture every
identifier value they hold and every computed key downstream tables need.

Where the source's capture has no expression to evaluate (its keys are stored values), its rows are
read by the dataset's own engine with no Spark (``formats/subject_rows.py``: pyiceberg, delta-rs,
pyarrow): a plan of stored keys needs no JVM. A computed key (``sha2(lower(email))``) is evaluated by
Spark's own functions, so it matches what the pipelines wrote; Spark starts only for such a source
(or for an Iceberg table pyiceberg cannot read). Both readers bind the subjects' values the same way
and give the same values (tests/integration/test_resolve_engines.py compares them on random tables).

Values are always bound as typed data, never cast: the subjects' values are parsed strictly
against the key column's type (``model.key_values``), and the values a later step matches are
kept only when they are exactly of the key column's type (an integer id may also meet a string
column as its decimal text, which is the same datum). Spark's lenient cast — ``'4242.9'`` to 4242,
``' 17 '`` to 17 — never runs on a subject value.

Surrogate keys (``ValueKind.SURROGATE``) are read, not computed: from the dataset that maps the
natural key to the surrogate key (a dimension), the surrogate values of the rows whose natural key
holds the subjects' values, after the value sets they are matched by. A surrogate value that a row
of another person (or of no known person) also holds stops the run before anything is deleted:
erasing by it would erase that row too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable

from piitracer.formats.values import SUBJECT_COLUMN, spark_key_type, subject_frame
from piitracer.model.key_values import exact_values, parse_key_type, parse_key_value
from piitracer.model.outcome import SafetyError
from piitracer.model.plan import DeletionPlan, ResolveCapture, ValueKind, ValueSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

def subject_key_values(plan: DeletionPlan, dataset: str, column: str) -> dict[Any, set[str]]:
    """The subjects' values as typed values of the source key column, each with the requests that
    name it (strict parse; the preflight already refused a plan whose values do not parse, so a
    failure here is a bug)."""
    for capture in plan.resolve:
        if capture.dataset == dataset and column in capture.key_columns:
            key_type = parse_key_type(capture.key_types[column])
            steps = capture.normalised.get(column, ())
            owners: dict[Any, set[str]] = {}
            for subject in plan.subjects:
                owners.setdefault(parse_key_value(subject.value, key_type, steps), set()).add(subject.request_id)
            return owners
    raise KeyError(f"{dataset}.{column} is not a source key of the plan")


RowReader = Callable[[str, str, list[Any], list[str]], Any]  # (dataset, key, values, columns) -> Arrow table


def needs_spark(capture: ResolveCapture) -> bool:
    """Whether a source's capture evaluates an expression (a computed key): Spark's own functions
    compute it, so its values match what the pipelines wrote."""
    return any(v.kind is ValueKind.COMPUTED for v in capture.computed)


def spark_needed(plan: DeletionPlan) -> list[str]:
    """The sources whose resolve evaluates an expression on Spark (what ``execute --dry-run`` says)."""
    return [capture.dataset for capture in plan.resolve if needs_spark(capture)]


def resolve_values(
    plan: DeletionPlan, read_rows: RowReader, spark: Callable[[], "SparkSession"] | None = None,
    source_frame: Callable[[str], "DataFrame"] | None = None,
) -> dict[str, dict[str, list[Any]]]:
    """Request id -> value set name -> sorted distinct values, for every identifier and computed
    key of the plan. Each value is attributed to the requests whose subject's rows hold it, so a
    request's values can be destroyed when it is closed without touching another request's.

    ``read_rows`` reads a source's rows of given key values with the dataset's own engine (no
    Spark); ``spark`` starts (or gives) the Spark session, asked only for a source whose capture
    evaluates an expression or that only Spark can read, whose rows ``source_frame`` gives."""
    from piitracer.formats.subject_rows import SparkNeeded

    per_request: dict[str, dict[str, set[Any]]] = {s.request_id: {} for s in plan.subjects}

    def add(request_id: str, name: str, values: Iterable[Any]) -> None:
        per_request.setdefault(request_id, {}).setdefault(name, set()).update(v for v in values if v is not None)

    for capture in plan.resolve:
        if not needs_spark(capture):
            try:
                _capture_rows(plan, capture, read_rows, add)
                continue
            except SparkNeeded:
                pass  # an Iceberg table pyiceberg cannot read: on Spark below
        if spark is None or source_frame is None:
            raise SafetyError(f"resolve of {capture.dataset}: it needs Spark (a computed key), and none is given")
        _capture_on_spark(spark(), plan, capture, source_frame, add)
    for value in _surrogates_in_order(plan):
        try:
            _read_surrogate_rows(value, per_request, read_rows, add)
        except SparkNeeded:
            if spark is None or source_frame is None:
                raise SafetyError(f"surrogate {value.name}: its mapping dataset needs Spark to be read, and none is given") from None
            _read_surrogate(spark(), value, per_request, source_frame, add)
    return {rid: {name: sorted(values, key=repr) for name, values in sets.items()} for rid, sets in per_request.items()}


def _capture_rows(plan: DeletionPlan, capture: ResolveCapture, read_rows: RowReader,
                  add: Callable[[str, str, Iterable[Any]], None]) -> None:
    """One source's capture read by its own engine: its stored identifiers of the subjects' rows."""
    for key in capture.key_columns:
        owners = subject_key_values(plan, capture.dataset, key)
        for value, requests in owners.items():
            for request_id in requests:  # the subjects' own key values count even without a row
                add(request_id, f"{capture.dataset}.{key}", [value])
        columns = list(dict.fromkeys([key, *capture.identifiers]))
        rows = read_rows(capture.dataset, key, list(owners), columns)
        found = {column: rows.column(column).to_pylist() for column in columns}
        for index, subject in enumerate(found[key]):
            for request_id in owners.get(subject, ()):
                for column in capture.identifiers:
                    add(request_id, f"{capture.dataset}.{column}", [found[column][index]])


def _capture_on_spark(spark: "SparkSession", plan: DeletionPlan, capture: ResolveCapture,
                      source_frame: Callable[[str], "DataFrame"], add: Callable[[str, str, Iterable[Any]], None]) -> None:
    """One source's capture on Spark: its identifiers and its expressions, evaluated by Spark."""
    from pyspark.sql import functions as F

    frame = source_frame(capture.dataset)
    computed = [v for v in capture.computed if v.kind is ValueKind.COMPUTED]
    for key in capture.key_columns:
        owners = subject_key_values(plan, capture.dataset, key)
        for value, requests in owners.items():
            for request_id in requests:  # the subjects' own key values count even without a row
                add(request_id, f"{capture.dataset}.{key}", [value])
        subjects = subject_frame(spark, list(owners), stored_type(frame, key))
        rows = frame.join(F.broadcast(subjects), frame[key] == subjects[SUBJECT_COLUMN], "left_semi")
        projections = [F.col(key).alias("k")]
        projections += [F.col(c).alias(f"i{i}") for i, c in enumerate(capture.identifiers)]
        projections += [F.expr(v.expression).alias(f"c{i}") for i, v in enumerate(computed)]
        for row in rows.select(*projections).distinct().collect():
            for request_id in owners.get(row["k"], ()):
                for i, column in enumerate(capture.identifiers):
                    add(request_id, f"{capture.dataset}.{column}", [row[f"i{i}"]])
                for i, value in enumerate(computed):
                    add(request_id, value.name, [row[f"c{i}"]])


def stored_type(frame: "DataFrame", column: str):
    """The Spark type of ``column`` in ``frame``, its name matched as Spark matches it (ignoring
    case: lineage names are lower case, a table may store ``Customer_ID``)."""
    found = [f for f in frame.schema.fields if f.name.lower() == column.lower()]
    exact = [f for f in found if f.name == column]
    if exact or len(found) == 1:
        return (exact or found)[0].dataType
    raise SafetyError(f"column {column}: the source stores {' and '.join(f.name for f in found) or 'no such column'}: "
                      "which one holds the key is not one column ignoring case")


_HELD = "__piitracer_surrogate"


def _surrogates_in_order(plan: DeletionPlan) -> list[ValueSource]:
    """Every surrogate value set of the plan, each after the surrogate sets its lookup is matched
    by (a snowflake dimension keyed by another dimension's surrogate key)."""
    pending = {v.name: v for c in plan.resolve for v in c.computed if v.kind is ValueKind.SURROGATE}
    ordered: list[ValueSource] = []
    while pending:
        ready = sorted(name for name, v in pending.items()
                       if v.lookup is not None and not any(k in pending for k in v.lookup.key_from))
        if not ready:
            raise SafetyError(f"surrogate value sets {', '.join(sorted(pending))} are read by each other (a cycle) "
                              "or name no mapping: re-plan")
        for name in ready:
            ordered.append(pending.pop(name))
    return ordered


def _read_surrogate(spark: "SparkSession", value: ValueSource, per_request: dict[str, dict[str, set[Any]]],
                    source_frame: Callable[[str], "DataFrame"], add: Callable[[str, str, Iterable[Any]], None]) -> None:
    """Read one surrogate value set from its mapping dataset, per request; refuse a value that
    another person's row (or a row without a natural key) holds too."""
    from pyspark.sql import functions as F

    lookup = value.lookup
    assert lookup is not None
    frame = source_frame(lookup.dataset)
    key_type = stored_type(frame, lookup.key_column)
    converted = spark_key_type(key_type)
    owners: dict[Any, set[str]] = {}
    for request_id, sets in per_request.items():
        naturals = {v for name in lookup.key_from for v in sets.get(name, ())}
        for natural in exact_values(naturals, converted):  # as values of the mapping's key type
            owners.setdefault(natural, set()).add(request_id)
    if not owners:
        return
    naturals = subject_frame(spark, list(owners), key_type)
    key, column = frame[lookup.key_column], frame[lookup.value_column]
    # One read: the subjects' surrogate values, then every row of the mapping holding one of them,
    # the subjects' own rows and any other person's (or a row without a natural key).
    mine = (frame.join(F.broadcast(naturals), key == naturals[SUBJECT_COLUMN], "left_semi")
            .select(column.alias(_HELD)).where(F.col(_HELD).isNotNull()).distinct())
    holders = frame.join(F.broadcast(mine), column == mine[_HELD], "left_semi")
    others: set[Any] = set()
    for row in holders.select(key.alias("k"), column.alias("v")).distinct().collect():
        if row["k"] not in owners:
            others.add(row["k"])
            continue
        for request_id in owners[row["k"]]:
            add(request_id, value.name, [row["v"]])
    if others:
        raise SafetyError(f"surrogate key {lookup.dataset}.{lookup.value_column}: rows of {len(others)} other "
                          f"{lookup.key_column} value(s) of {lookup.dataset} (no subject's, or none) hold one of the "
                          f"subjects' {lookup.value_column} values: erasing by it would erase other persons' rows; "
                          "nothing was deleted")


def _read_surrogate_rows(value: ValueSource, per_request: dict[str, dict[str, set[Any]]], read_rows: RowReader,
                         add: Callable[[str, str, Iterable[Any]], None]) -> None:
    """:func:`_read_surrogate` read by the mapping dataset's own engine: the same reads, the same refusal."""
    lookup = value.lookup
    assert lookup is not None
    owners: dict[Any, set[str]] = {}
    for request_id, sets in per_request.items():
        for natural in {v for name in lookup.key_from for v in sets.get(name, ())}:
            owners.setdefault(natural, set()).add(request_id)
    if not owners:
        return
    mine = read_rows(lookup.dataset, lookup.key_column, list(owners), [lookup.key_column, lookup.value_column])
    surrogates = sorted({v for v in mine.column(lookup.value_column).to_pylist() if v is not None}, key=repr)
    if not surrogates:
        return
    holders = read_rows(lookup.dataset, lookup.value_column, surrogates, [lookup.key_column, lookup.value_column])
    others: set[Any] = set()
    pairs = zip(holders.column(lookup.key_column).to_pylist(), holders.column(lookup.value_column).to_pylist())
    for natural, surrogate in set(pairs):
        requests = _owners_of(natural, owners)
        if requests is None:
            others.add(natural)
            continue
        for request_id in requests:
            add(request_id, value.name, [surrogate])
    if others:
        raise SafetyError(f"surrogate key {lookup.dataset}.{lookup.value_column}: rows of {len(others)} other "
                          f"{lookup.key_column} value(s) of {lookup.dataset} (no subject's, or none) hold one of the "
                          f"subjects' {lookup.value_column} values: erasing by it would erase other persons' rows; "
                          "nothing was deleted")


def _owners_of(natural: Any, owners: dict[Any, set[str]]) -> set[str] | None:
    """The requests of a mapping row's natural key: the subjects' values it is exactly (an int
    subject value also meets a string key as its decimal text); None for another person's row."""
    if natural is None:
        return None
    found = owners.get(natural)
    if found is None and isinstance(natural, str):
        found = next((requests for value, requests in owners.items()
                      if isinstance(value, int) and not isinstance(value, bool) and str(value) == natural), None)
    return found


def union_of(per_request: dict[str, dict[str, list[Any]]]) -> dict[str, list[Any]]:
    """Value set name -> the union of every request's values."""
    union: dict[str, set[Any]] = {}
    for value_sets in per_request.values():
        for name, values in value_sets.items():
            union.setdefault(name, set()).update(values)
    return {name: sorted(values, key=repr) for name, values in sorted(union.items())}


def values_for(step_sources, value_sets: dict[str, list[Any]]) -> list[Any]:
    """The union of the value sets a step's key column is matched against."""
    values: set[Any] = set()
    for source in step_sources:
        values.update(value_sets.get(source.name, []))
    return sorted(values, key=repr)
