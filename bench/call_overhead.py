#!/usr/bin/env python3
"""Per-call overhead of each front end, side by side in one run (issue 19).

One workspace (one proposal with a small revision, durability "off"); the
same `proposal.get` call, looped after a warm-up, through:

- **C**: `rt_engine_call` (JSON text in, JSON text out, freed each call) —
  bench/call_overhead.c against the release `libroundtable.so`;
- **Python, typed**: `session.proposal_get(proposal_id=...)`, returning the
  generated `ProposalDetail` record;
- **Python, JSON values**: `engine.call(actor, "proposal.get", args)`;
- **Go, typed** and **Go, raw**: `BenchmarkProposalGetTyped` /
  `BenchmarkProposalGetRaw` of the Go module (go/), on the same workspace
  (`RT_BENCH_ROOT`, `RT_BENCH_PROPOSAL`).

Targets: Python ≤ 1.3× and Go typed ≤ 1.5× the C call. Run it with a
release wheel installed (the venv of bench/README.md):

    target/bench-venv/bin/python bench/call_overhead.py [--calls N] [--runs N] [--write]

`--write` replaces the "Per-call overhead" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

import roundtable
from roundtable import Actor

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
START = "<!-- call-overhead:start -->"
END = "<!-- call-overhead:end -->"

PATCH = """\
--- a/app.py
+++ b/app.py
@@ -1,3 +1,3 @@
 import sys
-print("hello")
+print("hello, world")
 sys.exit(0)
"""


def log(msg: str) -> None:
    print(f"[call-overhead] {msg}", file=sys.stderr, flush=True)


def sh(*args: str, env: Dict[str, str] | None = None, cwd: Path = REPO) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, env=env, cwd=cwd).stdout


def prepare(root: Path) -> str:
    (root / "app.py").write_text('import sys\nprint("hello")\nsys.exit(0)\n')
    with roundtable.open(root, durability="off") as engine:
        host = engine.session(Actor.orchestrator("host"))
        host.agent_register(agent_id="ada", roles=["author"])
        host.task_create(task_id="t", title="bench")
        ada = engine.session(Actor.agent("ada"))
        ada.claim_acquire(resource_id="file:app.py", type="write", ttl_s=3600)
        return ada.proposal_create(task_id="t", title="x", summary_md="y", patch=PATCH).proposal.id


def best_us(fn: Callable[[], object], calls: int, runs: int) -> List[float]:
    for _ in range(min(calls, 200)):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter() - start) * 1e6 / calls)
    return times


def build_c(env: Dict[str, str]) -> Path:
    log("cargo build --release -p roundtable-ffi")
    sh("cargo", "build", "--release", "--quiet", "-p", "roundtable-ffi", env=env)
    target = Path(env.get("CARGO_TARGET_DIR", REPO / "target")) / "release"
    sh("scripts/ffi-pc", str(target), env=env)
    env["PKG_CONFIG_PATH"] = str(target / "pkgconfig")
    flags = sh("pkg-config", "--cflags", "--libs", "roundtable", env=env).split()
    exe = target / "call_overhead"
    sh("cc", "-O2", "-o", str(exe), str(HERE / "call_overhead.c"), *flags, env=env)
    env["LD_LIBRARY_PATH"] = str(target)
    return exe


def go_bench(env: Dict[str, str], root: Path, pid: str, calls: int, runs: int) -> Dict[str, List[float]]:
    go_env = dict(env, RT_BENCH_ROOT=str(root), RT_BENCH_PROPOSAL=pid, GOTOOLCHAIN="local", CGO_ENABLED="1")
    out = sh(
        "go", "test", "-run", "^$", "-bench", "ProposalGet", "-benchtime", f"{calls}x", "-count", str(runs), ".",
        env=go_env, cwd=REPO / "go",
    )
    found: Dict[str, List[float]] = {}
    for name, ns in re.findall(r"^Benchmark(ProposalGet\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", out, re.M):
        found.setdefault(name, []).append(float(ns) / 1000)
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--skip-go", action="store_true")
    a = ap.parse_args()
    env = dict(os.environ)
    exe = build_c(env)
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as d:
        root = Path(d)
        pid = prepare(root)
        rows: Dict[str, List[float]] = {}
        log("C")
        out = sh(str(exe), str(root), pid, str(a.calls), str(a.runs), env=env)
        rows["C `rt_engine_call`"] = [float(x) for x in out.split()]
        with roundtable.open(root, durability="off") as engine:
            host = Actor.orchestrator("host")
            session = engine.session(host)
            args = {"proposal_id": pid}
            log("Python")
            rows["Python typed `session.proposal_get`"] = best_us(
                lambda: session.proposal_get(proposal_id=pid), a.calls, a.runs
            )
            rows["Python `engine.call` (dicts)"] = best_us(
                lambda: engine.call(host, "proposal.get", args), a.calls, a.runs
            )
        if not a.skip_go:
            log("Go")
            for name, times in go_bench(env, root, pid, a.calls, a.runs).items():
                label = {"ProposalGetTyped": "Go typed `Session.ProposalGet`", "ProposalGetRaw": "Go `Session.Call` (raw JSON)"}
                rows[label.get(name, name)] = times
    c_best = min(rows["C `rt_engine_call`"])
    lines = [
        f"`proposal.get` on a warm store, {a.calls} calls per run, best and median of {a.runs} runs, "
        "release builds, one process per front end, the same workspace on /dev/shm:",
        "",
        "| front end | best µs/call | median µs/call | × C (best) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, times in rows.items():
        lines.append(f"| {name} | {min(times):.2f} | {statistics.median(times):.2f} | {min(times) / c_best:.2f}× |")
    table = "\n".join(lines)
    print(table)
    if a.write:
        text = BENCHMARKS_MD.read_text()
        if START in text:
            text = text[: text.index(START) + len(START)] + "\n" + table + "\n" + text[text.index(END):]
            BENCHMARKS_MD.write_text(text)
        else:
            log(f"BENCHMARKS.md has no {START} marker: not written")


if __name__ == "__main__":
    main()
