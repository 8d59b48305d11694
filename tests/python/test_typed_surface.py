"""The generated typed surface against the registry it was generated from:
every record has exactly its schema's fields, every enum its values, every
tool a typed method; sessions, iterators, deadlines and asyncio behave."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import keyword
import pickle
import threading
import time
import typing
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import roundtable
from roundtable import Actor
from roundtable.aio import AsyncEngine
from conftest import ALICE, BOB, FIRST_PATCH, HOST, register


def registry() -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Every $defs entry and every result schema (by title), from the live
    registry (not the file the generator read)."""
    defs: Dict[str, Any] = {}
    results: Dict[str, Any] = {}
    for tool in roundtable.tools():
        for side in ("input_schema", "output_schema"):
            defs.update(tool[side].get("$defs", {}))
        out = tool["output_schema"]
        results[out["title"]] = out
    return defs, results


def is_optional(hint: Any) -> bool:
    return type(None) in typing.get_args(hint)


def test_every_record_has_exactly_its_schemas_fields() -> None:
    defs, results = registry()
    records = {n: s for n, s in defs.items() if "properties" in s and n != "Actor"}
    records.update(results)
    assert len(records) > 60
    for name, schema in records.items():
        cls = getattr(roundtable, name, None)
        assert cls is not None and dataclasses.is_dataclass(cls), f"roundtable.{name} is a record"
        assert cls.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
        # A property named by a Python keyword (`from`) is its field with a
        # trailing underscore (`from_`).
        props = {(p + "_" if keyword.iskeyword(p) else p): p for p in schema["properties"]}
        fields = {f.name for f in dataclasses.fields(cls)} - {"raw"}
        assert fields == set(props), f"{name}: fields differ from its schema"
        hints = typing.get_type_hints(cls)
        required = set(schema.get("required", []))
        for field in fields:
            prop = props[field]
            nullable = "null" in str(schema["properties"][prop]) or prop not in required
            if not nullable and hints[field] is not Any:
                assert not is_optional(hints[field]), f"{name}.{field} is required, typed {hints[field]}"


def test_every_enum_is_a_literal_of_its_schemas_values() -> None:
    defs, _ = registry()
    enums = {n: s for n, s in defs.items() if "oneOf" in s and all("const" in a for a in s["oneOf"])}
    assert "ProposalStatus" in enums and len(enums) > 15
    for name, schema in enums.items():
        values = tuple(a["const"] for a in schema["oneOf"])
        assert typing.get_args(getattr(roundtable, name)) == values, name
        plural = [k for k in dir(roundtable) if k.endswith("S") and getattr(roundtable, k) == values]
        assert plural, f"a tuple of {name}'s values"


def test_the_types_are_of_the_extensions_json_version() -> None:
    assert roundtable.JSON_VERSION == roundtable._roundtable.JSON_VERSION >= 1


def test_every_tool_has_a_typed_method_with_its_arguments() -> None:
    for tool in roundtable.tools():
        method = getattr(roundtable.Session, tool["name"].replace(".", "_"))
        params = inspect.signature(method).parameters
        names = {p for p in params if p != "self"}
        assert names == set(tool["input_schema"].get("properties", {})), tool["name"]
        for p in tool["input_schema"].get("required", []):
            assert params[p].default is inspect.Parameter.empty, f"{tool['name']}: {p} is required"
        assert inspect.signature(method).return_annotation == tool["output_schema"]["title"]
        amethod = getattr(roundtable.aio.AsyncSession, tool["name"].replace(".", "_"))
        assert inspect.iscoroutinefunction(amethod), tool["name"]


def test_a_record_is_built_from_what_the_tool_returns(engine: roundtable.Engine) -> None:
    register(engine)
    alice = engine.session(ALICE)
    alice.claim_acquire(resource_id="file:src/lib.rs", type="write", ttl_s=600)
    made = alice.proposal_create(task_id="excited-greeting", title="t", summary_md="s", patch=FIRST_PATCH)
    raw = engine.call(BOB, "proposal.get", {"proposal_id": made.proposal.id})
    got = engine.session(BOB).proposal_get(proposal_id=made.proposal.id)
    assert got.to_dict() == raw and got.to_dict() is not got.raw
    # The extension builds it in one pass; from_dict builds the same record.
    assert got == roundtable.ProposalDetail.from_dict(raw) and got.raw == raw
    assert type(got.revision.changeset[0].after) is roundtable.FileState
    assert got.revision.created_by == ALICE and isinstance(got.revision.changeset, tuple)
    assert got.revision.diff_digest == raw["revision"]["diff_digest"]
    # Records (and the actors in them) pickle and deep-copy.
    assert pickle.loads(pickle.dumps(got)) == got
    assert copy.deepcopy(got) == got
    # Frozen.
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.proposal.title = "x"  # type: ignore[misc]


def test_an_unknown_actor_kind_in_a_record_is_refused() -> None:
    with pytest.raises(roundtable.InvalidArgument):
        roundtable.Task.from_dict({"id": "t", "title": "x", "created_at": "t", "created_by": {"kind": "robot", "id": "x"}})
    event = {"seq": 1, "kind": "k", "actor": {"kind": "robot", "id": "x"}, "subject": "s", "data": None,
             "at": "t", "prev_digest": "p", "digest": "d"}
    with pytest.raises(roundtable.InvalidArgument):
        roundtable.Event.from_dict(event)


def test_a_session_acts_only_as_its_actor(engine: roundtable.Engine) -> None:
    register(engine)
    alice = engine.session(ALICE)
    assert alice.actor == ALICE and "agent:alice" in repr(alice)
    with pytest.raises(roundtable.Forbidden):
        alice.agent_register(agent_id="mallory", roles=["author"])
    with pytest.raises(roundtable.Forbidden):
        alice.task_create(title="mine")
    assert engine.session(HOST).task_list().tasks[-1].id == "excited-greeting", "nothing was created"


def test_iterators_follow_every_page(engine: roundtable.Engine) -> None:
    host = engine.session(HOST)
    for i in range(7):
        host.agent_register(agent_id=f"a{i}", roles=["author"])
    assert [a.id for a in host.iter_agent_list(limit=2)] == [f"a{i}" for i in range(7)]
    assert len(host.agent_list(limit=2).agents) == 2
    events = list(host.iter_events_list(limit=3))
    assert [e.seq for e in events] == list(range(1, len(events) + 1)) and len(events) >= 7
    start = host.agent_list(limit=3).next_cursor
    assert [a.id for a in host.iter_agent_list(limit=2, cursor=start)] == ["a3", "a4", "a5", "a6"]


def test_a_deadline_ends_a_claim_wait_and_changes_nothing(engine: roundtable.Engine) -> None:
    register(engine)
    engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60)
    started = time.monotonic()
    with pytest.raises(roundtable.DeadlineExceeded) as e:
        engine.call(ALICE, "claim.acquire", {"resource_id": "file:README.md", "type": "write", "ttl_s": 60,
                                             "wait_ms": 30000}, timeout_ms=150)
    assert e.value.code == "deadline_exceeded" and isinstance(e.value, TimeoutError)
    assert time.monotonic() - started < 10
    assert not engine.session(HOST).claim_list(agent_id="alice").claims


def test_cancel_ends_a_wait_from_another_thread(engine: roundtable.Engine) -> None:
    register(engine)
    held = engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60).claim
    cancel = roundtable.Cancel()
    threading.Timer(0.15, cancel.cancel).start()
    with pytest.raises(roundtable.Cancelled):
        engine.call(ALICE, "claim.acquire", {"resource_id": "file:README.md", "type": "write", "ttl_s": 60,
                                             "wait_ms": 30000}, cancel=cancel)
    assert cancel.cancelled
    engine.session(BOB).claim_release(claim_id=held.id)
    time.sleep(0.1)
    assert not engine.session(HOST).claim_list(agent_id="alice").claims, "the cancelled wait took nothing"
    with pytest.raises(roundtable.Cancelled):
        engine.call(HOST, "task.list", {}, cancel=cancel)  # already cancelled: refused before it starts


def test_a_sessions_options_bound_each_call(engine: roundtable.Engine) -> None:
    register(engine)
    engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60)
    hurried = engine.session(ALICE, timeout_ms=100)
    with pytest.raises(roundtable.DeadlineExceeded):
        hurried.claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=30000)
    cancel = roundtable.Cancel()
    stopped = engine.session(ALICE, cancel=cancel)
    threading.Timer(0.1, cancel.cancel).start()
    with pytest.raises(roundtable.Cancelled):
        stopped.claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=30000)
    with pytest.raises(roundtable.Cancelled):
        stopped.call("task.list", {})
    assert not engine.session(HOST).claim_list(agent_id="alice").claims


def test_cancelling_an_awaiting_task_cancels_the_call(engine: roundtable.Engine) -> None:
    register(engine)
    held = engine.session(BOB).claim_acquire(resource_id="file:README.md", type="write", ttl_s=60).claim
    aengine = AsyncEngine(engine)

    async def main() -> float:
        alice = aengine.session(ALICE)
        task = asyncio.ensure_future(
            alice.claim_acquire(resource_id="file:README.md", type="write", ttl_s=60, wait_ms=30000)
        )
        await asyncio.sleep(0.1)
        started = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    took = asyncio.run(main())
    assert took < 5, f"the native wait ended with the task ({took:.2f}s)"
    engine.session(BOB).claim_release(claim_id=held.id)
    time.sleep(0.1)
    assert not engine.session(HOST).claim_list(agent_id="alice").claims, "the cancelled call took nothing"


def test_async_iterators_and_follow(engine: roundtable.Engine) -> None:
    register(engine)

    async def main() -> Tuple[List[int], List[str]]:
        async with AsyncEngine(engine) as aengine:
            host = aengine.session(HOST)
            seqs = [e.seq async for e in host.iter_events_list(limit=2)]
            later = asyncio.ensure_future(host.task_create(task_id="later", title="Later"))
            kinds = []
            async for event in host.follow(since_seq=seqs[-1], kinds=["task.created"], idle_timeout_s=2):
                kinds.append(event.kind)
                break
            await later
            return seqs, kinds

    seqs, kinds = asyncio.run(main())
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 4
    assert kinds == ["task.created"]
    assert engine.closed, "leaving `async with` closed the engine"


def test_async_open(repo: Path) -> None:
    async def main() -> str:
        aengine = await AsyncEngine.open(repo, durability="normal")
        try:
            return (await aengine.session(HOST).workspace_get()).landing.mode
        finally:
            await aengine.close()

    assert asyncio.run(main()) == "files"


def test_every_error_code_has_a_details_typeddict() -> None:
    assert set(roundtable.DETAILS) == set(roundtable.ERROR_CODES)
    assert "holder" in roundtable.ConflictDetails.__annotations__
