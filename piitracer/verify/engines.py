"""Where the verifier decodes files: in the driver (its threads), or as Spark tasks.

Both engines do the same work per file (:func:`~piitracer.verify.decoders.scan_one_file`) on the
same listing, and results are put back in listing order, so a report does not depend on the engine.

The driver decodes files on a few threads (:func:`decode_threads`: the cores this process may use,
at most four), as pyarrow's own reader does: decompressing pages, reading row groups and NumPy's
passes release the GIL. Each thread searches with its own value index (built once per request and
thread), so nothing one decode caches is seen by another; one core, or one file, decodes in the
calling thread as before.

The driver lists every location's files through the storage layer (it needs the count and sizes
to choose, and the listing is cheap next to decoding). With Spark, the value sets are broadcast
once; each task gets (location, file, value-set names), builds the value index once per set of
names, decodes its files and sends back findings only — the redacted path, the place, the value
set's name and the kind, never a value. A task that fails is retried by Spark (on a cluster: on
another executor); a file that cannot be decoded is still searched as raw bytes, as in the driver.

Choosing (``verify.engine: auto``): Spark tasks from ``spark_min_files`` files or
``spark_min_bytes`` bytes in the plan's locations, the driver below that — starting a Spark
session and shipping a job cost seconds (2-3 s here) that a small plan's whole decode does not
(``benchmarks/RESULTS.md`` section 8: at 2,000 files Spark ``local[2]`` decodes 1.5x faster than
the driver).

Executors need piitracer importable in their Python (``PYSPARK_PYTHON``: the virtualenv piitracer is
installed in) and, for object storage, credentials in their own environment: the driver's open
filesystems are not shipped (:class:`~piitracer.storage.store.Store` drops them when pickled).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from piitracer.model.progress import Progress, report
from piitracer.model.settings import TaskEngine, FileWorkSettings
from piitracer.storage.failpoints import failpoint
from piitracer.storage.file_tasks import SparkFileTasks
from piitracer.storage.locations import Location
from piitracer.storage.store import FileEntry, Store
from piitracer.verify.decoders import FileScan, ScanResult, scan_one_file
from piitracer.verify.scope import ColumnScope, ScopedIndex

if TYPE_CHECKING:  # pyspark is imported only when Spark decodes
    from pyspark import SparkContext

JOB_LABEL = "verify"
JOB_GROUP = f"piitracer.{JOB_LABEL}"  # the Spark job group of the decoding jobs (Spark UI, status tracker)


@dataclass(frozen=True)
class ScanRequest:
    """Decode the files under ``root`` (all of them, or only ``files``, listed relative to it) for
    the value sets named ``value_sets``; ``scope``: the identifier columns searched for whole
    values of their own value sets only (:mod:`~piitracer.verify.scope`; names only, no value)."""

    root: Location
    value_sets: tuple[str, ...]
    files: tuple[FileEntry, ...] | None = None
    scope: ColumnScope = ColumnScope()
    # Data files (relative path -> key column) whose key rows the logical check needs
    # (verify.key_rows): read in the same pass as their bytes. Paths and column names only.
    keys: Mapping[str, Any] | None = None


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


MAX_DECODE_THREADS = 4  # past a few threads the GIL (thrift headers, the searches' Python) is the limit


def decode_threads() -> int:
    """Threads the driver decodes files on: the cores this process may use (its CPU affinity),
    at most :data:`MAX_DECODE_THREADS`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DECODE_THREADS))


class FileScanner:
    """Decodes a :class:`ScanPlan`'s files and returns one :class:`ScanResult` per request:
    on ``threads`` threads (default :func:`decode_threads`; 1: file after file in the caller's)."""

    name = "driver"

    def __init__(self, threads: int | None = None) -> None:
        self.threads = decode_threads() if threads is None else max(1, threads)

    def scan(self, plan: ScanPlan, value_sets: Mapping[str, Sequence[Any]], store: Store,
             progress: Progress | None = None) -> list[ScanResult]:
        """Decode every file of ``plan``, telling ``progress`` after each ("decoding files", in
        listing order)."""
        done, total = 0, plan.file_count
        report(progress, "decoding files", done, total)
        if min(self.threads, total) <= 1:
            results = []
            for request, listing in zip(plan.requests, plan.listings):
                scoped = ScopedIndex.build(value_sets, request.value_sets, request.scope)
                result = ScanResult()
                keys = request.keys or {}
                for entry in listing:
                    result.add(scan_one_file(request.root, entry.relative, scoped.index, store, scoped,
                                             keys.get(entry.relative)))
                    done += 1
                    report(progress, "decoding files", done, total)
                results.append(result)
            return results
        decode = _ThreadDecoder(plan, value_sets, store)
        pool = ThreadPoolExecutor(min(self.threads, total), thread_name_prefix="piitracer-verify")
        try:
            # Every file is queued at once (no thread waits at the end of a dataset) and taken
            # back in listing order: the results, the progress and the first error are the
            # serial scan's.
            pending: list[list[Future]] = [[pool.submit(decode, number, entry) for entry in listing]
                                           for number, listing in enumerate(plan.listings)]
            results = []
            for futures in pending:
                result = ScanResult()
                for future in futures:
                    result.add(future.result())
                    done += 1
                    report(progress, "decoding files", done, total)
                results.append(result)
            return results
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class _ThreadDecoder:
    """What a driver thread runs per file: the request's value index is the thread's own (the
    searches cache what they derive on the index), built on the thread's first file of the
    request; the previous request's is dropped (a thread takes the files in listing order)."""

    def __init__(self, plan: ScanPlan, value_sets: Mapping[str, Sequence[Any]], store: Store) -> None:
        self.plan = plan
        self.value_sets = value_sets
        self.store = store
        self.own = threading.local()

    def __call__(self, number: int, entry: FileEntry) -> FileScan:
        request = self.plan.requests[number]
        if getattr(self.own, "number", None) != number:
            self.own.scoped = ScopedIndex.build(self.value_sets, request.value_sets, request.scope)
            self.own.number = number
        scoped = self.own.scoped
        return scan_one_file(request.root, entry.relative, scoped.index, self.store, scoped,
                             (request.keys or {}).get(entry.relative))


class SparkFileScanner(FileScanner):
    """Decodes files as Spark tasks (:class:`~piitracer.storage.file_tasks.SparkFileTasks`) on the
    session ``context`` returns (started only when there are files)."""

    name = "spark"

    def __init__(self, context: Callable[[], "SparkContext"], tasks_per_core: int = 4) -> None:
        self._context = context
        self.tasks_per_core = tasks_per_core

    def scan(self, plan: ScanPlan, value_sets: Mapping[str, Sequence[Any]], store: Store,
             progress: Progress | None = None) -> list[ScanResult]:
        """Decode every file of ``plan`` as Spark tasks; ``progress`` hears of the start and the end
        (the tasks run on the executors)."""
        report(progress, "decoding files (Spark tasks)", 0, plan.file_count)
        results = self._scan(plan, value_sets, store)
        report(progress, "decoding files (Spark tasks)", plan.file_count, plan.file_count)
        return results

    def _scan(self, plan: ScanPlan, value_sets: Mapping[str, Sequence[Any]], store: Store) -> list[ScanResult]:
        owners = [number for number, listing in enumerate(plan.listings) for _ in listing]
        work = [(plan.requests[number].root, entry.relative, plan.requests[number].value_sets,
                 plan.requests[number].scope, (plan.requests[number].keys or {}).get(entry.relative))
                for number, listing in enumerate(plan.listings) for entry in listing]
        results = [ScanResult() for _ in plan.requests]
        if not work:
            return results
        context = self._context()
        needed = sorted({name for request in plan.requests for name in request.value_sets})
        # Values go to the executors once per job, not once per task.
        shared = context.broadcast({name: list(value_sets.get(name, [])) for name in needed})
        try:
            tasks = SparkFileTasks(lambda: context, self.tasks_per_core)
            scans = tasks.run(_TaskDecoder(shared, store), work, JOB_LABEL)
        finally:
            shared.destroy()
        for owner, scan in zip(owners, scans):
            results[owner].add(scan)
        return results


class _TaskDecoder:
    """What a Spark task runs per file: picklable, holding the broadcast handle and the store's
    settings; builds a value index once per set of value-set names and column scope in the task's
    process."""

    def __init__(self, shared, store: Store) -> None:
        self.shared = shared
        self.store = store
        self.indexes: dict[tuple[tuple[str, ...], ColumnScope], ScopedIndex] = {}

    def __call__(self, item: tuple[Location, str, tuple[str, ...], ColumnScope, Any]) -> FileScan:
        root, relative, names, scope, key = item
        if (names, scope) not in self.indexes:
            self.indexes[names, scope] = ScopedIndex.build(self.shared.value, names, scope)
        scoped = self.indexes[names, scope]
        failpoint("verify.task", relative)  # tests: a task held here while its worker is killed
        return scan_one_file(root, relative, scoped.index, self.store, scoped, key)


def choose_scanner(settings: FileWorkSettings, plan: ScanPlan, spark: FileScanner,
                   engine: TaskEngine | None = None) -> FileScanner:
    """``spark`` or the driver for ``plan`` (:meth:`FileWorkSettings.wants_spark`)."""
    return spark if settings.wants_spark(plan.file_count, plan.byte_count, engine) else FileScanner()
