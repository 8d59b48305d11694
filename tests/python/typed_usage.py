"""A host program that calls every tool through the typed session methods
only: checked with `mypy --strict` against the installed package, and run
by tests/python/test_static.py (`TOOLS_CALLED` is compared there with the
registry, so a new tool fails until it is called here)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Mapping, NoReturn, Optional, Set, Type, TypeVar

import roundtable
from roundtable import Actor, Session
from roundtable.worker import ClaimKeeper, Worker

PATCH = """\
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-print("hello")
+print("hello, world")
"""

SECOND = """\
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-print("hello")
+print("hello, everyone")
"""

OTHER = """\
--- a/notes.md
+++ b/notes.md
@@ -1 +1,2 @@
 # Notes
+More.
"""

R = TypeVar("R", bound=roundtable.Record)

#: Every tool this program calls, by name.
TOOLS_CALLED: Set[str] = set()


class Recorded(Session):
    """A session that remembers which tools it called."""

    __slots__ = ()

    def call(self, tool: str, args: Mapping[str, Any]) -> Dict[str, Any]:
        TOOLS_CALLED.add(tool)
        return super().call(tool, args)

    def call_record(self, tool: str, args: Mapping[str, Any], record: Type[R]) -> R:
        TOOLS_CALLED.add(tool)
        return super().call_record(tool, args, record)


def failed_stages(report: roundtable.ValidationReport) -> List[str]:
    return [s.name for s in report.stages if s.status == "failed"]


def assert_never(value: NoReturn) -> NoReturn:
    """The branch a switch over an enum never reaches: `mypy --strict`
    fails on a call of it when the schema gains a value the switch does
    not handle."""
    raise AssertionError(f"unhandled value: {value!r}")


def verb(op: roundtable.OperationKind) -> str:
    """A switch over a file's operation (an enum in the schema: a
    ``Literal`` here)."""
    if op == "create":
        return "adds"
    elif op == "modify":
        return "changes"
    elif op == "delete":
        return "deletes"
    elif op == "rename" or op == "copy":
        return "moves to"
    elif op == "renamed_away":
        return "moves away"
    else:
        assert_never(op)


def subject(kind: roundtable.EventKind) -> str:
    """What an audit-log viewer files each event kind under: a switch over
    every kind this version writes."""
    if kind == "workspace.configured":
        return "workspace"
    elif kind == "agent.registered" or kind == "agent.updated":
        return "agent"
    elif kind == "task.created":
        return "task"
    elif (
        kind == "proposal.created"
        or kind == "proposal.revised"
        or kind == "proposal.review_requested"
        or kind == "proposal.withdrawn"
        or kind == "proposal.rejected"
        or kind == "proposal.applied"
        or kind == "proposal.rolled_back"
        or kind == "proposal.stale"
    ):
        return "proposal"
    elif (
        kind == "vote.cast"
        or kind == "decision.recorded"
        or kind == "security.reviewed"
        or kind == "human.approval_requested"
        or kind == "human.approved"
        or kind == "test.recorded"
    ):
        return "evidence"
    elif (
        kind == "claim.acquired"
        or kind == "claim.renewed"
        or kind == "claim.released"
        or kind == "claim.expired"
    ):
        return "claim"
    elif (
        kind == "queue.enqueued"
        or kind == "queue.removed"
        or kind == "queue.checked"
        or kind == "queue.check_requested"
        or kind == "queue.landed"
        or kind == "queue.returned"
    ):
        return "queue"
    elif kind == "policy.drafted" or kind == "policy.activated":
        return "policy"
    elif (
        kind == "transaction.started"
        or kind == "transaction.applied"
        or kind == "transaction.failed"
        or kind == "transaction.recovered"
        or kind == "transaction.rolled_back"
    ):
        return "transaction"
    else:
        assert_never(kind)


def approve(
    author: Session, reviewer: Session, pid: str, revision: int
) -> roundtable.VoteRecorded:
    author.proposal_request_review(proposal_id=pid)
    return reviewer.vote_cast(proposal_id=pid, revision=revision, vote="approve", reason_md="Reads well.")


def run(root: Path) -> str:
    (root / "app.py").write_text('print("hello")\n')
    (root / "notes.md").write_text("# Notes\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    with roundtable.open(root, durability="normal") as engine:
        host = Recorded(engine, Actor.orchestrator("host"))
        ada = Recorded(engine, Actor.agent("ada"))
        rex = Recorded(engine, Actor.agent("rex"))
        carol = Recorded(engine, Actor.human("carol"))

        # Setup: agents, a task, the workspace, a policy.
        registered: roundtable.AgentRegistered = host.agent_register(agent_id="ada", roles=["author"])
        assert registered.created and registered.agent.roles == ("author",)
        host.agent_register(agent_id="rex", roles=["reviewer", "security"], display_name="Rex")
        assert ada.agent_get(agent_id="rex").agent.display_name == "Rex"
        assert [a.id for a in host.iter_agent_list(limit=1)] == ["ada", "rex"]
        assert host.agent_list(role="reviewer").agents[0].id == "rex"
        task: roundtable.Task = host.task_create(task_id="greet", title="Greet the world").task
        assert ada.task_get(task_id="greet").task.created_by == host.actor
        assert [t.id for t in ada.iter_task_list()] == [task.id]
        assert host.task_list(limit=1).tasks[0].title == "Greet the world"
        settings: roundtable.WorkspaceSettings = host.workspace_configure(landing={"mode": "files"})
        mode: roundtable.LandingMode = settings.landing.mode
        assert mode == "files" and ada.workspace_get().landing.mode == "files"
        try:  # files mode commits nothing: landing.log says so
            carol.landing_log(limit=5)
            raise AssertionError("landing.log listed commits in files mode")
        except roundtable.PreconditionFailed as e:
            assert e.details["landing"]["mode"] == "files"
        policy = host.policy_set(document='version = 1\n[checks]\nrequired = ["unit"]\n', note_md="CI")
        assert policy.policy.version is not None
        host.policy_activate(version=policy.policy.version)
        assert ada.policy_get().policy.version == policy.policy.version

        # A proposal: claim, create, revise, read it every way.
        claim: roundtable.Claim = ada.claim_acquire(resource_id="file:app.py", type="write", ttl_s=600).claim
        assert ada.claim_renew(claim_id=claim.id, ttl_s=900).claim.status == "active"
        assert [c.id for c in host.iter_claim_list(agent_id="ada")] == [claim.id]
        assert host.claim_list(status="active").claims[0].token == claim.token
        made: roundtable.ProposalRevised = ada.proposal_create(
            task_id="greet", title="Greet the world", summary_md="Wider greeting.",
            patch=PATCH, risk="low", affected_resources=["file:app.py"],
        )
        pid = made.proposal.id
        revised = ada.proposal_attach_patch(
            proposal_id=pid, expected_revision=1, patch=SECOND, note_md="Everyone.",
            affected_resources=["file:app.py"],
        )
        assert revised.revision.number == 2
        got: roundtable.ProposalDetail = rex.proposal_get(proposal_id=pid, include_content=True)
        assert got.content == SECOND and len(got.revisions) == 2
        assert [p.id for p in rex.iter_proposal_list(task_id="greet")] == [pid]
        assert rex.proposal_list(status="pending").proposals[0].id == pid
        files: roundtable.Files = rex.proposal_files(proposal_id=pid)
        assert [f.new_path for f in files.files] == ["app.py"]
        assert [verb(f.operation) for f in files.files] == ["changes"]
        sections = list(rex.iter_proposal_diff(proposal_id=pid, limit=1))
        assert [s.new_path for s in sections] == ["app.py"]
        assert rex.proposal_diff(proposal_id=pid, revision=1).total_files == 1
        symbols: roundtable.Symbols = rex.proposal_symbols(proposal_id=pid)
        assert [s.path for s in symbols.files] == ["app.py"]
        compared: roundtable.Interdiff = rex.proposal_compare(proposal_id=pid, from_revision=1, to_revision=2)
        assert not compared.identical
        interdiff: List[roundtable.InterdiffStatus] = [f.status for f in compared.files]
        assert interdiff == ["changed"]
        status: roundtable.StatusReport = ada.proposal_status(proposal_id=pid)
        actions: List[roundtable.NextAction] = [n.action for n in status.next]
        assert "request_review" in actions

        # Review: votes, a security review, a human approval, a check.
        vote = approve(ada, rex, pid, 2)
        assert vote.vote.vote == "approve"
        assert [v.vote for v in host.iter_vote_list(proposal_id=pid)] == ["approve"]
        assert host.vote_list(proposal_id=pid, revision=2).votes[0].agent_id == "rex"
        assert [i.proposal.id for i in host.iter_inbox_list()] == [pid]
        assert host.inbox_list(limit=10).items[0].action == "run_check"
        rex.security_review(proposal_id=pid, revision=2, verdict="pass", note_md="No secrets.")
        asked = ada.human_request_approval(proposal_id=pid, revision=2, reason_md="Greeting change.")
        carol.human_approve(proposal_id=pid, revision=2, request_id=asked.request.id, note_md="Ship it.")
        decided = carol.decision_record(proposal_id=pid, revision=2, decision="accept", reason_md="Agreed.")
        assert decided.decision.decision == "accept"
        test = host.test_record(proposal_id=pid, revision=2, name="unit", status="passed", duration_ms=12)
        assert rex.test_get(test_result_id=test.test_result.id).test_result.status == "passed"
        assert [t.name for t in rex.iter_test_list(proposal_id=pid)] == ["unit"]
        assert rex.test_list(proposal_id=pid, name="unit").test_results[0].revision == 2

        # Land, look at the transaction, roll back, revert.
        report: roundtable.ValidationReport = host.patch_validate(proposal_id=pid)
        if not report.valid:
            return ", ".join(failed_stages(report))
        applied: roundtable.Applied = host.patch_apply(proposal_id=pid, revision=2)
        landed: roundtable.ProposalStatus = applied.proposal.status
        assert landed == "applied" and claim.id in applied.released_claims
        tx = applied.transaction.id
        assert host.transaction_get(transaction_id=tx).transaction.status == "applied"
        durability: roundtable.Durability = applied.transaction.durability
        assert durability == "normal"
        assert [t.id for t in host.iter_transaction_list(proposal_id=pid)] == [tx]
        assert host.transaction_list(status="applied").transactions[0].id == tx
        phases: roundtable.Phases = host.transaction_phases(transaction_id=tx)
        assert phases.phases
        advice: roundtable.RecoveryAdvice = host.transaction_recovery(transaction_id=tx)
        assert advice.consistent
        rolled: roundtable.RolledBack = host.transaction_rollback(transaction_id=tx)
        assert rolled.transaction.rollback_of == tx
        ada.claim_acquire(resource_id="file:app.py", type="write", ttl_s=600)
        assert host.patch_apply(proposal_id=pid, revision=2).proposal.status == "applied"
        revert = ada.proposal_revert(proposal_id=pid, title="Undo the greeting")
        assert revert.proposal.reverts == pid

        # Proposals that do not land: withdrawn, rejected, rebased.
        ada.claim_acquire(resource_id="file:notes.md", type="write", ttl_s=600)
        other = ada.proposal_create(task_id="greet", title="Notes", summary_md="More.", patch=OTHER)
        ada.proposal_withdraw(proposal_id=other.proposal.id, reason_md="Not now.")
        notes = ada.claim_list(resource_id="file:notes.md", status="active").claims[0]
        assert ada.claim_release(claim_id=notes.id).claim.status == "released"
        ada.claim_acquire(resource_id="file:notes.md", type="write", ttl_s=600)
        third = ada.proposal_create(task_id="greet", title="Notes", summary_md="More.", patch=OTHER)
        rejected = carol.patch_reject(proposal_id=third.proposal.id, reason_md="No.")
        assert rejected.proposal.status == "rejected"
        fourth = ada.proposal_create(task_id="greet", title="Notes", summary_md="More.", patch=OTHER)
        (root / "notes.md").write_text("Intro.\n\n# Notes\n")
        rebased = ada.proposal_rebase(proposal_id=fourth.proposal.id, expected_revision=1, note_md="Onto the new notes.")
        assert rebased.revision.rebased_from == 1

        # The landing queue: an unreviewed proposal keeps its place until it can land.
        entry: roundtable.QueueEntry = host.queue_enqueue(proposal_id=fourth.proposal.id).entry
        queued: roundtable.QueueStatus = entry.status
        assert queued == "queued"
        assert [e.proposal_id for e in host.queue_list().entries] == [fourth.proposal.id]
        ran: roundtable.QueueRun = host.queue_run(max_rounds=1)
        assert not ran.landed and not ran.returned and ran.still_queued == 1
        removed = host.queue_remove(proposal_id=fourth.proposal.id, reason="Not yet.").entry
        back: Optional[roundtable.QueueReturnReason] = removed.return_reason
        assert removed.status == "removed" and back is None
        try:  # files mode: there is no other clone's landing to settle
            host.landing_settle(transaction_id=tx)
            raise AssertionError("landing.settle settled a files-mode transaction")
        except roundtable.PreconditionFailed:
            pass
        # Provenance: blame and verify read git history (files mode has
        # none); rex landed nothing, so there is nothing of its to undo.
        try:
            carol.provenance_blame(path="README.md")
            raise AssertionError("provenance.blame blamed a file in files mode")
        except roundtable.InvalidArgument:
            pass
        try:
            carol.provenance_verify()
            raise AssertionError("provenance.verify verified a branch in files mode")
        except roundtable.InvalidArgument:
            pass
        try:
            host.proposal_revert_agent(
                agent_id="rex", since="2000-01-01T00:00:00.000Z", author_agent_id="ada"
            )
            raise AssertionError("proposal.revert_agent undid an agent that landed nothing")
        except roundtable.PreconditionFailed:
            pass

        # The audit log.
        page: roundtable.EventPage = host.events_list(proposal_id=pid, limit=100)
        kinds: List[roundtable.EventKind] = page.kinds()
        assert "proposal.applied" in kinds
        assert {subject(k) for k in kinds} >= {"proposal", "evidence", "transaction"}
        assert {subject(k) for k in roundtable.EVENT_KINDS} == {
            "workspace", "agent", "task", "proposal", "evidence", "claim", "policy", "transaction",
            "queue",
        }
        everything = list(host.iter_events_list(limit=7))
        assert len(everything) > 7 and everything[0].seq == 1
        waited: roundtable.EventWait = host.events_wait(since_seq=everything[-1].seq, timeout_ms=0)
        assert waited.timed_out and not waited.events
        chain: roundtable.ChainReport = host.events_verify(
            expected_head={"seq": everything[-1].seq, "digest": everything[-1].digest}
        )
        assert chain.valid and chain.expected_head_found

        # The fleet helpers (issue 34 item 5), typed.
        inbox_now: roundtable.InboxWait = host.inbox_wait(timeout_ms=0)
        later: roundtable.InboxWait = host.inbox_wait(after=inbox_now.cursor, timeout_ms=0, limit=10)
        assert later.timed_out and not later.items
        patch_made: str = roundtable.make_patch("made.txt", None, "made\n")
        made_bytes: bytes = roundtable.make_patch("made.txt", b"made\n", None)
        assert patch_made.startswith("diff --git") and made_bytes.startswith(b"diff --git")
        handled: List[str] = []

        def handle(item: roundtable.InboxItem) -> None:
            handled.append(item.proposal.id)

        worker: Worker = Worker(host, handle, poll_timeout_ms=0)
        worker.stop()
        worker.run()  # stopped before it began: returns at once
        assert worker.handled == 0 and worker.stopping
        keeper = ClaimKeeper(ada, [], ttl_s=60, on_lost=lambda claim_id, error: handled.append(error.code))
        keeper.renew()
        assert not keeper.lost and not keeper.held
    files_in_patch: List[Dict[str, object]] = roundtable.parse_patch(PATCH)["files"]
    return f"{len(files_in_patch)} file, {len(TOOLS_CALLED)} tools"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        print(run(Path(d)))
