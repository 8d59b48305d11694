"""Frozen, typed views of tool results.

Each record keeps the tool's JSON result it was built from: ``to_dict()``
returns a deep copy of it, so nothing the core reports is lost to the typed
view. Timestamps stay RFC 3339 strings (``2026-12-03T09:32:59.123Z``) exactly
as the core writes them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ._roundtable import Actor

__all__ = [
    "ProposalStatus",
    "Proposal",
    "ChangedFile",
    "Revision",
    "ProposalRevision",
    "LineSpan",
    "Claim",
    "Vote",
    "Stage",
    "ValidationReport",
    "Transaction",
    "Applied",
    "RolledBack",
    "Event",
    "EventPage",
    "EventWait",
    "TestResult",
]

JSON = Dict[str, Any]


def _actor(d: Mapping[str, Any]) -> Actor:
    """The actor a record names; an unknown kind is a coded
    :class:`InvalidArgument`, never some other kind."""
    return Actor.parse(f"{d['kind']}:{d['id']}")


class _Record:
    """What every record shares: ``to_dict()``."""

    raw: JSON

    def to_dict(self) -> JSON:
        """The tool's JSON result this record was built from (a deep copy)."""
        return copy.deepcopy(self.raw)


class ProposalStatus(str, Enum):
    """Where a proposal is in its life (a ``str``: compares equal to its
    spelling, ``ProposalStatus.ROLLED_BACK == "rolled_back"``)."""

    PENDING = "pending"
    IN_REVIEW = "in_review"
    APPLIED = "applied"
    #: Applied, then rolled back (``transaction.rollback``): the files are as
    #: before it; ``patch.apply`` may land it again.
    ROLLED_BACK = "rolled_back"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"


@dataclass(frozen=True)
class Proposal(_Record):
    """A proposal: a governed change to the repository, revised over time."""

    id: str
    task_id: str
    author: str
    title: str
    summary_md: str
    risk: str
    status: ProposalStatus
    latest_revision: int
    created_at: str
    updated_at: str
    #: The proposal this one reverts (``proposal.revert``), else ``None``.
    reverts: Optional[str]
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Proposal":
        """Build from ``proposal.get``'s ``proposal`` object."""
        return cls(
            id=d["id"],
            task_id=d["task_id"],
            author=d["author"],
            title=d["title"],
            summary_md=d["summary_md"],
            risk=d["risk"],
            status=ProposalStatus(d["status"]),
            latest_revision=d["latest_revision"],
            created_at=d["created_at"],
            updated_at=d["updated_at"],
            reverts=d.get("reverts"),
            raw=dict(d),
        )


@dataclass(frozen=True)
class ChangedFile(_Record):
    """One path a revision changes."""

    path: str
    operation: str
    other_path: Optional[str]
    before_digest: Optional[str]
    after_digest: Optional[str]
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ChangedFile":
        """Build from one entry of a revision's ``changeset``."""
        before = d.get("before")
        after = d.get("after")
        return cls(
            path=d["path"],
            operation=d["operation"],
            other_path=d.get("other_path"),
            before_digest=before["digest"] if before else None,
            after_digest=after["digest"] if after else None,
            raw=dict(d),
        )


@dataclass(frozen=True)
class Revision(_Record):
    """One revision of a proposal: a changeset bound to its digests."""

    number: int
    format: str
    digest: str
    changeset: Tuple[ChangedFile, ...]
    changeset_digest: str
    affected_resources: Tuple[str, ...]
    base_state: str
    base_git_head: Optional[str]
    note_md: Optional[str]
    created_by: Actor
    created_at: str
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Revision":
        """Build from a ``revision`` object."""
        return cls(
            number=d["number"],
            format=d["format"],
            digest=d["digest"],
            changeset=tuple(ChangedFile.from_dict(f) for f in d.get("changeset", ())),
            changeset_digest=d["changeset_digest"],
            affected_resources=tuple(d.get("affected_resources", ())),
            base_state=d["base_state"],
            base_git_head=d.get("base_git_head"),
            note_md=d.get("note_md"),
            created_by=_actor(d["created_by"]),
            created_at=d["created_at"],
            raw=dict(d),
        )


@dataclass(frozen=True)
class ProposalRevision(_Record):
    """What ``proposal.create`` and ``proposal.attach_patch`` return."""

    proposal: Proposal
    revision: Revision
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ProposalRevision":
        """Build from the tool result."""
        return cls(
            proposal=Proposal.from_dict(d["proposal"]),
            revision=Revision.from_dict(d["revision"]),
            raw=dict(d),
        )


@dataclass(frozen=True)
class LineSpan:
    """Lines ``start``..``end`` (1-based, inclusive) of a symbol claim."""

    start: int
    end: int


@dataclass(frozen=True)
class Claim(_Record):
    """A claim on a resource (a file, a symbol…) with its fencing token."""

    id: str
    agent_id: str
    resource_id: str
    type: str
    task_id: Optional[str]
    base_digest: str
    token: int
    span: Optional[LineSpan]
    acquired_at: str
    expires_at: str
    released_at: Optional[str]
    status: str
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Claim":
        """Build from a ``claim`` object."""
        span = d.get("span")
        return cls(
            id=d["id"],
            agent_id=d["agent_id"],
            resource_id=d["resource_id"],
            type=d["type"],
            task_id=d.get("task_id"),
            base_digest=d["base_digest"],
            token=d["token"],
            span=LineSpan(span["start"], span["end"]) if span else None,
            acquired_at=d["acquired_at"],
            expires_at=d["expires_at"],
            released_at=d.get("released_at"),
            status=d["status"],
            raw=dict(d),
        )


@dataclass(frozen=True)
class Vote(_Record):
    """A reviewer's vote on one revision."""

    id: str
    proposal_id: str
    revision: int
    agent_id: str
    vote: str
    reason_md: Optional[str]
    created_at: str
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Vote":
        """Build from a ``vote`` object."""
        return cls(
            id=d["id"],
            proposal_id=d["proposal_id"],
            revision=d["revision"],
            agent_id=d["agent_id"],
            vote=d["vote"],
            reason_md=d.get("reason_md"),
            created_at=d["created_at"],
            raw=dict(d),
        )


@dataclass(frozen=True)
class Stage(_Record):
    """One gate of a validation report: ``passed``, ``failed``…, and why."""

    name: str
    status: str
    reasons: Tuple[JSON, ...]
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Stage":
        """Build from one entry of ``stages``."""
        return cls(
            name=d["name"],
            status=d["status"],
            reasons=tuple(d.get("reasons", ())),
            raw=dict(d),
        )


@dataclass(frozen=True)
class ValidationReport(_Record):
    """``patch.validate``'s report: every gate, and whether all pass."""

    valid: bool
    proposal_id: str
    revision: int
    latest_revision: int
    policy_version: Optional[int]
    stages: Tuple[Stage, ...]
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ValidationReport":
        """Build from the report."""
        return cls(
            valid=d["valid"],
            proposal_id=d["proposal_id"],
            revision=d["revision"],
            latest_revision=d["latest_revision"],
            policy_version=d.get("policy_version"),
            stages=tuple(Stage.from_dict(s) for s in d.get("stages", ())),
            raw=dict(d),
        )

    @property
    def failed(self) -> Tuple[str, ...]:
        """The names of the stages that failed."""
        return tuple(s.name for s in self.stages if s.status == "failed")

    def stage(self, name: str) -> Stage:
        """The stage called ``name`` (``KeyError`` if there is none)."""
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(name)


@dataclass(frozen=True)
class Transaction(_Record):
    """An apply or a rollback, with its outcome and digests."""

    id: str
    kind: str
    proposal_id: str
    revision: int
    rollback_of: Optional[str]
    status: str
    actor: Actor
    durability: str
    before_digest: str
    after_digest: str
    error: Optional[JSON]
    created_at: str
    finished_at: Optional[str]
    file_count: int
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Transaction":
        """Build from a ``transaction`` object."""
        return cls(
            id=d["id"],
            kind=d["kind"],
            proposal_id=d["proposal_id"],
            revision=d["revision"],
            rollback_of=d.get("rollback_of"),
            status=d["status"],
            actor=_actor(d["actor"]),
            durability=d["durability"],
            before_digest=d["before_digest"],
            after_digest=d["after_digest"],
            error=d.get("error"),
            created_at=d["created_at"],
            finished_at=d.get("finished_at"),
            file_count=d["file_count"],
            raw=dict(d),
        )


@dataclass(frozen=True)
class Applied(_Record):
    """What ``patch.apply`` returns."""

    transaction: Transaction
    proposal: Proposal
    released_claims: Tuple[str, ...]
    validation: ValidationReport
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Applied":
        """Build from the tool result."""
        return cls(
            transaction=Transaction.from_dict(d["transaction"]),
            proposal=Proposal.from_dict(d["proposal"]),
            released_claims=tuple(d.get("released_claims", ())),
            validation=ValidationReport.from_dict(d["validation"]),
            raw=dict(d),
        )


@dataclass(frozen=True)
class RolledBack(_Record):
    """What ``transaction.rollback`` returns: the rollback's own transaction."""

    transaction: Transaction
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RolledBack":
        """Build from the tool result."""
        return cls(transaction=Transaction.from_dict(d["transaction"]), raw=dict(d))


@dataclass(frozen=True)
class Event(_Record):
    """One entry of the hash-chained audit log."""

    seq: int
    kind: str
    actor: Actor
    subject: str
    proposal_id: Optional[str]
    data: Any
    at: str
    prev_digest: str
    digest: str
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Event":
        """Build from one entry of ``events``."""
        return cls(
            seq=d["seq"],
            kind=d["kind"],
            actor=_actor(d["actor"]),
            subject=d["subject"],
            proposal_id=d.get("proposal_id"),
            data=d.get("data"),
            at=d["at"],
            prev_digest=d["prev_digest"],
            digest=d["digest"],
            raw=dict(d),
        )


@dataclass(frozen=True)
class EventPage(_Record):
    """A page of events; pass ``next_since_seq`` as ``since_seq`` for the next."""

    events: Tuple[Event, ...]
    next_since_seq: Optional[int]
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EventPage":
        """Build from ``events.list``'s result."""
        return cls(
            events=tuple(Event.from_dict(e) for e in d.get("events", ())),
            next_since_seq=d.get("next_since_seq"),
            raw=dict(d),
        )

    def __len__(self) -> int:
        return len(self.events)

    def kinds(self) -> List[str]:
        """Each event's kind, in order."""
        return [e.kind for e in self.events]


@dataclass(frozen=True)
class EventWait(_Record):
    """What ``events.wait`` returned: the matching events (none when it
    ``timed_out``), the log's ``head_seq``, and ``next_since_seq`` to wait
    from next."""

    events: Tuple[Event, ...]
    timed_out: bool
    head_seq: int
    next_since_seq: int
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "EventWait":
        """Build from ``events.wait``'s result."""
        return cls(
            events=tuple(Event.from_dict(e) for e in d.get("events", ())),
            timed_out=bool(d["timed_out"]),
            head_seq=d["head_seq"],
            next_since_seq=d["next_since_seq"],
            raw=dict(d),
        )

    def __len__(self) -> int:
        return len(self.events)

    def kinds(self) -> List[str]:
        """Each event's kind, in order."""
        return [e.kind for e in self.events]


@dataclass(frozen=True)
class TestResult(_Record):
    """A test or check result recorded on one revision, with its note (a
    failed check's output)."""

    __test__ = False  # not a pytest test class

    id: str
    proposal_id: str
    revision: int
    name: str
    status: str
    duration_ms: Optional[int]
    note_md: Optional[str]
    recorded_by: Actor
    created_at: str
    raw: JSON = field(repr=False, compare=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "TestResult":
        """Build from ``test.get``'s ``test_result`` object."""
        return cls(
            id=d["id"],
            proposal_id=d["proposal_id"],
            revision=d["revision"],
            name=d["name"],
            status=d["status"],
            duration_ms=d.get("duration_ms"),
            note_md=d.get("note_md"),
            recorded_by=_actor(d["recorded_by"]),
            created_at=d["created_at"],
            raw=dict(d),
        )
