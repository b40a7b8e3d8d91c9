"""The console at volume (issue 41's browser acceptance) in Debian's Chromium through
chromium-driver (Selenium), over ``tests/support/console_site.py``: 10,001 requests in the store
(one of them, ``NEEDLE``, the only one due within 3 days), a 65-step plan recorded by ``ana`` under
``policy.approval: required``, users of every role, the console on 127.0.0.1. No Spark.

One site and one browser for the module; tests run in file order (the approval and the restart
change the site, so they come after the pages they would change). What each test holds:

- find one request among 10,000 by its id and by *due within 3 days* (the board's form);
- page through the 65 steps of a request page;
- zero serious or critical axe-core violations on every page the console serves, as each role sees it;
- the planner's own approval refused with the reason shown, an approver's recorded in the audit
  log bound to the plan id and the approver;
- the board's CSV, the request's HTML report and evidence manifest downloaded with the browser's
  session cookie: the rows are there, no subject value is in any byte, each download is in the
  audit log with who and the SHA-256 of what was sent;
- a restart of the server on the same port keeps the browser signed in.

Screenshots for the docs (docs/assets/console-board-volume.png, console-approvals.png,
console-plan.png, console-request-volume.png) are saved only when PIITRACER_SCREENSHOTS=1: a normal
run must not write into the repository.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import os
import re
from urllib.parse import quote

import pytest
import requests

from chromium import CHROMIUM, DRIVER, chromium
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver "
                                "(scripts/setup.sh installs them)")
from axe_selenium_python import Axe  # noqa: E402
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from audit_builders import RAW_VALUES  # noqa: E402
from console_site import (APPROVER, NEEDLE, OWNER, PLANNED_ID, PLANNED_VALUE, PLANNER, VIEWER, VOLUME,  # noqa: E402
                          ConsoleSite, build_site, bulk_value)
from paths import REPO  # noqa: E402
from piitracer.console.exports import CSV_COLUMNS  # noqa: E402
from piitracer.model.audit import EntryKind  # noqa: E402

ASSETS = REPO / "docs" / "assets"
SESSION_COOKIE = "ptc_session"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> ConsoleSite:
    built = build_site(tmp_path_factory.mktemp("console-volume") / "ws")
    built.start()
    try:
        yield built
    finally:
        built.stop()


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def visit(browser, site: ConsoleSite, path: str) -> None:
    browser.get(site.base + path)


def click(browser, element) -> None:
    """Click and wait for the next page (a click returns before the browser navigates)."""
    page = browser.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(browser, 60).until(lambda _: gone(page))
    WebDriverWait(browser, 60).until(lambda driver: driver.execute_script("return document.readyState") == "complete")


def gone(element) -> bool:
    """Whether the page holding ``element`` was replaced. chromedriver answers a node of a page
    being replaced either as stale or, at times, with "Node with given id does not belong to the
    document" (a plain WebDriverException that ``staleness_of`` does not catch): both mean gone."""
    try:
        element.is_enabled()
    except WebDriverException:  # StaleElementReferenceException included
        return True
    return False


def sign_in(browser, site: ConsoleSite, name: str) -> None:
    browser.delete_all_cookies()
    visit(browser, site, "/console/sign-in")
    browser.find_element(By.ID, "token").send_keys(site.tokens[name])
    click(browser, browser.find_element(By.ID, "sign-in"))
    assert browser.find_element(By.ID, "who").text == name


def board_rows(browser) -> list[str]:
    return [row.get_attribute("data-request") for row in browser.find_elements(By.CSS_SELECTOR, "#board tr[data-request]")]


def step_rows(browser) -> list[str]:
    return [row.get_attribute("data-step") for row in browser.find_elements(By.CSS_SELECTOR, "#steps tbody tr[data-step]")]


def screenshot(browser, name: str, height: int | None = None) -> None:
    """Save a screenshot for the docs, only when PIITRACER_SCREENSHOTS=1 (a normal run leaves the
    repository as it found it)."""
    if os.environ.get("PIITRACER_SCREENSHOTS") != "1":
        return
    ASSETS.mkdir(parents=True, exist_ok=True)
    if height:
        browser.set_window_size(1400, height)
    browser.save_screenshot(str(ASSETS / name))
    if height:
        browser.set_window_size(1400, 1000)


def serious_violations(browser, where: str) -> list[str]:
    """axe-core's serious and critical violations on the page the browser shows, one line each."""
    axe = Axe(browser)
    axe.inject()
    found = axe.run()["violations"]
    return [f"{where}: {v['id']} ({v['impact']}) {v['help']}: {', '.join(str(n['target']) for n in v['nodes'][:5])}"
            for v in found if v["impact"] in ("serious", "critical")]


def session_cookie(browser) -> dict[str, str]:
    return {SESSION_COOKIE: browser.get_cookie(SESSION_COOKIE)["value"]}


def subject_values_in(content: bytes) -> list[str]:
    """Every subject value of the store found in ``content`` (raw, HTML-escaped or URL-quoted):
    the planned request's values one by one, the 10,000 bulk values by every run of 11 digits."""
    text = content.decode("utf-8", errors="replace")
    hostile = {form for value in (PLANNED_VALUE, *RAW_VALUES) for form in (value, html.escape(value), quote(value))}
    found = sorted(value for value in hostile if value in text)
    bulk = {bulk_value(index) for index in range(VOLUME)}
    return found + sorted({run for run in re.findall(r"(?=(\d{11}))", text) if run in bulk})


def plan_step_ids(site: ConsoleSite) -> list[str]:
    steps = json.loads((site.folder / "plan.json").read_text())["steps"]
    return [step["id"] for step in sorted(steps, key=lambda step: step["order"])]


def test_one_request_among_ten_thousand_by_its_id_and_by_due_within_3_days(site: ConsoleSite, browser) -> None:
    sign_in(browser, site, VIEWER)
    assert browser.current_url.endswith("/console/board")
    assert browser.find_element(By.ID, "board-summary").text.startswith(f"{VOLUME + 1} request(s) match; showing 1 to 50")
    assert len(board_rows(browser)) == 50
    screenshot(browser, "console-board-volume.png", height=1500)
    browser.find_element(By.ID, "q").send_keys(NEEDLE)
    click(browser, browser.find_element(By.ID, "apply-filters"))
    assert board_rows(browser) == [NEEDLE]
    assert browser.find_element(By.ID, "board-summary").text.startswith("1 request(s) match")
    visit(browser, site, "/console/board")
    browser.find_element(By.ID, "due-filter").send_keys("3")
    click(browser, browser.find_element(By.ID, "apply-filters"))
    assert "due=3" in browser.current_url
    assert board_rows(browser) == [NEEDLE]
    assert browser.find_element(By.ID, "board-summary").text.startswith("1 request(s) match")


def test_a_request_page_pages_its_65_steps(site: ConsoleSite, browser) -> None:
    expected = plan_step_ids(site)
    assert len(expected) == 65
    sign_in(browser, site, VIEWER)
    visit(browser, site, f"/console/requests/{PLANNED_ID}")
    screenshot(browser, "console-request-volume.png", height=2400)
    seen, position = [], 1
    while True:
        caption = browser.find_element(By.CSS_SELECTOR, "#steps caption").text
        first, last = 20 * (position - 1) + 1, min(20 * position, 65)
        assert caption.startswith(f"Steps {first} to {last} of 65"), caption
        assert browser.find_element(By.ID, "steps-position").text == f"page {position} of 4"
        rows = step_rows(browser)
        assert rows == expected[first - 1:last]
        seen += rows
        following = browser.find_elements(By.ID, "steps-next")
        if not following:
            break
        click(browser, following[0])
        position += 1
    assert position == 4 and seen == expected  # every step once, in the order they run
    click(browser, browser.find_element(By.ID, "steps-prev"))
    assert step_rows(browser) == expected[40:60]


def test_no_page_has_a_serious_or_critical_axe_violation(site: ConsoleSite, browser) -> None:
    """Every page the console serves, as the role that sees the most of it (forms included):
    sign-in (empty, and refusing a wrong token), the board (plain, filtered, sorted, a later page,
    a query it did not understand), a request page (planned with its pages of steps and audit
    trail, queued), approvals, a plan page (with the Approve button), an owner's steps, a 404."""
    violations = []
    browser.delete_all_cookies()
    visit(browser, site, "/console/sign-in")
    violations += serious_violations(browser, "sign-in")
    browser.find_element(By.ID, "token").send_keys("ptc.wrong.token")
    click(browser, browser.find_element(By.ID, "sign-in"))
    assert browser.find_element(By.ID, "error").text == "unknown or wrong token"
    violations += serious_violations(browser, "sign-in refused")
    pages = {
        VIEWER: ["/console/board", f"/console/board?q={NEEDLE}", "/console/board?due=3&state=queued&owner=" + OWNER,
                 "/console/board?overdue=1", "/console/board?sort=request&desc=1&page=7", "/console/board?due=x",
                 f"/console/requests/{PLANNED_ID}?steps=4&audit=1", "/console/requests/dsr-00002",
                 "/console/requests/no-such-request"],
        APPROVER: ["/console/approvals", f"/console/plans/{site.plan_id}"],
        OWNER: [f"/console/owners/{OWNER}", f"/console/requests/{PLANNED_ID}"],
    }
    for who, paths in pages.items():
        sign_in(browser, site, who)
        for path in paths:
            visit(browser, site, path)
            violations += serious_violations(browser, f"{path} as {who}")
    assert violations == [], "\n".join(violations)


def test_the_planners_own_approval_is_refused_and_an_approvers_is_recorded(site: ConsoleSite, browser) -> None:
    sign_in(browser, site, PLANNER)
    assert browser.current_url.endswith("/console/approvals")  # an approver lands on the plans waiting
    click(browser, browser.find_element(By.CSS_SELECTOR, f'tr[data-plan="{site.plan_id}"] a'))
    assert browser.find_element(By.ID, "planned-by").text == PLANNER
    assert browser.find_element(By.ID, "own-plan").text.startswith("You planned it")
    click(browser, browser.find_element(By.ID, "approve"))
    error = browser.find_element(By.ID, "error").text
    assert error == f"{PLANNER} planned {site.plan_id[:16]}: a plan is approved by a second person (who may: {APPROVER})"
    assert browser.find_element(By.ID, "approval-state").text == f"waiting: who may approve: {APPROVER}"
    assert serious_violations(browser, "the refused approval") == []
    assert site.audit_entries(EntryKind.APPROVAL) == []

    sign_in(browser, site, APPROVER)
    waiting = browser.find_element(By.CSS_SELECTOR, f'tr[data-plan="{site.plan_id}"]').text
    assert PLANNER in waiting and "65" in waiting  # who planned it and its steps
    screenshot(browser, "console-approvals.png")
    click(browser, browser.find_element(By.CSS_SELECTOR, f'tr[data-plan="{site.plan_id}"] a'))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#plan-steps tbody tr")) == 65
    screenshot(browser, "console-plan.png", height=1600)
    click(browser, browser.find_element(By.ID, "approve"))
    assert browser.find_element(By.ID, "notice").text == f"approved as {APPROVER}"
    assert browser.find_element(By.ID, "approval-state").text == f"approved by {APPROVER}"
    (entry,) = site.audit_entries(EntryKind.APPROVAL)
    assert entry.plan_id == site.plan_id and entry.body["plan_id"] == site.plan_id
    assert entry.body["approved_by"] == APPROVER and entry.body["planned_by"] == PLANNER
    assert entry.body["steps"] == 65 and PLANNED_ID in entry.request_ids
    visit(browser, site, "/console/approvals")
    assert not browser.find_elements(By.CSS_SELECTOR, f'tr[data-plan="{site.plan_id}"]')


def test_the_csv_and_the_report_download_without_a_subject_value_and_are_recorded(site: ConsoleSite, browser) -> None:
    sign_in(browser, site, VIEWER)
    before = len(site.audit_entries(EntryKind.DOWNLOAD))
    cookie = session_cookie(browser)
    links = {}
    visit(browser, site, "/console/board")
    links["board.csv"] = browser.find_element(By.ID, "csv").get_attribute("href")
    visit(browser, site, "/console/board?due=3")
    links["board.csv due=3"] = browser.find_element(By.ID, "csv").get_attribute("href")
    visit(browser, site, f"/console/requests/{PLANNED_ID}")
    links["report.html"] = browser.find_element(By.ID, "report-download").get_attribute("href")
    links["evidence.json"] = browser.find_element(By.ID, "evidence-download").get_attribute("href")
    received = {}
    for what, link in links.items():
        answer = requests.get(link, cookies=cookie, allow_redirects=False, timeout=120)
        assert answer.status_code == 200 and "attachment" in answer.headers["content-disposition"], (what, answer.text[:300])
        received[what] = answer.content
    assert {what: subject_values_in(content) for what, content in received.items()} == {what: [] for what in received}

    table = list(csv.reader(io.StringIO(received["board.csv"].decode())))
    assert tuple(table[0]) == CSV_COLUMNS
    rows = {row[0]: dict(zip(CSV_COLUMNS, row)) for row in table[1:]}
    assert len(table) == VOLUME + 2 and set(rows) == {f"dsr-{i:05d}" for i in range(VOLUME)} | {PLANNED_ID}
    assert rows[PLANNED_ID]["plan_id"] == site.plan_id and rows[PLANNED_ID]["subjects"] == "1"
    assert [row[0] for row in csv.reader(io.StringIO(received["board.csv due=3"].decode()))][1:] == [NEEDLE]
    report = received["report.html"].decode()
    assert PLANNED_ID in report and site.plan_id in report

    entries = site.audit_entries(EntryKind.DOWNLOAD)[before:]
    recorded = [(e.body["what"], e.body["downloaded_by"], e.body["request_id"], e.body["sha256"]) for e in entries]
    assert recorded == [("board.csv", VIEWER, None, hashlib.sha256(received["board.csv"]).hexdigest()),
                        ("board.csv", VIEWER, None, hashlib.sha256(received["board.csv due=3"]).hexdigest()),
                        ("report.html", VIEWER, PLANNED_ID, hashlib.sha256(received["report.html"]).hexdigest()),
                        ("evidence.json", VIEWER, PLANNED_ID, hashlib.sha256(received["evidence.json"]).hexdigest())]
    assert entries[1].body["detail"] == {"filters": {"due": "3"}} and all(e.body["downloaded_at"] for e in entries)


def test_a_restart_keeps_the_browser_signed_in(site: ConsoleSite, browser) -> None:
    """Last: it stops the server and starts another on the same port."""
    sign_in(browser, site, VIEWER)
    site.stop()
    with pytest.raises(requests.ConnectionError):  # really down: nothing answers on the port
        requests.get(site.base + "/console/sign-in", timeout=5)
    site.start()
    visit(browser, site, "/console/board")
    assert browser.current_url == site.base + "/console/board"  # not sent to sign in
    assert browser.find_element(By.ID, "who").text == VIEWER
    assert board_rows(browser)[0] == NEEDLE  # the board itself, deadline first
