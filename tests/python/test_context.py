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
        engine.acquire_claim(ALICE, "file:src/lib.rs")
        created = engine.create_proposal(
            ALICE, task_id="excited-greeting", title="t", summary_md="s",
            patch=SECOND_PATCH, risk="low", affected_resources=["file:src/lib.rs"],
        )
        pid = created.proposal.id
    assert engine.closed

    workspace_before = files(repo)
    store_before = store_rows(repo)

    with pytest.raises(RuntimeError, match="host failed"):
        with roundtable.open(repo) as engine:
            # A refused apply (no approvals yet) and a read-only validation...
            with pytest.raises(roundtable.ValidationFailed):
                engine.apply(HOST, pid, 1)
            assert not engine.validate(HOST, pid).valid
            # ...then the host fails inside the block.
            raise RuntimeError("host failed")
    assert engine.closed
    with pytest.raises(ValueError):
        engine.validate(HOST, pid)

    assert files(repo) == workspace_before
    assert store_rows(repo) == store_before

    # The proposal is still exactly where it was, and the store reopens.
    with roundtable.open(repo) as engine:
        got = engine.call("proposal.get", {"proposal_id": pid}, HOST)
        assert got["proposal"]["status"] == "pending"
        assert engine.call("events.verify", {}, HOST)["valid"] is True


def test_exit_never_applies_a_valid_proposal(repo: Path) -> None:
    """Even a proposal that would validate is not applied by leaving a block."""
    with roundtable.open(repo) as engine:
        register(engine)
        engine.acquire_claim(ALICE, "file:src/lib.rs")
        pid = engine.create_proposal(
            ALICE, task_id="excited-greeting", title="t", summary_md="s",
            patch=SECOND_PATCH, risk="low", affected_resources=["file:src/lib.rs"],
        ).proposal.id
        engine.call("proposal.request_review", {"proposal_id": pid}, ALICE)
        engine.cast_vote(roundtable.Actor.agent("bob"), pid, 1, "approve")
        assert engine.validate(HOST, pid).valid
    before = files(repo)
    rows = store_rows(repo)
    with pytest.raises(KeyboardInterrupt):
        with roundtable.open(repo):
            raise KeyboardInterrupt
    assert files(repo) == before
    assert store_rows(repo) == rows
