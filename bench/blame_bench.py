#!/usr/bin/env python3
"""Blame benchmark (issue 36): `roundtable blame FILE --json` beside
`git blame --porcelain FILE` of the same file, in the same run, on a
5,000-line file whose history is 500 landings through roundtable.

Run from the repository root:

    python3 bench/blame_bench.py             # build the history, measure, print
    python3 bench/blame_bench.py --write     # ... and update BENCHMARKS.md
    python3 bench/blame_bench.py --keep      # leave the repository on /dev/shm

Standard library only (Python 3.11). Needs `git`, `cargo` and /dev/shm.

The history is real: every landing is `claim.acquire`, `proposal.create`
(a patch changing one to eight consecutive lines at a random place, by one
of five agents), `proposal.request_review`, `vote.cast` by a reviewer and
`patch.apply` by the orchestrator in git landing mode, each one
`roundtable call` process (the seed is fixed, so every run builds the same
file). No commit or store row is written by hand.

What is timed, whole processes start to exit, rounds interleaved (each
round runs both once, in alternating order), median and best of N:

- `roundtable blame FILE --json --root R` (git's blame as a subprocess,
  then the store's facts for each commit, the JSON printed to /dev/null);
- `git blame --porcelain FILE` in R (to /dev/null).

The ratio is roundtable's median over git's. Target: at most 2x.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHM = Path("/dev/shm/rt-blame-bench")
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
BIN = TARGET / "release" / "roundtable"
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
START_MARK = "<!-- blame-bench:start -->"
END_MARK = "<!-- blame-bench:end -->"
FILE = "src/big.txt"
AGENTS = ["ana", "ben", "cai", "dee", "eve"]
GIT_ENV = {
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def log(msg: str) -> None:
    print(f"[blame-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def env() -> dict[str, str]:
    e = dict(os.environ)
    e.update(GIT_ENV)
    return e


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=env(), check=True,
                          capture_output=True, text=True).stdout


def call(root: Path, tool: str, actor: str, args: dict) -> dict:
    r = subprocess.run([str(BIN), "call", tool, "--root", str(root), "--as", actor, "--args", "-"],
                       input=json.dumps(args), capture_output=True, text=True, env=env())
    if r.returncode != 0:
        raise SystemExit(f"{tool} as {actor} failed: {r.stdout}{r.stderr}")
    return json.loads(r.stdout)


def build() -> float:
    newest = max((p.stat().st_mtime for p in REPO.rglob("*")
                  if p.suffix in (".rs", ".toml") and "target" not in p.parts), default=0)
    if BIN.exists() and BIN.stat().st_mtime >= newest:
        return 0.0
    log("building: cargo build --release -p roundtable-cli")
    t0 = time.monotonic()
    subprocess.run(["cargo", "build", "--release", "-p", "roundtable-cli"], cwd=REPO, check=True)
    return time.monotonic() - t0


def hunk(path: str, old: list[str], new: list[str], start: int, end: int) -> str:
    """A patch with one hunk: lines start..end (0-based, end exclusive)
    changed, three lines of context each side; same line count."""
    a, b = max(0, start - 3), min(len(old), end + 3)
    out = [f"--- a/{path}\n", f"+++ b/{path}\n", f"@@ -{a + 1},{b - a} +{a + 1},{b - a} @@\n"]
    out += [f" {old[i]}\n" for i in range(a, start)]
    out += [f"-{old[i]}\n" for i in range(start, end)]
    out += [f"+{new[i]}\n" for i in range(start, end)]
    out += [f" {old[i]}\n" for i in range(end, b)]
    return "".join(out)


def make_history(root: Path, lines: int, landings: int, seed: int) -> dict:
    """The repository at `root`: a `lines`-line file, then `landings` real
    landings through roundtable. What it took."""
    if root.exists():
        shutil.rmtree(root)
    (root / "src").mkdir(parents=True)
    content = [f"line {n + 1} of the base" for n in range(lines)]
    (root / FILE).write_text("\n".join(content) + "\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    host = "orchestrator:host"
    call(root, "workspace.configure", host, {"landing": {"mode": "git", "branch": "main", "remote": None}})
    for a in AGENTS:
        call(root, "agent.register", host, {"agent_id": a, "roles": ["author"]})
    call(root, "agent.register", host, {"agent_id": "rev", "roles": ["reviewer"]})
    call(root, "task.create", host, {"task_id": "t1", "title": "Many small changes"})
    rng = random.Random(seed)
    t0 = time.monotonic()
    for i in range(landings):
        agent = f"agent:{AGENTS[i % len(AGENTS)]}"
        size = rng.randint(1, 8)
        start = rng.randrange(0, lines - size)
        new = list(content)
        for n in range(start, start + size):
            new[n] = f"line {n + 1} changed by {agent[6:]} in landing {i}"
        call(root, "claim.acquire", agent, {"resource_id": f"file:{FILE}", "type": "write", "ttl_s": 3600})
        pid = call(root, "proposal.create", agent, {
            "task_id": "t1", "title": f"Landing {i}", "summary_md": "Bench.",
            "patch": hunk(FILE, content, new, start, start + size)})["proposal"]["id"]
        call(root, "proposal.request_review", agent, {"proposal_id": pid})
        call(root, "vote.cast", "agent:rev", {"proposal_id": pid, "revision": 1, "vote": "approve"})
        out = call(root, "patch.apply", host, {"proposal_id": pid, "revision": 1})
        if out["transaction"]["status"] != "applied":
            raise SystemExit(f"landing {i}: {out}")
        content = new
        if (i + 1) % 50 == 0:
            log(f"{i + 1} landings ({time.monotonic() - t0:.0f} s)")
    if (root / FILE).read_text() != "\n".join(content) + "\n":
        raise SystemExit("the file is not what the landings made")
    commits = int(git(root, "rev-list", "--count", "main"))
    return {"build_history_s": time.monotonic() - t0, "commits": commits}


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env())
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"{cmd}: {r.stderr.decode(errors='replace')}")
    return dt


def check(root: Path, lines: int, landings: int) -> dict:
    """One untimed blame: every line is there, and every landing's lines
    that survive are governed."""
    r = subprocess.run([str(BIN), "blame", FILE, "--json", "--root", str(root)],
                       capture_output=True, text=True, env=env(), check=True)
    blame = json.loads(r.stdout)
    if blame["line_count"] != lines:
        raise SystemExit(f"blame gave {blame['line_count']} lines, not {lines}")
    governed = sum(r["end_line"] - r["start_line"] + 1 for r in blame["ranges"] if r["governed"])
    commits = len(blame["commits"])
    return {"ranges": len(blame["ranges"]), "governed_lines": governed, "blamed_commits": commits,
            "json_bytes": len(r.stdout)}


def measure(root: Path, rounds: int) -> dict:
    ours = [str(BIN), "blame", FILE, "--json", "--root", str(root)]
    theirs = ["git", "blame", "--porcelain", FILE]
    timed(ours, root), timed(theirs, root)  # warm the page cache
    rt, gt = [], []
    for i in range(rounds):
        pair = [(rt, ours), (gt, theirs)]
        for xs, cmd in (pair if i % 2 == 0 else pair[::-1]):
            xs.append(timed(cmd, root))
    return {"roundtable": rt, "git": gt}


def section(rep: dict) -> str:
    med = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    best = lambda xs: min(xs) * 1000  # noqa: E731
    t = rep["times"]
    ratio = statistics.median(t["roundtable"]) / statistics.median(t["git"])
    verdict = "met" if ratio <= 2.0 else "missed"
    c = rep["check"]
    return f"""\
Run {rep['date']} on {rep['machine']}, load average {rep['load_before']:.2f} before
and {rep['load_after']:.2f} after; `python3 bench/blame_bench.py` ({rep['rounds']}
rounds, interleaved). The file: {rep['lines']:,} lines, its history
{rep['landings']} landings through roundtable ({rep['commits']} commits on
`main`; every landing a real claim, proposal, review, vote and
`patch.apply` in git mode, built in {rep['build_history_s']:.0f} s). Blame
finds {c['blamed_commits']} commits, {c['ranges']} ranges, {c['governed_lines']:,}
governed lines; its JSON is {c['json_bytes'] / 1e6:.2f} MB.

| command | median | best |
| --- | ---: | ---: |
| `roundtable blame {FILE} --json` | {med(t['roundtable']):.0f} ms | {best(t['roundtable']):.0f} ms |
| `git blame --porcelain {FILE}` | {med(t['git']):.0f} ms | {best(t['git']):.0f} ms |

Ratio (medians): **{ratio:.2f}×** — target ≤ 2×: {verdict}.
"""


def write_benchmarks(text: str) -> None:
    md = BENCHMARKS_MD.read_text()
    if START_MARK not in md or END_MARK not in md:
        md = md.rstrip("\n") + ("\n\n## Provenance: blame (issue 36)\n\n"
                                "The figures between the markers are written by "
                                "`python3 bench/blame_bench.py --write`.\n\n"
                                + START_MARK + "\n" + END_MARK + "\n")
    head, rest = md.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    BENCHMARKS_MD.write_text(head + START_MARK + "\n" + text.strip() + "\n" + END_MARK + tail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lines", type=int, default=5000)
    ap.add_argument("--landings", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    ap.add_argument("--keep", action="store_true", help="keep the repository on /dev/shm")
    ap.add_argument("--reuse", action="store_true", help="reuse a kept repository")
    ap.add_argument("--bin", type=Path, help="this roundtable binary (default: a release build)")
    args = ap.parse_args()
    if not Path("/dev/shm").is_dir():
        raise SystemExit("needs /dev/shm")
    global BIN
    if args.bin:
        BIN = args.bin.resolve()
    else:
        build()
    root = SHM / "repo"
    meta_file = SHM / "history.json"
    if args.reuse and meta_file.exists():
        hist = json.loads(meta_file.read_text())
    else:
        log(f"building the history: {args.landings} landings on a {args.lines}-line file")
        hist = make_history(root, args.lines, args.landings, args.seed)
        meta_file.write_text(json.dumps(hist))
    rep = {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "lines": args.lines, "landings": args.landings, "rounds": args.rounds, **hist,
    }
    rep["check"] = check(root, args.lines, args.landings)
    rep["load_before"] = os.getloadavg()[0]
    rep["times"] = measure(root, args.rounds)
    rep["load_after"] = os.getloadavg()[0]
    text = section(rep)
    print(text)
    if args.write:
        write_benchmarks(text)
        log(f"wrote {BENCHMARKS_MD}")
    if not args.keep and not args.reuse:
        shutil.rmtree(SHM, ignore_errors=True)


if __name__ == "__main__":
    main()
