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
    engine.session(ALICE).claim_acquire(resource_id="file:README.md", type="write", ttl_s=600)
    created = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="Govern the README", summary_md="x", patch=README_PATCH)
    pid = created.proposal.id
    engine.call(ALICE, "proposal.request_review", {"proposal_id": pid})
    engine.session(BOB).vote_cast(proposal_id=pid, revision=1, vote="approve").vote
    return pid


def test_a_rolled_back_proposal_reads_rolled_back(repo: Path, engine: roundtable.Engine) -> None:
    pid = approved(engine)
    applied = engine.session(HOST).patch_apply(proposal_id=pid, revision=1)
    assert applied.proposal.status == "applied"
    engine.session(HOST).transaction_rollback(transaction_id=applied.transaction.id)
    assert (repo / "README.md").read_text() == "demo project\n"
    proposal = roundtable.Proposal.from_dict(engine.call(HOST, "proposal.get", {"proposal_id": pid})["proposal"])
    assert proposal.status == "rolled_back"
    assert proposal.status == "rolled_back"
    assert proposal.reverts is None
    kinds = [e.kind for e in engine.session(HOST).events_list(proposal_id=pid).events]
    assert kinds[-1] == "proposal.rolled_back" or "proposal.rolled_back" in kinds
    page = engine.call(HOST, "proposal.list", {"status": "rolled_back"})
    assert [p["id"] for p in page["proposals"]] == [pid]


def test_the_status_enum_is_the_cores() -> None:
    spec = next(t for t in roundtable.tools() if t["name"] == "proposal.get")
    schema = spec["output_schema"]
    defs = schema.get("$defs") or schema.get("definitions") or {}
    status = defs["ProposalStatus"]
    values = {v for v in status.get("enum", [])} or {v["const"] for v in status["oneOf"]}
    assert values == set(roundtable.PROPOSAL_STATUSES)
    assert "rolled_back" in values


def test_a_failed_checks_note_reads_back_and_waits_on_the_author(repo: Path, engine: roundtable.Engine) -> None:
    set_ = engine.call(HOST, "policy.set", {"document": 'version = 1\n[checks]\nrequired = ["unit"]\n'})
    engine.call(HOST, "policy.activate", {"version": set_["policy"]["version"]})
    pid = approved(engine)
    note = "FAILED test_readme.py::test_title - AssertionError: 'governed' not in title"
    recorded = engine.call(
        HOST,
        "test.record",
        {"proposal_id": pid, "revision": 1, "name": "unit", "status": "failed", "note_md": note},
    )
    result = engine.session(ALICE).test_get(test_result_id=recorded["test_result"]["id"]).test_result
    assert isinstance(result, roundtable.TestResult)
    assert (result.name, result.status, result.note_md) == ("unit", "failed", note)
    assert result.recorded_by == HOST
    assert [t.note_md for t in list(engine.session(ALICE).iter_test_list(proposal_id=pid, name="unit"))] == [note]

    status = engine.call(HOST, "proposal.status", {"proposal_id": pid})
    fix = [n for n in status["next"] if n["action"] == "fix_check"]
    assert fix and fix[0]["actor"] == "author" and fix[0]["candidates"] == ["alice"]
    assert not [n for n in status["next"] if n["action"] == "run_check"]
    inbox = engine.session(ALICE).inbox_list()
    assert [(i.proposal.id, i.action) for i in inbox.items] == [(pid, "fix_check")]
    assert engine.session(HOST).inbox_list().items == ()

    with pytest.raises(roundtable.NotFound):
        engine.session(ALICE).test_get(test_result_id="test-nope").test_result
    with pytest.raises(roundtable.InvalidArgument) as bad:
        engine.session(ALICE).inbox_list(cursor="not-a-cursor")
    assert bad.value.details["field"] == "cursor"
    with pytest.raises(roundtable.Forbidden):
        engine.session(roundtable.Actor.agent("nobody")).inbox_list()
