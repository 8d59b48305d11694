//! The landing queue's records: an entry per proposal the queue was asked
//! to land, and where it stands.

use crate::actor::Actor;
use crate::clock::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a queue entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueStatus {
    /// Waiting to be tested and landed.
    Queued,
    /// Landed by the queue (its transaction is named).
    Landed,
    /// Handed back to its author: a check failed on the state it made,
    /// it did not merge onto the proposals ahead of it, or the apply
    /// refused it (the reason says which).
    Returned,
    /// Taken out of the queue (`queue.remove`, or the proposal was
    /// withdrawn, rejected or landed by other means).
    Removed,
}

impl QueueStatus {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::Queued => "queued",
            QueueStatus::Landed => "landed",
            QueueStatus::Returned => "returned",
            QueueStatus::Removed => "removed",
        }
    }
}

/// Why the queue handed an entry back to its author.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueReturnReason {
    /// A check failed (or timed out) on the state the proposal made with
    /// the proposals ahead of it, which passed without it.
    CheckFailed,
    /// Its revision does not merge onto the proposals ahead of it.
    Conflict,
    /// `patch.apply` refused it (a gate, a claim, a rebase that is not
    /// trivial); the message says which.
    ApplyRefused,
}

/// One proposal in the landing queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueueEntry {
    /// The entry's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// Where it stands.
    pub status: QueueStatus,
    /// Who enqueued it (an orchestrator, or the queue itself for the
    /// policy's `auto_enqueue`).
    pub enqueued_by: Actor,
    /// When.
    pub enqueued_at: Timestamp,
    /// When it left the queue (landed, returned or removed).
    pub settled_at: Option<Timestamp>,
    /// Why it was returned.
    pub return_reason: Option<QueueReturnReason>,
    /// What the queue or the remover said: the failing check's output,
    /// the conflict, the apply's refusal, the removal's reason.
    pub note: Option<String>,
    /// The transaction that landed it.
    pub transaction_id: Option<String>,
    #[serde(skip)]
    /// The store's row sequence: queue order (not serialized).
    pub seq: i64,
}
