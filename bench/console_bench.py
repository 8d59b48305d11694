#!/usr/bin/env python3
"""Review-console benchmark (issue 35 item 3): `roundtable serve` with the
diff-engine benchmark's 30 MB, 3,384-file Django patch as one proposal.

Run from the repository root (see bench/README.md):

    nice -n 19 python3 bench/console_bench.py            # measure, print the tables
    nice -n 19 python3 bench/console_bench.py --json OUT # ... and keep the raw figures

What it measures, side by side in one run on /dev/shm:

1. First screen of the proposal page, N rounds, each round running every
   peer once: (a) the API requests the console makes for it, over HTTP;
   (b) headless Chromium loading the console until the first file's hunk
   is in the DOM; (c) `git diff --stat old new` in the same repository and
   `git apply --stat` of the patch.
2. 50 consoles: 50 clients, each holding the event stream open and
   re-fetching the inbox and the proposal overview after each event (as
   the console does, debounced), while a writer casts votes at a steady
   rate; latency percentiles of both.
3. Idle: 50 open event streams, no writes: the server's CPU time.

Standard library only, plus Selenium for the browser part (a venv given by
--browser-python; the browser is Debian's /usr/bin/chromium with
/usr/bin/chromedriver, never a downloaded one). The proposal is made through
the C ABI (`libroundtable.so`, ctypes) because a 30 MB patch is over the
CLI's default 16 MiB `max_patch_bytes`.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as _dt
import http.client
import json
import multiprocessing as mp
import os
import platform
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import diff_bench  # noqa: E402  (the patch: sdists, unpack, make_patch)

REPO = Path(__file__).resolve().parent.parent
SHM = Path("/dev/shm/rt-console")
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
WS = "demo"
API = f"/api/v1/workspaces/{WS}"
CONSOLE_DEBOUNCE_S = 0.120  # live.js subscribe(): one call per burst after 120 ms
FILE_PAGE = 100  # views/proposal.js FILE_PAGE
PARALLEL = 4  # views/proposal.js PARALLEL


def log(msg: str) -> None:
    print(f"[console-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def load() -> str:
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def pct(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of xs."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))
    return s[k]


# --------------------------------------------------------------------------
# The patch and the repository
# --------------------------------------------------------------------------


def build_patch() -> diff_bench.PatchInfo | Path:
    """Django old/new on tmpfs and the -p1 patch between them (reused when
    present)."""
    marker = SHM / "patch.ok"
    patch = SHM / "bench.patch"
    if marker.exists() and patch.exists() and (SHM / "old").is_dir() and (SHM / "new").is_dir():
        log(f"reusing {patch}")
        return patch
    SHM.mkdir(parents=True, exist_ok=True)
    old_sd = diff_bench.fetch_sdist(diff_bench.DEFAULT_PACKAGE, diff_bench.DEFAULT_OLD)
    new_sd = diff_bench.fetch_sdist(diff_bench.DEFAULT_PACKAGE, diff_bench.DEFAULT_NEW)
    diff_bench.unpack(old_sd, SHM / "old")
    diff_bench.unpack(new_sd, SHM / "new")
    info = diff_bench.make_patch(SHM)
    log(f"patch: {info.size / 1e6:.1f} MB, {info.files} files")
    marker.write_text("ok\n")
    return info.path


def git(repo: Path, *args: str, env: dict | None = None, capture: bool = False) -> str:
    e = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
             GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid")
    e.update(env or {})
    r = subprocess.run(["git", *args], cwd=repo, env=e, check=True,
                       stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    return r.stdout if capture else ""


def make_repo() -> Path:
    """A git repository whose work tree is `old` (branch `old`), with `new`
    committed on branch `new` without touching the work tree."""
    repo = SHM / "repo"
    shutil.rmtree(repo, ignore_errors=True)
    subprocess.run(["cp", "-a", str(SHM / "old"), str(repo)], check=True)
    git(repo, "init", "-q", "-b", "old")
    (repo / ".git" / "info").mkdir(parents=True, exist_ok=True)
    with open(repo / ".git" / "info" / "exclude", "a") as fh:
        fh.write(".roundtable/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "old")
    index = SHM / "new.index"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index), "GIT_WORK_TREE": str(SHM / "new")}
    git(repo, "add", "-A", env=env)
    tree = git(repo, "write-tree", env=env, capture=True).strip()
    commit = git(repo, "commit-tree", tree, "-p", "old", "-m", "new", capture=True).strip()
    git(repo, "update-ref", "refs/heads/new", commit)
    index.unlink(missing_ok=True)
    return repo


def small_patch(repo: Path) -> str:
    """A one-line change to README.rst, as git writes it."""
    path = repo / "README.rst"
    original = path.read_bytes()
    path.write_bytes(original.replace(b"\n", b" (reviewed)\n", 1))
    try:
        return git(repo, "diff", "--", "README.rst", capture=True)
    finally:
        path.write_bytes(original)


# --------------------------------------------------------------------------
# The governed workspace, through the C ABI
# --------------------------------------------------------------------------


class Rt:
    """A minimal ctypes binding of include/roundtable.h (open, call, close)."""

    def __init__(self, lib: Path, root: Path, options: dict):
        self.lib = ctypes.CDLL(str(lib))
        L = self.lib
        L.rt_engine_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        L.rt_engine_call.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                     ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        L.rt_string_free.argtypes = [ctypes.c_void_p]
        L.rt_error_code.argtypes = [ctypes.c_void_p]
        L.rt_error_code.restype = ctypes.c_char_p
        L.rt_error_message.argtypes = [ctypes.c_void_p]
        L.rt_error_message.restype = ctypes.c_char_p
        L.rt_error_free.argtypes = [ctypes.c_void_p]
        L.rt_engine_close.argtypes = [ctypes.c_void_p]
        self.engine = ctypes.c_void_p()
        err = ctypes.c_void_p()
        st = L.rt_engine_open(str(root).encode(), json.dumps(options).encode(),
                              ctypes.byref(self.engine), ctypes.byref(err))
        if st != 0:
            raise RuntimeError(self._error(err))

    def _error(self, err: ctypes.c_void_p) -> str:
        code = self.lib.rt_error_code(err).decode()
        message = self.lib.rt_error_message(err).decode()
        self.lib.rt_error_free(err)
        return f"{code}: {message}"

    def call(self, tool: str, args: dict, actor: str) -> dict:
        kind, ident = actor.split(":", 1)
        out = ctypes.c_void_p()
        err = ctypes.c_void_p()
        st = self.lib.rt_engine_call(self.engine, tool.encode(), json.dumps(args).encode(),
                                     json.dumps({"id": ident, "kind": kind}).encode(),
                                     ctypes.byref(out), ctypes.byref(err))
        if st != 0:
            raise RuntimeError(f"{tool}: {self._error(err)}")
        text = ctypes.string_at(out.value)
        self.lib.rt_string_free(out)
        return json.loads(text)

    def close(self) -> None:
        self.lib.rt_engine_close(self.engine)


def govern(lib: Path, repo: Path, patch: Path, small: str) -> dict:
    """Agents, a task, the huge proposal and a small one, both in review."""
    rt = Rt(lib, repo, {"max_patch_bytes": 64 << 20})
    host = "orchestrator:host"
    for agent, role in [("alice", "author"), ("bob", "reviewer")]:
        rt.call("agent.register", {"agent_id": agent, "roles": [role]}, host)
    rt.call("task.create", {"task_id": "t1", "title": "Upgrade Django"}, host)
    t0 = time.perf_counter()
    text = patch.read_bytes().decode("utf-8")
    huge = rt.call("proposal.create", {
        "task_id": "t1", "title": "Django 3.2.25 to 4.2.16",
        "summary_md": "The whole upgrade, as one change.", "patch": text}, "agent:alice")
    create_s = time.perf_counter() - t0
    hid = huge["proposal"]["id"]
    rt.call("proposal.request_review", {"proposal_id": hid}, "agent:alice")
    sm = rt.call("proposal.create", {
        "task_id": "t1", "title": "README wording", "summary_md": "One line.",
        "patch": small}, "agent:alice")
    sid = sm["proposal"]["id"]
    rt.call("proposal.request_review", {"proposal_id": sid}, "agent:alice")
    rt.close()
    return {"huge": hid, "small": sid, "create_s": create_s}


def write_tokens(path: Path, consoles: int) -> dict[str, str]:
    toks = {"agent:alice": "", "agent:bob": "", "orchestrator:host": "", "human:carol": ""}
    for i in range(consoles):
        toks[f"human:r{i:02d}"] = ""
    lines = []
    for actor in toks:
        toks[actor] = "tok-" + secrets.token_hex(16)
        lines.append(f"{toks[actor]} {actor}")
    path.write_text("\n".join(lines) + "\n")
    os.chmod(path, 0o600)
    return toks


# --------------------------------------------------------------------------
# The server and HTTP
# --------------------------------------------------------------------------


class Server:
    def __init__(self, binary: Path, tokens: Path, repo: Path):
        self.proc = subprocess.Popen(
            [str(binary), "serve", "--listen", "127.0.0.1:0", "--tokens", str(tokens),
             "--workspace", f"{WS}={repo}"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("roundtable serve exited: " + (self.proc.stderr.read() if self.proc.stderr else ""))
        self.url = json.loads(line)["url"]
        hostport = self.url.split("//", 1)[1].rstrip("/")
        host, port = hostport.rsplit(":", 1)
        self.host, self.port = host, int(port)
        self.pid = self.proc.pid

    def cpu_s(self) -> float:
        """utime + stime of the server process, in seconds."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # fields[0] is state (field 3); utime is field 14, stime 15.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def threads(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                return int(line.split()[1])
        return -1

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Client:
    """One keep-alive connection; every request timed."""

    def __init__(self, host: str, port: int, auth: dict[str, str]):
        self.conn = http.client.HTTPConnection(host, port, timeout=120)
        self.auth = auth

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict | None = None) -> tuple[float, int, bytes]:
        h = dict(self.auth)
        h.update(headers or {})
        t0 = time.perf_counter()
        self.conn.request(method, path, body=body, headers=h)
        r = self.conn.getresponse()
        data = r.read()
        return (time.perf_counter() - t0) * 1000, r.status, data

    def get(self, path: str) -> tuple[float, int, bytes]:
        return self.request("GET", path)

    def close(self) -> None:
        self.conn.close()


def sign_in(host: str, port: int, token: str) -> str:
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("POST", "/api/v1/session", body=json.dumps({"token": token}).encode(),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    if r.status != 200:
        raise RuntimeError(f"sign-in: {r.status}")
    cookie = r.getheader("Set-Cookie") or ""
    c.close()
    return cookie.split(";", 1)[0]


class Events:
    """An event stream over HTTP/1.0 (so the body is the raw stream)."""

    def __init__(self, host: str, port: int, token: str):
        self.sock = socket.create_connection((host, port), timeout=30)
        self.sock.sendall((f"GET {API}/events HTTP/1.0\r\nHost: {host}:{port}\r\n"
                           f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n").encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("the event stream closed before its headers")
            self.buf += chunk
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            raise RuntimeError(f"events: {status} {head!r}")
        self.heartbeats = 0

    def next_events(self, timeout: float | None) -> int | None:
        """Wait up to `timeout` for blocks; the number of events among the
        complete blocks read (0: only comments or nothing), None at EOF."""
        self.sock.settimeout(timeout)
        try:
            chunk = self.sock.recv(65536)
        except (socket.timeout, TimeoutError):
            return 0
        except OSError:
            return None
        if not chunk:
            return None
        self.buf += chunk
        n = 0
        while b"\n\n" in self.buf:
            block, self.buf = self.buf.split(b"\n\n", 1)
            if block.startswith(b":"):
                if b"heartbeat" in block:
                    self.heartbeats += 1
                continue
            if b"\nevent:" in b"\n" + block:
                n += 1
        return n

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------
# 1. First screen
# --------------------------------------------------------------------------


def first_screen_api(host: str, port: int, cookie: str, pid: str) -> dict:
    """The requests app.js and views/proposal.js make before the first hunk
    shows, in their order: session, workspaces, then side by side the tools,
    the overview, and the files (the latest revision's first page) followed
    by the diffs of the files in view, PARALLEL at a time (the page starts
    the files beside the overview). Fresh connections, as a fresh page."""
    auth = {"Cookie": cookie, "Accept": "application/json"}
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    main = Client(host, port, auth)
    out["session"], _, _ = main.get("/api/v1/session")
    out["workspaces"], _, _ = main.get("/api/v1/workspaces")
    conns = [main] + [Client(host, port, auth) for _ in range(PARALLEL + 1)]
    res: dict[str, tuple] = {}
    done_at: dict[str, float] = {}

    def fetch(name: str, c: Client, path: str) -> None:
        res[name] = c.get(path)
        done_at[name] = time.perf_counter()
        if res[name][1] != 200:
            raise RuntimeError(f"{path}: {res[name][1]}")

    def files_then_diffs() -> None:
        fetch("files", conns[2], f"{API}/proposals/{pid}/files?limit={FILE_PAGE}")
        files = json.loads(res["files"][2])["items"][:PARALLEL]
        ths = [threading.Thread(target=fetch, args=(
            f"diff{i}", conns[2 + i],
            f"{API}/proposals/{pid}/diff?path={urlquote(f['path'])}")) for i, f in enumerate(files)]
        for t in ths:
            t.start()
        for t in ths:
            t.join()
        res["_files"] = (0.0, 200, files)

    ths = [threading.Thread(target=fetch, args=("tools", conns[1], f"{API}/tools")),
           threading.Thread(target=files_then_diffs)]
    for t in ths:
        t.start()
    fetch("overview", main, f"{API}/proposals/{pid}")
    for t in ths:
        t.join()
    files = res["_files"][2]
    first_text = next((i for i, f in enumerate(files) if not f.get("binary")), 0)
    diffs = [res[f"diff{i}"][0] for i in range(len(files))]
    out["tools"], out["overview"], out["files"] = res["tools"][0], res["overview"][0], res["files"][0]
    out["diff (first file)"] = diffs[first_text]
    out["diffs (4 in parallel, slowest)"] = max(diffs)
    out["total to first hunk"] = (done_at[f"diff{first_text}"] - t0) * 1000
    out["total, overview too"] = (max(done_at.values()) - t0) * 1000
    for c in conns:
        c.close()
    return out


def overview_parts(host: str, port: int, token: str, pid: str) -> dict:
    """The tools the overview route calls, each alone over the tools route
    (as the same person), to see which one its time is."""
    c = Client(host, port, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    out = {}
    for tool, args in [("proposal.get", {"proposal_id": pid}), ("proposal.status", {"proposal_id": pid}),
                       ("proposal.files", {"proposal_id": pid}),
                       ("vote.list", {"proposal_id": pid, "limit": 100}),
                       ("test.list", {"proposal_id": pid, "limit": 100}),
                       ("claim.list", {"status": "active", "limit": 100}),
                       ("inbox.list", {"limit": 100})]:
        ms, st, _ = c.request("POST", f"{API}/tools/{tool}", json.dumps(args).encode())
        if st != 200:
            raise RuntimeError(f"{tool}: {st}")
        out[f"tool {tool}"] = ms
    c.close()
    return out


def urlquote(s: str) -> str:
    from urllib.parse import quote
    return quote(s, safe="")


BROWSER_SCRIPT = r"""
import json, sys, time
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service

cfg = json.loads(sys.argv[1])
opts = Options()
opts.binary_location = '/usr/bin/chromium'
for a in ['--headless=new', '--no-sandbox', '--window-size=1280,900', '--disable-gpu',
          '--disable-dev-shm-usage', '--user-data-dir=' + cfg['profile']]:
    opts.add_argument(a)
d = webdriver.Chrome(service=Service('/usr/bin/chromedriver'), options=opts)
d.set_script_timeout(60)
try:
    d.get(cfg['url'])
    d.execute_async_script('''
      const done = arguments[arguments.length - 1];
      fetch('/api/v1/session', {method: 'POST', headers: {'Content-Type': 'application/json'},
        credentials: 'same-origin', body: JSON.stringify({token: arguments[0]})})
        .then(r => done(r.status), e => done(String(e)));''', cfg['token'])
    target = cfg['url'] + '#/ws/' + cfg['ws'] + '/proposals/' + cfg['pid']
    # One untimed load (module and HTTP caches warm, as for a returning reviewer).
    for run in range(cfg['runs'] + 1):
        d.get('about:blank')
        t0 = time.perf_counter()
        d.get(target)
        got = d.execute_async_script('''
          const done = arguments[arguments.length - 1];
          const t0 = Date.now();
          function look() {
            const h = document.querySelector('#files .hunk');
            if (h) {
              // One more frame: the hunk has been laid out and painted.
              requestAnimationFrame(() => {
                const m = performance.getEntriesByName('roundtable:first-hunk');
                const sec = h.closest('section.file');
                done({painted: performance.now(), mark: m.length ? m[0].startTime : null,
                      path: sec ? sec.getAttribute('data-path') : null,
                      files: document.querySelectorAll('#files section.file').length,
                      hunks: document.querySelectorAll('#files .hunk').length});
              });
            } else if (Date.now() - t0 > 55000) {
              done({error: 'no hunk after 55 s', html: document.body.innerText.slice(0, 500)});
            } else {
              requestAnimationFrame(look);
            }
          }
          look();''')
        wall = (time.perf_counter() - t0) * 1000
        got['wall'] = wall
        if run > 0:
            print(json.dumps(got), flush=True)
finally:
    d.quit()
"""


def browser_runs(python: str, url: str, token: str, pid: str, runs: int) -> list[dict]:
    profile = tempfile.mkdtemp(prefix="rt-console-chrome-", dir="/dev/shm")
    cfg = json.dumps({"url": url, "token": token, "pid": pid, "ws": WS, "runs": runs,
                      "profile": profile})
    try:
        r = subprocess.run(["nice", "-n", "19", python, "-c", BROWSER_SCRIPT, cfg],
                           capture_output=True, text=True, timeout=600)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError("browser run failed:\n" + r.stderr[-3000:])
    out = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    for o in out:
        if "error" in o:
            raise RuntimeError(f"browser: {o}")
    return out


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


# --------------------------------------------------------------------------
# 2. Many consoles, 3. idle
# --------------------------------------------------------------------------


def console_group(host: str, port: int, tokens: list[str], pid: str, start_at: float,
                  stop_at: float, q, floor: bool = False) -> None:
    """Clients in one process (threads): each holds an event stream and,
    after each burst of events (debounced as live.js does), re-fetches the
    inbox and the proposal overview. Reports (kind, when, ms, status).
    With `floor`, both requests are `GET /api/v1/session` instead (the
    token checked, no engine call): what the clients, the HTTP server and
    the shared machine cost alone."""
    reads = ((("inbox", "/api/v1/session"), ("overview", "/api/v1/session")) if floor else
             (("inbox", f"{API}/inbox"), ("overview", f"{API}/proposals/{pid}")))
    results: list[tuple] = []
    lock = threading.Lock()

    def run(token: str) -> None:
        mine: list[tuple] = []
        try:
            ev = Events(host, port, token)
            c = Client(host, port, {"Authorization": f"Bearer {token}", "Accept": "application/json"})
            # The page's own first load (not counted).
            c.get(f"{API}/inbox")
            c.get(f"{API}/proposals/{pid}")
            while time.time() < stop_at:
                n = ev.next_events(max(0.05, stop_at - time.time()))
                if n is None:
                    break
                if n == 0:
                    continue
                deadline = time.time() + CONSOLE_DEBOUNCE_S
                while (left := deadline - time.time()) > 0:
                    if ev.next_events(left) is None:
                        break
                for kind, path in reads:
                    when = time.time()
                    ms, status, _ = c.get(path)
                    if start_at <= when <= stop_at:
                        mine.append((kind, when, ms, status))
            ev.close()
            c.close()
        except Exception as e:  # noqa: BLE001 - reported, not hidden
            mine.append(("error", time.time(), 0.0, repr(e)))
        with lock:
            results.extend(mine)

    ths = [threading.Thread(target=run, args=(t,)) for t in tokens]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    q.put(results)


def writer(host: str, port: int, token: str, pid: str, rev: int, rate: float, start_at: float,
           stop_at: float) -> list[tuple]:
    c = Client(host, port, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    out = []
    i = 0
    while True:
        due = start_at + i / rate
        if due > stop_at:
            break
        if due > time.time():
            time.sleep(due - time.time())
        vote = "approve" if i % 2 == 0 else "revise"
        body = {"proposal_id": pid, "revision": rev, "vote": vote}
        if vote == "revise":
            body["reason_md"] = f"round {i}: please look again"
        when = time.time()
        ms, status, data = c.request("POST", f"{API}/tools/vote.cast", json.dumps(body).encode(),
                                     {"Idempotency-Key": str(uuid.uuid4())})
        out.append(("vote.cast", when, ms, status if status == 200 else f"{status} {data[:200]!r}"))
        i += 1
    c.close()
    return out


def many_consoles(srv: Server, toks: dict, pid: str, consoles: int, rate: float, seconds: float,
                  groups: int, floor: bool = False) -> dict:
    rev = 1
    readers = [toks[f"human:r{i:02d}"] for i in range(consoles)]
    warm = 4.0  # streams open, first loads done
    start_at = time.time() + warm
    stop_at = start_at + seconds
    q = mp.Queue()
    per = (len(readers) + groups - 1) // groups
    procs = [mp.Process(target=console_group,
                        args=(srv.host, srv.port, readers[g * per:(g + 1) * per], pid, start_at,
                              stop_at + 1.5, q, floor))
             for g in range(groups) if readers[g * per:(g + 1) * per]]
    for p in procs:
        p.start()
    time.sleep(max(0.0, start_at - time.time()))
    cpu0, load0 = srv.cpu_s(), load()
    w = writer(srv.host, srv.port, toks["agent:bob"], pid, rev, rate, start_at, stop_at)
    cpu1 = srv.cpu_s()
    rows: list[tuple] = []
    for _ in procs:
        rows.extend(q.get(timeout=120))
    for p in procs:
        p.join(timeout=30)
    errors = [r for r in rows if r[0] == "error" or r[3] != 200]
    werr = [r for r in w if r[3] != 200]
    reads = [r[2] for r in rows if r[0] in ("inbox", "overview") and r[3] == 200]
    by = {k: [r[2] for r in rows if r[0] == k and r[3] == 200] for k in ("inbox", "overview")}
    writes = [r[2] for r in w if r[3] == 200]

    def stats(xs: list[float]) -> dict:
        return {"n": len(xs), "p50": pct(xs, 50), "p95": pct(xs, 95), "p99": pct(xs, 99),
                "max": max(xs) if xs else float("nan")}

    return {"consoles": consoles, "rate": rate, "seconds": seconds, "load_before": load0,
            "load_after": load(), "server_cpu_s": cpu1 - cpu0,
            "reads": stats(reads), "inbox": stats(by["inbox"]), "overview": stats(by["overview"]),
            "writes": stats(writes), "errors": [list(map(str, e)) for e in errors[:5]],
            "error_count": len(errors), "write_errors": [list(map(str, e)) for e in werr[:5]]}


def idle(srv: Server, toks: dict, consoles: int, seconds: float) -> dict:
    streams = [Events(srv.host, srv.port, toks[f"human:r{i:02d}"]) for i in range(consoles)]
    stop = threading.Event()

    def drain(e: Events) -> None:
        while not stop.is_set():
            if e.next_events(0.5) is None:
                return

    ths = [threading.Thread(target=drain, args=(e,), daemon=True) for e in streams]
    for t in ths:
        t.start()
    time.sleep(2.0)
    threads = srv.threads()
    load0 = load()
    c0 = srv.cpu_s()
    t0 = time.perf_counter()
    time.sleep(seconds)
    c1 = srv.cpu_s()
    wall = time.perf_counter() - t0
    stop.set()
    for t in ths:
        t.join(timeout=2)
    beats = sum(e.heartbeats for e in streams)
    for e in streams:
        e.close()
    return {"streams": consoles, "seconds": wall, "cpu_ms": (c1 - c0) * 1000,
            "server_threads": threads, "heartbeats": beats, "load_before": load0,
            "load_after": load(), "tick_ms": 1000 / os.sysconf("SC_CLK_TCK")}


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def summary(xs: list[float]) -> str:
    return f"{statistics.median(xs):.0f} / {pct(xs, 95):.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7, help="first-screen rounds (default 7)")
    ap.add_argument("--consoles", type=int, default=50)
    ap.add_argument("--rate", type=float, default=5.0, help="writer's votes per second")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of the many-consoles run")
    ap.add_argument("--idle-seconds", type=float, default=10.0)
    ap.add_argument("--groups", type=int, default=5, help="client processes for the consoles")
    ap.add_argument("--watch", choices=["small", "huge"], default="small",
                    help="the proposal the 50 consoles have open (default: small)")
    ap.add_argument("--bin", type=Path, default=TARGET / "release" / "roundtable")
    ap.add_argument("--lib", type=Path, default=TARGET / "release" / "libroundtable.so")
    ap.add_argument("--compare-bin", type=Path,
                    help="an older roundtable binary to serve the same workspace beside this one")
    ap.add_argument("--browser-python", default=str(TARGET / "browser-venv" / "bin" / "python"))
    ap.add_argument("--also-without-huge", action="store_true",
                    help="then withdraw the 30 MB proposal and run the consoles again")
    ap.add_argument("--floor", action="store_true",
                    help="then run the consoles again with GET /api/v1/session as both reads "
                         "(no engine call): the floor the clients and the machine set")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--skip-load", action="store_true")
    ap.add_argument("--skip-idle", action="store_true")
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the repository and proposals of the last run (votes pile up)")
    ap.add_argument("--json", type=Path, help="write the raw figures here")
    args = ap.parse_args()

    for p in (args.bin, args.lib):
        if not p.exists():
            sys.exit(f"{p} is missing: cargo build --release -p roundtable-cli -p roundtable-ffi")
    report: dict = {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                    "machine": f"{os.cpu_count()} cores, {platform.platform()}",
                    "load_start": load(), "git": subprocess.run(["git", "--version"], capture_output=True,
                                                                text=True).stdout.strip()}
    patch = build_patch()
    patch = patch if isinstance(patch, Path) else patch.path
    saved = SHM / "ids.json"
    if args.reuse and saved.exists():
        repo, ids = SHM / "repo", json.loads(saved.read_text())
        log(f"reusing {repo} and its proposals {ids}")
    else:
        saved.unlink(missing_ok=True)
        log("making the repository")
        repo = make_repo()
        log("governing it (agents, task, the proposals)")
        ids = govern(args.lib, repo, patch, small_patch(repo))
        saved.write_text(json.dumps(ids))
    report["proposal_create_s"] = ids["create_s"]
    report["patch_bytes"] = patch.stat().st_size
    tokens = SHM / "tokens"
    toks = write_tokens(tokens, args.consoles)
    servers: list[tuple[str, Server]] = []
    try:
        if args.compare_bin:
            servers.append(("before", Server(args.compare_bin, tokens, repo)))
        servers.append(("this build" if args.compare_bin else "roundtable", Server(args.bin, tokens, repo)))
        for label, srv in servers:
            log(f"{label}: serving at {srv.url} (pid {srv.pid})")
        cookies = {label: sign_in(srv.host, srv.port, toks["human:carol"]) for label, srv in servers}
        # 1. First screen, rounds interleaved: every server and peer once a round.
        fs: dict = {label: {"api": {}, "browser": []} for label, _ in servers}
        gitd: list[float] = []
        gita: list[float] = []
        report["load_first_screen_before"] = load()
        for label, srv in servers:  # warm-up, untimed
            first_screen_api(srv.host, srv.port, cookies[label], ids["huge"])
        for i in range(args.runs):
            line = []
            for label, srv in servers:
                for k, v in first_screen_api(srv.host, srv.port, cookies[label], ids["huge"]).items():
                    fs[label]["api"].setdefault(k, []).append(v)
                for k, v in overview_parts(srv.host, srv.port, toks["human:carol"], ids["huge"]).items():
                    fs[label]["api"].setdefault(k, []).append(v)
                line.append(f"{label} api {fs[label]['api']['total to first hunk'][-1]:.0f} ms")
            gitd.append(timed(["git", "diff", "--stat", "old", "new"], repo))
            gita.append(timed(["git", "apply", "--stat", str(patch)], repo))
            if not args.skip_browser:
                for label, srv in servers:
                    fs[label]["browser"].extend(browser_runs(args.browser_python, srv.url,
                                                             toks["human:carol"], ids["huge"], 1))
                    line.append(f"{label} browser {fs[label]['browser'][-1]['painted']:.0f} ms")
            log(f"round {i + 1}/{args.runs}: " + ", ".join(line) +
                f", git diff --stat {gitd[-1]:.0f} ms (load {load()})")
        report["load_first_screen_after"] = load()
        report["first_screen"] = {"servers": fs, "git_diff_stat": gitd, "git_apply_stat": gita}
        # 2. Many consoles, 3. idle: once per server, in turn.
        pid = ids[args.watch]
        for label, srv in servers:
            if not args.skip_load:
                log(f"{label}: {args.consoles} consoles on the {args.watch} proposal, votes at "
                    f"{args.rate}/s for {args.seconds:.0f} s")
                c = many_consoles(srv, toks, pid, args.consoles, args.rate, args.seconds, args.groups)
                c["watch"] = args.watch
                report.setdefault("consoles", {})[label] = c
            if not args.skip_idle:
                log(f"{label}: idle, {args.consoles} streams for {args.idle_seconds:.0f} s")
                report.setdefault("idle", {})[label] = idle(srv, toks, args.consoles, args.idle_seconds)
        # 2b. The consoles again with the 30 MB proposal withdrawn (no longer
        # open: the inbox no longer looks at it), to see what it costs them.
        if args.also_without_huge and not args.skip_load:
            c = Client(servers[-1][1].host, servers[-1][1].port,
                       {"Authorization": f"Bearer {toks['agent:alice']}", "Content-Type": "application/json"})
            _, st, body = c.request("POST", f"{API}/tools/proposal.withdraw",
                                    json.dumps({"proposal_id": ids["huge"]}).encode(),
                                    {"Idempotency-Key": str(uuid.uuid4())})
            c.close()
            if st != 200:
                raise RuntimeError(f"proposal.withdraw: {st} {body[:300]!r}")
            for label, srv in servers:
                log(f"{label}: {args.consoles} consoles, the 30 MB proposal withdrawn")
                c2 = many_consoles(srv, toks, pid, args.consoles, args.rate, args.seconds, args.groups)
                c2["watch"] = args.watch + " (30 MB one withdrawn)"
                report.setdefault("consoles", {})[label + ", 30 MB withdrawn"] = c2
        # 2c. The floor: the same clients and writer, each read a request
        # the engine never sees.
        if args.floor and not args.skip_load:
            for label, srv in servers:
                log(f"{label}: {args.consoles} consoles, floor (GET /api/v1/session)")
                c3 = many_consoles(srv, toks, pid, args.consoles, args.rate, args.seconds, args.groups,
                                   floor=True)
                c3["watch"] = args.watch + " (floor: GET /session as both reads)"
                report.setdefault("consoles", {})[label + ", floor"] = c3
    finally:
        for _, srv in servers:
            srv.stop()
    report["load_end"] = load()
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


def print_report(r: dict) -> None:
    fs = r["first_screen"]
    gd = statistics.median(fs["git_diff_stat"])
    print(f"\n{r['date']}, {r['machine']}, {r['git']}")
    print(f"patch {r['patch_bytes'] / 1e6:.1f} MB (proposal.create took {r['proposal_create_s']:.1f} s); "
          f"load at start {r['load_start']}, first screen {r['load_first_screen_before']} -> "
          f"{r['load_first_screen_after']}, end {r['load_end']}")
    labels = list(fs["servers"])
    print("\nFirst screen of the 30 MB proposal: median / p95 of "
          f"{len(fs['git_diff_stat'])} rounds (ms); x = median over git diff --stat's median")
    print("| what | " + " | ".join(f"{l}: median / p95 | x" for l in labels) + " |")
    print("|---|" + "---:|---:|" * len(labels))
    keys = list(fs["servers"][labels[0]]["api"])
    for k in keys:
        cells = []
        for l in labels:
            xs = fs["servers"][l]["api"][k]
            cells.append(f"{summary(xs)} | {statistics.median(xs) / gd:.2f}")
        print(f"| API: {k} | " + " | ".join(cells) + " |")
    if fs["servers"][labels[0]]["browser"]:
        for name, key in (("navigation start -> first hunk painted", "painted"),
                          ("navigation start -> first-hunk mark", "mark"),
                          ("driver.get -> hunk seen (outside)", "wall")):
            cells = []
            for l in labels:
                xs = [b[key] for b in fs["servers"][l]["browser"] if b.get(key) is not None]
                cells.append(f"{summary(xs)} | {statistics.median(xs) / gd:.2f}" if xs else "- | -")
            print(f"| Chromium: {name} | " + " | ".join(cells) + " |")
    print(f"| git diff --stat old new | " +
          " | ".join(f"{summary(fs['git_diff_stat'])} | 1.00" for _ in labels) + " |")
    ga = fs["git_apply_stat"]
    print(f"| git apply --stat PATCH | " +
          " | ".join(f"{summary(ga)} | {statistics.median(ga) / gd:.2f}" for _ in labels) + " |")
    for l in labels:
        b = fs["servers"][l]["browser"]
        if b:
            print(f"  {l}: first hunk in {b[0].get('path')}; {b[0].get('files')} file sections, "
                  f"{b[0].get('hunks')} hunks drawn")
    for l, c in r.get("consoles", {}).items():
        print(f"\n{l}: {c['consoles']} consoles on the {c['watch']} proposal, votes at {c['rate']}/s for "
              f"{c['seconds']:.0f} s (load {c['load_before']} -> {c['load_after']}); "
              f"server CPU {c['server_cpu_s']:.1f} s")
        print("| requests | n | p50 | p95 | p99 | max (ms) |")
        print("|---|---:|---:|---:|---:|---:|")
        for k in ("reads", "inbox", "overview", "writes"):
            s = c[k]
            print(f"| {k} | {s['n']} | {s['p50']:.1f} | {s['p95']:.1f} | {s['p99']:.1f} | {s['max']:.1f} |")
        if c["error_count"] or c["write_errors"]:
            print(f"errors: {c['error_count']} {c['errors']} {c['write_errors']}")
    for l, i in r.get("idle", {}).items():
        print(f"\n{l}: idle, {i['streams']} streams, {i['seconds']:.1f} s: server CPU {i['cpu_ms']:.0f} ms "
              f"(tick {i['tick_ms']:.0f} ms), {i['server_threads']} threads, {i['heartbeats']} heartbeats; "
              f"load {i['load_before']} -> {i['load_after']}")


if __name__ == "__main__":
    sys.exit(main())
