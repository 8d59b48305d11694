"""Issue 33 item 3: an event's data is typed per kind.

A host program that switches on each event's kind and reads its typed
data (``Event.typed_data()``, one record per kind, :data:`roundtable.EventData`):
checked with ``mypy --strict`` by scripts/test-python (a kind added to the
schema and not handled here fails the check at ``assert_never``), and run
by pytest against the installed wheel.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, NoReturn

import roundtable
from roundtable import Actor, Session

PATCH = """\
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-print("hello")
+print("hello, world")
"""

#: Every shape of every kind's data as the core stored it before the data
#: was typed (the fixture the Rust test of the same name reads).
RECORDED = Path(__file__).resolve().parent.parent / "cases" / "events" / "recorded.jsonl"


def assert_never(value: NoReturn) -> NoReturn:
    raise AssertionError(f"unhandled event data: {value!r}")


def describe(data: roundtable.EventData) -> str:
    """One line per event, from its typed data: a switch over every kind."""
    if isinstance(data, roundtable.WorkspaceConfiguredData):
        return f"landing {data.was.mode} -> {data.landing.mode}"
    elif isinstance(data, (roundtable.AgentRegisteredData, roundtable.AgentUpdatedData)):
        return f"roles {', '.join(data.roles)} (enabled: {data.enabled})"
    elif isinstance(data, roundtable.TaskCreatedData):
        return f"task {data.title!r}"
    elif isinstance(data, roundtable.ProposalCreatedData):
        reverts = f", reverting {data.reverts}" if data.reverts is not None else ""
        return f"revision {data.revision} ({data.format}, {data.files} files, risk {data.risk}){reverts}"
    elif isinstance(data, roundtable.ProposalRevisedData):
        return f"revision {data.revision} after {data.previous_revision}"
    elif isinstance(
        data,
        (
            roundtable.ProposalReviewRequestedData,
            roundtable.ProposalWithdrawnData,
            roundtable.ProposalRejectedData,
            roundtable.ProposalAppliedData,
            roundtable.ProposalRolledBackData,
        ),
    ):
        from_: roundtable.ProposalStatus = data.from_
        return f"{from_} -> {data.to}"
    elif isinstance(data, roundtable.VoteCastData):
        return f"{data.agent_id} votes {data.vote} on revision {data.revision}"
    elif isinstance(data, roundtable.DecisionRecordedData):
        return f"decision {data.decision} on revision {data.revision}"
    elif isinstance(data, roundtable.SecurityReviewedData):
        return f"security verdict {data.verdict} on revision {data.revision}"
    elif isinstance(data, (roundtable.HumanApprovalRequestedData, roundtable.HumanApprovedData)):
        return f"approval of revision {data.revision}"
    elif isinstance(data, roundtable.TestRecordedData):
        return f"{data.name}: {data.status}"
    elif isinstance(data, roundtable.ClaimAcquiredData):
        return f"{data.type} claim on {data.resource_id} (token {data.token})"
    elif isinstance(data, (roundtable.ClaimRenewedData, roundtable.ClaimReleasedData)):
        return f"claim token {data.token}"
    elif isinstance(data, (roundtable.PolicyDraftedData, roundtable.PolicyActivatedData)):
        return f"policy version {data.version}"
    elif isinstance(data, roundtable.TransactionStartedData):
        return f"{data.kind} of {data.files} files"
    elif isinstance(data, roundtable.TransactionAppliedData):
        return f"{data.kind} wrote {data.files} files"
    elif isinstance(data, roundtable.TransactionFailedData):
        return f"failed: {data.error.code}"
    elif isinstance(data, roundtable.TransactionRecoveredData):
        return f"recovered {data.restored} files ({len(data.conflicts)} conflicts): {data.why}"
    elif isinstance(data, roundtable.TransactionRolledBackData):
        return f"rolled back by {data.rollback_transaction_id}"
    elif isinstance(data, roundtable.ProposalStaleData):
        return f"revision {data.revision} stale after {data.landed_proposal_id}: {', '.join(data.paths)}"
    elif isinstance(data, roundtable.ClaimExpiredData):
        return f"{data.agent_id}'s claim on {data.resource_id} expired"
    elif isinstance(data, roundtable.QueueEnqueuedData):
        return f"queued at revision {data.revision} (automatic: {data.automatic})"
    elif isinstance(data, roundtable.QueueCheckedData):
        return f"{data.name}: {data.status} on top of {len(data.ahead)}"
    elif isinstance(data, roundtable.QueueCheckRequestedData):
        where = data.commit if data.commit is not None else data.path
        return f"{data.name} requested on {where} ({data.state}, {len(data.ahead)} ahead)"
    elif isinstance(data, roundtable.QueueLandedData):
        return f"landed by {data.transaction_id}"
    elif isinstance(data, roundtable.QueueRemovedData):
        return f"removed: {data.reason}"
    elif isinstance(data, roundtable.QueueReturnedData):
        reason: roundtable.QueueReturnReason = data.reason
        return f"returned: {reason}"
    else:
        assert_never(data)


def event(kind: str, data: Any) -> roundtable.Event:
    """An event record as `events.list` returns one."""
    return roundtable.Event.from_dict({
        "seq": 1, "kind": kind, "actor": {"kind": "orchestrator", "id": "host"},
        "subject": "x", "proposal_id": None, "data": data,
        "at": "2026-01-01T00:00:00.000Z", "prev_digest": "p", "digest": "d",
    })


def test_issue33_item3_a_governed_change_reads_as_typed_event_data(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text('print("hello")\n')
    with roundtable.open(tmp_path) as engine:
        host = Session(engine, Actor.orchestrator("host"))
        ada = Session(engine, Actor.agent("ada"))
        rex = Session(engine, Actor.agent("rex"))
        host.agent_register(agent_id="ada", roles=["author"])
        host.agent_register(agent_id="rex", roles=["reviewer"])
        host.task_create(task_id="greet", title="Greet the world")
        ada.claim_acquire(resource_id="file:app.py", type="write", ttl_s=600)
        pid = ada.proposal_create(
            task_id="greet", title="Greet", summary_md="Wider greeting.", patch=PATCH,
        ).proposal.id
        ada.proposal_request_review(proposal_id=pid)
        rex.vote_cast(proposal_id=pid, revision=1, vote="approve")
        host.patch_apply(proposal_id=pid, revision=1)
        events = host.events_list(limit=100).events

    lines: Dict[str, str] = {}
    for e in events:
        data = e.typed_data()
        assert data is not None, e
        lines[e.kind] = describe(data)
        # The kind and the record agree.
        if e.kind == "vote.cast":
            assert isinstance(data, roundtable.VoteCastData) and data.vote == "approve"
        if e.kind == "proposal.applied":
            assert isinstance(data, roundtable.ProposalAppliedData) and data.to == "applied"
    assert lines["task.created"] == "task 'Greet the world'"
    assert lines["vote.cast"] == "rex votes approve on revision 1"
    assert lines["proposal.applied"] == "in_review -> applied"
    assert lines["transaction.applied"] == "apply wrote 1 files"


def test_issue33_item3_every_recorded_kind_reads_as_its_record() -> None:
    kinds = set()
    for line in RECORDED.read_text().splitlines():
        recorded = json.loads(line)
        e = event(recorded["kind"], json.loads(recorded["data"]))
        data = e.typed_data()
        assert data is not None, line
        assert type(data).__name__ == "".join(
            w.capitalize() for w in recorded["kind"].replace(".", "_").split("_")
        ) + "Data"
        describe(data)
        kinds.add(e.kind)
    assert kinds == set(roundtable.EVENT_KINDS)


def test_issue33_item3_another_kind_or_shape_reads_untyped() -> None:
    future = event("merge.queued", {"queue": 3})
    assert future.data == {"queue": 3} and future.typed_data() is None
    old = event("vote.cast", {"value": "yes"})
    assert old.data == {"value": "yes"} and old.typed_data() is None
