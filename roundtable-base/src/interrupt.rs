//! Cancellation and deadlines of one call (issue 19, item 3).
//!
//! A host gives a call [`CallOptions`]: a deadline, a [`CancelToken`], or
//! both (`Engine::call_with`). For the call's
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
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A handle a host keeps to cancel calls it gave it to, from any thread.
///
/// Cancelling wakes the waits of those calls at once (a wait registers a
/// wake-up on the token while it sleeps), so a cancellable wait sleeps
/// until woken, not in slices: many pending waits cost no CPU.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<Cancel>);

/// A token's state: the flag, and the wake-ups of the waits sleeping on it.
#[derive(Default)]
struct Cancel {
    cancelled: AtomicBool,
    wakers: Mutex<Wakers>,
    /// For a [`CancelToken::child`]: its wake-up on the parent, which
    /// lives (and stays registered) as long as the child does.
    parent: Mutex<Option<OnCancel>>,
}

/// The registered wake-ups, each under the number its [`OnCancel`] holds.
#[derive(Default)]
struct Wakers {
    next: u64,
    list: Vec<(u64, Waker)>,
}

type Waker = Arc<dyn Fn() + Send + Sync>;

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.cancelled.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl CancelToken {
    /// A token not yet cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancel every call holding this token (their waits wake and return).
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::Release);
        let wakers: Vec<Waker> = self
            .wakers()
            .list
            .iter()
            .map(|(_, w)| Arc::clone(w))
            .collect();
        for wake in wakers {
            wake();
        }
    }

    /// A new token, cancelled when this one is (at once if it already
    /// is) and by its own [`cancel`](CancelToken::cancel), which leaves
    /// this one alone: a call cancellable both by itself and by its
    /// caller's handle.
    pub fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        let weak = Arc::downgrade(&child.0);
        let link = self.on_cancel(Arc::new(move || {
            if let Some(c) = weak.upgrade() {
                CancelToken(c).cancel();
            }
        }));
        *child
            .0
            .parent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(link);
        child
    }

    /// Whether [`cancel`](CancelToken::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    fn wakers(&self) -> std::sync::MutexGuard<'_, Wakers> {
        self.0
            .wakers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Call `wake` when this token is cancelled (at once if it already
    /// is), until the returned guard is dropped.
    fn on_cancel(&self, wake: Waker) -> OnCancel {
        let id = {
            let mut wakers = self.wakers();
            let id = wakers.next;
            wakers.next += 1;
            wakers.list.push((id, Arc::clone(&wake)));
            id
        };
        // Cancelled before the wake-up was registered: wake now.
        if self.is_cancelled() {
            wake();
        }
        OnCancel {
            token: self.clone(),
            id,
        }
    }
}

/// A wake-up registered on a [`CancelToken`]; dropping it unregisters.
#[must_use = "the wake-up is registered only while this lives"]
pub struct OnCancel {
    token: CancelToken,
    id: u64,
}

impl Drop for OnCancel {
    fn drop(&mut self) {
        self.token.wakers().list.retain(|(id, _)| *id != self.id);
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
pub fn scope<T>(options: &CallOptions, f: impl FnOnce() -> T) -> T {
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
pub fn check() -> Result<(), Interrupted> {
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

/// The latest a wait of the calling thread's call may sleep until: `until`,
/// or the call's deadline if sooner. (A cancel wakes a wait registered with
/// [`on_cancel`]; a short wait that is not looks at [`check`] when it ends.)
pub fn bound(until: Instant) -> Instant {
    CURRENT.with(|c| match &*c.borrow() {
        Some(cur) if !cur.committed => cur.options.deadline.map_or(until, |d| d.min(until)),
        _ => until,
    })
}

/// Have `wake` called when the calling thread's call is cancelled (while
/// it has not passed its commit point), until the guard is dropped: a wait
/// that registers it need not look at the token in slices. `None` when the
/// call has no token (nothing can cancel it).
pub fn on_cancel(wake: impl Fn() + Send + Sync + 'static) -> Option<OnCancel> {
    let token = CURRENT.with(|c| match &*c.borrow() {
        Some(cur) if !cur.committed => cur.options.cancel.clone(),
        _ => None,
    })?;
    Some(token.on_cancel(Arc::new(wake)))
}

/// The calling thread's call passed its commit point: nothing interrupts
/// it any more.
pub fn committed() {
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

    #[test]
    fn cancelling_calls_the_registered_wake_ups_until_they_are_dropped() {
        use std::sync::atomic::AtomicUsize;
        let token = CancelToken::new();
        let options = CallOptions {
            deadline: None,
            cancel: Some(token.clone()),
        };
        let woken = Arc::new(AtomicUsize::new(0));
        let count = |w: &Arc<AtomicUsize>| {
            let w = Arc::clone(w);
            move || {
                w.fetch_add(1, Ordering::SeqCst);
            }
        };
        assert!(on_cancel(count(&woken)).is_none(), "no call, no token");
        scope(&options, || {
            let kept = on_cancel(count(&woken)).expect("a token");
            drop(on_cancel(count(&woken)).expect("a token"));
            token.cancel();
            assert_eq!(woken.load(Ordering::SeqCst), 1, "only the kept one");
            // Registered after the cancel: woken at once.
            let _late = on_cancel(count(&woken)).expect("a token");
            assert_eq!(woken.load(Ordering::SeqCst), 2);
            drop(kept);
            assert!(token.wakers().list.len() == 1);
        });
    }

    #[test]
    fn issue34_item5_a_child_token_is_cancelled_by_its_parent_and_alone() {
        let parent = CancelToken::new();
        let (a, b) = (parent.child(), parent.child());
        a.cancel();
        assert!(a.is_cancelled() && !parent.is_cancelled() && !b.is_cancelled());
        parent.cancel();
        assert!(b.is_cancelled());
        assert!(
            parent.child().is_cancelled(),
            "a late child is cancelled at once"
        );
        let other = CancelToken::new();
        drop(other.child());
        assert!(
            other.wakers().list.is_empty(),
            "a dropped child unregisters"
        );
    }
}
