//! Waiting for the store to change: the loop `events.wait` and a waiting
//! `claim.acquire` share.
//!
//! A waiter checks (in its own short transaction), then sleeps on the
//! store's commit notifications (see `store::watch`) holding no
//! connection, no lock and no transaction, and checks again when woken:
//! by a commit of this engine, a write into the store's directory by
//! another process, a time the caller says matters (a claim's expiry),
//! or the deadline. Without a notification it rechecks `PRAGMA
//! data_version` every `store::watch::FALLBACK`.

use super::ToolError;
use crate::engine::Engine;
use crate::store::watch::FALLBACK;
use std::time::{Duration, Instant};

/// After a notification whose check found nothing (the change may not
/// have been visible yet, or was not what the waiter waits for), the next
/// check comes this soon rather than at [`FALLBACK`].
const NUDGE: Duration = Duration::from_millis(5);

/// What one check found.
pub(crate) enum Check<T> {
    /// Done: return this.
    Done(T),
    /// Not yet; check again on the next change, or after this long at the
    /// latest (a claim about to expire).
    Wait(Option<Duration>),
}

/// Run `check` until it is done or `deadline` passes (then one last
/// check, and `None` if that is not done either).
pub(crate) fn until<T>(
    engine: &Engine,
    deadline: Instant,
    mut check: impl FnMut() -> Result<Check<T>, ToolError>,
) -> Result<Option<T>, ToolError> {
    let store = engine.store();
    // Watch, and read the generation, before the first check, so a commit
    // between a check and the sleep after it still wakes the sleep.
    store.watch_commits();
    let mut generation = store.generation();
    let mut version = store.data_version()?;
    let mut nap = FALLBACK;
    loop {
        let due = match check()? {
            Check::Done(v) => return Ok(Some(v)),
            Check::Wait(due) => due,
        };
        let checked_at = Instant::now();
        if checked_at >= deadline {
            // That check was the last one (a zero timeout looks once).
            return Ok(None);
        }
        loop {
            let now = Instant::now();
            if now >= deadline {
                return match check()? {
                    Check::Done(v) => Ok(Some(v)),
                    Check::Wait(_) => Ok(None),
                };
            }
            let mut sleep = nap.min(deadline - now);
            if let Some(due) = due {
                sleep = sleep.min((checked_at + due).saturating_duration_since(now));
            }
            let seen = store.wait_for_change(generation, sleep);
            if seen != generation {
                generation = seen;
                nap = NUDGE;
                break;
            }
            nap = FALLBACK;
            if due.is_some_and(|d| checked_at.elapsed() >= d) {
                break;
            }
            let v = store.data_version()?;
            if v != version {
                version = v;
                break;
            }
        }
    }
}
