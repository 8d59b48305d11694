//! What an event records: one spelling per kind of state change.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

macro_rules! event_kinds {
    ($($(#[doc = $doc:literal])* $variant:ident = $name:literal,)+) => {
        /// The kind of an [`Event`](super::Event): what changed. Spelled
        /// `noun.verb_past` (`proposal.created`); the spelling is stable.
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum EventKind {
            $($(#[doc = $doc])* $variant,)+
            /// A kind this version does not know (written by a newer one):
            /// kept as spelled, so the log still reads and verifies.
            Unknown(String),
        }

        impl EventKind {
            /// Every kind this version writes.
            pub const ALL: &'static [EventKind] = &[$(EventKind::$variant,)+];

            /// Each kind of [`EventKind::ALL`] with its documentation (the
            /// schema's descriptions).
            const DOCS: &'static [(EventKind, &'static str)] =
                &[$((EventKind::$variant, concat!($($doc, "\n",)*)),)+];

            /// The stable spelling.
            pub fn as_str(&self) -> &str {
                match self {
                    $(EventKind::$variant => $name,)+
                    EventKind::Unknown(s) => s,
                }
            }

            /// The kind spelled `s` (an unknown spelling is
            /// [`EventKind::Unknown`]).
            pub fn parse(s: &str) -> EventKind {
                match s {
                    $($name => EventKind::$variant,)+
                    other => EventKind::Unknown(other.to_owned()),
                }
            }
        }
    };
}

event_kinds! {
    /// The workspace's settings changed (`workspace.configure`).
    WorkspaceConfigured = "workspace.configured",
    /// An agent was registered.
    AgentRegistered = "agent.registered",
    /// An agent's roles, enabled flag or name changed.
    AgentUpdated = "agent.updated",
    /// A task was created.
    TaskCreated = "task.created",
    /// A proposal was created with its first revision.
    ProposalCreated = "proposal.created",
    /// A proposal got a new revision.
    ProposalRevised = "proposal.revised",
    /// A proposal's author asked for review.
    ProposalReviewRequested = "proposal.review_requested",
    /// A proposal was withdrawn.
    ProposalWithdrawn = "proposal.withdrawn",
    /// A proposal was rejected.
    ProposalRejected = "proposal.rejected",
    /// A proposal's revision was applied.
    ProposalApplied = "proposal.applied",
    /// An open proposal's latest revision touches paths another landing
    /// changed: it is stale (written by that landing, about this one).
    ProposalStale = "proposal.stale",
    /// A proposal's applied change was rolled back (in the rollback's
    /// outcome transaction): it is `rolled_back`.
    ProposalRolledBack = "proposal.rolled_back",
    /// A reviewer voted.
    VoteCast = "vote.cast",
    /// An orchestrator recorded a decision.
    DecisionRecorded = "decision.recorded",
    /// A security review was recorded.
    SecurityReviewed = "security.reviewed",
    /// A person's approval was asked for.
    HumanApprovalRequested = "human.approval_requested",
    /// A person approved.
    HumanApproved = "human.approved",
    /// A test result was recorded.
    TestRecorded = "test.recorded",
    /// A claim was granted.
    ClaimAcquired = "claim.acquired",
    /// A claim was renewed.
    ClaimRenewed = "claim.renewed",
    /// A claim was released (by its holder, or by the apply that used it).
    ClaimReleased = "claim.released",
    /// A claim's lease ran out (its holder stopped renewing it): the
    /// engine released it, in the first write after its expiry.
    ClaimExpired = "claim.expired",
    /// A policy version was stored.
    PolicyDrafted = "policy.drafted",
    /// A policy version became the active one.
    PolicyActivated = "policy.activated",
    /// A transaction was journaled.
    TransactionStarted = "transaction.started",
    /// A transaction's files were written and it was recorded applied.
    TransactionApplied = "transaction.applied",
    /// A transaction's write failed and was undone.
    TransactionFailed = "transaction.failed",
    /// A transaction left applying was put back to its before state.
    TransactionRecovered = "transaction.recovered",
    /// An applied transaction was rolled back by a later one.
    TransactionRolledBack = "transaction.rolled_back",
    /// A proposal joined the landing queue.
    QueueEnqueued = "queue.enqueued",
    /// A proposal was taken out of the landing queue.
    QueueRemoved = "queue.removed",
    /// The queue ran a check on a speculative state.
    QueueChecked = "queue.checked",
    /// The queue left a speculative state for an external check to test
    /// (answered with `test.record`).
    QueueCheckRequested = "queue.check_requested",
    /// The queue landed a proposal.
    QueueLanded = "queue.landed",
    /// The queue handed a proposal back to its author.
    QueueReturned = "queue.returned",
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for EventKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for EventKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl Serialize for EventKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for EventKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<EventKind, D::Error> {
        Ok(EventKind::parse(&String::deserialize(d)?))
    }
}

/// Published as an enum of the kinds this version writes, one `const` per
/// kind with its description, so the bindings get an event-kind type. A
/// store that a newer version wrote to may hold a kind not listed (read as
/// [`EventKind::Unknown`]); readers keep such an event as spelled.
impl JsonSchema for EventKind {
    fn schema_name() -> Cow<'static, str> {
        "EventKind".into()
    }

    fn schema_id() -> Cow<'static, str> {
        concat!(module_path!(), "::EventKind").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let kinds: Vec<serde_json::Value> = EventKind::DOCS
            .iter()
            .map(|(kind, doc)| {
                let lines: Vec<&str> = doc.lines().map(str::trim).collect();
                serde_json::json!({
                    "const": kind.as_str(),
                    "description": lines.join("\n").trim(),
                    "type": "string",
                })
            })
            .collect();
        schemars::json_schema!({
            "description": "What an event records: what changed. Spelled `noun.verb_past`\n(`proposal.created`); the spelling is stable. A store a newer version\nwrote to may hold kinds this list does not name.",
            "oneOf": kinds,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_and_an_unknown_one_is_kept() {
        for k in EventKind::ALL {
            assert_eq!(&EventKind::parse(k.as_str()), k);
            let json = serde_json::to_string(k).expect("serializes");
            assert_eq!(serde_json::from_str::<EventKind>(&json).expect("reads"), *k);
        }
        let mut names: Vec<&str> = EventKind::ALL.iter().map(EventKind::as_str).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), EventKind::ALL.len(), "spellings are unique");
        let future = EventKind::parse("merge.queued");
        assert_eq!(future, EventKind::Unknown("merge.queued".into()));
        assert_eq!(future.to_string(), "merge.queued");
    }
}
