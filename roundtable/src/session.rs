//! The typed session API: the governed workflow as Rust methods.
//!
//! [`Engine::session`](crate::Engine::session) binds an actor; the
//! session's noun groups ([`Session::setup`], [`Session::proposals`],
//! [`Session::evidence`], [`Session::claims`], [`Session::validation`],
//! [`Session::policies`], [`Session::transactions`], [`Session::events`])
//! have one method per tool. Each takes its request type (the very type
//! the JSON tool decodes, so the two surfaces cannot disagree) and returns
//! the tool's result type, which serializes to the JSON the tool returns
//! and reads back from it.
//!
//! Requests are built with constructors for their required fields and
//! setters for the optional ones. A constructor or setter given a value
//! the decoder would refuse (a blank title, an id with a space) does not
//! fail on the spot: the [`Draft`] carries the first such error, naming
//! the field, and the call returns it as `invalid_argument` without doing
//! anything. A request written as a struct literal is checked by the same
//! decoder when it runs.
//!
//! The session is the only way to change the workspace through an
//! engine: the engine's workspace and store are not public, and the
//! workspace's writing methods are crate-private (the root-level
//! [`workspace::apply_patch`](crate::workspace::apply_patch) and
//! [`workspace::apply_changeset`](crate::workspace::apply_changeset) are
//! the CLI's ungoverned writes):
//!
//! ```compile_fail
//! # let engine: roundtable::Engine = todo!();
//! let _ = engine.workspace(); // private: no write around the governed apply
//! ```
//!
//! ```compile_fail
//! # let engine: roundtable::Engine = todo!();
//! let _ = engine.store(); // private: no row written behind the tools
//! ```
//!
//! ```compile_fail
//! # let (ws, cs): (roundtable::workspace::Workspace, roundtable::Changeset) = todo!();
//! let _ = ws.apply_changeset(&cs, roundtable::workspace::WriteMode::Write); // crate-private
//! ```
//!
//! ```no_run
//! # fn main() -> Result<(), roundtable::ToolError> {
//! use roundtable::session::{CastVote, CreateProposal};
//! use roundtable::{Actor, Engine, EngineOptions, Id};
//! let engine = Engine::open(std::path::Path::new("."), EngineOptions::default())?;
//! let ada = engine.session(Actor::agent(Id::new("ada").expect("an id")));
//! let patch = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
//! let created = ada.proposals().create(CreateProposal::patch("t1", "Bump x", "x goes to 2", patch))?;
//! println!("{} revision {}", created.proposal.id, created.revision.number);
//! # let _ = CastVote::approve(&created.proposal.id, 1);
//! # Ok(()) }
//! ```

use crate::actor::Actor;
use crate::engine::Engine;
use crate::id::Id;
use crate::operations::{authorize, decode, Request, ToolError};
use crate::resource::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub use crate::claims::ClaimType;
pub use crate::landing::LandedCommit;
pub use crate::model::{
    Durability, EventKind, OperationKind, PolicyStatus, QueueEntry, QueueReturnReason, QueueStatus,
    RecordKind, RevisionFormat, StageName,
};
pub use crate::operations::args::Cursor;
pub use crate::operations::claims::{
    AcquireClaim, ClaimChanged, ClaimPage, ClaimStatus, ListClaims, ReleaseClaim, RenewClaim,
};
pub use crate::operations::evidence::{
    ApprovalRequested, Approve, Approved, CastVote, DecisionRecorded, GetTest, ListTests,
    ListVotes, RecordDecision, RecordSecurityReview, RecordTest, RequestApproval, SecurityReviewed,
    TestDetail, TestPage, TestRecorded, VotePage, VoteRecorded,
};
pub use crate::operations::inbox::{InboxItem, InboxPage, InboxWait, ListInbox, WaitInbox};
pub use crate::operations::landing::{
    LandedCommits, LandingLog, SettleLanding, SettleOutcome, Settled,
};
pub use crate::operations::log::{
    ChainHead, ChainReport, EventPage, EventWait, ListEvents, VerifyEvents, WaitEvents,
};
pub use crate::operations::next::{NextAction, NextActor, NextRole, RequirementNext};
pub use crate::operations::policies::{
    ActivatePolicy, Activated, GetPolicy, PolicyResult, SetPolicy,
};
pub use crate::operations::proposals::{
    AttachPatch, CreateProposal, GetProposal, ListProposals, ProposalChanged, ProposalDetail,
    ProposalPage, ProposalRevised, Reject, Rejected, RequestReview, ReviewRequested, Withdraw,
};
pub use crate::operations::provenance::{
    Blame, BlameFile, BlameRange, BlamedCommit, EvidenceKind, LandingEvidence, NotGoverned,
    Provenance,
};
pub use crate::operations::queue::{
    Enqueue, ListQueue, QueueCheckRequest, QueueEntryResult, QueuePage, QueueRun, RemoveFromQueue,
    RunQueue, StateCheck,
};
pub use crate::operations::rebase::{FileConflict, RebaseProposal};
pub use crate::operations::records::{
    DecisionValue, ProposalStatus, Risk, TestStatus, Verdict, VoteValue,
};
pub use crate::operations::revert::RevertProposal;
pub use crate::operations::revert_agent::{
    AgentReverted, LaterLanding, RevertAgent, RevertedLanding, UndoConflict,
};
pub use crate::operations::review::{
    CompareRevisions, DiffPage, Files, GetProposalStatus, Interdiff, InterdiffStatus, ProposalDiff,
    ProposalFiles, ProposalSymbols, StatusReport, Symbols,
};
pub use crate::operations::setup::{
    AgentDetail, AgentPage, AgentRegistered, CreateTask, GetAgent, GetTask, ListAgents, ListTasks,
    RegisterAgent, TaskCreated, TaskDetail, TaskPage,
};
pub use crate::operations::transactions::{
    Applied, ApplyRevision, CheckRecovery, GetTransaction, ListPhases, ListTransactions, Phases,
    RecoveryAdvice, Rollback, RolledBack, TransactionDetail, TransactionPage,
};
pub use crate::operations::validate::{Validate, ValidationReport};
pub use crate::operations::verify::{
    ProvenanceFinding, ProvenanceProblem, ProvenanceReport, VerifyProvenance,
};
pub use crate::operations::workspace::{ConfigureWorkspace, GetWorkspace, WorkspaceSettings};

/// One actor's handle on an engine: every call it makes is made as that
/// actor. Cheap to create; a host gives each agent thread its own.
#[derive(Debug, Clone)]
pub struct Session<'e> {
    engine: &'e Engine,
    actor: Actor,
}

impl<'e> Session<'e> {
    pub(crate) fn new(engine: &'e Engine, actor: Actor) -> Session<'e> {
        Session { engine, actor }
    }

    /// The actor every call of this session is made as.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// Run any request. The request is checked by the decoder the JSON
    /// surface uses (a struct literal cannot get past a limit a JSON call
    /// could not), then runs exactly as the tool does.
    pub fn run<R: Request>(&self, request: impl Into<Draft<R>>) -> Result<R::Output, ToolError> {
        self.engine.check_process()?;
        authorize::<R>(&self.actor)?;
        let request = request.into().build()?;
        let args = serde_json::to_value(&request).map_err(|e| {
            ToolError::invalid_argument("", format!("the request does not serialize: {e}"))
        })?;
        self.decode_and_execute::<R>(args)
    }

    /// Run the request whose arguments are `args`, a JSON object: the
    /// path of the JSON registry ([`Engine::call`]).
    pub(crate) fn run_json<R: Request>(
        &self,
        args: serde_json::Value,
    ) -> Result<R::Output, ToolError> {
        authorize::<R>(&self.actor)?;
        self.decode_and_execute::<R>(args)
    }

    /// Decode `args` strictly into `R` and run it as this session's actor
    /// (whose kind is authorized already).
    fn decode_and_execute<R: Request>(
        &self,
        args: serde_json::Value,
    ) -> Result<R::Output, ToolError> {
        let request: R = decode(args)?;
        request.execute(self.engine, &self.actor)
    }

    /// Registering agents and tasks.
    pub fn setup(&self) -> SetupApi<'_, 'e> {
        SetupApi(self)
    }

    /// Proposals and their revisions: create, revise, read, review.
    pub fn proposals(&self) -> ProposalsApi<'_, 'e> {
        ProposalsApi(self)
    }

    /// Review evidence: votes, decisions, security reviews, human
    /// approvals, test results.
    pub fn evidence(&self) -> EvidenceApi<'_, 'e> {
        EvidenceApi(self)
    }

    /// Claims on files, directories and symbols.
    pub fn claims(&self) -> ClaimsApi<'_, 'e> {
        ClaimsApi(self)
    }

    /// Validation: every gate, without changing anything.
    pub fn validation(&self) -> ValidationApi<'_, 'e> {
        ValidationApi(self)
    }

    /// The workspace policy.
    pub fn policies(&self) -> PoliciesApi<'_, 'e> {
        PoliciesApi(self)
    }

    /// Applying, rolling back and reading transactions.
    pub fn transactions(&self) -> TransactionsApi<'_, 'e> {
        TransactionsApi(self)
    }

    /// The audit log.
    pub fn events(&self) -> EventsApi<'_, 'e> {
        EventsApi(self)
    }
}

/// A request being built: the request, or the first value in it the
/// decoder refuses (`invalid_argument` naming the field). Every session
/// method takes a `Draft` or the request itself.
#[derive(Debug)]
#[must_use = "a draft does nothing until a session runs it"]
pub struct Draft<R>(Result<R, ToolError>);

impl<R> Draft<R> {
    fn of(make: impl FnOnce() -> Result<R, ToolError>) -> Draft<R> {
        Draft(make())
    }

    fn set(self, f: impl FnOnce(&mut R) -> Result<(), ToolError>) -> Draft<R> {
        Draft(self.0.and_then(|mut r| f(&mut r).map(|()| r)))
    }

    /// The request, or why it is not one.
    pub fn build(self) -> Result<R, ToolError> {
        self.0
    }
}

impl<R: Request> From<R> for Draft<R> {
    fn from(request: R) -> Draft<R> {
        Draft(Ok(request))
    }
}

/// `value` decoded as the request field `field` would be from JSON.
fn field<T: DeserializeOwned>(field: &str, value: impl Serialize) -> Result<T, ToolError> {
    let value = serde_json::to_value(value)
        .map_err(|e| ToolError::invalid_argument(field, format!("does not serialize: {e}")))?;
    serde_json::from_value(value).map_err(|e| ToolError::invalid_argument(field, e))
}

fn id(name: &str, value: impl AsRef<str>) -> Result<Id, ToolError> {
    field(name, value.as_ref())
}

/// Requests that take an idempotency key.
pub trait Keyed {
    #[doc(hidden)]
    fn key_slot(&mut self) -> &mut Option<Id>;
}

impl<R: Keyed> Draft<R> {
    /// Makes a retried call return the first call's result (keys are the
    /// actor's own; the same key with other arguments is
    /// `idempotency_conflict`).
    pub fn idempotency_key(self, key: impl AsRef<str>) -> Draft<R> {
        self.set(|r| {
            *r.key_slot() = Some(id("idempotency_key", key)?);
            Ok(())
        })
    }
}

macro_rules! keyed {
    ($($t:ty),* $(,)?) => {$(
        impl Keyed for $t {
            fn key_slot(&mut self) -> &mut Option<Id> {
                &mut self.idempotency_key
            }
        }
    )*};
}

keyed!(
    SettleLanding,
    Enqueue,
    RemoveFromQueue,
    RunQueue,
    ConfigureWorkspace,
    RegisterAgent,
    CreateTask,
    CreateProposal,
    AttachPatch,
    RebaseProposal,
    RequestReview,
    Withdraw,
    Reject,
    CastVote,
    RecordDecision,
    RecordSecurityReview,
    RequestApproval,
    Approve,
    RecordTest,
    AcquireClaim,
    RenewClaim,
    ReleaseClaim,
    SetPolicy,
    ActivatePolicy,
    ApplyRevision,
    Rollback,
    RevertProposal,
    RevertAgent,
);

/// A setter of an optional field decoded like its JSON.
macro_rules! setter {
    ($(#[$doc:meta])* $name:ident: $arg:ty => $field:ident) => {
        $(#[$doc])*
        pub fn $name(self, value: $arg) -> Self {
            self.set(|r| {
                r.$field = Some(field(stringify!($field), value)?);
                Ok(())
            })
        }
    };
}

/// Paging setters for a list request.
macro_rules! paged {
    ($($t:ty),* $(,)?) => {$(
        impl Draft<$t> {
            setter!(
                /// At most this many records in the page.
                limit: u32 => limit
            );

            /// Continue after the page that returned this `next_cursor`.
            pub fn cursor(self, cursor: Cursor) -> Self {
                self.set(|r| {
                    r.cursor = Some(cursor);
                    Ok(())
                })
            }
        }
    )*};
}

paged!(
    ListQueue,
    ListClaims,
    ListVotes,
    ListProposals,
    ProposalDiff,
    ListTransactions,
    ListAgents,
    ListTasks,
    ListTests,
    ListInbox,
);

// ---------------------------------------------------------------------------
// Constructors and setters.

impl RegisterAgent {
    /// Register (or update) agent `agent_id`, with no roles until
    /// [`roles`](Draft::roles) gives some.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(agent_id: impl AsRef<str>) -> Draft<RegisterAgent> {
        Draft::of(|| {
            Ok(RegisterAgent {
                agent_id: id("agent_id", agent_id)?,
                roles: Vec::new(),
                enabled: None,
                display_name: None,
                model_id: None,
                session_url: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<RegisterAgent> {
    /// Its roles (`author`, `reviewer`, `security`…).
    pub fn roles<S: AsRef<str>>(self, roles: impl IntoIterator<Item = S>) -> Self {
        self.set(|r| {
            let roles: Vec<String> = roles.into_iter().map(|s| s.as_ref().to_owned()).collect();
            r.roles = field("roles", roles)?;
            Ok(())
        })
    }

    setter!(
        /// Whether it may act (`false` disables it).
        enabled: bool => enabled
    );
    setter!(
        /// A name for people.
        display_name: &str => display_name
    );
    setter!(
        /// Its model (`provider/model`).
        model_id: &str => model_id
    );
    setter!(
        /// A link to its session or conversation.
        session_url: &str => session_url
    );
}

impl GetAgent {
    /// Agent `agent_id`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(agent_id: impl AsRef<str>) -> Draft<GetAgent> {
        Draft::of(|| {
            Ok(GetAgent {
                agent_id: id("agent_id", agent_id)?,
            })
        })
    }
}

impl ListAgents {
    /// Every agent, a page at a time.
    pub fn all() -> Draft<ListAgents> {
        Draft::from(ListAgents {
            role: None,
            enabled: None,
            limit: None,
            cursor: None,
        })
    }
}

impl Draft<ListAgents> {
    setter!(
        /// Only agents holding this role.
        role: &str => role
    );
    setter!(
        /// Only enabled (`true`) or disabled (`false`) agents.
        enabled: bool => enabled
    );
}

impl GetTask {
    /// Task `task_id`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(task_id: impl AsRef<str>) -> Draft<GetTask> {
        Draft::of(|| {
            Ok(GetTask {
                task_id: id("task_id", task_id)?,
            })
        })
    }
}

impl ConfigureWorkspace {
    /// Land applied revisions as `landing` says.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(landing: crate::model::Landing) -> Draft<ConfigureWorkspace> {
        Draft::from(ConfigureWorkspace {
            landing,
            idempotency_key: None,
        })
    }
}

impl GetWorkspace {
    /// The workspace's settings.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> Draft<GetWorkspace> {
        Draft::from(GetWorkspace {})
    }
}

impl ListTasks {
    /// Every task, a page at a time.
    pub fn all() -> Draft<ListTasks> {
        Draft::from(ListTasks {
            limit: None,
            cursor: None,
        })
    }
}

impl CreateTask {
    /// Create task `task_id` titled `title`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(task_id: impl AsRef<str>, title: &str) -> Draft<CreateTask> {
        Draft::of(|| {
            Ok(CreateTask {
                task_id: Some(id("task_id", task_id)?),
                title: field("title", title)?,
                summary_md: None,
                idempotency_key: None,
            })
        })
    }

    /// Create a task titled `title` with a generated id.
    pub fn titled(title: &str) -> Draft<CreateTask> {
        Draft::of(|| {
            Ok(CreateTask {
                task_id: None,
                title: field("title", title)?,
                summary_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<CreateTask> {
    setter!(
        /// What it is about (Markdown).
        summary_md: &str => summary_md
    );
}

impl CreateProposal {
    fn with_change(
        task_id: impl AsRef<str>,
        title: &str,
        summary_md: &str,
        patch: Option<&str>,
        edit_plan: Option<serde_json::Value>,
    ) -> Draft<CreateProposal> {
        Draft::of(|| {
            Ok(CreateProposal {
                task_id: id("task_id", task_id)?,
                title: field("title", title)?,
                summary_md: field("summary_md", summary_md)?,
                risk: None,
                patch: patch.map(|p| field("patch", p)).transpose()?,
                patch_base64: None,
                patch_format: None,
                edit_plan: edit_plan.map(|p| field("edit_plan", p)).transpose()?,
                strip: None,
                affected_resources: None,
                idempotency_key: None,
            })
        })
    }

    /// A proposal of a diff given as bytes (`patch_base64`): one that is
    /// not UTF-8 lands byte for byte.
    pub fn patch_bytes(
        task_id: impl AsRef<str>,
        title: &str,
        summary_md: &str,
        patch: &[u8],
    ) -> Draft<CreateProposal> {
        CreateProposal::with_change(task_id, title, summary_md, None, None).set(|r| {
            r.patch_base64 = Some(crate::operations::args::PatchBytes(patch.to_vec()));
            Ok(())
        })
    }

    /// A proposal of a unified or git diff.
    pub fn patch(
        task_id: impl AsRef<str>,
        title: &str,
        summary_md: &str,
        patch: &str,
    ) -> Draft<CreateProposal> {
        CreateProposal::with_change(task_id, title, summary_md, Some(patch), None)
    }

    /// A proposal of an Opcore edit plan (`{status, changes[], blobs?}`).
    pub fn edit_plan(
        task_id: impl AsRef<str>,
        title: &str,
        summary_md: &str,
        plan: serde_json::Value,
    ) -> Draft<CreateProposal> {
        CreateProposal::with_change(task_id, title, summary_md, None, Some(plan))
    }
}

/// `affected_resources` decoded from resource ids.
fn resources<S: AsRef<str>>(
    ids: impl IntoIterator<Item = S>,
) -> Result<Vec<crate::operations::args::ResourceId>, ToolError> {
    let ids: Vec<String> = ids.into_iter().map(|s| s.as_ref().to_owned()).collect();
    field("affected_resources", ids)
}

impl Draft<CreateProposal> {
    /// The resources the change touches, as the author declares them
    /// (`file:a.py`, `symbol:a.py#f`).
    pub fn resources<S: AsRef<str>>(self, ids: impl IntoIterator<Item = S>) -> Self {
        self.set(|r| {
            r.affected_resources = Some(resources(ids)?);
            Ok(())
        })
    }

    /// How to read the patch text: a unified diff (the default), a Codex
    /// envelope or SEARCH/REPLACE blocks.
    pub fn patch_format(self, format: crate::operations::args::PatchFormat) -> Self {
        self.set(|r| {
            r.patch_format = Some(format);
            Ok(())
        })
    }

    /// How many leading components to remove from the diff's file names
    /// (`-p`, default 1; 0 for `git diff --no-prefix`).
    pub fn strip(self, strip: u8) -> Self {
        self.set(|r| {
            r.strip = Some(field("strip", strip)?);
            Ok(())
        })
    }

    /// Its risk (default `normal`).
    pub fn risk(self, risk: Risk) -> Self {
        self.set(|r| {
            r.risk = Some(risk);
            Ok(())
        })
    }
}

impl AttachPatch {
    /// A new revision of `proposal_id` from a diff, replacing revision
    /// `expected_revision` (the latest, else `conflict`).
    pub fn patch(
        proposal_id: impl AsRef<str>,
        expected_revision: u32,
        patch: &str,
    ) -> Draft<AttachPatch> {
        AttachPatch::with_change(proposal_id, expected_revision, Some(patch), None)
    }

    /// A new revision from an Opcore edit plan.
    pub fn edit_plan(
        proposal_id: impl AsRef<str>,
        expected_revision: u32,
        plan: serde_json::Value,
    ) -> Draft<AttachPatch> {
        AttachPatch::with_change(proposal_id, expected_revision, None, Some(plan))
    }

    /// A new revision from a diff given as bytes (`patch_base64`).
    pub fn patch_bytes(
        proposal_id: impl AsRef<str>,
        expected_revision: u32,
        patch: &[u8],
    ) -> Draft<AttachPatch> {
        AttachPatch::with_change(proposal_id, expected_revision, None, None).set(|r| {
            r.patch_base64 = Some(crate::operations::args::PatchBytes(patch.to_vec()));
            Ok(())
        })
    }

    fn with_change(
        proposal_id: impl AsRef<str>,
        expected_revision: u32,
        patch: Option<&str>,
        edit_plan: Option<serde_json::Value>,
    ) -> Draft<AttachPatch> {
        Draft::of(|| {
            Ok(AttachPatch {
                proposal_id: id("proposal_id", proposal_id)?,
                expected_revision: field("expected_revision", expected_revision)?,
                patch: patch.map(|p| field("patch", p)).transpose()?,
                patch_base64: None,
                patch_format: None,
                edit_plan: edit_plan.map(|p| field("edit_plan", p)).transpose()?,
                strip: None,
                affected_resources: None,
                note_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl RebaseProposal {
    /// Rebase revision `expected_revision` (the latest, else `conflict`)
    /// of `proposal_id` onto the current files.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, expected_revision: u32) -> Draft<RebaseProposal> {
        Draft::of(|| {
            Ok(RebaseProposal {
                proposal_id: id("proposal_id", proposal_id)?,
                expected_revision: field("expected_revision", expected_revision)?,
                note_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<RebaseProposal> {
    setter!(
        /// A note for reviewers (Markdown).
        note_md: &str => note_md
    );
}

impl Draft<AttachPatch> {
    /// How to read the patch text: a unified diff (the default), a Codex
    /// envelope or SEARCH/REPLACE blocks.
    pub fn patch_format(self, format: crate::operations::args::PatchFormat) -> Self {
        self.set(|r| {
            r.patch_format = Some(format);
            Ok(())
        })
    }

    /// How many leading components to remove from the diff's file names
    /// (`-p`, default 1; 0 for `git diff --no-prefix`).
    pub fn strip(self, strip: u8) -> Self {
        self.set(|r| {
            r.strip = Some(field("strip", strip)?);
            Ok(())
        })
    }

    /// The resources the new revision touches.
    pub fn resources<S: AsRef<str>>(self, ids: impl IntoIterator<Item = S>) -> Self {
        self.set(|r| {
            r.affected_resources = Some(resources(ids)?);
            Ok(())
        })
    }

    setter!(
        /// What changed since the last revision (Markdown).
        note_md: &str => note_md
    );
}

/// A constructor for a request that names a proposal and nothing else
/// required; its other fields start empty.
macro_rules! of_proposal {
    ($(#[$doc:meta])* $t:ident { $($rest:ident),* }) => {
        impl $t {
            $(#[$doc])*
            #[allow(clippy::new_ret_no_self)]
            pub fn new(proposal_id: impl AsRef<str>) -> Draft<$t> {
                Draft::of(|| {
                    Ok($t {
                        proposal_id: id("proposal_id", proposal_id)?,
                        $($rest: None,)*
                    })
                })
            }
        }
    };
}

/// A setter for the optional `revision` (default: the latest).
macro_rules! at_revision {
    ($($t:ty),* $(,)?) => {$(
        impl Draft<$t> {
            setter!(
                /// The revision (default: the latest).
                revision: u32 => revision
            );
        }
    )*};
}

of_proposal!(
    /// Proposal `proposal_id`, its latest revision.
    GetProposal { revision, include_content }
);
of_proposal!(
    /// The files of a proposal's revision.
    ProposalFiles { revision }
);
of_proposal!(
    /// The symbols a proposal's revision touches.
    ProposalSymbols { revision, paths }
);
of_proposal!(
    /// The diff of a proposal's revision, a page of files at a time.
    ProposalDiff { revision, limit, cursor, paths }
);
of_proposal!(
    /// Validate a proposal's revision against every gate.
    Validate { revision }
);
of_proposal!(
    /// Ask for review of a proposal.
    RequestReview { idempotency_key }
);
of_proposal!(
    /// Withdraw a proposal.
    Withdraw { reason_md, idempotency_key }
);
of_proposal!(
    /// The votes on a proposal.
    ListVotes { revision, limit, cursor }
);
of_proposal!(
    /// The test and check results of a proposal, with their notes.
    ListTests { revision, name, limit, cursor }
);
of_proposal!(
    /// Propose reverting applied proposal `proposal_id` (the caller becomes
    /// the revert's author).
    RevertProposal { task_id, title, summary_md, risk, affected_resources, idempotency_key }
);
at_revision!(
    GetProposal,
    ProposalFiles,
    ProposalSymbols,
    ProposalDiff,
    Validate,
    ListVotes,
    ListTests
);

impl Draft<ProposalSymbols> {
    /// Only these files, each named by its new or its old path (only they
    /// are parsed); a path the revision does not touch is simply absent.
    pub fn paths<S: AsRef<str>>(self, paths: impl IntoIterator<Item = S>) -> Self {
        self.set(|r| {
            let paths: Vec<String> = paths.into_iter().map(|s| s.as_ref().to_owned()).collect();
            r.paths = Some(field("paths", paths)?);
            Ok(())
        })
    }
}

impl Draft<ProposalDiff> {
    /// Only these files' sections, each named by its new or its old path;
    /// a path the revision does not touch is simply absent.
    pub fn paths<S: AsRef<str>>(self, paths: impl IntoIterator<Item = S>) -> Self {
        self.set(|r| {
            let paths: Vec<String> = paths.into_iter().map(|s| s.as_ref().to_owned()).collect();
            r.paths = Some(field("paths", paths)?);
            Ok(())
        })
    }
}

impl Draft<ListTests> {
    setter!(
        /// Only results of this check.
        name: &str => name
    );
}

impl Draft<RevertProposal> {
    setter!(
        /// The revert's task (default: the reverted proposal's).
        task_id: &str => task_id
    );
    setter!(
        /// Its title (default: `Revert "<title>"`).
        title: &str => title
    );
    setter!(
        /// Why (Markdown; default: what it reverts).
        summary_md: &str => summary_md
    );

    /// Its risk (default: the reverted proposal's).
    pub fn risk(self, risk: Risk) -> Self {
        self.set(|r| {
            r.risk = Some(risk);
            Ok(())
        })
    }
}

impl RevertAgent {
    /// Undo what agent `agent_id` landed at or after `since`, as one
    /// proposal authored by the agent `author_agent_id`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        agent_id: impl AsRef<str>,
        since: crate::clock::Timestamp,
        author_agent_id: impl AsRef<str>,
    ) -> Draft<RevertAgent> {
        Draft::of(|| {
            Ok(RevertAgent {
                agent_id: id("agent_id", agent_id)?,
                since,
                author_agent_id: id("author_agent_id", author_agent_id)?,
                task_id: None,
                title: None,
                risk: None,
                disable: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<RevertAgent> {
    setter!(
        /// The undo's task (default: the newest reverted proposal's).
        task_id: &str => task_id
    );
    setter!(
        /// Its title.
        title: &str => title
    );

    /// Its risk (never below the highest reverted one).
    pub fn risk(self, risk: Risk) -> Self {
        self.set(|r| {
            r.risk = Some(risk);
            Ok(())
        })
    }

    /// Also disable the agent, in the same store transaction.
    pub fn disable(self, disable: bool) -> Self {
        self.set(|r| {
            r.disable = Some(disable);
            Ok(())
        })
    }
}

impl GetTest {
    /// Test result `test_result_id`, with its note.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(test_result_id: impl AsRef<str>) -> Draft<GetTest> {
        Draft::of(|| {
            Ok(GetTest {
                test_result_id: id("test_result_id", test_result_id)?,
            })
        })
    }
}

impl ListInbox {
    /// What waits on the caller, a page of open proposals at a time.
    pub fn all() -> Draft<ListInbox> {
        Draft::from(ListInbox {
            limit: None,
            cursor: None,
        })
    }
}

impl WaitInbox {
    /// Wait for what waits on the caller now or next (no cursor: returns
    /// at once when anything does), for at most the default 30 s.
    pub fn now() -> Draft<WaitInbox> {
        Draft::from(WaitInbox {
            after: None,
            timeout_ms: None,
            limit: None,
        })
    }

    /// Wait for what is new or changed since the result that returned
    /// `cursor`.
    pub fn after(cursor: Cursor) -> Draft<WaitInbox> {
        Draft::from(WaitInbox {
            after: Some(cursor),
            timeout_ms: None,
            limit: None,
        })
    }
}

impl Draft<WaitInbox> {
    setter!(
        /// Wait at most this many milliseconds (0 to 600000).
        timeout_ms: u32 => timeout_ms
    );
    setter!(
        /// At most this many items per result (1 to 100).
        limit: u32 => limit
    );
}

impl Draft<GetProposal> {
    setter!(
        /// Include each revision's patch or plan text.
        include_content: bool => include_content
    );
}

impl Draft<Withdraw> {
    setter!(
        /// Why (Markdown).
        reason_md: &str => reason_md
    );
}

impl GetProposalStatus {
    /// What proposal `proposal_id` waits for.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>) -> Draft<GetProposalStatus> {
        Draft::of(|| {
            Ok(GetProposalStatus {
                proposal_id: id("proposal_id", proposal_id)?,
            })
        })
    }
}

impl CompareRevisions {
    /// What changed between two revisions of a proposal.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, from: u32, to: u32) -> Draft<CompareRevisions> {
        Draft::of(|| {
            Ok(CompareRevisions {
                proposal_id: id("proposal_id", proposal_id)?,
                from_revision: field("from_revision", from)?,
                to_revision: field("to_revision", to)?,
            })
        })
    }
}

of_proposal!(
    /// Put proposal `proposal_id` in the landing queue.
    Enqueue { idempotency_key }
);

impl RemoveFromQueue {
    /// Take proposal `proposal_id` out of the landing queue, saying why.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, reason: &str) -> Draft<RemoveFromQueue> {
        Draft::of(|| {
            Ok(RemoveFromQueue {
                proposal_id: id("proposal_id", proposal_id)?,
                reason: field("reason", reason)?,
                idempotency_key: None,
            })
        })
    }
}

impl ListQueue {
    /// The queued entries in order, a page at a time.
    pub fn all() -> Draft<ListQueue> {
        Draft::from(ListQueue {
            status: None,
            limit: None,
            cursor: None,
        })
    }
}

impl Draft<ListQueue> {
    /// Only entries with this status (default `queued`).
    pub fn status(self, status: QueueStatus) -> Self {
        self.set(|r| {
            r.status = Some(status);
            Ok(())
        })
    }
}

impl RunQueue {
    /// Land the landing queue until it is empty or a round changes nothing.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> Draft<RunQueue> {
        Draft::from(RunQueue {
            max_rounds: None,
            idempotency_key: None,
        })
    }
}

impl Draft<RunQueue> {
    setter!(
        /// The most rounds to run (1 to 1000; default 100).
        max_rounds: u32 => max_rounds
    );
}

impl Reject {
    /// Reject a proposal, saying why (Markdown).
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, reason_md: &str) -> Draft<Reject> {
        Draft::of(|| {
            Ok(Reject {
                proposal_id: id("proposal_id", proposal_id)?,
                reason_md: field("reason_md", reason_md)?,
                idempotency_key: None,
            })
        })
    }
}

impl ListProposals {
    /// Every proposal, a page at a time (newest first).
    pub fn all() -> Draft<ListProposals> {
        Draft::from(ListProposals {
            task_id: None,
            status: None,
            author: None,
            limit: None,
            cursor: None,
        })
    }
}

impl Draft<ListProposals> {
    setter!(
        /// Only this task's proposals.
        task_id: &str => task_id
    );
    setter!(
        /// Only proposals by this agent.
        author: &str => author
    );

    /// Only proposals with this status.
    pub fn status(self, status: ProposalStatus) -> Self {
        self.set(|r| {
            r.status = Some(status);
            Ok(())
        })
    }
}

impl CastVote {
    /// A vote on a revision.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, revision: u32, vote: VoteValue) -> Draft<CastVote> {
        Draft::of(|| {
            Ok(CastVote {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                vote,
                reason_md: None,
                idempotency_key: None,
            })
        })
    }

    /// An approving vote on a revision.
    pub fn approve(proposal_id: impl AsRef<str>, revision: u32) -> Draft<CastVote> {
        CastVote::new(proposal_id, revision, VoteValue::Approve)
    }

    /// A vote asking for another revision.
    pub fn revise(proposal_id: impl AsRef<str>, revision: u32) -> Draft<CastVote> {
        CastVote::new(proposal_id, revision, VoteValue::Revise)
    }

    /// A vote against the change.
    pub fn reject(proposal_id: impl AsRef<str>, revision: u32) -> Draft<CastVote> {
        CastVote::new(proposal_id, revision, VoteValue::Reject)
    }
}

impl Draft<CastVote> {
    setter!(
        /// Why (Markdown).
        reason: &str => reason_md
    );
}

impl RecordDecision {
    /// An orchestrator's decision on a revision, with its reason.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        proposal_id: impl AsRef<str>,
        revision: u32,
        decision: DecisionValue,
        reason_md: &str,
    ) -> Draft<RecordDecision> {
        Draft::of(|| {
            Ok(RecordDecision {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                decision,
                reason_md: field("reason_md", reason_md)?,
                idempotency_key: None,
            })
        })
    }
}

impl RecordSecurityReview {
    /// A security reviewer's verdict on a revision.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        proposal_id: impl AsRef<str>,
        revision: u32,
        verdict: Verdict,
    ) -> Draft<RecordSecurityReview> {
        Draft::of(|| {
            Ok(RecordSecurityReview {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                verdict,
                note_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl RequestApproval {
    /// Ask a person to approve a revision.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, revision: u32) -> Draft<RequestApproval> {
        Draft::of(|| {
            Ok(RequestApproval {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                reason_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl Approve {
    /// A person's approval of a revision.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, revision: u32) -> Draft<Approve> {
        Draft::of(|| {
            Ok(Approve {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                request_id: None,
                note_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl RecordTest {
    /// A test result for a revision.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(
        proposal_id: impl AsRef<str>,
        revision: u32,
        name: &str,
        status: TestStatus,
    ) -> Draft<RecordTest> {
        Draft::of(|| {
            Ok(RecordTest {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                name: field("name", name)?,
                status,
                duration_ms: None,
                note_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<RecordSecurityReview> {
    setter!(
        /// What the reviewer found (Markdown).
        note_md: &str => note_md
    );
}

impl Draft<RequestApproval> {
    setter!(
        /// Why a person must look (Markdown).
        reason_md: &str => reason_md
    );
}

impl Draft<Approve> {
    setter!(
        /// The approval request this answers.
        request_id: &str => request_id
    );
    setter!(
        /// A note (Markdown).
        note_md: &str => note_md
    );
}

impl Draft<RecordTest> {
    setter!(
        /// How long it ran.
        duration_ms: u64 => duration_ms
    );
    setter!(
        /// Its output or a note (Markdown).
        note_md: &str => note_md
    );
}

impl AcquireClaim {
    /// A claim of `claim_type` on `resource` for `ttl_s` seconds.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(resource: Resource, claim_type: ClaimType, ttl_s: u32) -> Draft<AcquireClaim> {
        Draft::of(|| {
            Ok(AcquireClaim {
                resource_id: crate::operations::args::ResourceId(resource),
                claim_type,
                ttl_s: field("ttl_s", ttl_s)?,
                task_id: None,
                wait_ms: None,
                idempotency_key: None,
            })
        })
    }

    /// A write claim: exclusive among agents.
    pub fn write(resource: Resource, ttl_s: u32) -> Draft<AcquireClaim> {
        AcquireClaim::new(resource, ClaimType::Write, ttl_s)
    }

    /// A read claim: shared; records the digest it read.
    pub fn read(resource: Resource, ttl_s: u32) -> Draft<AcquireClaim> {
        AcquireClaim::new(resource, ClaimType::Read, ttl_s)
    }
}

impl Draft<AcquireClaim> {
    setter!(
        /// The task it is for.
        task_id: &str => task_id
    );
    setter!(
        /// Wait up to this many milliseconds (at most 60000) for another
        /// agent's conflicting claim to be released or to expire.
        wait_ms: u32 => wait_ms
    );
}

impl RenewClaim {
    /// Extend a live claim to `ttl_s` seconds from now.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(claim_id: impl AsRef<str>, ttl_s: u32) -> Draft<RenewClaim> {
        Draft::of(|| {
            Ok(RenewClaim {
                claim_id: id("claim_id", claim_id)?,
                ttl_s: field("ttl_s", ttl_s)?,
                idempotency_key: None,
            })
        })
    }
}

impl ReleaseClaim {
    /// Release a claim.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(claim_id: impl AsRef<str>) -> Draft<ReleaseClaim> {
        Draft::of(|| {
            Ok(ReleaseClaim {
                claim_id: id("claim_id", claim_id)?,
                idempotency_key: None,
            })
        })
    }
}

impl ListClaims {
    /// Every claim, a page at a time.
    pub fn all() -> Draft<ListClaims> {
        Draft::from(ListClaims {
            agent_id: None,
            resource_id: None,
            status: None,
            limit: None,
            cursor: None,
        })
    }
}

impl Draft<ListClaims> {
    setter!(
        /// Only this agent's claims.
        agent_id: &str => agent_id
    );
    setter!(
        /// Only claims on this resource id.
        resource_id: &str => resource_id
    );

    /// Only claims with this status.
    pub fn status(self, status: ClaimStatus) -> Self {
        self.set(|r| {
            r.status = Some(status);
            Ok(())
        })
    }
}

impl SetPolicy {
    /// Store a new policy version (TOML); it is not active until
    /// [`ActivatePolicy`].
    #[allow(clippy::new_ret_no_self)]
    pub fn new(document: &str) -> Draft<SetPolicy> {
        Draft::of(|| {
            Ok(SetPolicy {
                document: field("document", document)?,
                note_md: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<SetPolicy> {
    setter!(
        /// What changed (Markdown).
        note_md: &str => note_md
    );
}

impl ActivatePolicy {
    /// Make policy `version` the active one.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(version: u32) -> Draft<ActivatePolicy> {
        Draft::of(|| {
            Ok(ActivatePolicy {
                version: field("version", version)?,
                idempotency_key: None,
            })
        })
    }
}

impl GetPolicy {
    /// The active policy.
    pub fn active() -> Draft<GetPolicy> {
        Draft::from(GetPolicy { version: None })
    }

    /// Policy `version`.
    pub fn version(version: u32) -> Draft<GetPolicy> {
        Draft::of(|| {
            Ok(GetPolicy {
                version: Some(field("version", version)?),
            })
        })
    }
}

impl ApplyRevision {
    /// Apply revision `revision` of `proposal_id`.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(proposal_id: impl AsRef<str>, revision: u32) -> Draft<ApplyRevision> {
        Draft::of(|| {
            Ok(ApplyRevision {
                proposal_id: id("proposal_id", proposal_id)?,
                revision: field("revision", revision)?,
                transaction_id: None,
                rebase: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<ApplyRevision> {
    setter!(
        /// Rebase a stale revision first, when the rebase is trivial.
        rebase: bool => rebase
    );

    setter!(
        /// The new transaction's id (generated when absent).
        transaction_id: &str => transaction_id
    );
}

/// A constructor for a request that names a transaction.
macro_rules! of_transaction {
    ($(#[$doc:meta])* $t:ident $({ $($rest:ident),* })?) => {
        impl $t {
            $(#[$doc])*
            #[allow(clippy::new_ret_no_self)]
            pub fn new(transaction_id: impl AsRef<str>) -> Draft<$t> {
                Draft::of(|| {
                    Ok($t {
                        transaction_id: id("transaction_id", transaction_id)?,
                        $($($rest: None,)*)?
                    })
                })
            }
        }
    };
}

of_transaction!(
    /// Roll back an applied transaction.
    Rollback { idempotency_key }
);
of_transaction!(
    /// A transaction and its journal.
    GetTransaction
);
of_transaction!(
    /// A transaction's phases.
    ListPhases
);
of_transaction!(
    /// What recovery would do with a transaction.
    CheckRecovery
);

impl ListTransactions {
    /// Every transaction, a page at a time.
    pub fn all() -> Draft<ListTransactions> {
        Draft::from(ListTransactions {
            proposal_id: None,
            status: None,
            limit: None,
            cursor: None,
        })
    }
}

impl Draft<ListTransactions> {
    setter!(
        /// Only this proposal's transactions.
        proposal_id: &str => proposal_id
    );
}

impl LandingLog {
    /// The newest landed commits (at most 20 unless [`limit`] says).
    ///
    /// [`limit`]: Draft::limit
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> Draft<LandingLog> {
        Draft::from(LandingLog { limit: None })
    }
}

impl BlameFile {
    /// Blame `path` at the tip of the landing branch.
    #[allow(clippy::new_ret_no_self)]
    pub fn new(path: impl AsRef<str>) -> Draft<BlameFile> {
        let path = path.as_ref().to_owned();
        Draft::of(move || {
            crate::RepoPath::from_bytes(path.as_bytes())
                .map(|p| BlameFile {
                    path: crate::operations::args::PathArg(p),
                })
                .map_err(|e| ToolError::invalid_argument("path", e))
        })
    }
}

impl SettleLanding {
    /// Settle transaction `transaction_id`, left `applying` by another
    /// clone, once it has been applying for 30 s (unless
    /// [`stale_after_ms`] says).
    ///
    /// [`stale_after_ms`]: Draft::stale_after_ms
    #[allow(clippy::new_ret_no_self)]
    pub fn new(transaction_id: impl AsRef<str>) -> Draft<SettleLanding> {
        Draft::of(|| {
            Ok(SettleLanding {
                transaction_id: id("transaction_id", transaction_id)?,
                stale_after_ms: None,
                idempotency_key: None,
            })
        })
    }
}

impl Draft<SettleLanding> {
    setter!(
        /// Judge it abandoned once it has been applying this long (1000 to
        /// 3600000 ms).
        stale_after_ms: u64 => stale_after_ms
    );
}

impl VerifyProvenance {
    /// Verify the landing branch's whole history.
    #[allow(clippy::new_ret_no_self)]
    pub fn new() -> Draft<VerifyProvenance> {
        Draft::from(VerifyProvenance::default())
    }
}

impl Draft<VerifyProvenance> {
    setter!(
        /// Verify this branch instead.
        branch: &str => branch
    );
    setter!(
        /// Only the commits after this one.
        since: &str => since
    );
}

impl Draft<LandingLog> {
    setter!(
        /// At most this many commits (1 to 1000).
        limit: u32 => limit
    );
}

impl ListEvents {
    /// The events after `seq` (0: from the start), oldest first.
    pub fn since(seq: u64) -> Draft<ListEvents> {
        Draft::from(ListEvents {
            since_seq: Some(seq),
            proposal_id: None,
            limit: None,
        })
    }
}

impl Draft<ListEvents> {
    setter!(
        /// Only this proposal's events.
        proposal_id: &str => proposal_id
    );
    setter!(
        /// At most this many events.
        limit: u32 => limit
    );
}

impl WaitEvents {
    /// Wait for the events after `seq` (any kind, by anyone), for at most
    /// the default 30 s.
    pub fn since(seq: u64) -> Draft<WaitEvents> {
        Draft::from(WaitEvents {
            since_seq: seq,
            proposal_id: None,
            kinds: None,
            actor: None,
            limit: None,
            timeout_ms: None,
        })
    }
}

impl Draft<WaitEvents> {
    setter!(
        /// Only this proposal's events.
        proposal_id: &str => proposal_id
    );
    setter!(
        /// At most this many events.
        limit: u32 => limit
    );
    setter!(
        /// Wait at most this many milliseconds (0 to 60000).
        timeout_ms: u32 => timeout_ms
    );

    /// Only events of these kinds.
    pub fn kinds(self, kinds: impl IntoIterator<Item = EventKind>) -> Self {
        self.set(|r| {
            r.kinds = Some(kinds.into_iter().collect());
            Ok(())
        })
    }

    /// Only events this actor caused.
    pub fn actor(self, actor: Actor) -> Self {
        self.set(|r| {
            r.actor = Some(actor);
            Ok(())
        })
    }
}

impl VerifyEvents {
    /// Verify the whole log.
    pub fn all() -> Draft<VerifyEvents> {
        Draft::from(VerifyEvents {
            expected_head: None,
        })
    }

    /// Verify the log and that it still holds `head`, recorded earlier.
    pub fn with_head(head: ChainHead) -> Draft<VerifyEvents> {
        Draft::from(VerifyEvents {
            expected_head: Some(head),
        })
    }
}

// ---------------------------------------------------------------------------
// The noun groups.

/// One method per tool of a noun group.
macro_rules! methods {
    ($group:ident { $($(#[$doc:meta])* $name:ident($req:ty) -> $out:ty;)* }) => {
        impl $group<'_, '_> {
            $(
                $(#[$doc])*
                pub fn $name(&self, request: impl Into<Draft<$req>>) -> Result<$out, ToolError> {
                    self.0.run(request)
                }
            )*
        }
    };
}

/// [`Session::setup`].
#[derive(Debug, Clone, Copy)]
pub struct SetupApi<'s, 'e>(&'s Session<'e>);

methods!(SetupApi {
    /// `agent.register`: register an agent, or change its roles.
    register_agent(RegisterAgent) -> AgentRegistered;
    /// `task.create`: create a task proposals belong to.
    create_task(CreateTask) -> TaskCreated;
    /// `agent.get`: one agent.
    get_agent(GetAgent) -> AgentDetail;
    /// `agent.list`: agents, a page at a time.
    list_agents(ListAgents) -> AgentPage;
    /// `task.get`: one task.
    get_task(GetTask) -> TaskDetail;
    /// `task.list`: tasks, a page at a time.
    list_tasks(ListTasks) -> TaskPage;
    /// `workspace.configure`: how `patch.apply` lands.
    configure_workspace(ConfigureWorkspace) -> WorkspaceSettings;
    /// `workspace.get`: the workspace's settings.
    workspace(GetWorkspace) -> WorkspaceSettings;
});

/// [`Session::proposals`].
#[derive(Debug, Clone, Copy)]
pub struct ProposalsApi<'s, 'e>(&'s Session<'e>);

methods!(ProposalsApi {
    /// `proposal.create`: a new proposal with its first revision.
    create(CreateProposal) -> ProposalRevised;
    /// `proposal.attach_patch`: a new revision of a proposal.
    attach_patch(AttachPatch) -> ProposalRevised;
    /// `proposal.rebase`: a new revision merging the latest one's change
    /// onto the current files.
    rebase(RebaseProposal) -> ProposalRevised;
    /// `proposal.get`: a proposal with its revisions.
    get(GetProposal) -> ProposalDetail;
    /// `proposal.list`: proposals, a page at a time.
    list(ListProposals) -> ProposalPage;
    /// `proposal.files`: the files a revision changes.
    files(ProposalFiles) -> Files;
    /// `proposal.diff`: a revision's diff, a page of files at a time.
    diff(ProposalDiff) -> DiffPage;
    /// `proposal.symbols`: the symbols a revision touches.
    symbols(ProposalSymbols) -> Symbols;
    /// `proposal.compare`: what changed between two revisions.
    compare(CompareRevisions) -> Interdiff;
    /// `proposal.status`: every gate of the latest revision and what it
    /// waits for.
    status(GetProposalStatus) -> StatusReport;
    /// `proposal.request_review`: ask reviewers to vote.
    request_review(RequestReview) -> ReviewRequested;
    /// `proposal.withdraw`: withdraw a proposal.
    withdraw(Withdraw) -> ProposalChanged;
    /// `patch.reject`: reject a proposal.
    reject(Reject) -> Rejected;
    /// `proposal.revert`: a new proposal inverting an applied one.
    revert(RevertProposal) -> ProposalRevised;
    /// `proposal.revert_agent`: one proposal undoing what an agent landed
    /// since a point in time.
    revert_agent(RevertAgent) -> AgentReverted;
    /// `inbox.list`: what waits on the caller.
    inbox(ListInbox) -> InboxPage;
    /// `inbox.wait`: block until something new waits on the caller, or
    /// the timeout passes.
    inbox_wait(WaitInbox) -> InboxWait;
});

/// [`Session::evidence`].
#[derive(Debug, Clone, Copy)]
pub struct EvidenceApi<'s, 'e>(&'s Session<'e>);

methods!(EvidenceApi {
    /// `vote.cast`: a reviewer's vote on a revision.
    vote(CastVote) -> VoteRecorded;
    /// `vote.list`: the votes on a proposal.
    votes(ListVotes) -> VotePage;
    /// `decision.record`: an orchestrator's decision.
    record_decision(RecordDecision) -> DecisionRecorded;
    /// `security.review`: a security reviewer's verdict.
    security_review(RecordSecurityReview) -> SecurityReviewed;
    /// `human.request_approval`: ask a person to approve.
    request_approval(RequestApproval) -> ApprovalRequested;
    /// `human.approve`: a person's approval.
    approve(Approve) -> Approved;
    /// `test.record`: a test result.
    record_test(RecordTest) -> TestRecorded;
    /// `test.list`: a proposal's test results with their notes.
    tests(ListTests) -> TestPage;
    /// `test.get`: one test result with its note.
    test(GetTest) -> TestDetail;
});

/// [`Session::claims`].
#[derive(Debug, Clone, Copy)]
pub struct ClaimsApi<'s, 'e>(&'s Session<'e>);

methods!(ClaimsApi {
    /// `claim.acquire`: claim a file, directory or symbol.
    acquire(AcquireClaim) -> ClaimChanged;
    /// `claim.renew`: extend a live claim.
    renew(RenewClaim) -> ClaimChanged;
    /// `claim.release`: release a claim.
    release(ReleaseClaim) -> ClaimChanged;
    /// `claim.list`: claims, a page at a time.
    list(ListClaims) -> ClaimPage;
});

/// [`Session::validation`].
#[derive(Debug, Clone, Copy)]
pub struct ValidationApi<'s, 'e>(&'s Session<'e>);

methods!(ValidationApi {
    /// `patch.validate`: every gate, changing nothing.
    validate(Validate) -> ValidationReport;
});

/// [`Session::policies`].
#[derive(Debug, Clone, Copy)]
pub struct PoliciesApi<'s, 'e>(&'s Session<'e>);

methods!(PoliciesApi {
    /// `policy.set`: store a new policy version.
    set(SetPolicy) -> PolicyResult;
    /// `policy.activate`: make a version the active policy.
    activate(ActivatePolicy) -> Activated;
    /// `policy.get`: the active policy or a version.
    get(GetPolicy) -> PolicyResult;
});

/// [`Session::transactions`].
#[derive(Debug, Clone, Copy)]
pub struct TransactionsApi<'s, 'e>(&'s Session<'e>);

methods!(TransactionsApi {
    /// `patch.apply`: apply a revision, all or nothing.
    apply(ApplyRevision) -> Applied;
    /// `transaction.rollback`: restore an applied transaction's before
    /// state as a new transaction.
    rollback(Rollback) -> RolledBack;
    /// `transaction.get`: a transaction and its journal.
    get(GetTransaction) -> TransactionDetail;
    /// `transaction.list`: transactions, a page at a time.
    list(ListTransactions) -> TransactionPage;
    /// `transaction.phases`: a transaction's phases.
    phases(ListPhases) -> Phases;
    /// `transaction.recovery`: what recovery would do.
    recovery(CheckRecovery) -> RecoveryAdvice;
    /// `landing.log`: the commits landed on the workspace's branch (git
    /// landing mode), newest first.
    landed(LandingLog) -> LandedCommits;
    /// `landing.settle`: settle another clone's unfinished git landing by
    /// asking the remote (applied if its branch holds the commit, else
    /// undone), clearing an abandoned lock on the remote's branch.
    settle(SettleLanding) -> Settled;
    /// `provenance.verify`: whether a branch's history is the one
    /// roundtable governed.
    verify(VerifyProvenance) -> ProvenanceReport;
    /// `provenance.blame`: each line of a file at the branch's tip with
    /// its commit and, for a commit roundtable landed, what governed it.
    blame(BlameFile) -> Blame;
});

/// [`Session::events`].
#[derive(Debug, Clone, Copy)]
pub struct EventsApi<'s, 'e>(&'s Session<'e>);

methods!(EventsApi {
    /// `events.list`: the audit log, oldest first.
    list(ListEvents) -> EventPage;
    /// `events.wait`: block until a matching event after `since_seq` is
    /// committed (by any process), or the timeout passes.
    wait(WaitEvents) -> EventWait;
});

impl EventsApi<'_, '_> {
    /// `events.verify`: check the whole hash chain.
    pub fn verify(&self) -> Result<ChainReport, ToolError> {
        self.0.run(VerifyEvents::all())
    }

    /// `events.verify` with options (an expected head).
    pub fn verify_with(
        &self,
        request: impl Into<Draft<VerifyEvents>>,
    ) -> Result<ChainReport, ToolError> {
        self.0.run(request)
    }
}
