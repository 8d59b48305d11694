"""The review console in a real browser against the real `roundtable serve`.

A fresh git repository is set up as a governed workspace (agents, a task and
a policy, over the HTTP API as the orchestrator); `roundtable serve` serves it
with a tokens file; Debian's Chromium, driven by chromedriver through
Selenium, is the person. Agents and the orchestrator act over the HTTP API
with their bearer tokens, as they would in production.

Environment: RT_BIN (the roundtable binary), RT_CHROMIUM, RT_CHROMEDRIVER,
RT_BROWSER_ARTIFACTS (where screenshots go).
"""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

REPO = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
RT = os.environ.get("RT_BIN", str(TARGET / "debug" / "roundtable"))
CHROMIUM = os.environ.get("RT_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RT_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = Path(os.environ.get("RT_BROWSER_ARTIFACTS", TARGET / "browser-artifacts"))
WS = "demo"
WAIT = 20

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")

TOKENS = {
    "alice": ("alice-token-7Qm2x9LkVt3R", "human:alice"),
    "bob": ("bob-token-Zp4Nw8Yc1Hs6Df", "human:bob"),
    "ada": ("ada-token-Jk5Rb2Vx9Qe7Lm", "agent:ada"),
    "rob": ("rob-token-Wc3Ty6Pa8Nd1Gs", "agent:rob"),
    "cy": ("cy-token-Bn8Qd4Lw2Ze6Tk", "agent:cy"),
    "host": ("host-token-Hv7Ks2Mf5Xb9Ur", "orchestrator:host"),
}

POLICY = """version = 1

[approvals]
minimum = 1

[security_review]
risk = ["high", "critical"]

[human_approval]
risk = ["normal", "high", "critical"]

[people]
security = ["alice"]
approve = ["alice"]
revert = ["alice"]
"""

LIB_RS = "pub fn one() -> u32 {\n    1\n}\n"
KNOWN_LINE = 'pub fn greet() -> &\'static str { "Greetings from the browser test" }'
LIB_PATCH = (
    "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,5 @@\n pub fn one() -> u32 {\n     1\n }\n"
    "+\n+" + KNOWN_LINE + "\n"
)
NOTES_PATCH = "--- a/notes.md\n+++ b/notes.md\n@@ -1,3 +1,4 @@\n # Notes\n \n first line\n+second line\n"

XSS_SCRIPT = "<script>window.__xss=1</script>"
XSS_IMG = '<img src=x onerror="window.__xss=2">'
XSS_ANSI = "\x1b[31mred\x1b[0m"
XSS_RLO = "\u202eevil"


# ---------------------------------------------------------------- HTTP helpers


class Api:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
                token: str | None = None, raw: bytes | None = None) -> tuple[int, Any, Any]:
        """(status, body as JSON or text, headers: case-insensitive, as the server sent them)."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        h = {"Accept": "application/json", **(headers or {})}
        if data is not None and "Content-Type" not in h:
            h["Content-Type"] = "application/json"
        if token:
            h["Authorization"] = "Bearer " + token
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=h)
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                text = res.read().decode()
                return res.status, (json.loads(text) if text.strip().startswith(("{", "[")) else text), res.headers
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                parsed: Any = json.loads(text)
            except ValueError:
                parsed = text
            return e.code, parsed, e.headers

    def tool(self, who: str, name: str, args: dict[str, Any]) -> Any:
        status, body, _ = self.request("POST", f"/api/v1/workspaces/{WS}/tools/{name}", args,
                                       {"Idempotency-Key": str(uuid.uuid4())}, token=TOKENS[who][0])
        assert status == 200, (name, status, body)
        return body

    def get(self, who: str, path: str) -> Any:
        status, body, _ = self.request("GET", f"/api/v1/workspaces/{WS}" + path, token=TOKENS[who][0])
        assert status == 200, (path, status, body)
        return body


def requirement(status: dict[str, Any], rid: str) -> dict[str, Any]:
    reqs = status["validation"]["policy"]["requirements"]
    return next(r for r in reqs if r["id"] == rid)


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("repo")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    (root / "src").mkdir()
    (root / "src" / "lib.rs").write_text(LIB_RS)
    (root / "notes.md").write_text("# Notes\n\nfirst line\n")
    (root / "hello.txt").write_text("hello\n")
    subprocess.run(["git", "-C", str(root), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "init"], check=True, env=env)
    subprocess.run([RT, "init", "--root", str(root)], check=True, capture_output=True)
    tokens = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text("".join(f"{tok} {actor}\n" for tok, actor in TOKENS.values()))
    tokens.chmod(0o600)
    proc = subprocess.Popen(
        [RT, "serve", "--listen", "127.0.0.1:0", "--tokens", str(tokens), "--workspace", f"{WS}={root}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.wait(timeout=10)
        pytest.fail("roundtable serve printed nothing: " + (proc.stderr.read() if proc.stderr else ""))
    hello = json.loads(line)
    assert hello["workspaces"] == [WS] and hello["tokens"] == len(TOKENS), hello
    base = hello["url"].rstrip("/")
    api = Api(base)
    # Each landing is a commit on main with roundtable's trailers.
    api.tool("host", "workspace.configure", {"landing": {"mode": "git", "branch": "main"}})
    for agent, roles in [("ada", ["author"]), ("rob", ["reviewer"]), ("cy", ["author"])]:
        api.tool("host", "agent.register", {"agent_id": agent, "roles": roles})
    api.tool("host", "task.create", {"task_id": "t1", "title": "Console tests"})
    draft = api.tool("host", "policy.set", {"document": POLICY})
    version = draft.get("policy", draft).get("version")
    api.tool("host", "policy.activate", {"version": version})
    try:
        yield {"base": base, "api": api, "root": root}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
                "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions"]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # An explicit driver path: Selenium Manager never runs, nothing is downloaded.
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver: WebDriver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".png")
    driver.save_screenshot(str(path))
    return path


def wait_for(driver: WebDriver, what: Callable[[WebDriver], Any], message: str, timeout: float = WAIT) -> Any:
    def probe(d: WebDriver) -> Any:
        try:
            return what(d)
        except StaleElementReferenceException:
            return False
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(probe, message)


def css(driver: WebDriver | WebElement, selector: str) -> list[WebElement]:
    return driver.find_elements(By.CSS_SELECTOR, selector)


def sign_in(driver: WebDriver, base: str, who: str) -> None:
    driver.get(base + "/")
    driver.delete_all_cookies()
    driver.get(base + "/")
    field = wait_for(driver, lambda d: d.find_element(By.ID, "token"), "the sign-in form")
    label = driver.find_element(By.CSS_SELECTOR, "label[for=token]")
    assert label.text.strip() and field.get_attribute("type") == "password"
    field.send_keys(TOKENS[who][0])
    driver.find_element(By.ID, "sign-in").click()
    wait_for(driver, lambda d: TOKENS[who][1] in d.find_element(By.ID, "actor").text, f"signed in as {who}")


def console_problems(driver: WebDriver, base: str) -> list[str]:
    """Browser log entries that are a CSP violation, or a JS error from the console's own origin.
    A refused request (4xx) is logged by Chromium as a failed resource load: that is an answer the
    console shows, not an error of the console."""
    bad = []
    for entry in driver.get_log("browser"):
        msg = entry.get("message", "")
        if "Content Security Policy" in msg or "Refused to" in msg:
            bad.append(msg)
        elif entry.get("level") == "SEVERE" and msg.startswith(base + "/"):
            if re.search(r"Failed to load resource: the server responded with a status of 4\d\d", msg):
                continue
            bad.append(msg)
    return bad


def propose(api: Api, title: str, patch: str, resources: list[str], risk: str = "normal",
            summary: str = "A change from the browser tests.") -> str:
    """Agent ada claims `resources` (write), proposes `patch` and asks for review."""
    for r in resources:
        api.tool("ada", "claim.acquire", {"resource_id": r, "type": "write", "ttl_s": 3600})
    args: dict[str, Any] = {"task_id": "t1", "title": title, "summary_md": summary, "patch": patch, "risk": risk}
    if resources:
        args["affected_resources"] = resources
    out = api.tool("ada", "proposal.create", args)
    pid = out["proposal"]["id"]
    api.tool("ada", "proposal.request_review", {"proposal_id": pid})
    return pid


def status_of(api: Api, pid: str) -> dict[str, Any]:
    return api.tool("host", "proposal.status", {"proposal_id": pid})


def click(driver: WebDriver, selector: str) -> None:
    """Click the element `selector` finds, again if a live re-render replaced it meanwhile."""
    for _ in range(20):
        try:
            driver.find_element(By.CSS_SELECTOR, selector).click()
            return
        except StaleElementReferenceException:
            time.sleep(0.1)
    pytest.fail("could not click " + selector)


def land(api: Api, title: str, path: str) -> str:
    """A whole governed change over the API: ada proposes a new file, rob approves, alice approves as a
    person, the orchestrator applies it."""
    patch = (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
             "@@ -0,0 +1,1 @@\n+landed\n")
    pid = propose(api, title, patch, [f"file:{path}"])
    api.tool("rob", "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"})
    api.tool("alice", "human.approve", {"proposal_id": pid, "revision": 1, "note_md": "fine"})
    api.tool("host", "patch.apply", {"proposal_id": pid, "revision": 1})
    return pid


def requirement_row(driver: WebDriver, rid: str) -> WebElement:
    return driver.find_element(By.CSS_SELECTOR, f'#requirements tr[data-requirement="{rid}"]')


# ---------------------------------------------------------------- tests


def test_the_console_is_served_under_the_csp_with_no_inline_script_or_style(server: dict[str, Any]) -> None:
    api: Api = server["api"]
    status, html, headers = api.request("GET", "/")
    assert status == 200
    assert headers.get("Content-Security-Policy") == CSP
    assert headers.get("X-Content-Type-Options") == "nosniff"
    assert headers.get("Referrer-Policy") == "no-referrer"
    assert isinstance(html, str)
    scripts = re.findall(r"<script\b[^>]*>", html, re.I)
    assert scripts == ['<script type="module" src="/console/app.js">'], scripts
    assert re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.I | re.S) == [""], "inline script"
    assert not re.search(r"<style\b|\sstyle=|\son[a-z]+=", html, re.I), "inline style or handler"
    for path in ["/console/app.js", "/console/text.js", "/console/app.css"]:
        status, body, headers = api.request("GET", path)
        assert status == 200, path
        assert headers.get("Content-Security-Policy") == CSP, path
        assert headers.get("X-Content-Type-Options") == "nosniff", path
    # No module builds markup from strings.
    for js in (REPO / "roundtable-serve" / "console").rglob("*.js"):
        text = js.read_text()
        assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function", text), js


UNITS_JS = """
const done = arguments[arguments.length - 1];
Promise.all([import('/console/text.js'), import('/console/diff.js')]).then(([t, d]) => {
  const out = {};
  const el = document.createElement('div');
  t.setText(el, 'a\\x1bb\\x85c\\u202ed\\u2066e\\u200ef\\u061cg\\x7fh\\ti\\nj<b>k</b>');
  out.markers = [...el.querySelectorAll('span')].map((s) => [s.className, s.textContent]);
  out.elements = el.querySelectorAll('b').length;
  out.flagged = el.classList.contains('has-hidden') && Boolean(el.title);
  out.text = el.textContent;
  const m = document.createElement('pre');
  t.setText(m, 'x\\ty\\nz', { multiline: true });
  out.multiline = [m.textContent, m.querySelectorAll('span').length, m.classList.contains('has-hidden')];
  out.refused = [['onclick', 'x'], ['style', 'color:red'], ['href', 'javascript:alert(1)'], ['href', '//evil.example/']]
    .map(([k, v]) => { try { t.h('a', { [k]: v }); return 'allowed'; } catch (e) { return 'refused'; } });
  out.allowed = t.h('a', { href: '#/ws/demo/inbox' }).getAttribute('href');
  const text = 'let \\u00e9 = "x";';
  out.runs = d.runs(text, [[0, 3, 'kw'], [4, 5, 'ty'], [9, 12, 'str'], [2, 9, 'fn'], [100, 200, 'num'], [0, 1, 'bogus']]);
  out.plain = d.runs(text, null);
  done(out);
}).catch((e) => done({ error: String(e) }));
"""


def test_text_and_syntax_classes_units(server: dict[str, Any], browser: WebDriver) -> None:
    """text.js and diff.js, imported from the server into a page: every hidden character becomes a marker
    and markup stays text; byte-range classes split on UTF-8 boundaries, and ranges that are not (mid
    character, overlapping, past the end, an unknown class) are ignored rather than guessed."""
    browser.get(server["base"] + "/")
    browser.set_script_timeout(10)
    out = browser.execute_async_script(UNITS_JS)
    assert "error" not in out, out
    assert out["markers"] == [
        ["mark-ctl", "\u241b"], ["mark-ctl", "\u27e8U+0085\u27e9"], ["mark-bidi", "\u27e8U+202E\u27e9"],
        ["mark-bidi", "\u27e8U+2066\u27e9"], ["mark-bidi", "\u27e8U+200E\u27e9"], ["mark-bidi", "\u27e8U+061C\u27e9"],
        ["mark-ctl", "\u2421"], ["mark-ctl", "\u2409"], ["mark-ctl", "\u240a"]], out["markers"]
    assert out["elements"] == 0 and out["text"].endswith("j<b>k</b>")
    assert out["flagged"] is True
    assert out["multiline"] == ["x\ty\nz", 0, False]
    assert out["refused"] == ["refused"] * 4 and out["allowed"] == "#/ws/demo/inbox"
    assert out["runs"] == [["let", "kw"], [" \u00e9 = ", None], ['"x"', "str"], [";", None]], out["runs"]
    assert out["plain"] == [['let \u00e9 = "x";', None]]


def test_a_wrong_token_is_refused_with_the_code_and_no_session(server: dict[str, Any], browser: WebDriver) -> None:
    base = server["base"]
    browser.get(base + "/")
    browser.delete_all_cookies()
    browser.get(base + "/")
    field = wait_for(browser, lambda d: d.find_element(By.ID, "token"), "the sign-in form")
    field.send_keys("not-a-token-of-this-server")
    browser.find_element(By.ID, "sign-in").click()
    err = wait_for(browser, lambda d: css(d, "#signin-message .error"), "the refusal")[0]
    assert err.find_element(By.CSS_SELECTOR, ".error-code").text.strip()
    assert browser.get_cookie("rt_session") is None
    assert css(browser, "#actor") == []
    assert console_problems(browser, base) == []


def test_alice_reviews_live_approves_and_sees_it_land(server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    sign_in(browser, base, "alice")
    wait_for(browser, lambda d: d.find_element(By.ID, "inbox-list"), "the inbox")
    assert "/inbox" in browser.current_url
    # A marker that a reload would wipe: everything below must happen live.
    browser.execute_script("window.__noReload = 42;")
    wait_for(browser, lambda d: "Live" in d.find_element(By.ID, "live-status").text, "the event stream connected")

    pid = propose(api, "Greet from the library", LIB_PATCH, ["file:src/lib.rs"])
    wait_for(browser, lambda d: [i for i in css(d, f'#inbox-list li[data-proposal="{pid}"]')
                                 if "Greet from the library" in i.text],
             "the new proposal in alice's inbox without a reload")
    assert browser.execute_script("return window.__noReload") == 42
    screenshot(browser, "inbox")

    # A reviewer agent approves over the API; the human approval is still missing.
    api.tool("rob", "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"})
    # The inbox re-renders on the vote's event: click the fresh link.
    click(browser, f'#inbox-list li[data-proposal="{pid}"] a.item-title')
    wait_for(browser, lambda d: "Greet from the library" in d.find_element(By.ID, "prop-title").text, "the proposal page")
    # (The page re-renders on every event: each check reads the row afresh, inside the wait.)
    wait_for(browser, lambda d: "req-unsatisfied" in requirement_row(d, "human_approval").get_attribute("class")
             and "fail" in requirement_row(d, "human_approval").text, "the human approval requirement failing")
    wait_for(browser, lambda d: "req-satisfied" in requirement_row(d, "approvals").get_attribute("class"),
             "the approvals requirement passing (rob's vote)")
    # A revision without a note shows no placeholder text (the DOM turns a
    # null child of replaceChildren into the text "null").
    assert "null" not in browser.find_element(By.ID, "prop-summary").find_element(By.XPATH, "..").text.split()

    # The diff: the known added line, as an added line.
    added = wait_for(browser, lambda d: [e for e in css(d, "#files .line-add .code") if "Greetings from the browser test" in e.text],
                     "the added line in the diff")
    assert added[0].text == KNOWN_LINE
    # Syntax classes from the server became spans (a keyword in a Rust line).
    assert css(added[0], ".syn-kw"), "no keyword class on the Rust line"
    # Each hunk says which symbol it changes and which claim covers it (ada's claim on the file).
    head = css(browser, "#files .hunk-head")[0]
    assert head.find_element(By.CSS_SELECTOR, ".hunk-symbol").text == "symbol greet (function, added)"
    claim = head.find_element(By.CSS_SELECTOR, ".hunk-claim").text
    assert "file:src/lib.rs" in claim and "ada" in claim, claim
    # Side by side and back.
    browser.find_element(By.ID, "diff-mode").click()
    wait_for(browser, lambda d: css(d, "#files .row.split"), "the side-by-side diff")
    browser.find_element(By.ID, "diff-mode").click()
    wait_for(browser, lambda d: not css(d, "#files .row.split") and css(d, "#files .line-add"), "the unified diff")

    # `a` opens the approval reason box, focused.
    browser.find_element(By.TAG_NAME, "body").send_keys("a")
    focused = browser.switch_to.active_element
    assert focused.get_attribute("id") == "text-human", focused.get_attribute("id")
    focused.send_keys("Read the diff: it only adds a greeting.")
    browser.find_element(By.ID, "act-human-approve").click()
    wait_for(browser, lambda d: "req-satisfied" in requirement_row(d, "human_approval").get_attribute("class")
             and "pass" in requirement_row(d, "human_approval").text, "the human approval passing after alice approved")
    st = status_of(api, pid)
    assert requirement(st, "human_approval")["status"] == "satisfied" and st["can_land"], st
    screenshot(browser, "proposal")

    # The orchestrator lands it; the page follows without a reload.
    api.tool("host", "patch.apply", {"proposal_id": pid, "revision": 1})
    wait_for(browser, lambda d: "applied" in d.find_element(By.ID, "prop-status").text, "the proposal shown as applied")
    assert browser.execute_script("return window.__noReload") == 42
    assert KNOWN_LINE in (server["root"] / "src" / "lib.rs").read_text()
    screenshot(browser, "proposal-landed")
    assert console_problems(browser, base) == []


def test_bob_without_the_security_role_cannot_security_review_and_the_button_says_why(
        server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    pid = propose(api, "Risky change", NOTES_PATCH, ["file:notes.md"], risk="high")
    before = status_of(api, pid)
    assert requirement(before, "security_review")["status"] == "unsatisfied"

    sign_in(browser, base, "bob")
    browser.get(f"{base}/#/ws/{WS}/proposals/{pid}")
    wait_for(browser, lambda d: "Risky change" in d.find_element(By.ID, "prop-title").text, "the proposal page")
    wait_for(browser, lambda d: "req-unsatisfied" in requirement_row(d, "security_review").get_attribute("class"),
             "the security review requirement, failing")

    # Voting is for agents: the server does not offer vote.cast to a person, so the buttons are disabled
    # and say why, next to them.
    approve = wait_for(browser, lambda d: d.find_element(By.ID, "act-vote-approve") if
                       d.find_element(By.ID, "why-not-vote").get_attribute("hidden") is None else False,
                       "the vote action marked unavailable")
    assert not approve.is_enabled()
    why = browser.find_element(By.ID, "why-not-vote")
    assert why.is_displayed() and "vote.cast" in why.text and "human:bob" in why.text
    assert approve.get_attribute("aria-describedby") == "why-not-vote"

    # `c` (request changes or comment) opens the first reason box bob can use: not the vote's.
    browser.find_element(By.TAG_NAME, "body").send_keys("c")
    assert browser.switch_to.active_element.get_attribute("id") == "text-decision"
    browser.switch_to.active_element.send_keys("\ue00c")  # Escape leaves the field
    # The policy names alice, not bob, for security reviews: the page shows who can, bob's pass is refused by
    # the engine, and from then on the buttons are disabled and say why, in the engine's words.
    hint = browser.find_element(By.ID, "who-can-security").text
    assert "human:alice" in hint, hint
    assert "human:alice" in requirement_row(browser, "security_review").text
    browser.find_element(By.ID, "text-security").send_keys("Looks safe to me")
    browser.find_element(By.ID, "act-security-pass").click()
    err = wait_for(browser, lambda d: css(d, "#result-security .error"), "the engine's refusal")[0]
    assert err.find_element(By.CSS_SELECTOR, ".error-code").text == "forbidden"
    refusal = "human:bob does not hold the security role: the policy's [people] security lists human:alice"
    assert refusal in err.text
    why = wait_for(browser, lambda d: d.find_element(By.ID, "why-not-security") if
                   d.find_element(By.ID, "why-not-security").is_displayed() else False, "the reason beside the buttons")
    assert refusal in why.text and "human:bob" in why.text
    for verdict in ("pass", "fail"):
        button = browser.find_element(By.ID, f"act-security-{verdict}")
        assert not button.is_enabled()
        assert button.get_attribute("aria-describedby") == "why-not-security"

    # Nothing changed: same evidence, same requirement state.
    after = status_of(api, pid)
    assert requirement(after, "security_review") == requirement(before, "security_review")
    votes = api.tool("host", "vote.list", {"proposal_id": pid})["votes"]
    assert votes == []
    screenshot(browser, "bob-refused")
    assert console_problems(browser, base) == []
    # alice holds the role: the same review from her counts (so bob's refusal was the role, nothing else).
    api.tool("alice", "security.review", {"proposal_id": pid, "revision": 1, "verdict": "pass"})
    assert requirement(status_of(api, pid), "security_review")["status"] == "satisfied"


def test_agent_written_text_is_shown_as_text_with_hidden_characters_marked(
        server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    title = f"{XSS_SCRIPT} {XSS_IMG} {XSS_RLO}"
    summary = f"{XSS_SCRIPT}\n{XSS_IMG}\n{XSS_ANSI}\n{XSS_RLO}"
    line = f"{XSS_IMG} {XSS_ANSI} {XSS_RLO}"
    patch = ("diff --git a/docs/xss.md b/docs/xss.md\nnew file mode 100644\n--- /dev/null\n+++ b/docs/xss.md\n"
             f"@@ -0,0 +1,1 @@\n+{line}\n")
    pid = propose(api, title, patch, ["file:docs/xss.md"], summary=summary)

    sign_in(browser, base, "alice")
    # The inbox (newest first: the proposal just made heads it) and the list of proposals in review show
    # the title as text too.
    wait_for(browser, lambda d: [i for i in css(d, "#inbox-list li")[:1] if i.get_attribute("data-proposal") == pid
                                 and XSS_SCRIPT in i.text and XSS_IMG in i.text], "the proposal first in the inbox")
    wait_for(browser, lambda d: [a for a in css(d, "#open-proposals a") if XSS_SCRIPT in a.text], "the title in the list")
    assert css(browser, "img") == [] and browser.execute_script("return typeof window.__xss") == "undefined"
    browser.get(f"{base}/#/ws/{WS}/proposals/{pid}")
    heading = wait_for(browser, lambda d: d.find_element(By.ID, "prop-title") if
                       "window.__xss" in d.find_element(By.ID, "prop-title").text else False, "the title")
    wait_for(browser, lambda d: css(d, "#files .line-add"), "the diff")

    assert browser.execute_script("return typeof window.__xss") == "undefined"
    # No element came from the text: no img anywhere, the one script is the console's own module.
    assert css(browser, "img") == []
    scripts = browser.execute_script("return [...document.scripts].map(s => s.src)")
    assert scripts == [base + "/console/app.js"], scripts
    # The literal text is visible.
    assert XSS_SCRIPT in heading.text and XSS_IMG in heading.text
    summary_el = browser.find_element(By.ID, "prop-summary")
    assert XSS_SCRIPT in summary_el.text and XSS_IMG in summary_el.text and "[31mred" in summary_el.text
    # ESC and RLO are visible markers, and the elements holding them are flagged.
    assert [m.text for m in css(summary_el, ".mark-ctl")] == ["\u241b", "\u241b"]
    assert [m.text for m in css(summary_el, ".mark-bidi")] == ["\u27e8U+202E\u27e9"]
    assert [m.text for m in css(heading, ".mark-bidi")] == ["\u27e8U+202E\u27e9"]
    assert "has-hidden" in heading.get_attribute("class") and heading.get_attribute("title")
    # No raw ESC or RLO reached the page's text.
    body = browser.execute_script("return document.body.textContent")
    assert "\x1b" not in body and "\u202e" not in body
    # The diff line too.
    code = [c for c in css(browser, "#files .line-add .code") if "onerror" in c.text][0]
    assert XSS_IMG in code.text
    assert css(code, ".mark-ctl") and css(code, ".mark-bidi")
    screenshot(browser, "hostile-text")
    assert console_problems(browser, base) == []


def test_a_new_revision_arrives_live_with_the_interdiff_and_older_revisions_stay_readable(
        server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]

    def new_file(text: str) -> str:
        return ("diff --git a/docs/draft.md b/docs/draft.md\nnew file mode 100644\n--- /dev/null\n"
                f"+++ b/docs/draft.md\n@@ -0,0 +1,1 @@\n+{text}\n")

    pid = propose(api, "A draft", new_file("first draft"), ["file:docs/draft.md"])
    api.tool("rob", "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"})
    sign_in(browser, base, "alice")
    browser.get(f"{base}/#/ws/{WS}/proposals/{pid}")
    wait_for(browser, lambda d: "revision 1 of 1" in d.find_element(By.ID, "prop-meta").text, "revision 1")
    wait_for(browser, lambda d: [e for e in css(d, "#files .line-add .code") if e.text == "first draft"], "the first draft")
    assert "Only one revision" in browser.find_element(By.ID, "interdiff").text
    browser.execute_script("window.__noReload = 7;")

    # The author attaches a second revision: the page follows, rob's approval no longer counts for it.
    api.tool("ada", "proposal.attach_patch", {"proposal_id": pid, "expected_revision": 1, "patch": new_file("second draft"),
                                              "note_md": "Second draft: <i>rewritten</i>"})
    wait_for(browser, lambda d: "revision 2 of 2" in d.find_element(By.ID, "prop-meta").text, "revision 2, live")
    assert browser.execute_script("return window.__noReload") == 7
    wait_for(browser, lambda d: "Second draft: <i>rewritten</i>" in d.find_element(By.ID, "revision-note").text,
             "the author's note on revision 2, as text")
    wait_for(browser, lambda d: [e for e in css(d, "#files .line-add .code") if e.text == "second draft"], "the second draft")
    wait_for(browser, lambda d: "req-unsatisfied" in requirement_row(d, "approvals").get_attribute("class"),
             "the approval on revision 1 not counted for revision 2")
    # The interdiff, 1 to 2.
    inter = wait_for(browser, lambda d: d.find_element(By.ID, "interdiff") if css(d, "#interdiff .inter-added") else False,
                     "the interdiff")
    assert "+second draft" in inter.find_element(By.CSS_SELECTOR, ".inter-added").text
    assert "+first draft" in inter.find_element(By.CSS_SELECTOR, ".inter-removed").text
    # A check result arrives live, its output shown as text.
    api.tool("host", "test.record", {"proposal_id": pid, "revision": 2, "name": "unit", "status": "failed",
                                     "note_md": "FAILED test_draft\n<b>expected</b> 2 drafts"})
    outputs = wait_for(browser, lambda d: [(o.text, len(css(o, "b"))) for r in css(d, "#evidence tr")
                                           if "unit" in r.text and "failed" in r.text
                                           for o in css(r, "pre.check-output")], "the failed check and its output")
    assert outputs == [("FAILED test_draft\n<b>expected</b> 2 drafts", 0)], outputs
    # Revision 1 stays readable.
    Select(browser.find_element(By.ID, "diff-revision")).select_by_value("1")
    wait_for(browser, lambda d: [e for e in css(d, "#files .line-add .code") if e.text == "first draft"], "revision 1's diff")
    assert not [e for e in css(browser, "#files .line-add .code") if e.text == "second draft"]
    assert console_problems(browser, base) == []


class _AttackerPage(http.server.BaseHTTPRequestHandler):
    target = ""
    body = b""

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_forged_cross_site_post_changes_nothing(server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    pid = propose(api, "Target of a forgery", "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n",
                  ["file:hello.txt"])
    sign_in(browser, base, "alice")
    cookie = browser.get_cookie("rt_session")
    assert cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict", cookie

    tools_url = f"{base}/api/v1/workspaces/{WS}/tools/"
    forged = {
        "human.approve": {"proposal_id": pid, "revision": 1, "note_md": "forged"},
        "vote.cast": {"proposal_id": pid, "revision": 1, "vote": "approve"},
    }
    # A page on another port of 127.0.0.1: another origin, the same site, so the SameSite=Strict cookie
    # goes with its requests. Only the Origin and CSRF checks can stop them.
    page = "<!doctype html><title>attacker</title><script>\n" + "".join(
        f"fetch({json.dumps(tools_url + name)}, {{method: 'POST', mode: 'no-cors', credentials: 'include',"
        f" headers: {{'Content-Type': 'text/plain'}}, body: {json.dumps(json.dumps(args))}}})"
        ".catch(() => null).then(() => {{ window.__sent = (window.__sent || 0) + 1; }});\n"
        for name, args in forged.items()) + (
        f"fetch({json.dumps(tools_url + 'human.approve')}, {{method: 'POST', credentials: 'include',"
        f" headers: {{'Content-Type': 'application/json', 'X-CSRF-Token': 'guess', 'Idempotency-Key': 'k1'}},"
        f" body: {json.dumps(json.dumps(forged['human.approve']))}}})"
        ".catch(() => null).then(() => { window.__sent = (window.__sent || 0) + 1; });\n"
        "</script><form id=f method=POST enctype='text/plain' action=" + json.dumps(tools_url + "human.approve") + ">"
        "<input name='{\"proposal_id\":\"" + pid + "\",\"revision\":1,\"x\":\"' value='\"}'></form>")
    handler = type("Attacker", (_AttackerPage,), {"body": page.encode()})
    attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=attacker.serve_forever, daemon=True).start()
    try:
        evil = f"http://127.0.0.1:{attacker.server_address[1]}/"
        assert evil.rstrip("/") != base
        assert console_problems(browser, base) == []  # the console's own log, before the attacker's page
        browser.get(evil)
        wait_for(browser, lambda d: d.execute_script("return window.__sent") == 3, "the forged requests sent")
        browser.execute_script("document.getElementById('f').submit()")
        wait_for(browser, lambda d: not d.current_url.startswith(evil), "the forged form posted")
        browser.get_log("browser")  # the attacker page's blocked requests: not the console's
    finally:
        attacker.shutdown()
        attacker.server_close()

    # Nothing changed.
    st = status_of(api, pid)
    assert requirement(st, "human_approval")["status"] == "unsatisfied"
    assert requirement(st, "human_approval")["evidence"] == []
    assert api.tool("host", "vote.list", {"proposal_id": pid})["votes"] == []

    # The same request with alice's cookie but without X-CSRF-Token is 403, and so is one with the
    # right token from a foreign Origin; the right token from the console's origin goes through (so the
    # refusals above were the CSRF and Origin checks, not something else).
    jar = {"Cookie": f"rt_session={cookie['value']}", "Idempotency-Key": str(uuid.uuid4())}
    url = f"/api/v1/workspaces/{WS}/tools/human.approve"
    status, body, _ = api.request("POST", url, forged["human.approve"], jar)
    assert status == 403, (status, body)
    assert isinstance(body, dict) and body["error"]["code"], body
    status, session, _ = api.request("GET", "/api/v1/session", headers={"Cookie": jar["Cookie"]})
    assert status == 200 and session["actor"] == "human:alice"
    csrf = session["csrf"]
    status, body, _ = api.request("POST", url, forged["human.approve"],
                                  {**jar, "X-CSRF-Token": csrf, "Origin": evil.rstrip("/"),
                                   "Idempotency-Key": str(uuid.uuid4())})
    assert status == 403, (status, body)
    status, body, _ = api.request("POST", url, forged["human.approve"],
                                  {**jar, "X-CSRF-Token": "0" * len(csrf), "Idempotency-Key": str(uuid.uuid4())})
    assert status == 403, (status, body)
    assert requirement(status_of(api, pid), "human_approval")["evidence"] == []
    status, body, _ = api.request("POST", url, {**forged["human.approve"], "note_md": "approved in the console"},
                                  {**jar, "X-CSRF-Token": csrf, "Origin": base, "Idempotency-Key": str(uuid.uuid4())})
    assert status == 200, (status, body)
    assert requirement(status_of(api, pid), "human_approval")["status"] == "satisfied"
    browser.get(base + "/")
    assert console_problems(browser, base) == []


def test_a_large_change_loads_its_files_as_they_scroll_and_keys_move_between_them(
        server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    count = 240
    patch = "".join(
        f"diff --git a/gen/f{i:03}.txt b/gen/f{i:03}.txt\nnew file mode 100644\n--- /dev/null\n+++ b/gen/f{i:03}.txt\n"
        f"@@ -0,0 +1,3 @@\n+file {i}\n+second\n+third\n" for i in range(count))
    pid = propose(api, "Many files", patch, [])
    sign_in(browser, base, "alice")
    browser.get(f"{base}/#/ws/{WS}/proposals/{pid}")
    wait_for(browser, lambda d: css(d, "#files .file .hunk"), "the first file's hunks")
    time.sleep(0.5)
    shown = len(css(browser, "#files .file"))
    loaded = len(css(browser, "#files .file .hunk"))
    diff_requests = browser.execute_script(
        "return performance.getEntriesByType('resource').filter(e => e.name.includes('/diff?')).length")
    # The first screen asked for a page of files and the diffs of those near the viewport, not all of them.
    assert 0 < shown < count, shown
    assert 0 < loaded < shown and diff_requests < shown, (loaded, diff_requests, shown)
    assert browser.execute_script("return performance.getEntriesByName('roundtable:first-hunk').length") == 1

    # j moves to the next file and focuses it; n to the next hunk; ? opens the help, Escape closes it.
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j")
    first = browser.switch_to.active_element
    assert "file" in first.get_attribute("class") and first.get_attribute("data-path") == "gen/f000.txt"
    outline = browser.execute_script(
        "const s = getComputedStyle(document.activeElement); return [s.outlineStyle, parseFloat(s.outlineWidth)]")
    assert outline[0] != "none" and outline[1] >= 2, outline
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    assert browser.switch_to.active_element.get_attribute("data-path") == "gen/f001.txt"
    browser.find_element(By.TAG_NAME, "body").send_keys("k")
    assert browser.switch_to.active_element.get_attribute("data-path") == "gen/f000.txt"
    browser.find_element(By.TAG_NAME, "body").send_keys("n")
    assert "hunk" in browser.switch_to.active_element.get_attribute("class")
    browser.find_element(By.TAG_NAME, "body").send_keys("?")
    dialog = wait_for(browser, lambda d: css(d, "[role=dialog]"), "the help overlay")[0]
    assert "next / previous file" in dialog.text
    browser.switch_to.active_element.send_keys("\ue00c")  # Escape
    wait_for(browser, lambda d: not css(d, "[role=dialog]"), "the help overlay closed")

    # Scrolling to the end loads the rest, page by page.
    for _ in range(60):
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        if len(css(browser, "#files .file")) == count:
            break
        time.sleep(0.2)
    assert len(css(browser, "#files .file")) == count
    paths = [e.get_attribute("data-path") for e in css(browser, "#files .file")]
    assert paths == [f"gen/f{i:03}.txt" for i in range(count)], "files skipped or repeated across pages"
    wait_for(browser, lambda d: css(d, '#files .file[data-path="gen/f239.txt"] .hunk'), "the last file's hunks")

    # g i goes to the inbox.
    browser.find_element(By.TAG_NAME, "body").send_keys("g")
    browser.find_element(By.TAG_NAME, "body").send_keys("i")
    wait_for(browser, lambda d: d.current_url.endswith("/inbox"), "the inbox after g i")
    assert console_problems(browser, base) == []


def test_landing_and_claims_pages_and_text_contrast(server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    landed = land(api, "Landed for the landing page", "landed.txt")
    api.tool("ada", "claim.acquire", {"resource_id": "file:claimed.txt", "type": "write", "ttl_s": 3600})
    sign_in(browser, base, "alice")
    browser.get(f"{base}/#/ws/{WS}/landing")
    wait_for(browser, lambda d: css(d, f'#transactions li.tx a[href$="{landed}"]'), "the landed proposal's transaction")
    chain = wait_for(browser, lambda d: d.find_element(By.ID, "chain-state"), "the audit chain state")
    assert "intact" in chain.text
    # The landing log: the commit of the landed proposal, its trailers naming it.
    commit = wait_for(browser, lambda d: [c for c in css(d, "#landing-log li.commit") if landed in c.text],
                      "the landed commit with its trailers")[0]
    assert "Landed for the landing page" in commit.text and css(commit, "dl.trailers dt")
    # A transaction's details: its files.
    tx = browser.find_element(By.CSS_SELECTOR, f'#transactions li.tx:has(a[href$="{landed}"])')
    tx.find_element(By.CSS_SELECTOR, "button.btn-quiet").click()
    wait_for(browser, lambda d: "landed.txt" in tx.find_element(By.CSS_SELECTOR, ".tx-details").text, "the transaction's files")
    details = tx.find_element(By.CSS_SELECTOR, ".tx-details").text
    assert "Landed as commit" in details and "Roundtable-Proposal" in details and landed in details, details
    assert "Phases" in details, details
    # Rolling back is the orchestrator's: a person sees the button disabled with the reason beside it.
    rollback = css(browser, "#transactions button[id^=rollback-]")[0]
    assert not rollback.is_enabled()
    why = browser.find_element(By.ID, rollback.get_attribute("aria-describedby"))
    assert why.is_displayed() and "transaction.rollback" in why.text and "human:alice" in why.text
    screenshot(browser, "landing")
    wide = browser.execute_script(
        "return [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > window.innerWidth)"
        ".map((e) => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)).slice(0, 5)")
    assert wide == [], wide
    browser.get(f"{base}/#/ws/{WS}/claims")
    table = wait_for(browser, lambda d: css(d, "#claims table"), "the claims table")[0]
    assert "ada" in table.text and "file:claimed.txt" in table.text

    # Every text on a proposal page meets 4.5:1 against its background.
    pid = propose(api, "Contrast", NOTES_PATCH.replace("second line", "a third line"), [], risk="high")
    browser.get(f"{base}/#/ws/{WS}/proposals/{pid}")
    wait_for(browser, lambda d: css(d, "#files .hunk") and css(d, "#requirements"), "the proposal page")
    # The measure itself finds a low contrast (a probe, grey on white), then the page has none.
    browser.execute_script(
        "const p = document.createElement('p'); p.id = 'probe'; p.className = 'probe'; p.textContent = 'probe';"
        "p.style.color = '#aaaaaa'; document.getElementById('main').appendChild(p);")
    assert any(x.startswith("P.probe ") for x in browser.execute_script(CONTRAST_JS))
    browser.execute_script("document.getElementById('probe').remove()")
    low = browser.execute_script(CONTRAST_JS)
    assert low == [], low
    # Every control has a name: a label, an aria-label or its text.
    unnamed = browser.execute_script(
        "return [...document.querySelectorAll('input, select, textarea, button')].filter((el) => !("
        "  (el.id && document.querySelector('label[for=\"' + el.id + '\"]')) || el.getAttribute('aria-label') ||"
        "  (el.tagName === 'BUTTON' && el.textContent.trim()))).map((el) => el.outerHTML.slice(0, 80))")
    assert unnamed == [], unnamed
    # Usable at 1,280 px: nothing wider than the window.
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")

    # Signing out ends the session on the server too.
    cookie = browser.get_cookie("rt_session")
    assert cookie is not None
    browser.find_element(By.ID, "sign-out").click()
    wait_for(browser, lambda d: d.find_element(By.ID, "token"), "the sign-in form after signing out")
    status, _, _ = api.request("GET", "/api/v1/session", headers={"Cookie": f"rt_session={cookie['value']}"})
    assert status == 401
    assert console_problems(browser, base) == []


CONTRAST_JS = """
function rgb(s) { const m = s.match(/[\\d.]+/g); return m ? m.map(Number) : [0, 0, 0, 0]; }
function lum([r, g, b]) {
  const f = (c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
}
function bg(el) {
  for (let e = el; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length < 4 || c[3] > 0.5) return c;
  }
  return [255, 255, 255];
}
const low = [];
const seen = new Set();
for (const el of document.querySelectorAll('body *')) {
  if (!el.offsetParent && getComputedStyle(el).position !== 'fixed') continue;
  const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
  if (!own) continue;
  const fg = rgb(getComputedStyle(el).color);
  const b = bg(el);
  const [l1, l2] = [lum(fg), lum(b)].sort((x, y) => y - x);
  const ratio = (l1 + 0.05) / (l2 + 0.05);
  const key = el.tagName + '.' + el.className;
  if (ratio < 4.5 && !seen.has(key)) { seen.add(key); low.push(key + ' ' + ratio.toFixed(2)); }
}
return low;
"""


# ---------------------------------------------------------------- provenance: blame and undo (issue 36)


def create_patch(path: str, lines: list[str]) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{x}\n" for x in lines))


def replace_patch(path: str, old: list[str], new: list[str]) -> str:
    """The whole file replaced: git's blame and the undo read the commits' files, not this patch."""
    return (f"--- a/{path}\n+++ b/{path}\n@@ -1,{len(old)} +1,{len(new)} @@\n"
            + "".join(f"-{x}\n" for x in old) + "".join(f"+{x}\n" for x in new))


def land_by(api: Api, agent: str, title: str, patch: str, path: str) -> str:
    """`agent` claims `path`, proposes `patch`; rob approves, alice approves as a person, the host lands it."""
    api.tool(agent, "claim.acquire", {"resource_id": f"file:{path}", "type": "write", "ttl_s": 3600})
    out = api.tool(agent, "proposal.create", {"task_id": "t1", "title": title, "summary_md": "provenance test",
                                              "patch": patch, "risk": "normal", "affected_resources": [f"file:{path}"]})
    pid = out["proposal"]["id"]
    api.tool(agent, "proposal.request_review", {"proposal_id": pid})
    api.tool("rob", "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"})
    api.tool("alice", "human.approve", {"proposal_id": pid, "revision": 1, "note_md": "fine"})
    api.tool("host", "patch.apply", {"proposal_id": pid, "revision": 1})
    return pid


def all_proposals(api: Api) -> list[str]:
    ids: list[str] = []
    args: dict[str, Any] = {"limit": 200}
    while True:
        page = api.tool("host", "proposal.list", args)
        ids += [p["id"] for p in page["proposals"]]
        if not page.get("next_cursor"):
            return ids
        args["cursor"] = page["next_cursor"]


def blame_groups(driver: WebDriver) -> list[dict[str, Any]]:
    """Each group of the blame page: its lines (number, text), governed, and its header's text."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#blame .blame-group')].map((g) => ({"
        "  governed: g.dataset.governed === 'true',"
        "  lines: [...g.querySelectorAll('tr.blame-line')].map((r) => [Number(r.dataset.line), r.querySelector('td').textContent]),"
        "  proposal: (g.querySelector('a.blame-proposal') || {}).textContent || null,"
        "  agent: (g.querySelector('.blame-agent') || {}).textContent || null,"
        "  meta: g.querySelector('.blame-meta').textContent}))")


def page_is_accessible(driver: WebDriver) -> None:
    """The checks every page passes: contrast 4.5:1, a name on every control, nothing wider than 1,280 px."""
    low = driver.execute_script(CONTRAST_JS)
    assert low == [], low
    unnamed = driver.execute_script(
        "return [...document.querySelectorAll('input, select, textarea, button')].filter((el) => !("
        "  (el.id && document.querySelector('label[for=\"' + el.id + '\"]')) || el.getAttribute('aria-label') ||"
        "  (el.tagName === 'BUTTON' && el.textContent.trim()))).map((el) => el.outerHTML.slice(0, 80))")
    assert unnamed == [], unnamed
    assert driver.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")


BASE = ["l1", "l2", "l3", "l4", "l5"]
UNDO_FILE = "undo/base.txt"


def test_alice_undoes_an_agent_since_its_second_landing_from_its_blame_line(
        server: dict[str, Any], browser: WebDriver) -> None:
    """cy edits lines 1, 3 and 5 of ada's file in three landings; ada then edits cy's line 5. alice opens the
    file's blame, follows "Undo this agent's work…" on cy's line 3, picks cy's second landing and proposes the
    undo: one new pending proposal that puts line 3 back and leaves ada's line 5 as it is, reported as a
    conflict; the branch does not change until it is reviewed and landed."""
    base, api, root = server["base"], server["api"], server["root"]
    land_by(api, "ada", "Base file for undo", create_patch(UNDO_FILE, BASE), UNDO_FILE)
    v1 = ["c1", "l2", "l3", "l4", "l5"]
    v2 = ["c1", "l2", "c3", "l4", "l5"]
    v3 = ["c1", "l2", "c3", "l4", "c5"]
    v4 = ["c1", "l2", "c3", "l4", "a5"]
    land_by(api, "cy", "cy one", replace_patch(UNDO_FILE, BASE, v1), UNDO_FILE)
    second = land_by(api, "cy", "cy two", replace_patch(UNDO_FILE, v1, v2), UNDO_FILE)
    third = land_by(api, "cy", "cy three", replace_patch(UNDO_FILE, v2, v3), UNDO_FILE)
    later = land_by(api, "ada", "ada builds on cy", replace_patch(UNDO_FILE, v3, v4), UNDO_FILE)
    before = set(all_proposals(api))

    sign_in(browser, base, "alice")
    browser.get(f"{base}/#/ws/{WS}/blame")
    field = wait_for(browser, lambda d: d.find_element(By.ID, "blame-path"), "the path field")
    field.send_keys(UNDO_FILE + "\n")
    wait_for(browser, lambda d: len(blame_groups(d)) == 5, "five groups: the lines alternate between cy and ada")
    groups = blame_groups(browser)
    assert [(g["lines"][0][1], g["agent"]) for g in groups] == [
        ("c1", "cy"), ("l2", "ada"), ("c3", "cy"), ("l4", "ada"), ("a5", "ada")], groups
    assert groups[2]["proposal"] == second and groups[4]["proposal"] == later, groups
    # From cy's line 3: undo this agent.
    link = browser.find_element(By.CSS_SELECTOR, "#blame .blame-group:nth-child(3) a.undo-link")
    link.send_keys("\n")  # by keyboard
    since = wait_for(browser, lambda d: d.find_element(By.CSS_SELECTOR, f'#undo-since li[data-proposal="{second}"] input'),
                     "cy's landings to pick from")
    assert "cy two" in browser.find_element(By.ID, "undo-since").text
    since.click()
    plan = browser.find_element(By.ID, "undo-plan").text
    assert "one governed proposal" in plan and "2 landings" in plan and "reviewed and landed" in plan, plan
    Select(browser.find_element(By.ID, "undo-author")).select_by_value("ada")
    page_is_accessible(browser)
    screenshot(browser, "undo-agent")
    browser.find_element(By.ID, "undo-go").click()

    # The new proposal's page, with what the tool reported.
    wait_for(browser, lambda d: "/proposals/" in d.current_url and css(d, "#undo-report"), "the new proposal's page")
    new = browser.current_url.rsplit("/", 1)[1]
    assert new not in before
    conflicts = wait_for(browser, lambda d: d.find_element(By.ID, "undo-conflicts"), "the conflicts").text
    assert UNDO_FILE in conflicts and "line 5" in conflicts and third in conflicts and "ada" in conflicts, conflicts
    reverted = browser.find_element(By.ID, "undo-reverted").text
    assert second in reverted and third in reverted, reverted
    # Its diff: line 3 back, line 5 untouched.
    wait_for(browser, lambda d: [e for e in css(d, "#files .line-add .code") if e.text == "l3"], "l3 put back")
    assert [e.text for e in css(browser, "#files .line-del .code")] == ["c3"]
    screenshot(browser, "undo-proposal")
    got = api.tool("host", "proposal.get", {"proposal_id": new})["proposal"]
    assert got["author"] == "ada" and got["status"] in ("pending", "in_review"), got
    assert set(all_proposals(api)) == before | {new}
    # Nothing landed: the file is as ada left it.
    assert (root / UNDO_FILE).read_text() == "\n".join(v4) + "\n"
    assert api.tool("host", "agent.get", {"agent_id": "cy"})["agent"]["enabled"] is True
    assert console_problems(browser, base) == []


def test_bob_without_the_revert_role_sees_the_engines_reason_and_nothing_changes(
        server: dict[str, Any], browser: WebDriver) -> None:
    base, api = server["base"], server["api"]
    before = all_proposals(api)
    sign_in(browser, base, "bob")
    browser.get(f"{base}/#/ws/{WS}/undo/cy")
    go = wait_for(browser, lambda d: d.find_element(By.ID, "undo-go"), "the undo form")
    assert go.is_enabled()  # a person is offered the tool; the role is the engine's to check
    go.click()
    err = wait_for(browser, lambda d: css(d, "#undo-result .error"), "the engine's refusal")[0]
    assert err.find_element(By.CSS_SELECTOR, ".error-code").text == "forbidden"
    refusal = "human:bob does not hold the revert role: the policy's [people] revert lists human:alice"
    assert refusal in err.text, err.text
    why = wait_for(browser, lambda d: d.find_element(By.ID, "why-not-undo") if
                   d.find_element(By.ID, "why-not-undo").is_displayed() else False, "the reason beside the button")
    assert refusal in why.text and "human:bob" in why.text
    go = browser.find_element(By.ID, "undo-go")
    assert not go.is_enabled()
    assert "why-not-undo" in go.get_attribute("aria-describedby").split()
    screenshot(browser, "undo-refused")
    assert all_proposals(api) == before
    assert api.tool("host", "agent.get", {"agent_id": "cy"})["agent"]["enabled"] is True
    assert console_problems(browser, base) == []


def test_blame_names_each_lines_agent_and_proposal_and_marks_a_plain_git_commit(
        server: dict[str, Any], browser: WebDriver) -> None:
    """Lines from ada, then cy, then a plain `git commit` by a person: the blame page reached from the landed
    proposal's file names the right agent and proposal per line and marks the plain line as not governed."""
    base, api, root = server["base"], server["api"], server["root"]
    path = "prov/blame.txt"
    by_ada = land_by(api, "ada", "ada writes three lines", create_patch(path, ["a1", "a2", "a3"]), path)
    by_cy = land_by(api, "cy", "cy adds two", replace_patch(path, ["a1", "a2", "a3"], ["a1", "a2", "a3", "c4", "c5"]), path)
    (root / path).write_text("a1\na2\na3\nc4\nc5\nhand6\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "Pat Person", "GIT_AUTHOR_EMAIL": "pat@example.invalid",
           "GIT_COMMITTER_NAME": "Pat Person", "GIT_COMMITTER_EMAIL": "pat@example.invalid"}
    subprocess.run(["git", "-C", str(root), "add", path], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "by hand"], check=True, env=env)

    sign_in(browser, base, "alice")
    browser.get(f"{base}/#/ws/{WS}/proposals/{by_cy}")
    link = wait_for(browser, lambda d: [a for a in css(d, f'#files .file[data-path="{path}"] a.blame-link') if a.is_displayed()],
                    "the Blame link beside the landed file")[0]
    assert link.get_attribute("aria-label") == f"Blame {path} at the branch tip"
    link.click()
    wait_for(browser, lambda d: len(blame_groups(d)) == 3, "three groups: ada's, cy's, the plain commit's")
    assert browser.find_element(By.ID, "blame-path").get_attribute("value") == path
    ada, cy, plain = blame_groups(browser)
    assert ada["lines"] == [[1, "a1"], [2, "a2"], [3, "a3"]] and ada["governed"], ada
    assert ada["agent"] == "ada" and ada["proposal"] == by_ada, ada
    assert "task t1" in ada["meta"] and "approving vote by agent:rob" in ada["meta"], ada
    assert "human approval by human:alice" in ada["meta"], ada
    assert cy["lines"] == [[4, "c4"], [5, "c5"]] and cy["agent"] == "cy" and cy["proposal"] == by_cy, cy
    assert plain["lines"] == [[6, "hand6"]] and not plain["governed"], plain
    assert "not governed: plain git commit by Pat Person" in plain["meta"], plain
    assert plain["proposal"] is None and plain["agent"] is None
    # The proposal link goes to the proposal.
    assert browser.find_element(By.CSS_SELECTOR, "#blame .blame-group a.blame-proposal").get_attribute("href").endswith(
        f"/proposals/{by_ada}")
    page_is_accessible(browser)
    screenshot(browser, "blame")
    assert console_problems(browser, base) == []
