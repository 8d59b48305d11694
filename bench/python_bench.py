#!/usr/bin/env python3
"""Python-binding benchmark: what `import roundtable` costs over the Rust core.

1. **Call overhead.** `proposal.get` on a warm store (one proposal with a
   small revision, durability "off", every call after 200 warm-up calls):
   `engine.call` from Python (dict in, dict out), `engine.call_json` (JSON
   text in and out), and the same `Engine::call` looped in Rust by the
   extension's `Engine._time_calls` (arguments decoded once and cloned per
   call, GIL released — the Rust call alone, on the same engine and store).
   Overhead = Python per-call time minus Rust per-call time.
2. **parse_patch throughput** against the `unidiff` package on the same
   large patch, both in this process from the same bytes in memory:
   `roundtable.parse_patch(data)` (parse + the summary as Python dicts) vs
   `unidiff.PatchSet(data.decode("utf-8", "surrogateescape"))`. The patch is
   the ~30 MB Django 3.2.25 → 4.2.16 git diff that bench/diff_bench.py
   prepares under /dev/shm/rt-bench (reused when present; made with
   diff_bench's own functions otherwise). Target: ≥ 20× faster.

Run it with the venv scripts/test-python made (the wheel installed there):

    target/py-venv/bin/python bench/python_bench.py [--write] [--runs N]

`--write` replaces the "Python" section of BENCHMARKS.md (between its
markers) with the table.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Tuple

import roundtable
from roundtable import Actor

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
START = "<!-- python-bench:start -->"
END = "<!-- python-bench:end -->"
SHM_PATCH = Path("/dev/shm/rt-bench/bench.patch")
MB = 1_000_000


def log(msg: str) -> None:
    print(f"[python-bench] {msg}", file=sys.stderr, flush=True)


def bench_patch() -> Path:
    """The diff bench's Django patch, made with diff_bench's own steps if missing."""
    if SHM_PATCH.exists():
        return SHM_PATCH
    sys.path.insert(0, str(HERE))
    import diff_bench  # type: ignore[import-not-found]

    diff_bench.SHM.mkdir(parents=True, exist_ok=True)
    old = diff_bench.fetch_sdist(diff_bench.DEFAULT_PACKAGE, diff_bench.DEFAULT_OLD)
    new = diff_bench.fetch_sdist(diff_bench.DEFAULT_PACKAGE, diff_bench.DEFAULT_NEW)
    diff_bench.unpack(old, diff_bench.SHM / "old")
    diff_bench.unpack(new, diff_bench.SHM / "new")
    info = diff_bench.make_patch(diff_bench.SHM)
    return Path(info.path)


def best_of(runs: int, fn: Callable[[], object]) -> Tuple[float, float]:
    times: List[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def call_overhead(calls: int, runs: int) -> dict:
    host = Actor.orchestrator("host")
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        (root / "app.py").write_text('print("hello")\n')
        with roundtable.open(root, durability="off") as engine:
            engine.call(host, "agent.register", {"agent_id": "ada", "roles": ["author"]})
            engine.call(host, "task.create", {"task_id": "t", "title": "bench"})
            pid = engine.session(Actor.agent("ada")).proposal_create(task_id="t", title="bench", summary_md="s", patch='--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print("hello")\n+print("hi")\n').proposal.id
            args = {"proposal_id": pid}
            text = '{"proposal_id": "%s"}' % pid
            for _ in range(200):
                engine.call(host, "proposal.get", args)
            out = engine.call(host, "proposal.get", args)
            assert out["proposal"]["id"] == pid

            def py_loop() -> None:
                call = engine.call
                for _ in range(calls):
                    call("proposal.get", args, host)

            def json_loop() -> None:
                call = engine.call_json
                for _ in range(calls):
                    call("proposal.get", text, host)

            inner = engine._inner
            rust_times = sorted(inner._time_calls(host, "proposal.get", args, calls) for _ in range(runs))
            py_best, py_med = best_of(runs, py_loop)
            js_best, js_med = best_of(runs, json_loop)
    rust_best, rust_med = rust_times[0], statistics.median(rust_times)
    us = lambda t: t / calls * 1e6  # noqa: E731
    return {
        "calls": calls,
        "rust_us": us(rust_best), "rust_med_us": us(rust_med),
        "py_us": us(py_best), "py_med_us": us(py_med),
        "json_us": us(js_best), "json_med_us": us(js_med),
        "result_keys": sorted(out),
    }


def parse_throughput(patch: Path, runs: int, unidiff_runs: int) -> dict:
    import unidiff

    data = patch.read_bytes()
    text = data.decode("utf-8", "surrogateescape")
    summary = roundtable.parse_patch(data)
    rt_files = len(summary["files"])
    rt_best, rt_med = best_of(runs, lambda: roundtable.parse_patch(data))
    ud_files = len(unidiff.PatchSet(text))
    ud_best, ud_med = best_of(unidiff_runs, lambda: unidiff.PatchSet(text))
    return {
        "bytes": len(data), "files": rt_files, "unidiff_files": ud_files,
        "rt_s": rt_best, "rt_med_s": rt_med, "ud_s": ud_best, "ud_med_s": ud_med,
        "unidiff_version": getattr(unidiff, "VERSION", "?"),
    }


def render(call: dict, parse: dict, runs: int) -> str:
    over = call["py_us"] - call["rust_us"]
    over_json = call["json_us"] - call["rust_us"]
    mbps = lambda s: parse["bytes"] / MB / s  # noqa: E731
    speedup = parse["ud_s"] / parse["rt_s"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return "\n".join([
        "## Python",
        "",
        START,
        f"Measured by `bench/python_bench.py` (roundtable {roundtable.__version__} release wheel, "
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"1-min load {load:.1f}); best of {runs}, median beside it.",
        "",
        f"**`engine.call` overhead**: `proposal.get` on a warm store, {call['calls']:,} calls per run.",
        "",
        "| call | µs per call (best) | median | overhead vs Rust |",
        "| --- | ---: | ---: | ---: |",
        f"| Rust `Engine::call` (looped in Rust by `Engine._time_calls`) | {call['rust_us']:.1f} | {call['rust_med_us']:.1f} | — |",
        f"| Python `engine.call` (dict → dict) | {call['py_us']:.1f} | {call['py_med_us']:.1f} | +{over:.1f} µs ({call['py_us'] / call['rust_us']:.2f}×) |",
        f"| Python `engine.call_json` (str → str) | {call['json_us']:.1f} | {call['json_med_us']:.1f} | +{over_json:.1f} µs ({call['json_us'] / call['rust_us']:.2f}×) |",
        "",
        "The overhead is the binding's: converting the argument dict to JSON, the",
        "result JSON to dicts, the GIL release/reacquire, and the Python-level",
        "`Engine.call` wrapper.",
        "",
        f"**`parse_patch` vs `unidiff`** on the Django 3.2.25 → 4.2.16 patch "
        f"({parse['bytes'] / MB:.1f} MB, {parse['files']:,} files), in-process, same bytes in memory:",
        "",
        "| parser | best | median | MB/s | files |",
        "| --- | ---: | ---: | ---: | ---: |",
        f"| `roundtable.parse_patch(data)` (parse + summary dicts) | {parse['rt_s'] * 1000:.0f} ms | {parse['rt_med_s'] * 1000:.0f} ms | {mbps(parse['rt_s']):.0f} | {parse['files']:,} |",
        f"| `unidiff.PatchSet(text)` ({parse['unidiff_version']}) | {parse['ud_s'] * 1000:.0f} ms | {parse['ud_med_s'] * 1000:.0f} ms | {mbps(parse['ud_s']):.1f} | {parse['unidiff_files']:,} |",
        "",
        f"roundtable is **{speedup:.0f}×** faster than unidiff (target ≥ 20×: "
        f"{'met' if speedup >= 20 else 'NOT met'}).",
        END,
        "",
    ])


def write(section: str) -> None:
    text = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else ""
    if START in text and END in text:
        head = text[: text.index(START)]
        head = head[: head.rfind("## Python")] if "## Python" in head else head
        tail = text[text.index(END) + len(END):].lstrip("\n")
        text = head + section + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    BENCHMARKS_MD.write_text(text, encoding="utf-8")
    log(f"wrote the Python section of {BENCHMARKS_MD}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help="update the Python section of BENCHMARKS.md")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--unidiff-runs", type=int, default=3)
    args = ap.parse_args()
    log("call overhead")
    call = call_overhead(args.calls, args.runs)
    log(f"patch: {bench_patch()}")
    parse = parse_throughput(bench_patch(), args.runs, args.unidiff_runs)
    section = render(call, parse, args.runs)
    print(section)
    if args.write:
        write(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
