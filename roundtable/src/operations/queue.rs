//! The landing queue: `queue.enqueue`, `queue.list`, `queue.remove` and
//! `queue.run` (orchestrator only).
//!
//! The queue is a table of the store (shared by every host of a
//! PostgreSQL store; every step an event). `queue.run` lands what it
//! holds and keeps the branch green, in rounds:
//!
//! 1. With the policy's `[queue] auto_enqueue`, every open proposal that
//!    waits only on the orchestrator's apply joins the queue.
//! 2. Entries whose proposal is no longer open leave it (landed by other
//!    means, withdrawn, rejected); those that cannot land yet (the inbox
//!    does not name the orchestrator's apply as their next step: awaiting
//!    review, a check, their author's rebase) keep their place and wait;
//!    one whose check failed since it was queued (a run that recorded the
//!    failure stopped before handing it back) goes back now.
//! 3. The queued proposals are split into lanes (one lane unless the
//!    policy's `lanes` is on: then proposals that share no touched path
//!    are tested and landed independently), and each lane's first
//!    `batch_size` are stacked: each proposal's latest revision is merged
//!    (the engine's rebase, [`super::rebase`]) onto the branch plus every
//!    proposal ahead of it in its lane. That is its *speculative state*.
//!    A proposal that does not merge goes back to its author with the
//!    conflict (one that merges onto the branch alone and conflicts only
//!    with proposals ahead of it waits for them instead), and the stack
//!    goes on without it.
//! 4. A speculative state is materialized (a copy of the working tree
//!    with the stack written over it) and the policy's `[checks.NAME]`
//!    commands run in it. Each lane's LAST state is checked first (every
//!    lane's at once, `depth` at a time); when it fails, the first failing
//!    state is found by bisection, `depth` split points checked at once
//!    (`queue/bisect.rs`): a batch that passes costs one check run, one with a
//!    culprit about log2 of the batch more.
//! 5. In each lane, the proposals up to the longest state known to pass
//!    (below the first that failed) land together, in order, in ONE
//!    all-or-nothing step (`transactions::apply_batch`: each as
//!    `patch.apply` with `rebase: true` lands it, keyed by its entry, so a
//!    crashed run never lands one twice; in git mode each its own commit
//!    and ONE branch update, or ONE push, to the last). The branch only
//!    ever moves to a state whose checks passed. The passing state's
//!    checks are recorded on each of them (`test.record`). The proposal
//!    whose state failed (its stack passed without it) leaves the queue
//!    with the check's output, recorded as a failed `test.record` on its
//!    revision (its author's inbox asks for a fix); the ones behind it
//!    stay queued and are stacked again without it next round. A
//!    proposal refused at apply time ends its batch: the ones before it
//!    land only if their own state was checked and passed, else they stay
//!    queued for the next round.
//!
//! Rounds repeat until the queue is empty or a round changes nothing.
//!
//! A check may also be external (`[checks.NAME] external = true`): its
//! states are left for a runner and announced, and its `test.record`
//! answers them (`queue/external.rs`).
//!
//! Several hosts may run one queue at once (on one PostgreSQL store):
//! each round, a host leases the lanes it works on and skips those
//! another host holds (`queue/hosts.rs`).

mod bisect;
mod checks;
mod external;
mod hosts;
mod lanes;

pub use external::QueueCheckRequest;
pub(crate) use external::{waiting as waiting_checks, why as check_why, ACTION as CHECK_ACTION};

use super::args::{Cursor, Limit, Markdown, RevisionNumber, Title};
use super::details::{ConflictDetails, ConflictReason};
use super::next::{NextAction, NextRole};
use super::rebase::{merged_onto, stored_sides, Sides};
use super::records::{
    Proposal, ProposalRecord as _, ProposalStatus, Revision, RevisionRecord as _,
};
use super::{write_cx, Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::diff::TreeFile;
use crate::engine::Engine;
use crate::id::Id;
use crate::model::{
    QueueCheckedData, QueueEnqueuedData, QueueEntry, QueueLandedData, QueueRemovedData,
    QueueReturnReason, QueueReturnedData, QueueStatus, TestStatus,
};
use crate::policy::Policy;
use crate::store;
use crate::{ErrorCode, RepoPath};
use checks::CheckRun;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The statuses a proposal may be queued in.
const OPEN: &[ProposalStatus] = &[ProposalStatus::Pending, ProposalStatus::InReview];

/// Arguments of `queue.enqueue`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "QueueEnqueueArgs")]
pub struct Enqueue {
    /// The proposal: open, not already queued.
    pub proposal_id: Id,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `queue.enqueue` and `queue.remove`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct QueueEntryResult {
    /// The entry as stored.
    pub entry: QueueEntry,
}

impl super::Request for Enqueue {
    const TOOL: &'static str = "queue.enqueue";
    const DESCRIPTION: &'static str = "Put an open proposal in the landing queue (orchestrator only): once it can land (the orchestrator's apply is its next step: reviewed, approved, its checks recorded) queue.run tests it on top of everything queued ahead of it with the policy's [checks.NAME] commands and lands it when that state passes; until then it keeps its place. conflict (reason already_queued) when it is queued already; illegal_transition when it is not open.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = QueueEntryResult;

    store_tool!();
}

impl Tool for Enqueue {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: Enqueue, (): ()) -> Result<QueueEntryResult, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        enqueue(cx, &p, false).map(|entry| QueueEntryResult { entry })
    }
}

/// Queue `p` (checked open and not queued) in `cx`'s transaction, with its
/// event.
fn enqueue(cx: &Cx<'_>, p: &Proposal, automatic: bool) -> Result<QueueEntry, ToolError> {
    p.require_status(OPEN, <Enqueue as super::Request>::TOOL)?;
    if let Some(entry) = store::queue::queued_for(cx.tx, &p.id)? {
        return Err(ToolError::new(
            format!("proposal {} is already queued (entry {})", p.id, entry.id),
            ConflictDetails {
                proposal_id: Some(p.id.clone()),
                reason: Some(ConflictReason::AlreadyQueued),
                ..ConflictDetails::default()
            },
        ));
    }
    let entry = QueueEntry {
        id: cx.new_id("queue").to_string(),
        proposal_id: p.id.clone(),
        status: QueueStatus::Queued,
        enqueued_by: cx.actor.clone(),
        enqueued_at: cx.now,
        settled_at: None,
        return_reason: None,
        note: None,
        transaction_id: None,
        seq: 0,
    };
    store::queue::insert(cx.tx, &entry)?;
    cx.event(
        &entry.id,
        Some(&p.id),
        QueueEnqueuedData {
            revision: p.latest_revision,
            automatic,
        },
    )?;
    Ok(entry)
}

/// Arguments of `queue.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "QueueListArgs")]
pub struct ListQueue {
    /// Only entries in this status (default `queued`: the queue as it
    /// stands, in order).
    pub status: Option<QueueStatus>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<Limit<200>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// Result of `queue.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct QueuePage {
    /// Entries in queue order.
    pub entries: Vec<QueueEntry>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListQueue {
    const TOOL: &'static str = "queue.list";
    const DESCRIPTION: &'static str = "The landing queue in order (orchestrator only): the queued entries by default, or those landed, returned (with the failing check's output, the conflict or the apply's refusal) or removed.";
    const MUTATES: bool = false;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = QueuePage;

    store_tool!();
}

impl Tool for ListQueue {
    unkeyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: ListQueue, (): ()) -> Result<QueuePage, ToolError> {
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let status = args.status.unwrap_or(QueueStatus::Queued);
        let mut entries = store::queue::list(cx.tx, Some(status), after, i64::from(limit) + 1)?;
        let next_cursor = Cursor::page(&mut entries, limit, |e| e.seq);
        Ok(QueuePage {
            entries,
            next_cursor,
        })
    }
}

/// Arguments of `queue.remove`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "QueueRemoveArgs")]
pub struct RemoveFromQueue {
    /// The queued proposal.
    pub proposal_id: Id,
    /// Why (kept as the entry's note and in the event).
    pub reason: Title,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

impl super::Request for RemoveFromQueue {
    const TOOL: &'static str = "queue.remove";
    const DESCRIPTION: &'static str = "Take a proposal out of the landing queue (orchestrator only); it stays open. not_found when it is not queued.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    const DESTRUCTIVE: bool = true;
    type Output = QueueEntryResult;

    fn execute(self, engine: &Engine, actor: &Actor) -> Result<QueueEntryResult, ToolError> {
        let out = super::run_tool::<Self>(engine, actor, self)?;
        // What was left for its external checks goes with it.
        external::sweep(engine)?;
        Ok(out)
    }
}

impl Tool for RemoveFromQueue {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: RemoveFromQueue, (): ()) -> Result<QueueEntryResult, ToolError> {
        let entry = store::queue::queued_for(cx.tx, args.proposal_id.as_str())?
            .ok_or_else(|| ToolError::not_found("queue entry", args.proposal_id.as_str()))?;
        let entry = settle(
            cx,
            &entry,
            Settled::Removed {
                reason: args.reason.as_str(),
            },
        )?;
        Ok(QueueEntryResult { entry })
    }
}

/// How an entry leaves the queue.
enum Settled<'a> {
    Landed {
        transaction_id: &'a str,
        revision: u32,
    },
    Returned {
        reason: QueueReturnReason,
        revision: u32,
        note: &'a str,
    },
    Removed {
        reason: &'a str,
    },
}

/// Settle `entry` in `cx`'s transaction with its event; the entry as it
/// now stands. An entry another host settled first stays as that host
/// left it.
fn settle(cx: &Cx<'_>, entry: &QueueEntry, how: Settled<'_>) -> Result<QueueEntry, ToolError> {
    let (status, return_reason, note, transaction_id) = match &how {
        Settled::Landed { transaction_id, .. } => {
            (QueueStatus::Landed, None, None, Some(*transaction_id))
        }
        Settled::Returned { reason, note, .. } => {
            (QueueStatus::Returned, Some(*reason), Some(*note), None)
        }
        Settled::Removed { reason } => (QueueStatus::Removed, None, Some(*reason), None),
    };
    let changed = store::queue::settle(
        cx.tx,
        &entry.id,
        &store::queue::Settle {
            status,
            at: cx.now,
            return_reason,
            note,
            transaction_id,
        },
    )?;
    if changed {
        let subject = entry.id.as_str();
        let proposal = Some(entry.proposal_id.as_str());
        match how {
            Settled::Landed {
                transaction_id,
                revision,
            } => cx.event(
                subject,
                proposal,
                QueueLandedData {
                    transaction_id: transaction_id.to_owned(),
                    revision,
                },
            )?,
            Settled::Returned {
                reason, revision, ..
            } => cx.event(subject, proposal, QueueReturnedData { revision, reason })?,
            Settled::Removed { reason } => cx.event(
                subject,
                proposal,
                QueueRemovedData {
                    reason: reason.to_owned(),
                },
            )?,
        };
    }
    store::queue::entry(cx.tx, &entry.id)?
        .ok_or_else(|| ToolError::not_found("queue entry", &entry.id))
}

/// Arguments of `queue.run`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "QueueRunArgs")]
pub struct RunQueue {
    /// The most rounds to run, 1 to 1000 (default 100): a round tests
    /// each lane's next batch and lands what passed.
    pub max_rounds: Option<u32>,
    /// Accepted like every write's; a repeated run is safe whatever the
    /// key (each entry lands at most once: its apply is keyed by the
    /// entry), so it is not replayed.
    pub idempotency_key: Option<Id>,
}

/// One check run on one speculative state.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct StateCheck {
    /// The queue entry whose state it was (the proposals ahead of it in
    /// its lane, and it).
    pub entry_id: String,
    /// Its proposal.
    pub proposal_id: String,
    /// The check's name.
    pub name: String,
    /// Its outcome.
    pub status: TestStatus,
    /// How long it ran.
    pub duration_ms: u64,
}

/// Result of `queue.run`.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
pub struct QueueRun {
    /// Rounds run.
    pub rounds: u32,
    /// Entries landed, in landing order.
    pub landed: Vec<QueueEntry>,
    /// Entries handed back to their authors.
    pub returned: Vec<QueueEntry>,
    /// Entries taken out because their proposal was no longer open.
    pub removed: Vec<QueueEntry>,
    /// Every check run, in the order they finished per round.
    pub checks: Vec<StateCheck>,
    /// Speculative states whose checks ran (or were answered) this run:
    /// a batch that passes costs one, a failing one about log2 of its
    /// length more.
    pub states_checked: u32,
    /// Entries still queued (the rounds ran out, or a round changed
    /// nothing and found nothing to retry, or other hosts hold their
    /// lanes).
    pub still_queued: u32,
    /// The runner this run was, as the store records who leased each
    /// entry: its orchestrator and its workspace clone
    /// (`orchestrator:ID@CLONE`).
    pub runner: String,
    /// Lanes skipped, summed over the rounds, because another host's run
    /// held them (leased one of their entries): that host tests and lands
    /// them.
    pub lanes_held: u32,
    /// The runners that held them.
    pub held_by: Vec<String>,
}

impl super::Request for RunQueue {
    const TOOL: &'static str = "queue.run";
    const DESCRIPTION: &'static str = "Land the landing queue, keeping the branch green (orchestrator only): stacks each queued proposal on the branch and the ones ahead of it (the engine's rebase), runs the policy's [checks.NAME] commands on each lane's last speculative state, bisecting a failing batch (depth states at once) to find the first state that fails, lands every proposal up to the last state that passed together in one step (each as patch.apply with rebase lands it; in git mode each its own commit and one branch update), and hands the one whose state failed back to its author with the check's output as a failed test.record. An external check ([checks.NAME] external = true) is not run: each state of a lane is left as a commit under refs/roundtable/queue/ENTRY (git mode) or a directory under .roundtable/queue/ (files mode) and announced once (a queue.check_requested event, a run_queue_check item in the orchestrator's inbox); a test.record of that name on the state's proposal answers it (passed: the batch up to it may land; failed or errored: that proposal goes back with the note; no answer within timeout_s: errored). Repeats until the queue is empty or a round changes nothing. Several hosts may run it at once: each round a host leases the lanes it works on (up to depth states) and skips a lane another host's run holds (lanes_held, held_by); a lease not renewed expires after 30 s, so a dead host's lanes go to the others.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    const IDEMPOTENT: bool = true;
    const DESTRUCTIVE: bool = true;
    type Output = QueueRun;

    fn execute(self, engine: &Engine, actor: &Actor) -> Result<QueueRun, ToolError> {
        run(engine, actor, &self)
    }
}

impl QueueRun {
    /// Add a settled entry to the list its status names.
    fn record(&mut self, entry: QueueEntry) {
        match entry.status {
            QueueStatus::Landed => self.landed.push(entry),
            QueueStatus::Returned => self.returned.push(entry),
            _ => self.removed.push(entry),
        }
    }

    /// [`QueueRun::record`] an entry this run settled, if it did.
    fn record_some(&mut self, entry: Option<QueueEntry>) {
        if let Some(entry) = entry {
            self.record(entry);
        }
    }
}

/// Files by path, each with what it holds (`None`: absent): a state's
/// overlay over the branch, or what a lane was stacked on.
type Files = BTreeMap<RepoPath, Option<TreeFile>>;

/// A queued proposal ready to stack.
struct Item {
    entry: QueueEntry,
    proposal: Proposal,
    revision: Revision,
    sides: Vec<Sides>,
    paths: BTreeSet<String>,
}

/// One speculative state: an entry on top of its lane's entries ahead.
struct State {
    item: usize,
    ahead: Vec<String>,
    overlay: Files,
}

fn run(engine: &Engine, actor: &Actor, args: &RunQueue) -> Result<QueueRun, ToolError> {
    let max_rounds = args.max_rounds.unwrap_or(100);
    if !(1..=1000).contains(&max_rounds) {
        return Err(ToolError::invalid_argument(
            "max_rounds",
            "is from 1 to 1000",
        ));
    }
    let policy = engine
        .store()
        .read(|tx| super::policies::effective(tx).map(|(_, p)| p))?;
    let runner = hosts::Runner::of(engine, actor);
    let mut out = QueueRun {
        runner: runner.id().to_owned(),
        ..QueueRun::default()
    };
    while out.rounds < max_rounds {
        out.rounds += 1;
        hosts::catch_up(engine)?;
        let landable = landable(engine, actor)?;
        if policy.queue.auto_enqueue && out.rounds == 1 {
            auto_enqueue(engine, actor, &landable)?;
        }
        let landable: BTreeSet<String> = landable.into_iter().collect();
        let progress = runner.round(engine, || {
            round(engine, actor, &policy, &landable, &runner, &mut out)
        })?;
        if !progress {
            break;
        }
    }
    external::sweep(engine)?;
    out.still_queued = engine.store().read(|tx| {
        Ok::<_, ToolError>(store::queue::list(tx, Some(QueueStatus::Queued), 0, i64::MAX)?.len())
    })? as u32;
    Ok(out)
}

/// The open proposals whose next step is the orchestrator's apply (the
/// inbox's own rule), in inbox order.
fn landable(engine: &Engine, actor: &Actor) -> Result<Vec<String>, ToolError> {
    let session = engine.session(actor.clone());
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let page = session.run(super::inbox::ListInbox {
            limit: None,
            cursor,
        })?;
        out.extend(
            page.items
                .into_iter()
                .filter(|i| i.role == NextRole::Orchestrator && i.action == NextAction::Apply)
                .map(|i| i.proposal.id),
        );
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
}

/// Queue each of `landable` (open proposals whose next step is the
/// orchestrator's apply) that is not queued yet, in that order.
fn auto_enqueue(engine: &Engine, actor: &Actor, landable: &[String]) -> Result<(), ToolError> {
    for id in landable {
        write_cx(engine, actor, |cx| {
            let p = Proposal::load(cx.tx, id)?;
            if OPEN.contains(&p.status) && store::queue::queued_for(cx.tx, &p.id)?.is_none() {
                enqueue(cx, &p, true)?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// One round, `landable` naming the open proposals whose next step is
/// the orchestrator's apply; whether it changed anything.
fn round(
    engine: &Engine,
    actor: &Actor,
    policy: &Policy,
    landable: &BTreeSet<String>,
    runner: &hosts::Runner,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    // An entry another host's lane lease holds is that host's to settle
    // (it may have landed it and not yet said so, or be landing it).
    let theirs = runner.held_by_others(engine, true)?;
    let mut progress = external::take_failed_answers(engine, actor, policy, &theirs, out)?;
    progress |= take_failed_checks(engine, actor, policy, &theirs, out)?;
    let (items, gone) = load_items(engine)?;
    for (entry, status) in gone {
        if theirs.contains(&entry.id) {
            continue;
        }
        if let Some(settled) = settle_gone(engine, actor, &entry, status)? {
            out.record(settled);
        }
        progress = true;
    }
    // Only what can land now is stacked: the rest (awaiting review, a
    // check, a rebase by its author) stays queued, in its place, until
    // the orchestrator's apply is its next step — unless it no longer
    // merges onto the branch: that goes back now.
    if items.is_empty() {
        return Ok(progress);
    }
    let paths: Vec<BTreeSet<String>> = items.iter().map(|i| i.paths.clone()).collect();
    // Each lane up to its batch_size-th proposal that can land (the ones
    // waiting before it take no place in the batch).
    let whole = lanes::lanes(&paths, policy.queue.lanes);
    let lanes: Vec<Vec<usize>> = whole
        .iter()
        .map(|lane| {
            let mut taken = 0;
            lane.iter()
                .copied()
                .take_while(|&i| {
                    if taken == policy.queue.batch_size as usize {
                        return false;
                    }
                    taken += usize::from(landable.contains(&items[i].proposal.id));
                    true
                })
                .collect()
        })
        .collect();
    // Only the lanes this host leased: other hosts work on the rest.
    let (lanes, skipped) =
        runner.take(engine, &items, &whole, lanes, landable, policy.queue.depth)?;
    out.lanes_held += skipped.held;
    // A lane another host changed meanwhile is read again next round.
    progress |= skipped.changed > 0;
    for by in skipped.by {
        if !out.held_by.contains(&by) {
            out.held_by.push(by);
        }
    }

    // Stack each lane: its base is what its states were built on (lanes
    // share no path, so landing one leaves another's base as it was).
    let mut states: Vec<State> = Vec::new();
    let mut lane_states: Vec<(Files, Vec<usize>)> = Vec::new();
    for lane in &lanes {
        let mut base = BTreeMap::new();
        let mut overlay: Files = BTreeMap::new();
        let mut ahead: Vec<String> = Vec::new();
        let mut mine = Vec::new();
        for &i in lane {
            let item = &items[i];
            let waits = !landable.contains(&item.proposal.id);
            let onto = if waits { &BTreeMap::new() } else { &overlay };
            match stack(engine, item, onto, &mut base) {
                Ok(_) if waits => {}
                Ok(files) => {
                    overlay.extend(files);
                    mine.push(states.len());
                    states.push(State {
                        item: i,
                        ahead: ahead.clone(),
                        overlay: overlay.clone(),
                    });
                    ahead.push(item.proposal.id.clone());
                }
                Err(e) if e.code() == ErrorCode::Conflict => {
                    // Only against the ones ahead of it (it merges onto the
                    // branch alone): it waits for them to settle, and goes
                    // back only if it still conflicts once they landed.
                    if !waits
                        && !ahead.is_empty()
                        && stack(engine, item, &BTreeMap::new(), &mut base).is_ok()
                    {
                        continue;
                    }
                    let settled = give_back(
                        engine,
                        actor,
                        item,
                        QueueReturnReason::Conflict,
                        &format!(
                            "{} (stacked on {} queued ahead of it); the conflict:\n{:#}",
                            e.message(),
                            if waits || ahead.is_empty() {
                                "nothing".to_owned()
                            } else {
                                ahead.join(", ")
                            },
                            e.details()
                        ),
                    )?;
                    out.returned.push(settled);
                    progress = true;
                }
                Err(e) => return Err(e),
            }
        }
        lane_states.push((base, mine));
    }

    let searched = search_lanes(engine, actor, policy, &items, &states, &lane_states, out)?;
    for ((base, mine), checked) in lane_states.iter().zip(&searched) {
        let lane: Vec<(&State, &Item)> = mine
            .iter()
            .map(|&s| (&states[s], &items[states[s].item]))
            .collect();
        progress |= land_lane(engine, actor, base, &lane, checked, out)?;
    }
    Ok(progress)
}

/// What the checks said of one lane's states: the search, and each
/// checked state's runs by its length (the proposals of the lane it
/// holds).
struct Checked {
    search: bisect::Search,
    runs: BTreeMap<usize, Vec<CheckRun>>,
    /// Searched as far as it goes this round: with external checks, each
    /// of the lane's states was asked for once (some may not have
    /// answered).
    waits: bool,
}

/// Check each lane's states as [`bisect::Search`] asks — its last state
/// first, then split points while it fails, `depth` of them at once —
/// every lane's next states checked together. Each check run is an
/// event (`queue.checked`, on the state's last proposal) and in `out`.
fn search_lanes(
    engine: &Engine,
    actor: &Actor,
    policy: &Policy,
    items: &[Item],
    states: &[State],
    lane_states: &[(Files, Vec<usize>)],
    out: &mut QueueRun,
) -> Result<Vec<Checked>, ToolError> {
    let depth = policy.queue.depth as usize;
    let mut lanes: Vec<Checked> = lane_states
        .iter()
        .map(|(_, mine)| Checked {
            search: bisect::Search::new(mine.len()),
            runs: BTreeMap::new(),
            waits: false,
        })
        .collect();
    let mut external = external::Round::new(engine, policy)?;
    loop {
        // With external checks every state of a lane is asked for at once
        // (each answered on its own proposal, whose failed answer hands it
        // back): the search takes what is known this round, once.
        let todo: Vec<(usize, usize)> = lanes
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.waits)
            .flat_map(|(l, c)| {
                let next = match external {
                    Some(_) => (1..=c.search.len()).collect(),
                    None => c.search.next(depth),
                };
                next.into_iter().map(move |p| (l, p))
            })
            .collect();
        if todo.is_empty() {
            return Ok(lanes);
        }
        // External checks first: the engine's checks run only on states
        // whose external checks passed.
        let mut known: Vec<(usize, usize, &State, Vec<CheckRun>)> = Vec::new();
        for &(l, p) in &todo {
            let state = &states[lane_states[l].1[p - 1]];
            let runs = match &mut external {
                None => Vec::new(),
                Some(x) => {
                    lanes[l].waits = true;
                    match x.outcome(engine, actor, items, state)? {
                        Some(runs) => runs,
                        None => continue,
                    }
                }
            };
            known.push((l, p, state, runs));
        }
        let passed = |runs: &[CheckRun]| runs.iter().all(|r| r.status == TestStatus::Passed);
        let to_run: Vec<&State> = known.iter().filter(|k| passed(&k.3)).map(|k| k.2).collect();
        let mut engine_runs = check_states(engine, policy, &to_run)?.into_iter();
        out.states_checked += known.len() as u32;
        for (l, p, state, mut runs) in known {
            if passed(&runs) {
                runs.extend(engine_runs.next().expect("one result per state run"));
            }
            record_checked(engine, actor, &items[state.item], state, &runs, out)?;
            lanes[l].search.record(p, passed(&runs));
            lanes[l].runs.insert(p, runs);
        }
    }
}

/// `queue.checked` for each of `runs` (checks of `state`, whose last
/// proposal is `item`), and the runs in `out`.
fn record_checked(
    engine: &Engine,
    actor: &Actor,
    item: &Item,
    state: &State,
    runs: &[CheckRun],
    out: &mut QueueRun,
) -> Result<(), ToolError> {
    write_cx(engine, actor, |cx| {
        for r in runs {
            cx.event(
                &item.entry.id,
                Some(&item.proposal.id),
                QueueCheckedData {
                    revision: item.revision.number,
                    name: r.name.clone(),
                    status: r.status,
                    ahead: state.ahead.clone(),
                    duration_ms: r.duration_ms,
                },
            )?;
        }
        Ok(())
    })?;
    out.checks.extend(runs.iter().map(|r| StateCheck {
        entry_id: item.entry.id.clone(),
        proposal_id: item.proposal.id.clone(),
        name: r.name.clone(),
        status: r.status,
        duration_ms: r.duration_ms,
    }));
    Ok(())
}

/// Land what a lane's checks let land, and hand back its culprit: the
/// proposals up to the longest state known to pass (below the first that
/// failed) land together in one step, each with the passing state's
/// checks recorded on it (a `test.record` each: the check counted for
/// every proposal in the state); then the proposal whose state failed
/// (its state without it passed) goes back to its author with the
/// check's output as a failed `test.record`. The ones behind it stay
/// queued, to be stacked again without it. Nothing lands when the branch
/// moved under the round (`base`: what the lane was stacked on). Whether
/// anything changed.
fn land_lane(
    engine: &Engine,
    actor: &Actor,
    base: &Files,
    lane: &[(&State, &Item)],
    checked: &Checked,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    if lane.is_empty() {
        return Ok(false);
    }
    if !holds(engine, base)? {
        // The branch moved under the round (another host, a direct
        // apply): nothing tested on the old base lands; the next round
        // stacks again on the branch as it is.
        return Ok(true);
    }
    let passing = checked.search.passing();
    if passing > 0 {
        let runs = checked.runs.get(&passing).map_or(&[][..], Vec::as_slice);
        for (i, (_, item)) in lane[..passing].iter().enumerate() {
            let own = i + 1 == passing;
            if !record_checks_or_settle(engine, actor, item, runs, own, out)? {
                return Ok(true);
            }
        }
        let items: Vec<&Item> = lane[..passing].iter().map(|(_, item)| *item).collect();
        if !land(engine, actor, &items, &checked.search, out)? {
            // Not all of it landed: the culprit is judged again next
            // round, on what did.
            return Ok(true);
        }
    }
    let Some(culprit) = checked.search.culprit() else {
        return Ok(passing > 0);
    };
    let (state, item) = lane[culprit - 1];
    let runs = checked.runs.get(&culprit).map_or(&[][..], Vec::as_slice);
    if !record_checks_or_settle(engine, actor, item, runs, true, out)? {
        return Ok(true);
    }
    if let Some(failed) = runs.iter().find(|r| r.status != TestStatus::Passed) {
        let settled = give_back(
            engine,
            actor,
            item,
            QueueReturnReason::CheckFailed,
            &format!(
                "check {} {} on this proposal stacked on {}:\n{}",
                failed.name,
                not_passed(failed.status),
                stacked_on(&state.ahead),
                failed.output
            ),
        )?;
        out.returned.push(settled);
    }
    Ok(true)
}

/// How a check that did not pass ended, for a note: "errored" or "failed".
fn not_passed(status: TestStatus) -> &'static str {
    match status {
        TestStatus::Errored => "errored",
        _ => "failed",
    }
}

/// What a state was stacked on, for a note: "the branch" or "the branch
/// and A, B" (the proposals ahead of it).
fn stacked_on(ahead: &[String]) -> String {
    if ahead.is_empty() {
        "the branch".to_owned()
    } else {
        format!("the branch and {}", ahead.join(", "))
    }
}

/// Hand back each queued entry (not one another host holds, `theirs`)
/// whose proposal's latest revision holds, as its latest result of one
/// of the engine's `[checks.NAME]`, one recorded since it was queued that
/// did not pass: a run that found it the culprit and recorded that, and
/// stopped (a crash) before handing it back. Its inbox now asks its
/// author for a fix (or the orchestrator for a new run), so it would never
/// again be stacked nor leave the queue. Whether any went back.
fn take_failed_checks(
    engine: &Engine,
    actor: &Actor,
    policy: &Policy,
    theirs: &BTreeSet<String>,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    let names: Vec<&String> = policy.checks.run_by_engine().map(|(n, _)| n).collect();
    if names.is_empty() {
        return Ok(false);
    }
    let failed: Vec<(QueueEntry, u32, String)> = engine.store().read(|tx| {
        let mut failed = Vec::new();
        for entry in store::queue::list(tx, Some(QueueStatus::Queued), 0, i64::MAX)? {
            if theirs.contains(&entry.id) {
                continue;
            }
            let p = Proposal::load(tx, &entry.proposal_id)?;
            if !OPEN.contains(&p.status) {
                continue;
            }
            for name in &names {
                let latest = store::evidence::list_test_results(
                    tx,
                    &p.id,
                    0,
                    Some(p.latest_revision),
                    Some(name.as_str()),
                    i64::MAX,
                )?
                .pop();
                let Some(t) = latest else { continue };
                if t.status == TestStatus::Passed || t.created_at < entry.enqueued_at {
                    continue;
                }
                let note = format!(
                    "check {name} {} on this proposal ({}, recorded while it was queued):\n{}",
                    not_passed(t.status),
                    t.id,
                    t.note_md.as_deref().unwrap_or("(no note)")
                );
                failed.push((entry.clone(), p.latest_revision, note));
                break;
            }
        }
        Ok::<_, ToolError>(failed)
    })?;
    hand_back_failed(engine, actor, failed, out)
}

/// Hand back each `(entry, revision, note)` of `failed` as `check_failed`
/// with its note, recording it in `out`; whether there was any.
fn hand_back_failed(
    engine: &Engine,
    actor: &Actor,
    failed: Vec<(QueueEntry, u32, String)>,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    let any = !failed.is_empty();
    for (entry, revision, note) in failed {
        let settled = return_entry(
            engine,
            actor,
            &entry,
            revision,
            QueueReturnReason::CheckFailed,
            &note,
        )?;
        out.record(settled);
    }
    Ok(any)
}

/// Settle the entry of a proposal that is no longer open (`status`):
/// applied while queued — by this queue in a run that stopped before it
/// could say so (a crash), by another host's run, or by a direct apply —
/// is `landed` with its transaction; anything else `removed`. `None`
/// when another host's run settled it first (this run does not report
/// it).
fn settle_gone(
    engine: &Engine,
    actor: &Actor,
    entry: &QueueEntry,
    status: ProposalStatus,
) -> Result<Option<QueueEntry>, ToolError> {
    write_cx(engine, actor, |cx| {
        if store::queue::entry(cx.tx, &entry.id)?.map(|e| e.status) != Some(QueueStatus::Queued) {
            return Ok(None);
        }
        let landed = match status {
            ProposalStatus::Applied => store::transactions::list(
                cx.tx,
                0,
                Some(&entry.proposal_id),
                Some(crate::model::TransactionStatus::Applied),
                i64::MAX,
            )?
            .pop(),
            _ => None,
        };
        match landed {
            Some(t) => settle(
                cx,
                entry,
                Settled::Landed {
                    transaction_id: &t.id,
                    revision: t.revision,
                },
            ),
            None => settle(
                cx,
                entry,
                Settled::Removed {
                    reason: &format!("the proposal is {} (not by this queue)", status.as_str()),
                },
            ),
        }
        .map(Some)
    })
}

/// The queued entries, in order, with what stacking needs; and the
/// entries whose proposal is no longer open.
#[allow(clippy::type_complexity)]
fn load_items(
    engine: &Engine,
) -> Result<(Vec<Item>, Vec<(QueueEntry, ProposalStatus)>), ToolError> {
    engine.store().read(|tx| {
        let mut items = Vec::new();
        let mut gone = Vec::new();
        for entry in store::queue::list(tx, Some(QueueStatus::Queued), 0, i64::MAX)? {
            let proposal = Proposal::load(tx, &entry.proposal_id)?;
            if !OPEN.contains(&proposal.status) {
                gone.push((entry, proposal.status));
                continue;
            }
            let revision = Revision::load(tx, &proposal.id, proposal.latest_revision)?;
            let sides = stored_sides(tx, &revision)?;
            let paths = revision
                .changeset
                .iter()
                .flat_map(|f| std::iter::once(f.path.clone()).chain(f.other_path.clone()))
                .collect();
            items.push(Item {
                entry,
                proposal,
                revision,
                sides,
                paths,
            });
        }
        Ok((items, gone))
    })
}

/// What `item`'s latest revision makes of the files it touches, merged
/// onto the workspace with `overlay` over it; the workspace's files read
/// are remembered in `base`.
fn stack(
    engine: &Engine,
    item: &Item,
    overlay: &Files,
    base: &mut Files,
) -> Result<Vec<(RepoPath, Option<TreeFile>)>, ToolError> {
    let base_cell = std::cell::RefCell::new(std::mem::take(base));
    let read = |path: &RepoPath| -> Result<Option<TreeFile>, ToolError> {
        if let Some(f) = overlay.get(path) {
            return Ok(f.clone());
        }
        if let Some(f) = base_cell.borrow().get(path) {
            return Ok(f.clone());
        }
        let f = engine.workspace().read(path)?;
        base_cell.borrow_mut().insert(path.clone(), f.clone());
        Ok(f)
    };
    let merged = merged_onto(&item.proposal, &item.revision, &item.sides, &read);
    let out = match merged {
        Ok(files) => Ok(files
            .into_iter()
            .map(|f| {
                let after = f.after.map(|c| TreeFile {
                    data: c.data,
                    executable: c.executable,
                    symlink: c.symlink,
                });
                (f.path, after)
            })
            .collect()),
        // Made on these very files: the revision's own result.
        Err(e) if e.conflict_reason() == Some(ConflictReason::UpToDate) => item
            .revision
            .changeset
            .iter()
            .zip(&item.sides)
            .map(|(f, s)| {
                let path = RepoPath::from_bytes(f.path.as_bytes())
                    .map_err(|e| ToolError::invalid_argument("path", e))?;
                Ok((path, s.ours.clone()))
            })
            .collect(),
        Err(e) if e.conflict_reason() == Some(ConflictReason::AlreadyApplied) => Ok(Vec::new()),
        Err(e) => Err(e),
    };
    *base = base_cell.into_inner();
    out
}

/// What the engine's checks write each state over: a copy of the working
/// tree's listed files, or, in a bare repository, the landing branch's
/// tree.
fn check_base(engine: &Engine, policy: &Policy) -> Result<checks::Base, ToolError> {
    #[cfg(feature = "git")]
    if engine.workspace().is_bare() {
        let landing = engine
            .store()
            .read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
        if let Some(branch) = landing.branch_ref() {
            return Ok(checks::Base::Branch(branch));
        }
    }
    let options = crate::state::StateOptions {
        ignore: Some(&policy.workspace.ignore),
        ..crate::state::StateOptions::default()
    };
    Ok(checks::Base::Listed(crate::state::listed_files(
        engine.root(),
        &options,
    )?))
}

/// Run the policy's checks on every state, `depth` at once; each state's
/// runs in the order the policy names them.
fn check_states(
    engine: &Engine,
    policy: &Policy,
    states: &[&State],
) -> Result<Vec<Vec<CheckRun>>, ToolError> {
    if policy.checks.run_by_engine().next().is_none() || states.is_empty() {
        return Ok(states.iter().map(|_| Vec::new()).collect());
    }
    let base = check_base(engine, policy)?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    type Runs = std::io::Result<Vec<CheckRun>>;
    let results: std::sync::Mutex<Vec<Option<Runs>>> =
        std::sync::Mutex::new(states.iter().map(|_| None).collect());
    let workers = (policy.queue.depth as usize).min(states.len());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(state) = states.get(i) else { return };
                let runs = checks::materialize(engine.root(), &base, &state.overlay).map(|dir| {
                    policy
                        .checks
                        .run_by_engine()
                        .map(|(name, c)| checks::run(name, c, dir.path()))
                        .collect()
                });
                results.lock().expect("no worker panics holding it")[i] = Some(runs);
            });
        }
    });
    // A state the engine could not write out was not checked: that is the
    // host's failure (its disk, its temporary directory), never the
    // proposal's, so the run stops with nothing handed back.
    results
        .into_inner()
        .expect("no worker panicked")
        .into_iter()
        .map(|r| {
            r.expect("every state was checked").map_err(|e| {
                ToolError::new(
                    format!("a speculative state could not be written for the queue's checks: {e}"),
                    crate::operations::details::IoDetails::default(),
                )
                .with_source(e)
            })
        })
        .collect()
}

/// [`record_checks`]; `false` when the proposal was no longer open (another
/// host's run landed it, or it was withdrawn, meanwhile): its entry is
/// then settled as [`settle_gone`] settles it.
fn record_checks_or_settle(
    engine: &Engine,
    actor: &Actor,
    item: &Item,
    runs: &[CheckRun],
    own: bool,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    match record_checks(engine, actor, item, runs, own) {
        Ok(()) => Ok(true),
        Err(e) if e.code() == ErrorCode::IllegalTransition => {
            let status = engine
                .store()
                .read(|tx| Proposal::load(tx, &item.proposal.id))?
                .status;
            out.record_some(settle_gone(engine, actor, &item.entry, status)?);
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Record each check run as a `test.record` on `item`'s revision (output
/// as its note); `own`: the runs are of `item`'s own state, whose
/// external answers are recorded on it already.
fn record_checks(
    engine: &Engine,
    actor: &Actor,
    item: &Item,
    runs: &[CheckRun],
    own: bool,
) -> Result<(), ToolError> {
    let session = engine.session(actor.clone());
    for r in runs.iter().filter(|r| !(own && r.recorded)) {
        let name = Title::new(&r.name).map_err(|e| ToolError::invalid_argument("name", e))?;
        let output = if r.output.trim().is_empty() {
            "(no output)"
        } else {
            &r.output
        };
        let note = Markdown::new(&format!(
            "landing queue, entry {}:\n```\n{}\n```",
            item.entry.id, output
        ))
        .map_err(|e| ToolError::invalid_argument("note_md", e))?;
        session.run(super::evidence::RecordTest {
            proposal_id: Id::new(&item.proposal.id)
                .map_err(|e| ToolError::invalid_argument("proposal_id", e))?,
            revision: RevisionNumber(item.revision.number),
            name,
            status: r.status,
            duration_ms: Some(r.duration_ms),
            note_md: Some(note),
            idempotency_key: None,
        })?;
    }
    Ok(())
}

/// Whether a refusal of `patch.apply` is one only the author can answer
/// (a new revision, new evidence, a claim), so the entry goes back.
fn author_must_act(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::Conflict
            | ErrorCode::ValidationFailed
            | ErrorCode::StaleClaim
            | ErrorCode::PatchDoesNotApply
    )
}

/// Hand `item` back to its author.
fn give_back(
    engine: &Engine,
    actor: &Actor,
    item: &Item,
    reason: QueueReturnReason,
    note: &str,
) -> Result<QueueEntry, ToolError> {
    return_entry(
        engine,
        actor,
        &item.entry,
        item.revision.number,
        reason,
        note,
    )
}

/// Settle `entry` as returned to its author for `reason`, on `revision`,
/// with `note`.
fn return_entry(
    engine: &Engine,
    actor: &Actor,
    entry: &QueueEntry,
    revision: u32,
    reason: QueueReturnReason,
    note: &str,
) -> Result<QueueEntry, ToolError> {
    write_cx(engine, actor, |cx| {
        settle(
            cx,
            entry,
            Settled::Returned {
                reason,
                revision,
                note,
            },
        )
    })
}

/// Land `items` (a lane's passing prefix, in order) together in one step
/// ([`super::transactions::apply_batch`]: each as `patch.apply` with
/// `rebase` would land it, keyed by its entry, so a crashed run never
/// lands one twice; in git mode one branch update), and settle their
/// entries. A proposal refused at apply time ends the batch there: the
/// ones before it land if their state is known to pass (`search`), else
/// none does and they stay queued; it stays queued too when only the
/// files or the lock were in the way, goes back to its author when only
/// its author can answer, and is settled when it is no longer open.
/// Whether all of `items` landed.
fn land(
    engine: &Engine,
    actor: &Actor,
    items: &[&Item],
    search: &bisect::Search,
    out: &mut QueueRun,
) -> Result<bool, ToolError> {
    let mut args = Vec::with_capacity(items.len());
    for item in items {
        args.push(super::transactions::ApplyRevision {
            proposal_id: Id::new(&item.proposal.id)
                .map_err(|e| ToolError::invalid_argument("proposal_id", e))?,
            revision: RevisionNumber(item.revision.number),
            transaction_id: None,
            rebase: Some(true),
            idempotency_key: Some(
                Id::new(format!("{}-land", item.entry.id))
                    .map_err(|e| ToolError::invalid_argument("entry", e))?,
            ),
        });
    }
    let done = match super::transactions::apply_batch(engine, actor, &args, &|k| {
        search.known_passing(k)
    }) {
        Ok(done) => done,
        // The files moved while it was prepared, or another apply held
        // the lock: all of it stays queued for the next round.
        Err(e) if matches!(e.code(), ErrorCode::PreconditionFailed | ErrorCode::Busy) => {
            return Ok(false)
        }
        Err(e) => return Err(e),
    };
    let landed = done.applied.len();
    for (item, applied) in items.iter().zip(done.applied) {
        let settled = write_cx(engine, actor, |cx| {
            settle(
                cx,
                &item.entry,
                Settled::Landed {
                    transaction_id: &applied.transaction.id,
                    revision: applied.transaction.revision,
                },
            )
        })?;
        out.landed.push(settled);
    }
    let Some((k, e)) = done.refused else {
        return Ok(landed == items.len());
    };
    let item = items[k];
    match e.code() {
        ErrorCode::PreconditionFailed | ErrorCode::Busy => {}
        // Another host's run landed (or someone withdrew) it first.
        ErrorCode::IllegalTransition => {
            let status = engine
                .store()
                .read(|tx| Proposal::load(tx, &item.proposal.id))?
                .status;
            out.record_some(settle_gone(engine, actor, &item.entry, status)?);
        }
        code if author_must_act(code) => {
            let settled = give_back(
                engine,
                actor,
                item,
                QueueReturnReason::ApplyRefused,
                &format!("patch.apply refused it: {}", e.message()),
            )?;
            out.returned.push(settled);
        }
        _ => return Err(e),
    }
    Ok(false)
}

/// Whether the workspace holds exactly `files` (a lane's base: what its
/// states were stacked on; or a state that passed, once landed).
fn holds(engine: &Engine, files: &Files) -> Result<bool, ToolError> {
    for (path, was) in files {
        if &engine.workspace().read(path)? != was {
            return Ok(false);
        }
    }
    Ok(true)
}
