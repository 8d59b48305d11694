//! A build without the `git` feature: no bare repository is opened, so
//! there is never a [`Bare`] to read (the type has no values).

use super::super::kind::Kind;
use super::super::WorkspaceError;
use crate::diff::TreeFile;
use crate::RepoPath;
use std::collections::BTreeSet;
use std::path::Path;

/// No tree is ever read.
pub(in crate::workspace) type TreeId = std::convert::Infallible;

/// A bare repository this build cannot open: no value exists.
pub(in crate::workspace) enum Bare {}

impl Bare {
    /// `None` when `root` is not a bare repository; a bare one is refused
    /// (`invalid_argument`): this build cannot read its objects, and it
    /// has no working tree to fall back on.
    pub(in crate::workspace) fn open(root: &Path) -> Result<Option<Bare>, WorkspaceError> {
        if !crate::state::is_bare_repository(root) {
            return Ok(None);
        }
        Err(WorkspaceError::Root {
            root: root.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!(
                    "{}: a bare repository cannot be opened as a workspace",
                    crate::landing::NO_GIT
                ),
            ),
        })
    }

    pub(in crate::workspace) fn head_tree(&self) -> Result<Option<TreeId>, WorkspaceError> {
        match *self {}
    }

    pub(in crate::workspace) fn entry(
        &self,
        _tree: Option<TreeId>,
        _path: &RepoPath,
        _content: bool,
    ) -> Result<Option<(Kind, Option<TreeFile>)>, WorkspaceError> {
        match *self {}
    }

    pub(in crate::workspace) fn kept_below(
        &self,
        _tree: Option<TreeId>,
        _dir: &RepoPath,
        _removes: &BTreeSet<&RepoPath>,
    ) -> Result<Option<String>, WorkspaceError> {
        match *self {}
    }

    pub(in crate::workspace) fn subtree(
        &self,
        _tree: Option<TreeId>,
        _dir: Option<&RepoPath>,
    ) -> Result<Option<TreeId>, WorkspaceError> {
        match *self {}
    }
}
