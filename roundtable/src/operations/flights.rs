//! Identical reads asked at once, worked out once for all who asked.
//!
//! When fifty reviewers' consoles ask for the same proposal's status in
//! the same millisecond (each event of the proposal makes every open
//! console ask again), each answer is a full validation that reads the
//! files. [`Flights`] lets the callers of one key share a computation —
//! but only one that **started after they asked**: a caller that finds a
//! computation already running waits for it to finish and then takes the
//! next one (started by the first of them to wake), never the running
//! one, whose reads may predate the question. So every answer is one the
//! caller could have worked out itself after asking — nothing is
//! remembered past the callers waiting for it (a finished answer is
//! dropped once they have it), and a later caller always gets a fresh
//! computation. A burst of N identical reads costs at most two.
//!
//! A failed computation is not shared: each caller waiting for it works
//! its own answer out (errors carry their cause, which is not copied).
//!
//! Only for reads: what decides a write never goes through here.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

/// Computations of `V` by key, shared by the callers that asked before
/// each started (see the module documentation).
#[derive(Debug)]
pub(crate) struct Flights<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
    /// Signalled whenever a computation finishes.
    landed: Condvar,
    /// Computations run.
    computed: AtomicU64,
    /// Answers taken from a computation another caller ran.
    shared: AtomicU64,
}

impl<K, V> Default for Flights<K, V> {
    fn default() -> Self {
        Flights {
            slots: Mutex::new(HashMap::new()),
            landed: Condvar::new(),
            computed: AtomicU64::new(0),
            shared: AtomicU64::new(0),
        }
    }
}

/// One key's computations.
#[derive(Debug)]
struct Slot<V> {
    /// How many computations of this key have started (the next one is
    /// numbered this).
    started: u64,
    /// Whether computation `started - 1` is running.
    running: bool,
    /// The last computation that finished: its number and answer (`None`:
    /// it failed).
    last: Option<(u64, Option<Arc<V>>)>,
    /// Callers waiting for a computation of this key.
    waiting: usize,
}

/// What the engine's shared reads did since it opened
/// ([`Engine::shared_read_stats`](crate::Engine::shared_read_stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlightStats {
    /// Computations run.
    pub computed: u64,
    /// Answers taken from a computation another caller ran, started after
    /// the caller asked.
    pub shared: u64,
}

/// What a caller does next.
enum Next<V> {
    Take(Arc<V>),
    Run(u64),
    Alone,
}

impl<K: Eq + Hash + Clone, V> Flights<K, V> {
    fn lock(&self) -> MutexGuard<'_, HashMap<K, Slot<V>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many computations ran and how many answers were shared.
    pub(crate) fn stats(&self) -> FlightStats {
        FlightStats {
            computed: self.computed.load(Ordering::Relaxed),
            shared: self.shared.load(Ordering::Relaxed),
        }
    }

    /// How many callers wait for a computation of `key` now.
    #[cfg(test)]
    fn waiting(&self, key: &K) -> usize {
        self.lock().get(key).map_or(0, |s| s.waiting)
    }

    /// The answer for `key`: from a computation of `compute` (this
    /// caller's or another's) that started after this call began.
    pub(crate) fn share<E>(
        &self,
        key: &K,
        compute: impl FnOnce() -> Result<V, E>,
    ) -> Result<Arc<V>, E> {
        let next = {
            let mut slots = self.lock();
            let slot = slots.entry(key.clone()).or_insert(Slot {
                started: 0,
                running: false,
                last: None,
                waiting: 0,
            });
            // Computation `started - 1`, if running, began before this
            // call: only a later one answers it.
            let need = slot.started;
            loop {
                let slot = slots.get_mut(key).expect("kept while anyone waits");
                match &slot.last {
                    Some((n, Some(v))) if *n >= need => break Next::Take(Arc::clone(v)),
                    Some((n, None)) if *n >= need => break Next::Alone,
                    _ => {}
                }
                if !slot.running {
                    slot.running = true;
                    slot.started += 1;
                    break Next::Run(slot.started - 1);
                }
                slot.waiting += 1;
                slots = self
                    .landed
                    .wait(slots)
                    .unwrap_or_else(PoisonError::into_inner);
                let slot = slots.get_mut(key).expect("kept while anyone waits");
                slot.waiting -= 1;
            }
        };
        match next {
            Next::Take(v) => {
                self.shared.fetch_add(1, Ordering::Relaxed);
                self.forget_if_idle(key);
                Ok(v)
            }
            Next::Alone => {
                self.forget_if_idle(key);
                self.computed.fetch_add(1, Ordering::Relaxed);
                compute().map(Arc::new)
            }
            Next::Run(number) => {
                // Lands even if `compute` panics, so no waiter hangs.
                let mut landing = Landing {
                    flights: self,
                    key,
                    number,
                    answer: None,
                };
                self.computed.fetch_add(1, Ordering::Relaxed);
                let out = compute().map(Arc::new);
                landing.answer = out.as_ref().ok().map(Arc::clone);
                drop(landing);
                out
            }
        }
    }

    /// Drop `key`'s slot once nobody runs or waits for it: a finished
    /// answer is kept only for the callers that asked before it started.
    fn forget_if_idle(&self, key: &K) {
        let mut slots = self.lock();
        if slots.get(key).is_some_and(|s| !s.running && s.waiting == 0) {
            slots.remove(key);
        }
    }
}

/// A running computation; dropping it records its answer and wakes the
/// waiters.
struct Landing<'a, K: Eq + Hash + Clone, V> {
    flights: &'a Flights<K, V>,
    key: &'a K,
    number: u64,
    answer: Option<Arc<V>>,
}

impl<K: Eq + Hash + Clone, V> Drop for Landing<'_, K, V> {
    fn drop(&mut self) {
        let mut slots = self.flights.lock();
        if let Some(slot) = slots.get_mut(self.key) {
            slot.running = false;
            slot.last = Some((self.number, self.answer.take()));
            if slot.waiting == 0 {
                slots.remove(self.key);
            }
        }
        drop(slots);
        self.flights.landed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operations::ToolError;
    use std::sync::mpsc;

    /// Wait (without a clock) until `n` callers wait on `key`.
    fn until_waiting(f: &Flights<&'static str, u32>, key: &'static str, n: usize) {
        while f.waiting(&key) < n {
            std::thread::yield_now();
        }
    }

    #[test]
    fn callers_arriving_during_a_computation_share_the_next_one_not_it() {
        let flights = Flights::<&'static str, u32>::default();
        let f = &flights;
        let (release_first, first_may_finish) = mpsc::channel::<()>();
        let (release_second, second_may_finish) = mpsc::channel::<()>();
        let second_may_finish = &Mutex::new(second_may_finish);
        std::thread::scope(|s| {
            // The first caller's computation runs until released: it read
            // "the files" before the others asked, so answers 1.
            let first = s.spawn(move || {
                f.share(&"p", || {
                    first_may_finish.recv().expect("released");
                    Ok::<_, ToolError>(1)
                })
            });
            while f.stats().computed == 0 {
                std::thread::yield_now();
            }
            let later: Vec<_> = (0..5)
                .map(|_| {
                    s.spawn(move || {
                        f.share(&"p", || {
                            second_may_finish
                                .lock()
                                .expect("lock")
                                .recv()
                                .expect("released");
                            Ok::<_, ToolError>(2)
                        })
                    })
                })
                .collect();
            until_waiting(f, "p", 5);
            release_first.send(()).expect("send");
            assert_eq!(*first.join().expect("joins").expect("answers"), 1);
            release_second.send(()).expect("send");
            for t in later {
                assert_eq!(
                    *t.join().expect("joins").expect("answers"),
                    2,
                    "a caller that asked while 1 was being worked out never gets 1"
                );
            }
        });
        assert_eq!(
            f.stats(),
            FlightStats {
                computed: 2,
                shared: 4
            }
        );
        assert!(f.lock().is_empty(), "no answer is kept once handed out");
    }

    #[test]
    fn a_caller_alone_computes_every_time() {
        let f = Flights::<&'static str, u32>::default();
        for i in 0..3 {
            assert_eq!(
                *f.share(&"p", || Ok::<_, ToolError>(i)).expect("answers"),
                i
            );
        }
        assert_eq!(
            f.stats(),
            FlightStats {
                computed: 3,
                shared: 0
            }
        );
        assert!(f.lock().is_empty());
    }

    #[test]
    fn a_failure_is_not_shared_and_other_keys_do_not_wait() {
        let flights = Flights::<&'static str, u32>::default();
        let f = &flights;
        let (release, may_finish) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let failing = s.spawn(move || {
                f.share(&"p", || {
                    may_finish.recv().expect("released");
                    Err(ToolError::invalid_argument("x", "fails"))
                })
            });
            while f.stats().computed == 0 {
                std::thread::yield_now();
            }
            // Another key runs at once while "p" is busy.
            assert_eq!(
                *f.share(&"q", || Ok::<_, ToolError>(7)).expect("answers"),
                7
            );
            let waiter = s.spawn(|| f.share(&"p", || Ok::<_, ToolError>(3)));
            until_waiting(f, "p", 1);
            release.send(()).expect("send");
            assert!(failing.join().expect("joins").is_err());
            // It waited for the next computation, its own.
            assert_eq!(*waiter.join().expect("joins").expect("answers"), 3);
        });
        assert_eq!(f.stats().shared, 0);
        assert_eq!(f.stats().computed, 3);
    }

    #[test]
    fn a_panicking_computation_wakes_its_waiters() {
        let flights = Flights::<&'static str, u32>::default();
        let f = &flights;
        let (release, may_finish) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let panics = s.spawn(move || {
                f.share(&"p", || -> Result<u32, ToolError> {
                    may_finish.recv().expect("released");
                    panic!("the computation fails")
                })
            });
            while f.stats().computed == 0 {
                std::thread::yield_now();
            }
            let waiter = s.spawn(|| f.share(&"p", || Ok::<_, ToolError>(5)));
            until_waiting(f, "p", 1);
            release.send(()).expect("send");
            assert!(panics.join().is_err());
            assert_eq!(*waiter.join().expect("joins").expect("answers"), 5);
        });
    }
}
