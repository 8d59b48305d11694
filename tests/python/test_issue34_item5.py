"""Issue 34 item 5, the Python binding: roundtable.aio runs on threads of its
own (long polls do not starve a host), sessions take timeout_ms/cancel,
roundtable.worker (Worker, AsyncWorker, ClaimKeeper) and make_patch."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

import roundtable
from roundtable import Actor
from roundtable.aio import AsyncEngine, AsyncSession
from roundtable.worker import AsyncWorker, ClaimKeeper, Worker
from conftest import HOST, files, store_rows

ADA = Actor.agent("ada")
REX = Actor.agent("rex")


def setup_fleet(engine: roundtable.Engine) -> None:
    """ada the author, rex the reviewer, a task."""
    host = engine.session(HOST)
    host.agent_register(agent_id="ada", roles=["author"])
    host.agent_register(agent_id="rex", roles=["reviewer"])
    host.task_create(task_id="t", title="Files")


def propose(author: roundtable.Session, name: str, old: Optional[str], new: Optional[str]) -> str:
    """A proposal of ``name`` from ``old`` to ``new``, claimed and in review."""
    author.claim_acquire(resource_id=f"file:{name}", type="write", ttl_s=600)
    created = author.proposal_create(
        task_id="t",
        title=name,
        summary_md="made by make_patch",
        patch=roundtable.make_patch(name, old, new),
        risk="low",
        affected_resources=[f"file:{name}"],
    )
    author.proposal_request_review(proposal_id=created.proposal.id)
    return created.proposal.id


async def land(author: AsyncSession, reviewer: AsyncSession, host: AsyncSession, name: str) -> None:
    """Create ``name`` through one governed change: claim, propose, review, vote, apply."""
    await author.claim_acquire(resource_id=f"file:{name}", type="write", ttl_s=600)
    created = await author.proposal_create(
        task_id="t",
        title=name,
        summary_md="one landing",
        patch=roundtable.make_patch(name, None, f"{name}\n"),
        risk="low",
        affected_resources=[f"file:{name}"],
    )
    pid = created.proposal.id
    await author.proposal_request_review(proposal_id=pid)
    await reviewer.vote_cast(proposal_id=pid, revision=1, vote="approve")
    applied = await host.patch_apply(proposal_id=pid, revision=1)
    assert applied.transaction.status == "applied"


def test_issue34_item5_aio_waiters_do_not_starve_the_host(repo: Path, engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    aengine = AsyncEngine(engine)

    async def main() -> Tuple[float, float, float]:
        # A small default executor, as on a 2-core machine: an AsyncEngine
        # that ran its calls there would queue the host behind the waiters.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(4))
        author, reviewer, host = aengine.session(ADA), aengine.session(REX), aengine.session(HOST)
        start = time.monotonic()
        for i in range(20):
            await land(author, reviewer, host, f"alone{i}.txt")
        alone = time.monotonic() - start

        head = (await host.events_wait(since_seq=0, timeout_ms=0)).head_seq
        waiters: List["asyncio.Future[object]"] = []
        for i in range(6):
            # Long polls nothing answers: no task is created meanwhile, and
            # the policy asks no human for anything.
            waiters.append(
                asyncio.ensure_future(host.events_wait(since_seq=head, kinds=["task.created"], timeout_ms=60000))
            )
            idle = aengine.session(Actor.human(f"idle{i}"))
            waiters.append(asyncio.ensure_future(idle.inbox_wait(timeout_ms=60000)))
        await asyncio.sleep(0.2)
        start = time.monotonic()
        for i in range(20):
            await land(author, reviewer, host, f"crowded{i}.txt")
        crowded = time.monotonic() - start
        assert not any(w.done() for w in waiters), [w.result() if not w.exception() else w.exception() for w in waiters if w.done()]

        # Cancelling the tasks cancels their calls: all end at once.
        start = time.monotonic()
        for w in waiters:
            w.cancel()
        results = await asyncio.gather(*waiters, return_exceptions=True)
        cancelled = time.monotonic() - start
        assert all(isinstance(r, asyncio.CancelledError) for r in results), results
        return alone, crowded, cancelled

    alone, crowded, cancelled = asyncio.run(main())
    assert sum(1 for p in repo.iterdir() if p.name.startswith("crowded")) == 20
    # 12 long polls in flight leave the host landing at its normal speed
    # (before this, each landing queued behind 60 s waits).
    assert crowded < 3 * alone + 2.0, (alone, crowded)
    assert cancelled < 2.0, cancelled


def test_issue34_item5_aio_session_timeout_and_cancel(engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    aengine = AsyncEngine(engine)

    async def main() -> None:
        head = (await aengine.session(HOST).events_wait(since_seq=0, timeout_ms=0)).head_seq
        # timeout_ms bounds each call of the session.
        bounded = aengine.session(HOST, timeout_ms=100)
        start = time.monotonic()
        with pytest.raises(roundtable.DeadlineExceeded):
            await bounded.events_wait(since_seq=head, timeout_ms=60000)
        assert time.monotonic() - start < 5

        # cancel ends every call of the session, from any thread...
        handle = roundtable.Cancel()
        session = aengine.session(HOST, cancel=handle)
        calls = [asyncio.ensure_future(session.events_wait(since_seq=head, timeout_ms=60000)) for _ in range(3)]
        # ...and cancelling one task ends only its own call.
        alone = asyncio.ensure_future(session.events_wait(since_seq=head, timeout_ms=60000))
        await asyncio.sleep(0.1)
        alone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await alone
        assert not handle.cancelled and not any(c.done() for c in calls)
        start = time.monotonic()
        threading.Timer(0.05, handle.cancel).start()
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert time.monotonic() - start < 2
        assert all(isinstance(r, roundtable.Cancelled) for r in results), results
        # A session whose handle is cancelled is refused at once, changing nothing.
        with pytest.raises(roundtable.Cancelled):
            await session.claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=60000)

    asyncio.run(main())
    assert engine.session(HOST).claim_list().claims == ()


@pytest.mark.parametrize(
    "name, old, new",
    [
        ("README.md", "demo project\n", "demo project\n\nnow with a second paragraph\n"),
        ("docs/new.md", None, "a new file\nwithout a final newline"),
        ("README.md", "demo project\n", None),
    ],
    ids=["modify", "create", "delete"],
)
def test_issue34_item5_make_patch_round_trips_through_a_proposal(
    repo: Path, name: str, old: Optional[str], new: Optional[str]
) -> None:
    # The typed wrapper: str in, str out; bytes in, the same bytes out.
    if old is not None:
        patch = roundtable.make_patch(name, old, new)
        assert roundtable.make_patch(name, old.encode(), None if new is None else new.encode()) == patch.encode()
    else:
        assert new is not None
        patch = roundtable.make_patch(name, None, new)
        assert roundtable.make_patch(name, None, new.encode()) == patch.encode()
    assert patch.startswith(f"diff --git a/{name} b/{name}\n")
    # git itself accepts it.
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        git = subprocess.run(["git", "apply", "--check", "-"], cwd=repo, input=patch, text=True, capture_output=True)
        assert git.returncode == 0, git.stderr
        shutil.rmtree(repo / ".git")
    with roundtable.open(repo, durability="off") as engine:
        setup_fleet(engine)
        pid = propose(engine.session(ADA), name, old, new)
        engine.session(REX).vote_cast(proposal_id=pid, revision=1, vote="approve")
        engine.session(HOST).patch_apply(proposal_id=pid, revision=1)
    target = repo / name
    if new is None:
        assert not target.exists()
    else:
        assert target.read_text() == new


def test_issue34_item5_make_patch_refuses_a_bad_path_and_changes_nothing(repo: Path) -> None:
    with pytest.raises(roundtable.PathEscape) as e:
        roundtable.make_patch("../outside", "a\n", "b\n")
    assert e.value.details["path"] == "../outside"
    with pytest.raises(roundtable.InvalidPath):
        roundtable.make_patch("a//b", None, "b\n")
    assert roundtable.make_patch("same.txt", "x\n", "x\n") == ""
    binary = roundtable.make_patch("blob.bin", None, b"\x00\x01")
    assert b"GIT binary patch" in binary


def test_issue34_item5_claim_keeper_renews_and_reports_a_lost_claim(engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    ada = engine.session(ADA)
    kept = ada.claim_acquire(resource_id="file:README.md", type="write", ttl_s=2).claim
    taken = ada.claim_acquire(resource_id="file:src/lib.rs", type="write", ttl_s=60).claim
    lost: List[Tuple[str, str]] = []
    keeper = ClaimKeeper(ada, [kept.id, taken.id], ttl_s=2, every_s=0.2, on_lost=lambda cid, e: lost.append((cid, e.code)))
    with keeper:
        time.sleep(0.5)
        engine.session(HOST).claim_release(claim_id=taken.id)  # an orchestrator takes it away
        time.sleep(2.5)  # past kept's first TTL: renewed, it is still active
        start = time.monotonic()
    assert time.monotonic() - start < 1, "stop is prompt"
    assert lost == [(taken.id, "illegal_transition")]
    assert isinstance(keeper.lost[taken.id], roundtable.IllegalTransition)
    assert keeper.held == [kept.id] and keeper.renewals >= 3
    now = engine.session(ADA).claim_list().claims
    assert [c.status for c in now if c.id == kept.id] == ["active"]


def test_issue34_item5_a_worker_votes_once_on_each_of_10_proposals(engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    ada, rex = engine.session(ADA), engine.session(REX)
    seen: List[Tuple[str, str]] = []
    all_seen = threading.Event()

    def review(item: roundtable.InboxItem) -> None:
        seen.append((item.proposal.id, item.action))
        if item.action == "vote":
            rex.vote_cast(proposal_id=item.proposal.id, revision=item.revision, vote="approve")
        if len(seen) == 10:
            all_seen.set()

    pids = [propose(ada, f"before{i}.txt", None, "x\n") for i in range(5)]
    worker = Worker(rex, review).start()
    pids += [propose(ada, f"after{i}.txt", None, "x\n") for i in range(5)]
    assert all_seen.wait(30), seen
    time.sleep(0.3)  # nothing more comes: each proposal was handed over once
    start = time.monotonic()
    worker.stop()
    worker.join()
    assert time.monotonic() - start < 1, "stop is prompt"
    assert sorted(seen) == sorted((pid, "vote") for pid in pids)
    assert worker.handled == 10 and worker.timed_out == 0, worker.waits
    # Each was approved: the host is asked to apply all ten.
    applies = {i.proposal.id for i in engine.session(HOST).iter_inbox_list() if i.action == "apply"}
    assert applies == set(pids)


def test_issue34_item5_a_worker_whose_callback_raises_stops_and_reraises(engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    propose(engine.session(ADA), "one.txt", None, "1\n")

    def fail(item: roundtable.InboxItem) -> None:
        raise ValueError(item.proposal.id)

    worker = Worker(engine.session(REX), fail).start()
    with pytest.raises(ValueError):
        worker.join(30)
    assert worker.handled == 0
    # The session's cancel handle stops a worker too.
    handle = roundtable.Cancel()
    idle = Worker(engine.session(HOST, cancel=handle), lambda item: None, poll_timeout_ms=60000).start()
    time.sleep(0.1)
    start = time.monotonic()
    handle.cancel()
    idle.join(5)
    assert time.monotonic() - start < 1 and idle.stopping


def test_issue34_item5_an_async_worker_hands_over_each_item_and_stops_promptly(engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    aengine = AsyncEngine(engine)
    pids = [propose(engine.session(ADA), f"a{i}.txt", None, "x\n") for i in range(3)]

    async def main() -> Tuple[List[str], float, float]:
        rex = aengine.session(REX)
        seen: List[str] = []

        async def review(item: roundtable.InboxItem) -> None:
            seen.append(item.proposal.id)
            await rex.vote_cast(proposal_id=item.proposal.id, revision=item.revision, vote="approve")

        worker = AsyncWorker(rex, review)
        running = asyncio.ensure_future(worker.run())
        while len(seen) < 3:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        start = time.monotonic()
        worker.stop()
        await running
        stopped = time.monotonic() - start
        # Cancelling the task that runs a worker cancels its wait.
        again = asyncio.ensure_future(AsyncWorker(rex, review).run())
        await asyncio.sleep(0.1)
        start = time.monotonic()
        again.cancel()
        with pytest.raises(asyncio.CancelledError):
            await again
        return seen, stopped, time.monotonic() - start

    seen, stopped, cancelled = asyncio.run(main())
    assert sorted(seen) == sorted(pids)
    assert stopped < 1 and cancelled < 1


def test_issue34_item5_claim_keeper_reports_a_claim_that_expired_before_its_renewal(engine: roundtable.Engine) -> None:
    setup_fleet(engine)
    ada = engine.session(ADA)
    short = ada.claim_acquire(resource_id="file:README.md", type="write", ttl_s=1).claim
    lost: List[str] = []
    with ClaimKeeper(ada, [short.id], ttl_s=1, every_s=1.5, on_lost=lambda cid, e: lost.append(e.code)) as keeper:
        deadline = time.monotonic() + 10
        while keeper.held and time.monotonic() < deadline:
            time.sleep(0.05)
    assert lost == ["illegal_transition"] and keeper.renewals == 0
    assert keeper.lost[short.id].details["status"] != "active"
