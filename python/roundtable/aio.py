"""asyncio: the same tools, awaitable.

Every call runs in the event loop's default executor (a thread, the GIL
released while the core works), so the loop keeps running while a call
waits on the apply lock, a busy store, a claim (``claim_acquire`` with
``wait_ms``) or new events (``events_wait``, :meth:`AsyncSession.follow`).
Cancelling the awaiting task cancels the call itself: its waits end at
once and it changes nothing (a mutating call already past its commit point
finishes, and the cancellation is raised after it)::

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
import time
from typing import Any, AsyncIterator, Callable, Dict, Mapping, Optional, Sequence, Type, TypeVar

from . import Engine, StrPath
from . import open as _open
from ._records import Event, EventKind, Record
from ._roundtable import Actor, Cancel
from ._tools import AsyncToolMethods

__all__ = ["AsyncEngine", "AsyncSession"]

T = TypeVar("T")
R = TypeVar("R", bound=Record)


async def _off_loop(call: Callable[[Cancel], T]) -> T:
    """Run ``call`` in the default executor with a cancellation handle that
    the awaiting task's cancellation cancels."""
    cancel = Cancel()
    future = asyncio.get_running_loop().run_in_executor(None, call, cancel)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        cancel.cancel()
        # Let the call end (it does at its next wait, or finishes past its
        # commit point) before the cancellation goes on.
        try:
            await future
        except Exception:
            pass
        raise


class AsyncEngine:
    """An :class:`~roundtable.Engine` for asyncio: ``await`` its calls."""

    __slots__ = ("engine",)

    def __init__(self, engine: Engine) -> None:
        #: The synchronous engine underneath (shared, thread-safe).
        self.engine = engine

    @classmethod
    async def open(cls, root: StrPath, **options: Any) -> "AsyncEngine":
        """:func:`roundtable.open` off the event loop (opening may migrate
        the store and recover an interrupted apply)."""
        engine = await asyncio.get_running_loop().run_in_executor(None, functools.partial(_open, root, **options))
        return cls(engine)

    @property
    def root(self) -> str:
        """The repository root."""
        return self.engine.root

    async def close(self) -> None:
        """Close the engine once the calls in flight return."""
        await asyncio.get_running_loop().run_in_executor(None, self.engine.close)

    async def __aenter__(self) -> "AsyncEngine":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close()

    async def call(
        self, actor: Actor, tool: str, args: Mapping[str, Any], *, timeout_ms: Optional[int] = None
    ) -> Dict[str, Any]:
        """:meth:`Engine.call <roundtable.Engine.call>`, awaited."""
        return await _off_loop(
            lambda cancel: self.engine.call(actor, tool, args, timeout_ms=timeout_ms, cancel=cancel)
        )

    async def call_record(
        self, actor: Actor, tool: str, args: Mapping[str, Any], record: Type[R], *, timeout_ms: Optional[int] = None
    ) -> R:
        """:meth:`call`, its result as the generated ``record``."""

        def run(cancel: Cancel) -> R:
            built: R = self.engine._inner.call_record(
                actor, tool, args, record._PLAN, timeout_ms=timeout_ms, cancel=cancel
            )
            return built

        return await _off_loop(run)

    def session(self, actor: Actor) -> "AsyncSession":
        """A handle bound to ``actor``: every tool as an awaitable typed
        method."""
        return AsyncSession(self, actor)


class AsyncSession(AsyncToolMethods):
    """An :class:`AsyncEngine` bound to one actor: the typed methods of
    :class:`~roundtable.Session`, awaitable, with ``async for`` iterators."""

    __slots__ = ("engine", "actor")

    def __init__(self, engine: AsyncEngine, actor: Actor) -> None:
        #: The engine it calls.
        self.engine = engine
        #: Who every call is made as.
        self.actor = actor

    def __repr__(self) -> str:
        return f"<roundtable.aio.AsyncSession {self.actor} root={self.engine.root!r}>"

    async def call(self, tool: str, args: Mapping[str, Any]) -> Dict[str, Any]:
        """Call any tool as this session's actor; its JSON result."""
        return await self.engine.call(self.actor, tool, args)

    async def call_record(self, tool: str, args: Mapping[str, Any], record: Type[R]) -> R:
        """Call any tool as this session's actor; its result as ``record``."""
        return await self.engine.call_record(self.actor, tool, args, record)

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

