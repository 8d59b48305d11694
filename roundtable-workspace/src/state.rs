//! The workspace state: one hash of the whole tree, cheap to recompute.
//!
//! [`compute_state`] walks the tree under a root and hashes every entry into
//! a [`StateHash`] (`state:sha256:<hex>`), combined with git `HEAD` when the
//! root is a git repository. Two trees have the same state exactly when they
//! hold the same paths with the same kinds, executable bits and bytes, at the
//! same `HEAD` commit. Timestamps, owners and other permission bits are not
//! part of the state: `touch` or rewriting a file with the same bytes leaves
//! it unchanged.
//!
//! Like git's index, a persistent **stat cache** in
//! `<root>/.roundtable/state-cache` remembers each file's `lstat` fields and
//! digest, so a warm run reads and hashes only the files whose stat changed.
//!
//! # What is in the state
//!
//! - Every regular file: its path, whether the owner's executable bit
//!   (`mode & 0o100`, git's rule) is set, and the digest of its bytes
//!   ([`Digest`], `blob:sha256:`).
//! - Every symbolic link: its path and the digest of its target string. Links
//!   are never followed: a link to a directory outside the root contributes
//!   one entry, its target, and nothing under it.
//! - Git `HEAD` (the commit id, read in-process), or "none".
//!
//! Not in the state: directories themselves (an empty directory is
//! invisible, as in git), FIFOs, sockets and device nodes, and every entry
//! named `.git` or `.roundtable` (ASCII case-insensitively, as
//! [`RepoPath`](crate::RepoPath) refuses them), at any depth and whatever
//! its type: the repository's own metadata and store at the top, and nested
//! submodules or worktrees (a `.git` directory or file) further down. The
//! state therefore covers exactly the paths a changeset can name, plus the
//! commit they sit on.
//!
//! Nor is any path git ignores: `.gitignore` files at every level (applied
//! even when the root is not a git repository), and in a repository
//! `info/exclude` and the file `core.excludesFile` names (the repository's
//! `config`, else the user's global configuration), with git's precedence;
//! plus [`StateOptions::ignore`] (the policy's `[workspace] ignore`). An
//! ignored directory is not walked. A `.gitignore` is read through the
//! walk's directory descriptor, never through a link. A changeset may still
//! name an ignored path; the state just does not count it.
//!
//! # The encoding
//!
//! The entries are sorted by their `/`-separated path bytes and fed to
//! SHA-256 in an encoding where every variable-length field is
//! length-prefixed, so no two different trees produce the same byte stream:
//!
//! ```text
//! "roundtable-state\0" 0x01                     tag and encoding version
//! 0x00 | 0x01 u8:len hex                        git HEAD: none | commit id (ASCII hex)
//! u64:count                                     number of entries (little endian)
//! count × ( u64:len path  kind  [32]digest )    kind: b'f' file, b'x' executable, b'l' symlink
//! ```
//!
//! # The stat cache and the racy-timestamp rule
//!
//! The cache maps each regular file's path to its `(size, mtime ns,
//! ctime ns, inode, device, st_mode)` and digest; see [`CACHE_FILE`] for the
//! format. A cached digest is reused only when every one of those fields is
//! unchanged **and** the file's mtime and ctime are both strictly older than
//! the cache file's own mtime (the time it was written). A file changed in
//! the same timestamp tick as the cache write could otherwise keep an
//! identical stat and a stale digest — git's "racy timestamp" problem — so
//! such entries are re-hashed (counted in [`StateStats::racy`]), and become
//! trusted once a later cache write is strictly newer. A cache that is
//! missing, truncated, corrupt (checksum), of another version or not a
//! regular file is ignored and rebuilt, never trusted. The cache is written
//! to a temporary file in `.roundtable/` and renamed over the old one, so
//! readers see the old or the new cache, never half of one; it is not
//! fsynced (losing it only costs a rehash).
//!
//! # Concurrent changes and containment
//!
//! A file that disappears or is replaced (different inode, or no longer a
//! regular file) between being listed and being read makes the run start
//! over, up to three times in all, then fail with
//! [`StateError::Unstable`]. Nothing below the root is reached through a
//! symbolic link, even one swapped in while the walk runs: every directory
//! is opened one component at a time from the root's descriptor with
//! `O_NOFOLLOW | O_DIRECTORY`, every file with `openat(…, O_NOFOLLOW |
//! O_NONBLOCK)` and checked with `fstat` against the listing.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("a.txt"), b"one\n")?;
//! let first = roundtable_workspace::state::compute_state(dir.path())?;
//! assert_eq!(first.files, 1);
//! assert_eq!(first.git_head, None);
//!
//! std::fs::write(dir.path().join("a.txt"), b"two\n")?;
//! let second = roundtable_workspace::state::compute_state(dir.path())?;
//! assert_ne!(first.state, second.state);
//! assert_eq!(second.stats.hashed, 1);
//! # Ok(()) }
//! ```

mod cache;
mod git;
pub use git::is_bare_repository;
mod ignore;
mod walk;

use crate::policy::IgnoreList;
use crate::{Digest, ErrorCode};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use std::io;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

pub use cache::CACHE_FILE;
pub use roundtable_base::state_hash::{StateHash, StateHashError, STATE_PREFIX};

/// How many times a run starts over when files change under it.
const MAX_ATTEMPTS: u32 = 3;

/// The result of [`compute_state`].
///
/// Serializes as `{"state": "state:sha256:…", "git_head": "<hex>"|null,
/// "files": N}`; the [`stats`](WorkspaceState::stats) of the run are not
/// serialized.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkspaceState {
    /// The state hash of the tree and `HEAD`.
    pub state: StateHash,
    /// The commit `HEAD` points at, as lowercase hex (40 digits, or 64 in a
    /// SHA-256 repository); `None` when the root is not a git repository or
    /// its current branch has no commit yet.
    pub git_head: Option<String>,
    /// The number of entries in the state: regular files and symbolic links.
    pub files: usize,
    /// What this run did (how many files it read, whether the cache was
    /// used).
    #[serde(skip)]
    pub stats: StateStats,
}

/// What one [`compute_state`] run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateStats {
    /// Regular files whose bytes were read and hashed in this run.
    pub hashed: usize,
    /// The number of bytes read and hashed.
    pub bytes_hashed: u64,
    /// Regular files whose digest was taken from the stat cache.
    pub reused: usize,
    /// Files whose cached stat matched but which were re-hashed anyway under
    /// the racy-timestamp rule (included in `hashed`).
    pub racy: usize,
    /// Symbolic links (their target strings are hashed on every run).
    pub symlinks: usize,
    /// What happened to the stat cache on load.
    pub cache: CacheStatus,
    /// Whether a new cache file was written.
    pub cache_written: bool,
    /// Why writing the cache failed, if it did (the state is still correct:
    /// the next run just hashes more).
    pub cache_write_error: Option<String>,
    /// How many walks were needed (more than one when files changed during
    /// a walk).
    pub attempts: u32,
}

/// What happened to the stat cache when a run started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", content = "reason")]
pub enum CacheStatus {
    /// The cache was not consulted ([`CacheMode::Off`] or
    /// [`CacheMode::Rebuild`]).
    #[default]
    NotUsed,
    /// There was no cache file.
    Absent,
    /// The cache was read and its entries used (subject to the stat and
    /// racy-timestamp checks).
    Loaded,
    /// The cache file exists but was ignored: the reason says why (corrupt,
    /// unknown version, not a regular file…).
    Ignored(String),
}

/// Whether [`compute_state_with`] uses the stat cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Hash every file; neither read nor write the cache.
    Off,
    /// Read the cache, hash only what changed, write the updated cache.
    #[default]
    ReadWrite,
    /// Read the cache, hash only what changed, never write it: computing
    /// the state changes no file.
    ReadOnly,
    /// Ignore any existing cache, hash every file, write a fresh cache.
    Rebuild,
}

impl CacheMode {
    /// Whether the cache is read.
    fn reads(self) -> bool {
        matches!(self, CacheMode::ReadWrite | CacheMode::ReadOnly)
    }

    /// Whether a cache that no longer matches the tree is written anew.
    fn writes(self) -> bool {
        matches!(self, CacheMode::ReadWrite | CacheMode::Rebuild)
    }
}

/// Options for [`compute_state_with`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StateOptions<'a> {
    /// Whether to use the stat cache.
    pub cache: CacheMode,
    /// Worker threads for walking and hashing; `0` means one per available
    /// core (at most 8).
    pub threads: usize,
    /// Patterns to leave out besides git's ignore rules (the policy's
    /// `[workspace] ignore`).
    pub ignore: Option<&'a IgnoreList>,
}

impl From<CacheMode> for StateOptions<'_> {
    fn from(cache: CacheMode) -> Self {
        StateOptions {
            cache,
            threads: 0,
            ignore: None,
        }
    }
}

/// Why the state could not be computed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The operating system refused a read (or the root is missing).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The root is not a directory.
    #[error("{}: not a directory", path.display())]
    NotADirectory {
        /// The root.
        path: PathBuf,
    },
    /// Files kept changing while the tree was being read.
    #[error("{}: changed while the workspace state was being computed ({attempts} attempts)", path.display())]
    Unstable {
        /// The last path seen changing.
        path: PathBuf,
        /// How many walks were tried.
        attempts: u32,
    },
    /// The git metadata under the root could not be read.
    #[error("{}: {reason}", path.display())]
    Git {
        /// The git file (`.git`, `HEAD`, a ref, `packed-refs`).
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
}

impl StateError {
    /// [`ErrorCode::InvalidArgument`] when the root is not a directory,
    /// [`ErrorCode::Io`] otherwise.
    pub fn code(&self) -> ErrorCode {
        match self {
            StateError::NotADirectory { .. } => ErrorCode::InvalidArgument,
            StateError::Io { .. } | StateError::Unstable { .. } | StateError::Git { .. } => {
                ErrorCode::Io
            }
        }
    }
}

/// The state of the workspace at `root`, using and updating the stat cache.
///
/// Equivalent to `compute_state_with(root, CacheMode::ReadWrite)`.
pub fn compute_state(root: &Path) -> Result<WorkspaceState, StateError> {
    compute_state_with(root, StateOptions::default())
}

/// The state of the workspace at `root` with explicit options (cache mode,
/// thread count).
pub fn compute_state_with<'a>(
    root: &Path,
    options: impl Into<StateOptions<'a>>,
) -> Result<WorkspaceState, StateError> {
    let options = options.into();
    let root_fd = open_root(root)?;
    let git_head = git::read_head(root)?;
    let rules = ignore::Rules::load(root, b"", options.ignore)?;
    let (tree, mut stats, loaded, threads) =
        walk_hashed(root, root_fd.as_fd(), &options, &rules, None)?;
    stats.cache = loaded.status.clone();
    let store = options.cache.writes() && cache_is_stale(&tree, &stats, &loaded);
    // The cache write and the state hash are independent: overlap them.
    let (state, stored) = if store && threads > 1 {
        std::thread::scope(|s| {
            let writer = s.spawn(|| cache::store(root, &tree));
            let state = encode(&tree, git_head.as_deref());
            (state, Some(writer.join().expect("cache writer panicked")))
        })
    } else {
        let stored = store.then(|| cache::store(root, &tree));
        (encode(&tree, git_head.as_deref()), stored)
    };
    match stored {
        Some(Ok(())) => stats.cache_written = true,
        Some(Err(e)) => stats.cache_write_error = Some(e),
        None => {}
    }
    Ok(WorkspaceState {
        state,
        git_head,
        files: tree.entries.len(),
        stats,
    })
}

/// Walk the tree and hash what changed (retrying a walk that something
/// changed under), with the cache the options ask for.
/// Whether a walk's stat cache needs writing: the walk hashed a file, or
/// the cache it read was missing, unreadable or listed other files than
/// the tree's regular ones.
fn cache_is_stale(tree: &Tree, stats: &StateStats, loaded: &cache::Loaded) -> bool {
    let regular = tree.entries.len() - stats.symlinks;
    stats.hashed > 0 || loaded.len() != regular || !loaded.is_loaded()
}

fn walk_hashed(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    options: &StateOptions<'_>,
    rules: &ignore::Rules<'_>,
    above: Option<&std::sync::Arc<ignore::Level>>,
) -> Result<(Tree, StateStats, cache::Loaded, usize), StateError> {
    let threads = match options.threads {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8),
        n => n,
    };

    let loaded = if options.cache.reads() {
        cache::load(root)
    } else {
        cache::Loaded::not_used()
    };

    let mut attempt = 1;
    let (tree, mut stats) = loop {
        match run(root, root_fd, threads, &loaded, rules, above) {
            Ok(done) => break done,
            Err(Failure::Unstable(_)) if attempt < MAX_ATTEMPTS => attempt += 1,
            Err(Failure::Unstable(path)) => {
                return Err(StateError::Unstable {
                    path,
                    attempts: attempt,
                })
            }
            Err(Failure::Fatal(e)) => return Err(e),
        }
    };
    stats.attempts = attempt;
    Ok((tree, stats, loaded, threads))
}

/// Every regular file and symbolic link the workspace state covers (what
/// git's ignore rules and `options.ignore` leave), as `/`-separated paths
/// relative to the root in byte order: what a copy of the tree for a
/// check needs. Uses the stat cache as `options` says.
pub fn listed_files(root: &Path, options: &StateOptions<'_>) -> Result<Vec<Vec<u8>>, StateError> {
    let root_fd = open_root(root)?;
    let rules = ignore::Rules::load(root, b"", options.ignore)?;
    let (tree, ..) = walk_hashed(root, root_fd.as_fd(), options, &rules, None)?;
    Ok(tree.entries.iter().map(|e| tree.path(e).to_vec()).collect())
}

/// The state hash of only the entries under `dir` (`None`: every entry),
/// without git `HEAD`: the digest a directory claim records. For a
/// subdirectory only that subtree is walked and hashed (its cost follows
/// the subtree, not the repository; paths are relative to `dir`); the
/// whole tree uses the stat cache, read but never written, so computing it
/// changes no file (see [`subtree_state_with`] for a caller that may
/// write it). A missing `dir`, or one that is not a directory (a
/// file or a link where it should be), has the state of an empty subtree
/// marked by what stands there.
///
/// Ignored paths are left out as in [`compute_state`], judged from the
/// root: the `.gitignore` files of `dir`'s ancestors apply, and a `dir`
/// that is itself ignored has the state of an empty directory.
pub fn subtree_state(
    root: &Path,
    dir: Option<&crate::RepoPath>,
    ignore: Option<&IgnoreList>,
) -> Result<StateHash, StateError> {
    subtree_state_with(root, dir, ignore, CacheMode::ReadOnly)
}

/// [`subtree_state`], with the whole tree's walk using the stat cache as
/// `cache` says (a subdirectory's walk never uses it). A caller that
/// changes the store anyway (acquiring a directory claim) passes
/// [`CacheMode::ReadWrite`], so that the freshness checks after it (the
/// validation, the apply) only `lstat` the files it hashed. The digest is
/// the same either way; a failed cache write only costs a later rehash.
pub fn subtree_state_with(
    root: &Path,
    dir: Option<&crate::RepoPath>,
    ignore: Option<&IgnoreList>,
    cache: CacheMode,
) -> Result<StateHash, StateError> {
    let root_fd = open_root(root)?;
    let rules = ignore::Rules::load(root, b"", ignore)?;
    let Some(dir) = dir else {
        let options = StateOptions {
            ignore,
            cache,
            ..StateOptions::default()
        };
        let (tree, stats, loaded, _) = walk_hashed(root, root_fd.as_fd(), &options, &rules, None)?;
        if cache.writes() && cache_is_stale(&tree, &stats, &loaded) {
            // Not fsynced and not required: losing it only costs a rehash.
            let _ = cache::store(root, &tree);
        }
        return Ok(encode(&tree, None));
    };
    // Open the directory one component at a time, never through a link,
    // reading each ancestor's `.gitignore` on the way.
    let mut fd = root_fd;
    let mut above = None;
    let mut rel: Vec<u8> = Vec::new();
    for component in dir.components() {
        let shown = full_path(root, &rel);
        if let Some(bytes) = ignore::read_gitignore(fd.as_fd(), &shown)? {
            above = rules.push(above.as_ref(), &rel, &bytes);
        }
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(component.as_bytes());
        if rules.ignored(above.as_ref(), &rel, true) {
            return Ok(encode(&Tree::default(), None));
        }
        match rustix::fs::openat(
            &fd,
            component,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(next) => fd = next,
            Err(Errno::NOENT) => return Ok(marker(b"missing")),
            Err(Errno::NOTDIR | Errno::LOOP) => return Ok(marker(b"not-a-directory")),
            Err(e) => return Err(io_err(&root.join(dir.as_str()), e.into())),
        }
    }
    let options = StateOptions {
        cache: CacheMode::Off,
        threads: 0,
        ignore,
    };
    let rules = rules.rebase(&rel);
    let (tree, _, _, _) = walk_hashed(
        &root.join(dir.as_str()),
        fd.as_fd(),
        &options,
        &rules,
        above.as_ref(),
    )?;
    Ok(encode(&tree, None))
}

/// The commit git `HEAD` points at under `root` (lowercase hex), `None`
/// when `root` is not a git repository or the branch is unborn. Reads
/// `HEAD` and the ref it names (a loose ref or `packed-refs`), nothing
/// else: cheap enough for every proposal.
pub fn git_head(root: &Path) -> Result<Option<String>, StateError> {
    git::read_head(root)
}

/// One path a change touches, as it was before the change: `None` when
/// it did not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TouchedPath<'a> {
    /// The repository-relative path.
    pub path: &'a str,
    /// Its content digest (of the target, for a link), whether it is
    /// executable and whether it is a link; `None`: absent.
    pub before: Option<(Digest, bool, bool)>,
}

/// The base a revision is made on, in O(change): a state hash over git
/// `HEAD` and the before-state of each path the change touches (absent,
/// or digest and kind) — not over the whole tree, so its cost follows the
/// change. Two revisions have the same base exactly when they touch the
/// same paths in the same states on the same commit. Paths are sorted
/// and deduplicated first; the encoding (tag `roundtable-base`) never
/// equals a [`compute_state`] hash:
///
/// ```text
/// "roundtable-base\0" 0x01   head as in the state encoding   u64:count
/// count × ( u64:len path  kind  [32]digest )   kind: b'-' absent (no digest), b'f', b'x', b'l'
/// ```
pub fn touched_state<'a>(
    head: Option<&str>,
    touched: impl IntoIterator<Item = TouchedPath<'a>>,
) -> StateHash {
    let mut touched: Vec<TouchedPath<'a>> = touched.into_iter().collect();
    touched.sort_by(|a, b| a.path.cmp(b.path));
    touched.dedup_by(|a, b| a.path == b.path);
    let mut h = sha2::Sha256::new();
    h.update(b"roundtable-base\0\x01");
    match head {
        None => h.update([0]),
        Some(hex) => {
            h.update([1, u8::try_from(hex.len()).expect("a commit id is short")]);
            h.update(hex.as_bytes());
        }
    }
    h.update((touched.len() as u64).to_le_bytes());
    for t in &touched {
        h.update((t.path.len() as u64).to_le_bytes());
        h.update(t.path.as_bytes());
        match t.before {
            None => h.update(b"-"),
            Some((digest, executable, symlink)) => {
                let kind = match (symlink, executable) {
                    (true, _) => Kind::Symlink,
                    (false, true) => Kind::Exec,
                    (false, false) => Kind::File,
                };
                h.update([kind.tag()]);
                h.update(digest.as_bytes());
            }
        }
    }
    StateHash::from_bytes(h.finalize().into())
}

/// The state of a subtree that is not a directory.
fn marker(what: &[u8]) -> StateHash {
    let mut h = sha2::Sha256::new();
    h.update(b"roundtable-state\0\x01subtree\0");
    h.update(what);
    StateHash::from_bytes(h.finalize().into())
}

/// Open the root (which may itself be reached through a link).
fn open_root(root: &Path) -> Result<OwnedFd, StateError> {
    // The root itself may be reached through a link; nothing below it is.
    match rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOTDIR) => Err(StateError::NotADirectory {
            path: root.to_path_buf(),
        }),
        Err(e) => Err(io_err(root, e.into())),
    }
}

fn io_err(path: &Path, source: io::Error) -> StateError {
    StateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The `lstat` fields the cache compares (and a workspace view, to tell a
/// file it read is unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Stat {
    size: u64,
    mtime: (i64, u32),
    ctime: (i64, u32),
    ino: u64,
    dev: u64,
    mode: u32,
}

impl Stat {
    // The field types of `struct stat` differ between targets.
    #[allow(clippy::unnecessary_cast, clippy::cast_possible_wrap)]
    /// The fields of `stat` a change shows in.
    pub(crate) fn of(st: &rustix::fs::Stat) -> Stat {
        Stat {
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as u32),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as u32),
            ino: st.st_ino as u64,
            dev: st.st_dev as u64,
            mode: st.st_mode as u32,
        }
    }

    /// The later of mtime and ctime.
    pub(crate) fn newest(&self) -> (i64, u32) {
        self.mtime.max(self.ctime)
    }

    /// The permission bits (`0o7777`) when it is a regular file's; `None`
    /// for a link, or a stat never taken (all zero).
    pub(crate) fn permissions(&self) -> Option<u32> {
        rustix::fs::FileType::from_raw_mode(self.mode)
            .is_file()
            .then_some(self.mode & 0o7777)
    }
}

/// Whether a cached digest may be reused: the stat is unchanged and the file
/// was last changed strictly before the cache was written (the racy rule).
fn trust_cached(cached: &Stat, now: &Stat, cache_written: (i64, u32)) -> Trust {
    if cached != now {
        Trust::Changed
    } else if now.newest() >= cache_written {
        Trust::Racy
    } else {
        Trust::Reuse
    }
}

/// The verdict of [`trust_cached`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trust {
    Reuse,
    Racy,
    Changed,
}

/// An entry's kind, as encoded in the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Exec,
    Symlink,
}

impl Kind {
    fn tag(self) -> u8 {
        match self {
            Kind::File => b'f',
            Kind::Exec => b'x',
            Kind::Symlink => b'l',
        }
    }
}

/// One entry of the state: a regular file or a symbolic link.
#[derive(Debug, Clone)]
struct Entry {
    /// Where the path is in [`Tree::paths`].
    start: usize,
    len: usize,
    kind: Kind,
    /// The `lstat` taken while listing (regular files only).
    stat: Stat,
    /// The content digest (of the target string, for a link).
    digest: Digest,
}

/// Every entry of the tree, in path order.
#[derive(Debug, Default)]
struct Tree {
    /// Every entry's `/`-separated path relative to the root, concatenated.
    paths: Vec<u8>,
    entries: Vec<Entry>,
}

impl Tree {
    fn path(&self, e: &Entry) -> &[u8] {
        &self.paths[e.start..e.start + e.len]
    }
}

/// Why a walk stopped.
enum Failure {
    /// Something changed under the walk: start over.
    Unstable(PathBuf),
    Fatal(StateError),
}

fn full_path(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(std::ffi::OsStr::from_bytes(rel))
    }
}

/// One walk: list, look up the cache, hash what is needed.
fn run(
    root: &Path,
    root_fd: BorrowedFd<'_>,
    threads: usize,
    loaded: &cache::Loaded,
    rules: &ignore::Rules<'_>,
    above: Option<&std::sync::Arc<ignore::Level>>,
) -> Result<(Tree, StateStats), Failure> {
    let mut tree = walk::walk(root, root_fd, threads, rules, above.cloned())?;

    let mut stats = StateStats::default();
    let mut todo = Vec::new();
    let mut cursor = loaded.cursor();
    for (i, e) in tree.entries.iter_mut().enumerate() {
        if e.kind == Kind::Symlink {
            stats.symlinks += 1;
            continue;
        }
        let path = &tree.paths[e.start..e.start + e.len];
        if let Some((stat, digest)) = cursor.find(path) {
            match trust_cached(&stat, &e.stat, loaded.written) {
                Trust::Reuse => {
                    e.digest = digest;
                    stats.reused += 1;
                    continue;
                }
                Trust::Racy => stats.racy += 1,
                Trust::Changed => {}
            }
        }
        todo.push(i);
    }

    let results = walk::hash_all(root, root_fd, &tree, &todo, threads)?;
    for (i, digest, bytes) in results {
        tree.entries[i].digest = digest;
        stats.bytes_hashed += bytes;
    }
    stats.hashed = todo.len();
    Ok((tree, stats))
}

/// The state hash of `tree` and `head` (see the module docs for the
/// encoding).
fn encode(tree: &Tree, head: Option<&str>) -> StateHash {
    let mut h = sha2::Sha256::new();
    let mut buf = Vec::with_capacity(64 * 1024);
    buf.extend_from_slice(b"roundtable-state\0\x01");
    match head {
        None => buf.push(0),
        Some(hex) => {
            buf.push(1);
            buf.push(u8::try_from(hex.len()).expect("a commit id is short"));
            buf.extend_from_slice(hex.as_bytes());
        }
    }
    buf.extend_from_slice(&(tree.entries.len() as u64).to_le_bytes());
    for e in &tree.entries {
        if buf.len() + e.len + 64 > buf.capacity() {
            h.update(&buf);
            buf.clear();
        }
        let path = tree.path(e);
        buf.extend_from_slice(&(path.len() as u64).to_le_bytes());
        buf.extend_from_slice(path);
        buf.push(e.kind.tag());
        buf.extend_from_slice(e.digest.as_bytes());
    }
    h.update(&buf);
    StateHash::from_bytes(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(m: i64, c: i64) -> Stat {
        Stat {
            size: 5,
            mtime: (m, 0),
            ctime: (c, 0),
            ino: 7,
            dev: 1,
            mode: 0o100644,
        }
    }

    #[test]
    fn racy_rule() {
        let written = (100, 500);
        // Older than the cache write: reused.
        assert_eq!(
            trust_cached(&stat(99, 99), &stat(99, 99), written),
            Trust::Reuse
        );
        assert_eq!(
            trust_cached(&stat(100, 100), &stat(100, 100), (100, 0)),
            Trust::Racy
        );
        // Same tick as (or newer than) the cache write: re-hashed.
        assert_eq!(
            trust_cached(&stat(100, 99), &stat(100, 99), written),
            Trust::Reuse
        );
        let same = Stat {
            mtime: (100, 500),
            ..stat(0, 0)
        };
        assert_eq!(trust_cached(&same, &same, written), Trust::Racy);
        // A ctime in the same tick makes it racy even with an old mtime.
        let c = Stat {
            ctime: (100, 500),
            ..stat(50, 0)
        };
        assert_eq!(trust_cached(&c, &c, written), Trust::Racy);
        // Any field differing: changed.
        let mut other = stat(99, 99);
        other.ino = 8;
        assert_eq!(trust_cached(&stat(99, 99), &other, written), Trust::Changed);
    }

    /// A tree of the given entries (already in path order).
    pub(super) fn tree_of(items: &[(&[u8], Kind)]) -> Tree {
        let mut tree = Tree::default();
        for (path, kind) in items {
            tree.entries.push(Entry {
                start: tree.paths.len(),
                len: path.len(),
                kind: *kind,
                stat: Stat::default(),
                digest: Digest::of(b""),
            });
            tree.paths.extend_from_slice(path);
        }
        tree
    }

    #[test]
    fn encoding_is_unambiguous() {
        let enc = |items: &[(&[u8], Kind)], head| encode(&tree_of(items), head);
        // Moving bytes between a path and the next field cannot collide.
        assert_ne!(
            enc(&[(b"ab", Kind::File)], None),
            enc(&[(b"a", Kind::File)], None)
        );
        assert_ne!(
            enc(&[(b"a", Kind::File), (b"b", Kind::File)], None),
            enc(&[(b"ab", Kind::File)], None)
        );
        assert_ne!(
            enc(&[(b"a", Kind::File)], None),
            enc(&[(b"a", Kind::Exec)], None)
        );
        assert_ne!(
            enc(&[(b"a", Kind::File)], None),
            enc(&[(b"a", Kind::Symlink)], None)
        );
        assert_ne!(enc(&[], None), enc(&[], Some("00")));
        assert_ne!(enc(&[], Some("0")), enc(&[], Some("00")));
        // Long trees cross the internal buffer boundary the same way.
        let long: Vec<Vec<u8>> = (0..5000)
            .map(|i| format!("dir/{i:06}").into_bytes())
            .collect();
        let items: Vec<(&[u8], Kind)> = long.iter().map(|p| (p.as_slice(), Kind::File)).collect();
        let mut h = sha2::Sha256::new();
        h.update(b"roundtable-state\0\x01\0");
        h.update(5000u64.to_le_bytes());
        for (p, _) in &items {
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
            h.update(b"f");
            h.update(Digest::of(b"").as_bytes());
        }
        assert_eq!(
            enc(&items, None),
            StateHash::from_bytes(h.finalize().into())
        );
    }

    #[test]
    fn touched_state_is_order_free_and_tells_kinds_apart() {
        let d = Digest::of(b"x");
        let t = |path, before| TouchedPath { path, before };
        let base = touched_state(None, [t("a", Some((d, false, false))), t("b", None)]);
        assert_eq!(
            base,
            touched_state(
                None,
                [t("b", None), t("a", Some((d, false, false))), t("b", None)]
            )
        );
        for other in [
            touched_state(None, [t("a", Some((d, true, false))), t("b", None)]),
            touched_state(None, [t("a", Some((d, false, true))), t("b", None)]),
            touched_state(None, [t("a", None), t("b", None)]),
            touched_state(Some("00"), [t("a", Some((d, false, false))), t("b", None)]),
            touched_state(None, [t("a", Some((d, false, false)))]),
        ] {
            assert_ne!(base, other);
        }
        // Never a whole-tree state: the empty change is not the empty tree.
        assert_ne!(touched_state(None, []), encode(&Tree::default(), None));
    }

    #[test]
    fn state_hash_spelling_round_trips() {
        let s = StateHash::from_bytes([0xab; 32]);
        let text = s.to_string();
        assert!(text.starts_with(STATE_PREFIX));
        assert_eq!(text.parse::<StateHash>(), Ok(s));
        assert!(text.to_uppercase().parse::<StateHash>().is_err());
        assert!("blob:sha256:00".parse::<StateHash>().is_err());
    }
}
