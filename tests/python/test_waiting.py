"""Waiting instead of polling (issue 16 item 4): events.wait, follow(), a
waiting claim.acquire, their asyncio variants, and re-acquiring one's own
claim."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

import roundtable
from roundtable.aio import AsyncEngine
from conftest import ALICE, BOB, HOST, register


def head(engine: roundtable.Engine) -> int:
    page = engine.session(HOST).events_list(limit=1000)
    return page.events[-1].seq if page.events else 0


def test_follow_yields_an_event_another_thread_commits(engine: roundtable.Engine) -> None:
    register(engine)
    since = head(engine)

    def later() -> None:
        time.sleep(0.05)
        engine.call(HOST, "task.create", {"task_id": "from-thread", "title": "Later"})

    t = threading.Thread(target=later)
    t.start()
    seen: List[roundtable.Event] = []
    for event in engine.session(HOST).follow(since_seq=since, kinds=["task.created"], idle_timeout_s=30):
        seen.append(event)
        break
    t.join()
    assert [e.subject for e in seen] == ["from-thread"]


def test_follow_ends_after_idle_timeout(engine: roundtable.Engine) -> None:
    since = head(engine)
    start = time.monotonic()
    assert list(engine.session(HOST).follow(since_seq=since, idle_timeout_s=0.1)) == []
    assert time.monotonic() - start >= 0.1


def test_a_commit_by_another_process_wakes_a_waiter(repo: Path, engine: roundtable.Engine) -> None:
    since = head(engine)
    script = (
        "import sys, time, roundtable\n"
        "from roundtable import Actor\n"
        "with roundtable.open(sys.argv[1]) as e:\n"
        "    time.sleep(0.3)\n"
        "    e.call(Actor.orchestrator('other'), 'task.create', {'task_id': 'from-process', 'title': 'Elsewhere'})\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script, str(repo)])
    try:
        page = engine.session(HOST).events_wait(since_seq=since, actor=roundtable.Actor.orchestrator("other"), timeout_ms=60000)
    finally:
        assert child.wait(timeout=60) == 0
    assert not page.timed_out
    assert page.kinds() == ["task.created"]
    assert page.events[0].subject == "from-process"


def test_wait_events_times_out_with_the_head(engine: roundtable.Engine) -> None:
    since = head(engine)
    page = engine.session(HOST).events_wait(since_seq=since, timeout_ms=20)
    assert page.timed_out and len(page) == 0
    assert page.head_seq == since == page.next_since_seq
    with pytest.raises(roundtable.InvalidArgument) as e:
        engine.session(HOST).events_wait(since_seq=since, timeout_ms=60001)
    assert e.value.details["field"] == "timeout_ms"


def test_reacquiring_ones_own_claim_returns_it(engine: roundtable.Engine) -> None:
    register(engine)
    first = engine.session(ALICE).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60).claim
    again = engine.session(ALICE).claim_acquire(resource_id="file:README.md", type="write", ttl_s=600).claim
    assert again.id == first.id and again.token == first.token
    assert again.status == "active"
    with pytest.raises(roundtable.Conflict):
        engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60)


def test_a_waiting_claim_is_granted_when_the_holder_releases(engine: roundtable.Engine) -> None:
    register(engine)
    held = engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60).claim

    def release() -> None:
        time.sleep(0.05)
        engine.call(BOB, "claim.release", {"claim_id": held.id})

    t = threading.Thread(target=release)
    t.start()
    got = engine.session(ALICE).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=60000).claim
    t.join()
    assert got.agent_id == "alice"
    with pytest.raises(roundtable.Conflict):
        engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=50)


def test_asyncio_variants_wait_without_blocking_the_loop(engine: roundtable.Engine) -> None:
    register(engine)
    held = engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60).claim
    since = head(engine)

    aengine = AsyncEngine(engine)

    async def main() -> None:
        host, alice = aengine.session(HOST), aengine.session(ALICE)
        waiting = asyncio.ensure_future(host.events_wait(since_seq=since, kinds=["claim.released"], timeout_ms=60000))
        claiming = asyncio.ensure_future(
            alice.claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=60000)
        )
        await asyncio.sleep(0.05)  # the loop runs while both wait
        assert not waiting.done() and not claiming.done()
        await aengine.session(BOB).claim_release(claim_id=held.id)
        page = await waiting
        assert page.kinds() == ["claim.released"]
        claim = (await claiming).claim
        assert claim.agent_id == "alice"

    asyncio.run(main())
