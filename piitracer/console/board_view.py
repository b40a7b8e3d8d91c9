"""The board page's query and links: what the address asks for (``?q=&state=&owner=&due=&overdue=
&sort=&desc=&page=``) as a :class:`~piitracer.requests.board.BoardQuery`, and every link of the page
(sort by a column, another page, the CSV of the same filters) keeping the rest of the query."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Mapping
from urllib.parse import urlencode

from piitracer.console.views import BoardRow
from piitracer.model.requests import RequestState
from piitracer.requests.board import SORTS, BoardPage, BoardQuery

PER_PAGE = 50
COLUMNS = (("request", "request"), ("received", "received"), ("deadline", "deadline"), ("days_left", "days left"),
           ("state", "state"), ("subjects", "subjects"), ("last_action", "last action"))
KEYS = ("q", "state", "owner", "due", "overdue", "sort", "desc")


def board_query(params: Mapping[str, str], now: datetime) -> tuple[BoardQuery, str | None]:
    """The query an address asks for, and what in it was not understood (that part left out)."""
    problems = []

    def number(name: str, low: int) -> int | None:
        text = (params.get(name) or "").strip()
        if not text:
            return None
        if not text.isdigit() or int(text) < low:
            problems.append(f"{name}={text!r}: expected a whole number from {low}")
            return None
        return int(text)

    state = params.get("state") or None
    if state and state not in {s.value for s in RequestState}:
        problems.append(f"state={state!r}: not a request state")
        state = None
    sort = params.get("sort") or "deadline"
    if sort not in SORTS:
        problems.append(f"sort={sort!r}: expected one of {', '.join(SORTS)}")
        sort = "deadline"
    query = BoardQuery(state=state, owner=params.get("owner") or None, due_within_days=number("due", 0),
                       overdue=bool(params.get("overdue")), search=(params.get("q") or "").strip() or None, sort=sort,
                       descending=bool(params.get("desc")), page=number("page", 1) or 1, per_page=PER_PAGE, now=now)
    return query, ("; ".join(problems) + " (left out of the filter)") if problems else None


def board_context(page: BoardPage, workspace, params: Mapping[str, str]) -> dict[str, Any]:
    """What the board's template shows."""
    query = page.query
    kept = {k: params[k] for k in KEYS if params.get(k)}

    def link(**changes: Any) -> str:
        merged = {**kept, **{k: v for k, v in changes.items() if k != "page"}}
        merged = {k: v for k, v in merged.items() if v not in ("", None)}
        if changes.get("page", query.page) not in (1, None):
            merged["page"] = changes.get("page", query.page)
        return "/console/board" + ("?" + urlencode(merged) if merged else "")

    def sort_link(column: str) -> str:
        descending = column == query.sort and not query.descending
        return link(sort=column, desc="1" if descending else "", page=1)

    rows = [BoardRow(r, r.days_left(query.now), r.overdue(query.now)) for r in page.requests]
    first = (query.page - 1) * query.per_page + 1
    csv = "/console/board.csv" + ("?" + urlencode(kept) if kept else "")
    return {"query": query, "rows": rows, "total": page.total, "pages": page.pages, "counts": page.counts,
            "states": [s.value for s in RequestState], "owners": sorted(workspace.config.owners),
            "columns": COLUMNS, "sort_label": dict(COLUMNS)[query.sort], "link": link, "sort_link": sort_link,
            "page_link": lambda number: link(page=number), "csv_link": csv, "first": first,
            "last": first + len(rows) - 1,
            "filtered": any(params.get(k) for k in ("q", "state", "owner", "due", "overdue"))}
