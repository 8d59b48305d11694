//! The proposal lifecycle: create, revise, read, list, request review,
//! withdraw, reject.
//!
//! ```text
//! pending ──request_review──▶ in_review ──(patch.apply)──▶ applied
//!    │                            │
//!    ├──withdraw / patch.reject───┴──▶ withdrawn / rejected
//! ```
//!
//! Revisions are immutable and numbered: `attach_patch` adds revision n+1
//! (guarded by `expected_revision`) and never overwrites one.

use super::args::{
    Cursor, EditPlanJson, Limit, Markdown, PatchBytes, PatchFormat, PatchText, ResourceId,
    RevisionNumber, Title,
};
use super::records::{
    Decision, DecisionValue, FileState, FileSummary, Proposal, ProposalStatus, Revision, Risk,
};
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::changeset::{Changeset, Operation};
use crate::engine::Engine;
use crate::id::Id;
use crate::model::RevisionFormat;
use crate::store;
use crate::store::sql::Tx;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The most resources one revision may declare.
const MAX_RESOURCES: usize = 1000;

/// A revision computed against the current files, before it is stored.
pub(crate) struct PreparedRevision {
    format: RevisionFormat,
    bytes: Vec<u8>,
    /// An edit plan rendered as a unified diff (a patch is its own diff).
    rendered: Option<Vec<u8>>,
    changeset: Vec<FileSummary>,
    changeset_digest: String,
    /// The change without positions ([`Changeset::change_id`]).
    change_id: String,
    /// The touched files' contents before and after, kept as blobs so that
    /// the revision can be rebased.
    contents: Vec<Vec<u8>>,
    base_state: String,
    base_git_head: Option<String>,
    /// The revision this one rebases.
    pub(super) rebased_from: Option<u32>,
}

impl PreparedRevision {
    /// The change without positions ([`Changeset::change_id`]).
    pub(crate) fn change_id(&self) -> &str {
        &self.change_id
    }
}

/// The summary stored with a revision: each path's operation, precondition
/// and result.
pub(crate) fn summarize(changeset: &Changeset) -> Vec<FileSummary> {
    changeset
        .files()
        .iter()
        .zip(changeset.after_metas())
        .map(|(f, after)| {
            let operation = f.operation.kind();
            let other = match &f.operation {
                Operation::Rename { from } | Operation::Copy { from } => Some(from),
                Operation::RenamedAway { to } => Some(to),
                Operation::Create | Operation::Modify | Operation::Delete => None,
            };
            FileSummary {
                path: f.path.to_string(),
                operation,
                other_path: other.map(ToString::to_string),
                before: f.before.map(|m| FileState {
                    digest: m.digest,
                    executable: m.executable,
                    symlink: m.symlink,
                    size: None,
                }),
                after: f.after.as_ref().zip(*after).map(|(c, m)| FileState {
                    digest: m.digest,
                    executable: m.executable,
                    symlink: m.symlink,
                    size: Some(c.data.len() as u64),
                }),
                matches: changeset.matches(&f.path).to_vec(),
            }
        })
        .collect()
}

/// Parse the patch or edit plan and compute its changeset against the
/// current files (reading only the touched ones).
fn prepare_revision(
    engine: &Engine,
    patch: Option<&PatchText>,
    patch_base64: Option<&PatchBytes>,
    patch_format: Option<PatchFormat>,
    edit_plan: Option<&EditPlanJson>,
) -> Result<PreparedRevision, ToolError> {
    let limit = engine.options().max_patch_bytes;
    let too_big = |field: &str, n: usize| {
        ToolError::invalid_argument(field, format!("is {n} bytes; the limit is {limit}"))
    };
    let patch: Option<&[u8]> =
        match (patch, patch_base64) {
            (Some(_), Some(_)) => return Err(ToolError::invalid_argument(
                "patch_base64",
                "give the patch once: as text (patch) or as base64 bytes (patch_base64), not both",
            )),
            (Some(p), None) => Some(p.0.as_bytes()),
            (None, Some(b)) => Some(&b.0),
            (None, None) => None,
        };
    if patch_format.is_some() && patch.is_none() {
        return Err(ToolError::invalid_argument(
            "patch_format",
            "says how to read `patch`, and no patch is given",
        ));
    }
    let (format, bytes) = match (patch, edit_plan) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid_argument(
                "edit_plan",
                "give a patch or an edit_plan, not both",
            ))
        }
        (None, None) => {
            return Err(ToolError::invalid_argument(
                "patch",
                "a patch or an edit_plan is required",
            ))
        }
        (Some(p), None) => {
            let bytes = p.to_vec();
            if bytes.len() > limit {
                return Err(too_big("patch", bytes.len()));
            }
            (patch_format.unwrap_or_default().revision_format(), bytes)
        }
        (None, Some(plan)) => {
            let bytes = serde_json::to_vec(&plan.0).expect("a JSON object serializes");
            if bytes.len() > limit {
                return Err(too_big("edit_plan", bytes.len()));
            }
            (RevisionFormat::EditPlan, bytes)
        }
    };
    prepare_bytes(engine, format, bytes)
}

/// A unified diff that fails to parse but reads like an agent-native
/// format: say which `patch_format` it looks like.
fn hint(e: ToolError, format: RevisionFormat, bytes: &[u8]) -> ToolError {
    if format != RevisionFormat::Patch || e.code() != crate::ErrorCode::InvalidPatch {
        return e;
    }
    let text = String::from_utf8_lossy(bytes);
    let looks = if text.trim_start().starts_with("*** Begin Patch") {
        "codex"
    } else if text.lines().any(|l| l.trim_end() == "<<<<<<< SEARCH") {
        "search_replace"
    } else {
        return e;
    };
    let message = format!(
        "{} (it reads like patch_format {looks:?}: give that to have it read so)",
        e.message()
    );
    let mut details = e.details().clone();
    details["suggested_patch_format"] = serde_json::json!(looks);
    ToolError::new(e.code(), message, details)
}

/// The current content of each path `changeset` reads: every path with a
/// precondition (checked against it) and every copy's source.
fn base_contents(
    engine: &Engine,
    changeset: &Changeset,
) -> Result<std::collections::BTreeMap<crate::RepoPath, Vec<u8>>, ToolError> {
    let mut out = std::collections::BTreeMap::new();
    for f in changeset.files() {
        let (path, want) = match &f.operation {
            Operation::Copy { from } => (from, None),
            _ => match &f.before {
                Some(b) => (&f.path, Some(b.digest)),
                None => continue,
            },
        };
        let read = engine.workspace().read(path)?;
        let stale = || crate::changeset::ChangesetError::Stale { path: path.clone() };
        let file = read.ok_or_else(stale)?;
        if want.is_some_and(|d| d != crate::Digest::of(&file.data)) {
            return Err(stale().into());
        }
        out.insert(path.clone(), file.data);
    }
    Ok(out)
}

/// [`prepare_revision`] of a patch's or edit plan's bytes.
pub(crate) fn prepare_bytes(
    engine: &Engine,
    format: RevisionFormat,
    bytes: Vec<u8>,
) -> Result<PreparedRevision, ToolError> {
    let changeset =
        revision_changeset(engine, format, &bytes).map_err(|e| hint(e, format, &bytes))?;
    let field = format.field();
    if changeset.is_empty() {
        return Err(ToolError::invalid_argument(field, "changes nothing"));
    }
    let max_files = engine.options().max_files;
    if changeset.files().len() > max_files {
        return Err(ToolError::invalid_argument(
            field,
            format!(
                "touches {} files; the limit is {max_files}",
                changeset.files().len()
            ),
        ));
    }
    let rendered = if format != RevisionFormat::Patch {
        Some(changeset.render_diff(engine.workspace())?)
    } else {
        None
    };
    let summary = summarize(&changeset);
    let changeset_digest = {
        use sha2::{Digest as _, Sha256};
        // Over what the change does, not how its hunks were found: the
        // same results make the same digest whatever rung matched them.
        let plain: Vec<FileSummary> = summary
            .iter()
            .map(|f| FileSummary {
                matches: Vec::new(),
                ..f.clone()
            })
            .collect();
        let text = serde_json::to_string(&plain).expect("summaries serialize");
        format!(
            "sha256:{}",
            crate::hex::encode(&Sha256::digest(text.as_bytes()))
        )
    };
    // The base in O(change): the touched paths' before-states (already in
    // the summary) and git HEAD, never a walk of the whole tree.
    let base_git_head = crate::state::git_head(engine.root())?;
    let base_state = crate::state::touched_state(
        base_git_head.as_deref(),
        summary.iter().map(|f| crate::state::TouchedPath {
            path: &f.path,
            before: f
                .before
                .as_ref()
                .map(|b| (b.digest, b.executable, b.symlink)),
        }),
    );
    let base = base_contents(engine, &changeset)?;
    let change_id = changeset.change_id(&|p| base.get(p).map(Vec::as_slice));
    let mut contents: Vec<Vec<u8>> = base.into_values().collect();
    contents.extend(
        changeset
            .files()
            .iter()
            .filter_map(|f| f.after.as_ref().map(|a| a.data.clone())),
    );
    Ok(PreparedRevision {
        format,
        bytes,
        rendered,
        changeset: summary,
        changeset_digest,
        change_id,
        contents,
        base_state: base_state.to_string(),
        base_git_head,
        rebased_from: None,
    })
}

/// Canonical spellings, sorted, each once.
pub(crate) fn canonical_resources(resources: &[ResourceId]) -> Result<Vec<String>, ToolError> {
    if resources.len() > MAX_RESOURCES {
        return Err(ToolError::invalid_argument(
            "affected_resources",
            format!(
                "has {} entries; the limit is {MAX_RESOURCES}",
                resources.len()
            ),
        ));
    }
    let mut out: Vec<String> = resources.iter().map(|r| r.0.to_string()).collect();
    out.sort();
    out.dedup();
    Ok(out)
}

pub(crate) fn insert_revision(
    cx: &Cx<'_>,
    proposal_id: &str,
    number: u32,
    prep: &PreparedRevision,
    resources: &[String],
    note_md: Option<&str>,
) -> Result<Revision, ToolError> {
    let digest = crate::store::put_blob(cx.tx, &prep.bytes)?;
    for content in &prep.contents {
        crate::store::put_blob(cx.tx, content)?;
    }
    let diff_digest = match &prep.rendered {
        Some(diff) => crate::store::put_blob(cx.tx, diff)?,
        None => digest,
    };
    store::proposals::insert_revision(
        cx.tx,
        &store::proposals::NewRevision {
            proposal_id,
            number,
            format: prep.format.as_str(),
            digest: &digest,
            changeset: &prep.changeset,
            changeset_digest: &prep.changeset_digest,
            affected_resources: resources,
            base_state: &prep.base_state,
            base_git_head: prep.base_git_head.as_deref(),
            note_md,
            created_by: cx.actor,
            created_at: cx.now,
            diff_digest: &diff_digest,
            rebased_from: prep.rebased_from,
            change_id: &prep.change_id,
        },
    )?;
    Revision::load(cx.tx, proposal_id, number)
}

/// Arguments of `proposal.create`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "CreateArgs")]
pub struct CreateProposal {
    /// The task the proposal belongs to.
    pub task_id: Id,
    /// Its title.
    pub title: Title,
    /// What it changes and why.
    pub summary_md: Markdown,
    /// Its risk level (default `normal`).
    pub risk: Option<Risk>,
    /// The change as text (give this, `patch_base64` or `edit_plan`): a
    /// unified or git diff, or the format `patch_format` names.
    pub patch: Option<PatchText>,
    /// The same as `patch`, as base64-encoded bytes: for a diff that is
    /// not UTF-8.
    pub patch_base64: Option<PatchBytes>,
    /// How to read `patch`: `unified` (default), `codex` (a Codex
    /// `*** Begin Patch` envelope) or `search_replace` (SEARCH/REPLACE
    /// blocks).
    pub patch_format: Option<PatchFormat>,
    /// The change as an Opcore edit plan (give this or `patch`).
    pub edit_plan: Option<EditPlanJson>,
    /// The resources the change is declared to touch (`file:`,
    /// `directory:`, `symbol:` ids; at most 1000).
    pub affected_resources: Option<Vec<ResourceId>>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `proposal.create` and `proposal.attach_patch`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProposalRevised {
    /// The proposal.
    pub proposal: Proposal,
    /// The revision just made.
    pub revision: Revision,
}

impl super::Request for CreateProposal {
    const TOOL: &'static str = "proposal.create";
    const DESCRIPTION: &'static str = "Propose a change (a patch or an edit plan) for a task. The caller, a registered enabled agent, becomes the author. The change must apply to the current files; it becomes revision 1.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent];
    type Output = ProposalRevised;

    store_tool!();
}

impl Tool for CreateProposal {
    type Prep = PreparedRevision;

    keyed!();

    fn prepare(
        engine: &Engine,
        actor: &Actor,
        args: &CreateProposal,
    ) -> Result<PreparedRevision, ToolError> {
        if actor.kind != ActorKind::Agent {
            return Err(ToolError::forbidden(
                format!(
                    "{} is for agent actors; {actor} is not an agent",
                    Self::TOOL
                ),
                json!({"actor": actor, "allowed_kinds": ["agent"]}),
            ));
        }
        prepare_revision(
            engine,
            args.patch.as_ref(),
            args.patch_base64.as_ref(),
            args.patch_format,
            args.edit_plan.as_ref(),
        )
    }

    fn run(
        cx: &Cx<'_>,
        args: CreateProposal,
        prep: PreparedRevision,
    ) -> Result<ProposalRevised, ToolError> {
        let agent = cx.enabled_agent(Self::TOOL)?;
        let resources = canonical_resources(args.affected_resources.as_deref().unwrap_or(&[]))?;
        let task_exists: bool = crate::store::agents::task_exists(cx.tx, args.task_id.as_str())?;
        if !task_exists {
            return Err(ToolError::not_found("task", args.task_id.as_str()));
        }
        let id = cx.new_id("prop");
        let risk = args.risk.unwrap_or_default();
        store::proposals::insert_proposal(
            cx.tx,
            &store::proposals::NewProposal {
                id: id.as_str(),
                task_id: args.task_id.as_str(),
                author: &agent.id,
                title: args.title.as_str(),
                summary_md: args.summary_md.as_str(),
                risk,
                reverts: None,
                now: cx.now,
            },
        )?;
        let revision = insert_revision(cx, id.as_str(), 1, &prep, &resources, None)?;
        cx.event(
            crate::model::EventKind::ProposalCreated,
            id.as_str(),
            Some(id.as_str()),
            json!({
                "task_id": args.task_id, "risk": risk, "revision": 1,
                "format": revision.format, "digest": revision.digest,
                "files": revision.changeset.len(),
            }),
        )?;
        Ok(ProposalRevised {
            proposal: Proposal::load(cx.tx, id.as_str())?,
            revision,
        })
    }
}

/// Arguments of `proposal.attach_patch`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "AttachPatchArgs")]
pub struct AttachPatch {
    /// The proposal to revise.
    pub proposal_id: Id,
    /// The revision the author is replacing: must be the latest, else
    /// `conflict` (someone else revised it meanwhile).
    pub expected_revision: RevisionNumber,
    /// The new change as text (or give `patch_base64` or `edit_plan`): a
    /// unified or git diff, or the format `patch_format` names.
    pub patch: Option<PatchText>,
    /// The same as `patch`, as base64-encoded bytes: for a diff that is
    /// not UTF-8.
    pub patch_base64: Option<PatchBytes>,
    /// How to read `patch`: `unified` (default), `codex` or
    /// `search_replace`.
    pub patch_format: Option<PatchFormat>,
    /// The new change as an Opcore edit plan (or give `patch`).
    pub edit_plan: Option<EditPlanJson>,
    /// The declared resources; when absent, the previous revision's.
    pub affected_resources: Option<Vec<ResourceId>>,
    /// What changed in this revision, for reviewers.
    pub note_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

impl super::Request for AttachPatch {
    const TOOL: &'static str = "proposal.attach_patch";
    const DESCRIPTION: &'static str = "Attach a new revision (patch or edit plan) to a pending or in-review proposal (author only). Requires expected_revision = the latest revision; earlier revisions are kept unchanged, and evidence for them does not count for the new one.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent];
    type Output = ProposalRevised;

    store_tool!();
}

impl Tool for AttachPatch {
    type Prep = PreparedRevision;

    keyed!();

    fn prepare(
        engine: &Engine,
        actor: &Actor,
        args: &AttachPatch,
    ) -> Result<PreparedRevision, ToolError> {
        // Refuse a foreign caller before reading any file; `run` checks
        // everything again inside the transaction.
        let author = engine
            .store()
            .read(|tx| Proposal::load(tx, args.proposal_id.as_str()).map(|p| p.author))?;
        if !(actor.kind == ActorKind::Agent && actor.id.as_str() == author) {
            return Err(ToolError::forbidden(
                format!(
                    "only the author ({author}) may call {}; the caller is {actor}",
                    Self::TOOL
                ),
                json!({"actor": actor, "author": author, "reason": "not_author"}),
            ));
        }
        prepare_revision(
            engine,
            args.patch.as_ref(),
            args.patch_base64.as_ref(),
            args.patch_format,
            args.edit_plan.as_ref(),
        )
    }

    fn run(
        cx: &Cx<'_>,
        args: AttachPatch,
        prep: PreparedRevision,
    ) -> Result<ProposalRevised, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        cx.require_author(&p.author, Self::TOOL)?;
        p.require_status(
            &[ProposalStatus::Pending, ProposalStatus::InReview],
            Self::TOOL,
        )?;
        p.require_not_applying(cx.tx, Self::TOOL)?;
        if args.expected_revision.0 != p.latest_revision {
            return Err(ToolError::conflict(
                format!(
                    "proposal {} is at revision {}, not the expected {}",
                    p.id, p.latest_revision, args.expected_revision.0
                ),
                json!({"proposal_id": p.id, "expected_revision": args.expected_revision, "latest_revision": p.latest_revision}),
            ));
        }
        let resources = match &args.affected_resources {
            Some(r) => canonical_resources(r)?,
            None => Revision::load(cx.tx, &p.id, p.latest_revision)?.affected_resources,
        };
        let number = p.latest_revision + 1;
        let note = args.note_md.as_ref().map(|t| t.as_str());
        let revision = insert_revision(cx, &p.id, number, &prep, &resources, note)?;
        store::proposals::set_latest_revision(cx.tx, &p.id, number, cx.now)?;
        cx.event(
            crate::model::EventKind::ProposalRevised,
            &p.id,
            Some(&p.id),
            json!({
                "revision": number, "previous_revision": p.latest_revision,
                "format": revision.format, "digest": revision.digest,
                "files": revision.changeset.len(),
            }),
        )?;
        Ok(ProposalRevised {
            proposal: Proposal::load(cx.tx, &p.id)?,
            revision,
        })
    }
}

fn corrupt(revision: &Revision, why: String) -> ToolError {
    ToolError::new(
        crate::ErrorCode::Database,
        format!("revision content {}: {why}", revision.digest),
        json!({"digest": revision.digest}),
    )
}

/// A revision's submitted bytes, checked against their digest.
pub(crate) fn revision_bytes(tx: &Tx<'_>, revision: &Revision) -> Result<Vec<u8>, ToolError> {
    use crate::store::BlobFault;
    crate::store::verified_blob(tx, &revision.digest)?.map_err(|fault| match fault {
        BlobFault::Missing => corrupt(revision, "is missing".into()),
        BlobFault::Mismatch => corrupt(revision, "does not match its digest".into()),
    })
}

/// The changeset a revision's stored bytes make against the current files.
pub(crate) fn revision_changeset(
    engine: &Engine,
    format: RevisionFormat,
    bytes: &[u8],
) -> Result<Changeset, ToolError> {
    changeset_against(
        engine.workspace(),
        format,
        bytes,
        &engine.options().parse_options(),
    )
}

/// The changeset a revision's bytes make against `tree`.
pub(crate) fn changeset_against<T: crate::diff::Tree + ?Sized>(
    tree: &T,
    format: RevisionFormat,
    bytes: &[u8],
    options: &crate::diff::ParseOptions,
) -> Result<Changeset, ToolError> {
    use crate::edit::agent::{changeset as agent_changeset, AgentFormat};
    match format {
        RevisionFormat::EditPlan => {
            let plan = crate::edit::parse_plan(bytes)?;
            Ok(crate::edit::plan_changeset(&plan, tree)?)
        }
        RevisionFormat::Patch => {
            let patch = crate::diff::parse(bytes, options)?;
            Ok(Changeset::from_patch(&patch, tree)?)
        }
        RevisionFormat::CodexPatch => Ok(agent_changeset(AgentFormat::Codex, bytes, tree)?),
        RevisionFormat::SearchReplace => {
            Ok(agent_changeset(AgentFormat::SearchReplace, bytes, tree)?)
        }
    }
}

/// A revision's submitted bytes: text (a patch, Codex patch or
/// SEARCH/REPLACE blocks) as a string, an edit plan as an object — or,
/// for a patch that is not UTF-8, its bytes base64-encoded (the second).
fn revision_content(
    tx: &Tx<'_>,
    revision: &Revision,
) -> Result<(Option<serde_json::Value>, Option<String>), ToolError> {
    let bytes = revision_bytes(tx, revision)?;
    if !revision.format.is_text() {
        return serde_json::from_slice(&bytes)
            .map(|v| (Some(v), None))
            .map_err(|e| corrupt(revision, e.to_string()));
    }
    Ok(match String::from_utf8(bytes) {
        Ok(s) => (Some(serde_json::Value::String(s)), None),
        Err(e) => {
            use base64::Engine as _;
            (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(e.into_bytes())),
            )
        }
    })
}

/// Arguments of `proposal.get`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "GetArgs")]
pub struct GetProposal {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision to return in full (default: the latest).
    pub revision: Option<RevisionNumber>,
    /// Also return the revision's patch text or edit plan, exactly as
    /// submitted (default false: patches can be megabytes).
    pub include_content: Option<bool>,
}

pub use crate::model::RevisionEntry;

/// Result of `proposal.get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProposalDetail {
    /// The proposal.
    pub proposal: Proposal,
    /// The requested (or latest) revision.
    pub revision: Revision,
    /// Every revision, oldest first.
    pub revisions: Vec<RevisionEntry>,
    /// With `include_content`: the patch text (a string) or the edit plan
    /// (an object) of the returned revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Value>,
    /// With `include_content`, instead of `content` when the patch is not
    /// UTF-8: its exact bytes, base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_base64: Option<String>,
}

impl super::Request for GetProposal {
    const TOOL: &'static str = "proposal.get";
    const DESCRIPTION: &'static str =
        "Read a proposal, one revision in full (default the latest) and its revision history.";
    const MUTATES: bool = false;
    type Output = ProposalDetail;

    store_tool!();
}

impl Tool for GetProposal {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: GetProposal, (): ()) -> Result<ProposalDetail, ToolError> {
        let proposal = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        let number = args.revision.map_or(proposal.latest_revision, |r| r.0);
        let revision = Revision::load(cx.tx, &proposal.id, number)?;
        let revisions = store::proposals::revision_entries(cx.tx, &proposal.id)?;
        let (content, content_base64) = if args.include_content == Some(true) {
            revision_content(cx.tx, &revision)?
        } else {
            (None, None)
        };
        Ok(ProposalDetail {
            proposal,
            revision,
            revisions,
            content,
            content_base64,
        })
    }
}

/// Arguments of `proposal.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ListArgs")]
pub struct ListProposals {
    /// Only proposals of this task.
    pub task_id: Option<Id>,
    /// Only proposals in this status.
    pub status: Option<ProposalStatus>,
    /// Only proposals by this agent.
    pub author: Option<Id>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<Limit<200>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// Result of `proposal.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProposalPage {
    /// The proposals, oldest first.
    pub proposals: Vec<Proposal>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListProposals {
    const TOOL: &'static str = "proposal.list";
    const DESCRIPTION: &'static str = "List proposals oldest first, filtered by task, status or author, a page at a time (keyset cursor: a page costs the same however many proposals exist).";
    const MUTATES: bool = false;
    type Output = ProposalPage;

    store_tool!();
}

impl Tool for ListProposals {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListProposals, (): ()) -> Result<ProposalPage, ToolError> {
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut proposals = store::proposals::list_proposals(
            cx.tx,
            &store::proposals::ProposalFilter {
                after,
                task_id: args.task_id.as_ref().map(Id::as_str),
                status: args.status,
                author: args.author.as_ref().map(Id::as_str),
                limit: u64::from(limit) + 1,
            },
        )?;
        let next_cursor = Cursor::page(&mut proposals, limit, |p| p.seq);
        Ok(ProposalPage {
            proposals,
            next_cursor,
        })
    }
}

/// Move a proposal to `to`, writing its event; returns it as stored.
fn transition(
    cx: &Cx<'_>,
    p: &Proposal,
    to: ProposalStatus,
    kind: crate::model::EventKind,
    data: serde_json::Value,
) -> Result<Proposal, ToolError> {
    let changed = store::proposals::set_status(cx.tx, &p.id, p.status, to, cx.now)?;
    assert_eq!(changed, 1, "the row was read in this transaction");
    let mut data = data;
    data["from"] = json!(p.status);
    data["to"] = json!(to);
    cx.event(kind, &p.id, Some(&p.id), data)?;
    Proposal::load(cx.tx, &p.id)
}

/// Arguments of `proposal.request_review`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RequestReviewArgs")]
pub struct RequestReview {
    /// The proposal.
    pub proposal_id: Id,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of the status-changing proposal tools.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProposalChanged {
    /// The proposal as it is now.
    pub proposal: Proposal,
}

/// Result of `proposal.request_review`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ReviewRequested {
    /// The proposal, now `in_review`.
    pub proposal: Proposal,
    /// The roles the policy requires for the latest revision and, for each,
    /// the enabled agents (never the author) that can fill it.
    pub review_plan: Vec<crate::policy::RoleNeed>,
}

impl super::Request for RequestReview {
    const TOOL: &'static str = "proposal.request_review";
    const DESCRIPTION: &'static str = "Ask for review: pending → in_review (the author or an orchestrator). Returns the review plan: the roles the policy requires for the latest revision and the agents that can fill each.";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent, ActorKind::Orchestrator];
    type Output = ReviewRequested;

    store_tool!();
}

impl Tool for RequestReview {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: RequestReview, (): ()) -> Result<ReviewRequested, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        cx.require_author_or_orchestrator(&p.author, Self::TOOL)?;
        p.require_status(&[ProposalStatus::Pending], Self::TOOL)?;
        let proposal = transition(
            cx,
            &p,
            ProposalStatus::InReview,
            crate::model::EventKind::ProposalReviewRequested,
            json!({"revision": p.latest_revision}),
        )?;
        let evidence = super::validate::gather(cx, &p.id, None)?;
        let review_plan = super::validate::plan(cx.engine, &evidence);
        Ok(ReviewRequested {
            proposal,
            review_plan,
        })
    }
}

/// Arguments of `proposal.withdraw`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "WithdrawArgs")]
pub struct Withdraw {
    /// The proposal.
    pub proposal_id: Id,
    /// Why.
    pub reason_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

impl super::Request for Withdraw {
    const TOOL: &'static str = "proposal.withdraw";
    const DESCRIPTION: &'static str =
        "Withdraw a pending or in-review proposal (the author or an orchestrator).";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent, ActorKind::Orchestrator];
    type Output = ProposalChanged;

    store_tool!();
}

impl Tool for Withdraw {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Withdraw, (): ()) -> Result<ProposalChanged, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        cx.require_author_or_orchestrator(&p.author, Self::TOOL)?;
        p.require_status(
            &[ProposalStatus::Pending, ProposalStatus::InReview],
            Self::TOOL,
        )?;
        p.require_not_applying(cx.tx, Self::TOOL)?;
        let proposal = transition(
            cx,
            &p,
            ProposalStatus::Withdrawn,
            crate::model::EventKind::ProposalWithdrawn,
            json!({"reason_md": args.reason_md}),
        )?;
        Ok(ProposalChanged { proposal })
    }
}

/// Arguments of `patch.reject`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RejectArgs")]
pub struct Reject {
    /// The proposal.
    pub proposal_id: Id,
    /// Why it is rejected.
    pub reason_md: Markdown,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `patch.reject`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Rejected {
    /// The proposal, now `rejected`.
    pub proposal: Proposal,
    /// The `reject` decision recorded on its latest revision.
    pub decision: Decision,
}

impl super::Request for Reject {
    const TOOL: &'static str = "patch.reject";
    const DESCRIPTION: &'static str = "Reject a pending or in-review proposal with a reason (orchestrator or human); records a reject decision on its latest revision.";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = Rejected;

    store_tool!();
}

impl Tool for Reject {
    keyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Reject, (): ()) -> Result<Rejected, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        p.require_status(
            &[ProposalStatus::Pending, ProposalStatus::InReview],
            Self::TOOL,
        )?;
        p.require_not_applying(cx.tx, Self::TOOL)?;
        let decision = super::evidence::insert_decision(
            cx,
            &p,
            p.latest_revision,
            DecisionValue::Reject,
            args.reason_md.as_str(),
        )?;
        let proposal = transition(
            cx,
            &p,
            ProposalStatus::Rejected,
            crate::model::EventKind::ProposalRejected,
            json!({"revision": p.latest_revision, "decision_id": decision.id, "reason_md": args.reason_md}),
        )?;
        Ok(Rejected { proposal, decision })
    }
}
