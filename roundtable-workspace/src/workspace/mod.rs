//! The workspace: a handle on a repository root through which all file
//! access goes, and the all-or-nothing apply of a `Changeset`.
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
//!
//! The parts, each readable alone:
//!
//! | module | what |
//! |---|---|
//! | `mod.rs` | [`Workspace`], [`open`](Workspace::open), [`view`](Workspace::view), the no-follow walk to a path's directory |
//! | `error` | [`WorkspaceError`], its code and details |
//! | `kind` | what is at a path ([`SpecialKind`]), without following links |
//! | `read` | reads ([`read`](Workspace::read), [`meta`](Workspace::meta)), links read with `readlinkat`, the [`Tree`](crate::diff::Tree) the applier reads |
//! | `advisory` | [`meta_advisory`](Workspace::meta_advisory): digests for answers that write nothing, from a [`DigestMemo`] keyed by `lstat` (never for a write) |
//! | `view` | what a view remembers, [`prefetch`](Workspace::prefetch), the re-check of its directories before a write |
//! | `room` | [`check_room`](Workspace::check_room): nothing on disk stands in a result's way |
//! | `write` | the write path: [`WriteOptions`], [`WriteMode`], the streaming patch apply, the changeset apply, [`apply_patch`] and [`apply_changeset`] |
//! | `stage` | results written to temporary files beside their targets |
//! | `commit` | staged results renamed into place, undone on failure |
//! | `journal` | the undo journal and the backups of old contents |
//! | `flush` | the durable flushes (per file, or `syncfs`) |
//! | `leftovers` | removing what an interrupted write left |

mod advisory;
mod bare;
mod commit;
mod error;
mod flush;
mod journal;
mod kind;
mod leftovers;
mod read;
mod room;
mod stage;
#[cfg(test)]
mod testing;
mod view;
mod write;

pub use advisory::{DigestMemo, DigestMemoStats};
pub use error::apply_details;
pub use error::WorkspaceError;
pub(crate) use journal::Held;
pub use kind::SpecialKind;
pub use write::{apply_changeset, apply_patch, PathAction, PathChange, WriteMode, WriteOptions};

use crate::RepoPath;
use error::tree;
use kind::{kind_at, Kind};
use rustix::fs::{Mode, OFlags};
use std::collections::BTreeMap;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use view::Memo;

/// A directory handle and the name of an entry in it.
type Located = (Arc<OwnedFd>, String);

/// A handle on a repository root.
pub struct Workspace {
    root: PathBuf,
    dir: Arc<OwnedFd>,
    /// Set on a [view](Workspace::view) (and, directories only, while
    /// [`Workspace::apply_patch`] reads): what it has already opened and read.
    memo: Option<Memo>,
    /// Set when `root` is a bare repository: reads come from its branch's
    /// commit, and nothing is written.
    bare: Option<Arc<bare::Bare>>,
    /// On a view of a bare repository: the tree it reads (`Some(None)`:
    /// the branch is unborn), pinned when the view was made.
    pinned: Option<Option<bare::TreeId>>,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn errno(e: rustix::io::Errno) -> io::Error {
    io::Error::from(e)
}

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
            bare: bare::Bare::open(root)?.map(Arc::new),
            pinned: None,
        })
    }

    /// A view of the same root for one operation that reads files and then
    /// may write them (validation, then the apply): it opens each directory
    /// once and reads each file once, and every later read of a path is
    /// answered with what the first saw — one consistent picture. Before
    /// its first write, the changeset apply (`apply_changeset_with`)
    /// checks each precondition against what was read by a fresh `fstat`
    /// (reading again only a file whose metadata moved or is too recent to
    /// trust), then forgets everything. Not for sharing between threads that
    /// each expect fresh reads: make one view per operation.
    ///
    /// A view of a bare repository reads the commit its branch was at when
    /// the view was made.
    pub fn view(&self) -> Workspace {
        let mut view = self.with_memo(Some(Memo {
            files: Some(Default::default()),
            ..Memo::default()
        }));
        if let Some(bare) = &self.bare {
            // An unreadable HEAD is reported by the first read instead.
            view.pinned = bare.head_tree().ok();
        }
        view
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
            bare: self.bare.clone(),
            pinned: self.pinned,
        }
    }

    /// The root this workspace was opened at.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory `dir` (repository-relative, `""` for the root),
    /// opened without following links; `None` when it is not there (or
    /// not a directory).
    fn open_dir(&self, dir: &str) -> Result<Option<Arc<OwnedFd>>, WorkspaceError> {
        if dir.is_empty() {
            return Ok(Some(Arc::clone(&self.dir)));
        }
        let rp = RepoPath::from_bytes(dir.as_bytes())?;
        Ok(self.parent(&rp)?.and_then(|(parent, name)| {
            rustix::fs::openat(&*parent, name.as_str(), DIR_FLAGS, Mode::empty())
                .ok()
                .map(Arc::new)
        }))
    }

    /// The directory holding `path`'s last component, reached without
    /// following links; `None` when a directory on the way is missing. A
    /// directory on the way that holds a `.git` entry is another
    /// repository's checkout: [`WorkspaceError::Special`]
    /// ([`SpecialKind::Submodule`]), in every mode.
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
                    // A directory holding `.git` (a submodule's or nested
                    // repository's checkout, a worktree) is another
                    // repository: nothing in it is read or written.
                    if kind_at(&fd, ".git").map_err(|e| tree(path, e))?.is_some() {
                        return Err(WorkspaceError::Special {
                            path: prefix,
                            kind: SpecialKind::Submodule,
                        });
                    }
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
}

/// Directory handles by path (`a/b`; the root is not in it), each checked
/// to be the directory at that path when the write began.
type Verified = BTreeMap<String, Arc<OwnedFd>>;

/// The path of `path`'s parent directory (`""` for the root).
fn parent_of(path: &RepoPath) -> &str {
    path.as_str().rsplit_once('/').map_or("", |(p, _)| p)
}
