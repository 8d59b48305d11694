//! The transaction tools: `patch.apply`, `transaction.rollback`, and the
//! read side (`transaction.get|list|phases|recovery`).

use super::args::{Cursor, Limit, RevisionNumber};
use super::claims::{live_write_claims, Claim};
use super::details::{
    ConflictDetails, ConflictReason, IllegalTransitionDetails, IoDetails, MovedPath,
    PreconditionFailedDetails, RebaseStage, RecordStatus, StaleClaimDetails, StaleClaimReason,
    ValidationFailedDetails, ValidationFailedReason,
};
use super::records::{Proposal, ProposalStatus};
use super::validate::{
    claim_blocks, file_facts, gather_prefetching, validate_with_changeset, ReadBefore, StageStatus,
    ValidationReport,
};
use super::{remember, replay, request_digest, Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::apply::{
    compare, created_dirs, execute, journal, restore_changeset, restore_modes, ApplyLock, Batch,
    Before, JournalFile, PathReport, PathState, Plan, Transaction, TransactionKind,
    TransactionStatus, Unrecovered,
};
use crate::changeset::Operation;
use crate::claims::{overlaps, Scope};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::id::Id;
use crate::model::trace::{Provenance, TraceRecord, WrittenFile};
use crate::operations::claims::ClaimRecord;
use crate::operations::records::ProposalRecord;
use crate::operations::records::RevisionRecord;
use crate::resource::Resource;
use crate::store;
use crate::store::sql::Tx;
use crate::workspace::Workspace;
use crate::RepoPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeSet;

/// How a journaled call starts.
enum Begun<O> {
    /// An earlier call with the same idempotency key: its stored result.
    Replayed(O),
    /// The apply lock is held; the request digest for the idempotency row.
    Locked(ApplyLock, String),
}

/// The common start of `patch.apply` and `transaction.rollback` (an
/// orchestrator's calls): a replay check, the apply lock, and the replay check again
/// under the lock (another process may have finished the same call).
fn begin<A: Serialize, O: serde::de::DeserializeOwned>(
    engine: &Engine,
    actor: &Actor,
    name: &str,
    args: &A,
    key: Option<&Id>,
) -> Result<Begun<O>, ToolError> {
    let request = request_digest(name, args);
    let replayed = |key: Option<&Id>| -> Result<Option<O>, ToolError> {
        match key {
            None => Ok(None),
            Some(key) => engine
                .store()
                .read(|tx| replay(tx, actor, key, name, &request)),
        }
    };
    if let Some(v) = replayed(key)? {
        return Ok(Begun::Replayed(v));
    }
    let lock = lock(engine)?;
    if let Some(v) = replayed(key)? {
        return Ok(Begun::Replayed(v));
    }
    Ok(Begun::Locked(lock, request))
}

/// The apply lock, for a journaled call; a bare repository outside git
/// mode (no working tree to write to) is refused first.
fn lock(engine: &Engine) -> Result<ApplyLock, ToolError> {
    if engine.workspace().is_bare() {
        let setting = engine
            .store()
            .read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
        if setting.branch_ref().is_none() {
            return Err(ToolError::new(
                format!(
                    "{} is a bare repository: it has no working tree to write files to; land changes as commits (workspace.configure with mode git); nothing was changed",
                    engine.root().display()
                ),
                PreconditionFailedDetails {
                    root: Some(engine.root().display().to_string()),
                    bare: Some(true),
                    landing: Some(setting),
                    ..PreconditionFailedDetails::default()
                },
            ));
        }
    }
    Ok(ApplyLock::acquire(
        engine.root(),
        engine.options().busy_timeout,
    )?)
}

/// The before content of every touched path that exists, read through
/// `ws` (a view: what validation read), checked against the changeset's
/// preconditions (a mismatch is `precondition_failed`).
fn snapshot(ws: &Workspace, changeset: &crate::Changeset) -> Result<Vec<Before>, ToolError> {
    let mut out = Vec::new();
    for f in changeset.files() {
        // A path the change creates is checked the way validation's dry
        // run checks it: no file there (a directory the change empties
        // is not one).
        if f.before.is_none() {
            if !ws.no_file_at(&f.path)? {
                return Err(ToolError::new(
                    format!("{} changed while the apply was being prepared", f.path),
                    PreconditionFailedDetails::at(&f.path),
                ));
            }
            continue;
        }
        let now = ws.read_with_mode(&f.path)?;
        if now.as_ref().map(|(_, m, _)| *m) != f.before {
            return Err(ToolError::new(
                format!("{} changed while the apply was being prepared", f.path),
                PreconditionFailedDetails::at(&f.path),
            ));
        }
        if let Some((file, meta, mode)) = now {
            out.push(Before {
                path: f.path.clone(),
                digest: meta.digest,
                data: file.data,
                executable: meta.executable,
                symlink: meta.symlink,
                mode,
            });
        }
    }
    Ok(out)
}

/// Arguments of `patch.apply`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ApplyArgs")]
pub struct ApplyRevision {
    /// The proposal.
    pub proposal_id: Id,
    /// The exact revision the caller approved: a superseded revision is
    /// `conflict` (its details name `latest_revision`).
    pub revision: RevisionNumber,
    /// The new transaction's id (generated when absent; an id in use is
    /// `conflict`).
    pub transaction_id: Option<Id>,
    /// When the revision is stale, first rebase it onto the current files
    /// (as `proposal.rebase`, under the apply lock) and apply the rebase —
    /// only when the rebase is trivial (the same change with the same
    /// context lines in the same enclosing symbols, so that its evidence
    /// carries under `carry_over = "trivial_rebase"`); otherwise refused:
    /// `validation_failed` with `details.stage = "rebase"`, or `conflict`
    /// with the merge's hunks. The rebased revision is stored with the
    /// apply's journal: a refused apply stores nothing. Default false.
    pub rebase: Option<bool>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `patch.apply`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Applied {
    /// The transaction, `applied`.
    pub transaction: Transaction,
    /// The proposal, `applied`.
    pub proposal: Proposal,
    /// The author's claims released with the change.
    pub released_claims: Vec<String>,
    /// The validation report the apply passed.
    pub validation: ValidationReport,
}

impl super::Request for ApplyRevision {
    const TOOL: &'static str = "patch.apply";
    const DESCRIPTION: &'static str = APPLY;
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = Applied;

    fn execute(self, engine: &Engine, actor: &Actor) -> Result<Applied, ToolError> {
        apply(engine, actor, self)
    }
}

impl super::Request for Rollback {
    const TOOL: &'static str = "transaction.rollback";
    const DESCRIPTION: &'static str = ROLLBACK;
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = RolledBack;

    fn execute(self, engine: &Engine, actor: &Actor) -> Result<RolledBack, ToolError> {
        rollback(engine, actor, self)
    }
}

/// `patch.apply`'s description.
const APPLY: &str = "Apply a proposal's exact revision to the workspace, all or nothing across the files and the store (orchestrator only). Takes the apply lock, re-validates every gate, journals the before snapshot durably, writes and flushes the files, then marks the transaction and the proposal applied and releases the author's claims on the change. A refusal changes nothing and carries the full validation report: conflict (with latest_revision) when the revision was superseded, precondition_failed when it no longer matches the files, validation_failed for any other gate, busy when another apply holds the lock past the wait.";

/// A stale revision's rebase, made under the apply lock for `patch.apply`
/// with `rebase`, and not stored: it is validated as the revision that
/// would land, and stored in the journal's own SQL transaction — a refused
/// apply writes no revision.
struct Rebased {
    /// The rebase, to store; taken when it is.
    prep: std::cell::RefCell<Option<super::proposals::PreparedRevision>>,
    /// The revision record it becomes (number n+1).
    record: super::records::Revision,
    /// The change id of the revision it rebases.
    from_change_id: Option<String>,
}

/// With `rebase`, under the apply lock: the stale revision's rebase onto
/// the current files, not yet stored; `None` when the revision is not
/// stale. A rebase that conflicts refuses (`conflict` with the merge's
/// hunks), with nothing written.
fn rebase_first(
    engine: &Engine,
    actor: &Actor,
    args: &ApplyRevision,
) -> Result<Option<Rebased>, ToolError> {
    use super::rebase::RebaseProposal;
    let prep = match <RebaseProposal as Tool>::prepare(engine, actor, &rebase_request(args)) {
        Ok(prep) => prep,
        Err(e) if e.conflict_reason() == Some(ConflictReason::UpToDate) => return Ok(None),
        Err(e) => return Err(e),
    };
    let from = engine.store().read(|tx| {
        super::records::Revision::load(tx, args.proposal_id.as_str(), args.revision.0)
    })?;
    let record = prep.unstored(
        from.number + 1,
        &from.affected_resources,
        Some(&super::rebase::default_note(from.number)),
        actor,
        engine.now(),
    );
    Ok(Some(Rebased {
        prep: std::cell::RefCell::new(Some(prep)),
        record,
        from_change_id: from.change_id,
    }))
}

/// The `proposal.rebase` an apply with `rebase` makes of `args`'s
/// revision (no note, no key of its own).
fn rebase_request(args: &ApplyRevision) -> super::rebase::RebaseProposal {
    super::rebase::RebaseProposal {
        proposal_id: args.proposal_id.clone(),
        expected_revision: args.revision,
        note_md: None,
        idempotency_key: None,
    }
}

/// `validation_failed` for an apply whose rebase changed what surrounds
/// the change (its change id differs: other context lines, another
/// enclosing symbol), so that no evidence on the approved revision
/// carries: the author rebases with `proposal.rebase` and gets it
/// reviewed again.
fn not_trivial(args: &ApplyRevision, report: &ValidationReport) -> ToolError {
    ToolError::new(
        format!(
            "revision {} of {} no longer matches the workspace, and rebasing it changes what surrounds the change (its context or enclosing symbol), so its evidence does not carry (failed: rebase): rebase it with proposal.rebase and have it reviewed again",
            args.revision.0, args.proposal_id
        ),
        ValidationFailedDetails {
            report: Box::new(report.clone()),
            stage: Some(RebaseStage::Rebase),
            reason: Some(ValidationFailedReason::NotTrivial),
        },
    )
}

/// `patch.apply`: finish what an earlier apply left, validate the revision
/// once more (rebased first when asked), then journal and land it under a
/// guard that checks, in the journal's own transaction, that nothing
/// validation relied on changed since. A batch of one ([`apply_batch`]).
fn apply(engine: &Engine, actor: &Actor, args: ApplyRevision) -> Result<Applied, ToolError> {
    const NAME: &str = <ApplyRevision as super::Request>::TOOL;
    let key = args.idempotency_key.clone();
    let (_lock, request) = match begin(engine, actor, NAME, &args, key.as_ref())? {
        Begun::Replayed(v) => return Ok(v),
        Begun::Locked(lock, request) => (lock, request),
    };
    if let Some(v) = finish_earlier_applies(engine, actor, key.as_ref(), &request)? {
        return Ok(v);
    }
    let mut batch = Batch::new(engine.tx_env(), actor);
    let started = start_apply(engine, actor, &args, request, &mut batch)?;
    let mut out = batch.finish(|_, tx, transaction, now| {
        started.record(
            &Cx {
                engine,
                tx,
                actor,
                now,
            },
            transaction,
        )
    })?;
    Ok(out.pop().expect("a batch of one lands one"))
}

/// What [`apply_batch`] did.
pub(crate) struct BatchApplied {
    /// The proposals that landed, in order: the whole batch, or the ones
    /// before the refused one, or none.
    pub(crate) applied: Vec<Applied>,
    /// The first proposal refused, by its position in the batch, and
    /// why; none after it was tried.
    pub(crate) refused: Option<(usize, ToolError)>,
}

/// Land `items` (approved revisions, each as `patch.apply` with the same
/// arguments would land it: validated, evidence and claims checked,
/// fenced by the same guard, rebased when asked — each against the state
/// it lands on: the branch and the items before it) together, in order,
/// in ONE all-or-nothing step under one apply lock: each its own
/// transaction (in git mode its own commit with its own message and
/// trailers, its parent the item before's), journaled and written in
/// turn, then ONE branch update (or push) to the last commit and every
/// outcome in ONE SQL transaction ([`Batch`]). Each item's idempotency
/// key is remembered with its result, as `patch.apply`'s.
///
/// When item `k` (0-based) is refused, none after it is tried, and the
/// `k` before it land together only if `landable(k)` (the state they
/// make was checked); otherwise they are undone (recorded `recovered`)
/// and nothing lands. Its refusal is returned with what landed. An
/// error of the commit point (the branch moved) undoes them all.
pub(crate) fn apply_batch(
    engine: &Engine,
    actor: &Actor,
    items: &[ApplyRevision],
    landable: &dyn Fn(usize) -> bool,
) -> Result<BatchApplied, ToolError> {
    const NAME: &str = <ApplyRevision as super::Request>::TOOL;
    let _lock = lock(engine)?;
    finish_earlier_applies(engine, actor, None, "")?;
    let mut batch = Batch::new(engine.tx_env(), actor);
    let mut started = Vec::with_capacity(items.len());
    let mut refused = None;
    for (k, args) in items.iter().enumerate() {
        let request = request_digest(NAME, args);
        match start_apply(engine, actor, args, request, &mut batch) {
            Ok(s) => started.push(s),
            Err(e) => {
                refused = Some((k, e));
                break;
            }
        }
    }
    if let Some((k, e)) = &refused {
        if !landable(*k) {
            batch.abandon(&format!(
                "proposal {} of the batch was refused ({}), and the ones before it were not checked without the rest",
                k + 1,
                e.code().as_str()
            ))?;
            return Ok(BatchApplied {
                applied: Vec::new(),
                refused,
            });
        }
    }
    let applied = batch.finish(|i, tx, transaction, now| {
        started[i].record(
            &Cx {
                engine,
                tx,
                actor,
                now,
            },
            transaction,
        )
    })?;
    Ok(BatchApplied { applied, refused })
}

/// A revision started in a [`Batch`] (journaled, its files written), and
/// what recording its outcome needs.
struct StartedApply {
    /// The proposal as validation read it.
    proposal: Proposal,
    /// The revision that lands (the rebase's, when rebased).
    revision: u32,
    /// The author's claims the change served.
    used: BTreeSet<String>,
    /// The paths it changes.
    landed_paths: Vec<String>,
    /// The validation report it passed.
    report: ValidationReport,
    /// Its idempotency key, and the request's digest.
    key: Option<Id>,
    request: String,
}

impl StartedApply {
    /// Its outcome, in the batch's outcome transaction: the proposal
    /// applied, claims released, events, the result remembered under
    /// its key.
    fn record(&self, cx: &Cx<'_>, transaction: &Transaction) -> Result<Applied, ToolError> {
        const NAME: &str = <ApplyRevision as super::Request>::TOOL;
        let released = land_outcome(
            cx,
            &self.proposal,
            self.revision,
            &self.used,
            transaction,
            &self.landed_paths,
        )?;
        let out = Applied {
            transaction: transaction.clone(),
            proposal: Proposal::load(cx.tx, &self.proposal.id)?,
            released_claims: released,
            validation: self.report.clone(),
        };
        if let Some(key) = &self.key {
            remember(cx, key, NAME, &self.request, &out)?;
        }
        Ok(out)
    }
}

/// `patch.apply`'s work for one revision, up to its commit point: rebase
/// it first when asked, validate it once more against the files as they
/// stand (the branch and whatever `batch` started before it), plan its
/// landing (in git mode its commit, on the batch's last one or the
/// branch), and start it in `batch` under a guard that checks, in the
/// journal's own transaction, that nothing validation relied on changed
/// since. A refusal starts nothing.
fn start_apply(
    engine: &Engine,
    actor: &Actor,
    args: &ApplyRevision,
    request: String,
    batch: &mut Batch<'_>,
) -> Result<StartedApply, ToolError> {
    const NAME: &str = <ApplyRevision as super::Request>::TOOL;
    let key = args.idempotency_key.clone();
    let rebased = if args.rebase == Some(true) {
        rebase_first(engine, actor, args)?
    } else {
        None
    };
    // One view for the whole apply: validation reads each touched file
    // once (on a second thread, while the store reads the patch), the
    // snapshot reuses what it read, and the write checks by `fstat` that
    // nothing changed since.
    let ws = engine.workspace().view();
    let (evidence, report, changeset) =
        validate_for_apply(engine, actor, args, &ws, rebased.as_ref())?;
    if let Some(r) = &rebased {
        if !crate::changeset::same_change(
            r.from_change_id.as_deref(),
            r.record.change_id.as_deref(),
        ) {
            return Err(not_trivial(args, &report));
        }
    }
    let revision = rebased
        .as_ref()
        .map_or(args.revision.0, |r| r.record.number);
    require_valid(&report)?;
    let changeset = changeset.expect("a valid report has a changeset");
    let snapshot = snapshot(&ws, &changeset)?;
    let id = args
        .transaction_id
        .clone()
        .unwrap_or_else(|| engine.ids().next("tx", engine.now().0));
    let (provenance, author) = provenance(engine, &evidence, &report, revision, id.as_str())?;
    let (landing, changeset) = landing_form(
        engine,
        actor,
        changeset,
        &evidence,
        &provenance,
        batch.last_landing(),
    )?;
    let trace = trace_record(engine, provenance, &author, &changeset, &snapshot);
    let touched = touched_files(&changeset);
    let landed_paths = changed_paths(&changeset);
    let used = used_claims(&evidence.claims, &changeset, &snapshot);
    let proposal = evidence.proposal.clone();
    let relied = relied_claims(&evidence.claims, &touched);
    let guard = JournalGuard {
        engine,
        actor,
        args,
        ws: &ws,
        proposal: &proposal,
        revision,
        relied: &relied,
        touched: &touched,
        rebased: rebased.as_ref(),
    };
    let guard = |tx: &Tx<'_>, now: Timestamp, changeset: &crate::changeset::Changeset| {
        guard.check(tx, now, changeset)
    };
    let plan = Plan {
        id,
        kind: TransactionKind::Apply,
        proposal_id: &proposal.id,
        revision,
        rollback_of: None,
        changeset,
        snapshot,
        workspace: &ws,
        prune_only: None,
        modes: std::collections::BTreeMap::new(),
        landing,
        trace: Some(trace),
        // What a same-key retry needs if the outcome cannot be recorded
        // at once past the commit point.
        request: key.as_ref().map(|key| {
            json!({"idempotency_key": key, "tool": NAME, "request_digest": request,
                   "validation": report})
        }),
    };
    batch.start(plan, Some(&guard))?;
    Ok(StartedApply {
        proposal,
        revision,
        used,
        landed_paths,
        report,
        key,
        request,
    })
}

/// Under the apply lock no apply of this clone is in flight: one its
/// applier could not finish (the store failed after the commit point, or
/// before; the host went on) is finished or undone now, not left until
/// the next open. What cannot be finished is recorded and left; this
/// apply goes on. This very call may be one that landed before its
/// outcome could be recorded: then its result, just recorded under its
/// `key`.
fn finish_earlier_applies(
    engine: &Engine,
    actor: &Actor,
    key: Option<&Id>,
    request: &str,
) -> Result<Option<Applied>, ToolError> {
    const NAME: &str = <ApplyRevision as super::Request>::TOOL;
    crate::apply::recover_locked(engine.tx_env(), &mut Vec::new())?;
    finish_landed_locked(engine)?;
    match key {
        Some(key) => engine
            .store()
            .read(|tx| replay(tx, actor, key, NAME, request)),
        None => Ok(None),
    }
}

/// The evidence for the revision `args` names (or for its rebase, judged
/// as the revision that would land, with the evidence the policy lets
/// carry to it), read on this thread while validation reads the touched
/// files of `ws` on another; the proposal's status checked; the
/// validation report and, when valid, the changeset.
fn validate_for_apply(
    engine: &Engine,
    actor: &Actor,
    args: &ApplyRevision,
    ws: &Workspace,
    rebased: Option<&Rebased>,
) -> Result<
    (
        super::validate::Evidence,
        ValidationReport,
        Option<crate::changeset::Changeset>,
    ),
    ToolError,
> {
    const NAME: &str = <ApplyRevision as super::Request>::TOOL;
    std::thread::scope(|scope| {
        let mut evidence = super::read_cx(engine, actor, |cx| {
            gather_prefetching(
                cx,
                args.proposal_id.as_str(),
                Some(args.revision.0),
                ws,
                scope,
            )
        })?;
        if let Some(r) = rebased {
            // Judged as the revision that would land: the rebase, with
            // the evidence the policy lets carry to it.
            evidence.bytes = r
                .prep
                .borrow()
                .as_ref()
                .expect("the rebase is stored only later")
                .bytes()
                .to_vec();
            evidence.revision = r.record.clone();
            evidence.revisions.push(r.record.clone());
            evidence.proposal.latest_revision = r.record.number;
        }
        // A rolled-back proposal may land again: re-validated like any
        // other (its author claims again; its evidence still names the
        // revision).
        evidence.proposal.require_status(
            &[
                ProposalStatus::Pending,
                ProposalStatus::InReview,
                ProposalStatus::RolledBack,
            ],
            NAME,
        )?;
        let (report, changeset) = validate_with_changeset(engine, ws, &evidence);
        Ok::<_, ToolError>((evidence, report, changeset))
    })
}

/// Refuse an invalid `report`: `conflict` when its revision was
/// superseded (said the way every evidence tool says it,
/// `Proposal::require_latest`, with the report), `precondition_failed`
/// when the workspace moved under it (its preconditions or dry run
/// failed), else `validation_failed`.
fn require_valid(report: &ValidationReport) -> Result<(), ToolError> {
    if report.valid {
        return Ok(());
    }
    if report.revision != report.latest_revision {
        return Err(ToolError::new(
            format!(
                "revision {} of {} was superseded by revision {}",
                report.revision, report.proposal_id, report.latest_revision
            ),
            ConflictDetails {
                proposal_id: Some(report.proposal_id.clone()),
                revision: Some(u64::from(report.revision)),
                latest_revision: Some(u64::from(report.latest_revision)),
                report: Some(Box::new(report.clone())),
                ..ConflictDetails::default()
            },
        ));
    }
    let stale = report.stages.iter().any(|s| {
        (s.name == "preconditions" || s.name == "dry_run") && s.status == StageStatus::Failed
    });
    let failed: Vec<&str> = report
        .stages
        .iter()
        .filter(|s| s.status == StageStatus::Failed)
        .map(|s| s.name.as_str())
        .collect();
    let report = Box::new(report.clone());
    Err(if stale {
        ToolError::new(
            format!(
                "revision {} of {} no longer matches the workspace (failed: {})",
                report.revision,
                report.proposal_id,
                failed.join(", ")
            ),
            PreconditionFailedDetails {
                report: Some(report),
                ..PreconditionFailedDetails::default()
            },
        )
    } else {
        ToolError::new(
            format!(
                "revision {} of {} is not valid (failed: {})",
                report.revision,
                report.proposal_id,
                failed.join(", ")
            ),
            ValidationFailedDetails {
                report,
                stage: None,
                reason: None,
            },
        )
    })
}

/// The landing of transaction `id` and the changeset it writes: none and
/// `changeset` itself in working-tree mode; in git mode, the planned
/// commit (on `after`'s, a transaction of the same batch, when given),
/// and the files `git checkout` of it writes (`.gitattributes`):
/// the changeset in that form.
fn landing_form(
    engine: &Engine,
    actor: &Actor,
    changeset: crate::changeset::Changeset,
    evidence: &super::validate::Evidence,
    provenance: &Provenance,
    after: Option<&store::settings::TransactionLanding>,
) -> Result<
    (
        Option<store::settings::TransactionLanding>,
        crate::changeset::Changeset,
    ),
    ToolError,
> {
    let setting = engine
        .store()
        .read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
    if setting.branch_ref().is_none() {
        return Ok((None, changeset));
    }
    let (landing, worktree) = plan_landing(
        engine,
        &changeset,
        &setting,
        &apply_message(&evidence.proposal, provenance)?,
        &identity(engine, "agent", &evidence.proposal.author),
        &identity(engine, actor.kind.as_str(), actor.id.as_str()),
        after,
    )?;
    Ok((Some(landing), worktree.unwrap_or(changeset)))
}

/// The paths `changeset` changes, sorted (a rename: both).
fn changed_paths(changeset: &crate::changeset::Changeset) -> Vec<String> {
    changeset
        .files()
        .iter()
        .map(|f| f.path.as_str().to_owned())
        .collect()
}

/// A file scope for each path `changeset` touches.
fn touched_files(changeset: &crate::changeset::Changeset) -> Vec<Scope> {
    changeset
        .files()
        .iter()
        .map(|f| Scope {
            resource: Resource::File(f.path.clone()),
            span: None,
        })
        .collect()
}

/// The author's claims validation relied on: their live write claims
/// (`claims`) on the `touched` paths, with the fencing tokens it saw.
fn relied_claims(claims: &[Claim], touched: &[Scope]) -> Vec<Claim> {
    claims
        .iter()
        .filter(|c| {
            c.scope()
                .is_ok_and(|s| touched.iter().any(|t| overlaps(&s, t)))
        })
        .cloned()
        .collect()
}

/// What `patch.apply` checks again in the journal's transaction, after
/// validation read the store in its own.
struct JournalGuard<'a> {
    engine: &'a Engine,
    actor: &'a Actor,
    args: &'a ApplyRevision,
    ws: &'a Workspace,
    /// The proposal as validation read it.
    proposal: &'a Proposal,
    /// The revision that lands (the rebase's, when rebased).
    revision: u32,
    /// The author's claims validation relied on ([`relied_claims`]).
    relied: &'a [Claim],
    /// The paths the change touches ([`touched_files`]).
    touched: &'a [Scope],
    /// The rebase this apply lands, stored with its journal.
    rebased: Option<&'a Rebased>,
}

impl JournalGuard<'_> {
    /// Refuse the apply if, since validation: the proposal's status or
    /// latest revision changed; a claim validation relied on lost its
    /// fencing token; another agent acquired a write claim that overlaps
    /// the change. Then store the rebase (if any). One atomic step with
    /// the journal.
    fn check(
        &self,
        tx: &Tx<'_>,
        now: Timestamp,
        changeset: &crate::changeset::Changeset,
    ) -> Result<(), ToolError> {
        const NAME: &str = <ApplyRevision as super::Request>::TOOL;
        let proposal = self.proposal;
        // The proposal's status and revision, checked again in the
        // journal's transaction: a withdraw, reject, new revision or
        // rebase committed since validation refuses the apply, and one
        // committed after sees the transaction `applying` and waits
        // (`Proposal::require_not_applying`). One atomic step either way.
        let now_p = Proposal::load(tx, &proposal.id)?;
        now_p.require_status(
            &[
                ProposalStatus::Pending,
                ProposalStatus::InReview,
                ProposalStatus::RolledBack,
            ],
            NAME,
        )?;
        now_p.require_latest(self.args.revision.0)?;
        // Fencing: every claim validation relied on still holds its
        // token — not released, not lapsed, and no other agent granted
        // the resource since (a newer token), live or not.
        fenced(tx, now, proposal, self.revision, self.relied)?;
        self.no_claim_granted_since(tx, now, changeset)?;
        // The rebase this apply lands is stored with its journal, by the
        // same step `proposal.rebase` takes (which checks again that the
        // proposal is still at the revision it rebases).
        if let Some(r) = self.rebased {
            let prep = r
                .prep
                .borrow_mut()
                .take()
                .expect("the journal is written once");
            let cx = &Cx {
                engine: self.engine,
                tx,
                actor: self.actor,
                now,
            };
            <super::rebase::RebaseProposal as Tool>::run(cx, rebase_request(self.args), prep)?;
        }
        Ok(())
    }

    /// Validation read the claims in its own transaction; one granted to
    /// another agent since (before this journal) would be overrun by the
    /// apply and be stale at birth, so the journal's transaction checks
    /// again. The same rule as the claims stage: only a claim overlapping
    /// the change itself (a file or directory claim on a touched path, a
    /// symbol claim whose current span holds a changed line) refuses.
    fn no_claim_granted_since(
        &self,
        tx: &Tx<'_>,
        now: Timestamp,
        changeset: &crate::changeset::Changeset,
    ) -> Result<(), ToolError> {
        let proposal = self.proposal;
        let mut facts = None;
        for other in live_write_claims(tx, None, now)? {
            if other.agent_id == proposal.author {
                continue;
            }
            let on_touched = other
                .scope()
                .map_or(true, |s| self.touched.iter().any(|t| overlaps(&s, t)));
            if !on_touched {
                continue;
            }
            if facts.is_none() {
                facts = Some(file_facts(self.ws, changeset, &ReadBefore::None)?);
            }
            let facts = facts.as_deref().unwrap_or_default();
            if claim_blocks(self.engine, self.ws, None, facts, &other) {
                return Err(ToolError::new(
                    format!(
                        "{} acquired write claim {} on {} while revision {} of {} was being validated; nothing was applied",
                        other.agent_id, other.id, other.resource_id, self.revision, proposal.id
                    ),
                    ConflictDetails {
                        holder: Some(Box::new(other.clone())),
                        ..ConflictDetails::default()
                    },
                ));
            }
        }
        Ok(())
    }
}

/// The ids of `claims` (the author's) that the change served
/// ([`crate::coverage::used_by`]), judged on the contents before it
/// (`snapshot`) and after.
fn used_claims(
    claims: &[Claim],
    changeset: &crate::changeset::Changeset,
    snapshot: &[Before],
) -> BTreeSet<String> {
    let files: Vec<crate::coverage::Landed<'_>> = changeset
        .files()
        .iter()
        .map(|f| crate::coverage::Landed {
            path: &f.path,
            operation: &f.operation,
            mode_change: f.mode_change().is_some(),
            before: snapshot
                .iter()
                .find(|b| b.path == f.path)
                .map(|b| b.data.as_slice()),
            after: f.after.as_ref().map(|a| a.data.as_slice()),
        })
        .collect();
    used_ids(claims, &files)
}

/// The ids of `claims` that the landed change `files` used.
fn used_ids(claims: &[Claim], files: &[crate::coverage::Landed<'_>]) -> BTreeSet<String> {
    claims
        .iter()
        .filter(|c| {
            c.scope()
                .is_ok_and(|s| crate::coverage::used_by(&s.resource, files))
        })
        .map(|c| c.id.clone())
        .collect()
}

/// [`used_claims`] for a landing finished from its journal (its outcome
/// was not recorded when it landed): the author's live write claims the
/// journaled change served, its contents read from the journal's blobs.
fn used_claims_journaled(
    cx: &Cx<'_>,
    author: &str,
    transaction_id: &str,
) -> Result<BTreeSet<String>, ToolError> {
    let claims = live_write_claims(cx.tx, Some(author), cx.now)?;
    let journal = crate::apply::journal(cx.tx, transaction_id)?;
    let blob = |d: &Option<crate::Digest>| -> Result<Option<Vec<u8>>, ToolError> {
        match d {
            Some(d) => Ok(crate::store::verified_blob(cx.tx, d)?.ok()),
            None => Ok(None),
        }
    };
    let mut paths = Vec::new();
    let mut contents = Vec::new();
    for f in &journal {
        let Ok(path) = f.path.parse::<RepoPath>() else {
            continue;
        };
        use crate::model::OperationKind as K;
        let operation = match f.operation {
            K::Modify => Operation::Modify,
            K::Create | K::Copy | K::Rename => Operation::Create,
            K::Delete | K::RenamedAway => Operation::Delete,
        };
        // Contents matter only to a symbol claim on the path.
        let symbol_claimed = claims.iter().any(|c| {
            c.scope().is_ok_and(
                |s| matches!(&s.resource, Resource::Symbol { path: p, .. } if *p == path),
            )
        });
        let (before, after) = if symbol_claimed {
            (blob(&f.before_digest)?, blob(&f.after_digest)?)
        } else {
            (None, None)
        };
        let mode_change = f.before_executable.is_some()
            && f.after_executable.is_some()
            && f.before_executable != f.after_executable;
        paths.push((path, operation, mode_change));
        contents.push((before, after));
    }
    let files: Vec<crate::coverage::Landed<'_>> = paths
        .iter()
        .zip(&contents)
        .map(
            |((path, operation, mode_change), (before, after))| crate::coverage::Landed {
                path,
                operation,
                mode_change: *mode_change,
                before: before.as_deref(),
                after: after.as_deref(),
            },
        )
        .collect();
    Ok(used_ids(&claims, &files))
}

/// `stale_claim` unless each of `relied` (the author's claims validation
/// relied on for `revision` of `proposal`) still holds its fencing token
/// as of `now`, in the journal's transaction: live (not released, not
/// lapsed) and not superseded by a write claim another agent was granted
/// since on an overlapping resource (released or lapsed since, or not).
fn fenced(
    tx: &Tx<'_>,
    now: Timestamp,
    proposal: &Proposal,
    revision: u32,
    relied: &[crate::operations::claims::Claim],
) -> Result<(), ToolError> {
    use crate::operations::claims::ClaimStatus;
    for c in relied {
        let current = store::claims::claim(tx, &c.id, now)?;
        let status = current.as_ref().map(|c| c.status);
        if status != Some(ClaimStatus::Active) {
            return Err(ToolError::new(
                format!(
                    "{}'s claim {} on {} (token {}) {} while revision {revision} of {} was being validated; nothing was applied",
                    c.agent_id,
                    c.id,
                    c.resource_id,
                    c.token,
                    if status == Some(ClaimStatus::Released) { "was released" } else { "lapsed" },
                    proposal.id
                ),
                StaleClaimDetails {
                    reason: Some(StaleClaimReason::Lapsed),
                    ..stale(proposal, revision, c)
                },
            ));
        }
        let scope = c.scope()?;
        for newer in store::claims::write_claims_after(tx, c.token, &c.agent_id, now)? {
            if newer.scope().is_ok_and(|s| overlaps(&s, &scope)) {
                return Err(ToolError::new(
                    format!(
                        "{} was granted {} (claim {}, token {}) after {}'s claim {} (token {}): its token is superseded; nothing was applied",
                        newer.agent_id, newer.resource_id, newer.id, newer.token, c.agent_id, c.id, c.token
                    ),
                    StaleClaimDetails {
                        reason: Some(StaleClaimReason::Superseded),
                        newer_claim_id: Some(newer.id.clone()),
                        newer_token: Some(newer.token as u64),
                        ..stale(proposal, revision, c)
                    },
                ));
            }
        }
    }
    Ok(())
}

/// What landing `revision` of `proposal` records beside the transaction,
/// in its outcome's SQL transaction: the proposal `applied` with its
/// event, and the author's write claims the change served (`used`)
/// released — a claim on another symbol of a touched file stays held, for
/// the author's other work. The released claims' ids.
fn land_outcome(
    cx: &Cx<'_>,
    proposal: &Proposal,
    revision: u32,
    used: &BTreeSet<String>,
    transaction: &crate::apply::Transaction,
    paths: &[String],
) -> Result<Vec<String>, ToolError> {
    let changed = store::proposals::mark_applied(cx.tx, &proposal.id, cx.now)?;
    if changed != 1 {
        return Err(ToolError::new(
            format!("proposal {} changed status during the apply", proposal.id),
            ConflictDetails {
                proposal_id: Some(proposal.id.clone()),
                ..ConflictDetails::default()
            },
        ));
    }
    let released: Vec<Claim> = live_write_claims(cx.tx, Some(&proposal.author), cx.now)?
        .into_iter()
        .filter(|c| used.contains(&c.id))
        .collect();
    let mut symbols: Vec<String> = released
        .iter()
        .filter(|c| c.resource_id.starts_with("symbol:"))
        .map(|c| c.resource_id.clone())
        .collect();
    symbols.sort_unstable();
    symbols.dedup();
    cx.event(
        &proposal.id,
        Some(&proposal.id),
        crate::model::ProposalAppliedData {
            revision,
            transaction_id: transaction.id.clone(),
            from: proposal.status,
            to: ProposalStatus::Applied,
            overridden: None,
            rolled_back_transaction_id: None,
            paths: paths.to_vec(),
            symbols,
        },
    )?;
    tell_stale(cx, &proposal.id, transaction, paths)?;
    release_landed_claims(cx, released, transaction)
}

/// Write `proposal.stale` about each open proposal (but `landed`) whose
/// latest revision touches one of `paths`, which `transaction` changed:
/// the event is that proposal's, so only waiters on it (its author's
/// `inbox.wait`) wake, not every waiter on every landing.
fn tell_stale(
    cx: &Cx<'_>,
    landed: &str,
    transaction: &crate::apply::Transaction,
    paths: &[String],
) -> Result<(), ToolError> {
    if paths.is_empty() {
        return Ok(());
    }
    for open in store::proposals::open_touched(cx.tx, landed)? {
        // Both sorted: the paths they share.
        let shared: Vec<String> = open
            .paths
            .iter()
            .filter(|p| paths.binary_search(p).is_ok())
            .cloned()
            .collect();
        if shared.is_empty() {
            continue;
        }
        cx.event(
            &open.proposal_id,
            Some(&open.proposal_id),
            crate::model::ProposalStaleData {
                revision: open.revision,
                landed_proposal_id: landed.to_owned(),
                transaction_id: transaction.id.clone(),
                paths: shared,
            },
        )?;
    }
    Ok(())
}

/// Release `claims` (the live write claims of the author that the landing
/// used), each with its event, as `transaction` lands; their ids.
fn release_landed_claims(
    cx: &Cx<'_>,
    claims: Vec<Claim>,
    transaction: &crate::apply::Transaction,
) -> Result<Vec<String>, ToolError> {
    let mut released = Vec::new();
    for claim in claims {
        store::claims::release(cx.tx, &claim.id, cx.now)?;
        cx.event(
            &claim.id,
            None,
            crate::model::ClaimReleasedData {
                token: claim.token,
                transaction_id: Some(transaction.id.clone()),
            },
        )?;
        released.push(claim.id);
    }
    Ok(released)
}

/// A landing step's refusal as a tool error, with its code and details.
fn landing_refusal(e: crate::landing::LandingError) -> ToolError {
    ToolError::from(e)
}

/// The stale claim `c` validation relied on for `revision` of `proposal`.
fn stale(proposal: &Proposal, revision: u32, c: &crate::model::Claim) -> StaleClaimDetails {
    StaleClaimDetails {
        proposal_id: Some(proposal.id.clone()),
        revision: Some(u64::from(revision)),
        claim_id: Some(c.id.clone()),
        resource_id: Some(c.resource_id.clone()),
        token: Some(c.token as u64),
        ..StaleClaimDetails::default()
    }
}

/// An identity for a commit: `id <id@KIND.roundtable>`, now.
fn identity(engine: &Engine, kind: &str, id: &str) -> crate::landing::Identity {
    crate::landing::Identity {
        name: id.to_owned(),
        email: format!("{id}@{kind}.roundtable"),
        seconds: engine.now().0.div_euclid(1000),
        offset_minutes: 0,
    }
}

/// In git mode: the commit for `changeset` on `landing`'s branch with
/// `message` (built, not yet referenced), after checking that `HEAD` is on
/// the branch and that the branch holds, at every touched path, what the
/// change was validated against.
///
/// The commit's blobs are what `git add` makes of the changed files, and
/// when git converts a touched path (`.gitattributes`, `core.autocrlf`)
/// the changeset to write to the working tree is returned too: each file
/// as `git checkout` of the commit writes it ([`crate::landing::convert`]).
///
/// With a remote, the remote's branch is fetched first: the commit is
/// built on it. A bare repository's branch follows the remote's there and
/// then (it has no working tree to bring along); a working tree behind the
/// remote is brought forward ([`crate::apply::fast_forward`]: files,
/// branch, index, as `git merge --ff-only`) when the commits it lacks
/// touch none of the change's paths — one they touch, or an uncommitted
/// change where they write, is refused (`precondition_failed`) with
/// nothing changed.
#[cfg(feature = "git")]
fn plan_landing(
    engine: &Engine,
    changeset: &crate::changeset::Changeset,
    setting: &crate::model::Landing,
    message: &str,
    author: &crate::landing::Identity,
    committer: &crate::landing::Identity,
    after: Option<&store::settings::TransactionLanding>,
) -> Result<
    (
        store::settings::TransactionLanding,
        Option<crate::changeset::Changeset>,
    ),
    ToolError,
> {
    use crate::landing::{self, LandingError};
    let branch = setting
        .branch_ref()
        .expect("plan_landing is called in git mode only");
    let branch = branch.as_str();
    let bare = engine.workspace().is_bare();
    let repo = landing::open(engine.root()).map_err(landing_refusal)?;
    let head = repo.find_reference("HEAD").map_err(|source| {
        landing_refusal(LandingError::Git {
            what: "read HEAD",
            source,
        })
    })?;
    let on = head.symbolic_target().ok().flatten().map(str::to_owned);
    if on.as_deref() != Some(branch) {
        return Err(ToolError::new(
            format!(
                "the repository's HEAD is on {}, not {branch}: nothing was applied",
                on.as_deref().unwrap_or("a detached commit")
            ),
            PreconditionFailedDetails {
                reference: Some(branch.to_owned()),
                head: Some(on),
                ..PreconditionFailedDetails::default()
            },
        ));
    }
    let moved = |actual: Option<String>| {
        landing_refusal(LandingError::BranchMoved {
            remote: None,
            branch: branch.to_owned(),
            expected: "a commit".into(),
            actual,
        })
    };
    let (old, remote) = match after {
        // The next commit of a batch: on the one before it (its files
        // are written; the branch moves once, to the last).
        Some(after) if after.branch == branch => {
            let old = git2::Oid::from_str(&after.new_id).map_err(|source| {
                landing_refusal(LandingError::Git {
                    what: "read the batch's last commit",
                    source,
                })
            })?;
            (old, after.remote.clone())
        }
        Some(after) => return Err(moved(Some(after.branch.clone()))),
        None => branch_tip(engine, &repo, setting, branch, changeset)?,
    };
    if let Some(path) = landing::first_difference(&repo, old, changeset).map_err(landing_refusal)? {
        let message = if bare {
            format!(
                "{path} changed on {branch} since the change was validated: rebase it, then apply"
            )
        } else {
            format!("{path} in the working tree is not what {branch} holds (an uncommitted change): commit or discard it, then apply")
        };
        return Err(ToolError::new(
            message,
            PreconditionFailedDetails {
                path: Some(path.to_string()),
                reference: Some(branch.to_owned()),
                remote: Some(remote),
                ..PreconditionFailedDetails::default()
            },
        ));
    }
    let converted = landing::convert(&repo, changeset).map_err(landing_refusal)?;
    let blobs = converted.as_ref().map_or(changeset, |c| &c.blobs);
    let built = landing::build_commit(&repo, old, blobs, message, author, committer)
        .map_err(landing_refusal)?;
    Ok((
        store::settings::TransactionLanding {
            branch: branch.to_owned(),
            old_id: old.to_string(),
            new_id: built.id.to_string(),
            remote,
        },
        converted.map(|c| c.worktree),
    ))
}

/// The commit a change lands on: the branch's tip — with a remote, its
/// tip there, fetched, this repository's branch brought forward to it
/// (see [`plan_landing`]) — and the remote's location.
#[cfg(feature = "git")]
fn branch_tip(
    engine: &Engine,
    repo: &git2::Repository,
    setting: &crate::model::Landing,
    branch: &str,
    changeset: &crate::changeset::Changeset,
) -> Result<(git2::Oid, Option<String>), ToolError> {
    use crate::landing::{self, LandingError};
    let bare = engine.workspace().is_bare();
    let moved = |actual: Option<String>| {
        landing_refusal(LandingError::BranchMoved {
            remote: None,
            branch: branch.to_owned(),
            expected: "a commit".into(),
            actual,
        })
    };
    let mut old = repo.refname_to_id(branch).map_err(|_| moved(None))?;
    let remote = match &setting.remote {
        None => None,
        Some(name) => {
            let (remote_repo, location) =
                landing::open_remote(repo, name).map_err(landing_refusal)?;
            let tip = landing::fetch(repo, &remote_repo, branch)
                .map_err(landing_refusal)?
                .ok_or_else(|| {
                    landing_refusal(LandingError::BranchMoved {
                        remote: Some(location.clone()),
                        branch: branch.to_owned(),
                        expected: old.to_string(),
                        actual: None,
                    })
                })?;
            if tip != old {
                let behind = landing::contains(repo, tip, old).map_err(landing_refusal)?;
                // A working tree behind the remote is brought forward when
                // the commits it lacks touch none of the change's paths
                // (they would make the change stale) and it is clean where
                // they change it.
                let untouched = behind
                    && landing::first_changed(
                        repo,
                        old,
                        tip,
                        changeset.files().iter().map(|f| &f.path),
                    )
                    .map_err(landing_refusal)?
                    .is_none();
                if !bare && untouched {
                    crate::apply::fast_forward(
                        engine.workspace(),
                        repo,
                        branch,
                        old,
                        tip,
                        engine.tx_env().durability != crate::store::Durability::Off,
                    )
                    .map_err(|e| match e {
                        crate::apply::FastForwardError::Landing(e) => landing_refusal(e),
                        crate::apply::FastForwardError::Worktree(e) => ToolError::from(e),
                    })?;
                    old = tip;
                } else if !(bare && behind) {
                    return Err(ToolError::new(
                        format!(
                            "{location}'s {branch} is at {tip}, this repository's at {old}: {}; nothing was applied",
                            if behind {
                                "the commits it lacks change a path the change touches: rebase the change, then apply again"
                            } else {
                                "the two have diverged"
                            }
                        ),
                        PreconditionFailedDetails {
                            remote: Some(Some(location.clone())),
                            reference: Some(branch.to_owned()),
                            expected: Some(old.to_string()),
                            actual: Some(Some(tip.to_string())),
                            ..PreconditionFailedDetails::default()
                        },
                    ));
                } else {
                    landing::move_branch(repo, branch, old, tip, "roundtable: fetch")
                        .map_err(landing_refusal)?;
                    old = tip;
                }
            }
            Some(location)
        }
    };
    Ok((old, remote))
}

/// A build without the `git` feature builds no commit: git mode is refused
/// (`invalid_argument`, field `landing.mode`) and nothing is applied.
/// `workspace.configure` and `Engine::open` refuse git mode before this is
/// reached; this keeps a store written otherwise from landing as files.
#[cfg(not(feature = "git"))]
fn plan_landing(
    _engine: &Engine,
    _changeset: &crate::changeset::Changeset,
    _setting: &crate::model::Landing,
    _message: &str,
    _author: &crate::landing::Identity,
    _committer: &crate::landing::Identity,
    _after: Option<&store::settings::TransactionLanding>,
) -> Result<
    (
        store::settings::TransactionLanding,
        Option<crate::changeset::Changeset>,
    ),
    ToolError,
> {
    Err(ToolError::invalid_argument(
        "landing.mode",
        format!(
            "{}: a change cannot land in git mode; nothing was applied",
            crate::landing::NO_GIT
        ),
    ))
}

/// What governs a landing, as its commit's trailers and its attribution
/// record name it: the proposal, its author and task, the transaction,
/// the audit chain's head now, and every piece of evidence the policy
/// evaluation in `report` counted for a requirement it found satisfied
/// (fresh, or carried over from an earlier revision: the evaluation
/// decides which counts, this only reads it), each with the revision it
/// was given on and its record's id; and what the host registered of the
/// author agent (its model and session link), which the record names.
fn provenance(
    engine: &Engine,
    evidence: &super::validate::Evidence,
    report: &ValidationReport,
    revision: u32,
    transaction_id: &str,
) -> Result<(Provenance, crate::model::trace::Author), ToolError> {
    use crate::model::trace::{CountedEvidence, EvidenceKind};
    use crate::policy::RequirementStatus;
    let p = &evidence.proposal;
    let mut named = std::collections::BTreeSet::new();
    let counted = report
        .policy
        .requirements
        .iter()
        .filter(|r| r.status == RequirementStatus::Satisfied)
        .flat_map(|r| r.evidence.iter());
    let mut out = Vec::new();
    for id in counted {
        if !named.insert(id.as_str()) {
            continue;
        }
        let (kind, by, revision) = if let Some(v) = evidence.votes.iter().find(|v| v.id == *id) {
            (
                EvidenceKind::Vote,
                format!("agent:{}", v.agent_id),
                v.revision,
            )
        } else if let Some(r) = evidence.reviews.iter().find(|r| r.id == *id) {
            (
                EvidenceKind::SecurityReview,
                r.reviewer.to_string(),
                r.revision,
            )
        } else if let Some(a) = evidence.approvals.iter().find(|a| a.id == *id) {
            (
                EvidenceKind::HumanApproval,
                format!("human:{}", a.human_id),
                a.revision,
            )
        } else if let Some(t) = evidence.tests.iter().find(|t| t.id == *id) {
            let status = serde_json::to_value(t.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            (
                EvidenceKind::Check,
                format!("{}={status}", t.name),
                t.revision,
            )
        } else {
            // The evaluation counts only records it was given: one it
            // names but the evidence lacks would be a commit that does not
            // say why it landed.
            return Err(ToolError::new(
                format!("the policy evaluation counted {id}, which is not among the evidence of {}: nothing was applied", p.id),
                IoDetails::default(),
            ));
        };
        out.push(CountedEvidence {
            kind,
            by,
            revision,
            id: id.clone(),
        });
    }
    // One read: the audit chain's head now, and what the host registered
    // of the author agent.
    let ((seq, digest), agent) = engine.store().read(|tx| {
        Ok::<_, ToolError>((
            crate::store::chain_head(tx)?,
            <crate::model::Agent as super::records::AgentRecord>::load(tx, &p.author)?,
        ))
    })?;
    let author = agent
        .map(|a| crate::model::trace::Author {
            model_id: a.model_id,
            session_url: a.session_url,
        })
        .unwrap_or_default();
    let provenance = Provenance {
        proposal_id: p.id.as_str().to_owned(),
        revision,
        transaction_id: transaction_id.to_owned(),
        task_id: p.task_id.clone(),
        agent_id: p.author.clone(),
        chain: crate::model::trace::ChainPoint { seq, digest },
        evidence: out,
    };
    Ok((provenance, author))
}

/// The commit message of an applied revision: the proposal's title and
/// summary, and trailers naming what governed it ([`provenance`]): the
/// proposal, revision and transaction, the audit chain's head when it was
/// planned (`Roundtable-Chain: SEQ DIGEST`), and each piece of evidence
/// counted.
fn apply_message(proposal: &Proposal, provenance: &Provenance) -> Result<String, ToolError> {
    use crate::landing::Trailer;
    let mut trailers = vec![
        Trailer::new("Roundtable-Proposal", provenance.proposal_id.as_str()),
        Trailer::new("Roundtable-Revision", provenance.revision.to_string()),
        Trailer::new("Roundtable-Transaction", provenance.transaction_id.as_str()),
        Trailer::new("Roundtable-Chain", provenance.chain.trailer()),
    ];
    for e in &provenance.evidence {
        trailers.push(Trailer::new(e.kind.trailer_key(), e.trailer_value()));
    }
    crate::landing::message(&proposal.title, &proposal.summary_md, &trailers)
        .map_err(landing_refusal)
}

/// The attribution record of a landing ([`TraceRecord::for_landing`]):
/// the lines `changeset` (as the files will hold them) adds to each text
/// file, against its bytes in `snapshot`, attributed to the proposal's
/// author. A link or a binary file gets no lines.
fn trace_record(
    engine: &Engine,
    provenance: Provenance,
    author: &crate::model::trace::Author,
    changeset: &crate::changeset::Changeset,
    snapshot: &[Before],
) -> TraceRecord {
    let text = |data: &[u8]| !data[..data.len().min(8000)].contains(&0);
    let files: Vec<WrittenFile<'_>> = changeset
        .files()
        .iter()
        .map(|f| {
            let before = snapshot
                .iter()
                .find(|b| b.path == f.path && !b.symlink)
                .map(|b| b.data.as_slice())
                .filter(|d| text(d));
            let after = f
                .after
                .as_ref()
                .filter(|a| !a.symlink && text(&a.data))
                .map(|a| a.data.as_slice());
            WrittenFile {
                path: f.path.as_str(),
                before,
                after,
            }
        })
        .collect();
    TraceRecord::for_landing(
        provenance,
        author,
        engine.now(),
        env!("CARGO_PKG_VERSION"),
        &files,
    )
}

/// Bring every git-mode transaction that landed (its branch at the commit
/// built for it) but was left `applying` forward: the index, the
/// transaction `applied`, the proposal `applied`, its claims released.
/// `Engine::open` runs it after `apply::recover`. What it cannot finish
/// is left `applying`, recorded, and returned.
pub(crate) fn finish_landed(engine: &Engine) -> Result<Vec<Unrecovered>, ToolError> {
    if crate::apply::landed_unfinished(engine.tx_env())?.is_empty() {
        return Ok(Vec::new());
    }
    // Under the apply lock, as recovery: a transaction whose applier is
    // alive and holds it is in flight, not left behind.
    let Some(_lock) = crate::apply::ApplyLock::for_recovery(engine.root())? else {
        return Ok(Vec::new());
    };
    finish_landed_locked(engine)
}

/// [`finish_landed`], by a caller that holds the apply lock. A
/// transaction it cannot bring forward (this repository's branch cannot
/// follow the remote's, the store refuses its outcome) is recorded and
/// returned, the others finished; only a retryable store failure fails
/// the call.
fn finish_landed_locked(engine: &Engine) -> Result<Vec<Unrecovered>, ToolError> {
    let mut left = Vec::new();
    for id in crate::apply::landed_unfinished(engine.tx_env())? {
        match finish_one_landed(engine, &id) {
            Ok(()) => {}
            Err(e) if crate::apply::Retryable::retryable(&e) => return Err(e),
            Err(e) => left.push(crate::apply::unrecovered(
                engine.tx_env(),
                &id,
                e.code(),
                e.message().to_owned(),
                e.details().clone(),
            )),
        }
    }
    Ok(left)
}

/// Bring landed transaction `id` forward (see [`finish_landed`]).
fn finish_one_landed(engine: &Engine, id: &str) -> Result<(), ToolError> {
    let actor = Actor::orchestrator(Id::new("roundtable-recovery").expect("a valid id"));
    crate::apply::finish_landed(engine.tx_env(), &actor, id, |tx, transaction, now| {
        let cx = &Cx {
            engine,
            tx,
            actor: &actor,
            now,
        };
        record_landed(cx, transaction)
    })
}

/// The outcome of a transaction found landed after its applier was gone
/// (recovery on this clone, or `landing.settle` from another): a
/// rollback's, or an apply's — the proposal `applied`, its author's
/// claims released, its idempotent result remembered.
pub(super) fn record_landed(cx: &Cx<'_>, transaction: &Transaction) -> Result<(), ToolError> {
    if let Some(original) = &transaction.rollback_of {
        // A rollback's revert commit landed: its outcome.
        let original = crate::apply::load_transaction(cx.tx, original)?;
        return rollback_outcome(cx, &original, transaction);
    }
    let proposal = Proposal::load(cx.tx, &transaction.proposal_id)?;
    let released = landed_outcome(cx, &proposal, transaction)?;
    remember_landed(cx, transaction, released)
}

/// [`land_outcome`] for a transaction recovery found landed: the branch
/// holds the change, so the proposal is `applied` whatever status the
/// store gives it now — one a store written before the status check and
/// the journal were one step let a withdraw or reject set meanwhile is
/// overridden, the event saying so — and one already `applied` stays.
fn landed_outcome(
    cx: &Cx<'_>,
    proposal: &Proposal,
    transaction: &Transaction,
) -> Result<Vec<String>, ToolError> {
    let used = used_claims_journaled(cx, &proposal.author, &transaction.id)?;
    match proposal.status {
        ProposalStatus::Pending | ProposalStatus::InReview | ProposalStatus::RolledBack => {
            let paths: Vec<String> = crate::apply::journal(cx.tx, &transaction.id)?
                .into_iter()
                .map(|f| f.path)
                .collect();
            land_outcome(
                cx,
                proposal,
                transaction.revision,
                &used,
                transaction,
                &paths,
            )
        }
        ProposalStatus::Applied => Ok(Vec::new()),
        other => {
            store::proposals::set_status(
                cx.tx,
                &proposal.id,
                other,
                ProposalStatus::Applied,
                cx.now,
            )?;
            cx.event(
                &proposal.id,
                Some(&proposal.id),
                crate::model::ProposalAppliedData {
                    revision: transaction.revision,
                    transaction_id: transaction.id.clone(),
                    from: other,
                    to: ProposalStatus::Applied,
                    overridden: Some(format!(
                        "the branch holds the change: recovery records it applied over {}",
                        other.as_str()
                    )),
                    rolled_back_transaction_id: None,
                    paths: Vec::new(),
                    symbols: Vec::new(),
                },
            )?;
            // Its author's claims the change used go with it.
            let claims = live_write_claims(cx.tx, Some(&proposal.author), cx.now)?
                .into_iter()
                .filter(|c| used.contains(&c.id))
                .collect();
            release_landed_claims(cx, claims, transaction)
        }
    }
}

/// For a transaction recovery brought forward: the result its apply would
/// have returned, stored under the idempotency key it journaled (if any),
/// so that the same call made again returns it.
fn remember_landed(
    cx: &Cx<'_>,
    transaction: &Transaction,
    released: Vec<String>,
) -> Result<(), ToolError> {
    let Some(request) = crate::apply::journaled_request(cx.tx, &transaction.id)? else {
        return Ok(());
    };
    let (Some(key), Some(digest)) = (
        request["idempotency_key"]
            .as_str()
            .and_then(|k| Id::new(k).ok()),
        request["request_digest"].as_str(),
    ) else {
        return Ok(());
    };
    let Ok(validation) = serde_json::from_value::<ValidationReport>(request["validation"].clone())
    else {
        return Ok(());
    };
    let actor = transaction.actor.clone();
    let out = Applied {
        transaction: crate::apply::load_transaction(cx.tx, &transaction.id)?,
        proposal: Proposal::load(cx.tx, &transaction.proposal_id)?,
        released_claims: released,
        validation,
    };
    let original = Cx {
        engine: cx.engine,
        tx: cx.tx,
        actor: &actor,
        now: cx.now,
    };
    const NAME: &str = <ApplyRevision as super::Request>::TOOL;
    if crate::store::idempotency::get(cx.tx, &actor, key.as_str())?.is_none() {
        remember(&original, &key, NAME, digest, &out)?;
    }
    Ok(())
}

/// Arguments of `transaction.rollback`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RollbackArgs")]
pub struct Rollback {
    /// The applied transaction to roll back.
    pub transaction_id: Id,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `transaction.rollback`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RolledBack {
    /// The new (rollback) transaction, `applied`.
    pub transaction: Transaction,
}

/// `transaction.rollback`'s description.
const ROLLBACK: &str = "Roll back an applied transaction (orchestrator only): restore its before snapshot as a new transaction with the same guarantees, but only if every path it touched still has its after state — otherwise conflict, listing each path with expected and actual digests. Rolling back a rollback re-applies. In git landing mode it lands as a revert commit (a Roundtable-Reverts trailer naming the reverted commit) by the same compare-and-swap.";

/// `transaction.rollback`.
fn rollback(engine: &Engine, actor: &Actor, args: Rollback) -> Result<RolledBack, ToolError> {
    const NAME: &str = <Rollback as super::Request>::TOOL;
    let key = args.idempotency_key.clone();
    let (_lock, request) = match begin(engine, actor, NAME, &args, key.as_ref())? {
        Begun::Replayed(v) => return Ok(v),
        Begun::Locked(lock, request) => (lock, request),
    };
    let (original, files, created, git, proposal) = engine.store().read(|tx| {
        let t = crate::apply::load_transaction(tx, args.transaction_id.as_str())?;
        // In git mode a rollback lands as a revert commit of the one the
        // transaction landed; a transaction that landed no commit (files
        // mode then) cannot be rolled back on the branch.
        let setting = store::settings::landing(tx)?;
        let landed = store::settings::transaction_landing(tx, &t.id)?;
        let git = match (setting.branch_ref(), landed) {
            (None, None) => None,
            (Some(branch), Some(l)) if l.branch == branch => Some((setting, l.new_id)),
            _ => {
                return Err(ToolError::new(
                    format!(
                        "{} landed in another landing mode (or on another branch) than the workspace's now: it cannot be rolled back; revert its proposal (proposal.revert) instead",
                        t.id
                    ),
                    IllegalTransitionDetails {
                        transaction_id: Some(t.id.clone()),
                        landing: Some(setting),
                        ..IllegalTransitionDetails::default()
                    },
                ))
            }
        };
        let proposal = Proposal::load(tx, &t.proposal_id)?;
        let files = journal(tx, &t.id)?;
        let created = created_dirs(tx, &t.id)?;
        Ok::<_, ToolError>((t, files, created, git, proposal))
    })?;
    if original.status != TransactionStatus::Applied {
        let status = super::records::enum_to_sql(&original.status);
        return Err(ToolError::new(
            format!(
                "transaction {} is {status}; only an applied transaction can be rolled back",
                original.id
            ),
            IllegalTransitionDetails {
                transaction_id: Some(original.id.clone()),
                status: Some(RecordStatus::Transaction(original.status)),
                allowed: Some(vec![RecordStatus::Transaction(TransactionStatus::Applied)]),
                operation: Some(NAME.to_owned()),
                ..IllegalTransitionDetails::default()
            },
        ));
    }
    let ws = engine.workspace().view();
    let reports = compare(&ws, &files)?;
    let moved: Vec<&PathReport> = reports
        .iter()
        .filter(|r| r.state != PathState::AtAfter)
        .collect();
    if !moved.is_empty() {
        return Err(ToolError::new(
            format!(
                "{} of the {} paths transaction {} wrote changed since: {}",
                moved.len(),
                reports.len(),
                original.id,
                moved
                    .iter()
                    .map(|r| r.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ConflictDetails {
                transaction_id: Some(original.id.clone()),
                paths: Some(
                    moved
                        .iter()
                        .map(|r| MovedPath {
                            path: r.path.clone(),
                            expected: r.after.clone(),
                            actual: r.actual.clone(),
                        })
                        .collect(),
                ),
                ..ConflictDetails::default()
            },
        ));
    }
    let mut changeset = restore_changeset(engine.store(), &files, &reports)?;
    let modes = restore_modes(&files);
    let snapshot = snapshot(&ws, &changeset)?;
    let id = engine.ids().next("tx", engine.now().0);
    let landing = match git {
        None => None,
        Some((setting, reverts)) => {
            use crate::landing::Trailer;
            let message = crate::landing::message(
                &format!("Revert \"{}\"", proposal.title),
                &format!(
                    "Rolls back transaction {} of proposal {} (revision {}).",
                    original.id, original.proposal_id, original.revision
                ),
                &[
                    Trailer::new("Roundtable-Proposal", original.proposal_id.as_str()),
                    Trailer::new("Roundtable-Revision", original.revision.to_string()),
                    Trailer::new("Roundtable-Transaction", id.as_str()),
                    Trailer::new("Roundtable-Reverts", reverts),
                ],
            )
            .map_err(landing_refusal)?;
            let host = identity(engine, actor.kind.as_str(), actor.id.as_str());
            let (landing, worktree) =
                plan_landing(engine, &changeset, &setting, &message, &host, &host, None)?;
            if let Some(worktree) = worktree {
                changeset = worktree;
            }
            Some(landing)
        }
    };
    let plan = Plan {
        id,
        kind: TransactionKind::Rollback,
        proposal_id: &original.proposal_id,
        revision: original.revision,
        rollback_of: Some(&original.id),
        changeset,
        snapshot,
        workspace: &ws,
        prune_only: Some(created),
        modes,
        landing,
        // A rollback's commit takes lines back and writes none of its
        // own: it has no attribution record (`provenance.verify` knows
        // it by its transaction).
        trace: None,
        request: None,
    };
    execute(
        engine.tx_env(),
        actor,
        plan,
        None,
        |tx, transaction, now| {
            let cx = &Cx {
                engine,
                tx,
                actor,
                now,
            };
            rollback_outcome(cx, &original, transaction)?;
            let out = RolledBack {
                transaction: transaction.clone(),
            };
            if let Some(key) = &key {
                remember(cx, key, NAME, &request, &out)?;
            }
            Ok(out)
        },
    )
}

/// What rolling back `original` by transaction `by` records in the
/// rollback's outcome transaction: `original` `rolled_back` with its
/// event, the proposal following it, and `proposal.stale` about each open
/// proposal touching a path the rollback changed, as a landing writes.
fn rollback_outcome(
    cx: &Cx<'_>,
    original: &Transaction,
    by: &Transaction,
) -> Result<(), ToolError> {
    store::transactions::mark_rolled_back(cx.tx, &original.id)?;
    cx.event(
        &original.id,
        Some(&original.proposal_id),
        crate::model::TransactionRolledBackData {
            rollback_transaction_id: by.id.clone(),
        },
    )?;
    let mut paths: Vec<String> = crate::apply::journal(cx.tx, &by.id)?
        .into_iter()
        .map(|f| f.path)
        .collect();
    paths.sort_unstable();
    proposal_follows_rollback(cx, original, &by.id, &paths)?;
    tell_stale(cx, &original.proposal_id, by, &paths)
}

/// The proposal's status after `original` was rolled back by transaction
/// `by`, which changed `paths`, with its event, in the rollback's outcome
/// transaction: rolling back an apply makes an `applied` proposal
/// `rolled_back`; rolling back that rollback re-applies the change, and
/// the proposal is `applied` again (its event naming `paths`, as a
/// landing's does). A proposal in any other status (a row older than
/// `rolled_back`) is left as it is.
fn proposal_follows_rollback(
    cx: &Cx<'_>,
    original: &Transaction,
    by: &str,
    paths: &[String],
) -> Result<(), ToolError> {
    let (from, to) = match original.kind {
        TransactionKind::Apply => (ProposalStatus::Applied, ProposalStatus::RolledBack),
        TransactionKind::Rollback => (ProposalStatus::RolledBack, ProposalStatus::Applied),
    };
    let (revision, transaction_id) = (original.revision, by.to_owned());
    let rolled_back_transaction_id = original.id.clone();
    let data: crate::model::EventData = match original.kind {
        TransactionKind::Apply => crate::model::ProposalRolledBackData {
            revision,
            transaction_id,
            rolled_back_transaction_id,
            from,
            to,
        }
        .into(),
        TransactionKind::Rollback => crate::model::ProposalAppliedData {
            revision,
            transaction_id,
            from,
            to,
            overridden: None,
            rolled_back_transaction_id: Some(rolled_back_transaction_id),
            paths: paths.to_vec(),
            symbols: Vec::new(),
        }
        .into(),
    };
    let pid = &original.proposal_id;
    if store::proposals::set_status(cx.tx, pid, from, to, cx.now)? == 1 {
        cx.event(pid, Some(pid), data)?;
    }
    Ok(())
}

/// Arguments of the tools that read one transaction.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TransactionArgs")]
pub struct GetTransaction {
    /// The transaction.
    pub transaction_id: Id,
}

/// Arguments of the tools that read one transaction.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TransactionArgs")]
pub struct CheckRecovery {
    /// The transaction.
    pub transaction_id: Id,
}

/// Arguments of the tools that read one transaction.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TransactionArgs")]
pub struct ListPhases {
    /// The transaction.
    pub transaction_id: Id,
}

/// Result of `transaction.get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TransactionDetail {
    /// The transaction.
    pub transaction: Transaction,
    /// Its journal: every touched path with its before and after state.
    pub files: Vec<JournalFile>,
}

impl super::Request for GetTransaction {
    const TOOL: &'static str = "transaction.get";
    const DESCRIPTION: &'static str =
        "Read a transaction and its journal (every touched path's before and after state).";
    const MUTATES: bool = false;
    type Output = TransactionDetail;

    store_tool!();
}

impl Tool for GetTransaction {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: GetTransaction, (): ()) -> Result<TransactionDetail, ToolError> {
        let transaction = crate::apply::load_transaction(cx.tx, args.transaction_id.as_str())?;
        let files = journal(cx.tx, &transaction.id)?;
        Ok(TransactionDetail { transaction, files })
    }
}

/// Arguments of `transaction.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ListArgs")]
pub struct ListTransactions {
    /// Only this proposal's transactions.
    pub proposal_id: Option<Id>,
    /// Only transactions in this status.
    pub status: Option<TransactionStatus>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<Limit<200>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// Result of `transaction.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TransactionPage {
    /// Transactions, oldest first.
    pub transactions: Vec<Transaction>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListTransactions {
    const TOOL: &'static str = "transaction.list";
    const DESCRIPTION: &'static str =
        "List transactions oldest first, filtered by proposal or status.";
    const MUTATES: bool = false;
    type Output = TransactionPage;

    store_tool!();
}

impl Tool for ListTransactions {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListTransactions, (): ()) -> Result<TransactionPage, ToolError> {
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut transactions = store::transactions::list(
            cx.tx,
            after,
            args.proposal_id.as_ref().map(Id::as_str),
            args.status,
            i64::from(limit) + 1,
        )?;
        let next_cursor = Cursor::page(&mut transactions, limit, |t| t.seq);
        Ok(TransactionPage {
            transactions,
            next_cursor,
        })
    }
}

pub use crate::model::Phase;

/// Result of `transaction.phases`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Phases {
    /// The phases, in order.
    pub phases: Vec<Phase>,
}

impl super::Request for ListPhases {
    const TOOL: &'static str = "transaction.phases";
    const DESCRIPTION: &'static str =
        "List a transaction's phases in order (journaled, written, applied, failed, recovered).";
    const MUTATES: bool = false;
    type Output = Phases;

    store_tool!();
}

impl Tool for ListPhases {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: ListPhases, (): ()) -> Result<Phases, ToolError> {
        let t = crate::apply::load_transaction(cx.tx, args.transaction_id.as_str())?;
        let phases = store::transactions::phases(cx.tx, &t.id)?;
        Ok(Phases { phases })
    }
}

/// For transaction `id` when it is another clone's landing through a
/// remote (git mode): each journaled path compared with the remote's
/// branch (its tree at the branch's tip); `None` for this clone's own
/// transactions and files-mode ones, which this clone's files judge.
#[cfg(feature = "git")]
fn landed_elsewhere(
    cx: &Cx<'_>,
    id: &str,
    files: &[JournalFile],
) -> Result<Option<Vec<PathReport>>, ToolError> {
    use crate::landing;
    let Some(setting) = store::settings::transaction_landing(cx.tx, id)? else {
        return Ok(None);
    };
    let Some(remote) = &setting.remote else {
        return Ok(None);
    };
    let clone = store::transactions::clone_of(cx.tx, id)?;
    if clone
        .as_deref()
        .is_none_or(|c| c == cx.engine.store().clone_id())
    {
        return Ok(None);
    }
    let repo = landing::open(cx.engine.root())?;
    let (remote_repo, _) = landing::open_remote(&repo, remote)?;
    let tip = remote_repo.refname_to_id(&setting.branch).ok();
    let mut metas = std::collections::BTreeMap::new();
    for f in files {
        // A path that does not parse is refused by the comparison.
        let Ok(path) = f.path.parse::<crate::RepoPath>() else {
            continue;
        };
        let meta = match tip {
            Some(tip) => landing::worktree_file(&remote_repo, tip, &path)?.map(|c| c.meta()),
            None => None,
        };
        metas.insert(path, meta);
    }
    let paths = crate::apply::compare_by(files, |path| Ok(metas.get(path).cloned().flatten()))?;
    Ok(Some(paths))
}

/// Without the `git` feature no landing is judged by a remote.
#[cfg(not(feature = "git"))]
fn landed_elsewhere(
    _cx: &Cx<'_>,
    _id: &str,
    _files: &[JournalFile],
) -> Result<Option<Vec<PathReport>>, ToolError> {
    Ok(None)
}

/// Result of `transaction.recovery`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RecoveryAdvice {
    /// The transaction.
    pub transaction_id: String,
    /// Its stored status.
    pub status: TransactionStatus,
    /// Every touched path, compared with the journal now.
    pub paths: Vec<PathReport>,
    /// How many paths are at their after state.
    pub at_after: u64,
    /// How many are at their before state.
    pub at_before: u64,
    /// How many are at neither.
    pub diverged: u64,
    /// Whether the files agree with the status (all after for `applied`,
    /// all before for `failed`, `recovered`, `rolled_back`).
    pub consistent: bool,
    /// What can be done now: `rollback`, `recover`, `settle` (another
    /// clone's unfinished git landing: `landing.settle`), `none`, or
    /// `inspect` (diverged paths need a person).
    pub actions: Vec<String>,
    /// The same, in words.
    pub advice: String,
}

impl super::Request for CheckRecovery {
    const TOOL: &'static str = "transaction.recovery";
    const DESCRIPTION: &'static str = "Compare a transaction's journal with the actual files (at_after, at_before or diverged per path) and say what can be done: advice computed from the files, never from the status alone. Another clone's git landing through a remote is compared with the remote's branch instead (this clone's files say nothing about it), and one it left applying is advised settle (landing.settle).";
    const MUTATES: bool = false;
    type Output = RecoveryAdvice;

    store_tool!();
}

impl Tool for CheckRecovery {
    const READS_FILES: bool = true;

    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: CheckRecovery, (): ()) -> Result<RecoveryAdvice, ToolError> {
        let t = crate::apply::load_transaction(cx.tx, args.transaction_id.as_str())?;
        let files = journal(cx.tx, &t.id)?;
        // Another clone's landing through a remote is judged by the
        // remote's branch: this clone's files say nothing about it.
        let elsewhere = landed_elsewhere(cx, &t.id, &files)?;
        let paths = match &elsewhere {
            Some(paths) => paths.clone(),
            None => compare(cx.engine.workspace(), &files)?,
        };
        let count = |s: PathState| paths.iter().filter(|p| p.state == s).count() as u64;
        let (at_after, at_before, diverged) = (
            count(PathState::AtAfter),
            count(PathState::AtBefore),
            count(PathState::Diverged),
        );
        let total = paths.len() as u64;
        use TransactionStatus as S;
        let consistent = match t.status {
            S::Applied => at_after == total,
            S::Failed | S::Recovered | S::RolledBack => at_before == total,
            S::Applying => false,
        };
        let (actions, advice): (Vec<&str>, String) = match t.status {
            S::Applying if elsewhere.is_some() => (
                vec!["settle"],
                format!(
                    "another clone journaled this landing and has not finished it: on its remote's branch {at_after} paths are at after, {at_before} at before, {diverged} diverged; if that clone's host is gone for good, landing.settle asks the remote and records it applied or undone (reopening that clone recovers it too)"
                ),
            ),
            S::Applying => (
                vec!["recover"],
                format!(
                    "journaled but not finished: {at_after} paths at after, {at_before} at before, {diverged} diverged; opening the workspace when no applier holds the lock restores the {at_after} paths at after"
                ),
            ),
            S::Applied if at_after == total => (
                vec!["rollback"],
                "every path is at its after state: transaction.rollback restores the before snapshot".into(),
            ),
            _ if diverged > 0 || (t.status == S::Applied && at_before > 0) => (
                vec!["inspect"],
                format!("{diverged} paths match neither state and {at_before} of {total} are back at before: a rollback would be refused; inspect the listed paths"),
            ),
            _ if at_before == total => (vec!["none"], "every path is at its before state: nothing to do".into()),
            _ => (
                vec!["inspect"],
                format!("{at_after} paths at after and {at_before} at before: inspect the listed paths"),
            ),
        };
        Ok(RecoveryAdvice {
            transaction_id: t.id,
            status: t.status,
            paths,
            at_after,
            at_before,
            diverged,
            consistent,
            actions: actions.into_iter().map(str::to_owned).collect(),
            advice,
        })
    }
}
