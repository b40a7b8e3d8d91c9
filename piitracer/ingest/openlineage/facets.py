"""The dataset facets of OpenLineage events, for :mod:`~piitracer.ingest.openlineage.events`: which
facets are read, which carry no flow of values, which say lineage may be missing, and the readers
of the two facets taken as facts (``schema``: a dataset's columns, ``symlinks``: its other names).
``columnLineage`` has its own reader (:mod:`~piitracer.ingest.openlineage.columns`)."""

from __future__ import annotations

from typing import Any

from piitracer.ingest.openlineage.models import SchemaFacet, SymlinksFacet
from piitracer.ingest.pydantic_problems import validate_part


# Facets read (dataset facets).
READ_FACETS = frozenset({"schema", "symlinks", "columnLineage"})
# Facets whose content, by the spec or the producer's documentation, is no flow of values between
# datasets (where a dataset lives, its version, statistics, quality, ownership, how the job ran).
NO_LINEAGE_FACETS = frozenset({
    # dataset, input and output facets
    "dataSource", "version", "datasetVersion", "storage", "catalog", "lifecycleStateChange", "ownership",
    "documentation", "datasetType", "tags", "hierarchy", "subset", "dataQualityMetrics", "dataQualityAssertions",
    "inputStatistics", "outputStatistics", "columnMetrics", "icebergScanReport", "icebergCommitReport",
    # run facets
    "processing_engine", "spark_properties", "spark_version", "spark.logicalPlan", "spark_jobDetails",
    "spark_applicationDetails", "environment-properties", "environmentVariables", "parent", "nominalTime",
    "errorMessage", "executionParameters", "externalQuery", "jobDependencies", "test", "debug",
    "hive_properties", "hive_query", "hive_session", "gcp_dataproc", "gcp_lineage",
    # job facets
    "jobType", "sql", "sourceCode", "sourceCodeLocation",
})
# Facets saying the event's lineage may be incomplete, and why: a WARNING per job.
GAP_FACETS = {
    "spark_unknown": "the Spark integration met plan nodes it does not understand: this job's lineage may be incomplete",
    "extractionError": "the producer reports errors extracting lineage: this job's lineage may be incomplete",
    "lineage": "explicit lineage piitracer does not read yet: the flows it names are not in the graph",
}


# The schema and symlinks facets of every dataset of every event are read; well-formed ones (all
# of them, in practice) are checked with plain type tests, as pydantic models per schema field
# cost more than the event's JSON parse. Anything else goes through the models, which say why.


def schema_columns(facet: Any, path: str, notes: list[str]) -> tuple[str, ...] | None:
    """Column names of a ``schema`` facet (top-level fields), or None when it is unusable."""
    if type(facet) is dict:
        fields = facet.get("fields")
        if fields is None:
            return ()
        if type(fields) is list and all(type(f) is dict and type(f.get("name")) is str and (f.get("fields") is None or type(f["fields"]) is list)
                                        for f in fields):
            return tuple(f["name"] for f in fields)
    schema = validate_part(SchemaFacet, facet, path, notes)
    return None if schema is None else tuple(f.name for f in schema.fields or [])


def symlink_names(facet: Any, path: str, notes: list[str]) -> list[tuple[str, str, str | None]]:
    """(namespace, name, type) of every identifier of a ``symlinks`` facet ([] when unusable)."""
    if type(facet) is dict:
        identifiers = facet.get("identifiers")
        if identifiers is None:
            return []
        if type(identifiers) is list and all(type(i) is dict and type(i.get("namespace")) is str and type(i.get("name")) is str
                                             and (i.get("type") is None or type(i["type"]) is str) for i in identifiers):
            return [(i["namespace"], i["name"], i.get("type")) for i in identifiers]
    symlinks = validate_part(SymlinksFacet, facet, path, notes)
    return [] if symlinks is None else [(i.namespace, i.name, i.type) for i in symlinks.identifiers or []]
