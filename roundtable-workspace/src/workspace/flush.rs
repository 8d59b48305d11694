//! The durable flushes of a changeset's apply: a few files are flushed one
//! by one (and then their directories), cheaper than `syncfs`, whose cost
//! is everything dirty on the file system; many files with one `syncfs`
//! before and one after the renames.

use super::{errno, Workspace, WorkspaceError};
use crate::changeset::Changeset;
use std::collections::BTreeSet;

/// Up to this many touched paths, a durable apply flushes each file and
/// directory itself; beyond, one `syncfs` before and after the renames.
const PER_FILE_SYNC_LIMIT: usize = 16;

/// How a write is flushed to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flush {
    /// Not at all (not durable).
    None,
    /// Each staged file as it is written, then every directory whose
    /// entries changed.
    PerFile,
    /// One `syncfs` once every result is staged (so the renames only ever
    /// expose complete contents) and one after the renames and removals
    /// (so they survive a power loss).
    Syncfs,
}

impl Flush {
    /// How a write of `paths` paths is flushed, `durable` or not.
    pub(super) fn for_write(durable: bool, paths: usize) -> Flush {
        match (durable, paths <= PER_FILE_SYNC_LIMIT) {
            (false, _) => Flush::None,
            (true, true) => Flush::PerFile,
            (true, false) => Flush::Syncfs,
        }
    }
}

impl Workspace {
    /// Flush what staging wrote, before the renames expose it (staging
    /// itself flushed each file when per file).
    pub(super) fn flush_staged(
        &self,
        flush: Flush,
        changeset: &Changeset,
    ) -> Result<(), WorkspaceError> {
        match flush {
            Flush::Syncfs => self.syncfs(changeset),
            Flush::None | Flush::PerFile => Ok(()),
        }
    }

    /// Flush the renames and removals of a commit.
    pub(super) fn flush_committed(
        &self,
        flush: Flush,
        changeset: &Changeset,
    ) -> Result<(), WorkspaceError> {
        match flush {
            Flush::PerFile => self.plain().sync_parents(changeset),
            Flush::Syncfs => self.syncfs(changeset),
            Flush::None => Ok(()),
        }
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
            // Gone: removed by the change, and its parent is flushed too.
            let Some(fd) = self.open_dir(&dir)? else {
                continue;
            };
            rustix::fs::fsync(&*fd).map_err(|e| WorkspaceError::Commit {
                path: dir.clone(),
                source: errno(e),
            })?;
        }
        Ok(())
    }
}
