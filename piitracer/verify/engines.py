"""Where the verifier decodes files: in the driver, one after another, or as Spark tasks.

Both engines do the same work per file (:func:`~piitracer.verify.decoders.scan_one_file`) on the
same listing, and results are put back in listing order, so a report does not depend on the engine.

The driver lists every location's files through the storage layer (it needs the count and sizes
to choose, and the listing is cheap next to decoding). With Spark, the value sets are broadcast
once; each task gets (location, file, value-set names), builds the value index once per set of
names, decodes its files and sends back findings only — the redacted path, the place, the value
set's name and the kind, never a value. A task that fails is retried by Spark (on a cluster: on
another executor); a file that cannot be decoded is still searched as raw bytes, as in the driver.

Choosing (``verify.engine: auto``): Spark tasks from ``spark_min_files`` files or
``spark_min_bytes`` bytes in the plan's locations, the driver below that — starting a Spark
session and shipping a job cost seconds that a small plan's whole decode does not
(``benchmarks/bench_verify_engines.py`` measures where the lines cross).

Executors need piitracer importable in their Python (``PYSPARK_PYTHON``: the virtualenv piitracer is
installed in) and, for object storage, credentials in their own environment: the driver's open
filesystems are not shipped (:class:`~piitracer.storage.store.Store` drops them when pickled).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

from piitracer.model.workspace import TaskEngine, FileWorkSettings
from piitracer.storage.failpoints import failpoint
from piitracer.storage.locations import Location
from piitracer.storage.store import FileEntry, Store
from piitracer.verify.decoders import FileScan, ScanResult, scan_one_file
from piitracer.verify.values import ValueIndex

if TYPE_CHECKING:  # pyspark is imported only when Spark decodes
    from pyspark import SparkContext

log = logging.getLogger(__name__)  # counts and engines only, never a value
JOB_GROUP = "piitracer.verify"  # the Spark job group of the decoding jobs (Spark UI, status tracker)


@dataclass(frozen=True)
class ScanRequest:
    """Decode the files under ``root`` (all of them, or only ``files``, listed relative to it) for
    the value sets named ``value_sets``."""

    root: Location
    value_sets: tuple[str, ...]
    files: tuple[FileEntry, ...] | None = None


@dataclass(frozen=True)
class ScanPlan:
    """The listed files of every request, in order, with what the choice of engine looks at."""

    requests: tuple[ScanRequest, ...]
    listings: tuple[tuple[FileEntry, ...], ...]

    @property
    def file_count(self) -> int:
        return sum(len(listing) for listing in self.listings)

    @property
    def byte_count(self) -> int:
        return sum(entry.size for listing in self.listings for entry in listing)


def list_requests(requests: Sequence[ScanRequest], store: Store) -> ScanPlan:
    """List every request's files in the driver (through the storage layer)."""
    listings = tuple(tuple(store.list_files(r.root)) if r.files is None else r.files for r in requests)
    return ScanPlan(tuple(requests), listings)


class FileScanner:
    """Decodes a :class:`ScanPlan`'s files and returns one :class:`ScanResult` per request."""

    name = "driver"

    def scan(self, plan: ScanPlan, value_sets: Mapping[str, Sequence[Any]], store: Store) -> list[ScanResult]:
        results = []
        for request, listing in zip(plan.requests, plan.listings):
            index = _index(value_sets, request.value_sets)
            result = ScanResult()
            for entry in listing:
                result.add(scan_one_file(request.root, entry.relative, index, store))
            results.append(result)
        return results


class SparkFileScanner(FileScanner):
    """Decodes files as Spark tasks on the session ``context`` returns (started only when used)."""

    name = "spark"

    def __init__(self, context: Callable[[], "SparkContext"], tasks_per_core: int = 4) -> None:
        self._context = context
        self.tasks_per_core = tasks_per_core

    def scan(self, plan: ScanPlan, value_sets: Mapping[str, Sequence[Any]], store: Store) -> list[ScanResult]:
        work = [(number, request_no, plan.requests[request_no].root, entry.relative, plan.requests[request_no].value_sets)
                for number, (request_no, entry) in enumerate(
                    (request_no, entry) for request_no, listing in enumerate(plan.listings) for entry in listing)]
        results = [ScanResult() for _ in plan.requests]
        if not work:
            return results
        context = self._context()
        needed = sorted({name for request in plan.requests for name in request.value_sets})
        # Values go to the executors once per job, not once per task.
        shared = context.broadcast({name: list(value_sets.get(name, [])) for name in needed})
        try:
            slices = max(1, min(len(work), context.defaultParallelism * self.tasks_per_core))
            decode = _TaskDecoder(shared, store)
            context.setJobGroup(JOB_GROUP, f"piitracer verify: decode {len(work)} files")
            found = context.parallelize(work, slices).mapPartitions(decode).collect()
        finally:
            shared.destroy()
        by_number = dict(found)
        if len(by_number) != len(work):  # Spark returns every partition or fails the job
            raise RuntimeError(f"Spark returned {len(by_number)} of {len(work)} decoded files")
        for number, request_no, *_ in work:
            results[request_no].add(by_number[number])
        log.info("decoded %d files in Spark tasks (%d partitions)", len(work), slices)
        return results


class _TaskDecoder:
    """The function each Spark partition runs: picklable, holding the broadcast handle and the
    store's settings; builds a value index once per set of value-set names in the task's process."""

    def __init__(self, shared, store: Store) -> None:
        self.shared = shared
        self.store = store

    def __call__(self, rows: Iterator[tuple]) -> Iterator[tuple[int, FileScan]]:
        indexes: dict[tuple[str, ...], ValueIndex] = {}
        for number, _request_no, root, relative, names in rows:
            if names not in indexes:
                indexes[names] = _index(self.shared.value, names)
            failpoint("verify.task", relative)  # tests: a task held here while its worker is killed
            yield number, scan_one_file(root, relative, indexes[names], self.store)


def _index(value_sets: Mapping[str, Sequence[Any]], names: Sequence[str]) -> ValueIndex:
    return ValueIndex.build({name: value_sets.get(name, []) for name in names})


def choose_scanner(settings: FileWorkSettings, plan: ScanPlan, spark: FileScanner,
                   engine: TaskEngine | None = None) -> FileScanner:
    """``spark`` or the driver for ``plan`` (:meth:`FileWorkSettings.wants_spark`)."""
    return spark if settings.wants_spark(plan.file_count, plan.byte_count, engine) else FileScanner()
