"""The board at volume (issue 41.1): the request store pages, sorts, searches, filters and counts
in SQL, and answers exactly what a full scan in Python would (checked against one on 600
requests spread over every state, deadline and owner); times are kept in UTC so text comparison
is time comparison; many requests are added in one transaction."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from piitracer.crypto.envelope import write_master_key
from piitracer.model.requests import RequestState
from piitracer.requests.board import DONE_STATES, BoardQuery, BoardQueryError
from piitracer.requests.store import RequestStore

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
STATES = [s for s in RequestState if s is not RequestState.QUEUED]
OWNERS = ("crm", "streaming-team", "risk")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> RequestStore:
    folder = tmp_path_factory.mktemp("board")
    opened = RequestStore(folder / "requests.sqlite", write_master_key(folder / "master.key"))
    chance = random.Random(41)
    rows = []
    for index in range(600):
        received = NOW - timedelta(days=chance.randint(0, 45), hours=chance.randint(0, 23))
        # An offset other than UTC on some: the store keeps UTC, so the board's text order is time order.
        if index % 7 == 0:
            received = received.astimezone(timezone(timedelta(hours=5, minutes=30)))
        rows.append((f"dsr-{index:04d}", received, received + timedelta(days=30), ["prod.payments.user_id"],
                     [str(7_000_000_000 + index)] * (1 + index % 3)))
    assert opened.add_many(rows) == 600
    # Move a share of them along, with plans whose owners the board filters by.
    for index in range(0, 600, 2):
        request_id, plan_id = f"dsr-{index:04d}", f"plan-{index % 10}"
        opened.move(request_id, RequestState.PLANNED, "planned", plan_id=plan_id)
        target = STATES[index % len(STATES)]
        path = {RequestState.PLANNED: [], RequestState.EXECUTING: [RequestState.EXECUTING],
                RequestState.EXECUTED: [RequestState.EXECUTING, RequestState.EXECUTED],
                RequestState.AWAITING_ATTESTATION: [RequestState.EXECUTING, RequestState.EXECUTED, RequestState.AWAITING_ATTESTATION],
                RequestState.VERIFIED: [RequestState.EXECUTING, RequestState.EXECUTED, RequestState.VERIFIED],
                RequestState.WATCHING: [RequestState.EXECUTING, RequestState.EXECUTED, RequestState.VERIFIED, RequestState.WATCHING],
                RequestState.CLOSED: [RequestState.EXECUTING, RequestState.EXECUTED, RequestState.VERIFIED, RequestState.WATCHING]}[target]
        for state in path:
            opened.move(request_id, state, state.value)
        if target is RequestState.CLOSED:
            opened.shred(request_id, "closed", None)
    for plan in range(10):
        opened.set_plan_owners(f"plan-{plan}", [OWNERS[plan % 3], OWNERS[(plan + 1) % 3]] if plan % 2 else [OWNERS[plan % 3]])
    yield opened
    opened.close()


def by_hand(store: RequestStore, query: BoardQuery) -> list[str]:
    """What the board must show, computed in Python from every request (the brute force)."""
    owners = {f"plan-{p}": ({OWNERS[p % 3], OWNERS[(p + 1) % 3]} if p % 2 else {OWNERS[p % 3]}) for p in range(10)}
    keep = []
    for r in store.all():
        if query.state and r.state.value != query.state:
            continue
        if query.search and not r.request_id.startswith(query.search):
            continue
        if query.owner and query.owner not in owners.get(r.plan_id or "", set()):
            continue
        open_ = r.state.value not in DONE_STATES
        if query.overdue and not (open_ and r.deadline_at < query.now):
            continue
        if query.due_within_days is not None and not (
                open_ and query.now <= r.deadline_at <= query.now + timedelta(days=query.due_within_days)):
            continue
        keep.append(r)
    column = {"request": lambda r: r.request_id, "received": lambda r: r.received_at, "deadline": lambda r: r.deadline_at,
              "state": lambda r: r.state.value, "subjects": lambda r: r.subjects,
              "last_action": lambda r: r.last_action_at}[query.sort]
    keep.sort(key=lambda r: (column(r), r.request_id), reverse=query.descending)
    return [r.request_id for r in keep]


QUERIES = [BoardQuery(now=NOW), BoardQuery(now=NOW, sort="request", descending=True),
           BoardQuery(now=NOW, sort="received"), BoardQuery(now=NOW, sort="state", descending=True),
           BoardQuery(now=NOW, sort="subjects"), BoardQuery(now=NOW, state="queued"),
           BoardQuery(now=NOW, overdue=True), BoardQuery(now=NOW, due_within_days=3),
           BoardQuery(now=NOW, due_within_days=3, sort="deadline", descending=True),
           BoardQuery(now=NOW, owner="streaming-team"), BoardQuery(now=NOW, owner="risk", state="planned"),
           BoardQuery(now=NOW, search="dsr-012"), BoardQuery(now=NOW, search="dsr-0123"),
           BoardQuery(now=NOW, search="nothing"), BoardQuery(now=NOW, owner="crm", overdue=True, sort="received")]


@pytest.mark.parametrize("query", QUERIES, ids=lambda q: repr({k: v for k, v in q.__dict__.items() if k != "now"}))
def test_every_page_is_what_a_full_scan_gives(store: RequestStore, query: BoardQuery) -> None:
    expected = by_hand(store, query)
    shown, page = [], 1
    while True:
        answer = store.board_page(BoardQuery(**{**query.__dict__, "page": page, "per_page": 37}))
        assert answer.total == len(expected)
        shown += [r.request_id for r in answer.requests]
        if page >= answer.pages:
            break
        page += 1
    assert shown == expected
    assert answer.pages == max(1, -(-len(expected) // 37))


def test_counts_per_state_follow_every_filter_but_the_state(store: RequestStore) -> None:
    query = BoardQuery(now=NOW, owner="crm", state="queued")
    counts = store.board_page(query).counts
    for state in RequestState:
        assert counts[state.value] == len(by_hand(store, BoardQuery(now=NOW, owner="crm", state=state.value)))
    assert sum(counts.values()) == len(by_hand(store, BoardQuery(now=NOW, owner="crm")))


def test_a_request_is_found_by_its_id_among_the_rest(store: RequestStore) -> None:
    found = store.board_page(BoardQuery(now=NOW, search="dsr-0417"))
    assert [r.request_id for r in found.requests] == ["dsr-0417"] and found.total == 1


def test_times_are_kept_in_utc(store: RequestStore) -> None:
    rows = store._db.execute("SELECT received_at, deadline_at FROM requests WHERE request_id = 'dsr-0007'").fetchone()
    assert all(text.endswith("+00:00") for text in rows)


def test_a_query_naming_what_does_not_exist_is_refused(store: RequestStore) -> None:
    for query, words in ((BoardQuery(sort="colour"), "sort 'colour'"), (BoardQuery(state="lost"), "state 'lost'"),
                         (BoardQuery(page=0), "pages count from 1"), (BoardQuery(due_within_days=-1), "0 or more")):
        with pytest.raises(BoardQueryError, match=words):
            store.board_page(query)


def test_an_id_already_there_refuses_the_whole_batch(tmp_path: Path) -> None:
    from piitracer.requests.store import RequestError

    opened = RequestStore(tmp_path / "r.sqlite", write_master_key(tmp_path / "m.key"))
    opened.add("a-1", NOW, NOW + timedelta(days=30), ["s.c"], ["1"])
    with pytest.raises(RequestError, match="a-1 is already in the request store"):
        opened.add_many([("a-2", NOW, NOW, ["s.c"], ["2"]), ("a-1", NOW, NOW, ["s.c"], ["3"])])
    assert [r.request_id for r in opened.all()] == ["a-1"]  # one transaction: a-2 was not kept either
    opened.close()
