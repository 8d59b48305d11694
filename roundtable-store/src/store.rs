//! The store: SQLite in `<root>/.roundtable/store.db` by default, or a
//! PostgreSQL database many hosts share (`store::pg`); every query is written
//! once over `store::sql` and runs on either.
//!
//! The SQLite store:
//! - WAL journal, a busy timeout, foreign keys on; several processes may
//!   open one workspace's store at once. Its locks are held so that
//!   another SQLite library in the process closing the store cannot drop
//!   them (the `roundtable-sqlite-locks` crate).
//! - Versioned migrations: `PRAGMA user_version` is the schema version;
//!   each migration runs in its own transaction (taken with `BEGIN
//!   IMMEDIATE`, so two processes opening a new store migrate it once), and
//!   a database newer than this code is refused, not opened.
//! - Every write is one `BEGIN IMMEDIATE` transaction,
//!   and every state change appends its event inside it:
//!   a hash-chained, append-only log with a per-store `seq`.
//! - Patch and edit-plan bytes live in a content-addressed blob table.

pub mod agents;
pub mod claims;
pub mod events;
pub mod evidence;
pub mod idempotency;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod policies;
pub mod proposals;
pub mod queue;
pub mod rows;
pub mod settings;
pub mod sql;
pub mod traces;
pub mod transactions;
pub mod watch;

use crate::actor::Actor;
use crate::clock::Timestamp;
use crate::{Digest, ErrorCode};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use sha2::{Digest as _, Sha256};
use sql::{params, OptionalExtension as _, SqlError, Tx};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The directory under the root that holds roundtable's own files.
pub const STORE_DIR: &str = ".roundtable";
/// The database's file name inside [`STORE_DIR`].
pub const DB_FILE: &str = "store.db";

/// The migrations, in order: migration `i` takes the schema from version
/// `i` to `i + 1`. Released migrations are never edited, only appended.
const MIGRATIONS: &[&str] = &[
    include_str!("store/v1.sql"),
    include_str!("store/v2.sql"),
    include_str!("store/v3.sql"),
    include_str!("store/v4.sql"),
    include_str!("store/v5.sql"),
    include_str!("store/v6.sql"),
    include_str!("store/v7.sql"),
    include_str!("store/v8.sql"),
    include_str!("store/v9.sql"),
    include_str!("store/v10.sql"),
    include_str!("store/v11.sql"),
    include_str!("store/v12.sql"),
    include_str!("store/v13.sql"),
    include_str!("store/v14.sql"),
    include_str!("store/v15.sql"),
    include_str!("store/v16.sql"),
];

/// The schema version this code writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

pub use crate::model::Durability;

/// How to open a store.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Flush policy.
    pub durability: Durability,
    /// How long a write waits for another process's write to finish.
    pub busy_timeout: Duration,
    /// A PostgreSQL store's URL (`postgres://…`); `None` for the
    /// embedded SQLite store in the workspace.
    pub url: Option<String>,
    /// The longest one statement may run on a PostgreSQL server.
    pub statement_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(10),
            url: None,
            statement_timeout: Duration::from_secs(30),
        }
    }
}

/// Why the store failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database refused an operation, or could not be reached.
    #[error("store {path}: {source}")]
    Database {
        /// The database file, or the server's URL (without a password).
        path: String,
        /// The engine's error.
        #[source]
        source: SqlError,
    },
    /// The connection to the server broke while a write committed and the
    /// server could not be asked, within the busy timeout, whether it did:
    /// the change may or may not have been made (a call made again with
    /// the same idempotency key returns the first call's result if it was).
    #[error("store {path}: the connection broke during the commit and whether it committed is unknown: {source}")]
    CommitUnknown {
        /// The server's URL (without a password).
        path: String,
        /// Why the commit failed.
        #[source]
        source: SqlError,
    },
    /// A write waited past the busy timeout for another host's write.
    #[error("store {path}: another write held the store for {waited:?}")]
    Busy {
        /// The server's URL (without a password).
        path: String,
        /// How long the write waited.
        waited: Duration,
    },
    /// The store URL is not one roundtable can open.
    #[error("store URL: {0}")]
    Url(String),
    /// The database's schema is newer than this code.
    #[error(
        "store {path} has schema version {found}; this roundtable knows versions up to {known}"
    )]
    TooNew {
        /// The database file.
        path: String,
        /// Its `user_version`.
        found: i64,
        /// [`SCHEMA_VERSION`].
        known: i64,
    },
    /// An existing store file is not a roundtable store (empty, truncated,
    /// not SQLite): it is refused, never replaced.
    #[error("store {path} is not a roundtable store: {reason}")]
    NotAStore {
        /// The database file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The store's directory, database or WAL is a symbolic link or not
    /// what it should be (a directory, regular files): never followed.
    #[error(
        "store {path} is a symbolic link or not the kind of file it should be (never followed)"
    )]
    NotAFile {
        /// The file.
        path: String,
    },
    /// The call was cancelled, or its deadline passed, while the store was
    /// busy with another writer: nothing was written.
    #[error("{0} (the store was busy with another writer)")]
    Interrupted(crate::interrupt::Interrupted),
    /// The store directory could not be created or is not a directory.
    #[error("store directory {path}: {source}")]
    Dir {
        /// The directory.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The details of a `database` error: `{"retryable": true}` when the
/// same call may succeed if made again (the server was down or
/// restarting, the connection broke, another write held the store), else
/// none.
pub fn database_details(retryable: bool) -> Value {
    if retryable {
        serde_json::json!({"retryable": true})
    } else {
        serde_json::json!({})
    }
}

impl StoreError {
    /// Whether the call may succeed if made again (the server was down,
    /// the connection broke, another write held the store): nothing was
    /// written.
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Database { source, .. } => source.is_retryable(),
            StoreError::Busy { .. } => true,
            _ => false,
        }
    }

    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            StoreError::Database { .. }
            | StoreError::Busy { .. }
            | StoreError::CommitUnknown { .. } => ErrorCode::Database,
            StoreError::Url(_) => ErrorCode::InvalidArgument,
            StoreError::TooNew { .. } | StoreError::NotAStore { .. } => {
                ErrorCode::IncompatibleStore
            }
            StoreError::NotAFile { .. } => ErrorCode::PathEscape,
            StoreError::Dir { .. } => ErrorCode::Io,
            StoreError::Interrupted(i) => i.code(),
        }
    }
}

/// An open store.
pub struct Store {
    engine: StoreEngine,
    created: bool,
    notices: watch::Notices,
    /// This workspace clone's id ([`CLONE_FILE`]).
    clone_id: String,
}

/// The file in [`STORE_DIR`] that names this workspace clone: the
/// transactions its applies write say so, and recovery finishes only its
/// own.
pub const CLONE_FILE: &str = "clone";

/// A lease taken with [`Store::lease`], held until dropped.
pub struct Lease<'a> {
    /// Released when dropped.
    #[cfg(feature = "postgres")]
    _held: pg::PgLease<'a>,
    #[cfg(not(feature = "postgres"))]
    _held: std::marker::PhantomData<&'a ()>,
}

enum StoreEngine {
    Sqlite(SqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(Box<pg::PgStore>),
}

/// The embedded SQLite store of one workspace.
struct SqliteStore {
    conn: Mutex<Connection>,
    /// Idle read-only connections: a read takes one (opening another when
    /// none is idle), so reads run beside each other and beside the
    /// writer (WAL), instead of queueing on the one writing connection.
    readers: Mutex<Vec<Connection>>,
    busy_timeout: Duration,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location())
            .finish()
    }
}

/// A failed SQLite call, tagged with the database path.
pub fn sqlite_error<S: Into<SqlError>>(path: &Path) -> impl Fn(S) -> StoreError + '_ {
    move |source| {
        let source = source.into();
        // A busy store the caller's call gave up on says why.
        if let SqlError::Sqlite(e) = &source {
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy) {
                if let Err(why) = crate::interrupt::check() {
                    return StoreError::Interrupted(why);
                }
            }
        }
        StoreError::Database {
            path: path.display().to_string(),
            source,
        }
    }
}

thread_local! {
    /// The busy timeout of the store the calling thread is using
    /// ([`busy_wait`]).
    static BUSY_LIMIT: std::cell::Cell<Duration> = const { std::cell::Cell::new(Duration::from_secs(10)) };
    /// When the calling thread's current busy wait began.
    static BUSY_SINCE: std::cell::Cell<Option<std::time::Instant>> = const { std::cell::Cell::new(None) };
}

/// SQLite's busy handler for every connection: while another connection
/// holds the lock, wait (1 ms at first, then 5 ms at a time) up to the
/// store's busy timeout — but no longer than the calling thread's call
/// allows ([`crate::interrupt`]): a cancelled call, or one past its
/// deadline, stops waiting at once. `false` ends the wait (SQLite then
/// returns `SQLITE_BUSY`).
fn busy_wait(attempt: i32) -> bool {
    use std::time::Instant;
    if crate::interrupt::check().is_err() {
        return false;
    }
    let now = Instant::now();
    let since = BUSY_SINCE.with(|s| match s.get() {
        Some(t) if attempt > 0 => t,
        _ => {
            s.set(Some(now));
            now
        }
    });
    let limit = BUSY_LIMIT.with(std::cell::Cell::get);
    if now.duration_since(since) >= limit {
        return false;
    }
    let step = Duration::from_millis(if attempt < 5 { 1 } else { 5 });
    let until = crate::interrupt::bound((now + step).min(since + limit));
    std::thread::sleep(until.saturating_duration_since(now));
    true
}

/// Install [`busy_wait`] on `conn`.
fn set_busy_handler(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_handler(Some(busy_wait))
}

/// What a host may know of an engine's store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreInfo {
    /// The database file, or the PostgreSQL URL (without a password).
    pub location: String,
    /// Which engine it is on.
    pub engine: StoreKind,
    /// The schema version it is at ([`SCHEMA_VERSION`] for SQLite,
    /// [`PG_SCHEMA_VERSION`] for PostgreSQL).
    pub schema_version: i64,
    /// Whether the engine's open created it.
    pub created: bool,
}

/// The engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// The embedded SQLite store in the workspace.
    Sqlite,
    /// A PostgreSQL database.
    Postgres,
}

impl StoreKind {
    /// The stable spelling (`sqlite`, `postgres`).
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Sqlite => "sqlite",
            StoreKind::Postgres => "postgres",
        }
    }
}

/// The PostgreSQL migrations, in order: migration `i` takes the schema
/// from version `i` to `i + 1` (kept in every build, so that the two
/// schemas can be compared).
pub const PG_MIGRATIONS: &[&str] = &[
    include_str!("store/pg/v1.sql"),
    include_str!("store/pg/v2.sql"),
    include_str!("store/pg/v3.sql"),
    include_str!("store/pg/v4.sql"),
    include_str!("store/pg/v5.sql"),
    include_str!("store/pg/v6.sql"),
];

/// The PostgreSQL schema version this code writes.
pub const PG_SCHEMA_VERSION: i64 = PG_MIGRATIONS.len() as i64;

/// A store URL as it may be shown (without its password), or why it is
/// not a store URL this build can open (a build without the `postgres`
/// feature opens none).
pub fn shown_url(url: &str) -> Result<String, String> {
    #[cfg(feature = "postgres")]
    return pg::PgLocation::parse(url).map(|l| l.shown);
    #[cfg(not(feature = "postgres"))]
    return Err(format!(
        "this build of roundtable has no PostgreSQL store (the `postgres` feature): {:?} cannot be opened",
        url.split('@').next_back().unwrap_or_default()
    ));
}

impl Store {
    /// Open (creating when absent) the store of the workspace at `root`:
    /// the embedded SQLite store, or the PostgreSQL database of
    /// `options.url`.
    pub fn open(root: &Path, options: &StoreOptions) -> Result<Store, StoreError> {
        let dir = open_store_dir(root)?;
        let clone_id = clone_id(&dir)?;
        let (engine, created) = match &options.url {
            #[cfg(feature = "postgres")]
            Some(url) => {
                let location = pg::PgLocation::parse(url).map_err(StoreError::Url)?;
                let (store, created) =
                    pg::PgStore::open(location, options.busy_timeout, options.statement_timeout)?;
                (StoreEngine::Postgres(Box::new(store)), created)
            }
            #[cfg(not(feature = "postgres"))]
            Some(url) => return Err(StoreError::Url(shown_url(url).err().unwrap_or_default())),
            None => {
                let (store, created) = SqliteStore::open(&dir, options)?;
                (StoreEngine::Sqlite(store), created)
            }
        };
        Ok(Store {
            engine,
            created,
            notices: watch::Notices::default(),
            clone_id,
        })
    }

    /// This workspace clone's id (see [`CLONE_FILE`]).
    pub fn clone_id(&self) -> &str {
        &self.clone_id
    }

    /// The database file, or the PostgreSQL URL (without a password).
    pub fn location(&self) -> String {
        match &self.engine {
            StoreEngine::Sqlite(s) => s.path.display().to_string(),
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(p) => p.shown().to_owned(),
        }
    }

    /// Which engine the store runs on.
    pub fn kind(&self) -> StoreKind {
        match &self.engine {
            StoreEngine::Sqlite(_) => StoreKind::Sqlite,
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(_) => StoreKind::Postgres,
        }
    }

    /// Whether this open created the schema (the store was new).
    pub fn created(&self) -> bool {
        self.created
    }

    /// Where the store is, its schema version, and whether this open
    /// created it.
    pub fn info(&self) -> StoreInfo {
        StoreInfo {
            location: self.location(),
            engine: self.kind(),
            schema_version: match &self.engine {
                StoreEngine::Sqlite(_) => SCHEMA_VERSION,
                #[cfg(feature = "postgres")]
                StoreEngine::Postgres(_) => PG_SCHEMA_VERSION,
            },
            created: self.created,
        }
    }

    /// A lease on `name` shared by every host on this store, held until
    /// the value is dropped: on PostgreSQL an advisory lock (waited for up
    /// to [`pg::LOCK_TIMEOUT`], lost by a holder stopped for
    /// [`pg::IDLE_IN_TRANSACTION`]); on SQLite, whose store has one host,
    /// none is needed (`None`). `None` too when it could not be had: a
    /// lease only spares hosts work that would lose a race (each step it
    /// covers stays safe without it).
    pub fn lease(&self, name: &str) -> Option<Lease<'_>> {
        match &self.engine {
            StoreEngine::Sqlite(_) => {
                let _ = name;
                None
            }
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(p) => {
                use sha2::Digest as _;
                let hash = sha2::Sha256::digest(name.as_bytes());
                let mut key = [0u8; 8];
                key.copy_from_slice(&hash[..8]);
                p.lease(i64::from_be_bytes(key))
                    .map(|held| Lease { _held: held })
            }
        }
    }

    /// Run `f` in one write transaction (SQLite: `BEGIN IMMEDIATE`, the
    /// write lock taken up front, so two writers never deadlock on an
    /// upgrade; PostgreSQL: the store's write lock, see [`pg`]). It
    /// commits only when `f` succeeds; on error nothing is written.
    pub fn write<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        APPENDED.with_borrow_mut(Vec::clear);
        let out = match &self.engine {
            StoreEngine::Sqlite(s) => s.write(f),
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(p) => p.write(f, || APPENDED.with_borrow(|a| !a.is_empty())),
        }?;
        // Waiters in this engine learn at once of the events committed.
        let appended = APPENDED.take();
        self.notices.commits.publish(&appended);
        Ok(out)
    }

    /// Run `f` in one read transaction: a consistent snapshot.
    pub fn read<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        match &self.engine {
            StoreEngine::Sqlite(s) => s.read(f),
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(p) => p.read(f),
        }
    }

    /// Register a waiter for `interest`: it is woken by the events this
    /// engine commits and, once [`Store::watch_commits`] ran, by those
    /// other connections commit. Register before the first check, so
    /// nothing committed after that check goes unseen.
    pub fn register(&self, interest: watch::Interest) -> watch::Waiting<'_> {
        self.notices.commits.register(interest)
    }

    /// Make waiters also learn of other connections' commits: the first
    /// call starts the watcher (SQLite: watching the store's directory;
    /// PostgreSQL: listening for the commits' notifications), following
    /// the log from its head then; later calls cost an atomic load.
    pub fn watch_commits(&self) {
        match &self.engine {
            StoreEngine::Sqlite(s) => {
                if let Some(dir) = s.path.parent() {
                    self.notices.watch(dir, || {
                        let conn = s.open_reader().ok()?;
                        watch::LogTail::sqlite(conn).ok()
                    });
                }
            }
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(p) => {
                let connector = p.connector();
                self.notices.listen(move || connector.connect().ok());
            }
        }
    }

    /// Wake the claim waiters (those of [`watch::Interest::Any`]):
    /// something they wait on changed outside the store (a claim waiter
    /// left the queue).
    pub fn notify_claim_waiters(&self) {
        self.notices.commits.bump_any();
    }

    /// Tag a query error with this store's location.
    #[cfg(test)]
    pub fn err(&self) -> impl Fn(SqlError) -> StoreError + '_ {
        move |source| match &self.engine {
            StoreEngine::Sqlite(s) => sqlite_error(&s.path)(source),
            #[cfg(feature = "postgres")]
            StoreEngine::Postgres(p) => p.error(source),
        }
    }
}

/// The workspace's [`STORE_DIR`], created when absent; a link or a
/// non-directory there is refused.
fn open_store_dir(root: &Path) -> Result<PathBuf, StoreError> {
    let dir = root.join(STORE_DIR);
    let dir_err = |source| StoreError::Dir {
        path: dir.display().to_string(),
        source,
    };
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(m) if m.file_type().is_symlink() => {
            return Err(StoreError::NotAFile {
                path: dir.display().to_string(),
            })
        }
        Ok(_) => {
            return Err(dir_err(std::io::Error::other(
                "exists and is not a directory",
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_store_dir(&dir).map_err(dir_err)?
        }
        Err(e) => return Err(dir_err(e)),
    }
    Ok(dir)
}

/// The id of the clone whose store directory is `dir`: read from
/// [`CLONE_FILE`], or made (random) and written there by the first
/// opener. Two first openers racing agree: the file is created whole
/// under another name and linked into place.
fn clone_id(dir: &Path) -> Result<String, StoreError> {
    let path = dir.join(CLONE_FILE);
    let io = |source| StoreError::Dir {
        path: path.display().to_string(),
        source,
    };
    let read = |path: &Path| -> Result<Option<String>, StoreError> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if !m.is_file() => Err(StoreError::NotAFile {
                path: path.display().to_string(),
            }),
            Ok(_) => {
                let text = std::fs::read_to_string(path).map_err(io)?;
                let id = text.trim();
                let valid = !id.is_empty()
                    && id.len() <= 64
                    && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
                if valid {
                    Ok(Some(id.to_owned()))
                } else {
                    Err(io(std::io::Error::other("is not a clone id")))
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(e)),
        }
    };
    if let Some(id) = read(&path)? {
        return Ok(id);
    }
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let id = format!("clone-{}", crate::hex::encode(&bytes));
    let tmp = tempfile::Builder::new()
        .prefix(".clone.new-")
        .tempfile_in(dir)
        .map_err(io)?;
    std::fs::write(tmp.path(), format!("{id}\n")).map_err(io)?;
    match std::fs::hard_link(tmp.path(), &path) {
        Ok(()) => Ok(id),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            read(&path)?.ok_or_else(|| io(std::io::Error::other("vanished")))
        }
        Err(e) => Err(io(e)),
    }
}

impl SqliteStore {
    /// Open (creating when absent) the store in the workspace's store
    /// directory `dir`.
    fn open(dir: &Path, options: &StoreOptions) -> Result<(SqliteStore, bool), StoreError> {
        // Before the first connection: locks another SQLite library in
        // this process cannot drop by closing the store.
        roundtable_sqlite_locks::install();
        let dir_err = |source| StoreError::Dir {
            path: dir.display().to_string(),
            source,
        };
        let path = dir.join(DB_FILE);
        let err = sqlite_error(&path);
        // A store is created whole under another name and linked into
        // place, so `store.db` only ever names a migrated store: an
        // existing one that is not (empty, truncated, not SQLite) is
        // refused, never silently replaced by an empty one.
        let created = match std::fs::symlink_metadata(&path) {
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(dir, &path)?,
            Err(e) => return Err(dir_err(e)),
        };
        for suffix in ["", "-wal", "-shm"] {
            let file = PathBuf::from(format!("{}{suffix}", path.display()));
            if let Ok(m) = std::fs::symlink_metadata(&file) {
                if !m.is_file() {
                    return Err(StoreError::NotAFile {
                        path: file.display().to_string(),
                    });
                }
            }
        }
        // `NOFOLLOW`: a link put in place after the check is refused too.
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let flags = flags - rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let mut conn = Connection::open_with_flags(&path, flags).map_err(|e| invalid(&path, e))?;
        BUSY_LIMIT.with(|l| l.set(options.busy_timeout));
        set_busy_handler(&mut conn).map_err(&err)?;
        keep_statements(&conn).map_err(&err)?;
        // Before anything writes to it (setting WAL writes a header into
        // an empty file): is it a roundtable store at all?
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| invalid(&path, e))?;
        if version == 0 {
            return Err(StoreError::NotAStore {
                path: path.display().to_string(),
                reason: "it holds no roundtable schema (empty, or user_version 0)".into(),
            });
        }
        // WAL lets readers run beside a writer, in this and other
        // processes. A store this version created is WAL already; one an
        // older version made is switched by its first opener, and a
        // concurrent switch is refused without waiting (SQLITE_BUSY), so
        // it is retried for the busy timeout.
        let started = std::time::Instant::now();
        let mode: String = loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
                Err(e)
                    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                        && started.elapsed() < options.busy_timeout =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                other => break other.map_err(|e| invalid(&path, e))?,
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(err(rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {mode}, not wal"
            ))));
        }
        let sync = match options.durability {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
            Durability::Off => "OFF",
        };
        conn.execute_batch(&format!(
            "PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON;"
        ))
        .map_err(&err)?;
        migrate(&mut conn, &path, false)?;
        drop(err);
        Ok((
            SqliteStore {
                conn: Mutex::new(conn),
                readers: Mutex::new(Vec::new()),
                busy_timeout: options.busy_timeout,
                path,
            },
            created,
        ))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let err = sqlite_error::<rusqlite::Error>(&self.path);
        BUSY_LIMIT.with(|l| l.set(self.busy_timeout));
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        let out = f(&Tx::sqlite(&tx))?;
        tx.commit().map_err(&err)?;
        Ok(out)
    }

    fn read<T, E: From<StoreError>>(
        &self,
        f: impl FnOnce(&Tx<'_>) -> Result<T, E>,
    ) -> Result<T, E> {
        let err = sqlite_error(&self.path);
        BUSY_LIMIT.with(|l| l.set(self.busy_timeout));
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        let mut conn = match idle {
            Some(conn) => conn,
            None => self.open_reader().map_err(&err)?,
        };
        let out = {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Deferred)
                .map_err(&err)?;
            let out = f(&Tx::sqlite(&tx));
            // Ending a read transaction cannot lose anything.
            drop(tx);
            out
        };
        self.readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(conn);
        out
    }

    /// A new read-only connection to the store (opened like the writing
    /// one: no link followed, never created).
    fn open_reader(&self) -> rusqlite::Result<Connection> {
        let flags = (rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW)
            - rusqlite::OpenFlags::SQLITE_OPEN_CREATE;
        let mut conn = Connection::open_with_flags(&self.path, flags)?;
        set_busy_handler(&mut conn)?;
        keep_statements(&conn)?;
        conn.execute_batch("PRAGMA query_only = ON; PRAGMA foreign_keys = ON;")?;
        Ok(conn)
    }
}

/// The ignore file written into a new [`STORE_DIR`]: git ignores
/// everything in it (the store, its WAL files, the apply lock), so `git
/// add -A` never commits roundtable's own files.
pub const GITIGNORE: &str = "*\n";

/// Create the store directory `dir` (`<root>/.roundtable`) with its
/// [`GITIGNORE`] as `.gitignore`; an existing `dir` is left as it is.
/// Every creator of the directory (the store, the state cache) goes
/// through here.
pub fn create_store_dir(dir: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(e),
    }
    // The directory was just created by this process, so nothing was
    // planted in it; `create_new` would refuse to follow anything that was.
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(".gitignore"))?;
    f.write_all(GITIGNORE.as_bytes())
}

/// Create a migrated store at `path` (absent): built under a temporary
/// name in `dir` and hard-linked into place, so no process ever opens a
/// half-created store. `false` when another process created it first.
/// How many compiled statements each connection keeps: room for every
/// query the store reads through the cache (about fifty), with their
/// variants.
const STATEMENT_CACHE: usize = 128;

/// Let a connection keep its compiled statements: a cache of
/// [`STATEMENT_CACHE`], and the query planner's stability guarantee.
/// Without the latter the bundled SQLite (built with `STAT4`) recompiles
/// a statement such as `… WHERE proposal_id = ?1 ORDER BY number` on every
/// bind, in case the value would change the plan; the store keeps no
/// statistics, so no plan depends on a value.
fn keep_statements(conn: &Connection) -> rusqlite::Result<()> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(())
}

fn create(dir: &Path, path: &Path) -> Result<bool, StoreError> {
    let tmp = tempfile::Builder::new()
        .prefix(".store.db.new-")
        .tempfile_in(dir)
        .map_err(|source| StoreError::Dir {
            path: dir.display().to_string(),
            source,
        })?;
    let err = sqlite_error(tmp.path());
    {
        let mut conn = Connection::open_with_flags(
            tmp.path(),
            rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )
        .map_err(&err)?;
        // A large before snapshot or patch is a quarter of the pages.
        conn.execute_batch("PRAGMA page_size = 16384; PRAGMA journal_mode = DELETE;")
            .map_err(&err)?;
        migrate(&mut conn, tmp.path(), true)?;
        // WAL is recorded in the file's header, so no opener of the new
        // store has to switch it: two first openers switching at once
        // both hold a read lock and want the exclusive one, and SQLite
        // refuses one of them with SQLITE_BUSY without waiting (waiting
        // could deadlock). Closing checkpoints and removes the `-wal`.
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(&err)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(err(rusqlite::Error::InvalidParameterName(format!(
                "journal_mode is {mode}, not wal"
            ))));
        }
        conn.close().map_err(|(_, e)| err(e))?;
    }
    tmp.as_file().sync_all().map_err(|source| StoreError::Dir {
        path: tmp.path().display().to_string(),
        source,
    })?;
    match std::fs::hard_link(tmp.path(), path) {
        Ok(()) => {
            // The new name survives a power loss before the first write.
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(source) => Err(StoreError::Dir {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// An existing `store.db` SQLite cannot open as a database, or that is
/// not a roundtable store.
fn invalid(path: &Path, source: rusqlite::Error) -> StoreError {
    match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => StoreError::NotAStore {
            path: path.display().to_string(),
            reason: "not an SQLite database".into(),
        },
        Some(rusqlite::ErrorCode::CannotOpen)
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) =>
        {
            StoreError::NotAFile {
                path: path.display().to_string(),
            }
        }
        _ => sqlite_error(path)(source),
    }
}

/// Bring the schema up to [`SCHEMA_VERSION`]. A store at version 0 (no
/// roundtable schema) is created only by [`create`]: an existing one is
/// refused.
fn migrate(conn: &mut Connection, path: &Path, new: bool) -> Result<(), StoreError> {
    let err = sqlite_error(path);
    // A migration may rebuild a table others reference (v6 rebuilds
    // `proposals`), which SQLite allows only with foreign keys off — a
    // pragma that is a no-op inside a transaction, so it is set around the
    // migrations, and each migration checks the keys itself before it
    // commits.
    conn.execute_batch("PRAGMA foreign_keys = OFF")
        .map_err(&err)?;
    let migrated = migrate_steps(conn, path, new);
    let restored = conn.execute_batch("PRAGMA foreign_keys = ON").map_err(&err);
    migrated.and(restored)
}

fn migrate_steps(conn: &mut Connection, path: &Path, new: bool) -> Result<(), StoreError> {
    let err = sqlite_error(path);
    loop {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(&err)?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(&err)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: path.display().to_string(),
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        if version == 0 && !new {
            return Err(StoreError::NotAStore {
                path: path.display().to_string(),
                reason: "it holds no roundtable schema (user_version 0)".into(),
            });
        }
        let index = usize::try_from(version).map_err(|_| StoreError::TooNew {
            path: path.display().to_string(),
            found: version,
            known: SCHEMA_VERSION,
        })?;
        tx.execute_batch(MIGRATIONS[index]).map_err(&err)?;
        let dangling: Option<String> = tx
            .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
            .optional()
            .map_err(&err)?;
        if let Some(table) = dangling {
            return Err(err(rusqlite::Error::InvalidParameterName(format!(
                "migration to version {} leaves a dangling foreign key in {table}",
                version + 1
            ))));
        }
        tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))
            .map_err(&err)?;
        tx.commit().map_err(&err)?;
    }
}

/// Decode a stored enum spelling (`risk`, `status`…) with serde.
pub fn enum_from_sql<T: serde::de::DeserializeOwned>(s: &str) -> sql::Result<T> {
    serde_json::from_value(serde_json::Value::String(s.to_owned())).map_err(SqlError::decode)
}

/// The stored spelling of an enum value.
pub fn enum_to_sql<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => unreachable!("enum values serialize as strings"),
    }
}

/// An actor stored as `kind:id`.
pub fn actor_from_sql(s: &str) -> sql::Result<Actor> {
    Actor::parse(s).map_err(SqlError::decode)
}

/// Decode a stored JSON column.
pub fn json_from_sql<T: serde::de::DeserializeOwned>(s: &str) -> sql::Result<T> {
    serde_json::from_str(s).map_err(SqlError::decode)
}

/// Store `data` in the blob table (once per content) and return its digest.
pub fn put_blob(tx: &Tx<'_>, data: &[u8]) -> sql::Result<Digest> {
    let digest = Digest::of(data);
    put_blob_digested(tx, &digest, data)?;
    Ok(digest)
}

/// [`put_blob`] of bytes whose digest the caller has just computed from
/// them (`digest` must be [`Digest::of`] `data`).
pub fn put_blob_digested(tx: &Tx<'_>, digest: &Digest, data: &[u8]) -> sql::Result<()> {
    debug_assert_eq!(*digest, Digest::of(data));
    tx.execute(
        "INSERT INTO blobs (digest, size, data) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
        params![digest.to_string(), data.len() as i64, data],
    )?;
    Ok(())
}

/// What is wrong with a blob a record names.
#[derive(Debug)]
pub enum BlobFault {
    /// No blob has that digest.
    Missing,
    /// The stored bytes hash to something else.
    Mismatch,
}

/// The bytes a record names by `digest`, read and checked against it: the
/// one way anything reads back a stored blob.
pub fn verified_blob(conn: &Tx<'_>, digest: &Digest) -> sql::Result<Result<Vec<u8>, BlobFault>> {
    Ok(match get_blob(conn, digest)? {
        None => Err(BlobFault::Missing),
        Some((bytes, read)) if read == *digest => Ok(bytes),
        Some(_) => Err(BlobFault::Mismatch),
    })
}

/// The bytes stored under `digest`, with the digest of what was read (the
/// caller compares it with `digest`; [`verified_blob`] does). Streamed from the table in pieces,
/// hashed as they arrive: a large blob is copied once, not assembled by
/// SQLite first.
fn get_blob(conn: &Tx<'_>, digest: &Digest) -> sql::Result<Option<(Vec<u8>, Digest)>> {
    use sha2::Digest as _;
    use std::io::Read as _;
    let Some(sqlite) = conn.as_sqlite() else {
        // PostgreSQL sends a `bytea` whole; hashed once it arrived.
        let data: Option<Vec<u8>> = conn
            .query_row(
                "SELECT data FROM blobs WHERE digest = ?1",
                [digest.to_string()],
                |r| r.get(0),
            )
            .optional()?;
        return Ok(data.map(|d| {
            let read = Digest::of(&d);
            (d, read)
        }));
    };
    let Some((rowid, size)) = conn
        .query_row(
            "SELECT rowid, size FROM blobs WHERE digest = ?1",
            [digest.to_string()],
            |r| Ok((r.get::<i64>(0)?, r.get::<i64>(1)?)),
        )
        .optional()?
    else {
        return Ok(None);
    };
    let mut blob = sqlite.blob_open(rusqlite::MAIN_DB, "blobs", "data", rowid, true)?;
    let mut data = vec![0u8; usize::try_from(size).unwrap_or(0).min(blob.len())];
    let mut hasher = sha2::Sha256::new();
    const PIECE: usize = 1 << 20;
    let mut at = 0;
    while at < data.len() {
        let end = (at + PIECE).min(data.len());
        blob.read_exact(&mut data[at..end])
            .map_err(SqlError::decode)?;
        hasher.update(&data[at..end]);
        at = end;
    }
    Ok(Some((data, Digest::from_bytes(hasher.finalize().into()))))
}

/// The digest a chain starts from: the predecessor of event 1.
pub const GENESIS_DIGEST: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// A state change to record: its kind is its data's.
pub struct NewEvent<'a> {
    /// Who did it.
    pub actor: &'a Actor,
    /// The id of the record it happened to.
    pub subject: &'a str,
    /// The proposal it concerns, if any.
    pub proposal_id: Option<&'a str>,
    /// What happened, with its data.
    pub data: crate::model::EventData,
    /// When.
    pub at: Timestamp,
}

/// The hashed fields of one stored event.
pub struct EventFields<'a> {
    /// Its place in the chain.
    pub seq: i64,
    /// Its kind's spelling.
    pub kind: &'a str,
    /// The actor's kind's spelling.
    pub actor_kind: &'a str,
    /// The actor's id.
    pub actor_id: &'a str,
    /// The id of the record it happened to.
    pub subject: &'a str,
    /// The proposal it concerns, if any.
    pub proposal_id: Option<&'a str>,
    /// The event's data as stored (JSON text).
    pub data: &'a str,
    /// When, in milliseconds since the epoch.
    pub at: i64,
    /// The digest of the event before it.
    pub prev_digest: &'a str,
}

impl EventFields<'_> {
    /// The event's digest: SHA-256 over its canonical JSON (sorted keys),
    /// which includes its predecessor's digest.
    pub fn digest(&self) -> String {
        let canonical = serde_json::json!({
            "seq": self.seq,
            "kind": self.kind,
            "actor": {"kind": self.actor_kind, "id": self.actor_id},
            "subject": self.subject,
            "proposal_id": self.proposal_id,
            "data": self.data,
            "at": self.at,
            "prev_digest": self.prev_digest,
        });
        let hash = Sha256::digest(crate::json::canonical(&canonical).as_bytes());
        format!("sha256:{}", crate::hex::encode(&hash))
    }
}

/// The head of the chain as `tx` sees it: the last event's seq and
/// digest, or `(0, GENESIS_DIGEST)` for an empty log.
pub fn chain_head(tx: &Tx<'_>) -> sql::Result<(i64, String)> {
    let last: Option<(i64, String)> = tx
        .query_row(
            "SELECT seq, digest FROM events ORDER BY seq DESC LIMIT 1",
            params![],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(last.unwrap_or_else(|| (0, GENESIS_DIGEST.to_owned())))
}

/// Append an event to the chain; returns its `seq`.
pub fn append_event(tx: &Tx<'_>, event: &NewEvent<'_>) -> sql::Result<i64> {
    let (last, prev) = chain_head(tx)?;
    let seq = last + 1;
    let kind = event.data.kind();
    let data = event.data.stored_text();
    let digest = EventFields {
        seq,
        kind: kind.as_str(),
        actor_kind: event.actor.kind.as_str(),
        actor_id: event.actor.id.as_str(),
        subject: event.subject,
        proposal_id: event.proposal_id,
        data: &data,
        at: event.at.0,
        prev_digest: &prev,
    }
    .digest();
    tx.execute("INSERT INTO events (seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", params![
            seq,
            kind.as_str(),
            event.actor.kind.as_str(),
            event.actor.id.as_str(),
            event.subject,
            event.proposal_id,
            data,
            event.at.0,
            prev,
            digest
        ])?;
    APPENDED.with_borrow_mut(|a| {
        a.push(watch::Notice {
            seq,
            kind: kind.as_str().to_owned(),
            proposal_id: event.proposal_id.map(str::to_owned),
            actor_kind: event.actor.kind.as_str().to_owned(),
            actor_id: event.actor.id.as_str().to_owned(),
        });
    });
    Ok(seq)
}

thread_local! {
    /// The events the write transaction running on this thread appended
    /// so far: [`Store::write`] empties it before `f` and publishes it
    /// once the transaction committed (a write holds the writing
    /// connection and runs `f` on its own thread, so nothing else adds
    /// to it meanwhile).
    static APPENDED: std::cell::RefCell<Vec<watch::Notice>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read's statements are compiled once per connection, not on every
    /// call (nor on every bind: the planner's stability guarantee).
    #[test]
    fn reads_reuse_their_compiled_statements() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        let sql = "SELECT number FROM revisions WHERE proposal_id = ?1 ORDER BY number";
        for (round, id) in ["p1", "p2", "p3"].into_iter().enumerate() {
            let (reprepared, runs) = store
                .read(|tx| {
                    let e = |e: rusqlite::Error| store.err()(e.into());
                    let conn = tx.as_sqlite().expect("an SQLite store");
                    let mut stmt = conn.prepare_cached(sql).map_err(e)?;
                    let rows: Vec<i64> = stmt
                        .query_map([id], |r| r.get(0))
                        .and_then(|rows| rows.collect())
                        .map_err(e)?;
                    assert!(rows.is_empty());
                    Ok::<_, StoreError>((
                        stmt.get_status(rusqlite::StatementStatus::RePrepare),
                        stmt.get_status(rusqlite::StatementStatus::Run),
                    ))
                })
                .expect("read");
            assert_eq!(reprepared, 0, "round {round}: recompiled on bind");
            assert_eq!(
                runs,
                round as i32 + 1,
                "round {round}: the statement was not kept"
            );
        }
    }

    #[test]
    fn creates_migrates_once_and_refuses_newer_schema() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        assert!(store.created());
        drop(store);
        let again = Store::open(dir.path(), &StoreOptions::default()).expect("reopen");
        assert!(!again.created());
        again
            .write(|tx| {
                tx.execute_batch(&format!("PRAGMA user_version = {}", SCHEMA_VERSION + 1))
                    .map_err(again.err())
            })
            .expect("bump version");
        drop(again);
        let e = Store::open(dir.path(), &StoreOptions::default()).expect_err("too new");
        assert_eq!(e.code(), ErrorCode::IncompatibleStore);
    }

    /// New stores use 16 KiB pages (a large before snapshot or patch is a
    /// quarter of the pages); blobs come back whole and hashed.
    #[test]
    fn new_stores_use_16_kib_pages_and_blobs_stream_back_hashed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let (size, digest, back) = store
            .write(|tx| {
                let e = store.err();
                let size: i64 = tx
                    .query_row("PRAGMA page_size", params![], |r| r.get(0))
                    .map_err(&e)?;
                let digest = put_blob(tx, &big).map_err(&e)?;
                let back = get_blob(tx, &digest).map_err(&e)?;
                Ok::<_, StoreError>((size, digest, back))
            })
            .expect("blob round trip");
        assert_eq!(size, 16384);
        let (bytes, read) = back.expect("stored");
        assert_eq!(read, digest);
        assert_eq!(bytes, big);
        let missing = Digest::of(b"never stored");
        let none = store
            .read(|tx| get_blob(tx, &missing).map_err(store.err()))
            .expect("reads");
        assert!(none.is_none());
    }

    #[test]
    fn refuses_a_linked_store_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join(STORE_DIR)).expect("link");
        let e = Store::open(dir.path(), &StoreOptions::default()).expect_err("link");
        assert_eq!(e.code(), ErrorCode::PathEscape);
        assert!(std::fs::read_dir(elsewhere.path())
            .expect("ls")
            .next()
            .is_none());
    }

    #[test]
    fn an_existing_store_file_that_is_not_a_store_is_refused_and_kept() {
        for (what, bytes) in [
            ("empty", &b""[..]),
            ("not sqlite", &b"hello, this is not a database at all............................................................................"[..]),
        ] {
            let dir = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir(dir.path().join(STORE_DIR)).expect("mkdir");
            let db = dir.path().join(STORE_DIR).join(DB_FILE);
            std::fs::write(&db, bytes).expect("write");
            let e = Store::open(dir.path(), &StoreOptions::default()).expect_err(what);
            assert_eq!(e.code(), ErrorCode::IncompatibleStore, "{what}: {e}");
            assert_eq!(std::fs::read(&db).expect("kept"), bytes, "{what}");
        }
        // An SQLite database without the schema is not a store either.
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(STORE_DIR)).expect("mkdir");
        let db = dir.path().join(STORE_DIR).join(DB_FILE);
        roundtable_sqlite_locks::install();
        Connection::open(&db)
            .expect("sqlite")
            .execute_batch("CREATE TABLE other (x INTEGER)")
            .expect("a table");
        let e = Store::open(dir.path(), &StoreOptions::default()).expect_err("foreign");
        assert_eq!(e.code(), ErrorCode::IncompatibleStore, "{e}");
    }

    #[test]
    fn a_linked_store_file_or_wal_is_path_escape_and_nothing_is_created_outside() {
        for linked in [DB_FILE, "store.db-wal", "store.db-shm"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let elsewhere = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir(dir.path().join(STORE_DIR)).expect("mkdir");
            if linked != DB_FILE {
                // A real store, then its WAL or shared memory replaced by a link.
                drop(Store::open(dir.path(), &StoreOptions::default()).expect("open"));
                let _ = std::fs::remove_file(dir.path().join(STORE_DIR).join(linked));
            }
            std::os::unix::fs::symlink(
                elsewhere.path().join("target"),
                dir.path().join(STORE_DIR).join(linked),
            )
            .expect("link");
            let e = Store::open(dir.path(), &StoreOptions::default()).expect_err(linked);
            assert_eq!(e.code(), ErrorCode::PathEscape, "{linked}: {e}");
            assert!(
                std::fs::read_dir(elsewhere.path())
                    .expect("ls")
                    .next()
                    .is_none(),
                "{linked}: something was created outside the root"
            );
        }
    }

    #[test]
    fn processes_creating_one_store_at_once_all_open_the_same_store() {
        roundtable_sqlite_locks::install();
        for _ in 0..20 {
            let dir = tempfile::tempdir().expect("tempdir");
            let opened: Vec<bool> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| Store::open(dir.path(), &StoreOptions::default())))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("joined").expect("opened").created())
                    .collect()
            });
            assert_eq!(opened.iter().filter(|c| **c).count(), 1, "{opened:?}");
            let left: Vec<_> = std::fs::read_dir(dir.path().join(STORE_DIR))
                .expect("ls")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".store.db.new-"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
    }

    #[test]
    fn processes_first_opening_a_store_in_rollback_mode_all_switch_it_to_wal() {
        // Stores made before creation switched to WAL are in rollback
        // mode until their first open; openers racing to switch all open.
        roundtable_sqlite_locks::install();
        for _ in 0..20 {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = PathBuf::from(
                Store::open(dir.path(), &StoreOptions::default())
                    .expect("create")
                    .location(),
            );
            Connection::open(&path)
                .expect("open")
                .query_row("PRAGMA journal_mode = DELETE", [], |r| {
                    r.get::<_, String>(0)
                })
                .expect("rollback mode");
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| Store::open(dir.path(), &StoreOptions::default())))
                    .collect();
                for h in handles {
                    assert!(!h.join().expect("joined").expect("opened").created());
                }
            });
            let mode: String = Connection::open(&path)
                .expect("open")
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .expect("mode");
            assert_eq!(mode, "wal");
        }
    }

    #[test]
    fn events_are_append_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path(), &StoreOptions::default()).expect("open");
        let actor = Actor::orchestrator(roundtable_base::id::Id::new("host").expect("id"));
        store
            .write(|tx| {
                append_event(
                    tx,
                    &NewEvent {
                        actor: &actor,
                        subject: "x",
                        proposal_id: None,
                        data: crate::model::TaskCreatedData { title: "x".into() }.into(),
                        at: Timestamp(1),
                    },
                )
                .map_err(store.err())
            })
            .expect("append");
        let e = store
            .write(|tx| {
                tx.execute("UPDATE events SET kind = 'forged'", params![])
                    .map_err(store.err())
            })
            .expect_err("update refused");
        assert_eq!(e.code(), ErrorCode::Database);
        assert!(e.to_string().contains("append-only"), "{e}");
    }
}
