"""The web console in headless Chromium on the local stack: a person logs in with a token, sees the
package and its log health, clears a review queue of 50 candidates with the keyboard (keys counted),
searches and forgets; a token without memory:review sees the queue refused with the scope named
(beside the reviewer's positive control); a cross-site form POST, and any request without the bearer
header, is 401 and changes nothing (the CSRF defence). Screenshots go to ACX_CONSOLE_SCREENSHOTS (a
temporary directory unless set) and are checked to be non-empty PNGs.

Chromium and the ``playwright`` package are needed: without them the test skips, except under CI
(``CI`` set), where it fails (.ci/run installs both).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.factories import bundle, note
from tests.http import send_json

pytestmark = pytest.mark.e2e

TENANT = "console-e2e"
PKG = "team-notes"
CANDIDATES = 50
WRITER = {"sub": "agent-1", "agent": "bot-1"}
WRITE_SCOPES = ("memory:write", "memory:read", "log:read")
READ_ONLY = ("memory:read", "log:read")  # no memory:review: the queue must be refused
VIEWPORT = {"width": 1280, "height": 800}
PNG = b"\x89PNG\r\n\x1a\n"


def _chromium() -> str:
    """The Chromium binary and an importable playwright, or skip (fail under CI) naming what is missing."""
    exe = os.environ.get("ACX_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    missing = []
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the python package playwright (pip install -e '.[dev]')")
    if not exe:
        missing.append("a chromium binary (apt-get install chromium, or set ACX_CHROMIUM)")
    if missing:
        reason = "web console browser test needs " + " and ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set: .ci/run installs them)")
        pytest.skip(reason)
    assert exe is not None
    return exe


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    exe = _chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("ACX_CONSOLE_SCREENSHOTS")
    path = Path(where) if where else tmp_path_factory.mktemp("console-shots")
    path.mkdir(parents=True, exist_ok=True)
    return path


def api(stack: Any, method: str, path: str, token: str, body: Any = None) -> tuple[int, Any]:
    return send_json(stack.endpoint + path, method, token=token, body=body, timeout=60)


def writer_token(stack: Any) -> str:
    return stack.issuer.issue(TENANT, WRITE_SCOPES, sub=WRITER["sub"], agent=WRITER["agent"])


def candidate(i: int) -> dict[str, Any]:
    words = [
        "lantern",
        "harbor",
        "quartz",
        "meadow",
        "falcon",
        "ember",
        "glacier",
        "orchid",
        "summit",
        "cobalt",
    ]
    text = f"Candidate {i} {words[i % 10]} {words[(i * 3 + 1) % 10]} note number {i} for review"
    return note(f"cand-{i:03d}", text, tags=["console"])


@pytest.fixture(scope="module")
def seeded(local_stack: Any) -> dict[str, Any]:
    """Two beliefs (written before review is required), then 50 candidates from an agent."""
    writer = writer_token(local_stack)
    beliefs = [
        note("belief-platypus", "Platypus deploys need the walrus flag set before rollout"),
        note("belief-tangerine", "Tangerine cache keys expire after one hour in staging"),
    ]
    status, body = api(local_stack, "POST", f"/v1/packages/{PKG}/bundles", writer, bundle(beliefs))
    assert status == 201, body
    admin = local_stack.issuer.issue(TENANT, ("admin",), sub="ops")
    status, body = api(local_stack, "PUT", f"/v1/packages/{PKG}/policy", admin, {"review": "required"})
    assert status == 200 and body["review"] == "required", body
    records = [candidate(i) for i in range(CANDIDATES)]
    status, body = api(local_stack, "POST", f"/v1/packages/{PKG}/bundles", writer, bundle(records))
    assert status == 201, body
    reviewer = local_stack.issuer.issue(TENANT, ("memory:review", "memory:read"), sub="alice")
    status, queue = api(local_stack, "GET", f"/v1/packages/{PKG}/review?limit=200", reviewer)
    assert status == 200 and len(queue["items"]) == CANDIDATES, queue
    return {"beliefs": beliefs, "candidates": records}


def shoot(page: Any, shots: Path, name: str) -> Path:
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


def login_with_pasted_token(page: Any, stack: Any, token: str) -> None:
    page.goto(stack.endpoint + "/console")
    page.get_by_label("Bearer token").fill(token)
    page.get_by_role("button", name="Use this token").click()


def assert_accessible_basics(page: Any) -> None:
    """Every visible control has a name, keyboard focus is visible, and nothing scrolls sideways at
    1280x800 (a laptop screen)."""
    unnamed = page.evaluate(
        """() => Array.from(document.querySelectorAll("button, input, textarea, select, [tabindex]"))
            .filter((e) => e.offsetParent !== null && e.id !== "main")
            .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute("aria-label")
                           && !e.getAttribute("aria-labelledby") && !e.textContent.trim())
            .map((e) => e.id || e.tagName)"""
    )
    assert unnamed == []
    assert page.evaluate("() => document.documentElement.scrollWidth") <= VIEWPORT["width"]
    assert page.locator("main").count() == 1 and page.locator("nav").count() == 1
    page.locator("#main").focus()
    page.keyboard.press("Tab")  # the first control after the landmark: the packages' Refresh button
    focused = page.evaluate(
        "() => [document.activeElement.textContent, getComputedStyle(document.activeElement).outlineStyle]"
    )
    assert focused == ["Refresh", "solid"], focused


def queue_items(page: Any) -> int:
    return int(page.locator("#queue > li").count())


def test_console_review_search_forget_in_chromium(
    browser: Any, local_stack: Any, seeded: dict[str, Any], shots: Path
) -> None:
    stack = local_stack
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    response = page.goto(stack.endpoint + "/console")
    assert response is not None and response.status == 200
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["content-security-policy"].startswith("default-src 'self'")
    page.get_by_role("heading", name="Log in").wait_for()
    local_form = page.locator("#local-form")
    local_form.wait_for(state="visible")  # the local stack offers its dev token
    taken = [shoot(page, shots, "01-login")]

    # Log in as a reviewer through the local stack's button (a person, not the agent who wrote).
    page.get_by_label("Tenant").fill(TENANT)
    page.get_by_label("Person (sub)").fill("alice")
    page.get_by_role("button", name="Get a local token").click()
    page.get_by_role("heading", name="Packages").wait_for()
    page.locator("#pkg-name", has_text=PKG).wait_for()  # the tenant's one package opens by itself
    page.locator("#health-list dd.ok", has_text="ok").wait_for()
    health = page.locator("#health-list").inner_text()
    assert "last verification" in health and "witness" in health and "checkpoint" in health, health
    page.locator("#queue > li").nth(CANDIDATES - 1).wait_for()
    assert queue_items(page) == CANDIDATES
    assert page.locator("#review-state").inner_text().startswith(f"{CANDIDATES} candidate(s) to review")
    taken.append(shoot(page, shots, "02-package-health-queue"))
    assert_accessible_basics(page)

    # Clear the queue with the keyboard: j/k move, s skips, r rejects, a approves. Every key counted.
    keys: list[str] = []

    def press(key: str) -> None:
        keys.append(key)
        page.keyboard.press(key)

    started = time.monotonic()
    press("j")
    press("k")
    press("s")  # skip the first: the second is selected
    press("r")
    press("r")
    rejected = [seeded["candidates"][1]["id"], seeded["candidates"][2]["id"]]
    while len([k for k in keys if k in "ar"]) < CANDIDATES:
        press("a")
    page.locator("#review-state", has_text="The queue is clear").wait_for(timeout=120_000)
    deadline = time.monotonic() + 120
    while "saving" in page.locator("#review-state").inner_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    seconds = time.monotonic() - started
    assert "saving" not in page.locator("#review-state").inner_text()
    for box in ("#alert", "#review-alert"):  # no decision was refused
        assert page.locator(box).is_hidden(), page.locator(box).inner_text()
    decisions = sum(1 for k in keys if k in "ar")
    assert decisions == CANDIDATES and len(keys) == CANDIDATES + 3, keys
    taken.append(shoot(page, shots, "03-queue-clear"))
    print(
        f"\nconsole review throughput: {CANDIDATES} candidates cleared with {len(keys)} keystrokes "
        f"({decisions} decisions + {len(keys) - decisions} navigation/skip), 0 clicks, {seconds:.1f} s"
    )

    reviewer = stack.issuer.issue(TENANT, ("memory:review", "memory:read"), sub="alice")
    status, queue = api(stack, "GET", f"/v1/packages/{PKG}/review", reviewer)
    assert status == 200 and queue["items"] == [], queue
    for rid in rejected:  # a rejection forgets
        status, _ = api(stack, "GET", f"/v1/packages/{PKG}/memories/{rid}?trust=any", reviewer)
        assert status == 404, rid
    status, got = api(stack, "GET", f"/v1/packages/{PKG}/memories/{seeded['candidates'][0]['id']}", reviewer)
    assert status == 200 and got["trust"] == "belief" and got["reviewer"], got

    # Search, then forget a belief (the confirm dialog is accepted).
    page.get_by_label("Search memories").fill("platypus walrus")
    page.get_by_label("Search memories").press("Enter")
    forget = page.get_by_role("button", name=f"Forget {seeded['beliefs'][0]['title']}")
    forget.wait_for()
    taken.append(shoot(page, shots, "04-search"))
    dialogs: list[str] = []

    def accept(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    forget.click()
    page.locator("#status", has_text="Forgot").wait_for()
    assert dialogs and "cannot be undone" in dialogs[0]
    status, _ = api(stack, "GET", f"/v1/packages/{PKG}/memories/{seeded['beliefs'][0]['id']}", reviewer)
    assert status == 404
    taken.append(shoot(page, shots, "05-forgotten"))

    # Negative evaluation beside the positive control above: a token without memory:review.
    page.get_by_role("button", name="Log out").click()
    login_with_pasted_token(page, stack, stack.issuer.issue(TENANT, READ_ONLY, sub="bob"))
    refused = page.locator("#review-state", has_text="lacks the scope memory:review")
    refused.wait_for()
    assert queue_items(page) == 0 and page.locator("#review-actions").is_hidden()
    page.locator("#health-list dd.ok").wait_for()  # what the token may read still shows
    taken.append(shoot(page, shots, "06-no-review-scope"))
    context.close()

    for path in taken:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 2000, path


def test_the_edit_form_supersedes_and_approves_and_shows_a_refused_edit(
    browser: Any, local_stack: Any, seeded: dict[str, Any], shots: Path
) -> None:
    """Edit-and-approve in the console: a correction the scrub gate blocks is refused in the form
    (nothing written, the candidate stays), the corrected one supersedes the candidate and is approved
    in one commit naming the reviewer."""
    stack = local_stack
    target = note("cand-edit", "Rotate the staging keys every ninety days")
    status, body = api(stack, "POST", f"/v1/packages/{PKG}/bundles", writer_token(stack), bundle([target]))
    assert status == 201, body
    reviewer = stack.issuer.issue(TENANT, ("memory:review", "memory:read", "log:read"), sub="alice")
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    login_with_pasted_token(page, stack, reviewer)
    item = page.locator("#queue > li", has_text="Rotate the staging keys")
    item.click()  # selects it
    page.keyboard.press("e")
    page.get_by_label("Title").wait_for(state="visible")
    assert page.get_by_label("Title").input_value() == target["title"]
    token = "ghp_" + "Q7x2Lm9Kp4Rt8Vw1Yz3Bn6Cd5Fg0Hj2Kl4Mn"
    page.get_by_label("Summary").fill(f"Use {token} to rotate them")
    page.get_by_role("button", name="Save and approve").click()
    page.locator("#edit-error", has_text="scrub gate").wait_for()
    shots_taken = [shoot(page, shots, "07-edit-refused-by-the-scrub-gate")]
    status, got = api(stack, "GET", f"/v1/packages/{PKG}/memories/{target['id']}?trust=any", reviewer)
    assert status == 200 and got["trust"] == "candidate", got  # denial: nothing was written
    page.get_by_label("Title").fill("Rotate the staging keys every thirty days")
    page.get_by_label("Summary").fill("The audit asks for thirty days, not ninety.")
    page.get_by_role("button", name="Save and approve").click()
    item.wait_for(state="detached")  # decided: it leaves the queue, and the editor closes
    assert page.locator("#edit-form").is_hidden() and page.locator("#edit-error").is_hidden()
    shots_taken.append(shoot(page, shots, "08-edited-and-approved"))
    status, got = api(stack, "GET", f"/v1/packages/{PKG}/memories/{target['id']}", reviewer)
    assert status == 200 and (got["record"]["title"], got["trust"], got["reviewer"]) == (
        "Rotate the staging keys every thirty days", "belief", f"{TENANT}/alice",
    ), got  # fmt: skip
    status, log = api(stack, "GET", f"/v1/packages/{PKG}/log/entries?limit=1000", reviewer)
    mine = [e for e in log["entries"] if e["actor"] == f"{TENANT}/alice"][-2:]
    assert [(e["operation"], e.get("decision")) for e in mine] == [("supersede", None), ("review", "approve")]
    context.close()
    for path in shots_taken:
        data = path.read_bytes()
        assert data.startswith(PNG) and len(data) > 2000, path


def test_cross_site_form_and_tokenless_requests_change_nothing(
    browser: Any, local_stack: Any, seeded: dict[str, Any], shots: Path
) -> None:
    """CSRF: the reviewer is logged in to the console in one tab; a page of another origin posts a
    review decision (a form: no header it can add) and the API answers 401; so does any request
    without the bearer header. The candidate stays a candidate (positive control: the same decision
    with the token is accepted)."""
    stack = local_stack
    writer = writer_token(stack)
    target = note("cand-csrf", "Cross site forged approval must never land in the log")
    status, body = api(stack, "POST", f"/v1/packages/{PKG}/bundles", writer, bundle([target]))
    assert status == 201, body
    reviewer = stack.issuer.issue(TENANT, ("memory:review", "memory:read", "log:read"), sub="alice")
    status, head_before = api(stack, "GET", f"/v1/packages/{PKG}/log", reviewer)
    assert status == 200

    context = browser.new_context(viewport=VIEWPORT)
    console = context.new_page()
    login_with_pasted_token(console, stack, reviewer)
    console.locator("#queue > li", has_text="Cross site forged").wait_for()

    # The attacker's site: another origin (Playwright serves it; nothing leaves the machine).
    evil = "http://attacker.example/"
    action = f"{stack.endpoint}/v1/packages/{PKG}/review/{target['id']}"
    page_html = (
        f'<!doctype html><form method="POST" action="{action}" enctype="text/plain">'
        '<input name=\'{"decision":"approve","x":"\' value=\'"}\'></form>'
    )
    context.route(evil, lambda route: route.fulfill(status=200, content_type="text/html", body=page_html))
    attacker = context.new_page()
    attacker.goto(evil)
    # A cross-origin script cannot add the header: the preflight gets no CORS grant.
    blocked = attacker.evaluate(
        """async (url) => {
            try { await fetch(url, {method: "POST", headers: {"Authorization": "Bearer x"},
                                    body: '{"decision":"approve"}'}); return "sent"; }
            catch (e) { return "blocked"; }
        }""",
        action,
    )
    with attacker.expect_navigation():
        attacker.evaluate("document.forms[0].submit()")
    answer = json.loads(attacker.locator("body").inner_text())
    assert answer["error"]["code"] == "unauthorized", answer
    shoot(attacker, shots, "09-cross-site-form-refused")
    assert blocked == "blocked"
    context.close()

    status, raw = send_json(action, "POST", body={"decision": "approve"})  # no Authorization header
    assert status == 401 and raw["error"]["code"] == "unauthorized"
    status, head_after = api(stack, "GET", f"/v1/packages/{PKG}/log", reviewer)
    assert head_after["size"] == head_before["size"]  # nothing was written
    status, queue = api(stack, "GET", f"/v1/packages/{PKG}/review", reviewer)
    assert [i["id"] for i in queue["items"]] == [target["id"]]
    status, decided = api(
        stack, "POST", f"/v1/packages/{PKG}/review/{target['id']}", reviewer, {"decision": "approve"}
    )
    assert status == 200 and decided["decision"] == "approve", decided  # positive control
