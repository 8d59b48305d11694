//! A bare repository's objects, read through libgit2 (the `git` feature).

use super::super::kind::{Kind, SpecialKind};
use super::super::{lock, WorkspaceError};
use crate::diff::TreeFile;
use crate::RepoPath;
use git2::{ObjectType, Oid, Repository};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

/// The id of a tree a bare workspace reads.
pub(in crate::workspace) type TreeId = Oid;

/// The repository behind a bare workspace.
pub(in crate::workspace) struct Bare {
    repo: Mutex<Repository>,
}

/// The file mode git gives an executable blob, and a link.
const EXECUTABLE: i32 = 0o100_755;
const LINK: i32 = 0o120_000;

fn git(what: &'static str) -> impl FnOnce(git2::Error) -> WorkspaceError {
    move |source| WorkspaceError::Git { what, source }
}

impl Bare {
    /// The bare repository at `root`, or `None` when `root` is not one.
    pub(in crate::workspace) fn open(root: &Path) -> Result<Option<Bare>, WorkspaceError> {
        if !crate::state::is_bare_repository(root) {
            return Ok(None);
        }
        let repo = Repository::open_bare(root).map_err(git("open the bare repository"))?;
        Ok(Some(Bare {
            repo: Mutex::new(repo),
        }))
    }

    /// The tree of the commit `HEAD`'s branch is at; `None` while the
    /// branch is unborn (an empty repository).
    pub(in crate::workspace) fn head_tree(&self) -> Result<Option<Oid>, WorkspaceError> {
        let repo = lock(&self.repo);
        let head = match repo.head() {
            Ok(head) => head,
            Err(e) if e.code() == git2::ErrorCode::UnbornBranch => return Ok(None),
            Err(e) => return Err(git("read HEAD")(e)),
        };
        let commit = head.peel_to_commit().map_err(git("read HEAD's commit"))?;
        Ok(Some(commit.tree_id()))
    }

    /// What `tree` holds at `path`: its kind, and with `content` the file
    /// when it is a blob (`None` when nothing is there, or a blob is on the
    /// way). Without `content`, no blob is read.
    pub(in crate::workspace) fn entry(
        &self,
        tree: Option<Oid>,
        path: &RepoPath,
        content: bool,
    ) -> Result<Option<(Kind, Option<TreeFile>)>, WorkspaceError> {
        let Some(tree) = tree else {
            return Ok(None);
        };
        let repo = lock(&self.repo);
        let tree = repo.find_tree(tree).map_err(git("read a tree"))?;
        let entry = match tree.get_path(Path::new(path.as_str())) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git("look up a path")(e)),
        };
        let kind = match entry.kind() {
            Some(ObjectType::Tree) => return Ok(Some((Kind::Dir, None))),
            Some(ObjectType::Blob) if entry.filemode() == LINK => Kind::Link,
            Some(ObjectType::Blob) => Kind::File,
            _ => return Ok(Some((Kind::Special(SpecialKind::Submodule), None))),
        };
        if !content {
            return Ok(Some((kind, None)));
        }
        let blob = repo
            .find_blob(entry.id())
            .map_err(git("read a blob"))?
            .content()
            .to_vec();
        let file = match kind {
            Kind::Link => TreeFile::link(blob),
            _ => TreeFile {
                data: blob,
                executable: entry.filemode() == EXECUTABLE,
                symlink: false,
            },
        };
        Ok(Some((kind, Some(file))))
    }

    /// The first file under directory `dir` of `tree` that is not in
    /// `removes` (what stands in the way of a file written at `dir`).
    pub(in crate::workspace) fn kept_below(
        &self,
        tree: Option<Oid>,
        dir: &RepoPath,
        removes: &BTreeSet<&RepoPath>,
    ) -> Result<Option<String>, WorkspaceError> {
        let Some(tree) = tree else {
            return Ok(None);
        };
        let repo = lock(&self.repo);
        let root = repo.find_tree(tree).map_err(git("read a tree"))?;
        let below = root
            .get_path(Path::new(dir.as_str()))
            .and_then(|e| e.to_object(&repo))
            .and_then(|o| o.peel_to_tree())
            .map_err(git("read a directory"))?;
        let mut kept = None;
        below
            .walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
                if entry.kind() == Some(ObjectType::Tree) {
                    return git2::TreeWalkResult::Ok;
                }
                let rel = format!(
                    "{dir}/{parent}{}",
                    String::from_utf8_lossy(entry.name_bytes())
                );
                if RepoPath::from_bytes(rel.as_bytes()).is_ok_and(|p| removes.contains(&p)) {
                    return git2::TreeWalkResult::Ok;
                }
                kept = Some(rel);
                git2::TreeWalkResult::Abort
            })
            .or_else(|e| {
                if kept.is_some() {
                    Ok(())
                } else {
                    Err(git("walk a directory")(e))
                }
            })?;
        Ok(kept)
    }

    /// The id of the tree at directory `dir` of `tree` (the whole tree for
    /// `None`); `None` when no directory is there.
    pub(in crate::workspace) fn subtree(
        &self,
        tree: Option<Oid>,
        dir: Option<&RepoPath>,
    ) -> Result<Option<Oid>, WorkspaceError> {
        let Some(tree) = tree else {
            return Ok(None);
        };
        let Some(dir) = dir else {
            return Ok(Some(tree));
        };
        let repo = lock(&self.repo);
        let root = repo.find_tree(tree).map_err(git("read a tree"))?;
        let entry = match root.get_path(Path::new(dir.as_str())) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git("look up a directory")(e)),
        };
        Ok((entry.kind() == Some(ObjectType::Tree)).then(|| entry.id()))
    }
}
