"""The engine and the process it lives in (issue 31 items 21 and 22): the
standard library's sqlite3 opening and closing the store costs no
acknowledged write, and an engine inherited across fork() refuses every
call with InheritedEngine instead of hanging."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

import roundtable
from conftest import HOST

# Another host process: open the workspace, do one thing, close.
WORKER = """
import sys, roundtable
root, what, task = sys.argv[1:4]
host = roundtable.Actor.orchestrator("host")
with roundtable.open(root) as engine:
    if what == "create":
        engine.call(host, "task.create", {"task_id": task, "title": "From another process"})
    else:
        engine.call(host, "task.get", {"task_id": task})
"""


def in_another_process(root: Path, what: str, task: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WORKER, str(root), what, task],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the locks are held per open file description on Linux")
def test_item21_stdlib_sqlite3_closing_the_store_loses_no_write(repo: Path) -> None:
    db = repo / ".roundtable" / "store.db"
    with roundtable.open(repo) as engine:
        engine.call(HOST, "task.create", {"task_id": "before", "title": "Before"})
        since = engine.call(HOST, "events.list", {})["events"][-1]["seq"]
        # Waits in flight while the host reads the store with sqlite3.
        errors: List[BaseException] = []
        stop = threading.Event()

        def waiter() -> None:
            seen = since
            try:
                while not stop.is_set():
                    page = engine.call(HOST, "events.wait", {"since_seq": seen, "timeout_ms": 200})
                    if page["events"]:
                        seen = page["events"][-1]["seq"]
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        waiters = [threading.Thread(target=waiter) for _ in range(20)]
        for t in waiters:
            t.start()
        try:
            for round in range(3):
                # The host's own look at the store: read-only, then closed.
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                try:
                    assert con.execute("SELECT count(*) FROM tasks").fetchone()[0] >= 1
                finally:
                    con.close()
                theirs, ours = f"theirs-{round}", f"ours-{round}"
                done = in_another_process(repo, "create", theirs)
                assert done.returncode == 0, done.stderr
                # Acknowledged here…
                engine.call(HOST, "task.create", {"task_id": ours, "title": "Ours"})
                # …so there for every other process.
                for task in (ours, theirs, "before"):
                    seen = in_another_process(repo, "get", task)
                    assert seen.returncode == 0, f"round {round}: {task} lost for another process: {seen.stderr}"
                engine.call(HOST, "task.get", {"task_id": theirs})
        finally:
            stop.set()
            for t in waiters:
                t.join(timeout=60)
        assert not errors, errors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork()")
@pytest.mark.filterwarnings("ignore:.*fork.*:DeprecationWarning")
def test_item22_a_forked_child_gets_inherited_engine_fast(repo: Path) -> None:
    with roundtable.open(repo, durability="off") as engine:
        engine.call(HOST, "task.create", {"task_id": "t0", "title": "Before the forks"})
        stop = threading.Event()
        errors: List[BaseException] = []

        def busy(i: int) -> None:
            n = 0
            try:
                while not stop.is_set():
                    engine.call(HOST, "task.create", {"task_id": f"busy-{i}-{n}", "title": "Busy"})
                    engine.call(HOST, "task.list", {})
                    n += 1
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=busy, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        try:
            time.sleep(0.05)
            for child in range(4):
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:  # pragma: no cover - the child
                    os.close(r)
                    verdict = "ran"
                    try:
                        engine.call(HOST, "task.create", {"task_id": f"child-{child}", "title": "From a child"})
                    except roundtable.InheritedEngine as e:
                        ok = e.code == "inherited_engine" and e.details["pid"] == os.getpid() and e.details["opened_by_pid"] == os.getppid()
                        verdict = "refused" if ok else f"refused badly: {e.details}"
                    except BaseException as e:  # noqa: BLE001 - reported to the parent
                        verdict = f"{type(e).__name__}: {e}"
                    os.write(w, verdict.encode())
                    os.close(w)
                    # Half the children end normally: closing the inherited
                    # engine must neither hang nor touch the parent's store.
                    if child % 2:
                        engine.close()
                    os._exit(0)
                os.close(w)
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    got, status = os.waitpid(pid, os.WNOHANG)
                    if got == pid:
                        break
                    time.sleep(0.01)
                else:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    pytest.fail(f"child {child} hung")
                with os.fdopen(r) as f:
                    verdict = f.read()
                assert verdict == "refused", f"child {child}: {verdict}"
                assert os.waitstatus_to_exitcode(status) == 0
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=60)
        assert not errors, errors
        # The parent goes on; no child wrote.
        engine.call(HOST, "task.create", {"task_id": "after", "title": "After the forks"})
        for child in range(4):
            with pytest.raises(roundtable.NotFound):
                engine.call(HOST, "task.get", {"task_id": f"child-{child}"})
    seen = in_another_process(repo, "get", "after")
    assert seen.returncode == 0, seen.stderr
