//! The domain model: what the governed workflow is made of — agents,
//! tasks, proposals and their revisions, review evidence (votes,
//! decisions, security reviews, approvals, test results), transactions and
//! their journals, events.
//!
//! Pure values: no store, no JSON values, no tool error. The store maps
//! them to rows (`store::rows`), the policy evaluates them, the tools
//! return them; every front end reads them back as these types.

use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::Digest;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod claim;
mod durability;
mod event_data;
mod event_kind;
mod landing;
mod policy_record;
mod queue;
mod record_kind;
mod role;
mod stage;
pub mod trace;
mod transaction;

pub use claim::{Claim, ClaimStatus};
pub use durability::Durability;
pub use event_data::{
    AgentAccess, AgentRegisteredData, AgentUpdatedData, ClaimAcquiredData, ClaimExpiredData,
    ClaimReleasedData, ClaimRenewedData, DecisionRecordedData, ErrorRecord, EventData,
    HumanApprovalRequestedData, HumanApprovedData, PolicyActivatedData, PolicyDraftedData,
    ProposalAppliedData, ProposalCreatedData, ProposalRejectedData, ProposalReviewRequestedData,
    ProposalRevisedData, ProposalRolledBackData, ProposalStaleData, ProposalWithdrawnData,
    QueueCheckRequestedData, QueueCheckedData, QueueEnqueuedData, QueueLandedData,
    QueueRemovedData, QueueReturnedData, SecurityReviewedData, TaskCreatedData, TestRecordedData,
    TransactionAppliedData, TransactionFailedData, TransactionRecoveredData,
    TransactionRolledBackData, TransactionStartedData, VoteCastData, WorkspaceConfiguredData,
};
pub use event_kind::EventKind;
pub use landing::{Landing, LandingMode};
pub use policy_record::{PolicyRecord, PolicyStatus};
pub use queue::{QueueEntry, QueueReturnReason, QueueStatus};
pub use record_kind::RecordKind;
pub use role::Role;
pub use roundtable_diff::changeset::OperationKind;
pub use roundtable_diff::edit::agent::{MatchRung, MatchedHunk};
pub use stage::StageName;
pub use transaction::{
    JournalFile, PathReport, PathState, Phase, PhaseName, PhaseStatus, Recovery, Transaction,
    TransactionKind, TransactionStatus, Unrecovered,
};

/// A proposal's risk level, ordered from low to critical.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
    Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Low risk.
    Low,
    /// The default.
    #[default]
    Normal,
    /// High: the default policy wants a security review.
    High,
    /// Critical: the default policy also wants human approval.
    Critical,
}

/// Where a proposal is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    /// Created; the author may still revise before asking for review.
    Pending,
    /// Reviewers are asked to vote.
    InReview,
    /// Its change was applied to the workspace.
    Applied,
    /// Its change was applied, then rolled back (`transaction.rollback`):
    /// the files are as before it. It may land again: `patch.apply`
    /// re-validates it (its author claims again), or rolling back the
    /// rollback re-applies it; either makes it `applied` again.
    RolledBack,
    /// Rejected by an orchestrator or a person.
    Rejected,
    /// Withdrawn by its author or the orchestrator.
    Withdrawn,
}

impl ProposalStatus {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProposalStatus::Pending => "pending",
            ProposalStatus::InReview => "in_review",
            ProposalStatus::Applied => "applied",
            ProposalStatus::RolledBack => "rolled_back",
            ProposalStatus::Rejected => "rejected",
            ProposalStatus::Withdrawn => "withdrawn",
        }
    }
}

/// A registered agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Agent {
    /// The agent's id (an agent actor's `id`).
    pub id: String,
    /// Its roles, sorted (`reviewer`, `security`…).
    pub roles: Vec<String>,
    /// Whether it may act: a disabled agent can neither propose nor vote.
    pub enabled: bool,
    /// A name for people.
    pub display_name: Option<String>,
    /// Its model, as the host registered it (`provider/model`, the
    /// models.dev convention): attribution records name it.
    #[serde(default)]
    pub model_id: Option<String>,
    /// The link to its session or conversation, as the host registered
    /// it: attribution records name it.
    #[serde(default)]
    pub session_url: Option<String>,
    /// When it was registered.
    pub created_at: Timestamp,
    /// When its roles or state last changed.
    pub updated_at: Timestamp,
}

/// A task proposals belong to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Task {
    /// The task's id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// What it is about.
    pub summary_md: Option<String>,
    /// Who created it.
    pub created_by: Actor,
    /// When.
    pub created_at: Timestamp,
}

/// A proposal: a change an agent asks to make, with its numbered revisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Proposal {
    /// The proposal's id.
    pub id: String,
    /// The task it belongs to.
    pub task_id: String,
    /// The agent that proposed it (only it may revise it).
    pub author: String,
    /// Its title.
    pub title: String,
    /// What it does and why.
    pub summary_md: String,
    /// Its risk level.
    pub risk: Risk,
    /// Where it is in its life.
    pub status: ProposalStatus,
    /// The number of its newest revision (evidence is judged against it).
    pub latest_revision: u32,
    /// The proposal whose applied change this one reverts
    /// (`proposal.revert`; `revert_agent`: the newest), else `null`.
    #[serde(default)]
    pub reverts: Option<String>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When its status or revision last changed.
    pub updated_at: Timestamp,
    #[serde(skip)]
    /// The store's row sequence: the keyset-paging cursor (not serialized).
    pub seq: i64,
}

/// What one revision does to one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileSummary {
    /// The path.
    pub path: String,
    /// `create`, `modify`, `delete`, `rename` (to this path), `renamed_away`
    /// (from this path) or `copy`.
    pub operation: OperationKind,
    /// For a rename or copy, the source path; for `renamed_away`, the
    /// destination.
    pub other_path: Option<String>,
    /// The digest and mode the path must have now, or `null` for "must be
    /// absent".
    pub before: Option<FileState>,
    /// The digest and mode it becomes, or `null` for "removed".
    pub after: Option<FileState>,
    /// For a Codex patch or SEARCH/REPLACE revision: where each hunk that
    /// edits this path's content matched, and the rung of the matching
    /// ladder it needed (written only when there are any).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<MatchedHunk>,
}

/// A file's digest, mode and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileState {
    /// `blob:sha256:<hex>`.
    pub digest: Digest,
    /// Whether the executable bit is set.
    pub executable: bool,
    /// Whether it is a symbolic link (the digest and size are its
    /// target's); written only when it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symlink: bool,
    /// The size in bytes (known for results).
    pub size: Option<u64>,
}

/// What a revision was submitted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RevisionFormat {
    /// A unified or git diff.
    Patch,
    /// An Opcore edit plan.
    EditPlan,
    /// A Codex `apply_patch` envelope (`*** Begin Patch` … `*** End Patch`).
    CodexPatch,
    /// SEARCH/REPLACE blocks (aider's format, or exact-replace edits).
    SearchReplace,
}

impl RevisionFormat {
    /// The stable spelling: `patch`, `edit_plan`, `codex_patch`,
    /// `search_replace`.
    pub fn as_str(self) -> &'static str {
        match self {
            RevisionFormat::Patch => "patch",
            RevisionFormat::EditPlan => "edit_plan",
            RevisionFormat::CodexPatch => "codex_patch",
            RevisionFormat::SearchReplace => "search_replace",
        }
    }

    /// The request field that carries a revision of this format:
    /// `edit_plan` for an edit plan, `patch` for every text format.
    pub fn field(self) -> &'static str {
        match self {
            RevisionFormat::EditPlan => "edit_plan",
            _ => "patch",
        }
    }

    /// Whether the revision is submitted as text (everything but an edit
    /// plan).
    pub fn is_text(self) -> bool {
        self != RevisionFormat::EditPlan
    }
}

/// One line of a proposal's revision history.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RevisionEntry {
    /// The revision's number.
    pub number: u32,
    /// `patch`, `edit_plan`, `codex_patch` or `search_replace`.
    pub format: RevisionFormat,
    /// Its content digest.
    pub digest: Digest,
    /// Its changeset digest.
    pub changeset_digest: String,
    /// When it was made.
    pub created_at: Timestamp,
}

/// One immutable revision of a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Revision {
    /// 1 for the first revision, then 2, 3…
    pub number: u32,
    /// `patch`, `edit_plan`, `codex_patch` or `search_replace`.
    pub format: RevisionFormat,
    /// `blob:sha256:` of the patch or edit-plan bytes.
    pub digest: Digest,
    /// What it changes, per path, sorted by path.
    pub changeset: Vec<FileSummary>,
    /// `sha256:` of the canonical changeset: equal for two revisions that
    /// change the same paths to the same results from the same contents.
    pub changeset_digest: String,
    /// The resources the author declared, in canonical spelling.
    pub affected_resources: Vec<String>,
    /// The base the revision was made on, in O(change): a state hash over
    /// git `HEAD` and the before-state of each touched path (absent, or
    /// digest and kind), not over the whole tree (`state::touched_state`).
    /// Equal for two revisions touching the same paths in the same states
    /// on the same commit.
    pub base_state: crate::StateHash,
    /// The git `HEAD` then, if any.
    pub base_git_head: Option<String>,
    /// The author's note on what changed in this revision.
    pub note_md: Option<String>,
    /// Who made it.
    pub created_by: Actor,
    /// When.
    pub created_at: Timestamp,
    /// `blob:sha256:` of the revision as a unified diff: the patch itself,
    /// or the edit plan rendered against the files it was made on.
    pub diff_digest: Option<Digest>,
    /// The revision this one rebases, when `proposal.rebase` made it.
    #[serde(default)]
    pub rebased_from: Option<u32>,
    /// `v2:sha256:` of the change in its place
    /// (`Changeset::change_id`): each
    /// touched path with its operation and modes and, for text, each
    /// hunk's removed and added lines with the three old lines on either
    /// side and the symbol enclosing it (for binary content, the before
    /// and after digests). Equal for two revisions that make the same
    /// change in the same place of files whose other lines moved — a
    /// trivial rebase. `null` for revisions stored before schema version
    /// 7; an id without the `v2:` prefix was made by an earlier rule and
    /// matches no other.
    #[serde(default)]
    pub change_id: Option<String>,
}

/// A reviewer's vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VoteValue {
    /// Approve as is.
    Approve,
    /// Approve, with notes for the author.
    ApproveWithNotes,
    /// Ask the author for a new revision.
    Revise,
    /// Reject: blocks under the default policy.
    Reject,
    /// Veto: always blocks.
    Veto,
    /// Take no position.
    Abstain,
}

/// A vote on one revision. Votes are never changed: a reviewer who changes
/// their mind casts another, and the latest counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Vote {
    /// The vote's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// The revision it judges.
    pub revision: u32,
    /// The voting agent.
    pub agent_id: String,
    /// The vote.
    pub vote: VoteValue,
    /// Why.
    pub reason_md: Option<String>,
    /// When.
    pub created_at: Timestamp,
    #[serde(skip)]
    /// The store's row sequence: the keyset-paging cursor (not serialized).
    pub seq: i64,
}

/// An orchestrator's or person's decision on a revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionValue {
    /// Accept the revision.
    Accept,
    /// Reject it (`patch.reject` records this and rejects the proposal).
    Reject,
    /// Decide later.
    Defer,
}

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Decision {
    /// The decision's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// The revision it is about.
    pub revision: u32,
    /// The decision.
    pub decision: DecisionValue,
    /// Why.
    pub reason_md: String,
    /// Who decided.
    pub decided_by: Actor,
    /// When.
    pub created_at: Timestamp,
}

/// A security reviewer's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// No security concern.
    Pass,
    /// A security concern: the review gate fails.
    Fail,
}

/// A security review of one revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SecurityReviewRecord {
    /// The review's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// The revision reviewed.
    pub revision: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// Notes.
    pub note_md: Option<String>,
    /// Who reviewed.
    pub reviewer: Actor,
    /// When.
    pub created_at: Timestamp,
}

/// A request for a person to approve one revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequest {
    /// The request's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// The revision to approve.
    pub revision: u32,
    /// Why approval is asked for.
    pub reason_md: Option<String>,
    /// Who asked.
    pub requested_by: Actor,
    /// When.
    pub created_at: Timestamp,
}

/// A person's approval of one revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Approval {
    /// The approval's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// The revision approved.
    pub revision: u32,
    /// The request it answers, if any.
    pub request_id: Option<String>,
    /// The approving person.
    pub human_id: String,
    /// Notes.
    pub note_md: Option<String>,
    /// When.
    pub created_at: Timestamp,
}

/// A test run's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestStatus {
    /// The test passed.
    Passed,
    /// The test failed.
    Failed,
    /// The test did not run.
    Skipped,
    /// The test could not be run (infrastructure error).
    Errored,
}

/// The result of one test run against one revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestResult {
    /// The result's id.
    pub id: String,
    /// The proposal.
    pub proposal_id: String,
    /// The revision tested.
    pub revision: u32,
    /// The check's name (`unit`, `lint`, `cargo test`…).
    pub name: String,
    /// Its outcome.
    pub status: TestStatus,
    /// How long it took.
    pub duration_ms: Option<u64>,
    /// Notes or an output excerpt.
    pub note_md: Option<String>,
    /// Who recorded it.
    pub recorded_by: Actor,
    /// When.
    pub created_at: Timestamp,
    #[serde(skip)]
    /// The store's row sequence: the keyset-paging cursor (not serialized).
    pub seq: i64,
}

/// One entry of the audit log.
///
/// Its schema names, per kind this version writes, the type of `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = event_data::event_schema)]
pub struct Event {
    /// Its position in the store's log, from 1.
    pub seq: i64,
    /// What happened (`proposal.created`, `vote.cast`…).
    pub kind: EventKind,
    /// Who did it.
    pub actor: Actor,
    /// The id of the record it is about.
    pub subject: String,
    /// The proposal it concerns, if any.
    pub proposal_id: Option<String>,
    /// What changed, as stored (the JSON its digest covers): an object of
    /// the type its `kind` names (this record's `allOf`, one `if`/`then`
    /// per kind). An event of a kind not listed (a newer version's) keeps
    /// its data as stored.
    #[schemars(schema_with = "event_data::data_schema")]
    pub data: serde_json::Value,
    /// When.
    pub at: Timestamp,
    /// The digest of the event before it (zeros for the first).
    pub prev_digest: String,
    /// This event's digest (over its fields and `prev_digest`).
    pub digest: String,
}
