//! [`Engine`]: a workspace and its store, and the one entry point every
//! front end calls — [`Engine::call`].

use crate::actor::Actor;
use crate::clock::{Clock, SystemClock, Timestamp};
use crate::id::IdGenerator;
use crate::operations::ToolError;
use crate::store::{Durability, Store, StoreOptions};
use crate::workspace::Workspace;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How to open an engine.
#[derive(Clone)]
pub struct EngineOptions {
    /// Flush policy for the store.
    pub durability: Durability,
    /// How long a write waits for another process's write.
    pub busy_timeout: Duration,
    /// The largest patch or edit plan accepted, in bytes.
    pub max_patch_bytes: usize,
    /// The most files one revision may touch.
    pub max_files: usize,
    /// The most bytes the `GIT binary patch` hunks of one patch may inflate
    /// to, in all; checked before inflating (see
    /// [`ParseOptions::max_inflated_bytes`](crate::diff::ParseOptions::max_inflated_bytes)).
    pub max_inflated_bytes: u64,
    /// The clock every timestamp and expiry is read from.
    pub clock: Arc<dyn Clock>,
    /// Where the governance store is: `None` for the embedded SQLite
    /// store in `<root>/.roundtable/`, or a PostgreSQL URL
    /// (`postgres://user@host/db?schema=NAME`) that several hosts, each
    /// with its own clone, share.
    pub store: Option<String>,
    /// The longest one statement may run on a PostgreSQL store.
    pub statement_timeout: Duration,
}

impl Default for EngineOptions {
    fn default() -> EngineOptions {
        EngineOptions {
            durability: Durability::Full,
            busy_timeout: Duration::from_secs(10),
            max_patch_bytes: 16 << 20,
            max_files: 10_000,
            max_inflated_bytes: crate::diff::DEFAULT_MAX_INFLATED_BYTES,
            clock: Arc::new(SystemClock),
            store: None,
            statement_timeout: Duration::from_secs(30),
        }
    }
}

impl EngineOptions {
    /// Options from JSON, as the C ABI and other hosts pass them:
    /// `{"durability": "full"|"normal"|"off", "busy_timeout_ms": N,
    /// "max_patch_bytes": N, "max_files": N, "max_inflated_bytes": N,
    /// "store": "postgres://…", "statement_timeout_ms": N}`,
    /// every key optional, unknown keys refused (`invalid_argument` naming
    /// the field).
    pub fn from_json(value: &Value) -> Result<EngineOptions, ToolError> {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            durability: Option<String>,
            busy_timeout_ms: Option<u64>,
            max_patch_bytes: Option<usize>,
            max_files: Option<usize>,
            max_inflated_bytes: Option<u64>,
            store: Option<String>,
            statement_timeout_ms: Option<u64>,
        }
        if !value.is_object() {
            return Err(ToolError::invalid_argument(
                "",
                "the options must be a JSON object",
            ));
        }
        let raw: Raw = serde_path_to_error::deserialize(value.clone()).map_err(|e| {
            let path = e.path().to_string();
            ToolError::invalid_argument(if path == "." { "" } else { &path }, e.inner())
        })?;
        let mut options = EngineOptions::default();
        if let Some(d) = raw.durability {
            options.durability = Durability::parse(&d).ok_or_else(|| {
                ToolError::invalid_argument(
                    "durability",
                    format!("{d:?} is not full, normal or off"),
                )
            })?;
        }
        if let Some(ms) = raw.busy_timeout_ms {
            options.busy_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = raw.max_patch_bytes {
            options.max_patch_bytes = n;
        }
        if let Some(n) = raw.max_files {
            options.max_files = n;
        }
        if let Some(n) = raw.max_inflated_bytes {
            options.max_inflated_bytes = n;
        }
        if let Some(url) = raw.store {
            crate::store::shown_url(&url)
                .map_err(|why| ToolError::invalid_argument("store", why))?;
            options.store = Some(url);
        }
        if let Some(ms) = raw.statement_timeout_ms {
            if ms == 0 {
                return Err(ToolError::invalid_argument(
                    "statement_timeout_ms",
                    "must be at least 1",
                ));
            }
            options.statement_timeout = Duration::from_millis(ms);
        }
        Ok(options)
    }
}

impl EngineOptions {
    /// How the engine reads patches: strip level 1 and these options'
    /// limits.
    pub fn parse_options(&self) -> crate::diff::ParseOptions {
        crate::diff::ParseOptions {
            max_inflated_bytes: self.max_inflated_bytes,
            ..crate::diff::ParseOptions::default()
        }
    }
}

impl std::fmt::Debug for EngineOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineOptions")
            .field("durability", &self.durability)
            .field("busy_timeout", &self.busy_timeout)
            .field("max_patch_bytes", &self.max_patch_bytes)
            .field("max_files", &self.max_files)
            .field("max_inflated_bytes", &self.max_inflated_bytes)
            .field("store", &self.store.as_deref().map(store_shown))
            .field("statement_timeout", &self.statement_timeout)
            .finish_non_exhaustive()
    }
}

/// A store URL as it may be shown (no password).
fn store_shown(url: &str) -> String {
    crate::store::shown_url(url).unwrap_or_else(|_| "(invalid)".to_owned())
}

/// A governed workspace: the repository root, its store and the tools.
///
/// An engine is `Send + Sync`: one engine may serve several threads (calls
/// are serialized on its store connection), and several engines — in this
/// or other processes — may open one workspace at once. A waiting call
/// (`events.wait`, `claim.acquire` with `wait_ms`) holds neither the
/// connection nor a transaction while it sleeps, so the other threads'
/// calls go on meanwhile.
///
/// ```
/// use roundtable::{Actor, Engine, EngineOptions, Id};
/// use serde_json::json;
///
/// let dir = tempfile::tempdir()?;
/// let engine = Engine::open(dir.path(), EngineOptions::default())?;
/// let host = Actor::orchestrator(Id::new("host")?);
/// let out = engine.call("task.create", json!({"task_id": "t1", "title": "Fix the parser"}), &host)?;
/// assert_eq!(out["task"]["id"], "t1");
///
/// // Unknown keys are refused, naming the field.
/// let err = engine
///     .call("task.create", json!({"task_id": "t2", "title": "x", "colour": "red"}), &host)
///     .unwrap_err();
/// assert_eq!(err.code().as_str(), "invalid_argument");
/// assert_eq!(err.details()["field"], "colour");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Engine {
    root: PathBuf,
    workspace: Workspace,
    /// Closed only in the process that opened it (see `Drop`).
    store: Arc<Store>,
    /// The process that opened the engine: a `fork()` child that
    /// inherited it is refused every call ([`Engine::check_process`]).
    pid: u32,
    options: EngineOptions,
    ids: IdGenerator,
    /// What the layers above keep per engine (the tool layer's claim
    /// queue and inbox memo), each under its own type: the engine holds
    /// them without naming them.
    extensions: Extensions,
    unrecovered: Vec<crate::apply::Unrecovered>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Open the workspace at `root`, creating its store when absent, and
    /// recover every transaction a crashed applier left `applying` (unless
    /// another live process holds the apply lock: then it is in flight).
    pub fn open(root: &Path, options: EngineOptions) -> Result<Engine, ToolError> {
        Engine::open_unchecked(root, options)
    }

    fn open_unchecked(root: &Path, options: EngineOptions) -> Result<Engine, ToolError> {
        if !root.is_dir() {
            return Err(ToolError::invalid_argument(
                "root",
                format!("{} is not a directory", root.display()),
            ));
        }
        let workspace = Workspace::open(root)?;
        let store = Store::open(
            root,
            &StoreOptions {
                durability: options.durability,
                busy_timeout: options.busy_timeout,
                url: options.store.clone(),
                statement_timeout: options.statement_timeout,
            },
        )?;
        // A build without git cannot land what this workspace lands.
        #[cfg(not(feature = "git"))]
        crate::operations::workspace::refuse_git_mode(&store)?;
        // Before anything else runs: finish what a crashed applier left.
        // What cannot be finished is recorded and reported, never a reason
        // not to open (`Engine::unrecovered`).
        let mut unrecovered = Vec::new();
        crate::apply::recover(
            crate::apply::Env {
                store: &store,
                workspace: &workspace,
                durability: options.durability,
                clock: options.clock.as_ref(),
                patience: options.busy_timeout,
            },
            &mut unrecovered,
        )?;
        let mut engine = Engine {
            root: root.to_path_buf(),
            workspace,
            store: Arc::new(store),
            pid: std::process::id(),
            options,
            ids: IdGenerator::default(),
            extensions: Extensions::default(),
            unrecovered: Vec::new(),
        };
        // A git-mode apply that moved its branch before it could record
        // its outcome landed: bring the store forward.
        unrecovered.extend(crate::operations::transactions::finish_landed(&engine)?);
        engine.unrecovered = unrecovered;
        Ok(engine)
    }

    /// The transactions this open's recovery could not finish (bring a
    /// landing forward, or put an unfinished apply back): each left
    /// `applying`, its failure recorded as a failed `recovered` phase
    /// (`transaction.phases`), and its paths reported by
    /// `transaction.recovery`. The workspace opens all the same. The way
    /// out: remove the cause the failure names (an unreachable remote, a
    /// branch that cannot follow the remote's, a path that cannot be
    /// written), then open the workspace again (any CLI command does) or
    /// apply: both retry every transaction left `applying`.
    pub fn unrecovered(&self) -> &[crate::apply::Unrecovered] {
        &self.unrecovered
    }

    /// A handle that makes every call as `actor`: the typed API, one
    /// method per tool (see [`crate::session`]).
    pub fn session(&self, actor: Actor) -> crate::session::Session<'_> {
        crate::session::Session::new(self, actor)
    }

    /// `inherited_engine` unless this is the process that opened the
    /// engine. A `fork()` child inherits the engine's memory but not the
    /// threads that held its locks (a call would wait on them forever),
    /// and its descriptors share the parent's open files and so the
    /// parent's store locks (a call would write beside the parent's). So
    /// every call checks the pid first, before it takes any lock, and a
    /// child's call does nothing; the child opens an engine of its own.
    pub fn check_process(&self) -> Result<(), ToolError> {
        let pid = std::process::id();
        if pid == self.pid {
            return Ok(());
        }
        Err(ToolError::new(
            format!(
                "this engine was opened by process {} and process {pid} inherited it across \
                 fork(): nothing was done; open a new engine in this process",
                self.pid
            ),
            crate::operations::details::InheritedEngineDetails {
                opened_by_pid: u64::from(self.pid),
                pid: u64::from(pid),
            },
        ))
    }

    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the store is, its schema version, and whether this open
    /// created it.
    pub fn store_info(&self) -> crate::store::StoreInfo {
        self.store.info()
    }

    /// The store.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The contained view of the repository (crate-private: every write
    /// to it is a governed apply).
    pub(crate) fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The options the engine was opened with.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// The engine clock's time.
    pub fn now(&self) -> Timestamp {
        self.options.clock.now()
    }

    /// What the transaction engine works with.
    pub(crate) fn tx_env(&self) -> crate::apply::Env<'_> {
        crate::apply::Env {
            store: &self.store,
            workspace: &self.workspace,
            durability: self.options.durability,
            clock: self.options.clock.as_ref(),
            patience: self.options.busy_timeout,
        }
    }

    pub(crate) fn ids(&self) -> &IdGenerator {
        &self.ids
    }

    /// What the advisory staleness checks (`inbox.list`'s and
    /// `inbox.wait`'s `stale`) did with the engine's digest memo since it
    /// opened: how many touched files they read and hashed, and how many
    /// digests a fresh `lstat` let them reuse
    /// ([`Workspace::meta_advisory`](crate::workspace::Workspace::meta_advisory)).
    pub fn advisory_digest_stats(&self) -> crate::workspace::DigestMemoStats {
        self.extension::<crate::workspace::DigestMemo>().stats()
    }

    /// What the reads that callers asking at once share did since the
    /// engine opened: `proposal.status` (by proposal) and the inbox's
    /// staleness check (by revision), each computation started after
    /// every caller it answers asked (nothing remembered past them).
    pub fn shared_read_stats(&self) -> SharedReadStats {
        SharedReadStats {
            status: self
                .extension::<crate::operations::review::StatusFlights>()
                .0
                .stats(),
            stale: self
                .extension::<crate::operations::inbox::StaleFlights>()
                .0
                .stats(),
        }
    }

    /// The engine's one value of type `T`, made (`T::default()`) on first
    /// use: state a layer above keeps for the engine's lifetime, such as
    /// the tool layer's claim queue and inbox memo.
    pub(crate) fn extension<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.extensions.get_or_default()
    }
}

/// [`Engine::shared_read_stats`]: computations run and answers shared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedReadStats {
    /// `proposal.status`.
    pub status: crate::operations::flights::FlightStats,
    /// `inbox.list`'s and `inbox.wait`'s staleness check.
    pub stale: crate::operations::flights::FlightStats,
}

/// Values kept per engine, one per type ([`Engine::extension`]).
#[derive(Default)]
struct Extensions(
    std::sync::Mutex<
        std::collections::HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>,
    >,
);

impl Extensions {
    fn get_or_default<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let value = map
            .entry(std::any::TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()))
            .clone();
        value
            .downcast::<T>()
            .expect("each entry is stored under its own type's id")
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions").finish_non_exhaustive()
    }
}

impl Drop for Engine {
    /// Close the store — in the process that opened the engine only. A
    /// `fork()` child leaves the inherited store alone (its memory is
    /// simply not freed): closing it would wait on locks held by threads
    /// that do not exist in the child, and its SQLite connections would
    /// checkpoint or remove the parent's WAL through the shared open files.
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            // One reference never released: the store is never dropped.
            std::mem::forget(Arc::clone(&self.store));
        }
    }
}
