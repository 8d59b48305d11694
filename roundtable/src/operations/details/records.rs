//! The details of the codes about records, actors, races and waits.

use crate::actor::{Actor, ActorKind};
use crate::model::{Claim, ClaimStatus, Landing, PolicyStatus, ProposalStatus, TransactionStatus};
use crate::operations::rebase::FileConflict;
use crate::operations::validate::ValidationReport;
use crate::ErrorCode;
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

/// The schema of an [`ErrorCode`]: one of the code spellings.
pub(crate) fn code_schema(_: &mut SchemaGenerator) -> Schema {
    let codes: Vec<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    json_schema!({"type": "string", "enum": codes})
}

/// `not_found`: what was looked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotFoundDetails {
    /// What kind of record was looked for (`proposal`, `revision`,
    /// `task`, `agent`, `claim`, `policy`, `transaction`, `test result`,
    /// `approval request`, `tool`, `file`: a path not at the landing
    /// branch's tip).
    pub kind: String,
    /// The id looked for (a revision is `PROPOSAL@NUMBER`).
    pub id: String,
}

/// Why an actor may not do something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForbiddenReason {
    /// The tool is not for the caller's kind of actor (`allowed_kinds`).
    WrongKind,
    /// The agent is not registered.
    Unregistered,
    /// The agent is disabled.
    Disabled,
    /// Only the proposal's author (`author`) may do this.
    NotAuthor,
    /// The proposal's author may not do this to their own proposal (vote, review).
    Author,
    /// Only the claim's holder (`holder`) may do this.
    NotHolder,
    /// The agent lacks the role this needs (`required_role`).
    MissingRole,
}

/// `forbidden`: the caller, and why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForbiddenDetails {
    /// The caller.
    pub actor: Actor,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ForbiddenReason")]
    pub reason: Option<ForbiddenReason>,
    /// The kinds of actor the tool is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<ActorKind>")]
    pub allowed_kinds: Option<Vec<ActorKind>>,
    /// The proposal's author.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub author: Option<String>,
    /// The agent holding the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub holder: Option<String>,
    /// The role needed (`security`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub required_role: Option<String>,
}

impl ForbiddenDetails {
    /// The caller, refused for `reason`.
    pub fn new(actor: &Actor, reason: ForbiddenReason) -> ForbiddenDetails {
        ForbiddenDetails {
            actor: actor.clone(),
            reason: Some(reason),
            allowed_kinds: None,
            author: None,
            holder: None,
            required_role: None,
        }
    }
}

/// Why a rebase (or a queue call) was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ConflictReason {
    /// The proposal already has an entry in the landing queue.
    AlreadyQueued,
    /// The revision is not stale: the files it touches are as it was made on.
    UpToDate,
    /// Its change is already in the files.
    AlreadyApplied,
    /// It does not merge onto the current files (`files`).
    MergeConflict,
    /// The revision does not keep the content it was made on (`path`).
    BaseUnavailable,
}

/// A path a transaction wrote that changed since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MovedPath {
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    pub path: String,
    /// What the transaction left there (`absent`, or a digest).
    pub expected: String,
    /// What is there now, spelled the same way.
    pub actual: String,
}

/// `conflict`: what the call raced with or repeats.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConflictDetails {
    /// The proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub proposal_id: Option<String>,
    /// The revision concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub revision: Option<u64>,
    /// The proposal's latest revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub latest_revision: Option<u64>,
    /// The revision the call expected to be the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub expected_revision: Option<u64>,
    /// For an apply of a superseded revision: the whole validation report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ValidationReport")]
    pub report: Option<Box<ValidationReport>>,
    /// The other agent's write claim that is in the way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Claim")]
    pub holder: Option<Box<Claim>>,
    /// The resource claimed (`file:src/a.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub resource_id: Option<String>,
    /// How many earlier waiters of other agents wait for the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub waiters_ahead: Option<u64>,
    /// For a rebase: why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ConflictReason")]
    pub reason: Option<ConflictReason>,
    /// The repository path the refusal is about (lossily decoded when it is not UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// For a merge conflict: every file that does not merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<FileConflict>")]
    pub files: Option<Vec<FileConflict>>,
    /// The approval request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub request_id: Option<String>,
    /// For a record whose id is taken: its kind (`task`, `transaction`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub kind: Option<String>,
    /// For a record whose id is taken: the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub id: Option<String>,
    /// The transaction concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
    /// For a rollback: the paths the transaction wrote that changed since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<MovedPath>")]
    pub paths: Option<Vec<MovedPath>>,
}

/// A record's status: a proposal's, claim's, transaction's or policy
/// version's. Its schema is one string enum of every spelling (each
/// described by the first record kind that has it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RecordStatus {
    /// A proposal's.
    Proposal(ProposalStatus),
    /// A claim's.
    Claim(ClaimStatus),
    /// A transaction's.
    Transaction(TransactionStatus),
    /// A policy version's.
    Policy(PolicyStatus),
}

impl JsonSchema for RecordStatus {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RecordStatus".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut constants: Vec<serde_json::Value> = Vec::new();
        for kind in [
            schemars::schema_for!(ProposalStatus),
            schemars::schema_for!(ClaimStatus),
            schemars::schema_for!(TransactionStatus),
            schemars::schema_for!(PolicyStatus),
        ] {
            let alternatives = kind.get("oneOf").and_then(|v| v.as_array()).cloned();
            for mut alternative in alternatives.into_iter().flatten() {
                if constants.iter().all(|c| c["const"] != alternative["const"]) {
                    if let Some(o) = alternative.as_object_mut() {
                        o.remove("title");
                    }
                    constants.push(alternative);
                }
            }
        }
        constants.sort_by(|a, b| a["const"].as_str().cmp(&b["const"].as_str()));
        json_schema!({
            "description": "A record's status: a proposal's, claim's, transaction's or policy version's.",
            "oneOf": constants,
        })
    }
}

/// `illegal_transition`: the record, its status and the statuses that
/// would allow the operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IllegalTransitionDetails {
    /// The proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub proposal_id: Option<String>,
    /// The claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub claim_id: Option<String>,
    /// The policy version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub version: Option<u64>,
    /// The transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
    /// The record's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "RecordStatus")]
    pub status: Option<RecordStatus>,
    /// The statuses that would allow the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<RecordStatus>")]
    pub allowed: Option<Vec<RecordStatus>>,
    /// The tool (or operation) refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub operation: Option<String>,
    /// For a rollback of a transaction that landed in another landing
    /// mode: the workspace's landing setting now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Landing")]
    pub landing: Option<Landing>,
}

/// `idempotency_conflict`: the key and the tool it was first used with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdempotencyConflictDetails {
    /// The key.
    pub idempotency_key: String,
    /// The tool the key was first used with.
    pub tool: String,
}

/// Why an apply's fencing check refused the author's claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StaleClaimReason {
    /// It was released or lapsed after validation read it.
    Lapsed,
    /// Another agent was granted an overlapping write claim with a newer
    /// token since (`newer_claim_id`, `newer_token`).
    Superseded,
}

/// `stale_claim`: the claim that no longer fences the apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StaleClaimDetails {
    /// The proposal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub proposal_id: Option<String>,
    /// The revision concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub revision: Option<u64>,
    /// The author's claim validation relied on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub claim_id: Option<String>,
    /// Its resource (`symbol:src/a.rs#f`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub resource_id: Option<String>,
    /// Its fencing token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub token: Option<u64>,
    /// Why the claim no longer fences the apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "StaleClaimReason")]
    pub reason: Option<StaleClaimReason>,
    /// The claim granted since, with the newer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub newer_claim_id: Option<String>,
    /// Its fencing token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub newer_token: Option<u64>,
}

/// The stage that failed, when it is not in the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RebaseStage {
    /// `patch.apply` with `rebase`: rebasing the revision changed what
    /// surrounds its change (its context lines or enclosing symbol), so
    /// that none of its evidence carries.
    Rebase,
}

/// Why the rebase stage failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValidationFailedReason {
    /// The rebase is not trivial.
    NotTrivial,
}

/// `validation_failed`: the whole validation report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidationFailedDetails {
    /// The whole validation report.
    pub report: Box<ValidationReport>,
    /// For `patch.apply` with `rebase`: `rebase` when rebasing the
    /// revision changed what surrounds its change (its context lines or
    /// enclosing symbol), so that none of its evidence carries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "RebaseStage")]
    pub stage: Option<RebaseStage>,
    /// With `stage`: `not_trivial`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ValidationFailedReason")]
    pub reason: Option<ValidationFailedReason>,
}

/// `busy`: what holds the workspace, or the cap on waits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BusyDetails {
    /// For the apply lock: its file (in `.roundtable/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub lock: Option<String>,
    /// How long the call waited for the apply lock, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub waited_ms: Option<u64>,
    /// The transaction applying the path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub transaction_id: Option<String>,
    /// The proposal it applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub proposal_id: Option<String>,
    /// The path it is applying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub path: Option<String>,
    /// Over MCP: the most waiting calls (`events.wait`, `claim.acquire`)
    /// one client may have pending at once, which this call would have
    /// passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub max_waits: Option<u64>,
}

/// `cancelled`: the lock the call was waiting for, if any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelledDetails {
    /// When the call was waiting for the apply lock: its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub lock: Option<String>,
}

/// `deadline_exceeded`: the lock the call was waiting for, if any.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeadlineExceededDetails {
    /// When the call was waiting for the apply lock: its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub lock: Option<String>,
}

/// `inherited_engine`: the process that opened the engine, and this one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InheritedEngineDetails {
    /// The process that opened the engine.
    pub opened_by_pid: u64,
    /// This process: a `fork()` child of it.
    pub pid: u64,
}

impl ForbiddenDetails {
    /// A tool for agents only, called by another kind of actor
    /// (`wrong_kind`, as the registry's check of the caller's kind says).
    pub fn agents_only(actor: &Actor) -> ForbiddenDetails {
        ForbiddenDetails {
            allowed_kinds: Some(vec![ActorKind::Agent]),
            ..ForbiddenDetails::new(actor, ForbiddenReason::WrongKind)
        }
    }
}
