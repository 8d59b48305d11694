"""The loops every host writes, owned by the library.

:class:`Worker` runs a callback for each item of an actor's inbox as it
arrives: a loop over ``inbox.wait`` that never polls (each call sleeps in
the engine until something waits on the actor, or ``poll_timeout_ms``
passes) and misses nothing (an item whose proposal changes again and still
waits on the actor comes again). :class:`AsyncWorker` is the same for
asyncio. :class:`ClaimKeeper` renews claims every few seconds until stopped
and reports the ones it lost::

    import roundtable
    from roundtable.worker import Worker

    def review(item: roundtable.InboxItem) -> None:
        if item.action == "vote":
            rex.vote_cast(proposal_id=item.proposal.id, revision=item.revision, vote="approve")

    rex = engine.session(roundtable.Actor.agent("rex"))
    with Worker(rex, review):   # runs on a thread of its own until the block ends
        ...

A callback that raises stops its worker; :meth:`Worker.join` (and leaving
the ``with`` block) raises that exception again. Stopping is prompt: the
wait in flight is cancelled (it changes nothing); a callback that is
running finishes first.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from typing import Any, Awaitable, Callable, Collection, Dict, List, Optional, Union

from . import Session
from ._errors import Busy, Cancelled, Forbidden, IllegalTransition, NotFound, RoundtableError
from ._records import InboxItem, InboxWait
from ._roundtable import Cancel
from .aio import AsyncSession

__all__ = ["Worker", "AsyncWorker", "ClaimKeeper"]

#: How long one ``inbox.wait`` sleeps at most before the worker asks again
#: (the engine's default): a timeout costs one call, nothing is missed.
POLL_TIMEOUT_MS = 30000

#: How long a worker waits before asking again when the store was busy.
BUSY_BACKOFF_S = 0.05


class _Loop:
    """What :class:`Worker` and :class:`AsyncWorker` share: the cursor, the
    stop handle, the counters."""

    def __init__(self, poll_timeout_ms: int, limit: Optional[int], cancel: Optional[Cancel]) -> None:
        if not 0 <= poll_timeout_ms <= 600000:
            raise ValueError("poll_timeout_ms must be 0 to 600000")
        self.poll_timeout_ms = poll_timeout_ms
        self.limit = limit
        #: The cursor to continue from: the last result's.
        self.cursor: Optional[str] = None
        #: ``inbox.wait`` calls made.
        self.waits = 0
        #: Calls that timed out with nothing.
        self.timed_out = 0
        #: Items handed to the callback.
        self.handled = 0
        self._cancel = cancel.child() if cancel is not None else Cancel()

    @property
    def stopping(self) -> bool:
        """Whether :meth:`stop` was called (or the session's handle cancelled)."""
        return self._cancel.cancelled

    def stop(self) -> None:
        """Stop: the wait in flight ends at once; a running callback
        finishes, and no further item is handed over. From any thread."""
        self._cancel.cancel()

    def _args(self) -> Dict[str, Any]:
        args: Dict[str, Any] = {"timeout_ms": self.poll_timeout_ms}
        if self.cursor is not None:
            args["after"] = self.cursor
        if self.limit is not None:
            args["limit"] = self.limit
        return args

    def _took(self, result: InboxWait) -> List[InboxItem]:
        self.waits += 1
        if result.timed_out:
            self.timed_out += 1
        self.cursor = result.cursor
        return list(result.items)


class Worker(_Loop):
    """Runs ``handle(item)`` for each :class:`~roundtable.InboxItem` of the
    session's actor as it arrives, in order, one at a time.

    :meth:`run` loops on the calling thread until :meth:`stop`; :meth:`start`
    (or ``with Worker(...)``) runs it on a thread of its own. ``cancel``ling
    the session's handle stops it too. The callback gets each item once for
    each time its proposal reaches the actor (a proposal that changes again
    and still waits on the actor comes again). ``poll_timeout_ms`` bounds
    one ``inbox.wait``; ``limit`` the items of one result."""

    def __init__(
        self,
        session: Session,
        handle: Callable[[InboxItem], Any],
        *,
        poll_timeout_ms: int = POLL_TIMEOUT_MS,
        limit: Optional[int] = None,
    ) -> None:
        super().__init__(poll_timeout_ms, limit, session.cancel)
        #: The session the callback acts through.
        self.session = session
        self.handle = handle
        # inbox.wait as the same actor, with the worker's own handle and no
        # per-call deadline (its timeout_ms bounds it).
        self._waiting = Session(session.engine, session.actor, cancel=self._cancel)
        self._thread: Optional[threading.Thread] = None
        self._error: Optional[BaseException] = None

    def __repr__(self) -> str:
        return f"<roundtable.worker.Worker {self.session.actor} handled={self.handled}{' stopping' if self.stopping else ''}>"

    def run(self) -> None:
        """Hand every item over until stopped (returns then), or until the
        callback or the engine raises (raised again here)."""
        while not self.stopping:
            try:
                result = self._waiting.call_record("inbox.wait", self._args(), InboxWait)
            except Cancelled:
                return
            except Busy:
                time.sleep(BUSY_BACKOFF_S)
                continue
            for item in self._took(result):
                if self.stopping:
                    return
                self.handle(item)
                self.handled += 1

    def start(self) -> "Worker":
        """Run on a new (daemon) thread; :meth:`join` waits for it."""
        if self._thread is not None:
            raise RuntimeError("the worker was started already")

        def body() -> None:
            try:
                self.run()
            except BaseException as e:  # handed to join()
                self._error = e

        self._thread = threading.Thread(target=body, name=f"roundtable-worker-{self.session.actor.id}", daemon=True)
        self._thread.start()
        return self

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for the thread :meth:`start` made to end; raise what ended
        it, if the callback or the engine raised."""
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def __enter__(self) -> "Worker":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
        self.join()


class AsyncWorker(_Loop):
    """:class:`Worker` for asyncio: ``await worker.run()`` hands every item
    of the session's actor to ``handle`` (a function or a coroutine
    function) until :meth:`stop`, or until the task running it is cancelled
    (the wait in flight is cancelled with it)."""

    def __init__(
        self,
        session: AsyncSession,
        handle: Callable[[InboxItem], Union[Awaitable[Any], Any]],
        *,
        poll_timeout_ms: int = POLL_TIMEOUT_MS,
        limit: Optional[int] = None,
    ) -> None:
        super().__init__(poll_timeout_ms, limit, session.cancel)
        #: The session the callback acts through.
        self.session = session
        self.handle = handle

    def __repr__(self) -> str:
        return f"<roundtable.worker.AsyncWorker {self.session.actor} handled={self.handled}{' stopping' if self.stopping else ''}>"

    async def run(self) -> None:
        """Hand every item over until stopped (returns then), or until the
        callback or the engine raises (raised again here)."""
        engine = self.session.engine
        while not self.stopping:
            try:
                result = await engine.call_record(
                    self.session.actor, "inbox.wait", self._args(), InboxWait, cancel=self._cancel
                )
            except Cancelled:
                return
            except Busy:
                await asyncio.sleep(BUSY_BACKOFF_S)
                continue
            for item in self._took(result):
                if self.stopping:
                    return
                done = self.handle(item)
                if inspect.isawaitable(done):
                    await done
                self.handled += 1


#: The refusals of ``claim.renew`` that mean the claim is gone for good
#: (expired, released, no longer the caller's): renewing it again cannot help.
LOST = (IllegalTransition, NotFound, Forbidden)


class ClaimKeeper:
    """Renews claims (``claim.renew`` with ``ttl_s``) every ``every_s``
    seconds on a thread of its own until :meth:`stop`, so they outlive a
    long task without each host writing the loop.

    A claim it cannot renew because it is gone — expired before a renewal
    came, released by an orchestrator, deleted — is *lost*: it is put in
    :attr:`lost` with the refusal, ``on_lost(claim_id, error)`` is called
    (on the keeper's thread), and it is not renewed again; the work that
    needed it must stop or acquire it anew (a new fencing token). A busy
    store or another passing error is tried again at the next turn. With
    nothing left to renew the keeper ends by itself. ``every_s`` defaults to
    a third of ``ttl_s``. The first renewal comes ``every_s`` after
    :meth:`start`."""

    def __init__(
        self,
        session: Session,
        claim_ids: Collection[str],
        *,
        ttl_s: int,
        every_s: Optional[float] = None,
        on_lost: Optional[Callable[[str, RoundtableError], Any]] = None,
    ) -> None:
        if ttl_s < 1:
            raise ValueError("ttl_s must be at least 1")
        self.session = session
        self.ttl_s = ttl_s
        self.every_s = every_s if every_s is not None else ttl_s / 3
        if self.every_s <= 0:
            raise ValueError("every_s must be positive")
        self.on_lost = on_lost
        #: The claims still renewed.
        self.held: List[str] = list(dict.fromkeys(claim_ids))
        #: Each lost claim's id and the refusal that said so.
        self.lost: Dict[str, RoundtableError] = {}
        #: Renewals made.
        self.renewals = 0
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def __repr__(self) -> str:
        return f"<roundtable.worker.ClaimKeeper held={self.held} lost={sorted(self.lost)}>"

    def renew(self) -> None:
        """One turn: renew every claim still held (what the thread does
        every ``every_s``)."""
        for claim_id in list(self.held):
            try:
                self.session.claim_renew(claim_id=claim_id, ttl_s=self.ttl_s)
                self.renewals += 1
            except LOST as e:
                self.held.remove(claim_id)
                self.lost[claim_id] = e
                if self.on_lost is not None:
                    self.on_lost(claim_id, e)
            except RoundtableError:
                continue  # passing (busy, io): the next turn tries again

    def _run(self) -> None:
        while self.held and not self._stop.wait(self.every_s):
            self.renew()

    def start(self) -> "ClaimKeeper":
        """Start renewing on a new (daemon) thread."""
        if self._thread is not None:
            raise RuntimeError("the keeper was started already")
        self._thread = threading.Thread(target=self._run, name="roundtable-claim-keeper", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop renewing (at once: the thread sleeps on an event) and wait
        for the renewal in flight, if any. The claims stay held until their
        TTL ends or they are released."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()

    def __enter__(self) -> "ClaimKeeper":
        return self.start()

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.stop()
