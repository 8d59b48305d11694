"""A whole governed change through the typed API, as the CLI demo runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

import roundtable
from conftest import ALICE, BOB, CAROL, FIRST_PATCH, HOST, LIB_RS, SAM, SECOND_PATCH, register
from roundtable import Actor


def test_full_governed_change(repo: Path, engine: roundtable.Engine) -> None:
    register(engine)

    claim = engine.session(ALICE).claim_acquire(resource_id="symbol:src/lib.rs#greet", type="write", ttl_s=900, task_id="excited-greeting").claim
    assert isinstance(claim, roundtable.Claim)
    assert claim.resource_id == "symbol:src/lib.rs#greet"
    assert claim.span == roundtable.LineSpan(1, 3)
    assert claim.status == "active" and claim.token >= 1
    with pytest.raises(roundtable.Conflict) as clash:
        engine.session(BOB).claim_acquire(resource_id="file:src/lib.rs", type="write", ttl_s=900)
    assert clash.value.code == "conflict"

    created = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="Greet with an exclamation mark", summary_md="`greet` ends with `!`.", risk="critical", patch=FIRST_PATCH, affected_resources=["symbol:src/lib.rs#greet"])
    pid = created.proposal.id
    assert created.revision.number == 1
    assert created.proposal.risk == "critical"
    assert [f.path for f in created.revision.changeset] == ["src/lib.rs"]
    assert created.revision.created_by == ALICE
    assert created.to_dict()["proposal"]["id"] == pid
    assert "Proposal(id=" in repr(created.proposal)

    first = engine.session(HOST).patch_validate(proposal_id=pid)
    assert not first.valid
    assert first.stage("coverage").status == "failed"
    assert "coverage" in first.failed

    revised = engine.session(ALICE).proposal_attach_patch(proposal_id=pid, expected_revision=1, patch=SECOND_PATCH.encode(), note_md="Only `greet` changes now.")
    assert revised.revision.number == 2
    assert engine.session(HOST).patch_validate(proposal_id=pid).stage("coverage").status == "passed"

    plan = engine.call(ALICE, "proposal.request_review", {"proposal_id": pid})
    assert plan["review_plan"]

    with pytest.raises(roundtable.Forbidden) as own:
        engine.session(ALICE).vote_cast(proposal_id=pid, revision=2, vote="approve").vote
    assert own.value.code == "forbidden"
    vote = engine.session(BOB).vote_cast(proposal_id=pid, revision=2, vote="approve", reason_md="Reads well.").vote
    assert (vote.agent_id, vote.vote, vote.revision) == ("bob", "approve", 2)
    engine.session(SAM).vote_cast(proposal_id=pid, revision=2, vote="approve_with_notes", reason_md="Fine.").vote
    engine.call(SAM, "security.review", {"proposal_id": pid, "revision": 2, "verdict": "pass"})
    engine.call(CAROL, "human.approve", {"proposal_id": pid, "revision": 2, "note_md": "Ship it."})

    ready = engine.session(HOST).patch_validate(proposal_id=pid)
    assert ready.valid, ready.failed

    applied = engine.session(HOST).patch_apply(proposal_id=pid, revision=2)
    assert applied.proposal.status == "applied"
    assert applied.transaction.status == "applied" or applied.transaction.status == "committed"
    assert applied.transaction.file_count == 1
    assert applied.validation.valid
    assert "Hello, {name}!" in (repo / "src" / "lib.rs").read_text()

    rolled = engine.session(HOST).transaction_rollback(transaction_id=applied.transaction.id)
    assert rolled.transaction.rollback_of == applied.transaction.id
    assert (repo / "src" / "lib.rs").read_text() == LIB_RS

    page = engine.session(HOST).events_list(proposal_id=pid)
    assert len(page) >= 5
    assert page.events[0].proposal_id == pid
    assert all(e.seq < f.seq for e, f in zip(page.events, page.events[1:]))
    chain = engine.call(HOST, "events.verify", {})
    assert chain["valid"] is True


def test_records_are_frozen(engine: roundtable.Engine) -> None:
    register(engine)
    claim = engine.session(ALICE).claim_acquire(resource_id="file:README.md", type="write", ttl_s=900).claim
    with pytest.raises(AttributeError):
        claim.status = "released"  # type: ignore[misc]
    assert claim.to_dict()["id"] == claim.id
    d = claim.to_dict()
    d["id"] = "changed"
    assert claim.to_dict()["id"] == claim.id


def test_actor() -> None:
    a = roundtable.Actor.agent("alice")
    assert (a.kind, a.id) == ("agent", "alice")
    assert repr(a) == "Actor.agent('alice')" or repr(a) == 'Actor.agent("alice")'
    assert str(a) == "agent:alice"
    assert a == roundtable.Actor.parse("agent:alice")
    assert a != roundtable.Actor.human("alice")
    assert len({a, roundtable.Actor.agent("alice")}) == 1
    with pytest.raises(roundtable.InvalidArgument):
        roundtable.Actor.agent("")


def test_parse_and_apply_patch(repo: Path) -> None:
    summary = roundtable.parse_patch(SECOND_PATCH.encode())
    (f,) = summary["files"]
    assert f["new_path"] == "src/lib.rs"
    assert f["added_lines"] == 1 and f["removed_lines"] == 1
    assert roundtable.apply_patch(repo, SECOND_PATCH, check=True) == [{"path": "src/lib.rs", "action": "write"}]
    assert (repo / "src" / "lib.rs").read_text() == LIB_RS
    roundtable.apply_patch(repo, SECOND_PATCH.encode())
    assert "Hello, {name}!" in (repo / "src" / "lib.rs").read_text()


def test_closed_engine(repo: Path) -> None:
    e = roundtable.open(repo)
    e.close()
    e.close()
    assert e.closed
    with pytest.raises(ValueError, match="closed"):
        e.call(HOST, "events.verify", {})


def test_tools_listed() -> None:
    names = {t["name"] for t in roundtable.tools()}
    assert {"proposal.create", "patch.apply", "transaction.rollback", "events.list"} <= names


def test_actors_and_records_pickle_and_copy(repo: Path, engine: roundtable.Engine) -> None:
    """An actor, and a record holding one, cross a multiprocessing queue."""
    import copy
    import pickle

    for actor in (ALICE, HOST, Actor.human("carol")):
        assert pickle.loads(pickle.dumps(actor)) == actor
        assert copy.deepcopy(actor) == actor and copy.copy(actor) == actor
    register(engine)
    made = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="t", summary_md="s", patch=SECOND_PATCH)
    again = pickle.loads(pickle.dumps(made))
    assert again == made
    assert again.revision.created_by == ALICE


def test_a_record_naming_an_unknown_actor_kind_is_refused_not_guessed() -> None:
    """Before, any kind but agent and human became an orchestrator."""
    from roundtable import _records

    assert _records._actor({"kind": "human", "id": "carol"}) == Actor.human("carol")
    assert _records._actor({"kind": "orchestrator", "id": "h"}) == Actor.orchestrator("h")
    with pytest.raises(roundtable.InvalidArgument):
        _records._actor({"kind": "robot", "id": "r2"})
