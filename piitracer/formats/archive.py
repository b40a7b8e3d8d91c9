"""Archive exports (periodic Parquet snapshots in cold storage, ``archive_of`` in the catalog):
read, rewritten and verified exactly as a plain Parquet folder; the erasure is ``rewrite_archive``,
which the planner prices with the archive's restore delay and cost."""

from __future__ import annotations

from piitracer.formats import FormatSupport
from piitracer.formats import parquet
from piitracer.model.plan import Action
from piitracer.model.workspace import DatasetFormat

_FILE_REMOVERS, _LOGICAL_REMOVERS = parquet.rewrite_removers(Action.REWRITE_ARCHIVE)
SUPPORT = FormatSupport(
    format=DatasetFormat.ARCHIVE, perform={Action.REWRITE_ARCHIVE: parquet.perform_rewrite},
    describe={Action.REWRITE_ARCHIVE: parquet.rewrite_text}, schema=parquet.arrow_schema, files=parquet.files,
    versions=parquet.versions, history=parquet.history, file_removers=_FILE_REMOVERS, logical_removers=_LOGICAL_REMOVERS,
    candidate_files=parquet.candidate_files, estimate_basis="Parquet footer statistics",
    stored_as=DatasetFormat.PARQUET,  # to the lakehouse, an archive is a plain Parquet folder
)
