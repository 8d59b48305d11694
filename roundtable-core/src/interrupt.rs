//! Cancellation and deadlines of one call (issue 19, item 3).
//!
//! A host gives a call [`CallOptions`]: a deadline, a [`CancelToken`], or
//! both ([`Engine::call_with`](crate::Engine::call_with)). For the call's
//! duration they are the calling thread's, so every wait the call makes
//! deep down — the apply lock, a busy store, a claim wait, `events.wait` —
//! checks them (`interrupt::check`) without each layer passing them on. A call
//! interrupted before its commit point changes nothing and fails with
//! `cancelled` or `deadline_exceeded`. A call that passed its commit point
//! (`interrupt::committed`) is no longer interrupted: it finishes and reports
//! success even if the caller gave up — retry with an idempotency key to
//! learn the outcome.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A handle a host keeps to cancel calls it gave it to, from any thread.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancel every call holding this token (their next wait returns).
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`cancel`](CancelToken::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// What may interrupt one call.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    /// Give up waiting at this instant.
    pub deadline: Option<Instant>,
    /// Give up waiting once this is cancelled.
    pub cancel: Option<CancelToken>,
}

impl CallOptions {
    /// Options with a deadline `timeout` from now.
    pub fn timeout(timeout: Duration) -> CallOptions {
        CallOptions {
            deadline: Some(Instant::now() + timeout),
            cancel: None,
        }
    }
}

/// Why a call stopped waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Interrupted {
    /// Its [`CancelToken`] was cancelled.
    #[error("the call was cancelled before it changed anything")]
    Cancelled,
    /// Its deadline passed.
    #[error("the call's deadline passed before it changed anything")]
    DeadlineExceeded,
}

impl Interrupted {
    /// The stable code.
    pub fn code(self) -> crate::ErrorCode {
        match self {
            Interrupted::Cancelled => crate::ErrorCode::Cancelled,
            Interrupted::DeadlineExceeded => crate::ErrorCode::DeadlineExceeded,
        }
    }
}

/// The calling thread's call, while one runs with options.
struct Current {
    options: CallOptions,
    committed: bool,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Run `f` with `options` as the calling thread's (restoring what was there
/// before, so a call made inside another keeps the outer one's).
pub(crate) fn scope<T>(options: &CallOptions, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Current>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let outer = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = outer);
        }
    }
    let outer = CURRENT.with(|c| {
        c.borrow_mut().replace(Current {
            options: options.clone(),
            committed: false,
        })
    });
    let _restore = Restore(outer);
    f()
}

/// `Err` when the calling thread's call is cancelled or past its deadline
/// and has not passed its commit point.
pub(crate) fn check() -> Result<(), Interrupted> {
    CURRENT.with(|c| match &*c.borrow() {
        Some(cur) if !cur.committed => {
            if cur
                .options
                .cancel
                .as_ref()
                .is_some_and(CancelToken::is_cancelled)
            {
                Err(Interrupted::Cancelled)
            } else if cur.options.deadline.is_some_and(|d| Instant::now() >= d) {
                Err(Interrupted::DeadlineExceeded)
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    })
}

/// The latest a wait of the calling thread's call may sleep until, and
/// whether it must also look at a cancel token meanwhile (then it sleeps
/// in short slices).
pub(crate) fn bound(until: Instant) -> (Instant, bool) {
    CURRENT.with(|c| match &*c.borrow() {
        Some(cur) if !cur.committed => (
            cur.options.deadline.map_or(until, |d| d.min(until)),
            cur.options.cancel.is_some(),
        ),
        _ => (until, false),
    })
}

/// How long a cancellable wait sleeps between looks at its token.
pub(crate) const SLICE: Duration = Duration::from_millis(5);

/// The calling thread's call passed its commit point: nothing interrupts
/// it any more.
pub(crate) fn committed() {
    CURRENT.with(|c| {
        if let Some(cur) = c.borrow_mut().as_mut() {
            cur.committed = true;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_interrupts_until_its_commit_point_and_restores_the_outer_call() {
        assert_eq!(check(), Ok(()));
        let token = CancelToken::new();
        let options = CallOptions {
            deadline: None,
            cancel: Some(token.clone()),
        };
        scope(&options, || {
            assert_eq!(check(), Ok(()));
            token.cancel();
            assert_eq!(check(), Err(Interrupted::Cancelled));
            scope(&CallOptions::timeout(Duration::ZERO), || {
                assert_eq!(check(), Err(Interrupted::DeadlineExceeded));
            });
            assert_eq!(check(), Err(Interrupted::Cancelled));
            committed();
            assert_eq!(check(), Ok(()));
        });
        assert_eq!(check(), Ok(()));
    }
}
