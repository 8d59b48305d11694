#!/usr/bin/env python3
"""Waiting benchmark (issue 16 item 4): how fast `events.wait` wakes when
another process commits, and what a waiter costs while nothing happens.

1. **Wake latency.** This process opens a workspace on /dev/shm and starts a
   second Python process on it (the committer). Each trial: the waiter tells
   the committer "go" through a pipe and blocks in `session.events_wait(...)`
   (kinds `task.created`, timeout 10 s); the committer sleeps 20 ms (so the
   waiter is asleep), creates a task and reports `time.monotonic_ns()`
   (system-wide CLOCK_MONOTONIC, comparable across processes) taken just
   before and just after the call. Latency = the waiter's monotonic time when
   `events_wait` returned minus the committer's time when its call returned
   (also shown from when it started). Target: p99 <= 50 ms over 100 trials.
2. **Idle CPU.** One `events_wait` call with a 10 s timeout and no commits;
   the process's CPU time (user + system, every thread: the waiter and the
   store's watcher thread) over the wall time. Target: < 1% of a core.

3. **Idle CPU of cancellable waits** (issue 32 item 3). `--waiters` (100)
   threads each block in one `events.wait` of `--idle-s` with a `Cancel`
   handle (the way the MCP server calls: every call it makes is
   cancellable), nothing committed; the process's CPU over the wall time.
   A cancel wakes such a wait directly, so it sleeps without looking at its
   handle: target < 1% of a core (a wait that looked every 5 ms cost ~100
   wake-ups a second per waiter).

Run it with the venv scripts/test-python made (the wheel installed there):

    target/py-venv/bin/python bench/wait_bench.py [--trials N] [--idle-s S]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import List

import roundtable
from roundtable import Actor

HOST = Actor.orchestrator("host")

COMMITTER = r"""
import sys, time, roundtable
from roundtable import Actor
other = Actor.orchestrator("committer")
with roundtable.open(sys.argv[1]) as engine:
    print("ready", flush=True)
    n = 0
    for line in sys.stdin:
        if line.strip() != "go":
            break
        time.sleep(0.02)
        n += 1
        t0 = time.monotonic_ns()
        engine.call(other, "task.create", {"task_id": f"t{n}", "title": "wake"})
        t1 = time.monotonic_ns()
        print(t0, t1, flush=True)
"""


def log(msg: str) -> None:
    print(f"[wait-bench] {msg}", file=sys.stderr, flush=True)


def pct(xs: List[float], p: float) -> float:
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100 * (len(xs) - 1)))))
    return xs[k]


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--idle-s", type=float, default=10.0)
    ap.add_argument("--waiters", type=int, default=100)
    ap.add_argument("--durability", default="full", choices=["full", "normal", "off"])
    args = ap.parse_args()
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=base) as d:
        root = Path(d)
        (root / "README.md").write_text("wait bench\n")
        with roundtable.open(root, durability=args.durability) as engine:
            engine.call(HOST, "task.create", {"task_id": "t0", "title": "seed"})
            child = subprocess.Popen(
                [sys.executable, "-c", COMMITTER, str(root)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            )
            assert child.stdin is not None and child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            since = engine.session(HOST).events_wait(since_seq=0, timeout_ms=0).head_seq
            after_end: List[float] = []
            after_start: List[float] = []
            for i in range(args.trials):
                child.stdin.write("go\n")
                child.stdin.flush()
                page = engine.session(HOST).events_wait(since_seq=since, kinds=["task.created"], timeout_ms=10000)
                woke = time.monotonic_ns()
                t0, t1 = (int(x) for x in child.stdout.readline().split())
                if page.timed_out or page.events[0].subject != f"t{i + 1}":
                    raise SystemExit(f"trial {i}: woke without the committed event: {page}")
                since = page.next_since_seq
                after_end.append((woke - t1) / 1e6)
                after_start.append((woke - t0) / 1e6)
            child.stdin.write("stop\n")
            child.stdin.close()
            child.wait(timeout=30)

            log(f"idle: one events_wait of {args.idle_s:.0f} s with nothing committed")
            c0, w0 = cpu_s(), time.monotonic()
            page = engine.session(HOST).events_wait(since_seq=since, timeout_ms=int(args.idle_s * 1000))
            c1, w1 = cpu_s(), time.monotonic()
            assert page.timed_out

            log(f"idle: {args.waiters} cancellable events.wait calls of {args.idle_s:.0f} s with nothing committed")
            cancels = [roundtable.Cancel() for _ in range(args.waiters)]
            pages: List[dict] = []

            def wait(cancel: "roundtable.Cancel") -> None:
                pages.append(engine.call(HOST, "events.wait",
                                         {"since_seq": since, "timeout_ms": int(args.idle_s * 1000)},
                                         cancel=cancel))

            threads = [threading.Thread(target=wait, args=(c,)) for c in cancels]
            for t in threads:
                t.start()
            time.sleep(0.5)  # every wait registered and asleep
            m0, v0 = cpu_s(), time.monotonic()
            time.sleep(max(0.0, args.idle_s - 1.5))
            m1, v1 = cpu_s(), time.monotonic()
            for t in threads:
                t.join()
            assert len(pages) == args.waiters and all(p["timed_out"] for p in pages)
    idle_pct = (c1 - c0) / (w1 - w0) * 100
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpus, Python {platform.python_version()}, roundtable {roundtable.__version__}, durability {args.durability}")
    print(f"wake latency after another process's commit returned, {args.trials} trials: "
          f"p50 {pct(after_end, 50):.2f} ms, p99 {pct(after_end, 99):.2f} ms, max {max(after_end):.2f} ms (target p99 <= 50 ms)")
    print(f"  from the commit call's start: p50 {pct(after_start, 50):.2f} ms, p99 {pct(after_start, 99):.2f} ms"
          f" (commit itself: median {statistics.median(a - b for a, b in zip(after_start, after_end)):.2f} ms)")
    print(f"idle waiter CPU over {w1 - w0:.1f} s: {c1 - c0:.4f} s = {idle_pct:.3f}% of a core (target < 1%)")
    many_pct = (m1 - m0) / (v1 - v0) * 100
    print(f"{args.waiters} idle cancellable waiters, CPU over {v1 - v0:.1f} s: {m1 - m0:.4f} s = {many_pct:.3f}% of a core (target < 1%)")
    ok = pct(after_end, 99) <= 50 and idle_pct < 1 and many_pct < 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
