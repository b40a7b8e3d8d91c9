"""Erased people stay erased (issue 52): ``guard scan`` reads the lakehouse against the suppression
list and opens a new request for anyone who came back; ``guard export`` writes the list a
pipeline's guard reads (:mod:`piitracer.guard`); ``guard forget`` destroys records.

The scan's tables are every catalogued dataset with a location (replicas, clones and archives are
datasets of their own) and every table found under the warehouse roots that no catalog entry
names (a new table is read in every column). A catalogued table's candidate columns are its
identifiers, its key columns, the columns its lineage carries an identifier into and the columns
the records' values came from; ``all_columns`` reads every column that can hold an identifier.

Rooms: requests (the suppression list, the request store), verify (the scan), formats, discover
(new tables), the lineage graph, audit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Sequence

from piitracer.api.requests import DERIVED, SUBJECT_KIND, subject_kind
from piitracer.audit import AuditLog, record_request_entry
from piitracer.model.errors import NotFoundError
from piitracer.model.lineage import ColumnRef
from piitracer.model.plan import Subject
from piitracer.model.requests import RequestState
from piitracer.formats.table_files_now import lists_data_files
from piitracer.planner.errors import PlanningError
from piitracer.requests.suppression import SuppressionStore
from piitracer.storage.guard import canonical
from piitracer.verify.guard_scan import Found, ScanTarget, TableScan, scan_tables
from piitracer.workspace.model import Workspace

NEW_TABLE = "new table: "  # the prefix of a table found under the roots that no catalog entry names


@dataclass
class CameBack:
    """One erased person found again: the earlier requests that erased them (one person may have
    been erased more than once), the new request (None when it could not be opened, with ``why``),
    and where (dataset, snapshot or version, file, column; never a value)."""

    earlier_requests: list[str]
    places: list[dict[str, str]]
    kinds: list[str]
    new_request: str | None = None
    why: str | None = None


@dataclass
class GuardScan:
    """What a scan read and found."""

    full: bool
    suppressed: int  # records on the list
    people: int  # requests the list remembers someone for
    tables: list[TableScan] = field(default_factory=list)
    came_back: list[CameBack] = field(default_factory=list)
    not_read: list[str] = field(default_factory=list)  # catalogued tables with no candidate column (said, not hidden)

    @property
    def problems(self) -> list[TableScan]:
        """The tables that could not be read."""
        return [t for t in self.tables if t.problem]

    @property
    def complete(self) -> bool:
        """Whether every table could be read (an unreadable one may hide a return)."""
        return not self.problems

    def as_dict(self) -> dict:
        """The scan as JSON-ready data (``guard scan --output json``): no value, no hash."""
        return {
            "full": self.full, "complete": self.complete, "suppressed_records": self.suppressed, "suppressed_requests": self.people,
            "came_back": [{"earlier_requests": c.earlier_requests, "new_request": c.new_request, "why": c.why,
                           "kinds": c.kinds, "found": c.places} for c in self.came_back],
            "tables": [{"dataset": t.dataset, "unchanged": t.unchanged, "files": t.files, "files_read": len(t.files_read),
                        "rows_read": t.rows_read, "columns": list(t.columns), "absent": t.absent, "problem": t.problem}
                       for t in self.tables],
            "not_read": [{"dataset": d, "why": NO_CANDIDATE} for d in self.not_read],
        }


NO_CANDIDATE = ("no column the catalog or the lineage says can hold an identifier of an erased person: "
                "guard scan --all-columns reads it")


def guard_targets(workspace: Workspace, lakehouse, suppression: SuppressionStore, all_columns: bool = False,
                  new_tables: bool = True, not_read: list[str] | None = None) -> list[ScanTarget]:
    """The tables a scan reads, with their candidate columns (module docstring), sorted by dataset;
    the catalogued tables left out for want of a candidate column go to ``not_read``."""
    catalog = workspace.config.catalog
    locations = lakehouse.locations
    columns = {} if all_columns else candidate_columns(workspace, suppression.kinds())
    targets = []
    for dataset, location in sorted(locations.items()):
        entry = catalog.get(dataset) or catalog.get(dataset.split("@", 1)[0])
        if entry is None or not lists_data_files(entry.format):
            continue
        chosen = None if all_columns else tuple(sorted(columns.get(dataset.split("@", 1)[0], ())))
        if chosen == ():  # nothing in it can hold an identifier, as the catalog and the lineage say
            if not_read is not None:
                not_read.append(dataset)
            continue
        targets.append(ScanTarget(dataset, entry.format, location, chosen))
    if new_tables:
        targets += _new_tables(lakehouse, locations.values())
    return targets


def candidate_columns(workspace: Workspace, kinds: Sequence[str]) -> dict[str, set[str]]:
    """Dataset -> the columns that may hold an identifier: the catalog's identifiers and key
    columns, the columns the lineage carries them into, and the columns records came from."""
    from piitracer.api.lineage import build_lineage_graph

    found: dict[str, set[str]] = {}
    starts = []
    for dataset, entry in workspace.config.catalog.items():
        names = set(entry.identifiers) | set(entry.column_types) | ({entry.subject_key} if entry.subject_key else set())
        found.setdefault(dataset, set()).update(names)
        starts += [ColumnRef(dataset=dataset, column=name) for name in sorted(names)]
    for kind in kinds:
        for column in kind.removeprefix(SUBJECT_KIND).split(DERIVED, 1)[0].split(","):
            dataset, _, name = column.rpartition(".")
            if dataset:
                found.setdefault(dataset, set()).add(name)
    graph = build_lineage_graph(workspace)
    for start in starts:
        if graph.has_column(start):
            for ref in graph.downstream_columns(start):
                found.setdefault(ref.dataset, set()).add(ref.column)
    return found


def _new_tables(lakehouse, catalogued) -> list[ScanTarget]:
    """Tables under the warehouse roots that no catalog entry names, read in every column."""
    from piitracer.discover.lakehouse import discover_tables

    known = [canonical(location) for location in catalogued]
    found = discover_tables(list(lakehouse.roots), lakehouse.store).tables
    targets = []
    for table in found:
        place = canonical(table.location)
        if lists_data_files(table.format) and not any(k.contains(place) or place.contains(k) for k in known):
            targets.append(ScanTarget(NEW_TABLE + table.name, table.format, table.location, None))
    return sorted(targets, key=lambda t: t.dataset)


def run_guard_scan(workspace: Workspace, lakehouse, suppression: SuppressionStore, requests, log: AuditLog, *,
                   full: bool = False, all_columns: bool = False, new_tables: bool = True,
                   on_table: Callable[[str], None] | None = None) -> GuardScan:
    """Scan the lakehouse against the suppression list and open a request for anyone who came back.

    Args:
        workspace: the loaded workspace.
        lakehouse (Lakehouse): the session's places.
        suppression: the suppression list, with the master key.
        requests (RequestStore): the request store, with the master key (the new requests' values
            are sealed there, as any request's).
        log: the audit log (each return is recorded on the earlier request and the new one).
        full: read every file, not only what changed since the last scan.
        all_columns: read every column that can hold an identifier, not only the candidates.
        new_tables: also read the tables under the roots that no catalog entry names.
        on_table: told of each table as it is scanned.

    Returns:
        What was read and who came back.
    """
    records, people = suppression.count()
    result = GuardScan(full=full, suppressed=records, people=people)
    if records == 0:
        return result
    listed = suppression.suppression_list()
    targets = guard_targets(workspace, lakehouse, suppression, all_columns, new_tables, result.not_read)
    scans, found = scan_tables(targets, listed, lakehouse.store, suppression, full, on_table)
    result.tables = scans
    result.came_back = _reopen(workspace, lakehouse, suppression, requests, log, found)
    for scan in scans:  # kept only now: a scan that failed half way reads the rest again next time
        if scan.problem is None and scan.marker is not None:
            suppression.save_position(scan.dataset, "table", {"marker": scan.marker}, scan.files_read)
    return result


def _reopen(workspace: Workspace, lakehouse, suppression: SuppressionStore, requests, log: AuditLog,
            found: list[Found]) -> list[CameBack]:
    """One new request per person found again, its values read from where they were found; each
    return recorded on the new request and on every earlier request that erased the person.

    A person is the earlier requests whose records share a hash that was found (erased twice, a
    person has two requests; their return is one)."""
    from piitracer.api.requests import add_requests

    records: dict[bytes, list] = {item.hash: [] for item in found}
    for record in suppression.records_for(sorted(records)):  # one query for every hash found
        records[record.hash].append(record)
    people = _people(found, records)
    returns = []
    now = datetime.now(timezone.utc)
    open_values = _open_values(requests)
    for earlier in people:
        hits = [(item, record) for item in found for record in records[item.hash] if record.request_id in earlier]
        places = sorted({tuple(sorted(_place(item).items())) for item, _ in hits})
        back = CameBack(earlier, [dict(p) for p in places], sorted({record.kind for _, record in hits}))
        returns.append(back)
        sources, values = _subject_values(workspace, requests, earlier, hits)
        if not values:
            back.why = ("only computed or derived forms were found (a hash, a surrogate key): no value of a "
                        "catalogued identifier column to erase the person by")
            continue
        wanted = set(values)
        already = next((request_id for request_id, held in open_values if held & wanted), None)
        if already is not None:  # found again before the request opened last time was erased: noted there
            back.new_request, back.why = already, "already reopened: this return is noted on that request"
            record_request_entry(log, already, [(already, v) for v in values], from_state=None, to_state="open",
                                 action="came back", details={"came_back_of": earlier, "found_at": back.places,
                                                              "kinds": back.kinds})
            continue
        new_id = _new_request_id(requests, earlier[-1], now)
        subjects = [Subject(value=value, request_id=new_id, received_at=now) for value in values]
        try:
            add_requests(workspace, requests, log, sources, subjects, labels=[f"found value {i + 1}" for i in range(len(values))],
                         action=f"came back (erased under {', '.join(earlier)})", lakehouse=lakehouse)
        except PlanningError as error:
            back.why = f"cannot queue it: {error}"
            continue
        back.new_request = new_id
        open_values.append((new_id, wanted))
        details = {"came_back_of": earlier, "found_at": back.places, "kinds": back.kinds}
        record_request_entry(log, new_id, [(new_id, v) for v in values], from_state=RequestState.QUEUED.value,
                             to_state=RequestState.QUEUED.value, action="came back", details=details)
        for request_id in earlier:
            record_request_entry(log, request_id, [(request_id, "")], from_state=RequestState.CLOSED.value,
                                 to_state=RequestState.CLOSED.value, action="came back",
                                 details={"reopened_as": new_id, "found_at": back.places, "kinds": back.kinds})
        requests.note(new_id, f"came back (erased under {', '.join(earlier)}): "
                              f"{', '.join(sorted({p['dataset'] for p in back.places}))}")
    return returns


def _people(found: list[Found], records) -> list[list[str]]:
    """The earlier requests grouped by person: requests whose found records share a hash are one
    person's (sorted lists, sorted)."""
    import networkx as nx

    graph = nx.Graph()
    for item in found:
        ids = sorted({record.request_id for record in records[item.hash]})
        graph.add_nodes_from(ids)
        graph.add_edges_from(zip(ids, ids[1:]))
    return sorted(sorted(component) for component in nx.connected_components(graph))


def _place(item: Found) -> dict[str, str]:
    """Where a value was found, with any path segment holding the value (a Hive partition
    ``user_id=8841302``) masked: the audit log holds no value."""
    place = item.place()
    texts = {str(v) for v in item.values}
    place["file"] = "/".join("…" if any(t in part for t in texts) else part for part in place["file"].split("/"))
    return place


def _subject_values(workspace: Workspace, requests, earlier: list[str], hits) -> tuple[list[str], list[str]]:
    """What the new request names the person by, read from where they were found: the values of
    the kind an earlier request named them by (its subject values, or its source column's own
    identifier set), with that request's sources; else the values found of the person's other
    identifiers, each a catalogued column's own values (a PAN of ``prod.payments.pan``), with those
    columns as the sources. A computed or derived form (a hash, a surrogate key) is never a value
    to erase by: a surrogate key 42 is not user 42. Values as text, sorted."""
    sources: list[str] = []
    subject: set[str] = set()
    for request_id in earlier:
        try:
            sources = list(requests.get(request_id).sources)
        except NotFoundError:
            continue
        subject |= {subject_kind(sources), *sources}
    values = sorted({str(value) for item, record in hits if record.kind in subject for value in item.values})
    if values:
        return sources, values
    others: dict[str, set[str]] = {}
    for item, record in hits:
        if _catalogued_column(workspace, record.kind):
            others.setdefault(record.kind, set()).update(str(value) for value in item.values)
    if not others:
        return [], []
    # Planned together, each value must parse as every source's type: the first column alone otherwise.
    kinds = sorted(others)
    types = {workspace.config.catalog[k.rpartition(".")[0]].column_types.get(k.rpartition(".")[2]) for k in kinds}
    if len(types) > 1:
        kinds = kinds[:1]
    return kinds, sorted(set().union(*(others[k] for k in kinds)))


def _catalogued_column(workspace: Workspace, kind: str) -> bool:
    """Whether a record's kind is a catalogued dataset's identifier or key column itself (not a
    subject kind, a computed or derived form, or an unknown set)."""
    if kind.startswith(SUBJECT_KIND) or DERIVED in kind or "," in kind:
        return False
    dataset, _, column = kind.rpartition(".")
    entry = workspace.config.catalog.get(dataset)
    return entry is not None and column in (*entry.identifiers, *entry.column_types, entry.subject_key)


def _open_values(requests) -> list[tuple[str, set[str]]]:
    """(request id, its values) of every request not closed, by id: opened once per scan (a
    return found for a person already reopened is noted on the first of these holding a value)."""
    return [(request.request_id, set(requests.values(request.request_id)))
            for request in sorted(requests.all(), key=lambda r: r.request_id) if request.state is not RequestState.CLOSED]


def _new_request_id(requests, earlier: str, now: datetime) -> str:
    """``<earlier>-back-<yyyymmdd>``, numbered when that is taken."""
    base = f"{earlier}-back-{now:%Y%m%d}"
    candidate, number = base, 1
    while requests.has(candidate):
        number += 1
        candidate = f"{base}-{number}"
    return candidate
