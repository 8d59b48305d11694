//! `proposal.revert`: a new proposal whose revision 1 is the inverse of an
//! applied proposal's change, governed like any other.
//!
//! The inverse is computed against the current files: the applied
//! revision's diff, reversed ([`Patch::reverse`](crate::diff::Patch::reverse)),
//! applied the way `git apply` would (context matched, offsets found), so
//! later changes elsewhere in the same files do not stand in its way. A
//! change the diff grammar cannot reverse (a copy, a binary patch without a
//! reverse hunk) is inverted from the apply's journal instead (its before
//! snapshot), which needs every path it wrote still at its after state.
//! Either way, an inverse that no longer applies is `precondition_failed`
//! and nothing is stored.
//!
//! The caller, a registered enabled agent, becomes the author (as for
//! `proposal.create`; the actor is never named in the arguments, so an
//! orchestrator that wants a revert asks an agent to make it). The new
//! proposal's `reverts` names the reverted one, so does its
//! `proposal.created` event, and a policy can require a human approval or
//! a security review of every revert (`reverts = true`).

use super::args::{Markdown, ResourceId, Title};
use super::details::{
    ConflictDetails, ErrorCause, ForbiddenDetails, PreconditionFailedDetails, PreconditionReason,
};
use super::proposals::{
    canonical_resources, insert_revision, prepare_bytes, PreparedRevision, ProposalRevised,
};
use super::records::{Proposal, ProposalStatus, Revision, Risk};
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::apply::{compare, journal, restore_changeset, PathState, TransactionStatus};
use crate::engine::Engine;
use crate::id::Id;
use crate::model::RevisionFormat;
use crate::operations::records::ProposalRecord;
use crate::operations::records::RevisionRecord;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `proposal.revert`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RevertArgs")]
pub struct RevertProposal {
    /// The applied proposal whose change to revert.
    pub proposal_id: Id,
    /// The task of the revert (default: the reverted proposal's).
    pub task_id: Option<Id>,
    /// Its title (default: `Revert "<title>"`).
    pub title: Option<Title>,
    /// Why (default: which proposal, revision and transaction it reverts).
    pub summary_md: Option<Markdown>,
    /// Its risk (default: the reverted proposal's). Never below the
    /// reverted proposal's: a lower one is raised to it, so that undoing a
    /// change needs what making it needed.
    pub risk: Option<Risk>,
    /// The declared resources (default: the reverted revision's).
    pub affected_resources: Option<Vec<ResourceId>>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// What `prepare` found: the reverted proposal and revision, and the
/// inverse as a revision.
pub(crate) struct Inverse {
    target: Proposal,
    revision: Revision,
    revision_made: PreparedRevision,
}

impl super::Request for RevertProposal {
    const TOOL: &'static str = "proposal.revert";
    const DESCRIPTION: &'static str = "Propose reverting an applied proposal: a new proposal (the caller, an enabled agent, is its author) whose revision 1 is the inverse of the applied revision, computed against the current files, governed like any other (a policy may require a human approval or security review of every revert). Its proposal names the one it reverts (reverts). precondition_failed when later changes keep the inverse from applying; illegal_transition unless the proposal is applied (a rolled-back one is already undone).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent];
    type Output = ProposalRevised;

    store_tool!();
}

/// `precondition_failed`: the inverse of `revision` does not apply now.
fn does_not_apply(target: &Proposal, revision: u32, cause: &ToolError) -> ToolError {
    let cause = ErrorCause {
        code: cause.code(),
        message: cause.message().to_owned(),
        details: cause.details().as_object().cloned().unwrap_or_default(),
    };
    ToolError::new(
        format!(
            "the inverse of revision {revision} of {} does not apply to the current files: {}",
            target.id, cause.message
        ),
        PreconditionFailedDetails {
            proposal_id: Some(target.id.clone()),
            revision: Some(u64::from(revision)),
            cause: Some(Box::new(cause)),
            ..PreconditionFailedDetails::default()
        },
    )
}

/// The inverse of the applied revision as patch bytes: its diff reversed,
/// else (the diff cannot say it) the apply's before snapshot as a diff.
fn inverse_bytes(
    engine: &Engine,
    target: &Proposal,
    revision: &Revision,
    diff: &[u8],
) -> Result<Vec<u8>, ToolError> {
    let patch = crate::diff::parse(diff, &engine.options().parse_options())?;
    if let Ok(reversed) = patch.reverse() {
        // Applied to the current files (context matched as `git apply`
        // does) and rendered back as a plain `a/`→`b/` diff, so reviewers
        // read the revert like any other change.
        let ws = engine.workspace().view();
        let changeset = crate::Changeset::from_patch(&reversed, &ws)
            .map_err(|e| does_not_apply(target, revision.number, &ToolError::from(e)))?;
        in_place(engine, target, revision, &changeset)?;
        return Ok(changeset.render_diff(&ws)?);
    }
    // From the journal of the transaction that put the change in place.
    let landed = engine.store().read(|tx| {
        let all = store::transactions::list(
            tx,
            0,
            Some(&target.id),
            Some(TransactionStatus::Applied),
            i64::MAX,
        )?;
        let Some(last) = all.into_iter().last() else {
            return Ok::<_, ToolError>(None);
        };
        Ok(Some(journal(tx, &last.id)?))
    })?;
    let Some(files) = landed else {
        return Err(ToolError::new(
            format!(
                "no applied transaction of {} holds the content its change replaced",
                target.id
            ),
            PreconditionFailedDetails {
                proposal_id: Some(target.id.clone()),
                revision: Some(u64::from(revision.number)),
                ..PreconditionFailedDetails::default()
            },
        ));
    };
    let ws = engine.workspace().view();
    let reports = compare(&ws, &files)?;
    let moved: Vec<&str> = reports
        .iter()
        .filter(|r| r.state != PathState::AtAfter)
        .map(|r| r.path.as_str())
        .collect();
    if !moved.is_empty() {
        return Err(ToolError::new(
            format!(
                "the change of {} cannot be inverted as a diff, and {} changed since it was applied",
                target.id,
                moved.join(", ")
            ),
            PreconditionFailedDetails {
                proposal_id: Some(target.id.clone()),
                revision: Some(u64::from(revision.number)),
                paths: Some(moved.iter().map(|&p| p.to_owned()).collect()),
                ..PreconditionFailedDetails::default()
            },
        ));
    }
    let changeset = restore_changeset(engine.store(), &files, &reports)?;
    Ok(changeset.render_diff(&ws)?)
}

/// `precondition_failed` unless the inverse `changeset` undoes the change
/// where it was made: for each text file the revision modified, the
/// inverse must be what a three-way merge gives (the change's result as
/// the base, its original as ours, the current file as theirs). The diff's
/// context search alone could find a look-alike block elsewhere once the
/// lines around the change were edited; the merge places the undo by the
/// change's own position, or conflicts. Revisions stored without their
/// contents (before rebase support) are not checked.
fn in_place(
    engine: &Engine,
    target: &Proposal,
    revision: &Revision,
    changeset: &crate::Changeset,
) -> Result<(), ToolError> {
    let Ok(sides) = engine
        .store()
        .read(|tx| super::rebase::stored_sides(tx, revision))
    else {
        return Ok(());
    };
    for (f, s) in revision.changeset.iter().zip(&sides) {
        let (crate::model::OperationKind::Modify, Some(made_on), Some(made)) =
            (f.operation, &s.base, &s.ours)
        else {
            continue;
        };
        if made_on.symlink
            || made.symlink
            || crate::changeset::render::is_binary(&made_on.data)
            || crate::changeset::render::is_binary(&made.data)
        {
            continue;
        }
        let Some(inverse) = changeset.files().iter().find(|c| c.path.as_str() == f.path) else {
            continue;
        };
        let Ok(path) = f.path.parse::<crate::RepoPath>() else {
            continue;
        };
        let Some(now) = engine.workspace().read(&path)? else {
            continue;
        };
        let placed = match crate::merge::merge3(&made.data, &made_on.data, &now.data) {
            crate::merge::Merged::Clean(data) => Some(data),
            crate::merge::Merged::Conflicts(_) => None,
        };
        let undone = inverse.after.as_ref().map(|a| a.data.as_slice());
        if placed.as_deref() != undone {
            return Err(ToolError::new(
                format!(
                    "the inverse of revision {} of {} no longer applies where the change was made in {}: the lines around it changed since (revert it by hand, as a new proposal)",
                    revision.number, target.id, f.path
                ),
                PreconditionFailedDetails {
                    proposal_id: Some(target.id.clone()),
                    revision: Some(u64::from(revision.number)),
                    path: Some(f.path.to_string()),
                    reason: Some(PreconditionReason::Moved),
                    ..PreconditionFailedDetails::default()
                },
            ));
        }
    }
    Ok(())
}

impl Tool for RevertProposal {
    type Prep = Inverse;

    keyed!();

    fn prepare(
        engine: &Engine,
        actor: &Actor,
        args: &RevertProposal,
    ) -> Result<Inverse, ToolError> {
        if actor.kind != ActorKind::Agent {
            return Err(ToolError::new(
                format!(
                    "{} is for agent actors (the caller becomes the revert's author); {actor} is not an agent",
                    Self::TOOL
                ),
                ForbiddenDetails::agents_only(actor),
            ));
        }
        let (target, revision, diff) = engine.store().read(|tx| {
            let target = Proposal::load(tx, args.proposal_id.as_str())?;
            target.require_status(&[ProposalStatus::Applied], Self::TOOL)?;
            let revision = Revision::load(tx, &target.id, target.latest_revision)?;
            let diff = super::review::diff_bytes(tx, &revision)?;
            Ok::<_, ToolError>((target, revision, diff))
        })?;
        let bytes = inverse_bytes(engine, &target, &revision, &diff)?;
        let revision_made = prepare_bytes(engine, RevisionFormat::Patch, bytes)
            .map_err(|e| does_not_apply(&target, revision.number, &e))?;
        Ok(Inverse {
            target,
            revision,
            revision_made,
        })
    }

    fn run(cx: &Cx<'_>, args: RevertProposal, prep: Inverse) -> Result<ProposalRevised, ToolError> {
        let agent = cx.enabled_agent(Self::TOOL)?;
        // Read again in this transaction: rolled back (or reverted and
        // re-landed) since `prepare`, the inverse would be of another state.
        let target = Proposal::load(cx.tx, &prep.target.id)?;
        target.require_status(&[ProposalStatus::Applied], Self::TOOL)?;
        if target.latest_revision != prep.revision.number
            || target.updated_at != prep.target.updated_at
        {
            return Err(ToolError::new(
                format!(
                    "proposal {} changed while its revert was prepared; retry",
                    target.id
                ),
                ConflictDetails {
                    proposal_id: Some(target.id.clone()),
                    ..ConflictDetails::default()
                },
            ));
        }
        let task_id = args
            .task_id
            .as_ref()
            .map_or(target.task_id.as_str(), Id::as_str);
        if !store::agents::task_exists(cx.tx, task_id)? {
            return Err(ToolError::not_found("task", task_id));
        }
        let resources = match &args.affected_resources {
            Some(r) => canonical_resources(r)?,
            None => prep.revision.affected_resources.clone(),
        };
        let title = match &args.title {
            Some(t) => t.as_str().to_owned(),
            None => format!("Revert \"{}\"", target.title)
                .chars()
                .take(200)
                .collect(),
        };
        let summary = match &args.summary_md {
            Some(s) => s.as_str().to_owned(),
            None => format!(
                "Reverts proposal {} (revision {}).",
                target.id, prep.revision.number
            ),
        };
        let risk = args.risk.map_or(target.risk, |r| r.max(target.risk));
        let (id, revision) = insert_revert(
            cx,
            &NewRevert {
                task_id,
                author: &agent.id,
                title: &title,
                summary_md: &summary,
                risk,
                reverts: &target.id,
                reverted_revision: prep.revision.number,
                revision: &prep.revision_made,
                resources: &resources,
            },
        )?;
        Ok(ProposalRevised {
            proposal: Proposal::load(cx.tx, id.as_str())?,
            revision,
        })
    }
}

/// A revert proposal to store: [`insert_revert`]'s input.
pub(super) struct NewRevert<'a> {
    /// Its task.
    pub task_id: &'a str,
    /// Its author (an agent's id).
    pub author: &'a str,
    /// Its title.
    pub title: &'a str,
    /// Its summary.
    pub summary_md: &'a str,
    /// Its risk.
    pub risk: Risk,
    /// The proposal it names as reverted.
    pub reverts: &'a str,
    /// That proposal's revision it undoes.
    pub reverted_revision: u32,
    /// Its revision 1.
    pub revision: &'a PreparedRevision,
    /// Its declared resources.
    pub resources: &'a [String],
}

/// Store a revert proposal (`proposal.revert`'s and
/// `proposal.revert_agent`'s): the proposal, its revision 1 and its
/// `proposal.created` event naming what it reverts. Its id and revision.
pub(super) fn insert_revert(cx: &Cx<'_>, new: &NewRevert<'_>) -> Result<(Id, Revision), ToolError> {
    let id = cx.new_id("prop");
    store::proposals::insert_proposal(
        cx.tx,
        &store::proposals::NewProposal {
            id: id.as_str(),
            task_id: new.task_id,
            author: new.author,
            title: new.title,
            summary_md: new.summary_md,
            risk: new.risk,
            reverts: Some(new.reverts),
            now: cx.now,
        },
    )?;
    let revision = insert_revision(cx, id.as_str(), 1, new.revision, new.resources, None)?;
    cx.event(
        id.as_str(),
        Some(id.as_str()),
        crate::model::ProposalCreatedData {
            task_id: new.task_id.to_owned(),
            risk: new.risk,
            revision: 1,
            format: revision.format,
            digest: revision.digest,
            files: revision.changeset.len() as u64,
            reverts: Some(new.reverts.to_owned()),
            reverted_revision: Some(new.reverted_revision),
        },
    )?;
    Ok((id, revision))
}
