"""Issue 16 items 5 and 6 from a Python host: a failed check's note reads
back, ``next`` and the inbox name the author after it, and a rolled-back
proposal reads ``rolled_back``."""

from __future__ import annotations

from pathlib import Path

import pytest

import roundtable
from conftest import ALICE, BOB, HOST, register

README_PATCH = """\
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-demo project
+demo project, governed
"""


def approved(engine: roundtable.Engine) -> str:
    """An in-review proposal changing README.md, approved by bob."""
    register(engine)
    engine.acquire_claim(ALICE, "file:README.md", ttl_s=600)
    created = engine.create_proposal(
        ALICE, task_id="excited-greeting", title="Govern the README", summary_md="x", patch=README_PATCH
    )
    pid = created.proposal.id
    engine.call("proposal.request_review", {"proposal_id": pid}, ALICE)
    engine.cast_vote(BOB, pid, 1, "approve")
    return pid


def test_a_rolled_back_proposal_reads_rolled_back(repo: Path, engine: roundtable.Engine) -> None:
    pid = approved(engine)
    applied = engine.apply(HOST, pid, 1)
    assert applied.proposal.status is roundtable.ProposalStatus.APPLIED
    engine.rollback(HOST, applied.transaction.id)
    assert (repo / "README.md").read_text() == "demo project\n"
    proposal = roundtable.Proposal.from_dict(engine.call("proposal.get", {"proposal_id": pid}, HOST)["proposal"])
    assert proposal.status is roundtable.ProposalStatus.ROLLED_BACK
    assert proposal.status == "rolled_back"
    assert proposal.reverts is None
    kinds = [e.kind for e in engine.events(HOST, proposal_id=pid).events]
    assert kinds[-1] == "proposal.rolled_back" or "proposal.rolled_back" in kinds
    page = engine.call("proposal.list", {"status": "rolled_back"}, HOST)
    assert [p["id"] for p in page["proposals"]] == [pid]


def test_the_status_enum_is_the_cores() -> None:
    spec = next(t for t in roundtable.tools() if t["name"] == "proposal.get")
    schema = spec["output_schema"]
    defs = schema.get("$defs") or schema.get("definitions") or {}
    status = defs["ProposalStatus"]
    values = {v for v in status.get("enum", [])} or {v["const"] for v in status["oneOf"]}
    assert values == {s.value for s in roundtable.ProposalStatus}
    assert "rolled_back" in values


def test_a_failed_checks_note_reads_back_and_waits_on_the_author(repo: Path, engine: roundtable.Engine) -> None:
    set_ = engine.call("policy.set", {"document": 'version = 1\n[checks]\nrequired = ["unit"]\n'}, HOST)
    engine.call("policy.activate", {"version": set_["policy"]["version"]}, HOST)
    pid = approved(engine)
    note = "FAILED test_readme.py::test_title - AssertionError: 'governed' not in title"
    recorded = engine.call(
        "test.record",
        {"proposal_id": pid, "revision": 1, "name": "unit", "status": "failed", "note_md": note},
        HOST,
    )
    result = engine.test_result(ALICE, recorded["test_result"]["id"])
    assert isinstance(result, roundtable.TestResult)
    assert (result.name, result.status, result.note_md) == ("unit", "failed", note)
    assert result.recorded_by == HOST
    assert [t.note_md for t in engine.test_results(ALICE, pid, name="unit")] == [note]

    status = engine.call("proposal.status", {"proposal_id": pid}, HOST)
    fix = [n for n in status["next"] if n["action"] == "fix_check"]
    assert fix and fix[0]["actor"] == "author" and fix[0]["candidates"] == ["alice"]
    assert not [n for n in status["next"] if n["action"] == "run_check"]
    inbox = engine.inbox(ALICE)
    assert [(i["proposal"]["id"], i["action"]) for i in inbox["items"]] == [(pid, "fix_check")]
    assert engine.inbox(HOST)["items"] == []

    with pytest.raises(roundtable.NotFound):
        engine.test_result(ALICE, "test-nope")
    with pytest.raises(roundtable.InvalidArgument) as bad:
        engine.inbox(ALICE, cursor="not-a-cursor")
    assert bad.value.details["field"] == "cursor"
    with pytest.raises(roundtable.Forbidden):
        engine.inbox(roundtable.Actor.agent("nobody"))
