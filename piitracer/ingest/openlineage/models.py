"""The OpenLineage event and facet models of :mod:`~piitracer.ingest.openlineage.events`, and the
validation of one decoded JSON value as an event (the file ingest's rules, also used for events
received over HTTP). The models are lenient: the spec allows extra fields everywhere."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from piitracer.ingest.pydantic_problems import describe


# ---- event models ------------------------------------------------------------------------------


class _Lenient(BaseModel):
    """The spec allows extra fields everywhere; producers add their own."""

    model_config = ConfigDict(extra="allow")


class JobModel(_Lenient):
    namespace: str
    name: str


class _RunModel(_Lenient):
    runId: str  # noqa: N815 (spec field name)


class DatasetModel(_Lenient):
    namespace: str
    name: str
    # Facets are free-form; the ones used are validated by their own models below.
    facets: dict[str, Any] | None = None


class _EventModel(_Lenient):
    eventTime: datetime  # noqa: N815

    @field_validator("eventTime", mode="before")
    @classmethod
    def _parse_time(cls, value: Any) -> datetime:
        if not isinstance(value, str):
            raise ValueError("expected a string")
        try:
            parsed = datetime.fromisoformat(value.strip().replace("z", "Z"))
        except ValueError:
            raise ValueError(f"expected an ISO 8601 date-time, got {value!r}") from None
        # A time without offset is taken as UTC so that every eventTime can be compared.
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


class RunEventModel(_EventModel):
    run: _RunModel
    job: JobModel
    # Optional in the spec; an event without it is not a COMPLETE, so it only yields facts.
    eventType: Literal["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"] | None = None  # noqa: N815
    inputs: list[DatasetModel] | None = None
    outputs: list[DatasetModel] | None = None


class JobEventModel(_EventModel):
    job: JobModel
    inputs: list[DatasetModel] | None = None
    outputs: list[DatasetModel] | None = None


class DatasetEventModel(_EventModel):
    dataset: DatasetModel


# ---- facet models ------------------------------------------------------------------------------


class _SchemaField(_Lenient):
    name: str
    fields: list[Any] | None = None  # nested struct fields: not columns of the dataset


class SchemaFacet(_Lenient):
    fields: list[_SchemaField] | None = None


class _Identifier(_Lenient):
    namespace: str
    name: str
    type: str | None = None


class SymlinksFacet(_Lenient):
    identifiers: list[_Identifier] | None = None


# ---- validation --------------------------------------------------------------------------------

def validate_event(value: Any) -> tuple[str | None, str | None]:
    """(kind, None) when ``value`` is an OpenLineage event piitracer can read (kind: RunEvent,
    JobEvent or DatasetEvent), else (None, why: every defect found, ``; `` separated): the file
    ingest's rules, for events received over HTTP."""
    model, reason = event_model(value)
    if model is None:
        return None, reason
    return _EVENT_KINDS[type(model)], None


def event_model(value: Any) -> tuple[BaseModel | None, str]:
    """The event model for ``value``, or ``None`` and the reason it is not a valid event."""
    if not isinstance(value, dict):
        return None, f"expected a JSON object (an OpenLineage event), got {_json_type(value)}"
    # The kind is read from the content: producers' schemaURL is not reliable.
    if "run" in value or "eventType" in value:
        model_type: type[BaseModel] = RunEventModel
    elif "dataset" in value and "job" not in value:
        model_type = DatasetEventModel
    elif "job" in value:
        model_type = JobEventModel
    else:
        return None, (
            "not an OpenLineage event: expected the fields of a RunEvent (run, job), "
            "JobEvent (job) or DatasetEvent (dataset)"
        )
    try:
        return model_type.model_validate(value), ""
    except ValidationError as exc:
        return None, describe(exc)


_EVENT_KINDS = {RunEventModel: "RunEvent", JobEventModel: "JobEvent", DatasetEventModel: "DatasetEvent"}


def _json_type(value: Any) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)
