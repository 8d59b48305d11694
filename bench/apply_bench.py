#!/usr/bin/env python3
"""Transaction benchmark: a governed, durable `patch.apply` of the large real
diff from the diff-engine benchmark (Django 3.2.25 -> 4.2.16, ~30 MB, 3,384
files) against `git apply` of the same patch into an identical copy of the
old tree, in one run, on the same file system.

Run from the repository root:

    python3 bench/apply_bench.py               # tmpfs only; print the table
    python3 bench/apply_bench.py --disk        # ... and the project disk too
    python3 bench/apply_bench.py --write       # ... and update BENCHMARKS.md

Standard library only. Reuses bench/diff_bench.py's sdist cache and patch
maker. Respects CARGO_TARGET_DIR. See bench/README.md for the method.

Per run and file system: two fresh `cp -a` copies of the old tree (not
timed). In the governed copy the `apply` bench binary (`prepare ROOT PATCH`)
registers an author and a reviewer, makes a task, takes a `directory:.`
write claim, creates the proposal, requests review and casts an approval
(not timed; `max_patch_bytes` raised to 64 MiB because the default 16 MiB
refuses the 30 MB patch). Then, timed, each a whole process:

  1. `roundtable call patch.validate` (the re-validation alone, read-only),
  2. `roundtable call patch.apply` (durability full: apply lock,
     re-validation, before snapshot journaled into SQLite, staged writes and
     renames, syncfs, final commit),
  3. `git apply --binary PATCH` with cwd = the other copy,
  4. `roundtable call transaction.list` in an empty workspace (process start,
     store open: the fixed cost of any CLI call).

The order of 2 and 3 alternates between runs. Both trees are compared with
the new tree afterwards (the governed one without `.roundtable/`). The
apply's phases come from its timestamps (milliseconds): process start ->
transaction `created_at` (journal transaction begins: open, evidence,
re-validation, snapshot read) -> `written` phase (journal committed, files
written and flushed) -> process exit (final commit, output).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import diff_bench as db  # noqa: E402

REPO = db.REPO
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
if not TARGET.is_absolute():
    TARGET = REPO / TARGET
BIN = TARGET / "release" / "roundtable"
# One directory per run: two people benching at once must not delete each
# other's trees.
SHM = Path(f"/dev/shm/rt-apply-bench-big-{os.getpid()}")
DISK = REPO / "bench" / "work" / "apply-disk"
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
START_MARK = "<!-- apply-bench:start -->"
END_MARK = "<!-- apply-bench:end -->"
TARGET_RATIO = 1.5


def log(msg: str) -> None:
    print(f"[apply-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def build() -> Path:
    """Build the CLI and the `apply` bench binary (release); the latter's path."""
    t0 = time.monotonic()
    subprocess.run(["cargo", "build", "--release", "-p", "roundtable-cli"], cwd=REPO, check=True)
    r = subprocess.run(["cargo", "bench", "-p", "roundtable", "--bench", "apply", "--no-run",
                        "--message-format=json"], cwd=REPO, check=True, stdout=subprocess.PIPE,
                       text=True)
    exe = None
    for line in r.stdout.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "apply" \
                and m.get("executable"):
            exe = Path(m["executable"])
    if not exe:
        sys.exit("cargo bench --no-run did not report the apply bench executable")
    log(f"built in {time.monotonic() - t0:.0f} s: {BIN}, {exe}")
    return exe


def run(cmd: list[str], cwd: Path | None = None) -> tuple[float, float, float, int, bytes, bytes, float]:
    """(wall seconds, start epoch s, end epoch s, exit status, stdout, stderr, CPU seconds).

    CPU is the child's user + system time (wait4): on a loaded shared
    machine it is the steadier figure."""
    out_path, err_path = SHM / ".stdout", SHM / ".stderr"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        w0 = time.time()
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _pid, status, ru = os.wait4(p.pid, 0)
        t1 = time.perf_counter()
        w1 = time.time()
    rc = os.waitstatus_to_exitcode(status)
    return (t1 - t0, w0, w1, rc, out_path.read_bytes(), err_path.read_bytes(),
            ru.ru_utime + ru.ru_stime)


def call(tool: str, root: Path, actor: str, args: dict) -> list[str]:
    return [str(BIN), "call", tool, "--root", str(root), "--as", actor, "--args", json.dumps(args)]


def ok_json(res, what: str) -> dict:
    secs, _w0, _w1, rc, out, err, _cpu = res
    if rc != 0:
        sys.exit(f"{what} failed (exit {rc}): {out[-3000:]!r} {err[-3000:]!r}")
    return json.loads(out)


def epoch_ms(ts) -> float:
    """A store timestamp (`2026-12-03T10:43:58.911Z`, or milliseconds) in epoch ms."""
    if isinstance(ts, (int, float)):
        return float(ts)
    d = _dt.datetime.strptime(ts.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
    return d.replace(tzinfo=_dt.timezone.utc).timestamp() * 1000


def snapshot_without_store(root: Path) -> None:
    """Move `.roundtable/` aside so the tree compares with `new`."""
    store = root / ".roundtable"
    if store.exists():
        store.rename(root.parent / (root.name + ".store"))


def one_run(place: Path, old: Path, new: Path, new_snap: dict, patch: Path, prep_exe: Path,
            n: int) -> dict:
    gov, peer, empty = place / f"gov{n}", place / f"git{n}", place / f"empty{n}"
    for d in (gov, peer, empty):
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(d.parent / (d.name + ".store"), ignore_errors=True)
    db.copy_tree(old, gov)
    db.copy_tree(old, peer)
    empty.mkdir()
    t0 = time.monotonic()
    prep = ok_json(run([str(prep_exe), "prepare", str(gov), str(patch)]), "prepare")
    prep_s = time.monotonic() - t0
    pid = prep["proposal_id"]

    res: dict = {"prepare_s": prep_s}
    v = run(call("patch.validate", gov, "agent:alice", {"proposal_id": pid}))
    report = ok_json(v, "patch.validate")
    if not report.get("valid"):
        sys.exit(f"patch.validate says invalid: {json.dumps(report)[:3000]}")
    res["validate_s"] = v[0]
    res["validate_cpu"] = v[6]

    def governed():
        a = run(call("patch.apply", gov, "orchestrator:host", {"proposal_id": pid, "revision": 1}))
        out = ok_json(a, "patch.apply")
        t = out["transaction"]
        if t["status"] != "applied" or t["durability"] != "full":
            sys.exit(f"unexpected transaction: {t}")
        res["apply_s"] = a[0]
        res["apply_cpu"] = a[6]
        res["apply_start"], res["apply_end"] = a[1], a[2]
        res["tx"] = t

    def git():
        g = run(["git", "apply", "--binary", str(patch)], cwd=peer)
        if g[3] != 0:
            sys.exit(f"git apply failed: {g[5][-2000:]!r}")
        res["git_s"] = g[0]
        res["git_cpu"] = g[6]
        res["git_err"] = g[5]

    for step in ((governed, git) if n % 2 == 0 else (git, governed)):
        step()
    b = run(call("transaction.list", empty, "orchestrator:host", {}))
    ok_json(b, "transaction.list")
    res["cli_floor_s"] = b[0]
    res["cli_floor_cpu"] = b[6]

    phases = ok_json(run(call("transaction.phases", gov, "orchestrator:host",
                              {"transaction_id": res["tx"]["id"]})), "transaction.phases")
    at = {p["phase"]: epoch_ms(p["at"]) for p in phases["phases"]}
    created = epoch_ms(res["tx"]["created_at"])
    start_ms, end_ms = res["apply_start"] * 1000, res["apply_end"] * 1000
    res["phase_ms"] = {
        "to_journal": created - start_ms,
        "journal_and_writes": at["written"] - created,
        "commit_and_exit": end_ms - at["written"],
    }
    snapshot_without_store(gov)
    for name, root in (("governed", gov), ("git", peer)):
        d = db.compare_trees(root, new, new_snap)
        if d.total:
            sys.exit(f"{name} tree {root} differs from new: {d.summary()}; git stderr: "
                     f"{res.get('git_err', b'')[-500:]!r}")
    res.pop("git_err", None)
    for d in (gov, peer, empty):
        shutil.rmtree(d, ignore_errors=True)
        shutil.rmtree(d.parent / (d.name + ".store"), ignore_errors=True)
    log(f"{place} run {n}: validate {res['validate_s'] * 1e3:.0f} ms, governed apply "
        f"{res['apply_s'] * 1e3:.0f} ms, git apply {res['git_s'] * 1e3:.0f} ms, "
        f"CLI floor {res['cli_floor_s'] * 1e3:.0f} ms; CPU validate {res['validate_cpu'] * 1e3:.0f} ms, "
        f"apply {res['apply_cpu'] * 1e3:.0f} ms, git {res['git_cpu'] * 1e3:.0f} ms; phases {res['phase_ms']}")
    return res


def fs_type(path: Path) -> str:
    r = subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True)
    return r.stdout.strip() or "?"


def med(xs: list[float]) -> float:
    return statistics.median(xs)


def render(places: list[dict], info: db.PatchInfo, mach: dict, load: tuple, took: float,
           runs: int) -> str:
    L = []
    L.append(f"Measured {time.strftime('%Y-%m-%d')} on {mach['nproc']} cores, {mach['cpu']}, "
             f"{mach['mem']} RAM, Linux {mach['kernel']}; {mach['git']}, {mach['rustc']}, "
             f"Python {mach['python']}.")
    L.append("")
    L.append(f"Patch: the diff-engine benchmark's Django {db.DEFAULT_OLD} → {db.DEFAULT_NEW} patch, "
             f"**{info.size / 1e6:.1f} MB, {info.files:,} files** ({info.binary} `GIT binary patch`, "
             f"{info.new} new, {info.deleted} deleted, {info.renames} renames), applied to a copy of "
             f"the old tree ({info.old_files:,} files).")
    L.append("")
    L.append(f"1-minute load average {load[0]:.2f} before the timed runs, {load[1]:.2f} after.")
    L.append("")
    L.append(f"Median (and best) of {runs} runs, whole process. Governed: `roundtable call "
             "patch.apply` as an orchestrator, durability `full`, after an untimed setup (agents, "
             "task, `directory:.` claim, proposal, review, approval); `git apply --binary` into an "
             "identical copy, same file system, order alternating. Both trees equal the new tree "
             "in every run.")
    L.append("")
    L.append("| file system | governed `patch.apply` | `git apply` | ratio (target ≤ 1.5×) | "
             "`patch.validate` alone | CLI floor | setup (untimed) |")
    L.append("|---|---:|---:|---:|---:|---:|---:|")
    for p in places:
        rs = p["runs"]
        ga = [r["apply_s"] for r in rs]
        gi = [r["git_s"] for r in rs]
        ratio = med(ga) / med(gi)
        p["ratio"] = ratio
        L.append(f"| {p['label']} | {med(ga) * 1e3:.0f} ms ({min(ga) * 1e3:.0f}) | "
                 f"{med(gi) * 1e3:.0f} ms ({min(gi) * 1e3:.0f}) | "
                 f"**{ratio:.2f}×** ({'met' if ratio <= TARGET_RATIO else 'NOT met'}) | "
                 f"{med([r['validate_s'] for r in rs]) * 1e3:.0f} ms | "
                 f"{med([r['cli_floor_s'] for r in rs]) * 1e3:.0f} ms | "
                 f"{med([r['prepare_s'] for r in rs]):.1f} s |")
    L.append("")
    L.append("CPU time (user + system, median) of the same runs — steadier than wall time when "
             "the shared machine is loaded:")
    L.append("")
    L.append("| file system | governed `patch.apply` | `git apply` | ratio | `patch.validate` alone | "
             "CLI floor |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for p in places:
        rs = p["runs"]
        ga, gi = med([r["apply_cpu"] for r in rs]), med([r["git_cpu"] for r in rs])
        p["cpu_ratio"] = ga / gi
        L.append(f"| {p['label']} | {ga * 1e3:.0f} ms | {gi * 1e3:.0f} ms | {ga / gi:.2f}× | "
                 f"{med([r['validate_cpu'] for r in rs]) * 1e3:.0f} ms | "
                 f"{med([r['cli_floor_cpu'] for r in rs]) * 1e3:.0f} ms |")
    L.append("")
    L.append("Where the governed apply's time goes (medians, from its own millisecond timestamps):")
    L.append("")
    L.append("| file system | start → journal begins (open, evidence, re-validation, snapshot) | "
             "journal + writes + flushes | final commit + exit |")
    L.append("|---|---:|---:|---:|")
    for p in places:
        rs = p["runs"]
        ph = {k: med([r["phase_ms"][k] for r in rs]) for k in rs[0]["phase_ms"]}
        L.append(f"| {p['label']} | {ph['to_journal']:.0f} ms | {ph['journal_and_writes']:.0f} ms | "
                 f"{ph['commit_and_exit']:.0f} ms |")
    L.append("")
    L.append("Targets:")
    L.append("")
    for p in places:
        rs = p["runs"]
        L.append(f"- governed apply within {TARGET_RATIO}× of `git apply` on {p['label']}: "
                 f"**{'met' if p['ratio'] <= TARGET_RATIO else 'NOT met'}** "
                 f"({med([r['apply_s'] for r in rs]) * 1e3:.0f} ms vs "
                 f"{med([r['git_s'] for r in rs]) * 1e3:.0f} ms, {p['ratio']:.2f}× wall; "
                 f"{p['cpu_ratio']:.2f}× CPU)")
    L.append("")
    L.append(f"The whole run took {took:.0f} s (`python3 bench/apply_bench.py"
             f"{' --disk' if len(places) > 1 else ''}`).")
    return "\n".join(L)


def write_benchmarks(section: str) -> None:
    text = BENCHMARKS_MD.read_text()
    if START_MARK not in text or END_MARK not in text:
        text = text.rstrip("\n") + "\n\n" + START_MARK + "\n" + END_MARK + "\n"
    head, rest = text.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    BENCHMARKS_MD.write_text(head + START_MARK + "\n" + section.strip() + "\n" + END_MARK + tail)
    log(f"updated {BENCHMARKS_MD.relative_to(REPO)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per file system; median reported (5)")
    ap.add_argument("--disk", action="store_true", help=f"also measure on the project disk ({DISK})")
    ap.add_argument("--write", action="store_true", help="update the apply-bench section of BENCHMARKS.md")
    ap.add_argument("--wait-idle", type=float, default=60, metavar="SECONDS",
                    help="wait up to this long for load average < 0.5 before timing (60)")
    ap.add_argument("--prepare-exe", metavar="PATH",
                    help="use this built `apply` bench binary; skip the cargo builds")
    ap.add_argument("--keep", action="store_true", help=f"keep {SHM} afterwards")
    args = ap.parse_args()
    started = time.monotonic()
    prep_exe = Path(args.prepare_exe) if args.prepare_exe else build()
    try:
        SHM.mkdir(parents=True, exist_ok=True)
        old, new = SHM / "old", SHM / "new"
        db.unpack(db.fetch_sdist(db.DEFAULT_PACKAGE, db.DEFAULT_OLD), old)
        db.unpack(db.fetch_sdist(db.DEFAULT_PACKAGE, db.DEFAULT_NEW), new)
        info = db.make_patch(SHM)
        patch = SHM / "bench.patch"
        new_snap = db._snapshot(new)
        log(f"patch {info.size / 1e6:.1f} MB, {info.files} files")
        places = [{"label": f"tmpfs (/dev/shm, {fs_type(SHM)})", "dir": SHM / "runs", "runs": []}]
        if args.disk:
            DISK.mkdir(parents=True, exist_ok=True)
            places.append({"label": f"project disk ({DISK.relative_to(REPO)}, {fs_type(DISK)})",
                           "dir": DISK, "runs": []})
        for p in places:
            p["dir"].mkdir(parents=True, exist_ok=True)
        db.wait_idle(args.wait_idle)
        load0 = os.getloadavg()[0]
        for n in range(args.runs):
            for p in places:
                p["runs"].append(one_run(p["dir"], old, new, new_snap, patch, prep_exe, n))
        load1 = os.getloadavg()[0]
    finally:
        if not args.keep:
            shutil.rmtree(SHM, ignore_errors=True)
        shutil.rmtree(DISK, ignore_errors=True)
    section = render(places, info, db.machine(), (load0, load1), time.monotonic() - started,
                     args.runs)
    print(section)
    out = REPO / "bench" / "work" / "apply-last-run.json"
    out.write_text(json.dumps([{"label": p["label"], "runs": p["runs"]} for p in places], indent=1))
    if args.write:
        write_benchmarks(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
