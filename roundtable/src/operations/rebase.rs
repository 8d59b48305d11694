//! `proposal.rebase`: revision n+1 made by replaying revision n's change,
//! from the base it was made on, onto the files as they are now.
//!
//! Every revision keeps the base and result contents of the files it
//! touches (content-addressed blobs). A rebase merges, per touched path,
//! base → revision onto base → current with [`crate::merge::merge3`]: a
//! real three-way merge, no fuzz. Where both sides changed the same lines
//! the rebase is refused with `conflict` and, per file, the conflicting
//! stretches with their base, revision ("ours") and current ("theirs")
//! lines, so that the author can resolve them and attach a revision. A
//! clean rebase is stored as a patch against the current files, records
//! the revision it rebases, and — when it makes the same change at other
//! positions (its `change_id` is the old one's) — keeps the old revision's
//! evidence under `carry_over = "trivial_rebase"`.

use super::args::{Markdown, RevisionNumber};
use super::details::{
    ConflictDetails, ConflictReason, DatabaseDetails, ForbiddenDetails, ForbiddenReason,
};
use super::proposals::{insert_revision, prepare_bytes, PreparedRevision, ProposalRevised};
use super::records::{FileSummary, Proposal, ProposalStatus, Revision};
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::changeset::{Changeset, FileChange, FileContent, FileMeta, Operation};
use crate::diff::TreeFile;
use crate::engine::Engine;
use crate::id::Id;
use crate::merge::{merge3, Conflict, Merged};
use crate::model::{FileState, RevisionFormat};
use crate::operations::records::ProposalRecord;
use crate::operations::records::RevisionRecord;
use crate::store::sql::Tx;
use crate::{ErrorCode, RepoPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `proposal.rebase`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RebaseArgs")]
pub struct RebaseProposal {
    /// The proposal to rebase.
    pub proposal_id: Id,
    /// The revision to rebase: must be the latest, else `conflict`.
    pub expected_revision: RevisionNumber,
    /// A note for reviewers (default: which revision was rebased).
    pub note_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// One file a rebase could not merge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FileConflict {
    /// The path.
    pub path: String,
    /// Why, for a conflict of the whole file (one side deleted or created
    /// it, a binary file or link changed on both sides, both changed the
    /// mode differently); `null` when `hunks` says it.
    pub reason: Option<String>,
    /// The stretches both sides changed differently, in file order.
    pub hunks: Vec<Conflict>,
}

impl super::Request for RebaseProposal {
    const TOOL: &'static str = "proposal.rebase";
    const DESCRIPTION: &'static str = "Make revision n+1 of a pending or in-review proposal by a three-way merge of revision n's change (from the files it was made on) onto the current files (author or orchestrator; expected_revision must be the latest). A conflict is refused with `conflict` and, in details.files, each file's conflicting hunks with base, ours (the revision) and theirs (the current file), to resolve and attach. A clean rebase that makes the same change at other positions keeps the revision's evidence under carry_over = \"trivial_rebase\".";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent, ActorKind::Orchestrator];
    type Output = ProposalRevised;

    store_tool!();
}

impl Tool for RebaseProposal {
    type Prep = PreparedRevision;

    keyed!();

    fn prepare(
        engine: &Engine,
        actor: &Actor,
        args: &RebaseProposal,
    ) -> Result<PreparedRevision, ToolError> {
        let number = args.expected_revision.0;
        let (p, revision, sides) = engine.store().read(|tx| {
            let p = Proposal::load(tx, args.proposal_id.as_str())?;
            let revision = Revision::load(tx, &p.id, number)?;
            let sides = stored_sides(tx, &revision)?;
            Ok::<_, ToolError>((p, revision, sides))
        })?;
        let allowed = actor.kind == ActorKind::Orchestrator
            || (actor.kind == ActorKind::Agent && actor.id.as_str() == p.author);
        if !allowed {
            return Err(ToolError::new(
                format!(
                    "only the author ({}) or an orchestrator may call {}; the caller is {actor}",
                    p.author,
                    Self::TOOL
                ),
                ForbiddenDetails {
                    author: Some(p.author.clone()),
                    ..ForbiddenDetails::new(actor, ForbiddenReason::NotAuthor)
                },
            ));
        }
        // Said before any merge is tried: a proposal that landed (or was
        // closed) has nothing to rebase, whatever its revision's files.
        p.require_status(
            &[ProposalStatus::Pending, ProposalStatus::InReview],
            Self::TOOL,
        )?;
        let merged = || -> Result<PreparedRevision, ToolError> {
            let files = merged_files(engine, &p, &revision, &sides)?;
            let changeset = Changeset::new(files).expect("one entry per summary path");
            let patch = changeset.render_diff(engine.workspace())?;
            let mut prep = prepare_bytes(engine, RevisionFormat::Patch, patch)?;
            prep.rebased_from = Some(number);
            Ok(prep)
        };
        merged().map_err(|e| {
            // The files moved under the merge because the proposal landed
            // (or is landing, or was closed) meanwhile: said as what it is,
            // not as what merging onto the landed files gave.
            let now = engine.store().read(|tx| {
                let now = Proposal::load(tx, args.proposal_id.as_str())?;
                now.require_status(
                    &[ProposalStatus::Pending, ProposalStatus::InReview],
                    Self::TOOL,
                )?;
                now.require_not_applying(tx, Self::TOOL)
            });
            match now {
                Err(now)
                    if matches!(now.code(), ErrorCode::IllegalTransition | ErrorCode::Busy) =>
                {
                    now
                }
                _ => e,
            }
        })
    }

    fn run(
        cx: &Cx<'_>,
        args: RebaseProposal,
        prep: PreparedRevision,
    ) -> Result<ProposalRevised, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        cx.require_author_or_orchestrator(&p.author, Self::TOOL)?;
        p.require_status(
            &[ProposalStatus::Pending, ProposalStatus::InReview],
            Self::TOOL,
        )?;
        p.require_not_applying(cx.tx, Self::TOOL)?;
        let from = args.expected_revision.0;
        if from != p.latest_revision {
            return Err(ToolError::new(
                format!(
                    "proposal {} is at revision {}, not the expected {from}",
                    p.id, p.latest_revision
                ),
                ConflictDetails {
                    proposal_id: Some(p.id.clone()),
                    expected_revision: Some(u64::from(from)),
                    latest_revision: Some(u64::from(p.latest_revision)),
                    ..ConflictDetails::default()
                },
            ));
        }
        let resources = Revision::load(cx.tx, &p.id, from)?.affected_resources;
        let number = from + 1;
        let default_note = default_note(from);
        let note = args
            .note_md
            .as_ref()
            .map_or(default_note.as_str(), |t| t.as_str());
        let revision = insert_revision(cx, &p.id, number, &prep, &resources, Some(note))?;
        crate::store::proposals::set_latest_revision(cx.tx, &p.id, number, cx.now)?;
        cx.event(
            &p.id,
            Some(&p.id),
            crate::model::ProposalRevisedData {
                revision: number,
                previous_revision: from,
                format: revision.format,
                digest: revision.digest,
                files: revision.changeset.len() as u64,
                rebased_from: Some(from),
                change_id: revision.change_id.clone(),
            },
        )?;
        Ok(ProposalRevised {
            proposal: Proposal::load(cx.tx, &p.id)?,
            revision,
        })
    }
}

/// The note of a rebase of revision `from` that names none.
pub(super) fn default_note(from: u32) -> String {
    format!("rebase of revision {from} onto the current files")
}

/// A touched path's base and result as the revision stored them.
pub(crate) struct Sides {
    /// What the revision was made on.
    pub(super) base: Option<TreeFile>,
    /// What the revision made of it.
    pub(super) ours: Option<TreeFile>,
}

fn stored_file(
    tx: &Tx<'_>,
    revision: &Revision,
    path: &str,
    state: &FileState,
) -> Result<TreeFile, ToolError> {
    let data = crate::store::verified_blob(tx, &state.digest)?.map_err(|_| {
        ToolError::new(
            format!(
                "revision {} does not keep the content of {path} it was made on (it predates rebase support): attach a rebased revision instead",
                revision.number
            ),
            ConflictDetails {
                reason: Some(ConflictReason::BaseUnavailable),
                revision: Some(u64::from(revision.number)),
                path: Some(path.to_owned()),
                ..ConflictDetails::default()
            },
        )
    })?;
    Ok(TreeFile {
        data,
        executable: state.executable,
        symlink: state.symlink,
    })
}

pub(super) fn stored_sides(tx: &Tx<'_>, revision: &Revision) -> Result<Vec<Sides>, ToolError> {
    revision
        .changeset
        .iter()
        .map(|f: &FileSummary| {
            let side = |s: &Option<FileState>| {
                s.as_ref()
                    .map(|s| stored_file(tx, revision, &f.path, s))
                    .transpose()
            };
            Ok(Sides {
                base: side(&f.before)?,
                ours: side(&f.after)?,
            })
        })
        .collect()
}

fn content(f: &TreeFile) -> FileContent {
    FileContent {
        data: f.data.clone(),
        executable: f.executable,
        symlink: f.symlink,
    }
}

fn opaque(f: &TreeFile) -> bool {
    f.symlink || crate::changeset::render::is_binary(&f.data)
}

/// What one path becomes: its new result, nothing to do, or a conflict.
enum Outcome {
    Write(Option<FileContent>),
    Unchanged,
    Conflict(FileConflict),
}

fn whole(path: &str, reason: &str) -> Outcome {
    Outcome::Conflict(FileConflict {
        path: path.to_owned(),
        reason: Some(reason.to_owned()),
        hunks: Vec::new(),
    })
}

/// Merge one path: `base` → `ours` replayed onto `theirs`.
fn merge_path(
    path: &str,
    base: Option<&TreeFile>,
    ours: Option<&TreeFile>,
    theirs: Option<&TreeFile>,
) -> Outcome {
    if ours == theirs {
        return Outcome::Unchanged; // the current file is already the result
    }
    if base == theirs {
        return Outcome::Write(ours.map(content));
    }
    match (base, ours, theirs) {
        (_, _, None) if base.is_some() => whole(
            path,
            "the revision changes it, and it was deleted meanwhile",
        ),
        (None, Some(_), Some(_)) => whole(
            path,
            "the revision creates it, and it was created meanwhile with other content",
        ),
        (Some(_), None, Some(_)) => whole(
            path,
            "the revision deletes it, and it was changed meanwhile",
        ),
        (Some(b), Some(o), Some(t)) => {
            let exec = if o.executable != b.executable {
                if t.executable != b.executable && t.executable != o.executable {
                    return whole(path, "both changed its mode");
                }
                o.executable
            } else {
                t.executable
            };
            if opaque(b) || opaque(o) || opaque(t) {
                return if b.data == o.data && !(b.symlink ^ o.symlink) {
                    Outcome::Write(Some(FileContent {
                        executable: exec,
                        ..content(t)
                    }))
                } else {
                    whole(path, "a binary file or link changed on both sides")
                };
            }
            match merge3(&b.data, &o.data, &t.data) {
                Merged::Clean(data) => Outcome::Write(Some(FileContent {
                    data,
                    executable: exec,
                    symlink: false,
                })),
                Merged::Conflicts(hunks) => Outcome::Conflict(FileConflict {
                    path: path.to_owned(),
                    reason: None,
                    hunks,
                }),
            }
        }
        _ => whole(path, "both sides changed it"),
    }
}

/// A path as a revision's summary stores it (valid when it was stored).
fn stored_path(path: &str) -> Result<RepoPath, ToolError> {
    RepoPath::from_bytes(path.as_bytes()).map_err(|e| {
        ToolError::new(
            format!("a stored revision names an invalid path {path:?}: {e}"),
            DatabaseDetails {
                path: Some(path.to_owned()),
                ..DatabaseDetails::default()
            },
        )
    })
}

/// The rebased revision's changes against the current files, or the
/// refusal: `conflict` when nothing needs rebasing, when the change is
/// already in the files, or when the merge conflicts.
fn merged_files(
    engine: &Engine,
    p: &Proposal,
    revision: &Revision,
    sides: &[Sides],
) -> Result<Vec<FileChange>, ToolError> {
    merged_onto(p, revision, sides, &|path: &RepoPath| {
        Ok(engine.workspace().read(path)?)
    })
}

/// [`merged_files`] onto the files `read` gives (the workspace's, or a
/// speculative state's of the landing queue).
pub(super) fn merged_onto(
    p: &Proposal,
    revision: &Revision,
    sides: &[Sides],
    read: &dyn Fn(&RepoPath) -> Result<Option<TreeFile>, ToolError>,
) -> Result<Vec<FileChange>, ToolError> {
    let current = |path: &str| -> Result<Option<TreeFile>, ToolError> { read(&stored_path(path)?) };
    let mut files = Vec::new();
    let mut conflicts = Vec::new();
    let mut moved = false;
    for (f, s) in revision.changeset.iter().zip(sides) {
        let path = stored_path(&f.path)?;
        let operation = match f.operation {
            crate::model::OperationKind::Create => Operation::Create,
            crate::model::OperationKind::Modify => Operation::Modify,
            crate::model::OperationKind::Delete => Operation::Delete,
            kind => {
                let other = stored_path(f.other_path.as_deref().unwrap_or(""))?;
                match kind {
                    crate::model::OperationKind::Rename => Operation::Rename { from: other },
                    crate::model::OperationKind::Copy => Operation::Copy { from: other },
                    _ => Operation::RenamedAway { to: other },
                }
            }
        };
        let theirs = current(&f.path)?;
        moved |= s.base != theirs;
        let outcome = match &operation {
            // A rename's destination merges the source's content: its base
            // is the source's base, and what landed meanwhile is the
            // source's current content.
            Operation::Rename { from } => {
                let source = revision
                    .changeset
                    .iter()
                    .position(|g| g.path == from.as_str())
                    .and_then(|i| sides[i].base.as_ref());
                let source_now = current(from.as_str())?;
                moved |= source.cloned() != source_now;
                if theirs.is_some() {
                    whole(
                        &f.path,
                        "the revision renames a file here, and this path was created meanwhile",
                    )
                } else if source_now.is_none() {
                    whole(
                        &f.path,
                        "the revision renames a file here whose source was deleted meanwhile",
                    )
                } else {
                    match merge_path(&f.path, source, s.ours.as_ref(), source_now.as_ref()) {
                        Outcome::Unchanged => Outcome::Write(s.ours.as_ref().map(content)),
                        other => other,
                    }
                }
            }
            // A renamed-away source goes, whatever it holds now (its
            // content was merged into the destination).
            Operation::RenamedAway { .. } => match theirs {
                Some(_) => Outcome::Write(None),
                None => whole(
                    &f.path,
                    "the revision renames it away, and it was deleted meanwhile",
                ),
            },
            _ => merge_path(&f.path, s.base.as_ref(), s.ours.as_ref(), theirs.as_ref()),
        };
        let same = |after: &Option<FileContent>| {
            after.as_ref().map(|c| (&c.data, c.executable, c.symlink))
                == theirs.as_ref().map(|t| (&t.data, t.executable, t.symlink))
        };
        match outcome {
            // The merge leaves the path as it is now (its change already
            // landed there): nothing to write, and a rebase that writes
            // nothing anywhere is `already_applied`, never an empty patch.
            Outcome::Write(after)
                if same(&after)
                    && matches!(
                        operation,
                        Operation::Create | Operation::Modify | Operation::Delete
                    ) => {}
            Outcome::Write(after) => files.push(FileChange {
                path,
                operation,
                before: theirs.as_ref().map(FileMeta::of),
                after,
            }),
            Outcome::Unchanged => {}
            Outcome::Conflict(c) => conflicts.push(c),
        }
    }
    if !moved {
        return Err(ToolError::new(
            format!(
                "revision {} of {} is not stale: the files it touches are as it was made on",
                revision.number, p.id
            ),
            rebase_refusal(ConflictReason::UpToDate, p, revision),
        ));
    }
    if !conflicts.is_empty() {
        let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
        return Err(ToolError::new(
            format!(
                "revision {} of {} does not merge onto the current files: {} conflict (resolve and attach a revision)",
                revision.number,
                p.id,
                paths.join(", ")
            ),
            ConflictDetails {
                files: Some(conflicts),
                ..rebase_refusal(ConflictReason::MergeConflict, p, revision)
            },
        ));
    }
    if files.is_empty() {
        return Err(ToolError::new(
            format!(
                "revision {} of {}: its change is already in the files",
                revision.number, p.id
            ),
            rebase_refusal(ConflictReason::AlreadyApplied, p, revision),
        ));
    }
    Ok(files)
}

/// A rebase of `revision` of `p` refused for `reason`.
fn rebase_refusal(reason: ConflictReason, p: &Proposal, revision: &Revision) -> ConflictDetails {
    ConflictDetails {
        reason: Some(reason),
        proposal_id: Some(p.id.clone()),
        revision: Some(u64::from(revision.number)),
        ..ConflictDetails::default()
    }
}

/// What rebasing `revision` (stale) of `p` onto the current files would
/// give, for `next`: `None` when it cannot be told (its base contents
/// predate rebase support, or the store or files failed to read).
pub(crate) fn rebase_outlook(
    cx: &Cx<'_>,
    p: &Proposal,
    revision: &Revision,
) -> Option<super::next::RebaseOutlook> {
    use super::next::RebaseOutlook as O;
    let sides = stored_sides(cx.tx, revision).ok()?;
    let files = match merged_files(cx.engine, p, revision, &sides) {
        Ok(files) => files,
        Err(e) if e.conflict_reason() == Some(ConflictReason::MergeConflict) => {
            return Some(O::Conflicts)
        }
        Err(_) => return None,
    };
    let changeset = Changeset::new(files).ok()?;
    let patch = changeset.render_diff(cx.engine.workspace()).ok()?;
    let prep = prepare_bytes(cx.engine, RevisionFormat::Patch, patch).ok()?;
    Some(if revision.change_id.as_deref() == Some(prep.change_id()) {
        O::Trivial
    } else {
        O::Changed
    })
}
