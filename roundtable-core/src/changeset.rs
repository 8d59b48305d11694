//! [`Changeset`]: the one normalized form every proposal becomes.
//!
//! A unified diff and an Opcore edit plan both turn into a changeset, built
//! against the current files by reading only the files they touch.
//! Everything downstream — coverage, policy, validation, apply, rollback —
//! works on changesets, never on patch text: each touched path carries its
//! precondition (the exact digest and mode it must have now, or that it must
//! be absent) and its complete resulting content and mode.

use crate::{Digest, RepoPath};
use serde::Serialize;

/// A file's state as a precondition: its digest and executable bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct FileMeta {
    /// `blob:sha256:` of the bytes.
    pub digest: Digest,
    /// Whether the executable bit is set.
    pub executable: bool,
}

/// A file's complete resulting state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContent {
    /// The bytes.
    pub data: Vec<u8>,
    /// Whether the executable bit is set.
    pub executable: bool,
}

impl FileContent {
    /// The digest and mode of this content.
    pub fn meta(&self) -> FileMeta {
        FileMeta {
            digest: Digest::of(&self.data),
            executable: self.executable,
        }
    }
}

/// What happens to a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Operation {
    /// The path is created (it must be absent now).
    Create,
    /// The path's content and/or mode changes.
    Modify,
    /// The path is removed.
    Delete,
    /// The path is created from another path, which is removed
    /// (that path has its own [`Operation::RenamedAway`] entry).
    Rename {
        /// The source path.
        from: RepoPath,
    },
    /// The path is removed because it was renamed to `to`.
    RenamedAway {
        /// The destination path.
        to: RepoPath,
    },
    /// The path is created as a copy of another path (which is unchanged).
    Copy {
        /// The source path.
        from: RepoPath,
    },
}

/// One touched path: what must hold now, and what it becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path.
    pub path: RepoPath,
    /// What happens to it.
    pub operation: Operation,
    /// The precondition: the state it must have now, or `None` for "must
    /// be absent".
    pub before: Option<FileMeta>,
    /// The result: the complete new state, or `None` for "removed".
    pub after: Option<FileContent>,
}

impl FileChange {
    /// `Some((before, after))` executable bits when the mode changes.
    pub fn mode_change(&self) -> Option<(bool, bool)> {
        match (&self.before, &self.after) {
            (Some(b), Some(a)) if b.executable != a.executable => Some((b.executable, a.executable)),
            _ => None,
        }
    }
}

/// A normalized change: one [`FileChange`] per touched path, sorted by path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Changeset {
    files: Vec<FileChange>,
}

/// A changeset that names one path twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}: touched twice in one changeset")]
pub struct DuplicatePath(pub RepoPath);

impl Changeset {
    /// A changeset of these changes; each path may appear once.
    pub fn new(mut files: Vec<FileChange>) -> Result<Changeset, DuplicatePath> {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        if let Some(w) = files.windows(2).find(|w| w[0].path == w[1].path) {
            return Err(DuplicatePath(w[0].path.clone()));
        }
        Ok(Changeset { files })
    }

    /// The changes, sorted by path.
    pub fn files(&self) -> &[FileChange] {
        &self.files
    }

    /// Whether nothing changes.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}
