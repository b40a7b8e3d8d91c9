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
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping

from piitracer.model.plan import DeletionPlan
from piitracer.model.verification import DatasetVerification, ErasureState, Finding
from piitracer.model.workspace import CatalogDataset
from piitracer.storage.guard import canonical
from piitracer.storage.locations import Location
from piitracer.storage.store import FileEntry, Store
from piitracer.verify.engines import FileScanner, ScanPlan, ScanRequest, list_requests

log = logging.getLogger(__name__)
MODES = ("catalog", "roots")
HINT = ("the lineage does not show this flow: find the job that writes it, add its lineage (or the table) "
        "and re-plan")


def sweep(plan: DeletionPlan, catalog: Mapping[str, CatalogDataset], locations: Mapping[str, Location],
          value_sets: Mapping[str, list[Any]], mode: str, roots: tuple[Location, ...] = (), store: Store | None = None,
          choose_scanner: Callable[[ScanPlan], FileScanner] | None = None,
          ) -> tuple[list[DatasetVerification], list[str], int]:
    """(unplanned findings per dataset or folder, everything swept, files decoded). ``choose_scanner``
    picks where the files are decoded once listed (default: in this process)."""
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
        for root in roots:
            if not store.exists(root):
                continue
            by_folder: dict[str, list[FileEntry]] = {}
            for entry in store.list_files(root):
                if any(place.contains(canonical(root.child(entry.relative))) for place in catalogued):
                    continue
                folder, _, name = entry.relative.rpartition("/")
                by_folder.setdefault(folder, []).append(FileEntry(name, entry.size))
            for folder, entries in sorted(by_folder.items()):
                place = root.child(folder)
                swept.append((f"folder:{place}", f"{place} is in no catalogued location"))
                requests.append(ScanRequest(place, names, tuple(entries)))
    listing = list_requests(requests, store)
    scanner = choose_scanner(listing) if choose_scanner else FileScanner()
    scans = scanner.scan(listing, value_sets, store)
    results: list[DatasetVerification] = []
    for (label, what), scan in zip(swept, scans):
        log.info("swept %s: %d files, %d hits", label, len(scan.files), len(scan.hits))
        if scan.hits:
            results.append(_unplanned(label, scan, list(names), what))
    return results, [label for label, _ in swept], sum(len(scan.files) for scan in scans)


def _unplanned(name: str, scan, value_sets: list[str], what: str) -> DatasetVerification:
    findings = tuple(Finding(file=hit.file, where=hit.where, value_set=hit.value_set, kind=hit.kind) for hit in scan.hits)
    sets = sorted({f.value_set for f in findings})
    return DatasetVerification(
        dataset=name, state=ErasureState.UNPLANNED, files_scanned=len(scan.files), findings=findings,
        value_sets=tuple(value_sets),
        reason=f"{what}, but {len(findings)} place(s) hold the subjects' {', '.join(sets)}: {HINT}")
