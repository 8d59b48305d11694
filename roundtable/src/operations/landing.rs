//! `landing.log`: the commits roundtable landed on the workspace's branch
//! (git landing mode), read back from the repository with the trailers
//! naming what governed each.

use super::args::Limit;
use super::details::{IoDetails, PreconditionFailedDetails};
use super::{Cx, Tool, ToolError};
use crate::actor::ActorKind;
use crate::landing::LandedCommit;
use crate::store;
use crate::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many commits `landing.log` returns when no `limit` is given.
pub const DEFAULT_LIMIT: u32 = 20;

/// Arguments of `landing.log`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "LandingLogArgs")]
pub struct LandingLog {
    /// At most this many commits, 1 to 1000 (default 20).
    pub limit: Option<Limit<1000>>,
}

/// Result of `landing.log`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LandedCommits {
    /// The branch read (`refs/heads/main`): the workspace's landing branch.
    pub branch: String,
    /// The commits on it that roundtable landed (those carrying a
    /// `Roundtable-Proposal` trailer), first parents only, newest first.
    pub commits: Vec<LandedCommit>,
}

impl super::Request for LandingLog {
    const TOOL: &'static str = "landing.log";
    const DESCRIPTION: &'static str = "The commits roundtable landed on the workspace's branch (git landing mode), newest first (first parents), each with its id, summary, author and the trailers naming what governed it (Roundtable-Proposal, Approved-by, …). In files mode nothing is committed: precondition_failed, its details naming the landing setting.";
    const MUTATES: bool = false;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = LandedCommits;

    store_tool!();
}

impl Tool for LandingLog {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: LandingLog, (): ()) -> Result<LandedCommits, ToolError> {
        let landing = store::settings::landing(cx.tx)?;
        let Some(branch) = landing.branch_ref() else {
            return Err(ToolError::new(
                "landing mode is files: roundtable commits nothing (workspace.configure sets git mode)",
                PreconditionFailedDetails {
                    landing: Some(landing),
                    ..PreconditionFailedDetails::default()
                },
            ));
        };
        let limit = args.limit.map_or(DEFAULT_LIMIT, |l| l.0);
        let commits = crate::landing::landed_commits(cx.engine.root(), &branch, limit as usize)
            .map_err(|e| match e.code() {
                ErrorCode::Io => ToolError::new(
                    e.to_string(),
                    IoDetails {
                        reference: Some(branch.clone()),
                        ..IoDetails::default()
                    },
                ),
                _ => ToolError::from(e),
            })?;
        Ok(LandedCommits { branch, commits })
    }
}

/// The least and the default `stale_after_ms` of `landing.settle`.
#[cfg_attr(not(feature = "git"), allow(dead_code))]
const SETTLE_AFTER_MS: (u64, u64) = (1_000, 30_000);

/// Arguments of `landing.settle`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SettleLandingArgs")]
pub struct SettleLanding {
    /// The git-mode transaction (through a remote) that another clone
    /// left `applying`.
    pub transaction_id: crate::Id,
    /// How long, in milliseconds, the transaction must have been
    /// `applying` — and a lock on the remote's branch must have stood —
    /// before it is judged abandoned rather than in flight: 1000 to
    /// 3600000, default 30000.
    pub stale_after_ms: Option<u64>,
    /// Accepted like every write's; a repeat needs no replay (a settled
    /// transaction is `already_finished`), so it is not stored.
    pub idempotency_key: Option<crate::Id>,
}

/// What `landing.settle` recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SettleOutcome {
    /// The remote's branch holds the transaction's commit: recorded
    /// `applied` (the proposal `applied`, its author's claims released).
    Applied,
    /// The remote's branch does not hold it: nothing of it landed, and it
    /// is recorded undone (`recovered`).
    Undone,
    /// It was no longer `applying` (settled, recovered or finished
    /// already): nothing was changed.
    AlreadyFinished,
}

/// Result of `landing.settle`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Settled {
    /// The transaction, as it now stands.
    pub transaction: crate::apply::Transaction,
    /// What was recorded.
    pub outcome: SettleOutcome,
    /// The commit its landing pushed (or would have).
    pub commit: String,
    /// The remote asked.
    pub remote: String,
    /// The branch (`refs/heads/main`).
    pub branch: String,
    /// The remote's branch when asked (`null`: no such branch, or the
    /// transaction was already finished).
    pub remote_tip: Option<String>,
    /// Whether an abandoned lock on the remote's branch (a killed push's
    /// `refs/heads/main.lock`, which fails every push) was removed.
    pub cleared_lock: bool,
}

impl super::Request for SettleLanding {
    const TOOL: &'static str = "landing.settle";
    const DESCRIPTION: &'static str = "Settle a git-mode landing another clone (a host that was killed and is not coming back) left applying, from any host, by asking the remote (orchestrator only): if the remote's branch holds the transaction's commit it is recorded applied (the proposal applied, its claims released), otherwise undone (recovered) — either way its paths stop being busy. A lock on the remote's branch older than stale_after_ms that nobody moves (a killed push's refs/heads/main.lock, which fails every push) is removed. Refused: busy (retryable) while the transaction is younger than stale_after_ms (default 30 s: it may be in flight); precondition_failed for a transaction of this clone (its own recovery settles it), in files mode or without a remote. Only the store and the remote's stale lock change: the other clone's files, index and branch are left to it.";
    const MUTATES: bool = true;
    const IDEMPOTENT: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = Settled;

    fn execute(self, engine: &crate::Engine, actor: &crate::Actor) -> Result<Settled, ToolError> {
        settle(engine, actor, &self)
    }
}

/// A `precondition_failed` refusal of `landing.settle` of a transaction
/// of proposal `proposal_id`.
#[cfg_attr(not(feature = "git"), allow(dead_code))]
fn cannot_settle(message: String, proposal_id: &str) -> ToolError {
    ToolError::new(
        message,
        PreconditionFailedDetails {
            proposal_id: Some(proposal_id.to_owned()),
            ..PreconditionFailedDetails::default()
        },
    )
}

/// `landing.settle`.
#[cfg(feature = "git")]
fn settle(
    engine: &crate::Engine,
    actor: &crate::Actor,
    args: &SettleLanding,
) -> Result<Settled, ToolError> {
    use crate::apply::TransactionStatus;
    use crate::landing;
    let (min, default) = SETTLE_AFTER_MS;
    let stale_after = args.stale_after_ms.unwrap_or(default);
    if !(min..=3_600_000).contains(&stale_after) {
        return Err(ToolError::invalid_argument(
            "stale_after_ms",
            format!("{stale_after} is not between {min} and 3600000"),
        ));
    }
    let id = args.transaction_id.as_str();
    let (transaction, setting, clone) = engine.store().read(|tx| {
        Ok::<_, ToolError>((
            crate::apply::load_transaction(tx, id)?,
            store::settings::transaction_landing(tx, id)?,
            store::transactions::clone_of(tx, id)?,
        ))
    })?;
    let Some(setting) = setting else {
        return Err(cannot_settle(
            format!("{id} did not land in git mode: only its own clone can tell (reopen it)"),
            &transaction.proposal_id,
        ));
    };
    let Some(remote) = setting.remote.clone() else {
        return Err(cannot_settle(
            format!("{id} landed in its clone's own repository, not through a remote: only that clone can tell (reopen it)"),
            &transaction.proposal_id,
        ));
    };
    let settled = |transaction, outcome, remote_tip, cleared_lock| Settled {
        transaction,
        outcome,
        commit: setting.new_id.clone(),
        remote: remote.clone(),
        branch: setting.branch.clone(),
        remote_tip,
        cleared_lock,
    };
    if transaction.status != TransactionStatus::Applying {
        return Ok(settled(
            transaction,
            SettleOutcome::AlreadyFinished,
            None,
            false,
        ));
    }
    if clone
        .as_deref()
        .is_none_or(|c| c == engine.store().clone_id())
    {
        return Err(cannot_settle(
            format!("{id} is this clone's own: its recovery settles it (Engine::open, or the next patch.apply)"),
            &transaction.proposal_id,
        ));
    }
    let age = engine.now().0.saturating_sub(transaction.created_at.0);
    if u64::try_from(age).unwrap_or(0) < stale_after {
        return Err(ToolError::new(
            format!("{id} has been applying for {age} ms, less than {stale_after} ms: it may be in flight; nothing was changed, retry later"),
            super::details::BusyDetails {
                transaction_id: Some(id.to_owned()),
                waited_ms: Some(u64::try_from(age).unwrap_or(0)),
                ..super::details::BusyDetails::default()
            },
        ));
    }
    // A push its applier started on this machine may still be running.
    landing::await_push(id);
    let refusal = |e: landing::LandingError| ToolError::from(e);
    let repo = landing::open(engine.root()).map_err(refusal)?;
    let (remote_repo, _) = landing::open_remote(&repo, &remote).map_err(refusal)?;
    let cleared_lock = landing::clear_abandoned_lock(
        &remote_repo,
        &setting.branch,
        std::time::Duration::from_millis(stale_after),
    )
    .map_err(refusal)?;
    let commit = git2::Oid::from_str(&setting.new_id).map_err(|source| {
        refusal(landing::LandingError::Git {
            what: "read the new id",
            source,
        })
    })?;
    let tip = remote_repo.refname_to_id(&setting.branch).ok();
    let landed = match tip {
        Some(tip) => landing::contains(&remote_repo, tip, commit).map_err(refusal)?,
        None => false,
    };
    let env = engine.tx_env();
    let outcome = if landed {
        crate::apply::settle_landed(env, actor, id, &setting.new_id, |tx, transaction, now| {
            let cx = &Cx {
                engine,
                tx,
                actor,
                now,
            };
            super::transactions::record_landed(cx, transaction)
        })?;
        SettleOutcome::Applied
    } else {
        crate::apply::settle_undone(
            env,
            actor,
            id,
            &format!(
                "settled from another clone: {remote}'s {} does not hold {commit}",
                setting.branch
            ),
        )?;
        SettleOutcome::Undone
    };
    let transaction = engine
        .store()
        .read(|tx| Ok::<_, ToolError>(crate::apply::load_transaction(tx, id)?))?;
    Ok(settled(
        transaction,
        outcome,
        tip.map(|t| t.to_string()),
        cleared_lock,
    ))
}

/// `landing.settle` in a build without the `git` feature: refused
/// (`invalid_argument`), nothing changed.
#[cfg(not(feature = "git"))]
fn settle(
    _engine: &crate::Engine,
    _actor: &crate::Actor,
    _args: &SettleLanding,
) -> Result<Settled, ToolError> {
    Err(ToolError::invalid_argument(
        "transaction_id",
        format!(
            "{}: a git landing cannot be settled",
            crate::landing::NO_GIT
        ),
    ))
}
