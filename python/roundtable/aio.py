"""asyncio: the same tools, awaitable.

Every call runs on a thread of the :class:`AsyncEngine`'s own (the GIL
released while the core works), never on the event loop's default
executor, so the loop keeps running while a call waits on the apply lock, a
busy store, a claim (``claim_acquire`` with ``wait_ms``) or new events
(``events_wait``, ``inbox_wait``, :meth:`AsyncSession.follow`). The tools
that wait (``waits`` in :func:`roundtable.tools`) get a thread each from a
pool of their own (up to ``wait_threads``), the others share a small pool
(``threads``): a hundred actors long-polling leave the quick calls of a host
as fast as they are alone. Cancelling the awaiting task cancels the call
itself: its waits end at once and it changes nothing (a mutating call
already past its commit point finishes, and the cancellation is raised
after it). A session's ``timeout_ms`` and ``cancel`` bound every call it
makes, as :meth:`Engine.session <roundtable.Engine.session>`'s do::

    import roundtable
    from roundtable.aio import AsyncEngine

    async def main() -> None:
        engine = await AsyncEngine.open("path/to/repo")
        async with engine:
            agent = engine.session(roundtable.Actor.agent("alice"))
            async for event in agent.follow(idle_timeout_s=5):
                print(event.kind)
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, Dict, FrozenSet, Mapping, Optional, Sequence, Type, TypeVar

from . import Engine, StrPath
from . import open as _open
from . import tools as _tool_list
from ._records import Event, EventKind, Record
from ._roundtable import Actor, Cancel
from ._tools import AsyncToolMethods

__all__ = ["AsyncEngine", "AsyncSession"]

T = TypeVar("T")
R = TypeVar("R", bound=Record)

#: The most threads an :class:`AsyncEngine` runs waiting calls on at once,
#: unless told otherwise (each one sleeps in the core until its wait ends).
WAIT_THREADS = 256


@functools.lru_cache(maxsize=None)
def _waiting_tools() -> FrozenSet[str]:
    """The tools whose calls may block for long (``waits`` in the registry)."""
    return frozenset(t["name"] for t in _tool_list() if t["waits"])


class _Threads:
    """An :class:`AsyncEngine`'s threads: a small pool for quick calls and a
    pool of up to ``wait_threads`` for the tools that wait, each made the
    first time it is needed (a thread is started only when no idle one is
    left, and kept for the next call)."""

    __slots__ = ("quick_threads", "wait_threads", "_quick", "_waits", "_lock")

    def __init__(self, quick_threads: Optional[int], wait_threads: int) -> None:
        if wait_threads < 1:
            raise ValueError("wait_threads must be at least 1")
        self.quick_threads = quick_threads or min(32, (os.cpu_count() or 1) + 4)
        self.wait_threads = wait_threads
        self._quick: Optional[ThreadPoolExecutor] = None
        self._waits: Optional[ThreadPoolExecutor] = None
        self._lock = threading.Lock()

    def quick(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._quick is None:
                self._quick = ThreadPoolExecutor(self.quick_threads, thread_name_prefix="roundtable-aio")
            return self._quick

    def waits(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._waits is None:
                self._waits = ThreadPoolExecutor(self.wait_threads, thread_name_prefix="roundtable-aio-wait")
            return self._waits

    def for_tool(self, tool: str) -> ThreadPoolExecutor:
        return self.waits() if tool in _waiting_tools() else self.quick()

    def shutdown(self) -> None:
        with self._lock:
            pools, self._quick, self._waits = (self._quick, self._waits), None, None
        for pool in pools:
            if pool is not None:
                pool.shutdown(wait=False)


async def _off_loop(pool: ThreadPoolExecutor, call: Callable[[Cancel], T], cancel: Optional[Cancel]) -> T:
    """Run ``call`` on ``pool`` with a cancellation handle of its own (a
    child of ``cancel``, when given) that the awaiting task's cancellation
    cancels."""
    mine = cancel.child() if cancel is not None else Cancel()
    future = asyncio.get_running_loop().run_in_executor(pool, call, mine)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        mine.cancel()
        # Let the call end (it does at once if it waits, or finishes past
        # its commit point) before the cancellation goes on.
        try:
            await future
        except Exception:
            pass
        raise


class AsyncEngine:
    """An :class:`~roundtable.Engine` for asyncio: ``await`` its calls.

    ``threads`` bounds the pool of quick calls (default: the CPU count plus
    4, at most 32); ``wait_threads`` (default :data:`WAIT_THREADS`) the
    calls of waiting tools in flight at once, beyond which they queue. Both
    pools belong to this object, not to the event loop."""

    __slots__ = ("engine", "_threads")

    def __init__(self, engine: Engine, *, threads: Optional[int] = None, wait_threads: int = WAIT_THREADS) -> None:
        #: The synchronous engine underneath (shared, thread-safe).
        self.engine = engine
        self._threads = _Threads(threads, wait_threads)

    @classmethod
    async def open(
        cls, root: StrPath, *, threads: Optional[int] = None, wait_threads: int = WAIT_THREADS, **options: Any
    ) -> "AsyncEngine":
        """:func:`roundtable.open` off the event loop (opening may migrate
        the store and recover an interrupted apply)."""
        pool = _Threads(threads, wait_threads)
        engine = await asyncio.get_running_loop().run_in_executor(
            pool.quick(), functools.partial(_open, root, **options)
        )
        made = cls(engine)
        made._threads = pool
        return made

    @property
    def root(self) -> str:
        """The repository root."""
        return self.engine.root

    async def close(self) -> None:
        """Close the engine once the calls in flight return, and let its
        threads go."""
        await asyncio.get_running_loop().run_in_executor(self._threads.quick(), self.engine.close)
        self._threads.shutdown()

    async def __aenter__(self) -> "AsyncEngine":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close()

    async def call(
        self,
        actor: Actor,
        tool: str,
        args: Mapping[str, Any],
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> Dict[str, Any]:
        """:meth:`Engine.call <roundtable.Engine.call>`, awaited: ``timeout_ms``
        and ``cancel`` bound its waits the same way, and so does cancelling
        the awaiting task."""
        inner = self.engine._inner

        def run(mine: Cancel) -> Dict[str, Any]:
            result: Dict[str, Any] = inner.call(actor, tool, args, timeout_ms=timeout_ms, cancel=mine)
            return result

        return await _off_loop(self._threads.for_tool(tool), run, cancel)

    async def call_record(
        self,
        actor: Actor,
        tool: str,
        args: Mapping[str, Any],
        record: Type[R],
        *,
        timeout_ms: Optional[int] = None,
        cancel: Optional[Cancel] = None,
    ) -> R:
        """:meth:`call`, its result as the generated ``record``."""
        inner = self.engine._inner

        def run(mine: Cancel) -> R:
            built: R = inner.call_record(actor, tool, args, record._PLAN, timeout_ms=timeout_ms, cancel=mine)
            return built

        return await _off_loop(self._threads.for_tool(tool), run, cancel)

    def session(
        self, actor: Actor, *, timeout_ms: Optional[int] = None, cancel: Optional[Cancel] = None
    ) -> "AsyncSession":
        """A handle bound to ``actor``: every tool as an awaitable typed
        method. ``timeout_ms`` bounds each call's waits and ``cancel`` ends
        the waits of every call of the session (cancelling one awaiting
        task ends only its own call)."""
        return AsyncSession(self, actor, timeout_ms=timeout_ms, cancel=cancel)


class AsyncSession(AsyncToolMethods):
    """An :class:`AsyncEngine` bound to one actor: the typed methods of
    :class:`~roundtable.Session`, awaitable, with ``async for`` iterators."""

    __slots__ = ("engine", "actor", "timeout_ms", "cancel")

    def __init__(
        self, engine: AsyncEngine, actor: Actor, *, timeout_ms: Optional[int] = None, cancel: Optional[Cancel] = None
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
        return f"<roundtable.aio.AsyncSession {self.actor} root={self.engine.root!r}>"

    async def call(self, tool: str, args: Mapping[str, Any]) -> Dict[str, Any]:
        """Call any tool as this session's actor; its JSON result."""
        return await self.engine.call(self.actor, tool, args, timeout_ms=self.timeout_ms, cancel=self.cancel)

    async def call_record(self, tool: str, args: Mapping[str, Any], record: Type[R]) -> R:
        """Call any tool as this session's actor; its result as ``record``."""
        return await self.engine.call_record(
            self.actor, tool, args, record, timeout_ms=self.timeout_ms, cancel=self.cancel
        )

    async def follow(
        self,
        *,
        since_seq: int = 0,
        proposal_id: Optional[str] = None,
        kinds: Optional[Sequence[EventKind]] = None,
        by: Optional[Actor] = None,
        poll_timeout_ms: int = 30000,
        idle_timeout_s: Optional[float] = None,
    ) -> AsyncIterator[Event]:
        """:meth:`Session.follow <roundtable.Session.follow>` for ``async
        for``: each long poll is awaited, the loop runs meanwhile."""
        from . import _poll_timeout

        since = since_seq
        idle_since = time.monotonic()
        while True:
            timeout = _poll_timeout(poll_timeout_ms, idle_timeout_s, idle_since)
            if timeout is None:
                return
            page = await self.events_wait(
                since_seq=since, proposal_id=proposal_id, kinds=kinds, actor=by, timeout_ms=timeout
            )
            since = page.next_since_seq
            if page.events:
                idle_since = time.monotonic()
            for event in page.events:
                yield event

