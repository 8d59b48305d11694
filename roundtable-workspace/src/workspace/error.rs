//! Why a workspace operation failed: [`WorkspaceError`], its stable code
//! and structured details, and the small constructors the other parts use
//! to wrap an I/O error with its path.

use super::SpecialKind;
use crate::changeset::FileMeta;
use crate::diff::{ApplyError, TreeError};
use crate::{ErrorCode, PathError, RepoPath};
use std::io;

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
    /// The root cannot be opened as a workspace: not a directory, or (a
    /// build without the `git` feature) a bare repository.
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
    /// A bare repository has no working tree: files are never written into
    /// its git directory (changes land as commits, in git landing mode).
    #[error("{root} is a bare repository: it has no working tree to write files to (land changes as commits: workspace.configure git mode)")]
    Bare {
        /// The repository.
        root: String,
    },
    /// Reading a bare repository's objects failed.
    #[cfg(feature = "git")]
    #[error("could not {what}: {source}")]
    Git {
        /// What was being read.
        what: &'static str,
        /// The cause.
        #[source]
        source: git2::Error,
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
            WorkspaceError::Bare { .. } => ErrorCode::PreconditionFailed,
            #[cfg(feature = "git")]
            WorkspaceError::Git { .. } => ErrorCode::Io,
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
            WorkspaceError::Bare { root } => json!({"root": root, "bare": true}),
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
pub fn apply_details(a: &ApplyError) -> serde_json::Value {
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

/// The applier reads through [`Tree`](crate::diff::Tree), whose error boxes ours: take it back
/// out so a symlink is still reported as a symlink.
pub(super) fn unwrap_tree_error(t: TreeError) -> WorkspaceError {
    let TreeError { code, path, source } = t;
    match source.downcast::<WorkspaceError>() {
        Ok(ours) => *ours,
        Err(source) => WorkspaceError::Apply(ApplyError::Tree(TreeError { code, path, source })),
    }
}

/// A precondition's side as a message shows it: `absent`, or the digest
/// and what kind of file it is.
pub(super) fn describe(meta: Option<&FileMeta>) -> String {
    match meta {
        None => "absent".into(),
        Some(m) if m.symlink => format!("{} (symbolic link)", m.digest),
        Some(m) if m.executable => format!("{} (executable)", m.digest),
        Some(m) => m.digest.to_string(),
    }
}

/// An I/O error at the directory `prefix`.
pub(super) fn tree_at(prefix: &str, e: io::Error) -> WorkspaceError {
    WorkspaceError::Apply(ApplyError::Tree(boxed(prefix.as_bytes(), ErrorCode::Io, e)))
}

/// `e` as the applier's [`TreeError`] at `path`, with `code`.
pub(super) fn boxed(
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

/// An I/O error at `path` as a [`TreeError`].
pub(super) fn io_error(path: &RepoPath, e: io::Error) -> TreeError {
    boxed(path.as_str().as_bytes(), ErrorCode::Io, e)
}

/// An I/O error at `path` as a [`WorkspaceError`].
pub(super) fn tree(path: &RepoPath, e: io::Error) -> WorkspaceError {
    WorkspaceError::Apply(ApplyError::Tree(io_error(path, e)))
}
