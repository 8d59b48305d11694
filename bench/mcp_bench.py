#!/usr/bin/env python3
"""MCP benchmark: what an agent pays to call a tool through `roundtable mcp`
instead of the Python binding, side by side in one run.

One store on tmpfs holds one proposal with a small revision. Each path calls
`proposal.get` on it as the same agent, sequentially (one call in flight),
after 200 warm-up calls:

- **binding**: `engine.call(actor, "proposal.get", args)` in this process
  (the installed `roundtable` wheel);
- **MCP stdio, raw client**: `roundtable mcp --as agent:…` as a child, after
  the `initialize` handshake; one `tools/call` JSON-RPC line written, one
  response line read and decoded per call — the server's and the pipe's
  cost, with the thinnest client there is;
- **MCP stdio, official SDK**: the same server driven by `mcp.Client`
  (PyPI `mcp`), which validates every result against the tool's output
  schema — what a Python agent built on the SDK pays;
- **MCP HTTP, raw client**: `roundtable mcp --http` on loopback, one
  keep-alive connection, one POST per call with its bearer token;
- **the pipe floor**: the same raw client against a 5-line C program that
  echoes each line back (compiled with `cc -O2` at run time), sending the
  server's real response line and decoding the echo: what one round trip
  through two pipes and two process wake-ups costs here with no work at
  all. No stdio server can answer faster than this.

Target (issue 17): the stdio `tools/call` within 2x of the binding call.

    target/py-venv/bin/python bench/mcp_bench.py [--bin target/release/roundtable]
        [--calls N] [--runs N] [--write] [--echo PATH] [--no-node]

`--write` replaces the "MCP" section of BENCHMARKS.md (between its markers).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple

import roundtable
from roundtable import Actor

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
START = "<!-- mcp-bench:start -->"
END = "<!-- mcp-bench:end -->"
WARM = 200
TOKEN = "bench-token-0123456789abcdef"


def log(msg: str) -> None:
    print(f"[mcp-bench] {msg}", file=sys.stderr, flush=True)


Batch = Callable[[int], None]


def setup(root: Path) -> str:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "app.py").write_text('print("hello")\n')
    host = Actor.orchestrator("host")
    with roundtable.open(root) as engine:
        engine.call(host, "agent.register", {"agent_id": "ada", "roles": ["author"]})
        engine.call(host, "task.create", {"task_id": "t", "title": "bench"})
        return engine.session(Actor.agent("ada")).proposal_create(task_id="t", title="bench", summary_md="s", patch='--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print("hello")\n+print("hi")\n').proposal.id


@contextlib.contextmanager
def binding(root: Path, pid: str) -> Iterator[Batch]:
    actor = Actor.agent("ada")
    args = {"proposal_id": pid}
    with roundtable.open(root) as engine:
        call = engine.call
        assert call(actor, "proposal.get", args)["proposal"]["id"] == pid

        def batch(n: int) -> None:
            for _ in range(n):
                call(actor, "proposal.get", args)

        yield batch


class LineClient:
    """One JSON-RPC line out, one line back, over a child's pipes."""

    def __init__(self, argv: List[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.inp, self.out = self.proc.stdin, self.proc.stdout
        self.last = b""

    def raw(self, line: bytes) -> Any:
        self.inp.write(line)
        self.inp.flush()
        self.last = self.out.readline()
        return json.loads(self.last)

    def close(self) -> None:
        self.inp.close()
        self.proc.wait(timeout=30)


def request(method: str, params: Dict[str, Any], id: int | None = 1) -> bytes:
    msg: Dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        msg["id"] = id
    return (json.dumps(msg) + "\n").encode()


@contextlib.contextmanager
def stdio_raw(binary: str, root: Path, pid: str, last: List[bytes]) -> Iterator[Batch]:
    c = LineClient([binary, "mcp", "--root", str(root), "--as", "agent:ada"])
    try:
        hello = c.raw(request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "bench", "version": "1"}}))
        assert hello["result"]["serverInfo"]["name"] == "roundtable", hello
        c.inp.write(request("notifications/initialized", {}, id=None))
        line = request("tools/call", {"name": "proposal.get", "arguments": {"proposal_id": pid}})
        r = c.raw(line)
        assert r["result"]["structuredContent"]["proposal"]["id"] == pid, r
        last[:] = [c.last]

        def batch(n: int) -> None:
            for _ in range(n):
                c.raw(line)

        yield batch
    finally:
        c.close()


@contextlib.contextmanager
def stdio_other(argv: List[str], tool: str, args: Dict[str, Any], check: Callable[[Any], bool]) -> Iterator[Batch]:
    """The raw client against another MCP stdio server: the same handshake,
    one `tools/call` line per call."""
    c = LineClient(argv)
    try:
        hello = c.raw(request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "bench", "version": "1"}}))
        assert "result" in hello, hello
        c.inp.write(request("notifications/initialized", {}, id=None))
        line = request("tools/call", {"name": tool, "arguments": args})
        r = c.raw(line)
        assert check(r), r

        def batch(n: int) -> None:
            for _ in range(n):
                c.raw(line)

        yield batch
    finally:
        c.close()


def echo_binary(binary: str, given: str | None) -> Path | None:
    if given:
        return Path(given)
    exe = Path(binary).parent / "examples" / "echo"
    if not exe.exists():
        log(f"building {exe}")
        target = Path(binary).parent.parent
        env = dict(os.environ, CARGO_TARGET_DIR=str(target))
        profile = Path(binary).parent.name
        cmd = ["cargo", "build", "-q", "-p", "roundtable-mcp", "--example", "echo"]
        if profile == "release":
            cmd.append("--release")
        if subprocess.run(cmd, cwd=REPO, env=env).returncode != 0:
            log("the echo example did not build: the SDK floor is skipped")
            return None
    return exe


def filesystem_server() -> Path | None:
    """`npm ci` of bench/node into the target dir (once); the server's entry."""
    node_dir = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target")) / "mcp-bench-node"
    entry = node_dir / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
    lock = HERE / "node" / "package-lock.json"
    stamp = node_dir / "package-lock.json"
    if not entry.exists() or not stamp.exists() or stamp.read_bytes() != lock.read_bytes():
        node_dir.mkdir(parents=True, exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            (node_dir / name).write_bytes((HERE / "node" / name).read_bytes())
        log(f"npm ci in {node_dir}")
        r = subprocess.run(["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"], cwd=node_dir)
        if r.returncode != 0 or not entry.exists():
            log("npm ci failed: the filesystem server is skipped")
            return None
    return entry


ECHO_C = r"""
#include <stdio.h>
static char line[1 << 22];
int main(void) { while (fgets(line, sizeof line, stdin)) { fputs(line, stdout); fflush(stdout); } return 0; }
"""


@contextlib.contextmanager
def pipe_floor(work: Path, last: List[bytes]) -> Iterator[Batch | None]:
    src, exe = work / "echo.c", work / "echo"
    src.write_text(ECHO_C)
    if subprocess.run(["cc", "-O2", "-o", str(exe), str(src)], capture_output=True).returncode != 0:
        log("no C compiler: the pipe floor is skipped")
        yield None
        return
    c = LineClient([str(exe)])
    try:
        def batch(n: int) -> None:
            line = last[0]
            for _ in range(n):
                c.raw(line)

        yield batch
    finally:
        c.close()


@contextlib.contextmanager
def stdio_sdk(binary: str, root: Path, pid: str) -> Iterator[Batch]:
    """The SDK's client lives in one task on a loop in its own thread (anyio
    scopes must be left by the task that entered them); a batch is one
    coroutine submitted to it, so the hand-off is paid once per batch."""
    import threading

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=binary, args=["mcp", "--root", str(root), "--as", "agent:ada"])
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    state: Dict[str, Any] = {}

    async def serve() -> None:
        state["stop"] = asyncio.Event()
        async with Client(params, mode="legacy") as client:
            state["client"] = client
            ready.set()
            await state["stop"].wait()

    thread = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    thread.start()
    ready.wait(60)

    async def calls(n: int) -> None:
        client = state["client"]
        for _ in range(n):
            r = await client.call_tool("proposal.get", {"proposal_id": pid})
            assert not r.is_error

    try:
        yield lambda n: asyncio.run_coroutine_threadsafe(calls(n), loop).result()
    finally:
        loop.call_soon_threadsafe(state["stop"].set)
        thread.join(30)


@contextlib.contextmanager
def http_raw(binary: str, root: Path, pid: str) -> Iterator[Batch]:
    import http.client

    tokens = root.parent / "bench-tokens"
    tokens.write_text(f"{TOKEN} agent:ada\n")
    proc = subprocess.Popen([binary, "mcp", "--root", str(root), "--http", "127.0.0.1:0", "--tokens", str(tokens)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    try:
        url = json.loads(proc.stdout.readline())["url"]
        conn = http.client.HTTPConnection(url.split("//", 1)[1].split("/", 1)[0])
        headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        body = request("tools/call", {"name": "proposal.get", "arguments": {"proposal_id": pid}})

        def one() -> Any:
            try:
                conn.request("POST", "/mcp", body=body, headers=headers)
                resp = conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionError):
                # The server closes a connection idle for HEADER_READ_TIMEOUT
                # (5 s, e.g. between two runs): reconnect once.
                conn.close()
                conn.request("POST", "/mcp", body=body, headers=headers)
                resp = conn.getresponse()
            data = resp.read()
            assert resp.status == 200, (resp.status, data)
            return json.loads(data)

        assert one()["result"]["structuredContent"]["proposal"]["id"] == pid

        def batch(n: int) -> None:
            for _ in range(n):
                one()

        yield batch
    finally:
        proc.kill()
        proc.wait()


def render(rows: List[Tuple[str, float, float]], calls: int, runs: int, binary: str) -> str:
    base = rows[0][1]
    load = os.getloadavg()[0]
    lines = [
        "## MCP",
        "",
        START,
        f"Measured by `bench/mcp_bench.py` on {time.strftime('%Y-%m-%d')} (roundtable {roundtable.__version__}, "
        f"`{Path(binary).name}` from {Path(binary).parent.name}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, 1-min load {load:.1f}); `proposal.get` as an agent on a store in "
        f"{'/dev/shm' if str(ROOT_BASE).startswith('/dev/shm') else ROOT_BASE}, {calls:,} sequential calls "
        f"per run after {WARM} warm-up calls ({calls // 4:,} for the SDK), best of {runs} runs taken round robin (median beside it).",
        "",
        "| path | µs per call (best) | median | × binding |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, best, med in rows:
        lines.append(f"| {name} | {best:.1f} | {med:.1f} | {best / base:.2f}× |")
    stdio = rows[1][1] / base
    verdict = "met" if stdio <= 2.0 else "not met"
    lines += [
        "",
        f"Target: one stdio `tools/call` within 2× of the binding call: **{verdict}** ({stdio:.2f}×, raw client).",
    ]
    by = {name: best for name, best, _ in rows}
    sdk = next((v for k, v in by.items() if "SDK floor" in k), None)
    fs = next((v for k, v in by.items() if "server-filesystem" in k), None)
    if sdk is not None:
        ratio = rows[1][1] / sdk
        lines.append(
            f"Against the SDK floor (an rmcp echo server answering with the same bytes): roundtable "
            f"{rows[1][1]:.1f} µs, echo {sdk:.1f} µs: **{ratio:.2f}×** (target ≤ 1.5×: "
            f"{'met' if ratio <= 1.5 else 'not met'}).")
    if fs is not None:
        lines.append(
            f"Against `@modelcontextprotocol/server-filesystem` `read_file` ({fs:.1f} µs): "
            f"roundtable is {rows[1][1] / fs:.2f}× its time.")
    floors = [r for r in rows if r[0].startswith("pipe floor")]
    if floors:
        f = floors[0][1]
        lines.append(
            f"The pipe floor alone is {f / base:.2f}× the binding call; the server adds "
            f"{rows[1][1] - f:.0f} µs over it ({rows[1][1] / f:.2f}× the floor).")
    lines.append(END)
    return "\n".join(lines)


ROOT_BASE = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "target" / "release" / "roundtable"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--echo", help="the echo example (default: beside --bin, built when missing)")
    ap.add_argument("--no-node", action="store_true", help="skip @modelcontextprotocol/server-filesystem")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=ROOT_BASE) as d, contextlib.ExitStack() as stack:
        root = Path(d) / "repo"
        root.mkdir()
        pid = setup(root)
        last: List[bytes] = []
        paths: List[Tuple[str, Batch, int]] = [
            ("Python binding `engine.call`", stack.enter_context(binding(root, pid)), a.calls),
            ("MCP stdio `tools/call`, raw JSON-RPC client",
             stack.enter_context(stdio_raw(a.bin, root, pid, last)), a.calls),
            ("MCP stdio `tools/call`, official SDK `mcp.Client`",
             stack.enter_context(stdio_sdk(a.bin, root, pid)), max(a.calls // 4, 50)),
            ("MCP HTTP `tools/call`, raw keep-alive client", stack.enter_context(http_raw(a.bin, root, pid)),
             a.calls),
        ]
        result = json.loads(last[0])["result"]["structuredContent"]
        canned = Path(d) / "proposal.json"
        canned.write_text(json.dumps(result))
        echo = echo_binary(a.bin, a.echo)
        if echo is not None:
            paths.append(("MCP stdio `tools/call`, rmcp echo server (the SDK floor), raw client",
                          stack.enter_context(stdio_other([str(echo), str(canned)], "echo", {},
                                                          lambda r: r["result"]["structuredContent"] == result)),
                          a.calls))
        fs = None if a.no_node else filesystem_server()
        if fs is not None:
            paths.append(("MCP stdio `tools/call`, server-filesystem `read_file` (Node), raw client",
                          stack.enter_context(stdio_other(["node", str(fs), d], "read_file", {"path": str(canned)},
                                                          lambda r: "result" in r and not r["result"].get("isError"))),
                          a.calls))
        floor = stack.enter_context(pipe_floor(Path(d), last))
        if floor is not None:
            paths.append((f"pipe floor: C echo of the same {len(last[0]):,}-byte response line, no work",
                          floor, a.calls))
        for _, batch, n in paths:
            batch(WARM)
        # Round robin: every run times each path once, so a noisy moment
        # touches all of them alike.
        times: Dict[str, List[float]] = {name: [] for name, _, _ in paths}
        for r in range(a.runs):
            log(f"run {r + 1}/{a.runs}")
            for name, batch, n in paths:
                start = time.perf_counter()
                batch(n)
                times[name].append((time.perf_counter() - start) / n * 1e6)
        rows = [(name, min(times[name]), statistics.median(times[name])) for name, _, _ in paths]
    text = render(rows, a.calls, a.runs, a.bin)
    print(text)
    if a.write:
        md = BENCHMARKS_MD.read_text(encoding="utf-8")
        if START in md:
            head = md[:md.index(START)]
            head = head[:head.rindex("## MCP")]
            tail = md[md.index(END) + len(END):]
            md = head + text + tail
        else:
            md = md.rstrip("\n") + "\n\n" + text + "\n"
        BENCHMARKS_MD.write_text(md, encoding="utf-8")
        log(f"wrote {BENCHMARKS_MD}")


if __name__ == "__main__":
    main()
