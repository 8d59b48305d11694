"""Issue 34's fleet: 16 agents x 25 proposals landed through the landing
queue and the worker helpers, counting every call the host program makes
per landing and the empty polls.

Authors claim, propose (``make_patch``) and ask for review (the policy
lets only reviewers approve, so nothing but their own proposals waits on
them); a reviewer's
``Worker`` votes on each review item; the host waits on its inbox with
``inbox.wait`` and runs the queue (``auto_enqueue``) whenever something can
land. Target: at most 8 calls per landing, no empty poll for anyone.
``RT_FLEET_AGENTS`` and ``RT_FLEET_CHANGES`` scale it.
"""

from __future__ import annotations

import collections
import os
import threading
from pathlib import Path
from typing import Dict, List

import roundtable
from roundtable import Actor
from roundtable.worker import Worker

AGENTS = int(os.environ.get("RT_FLEET_AGENTS", "16"))
CHANGES = int(os.environ.get("RT_FLEET_CHANGES", "25"))

POLICY = """version = 1
[approvals]
eligible_roles = ["reviewer"]
[checks.unit]
command = ["sh", "-c", "! grep -rq BROKEN ."]
timeout_s = 60
[queue]
auto_enqueue = true
batch_size = 32
depth = 4
"""


class Counter:
    """Calls made by the host program, by tool (the workers' ``inbox.wait``
    calls are counted by the workers)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: Dict[str, int] = {}

    def add(self, tool: str) -> None:
        with self.lock:
            self.calls[tool] = self.calls.get(tool, 0) + 1


def test_issue34_a_fleet_lands_through_the_queue_with_few_calls_and_no_empty_polls(tmp_path: Path) -> None:
    calls = Counter()
    with roundtable.open(tmp_path, durability="normal") as engine:
        host = engine.session(Actor.orchestrator("host"))
        for i in range(AGENTS):
            host.agent_register(agent_id=f"a{i}", roles=["author"])
        host.agent_register(agent_id="rex", roles=["reviewer"])
        host.task_create(task_id="t", title="Features")
        draft = host.policy_set(document=POLICY)
        assert draft.policy.version is not None
        host.policy_activate(version=draft.policy.version)
        total = AGENTS * CHANGES

        rex = engine.session(Actor.agent("rex"))

        def review(item: roundtable.InboxItem) -> None:
            if item.action == "vote":
                rex.vote_cast(proposal_id=item.proposal.id, revision=item.revision, vote="approve")
                calls.add("vote.cast")

        # Each author's own worker: what waits on it (nothing should, once
        # its review is asked for) — never an empty result.
        author_items: List[str] = []
        authors = [engine.session(Actor.agent(f"a{i}")) for i in range(AGENTS)]
        author_workers = [
            Worker(a, lambda item: author_items.append(f"{item.role}:{item.action}"), poll_timeout_ms=600000) for a in authors
        ]

        def propose(i: int) -> None:
            a = authors[i]
            for j in range(CHANGES):
                path = f"a{i}/f{j}.txt"
                a.claim_acquire(resource_id=f"file:{path}", type="write", ttl_s=600)
                made = a.proposal_create(
                    task_id="t", title=f"{path}", summary_md="A feature.",
                    patch=roundtable.make_patch(path, None, f"feature {i} {j}\n"),
                )
                a.proposal_request_review(proposal_id=made.proposal.id)
                for tool in ("claim.acquire", "proposal.create", "proposal.request_review"):
                    calls.add(tool)

        landed: List[str] = []
        host_waits = 0
        host_empty = 0
        with Worker(rex, review, poll_timeout_ms=600000) as reviewer:
            for w in author_workers:
                w.start()
            threads = [threading.Thread(target=propose, args=(i,)) for i in range(AGENTS)]
            for t in threads:
                t.start()
            cursor = None
            while len(landed) < total:
                waited = host.inbox_wait(after=cursor, timeout_ms=60000) if cursor else host.inbox_wait(timeout_ms=60000)
                calls.add("inbox.wait")
                host_waits += 1
                cursor = waited.cursor
                if waited.timed_out:
                    host_empty += 1
                    raise AssertionError(f"the host waited 60 s for nothing; landed {len(landed)} of {total}")
                if any(i.action == "apply" for i in waited.items):
                    run = host.queue_run()
                    calls.add("queue.run")
                    assert not run.returned, run.returned
                    landed.extend(e.proposal_id for e in run.landed)
            for t in threads:
                t.join()
            for w in author_workers:
                w.stop()
                w.join()
        assert len(landed) == total and len(set(landed)) == total
        applied = sum(1 for _ in host.iter_transaction_list(status="applied"))
        assert applied == total, "each landed once"
        waits = host_waits + reviewer.waits + sum(w.waits for w in author_workers)
        empty = host_empty + reviewer.timed_out + sum(w.timed_out for w in author_workers)
        # Every call the fleet made once set up: the counted ones (the
        # host's inbox.wait among them) and the workers' waits.
        program_calls = sum(calls.calls.values()) + reviewer.waits + sum(w.waits for w in author_workers)
        per_landing = program_calls / total
        print(
            f"\nfleet: {AGENTS} agents x {CHANGES} proposals: {total} landed, {program_calls} calls "
            f"({per_landing:.2f} per landing; {waits} inbox.wait of which {empty} empty; "
            f"queue.run {calls.calls.get('queue.run', 0)} times); by tool: {dict(sorted(calls.calls.items()))}; "
            f"items the authors' workers got: {len(author_items)} {sorted(collections.Counter(author_items).items())}"
        )
        assert empty == 0, "no empty polls"
        assert per_landing <= 8, per_landing
        # Every landed file is there.
        for i in range(AGENTS):
            for j in range(CHANGES):
                assert (tmp_path / f"a{i}" / f"f{j}.txt").read_text() == f"feature {i} {j}\n"
