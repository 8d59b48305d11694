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
    RevisionNumber, StripLevel, Title,
};
use super::details::{
    ConflictDetails, DatabaseDetails, ForbiddenDetails, ForbiddenReason, InvalidArgumentDetails,
    InvalidPatchDetails,
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
use crate::operations::records::ProposalRecord;
use crate::operations::records::RevisionRecord;
use crate::store;
use crate::store::sql::Tx;
use crate::RepoPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most resources one revision may declare.
const MAX_RESOURCES: usize = 1000;

/// A revision computed against the current files, before it is stored.
pub(crate) struct PreparedRevision {
    format: RevisionFormat,
    bytes: Vec<u8>,
    /// The changeset rendered as a unified diff: what reviewers see.
    rendered: Option<Vec<u8>>,
    changeset: Vec<FileSummary>,
    changeset_digest: String,
    /// The change without positions ([`Changeset::change_id`]).
    change_id: String,
    /// The touched files' contents before and after, kept as blobs so that
    /// the revision can be rebased.
    contents: Vec<Vec<u8>>,
    base_state: crate::state::StateHash,
    base_git_head: Option<String>,
    /// The revision this one rebases.
    pub(super) rebased_from: Option<u32>,
}

impl PreparedRevision {
    /// The change in its place ([`Changeset::change_id`]).
    pub(crate) fn change_id(&self) -> &str {
        &self.change_id
    }

    /// The revision record [`insert_revision`] would store for it — the
    /// same fields, made by `actor` at `now` — without storing anything:
    /// what `patch.apply` with `rebase` validates before it journals.
    pub(crate) fn unstored(
        &self,
        number: u32,
        resources: &[String],
        note_md: Option<&str>,
        actor: &Actor,
        now: crate::clock::Timestamp,
    ) -> Revision {
        let digest = crate::Digest::of(&self.bytes);
        Revision {
            number,
            format: self.format,
            digest,
            changeset: self.changeset.clone(),
            changeset_digest: self.changeset_digest.clone(),
            affected_resources: resources.to_vec(),
            base_state: self.base_state,
            base_git_head: self.base_git_head.clone(),
            note_md: note_md.map(str::to_owned),
            created_by: actor.clone(),
            created_at: now,
            diff_digest: Some(self.rendered.as_deref().map_or(digest, crate::Digest::of)),
            rebased_from: self.rebased_from,
            change_id: Some(self.change_id.clone()),
        }
    }

    /// The revision's bytes (a patch, or an edit plan).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
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
    strip: Option<StripLevel>,
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
    if strip.is_some()
        && (patch.is_none() || patch_format.unwrap_or_default() != PatchFormat::Unified)
    {
        return Err(ToolError::invalid_argument(
            "strip",
            "says how to read the file names of a unified diff, and none is given",
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
    let strip = strip.map_or(1, |s| usize::from(s.0));
    prepare_bytes_at(engine, format, bytes, strip)
}

/// A unified diff that fails to parse but reads like an agent-native
/// format: say which `patch_format` it looks like.
fn hint(e: ToolError, format: RevisionFormat, bytes: &[u8]) -> ToolError {
    if format != RevisionFormat::Patch || e.code() != crate::ErrorCode::InvalidPatch {
        return e;
    }
    let text = String::from_utf8_lossy(bytes);
    let (looks, name) = if text.trim_start().starts_with("*** Begin Patch") {
        (PatchFormat::Codex, "codex")
    } else if text.lines().any(|l| l.trim_end() == "<<<<<<< SEARCH") {
        (PatchFormat::SearchReplace, "search_replace")
    } else {
        return e;
    };
    let message = format!(
        "{} (it reads like patch_format {name:?}: give that to have it read so)",
        e.message()
    );
    let Some(details) = e.details_as::<InvalidPatchDetails>() else {
        return e;
    };
    let details = InvalidPatchDetails {
        suggested_patch_format: Some(looks),
        ..details
    };
    ToolError::new(message, details)
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

/// [`prepare_revision`] of a patch's or edit plan's bytes (a patch read at
/// strip level 1).
pub(crate) fn prepare_bytes(
    engine: &Engine,
    format: RevisionFormat,
    bytes: Vec<u8>,
) -> Result<PreparedRevision, ToolError> {
    prepare_bytes_at(engine, format, bytes, 1)
}

/// Refuse a patch whose file names only make sense at another strip level
/// than `strip`, where reading them at `strip` would put a file somewhere
/// its author did not mean: a `diff --git` line whose two names begin with
/// the same removed components (`git diff --no-prefix`: `tests/x tests/x`
/// read at strip 1 is `x`), or a created file whose directory does not
/// exist while the name with one component less removed has one
/// (`tests/cli-tests/x` at strip 1 is `cli-tests/x`, beside an existing
/// `tests/cli-tests/`). A modification at the wrong level is refused
/// anyway (the file is not there), but a creation would land silently.
fn check_strip(
    engine: &Engine,
    patch: &crate::diff::Patch<'_>,
    strip: usize,
) -> Result<(), ToolError> {
    let refuse = |path: &[u8], suggested: usize, why: String| {
        let reason = format!("{why}; give strip {suggested} if that is where it belongs");
        ToolError::new(
            format!("strip: {reason}"),
            InvalidArgumentDetails {
                field: Some("strip".to_owned()),
                reason: Some(reason),
                path: Some(String::from_utf8_lossy(path).into_owned()),
                suggested_strip: Some(suggested as u64),
                ..InvalidArgumentDetails::default()
            },
        )
    };
    let lossy = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for fp in patch.files() {
        if let Some((a, b)) = fp.removed_prefixes() {
            if a == b {
                return Err(refuse(
                    fp.path(),
                    strip - 1,
                    format!(
                        "at strip {strip}, `{}` on both sides of the `diff --git` line is removed as if it were a prefix (the names read like `git diff --no-prefix`), making `{}`",
                        lossy(&a),
                        lossy(fp.path())
                    ),
                ));
            }
        }
        if fp.status() != crate::diff::FileStatus::Added || strip == 0 {
            continue;
        }
        let Some(written) = fp.written_new_name() else {
            continue;
        };
        let parent_is_dir = |p: &[u8]| -> Result<Option<bool>, ToolError> {
            let Some(slash) = p.iter().rposition(|&b| b == b'/') else {
                return Ok(None); // at the root
            };
            match crate::RepoPath::from_bytes(&p[..slash]) {
                Ok(dir) => Ok(Some(engine.workspace().is_dir(&dir)?)),
                Err(_) => Ok(Some(false)),
            }
        };
        if parent_is_dir(fp.path())? != Some(false) {
            continue;
        }
        let Some(at_one_less) = strip_name(&written, strip - 1) else {
            continue;
        };
        if parent_is_dir(&at_one_less)? == Some(true) {
            return Err(refuse(
                fp.path(),
                strip - 1,
                format!(
                    "at strip {strip}, the new file `{}` would be made in a directory that does not exist, while `{}` (strip {}) is in one that does",
                    lossy(fp.path()),
                    lossy(&at_one_less),
                    strip - 1
                ),
            ));
        }
    }
    Ok(())
}

/// `name` without its first `n` components (squashing repeated slashes
/// is left to the parser: this only looks for a directory).
fn strip_name(name: &[u8], n: usize) -> Option<Vec<u8>> {
    let mut rest = name;
    for _ in 0..n {
        let i = rest.iter().position(|&b| b == b'/')?;
        rest = &rest[i + 1..];
    }
    (!rest.is_empty()).then(|| rest.to_vec())
}

/// [`prepare_revision`] of a patch's or edit plan's bytes, a patch read at
/// strip level `strip`.
pub(crate) fn prepare_bytes_at(
    engine: &Engine,
    format: RevisionFormat,
    bytes: Vec<u8>,
    strip: usize,
) -> Result<PreparedRevision, ToolError> {
    let options = crate::diff::ParseOptions {
        strip,
        ..engine.options().parse_options()
    };
    if format == RevisionFormat::Patch {
        // Parsed once more below with the tree; this look is only at names.
        if let Ok(patch) = crate::diff::parse(&bytes, &options) {
            check_strip(engine, &patch, strip)?;
        }
    }
    // One snapshot for the changeset and its rendering: each file is read
    // (and hashed) once.
    let files = ReadOnce::new(engine.workspace());
    let changeset = changeset_against(&files, format, &bytes, &options)
        .map_err(|e| super::eol::explain(engine.root(), hint(e, format, &bytes)))?;
    // Nothing `git fsck --strict` refuses is stored: not a `.gitmodules`
    // that names `../../x` or a url `--upload-pack=…`, not an attributes
    // line git cannot parse (the names were refused as paths already).
    for f in changeset.files() {
        if let Some(after) = &f.after {
            crate::fsck::check_content(&f.path, &after.data, after.symlink)
                .map_err(crate::changeset::ChangesetError::Path)?;
        }
    }
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
    // Every preview (`proposal.diff`, `proposal.files`, `roundtable show`)
    // is rendered from the changeset that will land, never from the
    // submitted text: a patch whose hunks `git apply` would place
    // elsewhere than the text suggests shows the reviewer where they land.
    let rendered = Some(changeset.render_diff(&files)?);
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
    let change_id = changeset.change_id(&|p| base.get(p).map(Vec::as_slice), &symbol_spans);
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
        base_state,
        base_git_head,
        rebased_from: None,
    })
}

/// `forbidden` unless `actor` is a registered, enabled agent — checked
/// before a patch is read, so that a caller who may not propose learns
/// that, not what is wrong with the patch; `run` checks again in its
/// transaction.
fn require_enabled_agent(engine: &Engine, actor: &Actor, tool: &str) -> Result<(), ToolError> {
    super::read_cx(engine, actor, |cx| cx.enabled_agent(tool).map(|_| ()))
}

/// The symbols of `source` at `path` as [`Changeset::change_id`] places
/// hunks in them; none for a language without a grammar or a file the
/// grammar cannot index.
fn symbol_spans(path: &RepoPath, source: &[u8]) -> Vec<crate::changeset::NamedSpan> {
    crate::symbols::index_path(path, source)
        .map(|symbols| {
            symbols
                .into_iter()
                .map(|s| crate::changeset::NamedSpan {
                    name: s.name,
                    start_line: s.start_line,
                    end_line: s.end_line,
                })
                .collect()
        })
        .unwrap_or_default()
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
            base_state: &prep.base_state.to_string(),
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
    /// For a unified diff: how many leading components to remove from its
    /// file names (`-p`), 0 to 16, default 1 (`a/`, `b/`); 0 for `git
    /// diff --no-prefix`. A name that only makes sense at another level
    /// is refused (`invalid_argument`, `suggested_strip`).
    pub strip: Option<StripLevel>,
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
            return Err(ToolError::new(
                format!(
                    "{} is for agent actors; {actor} is not an agent",
                    Self::TOOL
                ),
                ForbiddenDetails::agents_only(actor),
            ));
        }
        require_enabled_agent(engine, actor, Self::TOOL)?;
        prepare_revision(
            engine,
            args.patch.as_ref(),
            args.patch_base64.as_ref(),
            args.patch_format,
            args.edit_plan.as_ref(),
            args.strip,
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
            id.as_str(),
            Some(id.as_str()),
            crate::model::ProposalCreatedData {
                task_id: args.task_id.as_str().to_owned(),
                risk,
                revision: 1,
                format: revision.format,
                digest: revision.digest,
                files: revision.changeset.len() as u64,
                reverts: None,
                reverted_revision: None,
            },
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
    /// For a unified diff: how many leading components to remove from its
    /// file names (`-p`), 0 to 16, default 1; 0 for `git diff
    /// --no-prefix`.
    pub strip: Option<StripLevel>,
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
            return Err(ToolError::new(
                format!(
                    "only the author ({author}) may call {}; the caller is {actor}",
                    Self::TOOL
                ),
                ForbiddenDetails {
                    author: Some(author.clone()),
                    ..ForbiddenDetails::new(actor, ForbiddenReason::NotAuthor)
                },
            ));
        }
        require_enabled_agent(engine, actor, Self::TOOL)?;
        prepare_revision(
            engine,
            args.patch.as_ref(),
            args.patch_base64.as_ref(),
            args.patch_format,
            args.edit_plan.as_ref(),
            args.strip,
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
            return Err(ToolError::new(
                format!(
                    "proposal {} is at revision {}, not the expected {}",
                    p.id, p.latest_revision, args.expected_revision.0
                ),
                ConflictDetails {
                    proposal_id: Some(p.id.clone()),
                    expected_revision: Some(u64::from(args.expected_revision.0)),
                    latest_revision: Some(u64::from(p.latest_revision)),
                    ..ConflictDetails::default()
                },
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
            &p.id,
            Some(&p.id),
            crate::model::ProposalRevisedData {
                revision: number,
                previous_revision: p.latest_revision,
                format: revision.format,
                digest: revision.digest,
                files: revision.changeset.len() as u64,
                rebased_from: None,
                change_id: None,
            },
        )?;
        Ok(ProposalRevised {
            proposal: Proposal::load(cx.tx, &p.id)?,
            revision,
        })
    }
}

fn corrupt(revision: &Revision, why: String) -> ToolError {
    ToolError::new(
        format!("revision content {}: {why}", revision.digest),
        DatabaseDetails {
            digest: Some(revision.digest.to_string()),
            ..DatabaseDetails::default()
        },
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

/// The bytes a revision's changeset is derived from whenever it is
/// computed again (validation, apply, `proposal.symbols`): for a patch, its
/// stored unified diff, rendered from the changeset when the revision was
/// made — so what lands is the diff reviewers read, at strip level 1
/// whatever `strip` the patch came with (a patch revision stored before
/// previews were rendered has the patch itself there); for the other
/// formats, the submitted bytes, which their own readers turn into the
/// same changeset.
pub(crate) fn source_bytes(tx: &Tx<'_>, revision: &Revision) -> Result<Vec<u8>, ToolError> {
    if revision.format == RevisionFormat::Patch {
        super::review::diff_bytes(tx, revision)
    } else {
        revision_bytes(tx, revision)
    }
}

/// A tree read once: the first read of each path goes to `tree`, every
/// later one is answered from memory. A preparation builds the changeset
/// and renders its diff from one such snapshot.
struct ReadOnce<'t, T: ?Sized> {
    tree: &'t T,
    read: std::cell::RefCell<std::collections::HashMap<Vec<u8>, ReadFile>>,
}

/// A path as [`ReadOnce`] read it: the file (if any), with its metadata
/// once something asked for it.
type ReadFile = (Option<crate::diff::TreeFile>, Option<crate::FileMeta>);

impl<'t, T: crate::diff::Tree + ?Sized> ReadOnce<'t, T> {
    fn new(tree: &'t T) -> Self {
        ReadOnce {
            tree,
            read: Default::default(),
        }
    }
}

impl<T: crate::diff::Tree + ?Sized> crate::diff::Tree for ReadOnce<'_, T> {
    fn read(&self, path: &[u8]) -> Result<Option<crate::diff::TreeFile>, crate::diff::TreeError> {
        if let Some((file, _)) = self.read.borrow().get(path) {
            return Ok(file.clone());
        }
        let file = self.tree.read(path)?;
        self.read
            .borrow_mut()
            .insert(path.to_vec(), (file.clone(), None));
        Ok(file)
    }

    fn exists(&self, path: &[u8]) -> Result<bool, crate::diff::TreeError> {
        if let Some((file, _)) = self.read.borrow().get(path) {
            return Ok(file.is_some());
        }
        self.tree.exists(path)
    }

    fn read_meta(
        &self,
        path: &[u8],
    ) -> Result<Option<(crate::diff::TreeFile, crate::FileMeta)>, crate::diff::TreeError> {
        match self.read.borrow().get(path) {
            Some((None, _)) => return Ok(None),
            Some((Some(file), Some(meta))) => return Ok(Some((file.clone(), *meta))),
            _ => {}
        }
        let found = self.tree.read_meta(path)?;
        let entry = match &found {
            Some((file, meta)) => (Some(file.clone()), Some(*meta)),
            None => (None, None),
        };
        self.read.borrow_mut().insert(path.to_vec(), entry);
        Ok(found)
    }
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

/// Move a proposal to `to`, writing its event, whose data `data` makes
/// from the status before and `to`; returns it as stored.
fn transition(
    cx: &Cx<'_>,
    p: &Proposal,
    to: ProposalStatus,
    data: impl FnOnce(ProposalStatus, ProposalStatus) -> crate::model::EventData,
) -> Result<Proposal, ToolError> {
    let changed = store::proposals::set_status(cx.tx, &p.id, p.status, to, cx.now)?;
    assert_eq!(changed, 1, "the row was read in this transaction");
    cx.event(&p.id, Some(&p.id), data(p.status, to))?;
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
        let proposal = transition(cx, &p, ProposalStatus::InReview, |from, to| {
            crate::model::ProposalReviewRequestedData {
                revision: p.latest_revision,
                from,
                to,
            }
            .into()
        })?;
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
        let proposal = transition(cx, &p, ProposalStatus::Withdrawn, |from, to| {
            crate::model::ProposalWithdrawnData {
                reason_md: args.reason_md.as_ref().map(|r| r.as_str().to_owned()),
                from,
                to,
            }
            .into()
        })?;
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
        let proposal = transition(cx, &p, ProposalStatus::Rejected, |from, to| {
            crate::model::ProposalRejectedData {
                revision: p.latest_revision,
                decision_id: decision.id.clone(),
                reason_md: args.reason_md.as_str().to_owned(),
                from,
                to,
            }
            .into()
        })?;
        Ok(Rejected { proposal, decision })
    }
}

#[cfg(test)]
mod tests {
    use super::ReadOnce;
    use crate::diff::{Tree, TreeError, TreeFile};
    use std::cell::Cell;
    use std::collections::BTreeMap;

    /// A tree that counts the reads that reach it.
    struct Counting {
        files: BTreeMap<Vec<u8>, TreeFile>,
        reads: Cell<usize>,
    }

    impl Tree for Counting {
        fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, TreeError> {
            self.reads.set(self.reads.get() + 1);
            self.files.read(path)
        }
    }

    #[test]
    fn a_preparation_reads_each_file_once_for_the_changeset_and_its_diff() {
        let mut files = BTreeMap::new();
        files.insert(b"a.txt".to_vec(), TreeFile::regular(b"one\ntwo\n".to_vec()));
        let tree = Counting {
            files,
            reads: Cell::new(0),
        };
        let once = ReadOnce::new(&tree);
        let patch = b"--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n";
        let changeset = super::changeset_against(
            &once,
            crate::model::RevisionFormat::Patch,
            patch,
            &crate::diff::ParseOptions::default(),
        )
        .expect("applies");
        let first = tree.reads.get();
        assert!(first >= 1, "the changeset read the file");
        let diff = changeset.render_diff(&once).expect("renders");
        assert_eq!(tree.reads.get(), first, "the diff read the file again");
        assert_eq!(diff, changeset.render_diff(&tree).expect("renders"));
        // An absent file is remembered as absent.
        assert_eq!(once.read(b"b.txt").expect("read"), None);
        let reads = tree.reads.get();
        assert!(!once.exists(b"b.txt").expect("exists"));
        assert_eq!(once.read_meta(b"b.txt").expect("meta"), None);
        assert_eq!(tree.reads.get(), reads);
    }
}
