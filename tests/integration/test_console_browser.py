"""The console (issue 33) in a real browser: Debian's Chromium through chromium-driver (Selenium),
against ``piitracer serve``'s app on 127.0.0.1, on the demo's workspace.

One demo build for the module (``piitracer demo --no-attest --no-close`` in a child process: its
own Spark and warehouse, so the suite's shared warehouse and test_demo's namespaces stay
untouched), one server, one browser. The demo leaves its request awaiting three person steps; the
module adds an overdue request, names the console's users in the demo's ``piitracer.yaml`` and
gives them credentials (tokens and keys, made with the demo's keys). Tests run in file order: the
owner attests the Kafka topic through the form, the two steps without an owner in the catalog are
attested with ``piitracer attest`` by an owner with their own token, then verify and close run and
the board shows the closed request and its certificate.
Every page served is searched for the subjects' values. The board and a request page are saved
as screenshots for the docs (docs/assets/console-board.png, console-request.png) when
PIITRACER_SCREENSHOTS=1 (a normal run must not write into the repository)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests
import uvicorn

import piitracer
from piitracer.api import demo_audit_key, demo_keys, demo_master_key, demo_signing_key, request_store
from piitracer.audit import AuditLog, load_audit_key
from piitracer.console.app import ConsoleConfig, create_server
from piitracer.ingest.openlineage.received import ReceivedEvents
from piitracer.crypto.envelope import load_master_key
from piitracer.demo import SUBJECT_USER_ID
from piitracer.model.audit import EntryKind
from piitracer.serve.app import create_app

from chromium import CHROMIUM, DRIVER, chromium
pytestmark = pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="needs Debian's chromium and chromium-driver "
                                "(scripts/setup.sh installs them)")
from selenium.common.exceptions import WebDriverException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from paths import REPO  # noqa: E402
ASSETS = REPO / "docs" / "assets"
OWNER = "streaming-team"  # the catalog's owner of stream.payments_cdc (a manual step in the demo's plan)
OTHER_OWNER = "payments-platform"  # owns datasets, none of them a person step of the demo's plan
VIEWER = "privacy-office"
OVERDUE_ID = "late-0001"
# The overdue request's subjects: values shaped like what a person's data looks like.
OVERDUE_VALUES = ("7712093", "ABCPE1234F", "asha.rao@example.in")
SUBJECT_VALUES = (str(SUBJECT_USER_ID), *OVERDUE_VALUES)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Site:
    """The running console: its address, the demo folder and the users' tokens; every page
    fetched through :meth:`fetch` or the browser is kept to be searched for subject values."""

    def __init__(self, base: str, folder: Path, tokens: dict[str, str]) -> None:
        self.base, self.folder, self.tokens = base, folder, tokens
        self.pages: dict[str, str] = {}

    def keep(self, url: str, text: str) -> str:
        self.pages[url] = text
        return text

    def signed_in(self, name: str) -> requests.Session:
        """An HTTP session signed in as ``name`` (through the sign-in form and its CSRF pair)."""
        session = requests.Session()
        form = session.get(f"{self.base}/console/sign-in")
        answer = session.post(f"{self.base}/console/sign-in", data={"token": self.tokens[name], "csrf": csrf_of(form.text)})
        assert answer.status_code == 200, answer.text[:300]
        return session

    def audit_entries(self, kind: EntryKind) -> list:
        key = load_audit_key(key_file=demo_audit_key(self.folder))
        with AuditLog(self.folder / ".piitracer" / "audit.sqlite", key) as log:
            return [e for e in log.entries() if e.kind is kind]


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("console") / "demo"
    built = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "demo", "--dir", str(folder), "--rows", "300",
                            "--no-attest", "--no-close"], capture_output=True, text=True, timeout=1500)
    assert built.returncode == 1, built.stderr[-3000:]  # 1: person steps still open (verify exits 1)
    workspace_file = folder / "piitracer.yaml"
    text = re.sub(r"(?m)^owners: .*$", "", workspace_file.read_text())  # the demo's owners: this module's instead
    workspace_file.write_text(text + f"\nowners: [{OWNER}, {OTHER_OWNER}]\nviewers: [{VIEWER}]\n")
    workspace = piitracer.load_workspace(folder)
    with piitracer.open(workspace, demo_keys(folder)) as session:  # each person's credential, with the demo's keys
        tokens = {name: session.add_person(name).token for name in (OWNER, OTHER_OWNER, VIEWER)}
    master = load_master_key(demo_master_key(folder))
    received = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(days=45)
    with request_store(workspace, master) as store:  # queued 45 days ago, never planned: overdue
        store.add(OVERDUE_ID, received, received + workspace.config.policy.deadline, ["prod.payments.user_id"],
                  list(OVERDUE_VALUES))
    config = ConsoleConfig(workspace, audit_key=load_audit_key(key_file=demo_audit_key(folder)), master=master,
                           signing_key_path=demo_signing_key(folder)[0])  # made by the demo once it completes
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_server(config, create_app(ReceivedEvents(folder))), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield Site(f"http://127.0.0.1:{port}", folder, tokens)
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with chromium() as driver:
        yield driver


def visit(browser, site: Site, path: str) -> str:
    browser.get(site.base + path)
    return site.keep(browser.current_url, browser.page_source)


def click(browser, site: Site, element) -> None:
    """Click and wait for the next page (a click returns before the browser navigates)."""
    page = browser.find_element(By.TAG_NAME, "html")
    element.click()
    WebDriverWait(browser, 60).until(lambda _: gone(page))
    WebDriverWait(browser, 60).until(lambda driver: driver.execute_script("return document.readyState") == "complete")
    site.keep(browser.current_url, browser.page_source)


def gone(element) -> bool:
    """Whether the page holding ``element`` was replaced. chromedriver answers a node of a page
    being replaced either as stale or, at times, with "Node with given id does not belong to the
    document" (a plain WebDriverException that ``staleness_of`` does not catch): both mean gone."""
    try:
        element.is_enabled()
    except WebDriverException:  # StaleElementReferenceException included
        return True
    return False


def sign_in(browser, site: Site, token: str) -> None:
    browser.delete_all_cookies()
    visit(browser, site, "/console/sign-in")
    browser.find_element(By.ID, "token").send_keys(token)
    click(browser, site, browser.find_element(By.ID, "sign-in"))


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


def demo_request_id(site: Site) -> str:
    with request_store(piitracer.load_workspace(site.folder)) as store:
        return next(r.request_id for r in store.all() if r.request_id.startswith("demo-"))


def test_everything_but_sign_in_needs_a_token(site: Site) -> None:
    for path in ("/console/board", f"/console/requests/{OVERDUE_ID}", f"/console/owners/{OWNER}"):
        answer = requests.get(site.base + path, allow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == "/console/sign-in", path
    sign_in_page = requests.get(site.base + "/console/sign-in")
    assert sign_in_page.status_code == 200 and 'name="token"' in sign_in_page.text
    csp = sign_in_page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "style-src 'self'" in csp and "script-src" not in csp
    cookie = sign_in_page.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")


def test_the_viewer_signs_in_and_the_board_lists_the_demo_request_with_its_deadline(site: Site, browser) -> None:
    sign_in(browser, site, site.tokens[VIEWER])
    assert browser.current_url.endswith("/console/board")
    assert browser.find_element(By.ID, "who").text == VIEWER
    request_id = demo_request_id(site)
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-request="{request_id}"]')
    with request_store(piitracer.load_workspace(site.folder)) as store:
        deadline = store.get(request_id).deadline_at
    assert row.find_element(By.CSS_SELECTOR, "td.deadline").text == f"{deadline:%Y-%m-%d}"
    assert "awaiting attestation" in row.text and "OVERDUE" not in row.text
    cookie = browser.get_cookie("ptc_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and not cookie["secure"]  # plain http on loopback
    screenshot(browser, "console-board.png")


def test_an_overdue_request_is_flagged_and_the_filter_keeps_only_overdue_ones(site: Site, browser) -> None:
    visit(browser, site, "/console/board")
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-request="{OVERDUE_ID}"]')
    assert row.find_element(By.CSS_SELECTOR, ".overdue").text == "OVERDUE" and "queued" in row.text
    visit(browser, site, "/console/board?overdue=1")
    shown = [r.get_attribute("data-request") for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-request]")]
    assert shown == [OVERDUE_ID]
    visit(browser, site, "/console/board?state=awaiting_attestation")
    shown = [r.get_attribute("data-request") for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-request]")]
    assert shown == [demo_request_id(site)]


def test_a_wrong_token_is_refused(site: Site, browser) -> None:
    tampered = site.tokens[OWNER][:-4] + ("AAAA" if not site.tokens[OWNER].endswith("AAAA") else "BBBB")
    sign_in(browser, site, tampered)
    assert browser.current_url.endswith("/console/sign-in")
    assert browser.find_element(By.ID, "error").text == "unknown or wrong token"
    assert browser.get_cookie("ptc_session") is None
    answer = requests.Session()
    form = answer.get(f"{site.base}/console/sign-in")
    refused = answer.post(f"{site.base}/console/sign-in", data={"token": "ptc.0.x", "csrf": csrf_of(form.text)})
    assert refused.status_code == 401 and "ptc_session" not in answer.cookies


def test_the_request_page_shows_plan_diagram_open_steps_and_audit_trail(site: Site, browser) -> None:
    sign_in(browser, site, site.tokens[VIEWER])
    request_id = demo_request_id(site)
    visit(browser, site, f"/console/requests/{request_id}")
    open_steps = {row.get_attribute("data-step"): row.text for row in browser.find_elements(By.CSS_SELECTOR, "#open-steps tr[data-step]")}
    assert len(open_steps) == 3
    assert any("stream.payments_cdc" in text and "streaming-team" in text for text in open_steps.values())
    assert not browser.find_elements(By.CSS_SELECTOR, "form.attest")  # a viewer reads only
    plan = browser.find_element(By.ID, "plan").text
    assert "prod.payments" in plan and "user_id" in plan
    svg = browser.find_element(By.CSS_SELECTOR, "#diagram svg")
    assert "prod.payments" in svg.get_attribute("innerHTML")
    audit = whole_audit_trail(browser, site, request_id)
    assert "planned" in audit and "verification" in audit and "attested by" not in audit
    visit(browser, site, f"/console/requests/{request_id}")
    assert browser.find_elements(By.ID, "no-certificate")
    verification = browser.find_element(By.ID, "verification").text
    assert "prod.payments" in verification and "erased" in verification
    screenshot(browser, "console-request.png", height=1800)


def whole_audit_trail(browser, site: Site, request_id: str) -> str:
    """The request page's audit trail, every page of it (the page shows 25 entries at a time)."""
    texts, number = [], 1
    while True:
        visit(browser, site, f"/console/requests/{request_id}?audit={number}")
        texts.append(browser.find_element(By.ID, "audit").text)
        caption = browser.find_element(By.CSS_SELECTOR, "#audit caption").text  # "Audit entries F to L of N"
        last, total = (int(word) for word in caption.split()[-3::2])
        if last >= total:
            return "\n".join(texts)
        number += 1


def test_a_forged_form_without_the_csrf_token_is_refused(site: Site) -> None:
    owner = site.signed_in(OWNER)
    request_id = demo_request_id(site)
    page = owner.get(f"{site.base}/console/requests/{request_id}").text
    step = re.search(r'name="step_id" value="([^"]+)"', page).group(1)
    before = len(site.audit_entries(EntryKind.ATTESTATION))
    for forged in ({}, {"csrf": "not-the-token"}):
        answer = owner.post(f"{site.base}/console/requests/{request_id}/attest",
                            data={"step_id": step, "evidence_text": "forged", **forged}, allow_redirects=False)
        assert answer.status_code == 403 and "CSRF" in answer.text
    sign_out = owner.post(f"{site.base}/console/sign-out", data={}, allow_redirects=False)
    assert sign_out.status_code == 403
    assert len(site.audit_entries(EntryKind.ATTESTATION)) == before


def test_an_owner_attests_only_the_steps_of_datasets_they_own(site: Site) -> None:
    request_id = demo_request_id(site)
    owner = site.signed_in(OWNER)
    page = owner.get(f"{site.base}/console/requests/{request_id}").text
    mine = re.findall(r'name="step_id" value="([^"]+)"', page)
    assert len(mine) == 1  # of three open steps, only the Kafka topic is streaming-team's
    open_rows = re.findall(r'<table id="open-steps">(.*?)</table>', page, re.S)[0]
    others = sorted(set(re.findall(r'tr data-step="([^"]+)"', open_rows)) - set(mine))
    assert len(others) == 2
    before = len(site.audit_entries(EntryKind.ATTESTATION))
    answer = owner.post(f"{site.base}/console/requests/{request_id}/attest",
                        data={"step_id": others[0], "evidence_text": "not mine", "csrf": csrf_of(page)})
    assert answer.status_code == 403 and "datasets they own" in answer.text
    viewer = site.signed_in(VIEWER)
    viewer_page = viewer.get(f"{site.base}/console/requests/{request_id}").text
    answer = viewer.post(f"{site.base}/console/requests/{request_id}/attest",
                         data={"step_id": mine[0], "evidence_text": "a viewer", "csrf": csrf_of(viewer_page)})
    assert answer.status_code == 403 and "viewer" in answer.text
    other = site.signed_in(OTHER_OWNER)
    answer = other.post(f"{site.base}/console/requests/{request_id}/attest",
                        data={"step_id": mine[0], "evidence_text": "not theirs",
                              "csrf": csrf_of(other.get(f"{site.base}/console/requests/{request_id}").text)})
    assert answer.status_code == 403
    assert len(site.audit_entries(EntryKind.ATTESTATION)) == before


def test_an_owner_attests_a_step_through_the_form(site: Site, browser) -> None:
    request_id = demo_request_id(site)
    sign_in(browser, site, site.tokens[OWNER])
    assert browser.current_url.endswith(f"/console/owners/{OWNER}")  # an owner lands on their waiting steps
    waiting = browser.find_element(By.ID, "waiting").text
    assert request_id in waiting and "stream.payments_cdc" in waiting
    click(browser, site, browser.find_element(By.LINK_TEXT, request_id))
    form = browser.find_element(By.CSS_SELECTOR, "form.attest")
    step = form.find_element(By.NAME, "step_id").get_attribute("value")
    evidence = "JIRA STREAM-4411: topic payments-cdc compacted, offsets before 2026-11-26 deleted"
    form.find_element(By.NAME, "evidence_text").send_keys(evidence)
    click(browser, site, form.find_element(By.CSS_SELECTOR, "button.attest-button"))
    assert browser.find_element(By.ID, "notice").text == f"step {step} attested as {OWNER}"
    attested = browser.find_element(By.CSS_SELECTOR, f'#attested-steps tr[data-step="{step}"]').text
    assert "attested" in attested and OWNER in attested
    assert step not in [r.get_attribute("data-step") for r in browser.find_elements(By.CSS_SELECTOR, "#open-steps tr[data-step]")]
    assert f"attested by {OWNER}" in whole_audit_trail(browser, site, request_id)
    (entry,) = [e for e in site.audit_entries(EntryKind.ATTESTATION) if e.body["step_id"] == step]
    assert entry.body["attested_by"] == OWNER  # from the token: the form has no name field
    assert entry.body["evidence_sha256"] == hashlib.sha256(evidence.encode()).hexdigest()
    assert entry.body["evidence_kind"] == "text" and entry.body["statement"] is None
    assert request_id in entry.request_ids and entry.subjects  # the subjects HMAC'd as the CLI's entry has them
    assert evidence not in json.dumps(entry.body)


def test_owners_attest_with_the_cli_and_the_entries_have_the_consoles_shape(site: Site, tmp_path: Path) -> None:
    """The two steps whose datasets have no owner in the catalog: ``piitracer attest`` by an owner
    with their own token, the same signed entry as the console's."""
    request_id = demo_request_id(site)
    page = site.signed_in(VIEWER).get(f"{site.base}/console/requests/{request_id}").text
    open_ids = re.findall(r'<table id="open-steps">(.*?)</table>', page, re.S)[0]
    left = sorted(set(re.findall(r'data-step="([^"]+)"', open_ids)))
    assert len(left) == 2
    env = {**os.environ, "PIITRACER_AUDIT_KEY_FILE": str(demo_audit_key(site.folder)),
           "PIITRACER_MASTER_KEY_FILE": str(demo_master_key(site.folder))}
    token = tmp_path / "owner.token"
    token.write_text(site.tokens[OTHER_OWNER])
    for step in left:
        done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "--workspace", str(site.folder), "attest",
                               str(site.folder / "plan.json"), "--step", step, "--token-file", str(token),
                               "--evidence", "runbook RB-12 done"], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
    entries = site.audit_entries(EntryKind.ATTESTATION)
    console_entry = next(e for e in entries if e.body["attested_by"] == OWNER)
    for entry in entries:
        assert set(entry.body) == set(console_entry.body) and entry.request_ids == console_entry.request_ids
        assert [s.hmac for s in entry.subjects] == [s.hmac for s in console_entry.subjects]


def test_after_verify_and_close_the_board_shows_the_closed_request_and_its_certificate(site: Site, browser) -> None:
    request_id = demo_request_id(site)
    env = {**os.environ, "PIITRACER_AUDIT_KEY_FILE": str(demo_audit_key(site.folder)),
           "PIITRACER_MASTER_KEY_FILE": str(demo_master_key(site.folder))}
    for command in (["verify", str(site.folder / "plan.json")], ["requests", "close", request_id, "--now", "console test"]):
        done = subprocess.run([sys.executable, "-m", "piitracer.cli.main", "--workspace", str(site.folder), *command],
                              capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    sign_in(browser, site, site.tokens[VIEWER])
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-request="{request_id}"]')
    assert "closed" in row.text
    visit(browser, site, f"/console/requests/{request_id}")
    assert browser.find_element(By.ID, "request-state").text == "closed"
    assert browser.find_elements(By.ID, "no-open-steps")
    link = browser.find_element(By.ID, "certificate").get_attribute("href")
    assert "piitracer audit check-certificate" in browser.find_element(By.ID, "check-command").text
    viewer = site.signed_in(VIEWER)
    answer = viewer.get(link)
    assert answer.status_code == 200 and "attachment" in answer.headers["content-disposition"], re.sub(r"<[^>]+>", " ", answer.text)[-800:]
    site.keep(link, answer.text)
    certificate = site.folder / "certificate-console.json"
    certificate.write_text(answer.text)
    public_key = site.folder / "signing-key.pub"  # as the page says: the key downloaded beside the certificate
    public_key.write_bytes(viewer.get(browser.find_element(By.ID, "public-key").get_attribute("href")).content)
    document, problem = piitracer.api.check_certificate(certificate, public_key)
    assert problem is None and document["certificate"]["request_id"] == request_id
    assert public_key.read_bytes() == (site.folder / ".piitracer" / "demo-signing.key.pub").read_bytes()


def test_demo_serve_gives_a_viewer_token_that_opens_the_closed_request_and_its_certificate(site: Site, browser) -> None:
    """What ``piitracer demo --serve`` prints: a new privacy-office token (the old one is replaced)."""
    from piitracer.console.demo import demo_console

    config, token = demo_console(site.folder)
    assert config.signing_key_path == demo_signing_key(site.folder)[0]
    site.tokens[VIEWER] = token
    sign_in(browser, site, token)
    request_id = demo_request_id(site)
    row = browser.find_element(By.CSS_SELECTOR, f'tr[data-request="{request_id}"]')
    assert "closed" in row.text
    click(browser, site, row.find_element(By.LINK_TEXT, request_id))
    assert browser.find_element(By.ID, "certificate").text.startswith("Download the signed erasure certificate")


def test_no_served_page_shows_a_subject_value(site: Site) -> None:
    viewer, owner = site.signed_in(VIEWER), site.signed_in(OWNER)
    paths = ["/console/board", "/console/board?overdue=1", f"/console/owners/{OWNER}", f"/console/requests/{OVERDUE_ID}",
             f"/console/requests/{demo_request_id(site)}", "/console/sign-in"]
    for path in paths:
        for who in (viewer, owner):
            answer = who.get(site.base + path)
            site.keep(f"{path} ({'viewer' if who is viewer else 'owner'})", answer.text)
    assert len(site.pages) >= 12  # and every page the tests before saw
    leaks = sorted({(url, value) for url, text in site.pages.items() for value in SUBJECT_VALUES if value in text})
    assert leaks == []


def test_sign_in_is_rate_limited(site: Site) -> None:
    """Last: it locks 127.0.0.1 out of signing in for the limiter's window."""
    session = requests.Session()
    statuses = []
    for _ in range(7):
        form = session.get(f"{site.base}/console/sign-in")
        statuses.append(session.post(f"{site.base}/console/sign-in",
                                     data={"token": "ptc.guess.guess", "csrf": csrf_of(form.text)}).status_code)
    assert statuses[-1] == 429 and 429 in statuses and statuses[0] == 401
    form = session.get(f"{site.base}/console/sign-in")
    right = session.post(f"{site.base}/console/sign-in", data={"token": site.tokens[VIEWER], "csrf": csrf_of(form.text)})
    assert right.status_code == 429  # even the right token waits: guessing cannot continue meanwhile
