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
//!    ([`apply_changeset_with`](crate::workspace::Workspace::apply_changeset_with))
//!    and flushed: file by file for a few files, with one `syncfs` after
//!    staging and one after the renames for many;
//! 4. `applied`, the caller's own state changes (proposal `applied`, claims
//!    released) and the event commit in one SQL transaction.
//!
//! A failure in 3 is undone by the workspace and recorded as `failed`; a
//! failure in 4 is recovered at once. A crash anywhere leaves the journal
//! `applying`, and the next [`recover`] (run by every `Engine::open`)
//! restores each touched path to its before state — only where it is at
//! its after state; a path that matches neither is left alone and reported.

use crate::actor::Actor;
use crate::changeset::{Changeset, FileChange, FileContent, FileMeta, Operation};
use crate::clock::Timestamp;
use crate::engine::Engine;
use crate::store::Durability;
use crate::tools::{Cx, ToolError};
use crate::workspace::{Workspace, WriteOptions};
use crate::{Digest, ErrorCode, RepoPath};
use rusqlite::{params, OptionalExtension as _};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::{Duration, Instant};

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

fn lock_io(what: &Path, e: rustix::io::Errno) -> ToolError {
    ToolError::new(
        ErrorCode::Io,
        format!("apply lock {}: {e}", what.display()),
        json!({"lock": what.display().to_string()}),
    )
}

/// Try each lock once, without waiting: `None` when another holds one.
fn try_lock(engine: &Engine) -> Result<Option<ApplyLock>, ToolError> {
    use rustix::fs::{FlockOperation, Mode, OFlags};
    let dir_path = engine.root().join(crate::store::STORE_DIR);
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
    /// Take the lock, waiting up to `timeout` for another applier; `busy`
    /// when it is still held then.
    pub fn acquire(engine: &Engine, timeout: Duration) -> Result<ApplyLock, ToolError> {
        let start = Instant::now();
        loop {
            if let Some(lock) = try_lock(engine)? {
                return Ok(lock);
            }
            if start.elapsed() >= timeout {
                return Err(ToolError::new(
                    ErrorCode::Busy,
                    format!(
                        "another apply held the workspace apply lock for more than {} ms; nothing changed, retry soon",
                        timeout.as_millis()
                    ),
                    json!({"lock": LOCK_FILE, "waited_ms": u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX)}),
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Take the lock if nobody holds it.
    pub fn try_acquire(engine: &Engine) -> Result<Option<ApplyLock>, ToolError> {
        try_lock(engine)
    }
}

/// What one transaction does: apply a revision, or roll back a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionKind {
    /// Applies a proposal's revision.
    Apply,
    /// Restores the before snapshot of an earlier transaction.
    Rollback,
}

/// Where a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionStatus {
    /// Journaled; files may be partly written (in flight, or crashed).
    Applying,
    /// Every file is at its after state, and the store says so.
    Applied,
    /// Writing failed and was undone: every file is at its before state.
    Failed,
    /// Found `applying` after a crash and put back to its before state.
    Recovered,
    /// Applied, then rolled back by a later transaction.
    RolledBack,
}

/// One path in a transaction's journal.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct JournalFile {
    /// The path.
    pub path: String,
    /// `create`, `modify`, `delete`, `rename`, `renamed_away`, `copy`.
    pub operation: String,
    /// `blob:sha256:` before (`null`: absent).
    pub before_digest: Option<String>,
    /// Executable before.
    pub before_executable: Option<bool>,
    /// `blob:sha256:` after (`null`: absent).
    pub after_digest: Option<String>,
    /// Executable after.
    pub after_executable: Option<bool>,
    /// A symbolic link before (its digest is its target's); written only
    /// when it was.
    #[serde(skip_serializing_if = "not_true")]
    pub before_symlink: Option<bool>,
    /// A symbolic link after; written only when it is.
    #[serde(skip_serializing_if = "not_true")]
    pub after_symlink: Option<bool>,
}

fn not_true(b: &Option<bool>) -> bool {
    *b != Some(true)
}

/// A journaled state: digest, executable, symbolic link.
type State = (String, bool, bool);

impl JournalFile {
    fn before(&self) -> Option<State> {
        self.before_digest.clone().map(|d| {
            (
                d,
                self.before_executable.unwrap_or(false),
                self.before_symlink.unwrap_or(false),
            )
        })
    }

    fn after(&self) -> Option<State> {
        self.after_digest.clone().map(|d| {
            (
                d,
                self.after_executable.unwrap_or(false),
                self.after_symlink.unwrap_or(false),
            )
        })
    }
}

/// A transaction as the tools return it.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Transaction {
    /// Its id.
    pub id: String,
    /// `apply` or `rollback`.
    pub kind: TransactionKind,
    /// The proposal.
    pub proposal_id: String,
    /// The revision applied (for a rollback: the revision it undoes).
    pub revision: u32,
    /// For a rollback, the transaction it rolls back.
    pub rollback_of: Option<String>,
    /// Where it is.
    pub status: TransactionStatus,
    /// Who ran it.
    pub actor: Actor,
    /// The process that ran it.
    pub pid: i64,
    /// `full`, `normal` or `off`.
    pub durability: String,
    /// `sha256:` over the touched paths' before states.
    pub before_digest: String,
    /// `sha256:` over their after states.
    pub after_digest: String,
    /// Why it failed, if it did.
    pub error: Option<Value>,
    /// When it started.
    pub created_at: Timestamp,
    /// When it reached its final status.
    pub finished_at: Option<Timestamp>,
    /// How many paths it touches.
    pub file_count: u64,
    #[serde(skip)]
    pub(crate) seq: i64,
}

impl Transaction {
    pub(crate) const COLUMNS: &'static str = "t.id, t.kind, t.proposal_id, t.revision, t.rollback_of, t.status, t.actor, t.pid, t.durability, t.before_digest, t.after_digest, t.error, t.created_at, t.finished_at, (SELECT COUNT(*) FROM transaction_files f WHERE f.transaction_id = t.id), t.seq";

    pub(crate) fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Transaction> {
        use crate::tools::records::{actor_from_sql, enum_from_sql};
        let error: Option<String> = r.get(11)?;
        Ok(Transaction {
            id: r.get(0)?,
            kind: enum_from_sql_kind(&r.get::<_, String>(1)?)?,
            proposal_id: r.get(2)?,
            revision: r.get(3)?,
            rollback_of: r.get(4)?,
            status: enum_from_sql(&r.get::<_, String>(5)?)?,
            actor: actor_from_sql(&r.get::<_, String>(6)?)?,
            pid: r.get(7)?,
            durability: r.get(8)?,
            before_digest: r.get(9)?,
            after_digest: r.get(10)?,
            error: error.and_then(|e| serde_json::from_str(&e).ok()),
            created_at: Timestamp(r.get(12)?),
            finished_at: r.get::<_, Option<i64>>(13)?.map(Timestamp),
            file_count: r.get::<_, i64>(14)?.unsigned_abs(),
            seq: r.get(15)?,
        })
    }

    /// The transaction named `id`, or `not_found`.
    pub(crate) fn load(tx: &rusqlite::Transaction<'_>, id: &str) -> Result<Transaction, ToolError> {
        tx.query_row(
            &format!(
                "SELECT {} FROM transactions t WHERE t.id = ?1",
                Transaction::COLUMNS
            ),
            [id],
            Transaction::from_row,
        )
        .optional()?
        .ok_or_else(|| ToolError::not_found("transaction", id))
    }
}

fn enum_from_sql_kind(s: &str) -> rusqlite::Result<TransactionKind> {
    match s {
        "apply" => Ok(TransactionKind::Apply),
        "rollback" => Ok(TransactionKind::Rollback),
        other => Err(rusqlite::Error::InvalidColumnType(
            1,
            other.to_owned(),
            rusqlite::types::Type::Text,
        )),
    }
}

/// A transaction's journal, in path order.
pub(crate) fn journal(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
) -> Result<Vec<JournalFile>, ToolError> {
    let mut stmt = tx.prepare(
        "SELECT path, operation, before_digest, before_executable, after_digest, after_executable,
                before_symlink, after_symlink
         FROM transaction_files WHERE transaction_id = ?1 ORDER BY path",
    )?;
    let files = stmt
        .query_map([id], |r| {
            Ok(JournalFile {
                path: r.get(0)?,
                operation: r.get(1)?,
                before_digest: r.get(2)?,
                before_executable: r.get(3)?,
                after_digest: r.get(4)?,
                after_executable: r.get(5)?,
                before_symlink: r.get(6)?,
                after_symlink: r.get(7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(files)
}

fn dirs_to_sql(dirs: &BTreeSet<RepoPath>) -> String {
    serde_json::to_string(&dirs.iter().map(RepoPath::as_str).collect::<Vec<_>>())
        .expect("paths serialize")
}

/// The directories transaction `id` created (journaled with it).
pub(crate) fn created_dirs(
    tx: &rusqlite::Transaction<'_>,
    id: &str,
) -> Result<BTreeSet<RepoPath>, ToolError> {
    let text: String = tx.query_row(
        "SELECT created_dirs FROM transactions WHERE id = ?1",
        [id],
        |r| r.get(0),
    )?;
    let paths: Vec<String> = serde_json::from_str(&text).map_err(|e| {
        ToolError::new(
            ErrorCode::Database,
            format!("transaction {id}: its created directories: {e}"),
            json!({"transaction_id": id}),
        )
    })?;
    paths
        .iter()
        .map(|p| {
            p.parse().map_err(|e: crate::PathError| {
                ToolError::new(
                    ErrorCode::Database,
                    format!("transaction {id}: created directory {p}: {e}"),
                    json!({"transaction_id": id}),
                )
            })
        })
        .collect()
}

/// Where a journaled path is now, compared with the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathState {
    /// It has its after state.
    AtAfter,
    /// It has its before state.
    AtBefore,
    /// Neither: something else changed it.
    Diverged,
}

/// One path compared with the journal.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct PathReport {
    /// The path.
    pub path: String,
    /// Where it is.
    pub state: PathState,
    /// Its digest now (`absent`, or `blob:sha256:…` with ` +x` when
    /// executable, ` symlink` for a symbolic link: the digest of its
    /// target).
    pub actual: String,
    /// Its before state, spelled the same way.
    pub before: String,
    /// Its after state.
    pub after: String,
}

fn spell(state: &Option<State>) -> String {
    match state {
        None => "absent".into(),
        Some((d, _, true)) => format!("{d} symlink"),
        Some((d, true, false)) => format!("{d} +x"),
        Some((d, false, false)) => d.clone(),
    }
}

/// Compare every journaled path with the files.
pub(crate) fn compare(ws: &Workspace, files: &[JournalFile]) -> Result<Vec<PathReport>, ToolError> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let path: RepoPath = f.path.parse().map_err(|e: crate::PathError| {
            ToolError::new(
                ErrorCode::Database,
                format!("journal path {}: {e}", f.path),
                json!({}),
            )
        })?;
        let (before, after) = (f.before(), f.after());
        // Something that is not a file now (a FIFO, a socket, a device, a
        // link on the way) is neither state: reported, never opened or
        // overwritten. A link at the path is compared by its target.
        let (state, actual) = match ws.meta(&path) {
            Ok(meta) => {
                let now = meta.map(|m| (m.digest.to_string(), m.executable, m.symlink));
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
pub(crate) fn restore_changeset(
    engine: &Engine,
    files: &[JournalFile],
    reports: &[PathReport],
) -> Result<Changeset, ToolError> {
    let mut changes = Vec::new();
    let blobs = engine.store().read(|tx| {
        let mut out = Vec::new();
        for (f, r) in files.iter().zip(reports) {
            if r.state != PathState::AtAfter {
                continue;
            }
            let content = match &f.before_digest {
                None => None,
                Some(d) => {
                    let digest: Digest = d.parse().map_err(|e: crate::DigestError| {
                        ToolError::new(ErrorCode::Database, e.to_string(), json!({"digest": d}))
                    })?;
                    let (bytes, read) = crate::store::get_blob(tx, &digest)?.ok_or_else(|| {
                        ToolError::new(
                            ErrorCode::Database,
                            format!("the before snapshot of {} ({d}) is missing", f.path),
                            json!({"path": f.path, "digest": d}),
                        )
                    })?;
                    if read != digest {
                        return Err(ToolError::new(
                            ErrorCode::Database,
                            format!(
                                "the before snapshot of {} does not match its digest",
                                f.path
                            ),
                            json!({"path": f.path, "digest": d}),
                        ));
                    }
                    Some(bytes)
                }
            };
            out.push((f.clone(), content));
        }
        Ok::<_, ToolError>(out)
    })?;
    for (f, content) in blobs {
        let path: RepoPath = f.path.parse().map_err(|e: crate::PathError| {
            ToolError::new(ErrorCode::Database, e.to_string(), json!({}))
        })?;
        let before = match &f.after_digest {
            None => None,
            Some(d) => Some(FileMeta {
                digest: d.parse().map_err(|e: crate::DigestError| {
                    ToolError::new(ErrorCode::Database, e.to_string(), json!({}))
                })?,
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
    Changeset::new(changes)
        .map_err(|e| ToolError::new(ErrorCode::Database, e.to_string(), json!({})))
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
                h.update(d.as_bytes());
            }
        }
    }
    format!("sha256:{}", crate::hex::encode(&h.finalize()))
}

/// A touched path's content before the change.
pub(crate) struct Before {
    pub path: RepoPath,
    /// The digest of `data`.
    pub digest: Digest,
    pub data: Vec<u8>,
    pub executable: bool,
    /// A symbolic link, `data` its target.
    pub symlink: bool,
}

/// One transaction to run.
/// A check run inside the journal's transaction (see [`Plan::guard`]).
pub(crate) type Guard<'g> = dyn Fn(&Cx<'_>) -> Result<(), ToolError> + 'g;

pub(crate) struct Plan<'a> {
    pub id: crate::Id,
    pub kind: TransactionKind,
    pub proposal_id: &'a str,
    pub revision: u32,
    pub rollback_of: Option<&'a str>,
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
    /// Checked inside the journal's SQL transaction, before anything is
    /// recorded: what validation decided outside it that must still hold
    /// when the apply becomes visible (no other agent's write claim was
    /// granted on a touched path since). Its error refuses the apply with
    /// nothing written.
    pub guard: Option<&'a Guard<'a>>,
}

fn phase(cx: &Cx<'_>, id: &str, name: &str, status: &str, detail: Value) -> Result<(), ToolError> {
    cx.tx.execute(
        "INSERT INTO transaction_phases (transaction_id, phase, status, detail, at) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, name, status, detail.to_string(), cx.now.0],
    )?;
    Ok(())
}

fn cx<'a>(engine: &'a Engine, tx: &'a rusqlite::Transaction<'a>, actor: &'a Actor) -> Cx<'a> {
    Cx {
        engine,
        tx,
        actor,
        now: engine.now(),
    }
}

/// Run `plan` under the apply lock (the caller holds it). `finish` runs
/// inside the SQL transaction that marks it `applied` (the caller's state
/// changes); its value is returned.
pub(crate) fn execute<T>(
    engine: &Engine,
    actor: &Actor,
    plan: Plan<'_>,
    finish: impl FnOnce(&Cx<'_>, &Transaction) -> Result<T, ToolError>,
) -> Result<T, ToolError> {
    let durability = engine.options().durability;
    let files = plan.changeset.files();
    let afters = plan.changeset.after_metas();
    let before_digest = set_digest(files.iter().map(|f| {
        (
            f.path.to_string(),
            f.before
                .map(|m| (m.digest.to_string(), m.executable, m.symlink)),
        )
    }));
    let after_digest = set_digest(files.iter().zip(afters).map(|(f, after)| {
        (
            f.path.to_string(),
            after.map(|m| (m.digest.to_string(), m.executable, m.symlink)),
        )
    }));
    let id = plan.id.as_str();
    let created_dirs = plan.workspace.missing_dirs(&plan.changeset)?;

    // 1. The journal, durably, before any file is touched.
    engine.store().write(|tx| {
        let cx = cx(engine, tx, actor);
        let taken: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM transactions WHERE id = ?1)",
            [id],
            |r| r.get(0),
        )?;
        if taken {
            return Err(ToolError::conflict(
                format!("transaction {id} already exists"),
                json!({"kind": "transaction", "id": id}),
            ));
        }
        if let Some(guard) = plan.guard {
            guard(&cx)?;
        }
        tx.execute(
            "INSERT INTO transactions (id, kind, proposal_id, revision, rollback_of, status, actor, pid,
                 durability, before_digest, after_digest, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, 'applying', ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                id,
                crate::tools::records::enum_to_sql(&plan.kind),
                plan.proposal_id,
                plan.revision,
                plan.rollback_of,
                actor.to_string(),
                i64::from(std::process::id()),
                durability.as_str(),
                before_digest,
                after_digest,
                cx.now.0
            ],
        )?;
        tx.execute(
            "UPDATE transactions SET created_dirs = ?2 WHERE id = ?1",
            params![id, dirs_to_sql(&created_dirs)],
        )?;
        for b in &plan.snapshot {
            crate::store::put_blob_digested(tx, &b.digest, &b.data)?;
        }
        let mut insert = tx.prepare(
            "INSERT INTO transaction_files (transaction_id, path, operation, before_digest, before_executable,
                 after_digest, after_executable, before_symlink, after_symlink)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        )?;
        for (f, after) in files.iter().zip(afters) {
            let operation = f.operation.name();
            insert.execute(params![
                id,
                f.path.as_str(),
                operation,
                f.before.map(|m| m.digest.to_string()),
                f.before.map(|m| m.executable),
                after.map(|m| m.digest.to_string()),
                after.map(|m| m.executable),
                f.before.and_then(|m| m.symlink.then_some(true)),
                after.and_then(|m| m.symlink.then_some(true)),
            ])?;
        }
        // The head of the audit chain this transaction saw, kept with its
        // journal: `events.verify` checks every such head is still in the
        // log, so rewriting or truncating it means rewriting these too.
        let (seq, digest) = crate::store::chain_head(tx)?;
        phase(
            &cx,
            id,
            "journaled",
            "done",
            json!({"files": files.len(), "chain_head": {"seq": seq, "digest": digest}}),
        )?;
        cx.event(
            "transaction.started",
            id,
            Some(plan.proposal_id),
            json!({"kind": plan.kind, "revision": plan.revision, "rollback_of": plan.rollback_of, "files": files.len()}),
        )?;
        Ok(())
    })?;

    // 2. The files.
    let durable = durability != Durability::Off;
    // The old contents are in memory: an undo restores from them.
    let held: crate::workspace::Held<'_> = plan
        .snapshot
        .iter()
        .map(|b| (&b.path, (b.data.as_slice(), b.executable, b.symlink)))
        .collect();
    let options = WriteOptions {
        durable,
        tag: Some(id),
        prune_only: plan.prune_only.as_ref(),
    };
    if let Err(e) =
        plan.workspace
            .apply_changeset_holding(&plan.changeset, false, &options, Some(&held))
    {
        let undo_failed = matches!(e, crate::workspace::WorkspaceError::Undo { .. });
        let error = ToolError::from(e);
        if undo_failed {
            // The workspace could not undo its partial commit: restore from
            // the journal now, while the lock is still held.
            recover_one(engine, actor, id, "the apply failed and its undo failed")?;
        } else {
            engine.store().write(|tx| {
                let cx = cx(engine, tx, actor);
                still_applying(
                    tx.execute(
                        "UPDATE transactions SET status = 'failed', error = ?2, finished_at = ?3
                     WHERE id = ?1 AND status = 'applying'",
                        params![id, error.to_json().to_string(), cx.now.0],
                    )?,
                    id,
                )?;
                phase(&cx, id, "write", "failed", error.to_json())?;
                cx.event(
                    "transaction.failed",
                    id,
                    Some(plan.proposal_id),
                    json!({"error": error.to_json()}),
                )?;
                Ok::<_, ToolError>(())
            })?;
        }
        let mut details = error.details().clone();
        if let Value::Object(m) = &mut details {
            m.insert("transaction_id".into(), json!(id));
        }
        return Err(ToolError::new(error.code(), error.message(), details).with_source(error));
    }

    // 3. The outcome, with the caller's state changes, in one transaction.
    let finished = engine.store().write(|tx| {
        let cx = cx(engine, tx, actor);
        still_applying(
            tx.execute(
                "UPDATE transactions SET status = 'applied', finished_at = ?2
                 WHERE id = ?1 AND status = 'applying'",
                params![id, cx.now.0],
            )?,
            id,
        )?;
        phase(
            &cx,
            id,
            "written",
            "done",
            json!({"files": files.len(), "durable": durable}),
        )?;
        let transaction = Transaction::load(tx, id)?;
        let out = finish(&cx, &transaction)?;
        phase(&cx, id, "applied", "done", json!({}))?;
        cx.event(
            "transaction.applied",
            id,
            Some(plan.proposal_id),
            json!({"kind": plan.kind, "files": files.len()}),
        )?;
        Ok(out)
    });
    match finished {
        Ok(out) => Ok(out),
        Err(e) => {
            // The files are written but the store could not say so: put
            // them back now rather than leave the two disagreeing.
            recover_one(engine, actor, id, "the apply's final commit failed")?;
            Err(e)
        }
    }
}

/// A transaction's final status is only ever set over `applying`: if
/// anything else (a recovery) finished it meanwhile, this applier must not
/// claim it.
fn still_applying(changed: usize, id: &str) -> Result<(), ToolError> {
    if changed == 1 {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::Conflict,
        format!("transaction {id} was finished by another process while it was applying"),
        json!({"transaction_id": id}),
    ))
}

/// What recovering one transaction did.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Recovery {
    /// The transaction.
    pub transaction_id: String,
    /// Paths put back to their before state.
    pub restored: Vec<String>,
    /// Paths already at their before state.
    pub already_before: Vec<String>,
    /// Paths at neither state: left alone, never overwritten.
    pub conflicts: Vec<PathReport>,
    /// Leftover staging files and backup directories removed.
    pub leftovers: Vec<String>,
}

/// Put transaction `id` (left `applying`) back to its before state; the
/// caller holds the apply lock.
pub(crate) fn recover_one(
    engine: &Engine,
    actor: &Actor,
    id: &str,
    why: &str,
) -> Result<Recovery, ToolError> {
    let (files, proposal_id, created) = engine.store().read(|tx| {
        let t = Transaction::load(tx, id)?;
        Ok::<_, ToolError>((journal(tx, id)?, t.proposal_id, created_dirs(tx, id)?))
    })?;
    let reports = compare(engine.workspace(), &files)?;
    let changeset = restore_changeset(engine, &files, &reports)?;
    let durable = engine.options().durability != Durability::Off;
    // The restore's own temporary names carry the transaction's tag too: a
    // crash during recovery leaves only names the next recovery removes.
    engine.workspace().apply_changeset_with(
        &changeset,
        false,
        &WriteOptions {
            durable,
            tag: Some(id),
            prune_only: Some(&created),
        },
    )?;
    let paths: Vec<RepoPath> = files.iter().filter_map(|f| f.path.parse().ok()).collect();
    let leftovers = engine.workspace().remove_leftovers(&paths, id, &created)?;
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
    engine.store().write(|tx| {
        let cx = cx(engine, tx, actor);
        tx.execute(
            "UPDATE transactions SET status = 'recovered', finished_at = ?2 WHERE id = ?1 AND status = 'applying'",
            params![id, cx.now.0],
        )?;
        let detail = serde_json::to_value(&recovery).expect("a recovery serializes");
        phase(&cx, id, "recovered", "done", json!({"why": why, "recovery": detail}))?;
        cx.event(
            "transaction.recovered",
            id,
            Some(&proposal_id),
            json!({"why": why, "restored": recovery.restored.len(), "conflicts": recovery.conflicts}),
        )?;
        Ok::<_, ToolError>(())
    })?;
    Ok(recovery)
}

/// The transactions left `applying`, oldest first.
fn applying(engine: &Engine) -> Result<Vec<String>, ToolError> {
    engine.store().read(|tx| {
        let mut stmt =
            tx.prepare("SELECT id FROM transactions WHERE status = 'applying' ORDER BY seq")?;
        let ids = stmt
            .query_map([], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(ids)
    })
}

/// Finish every transaction left `applying` by a crashed applier. Does
/// nothing while another applier holds the lock (its transaction is in
/// flight, not crashed).
pub fn recover(engine: &Engine) -> Result<Vec<Recovery>, ToolError> {
    let pending = applying(engine)?;
    if pending.is_empty() {
        return Ok(Vec::new());
    }
    let Some(_lock) = ApplyLock::try_acquire(engine)? else {
        return Ok(Vec::new());
    };
    let actor = Actor::orchestrator(crate::Id::new("roundtable-recovery").expect("a valid id"));
    // Re-read under the lock: the applier may have finished meanwhile.
    let pending = applying(engine)?;
    pending
        .iter()
        .map(|id| {
            recover_one(
                engine,
                &actor,
                id,
                "found applying when the workspace was opened",
            )
        })
        .collect()
}
