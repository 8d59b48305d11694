//! What a [view](Workspace::view) remembers — directory handles, and each
//! file as it first read it with what `fstat` said then — so one governed
//! operation opens each directory and reads each file once;
//! [`prefetch`](Workspace::prefetch) reads ahead on another thread; and
//! before a write, the check that every remembered directory is still the
//! one at its path.

use super::error::tree_at;
use super::{errno, lock, Verified, Workspace, WorkspaceError, DIR_FLAGS};
use crate::changeset::FileMeta;
use crate::diff::TreeFile;
use crate::RepoPath;
use rustix::fs::Mode;
use std::os::fd::OwnedFd;
use std::sync::Arc;

/// What a view remembers. Forgotten before its first write, so it never
/// holds a stale handle or content.
#[derive(Default)]
pub(super) struct Memo {
    /// Directory handles by path (`a/b`), so reading a thousand files in
    /// one directory opens it once.
    pub(super) dirs: std::sync::Mutex<std::collections::HashMap<String, Arc<OwnedFd>>>,
    /// Each file read, with its digest once computed and what `fstat`
    /// said of it then; `None` when files are not remembered.
    pub(super) files: Option<std::sync::Mutex<std::collections::HashMap<RepoPath, Arc<Seen>>>>,
}

/// A file as a view first read it.
pub(super) struct Seen {
    pub(super) file: TreeFile,
    pub(super) meta: std::sync::OnceLock<FileMeta>,
    pub(super) stamp: Stamp,
}

impl Seen {
    /// Its digest and mode, computed once.
    pub(super) fn meta(&self) -> FileMeta {
        *self.meta.get_or_init(|| FileMeta::of(&self.file))
    }

    /// The file, moved out when nothing else holds it.
    pub(super) fn into_file(seen: Arc<Seen>) -> TreeFile {
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
pub(super) struct Stamp {
    stat: crate::state::Stat,
    settled: bool,
}

impl Stamp {
    /// The stamp of what `fstat` (or `statat`) just said.
    pub(super) fn of(st: &rustix::fs::Stat) -> Stamp {
        let stat = crate::state::Stat::of(st);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Stamp {
            stat,
            settled: stat.newest().0 < now - 1,
        }
    }

    /// A stamp that never proves a file unchanged (a blob read from a
    /// bare repository has no `fstat`).
    pub(super) fn never() -> Stamp {
        Stamp {
            stat: crate::state::Stat::default(),
            settled: false,
        }
    }

    /// The permission bits of the regular file it was taken of (`None`:
    /// a link, or a blob of a bare repository).
    pub(super) fn permissions(&self) -> Option<u32> {
        self.stat.permissions()
    }

    /// Whether `now` is certainly the same, unwritten file.
    pub(super) fn unchanged(&self, now: &Stamp) -> bool {
        self.settled && self.stat == now.stat
    }
}

impl Workspace {
    /// Every directory handle this view remembers, by path.
    pub(super) fn remembered_dirs(&self) -> Verified {
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
    pub(super) fn verify_dirs(&self) -> Result<(), WorkspaceError> {
        // Opened afresh once each: a directory's ancestors are looked up
        // through what this check itself just opened, not reopened from
        // the root for every directory below them.
        let fresh = self.with_memo(Some(Memo::default()));
        for (prefix, fd) in self.remembered_dirs() {
            fresh.still_at(&prefix, &fd, "the directory validation read")?;
        }
        Ok(())
    }

    /// Check that `fd` is still the directory at `prefix` (`a/b`),
    /// re-resolved from the root without following links; else
    /// [`WorkspaceError::Precondition`] naming what it was (`expected`).
    pub(super) fn still_at(
        &self,
        prefix: &str,
        fd: &OwnedFd,
        expected: &str,
    ) -> Result<(), WorkspaceError> {
        let identity = |fd: &OwnedFd| rustix::fs::fstat(fd).map(|st| (st.st_dev, st.st_ino));
        let seen = identity(fd).map_err(|e| tree_at(prefix, errno(e)))?;
        let now = if prefix.is_empty() {
            Some(identity(&self.dir).map_err(|e| tree_at(prefix, errno(e)))?)
        } else {
            let rp = RepoPath::from_bytes(prefix.as_bytes())?;
            match self.parent(&rp) {
                Ok(Some((parent, name))) => {
                    match rustix::fs::openat(&*parent, name.as_str(), DIR_FLAGS, Mode::empty()) {
                        Ok(fd) => Some(identity(&fd).map_err(|e| tree_at(prefix, errno(e)))?),
                        Err(_) => None,
                    }
                }
                _ => None,
            }
        };
        if now != Some(seen) {
            return Err(WorkspaceError::Precondition {
                path: format!("{prefix}/"),
                expected: expected.into(),
                actual: match now {
                    Some(_) => "another directory".into(),
                    None => "no directory (moved, removed or replaced by a link)".into(),
                },
            });
        }
        Ok(())
    }

    /// Drop every remembered handle and file (before a write).
    pub(super) fn forget(&self) {
        if let Some(m) = &self.memo {
            lock(&m.dirs).clear();
            if let Some(files) = &m.files {
                lock(files).clear();
            }
        }
    }

    /// The file at `path` as this view first read it, if it did.
    pub(super) fn seen(&self, path: &RepoPath) -> Option<Arc<Seen>> {
        let files = self.memo.as_ref()?.files.as_ref()?;
        lock(files).get(path).cloned()
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
}
