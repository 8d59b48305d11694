"""One engine shared by many threads, and the GIL released while it works."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Callable, List, Optional

import roundtable
from conftest import HOST

N = 8


def new_file_patch(path: str, lines: int) -> str:
    body = "".join(f"+line {i} of {path}\n" for i in range(lines))
    return f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}"


def test_eight_threads_propose_and_vote_while_another_validates(repo: Path) -> None:
    with roundtable.open(repo, durability="normal") as engine:
        for i in range(N):
            engine.call(HOST, "agent.register", {"agent_id": f"a{i}", "roles": ["author", "reviewer"]})
        engine.call(HOST, "task.create", {"task_id": "t", "title": "Many hands"})

        pids: List[Optional[str]] = [None] * N
        errors: List[BaseException] = []
        created = threading.Barrier(N)
        done = threading.Event()
        validations = [0]

        def guard(fn: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                try:
                    fn()
                except BaseException as e:  # noqa: BLE001 - reported below
                    errors.append(e)
                    created.abort()
            return run

        def worker(i: int) -> None:
            me = roundtable.Actor.agent(f"a{i}")
            pid = engine.session(me).proposal_create(task_id="t", title=f"file {i}", summary_md="s", patch=new_file_patch(f"new/f{i}.txt", 50)).proposal.id
            engine.call(me, "proposal.request_review", {"proposal_id": pid})
            pids[i] = pid
            created.wait(timeout=60)
            other = pids[(i + 1) % N]
            assert other is not None
            engine.session(me).vote_cast(proposal_id=other, revision=1, vote="approve", reason_md=f"a{i} approves").vote

        def validator() -> None:
            while not done.is_set():
                for pid in list(pids):
                    if pid is not None:
                        report = engine.session(HOST).patch_validate(proposal_id=pid)
                        assert report.proposal_id == pid
                        validations[0] += 1
                time.sleep(0)

        threads = [threading.Thread(target=guard(lambda i=i: worker(i))) for i in range(N)]
        checker = threading.Thread(target=guard(validator))
        checker.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        done.set()
        checker.join(timeout=120)
        assert not errors, errors

        assert validations[0] > 0
        for i, pid in enumerate(pids):
            assert pid is not None
            votes = engine.call(HOST, "vote.list", {"proposal_id": pid})["votes"]
            assert [v["agent_id"] for v in votes] == [f"a{(i - 1) % N}"]
        listed = engine.call(HOST, "proposal.list", {"task_id": "t"})["proposals"]
        assert len(listed) == N
        assert engine.call(HOST, "events.verify", {})["valid"] is True


class Counter:
    """A pure-Python loop in its own thread: it only advances while the
    thread that called into roundtable does not hold the GIL."""

    def __init__(self) -> None:
        self.n = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.n += 1

    def __enter__(self) -> "Counter":
        self._thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def baseline_rate() -> float:
    """Counter increments per second while the main thread just sleeps."""
    with Counter() as c:
        start_n, start = c.n, time.perf_counter()
        time.sleep(0.3)
        return (c.n - start_n) / (time.perf_counter() - start)


def assert_released(label: str, call: Callable[[], object], rate: float) -> None:
    with Counter() as c:
        before, start = c.n, time.perf_counter()
        call()
        elapsed = time.perf_counter() - start
        advanced = c.n - before
    expected = rate * elapsed
    print(f"{label}: {elapsed * 1000:.0f} ms, counter +{advanced} ({advanced / expected:.0%} of its free rate)")
    # Holding the GIL for the whole call would leave the counter at about
    # its switch-interval share (~0); released, it runs nearly freely.
    assert elapsed > 0.05, f"{label} was too short to tell ({elapsed:.3f}s)"
    assert advanced > 0.15 * expected, f"{label}: counter advanced {advanced}, expected ~{expected:.0f}"


def test_gil_is_released_during_a_long_apply(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    files = 6000
    patch = "".join(new_file_patch(f"d{i % 60}/f{i}.txt", 40) for i in range(files)).encode()
    rate = baseline_rate()
    assert_released("parse_patch", lambda: roundtable.parse_patch(patch), rate)
    assert_released("apply_patch (check)", lambda: roundtable.apply_patch(root, patch, check=True), rate)
    changes: List[object] = []
    assert_released("apply_patch", lambda: changes.extend(roundtable.apply_patch(root, patch)), rate)
    assert len(changes) == files
    assert (root / "d7" / "f7.txt").read_text().startswith("line 0 of d7/f7.txt\n")


def test_gil_is_released_during_engine_calls(tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    patch = "".join(new_file_patch(f"d{i % 40}/f{i}.txt", 40) for i in range(3000))
    with roundtable.open(root, durability="off") as engine:
        engine.call(HOST, "agent.register", {"agent_id": "a", "roles": ["author"]})
        engine.call(HOST, "task.create", {"task_id": "t", "title": "big"})
        rate = baseline_rate()
        out: List[str] = []
        assert_released(
            "proposal.create (3000 files)",
            lambda: out.append(engine.session(roundtable.Actor.agent("a")).proposal_create(task_id="t", title="big", summary_md="s", patch=patch).proposal.id),
            rate,
        )
        assert_released("patch.validate (3000 files)", lambda: engine.session(HOST).patch_validate(proposal_id=out[0]), rate)
