//! A bare repository as a workspace: no working tree, so every read is a
//! blob of the commit `HEAD`'s branch points at (a [view](Workspace::view)
//! pins that commit when it is made, so one operation reads one commit),
//! and nothing is ever written — a change lands as a commit built from
//! objects (git landing mode), never as files in the git directory.
//!
//! The repository itself is read in `git` (the `git` feature). A build
//! without it opens no bare repository: [`Workspace::open`] refuses one
//! (`invalid_argument`, naming the feature), so every workspace it opens
//! has a working tree.

use super::kind::Kind;
use super::{Workspace, WorkspaceError};
use crate::diff::{ApplyError, TreeFile};
use crate::RepoPath;
use std::collections::BTreeSet;

#[cfg(feature = "git")]
mod git;
#[cfg(not(feature = "git"))]
#[path = "bare/no_git.rs"]
mod git;
pub(super) use git::{Bare, TreeId};

impl Workspace {
    /// Whether this workspace is a bare repository (no working tree: reads
    /// come from the branch's commit, and files are never written).
    pub fn is_bare(&self) -> bool {
        self.bare.is_some()
    }

    /// The tree this bare workspace reads: the one its view pinned, else
    /// the branch's now.
    pub(super) fn bare_tree(&self, bare: &Bare) -> Result<Option<TreeId>, WorkspaceError> {
        match self.pinned {
            Some(pinned) => Ok(pinned),
            None => bare.head_tree(),
        }
    }

    /// In a bare repository, the git tree id of directory `dir` (the whole
    /// tree for `None`) in the commit this workspace reads, as a marker of
    /// its content: `Ok(None)` for a workspace with a working tree,
    /// `Ok(Some(None))` when no directory is there.
    pub fn bare_subtree(
        &self,
        dir: Option<&RepoPath>,
    ) -> Result<Option<Option<String>>, WorkspaceError> {
        let Some(bare) = &self.bare else {
            return Ok(None);
        };
        let tree = self.bare_tree(bare)?;
        Ok(Some(bare.subtree(tree, dir)?.map(|id| id.to_string())))
    }

    /// A bare workspace's read of `path`.
    pub(super) fn bare_read(
        &self,
        bare: &Bare,
        path: &RepoPath,
    ) -> Result<Option<TreeFile>, WorkspaceError> {
        match bare.entry(self.bare_tree(bare)?, path, true)? {
            None => Ok(None),
            Some((Kind::Special(kind), _)) => Err(WorkspaceError::Special {
                path: path.to_string(),
                kind,
            }),
            Some((_, Some(file))) => Ok(Some(file)),
            Some((_, None)) => Err(WorkspaceError::Apply(ApplyError::File {
                path: path.as_str().as_bytes().to_vec(),
                reason: "is not a regular file".into(),
            })),
        }
    }

    /// A bare workspace's look at what is at `path`.
    pub(super) fn bare_kind(
        &self,
        bare: &Bare,
        path: &RepoPath,
    ) -> Result<Option<Kind>, WorkspaceError> {
        Ok(bare
            .entry(self.bare_tree(bare)?, path, false)?
            .map(|(kind, _)| kind))
    }

    /// The room check of a bare workspace: a blob where a directory must
    /// be, or a directory holding files the change keeps where a file
    /// goes.
    pub(super) fn bare_room_for(
        &self,
        bare: &Bare,
        path: &RepoPath,
        removes: &BTreeSet<&RepoPath>,
    ) -> Result<(), WorkspaceError> {
        let in_the_way = |what: String| {
            WorkspaceError::Apply(ApplyError::File {
                path: path.as_str().as_bytes().to_vec(),
                reason: what,
            })
        };
        let tree = self.bare_tree(bare)?;
        let components: Vec<&str> = path.components().collect();
        for depth in 1..components.len() {
            let ancestor = RepoPath::from_bytes(components[..depth].join("/").as_bytes())?;
            match bare.entry(tree, &ancestor, false)?.map(|(kind, _)| kind) {
                Some(Kind::Dir) => continue,
                Some(_) if !removes.contains(&ancestor) => {
                    return Err(in_the_way(format!(
                        "`{ancestor}` is a file, so it cannot be a directory"
                    )))
                }
                _ => break,
            }
        }
        if bare
            .entry(tree, path, false)?
            .is_some_and(|(kind, _)| kind == Kind::Dir)
        {
            if let Some(rel) = bare.kept_below(tree, path, removes)? {
                return Err(in_the_way(format!(
                    "a directory is in the way (it holds `{rel}`)"
                )));
            }
        }
        Ok(())
    }

    /// Refuse a write: a bare repository has no working tree.
    pub(super) fn refuse_bare_write(&self) -> Result<(), WorkspaceError> {
        if self.is_bare() {
            return Err(WorkspaceError::Bare {
                root: self.root.display().to_string(),
            });
        }
        Ok(())
    }
}
