//! The workspace: a handle on a repository root through which all file
//! access goes, and the all-or-nothing apply of a [`Changeset`].
//!
//! Every path is a [`RepoPath`] and is reached from the root's directory
//! descriptor one component at a time with `O_NOFOLLOW`: no read or write
//! follows a symbolic link, whether the link is the file itself or any
//! directory on the way to it, and nothing outside the root can be named.
//!
//! Applying is all or nothing. Every result is computed first and staged
//! in a temporary file beside its target (so memory stays bounded by the
//! largest file); only then are results renamed into place, with the old
//! contents kept as hard links in a hidden backup directory until the end
//! (or, when the caller holds them — a governed apply's snapshot — in
//! memory). If any step of that last phase fails, everything already done
//! is undone. A refused change leaves every file exactly as it was.
//!
//! A [view](Workspace::view) is the workspace for one governed operation:
//! it remembers directory handles and what it read, so each touched file
//! is opened and hashed once from validation to the write.

use crate::changeset::{Changeset, FileContent, FileMeta};
use crate::diff::{ApplyError, Patch, Tree, TreeError, TreeFile};
use crate::{ErrorCode, PathError, RepoPath};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a workspace operation failed. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// A path is not a valid, contained repository path.
    #[error(transparent)]
    Path(#[from] PathError),
    /// A path passes through (or is) a symbolic link.
    #[error("{path}: passes through the symbolic link {link}")]
    Symlink {
        /// The path asked for.
        path: String,
        /// The component that is a link.
        link: String,
    },
    /// A path names a FIFO, socket or device, which is never opened.
    #[error("{path}: is a {kind}, not a regular file (never opened)")]
    Special {
        /// The path.
        path: String,
        /// What it is.
        kind: SpecialKind,
    },
    /// The patch does not apply.
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// A change's precondition does not hold.
    #[error("{path}: expected {expected}, found {actual}")]
    Precondition {
        /// The path.
        path: String,
        /// What the change expects (`blob:sha256:…`, with `+x` when
        /// executable, or `absent`).
        expected: String,
        /// What the file is now.
        actual: String,
    },
    /// The root cannot be opened as a directory.
    #[error("{root}: {source}")]
    Root {
        /// The root given.
        root: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Moving results into place failed; every change was undone.
    #[error("{path}: {source} (every change was undone)")]
    Commit {
        /// The path being written or removed.
        path: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// Undoing a failed commit also failed: the directory needs attention.
    #[error("{path}: {source}; undoing the partial apply failed too: {undo}")]
    Undo {
        /// The path being written or removed when the commit failed.
        path: String,
        /// The original cause.
        #[source]
        source: io::Error,
        /// What went wrong while undoing.
        undo: String,
    },
}

impl WorkspaceError {
    /// The stable error code.
    pub fn code(&self) -> ErrorCode {
        match self {
            WorkspaceError::Path(e) => e.code(),
            WorkspaceError::Symlink { .. } => ErrorCode::PathEscape,
            WorkspaceError::Special { .. } => ErrorCode::SpecialFile,
            WorkspaceError::Apply(e) => e.code(),
            WorkspaceError::Precondition { .. } => ErrorCode::PreconditionFailed,
            WorkspaceError::Root { .. } => ErrorCode::InvalidArgument,
            WorkspaceError::Commit { .. } | WorkspaceError::Undo { .. } => ErrorCode::Io,
        }
    }

    /// Structured details for programs: the path, and what is wrong there.
    pub fn details(&self) -> serde_json::Value {
        use serde_json::json;
        match self {
            WorkspaceError::Apply(a) => apply_details(a),
            WorkspaceError::Path(p) => json!({"path": p.path, "reason": p.reason}),
            WorkspaceError::Symlink { path, link } => json!({"path": path, "symlink": link}),
            WorkspaceError::Special { path, kind } => json!({"path": path, "type": kind}),
            WorkspaceError::Precondition {
                path,
                expected,
                actual,
            } => json!({"path": path, "expected": expected, "actual": actual}),
            WorkspaceError::Commit { path, .. } | WorkspaceError::Undo { path, .. } => {
                json!({"path": path})
            }
            _ => json!({}),
        }
    }

    /// `{"code", "message", "details"}`: how the error is recorded (in a
    /// failed transaction's row) and returned.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"code": self.code(), "message": self.to_string(), "details": self.details()})
    }
}

/// The details of an [`ApplyError`]: the path and hunk, and the file type
/// when the path is not a regular file.
pub(crate) fn apply_details(a: &ApplyError) -> serde_json::Value {
    use serde_json::json;
    match a {
        ApplyError::Hunk { path, hunk, reason } => {
            json!({"path": String::from_utf8_lossy(path), "hunk": hunk, "reason": reason})
        }
        ApplyError::LinkEscape { path, target } => json!({
            "path": String::from_utf8_lossy(path),
            "target": String::from_utf8_lossy(target),
        }),
        ApplyError::Tree(t) => match t.source.downcast_ref::<WorkspaceError>() {
            Some(WorkspaceError::Special { path, kind }) => json!({"path": path, "type": kind}),
            _ => json!({"path": String::from_utf8_lossy(&t.path)}),
        },
        a => json!({"path": String::from_utf8_lossy(a.path())}),
    }
}

/// The applier reads through [`Tree`], whose error boxes ours: take it back
/// out so a symlink is still reported as a symlink.
fn unwrap_tree_error(t: TreeError) -> WorkspaceError {
    let TreeError { code, path, source } = t;
    match source.downcast::<WorkspaceError>() {
        Ok(ours) => *ours,
        Err(source) => WorkspaceError::Apply(ApplyError::Tree(TreeError { code, path, source })),
    }
}

/// What an apply did (or, with `check`, would do) to one path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PathChange {
    /// The repository path.
    pub path: RepoPath,
    /// `write` or `remove`.
    pub action: &'static str,
}

/// How [`Workspace::apply_changeset_with`] writes.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions<'a> {
    /// Flush to disk: once after every result is staged (so the renames
    /// only ever expose complete contents) and once after the renames and
    /// removals (so they survive a power loss).
    pub durable: bool,
    /// Every temporary name (`.rt-stage-TAG-…`, `.rt-backup-TAG-…`) carries
    /// this tag (a transaction id), so what an interrupted write leaves
    /// can be told from a user's file and removed exactly
    /// ([`Workspace::remove_leftovers`]).
    pub tag: Option<&'a str>,
    /// Which directories a removal leaves empty are removed: `None`, every
    /// one (as `git apply` does); `Some(dirs)`, only these (a rollback or
    /// recovery removes only the directories its transaction created).
    pub prune_only: Option<&'a BTreeSet<RepoPath>>,
}

/// The prefix of a temporary name: `.rt-stage-` or `.rt-backup-`, then
/// the tag and a dash when there is one.
fn temp_prefix(kind: &str, tag: Option<&str>) -> String {
    match tag {
        Some(tag) => format!(".rt-{kind}-{tag}-"),
        None => format!(".rt-{kind}-"),
    }
}

/// What is at a path, without following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    Link,
    /// A FIFO, socket or device: never opened.
    Special(SpecialKind),
}

/// A kind of file roundtable never opens: opening a FIFO blocks until a
/// writer comes, a device may do anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecialKind {
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl SpecialKind {
    /// The kind of a non-regular, non-directory, non-link file mode.
    fn of(file_type: FileType) -> Option<SpecialKind> {
        match file_type {
            FileType::Fifo => Some(SpecialKind::Fifo),
            FileType::Socket => Some(SpecialKind::Socket),
            FileType::CharacterDevice => Some(SpecialKind::CharDevice),
            FileType::BlockDevice => Some(SpecialKind::BlockDevice),
            _ => None,
        }
    }

    /// Its stable spelling (`fifo`, `socket`, `char_device`, `block_device`).
    pub fn as_str(self) -> &'static str {
        match self {
            SpecialKind::Fifo => "fifo",
            SpecialKind::Socket => "socket",
            SpecialKind::CharDevice => "char_device",
            SpecialKind::BlockDevice => "block_device",
        }
    }
}

impl std::fmt::Display for SpecialKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A directory handle and the name of an entry in it.
type Located = (Arc<OwnedFd>, String);

/// A handle on a repository root.
pub struct Workspace {
    root: PathBuf,
    dir: Arc<OwnedFd>,
    /// Set on a [view](Workspace::view) (and, directories only, while
    /// [`Workspace::apply_patch`] reads): what it has already opened and read.
    memo: Option<Memo>,
}

/// What a view remembers. Forgotten before its first write, so it never
/// holds a stale handle or content.
#[derive(Default)]
struct Memo {
    /// Directory handles by path (`a/b`), so reading a thousand files in
    /// one directory opens it once.
    dirs: std::sync::Mutex<std::collections::HashMap<String, Arc<OwnedFd>>>,
    /// Each file read, with its digest once computed and what `fstat`
    /// said of it then; `None` when files are not remembered.
    files: Option<std::sync::Mutex<std::collections::HashMap<RepoPath, Arc<Seen>>>>,
}

/// A file as a view first read it.
struct Seen {
    file: TreeFile,
    meta: std::sync::OnceLock<FileMeta>,
    stamp: Stamp,
}

impl Seen {
    fn meta(&self) -> FileMeta {
        *self.meta.get_or_init(|| FileMeta::of(&self.file))
    }

    /// The file, moved out when nothing else holds it.
    fn into_file(seen: Arc<Seen>) -> TreeFile {
        match Arc::try_unwrap(seen) {
            Ok(seen) => seen.file,
            Err(shared) => shared.file.clone(),
        }
    }
}

/// What `fstat` said of a file when a view read it, enough to tell that it
/// has not been written since (as git's index does): any write changes the
/// change time, and a rename or replacement the inode. Trusted only when
/// the file's times were already over a second old when it was taken, so
/// a write within the same timestamp tick cannot go unseen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    stat: crate::state::Stat,
    settled: bool,
}

impl Stamp {
    fn of(st: &rustix::fs::Stat) -> Stamp {
        let stat = crate::state::Stat::of(st);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Stamp {
            stat,
            settled: stat.newest().0 < now - 1,
        }
    }

    /// Whether `now` is certainly the same, unwritten file.
    fn unchanged(&self, now: &Stamp) -> bool {
        self.settled && self.stat == now.stat
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

/// Up to this many touched paths, a durable apply flushes each file and
/// directory itself; beyond, one `syncfs` before and after the renames.
const PER_FILE_SYNC_LIMIT: usize = 16;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

impl Workspace {
    /// Open the workspace rooted at `root` (the root itself may be reached
    /// through a link; nothing below it is).
    pub fn open(root: &Path) -> Result<Workspace, WorkspaceError> {
        let dir = rustix::fs::open(
            root,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| WorkspaceError::Root {
            root: root.display().to_string(),
            source: errno(e),
        })?;
        Ok(Workspace {
            root: root.to_path_buf(),
            dir: Arc::new(dir),
            memo: None,
        })
    }

    /// A view of the same root for one operation that reads files and then
    /// may write them (validation, then the apply): it opens each directory
    /// once and reads each file once, and every later read of a path is
    /// answered with what the first saw — one consistent picture. Before
    /// its first write, [`apply_changeset_with`](Workspace::apply_changeset_with)
    /// checks each precondition against what was read by a fresh `fstat`
    /// (reading again only a file whose metadata moved or is too recent to
    /// trust), then forgets everything. Not for sharing between threads that
    /// each expect fresh reads: make one view per operation.
    pub fn view(&self) -> Workspace {
        self.with_memo(Some(Memo {
            files: Some(Default::default()),
            ..Memo::default()
        }))
    }

    /// The same root, remembering nothing: for writing, where a remembered
    /// handle could name a directory the write removed.
    fn plain(&self) -> Workspace {
        self.with_memo(None)
    }

    fn with_memo(&self, memo: Option<Memo>) -> Workspace {
        Workspace {
            root: self.root.clone(),
            dir: Arc::clone(&self.dir),
            memo,
        }
    }

    /// Every directory handle this view remembers, by path.
    fn remembered_dirs(&self) -> Verified {
        self.memo.as_ref().map_or_else(Verified::new, |memo| {
            lock(&memo.dirs)
                .iter()
                .map(|(k, v)| (k.clone(), Arc::clone(v)))
                .collect()
        })
    }

    /// Check that every directory this view opened is still the one at
    /// its path from the root, opened afresh without following links. A
    /// directory moved, removed, or replaced by a link or another
    /// directory is [`WorkspaceError::Precondition`].
    fn verify_dirs(&self) -> Result<(), WorkspaceError> {
        let fresh = self.plain();
        for (prefix, fd) in self.remembered_dirs() {
            let identity = |fd: &OwnedFd| rustix::fs::fstat(fd).map(|st| (st.st_dev, st.st_ino));
            let seen = identity(&fd).map_err(|e| tree_at(&prefix, errno(e)))?;
            let rp = RepoPath::from_bytes(prefix.as_bytes())?;
            let now = match fresh.parent(&rp) {
                Ok(Some((parent, name))) => {
                    match rustix::fs::openat(&*parent, name.as_str(), DIR_FLAGS, Mode::empty()) {
                        Ok(fd) => Some(identity(&fd).map_err(|e| tree_at(&prefix, errno(e)))?),
                        Err(_) => None,
                    }
                }
                _ => None,
            };
            if now != Some(seen) {
                return Err(WorkspaceError::Precondition {
                    path: format!("{prefix}/"),
                    expected: "the directory validation read".into(),
                    actual: match now {
                        Some(_) => "another directory".into(),
                        None => "no directory (moved, removed or replaced by a link)".into(),
                    },
                });
            }
        }
        Ok(())
    }

    /// Drop every remembered handle and file (before a write).
    fn forget(&self) {
        if let Some(m) = &self.memo {
            lock(&m.dirs).clear();
            if let Some(files) = &m.files {
                lock(files).clear();
            }
        }
    }

    fn seen(&self, path: &RepoPath) -> Option<Arc<Seen>> {
        let files = self.memo.as_ref()?.files.as_ref()?;
        lock(files).get(path).cloned()
    }

    /// The root this workspace was opened at.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding `path`'s last component, reached without
    /// following links; `None` when a directory on the way is missing.
    fn parent(&self, path: &RepoPath) -> Result<Option<Located>, WorkspaceError> {
        let components: Vec<&str> = path.components().collect();
        let (name, dirs) = components.split_last().expect("a RepoPath has a component");
        let mut at = Arc::clone(&self.dir);
        let mut cache = self.memo.as_ref().map(|m| lock(&m.dirs));
        let mut prefix = String::new();
        for (i, component) in dirs.iter().enumerate() {
            if i > 0 {
                prefix.push('/');
            }
            prefix.push_str(component);
            if let Some(fd) = cache.as_ref().and_then(|c| c.get(&prefix)) {
                at = Arc::clone(fd);
                continue;
            }
            match rustix::fs::openat(&*at, *component, DIR_FLAGS, Mode::empty()) {
                Ok(fd) => {
                    at = Arc::new(fd);
                    if let Some(c) = cache.as_mut() {
                        c.insert(prefix.clone(), Arc::clone(&at));
                    }
                }
                Err(rustix::io::Errno::NOENT) => return Ok(None),
                Err(e) => {
                    return match kind_at(&*at, component) {
                        // A file where a directory would be: nothing lies below it.
                        Ok(Some(Kind::File | Kind::Special(_))) => Ok(None),
                        Ok(Some(Kind::Link)) => Err(WorkspaceError::Symlink {
                            path: path.to_string(),
                            link: components[..=i].join("/"),
                        }),
                        _ => Err(tree(path, errno(e))),
                    };
                }
            }
        }
        Ok(Some((at, (*name).to_owned())))
    }

    /// What is at `path`; a link on the way is [`WorkspaceError::Symlink`].
    fn kind_strict(&self, path: &RepoPath) -> Result<Option<Kind>, WorkspaceError> {
        if self.seen(path).is_some() {
            return Ok(Some(Kind::File));
        }
        match self.parent(path)? {
            None => Ok(None),
            Some((dir, name)) => kind_at(&*dir, &name).map_err(|e| tree(path, e)),
        }
    }

    /// What is at `path` for a write that may remove a link on the way:
    /// nothing, when one is there.
    fn kind(&self, path: &RepoPath) -> Result<Option<Kind>, WorkspaceError> {
        if self.seen(path).is_some() {
            return Ok(Some(Kind::File));
        }
        match self.parent(path) {
            Ok(None) => Ok(None),
            // A link where a directory would be: nothing lies below it (a
            // link is never followed). Reads through it stay refused; the
            // room check refuses a write below it unless the change
            // removes the link first.
            Err(WorkspaceError::Symlink { .. }) => Ok(None),
            Err(e) => Err(e),
            Ok(Some((dir, name))) => kind_at(&*dir, &name).map_err(|e| tree(path, e)),
        }
    }

    /// Whether no file is at `path`, the way a change that creates it
    /// sees it (and the dry run, through [`Tree::exists`]): nothing there,
    /// or a directory — which the room check then decides about.
    pub(crate) fn no_file_at(&self, path: &RepoPath) -> Result<bool, WorkspaceError> {
        Ok(matches!(self.kind(path)?, None | Some(Kind::Dir)))
    }

    /// The file at `path`: its bytes and executable bit, or `None` if
    /// nothing is there. A symbolic link at the path is read as a link
    /// (its target, [`TreeFile::symlink`] set; never followed); one on the
    /// way is [`WorkspaceError::Symlink`]; a directory is not a file.
    pub fn read(&self, path: &RepoPath) -> Result<Option<TreeFile>, WorkspaceError> {
        Ok(self.load(path)?.map(Seen::into_file))
    }

    /// The file at `path` as this view first saw it (read now if it has
    /// not seen it, and remembered when it remembers files).
    fn load(&self, path: &RepoPath) -> Result<Option<Arc<Seen>>, WorkspaceError> {
        if let Some(seen) = self.seen(path) {
            return Ok(Some(seen));
        }
        let Some((file, stamp)) = self.read_stamped(path)? else {
            return Ok(None);
        };
        let seen = Arc::new(Seen {
            file,
            meta: Default::default(),
            stamp,
        });
        if let Some(files) = self.memo.as_ref().and_then(|m| m.files.as_ref()) {
            // Another thread may have read it meanwhile: the first read is
            // the one everybody sees.
            let mut files = lock(files);
            let first = files.entry(path.clone()).or_insert(seen);
            return Ok(Some(Arc::clone(first)));
        }
        Ok(Some(seen))
    }

    /// On a view, read and hash each of `paths` now (errors are left for
    /// the real read to report), so a later read of them is answered from
    /// memory: run on a second thread while the caller does other work.
    pub fn prefetch(&self, paths: &[RepoPath]) {
        if self.memo.as_ref().is_some_and(|m| m.files.is_some()) {
            for path in paths {
                if let Ok(Some(seen)) = self.load(path) {
                    seen.meta();
                }
            }
        }
    }

    fn read_stamped(&self, path: &RepoPath) -> Result<Option<(TreeFile, Stamp)>, WorkspaceError> {
        let Some((dir, name)) = self.parent(path)? else {
            return Ok(None);
        };
        // Look before opening: a FIFO, socket or device is never opened
        // (opening a FIFO blocks until a writer comes); a link is read as
        // a link (its target), never followed.
        match kind_at(&*dir, &name).map_err(|e| tree(path, e))? {
            Some(Kind::Special(kind)) => {
                return Err(WorkspaceError::Special {
                    path: path.to_string(),
                    kind,
                })
            }
            Some(Kind::Link) => return read_link_at(&dir, &name, path),
            _ => {}
        }
        // Non-blocking, so one swapped in after the look cannot block
        // either; `fstat` below then refuses it.
        let fd = match rustix::fs::openat(
            &*dir,
            name.as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                return Err(WorkspaceError::Symlink {
                    path: path.to_string(),
                    link: path.to_string(),
                })
            }
            Err(e) => return Err(tree(path, errno(e))),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| tree(path, errno(e)))?;
        let file_type = FileType::from_raw_mode(stat.st_mode);
        if let Some(kind) = SpecialKind::of(file_type) {
            return Err(WorkspaceError::Special {
                path: path.to_string(),
                kind,
            });
        }
        if file_type != FileType::RegularFile {
            return Err(WorkspaceError::Apply(ApplyError::File {
                path: path.as_str().as_bytes().to_vec(),
                reason: "is not a regular file".into(),
            }));
        }
        let mut data = Vec::with_capacity(usize::try_from(stat.st_size).unwrap_or(0));
        std::fs::File::from(fd)
            .read_to_end(&mut data)
            .map_err(|e| tree(path, e))?;
        let file = TreeFile {
            data,
            // git's rule: the owner's bit alone (`ce_permissions`).
            executable: stat.st_mode & 0o100 != 0,
            symlink: false,
        };
        Ok(Some((file, Stamp::of(&stat))))
    }

    /// The file at `path` and its digest and mode, from one read.
    pub fn read_with_meta(
        &self,
        path: &RepoPath,
    ) -> Result<Option<(TreeFile, FileMeta)>, WorkspaceError> {
        Ok(self.load(path)?.map(|seen| {
            let meta = seen.meta();
            (Seen::into_file(seen), meta)
        }))
    }

    /// The digest and mode of the file at `path`, or `None` if absent.
    pub fn meta(&self, path: &RepoPath) -> Result<Option<FileMeta>, WorkspaceError> {
        Ok(self.load(path)?.map(|seen| seen.meta()))
    }

    /// The digest and mode of the file at `path` now, to check that it
    /// still is `expected` (`None`: absent). On a view, a file it read
    /// that is expected unchanged is compared with what it saw by a fresh
    /// `fstat`, and read again only when that cannot decide.
    fn meta_now(
        &self,
        path: &RepoPath,
        expected: Option<&FileMeta>,
    ) -> Result<Option<FileMeta>, WorkspaceError> {
        if expected.is_none() && self.no_file_at(path)? {
            return Ok(None);
        }
        if let Some(seen) = self.seen(path) {
            let meta = seen.meta();
            if let Some((dir, name)) = self.parent(path)? {
                if let Ok(st) = rustix::fs::statat(&*dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                {
                    if seen.stamp.unchanged(&Stamp::of(&st)) && Some(&meta) == expected {
                        return Ok(Some(meta));
                    }
                }
            }
        }
        Ok(self.read_stamped(path)?.map(|(f, _)| FileMeta::of(&f)))
    }

    /// Apply `patch`, all or nothing. With `check`, compute everything and
    /// report what would change, but write nothing.
    ///
    /// Unlike [`Changeset::from_patch`] followed by
    /// [`Workspace::apply_changeset`], this streams: each result is staged
    /// as soon as it is computed, so memory is bounded by the largest file,
    /// not by the size of the change.
    pub(crate) fn apply_patch(
        &self,
        patch: &Patch<'_>,
        check: bool,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        for fp in patch.files() {
            for p in [fp.old_path(), fp.new_path()].into_iter().flatten() {
                RepoPath::from_bytes(p)?;
            }
        }
        let mut writes: BTreeMap<RepoPath, Option<Staged>> = BTreeMap::new();
        let mut removes: BTreeSet<RepoPath> = BTreeSet::new();
        // Directory handles are remembered while reading and staging only:
        // the commit creates and removes directories.
        let reader = self.with_memo(Some(Memo::default()));
        let result = crate::diff::apply(patch, &reader, &mut |outcome| {
            let path = RepoPath::from_bytes(&outcome.path)
                .map_err(|e| boxed(&outcome.path, e.code(), e))?;
            match outcome.new {
                Some(file) => {
                    let staged = if check {
                        None
                    } else {
                        Some(
                            reader
                                .stage(
                                    &path,
                                    &file.data,
                                    file.executable,
                                    file.symlink,
                                    false,
                                    None,
                                    &Verified::new(),
                                )
                                .map_err(|e| boxed(&outcome.path, e.code(), e))?,
                        )
                    };
                    writes.insert(path, staged); // drops an earlier staged write
                }
                None => {
                    removes.insert(path);
                }
            }
            Ok(())
        });
        match result {
            Ok(()) => {}
            Err(ApplyError::Tree(t)) => return Err(unwrap_tree_error(t)),
            Err(e) => return Err(e.into()),
        }
        // A path's final state is its last write, or removal if it was only
        // removed (git removes first, then writes).
        removes.retain(|p| !writes.contains_key(p));
        let removes: BTreeSet<&RepoPath> = removes.iter().collect();
        for path in writes.keys() {
            reader.check_room_for(path, &removes)?;
        }
        drop(reader);
        let mut changes: Vec<PathChange> = removes
            .iter()
            .map(|p| PathChange {
                path: (*p).clone(),
                action: "remove",
            })
            .chain(writes.keys().map(|p| PathChange {
                path: p.clone(),
                action: "write",
            }))
            .collect();
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        if check {
            return Ok(changes);
        }
        let staged = writes
            .iter_mut()
            .map(|(p, s)| (p, s.take().expect("staged when not checking")))
            .collect();
        self.commit_staged(
            &removes,
            staged,
            None,
            &WriteOptions::default(),
            &Verified::new(),
        )?;
        Ok(changes)
    }

    /// Apply `changeset`, all or nothing, after checking every
    /// precondition against the files as they are now. With `check`, write
    /// nothing.
    pub(crate) fn apply_changeset(
        &self,
        changeset: &Changeset,
        check: bool,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        self.apply_changeset_with(changeset, check, &WriteOptions::default())
    }

    /// The directories writing `changeset` creates: every directory on the
    /// way to a result that is not a directory now.
    pub(crate) fn missing_dirs(
        &self,
        changeset: &Changeset,
    ) -> Result<BTreeSet<RepoPath>, WorkspaceError> {
        let mut out = BTreeSet::new();
        for c in changeset.files().iter().filter(|c| c.after.is_some()) {
            let components: Vec<&str> = c.path.components().collect();
            for depth in 1..components.len() {
                let dir = RepoPath::from_bytes(components[..depth].join("/").as_bytes())?;
                if out.contains(&dir) || self.kind(&dir)? != Some(Kind::Dir) {
                    out.insert(dir);
                }
            }
        }
        Ok(out)
    }

    /// Check, writing nothing, that nothing on disk stands in the way of
    /// `changeset`'s results (a file where a directory must be, a directory
    /// holding other files where a file goes). Preconditions are not
    /// checked here.
    pub fn check_room(&self, changeset: &Changeset) -> Result<(), WorkspaceError> {
        let removes: BTreeSet<&RepoPath> = changeset
            .files()
            .iter()
            .filter(|c| c.after.is_none())
            .map(|c| &c.path)
            .collect();
        for c in changeset.files().iter().filter(|c| c.after.is_some()) {
            self.check_room_for(&c.path, &removes)?;
        }
        Ok(())
    }

    /// [`apply_changeset`](Workspace::apply_changeset), written as
    /// `options` say. Each durable flush is one `syncfs` of the root's
    /// file system for many files, or per file and directory for a few.
    pub(crate) fn apply_changeset_with(
        &self,
        changeset: &Changeset,
        check: bool,
        options: &WriteOptions<'_>,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        self.apply_changeset_holding(changeset, check, options, None)
    }

    /// [`apply_changeset_with`](Workspace::apply_changeset_with), where the
    /// caller holds the old content of every path the change replaces or
    /// removes (`held`): the commit keeps no hard links, and an undo
    /// restores from `held`.
    ///
    /// On a view, every directory it opened while reading is first checked
    /// to still be the one at its path from the root (a directory moved
    /// away, or replaced by a link or another directory, since validation
    /// is `precondition_failed`), and staging opens its directories afresh.
    pub(crate) fn apply_changeset_holding(
        &self,
        changeset: &Changeset,
        check: bool,
        options: &WriteOptions<'_>,
        held: Option<&Held<'_>>,
    ) -> Result<Vec<PathChange>, WorkspaceError> {
        let durable = options.durable;
        // Reading and staging remember directory handles (a view's own, or
        // ones kept for this call); the commit remembers nothing.
        let local;
        let reader = if self.memo.is_some() {
            self
        } else {
            local = self.with_memo(Some(Memo::default()));
            &local
        };
        reader.verify_dirs()?;
        for change in changeset.files() {
            let actual = reader.meta_now(&change.path, change.before.as_ref())?;
            if actual != change.before {
                return Err(WorkspaceError::Precondition {
                    path: change.path.to_string(),
                    expected: describe(change.before.as_ref()),
                    actual: describe(actual.as_ref()),
                });
            }
        }
        let removes: BTreeSet<&RepoPath> = changeset
            .files()
            .iter()
            .filter(|c| c.after.is_none())
            .map(|c| &c.path)
            .collect();
        let writes: Vec<(&RepoPath, &FileContent)> = changeset
            .files()
            .iter()
            .filter_map(|c| c.after.as_ref().map(|a| (&c.path, a)))
            .collect();
        for (path, _) in &writes {
            reader.check_room_for(path, &removes)?;
        }
        let changes = changeset
            .files()
            .iter()
            .map(|c| PathChange {
                path: c.path.clone(),
                action: if c.after.is_some() { "write" } else { "remove" },
            })
            .collect();
        if check {
            return Ok(changes);
        }
        // A few files are flushed one by one (and then their directories):
        // cheaper than `syncfs`, whose cost is everything dirty on the file
        // system. Many files are flushed with one `syncfs` before and one
        // after the renames.
        let per_file = durable && changeset.files().len() <= PER_FILE_SYNC_LIMIT;
        // Staging and the commit work in the very directories validation
        // read (just checked to still be at their paths): a directory
        // swapped from now on gets nothing of this change, so no result
        // lands beside someone else's files, and none is split between two
        // directories.
        let verified = reader.remembered_dirs();
        reader.forget();
        let mut staged = Vec::with_capacity(writes.len());
        for (path, content) in writes {
            staged.push((
                path,
                reader.stage(
                    path,
                    &content.data,
                    content.executable,
                    content.symlink,
                    per_file,
                    options.tag,
                    &verified,
                )?,
            ));
        }
        if durable && !per_file {
            self.syncfs(changeset)?;
        }
        self.commit_staged(&removes, staged, held, options, &verified)?;
        if per_file {
            self.plain().sync_parents(changeset)?;
        } else if durable {
            self.syncfs(changeset)?;
        }
        Ok(changes)
    }

    /// Flush the root's file system (`syncfs`).
    fn syncfs(&self, changeset: &Changeset) -> Result<(), WorkspaceError> {
        rustix::fs::syncfs(&*self.dir).map_err(|e| WorkspaceError::Commit {
            path: changeset
                .files()
                .first()
                .map(|c| c.path.to_string())
                .unwrap_or_default(),
            source: errno(e),
        })
    }

    /// Flush every directory whose entries changed, each once: the parent
    /// of each touched path (a rename into it, an unlink from it) and, for
    /// a path created or removed, every directory above it (directories
    /// may have been created or removed on the way).
    fn sync_parents(&self, changeset: &Changeset) -> Result<(), WorkspaceError> {
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        for c in changeset.files() {
            let components: Vec<&str> = c.path.components().collect();
            let last = components.len() - 1;
            let first = if c.before.is_some() && c.after.is_some() {
                last
            } else {
                0
            };
            for depth in first..=last {
                dirs.insert(components[..depth].join("/"));
            }
        }
        for dir in dirs {
            let fd = if dir.is_empty() {
                Arc::clone(&self.dir)
            } else {
                let rp = RepoPath::from_bytes(dir.as_bytes())?;
                match self.parent(&rp)? {
                    Some((parent, name)) => {
                        match rustix::fs::openat(&*parent, name.as_str(), DIR_FLAGS, Mode::empty())
                        {
                            Ok(fd) => Arc::new(fd),
                            // Removed by the change: its parent is flushed too.
                            Err(_) => continue,
                        }
                    }
                    None => continue,
                }
            };
            rustix::fs::fsync(&*fd).map_err(|e| WorkspaceError::Commit {
                path: dir.clone(),
                source: errno(e),
            })?;
        }
        Ok(())
    }

    /// Remove what an interrupted write tagged `tag` may have left next to
    /// `paths` — and nothing else: its staged results
    /// (`.rt-stage-TAG-*`) in the directories on the way to each path, its
    /// backup directories (`.rt-backup-TAG-*`) at the root, and of the
    /// directories it created (`created`), those now empty. A user's file
    /// or directory is never touched, whatever its name. Only called under
    /// the apply lock, when no apply is running. Returns what it removed.
    pub(crate) fn remove_leftovers(
        &self,
        paths: &[RepoPath],
        tag: &str,
        created: &BTreeSet<RepoPath>,
    ) -> Result<Vec<String>, WorkspaceError> {
        if self.memo.is_some() {
            return self.plain().remove_leftovers(paths, tag, created);
        }
        let (stage, backup) = (
            temp_prefix("stage", Some(tag)),
            temp_prefix("backup", Some(tag)),
        );
        let mut removed = Vec::new();
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        dirs.insert(String::new());
        for p in paths {
            let components: Vec<&str> = p.components().collect();
            for depth in 1..components.len() {
                dirs.insert(components[..depth].join("/"));
            }
        }
        let io = |p: &str, e: io::Error| WorkspaceError::Commit {
            path: p.to_owned(),
            source: e,
        };
        for dir in &dirs {
            let fd = if dir.is_empty() {
                Arc::clone(&self.dir)
            } else {
                let rp = RepoPath::from_bytes(dir.as_bytes())?;
                match self.parent(&rp)? {
                    Some((parent, name)) => {
                        match rustix::fs::openat(&*parent, name.as_str(), DIR_FLAGS, Mode::empty())
                        {
                            Ok(fd) => Arc::new(fd),
                            Err(_) => continue,
                        }
                    }
                    None => continue,
                }
            };
            let names: Vec<String> = rustix::fs::Dir::read_from(&*fd)
                .map_err(|e| io(dir, errno(e)))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            for name in names {
                let shown = if dir.is_empty() {
                    name.clone()
                } else {
                    format!("{dir}/{name}")
                };
                let kind = kind_at(&*fd, &name).map_err(|e| io(&shown, e))?;
                if name.starts_with(&stage) && matches!(kind, Some(Kind::File | Kind::Link)) {
                    rustix::fs::unlinkat(&*fd, name.as_str(), AtFlags::empty())
                        .map_err(|e| io(&shown, errno(e)))?;
                    removed.push(shown);
                } else if dir.is_empty() && name.starts_with(&backup) && kind == Some(Kind::Dir) {
                    let backups = rustix::fs::openat(&*fd, name.as_str(), DIR_FLAGS, Mode::empty())
                        .map_err(|e| io(&shown, errno(e)))?;
                    for entry in rustix::fs::Dir::read_from(&backups)
                        .map_err(|e| io(&shown, errno(e)))?
                        .flatten()
                    {
                        let n = entry.file_name().to_string_lossy().into_owned();
                        if n != "." && n != ".." {
                            rustix::fs::unlinkat(&backups, n.as_str(), AtFlags::empty())
                                .map_err(|e| io(&shown, errno(e)))?;
                        }
                    }
                    rustix::fs::unlinkat(&*fd, name.as_str(), AtFlags::REMOVEDIR)
                        .map_err(|e| io(&shown, errno(e)))?;
                    removed.push(shown);
                }
            }
        }
        // Directories the interrupted write created and nothing now uses,
        // deepest first.
        for dir in created.iter().rev() {
            if let Some((parent, name)) = self.parent(dir)? {
                if rustix::fs::unlinkat(&*parent, name.as_str(), AtFlags::REMOVEDIR).is_ok() {
                    removed.push(format!("{dir}/"));
                }
            }
        }
        Ok(removed)
    }

    /// Move staged results into place and remove what is removed; undo
    /// everything if any step fails.
    fn commit_staged(
        &self,
        removes: &BTreeSet<&RepoPath>,
        staged: Vec<(&RepoPath, Staged)>,
        held: Option<&Held<'_>>,
        options: &WriteOptions<'_>,
        verified: &Verified,
    ) -> Result<(), WorkspaceError> {
        // Directories are created and removed here: nothing remembered.
        let ws = &self.plain();
        let mut journal = Journal::holding(held, options.tag);
        match ws.commit(removes, staged, &mut journal, options.prune_only, verified) {
            // Dropping the journal removes the backups of the old contents.
            Ok(()) => Ok(()),
            Err((path, source)) => match journal.undo(ws) {
                Ok(()) => Err(WorkspaceError::Commit { path, source }),
                Err(undo) => Err(WorkspaceError::Undo { path, source, undo }),
            },
        }
    }

    /// Refuse a write that something on disk stands in the way of, once
    /// the change's own removals are done: a file where a parent directory
    /// must be, or a directory (holding anything the change keeps) where
    /// the file goes. Found now, so a check and the real apply agree and
    /// nothing is touched.
    fn check_room_for(
        &self,
        path: &RepoPath,
        removes: &BTreeSet<&RepoPath>,
    ) -> Result<(), WorkspaceError> {
        let in_the_way = |what: String| {
            WorkspaceError::Apply(ApplyError::File {
                path: path.as_str().as_bytes().to_vec(),
                reason: what,
            })
        };
        // Usually every directory on the way exists: then the one look-up
        // of the parent says so. Otherwise find the first that does not.
        let parent = self.parent(path).ok().flatten();
        let components: Vec<&str> = path.components().collect();
        let ancestors = if parent.is_some() {
            1
        } else {
            components.len()
        };
        for depth in 1..ancestors {
            let ancestor = RepoPath::from_bytes(components[..depth].join("/").as_bytes())?;
            match self.kind(&ancestor)? {
                Some(Kind::Dir) => continue,
                Some(Kind::Link) if !removes.contains(&ancestor) => {
                    return Err(WorkspaceError::Symlink {
                        path: path.to_string(),
                        link: ancestor.to_string(),
                    })
                }
                Some(_) if !removes.contains(&ancestor) => {
                    return Err(in_the_way(format!(
                        "`{ancestor}` is a file, so it cannot be a directory"
                    )))
                }
                _ => break,
            }
        }
        let kind = match (self.seen(path), parent) {
            (Some(_), _) => Some(Kind::File),
            (None, Some((dir, name))) => kind_at(&*dir, &name).map_err(|e| tree(path, e))?,
            (None, None) => None,
        };
        if kind == Some(Kind::Dir) {
            let held =
                std::fs::read_dir(self.root.join(path.as_str())).map_err(|e| tree(path, e))?;
            let mut stack: Vec<std::fs::ReadDir> = vec![held];
            while let Some(entries) = stack.last_mut() {
                let Some(entry) = entries.next() else {
                    stack.pop();
                    continue;
                };
                let entry = entry.map_err(|e| tree(path, e))?;
                let at = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(std::fs::read_dir(&at).map_err(|e| tree(path, e))?);
                    continue;
                }
                let rel = at
                    .strip_prefix(&self.root)
                    .unwrap_or(&at)
                    .to_string_lossy()
                    .into_owned();
                if !RepoPath::from_bytes(rel.as_bytes()).is_ok_and(|p| removes.contains(&p)) {
                    return Err(in_the_way(format!(
                        "a directory is in the way (it holds `{rel}`)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Write `content` to a temporary file in the nearest existing
    /// directory on the way to `path` (its parents may not exist yet); a
    /// symbolic link (`data` its target) is created there under a
    /// temporary name, once its target is checked to stay inside the root.
    #[allow(clippy::too_many_arguments)]
    fn stage(
        &self,
        path: &RepoPath,
        data: &[u8],
        executable: bool,
        symlink: bool,
        sync: bool,
        tag: Option<&str>,
        verified: &Verified,
    ) -> Result<Staged, WorkspaceError> {
        if symlink {
            check_link(path, data)?;
        }
        let found = match verified.get(parent_of(path)) {
            Some(dir) => Some(Arc::clone(dir)),
            None => self.parent(path).ok().flatten().map(|(dir, _)| dir),
        };
        let dir = match found {
            Some(dir) => dir,
            None => {
                let components: Vec<&str> = path.components().collect();
                let mut dir = Arc::clone(&self.dir);
                for component in &components[..components.len() - 1] {
                    match rustix::fs::openat(&*dir, *component, DIR_FLAGS, Mode::empty()) {
                        Ok(fd) => dir = Arc::new(fd),
                        Err(_) => break, // missing (or to be replaced): stage higher up
                    }
                }
                dir
            }
        };
        if symlink {
            let target = std::ffi::OsStr::from_bytes(data);
            let ((), name) = create_unique(&temp_prefix("stage", tag), |name| {
                rustix::fs::symlinkat(target, &*dir, name)
            })
            .map_err(|e| tree(path, e))?;
            // Its directory is flushed after the rename (a link has no
            // data of its own to flush).
            return Ok(Staged {
                dir,
                name,
                placed: false,
            });
        }
        let mode = Mode::from_raw_mode(if executable { 0o755 } else { 0o644 });
        let (fd, name) = create_unique(&temp_prefix("stage", tag), |name| {
            rustix::fs::openat(
                &*dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            )
        })
        .map_err(|e| tree(path, e))?;
        let staged = Staged {
            dir: Arc::clone(&dir),
            name,
            placed: false,
        };
        // The mode is set explicitly: the umask must not decide the bit.
        rustix::fs::fchmod(&fd, mode).map_err(|e| tree(path, errno(e)))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(data).map_err(|e| tree(path, e))?;
        if sync {
            file.sync_data().map_err(|e| tree(path, e))?;
        }
        Ok(staged)
    }

    fn commit(
        &self,
        removes: &BTreeSet<&RepoPath>,
        staged: Vec<(&RepoPath, Staged)>,
        journal: &mut Journal<'_>,
        prune_only: Option<&BTreeSet<RepoPath>>,
        verified: &Verified,
    ) -> Result<(), (String, io::Error)> {
        let fail = |p: &RepoPath| {
            let p = p.to_string();
            move |e: io::Error| (p, e)
        };
        let name_of = |p: &RepoPath| p.components().last().unwrap_or_default().to_owned();
        let located = |p: &RepoPath| -> Result<Option<Located>, (String, io::Error)> {
            if let Some(dir) = verified.get(parent_of(p)) {
                return Ok(Some((Arc::clone(dir), name_of(p))));
            }
            self.parent(p)
                .map_err(|e| (p.to_string(), io::Error::other(e.to_string())))
        };
        let mut pruned: BTreeSet<String> = BTreeSet::new();
        // Remove what is removed (git removes before it writes), keeping
        // each old content under a backup link.
        for &path in removes {
            let Some((dir, name)) = located(path)? else {
                continue;
            };
            if !matches!(
                kind_at(&*dir, &name),
                Ok(Some(Kind::File | Kind::Link | Kind::Special(_)))
            ) {
                continue;
            }
            let backup = journal
                .backup(&self.dir, path, &dir, &name)
                .map_err(fail(path))?;
            rustix::fs::unlinkat(&*dir, name.as_str(), AtFlags::empty())
                .map_err(|e| fail(path)(errno(e)))?;
            journal.steps.push(Step::Removed {
                path: path.clone(),
                backup,
            });
        }
        // Remove directories that the removals left empty, as git does.
        for &path in removes {
            let components: Vec<&str> = path.components().collect();
            for depth in (1..components.len()).rev() {
                let Ok(dir_path) = RepoPath::from_bytes(components[..depth].join("/").as_bytes())
                else {
                    break;
                };
                if prune_only.is_some_and(|only| !only.contains(&dir_path)) {
                    break;
                }
                let Ok(Some((parent, name))) = self.parent(&dir_path) else {
                    break;
                };
                if rustix::fs::unlinkat(&*parent, name.as_str(), AtFlags::REMOVEDIR).is_err() {
                    break;
                }
                pruned.insert(dir_path.to_string());
                journal.steps.push(Step::RemovedDir { path: dir_path });
            }
        }
        // Place every new file, creating its directories; a replaced file
        // is swapped atomically by the rename.
        // Placing only creates directories, so a handle opened here stays
        // good until the end of the loop.
        let mut opened: std::collections::HashMap<String, Arc<OwnedFd>> = Default::default();
        for (path, mut staged) in staged {
            let components: Vec<&str> = path.components().collect();
            let mut dir = Arc::clone(&self.dir);
            let mut prefix = String::new();
            let parent = parent_of(path);
            let known = verified
                .get(parent)
                .filter(|_| !pruned.contains(parent))
                .map(Arc::clone);
            let on_the_way = if let Some(known) = known {
                dir = known;
                &[][..]
            } else {
                &components[..components.len() - 1]
            };
            for component in on_the_way {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(component);
                if let Some(fd) = opened.get(&prefix) {
                    dir = Arc::clone(fd);
                    continue;
                }
                match rustix::fs::openat(&*dir, *component, DIR_FLAGS, Mode::empty()) {
                    Ok(fd) => dir = Arc::new(fd),
                    Err(rustix::io::Errno::NOENT) => {
                        rustix::fs::mkdirat(&*dir, *component, Mode::from_raw_mode(0o755))
                            .map_err(|e| fail(path)(errno(e)))?;
                        journal.steps.push(Step::CreatedDir {
                            parent: Arc::clone(&dir),
                            name: (*component).to_owned(),
                        });
                        let fd = rustix::fs::openat(&*dir, *component, DIR_FLAGS, Mode::empty())
                            .map_err(|e| fail(path)(errno(e)))?;
                        dir = Arc::new(fd);
                    }
                    Err(e) => return Err(fail(path)(errno(e))),
                }
                opened.insert(prefix.clone(), Arc::clone(&dir));
            }
            let name = components[components.len() - 1].to_owned();
            let backup = match kind_at(&*dir, &name) {
                Ok(Some(Kind::File | Kind::Link)) => Some(
                    journal
                        .backup(&self.dir, path, &dir, &name)
                        .map_err(fail(path))?,
                ),
                _ => None,
            };
            if let Err(e) =
                rustix::fs::renameat(&*staged.dir, staged.name.as_str(), &*dir, name.as_str())
            {
                return Err(fail(path)(errno(e)));
            }
            staged.placed = true;
            journal.steps.push(Step::Placed { dir, name, backup });
        }
        Ok(())
    }
}

impl Tree for Workspace {
    fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| boxed(path, e.code(), e))?;
        Workspace::read(self, &repo_path).map_err(|e| boxed(path, e.code(), e))
    }

    fn read_meta(&self, path: &[u8]) -> Result<Option<(TreeFile, FileMeta)>, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| boxed(path, e.code(), e))?;
        self.read_with_meta(&repo_path)
            .map_err(|e| boxed(path, e.code(), e))
    }

    fn exists(&self, path: &[u8]) -> Result<bool, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| boxed(path, e.code(), e))?;
        // A directory does not count: git lets a file be created over one
        // and the room check above decides whether it may. A link on the
        // way is refused here (the applier does not ask below a link the
        // patch removes).
        self.kind_strict(&repo_path)
            .map(|kind| !matches!(kind, None | Some(Kind::Dir)))
            .map_err(|e| boxed(path, e.code(), e))
    }
}

fn describe(meta: Option<&FileMeta>) -> String {
    match meta {
        None => "absent".into(),
        Some(m) if m.symlink => format!("{} (symbolic link)", m.digest),
        Some(m) if m.executable => format!("{} (executable)", m.digest),
        Some(m) => m.digest.to_string(),
    }
}

/// Refuse to create a link at `path` whose target is empty or leaves the
/// root ([`crate::diff::link_target_escapes`]): the applier checked it
/// already; every other changeset (a rollback's, a recovery's) is checked
/// here.
fn check_link(path: &RepoPath, target: &[u8]) -> Result<(), WorkspaceError> {
    let raw = path.as_str().as_bytes();
    if target.is_empty() || crate::diff::link_target_escapes(raw, target) {
        return Err(WorkspaceError::Apply(ApplyError::LinkEscape {
            path: raw.to_vec(),
            target: target.to_vec(),
        }));
    }
    Ok(())
}

/// The symbolic link `name` in `dir` (at `path`), read with `readlinkat`,
/// never followed.
fn read_link_at(
    dir: &OwnedFd,
    name: &str,
    path: &RepoPath,
) -> Result<Option<(TreeFile, Stamp)>, WorkspaceError> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(tree(path, errno(e))),
    };
    let target = match rustix::fs::readlinkat(dir, name, Vec::new()) {
        Ok(t) => t.into_bytes(),
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        // Replaced by something else since the look: read it again.
        Err(rustix::io::Errno::INVAL) => {
            return Err(tree(
                path,
                io::Error::other("replaced while it was read (a link, then not)"),
            ))
        }
        Err(e) => return Err(tree(path, errno(e))),
    };
    Ok(Some((TreeFile::link(target), Stamp::of(&stat))))
}

/// Directory handles by path (`a/b`; the root is not in it), each checked
/// to be the directory at that path when the write began.
type Verified = BTreeMap<String, Arc<OwnedFd>>;

/// The path of `path`'s parent directory (`""` for the root).
fn parent_of(path: &RepoPath) -> &str {
    path.as_str().rsplit_once('/').map_or("", |(p, _)| p)
}

fn tree_at(prefix: &str, e: io::Error) -> WorkspaceError {
    WorkspaceError::Apply(ApplyError::Tree(boxed(prefix.as_bytes(), ErrorCode::Io, e)))
}

fn kind_at(dir: impl AsFd, name: &str) -> io::Result<Option<Kind>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Link,
            other => SpecialKind::of(other).map_or(Kind::Link, Kind::Special),
        })),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(errno(e)),
    }
}

fn boxed(
    path: &[u8],
    code: ErrorCode,
    e: impl std::error::Error + Send + Sync + 'static,
) -> TreeError {
    TreeError {
        code,
        path: path.to_vec(),
        source: Box::new(e),
    }
}

fn io_error(path: &RepoPath, e: io::Error) -> TreeError {
    boxed(path.as_str().as_bytes(), ErrorCode::Io, e)
}

fn tree(path: &RepoPath, e: io::Error) -> WorkspaceError {
    WorkspaceError::Apply(ApplyError::Tree(io_error(path, e)))
}

/// Create something under a fresh random name (`create` makes it).
fn create_unique<T>(
    prefix: &str,
    mut create: impl FnMut(&str) -> rustix::io::Result<T>,
) -> io::Result<(T, String)> {
    use std::hash::{BuildHasher as _, Hasher as _};
    let seed = std::collections::hash_map::RandomState::new();
    for attempt in 0u32..32 {
        let mut h = seed.build_hasher();
        h.write_u32(std::process::id());
        h.write_u32(attempt);
        let name = format!("{prefix}{:016x}", h.finish());
        match create(&name) {
            Ok(t) => return Ok((t, name)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(errno(e)),
        }
    }
    Err(io::Error::other("could not find a free temporary name"))
}

/// A result written to a temporary file, waiting to be renamed into place;
/// removed if it never is.
struct Staged {
    dir: Arc<OwnedFd>,
    name: String,
    placed: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.placed {
            let _ = rustix::fs::unlinkat(&*self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// Old contents the caller holds in memory, with their executable bits:
/// a commit that has them restores from them if it must undo, instead of
/// keeping hard links to the old files.
/// (A link's is its target, with the third flag set.)
pub(crate) type Held<'k> = std::collections::HashMap<&'k RepoPath, (&'k [u8], bool, bool)>;

/// Every step of a commit, so it can be undone in reverse, and the backup
/// directory holding old contents until the commit is done.
struct Journal<'k> {
    steps: Vec<Step<'k>>,
    /// The old contents the caller holds, if it holds them.
    held: Option<&'k Held<'k>>,
    /// A hidden directory at the root (so directories emptied by the change
    /// really are empty), with its name.
    backups: Option<(Arc<OwnedFd>, Arc<OwnedFd>, String)>,
    /// Set when undo failed: the backups are the only copy, keep them.
    keep_backups: bool,
    /// The tag of every temporary name ([`WriteOptions::tag`]).
    tag: Option<&'k str>,
}

/// Where a replaced or removed file's old content is while the commit runs.
enum Backup<'k> {
    /// A hard link, under this name, in the backup directory.
    Link(String),
    /// The caller's copy, its executable bit, and whether it is a link.
    Held(&'k [u8], bool, bool),
}

enum Step<'k> {
    /// The file at `path` was unlinked; its content lives on in `backup`.
    /// (By path, not directory handle: its directory may be removed and
    /// re-created by later steps and their undoing.)
    Removed { path: RepoPath, backup: Backup<'k> },
    /// The empty directory at `path` was removed.
    RemovedDir { path: RepoPath },
    /// A directory was created.
    CreatedDir { parent: Arc<OwnedFd>, name: String },
    /// A new file was renamed onto `name`, replacing the file whose old
    /// content is in `backup`, if there was one.
    Placed {
        dir: Arc<OwnedFd>,
        name: String,
        backup: Option<Backup<'k>>,
    },
}

impl<'k> Journal<'k> {
    /// A journal that restores from `held` where it has a path's content.
    fn holding(held: Option<&'k Held<'k>>, tag: Option<&'k str>) -> Journal<'k> {
        Journal {
            steps: Vec::new(),
            held,
            backups: None,
            keep_backups: false,
            tag,
        }
    }

    /// Keep the old content of `path` (`name` in `dir`) until the commit is
    /// done: the caller's copy when it holds one, else a hard link in the
    /// backup directory (no copy).
    fn backup(
        &mut self,
        root: &Arc<OwnedFd>,
        path: &RepoPath,
        dir: &OwnedFd,
        name: &str,
    ) -> io::Result<Backup<'k>> {
        if let Some(&(data, executable, symlink)) = self.held.and_then(|h| h.get(path)) {
            return Ok(Backup::Held(data, executable, symlink));
        }
        self.link_backup(root, dir, name).map(Backup::Link)
    }

    fn link_backup(
        &mut self,
        root: &Arc<OwnedFd>,
        dir: &OwnedFd,
        name: &str,
    ) -> io::Result<String> {
        if self.backups.is_none() {
            let ((), dir_name) = create_unique(&temp_prefix("backup", self.tag), |n| {
                rustix::fs::mkdirat(&**root, n, Mode::from_raw_mode(0o700))
            })?;
            let fd = rustix::fs::openat(&**root, dir_name.as_str(), DIR_FLAGS, Mode::empty())
                .map_err(errno)?;
            self.backups = Some((Arc::clone(root), Arc::new(fd), dir_name));
        }
        let (_, backups, _) = self.backups.as_ref().expect("created above");
        let backup = self.steps.len().to_string();
        rustix::fs::linkat(dir, name, &**backups, backup.as_str(), AtFlags::empty())
            .map_err(errno)?;
        Ok(backup)
    }

    /// Put the old content in `backup` back at `name` in `dir`.
    fn put_back(&self, backup: &Backup<'_>, dir: &OwnedFd, name: &str) -> rustix::io::Result<()> {
        match backup {
            Backup::Link(b) => rustix::fs::renameat(self.backup_dir(), b.as_str(), dir, name),
            Backup::Held(data, executable, symlink) => {
                let os = |e: io::Error| {
                    rustix::io::Errno::from_raw_os_error(
                        e.raw_os_error()
                            .unwrap_or(rustix::io::Errno::IO.raw_os_error()),
                    )
                };
                if *symlink {
                    let target = std::ffi::OsStr::from_bytes(data);
                    let ((), temp) = create_unique(&temp_prefix("stage", self.tag), |n| {
                        rustix::fs::symlinkat(target, dir, n)
                    })
                    .map_err(os)?;
                    return rustix::fs::renameat(dir, temp.as_str(), dir, name).inspect_err(|_| {
                        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                    });
                }
                let mode = Mode::from_raw_mode(if *executable { 0o755 } else { 0o644 });
                let (fd, temp) = create_unique(&temp_prefix("stage", self.tag), |n| {
                    rustix::fs::openat(
                        dir,
                        n,
                        OFlags::WRONLY
                            | OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::NOFOLLOW
                            | OFlags::CLOEXEC,
                        mode,
                    )
                })
                .map_err(os)?;
                rustix::fs::fchmod(&fd, mode)?;
                let written = std::fs::File::from(fd).write_all(data).map_err(os);
                match written.and_then(|()| rustix::fs::renameat(dir, temp.as_str(), dir, name)) {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                        Err(e)
                    }
                }
            }
        }
    }

    fn backup_dir(&self) -> &OwnedFd {
        &self
            .backups
            .as_ref()
            .expect("a backup exists only with its directory")
            .1
    }

    fn undo(&mut self, ws: &Workspace) -> Result<(), String> {
        let mut failures = Vec::new();
        let parent = |path: &RepoPath| match ws.parent(path) {
            Ok(Some(found)) => Ok(found),
            _ => Err(rustix::io::Errno::NOENT),
        };
        while let Some(step) = self.steps.pop() {
            let result = match &step {
                Step::Placed {
                    dir,
                    name,
                    backup: Some(b),
                } => self.put_back(b, dir, name),
                Step::Placed {
                    dir,
                    name,
                    backup: None,
                } => rustix::fs::unlinkat(&**dir, name.as_str(), AtFlags::empty()),
                Step::CreatedDir { parent, name } => {
                    rustix::fs::unlinkat(&**parent, name.as_str(), AtFlags::REMOVEDIR)
                }
                Step::RemovedDir { path } => parent(path).and_then(|(dir, name)| {
                    rustix::fs::mkdirat(&*dir, name.as_str(), Mode::from_raw_mode(0o755))
                }),
                Step::Removed { path, backup } => {
                    parent(path).and_then(|(dir, name)| self.put_back(backup, &dir, &name))
                }
            };
            if let Err(e) = result {
                failures.push(e.to_string());
            }
        }
        if failures.is_empty() {
            return Ok(());
        }
        // Old contents that could not be put back stay in the backup
        // directory: name it so a person can recover them.
        self.keep_backups = true;
        if let Some((_, _, name)) = &self.backups {
            failures.push(format!("old contents are kept in {name} at the root"));
        }
        Err(failures.join("; "))
    }
}

impl Drop for Journal<'_> {
    fn drop(&mut self) {
        if self.keep_backups {
            return;
        }
        if let Some((root, dir, name)) = self.backups.take() {
            if let Ok(entries) = rustix::fs::Dir::read_from(&*dir) {
                for entry in entries.flatten() {
                    let n = entry.file_name().to_string_lossy().into_owned();
                    if n != "." && n != ".." {
                        let _ = rustix::fs::unlinkat(&*dir, n.as_str(), AtFlags::empty());
                    }
                }
            }
            let _ = rustix::fs::unlinkat(&*root, name.as_str(), AtFlags::REMOVEDIR);
        }
    }
}

/// Apply `patch` to the directory `root`, all or nothing. With `check`,
/// compute everything and report what would change, but write nothing.
pub fn apply_patch(
    root: &Path,
    patch: &Patch<'_>,
    check: bool,
) -> Result<Vec<PathChange>, WorkspaceError> {
    Workspace::open(root)?.apply_patch(patch, check)
}

/// Apply `changeset` (e.g. an edit plan's, from
/// [`plan_changeset`](crate::edit::plan_changeset)) to the directory
/// `root`, all or nothing; every file's precondition is checked first.
/// With `check`, report what would change and write nothing.
///
/// This and [`apply_patch`] are the ungoverned writes (the CLI's `patch
/// apply` and `edit apply`): no claim, review, journal or event. A
/// governed change goes through [`Engine::session`](crate::Engine::session).
pub fn apply_changeset(
    root: &Path,
    changeset: &Changeset,
    check: bool,
) -> Result<Vec<PathChange>, WorkspaceError> {
    Workspace::open(root)?.apply_changeset(changeset, check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::fs;

    fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in fs::read_dir(&dir).expect("readable") {
                let at = entry.expect("entry").path();
                if at.is_dir() {
                    stack.push(at.clone());
                }
                let rel = at.strip_prefix(root).expect("inside").display().to_string();
                out.insert(
                    rel,
                    if at.is_dir() {
                        Vec::new()
                    } else {
                        fs::read(&at).expect("read")
                    },
                );
            }
        }
        out
    }

    /// A fault in the middle of the commit (a staged file vanishes after
    /// earlier files were already placed and removed) is undone completely:
    /// from hard-link backups, or — when the caller holds the old contents
    /// — from those, with no backup directory made.
    fn fail_mid_commit_and_undo(holding: bool) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join("d")).expect("mkdir");
        fs::write(root.join("a"), "old a").expect("write");
        fs::set_permissions(root.join("a"), fs::Permissions::from_mode(0o755)).expect("chmod");
        fs::write(root.join("d/gone"), "old gone").expect("write");
        let before = files(root);
        let ws = Workspace::open(root).expect("opens");

        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let (a, c, z, gone) = (p("a"), p("b/c"), p("z/new"), p("d/gone"));
        let held: Held<'_> = [
            (&a, (b"old a".as_slice(), true, false)),
            (&gone, (b"old gone".as_slice(), false, false)),
        ]
        .into_iter()
        .collect();
        let removes = BTreeSet::from([&gone]);
        let broken = ws
            .stage(&z, b"new z", false, false, false, None, &Verified::new())
            .expect("stages");
        rustix::fs::unlinkat(&*broken.dir, broken.name.as_str(), AtFlags::empty())
            .expect("the fault: the staged file disappears");
        let staged = vec![
            (
                &a,
                ws.stage(&a, b"new a", false, false, false, None, &Verified::new())
                    .expect("stages"),
            ),
            (
                &c,
                ws.stage(&c, b"new c", false, false, false, None, &Verified::new())
                    .expect("stages"),
            ),
            (&z, broken),
        ];

        let mut journal = Journal::holding(holding.then_some(&held), None);
        let (path, _) = ws
            .commit(&removes, staged, &mut journal, None, &Verified::new())
            .expect_err("the last write fails");
        assert_eq!(path, "z/new");
        // Before undoing: a and b/c were placed, d/gone and d were removed.
        assert_eq!(fs::read_to_string(root.join("a")).expect("a"), "new a");
        assert!(!root.join("d").exists());
        let backups = fs::read_dir(root)
            .expect("root")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with(".rt-backup-"))
            })
            .count();
        assert_eq!(backups, usize::from(!holding));
        journal.undo(&ws).expect("undo succeeds");
        drop(journal);
        assert_eq!(
            files(root),
            before,
            "every change undone, no staging or backup left"
        );
        let mode = |p: &str| {
            fs::metadata(root.join(p))
                .expect("meta")
                .permissions()
                .mode()
                & 0o777
        };
        assert_eq!(mode("a"), 0o755);
        assert_eq!(mode("d/gone"), 0o644);
    }

    #[test]
    fn a_failing_commit_is_undone_from_backup_links() {
        fail_mid_commit_and_undo(false);
    }

    #[test]
    fn a_failing_commit_holding_the_old_contents_restores_them() {
        fail_mid_commit_and_undo(true);
    }

    /// A view answers a second read of a path from what it first read, so
    /// validation and the snapshot see one picture; a plain workspace reads
    /// again.
    #[test]
    fn a_view_reads_each_file_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join("f"), "one").expect("write");
        let ws = Workspace::open(root).expect("opens");
        let view = ws.view();
        let f = RepoPath::from_bytes(b"f").expect("valid");
        view.prefetch(std::slice::from_ref(&f));
        fs::write(root.join("f"), "two").expect("write");
        let seen = view.read_with_meta(&f).expect("reads").expect("exists");
        assert_eq!(seen.0.data, b"one");
        assert_eq!(seen.1, FileMeta::of(&TreeFile::regular(b"one".to_vec())));
        assert_eq!(ws.read(&f).expect("reads").expect("exists").data, b"two");
    }

    fn one_change(path: &str, before: &[u8], after: &[u8]) -> Changeset {
        Changeset::new(vec![crate::changeset::FileChange {
            path: RepoPath::from_bytes(path.as_bytes()).expect("valid"),
            operation: crate::changeset::Operation::Modify,
            before: Some(FileMeta::of(&TreeFile::regular(before.to_vec()))),
            after: Some(FileContent {
                data: after.to_vec(),
                executable: false,
                symlink: false,
            }),
        }])
        .expect("one path")
    }

    /// A directory swapped between a view's reads (validation) and its
    /// write — moved out of the root and replaced by a link to it, or by
    /// another directory holding someone else's work — is a precondition
    /// failure: nothing is written outside the root, nothing overwritten.
    #[test]
    fn a_directory_swapped_after_validation_is_a_precondition_failure() {
        for replacement in ["link", "directory"] {
            let top = tempfile::tempdir().expect("tempdir");
            let (root, outside) = (top.path().join("root"), top.path().join("outside"));
            fs::create_dir_all(root.join("d")).expect("mkdir");
            fs::create_dir_all(&outside).expect("mkdir");
            fs::write(root.join("d/f"), "old\n").expect("write");
            let ws = Workspace::open(&root).expect("open");
            let view = ws.view();
            let change = one_change("d/f", b"old\n", b"new\n");
            let path = RepoPath::from_bytes(b"d/f").expect("path");
            assert!(view.read(&path).expect("reads").is_some());
            view.check_room(&change).expect("room");
            fs::rename(root.join("d"), outside.join("d")).expect("move out");
            match replacement {
                "link" => {
                    std::os::unix::fs::symlink(outside.join("d"), root.join("d")).expect("link")
                }
                _ => {
                    fs::create_dir(root.join("d")).expect("mkdir");
                    fs::write(root.join("d/f"), "theirs\n").expect("theirs");
                }
            }
            let e = view
                .apply_changeset_with(&change, false, &WriteOptions::default())
                .expect_err(replacement);
            assert_eq!(
                e.code(),
                ErrorCode::PreconditionFailed,
                "{replacement}: {e}"
            );
            let moved: Vec<_> = fs::read_dir(outside.join("d"))
                .expect("ls")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert_eq!(moved, ["f"], "{replacement}: something written outside");
            assert_eq!(fs::read(outside.join("d/f")).expect("f"), b"old\n");
            if replacement == "directory" {
                assert_eq!(fs::read(root.join("d/f")).expect("f"), b"theirs\n");
                assert_eq!(fs::read_dir(root.join("d")).expect("ls").count(), 1);
            }
        }
    }

    /// Writing through a view checks each precondition against the file as
    /// it is now: a file rewritten since the view read it is refused, both
    /// when its times are too recent to trust and when they were settled
    /// (then the fresh `fstat` differs); an untouched settled file passes.
    #[test]
    fn a_view_refuses_to_write_over_a_file_changed_since_it_read_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for name in ["recent", "settled", "kept"] {
            fs::write(root.join(name), "old!").expect("write");
        }
        let ws = Workspace::open(root).expect("opens");
        let recent = ws.view();
        recent
            .read(&RepoPath::from_bytes(b"recent").expect("valid"))
            .expect("reads");
        fs::write(root.join("recent"), "new!").expect("same size, other bytes");
        let err = recent
            .apply_changeset_with(
                &one_change("recent", b"old!", b"ours"),
                false,
                &WriteOptions::default(),
            )
            .expect_err("changed since it was read");
        assert!(matches!(err, WorkspaceError::Precondition { .. }), "{err}");
        assert_eq!(fs::read(root.join("recent")).expect("read"), b"new!");

        // Old enough that a stamp is trusted.
        std::thread::sleep(std::time::Duration::from_millis(2100));
        let settled = ws.view();
        for name in ["settled", "kept"] {
            settled
                .read(&RepoPath::from_bytes(name.as_bytes()).expect("valid"))
                .expect("reads");
        }
        fs::write(root.join("settled"), "new!").expect("same size, other bytes");
        let err = settled
            .apply_changeset_with(
                &one_change("settled", b"old!", b"ours"),
                false,
                &WriteOptions::default(),
            )
            .expect_err("changed since it was read");
        assert!(matches!(err, WorkspaceError::Precondition { .. }), "{err}");
        assert_eq!(fs::read(root.join("settled")).expect("read"), b"new!");
        settled
            .apply_changeset_with(
                &one_change("kept", b"old!", b"ours"),
                false,
                &WriteOptions::default(),
            )
            .expect("unchanged since it was read");
        assert_eq!(fs::read(root.join("kept")).expect("read"), b"ours");
        // The write made the view forget: it reads the new content.
        let kept = RepoPath::from_bytes(b"kept").expect("valid");
        assert_eq!(
            settled.read(&kept).expect("reads").expect("exists").data,
            b"ours"
        );
    }

    #[test]
    fn reads_never_follow_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        fs::write(outside.path().join("secret"), "s").expect("write");
        let root = dir.path();
        fs::create_dir(root.join("real")).expect("mkdir");
        fs::write(root.join("real/f"), "f").expect("write");
        std::os::unix::fs::symlink(outside.path(), root.join("out")).expect("link");
        std::os::unix::fs::symlink("real", root.join("alias")).expect("link");
        std::os::unix::fs::symlink("real/f", root.join("flink")).expect("link");
        std::os::unix::fs::symlink("/", root.join("slash")).expect("link");
        let ws = Workspace::open(root).expect("opens");
        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        assert_eq!(
            ws.read(&p("real/f")).expect("reads").map(|f| f.data),
            Some(b"f".to_vec())
        );
        for path in ["out/secret", "alias/f", "slash/etc/hostname"] {
            let e = ws.read(&p(path)).expect_err(path);
            assert_eq!(e.code(), ErrorCode::PathEscape, "{path}: {e}");
        }
        // A link at the path itself is read as a link: its target, not
        // what it points at.
        for (path, target) in [("flink", "real/f"), ("slash", "/"), ("alias", "real")] {
            assert_eq!(
                ws.read(&p(path)).expect(path),
                Some(TreeFile::link(target.as_bytes().to_vec())),
                "{path}"
            );
        }
        assert!(ws.read(&p("missing/x")).expect("absent").is_none());
        assert!(ws.read(&p("real/f/below")).expect("below a file").is_none());
    }

    /// A link is staged under a temporary name and renamed over its path;
    /// replacing and removing links keeps their old targets for an undo,
    /// and a staged link an interrupted write left is removed as its own.
    #[test]
    fn links_are_staged_renamed_and_undone_like_files() {
        use crate::changeset::{FileChange, Operation};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::os::unix::fs::symlink("a", root.join("l")).expect("link");
        std::os::unix::fs::symlink("b", root.join("gone")).expect("link");
        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let ws = Workspace::open(root).expect("opens");
        let l = p("l");
        let gone = p("gone");
        let held: Held<'_> = [
            (&l, (b"a".as_slice(), false, true)),
            (&gone, (b"b".as_slice(), false, true)),
        ]
        .into_iter()
        .collect();
        let staged = vec![(
            &l,
            ws.stage(&l, b"d/c", false, true, false, None, &Verified::new())
                .expect("stages"),
        )];
        let removes = BTreeSet::from([&gone]);
        let mut journal = Journal::holding(Some(&held), None);
        ws.commit(&removes, staged, &mut journal, None, &Verified::new())
            .expect("commits");
        assert_eq!(
            fs::read_link(root.join("l")).expect("link"),
            Path::new("d/c")
        );
        assert!(fs::symlink_metadata(root.join("gone")).is_err());
        journal.undo(&ws).expect("undo");
        drop(journal);
        assert_eq!(fs::read_link(root.join("l")).expect("link"), Path::new("a"));
        assert_eq!(
            fs::read_link(root.join("gone")).expect("link"),
            Path::new("b")
        );
        assert_eq!(
            fs::read_dir(root).expect("ls").count(),
            2,
            "no temporaries left"
        );

        // An escaping link is refused even where no applier checked it.
        let escaping = Changeset::new(vec![FileChange {
            path: p("x"),
            operation: Operation::Create,
            before: None,
            after: Some(FileContent {
                data: b"../outside".to_vec(),
                executable: false,
                symlink: true,
            }),
        }])
        .expect("one path");
        let e = ws.apply_changeset(&escaping, false).expect_err("escapes");
        assert_eq!(e.code(), ErrorCode::PathEscape, "{e}");
        assert_eq!(fs::read_dir(root).expect("ls").count(), 2);

        // What an interrupted write tagged `t1` left: its staged link goes,
        // a user's link of a similar name stays.
        std::os::unix::fs::symlink("a", root.join(".rt-stage-t1-0123")).expect("link");
        std::os::unix::fs::symlink("a", root.join(".rt-stage-other-0123")).expect("link");
        let removed = ws
            .remove_leftovers(&[l], "t1", &BTreeSet::new())
            .expect("removes");
        assert_eq!(removed, [".rt-stage-t1-0123"]);
        assert!(fs::symlink_metadata(root.join(".rt-stage-other-0123")).is_ok());
    }

    #[test]
    fn apply_changeset_checks_every_precondition_first() {
        use crate::changeset::{FileChange, Operation};
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::write(root.join("a"), "a1").expect("write");
        fs::write(root.join("b"), "b1").expect("write");
        let ws = Workspace::open(root).expect("opens");
        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        let meta = |s: &str| {
            Some(FileMeta {
                digest: crate::Digest::of(s.as_bytes()),
                executable: false,
                symlink: false,
            })
        };
        let change = |path: &str, before: Option<FileMeta>, after: &str| FileChange {
            path: p(path),
            operation: Operation::Modify,
            before,
            after: Some(FileContent {
                data: after.as_bytes().to_vec(),
                executable: false,
                symlink: false,
            }),
        };
        // b's precondition is stale: nothing at all is written, a included.
        let stale = Changeset::new(vec![
            change("a", meta("a1"), "a2"),
            change("b", meta("b0"), "b2"),
        ])
        .expect("unique");
        let before = files(root);
        let e = ws.apply_changeset(&stale, false).expect_err("stale");
        assert_eq!(e.code(), ErrorCode::PreconditionFailed);
        assert!(e.to_string().starts_with("b: expected blob:sha256:"), "{e}");
        assert_eq!(files(root), before);
        // "Must be absent" is a precondition too.
        let exists = Changeset::new(vec![FileChange {
            before: None,
            ..change("a", None, "x")
        }])
        .expect("unique");
        assert!(ws
            .apply_changeset(&exists, false)
            .expect_err("exists")
            .to_string()
            .contains("expected absent"));
        // Fresh preconditions: applied.
        let fresh = Changeset::new(vec![
            change("a", meta("a1"), "a2"),
            change("b", meta("b1"), "b2"),
        ])
        .expect("unique");
        ws.apply_changeset(&fresh, false).expect("applies");
        assert_eq!(fs::read_to_string(root.join("b")).expect("b"), "b2");
    }
}
