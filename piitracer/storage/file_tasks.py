"""Where per-file work runs: in this process, one file after another, or as Spark tasks.

The plain Parquet and archive rewrites hand a picklable function and a list of items (one per
file) to a :class:`FileTasks` and get the results back in the items' order, whichever runs them.
With Spark the items are split into a few tasks per core; a task that fails (an executor lost) is
run again by Spark on another executor, so the function must be safe to run twice on the same
file (the rewrite is: it writes a hidden temporary and replaces the original only when complete).
When a job fails, its tasks still running are cancelled (their Python workers killed), but that is
asynchronous: one may still finish its file while a resumed step starts, so the function must also
be safe to run concurrently with itself on one file (the rewrite writes a temporary of its own and
skips a file another task already rewrote).

``choose_file_tasks`` picks by how much there is to do: starting a Spark session and shipping a
job cost seconds a few small files do not need (``rewrite.engine`` / ``verify.engine``: auto,
driver or spark, with the thresholds of :class:`~piitracer.model.workspace.FileWorkSettings`).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence, TypeVar

from piitracer.model.settings import FileWorkSettings, TaskEngine

log = logging.getLogger(__name__)
Item = TypeVar("Item")
Result = TypeVar("Result")


class FileTasks:
    """Runs ``function`` on every item here, in order."""

    name = "driver"

    def run(self, function: Callable[[Item], Result], items: Sequence[Item], label: str) -> list[Result]:
        return [function(item) for item in items]


class SparkFileTasks(FileTasks):
    """Runs ``function`` on every item as Spark tasks (``tasks_per_core`` per core of the session
    ``context`` returns, started only when there is work) in the job group ``piitracer.<label>``."""

    name = "spark"

    def __init__(self, context: Callable[[], Any], tasks_per_core: int = 4) -> None:
        self._context = context
        self.tasks_per_core = tasks_per_core

    def run(self, function: Callable[[Item], Result], items: Sequence[Item], label: str) -> list[Result]:
        if not items:
            return []
        context = self._context()
        slices = max(1, min(len(items), context.defaultParallelism * self.tasks_per_core))
        group = f"piitracer.{label}"
        # interruptOnCancel: when the job fails, Spark kills its still-running tasks' Python workers.
        context.setJobGroup(group, f"piitracer {label}: {len(items)} files", interruptOnCancel=True)
        numbered = list(enumerate(items))
        try:
            results = dict(context.parallelize(numbered, slices).map(_Numbered(function)).collect())
        except Exception:
            context.cancelJobGroup(group)  # the failed job's other tasks: stopped, not left running
            raise
        if len(results) != len(items):  # Spark returns every task's results or fails the job
            raise RuntimeError(f"Spark returned {len(results)} of {len(items)} results of {label}")
        log.info("%s: %d files in Spark tasks (%d partitions)", label, len(items), slices)
        return [results[number] for number in range(len(items))]


class _Numbered:
    """``function`` on a numbered item, keeping the number (picklable, unlike a lambda over it)."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def __call__(self, numbered: tuple[int, Any]) -> tuple[int, Any]:
        number, item = numbered
        return number, self.function(item)


def in_this_process(files: int, size: int) -> FileTasks:
    """The chooser that always keeps the work here (the default where no settings apply)."""
    return FileTasks()


def choose_file_tasks(settings: FileWorkSettings, files: int, size: int, spark: FileTasks,
                      engine: TaskEngine | None = None) -> FileTasks:
    """``spark`` or the driver for ``files`` files of ``size`` bytes (:meth:`FileWorkSettings.wants_spark`)."""
    return spark if settings.wants_spark(files, size, engine) else FileTasks()
