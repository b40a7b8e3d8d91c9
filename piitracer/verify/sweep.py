"""``verify --sweep``: look where the plan does not.

Static lineage misses flows (a job that emits no event, SQL nobody checked in). Meta's DELF pairs
its static deletion graph with a dynamic check for exactly that reason; this is piitracer's. After
the plan's own datasets are verified, the sweep decodes, with the same decoders:

- ``catalog``: every other catalogued dataset that stores files;
- ``roots``: that, plus every file under the workspace's ``warehouse_roots`` that lies in no
  catalogued location (a table nobody catalogued, a stray export);

and searches them for the subjects' identifier values in their raw forms (the values the resolve
step captured from the source rows; computed forms only mean something where lineage says a column
holds them). A hit is ``unplanned``: named by dataset (or folder), file, place and value set, with
the hint that the lineage does not show this flow. ``verify`` then exits 1.

Files outside the catalog are swept by the table they belong to, so each is decoded as its format
reads it and reported once: an uncatalogued Delta table (a folder holding ``_delta_log``) or Iceberg
table (a folder whose ``metadata`` holds ``*.metadata.json``) is one item with every file below it;
any other file goes with its folder, Hive-style partition folders (``user_id=7``) folded into the
folder above them. An item is named ``folder:<path relative to its warehouse root>`` (any value in
the path redacted); the root itself is stated once, in the item's reason.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from piitracer.model.plan import DeletionPlan
from piitracer.model.progress import Progress, phase
from piitracer.model.verification import ColumnSearch, DatasetVerification, ErasureState, Finding
from piitracer.model.workspace import CatalogDataset
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location
from piitracer.storage.store import FileEntry, Store
from piitracer.verify.decoders import chunk_facts, redact_path
from piitracer.verify.engines import FileScanner, ScanPlan, ScanRequest, list_requests
from piitracer.verify.scope import INSIDE_TEXT
from piitracer.verify.values import ValueIndex

log = logging.getLogger(__name__)
MODES = ("catalog", "roots")
HINT = ("the lineage does not show this flow: find the job that writes it, add its lineage (or the table) "
        "and re-plan")


def sweep(plan: DeletionPlan, catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location],
          value_sets: Mapping[str, list[Any]], mode: str, roots: tuple[Location, ...] = (), store: Store | None = None,
          choose_scanner: Callable[[ScanPlan], FileScanner] | None = None, progress: Progress | None = None,
          ) -> tuple[list[DatasetVerification], list[str], int]:
    """(unplanned findings per dataset or folder, everything swept, files decoded). ``choose_scanner``
    picks where the files are decoded once listed (default: in this process); ``progress`` hears of
    each file decoded ("sweep: decoding files")."""
    store = store or Store()
    if mode not in MODES:
        raise ValueError(f"unknown sweep {mode!r} (expected one of {', '.join(MODES)})")
    from piitracer.verify.verifier import identifier_sets

    names = tuple(sorted(identifier_sets(plan)))
    planned = {d.dataset for d in plan.datasets}
    # (label, what it is) per request, in the order the report lists them.
    swept: list[tuple[str, str]] = []
    requests: list[ScanRequest] = []
    for dataset, entry in sorted(catalog.items()):
        location = locations.get(dataset)
        if dataset in planned or not entry.format.stores_rows or location is None or not store.exists(location):
            continue
        swept.append((dataset, f"catalogued dataset {dataset} is not in the plan"))
        requests.append(ScanRequest(location, names))
    if mode == "roots":
        catalogued = [canonical(p) for d, p in locations.items() if catalog.get(d) and catalog[d].format.stores_rows]
        index = ValueIndex.build({name: value_sets.get(name, []) for name in names})  # to redact labels
        labels: set[str] = set()
        for number, root in enumerate(roots, start=1):
            if not store.exists(root):
                continue
            entries = [entry for entry in store.list_files(root)
                       if not any(place.contains(canonical(root.child(entry.relative))) for place in catalogued)]
            for folder, (what, files) in sorted(uncatalogued_items(entries).items()):
                label = f"folder:{redact_path(folder, index) if folder else '.'}"
                if label in labels:  # the same relative path under two roots
                    label = f"{label} (root {number})"
                labels.add(label)
                shown = f"{label.removeprefix('folder:')} under warehouse root {root.uri}"
                swept.append((label, f"{what} {shown}" if what else f"{shown} is in no catalogued location"))
                requests.append(ScanRequest(root.child(folder), names, tuple(files)))
    listing = list_requests(requests, store)
    scanner = choose_scanner(listing) if choose_scanner else FileScanner()
    scans = scanner.scan(listing, value_sets, store, progress=phase(progress, "sweep: "))
    results: list[DatasetVerification] = []
    for (label, what), scan in zip(swept, scans):
        log.info("swept %s: %d files, %d hits", label, len(scan.files), len(scan.hits))
        if scan.hits:
            results.append(_unplanned(label, scan, list(names), what))
    return results, [label for label, _ in swept], sum(len(scan.files) for scan in scans)


def uncatalogued_items(entries: list[FileEntry]) -> dict[str, tuple[str, list[FileEntry]]]:
    """Files under a root that no catalogued location holds, by the item they are swept as:
    folder relative to the root -> (what it is: "an uncatalogued Delta table" or "... Iceberg
    table", empty for a plain folder; its files, relative to that folder)."""
    tables: dict[str, str] = {}
    for entry in entries:
        parts = entry.relative.split("/")
        if "_delta_log" in parts[:-1]:
            tables.setdefault("/".join(parts[:parts.index("_delta_log")]), "an uncatalogued Delta table at")
        elif len(parts) >= 2 and parts[-2] == "metadata" and (
                parts[-1].endswith((".metadata.json", ".metadata.json.gz")) or parts[-1] == "version-hint.text"):
            tables.setdefault("/".join(parts[:-2]), "an uncatalogued Iceberg table at")
    items: dict[str, tuple[str, list[FileEntry]]] = {}
    for entry in entries:
        parts = entry.relative.split("/")
        folders = parts[:-1]
        # The innermost table holding the file; else its folder above any partition folders.
        owner = next((("/".join(folders[:n]), tables["/".join(folders[:n])]) for n in range(len(folders), -1, -1)
                      if "/".join(folders[:n]) in tables), None)
        if owner is None:
            depth = next((n for n, part in enumerate(folders) if "=" in part), len(folders))
            owner = ("/".join(folders[:depth]), "")
        folder, what = owner
        inside = "/".join(parts[len(folder.split("/")) if folder else 0:])
        items.setdefault(folder, (what, []))[1].append(FileEntry(inside, entry.size))
    return items


def _unplanned(name: str, scan, value_sets: list[str], what: str) -> DatasetVerification:
    findings = tuple(Finding(file=hit.file, where=hit.where, value_set=hit.value_set, kind=hit.kind) for hit in scan.hits)
    sets = sorted({f.value_set for f in findings})
    # The same Parquet reader as the plan's datasets: how its chunks were proven travels too.
    return DatasetVerification(
        dataset=name, state=ErasureState.UNPLANNED, files_scanned=len(scan.files), findings=findings,
        value_sets=tuple(value_sets), **chunk_facts(scan.chunks),
        # Beyond the plan no lineage says what a column holds: every column gets the full search.
        column_search=(ColumnSearch(column="*", search=INSIDE_TEXT),),
        reason=f"{what}, but {len(findings)} place(s) hold the subjects' {', '.join(sets)}: {HINT}")
