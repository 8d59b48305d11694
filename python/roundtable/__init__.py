"""roundtable: govern the changes AI agents propose to a repository.

Open a workspace, then call tools as an actor::

    import roundtable
    from roundtable import Actor

    with roundtable.open("path/to/repo") as engine:
        host = Actor.orchestrator("host")
        engine.call("agent.register", {"agent_id": "alice", "roles": ["author"]}, host)

Every call runs with the GIL released (the store, hashing and file writes
happen in Rust while other Python threads run), and one engine may be
shared between threads. A refused call raises a :class:`RoundtableError`
subclass named after its stable code and changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import os
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _roundtable
from ._errors import (
    AmbiguousSymbol,
    Busy,
    Cancelled,
    DeadlineExceeded,
    Conflict,
    DatabaseError,
    EditPlanError,
    Forbidden,
    IdempotencyConflict,
    IllegalTransition,
    IncompatibleStore,
    IncompleteEditPlan,
    InvalidArgument,
    InvalidEditPlan,
    InvalidPatch,
    InvalidPath,
    InvalidPolicy,
    IrreversiblePatch,
    NotFound,
    PatchDoesNotApply,
    PatchError,
    PathError,
    PathEscape,
    PreconditionFailed,
    RoundtableError,
    RoundtableFileExistsError,
    RoundtableFileNotFoundError,
    RoundtableInterruptedError,
    RoundtableIsADirectoryError,
    RoundtableNotADirectoryError,
    RoundtableOSError,
    RoundtablePermissionError,
    RoundtableTimeoutError,
    SpecialFile,
    StaleClaim,
    StoreError,
    SymbolError,
    UnknownSymbol,
    UnsupportedLanguage,
    UnsupportedPatch,
    ValidationFailed,
    error_class,
)
from ._records import (
    Applied,
    ChangedFile,
    Claim,
    Event,
    EventPage,
    EventWait,
    LineSpan,
    Proposal,
    ProposalRevision,
    ProposalStatus,
    Revision,
    RolledBack,
    Stage,
    TestResult,
    Transaction,
    ValidationReport,
    Vote,
)
from ._roundtable import ERROR_CODES, Actor, __version__

__all__ = [
    "open",
    "Engine",
    "Actor",
    "parse_patch",
    "apply_patch",
    "tools",
    "ERROR_CODES",
    "__version__",
    # records
    "Applied",
    "ChangedFile",
    "Claim",
    "Event",
    "EventPage",
    "EventWait",
    "LineSpan",
    "Proposal",
    "ProposalRevision",
    "ProposalStatus",
    "Revision",
    "RolledBack",
    "Stage",
    "TestResult",
    "Transaction",
    "ValidationReport",
    "Vote",
    # errors
    "RoundtableError",
    "InvalidArgument",
    "NotFound",
    "Forbidden",
    "Conflict",
    "IllegalTransition",
    "IdempotencyConflict",
    "PreconditionFailed",
    "StaleClaim",
    "ValidationFailed",
    "Busy",
    "Cancelled",
    "DeadlineExceeded",
    "PatchError",
    "InvalidPatch",
    "PatchDoesNotApply",
    "UnsupportedPatch",
    "IrreversiblePatch",
    "PathError",
    "PathEscape",
    "InvalidPath",
    "SpecialFile",
    "EditPlanError",
    "InvalidEditPlan",
    "IncompleteEditPlan",
    "SymbolError",
    "UnknownSymbol",
    "AmbiguousSymbol",
    "UnsupportedLanguage",
    "InvalidPolicy",
    "StoreError",
    "DatabaseError",
    "IncompatibleStore",
    "RoundtableOSError",
    "RoundtableFileNotFoundError",
    "RoundtableFileExistsError",
    "RoundtablePermissionError",
    "RoundtableIsADirectoryError",
    "RoundtableNotADirectoryError",
    "RoundtableInterruptedError",
    "RoundtableTimeoutError",
    "error_class",
]

StrPath = Union[str, "os.PathLike[str]"]
Patch = Union[str, bytes]


def _patch(patch: Optional[Patch]) -> Dict[str, str]:
    """The tool argument carrying ``patch``: ``patch`` (text) for a string
    or UTF-8 bytes, ``patch_base64`` for bytes that are not UTF-8 (a
    Latin-1 diff), which a JSON string cannot carry exactly."""
    if patch is None:
        return {}
    if not isinstance(patch, bytes):
        return {"patch": patch}
    try:
        return {"patch": patch.decode("utf-8")}
    except UnicodeDecodeError:
        return {"patch_base64": base64.b64encode(patch).decode("ascii")}


def _put(args: Dict[str, Any], **optional: Any) -> Dict[str, Any]:
    """``args`` plus every optional argument that was given (not None)."""
    for key, value in optional.items():
        if value is not None:
            args[key] = value
    return args


class Engine:
    """An open workspace: the repository root, its store and every tool.

    Safe to share between threads. Use it as a context manager (or call
    :meth:`close`): leaving the ``with`` block closes the engine and does
    nothing else — every tool call is its own all-or-nothing transaction,
    already committed or refused when it returns, so nothing is ever
    applied or committed on exit, with or without an exception.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: _roundtable.Engine) -> None:
        self._inner = inner

    # -- lifecycle -------------------------------------------------------

    @property
    def root(self) -> str:
        """The repository root."""
        return self._inner.root

    @property
    def closed(self) -> bool:
        """Whether the engine was closed."""
        return self._inner.closed

    def close(self) -> None:
        """Close the engine (idempotent). Calls already running on other
        threads finish; later calls raise ``ValueError``."""
        self._inner.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # Never apply, commit or roll back anything here: just close.
        self.close()

    def __repr__(self) -> str:
        return f"<roundtable.Engine root={self.root!r}{' closed' if self.closed else ''}>"

    # -- the generic entry point -----------------------------------------

    def call(self, tool: str, args: Mapping[str, Any], actor: Actor) -> Dict[str, Any]:
        """Call any tool (see :func:`tools`) with ``args`` as ``actor``; its
        JSON result as a dict. Raises a :class:`RoundtableError` subclass
        when the call is refused (and then nothing changed)."""
        result: Dict[str, Any] = self._inner.call(tool, args, actor)
        return result

    def call_json(self, tool: str, args: Union[str, bytes], actor: Actor) -> str:
        """:meth:`call` with JSON text in and out (a key given twice is refused)."""
        return self._inner.call_json(tool, args, actor)

    # -- typed methods for the main flow ---------------------------------

    def create_proposal(
        self,
        actor: Actor,
        *,
        task_id: str,
        title: str,
        summary_md: str,
        patch: Optional[Patch] = None,
        edit_plan: Optional[Mapping[str, Any]] = None,
        risk: Optional[str] = None,
        patch_format: Optional[str] = None,
        affected_resources: Optional[Sequence[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> ProposalRevision:
        """``proposal.create``: a new proposal with its first revision (a
        ``patch`` — a unified/git diff, or with ``patch_format="codex"`` a
        Codex ``*** Begin Patch`` envelope, with ``"search_replace"``
        SEARCH/REPLACE blocks — or an ``edit_plan``). ``patch`` may be
        bytes: ones that are not UTF-8 (a Latin-1 diff) travel as
        ``patch_base64`` and land byte for byte."""
        args = _put(
            {"task_id": task_id, "title": title, "summary_md": summary_md},
            **_patch(patch),
            patch_format=patch_format,
            edit_plan=dict(edit_plan) if edit_plan is not None else None,
            risk=risk,
            affected_resources=list(affected_resources) if affected_resources is not None else None,
            idempotency_key=idempotency_key,
        )
        return ProposalRevision.from_dict(self.call("proposal.create", args, actor))

    def attach_patch(
        self,
        actor: Actor,
        proposal_id: str,
        *,
        expected_revision: int,
        patch: Optional[Patch] = None,
        edit_plan: Optional[Mapping[str, Any]] = None,
        note_md: Optional[str] = None,
        patch_format: Optional[str] = None,
        affected_resources: Optional[Sequence[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> ProposalRevision:
        """``proposal.attach_patch``: a new revision; ``expected_revision`` is
        the latest one the caller saw (a stale one is a :class:`Conflict`);
        ``patch_format`` as for :meth:`create_proposal`."""
        args = _put(
            {"proposal_id": proposal_id, "expected_revision": expected_revision},
            **_patch(patch),
            patch_format=patch_format,
            edit_plan=dict(edit_plan) if edit_plan is not None else None,
            note_md=note_md,
            affected_resources=list(affected_resources) if affected_resources is not None else None,
            idempotency_key=idempotency_key,
        )
        return ProposalRevision.from_dict(self.call("proposal.attach_patch", args, actor))

    def acquire_claim(
        self,
        actor: Actor,
        resource_id: str,
        *,
        type: str = "write",
        ttl_s: int = 900,
        task_id: Optional[str] = None,
        wait_ms: Optional[int] = None,
        idempotency_key: Optional[str] = None,
    ) -> Claim:
        """``claim.acquire``: claim a resource (``file:PATH``,
        ``symbol:PATH#NAME``…) for ``ttl_s`` seconds. With ``wait_ms`` (at
        most 60000), a conflicting claim of another agent is waited for —
        first come first served — until it is released or expires; still
        held then, :class:`Conflict`. Re-acquiring one's own live claim
        returns it, renewed."""
        args = _put(
            {"resource_id": resource_id, "type": type, "ttl_s": ttl_s},
            task_id=task_id,
            wait_ms=wait_ms,
            idempotency_key=idempotency_key,
        )
        return Claim.from_dict(self.call("claim.acquire", args, actor)["claim"])

    async def acquire_claim_async(
        self,
        actor: Actor,
        resource_id: str,
        *,
        type: str = "write",
        ttl_s: int = 900,
        task_id: Optional[str] = None,
        wait_ms: Optional[int] = None,
        idempotency_key: Optional[str] = None,
    ) -> Claim:
        """:meth:`acquire_claim` awaited: it waits in the loop's default
        executor (a thread, GIL released), so the event loop keeps running."""
        call = functools.partial(
            self.acquire_claim,
            actor,
            resource_id,
            type=type,
            ttl_s=ttl_s,
            task_id=task_id,
            wait_ms=wait_ms,
            idempotency_key=idempotency_key,
        )
        return await asyncio.get_running_loop().run_in_executor(None, call)

    def cast_vote(
        self,
        actor: Actor,
        proposal_id: str,
        revision: int,
        vote: str,
        *,
        reason_md: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Vote:
        """``vote.cast``: ``approve``, ``approve_with_notes``, ``revise``,
        ``reject``, ``veto`` or ``abstain`` on one revision."""
        args = _put(
            {"proposal_id": proposal_id, "revision": revision, "vote": vote},
            reason_md=reason_md,
            idempotency_key=idempotency_key,
        )
        return Vote.from_dict(self.call("vote.cast", args, actor)["vote"])

    def validate(self, actor: Actor, proposal_id: str, *, revision: Optional[int] = None) -> ValidationReport:
        """``patch.validate``: every gate for a revision (the latest by
        default); read-only."""
        args = _put({"proposal_id": proposal_id}, revision=revision)
        return ValidationReport.from_dict(self.call("patch.validate", args, actor))

    def apply(
        self,
        actor: Actor,
        proposal_id: str,
        revision: int,
        *,
        transaction_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
    ) -> Applied:
        """``patch.apply``: apply a valid revision as one transaction (a
        failing gate raises :class:`ValidationFailed` with the ``.report``)."""
        args = _put(
            {"proposal_id": proposal_id, "revision": revision},
            transaction_id=transaction_id,
            idempotency_key=idempotency_key,
        )
        return Applied.from_dict(self.call("patch.apply", args, actor))

    def rollback(self, actor: Actor, transaction_id: str, *, idempotency_key: Optional[str] = None) -> RolledBack:
        """``transaction.rollback``: restore the exact bytes and modes an
        applied transaction replaced."""
        args = _put({"transaction_id": transaction_id}, idempotency_key=idempotency_key)
        return RolledBack.from_dict(self.call("transaction.rollback", args, actor))

    def test_result(self, actor: Actor, test_result_id: str) -> TestResult:
        """``test.get``: one test or check result with its note (a failed
        check's output)."""
        args = {"test_result_id": test_result_id}
        return TestResult.from_dict(self.call("test.get", args, actor)["test_result"])

    def test_results(
        self,
        actor: Actor,
        proposal_id: str,
        *,
        revision: Optional[int] = None,
        name: Optional[str] = None,
    ) -> List[TestResult]:
        """``test.list``, every page: a proposal's results oldest first,
        optionally of one revision or one check name."""
        out: List[TestResult] = []
        cursor: Optional[str] = None
        while True:
            args = _put({"proposal_id": proposal_id}, revision=revision, name=name, limit=200, cursor=cursor)
            page = self.call("test.list", args, actor)
            out.extend(TestResult.from_dict(t) for t in page["test_results"])
            cursor = page["next_cursor"]
            if cursor is None:
                return out

    def inbox(self, actor: Actor, *, limit: Optional[int] = None, cursor: Optional[str] = None) -> Dict[str, Any]:
        """``inbox.list``: a page of what waits on ``actor`` (``items``, each
        with its ``proposal``, ``revision``, ``role``, ``action`` and
        ``why``; ``next_cursor``)."""
        return self.call("inbox.list", _put({}, limit=limit, cursor=cursor), actor)

    def events(
        self,
        actor: Actor,
        *,
        proposal_id: Optional[str] = None,
        since_seq: Optional[int] = None,
        limit: Optional[int] = None,
    ) -> EventPage:
        """``events.list``: a page of the audit log, oldest first."""
        args = _put({}, proposal_id=proposal_id, since_seq=since_seq, limit=limit)
        return EventPage.from_dict(self.call("events.list", args, actor))

    def wait_events(
        self,
        actor: Actor,
        *,
        since_seq: int,
        proposal_id: Optional[str] = None,
        kinds: Optional[Sequence[str]] = None,
        by: Optional[Actor] = None,
        limit: Optional[int] = None,
        timeout_ms: Optional[int] = None,
    ) -> EventWait:
        """``events.wait``: block (GIL released) until an event after
        ``since_seq`` matching the filters (``proposal_id``, ``kinds``, the
        actor ``by`` whom) is committed by any process, or ``timeout_ms``
        (default 30000, at most 60000) passes; then ``timed_out`` is true
        and ``next_since_seq`` is where to resume."""
        args = _put(
            {"since_seq": since_seq},
            proposal_id=proposal_id,
            kinds=list(kinds) if kinds is not None else None,
            actor={"kind": by.kind, "id": by.id} if by is not None else None,
            limit=limit,
            timeout_ms=timeout_ms,
        )
        return EventWait.from_dict(self.call("events.wait", args, actor))

    async def wait_events_async(
        self,
        actor: Actor,
        *,
        since_seq: int,
        proposal_id: Optional[str] = None,
        kinds: Optional[Sequence[str]] = None,
        by: Optional[Actor] = None,
        limit: Optional[int] = None,
        timeout_ms: Optional[int] = None,
    ) -> EventWait:
        """:meth:`wait_events` awaited: it waits in the loop's default
        executor (a thread, GIL released), so the event loop keeps running."""
        call = functools.partial(
            self.wait_events,
            actor,
            since_seq=since_seq,
            proposal_id=proposal_id,
            kinds=kinds,
            by=by,
            limit=limit,
            timeout_ms=timeout_ms,
        )
        return await asyncio.get_running_loop().run_in_executor(None, call)

    def follow(
        self,
        actor: Actor,
        *,
        since_seq: int = 0,
        proposal_id: Optional[str] = None,
        kinds: Optional[Sequence[str]] = None,
        by: Optional[Actor] = None,
        poll_timeout_ms: int = 30000,
        idle_timeout_s: Optional[float] = None,
    ) -> Iterator[Event]:
        """Every matching event after ``since_seq``, as it is committed (by
        any process): an endless iterator over :meth:`wait_events`, each
        long poll at most ``poll_timeout_ms``. With ``idle_timeout_s`` it
        ends once that long passed without a matching event. No polling
        loop: each call sleeps until a commit wakes it."""
        since = since_seq
        idle_since = time.monotonic()
        while True:
            timeout = poll_timeout_ms
            if idle_timeout_s is not None:
                left = idle_timeout_s - (time.monotonic() - idle_since)
                if left <= 0:
                    return
                timeout = max(0, min(timeout, int(left * 1000) + 1))
            page = self.wait_events(
                actor,
                since_seq=since,
                proposal_id=proposal_id,
                kinds=kinds,
                by=by,
                timeout_ms=timeout,
            )
            since = page.next_since_seq
            if page.events:
                idle_since = time.monotonic()
            for event in page.events:
                yield event


def open(
    root: StrPath,
    *,
    durability: str = "full",
    busy_timeout_ms: Optional[int] = None,
    max_patch_bytes: Optional[int] = None,
    max_files: Optional[int] = None,
    max_inflated_bytes: Optional[int] = None,
) -> Engine:
    """Open the workspace at ``root`` (creating its store when absent).

    ``durability``: ``"full"`` (fsync every commit), ``"normal"`` or
    ``"off"``. ``max_inflated_bytes`` bounds what one patch's ``GIT binary
    patch`` hunks may inflate to (default 128 MiB). Use the engine as a
    context manager to close it.
    """
    options = _put(
        {"durability": durability},
        busy_timeout_ms=busy_timeout_ms,
        max_patch_bytes=max_patch_bytes,
        max_files=max_files,
        max_inflated_bytes=max_inflated_bytes,
    )
    return Engine(_roundtable.Engine.open(os.fspath(root), options))


def parse_patch(data: Patch, *, strip: int = 1) -> Dict[str, Any]:
    """Parse a unified/git diff (GIL released): ``{"files": [...]}``, each with
    ``old_path``, ``new_path``, ``status``, modes, ``binary``, ``hunks`` and
    line counts. Raises :class:`InvalidPatch` naming the line."""
    return _roundtable.parse_patch(data, strip=strip)


def apply_patch(root: StrPath, data: Patch, *, check: bool = False, strip: int = 1) -> List[Dict[str, Any]]:
    """Apply a patch to the directory ``root``, all or nothing (GIL
    released); with ``check``, only verify. The ``{"path", "action"}`` of
    every path written or removed."""
    return _roundtable.apply_patch(os.fspath(root), data, check=check, strip=strip)


def tools() -> List[Dict[str, Any]]:
    """Every tool: ``name``, ``description``, ``mutates``, ``callers`` (the
    actor kinds that may call it), ``idempotent``, ``destructive``, ``waits``,
    ``input_schema``, ``output_schema``."""
    return _roundtable.tools()
