#!/usr/bin/env python3
"""Diff-engine benchmark: roundtable's patch parser and applier against git,
GNU patch and Python's `unidiff`, on a real tens-of-MB patch between two
releases of a PyPI package's source distribution.

Run from the repository root:

    python3 bench/diff_bench.py            # measure, print the table
    python3 bench/diff_bench.py --write    # ... and update BENCHMARKS.md

Standard library only (Python 3.11), plus `unidiff`, which it installs with pip
if it is missing. See bench/README.md for what is measured and how.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = REPO / "bench" / "work" / "sdist"
SHM = Path("/dev/shm/rt-bench")
BIN = REPO / "target" / "release" / "roundtable"
BENCHMARKS_MD = REPO / "BENCHMARKS.md"
START_MARK = "<!-- diff-bench:start -->"
END_MARK = "<!-- diff-bench:end -->"

# Django 3.2.25 -> 4.2.16: a ~30 MB git patch of ~3,400 files, ~390 of them
# `GIT binary patch` hunks (compiled .mo catalogues, images, fonts), plus a few
# renames, mode lines, new and deleted files and a non-ASCII path.
# (numpy was tried first: its sdists need a full meson build just for pip
# to prepare their metadata, so `pip download --no-binary :all:` fails.)
DEFAULT_PACKAGE = "Django"
DEFAULT_OLD = "3.2.25"
DEFAULT_NEW = "4.2.16"

MB = 1_000_000  # throughput is in decimal MB/s; memory in MiB


def log(msg: str) -> None:
    print(f"[diff-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Fetching, unpacking, making the patch
# --------------------------------------------------------------------------


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_sdist(name: str, version: str) -> Path | None:
    if not CACHE.is_dir():
        return None
    want = [f"{_norm(name)}-{version}{ext}" for ext in (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")]
    for p in sorted(CACHE.iterdir()):
        stem = p.name
        # Normalise the name part only (everything before "-<version>").
        if stem.lower().replace("_", "-") in want:
            return p
    return None


def fetch_sdist(name: str, version: str) -> Path:
    hit = find_sdist(name, version)
    if hit:
        log(f"using cached {hit.relative_to(REPO)}")
        return hit
    CACHE.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           f"{name}=={version}", "-d", str(CACHE)]
    log("fetching: " + " ".join(cmd[2:]))
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    PHASES["download"] = PHASES.get("download", 0.0) + time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"pip download failed for {name}=={version}:\n{r.stdout[-3000:]}")
    hit = find_sdist(name, version)
    if not hit:
        sys.exit(f"pip download succeeded but no sdist for {name}=={version} in {CACHE}")
    return hit


def unpack(archive: Path, dest: Path) -> None:
    """Unpack an sdist so that its single top directory becomes `dest`."""
    tmp = dest.with_name(dest.name + ".unpack")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.mkdir(parents=True)
    with tarfile.open(archive) as tf:
        if hasattr(tarfile, "data_filter"):
            tf.extractall(tmp, filter="data")
        else:  # pragma: no cover - Python < 3.11.4
            tf.extractall(tmp)
    tops = list(tmp.iterdir())
    if len(tops) == 1 and tops[0].is_dir():
        tops[0].rename(dest)
        tmp.rmdir()
    else:
        tmp.rename(dest)


_DIFF_GIT = re.compile(rb'^diff --git ("?)[ab]/(?:old|new)/(.*) ("?)[ab]/(?:old|new)/(.*)$')
_SIDE = re.compile(rb'^(---|\+\+\+) ("?)([ab])/(?:old|new)/(.*)$')
_FROMTO = re.compile(rb'^(rename from|rename to|copy from|copy to) ("?)(?:old|new)/(.*)$')


def strip_top_component(patch: bytes) -> bytes:
    """Turn `git diff --no-index old new` paths (a/old/X, b/new/X, and `rename
    from old/X`) into ordinary -p1 paths (a/X, b/X, `rename from X`).

    Only extended-header lines are rewritten: a header runs from a column-0
    `diff --git ` (which no hunk line can be: those start with ' ', '+', '-'
    or '\\', and base85 binary lines have no spaces) to the first `@@ ` or
    `GIT binary patch` line.
    """
    out = []
    in_header = False
    for line in patch.split(b"\n"):
        if line.startswith(b"diff --git "):
            in_header = True
            m = _DIFF_GIT.match(line)
            if not m:
                raise ValueError(f"unexpected diff --git line: {line[:200]!r}")
            line = b"diff --git %sa/%s %sb/%s" % m.groups()
        elif in_header:
            if line.startswith(b"@@ ") or line.startswith(b"GIT binary patch") or line.startswith(b"Binary files "):
                in_header = False
            elif line.startswith(b"--- ") or line.startswith(b"+++ "):
                m = _SIDE.match(line)
                if m:
                    line = b"%s %s%s/%s" % m.groups()
                elif line not in (b"--- /dev/null", b"+++ /dev/null"):
                    raise ValueError(f"unexpected file line: {line[:200]!r}")
            else:
                m = _FROMTO.match(line)
                if m:
                    line = b"%s %s%s" % m.groups()
        out.append(line)
    return b"\n".join(out)


@dataclass
class PatchInfo:
    path: Path
    size: int
    files: int
    binary: int
    renames: int
    new: int
    deleted: int
    mode_changes: int
    old_files: int
    new_files: int
    old_bytes: int
    new_bytes: int


def tree_stats(root: Path) -> tuple[int, int]:
    n = size = 0
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            n += 1
            size += os.lstat(os.path.join(dirpath, f)).st_size
    return n, size


def make_patch(work: Path) -> PatchInfo:
    raw = work / "raw.patch"
    with open(raw, "wb") as fh:
        r = subprocess.run(["git", "diff", "--no-index", "--binary", "-M", "--src-prefix=a/",
                            "--dst-prefix=b/", "old", "new"], cwd=work, stdout=fh,
                           stderr=subprocess.PIPE)
    # --no-index exits 1 when the trees differ.
    if r.returncode not in (0, 1):
        sys.exit(f"git diff --no-index failed: {r.stderr.decode(errors='replace')}")
    data = strip_top_component(raw.read_bytes())
    raw.unlink()
    path = work / "bench.patch"
    path.write_bytes(data)
    lines = data.split(b"\n")
    count = lambda prefix: sum(1 for ln in lines if ln.startswith(prefix))  # noqa: E731
    of, ob = tree_stats(work / "old")
    nf, nb = tree_stats(work / "new")
    return PatchInfo(path=path, size=len(data), files=count(b"diff --git "),
                     binary=count(b"GIT binary patch"), renames=count(b"rename from "),
                     new=count(b"new file mode "), deleted=count(b"deleted file mode "),
                     mode_changes=count(b"old mode "), old_files=of, new_files=nf,
                     old_bytes=ob, new_bytes=nb)


def copy_tree(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True)


# --------------------------------------------------------------------------
# Tree comparison
# --------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[str, bool]]:
    """relpath -> (kind, executable) for every non-directory entry."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            full = os.path.join(dirpath, f)
            st = os.lstat(full)
            kind = "link" if os.path.islink(full) else "file"
            out[os.path.relpath(full, root)] = (kind, bool(st.st_mode & 0o100))
    return out


@dataclass
class TreeDiff:
    missing: int = 0
    extra: int = 0
    content: int = 0
    mode: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.missing + self.extra + self.content + self.mode

    def summary(self) -> str:
        if not self.total:
            return "identical"
        return (f"{self.total} mismatches (missing {self.missing}, extra {self.extra}, "
                f"content {self.content}, mode {self.mode})")


def compare_trees(got: Path, want: Path, want_snap: dict) -> TreeDiff:
    d = TreeDiff()
    have = _snapshot(got)

    def ex(s: str) -> None:
        if len(d.examples) < 5:
            d.examples.append(s)

    for rel in want_snap.keys() - have.keys():
        d.missing += 1
        ex(f"missing {rel}")
    for rel in have.keys() - want_snap.keys():
        d.extra += 1
        ex(f"extra {rel}")
    for rel in want_snap.keys() & have.keys():
        wk, wx = want_snap[rel]
        hk, hx = have[rel]
        a, b = got / rel, want / rel
        if wk != hk:
            same = False
        elif wk == "link":
            same = os.readlink(a) == os.readlink(b)
        else:
            with open(a, "rb") as fa, open(b, "rb") as fb:
                same = fa.read() == fb.read()
        if not same:
            d.content += 1
            ex(f"content {rel}")
        elif wx != hx:
            d.mode += 1
            ex(f"mode {rel}")
    return d


# --------------------------------------------------------------------------
# Measuring one process
# --------------------------------------------------------------------------


@dataclass
class Run:
    seconds: float
    rc: int
    maxrss_kib: int
    stdout: bytes = b""
    stderr: bytes = b""


PHASES: dict[str, float] = {}  # seconds spent fetching / building, when that happened
TIME_BIN: str | None = None  # /usr/bin/time, found (or installed) by find_time()


def find_time() -> str | None:
    """GNU time, for the child's peak RSS. It must be a separate small process:
    Linux keeps a process's RSS high-water mark across exec, so a child forked
    straight from this (large) Python would report Python's RSS as its own."""
    for cand in ("/usr/bin/time",):
        if os.access(cand, os.X_OK):
            return cand
    if shutil.which("apt-get") and os.geteuid() == 0:
        log("installing GNU time: apt-get install -y time")
        for pre in ([], [["apt-get", "update", "-q"]]):
            for c in pre + [["apt-get", "install", "-y", "-q", "time"]]:
                subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if os.access("/usr/bin/time", os.X_OK):
                break
        if os.access("/usr/bin/time", os.X_OK):
            return "/usr/bin/time"
    log("GNU time unavailable: peak RSS from wait4 includes this script's own RSS")
    return None


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def measure(cmd: list[str], cwd: Path, keep_stdout: bool = False, timeout: float = 1800,
            env: dict | None = None) -> Run:
    """Run `cmd` once: wall time (process start to reap), exit status, and the
    child's own peak RSS (GNU time's %M, i.e. the child's ru_maxrss)."""
    out_path = SHM / ".stdout"
    err_path = SHM / ".stderr"
    rss_path = SHM / ".rss"
    full = [TIME_BIN, "-f", "%M", "-o", str(rss_path), *cmd] if TIME_BIN else cmd
    with open(out_path if keep_stdout else os.devnull, "wb") as out, open(err_path, "wb") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(full, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             start_new_session=True, env=env)
        killer = threading.Timer(timeout, _killpg, (p.pid,))
        killer.start()
        try:
            _pid, status, ru = os.wait4(p.pid, 0)
        finally:
            t1 = time.perf_counter()
            killer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    stdout = out_path.read_bytes() if keep_stdout else b""
    stderr = err_path.read_bytes()
    rss = ru.ru_maxrss
    if TIME_BIN:
        try:
            rss = int(rss_path.read_text().strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            rss = 0
    return Run(t1 - t0, p.returncode, rss, stdout, stderr)


# --------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    kind: str  # "parse" | "check" | "apply"
    runs: list[Run] = field(default_factory=list)
    trees: list[TreeDiff] = field(default_factory=list)
    note: str = ""
    failed: bool = False

    @property
    def best(self) -> float:
        return min(r.seconds for r in self.runs)

    @property
    def median(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def rss_kib(self) -> int:
        return max(r.maxrss_kib for r in self.runs)

    @property
    def rcs(self) -> list[int]:
        return sorted({r.rc for r in self.runs})


def needs_build() -> bool:
    if not BIN.exists():
        return True
    bin_mtime = BIN.stat().st_mtime
    newest = 0.0
    roots = [REPO / "Cargo.toml", REPO / "Cargo.lock", REPO / "roundtable", REPO / "roundtable-cli"]
    for root in roots:
        if root.is_file():
            newest = max(newest, root.stat().st_mtime)
            continue
        for dirpath, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("target", ".git")]
            for f in files:
                if f.endswith((".rs", ".toml")):
                    newest = max(newest, os.stat(os.path.join(dirpath, f)).st_mtime)
    return newest > bin_mtime


def build_roundtable() -> str | None:
    """Build the CLI if needed. Returns None on success, else the error."""
    if not needs_build():
        log(f"{BIN.relative_to(REPO)} is up to date")
        return None
    log("building: cargo build --release -p roundtable-cli")
    t0 = time.monotonic()
    r = subprocess.run(["cargo", "build", "--release", "-p", "roundtable-cli"], cwd=REPO,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    PHASES["cargo build"] = time.monotonic() - t0
    if r.returncode != 0 or not BIN.exists():
        return r.stdout[-4000:]
    return None


def ensure_unidiff() -> str | None:
    """Returns unidiff's version, installing it if needed; None if impossible."""
    probe = [sys.executable, "-c", "import importlib.metadata as m; print(m.version('unidiff'))"]
    r = subprocess.run(probe, capture_output=True, text=True)
    if r.returncode != 0:
        log("installing unidiff with pip")
        i = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "unidiff"],
                           capture_output=True, text=True)
        if i.returncode != 0:
            log("pip install unidiff failed: " + i.stderr[-500:])
            return None
        r = subprocess.run(probe, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


UNIDIFF_SNIPPET = textwrap.dedent("""
    import sys
    from unidiff import PatchSet
    ps = PatchSet(open(sys.argv[1], encoding='utf-8', errors='surrogateescape'))
    print(len(ps))
""")


def cargo_bench(patch: Path, timeout: float) -> str | None:
    """Run `cargo bench -p roundtable --bench parse` if that target exists."""
    r = subprocess.run(["cargo", "metadata", "--no-deps", "--format-version", "1"], cwd=REPO,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None
    meta = json.loads(r.stdout)
    found = any(
        t["name"] == "parse" and "bench" in t["kind"]
        for p in meta["packages"] if p["name"] == "roundtable"
        for t in p["targets"]
    )
    if not found:
        log("no `parse` bench in roundtable: skipping cargo bench")
        return None
    log("running: cargo bench -p roundtable --bench parse (RT_BENCH_PATCH set)")
    env = dict(os.environ, RT_BENCH_PATCH=str(patch))
    t0 = time.monotonic()
    try:
        b = subprocess.run(["cargo", "bench", "-p", "roundtable", "--bench", "parse"],
                           cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"(cargo bench timed out after {timeout:.0f} s)"
    PHASES["cargo bench (build and run)"] = time.monotonic() - t0
    text = b.stdout.strip()
    if b.returncode != 0:
        text += f"\n(cargo bench exited {b.returncode})\n" + b.stderr[-2000:]
    return text or "(cargo bench printed nothing on stdout)"


def wait_idle(limit: float) -> float:
    """Wait (up to `limit` s) for the 1-minute load average to drop below 0.5:
    on a 2-core machine a concurrent cargo build skews every number."""
    t0 = time.monotonic()
    first = True
    while os.getloadavg()[0] >= 0.5 and time.monotonic() - t0 < limit:
        if first:
            log(f"load average {os.getloadavg()[0]:.2f}: waiting up to {limit:.0f} s for idle")
            first = False
        time.sleep(5)
    if os.getloadavg()[0] >= 0.5:
        log(f"measuring under load {os.getloadavg()[0]:.2f} (ratios still compare like with like)")
    return time.monotonic() - t0


def run_benchmark(args) -> dict:
    global TIME_BIN
    t_start = time.perf_counter()
    SHM.mkdir(parents=True, exist_ok=True)
    TIME_BIN = find_time()

    # 1. Sources and the patch.
    old_sd = fetch_sdist(args.package, args.old)
    new_sd = fetch_sdist(args.package, args.new)
    log(f"unpacking into {SHM}")
    unpack(old_sd, SHM / "old")
    unpack(new_sd, SHM / "new")
    log("git diff --no-index --binary -M old new")
    info = make_patch(SHM)
    patch = info.path
    log(f"patch: {info.size / MB:.1f} MB, {info.files} files, {info.binary} binary, "
        f"{info.renames} renames")
    # git must accept it with -p1 against a copy of the old tree.
    probe = SHM / "probe"
    copy_tree(SHM / "old", probe)
    chk = subprocess.run(["git", "apply", "--check", str(patch)], cwd=probe, capture_output=True,
                         text=True)
    if chk.returncode != 0:
        sys.exit(f"git apply --check refuses the generated patch:\n{chk.stderr[-3000:]}")
    shutil.rmtree(probe)
    new_snap = _snapshot(SHM / "new")

    # 2. roundtable.
    rt_error = None
    if args.skip_roundtable:
        rt_error = "skipped (--skip-roundtable)"
    else:
        rt_error = build_roundtable()
    have_rt = rt_error is None

    # 3. Peers' versions.
    unidiff_version = None if args.skip_unidiff else ensure_unidiff()

    rb = str(BIN)
    P = str(patch)
    parse_tools: list[tuple[str, list[str]]] = []
    if have_rt:
        parse_tools.append(("roundtable patch parse", [rb, "patch", "parse", P]))
    parse_tools.append(("git apply --numstat", ["git", "apply", "--numstat", P]))
    if unidiff_version:
        parse_tools.append((f"unidiff {unidiff_version} PatchSet",
                            [sys.executable, "-c", UNIDIFF_SNIPPET, P]))

    check_tools: list[tuple[str, list[str]]] = []
    if have_rt:
        check_tools.append(("roundtable patch apply --check",
                            [rb, "patch", "apply", "--root", "{root}", "--check", P]))
    check_tools.append(("git apply --check", ["git", "apply", "--check", P]))

    apply_tools: list[tuple[str, list[str]]] = []
    if have_rt:
        apply_tools.append(("roundtable patch apply", [rb, "patch", "apply", "--root", "{root}", P]))
    apply_tools.append(("git apply --binary", ["git", "apply", "--binary", P]))
    apply_tools.append(("GNU patch -p1", ["patch", "-p1", "-s", "-i", P]))

    results: dict[str, Result] = {}
    for name, _ in parse_tools:
        results[name] = Result(name, "parse")
    for name, _ in check_tools:
        results[name] = Result(name, "check")
    for name, _ in apply_tools:
        results[name] = Result(name, "apply")

    # Sanity pass for roundtable parse: exit 0 and one entry per `diff --git`.
    rt_parse_note = ""
    if have_rt:
        r = measure([rb, "patch", "parse", P], cwd=SHM, keep_stdout=True)
        if r.rc != 0:
            rt_parse_note = f"exit {r.rc}: {r.stdout[:300]!r} {r.stderr[:300]!r}"
        else:
            try:
                n = len(json.loads(r.stdout)["files"])
                rt_parse_note = (f"{n} files reported" + ("" if n == info.files else
                                 f" -- MISMATCH, patch has {info.files}"))
            except (ValueError, KeyError, TypeError) as e:
                rt_parse_note = f"output is not {{\"files\":[...]}} JSON: {e}"
        results["roundtable patch parse"].note = rt_parse_note
        log("roundtable parse sanity: " + rt_parse_note)

    waited = wait_idle(args.wait_idle)
    load_before = os.getloadavg()
    runs = args.runs
    # Round-robin: each round runs every tool once, so drift hits all alike.
    for i in range(runs):
        log(f"round {i + 1}/{runs}: parse")
        for name, cmd in parse_tools:
            res = results[name]
            if res.failed:
                continue
            r = measure(cmd, cwd=SHM, keep_stdout=name.startswith("unidiff"))
            res.runs.append(r)
            if r.rc != 0:
                res.note = f"exit {r.rc}: " + r.stderr.decode(errors="replace").strip()[-300:]
                if name.startswith("unidiff"):
                    res.failed = True
            elif name.startswith("unidiff"):
                res.note = f"{r.stdout.decode().strip()} files parsed"
        log(f"round {i + 1}/{runs}: check")
        check_root = SHM / "check-root"
        copy_tree(SHM / "old", check_root)
        for name, cmd in check_tools:
            cmd = [c.replace("{root}", str(check_root)) for c in cmd]
            r = measure(cmd, cwd=check_root, keep_stdout=True)
            results[name].runs.append(r)
            if r.rc != 0:
                results[name].note = (f"exit {r.rc}: " + (r.stdout + r.stderr).decode(
                    errors="replace").strip()[-300:])
        shutil.rmtree(check_root)
        log(f"round {i + 1}/{runs}: apply")
        for name, cmd in apply_tools:
            root = SHM / "apply-root"
            copy_tree(SHM / "old", root)  # excluded from the timing
            cmd = [c.replace("{root}", str(root)) for c in cmd]
            r = measure(cmd, cwd=root, keep_stdout=True)
            res = results[name]
            res.runs.append(r)
            td = compare_trees(root, SHM / "new", new_snap)
            res.trees.append(td)
            if r.rc != 0 and not res.note:
                res.note = (f"exit {r.rc}: " + (r.stdout + r.stderr).decode(
                    errors="replace").strip()[:300])
            shutil.rmtree(root)

    load_after = os.getloadavg()
    cargo_out = None
    if have_rt and not args.skip_cargo_bench:
        cargo_out = cargo_bench(patch, args.cargo_bench_timeout)

    elapsed = time.perf_counter() - t_start
    return {
        "info": info, "results": results, "rt_error": rt_error, "cargo_bench": cargo_out,
        "unidiff_version": unidiff_version, "elapsed": elapsed, "runs": runs,
        "package": args.package, "old": args.old, "new": args.new,
        "load": (load_before[0], load_after[0]), "waited": waited,
    }


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def _tool_version(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "?"


def machine() -> dict:
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    except OSError:
        pass
    return {
        "nproc": len(os.sched_getaffinity(0)), "cpu": cpu, "mem": mem,
        "kernel": platform.release(),
        "git": _tool_version(["git", "--version"]),
        "patch": _tool_version(["patch", "--version"]),
        "rustc": _tool_version(["rustc", "--version"]),
        "python": platform.python_version(),
    }


def fmt_s(x: float) -> str:
    return f"{x * 1000:.0f} ms" if x < 10 else f"{x:.1f} s"


def render(report: dict, mach: dict) -> str:
    info: PatchInfo = report["info"]
    results: dict[str, Result] = report["results"]
    size_mib = info.size / (1 << 20)
    lines = []
    w = lines.append
    w(f"Measured {_dt.date.today().isoformat()} on {mach['nproc']} cores, {mach['cpu']}, "
      f"{mach['mem']} RAM, Linux {mach['kernel']}; {mach['git']}, {mach['patch']}, "
      f"{mach['rustc']}, Python {mach['python']}.")
    w("")
    w(f"Patch: `git diff --no-index --binary -M` between the sdists of "
      f"{report['package']} {report['old']} and {report['new']} "
      f"({info.old_files} → {info.new_files} files, {info.old_bytes / MB:.0f} → "
      f"{info.new_bytes / MB:.0f} MB unpacked): **{info.size / MB:.1f} MB "
      f"({info.size:,} bytes), {info.files:,} files** — {info.binary} `GIT binary patch`, "
      f"{info.new} new, {info.deleted} deleted, {info.renames} renames, "
      f"{info.mode_changes} mode changes.")
    w("")
    w(f"1-minute load average {report['load'][0]:.2f} before the timed runs, "
      f"{report['load'][1]:.2f} after.")
    w("")
    w(f"Best of {report['runs']} runs, whole process (start to exit), on tmpfs; each apply "
      f"goes into a fresh copy of the old tree (copy not timed). MB/s is patch bytes "
      f"(10⁶) per second; peak RSS is the child's `ru_maxrss`, shown also as a "
      f"multiple of the patch size "
      f"({'GNU time %M' if TIME_BIN else 'wait4, includes the parent script'}).")
    w("")
    if report["rt_error"]:
        w(f"**roundtable not measured**: {report['rt_error'].strip().splitlines()[-1][:300]}")
        w("")
    rt_for = {"parse": "roundtable patch parse", "check": "roundtable patch apply --check",
              "apply": "roundtable patch apply"}
    w("| step | tool | best | median | MB/s | peak RSS | RSS / patch | roundtable speed-up | result |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for res in results.values():
        if not res.runs:
            w(f"| {res.kind} | {res.name} | – | – | – | – | – | – | {res.note or 'not run'} |")
            continue
        rt = results.get(rt_for[res.kind])
        if rt and rt.runs and rt is not res and not rt.failed:
            ratio = f"{res.best / rt.best:.2f}×"
        else:
            ratio = "—"
        status = []
        rcs = res.rcs
        status.append("exit " + "/".join(map(str, rcs)))
        if res.trees:
            worst = max(res.trees, key=lambda t: t.total)
            status.append("tree " + worst.summary())
        if res.note:
            status.append(res.note.replace("|", "\\|").replace("\n", " ")[:160])
        if res.failed:
            status.append("FAILED")
        mbps = info.size / MB / res.best
        rss_mib = res.rss_kib / 1024
        w(f"| {res.kind} | {res.name} | {fmt_s(res.best)} | {fmt_s(res.median)} | {mbps:.0f} | "
          f"{rss_mib:.0f} MiB | {rss_mib / size_mib:.2f}× | {ratio} | {'; '.join(status)} |")
    w("")
    w("“roundtable speed-up” is the peer's best time over roundtable's (above 1 means "
      "roundtable is faster).")
    w("")
    # Targets.
    rp, gp = results.get("roundtable patch parse"), results.get("git apply --numstat")
    ra, ga = results.get("roundtable patch apply"), results.get("git apply --binary")
    if rp and rp.runs and ra and ra.runs:
        w("Targets:")
        w("")

        def verdict(ok: bool) -> str:
            return "**met**" if ok else "**missed**"

        w(f"- parse at least as fast as `git apply --numstat`: {verdict(rp.best <= gp.best)} "
          f"({fmt_s(rp.best)} vs {fmt_s(gp.best)}, {gp.best / rp.best:.2f}×)")
        ok_tree = all(t.total == 0 for t in ra.trees) and ra.rcs == [0]
        w(f"- apply no slower than `git apply`: {verdict(ra.best <= ga.best)} "
          f"({fmt_s(ra.best)} vs {fmt_s(ga.best)}, {ga.best / ra.best:.2f}×); result tree "
          f"{'equals' if ok_tree else 'DOES NOT equal'} the new tree in every run")
        rss_x = ra.rss_kib * 1024 / info.size
        w(f"- apply peak RSS under 3× the patch: {verdict(rss_x < 3)} "
          f"({ra.rss_kib / 1024:.0f} MiB = {rss_x:.2f}× of {size_mib:.1f} MiB); parse peak RSS "
          f"{rp.rss_kib / 1024:.0f} MiB = {rp.rss_kib * 1024 / info.size:.2f}×")
        w("")
    if report["cargo_bench"]:
        w("`cargo bench -p roundtable --bench parse` (in-process, same patch):")
        w("")
        w("```text")
        out = report["cargo_bench"].strip().splitlines()
        if len(out) > 40:
            out = ["…"] + out[-40:]
        w("\n".join(out))
        w("```")
        w("")
    waited = report.get("waited", 0.0)
    w(f"The whole run took {report['elapsed'] - waited:.0f} s (`python3 bench/diff_bench.py`"
      + (f", plus {waited:.0f} s waiting for the machine to go idle" if waited >= 1 else "")
      + "".join(f", {k} {v:.0f} s" for k, v in PHASES.items()) + ").")
    return "\n".join(lines)


BENCHMARKS_SKELETON = f"""# Benchmarks

## Diff engine

How fast roundtable parses and applies a large real-world git patch, against
`git apply`, GNU `patch` and Python's `unidiff`. The figures below are written
by `python3 bench/diff_bench.py --write` (see `bench/README.md` for the method);
do not edit them by hand.

{START_MARK}
{END_MARK}
"""


def write_benchmarks(section: str) -> None:
    text = BENCHMARKS_MD.read_text() if BENCHMARKS_MD.exists() else BENCHMARKS_SKELETON
    if START_MARK not in text or END_MARK not in text:
        text = text.rstrip("\n") + "\n\n" + START_MARK + "\n" + END_MARK + "\n"
    head, rest = text.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    BENCHMARKS_MD.write_text(head + START_MARK + "\n" + section.strip() + "\n" + END_MARK + tail)
    log(f"updated {BENCHMARKS_MD.relative_to(REPO)}")


def save_json(report: dict, mach: dict) -> None:
    info: PatchInfo = report["info"]
    out = {
        "date": _dt.date.today().isoformat(), "machine": mach,
        "package": report["package"], "old": report["old"], "new": report["new"],
        "patch": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(info).items()},
        "elapsed_s": report["elapsed"], "waited_s": report["waited"], "load": report["load"], "roundtable_error": report["rt_error"],
        "cargo_bench": report["cargo_bench"],
        "results": {
            name: {
                "kind": r.kind, "seconds": [x.seconds for x in r.runs],
                "exit": [x.rc for x in r.runs], "maxrss_kib": [x.maxrss_kib for x in r.runs],
                "trees": [vars(t) for t in r.trees], "note": r.note, "failed": r.failed,
            } for name, r in report["results"].items()
        },
    }
    dest = REPO / "bench" / "work" / "last-run.json"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true",
                    help="update the diff-bench section of BENCHMARKS.md")
    ap.add_argument("--runs", type=int, default=5, help="runs per tool; best is reported (5)")
    ap.add_argument("--package", default=DEFAULT_PACKAGE)
    ap.add_argument("--old", default=DEFAULT_OLD, help="old release")
    ap.add_argument("--new", default=DEFAULT_NEW, help="new release")
    ap.add_argument("--skip-roundtable", action="store_true",
                    help="measure the peers only (no cargo build)")
    ap.add_argument("--skip-unidiff", action="store_true")
    ap.add_argument("--skip-cargo-bench", action="store_true")
    ap.add_argument("--cargo-bench-timeout", type=float, default=2400)
    ap.add_argument("--wait-idle", type=float, default=300, metavar="SECONDS",
                    help="wait up to this long for load average < 0.5 before timing (300)")
    ap.add_argument("--keep", action="store_true", help=f"keep {SHM} afterwards")
    args = ap.parse_args()
    if not Path("/dev/shm").is_dir():
        sys.exit("/dev/shm is needed (tmpfs keeps file-heavy work off the disk)")
    try:
        report = run_benchmark(args)
    finally:
        if not args.keep:
            shutil.rmtree(SHM, ignore_errors=True)
    mach = machine()
    section = render(report, mach)
    print(section)
    save_json(report, mach)
    if args.write:
        if report["rt_error"]:
            log("not writing BENCHMARKS.md: roundtable was not measured")
            return 1
        write_benchmarks(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
