//! The transaction engine: apply a changeset all-or-nothing across the
//! store and the files, recover after a crash, roll back.
//!
//! One apply (or rollback) is one transaction:
//!
//! 1. the workspace **apply lock** is held throughout (`flock` on
//!    `.roundtable/apply.lock`: it dies with its process, so a SIGKILLed
//!    applier never leaves it held);
//! 2. the **journal** — the transaction row (`applying`), the before
//!    snapshot of every touched path (bytes in the blob table, mode,
//!    existence) and the expected after digests — is committed durably
//!    before the first file is touched;
//! 3. the files are written through staged temporary files and renames
//!    (the workspace's crate-private `apply_changeset_with`)
//!    and flushed: file by file for a few files, with one `syncfs` after
//!    staging and one after the renames for many;
//! 4. `applied`, the caller's own state changes (proposal `applied`, claims
//!    released) and the event commit in one SQL transaction.
//!
//! A failure in 3 is undone by the workspace and recorded as `failed`; a
//! failure in 4 is recovered at once. A crash anywhere leaves the journal
//! `applying`, and the next `recover` (run by every `Engine::open`)
//! restores each touched path to its before state — only where it is at
//! its after state; a path that matches neither is left alone and reported.
//!
//! Several transactions can land together in one step ([`Batch`]): each is
//! journaled and written in turn over the one before it, then (git mode)
//! the branch moves once, to the last one's commit, and every outcome is
//! recorded in one SQL transaction. Recovery undoes transactions newest
//! first, so a batch left behind unwinds to where it started.

use crate::actor::Actor;
use crate::changeset::{Changeset, FileChange, FileContent, FileMeta, Operation};
use crate::clock::{Clock, Timestamp};
use crate::store::rows::FromRow as _;
use crate::store::sql::Tx;
use crate::store::sql::{params, OptionalExtension as _};
use crate::store::{Durability, Store, StoreError};
use crate::workspace::{Workspace, WorkspaceError, WriteOptions};
use crate::{Digest, ErrorCode, RepoPath};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

// The git side of a git-mode landing: its commit point, its recovery and
// the index; without the `git` feature, each refuses.
#[cfg(feature = "git")]
mod git;
#[cfg(not(feature = "git"))]
#[path = "apply/no_git.rs"]
mod git;
#[cfg(feature = "git")]
pub use git::fast_forward;

/// Why a working tree could not be brought forward.
#[derive(Debug, thiserror::Error)]
pub enum FastForwardError {
    /// Reading the repository or moving its branch failed, or the branch
    /// is not behind the commit (the two have diverged).
    #[error(transparent)]
    Landing(#[from] crate::landing::LandingError),
    /// A file to bring forward is not what the branch holds (an
    /// uncommitted change, an untracked file in the way): nothing was
    /// written.
    #[error(transparent)]
    Worktree(#[from] WorkspaceError),
}

/// Why a transaction could not run, or what went wrong in it. Every
/// variant has one stable code ([`TransactionError::code`]).
#[derive(Debug, thiserror::Error)]
pub enum TransactionError {
    /// The apply lock could not be opened or taken (`io`).
    #[error("apply lock {path}: {source}")]
    Lock {
        /// The lock file or directory.
        path: String,
        /// What the system said.
        #[source]
        source: rustix::io::Errno,
    },
    /// The call was cancelled, or its deadline passed, while it waited
    /// for the lock (`cancelled`, `deadline_exceeded`); nothing changed.
    #[error("{0} (it was waiting for the workspace apply lock)")]
    Interrupted(crate::interrupt::Interrupted),
    /// Another applier held the lock past the wait (`busy`).
    #[error("another apply held the workspace apply lock for more than {waited_ms} ms; nothing changed, retry soon")]
    Busy {
        /// How long this one waited.
        waited_ms: u64,
    },
    /// The transaction id is taken (`conflict`).
    #[error("transaction {id} already exists")]
    Exists {
        /// The id.
        id: String,
    },
    /// No transaction has this id (`not_found`).
    #[error("transaction {id:?} does not exist")]
    NotFound {
        /// The id.
        id: String,
    },
    /// Something else (a recovery) finished the transaction while this
    /// applier ran it (`conflict`).
    #[error("transaction {id} was finished by another process while it was applying")]
    FinishedElsewhere {
        /// The transaction.
        id: String,
    },
    /// Writing the files failed and was undone (or recovered): the code is
    /// the workspace error's.
    #[error("{source}")]
    Write {
        /// The transaction, recorded `failed` (or `recovered`).
        transaction_id: String,
        /// Why the write failed.
        #[source]
        source: WorkspaceError,
    },
    /// Reading the files failed: the workspace error's code.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// A journal the store holds is not what this engine wrote: a path, a
    /// digest or a before snapshot is missing or wrong (`database`).
    #[error("{message}")]
    Journal {
        /// What is wrong.
        message: String,
        /// Where (`path`, `digest`, `transaction_id`).
        details: Value,
    },
    /// The git side of a git-mode landing failed (the branch moved:
    /// `precondition_failed`; libgit2 failed: `io`); the files were put
    /// back.
    #[error("{source}")]
    Landing {
        /// The transaction, recorded `recovered`.
        transaction_id: String,
        /// Why.
        #[source]
        source: crate::landing::LandingError,
    },
    /// Past the commit point (the branch, or the remote's, moved: the
    /// change landed) recording the outcome failed, and kept failing for
    /// the engine's busy timeout (`database`, never retryable, details
    /// `landed: true`). The transaction stays `applying`: the next apply
    /// or open of this clone records it, and a call made again with the
    /// same idempotency key returns the landing's result.
    #[error("transaction {transaction_id} landed (commit {commit} on {branch}) but recording its outcome failed: {cause}; do not apply it again: the outcome is recorded by the next apply or open of this workspace, and the same call with the same idempotency key returns it")]
    Landed {
        /// The transaction.
        transaction_id: String,
        /// The commit that landed.
        commit: String,
        /// Its branch.
        branch: String,
        /// Why recording failed (the last attempt's error).
        cause: String,
    },
    /// The store refused (`database`, or the store error's code).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A statement failed (`database`).
    #[error("store: {0}")]
    Sqlite(#[from] crate::store::sql::SqlError),
}

impl TransactionError {
    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            TransactionError::Lock { .. } => ErrorCode::Io,
            TransactionError::Busy { .. } => ErrorCode::Busy,
            TransactionError::Interrupted(i) => i.code(),
            TransactionError::Exists { .. } | TransactionError::FinishedElsewhere { .. } => {
                ErrorCode::Conflict
            }
            TransactionError::NotFound { .. } => ErrorCode::NotFound,
            TransactionError::Write { source, .. } | TransactionError::Workspace(source) => {
                source.code()
            }
            TransactionError::Journal { .. }
            | TransactionError::Sqlite(_)
            | TransactionError::Landed { .. } => ErrorCode::Database,
            TransactionError::Landing { source, .. } => source.code(),
            TransactionError::Store(e) => e.code(),
        }
    }

    /// Structured details for programs.
    pub fn details(&self) -> Value {
        match self {
            TransactionError::Lock { path, .. } => json!({"lock": path}),
            TransactionError::Busy { waited_ms } => {
                json!({"lock": LOCK_FILE, "waited_ms": waited_ms})
            }
            TransactionError::Exists { id } | TransactionError::NotFound { id } => {
                json!({"kind": "transaction", "id": id})
            }
            TransactionError::FinishedElsewhere { id } => json!({"transaction_id": id}),
            TransactionError::Write {
                transaction_id,
                source,
            } => {
                let mut details = source.details();
                if let Value::Object(m) = &mut details {
                    m.insert("transaction_id".into(), json!(transaction_id));
                }
                details
            }
            TransactionError::Workspace(e) => e.details(),
            TransactionError::Journal { details, .. } => details.clone(),
            TransactionError::Landed { transaction_id, .. } => {
                json!({"landed": true, "transaction_id": transaction_id})
            }
            TransactionError::Landing {
                transaction_id,
                source,
            } => {
                let mut details = source.details();
                details["transaction_id"] = json!(transaction_id);
                details
            }
            TransactionError::Store(e) if e.code() == ErrorCode::Database => {
                crate::store::database_details(e.is_retryable())
            }
            TransactionError::Store(_) => json!({}),
            TransactionError::Sqlite(e) => crate::store::database_details(e.is_retryable()),
            TransactionError::Interrupted(_) => json!({"lock": LOCK_FILE}),
        }
    }

    fn journal(message: impl Into<String>, details: Value) -> TransactionError {
        TransactionError::Journal {
            message: message.into(),
            details,
        }
    }
}

impl Retryable for TransactionError {
    fn retryable(&self) -> bool {
        match self {
            TransactionError::Store(e) => e.is_retryable(),
            TransactionError::Sqlite(e) => e.is_retryable(),
            _ => false,
        }
    }
}

/// Whether an error says the same step may succeed if made again (the
/// store was busy, restarting or unreachable): what recording an outcome
/// past the commit point retries on.
pub trait Retryable {
    /// The same step may succeed if made again.
    fn retryable(&self) -> bool;
}

/// What the transaction engine works with — the store, the workspace, the
/// flush policy and the clock — and nothing above it.
#[derive(Clone, Copy)]
pub struct Env<'a> {
    /// The store the journal and the transaction record live in.
    pub store: &'a Store,
    /// The workspace written to.
    pub workspace: &'a Workspace,
    /// How hard writes are flushed.
    pub durability: Durability,
    /// Where timestamps come from.
    pub clock: &'a dyn Clock,
    /// How long recording a landed transaction's outcome is retried while
    /// the store is busy or unreachable (the engine's busy timeout).
    pub patience: Duration,
}

impl Env<'_> {
    /// Whether writes are flushed to disk.
    fn durable(&self) -> bool {
        self.durability != Durability::Off
    }
}

pub use crate::model::{
    JournalFile, PathReport, PathState, Recovery, Transaction, TransactionKind, TransactionStatus,
    Unrecovered,
};
use crate::model::{PhaseName, PhaseStatus};

/// A journaled state: digest, executable, symbolic link.
type State = (Digest, bool, bool);

/// How long recovery waits for the apply lock ([`ApplyLock::for_recovery`]).
const RECOVERY_LOCK_WAIT: Duration = Duration::from_millis(200);

/// The lock file under `.roundtable/`.
pub const LOCK_FILE: &str = "apply.lock";

/// The workspace apply lock: one applier per workspace, across processes.
/// Released when dropped (or when its process dies).
///
/// It is two `flock`s, always taken in this order: on the `.roundtable`
/// directory itself, which cannot be unlinked while it holds the store (so
/// removing a lock file can never let a second applier in beside a live
/// one), and on `.roundtable/apply.lock`, which an operator can hold with
/// `flock(1)` to keep appliers out. The lock file is checked, after
/// locking, to still be the one at its path.
#[derive(Debug)]
pub struct ApplyLock {
    _dir: OwnedFd,
    _file: OwnedFd,
}

fn lock_io(what: &Path, source: rustix::io::Errno) -> TransactionError {
    TransactionError::Lock {
        path: what.display().to_string(),
        source,
    }
}

/// Try each lock once, without waiting: `None` when another holds one.
fn try_lock(root: &Path) -> Result<Option<ApplyLock>, TransactionError> {
    use rustix::fs::{FlockOperation, Mode, OFlags};
    let dir_path = root.join(crate::store::STORE_DIR);
    let dir = rustix::fs::open(
        &dir_path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| lock_io(&dir_path, e))?;
    match rustix::fs::flock(&dir, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
        Err(e) => return Err(lock_io(&dir_path, e)),
    }
    let path = dir_path.join(LOCK_FILE);
    loop {
        let file = rustix::fs::openat(
            &dir,
            LOCK_FILE,
            OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o600),
        )
        .map_err(|e| lock_io(&path, e))?;
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return Ok(None),
            Err(e) => return Err(lock_io(&path, e)),
        }
        // Locked the file that is at the path now? (It may have been
        // unlinked, and another created, between the open and the lock.)
        let held = rustix::fs::fstat(&file).map_err(|e| lock_io(&path, e))?;
        match rustix::fs::statat(&dir, LOCK_FILE, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            Ok(now) if now.st_dev == held.st_dev && now.st_ino == held.st_ino => {
                return Ok(Some(ApplyLock {
                    _dir: dir,
                    _file: file,
                }))
            }
            Ok(_) | Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(lock_io(&path, e)),
        }
    }
}

impl ApplyLock {
    /// Take the lock of the workspace at `root`, waiting up to `timeout`
    /// for another applier; `busy` when it is still held then.
    pub fn acquire(root: &Path, timeout: Duration) -> Result<ApplyLock, TransactionError> {
        let start = Instant::now();
        loop {
            if let Some(lock) = try_lock(root)? {
                return Ok(lock);
            }
            crate::interrupt::check().map_err(TransactionError::Interrupted)?;
            if start.elapsed() >= timeout {
                return Err(TransactionError::Busy {
                    waited_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Take the lock of the workspace at `root` if nobody holds it.
    pub fn try_acquire(root: &Path) -> Result<Option<ApplyLock>, TransactionError> {
        try_lock(root)
    }

    /// Take the lock to recover what a dead applier left, waiting briefly
    /// (200 ms): a live applier's transaction is in flight (`None`: leave
    /// it), but a lock held only for an instant — a process forked by
    /// this one between its `fork` and `exec` holds a copy of every lock
    /// this process holds — must not make recovery skip its work.
    pub fn for_recovery(root: &Path) -> Result<Option<ApplyLock>, TransactionError> {
        match ApplyLock::acquire(root, RECOVERY_LOCK_WAIT) {
            Ok(lock) => Ok(Some(lock)),
            Err(TransactionError::Busy { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A journaled path's state before the transaction, if it existed.
fn before_state(f: &JournalFile) -> Option<State> {
    f.before_digest.map(|d| {
        (
            d,
            f.before_executable.unwrap_or(false),
            f.before_symlink.unwrap_or(false),
        )
    })
}

/// A journaled path's state after the transaction, if it exists then.
fn after_state(f: &JournalFile) -> Option<State> {
    f.after_digest.map(|d| {
        (
            d,
            f.after_executable.unwrap_or(false),
            f.after_symlink.unwrap_or(false),
        )
    })
}

/// The transaction named `id`, or `not_found`.
pub fn load_transaction(tx: &Tx<'_>, id: &str) -> Result<Transaction, TransactionError> {
    tx.query_row(
        &format!(
            "SELECT {} FROM transactions t WHERE t.id = ?1",
            Transaction::COLUMNS
        ),
        [id],
        Transaction::from_row,
    )
    .optional()?
    .ok_or_else(|| TransactionError::NotFound { id: id.to_owned() })
}

/// A transaction's journal, in path order.
pub fn journal(tx: &Tx<'_>, id: &str) -> Result<Vec<JournalFile>, TransactionError> {
    let files = tx.query_map(
        "SELECT path, operation, before_digest, before_executable, after_digest, after_executable,
                before_symlink, after_symlink, before_mode
         FROM transaction_files WHERE transaction_id = ?1 ORDER BY path",
        [id],
        |r| {
            Ok(JournalFile {
                path: r.get(0)?,
                operation: crate::store::enum_from_sql(&r.get::<String>(1)?)?,
                before_digest: r.get(2)?,
                before_executable: r.get(3)?,
                after_digest: r.get(4)?,
                after_executable: r.get(5)?,
                before_symlink: r.get(6)?,
                after_symlink: r.get(7)?,
                // Only the permission bits: a value outside them (written
                // by hand) is not a mode and is ignored.
                before_mode: r
                    .get::<Option<i64>>(8)?
                    .and_then(|m| u32::try_from(m).ok())
                    .filter(|m| m & !0o7777 == 0),
            })
        },
    )?;
    Ok(files)
}

fn dirs_to_sql(dirs: &BTreeSet<RepoPath>) -> String {
    serde_json::to_string(&dirs.iter().map(RepoPath::as_str).collect::<Vec<_>>())
        .expect("paths serialize")
}

/// The directories transaction `id` created (journaled with it).
pub fn created_dirs(tx: &Tx<'_>, id: &str) -> Result<BTreeSet<RepoPath>, TransactionError> {
    let text: String = tx.query_row(
        "SELECT created_dirs FROM transactions WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?;
    let paths: Vec<String> = serde_json::from_str(&text).map_err(|e| {
        TransactionError::journal(
            format!("transaction {id}: its created directories: {e}"),
            json!({"transaction_id": id}),
        )
    })?;
    paths
        .iter()
        .map(|p| {
            p.parse().map_err(|e: crate::PathError| {
                TransactionError::journal(
                    format!("transaction {id}: created directory {p}: {e}"),
                    json!({"transaction_id": id}),
                )
            })
        })
        .collect()
}

fn spell(state: &Option<State>) -> String {
    match state {
        None => "absent".into(),
        Some((d, _, true)) => format!("{d} symlink"),
        Some((d, true, false)) => format!("{d} +x"),
        Some((d, false, false)) => d.to_string(),
    }
}

/// Compare every journaled path with the files.
pub fn compare(ws: &Workspace, files: &[JournalFile]) -> Result<Vec<PathReport>, TransactionError> {
    compare_by(files, |path| ws.meta(path))
}

/// [`compare`] with each path's state now as `meta` gives it (`None`:
/// absent) — the files of a working tree, or the tree of a commit.
pub fn compare_by(
    files: &[JournalFile],
    mut meta: impl FnMut(&RepoPath) -> Result<Option<FileMeta>, WorkspaceError>,
) -> Result<Vec<PathReport>, TransactionError> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let path: RepoPath = f.path.parse().map_err(|e: crate::PathError| {
            TransactionError::journal(format!("journal path {}: {e}", f.path), json!({}))
        })?;
        let (before, after) = (before_state(f), after_state(f));
        // Something that is not a file now (a FIFO, a socket, a device, a
        // link on the way) is neither state: reported, never opened or
        // overwritten. A link at the path is compared by its target.
        let (state, actual) = match meta(&path) {
            Ok(meta) => {
                let now = meta.map(|m| (m.digest, m.executable, m.symlink));
                let state = if now == after {
                    PathState::AtAfter
                } else if now == before {
                    PathState::AtBefore
                } else {
                    PathState::Diverged
                };
                (state, spell(&now))
            }
            Err(crate::workspace::WorkspaceError::Special { kind, .. }) => {
                (PathState::Diverged, kind.to_string())
            }
            Err(crate::workspace::WorkspaceError::Symlink { .. }) => {
                (PathState::Diverged, "symlink".to_owned())
            }
            Err(e) => return Err(e.into()),
        };
        out.push(PathReport {
            path: f.path.clone(),
            state,
            actual,
            before: spell(&before),
            after: spell(&after),
        });
    }
    Ok(out)
}

/// The changeset that puts every path of `files` that is at its after
/// state back to its before state (bytes from the blob table, verified).
pub fn restore_changeset(
    store: &Store,
    files: &[JournalFile],
    reports: &[PathReport],
) -> Result<Changeset, TransactionError> {
    let mut changes = Vec::new();
    let blobs = store.read(|tx| {
        let mut out = Vec::new();
        for (f, r) in files.iter().zip(reports) {
            if r.state != PathState::AtAfter {
                continue;
            }
            let content = match &f.before_digest {
                None => None,
                Some(d) => Some(crate::store::verified_blob(tx, d)?.map_err(|fault| {
                    use crate::store::BlobFault;
                    match fault {
                        BlobFault::Missing => TransactionError::journal(
                            format!("the before snapshot of {} ({d}) is missing", f.path),
                            json!({"path": f.path, "digest": d}),
                        ),
                        BlobFault::Mismatch => TransactionError::journal(
                            format!(
                                "the before snapshot of {} does not match its digest",
                                f.path
                            ),
                            json!({"path": f.path, "digest": d}),
                        ),
                    }
                })?),
            };
            out.push((f.clone(), content));
        }
        Ok::<_, TransactionError>(out)
    })?;
    for (f, content) in blobs {
        let path: RepoPath = f
            .path
            .parse()
            .map_err(|e: crate::PathError| TransactionError::journal(e.to_string(), json!({})))?;
        let before = match &f.after_digest {
            None => None,
            Some(d) => Some(FileMeta {
                digest: *d,
                executable: f.after_executable.unwrap_or(false),
                symlink: f.after_symlink.unwrap_or(false),
            }),
        };
        let after = content.map(|data| FileContent {
            data,
            executable: f.before_executable.unwrap_or(false),
            symlink: f.before_symlink.unwrap_or(false),
        });
        let operation = match (&before, &after) {
            (None, Some(_)) => Operation::Create,
            (Some(_), None) => Operation::Delete,
            _ => Operation::Modify,
        };
        changes.push(FileChange {
            path,
            operation,
            before,
            after,
        });
    }
    Changeset::new(changes).map_err(|e| TransactionError::journal(e.to_string(), json!({})))
}

/// The permission bits each journaled path had before its transaction,
/// where the journal recorded them: what
/// [`restore_changeset`]'s write recreates a deleted file with
/// (`WriteOptions::modes`). A path journaled without them (a link, a
/// bare repository, a journal written before schema version 12) is
/// recreated `0644`, or `0755` when executable.
pub fn restore_modes(files: &[JournalFile]) -> BTreeMap<RepoPath, u32> {
    files
        .iter()
        .filter(|f| f.before_symlink != Some(true))
        .filter_map(|f| Some((f.path.parse().ok()?, f.before_mode?)))
        .collect()
}

fn set_digest(states: impl Iterator<Item = (String, Option<State>)>) -> String {
    use sha2::{Digest as _, Sha256};
    let mut h = Sha256::new();
    for (path, state) in states {
        h.update((path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        match state {
            None => h.update([0u8]),
            Some((d, x, link)) => {
                // A link is tagged apart; files keep the tags they always had.
                h.update([match (link, x) {
                    (true, _) => 3u8,
                    (false, true) => 2u8,
                    (false, false) => 1u8,
                }]);
                // The digest's spelling, as it was hashed when digests
                // were strings: recorded set digests stay comparable.
                h.update(d.to_string().as_bytes());
            }
        }
    }
    format!("sha256:{}", crate::hex::encode(&h.finalize()))
}

/// A touched path's content before the change.
pub struct Before {
    /// The path.
    pub path: RepoPath,
    /// The digest of `data`.
    pub digest: Digest,
    /// Its bytes (a link's target).
    pub data: Vec<u8>,
    /// Whether the executable bit is set.
    pub executable: bool,
    /// A symbolic link, `data` its target.
    pub symlink: bool,
    /// Every permission bit of the regular file (`None` for a link, or in
    /// a bare repository), journaled so that a rollback or recovery
    /// recreates the file with them if the change deletes it.
    pub mode: Option<u32>,
}

/// A check the caller runs inside the journal's SQL transaction, before
/// anything is recorded: what it decided outside it that must still hold
/// when the apply becomes visible (for an apply: no other agent's write
/// claim was granted on a touched path since validation). Its error
/// refuses the transaction with nothing written.
pub(crate) type Guard<'g, E> = dyn Fn(&Tx<'_>, Timestamp, &Changeset) -> Result<(), E> + 'g;

/// One transaction to run.
pub struct Plan<'a> {
    /// The transaction's id.
    pub id: crate::Id,
    /// An apply or a rollback.
    pub kind: TransactionKind,
    /// The proposal it lands or takes back.
    pub proposal_id: &'a str,
    /// The proposal's revision.
    pub revision: u32,
    /// For a rollback: the transaction it reverses.
    pub rollback_of: Option<&'a str>,
    /// What it writes.
    pub changeset: Changeset,
    /// The before content of every touched path that exists, verified
    /// against the changeset's preconditions.
    pub snapshot: Vec<Before>,
    /// What the plan was computed through (a [view](Workspace::view)
    /// that read the files): the apply writes through it.
    pub workspace: &'a Workspace,
    /// For a rollback: the directories the rolled-back transaction created,
    /// the only ones it may remove when they are left empty (`None`: any
    /// directory a removal empties, as `git apply` does).
    pub prune_only: Option<BTreeSet<RepoPath>>,
    /// The permission bits to create a path with when no file is at it
    /// (`WriteOptions::modes`): for a rollback, those the undone
    /// transaction journaled ([`restore_modes`]), so a file it deleted
    /// comes back `0600`, not `0644`; empty for an apply.
    pub modes: BTreeMap<RepoPath, u32>,
    /// In git mode: the branch to move from the validated commit to the
    /// one built for the change (already written; nothing references it
    /// yet). The move is the commit point.
    pub landing: Option<crate::store::settings::TransactionLanding>,
    /// The landing's attribution record (an apply's; `None` for a
    /// rollback), kept in the store with the journal and, in git mode,
    /// written as the landed commit's note at the commit point.
    pub trace: Option<crate::model::trace::TraceRecord>,
    /// What the caller needs to record its result later, if the outcome
    /// cannot be recorded at once past the commit point (its idempotency
    /// key, request digest and report): kept in the `journaled` phase,
    /// read back by [`journaled_request`].
    pub request: Option<Value>,
}

/// What [`Plan::request`] journaled with transaction `id`, if anything.
pub fn journaled_request(tx: &Tx<'_>, id: &str) -> Result<Option<Value>, TransactionError> {
    let detail: Option<String> = tx
        .query_row(
            "SELECT detail FROM transaction_phases WHERE transaction_id = ?1 AND phase = 'journaled'",
            [id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(detail
        .and_then(|d| serde_json::from_str::<Value>(&d).ok())
        .and_then(|mut d| d.get_mut("request").map(Value::take))
        .filter(|r| !r.is_null()))
}

fn phase(
    tx: &Tx<'_>,
    now: Timestamp,
    id: &str,
    name: PhaseName,
    status: PhaseStatus,
    detail: Value,
) -> Result<(), TransactionError> {
    tx.execute(
        "INSERT INTO transaction_phases (transaction_id, phase, status, detail, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, name.as_str(), status.as_str(), detail.to_string(), now.0],
    )?;
    Ok(())
}

/// Record a transaction's state change as an event, in `tx`.
fn event(
    tx: &Tx<'_>,
    actor: &Actor,
    now: Timestamp,
    id: &str,
    proposal_id: &str,
    data: impl Into<crate::model::EventData>,
) -> Result<(), TransactionError> {
    crate::store::append_event(
        tx,
        &crate::store::NewEvent {
            actor,
            subject: id,
            proposal_id: Some(proposal_id),
            data: data.into(),
            at: now,
        },
    )?;
    Ok(())
}

/// The journal of `plan`, in the SQL transaction `tx`.
#[allow(clippy::too_many_arguments)]
fn write_journal(
    tx: &Tx<'_>,
    now: Timestamp,
    actor: &Actor,
    durability: Durability,
    plan: &Plan<'_>,
    created_dirs: &BTreeSet<RepoPath>,
    before_digest: &str,
    after_digest: &str,
) -> Result<(), TransactionError> {
    let id = plan.id.as_str();
    let files = plan.changeset.files();
    let afters = plan.changeset.after_metas();
    tx.execute(
        "INSERT INTO transactions (id, kind, proposal_id, revision, rollback_of, status, actor, pid,
             durability, before_digest, after_digest, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, 'applying', ?6, ?7, ?8, ?9, ?10, ?11)",
        params![
            id,
            plan.kind.as_str(),
            plan.proposal_id,
            plan.revision,
            plan.rollback_of,
            actor.to_string(),
            i64::from(std::process::id()),
            durability.as_str(),
            before_digest,
            after_digest,
            now.0
        ],
    )?;
    tx.execute(
        "UPDATE transactions SET created_dirs = ?2 WHERE id = ?1",
        params![id, dirs_to_sql(created_dirs)],
    )?;
    for b in &plan.snapshot {
        crate::store::put_blob_digested(tx, &b.digest, &b.data)?;
    }
    let modes: BTreeMap<&RepoPath, u32> = plan
        .snapshot
        .iter()
        .filter_map(|b| b.mode.map(|m| (&b.path, m)))
        .collect();
    for (f, after) in files.iter().zip(afters) {
        let before_mode = f
            .before
            .and_then(|_| modes.get(&f.path))
            .map(|m| i64::from(*m));
        tx.execute(
            "INSERT INTO transaction_files (transaction_id, path, operation, before_digest, before_executable,
                 after_digest, after_executable, before_symlink, after_symlink, before_mode)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
            id,
            f.path.as_str(),
            f.operation.name(),
            f.before.map(|m| m.digest.to_string()),
            f.before.map(|m| m.executable),
            after.map(|m| m.digest.to_string()),
            after.map(|m| m.executable),
            f.before.and_then(|m| m.symlink.then_some(true)),
            after.and_then(|m| m.symlink.then_some(true)),
            before_mode,
        ],
        )?;
    }
    // The head of the audit chain this transaction saw, kept with its
    // journal: `events.verify` checks every such head is still in the
    // log, so rewriting or truncating it means rewriting these too.
    let (seq, digest) = crate::store::chain_head(tx)?;
    phase(
        tx,
        now,
        id,
        PhaseName::Journaled,
        PhaseStatus::Done,
        json!({"files": files.len(), "chain_head": {"seq": seq, "digest": digest}, "request": plan.request}),
    )?;
    event(
        tx,
        actor,
        now,
        id,
        plan.proposal_id,
        crate::model::TransactionStartedData {
            kind: plan.kind,
            revision: plan.revision,
            rollback_of: plan.rollback_of.map(str::to_owned),
            files: files.len() as u64,
        },
    )
}

/// Whether transaction `id` exists.
fn exists(tx: &Tx<'_>, id: &str) -> Result<bool, TransactionError> {
    Ok(tx.query_row(
        "SELECT EXISTS (SELECT 1 FROM transactions WHERE id = ?1)",
        [id],
        |r| r.get(0),
    )?)
}

/// Run `plan` under the apply lock (the caller holds it). `guard` runs
/// inside the journal's SQL transaction, `finish` inside the one that
/// marks it `applied` (the caller's state changes, e.g. the proposal
/// applied and its claims released); `finish`'s value is returned. An
/// error of either refuses (guard) or undoes (finish) the whole
/// transaction. A [`Batch`] of one.
pub fn execute<T, E>(
    env: Env<'_>,
    actor: &Actor,
    plan: Plan<'_>,
    guard: Option<&Guard<'_, E>>,
    mut finish: impl FnMut(&Tx<'_>, &Transaction, Timestamp) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<TransactionError> + From<StoreError> + Retryable + std::fmt::Display,
{
    let mut batch = Batch::new(env, actor);
    batch.start(plan, guard)?;
    let mut out = batch.finish(|_, tx, t, now| finish(tx, t, now))?;
    Ok(out.pop().expect("a batch of one records one outcome"))
}

/// A transaction of a [`Batch`]: journaled `applying`, its files written,
/// waiting for the batch's commit point.
struct Started {
    id: String,
    landing: Option<crate::store::settings::TransactionLanding>,
    trace: Option<crate::model::trace::TraceRecord>,
    paths: Vec<RepoPath>,
    files: usize,
}

/// Transactions that land together, in order, in one all-or-nothing step
/// (the caller holds the apply lock throughout).
///
/// Each is started in turn ([`Batch::start`]): its journal (`applying`,
/// with its guard) is committed durably and its files written on top of
/// the ones started before it — a plan is computed against the files as
/// the earlier ones left them, and in git mode its commit is built on
/// the earlier one's ([`Batch::last_landing`]). Then [`Batch::finish`]:
/// in git mode ONE compare-and-swap of the branch from the first's old
/// commit to the last's new one (with a remote, ONE push), and every
/// outcome in ONE SQL transaction. Each transaction keeps its own
/// record, journal and (in git mode) commit, so each can be rolled back
/// on its own.
///
/// A crash anywhere leaves all of them alike: recovery settles a git
/// landing by whether the branch contains its commit — the branch moved
/// to the last one (all contained: all brought forward) or did not (none:
/// all undone, newest first, so that a path two of them change ends at
/// the first's before state). In files mode all outcomes are one SQL
/// commit: before it, recovery undoes all. A batch dropped without
/// [`Batch::finish`] or [`Batch::abandon`] is left to that recovery.
pub struct Batch<'a> {
    env: Env<'a>,
    actor: &'a Actor,
    started: Vec<Started>,
}

impl<'a> Batch<'a> {
    /// An empty batch.
    pub fn new(env: Env<'a>, actor: &'a Actor) -> Batch<'a> {
        Batch {
            env,
            actor,
            started: Vec::new(),
        }
    }

    /// How many transactions were started.
    pub fn len(&self) -> usize {
        self.started.len()
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.started.is_empty()
    }

    /// The landing of the last transaction started, in git mode: the next
    /// one's commit is built on its new commit.
    pub fn last_landing(&self) -> Option<&crate::store::settings::TransactionLanding> {
        self.started.last().and_then(|s| s.landing.as_ref())
    }

    /// Journal `plan` (with `guard`'s checks, in the journal's SQL
    /// transaction) and write its files over those of the transactions
    /// started before it. Its refusal (the guard, a taken id) records
    /// nothing; a failed write is undone and recorded `failed`. Either
    /// way the transactions started before stay started: the caller
    /// finishes or abandons them.
    pub fn start<E>(&mut self, plan: Plan<'_>, guard: Option<&Guard<'_, E>>) -> Result<(), E>
    where
        E: From<TransactionError> + From<StoreError>,
    {
        // 1. The journal, durably, before any file is touched.
        open_journal(self.env, self.actor, &plan, guard)?;
        // 2. The files.
        write_files::<E>(self.env, self.actor, &plan)?;
        self.started.push(Started {
            id: plan.id.as_str().to_owned(),
            landing: plan.landing.clone(),
            trace: plan.trace.clone(),
            paths: plan
                .changeset
                .files()
                .iter()
                .map(|f| f.path.clone())
                .collect(),
            files: plan.changeset.files().len(),
        });
        Ok(())
    }

    /// Undo every transaction started, newest first (`why` is recorded
    /// with each): nothing of the batch lands.
    pub fn abandon(mut self, why: &str) -> Result<(), TransactionError> {
        self.undo(why)
    }

    /// [`Batch::abandon`] in place.
    fn undo(&mut self, why: &str) -> Result<(), TransactionError> {
        while let Some(s) = self.started.pop() {
            recover_one(self.env, self.actor, &s.id, why)?;
        }
        Ok(())
    }

    /// Land every transaction started, in one step: in git mode the
    /// commit point (ONE branch update to the last one's commit), then
    /// each outcome — `finish` with its position in the batch, the
    /// caller's state changes — all in ONE SQL transaction that marks
    /// them `applied`. The outcomes, in order. A branch that moved undoes
    /// them all; so does a failed outcome in working-tree mode; past the
    /// commit point a store that stays busy is [`TransactionError::Landed`]
    /// (recovery records them all).
    pub fn finish<T, E>(
        mut self,
        finish: impl FnMut(usize, &Tx<'_>, &Transaction, Timestamp) -> Result<T, E>,
    ) -> Result<Vec<T>, E>
    where
        E: From<TransactionError> + From<StoreError> + Retryable + std::fmt::Display,
    {
        if self.started.is_empty() {
            return Ok(Vec::new());
        }
        // 2b. In git mode, the commit point.
        let notes = if self.started.iter().any(|s| s.landing.is_some()) {
            self.land_commit::<E>()?
        } else {
            LandNotes::default()
        };
        // 3. The outcomes, with the caller's state changes, in one transaction.
        self.record_outcome(notes, finish)
    }
}

/// Step 1 of [`execute`]: the journal (the change's before and after
/// digests, the directories it creates, its landing), written durably in
/// one SQL transaction with `guard`'s checks, before any file is touched.
fn open_journal<E>(
    env: Env<'_>,
    actor: &Actor,
    plan: &Plan<'_>,
    guard: Option<&Guard<'_, E>>,
) -> Result<(), E>
where
    E: From<TransactionError> + From<StoreError>,
{
    let files = plan.changeset.files();
    let afters = plan.changeset.after_metas();
    let before_digest = set_digest(files.iter().map(|f| {
        (
            f.path.to_string(),
            f.before.map(|m| (m.digest, m.executable, m.symlink)),
        )
    }));
    let after_digest = set_digest(files.iter().zip(afters).map(|(f, after)| {
        (
            f.path.to_string(),
            after.map(|m| (m.digest, m.executable, m.symlink)),
        )
    }));
    let id = plan.id.as_str();
    // A bare repository has no working tree: the commit is the change.
    let created_dirs = if plan.workspace.is_bare() {
        BTreeSet::new()
    } else {
        plan.workspace
            .missing_dirs(&plan.changeset)
            .map_err(TransactionError::from)?
    };
    env.store.write(|tx| {
        let now = env.clock.now();
        if exists(tx, id)? {
            return Err(TransactionError::Exists { id: id.to_owned() }.into());
        }
        if let Some(guard) = guard {
            guard(tx, now, &plan.changeset)?;
        }
        write_journal(
            tx,
            now,
            actor,
            env.durability,
            plan,
            &created_dirs,
            &before_digest,
            &after_digest,
        )?;
        tx.execute(
            "UPDATE transactions SET clone_id = ?2 WHERE id = ?1",
            params![id, env.store.clone_id()],
        )
        .map_err(TransactionError::from)?;
        if let Some(landing) = &plan.landing {
            crate::store::settings::insert_transaction_landing(tx, id, landing)
                .map_err(TransactionError::from)?;
        }
        if let Some(trace) = &plan.trace {
            crate::store::traces::insert(tx, id, trace).map_err(TransactionError::from)?;
        }
        Ok::<_, E>(())
    })
}

/// Step 2 of [`execute`]: write the files (none in a bare repository),
/// undoing from the old contents held in memory on failure; a write that
/// fails is recorded `failed` (or, when its undo failed too, recovered
/// from the journal while the lock is still held).
fn write_files<E>(env: Env<'_>, actor: &Actor, plan: &Plan<'_>) -> Result<(), E>
where
    E: From<TransactionError> + From<StoreError>,
{
    let id = plan.id.as_str();
    // The old contents are in memory: an undo restores from them.
    let held: crate::workspace::Held<'_> = plan
        .snapshot
        .iter()
        .map(|b| (&b.path, (b.data.as_slice(), b.executable, b.symlink)))
        .collect();
    let options = WriteOptions {
        durable: env.durable(),
        tag: Some(id),
        prune_only: plan.prune_only.as_ref(),
        held: Some(&held),
        modes: Some(&plan.modes),
        ..WriteOptions::default()
    };
    let written = if plan.workspace.is_bare() {
        Ok(Vec::new())
    } else {
        plan.workspace
            .apply_changeset_with(&plan.changeset, &options)
    };
    let Err(e) = written else {
        return Ok(());
    };
    if matches!(e, WorkspaceError::Undo { .. }) {
        // The workspace could not undo its partial commit: restore from
        // the journal now, while the lock is still held.
        recover_one(env, actor, id, "the apply failed and its undo failed")?;
    } else {
        let record = e.to_json();
        env.store.write(|tx| {
            let now = env.clock.now();
            still_applying(
                tx.execute(
                    "UPDATE transactions SET status = 'failed', error = ?2, finished_at = ?3
                     WHERE id = ?1 AND status = 'applying'",
                    params![id, record.to_string(), now.0],
                )?,
                id,
            )?;
            phase(
                tx,
                now,
                id,
                PhaseName::Write,
                PhaseStatus::Failed,
                record.clone(),
            )?;
            event(
                tx,
                actor,
                now,
                id,
                plan.proposal_id,
                crate::model::TransactionFailedData {
                    error: crate::model::ErrorRecord {
                        code: e.code().as_str().to_owned(),
                        message: e.to_string(),
                        details: e.details(),
                    },
                },
            )
        })?;
    }
    Err(TransactionError::Write {
        transaction_id: id.to_owned(),
        source: e,
    }
    .into())
}

/// What a chain's commit point did: each link's landing as it landed,
/// how this repository's branch followed a remote's, and whether the
/// notes were written.
type LandedChain = (
    Vec<crate::store::settings::TransactionLanding>,
    Result<(), FastForwardError>,
    Result<(), crate::landing::LandingError>,
);

/// What landing a commit leaves to say in the `write` phase's record.
#[derive(Default)]
struct LandNotes {
    /// How the index followed the files (`null` in working-tree mode).
    index: Value,
    /// When this repository's branch did not follow the remote's: why.
    follow: Value,
    /// When the landed commits' notes could not be written: why.
    notes: Value,
    /// The commit that landed (the one built for the change, or its
    /// replay onto a newer tip of the remote's branch).
    commit: Option<String>,
}

impl Batch<'_> {
    /// Step 2b, in git mode, the commit point: the branch moves by
    /// compare-and-swap to the last transaction's commit (with a remote,
    /// the remote's branch, by a push with a lease, and then this
    /// repository's follows), then the index follows the files. A branch
    /// that moved since validation refuses, and every transaction of the
    /// batch is undone.
    fn land_commit<E>(&mut self) -> Result<LandNotes, E>
    where
        E: From<TransactionError> + From<StoreError>,
    {
        let env = self.env;
        let mut chain = Vec::with_capacity(self.started.len());
        for s in &self.started {
            let Some(landing) = &s.landing else {
                // A batch is all git mode or all files mode.
                let e = TransactionError::journal(
                    format!("transaction {} of a git-mode batch has no landing", s.id),
                    json!({"transaction_id": s.id}),
                );
                self.undo("a batch mixed git and files mode")?;
                return Err(e.into());
            };
            chain.push(git::Link {
                id: &s.id,
                landing,
                paths: &s.paths,
                trace: s.trace.as_ref(),
            });
        }
        let landed = git::land(env, &chain);
        drop(chain);
        let (landed, followed, noted) = match landed {
            Ok(done) => done,
            Err(e) => {
                self.undo("the branch moved since validation")?;
                return Err(e.into());
            }
        };
        // Landed: the caller learns so, whatever it gave up on since.
        crate::interrupt::committed();
        let mut notes = LandNotes::default();
        if let Err(e) = followed {
            // The remote's branch moved (the commit point) but this
            // repository's did not follow: the change landed all the
            // same; the next apply fetches the branch forward.
            notes.follow = json!(format!("not followed: {e}"));
        }
        if let Err(e) = noted {
            // The branch moved: the change landed; its note is written
            // by the next recovery (`provenance.verify` reports it
            // missing until then).
            notes.notes = json!(format!("not written: {e}"));
        }
        let paths: Vec<RepoPath> = self
            .started
            .iter()
            .flat_map(|s| s.paths.iter().cloned())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let commit = landed.last().map(|l| l.new_id.clone()).unwrap_or_default();
        notes.index = stage_note(env.workspace, &commit, &paths);
        notes.commit = Some(commit);
        Ok(notes)
    }

    /// Step 3: the outcomes, with the caller's state changes (`finish`),
    /// in one transaction. In working-tree mode a failure puts the files
    /// back; past a git commit point the change landed, so a busy store
    /// is retried for a while, and then the failure says it landed.
    fn record_outcome<T, E>(
        &mut self,
        notes: LandNotes,
        mut finish: impl FnMut(usize, &Tx<'_>, &Transaction, Timestamp) -> Result<T, E>,
    ) -> Result<Vec<T>, E>
    where
        E: From<TransactionError> + From<StoreError> + Retryable + std::fmt::Display,
    {
        let env = self.env;
        let durable = env.durable();
        let started = Instant::now();
        let n = self.started.len();
        loop {
            let finished = env.store.write(|tx| {
                let now = env.clock.now();
                let mut out = Vec::with_capacity(n);
                for (i, s) in self.started.iter().enumerate() {
                    let mut written =
                        json!({"files": s.files, "durable": durable, "index": notes.index});
                    if !notes.follow.is_null() {
                        written["branch"] = notes.follow.clone();
                    }
                    if !notes.notes.is_null() {
                        written["notes"] = notes.notes.clone();
                    }
                    if n > 1 {
                        written["batch"] = json!({"position": i + 1, "of": n});
                    }
                    out.push(record_applied(
                        tx,
                        now,
                        self.actor,
                        &s.id,
                        written,
                        Applied {
                            files: s.files,
                            recovered: None,
                        },
                        |tx, t, now| finish(i, tx, t, now),
                    )?);
                }
                Ok(out)
            });
            let e = match finished {
                Ok(out) => {
                    self.started.clear();
                    return Ok(out);
                }
                Err(e) => e,
            };
            let Some(last) = self.started.last() else {
                return Err(e);
            };
            let Some(landing) = last.landing.clone() else {
                // The files are written but the store could not say so:
                // put them back now rather than leave the two disagreeing.
                self.undo("the apply's final commit failed")?;
                return Err(e);
            };
            // Past the commit point the change landed: never report a
            // retryable failure ("nothing was written"). Retry while the
            // store is busy or restarting; then say it landed. The
            // transactions stay `applying` and the next apply or open
            // records them.
            if e.retryable() && started.elapsed() < env.patience {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            return Err(TransactionError::Landed {
                transaction_id: last.id.clone(),
                commit: notes.commit.clone().unwrap_or(landing.new_id),
                branch: landing.branch,
                cause: e.to_string(),
            }
            .into());
        }
    }
}

/// A landing step's failure as transaction `id`'s error.
fn landing_error(id: &str) -> impl Fn(crate::landing::LandingError) -> TransactionError + '_ {
    move |source| TransactionError::Landing {
        transaction_id: id.to_owned(),
        source,
    }
}

/// A transaction's final status is only ever set over `applying`: if
/// anything else (a recovery) finished it meanwhile, this applier must not
/// claim it.
fn still_applying(changed: usize, id: &str) -> Result<(), TransactionError> {
    if changed == 1 {
        return Ok(());
    }
    Err(TransactionError::FinishedElsewhere { id: id.to_owned() })
}

/// Put transaction `id` (left `applying`) back to its before state; the
/// caller holds the apply lock.
pub(crate) fn recover_one(
    env: Env<'_>,
    actor: &Actor,
    id: &str,
    why: &str,
) -> Result<Recovery, TransactionError> {
    let (files, proposal_id, created) = env.store.read(|tx| {
        let t = load_transaction(tx, id)?;
        Ok::<_, TransactionError>((journal(tx, id)?, t.proposal_id, created_dirs(tx, id)?))
    })?;
    let reports = compare(env.workspace, &files)?;
    let paths: Vec<RepoPath> = files.iter().filter_map(|f| f.path.parse().ok()).collect();
    let (changeset, leftovers) = if env.workspace.is_bare() {
        // No file was written: the commit that did not land is the whole
        // change, and nothing references it.
        (Changeset::default(), Vec::new())
    } else {
        let changeset = restore_changeset(env.store, &files, &reports)?;
        let modes = restore_modes(&files);
        let durable = env.durable();
        // The restore's own temporary names carry the transaction's tag too:
        // a crash during recovery leaves only names the next recovery removes.
        env.workspace.apply_changeset_with(
            &changeset,
            &WriteOptions {
                durable,
                tag: Some(id),
                prune_only: Some(&created),
                modes: Some(&modes),
                ..WriteOptions::default()
            },
        )?;
        let leftovers = env.workspace.remove_leftovers(&paths, id, &created)?;
        (changeset, leftovers)
    };
    let recovery = Recovery {
        transaction_id: id.to_owned(),
        restored: changeset
            .files()
            .iter()
            .map(|f| f.path.to_string())
            .collect(),
        already_before: reports
            .iter()
            .filter(|r| r.state == PathState::AtBefore)
            .map(|r| r.path.clone())
            .collect(),
        conflicts: reports
            .into_iter()
            .filter(|r| r.state == PathState::Diverged)
            .collect(),
        leftovers,
    };
    env.store.write(|tx| {
        let now = env.clock.now();
        tx.execute(
            "UPDATE transactions SET status = 'recovered', finished_at = ?2 WHERE id = ?1 AND status = 'applying'",
            params![id, now.0],
        )?;
        let detail = serde_json::to_value(&recovery).expect("a recovery serializes");
        phase(tx, now, id, PhaseName::Recovered,
            PhaseStatus::Done, json!({"why": why, "recovery": detail}))?;
        event(
            tx,
            actor,
            now,
            id,
            &proposal_id,
            crate::model::TransactionRecoveredData {
                why: why.to_owned(),
                restored: recovery.restored.len() as u64,
                conflicts: recovery.conflicts.clone(),
            },
        )
    })?;
    Ok(recovery)
}

/// The transactions left `applying`, oldest first.
fn applying(store: &Store) -> Result<Vec<String>, TransactionError> {
    store.read(|tx| {
        // Another clone's are another host's, in flight or its own to
        // recover.
        let ids = tx.query_map(
            "SELECT id FROM transactions WHERE status = 'applying'
             AND (clone_id IS NULL OR clone_id = ?1) ORDER BY seq",
            [store.clone_id()],
            |r| r.get(0),
        )?;
        Ok(ids)
    })
}

/// Finish every transaction left `applying` by a crashed applier. Does
/// nothing while another applier holds the lock (its transaction is in
/// flight, not crashed).
pub fn recover(
    env: Env<'_>,
    left: &mut Vec<Unrecovered>,
) -> Result<Vec<Recovery>, TransactionError> {
    let pending = applying(env.store)?;
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let Some(_lock) = ApplyLock::for_recovery(env.workspace.root())? else {
        return Ok(Vec::new());
    };
    // Re-read under the lock: the applier may have finished meanwhile.
    recover_locked(env, left)
}

/// [`recover`], by a caller that holds the apply lock: every transaction
/// of this clone still `applying` was left by an applier that is gone
/// (or failed to record its outcome), and is rolled back unless it
/// landed (the caller brings those forward).
///
/// A transaction it cannot finish (its remote unreachable, a path it
/// cannot write, a journal that does not read back) is left `applying`,
/// recorded ([`unrecovered`]) and pushed onto `left`; the others go on.
/// Only a retryable store failure (the store is down: nothing can be
/// recorded) fails the call.
pub fn recover_locked(
    env: Env<'_>,
    left: &mut Vec<Unrecovered>,
) -> Result<Vec<Recovery>, TransactionError> {
    let actor = Actor::orchestrator(crate::Id::new("roundtable-recovery").expect("a valid id"));
    let pending = applying(env.store)?;
    let mut recovered = Vec::new();
    // Newest first: transactions of one batch were written one over the
    // other, so the last one's files are put back first, and a path two
    // of them change ends at the first one's before state.
    for id in pending.iter().rev() {
        let step = || -> Result<Option<Recovery>, TransactionError> {
            // A push the gone applier started may still be running: its
            // outcome is the transaction's.
            git::await_push(id);
            git::clear_stale_locks(env.store, env.workspace.root(), id)?;
            if git::landed(env.store, env.workspace.root(), id)? {
                // Past its commit point: the caller brings it forward.
                return Ok(None);
            }
            recover_one(
                env,
                &actor,
                id,
                "found applying when the workspace was opened",
            )
            .map(Some)
        };
        match step() {
            Ok(Some(r)) => recovered.push(r),
            Ok(None) => {}
            Err(e) if e.retryable() => return Err(e),
            Err(e) => left.push(unrecovered(env, id, e.code(), e.to_string(), e.details())),
        }
    }
    Ok(recovered)
}

/// Record that recovery could not finish transaction `id` — a failed
/// `recovered` phase naming the error (best effort: a store that cannot
/// take it is reported all the same) — and the report of it.
pub fn unrecovered(
    env: Env<'_>,
    id: &str,
    code: ErrorCode,
    message: String,
    details: Value,
) -> Unrecovered {
    let detail = json!({"error": {"code": code, "message": message, "details": details}});
    let recorded = env.store.write(|tx| {
        phase(
            tx,
            env.clock.now(),
            id,
            PhaseName::Recovered,
            PhaseStatus::Failed,
            detail,
        )
    });
    drop(recorded);
    Unrecovered {
        transaction_id: id.to_owned(),
        code,
        message,
        details,
    }
}

/// The git-mode transactions left `applying` whose branch is at the commit
/// built for them: they landed, and only the index and the store's outcome
/// are missing. Their files were written before the branch moved.
pub fn landed_unfinished(env: Env<'_>) -> Result<Vec<String>, TransactionError> {
    let mut out = Vec::new();
    for id in applying(env.store)? {
        if git::landed(env.store, env.workspace.root(), &id)? {
            out.push(id);
        }
    }
    Ok(out)
}

/// Bring a landed git-mode transaction forward: the index follows the
/// files, then `finish` records the caller's outcome and the transaction
/// `applied`, in one SQL transaction.
pub fn finish_landed<E>(
    env: Env<'_>,
    actor: &Actor,
    id: &str,
    finish: impl FnOnce(&Tx<'_>, &Transaction, Timestamp) -> Result<(), E>,
) -> Result<(), E>
where
    E: From<TransactionError> + From<StoreError>,
{
    let (files, landing, trace) = env.store.read(|tx| {
        Ok::<_, TransactionError>((
            journal(tx, id)?,
            crate::store::settings::transaction_landing(tx, id)?,
            crate::store::traces::get(tx, id)?,
        ))
    })?;
    // Killed between the branch's move and the notes': the note now. It
    // landed all the same: a note that cannot be written is recorded (and
    // `provenance.verify` reports it missing), not a reason to leave the
    // transaction applying.
    let note = match (&landing, &trace) {
        (Some(landing), Some(Ok(trace))) => git::write_note(env.workspace.root(), landing, trace)
            .err()
            .map(|e| json!(format!("not written: {e}"))),
        _ => None,
    };
    if let Some(landing) = landing.as_ref().filter(|l| l.remote.is_some()) {
        // Landed on the remote: this repository's branch follows it.
        git::follow_remote(env, landing).map_err(|e| match e {
            FastForwardError::Landing(e) => landing_error(id)(e),
            FastForwardError::Worktree(source) => TransactionError::Write {
                transaction_id: id.to_owned(),
                source,
            },
        })?;
    }
    let landed = landing.map(|l| l.new_id).unwrap_or_default();
    let paths: Vec<RepoPath> = files.iter().filter_map(|f| f.path.parse().ok()).collect();
    if !env.workspace.is_bare() {
        // Killed while it staged: its lock would keep the index behind.
        git::clear_stale_index_lock(env.workspace.root()).map_err(landing_error(id))?;
    }
    let index_note = stage_note(env.workspace, &landed, &paths);
    env.store.write(|tx| {
        record_applied(
            tx,
            env.clock.now(),
            actor,
            id,
            json!({"files": files.len(), "index": index_note, "notes": note, "recovered": "landed: the branch was at the new commit"}),
            Applied {
                files: files.len(),
                recovered: Some(true),
            },
            finish,
        )
    })
}

/// Record another clone's git-mode transaction `id`, left `applying` by
/// a host that is gone, `applied`: its remote's branch holds its commit.
/// Only the store changes (no file, index or ref of this clone: the
/// landing is the other clone's); `finish` records the caller's outcome
/// in the same SQL transaction. Refused (`conflict`) when the
/// transaction is no longer `applying`.
pub fn settle_landed<E>(
    env: Env<'_>,
    actor: &Actor,
    id: &str,
    commit: &str,
    finish: impl FnOnce(&Tx<'_>, &Transaction, Timestamp) -> Result<(), E>,
) -> Result<(), E>
where
    E: From<TransactionError> + From<StoreError>,
{
    let files = env.store.read(|tx| journal(tx, id))?;
    env.store.write(|tx| {
        record_applied(
            tx,
            env.clock.now(),
            actor,
            id,
            json!({"files": files.len(), "settled": format!("the remote's branch holds {commit}: recorded applied from another clone")}),
            Applied {
                files: files.len(),
                recovered: Some(true),
            },
            finish,
        )
    })
}

/// Record another clone's git-mode transaction `id`, left `applying` by
/// a host that is gone, undone (`recovered`, nothing restored): its
/// remote's branch does not hold its commit, so nothing of it landed.
/// Only the store changes: the other clone's working tree (if it has one
/// and comes back) keeps what its applier wrote, as uncommitted changes.
/// Refused (`conflict`) when the transaction is no longer `applying`.
pub fn settle_undone(
    env: Env<'_>,
    actor: &Actor,
    id: &str,
    why: &str,
) -> Result<(), TransactionError> {
    env.store.write(|tx| {
        let now = env.clock.now();
        let t = load_transaction(tx, id)?;
        still_applying(
            tx.execute(
                "UPDATE transactions SET status = 'recovered', finished_at = ?2
                 WHERE id = ?1 AND status = 'applying'",
                params![id, now.0],
            )?,
            id,
        )?;
        phase(
            tx,
            now,
            id,
            PhaseName::Recovered,
            PhaseStatus::Done,
            json!({"why": why, "settled": true}),
        )?;
        event(
            tx,
            actor,
            now,
            id,
            &t.proposal_id,
            crate::model::TransactionRecoveredData {
                why: why.to_owned(),
                restored: 0,
                conflicts: Vec::new(),
            },
        )
    })
}

/// What the `transaction.applied` event says besides the transaction's
/// kind.
struct Applied {
    /// How many files it wrote.
    files: usize,
    /// `Some(true)` when a recovery records it.
    recovered: Option<bool>,
}

/// Record transaction `id` `applied` in `tx`: its status (only over
/// `applying`), the `written` phase with `written`, the caller's `finish`,
/// the `applied` phase and the `transaction.applied` event (`data` and
/// the transaction's kind).
fn record_applied<T, E>(
    tx: &Tx<'_>,
    now: Timestamp,
    actor: &Actor,
    id: &str,
    written: Value,
    data: Applied,
    finish: impl FnOnce(&Tx<'_>, &Transaction, Timestamp) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<TransactionError> + From<StoreError>,
{
    still_applying(
        tx.execute(
            "UPDATE transactions SET status = 'applied', finished_at = ?2
             WHERE id = ?1 AND status = 'applying'",
            params![id, now.0],
        )
        .map_err(TransactionError::from)?,
        id,
    )?;
    phase(tx, now, id, PhaseName::Written, PhaseStatus::Done, written)?;
    let transaction = load_transaction(tx, id)?;
    let out = finish(tx, &transaction, now)?;
    phase(
        tx,
        now,
        id,
        PhaseName::Applied,
        PhaseStatus::Done,
        json!({}),
    )?;
    event(
        tx,
        actor,
        now,
        id,
        &transaction.proposal_id,
        crate::model::TransactionAppliedData {
            kind: transaction.kind,
            files: data.files as u64,
            recovered: data.recovered,
        },
    )?;
    Ok(out)
}

/// What staging `paths` of commit `landed` in the index gave, for the
/// `written` phase.
fn stage_note(workspace: &Workspace, landed: &str, paths: &[RepoPath]) -> Value {
    if workspace.is_bare() {
        return json!("none (a bare repository)");
    }
    match git::stage(workspace.root(), landed, paths) {
        Ok(()) => json!("updated"),
        Err(e) => json!(format!("not updated: {e}")),
    }
}

/// The transaction engine alone: a store and a temporary workspace, no
/// `Engine` and no tool.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::store::StoreOptions;

    struct World {
        dir: tempfile::TempDir,
        store: Store,
        ws: Workspace,
        clock: ManualClock,
        actor: Actor,
    }

    impl World {
        fn new(files: &[(&str, &str)]) -> World {
            let dir = tempfile::tempdir().expect("tempdir");
            for (path, text) in files {
                std::fs::write(dir.path().join(path), text).expect("write");
            }
            let store = Store::open(dir.path(), &StoreOptions::default()).expect("store");
            // The rows a transaction refers to.
            store
                .write(|tx| {
                    tx.execute_batch(
                        "INSERT INTO agents (id, roles, enabled, created_at, updated_at) VALUES ('ada', '[]', 1, 0, 0);
                         INSERT INTO tasks (id, title, created_by, created_at) VALUES ('t1', 'T', 'orchestrator:host', 0);
                         INSERT INTO proposals (id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at)
                             VALUES ('p1', 't1', 'ada', 'T', 'S', 'normal', 'in_review', 1, 0, 0);",
                    )
                    .map_err(TransactionError::from)
                })
                .expect("rows");
            let ws = Workspace::open(dir.path()).expect("workspace");
            World {
                dir,
                store,
                ws,
                clock: ManualClock::new(Timestamp(1_000)),
                actor: Actor::orchestrator(crate::Id::new("host").expect("id")),
            }
        }

        fn env(&self) -> Env<'_> {
            Env {
                store: &self.store,
                workspace: &self.ws,
                durability: Durability::Normal,
                clock: &self.clock,
                patience: Duration::from_millis(100),
            }
        }

        fn plan(&self, id: &str, patch: &str) -> Plan<'_> {
            let patch = crate::diff::parse(patch.as_bytes(), &crate::diff::ParseOptions::default())
                .expect("patch");
            let changeset = Changeset::from_patch(&patch, &self.ws).expect("changeset");
            let snapshot = changeset
                .files()
                .iter()
                .filter_map(|f| {
                    let (file, meta, mode) = self.ws.read_with_mode(&f.path).expect("read")?;
                    Some(Before {
                        path: f.path.clone(),
                        digest: meta.digest,
                        data: file.data,
                        executable: meta.executable,
                        symlink: meta.symlink,
                        mode,
                    })
                })
                .collect();
            Plan {
                id: crate::Id::new(id).expect("id"),
                kind: TransactionKind::Apply,
                proposal_id: "p1",
                revision: 1,
                rollback_of: None,
                changeset,
                snapshot,
                workspace: &self.ws,
                prune_only: None,
                modes: BTreeMap::new(),
                landing: None,
                trace: None,
                request: None,
            }
        }

        fn read(&self, path: &str) -> String {
            std::fs::read_to_string(self.dir.path().join(path)).expect("read")
        }

        fn query(&self, sql: &str) -> Vec<String> {
            self.store
                .read(|tx| {
                    let rows = tx.query_map(sql, params![], |r| r.get::<String>(0))?;
                    Ok::<_, TransactionError>(rows)
                })
                .expect("query")
        }

        fn events(&self) -> Vec<String> {
            self.query("SELECT kind FROM events ORDER BY seq")
        }
    }

    const PATCH: &str = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n";

    #[test]
    fn a_plan_lands_with_the_callers_changes_in_its_final_commit() {
        let w = World::new(&[("a.txt", "one\n")]);
        let id = execute::<_, TransactionError>(
            w.env(),
            &w.actor,
            w.plan("tx1", PATCH),
            None,
            |tx, t, _| {
                assert_eq!(t.status, TransactionStatus::Applied);
                tx.execute(
                    "UPDATE proposals SET status = 'applied' WHERE id = 'p1'",
                    params![],
                )?;
                Ok(t.id.clone())
            },
        )
        .expect("applied");
        assert_eq!(id, "tx1");
        assert_eq!(w.read("a.txt"), "two\n");
        assert_eq!(w.query("SELECT status FROM transactions"), ["applied"]);
        assert_eq!(w.query("SELECT status FROM proposals"), ["applied"]);
        assert_eq!(
            w.query("SELECT phase FROM transaction_phases ORDER BY rowid"),
            ["journaled", "written", "applied"]
        );
        assert_eq!(w.events(), ["transaction.started", "transaction.applied"]);
        // The journal holds the before bytes, so a rollback can restore them.
        let files = w.store.read(|tx| journal(tx, "tx1")).expect("journal");
        assert_eq!(files.len(), 1);
        let reports = compare(&w.ws, &files).expect("compare");
        assert_eq!(reports[0].state, PathState::AtAfter);
        let restore = restore_changeset(&w.store, &files, &reports).expect("restore");
        assert_eq!(
            restore.files()[0].after.as_ref().map(|c| &c.data[..]),
            Some(&b"one\n"[..])
        );
    }

    #[test]
    fn a_guard_refusal_and_a_taken_id_record_nothing_and_touch_no_file() {
        let w = World::new(&[("a.txt", "one\n")]);
        let refuse = |_: &Tx<'_>, _: Timestamp, _: &Changeset| -> Result<(), TransactionError> {
            Err(TransactionError::Exists {
                id: "claimed".into(),
            })
        };
        let e = execute(
            w.env(),
            &w.actor,
            w.plan("tx1", PATCH),
            Some(&refuse),
            |_, _, _| Ok::<_, TransactionError>(()),
        )
        .expect_err("refused");
        assert_eq!(e.code(), ErrorCode::Conflict);
        assert_eq!(w.read("a.txt"), "one\n");
        assert!(w.query("SELECT id FROM transactions").is_empty());
        assert!(w.events().is_empty());

        execute::<_, TransactionError>(w.env(), &w.actor, w.plan("tx1", PATCH), None, |_, _, _| {
            Ok(())
        })
        .expect("applied");
        let back = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+one\n";
        let e = execute::<_, TransactionError>(
            w.env(),
            &w.actor,
            w.plan("tx1", back),
            None,
            |_, _, _| Ok(()),
        )
        .expect_err("the id is taken");
        assert!(matches!(e, TransactionError::Exists { .. }), "{e}");
        assert_eq!(w.read("a.txt"), "two\n");
        assert_eq!(w.query("SELECT id FROM transactions"), ["tx1"]);
    }

    #[test]
    fn a_failed_final_commit_puts_the_files_back_at_once() {
        let w = World::new(&[("a.txt", "one\n")]);
        let e = execute::<(), TransactionError>(
            w.env(),
            &w.actor,
            w.plan("tx1", PATCH),
            None,
            |_, _, _| Err(TransactionError::NotFound { id: "p1".into() }),
        )
        .expect_err("the caller refused");
        assert_eq!(e.code(), ErrorCode::NotFound);
        assert_eq!(w.read("a.txt"), "one\n");
        assert_eq!(w.query("SELECT status FROM transactions"), ["recovered"]);
        assert_eq!(w.events(), ["transaction.started", "transaction.recovered"]);
    }

    #[test]
    fn a_transaction_left_applying_is_recovered_by_the_next_open() {
        let w = World::new(&[("a.txt", "one\n")]);
        // A crash after the journal and the files, before the outcome.
        let plan = w.plan("tx1", PATCH);
        let created = w.ws.missing_dirs(&plan.changeset).expect("dirs");
        w.store
            .write(|tx| {
                write_journal(
                    tx,
                    Timestamp(5),
                    &w.actor,
                    Durability::Normal,
                    &plan,
                    &created,
                    "b",
                    "a",
                )
            })
            .expect("journal");
        std::fs::write(w.dir.path().join("a.txt"), "two\n").expect("the crashed write");
        // Another applier holds the lock: in flight, not crashed.
        let lock = ApplyLock::try_acquire(w.dir.path())
            .expect("lock")
            .expect("free");
        assert!(recover(w.env(), &mut Vec::new())
            .expect("recover")
            .is_empty());
        assert_eq!(w.read("a.txt"), "two\n");
        drop(lock);
        let done = recover(w.env(), &mut Vec::new()).expect("recover");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].restored, ["a.txt"]);
        assert_eq!(w.read("a.txt"), "one\n");
        assert_eq!(w.query("SELECT status FROM transactions"), ["recovered"]);
        assert!(
            recover(w.env(), &mut Vec::new()).expect("again").is_empty(),
            "once only"
        );
    }

    /// A plan for `patch` computed on the files as they stand now.
    fn plan_now<'w>(w: &'w World, id: &str, patch: &str) -> Plan<'w> {
        w.plan(id, patch)
    }

    const NEXT: &str = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+three\n";
    const B: &str = "--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+bee\n";

    #[test]
    fn issue34_item3_a_batch_lands_its_transactions_in_one_outcome_each_with_its_own_journal() {
        let w = World::new(&[("a.txt", "one\n")]);
        let mut batch = Batch::new(w.env(), &w.actor);
        batch
            .start::<TransactionError>(plan_now(&w, "tx1", PATCH), None)
            .expect("first");
        // The second is computed on the files the first wrote.
        batch
            .start::<TransactionError>(plan_now(&w, "tx2", NEXT), None)
            .expect("second");
        batch
            .start::<TransactionError>(plan_now(&w, "tx3", B), None)
            .expect("third");
        assert_eq!(batch.len(), 3);
        let ids = batch
            .finish::<_, TransactionError>(|i, _, t, _| Ok((i, t.id.clone())))
            .expect("landed");
        assert_eq!(
            ids,
            [
                (0, "tx1".to_owned()),
                (1, "tx2".to_owned()),
                (2, "tx3".to_owned())
            ]
        );
        assert_eq!(w.read("a.txt"), "three\n");
        assert_eq!(w.read("b.txt"), "bee\n");
        assert_eq!(
            w.query("SELECT status FROM transactions ORDER BY id"),
            ["applied", "applied", "applied"]
        );
        // Each its own before and after: the last one's journal starts
        // where the first one's ended.
        let first = w.store.read(|tx| journal(tx, "tx1")).expect("journal");
        let second = w.store.read(|tx| journal(tx, "tx2")).expect("journal");
        assert_eq!(first[0].after_digest, second[0].before_digest);
        let detail = w.query(
            "SELECT detail FROM transaction_phases WHERE phase = 'written' ORDER BY transaction_id",
        );
        assert!(
            detail[1].contains(r#""batch":{"of":3,"position":2}"#),
            "{detail:?}"
        );
    }

    #[test]
    fn issue34_item3_a_batch_killed_before_its_outcome_is_undone_newest_first() {
        let w = World::new(&[("a.txt", "one\n")]);
        let mut batch = Batch::new(w.env(), &w.actor);
        batch
            .start::<TransactionError>(plan_now(&w, "tx1", PATCH), None)
            .expect("first");
        batch
            .start::<TransactionError>(plan_now(&w, "tx2", NEXT), None)
            .expect("second");
        batch
            .start::<TransactionError>(plan_now(&w, "tx3", B), None)
            .expect("third");
        // The applier dies: its transactions stay `applying`, their files
        // written one over the other.
        drop(batch);
        assert_eq!(w.read("a.txt"), "three\n");
        let done = recover(w.env(), &mut Vec::new()).expect("recover");
        assert_eq!(done.len(), 3);
        // Newest first: a.txt goes back through two to one.
        assert_eq!(
            done.iter()
                .map(|r| r.transaction_id.as_str())
                .collect::<Vec<_>>(),
            ["tx3", "tx2", "tx1"]
        );
        assert!(done.iter().all(|r| r.conflicts.is_empty()), "{done:?}");
        assert_eq!(w.read("a.txt"), "one\n");
        assert!(!w.dir.path().join("b.txt").exists());
        assert_eq!(
            w.query("SELECT status FROM transactions ORDER BY id"),
            ["recovered", "recovered", "recovered"]
        );
    }

    #[test]
    fn issue34_item3_an_abandoned_or_refused_batch_puts_every_file_back() {
        let w = World::new(&[("a.txt", "one\n")]);
        let mut batch = Batch::new(w.env(), &w.actor);
        batch
            .start::<TransactionError>(plan_now(&w, "tx1", PATCH), None)
            .expect("first");
        batch
            .start::<TransactionError>(plan_now(&w, "tx2", NEXT), None)
            .expect("second");
        // The third is refused by its guard: nothing of it is recorded,
        // the two before it stay started.
        let refuse = |_: &Tx<'_>, _: Timestamp, _: &Changeset| -> Result<(), TransactionError> {
            Err(TransactionError::Exists { id: "no".into() })
        };
        let e = batch
            .start(plan_now(&w, "tx3", B), Some(&refuse))
            .expect_err("refused");
        assert_eq!(e.code(), ErrorCode::Conflict);
        assert_eq!(batch.len(), 2);
        batch.abandon("test").expect("abandoned");
        assert_eq!(w.read("a.txt"), "one\n");
        assert_eq!(
            w.query("SELECT status FROM transactions ORDER BY id"),
            ["recovered", "recovered"]
        );
        // A failed outcome undoes all of them too.
        let mut batch = Batch::new(w.env(), &w.actor);
        batch
            .start::<TransactionError>(plan_now(&w, "tx4", PATCH), None)
            .expect("first");
        batch
            .start::<TransactionError>(plan_now(&w, "tx5", NEXT), None)
            .expect("second");
        let e = batch
            .finish::<(), TransactionError>(|i, _, _, _| {
                if i == 1 {
                    Err(TransactionError::NotFound { id: "p1".into() })
                } else {
                    Ok(())
                }
            })
            .expect_err("the second's outcome failed");
        assert_eq!(e.code(), ErrorCode::NotFound);
        assert_eq!(w.read("a.txt"), "one\n");
        assert_eq!(
            w.query("SELECT status FROM transactions WHERE id IN ('tx4', 'tx5') ORDER BY id"),
            ["recovered", "recovered"]
        );
    }

    #[test]
    fn the_apply_lock_is_exclusive_and_busy_after_its_wait() {
        let w = World::new(&[]);
        let held = ApplyLock::acquire(w.dir.path(), Duration::from_secs(1)).expect("lock");
        assert!(ApplyLock::try_acquire(w.dir.path()).expect("try").is_none());
        let e = ApplyLock::acquire(w.dir.path(), Duration::from_millis(20)).expect_err("busy");
        assert_eq!(e.code(), ErrorCode::Busy);
        assert_eq!(e.details()["waited_ms"], 20);
        drop(held);
        assert!(ApplyLock::try_acquire(w.dir.path()).expect("try").is_some());
    }
}
