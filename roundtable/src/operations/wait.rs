//! Waiting for the store to change: the loop `events.wait` and a waiting
//! `claim.acquire` share.
//!
//! A waiter registers what it waits for (`store::watch::Interest`),
//! checks (in its own short transaction), then sleeps holding no
//! connection, no lock and no transaction, until a committed event it
//! matches is published (by this engine's writes, or by the watcher
//! that reads other connections' commits off the log: see
//! `store::watch`), a time the caller says matters (a claim's expiry),
//! or the deadline; then it checks again.

use super::ToolError;
use crate::engine::Engine;
use crate::store::watch::Interest;
use std::time::{Duration, Instant};

/// What one check found.
pub(crate) enum Check<T> {
    /// Done: return this.
    Done(T),
    /// Not yet; check again when woken.
    Wait {
        /// Check again after this long at the latest (a claim about to
        /// expire), woken or not.
        due: Option<Duration>,
        /// The log head the check read up to, when it read the log:
        /// events up to it wake the waiter no more.
        head: Option<i64>,
    },
}

/// Run `check` until it is done or `deadline` passes (then one last
/// check, and `None` if that is not done either), woken by the events
/// `interest` names.
pub(crate) fn until<T>(
    engine: &Engine,
    deadline: Instant,
    interest: Interest,
    mut check: impl FnMut() -> Result<Check<T>, ToolError>,
) -> Result<Option<T>, ToolError> {
    let store = engine.store();
    // Register, and watch other connections, before the first check, so
    // a commit between a check and the sleep after it still wakes it.
    let waiting = store.register(interest);
    store.watch_commits();
    // A cancel of the caller's call wakes this waiter, so its sleep need
    // not look at the token in slices (many waits cost no CPU).
    let _on_cancel = crate::interrupt::on_cancel(waiting.waker());
    loop {
        let due = match check()? {
            Check::Done(v) => return Ok(Some(v)),
            Check::Wait { due, head } => {
                if let Some(head) = head {
                    waiting.checked(head);
                }
                due
            }
        };
        let checked_at = Instant::now();
        if checked_at >= deadline {
            // That check was the last one (a zero timeout looks once).
            return Ok(None);
        }
        // The caller's own deadline or cancel token (crate::interrupt)
        // ends the wait early, with its own error: a cancel wakes the
        // sleep at once (the wake-up registered above), a deadline bounds it.
        crate::interrupt::check()?;
        let wake_by = due.map_or(deadline, |d| deadline.min(checked_at + d));
        let wake_by = crate::interrupt::bound(wake_by);
        let woken = waiting.sleep(wake_by.saturating_duration_since(Instant::now()));
        crate::interrupt::check()?;
        if !woken && Instant::now() >= deadline {
            return match check()? {
                Check::Done(v) => Ok(Some(v)),
                Check::Wait { .. } => Ok(None),
            };
        }
    }
}
