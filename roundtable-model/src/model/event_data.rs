//! What each kind of event records: one data type per [`EventKind`].
//!
//! An event is written as an [`EventData`] (its kind and its data in one
//! value, so the two cannot disagree) and stored as JSON text whose bytes
//! feed the audit log's hash chain. [`EventData::stored_text`] writes
//! exactly what the untyped `json!` objects of earlier versions wrote:
//! the value's keys sorted (serde_json's map), an optional key that is
//! absent left out (`skip_serializing_if`), one that is `null` written
//! `null`. A fixture of the events the test suite wrote before the types
//! existed holds it (`issue33_item3_event_data_bytes_unchanged`).
//!
//! Reading never depends on these types: an [`Event`] keeps its `data` as
//! stored, so a log a newer version wrote (an unknown kind) or an older one
//! wrote (a shape these types do not read) still lists and verifies;
//! [`Event::typed_data`] is `None` for such an event.

use super::{
    DecisionValue, Event, EventKind, Landing, PathReport, ProposalStatus, RevisionFormat, Risk,
    TestStatus, TransactionKind, Verdict, VoteValue,
};
use crate::claims::ClaimType;
use crate::clock::Timestamp;
use crate::Digest;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// Data of `workspace.configured`: the landing setting, before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkspaceConfiguredData {
    /// The landing setting now.
    pub landing: Landing,
    /// The landing setting before.
    pub was: Landing,
}

/// An agent's roles and enabled flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentAccess {
    /// Whether it may act.
    pub enabled: bool,
    /// Its roles, sorted.
    pub roles: Vec<String>,
}

/// Data of `agent.registered`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentRegisteredData {
    /// Whether it may act.
    pub enabled: bool,
    /// Its roles, sorted.
    pub roles: Vec<String>,
}

/// Data of `agent.updated`: the agent's roles and enabled flag, now and
/// before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AgentUpdatedData {
    /// Whether it may act now.
    pub enabled: bool,
    /// Its roles now, sorted.
    pub roles: Vec<String>,
    /// Its roles and enabled flag before.
    pub previous: AgentAccess,
}

/// Data of `task.created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskCreatedData {
    /// The task's title.
    pub title: String,
}

/// Data of `proposal.created` (by `proposal.create`, or by
/// `proposal.revert` or `proposal.revert_agent`, which name what they
/// revert: the latter its newest).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalCreatedData {
    /// The task it is for.
    pub task_id: String,
    /// Its risk level.
    pub risk: Risk,
    /// Its first revision's number (1).
    pub revision: u32,
    /// The first revision's format.
    pub format: RevisionFormat,
    /// `blob:sha256:` of the first revision's patch or edit-plan bytes.
    pub digest: Digest,
    /// How many files the first revision changes.
    pub files: u64,
    /// For a revert: the proposal it reverts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverts: Option<String>,
    /// For a revert: the revision of that proposal it reverts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverted_revision: Option<u32>,
}

/// Data of `proposal.revised` (by `proposal.revise`, or by
/// `proposal.rebase`, which names the revision it rebases).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalRevisedData {
    /// The new revision's number.
    pub revision: u32,
    /// The revision it follows.
    pub previous_revision: u32,
    /// The new revision's format.
    pub format: RevisionFormat,
    /// `blob:sha256:` of the new revision's patch or edit-plan bytes.
    pub digest: Digest,
    /// How many files the new revision changes.
    pub files: u64,
    /// For a rebase: the revision rebased.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebased_from: Option<u32>,
    /// For a rebase: the new revision's change id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change_id: Option<String>,
}

/// Data of `proposal.review_requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalReviewRequestedData {
    /// The revision to review (the latest).
    pub revision: u32,
    /// The status before.
    pub from: ProposalStatus,
    /// The status now (`in_review`).
    pub to: ProposalStatus,
}

/// Data of `proposal.withdrawn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalWithdrawnData {
    /// Why, if the author said.
    pub reason_md: Option<String>,
    /// The status before.
    pub from: ProposalStatus,
    /// The status now (`withdrawn`).
    pub to: ProposalStatus,
}

/// Data of `proposal.rejected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalRejectedData {
    /// The latest revision then.
    pub revision: u32,
    /// The decision recorded with the rejection.
    pub decision_id: String,
    /// Why.
    pub reason_md: String,
    /// The status before.
    pub from: ProposalStatus,
    /// The status now (`rejected`).
    pub to: ProposalStatus,
}

/// Data of `proposal.applied`: by the apply that landed it, by the
/// recovery that found its commit landed (`overridden`), or by the
/// rollback of the rollback that had undone it
/// (`rolled_back_transaction_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalAppliedData {
    /// The revision applied.
    pub revision: u32,
    /// The transaction that applied it.
    pub transaction_id: String,
    /// The status before.
    pub from: ProposalStatus,
    /// The status now (`applied`).
    pub to: ProposalStatus,
    /// When a recovery recorded the landed change over another status:
    /// what it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overridden: Option<String>,
    /// When a rollback re-applied the change: the rollback it undid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back_transaction_id: Option<String>,
    /// The paths the landing changed, sorted (a rename: both paths).
    /// Absent from events written before landings recorded them, and
    /// from a recovery's override.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The symbols the landing touched, as far as it knows them without
    /// parsing: the `symbol:` resources of the author's write claims it
    /// used (and released), sorted. Empty when the author claimed files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<String>,
}

/// Data of `proposal.stale`: written by a landing (`patch.apply`, or a
/// rollback, which changes files too) about each open proposal whose
/// latest revision touches a path the landing changed, so that
/// proposal's author is told (an `inbox.wait` on its own proposals
/// wakes) and no other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalStaleData {
    /// The stale proposal's latest revision.
    pub revision: u32,
    /// The proposal that landed (for a rollback: the proposal whose
    /// landing it undid, or redid).
    pub landed_proposal_id: String,
    /// The transaction that landed it (or the rollback).
    pub transaction_id: String,
    /// The paths both touch, sorted.
    pub paths: Vec<String>,
}

/// Data of `proposal.rolled_back`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProposalRolledBackData {
    /// The revision that had been applied.
    pub revision: u32,
    /// The rollback transaction.
    pub transaction_id: String,
    /// The transaction it rolled back.
    pub rolled_back_transaction_id: String,
    /// The status before (`applied`).
    pub from: ProposalStatus,
    /// The status now (`rolled_back`).
    pub to: ProposalStatus,
}

/// Data of `vote.cast`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct VoteCastData {
    /// The revision voted on.
    pub revision: u32,
    /// The vote.
    pub vote: VoteValue,
    /// The voter.
    pub agent_id: String,
}

/// Data of `decision.recorded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionRecordedData {
    /// The revision decided on.
    pub revision: u32,
    /// The decision.
    pub decision: DecisionValue,
}

/// Data of `security.reviewed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SecurityReviewedData {
    /// The revision reviewed.
    pub revision: u32,
    /// The verdict.
    pub verdict: Verdict,
}

/// Data of `human.approval_requested`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HumanApprovalRequestedData {
    /// The revision to approve.
    pub revision: u32,
}

/// Data of `human.approved`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HumanApprovedData {
    /// The revision approved.
    pub revision: u32,
    /// The request answered, if any.
    pub request_id: Option<String>,
}

/// Data of `test.recorded`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TestRecordedData {
    /// The revision tested.
    pub revision: u32,
    /// The check's name.
    pub name: String,
    /// Its outcome.
    pub status: TestStatus,
}

/// Data of `queue.enqueued` (subject: the queue entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueEnqueuedData {
    /// The revision that was the latest when it joined.
    pub revision: u32,
    /// Whether the policy's `auto_enqueue` put it there.
    pub automatic: bool,
}

/// Data of `queue.removed` (subject: the queue entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueRemovedData {
    /// Why.
    pub reason: String,
}

/// Data of `queue.checked` (subject: the queue entry whose speculative
/// state was checked: the branch, the proposals ahead of it in its lane,
/// and it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueCheckedData {
    /// The revision checked.
    pub revision: u32,
    /// The check's name.
    pub name: String,
    /// Its outcome.
    pub status: TestStatus,
    /// The proposals ahead of it in the state, in order.
    pub ahead: Vec<String>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// Data of `queue.check_requested` (subject: the queue entry whose
/// speculative state an external check is to test: the branch, the
/// proposals ahead of it in its lane, and it). Written once per state;
/// the answer is a `test.record` of the check's name on the revision,
/// recorded after this event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueCheckRequestedData {
    /// The revision to test (the proposal's latest).
    pub revision: u32,
    /// The check's name (its `[checks.NAME]` table, `external = true`).
    pub name: String,
    /// The proposals ahead of it in the state, in order.
    pub ahead: Vec<String>,
    /// Identifies the state: the workspace's state (tree and git `HEAD`)
    /// it was stacked on and the revisions stacked. An answer whose note
    /// names another state's digest answers that state, not this one.
    pub state: crate::StateHash,
    /// Git mode: the speculative commit holding the state (its parent
    /// the branch tip), kept under `refs/roundtable/queue/ENTRY` until
    /// the entry settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Files mode: the directory holding the state (absolute), under the
    /// workspace's `.roundtable/queue/`, kept until the entry settles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How long the queue waits for the answer, in seconds: then the
    /// proposal goes back (`check_failed`).
    pub timeout_s: u32,
}

/// Data of `queue.landed` (subject: the queue entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueLandedData {
    /// The transaction that landed it.
    pub transaction_id: String,
    /// The revision that landed.
    pub revision: u32,
}

/// Data of `queue.returned` (subject: the queue entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QueueReturnedData {
    /// The revision handed back.
    pub revision: u32,
    /// Why.
    pub reason: super::QueueReturnReason,
}

/// Data of `claim.acquired`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimAcquiredData {
    /// The resource claimed, in canonical spelling.
    pub resource_id: String,
    /// What the claim is for.
    #[serde(rename = "type")]
    pub claim_type: ClaimType,
    /// The claim's fencing token.
    pub token: i64,
    /// When it expires unless renewed.
    pub expires_at: Timestamp,
    /// The resource's content digest when it was claimed.
    pub base_digest: String,
}

/// Data of `claim.renewed` (by `claim.renew`, or by a `claim.acquire` of
/// a claim its agent already holds: `reacquired`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimRenewedData {
    /// When it expires now.
    pub expires_at: Timestamp,
    /// When it was to expire.
    pub previous_expires_at: Timestamp,
    /// The claim's fencing token.
    pub token: i64,
    /// `true` when an acquire of the held claim renewed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reacquired: Option<bool>,
}

/// Data of `claim.released` (by its holder, or by the apply that used it:
/// `transaction_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimReleasedData {
    /// The claim's fencing token.
    pub token: i64,
    /// The apply that used and released it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_id: Option<String>,
}

/// Data of `claim.expired`: written by the engine (the orchestrator actor
/// `roundtable-engine`) in the first write transaction after
/// the claim's lease ran out, so a waiter learns of it without anyone
/// calling anything.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClaimExpiredData {
    /// Who held it.
    pub agent_id: String,
    /// The resource it claimed, in canonical spelling.
    pub resource_id: String,
    /// What the claim was for.
    #[serde(rename = "type")]
    pub claim_type: ClaimType,
    /// The claim's fencing token.
    pub token: i64,
    /// When its lease ran out.
    pub expires_at: Timestamp,
}

/// Data of `policy.drafted`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyDraftedData {
    /// The version stored.
    pub version: u32,
    /// `blob:sha256:` of its document.
    pub digest: String,
}

/// Data of `policy.activated`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyActivatedData {
    /// The version now active.
    pub version: u32,
    /// The version it replaced, if any.
    pub retired_version: Option<u32>,
    /// `blob:sha256:` of its document.
    pub digest: String,
}

/// Data of `transaction.started`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TransactionStartedData {
    /// An apply or a rollback.
    pub kind: TransactionKind,
    /// The proposal's revision it lands.
    pub revision: u32,
    /// For a rollback: the transaction it undoes.
    pub rollback_of: Option<String>,
    /// How many files it writes.
    pub files: u64,
}

/// Data of `transaction.applied` (`recovered`: recorded by the recovery
/// that found its commit landed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TransactionAppliedData {
    /// An apply or a rollback.
    pub kind: TransactionKind,
    /// How many files it wrote.
    pub files: u64,
    /// `true` when a recovery recorded it applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovered: Option<bool>,
}

/// A stored error: its code, message and details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorRecord {
    /// The stable error code (`io`, `precondition_failed`…), as spelled
    /// by the version that stored it.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
    /// The code's details.
    pub details: serde_json::Value,
}

/// Data of `transaction.failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TransactionFailedData {
    /// Why its write failed (its files were put back).
    pub error: ErrorRecord,
}

/// Data of `transaction.recovered`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TransactionRecoveredData {
    /// Why it was recovered.
    pub why: String,
    /// How many files were put back.
    pub restored: u64,
    /// The paths found changed since, left as they were.
    pub conflicts: Vec<PathReport>,
}

/// Data of `transaction.rolled_back`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TransactionRolledBackData {
    /// The rollback transaction that undid it.
    pub rollback_transaction_id: String,
}

macro_rules! event_data {
    ($($variant:ident = $name:literal => $data:ident,)+) => {
        /// A state change to record: its kind and the data of that kind,
        /// in one value (serialized `{"kind": …, "data": {…}}`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "kind", content = "data")]
        #[non_exhaustive]
        pub enum EventData {
            $(
                #[doc = concat!("`", $name, "`.")]
                #[serde(rename = $name)]
                $variant($data),
            )+
        }

        impl EventData {
            /// Its kind.
            pub fn kind(&self) -> EventKind {
                match self {
                    $(EventData::$variant(_) => EventKind::$variant,)+
                }
            }

            /// Each kind with the schema of its data (registered in `g`).
            fn data_schemas(g: &mut SchemaGenerator) -> Vec<(EventKind, Schema)> {
                vec![$((EventKind::$variant, g.subschema_for::<$data>()),)+]
            }
        }

        $(
            impl From<$data> for EventData {
                fn from(d: $data) -> EventData {
                    EventData::$variant(d)
                }
            }
        )+
    };
}

event_data! {
    WorkspaceConfigured = "workspace.configured" => WorkspaceConfiguredData,
    AgentRegistered = "agent.registered" => AgentRegisteredData,
    AgentUpdated = "agent.updated" => AgentUpdatedData,
    TaskCreated = "task.created" => TaskCreatedData,
    ProposalCreated = "proposal.created" => ProposalCreatedData,
    ProposalRevised = "proposal.revised" => ProposalRevisedData,
    ProposalReviewRequested = "proposal.review_requested" => ProposalReviewRequestedData,
    ProposalWithdrawn = "proposal.withdrawn" => ProposalWithdrawnData,
    ProposalRejected = "proposal.rejected" => ProposalRejectedData,
    ProposalApplied = "proposal.applied" => ProposalAppliedData,
    ProposalStale = "proposal.stale" => ProposalStaleData,
    ProposalRolledBack = "proposal.rolled_back" => ProposalRolledBackData,
    VoteCast = "vote.cast" => VoteCastData,
    DecisionRecorded = "decision.recorded" => DecisionRecordedData,
    SecurityReviewed = "security.reviewed" => SecurityReviewedData,
    HumanApprovalRequested = "human.approval_requested" => HumanApprovalRequestedData,
    HumanApproved = "human.approved" => HumanApprovedData,
    TestRecorded = "test.recorded" => TestRecordedData,
    ClaimAcquired = "claim.acquired" => ClaimAcquiredData,
    ClaimRenewed = "claim.renewed" => ClaimRenewedData,
    ClaimReleased = "claim.released" => ClaimReleasedData,
    ClaimExpired = "claim.expired" => ClaimExpiredData,
    PolicyDrafted = "policy.drafted" => PolicyDraftedData,
    PolicyActivated = "policy.activated" => PolicyActivatedData,
    TransactionStarted = "transaction.started" => TransactionStartedData,
    TransactionApplied = "transaction.applied" => TransactionAppliedData,
    TransactionFailed = "transaction.failed" => TransactionFailedData,
    TransactionRecovered = "transaction.recovered" => TransactionRecoveredData,
    TransactionRolledBack = "transaction.rolled_back" => TransactionRolledBackData,
    QueueEnqueued = "queue.enqueued" => QueueEnqueuedData,
    QueueRemoved = "queue.removed" => QueueRemovedData,
    QueueChecked = "queue.checked" => QueueCheckedData,
    QueueCheckRequested = "queue.check_requested" => QueueCheckRequestedData,
    QueueLanded = "queue.landed" => QueueLandedData,
    QueueReturned = "queue.returned" => QueueReturnedData,
}

impl EventData {
    /// The data as stored: JSON text whose bytes the audit log's hash
    /// chain covers. Serialized through a `serde_json::Value`, whose map
    /// sorts keys, so the text is what an untyped `json!` object of the
    /// same content gave (the bytes of every earlier version).
    pub fn stored_text(&self) -> String {
        self.data_value().to_string()
    }

    /// The data alone, as a JSON value.
    pub fn data_value(&self) -> serde_json::Value {
        let mut tagged = serde_json::to_value(self).expect("event data serializes");
        tagged
            .get_mut("data")
            .map(serde_json::Value::take)
            .expect("adjacently tagged: a data field")
    }

    /// The typed data of an event of `kind` stored as `data`: `None` when
    /// the kind is one this version does not write, or the data is not of
    /// its kind's shape (written by another version).
    pub fn from_stored(kind: &EventKind, data: &serde_json::Value) -> Option<EventData> {
        if matches!(kind, EventKind::Unknown(_)) {
            return None;
        }
        serde_json::from_value(serde_json::json!({"kind": kind.as_str(), "data": data})).ok()
    }
}

impl Event {
    /// This event's data as its kind's type; `None` for an event of a kind
    /// this version does not know, or whose stored data is not of the shape
    /// this version writes (the event still reads: [`Event::data`] is the
    /// stored JSON as it is).
    pub fn typed_data(&self) -> Option<EventData> {
        EventData::from_stored(&self.kind, &self.data)
    }
}

/// The schema of an [`Event`]'s `data` field: any JSON value (the field's
/// documentation says what), its shape per kind named by the event's
/// schema (see [`event_schema`]); registers each kind's data type in `g`.
pub(super) fn data_schema(g: &mut SchemaGenerator) -> Schema {
    let _ = EventData::data_schemas(g);
    json_schema!({})
}

/// Adds to the [`Event`] record's schema, per kind this version writes,
/// an `if` (`kind` is this one) `then` (`data` is of its type), so the
/// schema says each kind's data and leaves an unknown kind's free.
pub(super) fn event_schema(schema: &mut Schema) {
    let mut g = SchemaGenerator::default();
    let rules: Vec<serde_json::Value> = EventData::data_schemas(&mut g)
        .into_iter()
        .map(|(kind, data)| {
            serde_json::json!({
                "if": {"properties": {"kind": {"const": kind.as_str()}}, "required": ["kind"]},
                "then": {"properties": {"data": data}},
            })
        })
        .collect();
    schema.insert("allOf".to_owned(), serde_json::Value::Array(rules));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue33_item3_every_kind_written_has_a_data_type() {
        let mut g = SchemaGenerator::default();
        let kinds: Vec<EventKind> = EventData::data_schemas(&mut g)
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(kinds, EventKind::ALL);
    }

    #[test]
    fn issue33_item3_an_unknown_kind_or_a_foreign_shape_reads_as_none() {
        let data = serde_json::json!({"title": "t"});
        assert!(EventData::from_stored(&EventKind::TaskCreated, &data).is_some());
        assert!(EventData::from_stored(&EventKind::parse("merge.queued"), &data).is_none());
        assert!(EventData::from_stored(&EventKind::VoteCast, &data).is_none());
    }
}
