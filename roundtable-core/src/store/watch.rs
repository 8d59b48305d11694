//! Commit notifications: how a waiter (`events.wait`, a waiting
//! `claim.acquire`) learns that the store may have changed, without
//! polling it.
//!
//! - **This engine's commits**: [`Store::write`](super::Store::write)
//!   bumps a generation counter and wakes every waiter on its condition
//!   variable after each commit.
//! - **Other connections' commits** (other processes, other engines in
//!   this process): a watcher thread, started with the first wait, blocks
//!   in `poll` on an inotify watch of the store's directory (SQLite
//!   appends every commit to `store.db-wal`; a checkpoint writes
//!   `store.db`) and bumps the same counter on every change there. It
//!   holds no connection and no lock, and costs nothing while nothing
//!   changes; dropping the store stops it through an eventfd.
//! - **A missed notification** (inotify unavailable, or a change seen an
//!   instant before SQLite made the commit visible): waiters recheck
//!   `PRAGMA data_version` every [`FALLBACK`], so one costs at most that.

use std::os::fd::{AsFd as _, OwnedFd};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

/// How often a waiter rechecks `PRAGMA data_version` when no
/// notification came: the most a missed notification can cost.
pub(crate) const FALLBACK: Duration = Duration::from_millis(100);

/// The commit generation and the waiters blocked on it.
#[derive(Debug, Default)]
pub(crate) struct Commits {
    generation: Mutex<u64>,
    changed: Condvar,
}

impl Commits {
    fn lock(&self) -> std::sync::MutexGuard<'_, u64> {
        self.generation
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The generation now.
    pub(crate) fn current(&self) -> u64 {
        *self.lock()
    }

    /// Something may have changed: a new generation, every waiter woken.
    pub(crate) fn bump(&self) {
        let mut g = self.lock();
        *g = g.wrapping_add(1);
        drop(g);
        self.changed.notify_all();
    }

    /// Block until the generation is no longer `seen`, or `timeout`
    /// passed; returns the generation then.
    pub(crate) fn wait_past(&self, seen: u64, timeout: Duration) -> u64 {
        let g = self.lock();
        let (g, _) = self
            .changed
            .wait_timeout_while(g, timeout, |g| *g == seen)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *g
    }
}

/// The watcher thread of one store: it bumps [`Commits`] whenever a file
/// in the store's directory is written. Dropping it stops the thread.
#[derive(Debug)]
pub(crate) struct Watcher {
    stop: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The process that started the thread: a child forked since has
    /// the eventfd but not the thread, and must neither signal the
    /// parent's thread to stop nor join it.
    pid: u32,
}

impl Watcher {
    /// Watch `dir` (the store's directory) for `commits`. `None` when the
    /// system refuses (no inotify, too many watches): waiters then rely on
    /// the [`FALLBACK`] recheck alone.
    pub(crate) fn start(dir: &Path, commits: &Arc<Commits>) -> Option<Watcher> {
        use rustix::event::{eventfd, EventfdFlags};
        use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
        let inotify = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        // Writes (the WAL, a checkpoint), and files appearing (the WAL
        // recreated after the last connection closed it). The directory
        // was checked not to be a link when the store opened.
        inotify::add_watch(
            &inotify,
            dir,
            WatchFlags::MODIFY
                | WatchFlags::CREATE
                | WatchFlags::MOVED_TO
                | WatchFlags::DONT_FOLLOW
                | WatchFlags::ONLYDIR,
        )
        .ok()?;
        let stop = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok()?;
        let stop_seen = stop.try_clone().ok()?;
        let commits = Arc::downgrade(commits);
        let thread = std::thread::Builder::new()
            .name("roundtable-watch".into())
            .spawn(move || watch(&inotify, &stop_seen, &commits))
            .ok()?;
        Some(Watcher {
            stop,
            thread: Some(thread),
            pid: std::process::id(),
        })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            return;
        }
        // Wake the thread out of `poll`; it sees the eventfd and returns.
        let _ = rustix::io::write(self.stop.as_fd(), &1u64.to_ne_bytes());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The watcher thread's loop: block until the directory changes (then
/// drain the events and bump the generation) or `stop` is signalled.
fn watch(inotify: &OwnedFd, stop: &OwnedFd, commits: &std::sync::Weak<Commits>) {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    loop {
        let mut fds = [
            PollFd::new(inotify, PollFlags::IN),
            PollFd::new(stop, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        if !fds[1].revents().is_empty() {
            return;
        }
        if fds[0].revents().is_empty() {
            continue;
        }
        // Drain everything queued: one bump covers them all.
        loop {
            match rustix::io::read(inotify.as_fd(), &mut buf[..]) {
                Ok((read, _)) if !read.is_empty() => {}
                Err(rustix::io::Errno::INTR) => {}
                _ => break,
            }
        }
        match commits.upgrade() {
            Some(c) => c.bump(),
            None => return,
        }
    }
}

/// The store's notification state: the generation, and the watcher once
/// a waiter started it.
#[derive(Debug, Default)]
pub(crate) struct Notices {
    pub(crate) commits: Arc<Commits>,
    watcher: OnceLock<Option<Watcher>>,
}

impl Notices {
    /// Make sure changes by other connections are watched (the first
    /// waiter starts the thread; later calls cost an atomic load).
    pub(crate) fn watch(&self, dir: &Path) {
        self.watcher
            .get_or_init(|| Watcher::start(dir, &self.commits));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_in_the_directory_bumps_the_generation_and_drop_stops_the_thread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let commits = Arc::new(Commits::default());
        let watcher = Watcher::start(dir.path(), &commits).expect("inotify");
        let seen = commits.current();
        std::fs::write(dir.path().join("store.db-wal"), b"frame").expect("write");
        let now = commits.wait_past(seen, Duration::from_secs(5));
        assert_ne!(now, seen, "the write woke nobody");
        drop(watcher); // joins the thread: hangs here if stopping failed
    }

    #[test]
    fn wait_past_returns_at_once_when_the_generation_moved_and_times_out_otherwise() {
        let commits = Commits::default();
        let seen = commits.current();
        commits.bump();
        assert_ne!(commits.wait_past(seen, Duration::from_secs(5)), seen);
        let now = commits.current();
        let start = std::time::Instant::now();
        assert_eq!(commits.wait_past(now, Duration::from_millis(30)), now);
        assert!(start.elapsed() >= Duration::from_millis(30));
    }
}
