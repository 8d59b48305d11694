//! The records tools return, and how each is read from its row.

use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::tools::ToolError;
use rusqlite::{OptionalExtension as _, Row};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A proposal's risk level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
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
            ProposalStatus::Rejected => "rejected",
            ProposalStatus::Withdrawn => "withdrawn",
        }
    }
}

pub(crate) use crate::store::{actor_from_sql, enum_from_sql, enum_to_sql, json_from_sql};

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
    /// When it was registered.
    pub created_at: Timestamp,
    /// When its roles or state last changed.
    pub updated_at: Timestamp,
}

impl Agent {
    pub(crate) const COLUMNS: &'static str =
        "id, roles, enabled, display_name, created_at, updated_at";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Agent> {
        Ok(Agent {
            id: r.get(0)?,
            roles: json_from_sql(&r.get::<_, String>(1)?)?,
            enabled: r.get(2)?,
            display_name: r.get(3)?,
            created_at: Timestamp(r.get(4)?),
            updated_at: Timestamp(r.get(5)?),
        })
    }

    pub(crate) fn load(
        tx: &rusqlite::Transaction<'_>,
        id: &str,
    ) -> Result<Option<Agent>, ToolError> {
        Ok(tx
            .query_row(
                &format!("SELECT {} FROM agents WHERE id = ?1", Agent::COLUMNS),
                [id],
                Agent::from_row,
            )
            .optional()?)
    }
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

impl Task {
    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Task> {
        Ok(Task {
            id: r.get(0)?,
            title: r.get(1)?,
            summary_md: r.get(2)?,
            created_by: actor_from_sql(&r.get::<_, String>(3)?)?,
            created_at: Timestamp(r.get(4)?),
        })
    }
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
    /// When it was created.
    pub created_at: Timestamp,
    /// When its status or revision last changed.
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub(crate) seq: i64,
}

impl Proposal {
    pub(crate) const COLUMNS: &'static str =
        "id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at, seq";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Proposal> {
        Ok(Proposal {
            id: r.get(0)?,
            task_id: r.get(1)?,
            author: r.get(2)?,
            title: r.get(3)?,
            summary_md: r.get(4)?,
            risk: enum_from_sql(&r.get::<_, String>(5)?)?,
            status: enum_from_sql(&r.get::<_, String>(6)?)?,
            latest_revision: r.get(7)?,
            created_at: Timestamp(r.get(8)?),
            updated_at: Timestamp(r.get(9)?),
            seq: r.get(10)?,
        })
    }

    /// The proposal named `id`, or `not_found`.
    pub(crate) fn load(tx: &rusqlite::Transaction<'_>, id: &str) -> Result<Proposal, ToolError> {
        tx.query_row(
            &format!("SELECT {} FROM proposals WHERE id = ?1", Proposal::COLUMNS),
            [id],
            Proposal::from_row,
        )
        .optional()?
        .ok_or_else(|| ToolError::not_found("proposal", id))
    }

    /// `illegal_transition` unless the status is one of `allowed`.
    pub(crate) fn require_status(
        &self,
        allowed: &[ProposalStatus],
        operation: &str,
    ) -> Result<(), ToolError> {
        if allowed.contains(&self.status) {
            return Ok(());
        }
        let names: Vec<&str> = allowed.iter().map(|s| s.as_str()).collect();
        Err(ToolError::new(
            crate::ErrorCode::IllegalTransition,
            format!(
                "proposal {} is {}; {operation} needs it to be {}",
                self.id,
                self.status.as_str(),
                names.join(" or ")
            ),
            json!({"proposal_id": self.id, "status": self.status, "allowed": names, "operation": operation}),
        ))
    }

    /// Check that `revision` exists and is the latest: `not_found` for a
    /// revision that never existed, `conflict` for a superseded one.
    pub(crate) fn require_latest(&self, revision: u32) -> Result<(), ToolError> {
        if revision > self.latest_revision {
            return Err(ToolError::not_found(
                "revision",
                &format!("{}@{revision}", self.id),
            ));
        }
        if revision < self.latest_revision {
            return Err(ToolError::conflict(
                format!(
                    "revision {revision} of proposal {} was superseded by revision {}",
                    self.id, self.latest_revision
                ),
                json!({"proposal_id": self.id, "revision": revision, "latest_revision": self.latest_revision}),
            ));
        }
        Ok(())
    }
}

/// What one revision does to one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileSummary {
    /// The path.
    pub path: String,
    /// `create`, `modify`, `delete`, `rename` (to this path), `renamed_away`
    /// (from this path) or `copy`.
    pub operation: String,
    /// For a rename or copy, the source path; for `renamed_away`, the
    /// destination.
    pub other_path: Option<String>,
    /// The digest and mode the path must have now, or `null` for "must be
    /// absent".
    pub before: Option<FileState>,
    /// The digest and mode it becomes, or `null` for "removed".
    pub after: Option<FileState>,
}

/// A file's digest, mode and size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FileState {
    /// `blob:sha256:<hex>`.
    pub digest: String,
    /// Whether the executable bit is set.
    pub executable: bool,
    /// Whether it is a symbolic link (the digest and size are its
    /// target's); written only when it is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub symlink: bool,
    /// The size in bytes (known for results).
    pub size: Option<u64>,
}

/// One immutable revision of a proposal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Revision {
    /// 1 for the first revision, then 2, 3…
    pub number: u32,
    /// `patch` or `edit_plan`.
    pub format: String,
    /// `blob:sha256:` of the patch or edit-plan bytes.
    pub digest: String,
    /// What it changes, per path, sorted by path.
    pub changeset: Vec<FileSummary>,
    /// `sha256:` of the canonical changeset: equal for two revisions that
    /// change the same paths to the same results from the same contents.
    pub changeset_digest: String,
    /// The resources the author declared, in canonical spelling.
    pub affected_resources: Vec<String>,
    /// The workspace state hash when the revision was made.
    pub base_state: String,
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
    pub diff_digest: Option<String>,
}

impl Revision {
    pub(crate) const COLUMNS: &'static str = "number, format, digest, changeset, changeset_digest, affected_resources, base_state, base_git_head, note_md, created_by, created_at, diff_digest";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Revision> {
        Ok(Revision {
            number: r.get(0)?,
            format: r.get(1)?,
            digest: r.get(2)?,
            changeset: json_from_sql(&r.get::<_, String>(3)?)?,
            changeset_digest: r.get(4)?,
            affected_resources: json_from_sql(&r.get::<_, String>(5)?)?,
            base_state: r.get(6)?,
            base_git_head: r.get(7)?,
            note_md: r.get(8)?,
            created_by: actor_from_sql(&r.get::<_, String>(9)?)?,
            created_at: Timestamp(r.get(10)?),
            diff_digest: r.get(11)?,
        })
    }

    pub(crate) fn load(
        tx: &rusqlite::Transaction<'_>,
        proposal_id: &str,
        number: u32,
    ) -> Result<Revision, ToolError> {
        tx.query_row(
            &format!(
                "SELECT {} FROM revisions WHERE proposal_id = ?1 AND number = ?2",
                Revision::COLUMNS
            ),
            rusqlite::params![proposal_id, number],
            Revision::from_row,
        )
        .optional()?
        .ok_or_else(|| ToolError::not_found("revision", &format!("{proposal_id}@{number}")))
    }
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
    pub(crate) seq: i64,
}

impl Vote {
    pub(crate) const COLUMNS: &'static str =
        "id, proposal_id, revision, agent_id, vote, reason_md, created_at, seq";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Vote> {
        Ok(Vote {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            agent_id: r.get(3)?,
            vote: enum_from_sql(&r.get::<_, String>(4)?)?,
            reason_md: r.get(5)?,
            created_at: Timestamp(r.get(6)?),
            seq: r.get(7)?,
        })
    }
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

impl SecurityReviewRecord {
    pub(crate) const COLUMNS: &'static str =
        "id, proposal_id, revision, verdict, note_md, reviewer, created_at";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<SecurityReviewRecord> {
        Ok(SecurityReviewRecord {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            verdict: enum_from_sql(&r.get::<_, String>(3)?)?,
            note_md: r.get(4)?,
            reviewer: actor_from_sql(&r.get::<_, String>(5)?)?,
            created_at: Timestamp(r.get(6)?),
        })
    }
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

impl Approval {
    pub(crate) const COLUMNS: &'static str =
        "id, proposal_id, revision, request_id, human_id, note_md, created_at";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Approval> {
        Ok(Approval {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            request_id: r.get(3)?,
            human_id: r.get(4)?,
            note_md: r.get(5)?,
            created_at: Timestamp(r.get(6)?),
        })
    }
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
}

impl TestResult {
    pub(crate) const COLUMNS: &'static str =
        "id, proposal_id, revision, name, status, duration_ms, note_md, recorded_by, created_at";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<TestResult> {
        Ok(TestResult {
            id: r.get(0)?,
            proposal_id: r.get(1)?,
            revision: r.get(2)?,
            name: r.get(3)?,
            status: enum_from_sql(&r.get::<_, String>(4)?)?,
            duration_ms: r
                .get::<_, Option<i64>>(5)?
                .and_then(|d| u64::try_from(d).ok()),
            note_md: r.get(6)?,
            recorded_by: actor_from_sql(&r.get::<_, String>(7)?)?,
            created_at: Timestamp(r.get(8)?),
        })
    }
}

/// One entry of the audit log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Event {
    /// Its position in the store's log, from 1.
    pub seq: i64,
    /// What happened (`proposal.created`, `vote.cast`…).
    pub kind: String,
    /// Who did it.
    pub actor: Actor,
    /// The id of the record it is about.
    pub subject: String,
    /// The proposal it concerns, if any.
    pub proposal_id: Option<String>,
    /// Details.
    pub data: serde_json::Value,
    /// When.
    pub at: Timestamp,
    /// The digest of the event before it (zeros for the first).
    pub prev_digest: String,
    /// This event's digest (over its fields and `prev_digest`).
    pub digest: String,
}

impl Event {
    pub(crate) const COLUMNS: &'static str =
        "seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest";

    pub(crate) fn from_row(r: &Row<'_>) -> rusqlite::Result<Event> {
        let kind: String = r.get(2)?;
        let id: String = r.get(3)?;
        Ok(Event {
            seq: r.get(0)?,
            kind: r.get(1)?,
            actor: actor_from_sql(&format!("{kind}:{id}"))?,
            subject: r.get(4)?,
            proposal_id: r.get(5)?,
            data: json_from_sql(&r.get::<_, String>(6)?)?,
            at: Timestamp(r.get(7)?),
            prev_digest: r.get(8)?,
            digest: r.get(9)?,
        })
    }
}
