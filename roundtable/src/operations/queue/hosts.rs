//! Several hosts running one queue (every engine on one PostgreSQL store,
//! or on one workspace's SQLite store): they share its work instead of
//! duplicating it.
//!
//! - **Runner.** A host's `queue.run` is a *runner*: its workspace clone
//!   and its orchestrator ([`Runner::of`]). A run restarted on the same
//!   clone by the same orchestrator (after a crash) is the same runner,
//!   so it takes its own lanes back at once.
//! - **Lane leases.** Each round, a runner leases the entries of the lanes
//!   it will stack, in one write of the store ([`Runner::take`]): a lane
//!   holding an entry another runner's live lease holds is skipped this
//!   round (counted in `lanes_held`), and a runner takes lanes only until
//!   it has `depth` speculative states to check (as many as it checks at
//!   once; a lane with none, whose entries all wait, costs nothing) — the
//!   rest are left to the other hosts, or to its next round. With one
//!   lane (`lanes = false`), a second host finds it held and its run
//!   returns at once.
//! - **Renewed, released, expiring.** While the round runs (its checks
//!   may run long) another thread renews the runner's leases every
//!   [`RENEW_EVERY`]; they are released when the round ends, however it
//!   ends. A lease not renewed for [`LEASE_TTL`] (the host died, or lost
//!   the store) expires, and the lane goes to whichever host asks next.
//!   Leases only keep hosts from repeating each other's work: every step
//!   they cover stays safe without them (each entry lands once, keyed by
//!   the entry; the branch never holds a state that failed).
//! - **Catching up.** A host on its own clone of a remote brings its clean
//!   working tree forward to the remote's branch before each round
//!   ([`catch_up`]), so a lane another host landed part of is stacked on
//!   what the remote holds, not on what this clone last saw.

use super::Item;
use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::store;
#[cfg(feature = "git")]
use crate::ErrorCode;
use std::collections::BTreeSet;
use std::time::Duration;

use super::ToolError;

/// How long a lane lease holds unless renewed: a host that died leaves
/// its lanes to the others this long after its last renewal.
pub(crate) const LEASE_TTL: Duration = Duration::from_secs(30);

/// How often a running round renews its leases.
pub(crate) const RENEW_EVERY: Duration = Duration::from_secs(10);

/// A host running the queue: its workspace clone and its orchestrator.
pub(super) struct Runner {
    id: String,
}

/// What [`Runner::take`] left out.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Skipped {
    /// Lanes skipped because another runner holds one of their entries.
    pub(super) held: u32,
    /// The runners that held them.
    pub(super) by: BTreeSet<String>,
    /// Lanes skipped because an entry of theirs was settled since the
    /// round read the queue (another host landed it): the next round
    /// reads it again.
    pub(super) changed: u32,
}

impl Runner {
    /// The runner of `actor`'s runs on `engine`'s clone.
    pub(super) fn of(engine: &Engine, actor: &Actor) -> Runner {
        Runner {
            id: format!("{actor}@{}", engine.store().clone_id()),
        }
    }

    /// How the store names it.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// Run `round` (one round of the queue) with this runner's leases
    /// renewed on another thread every [`RENEW_EVERY`] while it runs, and
    /// released when it ends, whatever it returned.
    pub(super) fn round<T>(
        &self,
        engine: &Engine,
        round: impl FnOnce() -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let out = std::thread::scope(|s| {
            s.spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(RENEW_EVERY)
                {
                    // A renewal that fails (the store unreachable for a
                    // moment) is tried again at the next tick; a lease
                    // that expires meanwhile costs at most work repeated
                    // by another host.
                    let _ = self.renew(engine);
                }
            });
            let out = round();
            drop(stop);
            out
        });
        let released = self.release(engine);
        let out = out?;
        released?;
        Ok(out)
    }

    /// Extend every lease this runner holds by [`LEASE_TTL`] from now.
    fn renew(&self, engine: &Engine) -> Result<usize, ToolError> {
        let until = until(engine.now());
        engine
            .store()
            .write(|tx| Ok(store::queue::renew_leases(tx, &self.id, until)?))
    }

    /// End every lease this runner holds.
    fn release(&self, engine: &Engine) -> Result<usize, ToolError> {
        engine
            .store()
            .write(|tx| Ok(store::queue::release_leases(tx, &self.id)?))
    }

    /// The queued entries another runner's live lease holds (none read
    /// unless `wanted`).
    pub(super) fn held_by_others(
        &self,
        engine: &Engine,
        wanted: bool,
    ) -> Result<BTreeSet<String>, ToolError> {
        if !wanted {
            return Ok(BTreeSet::new());
        }
        let now = engine.now();
        engine.store().read(|tx| {
            Ok(store::queue::leased_to_others(tx, &self.id, now)?
                .into_iter()
                .map(|(id, _)| id)
                .collect())
        })
    }

    /// Of `batches` (each lane's entries this round would stack, indexes
    /// into `items`; `lanes` the lanes whole), the ones this runner takes,
    /// their entries leased to it in one write: see [`choose`]. `landable`
    /// names the proposals that make a speculative state when stacked.
    pub(super) fn take(
        &self,
        engine: &Engine,
        items: &[Item],
        lanes: &[Vec<usize>],
        batches: Vec<Vec<usize>>,
        landable: &BTreeSet<String>,
        depth: u32,
    ) -> Result<(Vec<Vec<usize>>, Skipped), ToolError> {
        if batches.is_empty() {
            return Ok((batches, Skipped::default()));
        }
        let work: Vec<Lane<'_>> = lanes
            .iter()
            .zip(&batches)
            .map(|(lane, batch)| Lane {
                entries: lane.iter().map(|&i| items[i].entry.id.as_str()).collect(),
                batch: batch.iter().map(|&i| items[i].entry.id.as_str()).collect(),
                states: batch
                    .iter()
                    .filter(|&&i| landable.contains(&items[i].proposal.id))
                    .count(),
            })
            .collect();
        let now = engine.now();
        let (taken, skipped) = engine.store().write(|tx| {
            let others = store::queue::leased_to_others(tx, &self.id, now)?;
            let queued =
                store::queue::queued_among(tx, work.iter().flat_map(|l| l.batch.iter().copied()))?;
            let (taken, skipped) = choose(&work, &others, &queued, depth as usize);
            for &i in &taken {
                store::queue::lease(tx, &work[i].batch, &self.id, until(now))?;
            }
            Ok::<_, ToolError>((taken, skipped))
        })?;
        let mut batches: Vec<Option<Vec<usize>>> = batches.into_iter().map(Some).collect();
        let taken = taken
            .into_iter()
            .filter_map(|i| batches[i].take())
            .collect();
        Ok((taken, skipped))
    }
}

/// When a lease taken or renewed at `now` ends.
fn until(now: Timestamp) -> Timestamp {
    let ttl = i64::try_from(LEASE_TTL.as_millis()).expect("a TTL of seconds");
    Timestamp(now.0.saturating_add(ttl))
}

/// One lane as [`choose`] weighs it.
struct Lane<'a> {
    /// Every queued entry of the lane.
    entries: Vec<&'a str>,
    /// The entries this round would stack (leased when taken).
    batch: Vec<&'a str>,
    /// How many speculative states it would check.
    states: usize,
}

/// The lanes to take, in order, given `others` (entries another runner's
/// live lease holds, with that runner) and `queued` (the entries still
/// queued): every lane none of whose entries another runner holds and
/// whose batch is still queued, until `depth` speculative states are
/// taken (at least one lane; a lane of no state is always taken); and
/// what was skipped. A pure function.
fn choose(
    lanes: &[Lane<'_>],
    others: &[(String, String)],
    queued: &BTreeSet<&str>,
    depth: usize,
) -> (Vec<usize>, Skipped) {
    let mut taken = Vec::new();
    let mut skipped = Skipped::default();
    let mut states = 0;
    for (i, lane) in lanes.iter().enumerate() {
        let holders: BTreeSet<&str> = others
            .iter()
            .filter(|(id, _)| lane.entries.contains(&id.as_str()))
            .map(|(_, runner)| runner.as_str())
            .collect();
        if !holders.is_empty() {
            skipped.held += 1;
            skipped.by.extend(holders.into_iter().map(str::to_owned));
            continue;
        }
        if !lane.batch.iter().all(|e| queued.contains(e)) {
            skipped.changed += 1;
            continue;
        }
        if lane.states > 0 && states >= depth {
            continue;
        }
        states += lane.states;
        taken.push(i);
    }
    (taken, skipped)
}

/// Bring this clone's working tree forward to its remote's branch when it
/// is behind it (git mode with a remote, not bare; as `git merge
/// --ff-only`, under the apply lock), so the round stacks on what the
/// remote holds. Nothing to do otherwise. A clone that cannot be brought
/// forward (an uncommitted change where the remote's commits write, a
/// branch that diverged, `HEAD` elsewhere) is left as it is: the round
/// goes on, and a landing it makes says why it is refused.
#[cfg(feature = "git")]
pub(super) fn catch_up(engine: &Engine) -> Result<(), ToolError> {
    use crate::landing;
    let setting = engine
        .store()
        .read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
    let (Some(branch), Some(remote)) = (setting.branch_ref(), setting.remote.as_deref()) else {
        return Ok(());
    };
    if engine.workspace().is_bare() {
        // A bare clone follows the remote when it lands.
        return Ok(());
    }
    let branch = branch.as_str();
    let refused = |e: landing::LandingError| -> Result<(), ToolError> {
        match e.code() {
            ErrorCode::PreconditionFailed | ErrorCode::Conflict => Ok(()),
            _ => Err(ToolError::from(e)),
        }
    };
    let _lock = crate::apply::ApplyLock::acquire(engine.root(), engine.options().busy_timeout)?;
    let repo = match landing::open(engine.root()) {
        Ok(repo) => repo,
        Err(e) => return refused(e),
    };
    let on = repo
        .find_reference("HEAD")
        .ok()
        .and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned));
    if on.as_deref() != Some(branch) {
        return Ok(());
    }
    let Ok(old) = repo.refname_to_id(branch) else {
        return Ok(());
    };
    let (remote_repo, _) = match landing::open_remote(&repo, remote) {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    let tip = match landing::fetch(&repo, &remote_repo, branch) {
        Ok(Some(tip)) => tip,
        Ok(None) => return Ok(()),
        Err(e) => return refused(e),
    };
    if tip == old {
        return Ok(());
    }
    match landing::contains(&repo, tip, old) {
        Ok(true) => {}
        Ok(false) => return Ok(()),
        Err(e) => return refused(e),
    }
    match crate::apply::fast_forward(
        engine.workspace(),
        &repo,
        branch,
        old,
        tip,
        engine.tx_env().durability != crate::store::Durability::Off,
    ) {
        Ok(()) => Ok(()),
        Err(crate::apply::FastForwardError::Landing(e)) => refused(e),
        // An uncommitted change where the remote's commits write.
        Err(crate::apply::FastForwardError::Worktree(e)) => {
            let e = ToolError::from(e);
            match e.code() {
                ErrorCode::PreconditionFailed | ErrorCode::Conflict => Ok(()),
                _ => Err(e),
            }
        }
    }
}

/// A build without git lands no commits: nothing to catch up with.
#[cfg(not(feature = "git"))]
pub(super) fn catch_up(_engine: &Engine) -> Result<(), ToolError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane<'a>(entries: &[&'a str], batch: usize, states: usize) -> Lane<'a> {
        Lane {
            entries: entries.to_vec(),
            batch: entries[..batch].to_vec(),
            states,
        }
    }

    fn held(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(e, r)| ((*e).to_owned(), (*r).to_owned()))
            .collect()
    }

    #[test]
    fn a_lane_another_runner_holds_an_entry_of_is_skipped_and_the_rest_taken_up_to_depth() {
        let lanes = [
            lane(&["e1", "e2"], 2, 2),
            lane(&["e3", "e4"], 1, 1),
            lane(&["e5"], 1, 0),
            lane(&["e6"], 1, 1),
            lane(&["e7"], 1, 1),
            lane(&["e8"], 1, 0),
        ];
        let all: BTreeSet<&str> = lanes.iter().flat_map(|l| l.batch.clone()).collect();
        // e4 (beyond lane 1's batch) is another host's: the lane is too.
        let (taken, skipped) = choose(&lanes, &held(&[("e4", "h2"), ("e9", "h3")]), &all, 3);
        assert_eq!(taken, vec![0, 2, 3, 5], "lane 4 waits: 3 states taken");
        assert_eq!(skipped.held, 1);
        assert_eq!(skipped.by, BTreeSet::from(["h2".to_owned()]));
        assert_eq!(skipped.changed, 0);
        // Nothing held: at least one lane, whatever its size.
        let (taken, skipped) = choose(&lanes[..1], &[], &all, 1);
        assert_eq!(taken, vec![0]);
        assert_eq!(skipped, Skipped::default());
        // One lane, held: nothing to do.
        let (taken, skipped) = choose(&lanes[..1], &held(&[("e1", "h2")]), &all, 8);
        assert!(taken.is_empty());
        assert_eq!(skipped.held, 1);
        // An entry settled since the round read the queue: the lane is
        // left to the next round.
        let mut settled = all.clone();
        settled.remove("e6");
        let (taken, skipped) = choose(&lanes, &[], &settled, 8);
        assert_eq!(taken, vec![0, 1, 2, 4, 5]);
        assert_eq!(skipped.changed, 1);
        assert_eq!(skipped.held, 0);
    }

    #[test]
    fn a_lease_ends_its_ttl_after_it_was_taken() {
        assert_eq!(until(Timestamp(1_000)), Timestamp(31_000));
        assert_eq!(until(Timestamp(i64::MAX)), Timestamp(i64::MAX));
    }
}
