"""Hand-written conveniences of generated records.

``scripts/gen-python`` makes record ``X`` inherit ``XExtras`` from this
module when it exists: methods that derive something from the record's
fields (never new data, which belongs in the Rust types and their schemas).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Tuple

if TYPE_CHECKING:
    from typing import Protocol

    from ._records import Event, EventKind, Stage

    class _HasStages(Protocol):
        @property
        def stages(self) -> Tuple[Stage, ...]: ...

    class _HasEvents(Protocol):
        @property
        def events(self) -> Tuple[Event, ...]: ...


class ValidationReportExtras:
    """Reading a validation report's stages."""

    __slots__ = ()

    @property
    def failed(self: _HasStages) -> Tuple[str, ...]:
        """The names of the stages that failed."""
        return tuple(s.name for s in self.stages if s.status == "failed")

    def stage(self: _HasStages, name: str) -> Stage:
        """The stage called ``name`` (``KeyError`` if there is none)."""
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)


class _Events:
    """A page of events: its length and its kinds."""

    __slots__ = ()

    def __len__(self: _HasEvents) -> int:
        return len(self.events)

    def kinds(self: _HasEvents) -> List[EventKind]:
        """Each event's kind, in order."""
        return [e.kind for e in self.events]


class EventPageExtras(_Events):
    """``events.list``'s page: ``len(page)`` and ``page.kinds()``."""

    __slots__ = ()


class EventWaitExtras(_Events):
    """``events.wait``'s page: ``len(page)`` and ``page.kinds()``."""

    __slots__ = ()
