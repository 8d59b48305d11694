"""Leaving a ``with`` block on an exception closes the engine and changes
nothing: no apply, no commit, no rollback, not a byte of the workspace or a
row of the store."""

from __future__ import annotations

from pathlib import Path

import pytest

import roundtable
from conftest import ALICE, HOST, SECOND_PATCH, files, register, store_rows


def test_exit_after_exception_changes_nothing(repo: Path) -> None:
    with roundtable.open(repo) as engine:
        register(engine)
        engine.session(ALICE).claim_acquire(resource_id="file:src/lib.rs", type="write", ttl_s=900)
        created = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="t", summary_md="s", patch=SECOND_PATCH, risk="low", affected_resources=["file:src/lib.rs"])
        pid = created.proposal.id
    assert engine.closed

    workspace_before = files(repo)
    store_before = store_rows(repo)

    with pytest.raises(RuntimeError, match="host failed"):
        with roundtable.open(repo) as engine:
            # A refused apply (no approvals yet) and a read-only validation...
            with pytest.raises(roundtable.ValidationFailed):
                engine.session(HOST).patch_apply(proposal_id=pid, revision=1)
            assert not engine.session(HOST).patch_validate(proposal_id=pid).valid
            # ...then the host fails inside the block.
            raise RuntimeError("host failed")
    assert engine.closed
    with pytest.raises(ValueError):
        engine.session(HOST).patch_validate(proposal_id=pid)

    assert files(repo) == workspace_before
    assert store_rows(repo) == store_before

    # The proposal is still exactly where it was, and the store reopens.
    with roundtable.open(repo) as engine:
        got = engine.call(HOST, "proposal.get", {"proposal_id": pid})
        assert got["proposal"]["status"] == "pending"
        assert engine.call(HOST, "events.verify", {})["valid"] is True


def test_exit_never_applies_a_valid_proposal(repo: Path) -> None:
    """Even a proposal that would validate is not applied by leaving a block."""
    with roundtable.open(repo) as engine:
        register(engine)
        engine.session(ALICE).claim_acquire(resource_id="file:src/lib.rs", type="write", ttl_s=900)
        pid = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="t", summary_md="s", patch=SECOND_PATCH, risk="low", affected_resources=["file:src/lib.rs"]).proposal.id
        engine.call(ALICE, "proposal.request_review", {"proposal_id": pid})
        engine.session(roundtable.Actor.agent("bob")).vote_cast(proposal_id=pid, revision=1, vote="approve").vote
        assert engine.session(HOST).patch_validate(proposal_id=pid).valid
    before = files(repo)
    rows = store_rows(repo)
    with pytest.raises(KeyboardInterrupt):
        with roundtable.open(repo):
            raise KeyboardInterrupt
    assert files(repo) == before
    assert store_rows(repo) == rows
