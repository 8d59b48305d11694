//! Commit notifications: how a waiter (`events.wait`, a waiting
//! `claim.acquire`) learns that something it waits for may have been
//! committed, without polling the store, and without waking for what it
//! does not wait for.
//!
//! - **What a commit appended.** Every state change appends its event in
//!   the same transaction, so the log says what changed. A waiter
//!   registers an [`Interest`] (event kinds, a proposal, an actor, or
//!   anything) and is woken only by a [`Notice`] of an event it matches,
//!   with a `seq` past the log head it last checked: sixteen agents each
//!   waiting for their own proposal's landing are not all woken by every
//!   vote.
//! - **This engine's commits**: [`Store::write`](super::Store::write)
//!   publishes the events each commit appended, right after the commit.
//! - **Other connections' commits** (other processes, other engines in
//!   this process): a watcher thread, started by the first waiter, blocks
//!   in `poll` on an inotify watch of the store's directory (SQLite
//!   appends every commit to `store.db-wal`). On a change it reads the
//!   events appended since it last looked, with one indexed query on its
//!   own read-only connection, and publishes them the same way; the
//!   waiters then wake exactly as for this engine's commits (an event
//!   they were already told of, or already read, wakes nobody twice). A
//!   change that shows no new event yet (the WAL written an instant
//!   before SQLite made the commit visible, which under `synchronous =
//!   FULL` waits for the fsync) is looked at again after each of
//!   [`NUDGES`].
//! - **A missed notification** (inotify unavailable, or a commit that
//!   became visible after the nudge): while waiters are registered the
//!   watcher checks `PRAGMA data_version` on its connection every
//!   [`FALLBACK`], so a missed one costs at most that; with no waiter it
//!   sleeps in `poll` and costs nothing.
//! - **On PostgreSQL** every commit that appended events sends `NOTIFY
//!   roundtable_events` (delivered at commit, to every host); the watcher
//!   thread listens on its own connection and reads the new events the
//!   same way. A broken connection wakes every waiter (they look for
//!   themselves) and is reconnected.
//! - [`Commits::bump_any`] wakes the waiters that wait on anything (claim
//!   waiters), for a change outside the log (a claim waiter left the
//!   queue); [`Commits::bump`] wakes every waiter (the watcher could not
//!   read the log).

#[cfg(feature = "postgres")]
use super::sql::PgConn;
use super::sql::{self, params, Tx};
use rusqlite::Connection;
#[cfg(feature = "postgres")]
use std::cell::RefCell;
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// How often the watcher checks `PRAGMA data_version` while waiters are
/// registered: the most a missed notification can cost.
pub const FALLBACK: Duration = Duration::from_millis(100);

/// After a change in the store's directory that showed no new event, the
/// watcher looks again after each of these pauses (the commit may not have
/// been visible yet: SQLite writes the WAL, syncs it, then publishes the
/// commit) before it falls back to [`FALLBACK`].
///
/// The first pause is also how long the watcher lets a burst of commits
/// gather before it reads them: a busy engine's own commits (which it
/// publishes itself, and the watcher reads again) cost the watcher one
/// query per burst, not one per commit, for a millisecond more on another
/// process's wake.
pub const NUDGES: [Duration; 3] = [
    Duration::from_millis(1),
    Duration::from_millis(2),
    Duration::from_millis(5),
];

/// Lock `m`, through a poisoned lock: every value behind these locks is
/// valid at every instant (plain numbers and lists).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One committed event, as much of it as a waiter filters on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// Its place in the log.
    pub seq: i64,
    /// Its kind's stable spelling.
    pub kind: String,
    /// The proposal it is about, if any.
    pub proposal_id: Option<String>,
    /// Who caused it: actor kind.
    pub actor_kind: String,
    /// Who caused it: actor id.
    pub actor_id: String,
}

/// What a waiter waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interest {
    /// Any commit at all (a claim waiter: a release, a landing, an expiry
    /// renewed — its check decides).
    Any,
    /// Events matching every given filter.
    Events {
        /// Only these kinds (any when empty).
        kinds: Vec<String>,
        /// Only this proposal's.
        proposal_id: Option<String>,
        /// Only this actor's: `(kind, id)`.
        actor: Option<(String, String)>,
    },
    /// Events matching any of these (an author's `inbox.wait`: its own
    /// proposals' events, and its own).
    AnyOf(Vec<Interest>),
}

impl Interest {
    /// Whether `notice` is something this waiter waits for.
    pub fn matches(&self, notice: &Notice) -> bool {
        match self {
            Interest::Any => true,
            Interest::Events {
                kinds,
                proposal_id,
                actor,
            } => {
                (kinds.is_empty() || kinds.contains(&notice.kind))
                    && proposal_id
                        .as_ref()
                        .is_none_or(|p| notice.proposal_id.as_ref() == Some(p))
                    && actor
                        .as_ref()
                        .is_none_or(|(k, id)| *k == notice.actor_kind && *id == notice.actor_id)
            }
            Interest::AnyOf(all) => all.iter().any(|i| i.matches(notice)),
        }
    }
}

/// One registered waiter.
#[derive(Debug)]
struct Slot {
    interest: Interest,
    marks: Mutex<Marks>,
    woken: Condvar,
}

/// Where a waiter stands in the log.
#[derive(Debug, Clone, Copy)]
struct Marks {
    /// Everything up to this seq has been read (or woken for) already.
    seen: i64,
    /// The highest seq of a matching notice ([`i64::MAX`]: something
    /// changed outside the log). The waiter is due to look while
    /// `pending > seen`.
    pending: i64,
}

/// The registered waiters of one store, and what wakes them.
#[derive(Debug, Default)]
pub struct Commits {
    waiters: Mutex<Vec<Arc<Slot>>>,
    /// Tells the watcher thread (once there is one) that the first waiter
    /// registered, so it starts its [`FALLBACK`] checks.
    kick: OnceLock<OwnedFd>,
}

impl Commits {
    /// Wake the waiters that match one of `notices` past what they have
    /// seen.
    pub fn publish(&self, notices: &[Notice]) {
        if notices.is_empty() {
            return;
        }
        for slot in lock(&self.waiters).iter() {
            let mut marks = lock(&slot.marks);
            let top = notices
                .iter()
                .filter(|n| n.seq > marks.seen && slot.interest.matches(n))
                .map(|n| n.seq)
                .max();
            if let Some(top) = top.filter(|t| *t > marks.pending) {
                marks.pending = top;
                drop(marks);
                slot.woken.notify_one();
            }
        }
    }

    /// Wake every waiter: something may have changed that the log does
    /// not show.
    pub fn bump(&self) {
        self.wake(|_| true);
    }

    /// Wake the waiters of [`Interest::Any`] (claim waiters): something
    /// only they look at changed (a claim waiter left the queue). Those
    /// waiting for events are not woken: no event was committed.
    pub fn bump_any(&self) {
        self.wake(|i| *i == Interest::Any);
    }

    fn wake(&self, which: impl Fn(&Interest) -> bool) {
        for slot in lock(&self.waiters).iter().filter(|s| which(&s.interest)) {
            lock(&slot.marks).pending = i64::MAX;
            slot.woken.notify_one();
        }
    }

    /// Whether anyone waits.
    fn has_waiters(&self) -> bool {
        !lock(&self.waiters).is_empty()
    }

    /// Register a waiter for `interest` that has seen nothing yet. Register
    /// before the first check: a notice published after that wakes it.
    pub fn register(&self, interest: Interest) -> Waiting<'_> {
        let slot = Arc::new(Slot {
            interest,
            marks: Mutex::new(Marks {
                seen: 0,
                pending: 0,
            }),
            woken: Condvar::new(),
        });
        let mut waiters = lock(&self.waiters);
        let first = waiters.is_empty();
        waiters.push(Arc::clone(&slot));
        drop(waiters);
        if first {
            if let Some(kick) = self.kick.get() {
                let _ = rustix::io::write(kick.as_fd(), &1u64.to_ne_bytes());
            }
        }
        Waiting {
            commits: self,
            slot,
        }
    }
}

/// A registered waiter; dropping it unregisters.
#[derive(Debug)]
#[must_use = "a waiter is woken only while it is registered"]
pub struct Waiting<'a> {
    commits: &'a Commits,
    slot: Arc<Slot>,
}

impl Waiting<'_> {
    /// The waiter has read the log up to `head` (its check's snapshot):
    /// notices up to there wake it no more.
    pub fn checked(&self, head: i64) {
        let mut marks = lock(&self.slot.marks);
        marks.seen = marks.seen.max(head);
    }

    /// A wake-up for this waiter that another thread may call (a cancelled
    /// call): its sleep returns as for a notice it waits for.
    pub fn waker(&self) -> impl Fn() + Send + Sync + 'static {
        let slot = Arc::clone(&self.slot);
        move || {
            lock(&slot.marks).pending = i64::MAX;
            slot.woken.notify_one();
        }
    }

    /// Sleep until a matching notice past what was seen arrives, or
    /// `timeout` passes; true when woken (the waiter should look now).
    pub fn sleep(&self, timeout: Duration) -> bool {
        let marks = lock(&self.slot.marks);
        let (mut marks, _) = self
            .slot
            .woken
            .wait_timeout_while(marks, timeout, |m| m.pending <= m.seen)
            .unwrap_or_else(PoisonError::into_inner);
        if marks.pending <= marks.seen {
            return false;
        }
        // The look that follows reads everything committed so far.
        if marks.pending != i64::MAX {
            marks.seen = marks.pending;
        } else {
            marks.pending = marks.seen;
        }
        true
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.commits.waiters).retain(|s| !Arc::ptr_eq(s, &self.slot));
    }
}

/// Reads the events appended since it last looked, for the watcher.
pub struct LogTail {
    source: TailSource,
    /// The last seq read.
    last: i64,
    /// `PRAGMA data_version` when last read (SQLite).
    version: i64,
}

enum TailSource {
    Sqlite(Connection),
    #[cfg(feature = "postgres")]
    Postgres(Box<RefCell<PgConn>>),
}

impl LogTail {
    /// Follow the log from its head now, on `conn` (a read-only
    /// connection of its own).
    pub fn sqlite(conn: Connection) -> sql::Result<LogTail> {
        let version = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        LogTail::new(TailSource::Sqlite(conn), version)
    }

    /// Follow the log from its head now, on `conn` (a PostgreSQL
    /// connection of its own).
    #[cfg(feature = "postgres")]
    fn postgres(conn: PgConn) -> sql::Result<LogTail> {
        LogTail::new(TailSource::Postgres(Box::new(RefCell::new(conn))), 0)
    }

    fn new(source: TailSource, version: i64) -> sql::Result<LogTail> {
        let mut tail = LogTail {
            source,
            last: 0,
            version,
        };
        tail.last = tail.with_tx(|tx| {
            tx.query_row("SELECT coalesce(max(seq), 0) FROM events", params![], |r| {
                r.get(0)
            })
        })?;
        Ok(tail)
    }

    fn with_tx<T>(&self, f: impl FnOnce(&Tx<'_>) -> sql::Result<T>) -> sql::Result<T> {
        match &self.source {
            TailSource::Sqlite(c) => f(&Tx::sqlite(c)),
            #[cfg(feature = "postgres")]
            TailSource::Postgres(c) => f(&Tx::postgres(c)),
        }
    }

    /// The events committed since the last call.
    fn new_events(&mut self) -> sql::Result<Vec<Notice>> {
        let last = self.last;
        let notices = self.with_tx(|tx| {
            tx.query_map(
                "SELECT seq, kind, proposal_id, actor_kind, actor_id FROM events WHERE seq > ?1 ORDER BY seq",
                [last],
                |r| {
                    Ok(Notice {
                        seq: r.get(0)?,
                        kind: r.get(1)?,
                        proposal_id: r.get(2)?,
                        actor_kind: r.get(3)?,
                        actor_id: r.get(4)?,
                    })
                },
            )
        })?;
        if let Some(n) = notices.last() {
            self.last = n.seq;
        }
        Ok(notices)
    }

    /// Whether another connection committed since the last look (SQLite;
    /// PostgreSQL says so by notification).
    #[cfg_attr(not(feature = "postgres"), allow(irrefutable_let_patterns))]
    fn moved(&mut self) -> sql::Result<bool> {
        let TailSource::Sqlite(conn) = &self.source else {
            return Ok(false);
        };
        let v: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        Ok(std::mem::replace(&mut self.version, v) != v)
    }
}

/// The watcher thread of one store: it publishes other connections'
/// commits. Dropping it stops the thread.
#[derive(Debug)]
pub struct Watcher {
    stop: Arc<AtomicBool>,
    /// Written to stop the thread (after `stop` is set) or to kick it.
    signal: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The process that started the thread: a child forked since has
    /// the eventfd but not the thread, and must neither signal the
    /// parent's thread to stop nor join it.
    pid: u32,
}

impl Watcher {
    /// Watch `dir` (the store's directory) for `commits`, reading new
    /// events with `tail`. Without inotify (the system refuses, or too
    /// many watches) the thread still runs its [`FALLBACK`] checks.
    /// `None` when not even a thread or an eventfd can be had: waiters
    /// then wake on this engine's commits and their deadlines only.
    pub fn start(dir: &Path, commits: &Arc<Commits>, tail: LogTail) -> Option<Watcher> {
        use rustix::event::{eventfd, EventfdFlags};
        let inotify = watch_dir(dir);
        let signal = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok()?;
        let signal_seen = signal.try_clone().ok()?;
        if let Ok(kick) = signal.try_clone() {
            let _ = commits.kick.set(kick);
        }
        let commits = Arc::downgrade(commits);
        Watcher::spawn("roundtable-watch", signal, move |stop| {
            watch(inotify.as_ref(), &signal_seen, stop, &commits, tail);
        })
    }

    /// Run `body` on a thread named `name`, given the flag that tells it
    /// to stop (`signal` is written to wake it when the flag is set).
    fn spawn(
        name: &str,
        signal: OwnedFd,
        body: impl FnOnce(&AtomicBool) + Send + 'static,
    ) -> Option<Watcher> {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(&stopping))
            .ok()?;
        Some(Watcher {
            stop,
            signal,
            thread: Some(thread),
            pid: std::process::id(),
        })
    }

    /// Listen for PostgreSQL commit notifications for `commits`, on
    /// connections `connect` opens (again after a broken one).
    #[cfg(feature = "postgres")]
    pub fn listen(
        commits: &Arc<Commits>,
        connect: impl Fn() -> Option<PgConn> + Send + 'static,
    ) -> Option<Watcher> {
        use rustix::event::{eventfd, EventfdFlags};
        let first = listening(&connect)?;
        // The thread looks at its stop flag between notification waits.
        let signal = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok()?;
        let commits = Arc::downgrade(commits);
        Watcher::spawn("roundtable-listen", signal, move |stop| {
            listen(first, &connect, stop, &commits);
        })
    }
}

/// A connection listening on the commit channel, following the log from
/// its head.
#[cfg(feature = "postgres")]
fn listening(connect: &impl Fn() -> Option<PgConn>) -> Option<LogTail> {
    let mut conn = connect()?;
    conn.client
        .batch_execute(&format!("LISTEN {}", super::pg::CHANNEL))
        .ok()?;
    LogTail::postgres(conn).ok()
}

/// The PostgreSQL watcher's loop: wait for a notification (looking at
/// `stop` every [`FALLBACK`]), then read and publish the new events.
#[cfg(feature = "postgres")]
fn listen(
    mut tail: LogTail,
    connect: &impl Fn() -> Option<PgConn>,
    stop: &AtomicBool,
    commits: &Weak<Commits>,
) {
    use postgres::fallible_iterator::FallibleIterator as _;
    loop {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let notified = match &tail.source {
            TailSource::Postgres(conn) => {
                let mut conn = conn.borrow_mut();
                let mut notes = conn.client.notifications();
                let first = notes.timeout_iter(FALLBACK).next();
                match first {
                    Ok(Some(_)) => {
                        // Drain what else came: one read for the burst.
                        while let Ok(Some(_)) = notes.iter().next() {}
                        Ok(true)
                    }
                    Ok(None) => Ok(false),
                    Err(e) => Err(e),
                }
            }
            TailSource::Sqlite(_) => return,
        };
        let Some(c) = commits.upgrade() else { return };
        match notified {
            Ok(false) => {}
            Ok(true) => match tail.new_events() {
                Ok(notices) => c.publish(&notices),
                Err(_) => c.bump(),
            },
            Err(_) => {
                // The waiters look for themselves; listen again on a new
                // connection (one try per FALLBACK while the server is away).
                c.bump();
                drop(c);
                let last = tail.last;
                loop {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Some(mut fresh) = listening(connect) {
                        fresh.last = fresh.last.min(last);
                        tail = fresh;
                        break;
                    }
                    std::thread::sleep(FALLBACK);
                }
            }
        }
    }
}

/// An inotify watch of `dir`: writes (the WAL, a checkpoint) and files
/// appearing (the WAL recreated after the last connection closed it).
/// The directory was checked not to be a link when the store opened.
fn watch_dir(dir: &Path) -> Option<OwnedFd> {
    use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
    let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
    inotify::add_watch(
        &fd,
        dir,
        WatchFlags::MODIFY
            | WatchFlags::CREATE
            | WatchFlags::MOVED_TO
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR,
    )
    .ok()?;
    Some(fd)
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            return;
        }
        // Wake the thread out of `poll`; it sees `stop` and returns.
        self.stop.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(self.signal.as_fd(), &1u64.to_ne_bytes());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Read everything queued on a non-blocking `fd`; true when there was
/// anything.
fn drain(fd: &OwnedFd) -> bool {
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 4096];
    let mut any = false;
    loop {
        match rustix::io::read(fd.as_fd(), &mut buf[..]) {
            Ok((read, _)) if !read.is_empty() => any = true,
            Err(rustix::io::Errno::INTR) => {}
            _ => return any,
        }
    }
}

/// The watcher thread's loop: block until the directory changes, a look
/// or the fallback check is due, or `signal` says stop (or that waiters
/// came).
fn watch(
    inotify: Option<&OwnedFd>,
    signal: &OwnedFd,
    stop: &AtomicBool,
    commits: &Weak<Commits>,
    mut tail: LogTail,
) {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use std::time::Instant;
    // After a change: when to look, and which pause of [`NUDGES`] that is.
    let mut look_at: Option<(Instant, usize)> = None;
    loop {
        let waiting = match commits.upgrade() {
            Some(c) => c.has_waiters(),
            None => return,
        };
        let timeout = match look_at {
            Some((at, _)) => Some(at.saturating_duration_since(Instant::now())),
            None if waiting => Some(FALLBACK),
            None => None,
        };
        let timeout = timeout.map(|t| Timespec {
            tv_sec: i64::try_from(t.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(t.subsec_nanos()),
        });
        let mut fds = vec![PollFd::new(signal, PollFlags::IN)];
        if let Some(fd) = inotify {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        let ready = match poll(&mut fds, timeout.as_ref()) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        };
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let kicked = !fds[0].revents().is_empty() && drain(signal);
        let changed =
            fds.get(1).is_some_and(|f| !f.revents().is_empty()) && inotify.is_some_and(drain);
        let look = match look_at {
            // A change: let the burst gather, look after the first pause.
            None if changed => {
                look_at = Some((Instant::now() + NUDGES[0], 0));
                false
            }
            Some((at, _)) => Instant::now() >= at,
            // The fallback check, when nothing woke the watcher.
            None => ready == 0 && !kicked && tail.moved().unwrap_or(true),
        };
        if !look {
            continue;
        }
        let Some(c) = commits.upgrade() else { return };
        match tail.new_events() {
            Ok(notices) if notices.is_empty() => {
                // Not visible yet (or a commit that appended nothing):
                // look again after the next pause, if any is left.
                look_at = look_at.and_then(|(_, n)| {
                    NUDGES
                        .get(n + 1)
                        .map(|pause| (Instant::now() + *pause, n + 1))
                });
            }
            Ok(notices) => {
                look_at = None;
                c.publish(&notices);
            }
            Err(_) => {
                // The waiters look for themselves.
                look_at = None;
                c.bump();
            }
        }
    }
}

/// The store's notification state: the waiters, and the watcher once a
/// waiter started it.
#[derive(Debug, Default)]
pub struct Notices {
    /// The commits seen by the watcher.
    pub commits: Arc<Commits>,
    watcher: OnceLock<Option<Watcher>>,
}

impl Notices {
    /// Make sure changes by other connections are watched (the first
    /// waiter starts the thread, following the log from `tail`'s head;
    /// later calls cost an atomic load).
    pub fn watch(&self, dir: &Path, tail: impl FnOnce() -> Option<LogTail>) {
        self.watcher
            .get_or_init(|| Watcher::start(dir, &self.commits, tail()?));
    }

    /// [`Notices::watch`] for a PostgreSQL store: listen for the commits'
    /// notifications on connections `connect` opens.
    #[cfg(feature = "postgres")]
    pub fn listen(&self, connect: impl Fn() -> Option<PgConn> + Send + 'static) {
        self.watcher
            .get_or_init(|| Watcher::listen(&self.commits, connect));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(seq: i64, kind: &str, proposal: Option<&str>) -> Notice {
        Notice {
            seq,
            kind: kind.into(),
            proposal_id: proposal.map(Into::into),
            actor_kind: "agent".into(),
            actor_id: "a1".into(),
        }
    }

    fn applied_of(p: &str) -> Interest {
        Interest::Events {
            kinds: vec!["proposal.applied".into()],
            proposal_id: Some(p.into()),
            actor: None,
        }
    }

    #[test]
    fn a_waiter_wakes_only_for_what_it_waits_for_and_only_once() {
        let commits = Commits::default();
        let w = commits.register(applied_of("p1"));
        w.checked(10);
        // Another proposal's landing, a vote on p1, and an event already
        // read: none wakes it.
        commits.publish(&[notice(11, "proposal.applied", Some("p2"))]);
        commits.publish(&[notice(12, "vote.cast", Some("p1"))]);
        commits.publish(&[notice(9, "proposal.applied", Some("p1"))]);
        assert!(!w.sleep(Duration::from_millis(20)));
        commits.publish(&[notice(13, "proposal.applied", Some("p1"))]);
        assert!(w.sleep(Duration::from_secs(5)));
        // The same event told again (the watcher reads this engine's
        // commits too) wakes nobody twice.
        commits.publish(&[notice(13, "proposal.applied", Some("p1"))]);
        assert!(!w.sleep(Duration::from_millis(20)));
    }

    #[test]
    fn a_notice_during_a_check_wakes_unless_the_check_read_it() {
        let commits = Commits::default();
        let w = commits.register(Interest::Any);
        // Published between registering and the check's snapshot.
        commits.publish(&[notice(5, "task.created", None)]);
        w.checked(4); // the check's snapshot did not hold it
        assert!(w.sleep(Duration::from_secs(5)));
        let v = commits.register(Interest::Any);
        commits.publish(&[notice(6, "task.created", None)]);
        v.checked(6); // this check read it
        assert!(!v.sleep(Duration::from_millis(20)));
    }

    #[test]
    fn bump_any_wakes_only_those_waiting_on_anything() {
        let commits = Commits::default();
        let events = commits.register(applied_of("p1"));
        let claims = commits.register(Interest::Any);
        commits.bump_any();
        assert!(claims.sleep(Duration::from_secs(5)));
        assert!(!events.sleep(Duration::from_millis(20)));
    }

    #[test]
    fn bump_wakes_every_waiter_once_and_a_dropped_waiter_leaves() {
        let commits = Commits::default();
        let a = commits.register(applied_of("p1"));
        let b = commits.register(Interest::Any);
        a.checked(100);
        commits.bump();
        assert!(a.sleep(Duration::from_secs(5)));
        assert!(b.sleep(Duration::from_secs(5)));
        assert!(!a.sleep(Duration::from_millis(20)));
        drop(b);
        assert!(commits.has_waiters());
        drop(a);
        assert!(!commits.has_waiters());
    }

    #[test]
    fn a_waiter_on_another_thread_is_woken_by_a_matching_notice() {
        let commits = Arc::new(Commits::default());
        let w = commits.register(applied_of("p1"));
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                commits.publish(&[notice(1, "proposal.applied", Some("p1"))]);
            });
            assert!(w.sleep(Duration::from_secs(10)), "the notice woke nobody");
        });
    }

    #[test]
    fn filters_match_kind_proposal_and_actor() {
        let n = notice(1, "vote.cast", Some("p1"));
        assert!(Interest::Any.matches(&n));
        let only =
            |kinds: &[&str], p: Option<&str>, actor: Option<(&str, &str)>| Interest::Events {
                kinds: kinds.iter().map(|k| (*k).to_owned()).collect(),
                proposal_id: p.map(Into::into),
                actor: actor.map(|(k, i)| (k.to_owned(), i.to_owned())),
            };
        assert!(only(&[], None, None).matches(&n));
        assert!(only(
            &["proposal.revised", "vote.cast"],
            Some("p1"),
            Some(("agent", "a1"))
        )
        .matches(&n));
        assert!(!only(&["proposal.revised"], None, None).matches(&n));
        assert!(!only(&[], Some("p2"), None).matches(&n));
        assert!(!only(&[], None, Some(("agent", "a2"))).matches(&n));
        assert!(!only(&[], Some("p1"), None).matches(&notice(2, "vote.cast", None)));
        // An author's inbox: its own proposals, or its own doing.
        let own = Interest::AnyOf(vec![
            only(&[], Some("p2"), None),
            only(&[], None, Some(("agent", "a1"))),
        ]);
        assert!(own.matches(&n));
        assert!(own.matches(&Notice {
            actor_id: "a9".into(),
            ..notice(3, "vote.cast", Some("p2"))
        }));
        assert!(!own.matches(&Notice {
            actor_id: "a9".into(),
            ..notice(4, "proposal.applied", Some("p1"))
        }));
        assert!(!Interest::AnyOf(Vec::new()).matches(&n));
    }

    #[test]
    fn the_watcher_publishes_another_connections_commit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("store.db");
        // Locking as the store's connections do, whatever ran before.
        roundtable_sqlite_locks::install();
        let writer = Connection::open(&db).expect("open");
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL;
                 CREATE TABLE events (seq INTEGER PRIMARY KEY, kind TEXT, proposal_id TEXT, actor_kind TEXT, actor_id TEXT);",
            )
            .expect("schema");
        let commits = Arc::new(Commits::default());
        let tail = LogTail::sqlite(Connection::open(&db).expect("reader")).expect("tail");
        let watcher = Watcher::start(dir.path(), &commits, tail).expect("watcher");
        let w = commits.register(applied_of("p1"));
        writer
            .execute(
                "INSERT INTO events VALUES (1, 'proposal.applied', 'p1', 'orchestrator', 'host')",
                [],
            )
            .expect("insert");
        assert!(w.sleep(Duration::from_secs(5)), "the commit woke nobody");
        drop(w);
        drop(watcher); // joins the thread: hangs here if stopping failed
    }
}
