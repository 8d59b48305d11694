//! Waiting tools at the MCP boundary (issue 32, items 2 and 3): where a
//! waiting call runs, how many one client may have pending, how long one
//! waits without telling its client, and how a client stops one.
//!
//! - **Waits never take the threads writes need.** A call of a tool that
//!   waits (`events.wait`, `claim.acquire`) runs on a thread of its own
//!   (a small stack, asleep on the engine's commit notifications, no
//!   polling), not on the runtime's blocking pool, where changes run: a
//!   full set of pending waits does not delay another agent's write.
//! - **A cap per client.** At most [`MAX_WAITS`] waiting calls of one
//!   actor at once (over HTTP: per bearer token's actor; over stdio: the
//!   server's one actor); past it a call is refused with `busy` whose
//!   details name the cap (`max_waits`), having changed nothing. The
//!   threads are therefore bounded by the cap times the actors that wait.
//! - **Client timeouts.** Clients commonly give up on a request after 60 s.
//!   A wait whose request carries a `progressToken` in `_meta` is sent
//!   `notifications/progress` every [`PROGRESS_EVERY`] and may wait the
//!   tool's full maximum (60 s); one without is shortened to
//!   [`QUIET_WAIT_MS`] (its `timeout_ms` / `wait_ms` clamped), so its
//!   answer (`timed_out`, or `conflict`) arrives before the client's
//!   timeout: call again to wait longer.
//! - **Cancellation.** `notifications/cancelled` for a request, an HTTP
//!   client that disconnects before its answer, or a dropped request,
//!   cancels the engine call ([`roundtable::CancelToken`]): a wait wakes
//!   at once and grants nothing; a change not yet past its commit point
//!   changes nothing (`cancelled`); one past it finishes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use roundtable::ToolError;
use serde_json::Value;

/// The most waiting calls (`events.wait`, `claim.acquire`) one actor may
/// have pending at once on one server; the next is refused with `busy`.
pub const MAX_WAITS: usize = 600;

/// The longest a wait runs when its request carries no `progressToken`,
/// in milliseconds: below the 60 s request timeout of common clients.
pub const QUIET_WAIT_MS: u64 = 50_000;

/// How often a wait whose request carries a `progressToken` is sent
/// `notifications/progress`.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// A waiting thread's stack: it runs one engine call (a store read, a
/// claim grant), nothing deep.
const WAIT_STACK: usize = 512 * 1024;

/// The arguments that say how long a waiting tool waits.
const WAIT_ARGS: [&str; 2] = ["timeout_ms", "wait_ms"];

/// The pending waits of each actor on one server (shared with other
/// front ends that wait on the engine, such as `roundtable serve`'s event
/// stream, so they keep the same cap).
#[derive(Debug)]
pub struct Waits {
    max: usize,
    pending: Mutex<HashMap<String, usize>>,
}

impl Default for Waits {
    fn default() -> Waits {
        Waits::new(MAX_WAITS)
    }
}

impl Waits {
    /// At most `max` pending waits per actor.
    pub fn new(max: usize) -> Waits {
        Waits {
            max,
            pending: Mutex::new(HashMap::new()),
        }
    }

    /// A place for one more wait of `actor`, or `busy` naming the cap.
    ///
    /// # Errors
    /// `busy` (details `max_waits`) when `actor` already has the most.
    pub fn enter(self: &Arc<Self>, actor: &str) -> Result<Pending, ToolError> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let n = pending.entry(actor.to_owned()).or_insert(0);
        if *n >= self.max {
            return Err(ToolError::new(
                format!(
                    "{actor} already has {} waits pending, the most one client may (a wait that ends, or is cancelled, frees its place)",
                    self.max
                ),
                roundtable::operations::details::BusyDetails {
                    max_waits: Some(self.max as u64),
                    ..Default::default()
                },
            ));
        }
        *n += 1;
        Ok(Pending {
            waits: Arc::clone(self),
            actor: actor.to_owned(),
        })
    }
}

/// One pending wait's place; dropping it frees the place.
#[derive(Debug)]
pub struct Pending {
    waits: Arc<Waits>,
    actor: String,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pending = self
            .waits
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = pending.get_mut(&self.actor) {
            *n -= 1;
            if *n == 0 {
                pending.remove(&self.actor);
            }
        }
    }
}

/// The rule above as a waiting tool's description says it to agents.
pub(crate) fn rule() -> String {
    format!(
        "Over MCP: at most {MAX_WAITS} waiting calls per client pending at once (the next is busy, details.max_waits); without a progressToken in _meta a wait lasts at most {QUIET_WAIT_MS} ms, with one it may last the full time and is sent progress every {} s; notifications/cancelled (or a client that disconnects) stops it, granting nothing.",
        PROGRESS_EVERY.as_secs()
    )
}

/// Shorten a waiting tool's wait to [`QUIET_WAIT_MS`] (a request without
/// a progress token); arguments of another shape are left for the tool to
/// refuse.
pub(crate) fn quiet(args: &mut Value) {
    for key in WAIT_ARGS {
        if let Some(v) = args.get_mut(key) {
            if v.as_u64().is_some_and(|ms| ms > QUIET_WAIT_MS) {
                *v = Value::from(QUIET_WAIT_MS);
            }
        }
    }
}

/// Run `call` on a thread of its own (a wait), holding `pending` until it
/// returns; `None` when the system refuses a thread.
pub fn spawn<T: Send + 'static>(
    pending: Pending,
    call: impl FnOnce() -> T + Send + 'static,
) -> Option<tokio::sync::oneshot::Receiver<T>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("roundtable-wait".into())
        .stack_size(WAIT_STACK)
        .spawn(move || {
            let out = call();
            drop(pending);
            let _ = tx.send(out);
        })
        .ok()?;
    Some(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtable::ErrorCode;
    use serde_json::json;

    #[test]
    fn the_cap_counts_each_actors_pending_waits_and_frees_them() {
        let waits = Arc::new(Waits::new(2));
        let a = waits.enter("agent:a").expect("1");
        let b = waits.enter("agent:a").expect("2");
        let e = waits.enter("agent:a").expect_err("3");
        assert_eq!(e.code(), ErrorCode::Busy);
        assert_eq!(e.details()["max_waits"], 2);
        let _other = waits.enter("agent:b").expect("another actor");
        drop(a);
        let _c = waits.enter("agent:a").expect("freed");
        drop(b);
    }

    #[test]
    fn a_quiet_wait_is_shortened_below_client_timeouts() {
        let mut args = json!({"timeout_ms": 60000, "wait_ms": 70000, "since_seq": 1});
        quiet(&mut args);
        assert_eq!(
            args,
            json!({"timeout_ms": QUIET_WAIT_MS, "wait_ms": QUIET_WAIT_MS, "since_seq": 1})
        );
        let mut short = json!({"timeout_ms": 1000, "wait_ms": "x"});
        quiet(&mut short);
        assert_eq!(short, json!({"timeout_ms": 1000, "wait_ms": "x"}));
    }
}
