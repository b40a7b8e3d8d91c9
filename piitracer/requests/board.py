"""The board at volume: one page of requests, asked of the request store in SQL.

A privacy office runs thousands of requests; the console and the CLI never load them all. A
:class:`BoardQuery` says what a person asked for (a state, an owner, due within N days, overdue,
a request id or its beginning, a sort column, a page); :func:`board_page` answers it with one
``SELECT ... ORDER BY ... LIMIT ... OFFSET`` over indexed columns, a ``COUNT`` and the counts per
state. Nothing here reads a subject value (the sealed values column is never selected).

Times are compared as text: the store keeps ``deadline_at`` in UTC ISO 8601
(:meth:`~piitracer.requests.store.RequestStore.add`), which sorts as time does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Sequence

from piitracer.model.errors import InputError
from piitracer.model.requests import ErasureRequest, RequestState

# A column a person can sort by -> the store's column (each has an index, or is the key).
SORTS = {"request": "request_id", "received": "received_at", "deadline": "deadline_at", "days_left": "deadline_at",
         "state": "state", "subjects": "subjects", "last_action": "last_action_at"}
# Proven erased (or closed): never overdue, never "due".
DONE_STATES = (RequestState.VERIFIED.value, RequestState.WATCHING.value, RequestState.CLOSED.value)
MAX_PER_PAGE = 500

INDEXES = """
CREATE INDEX IF NOT EXISTS requests_deadline ON requests (deadline_at, request_id);
CREATE INDEX IF NOT EXISTS requests_state_deadline ON requests (state, deadline_at, request_id);
CREATE INDEX IF NOT EXISTS requests_received ON requests (received_at, request_id);
CREATE INDEX IF NOT EXISTS requests_last_action ON requests (last_action_at, request_id);
CREATE INDEX IF NOT EXISTS requests_plan ON requests (plan_id);
CREATE TABLE IF NOT EXISTS plan_owners (plan_id TEXT NOT NULL, owner TEXT NOT NULL, PRIMARY KEY (owner, plan_id));
"""


class BoardQueryError(InputError):
    """A board query that cannot be asked (an unknown sort column or state, a page below 1)."""


@dataclass(frozen=True)
class BoardQuery:
    """What a person asked the board for. ``search``: a request id or its beginning;
    ``owner``: requests whose plan reaches a dataset this console user owns; ``due_within_days``:
    open requests whose deadline falls between ``now`` and ``now`` + N days; ``overdue``: open
    requests past their deadline. ``page`` counts from 1."""

    state: str | None = None
    owner: str | None = None
    due_within_days: int | None = None
    overdue: bool = False
    search: str | None = None
    sort: str = "deadline"
    descending: bool = False
    page: int = 1
    per_page: int = 50
    now: datetime = field(default_factory=lambda: datetime.now(timezone.utc))

    def checked(self) -> "BoardQuery":
        """The query, refused (:class:`BoardQueryError`) when it names what does not exist."""
        if self.sort not in SORTS:
            raise BoardQueryError(f"sort {self.sort!r}: expected one of {', '.join(SORTS)}")
        if self.state and self.state not in {s.value for s in RequestState}:
            raise BoardQueryError(f"state {self.state!r}: expected one of {', '.join(s.value for s in RequestState)}")
        if self.page < 1 or not 1 <= self.per_page <= MAX_PER_PAGE:
            raise BoardQueryError(f"page {self.page} of {self.per_page}: pages count from 1, at most {MAX_PER_PAGE} a page")
        if self.due_within_days is not None and self.due_within_days < 0:
            raise BoardQueryError(f"due within {self.due_within_days} days: expected 0 or more")
        return self


@dataclass
class BoardPage:
    """One page of the board: its requests, how many match in all, and per state how many match
    the other filters (the state filter's choices with their counts)."""

    query: BoardQuery
    requests: list[ErasureRequest]
    total: int
    counts: dict[str, int]

    @property
    def pages(self) -> int:
        """How many pages the matching requests fill (at least 1)."""
        return max(1, -(-self.total // self.query.per_page))


def utc_text(moment: datetime) -> str:
    """A time as the store keeps it: UTC, ISO 8601 (sorts as time does)."""
    return moment.astimezone(timezone.utc).isoformat()


def _filters(query: BoardQuery, with_state: bool) -> tuple[list[str], list]:
    where, args = [], []
    if with_state and query.state:
        where.append("state = ?")
        args.append(query.state)
    if query.search and query.search.strip():
        # The id or its beginning, as a range over the primary key (LIKE would not use the index).
        text = query.search.strip()
        where.append("request_id >= ? AND request_id < ?")
        args += [text, text + "\U0010ffff"]
    if query.owner:
        where.append("plan_id IN (SELECT plan_id FROM plan_owners WHERE owner = ?)")
        args.append(query.owner)
    now = utc_text(query.now)
    if query.overdue or query.due_within_days is not None:
        where.append(f"state NOT IN ({', '.join('?' * len(DONE_STATES))})")
        args += list(DONE_STATES)
    if query.overdue:
        where.append("deadline_at < ?")
        args.append(now)
    if query.due_within_days is not None:
        where.append("deadline_at >= ? AND deadline_at <= ?")
        args += [now, utc_text(query.now + timedelta(days=query.due_within_days))]
    return where, args


def board_page(db, columns: str, to_request, query: BoardQuery) -> BoardPage:
    """One page of the board from the store's connection ``db`` (``columns``: the request
    columns to select; ``to_request``: a row to an :class:`ErasureRequest`)."""
    query = query.checked()
    where, args = _filters(query, with_state=True)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    order = "DESC" if query.descending else "ASC"
    rows = db.execute(f"SELECT {columns} FROM requests{clause} ORDER BY {SORTS[query.sort]} {order}, request_id {order} "
                      "LIMIT ? OFFSET ?", (*args, query.per_page, (query.page - 1) * query.per_page)).fetchall()
    (total,) = db.execute(f"SELECT COUNT(*) FROM requests{clause}", args).fetchone()
    where, args = _filters(query, with_state=False)
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    counts = {s.value: 0 for s in RequestState}
    counts.update(dict(db.execute(f"SELECT state, COUNT(*) FROM requests{clause} GROUP BY state", args).fetchall()))
    return BoardPage(query, [to_request(row) for row in rows], total, counts)


def set_plan_owners(db, plan_id: str, owners: Sequence[str]) -> None:
    """The console users who own a dataset the plan reaches (the board's owner filter); the
    caller holds the transaction."""
    db.execute("DELETE FROM plan_owners WHERE plan_id = ?", (plan_id,))
    db.executemany("INSERT OR IGNORE INTO plan_owners VALUES (?, ?)", [(plan_id, o) for o in sorted(set(owners))])


def owner_name(catalog_owner: str | None) -> str | None:
    """The console user a catalog ``owner:`` names: its first word (``streaming-team (kafka topic
    payments-cdc)`` -> ``streaming-team``); None when the dataset has no owner."""
    if not catalog_owner:
        return None
    words = catalog_owner.split("(", 1)[0].split()
    return words[0] if words else None
