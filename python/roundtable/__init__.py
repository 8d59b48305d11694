"""roundtable: govern the changes AI agents propose to a repository.

Open a workspace, then call tools as an actor, through a session bound to
it (one typed method per tool, returning typed records)::

    import roundtable
    from roundtable import Actor

    with roundtable.open("path/to/repo") as engine:
        host = engine.session(Actor.orchestrator("host"))
        host.agent_register(agent_id="alice", roles=["author"])
        engine.call(Actor.agent("alice"), "proposal.list", {})  # any tool, as JSON

``roundtable.aio`` has the same surface for asyncio; ``roundtable.worker``
runs a callback per inbox item of an actor (``Worker``, ``AsyncWorker``) and
keeps claims renewed (``ClaimKeeper``); :func:`make_patch` makes the patch
from a file's old and new contents.

Every call runs with the GIL released (the store, hashing and file writes
happen in Rust while other Python threads run), and one engine may be
shared between threads. A refused call raises a :class:`RoundtableError`
subclass named after its stable code and changes nothing.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Type, TypeVar, Union, overload

from . import _details, _errors, _records, _roundtable
from ._details import *  # noqa: F401,F403 (the TypedDict of each error code's details, generated)
from ._errors import *  # noqa: F401,F403 (one exception class per error code, generated)
from ._records import *  # noqa: F401,F403 (every record and enum, generated)
from ._records import Event, EventKind
from ._roundtable import ERROR_CODES, Actor, Cancel, __version__
from ._records import Record
from ._tools import JSON_VERSION, Patch, ToolMethods

if _roundtable.JSON_VERSION != JSON_VERSION:  # pragma: no cover (a mixed install)
    raise ImportError(
        f"roundtable: the extension speaks JSON version {_roundtable.JSON_VERSION}, "
        f"the Python types were generated from version {JSON_VERSION}: reinstall the wheel"
    )

__all__ = [
    "open",
    "Engine",
    "Session",
    "Actor",
    "Cancel",
    "Patch",
    "parse_patch",
    "apply_patch",
    "make_patch",
    "tools",
    "ERROR_CODES",
    "JSON_VERSION",
    "__version__",
]
__all__ += _errors.__all__
__all__ += _records.__all__
__all__ += _details.__all__

StrPath = Union[str, "os.PathLike[str]"]
R = TypeVar("R", bound=Record)


class Engine:
    """An open workspace: the repository root, its store and every tool.

    Safe to share between threads. Use it as a context manager (or call
    :meth:`close`): leaving the ``with`` block closes the engine and does
    nothing else — every tool call is its own all-or-nothing transaction,
    already committed or refused when it returns, so nothing is ever
    applied or committed on exit, with or without an exception.

    Calls take the actor first: ``engine.call(actor, tool, args)``; a
    :meth:`session` is bound to one actor and has a typed method per tool.

    Processes: an engine belongs to the process that opened it. In a
    ``fork()`` child (``os.fork``, ``multiprocessing``'s ``fork`` start
    method) every call on an inherited engine raises :class:`InheritedEngine`
    at once, having done nothing, and closing it there leaves the parent's
    store alone; open a new engine in the child (better: use the ``spawn``
    start method). On Linux the host may read ``.roundtable/store.db`` with
    the standard library's :mod:`sqlite3` and close it while engines run:
    the engine's locks do not belong to the process, so that close cannot
    drop them. Elsewhere, do not open the store with another SQLite in the
    same process.
    """

    __slots__ = ("_inner",)

    def __init__(self, inner: _roundtable.Engine) -> None:
        self._inner = inner

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

    def call(
        self,
        actor: Actor,
        tool: str,
        args: Mapping[str, Any],
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> Dict[str, Any]:
        """Call any tool (see :func:`tools`) as ``actor`` with ``args``; its
        JSON result as a dict. Raises a :class:`RoundtableError` subclass
        when the call is refused (and then nothing changed).

        ``timeout_ms`` and ``cancel`` bound the call's waits (the apply
        lock, a busy store, claim waits, ``events.wait``): past the deadline
        or once ``cancel.cancel()`` is called, it raises
        :class:`DeadlineExceeded` or :class:`Cancelled` having changed
        nothing. A mutating call past its commit point reports success
        whatever happens meanwhile; retry with an ``idempotency_key`` to
        learn the outcome of a call you gave up on."""
        result: Dict[str, Any] = self._inner.call(actor, tool, args, timeout_ms=timeout_ms, cancel=cancel)
        return result

    def call_json(
        self,
        actor: Actor,
        tool: str,
        args: Union[str, bytes],
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> str:
        """:meth:`call` with JSON text in and out (a key given twice is refused)."""
        return self._inner.call_json(actor, tool, args, timeout_ms=timeout_ms, cancel=cancel)

    def session(
        self, actor: Actor, *, timeout_ms: Optional[int] = None, cancel: Optional[Cancel] = None
    ) -> "Session":
        """A handle bound to ``actor``: every tool as a typed method that
        needs no actor argument. Give an agent's thread its session and it
        can act as nobody else. ``timeout_ms`` bounds each call's waits
        and ``cancel`` ends them, as for :meth:`call`."""
        return Session(self, actor, timeout_ms=timeout_ms, cancel=cancel)


class Session(ToolMethods):
    """An :class:`Engine` bound to one actor: one typed method per tool
    (``session.proposal_create(task_id=..., ...)``), each returning the
    tool's result record, an ``iter_*`` generator per paged list, and
    :meth:`follow` for the audit log as it grows. Cheap to make; as
    thread-safe as the engine."""

    __slots__ = ("engine", "actor", "timeout_ms", "cancel")

    def __init__(
        self, engine: Engine, actor: Actor, *, timeout_ms: Optional[int] = None, cancel: Optional[Cancel] = None
    ) -> None:
        #: The engine it calls.
        self.engine = engine
        #: Who every call is made as.
        self.actor = actor
        #: Each call's waits end after this many milliseconds (``None``: the
        #: tool's own bounds only).
        self.timeout_ms = timeout_ms
        #: Cancelling it ends the waits of every call of this session.
        self.cancel = cancel

    def __repr__(self) -> str:
        return f"<roundtable.Session {self.actor} root={self.engine.root!r}>"

    def call(self, tool: str, args: Mapping[str, Any]) -> Dict[str, Any]:
        """Call any tool as this session's actor; its JSON result."""
        result: Dict[str, Any] = self.engine._inner.call(
            self.actor, tool, args, timeout_ms=self.timeout_ms, cancel=self.cancel
        )
        return result

    def call_record(self, tool: str, args: Mapping[str, Any], record: Type[R]) -> R:
        """Call any tool as this session's actor; its result as ``record``,
        built by the extension in one pass."""
        built: R = self.engine._inner.call_record(
            self.actor, tool, args, record._PLAN, timeout_ms=self.timeout_ms, cancel=self.cancel
        )
        return built

    def follow(
        self,
        *,
        since_seq: int = 0,
        proposal_id: Optional[str] = None,
        kinds: Optional[Sequence[EventKind]] = None,
        by: Optional[Actor] = None,
        poll_timeout_ms: int = 30000,
        idle_timeout_s: Optional[float] = None,
    ) -> Iterator[Event]:
        """Every matching event after ``since_seq``, as it is committed (by
        any process): an endless iterator over ``events.wait``, each long
        poll at most ``poll_timeout_ms``. With ``idle_timeout_s`` it ends
        once that long passed without a matching event. No polling loop:
        each call sleeps until a commit wakes it."""
        since = since_seq
        idle_since = time.monotonic()
        while True:
            timeout = _poll_timeout(poll_timeout_ms, idle_timeout_s, idle_since)
            if timeout is None:
                return
            page = self.events_wait(
                since_seq=since, proposal_id=proposal_id, kinds=kinds, actor=by, timeout_ms=timeout
            )
            since = page.next_since_seq
            if page.events:
                idle_since = time.monotonic()
            yield from page.events


def _poll_timeout(poll_timeout_ms: int, idle_timeout_s: Optional[float], idle_since: float) -> Optional[int]:
    """The next long poll's timeout, or None once ``idle_timeout_s`` passed."""
    if idle_timeout_s is None:
        return poll_timeout_ms
    left = idle_timeout_s - (time.monotonic() - idle_since)
    if left <= 0:
        return None
    return max(0, min(poll_timeout_ms, int(left * 1000) + 1))


def open(
    root: StrPath,
    *,
    durability: str = "full",
    busy_timeout_ms: Optional[int] = None,
    max_patch_bytes: Optional[int] = None,
    max_files: Optional[int] = None,
    max_inflated_bytes: Optional[int] = None,
    store: Optional[str] = None,
    statement_timeout_ms: Optional[int] = None,
) -> Engine:
    """Open the workspace at ``root`` (creating its store when absent).

    ``durability``: ``"full"`` (fsync every commit), ``"normal"`` or
    ``"off"``. ``max_inflated_bytes`` bounds what one patch's ``GIT binary
    patch`` hunks may inflate to (default 128 MiB). ``store``: a PostgreSQL
    URL (``postgres://user@host/db?schema=NAME``) several hosts share,
    instead of the embedded SQLite store in ``root/.roundtable/``;
    ``statement_timeout_ms`` bounds one statement there. Use the engine as
    a context manager to close it.
    """
    given = {
        "busy_timeout_ms": busy_timeout_ms,
        "max_patch_bytes": max_patch_bytes,
        "max_files": max_files,
        "max_inflated_bytes": max_inflated_bytes,
        "store": store,
        "statement_timeout_ms": statement_timeout_ms,
    }
    options: Dict[str, Any] = {"durability": durability}
    options.update((k, v) for k, v in given.items() if v is not None)
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


@overload
def make_patch(path: str, old: Optional[str], new: Optional[str]) -> str: ...
@overload
def make_patch(path: str, old: bytes, new: Optional[bytes]) -> bytes: ...
@overload
def make_patch(path: str, old: Optional[bytes], new: bytes) -> bytes: ...
def make_patch(path: str, old: Optional[Patch], new: Optional[Patch]) -> Patch:
    """The patch that turns the file at ``path`` (relative to the
    repository root) from ``old`` into ``new``, as ``git diff`` writes it,
    ready for ``proposal_create(patch=...)``: ``old=None`` creates the file,
    ``new=None`` deletes it, content with a NUL byte becomes a ``GIT binary
    patch``. The file is written as a regular, non-executable one. Text in,
    text out (``str`` contents give a ``str``, ``bytes`` give ``bytes``);
    empty when nothing changes. Raises :class:`InvalidPath` or
    :class:`PathEscape` for a path the engine would refuse."""
    text = _roundtable.make_patch(path, old, new)
    if isinstance(old, bytes) or isinstance(new, bytes):
        return text
    return text.decode("utf-8")


def tools() -> List[Dict[str, Any]]:
    """Every tool: ``name``, ``description``, ``mutates``, ``callers`` (the
    actor kinds that may call it), ``idempotent``, ``destructive``, ``waits``,
    ``input_schema``, ``output_schema``."""
    return _roundtable.tools()
