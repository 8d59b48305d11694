//! A bare repository as a workspace: no working tree, so every read is a
//! blob of the commit `HEAD`'s branch points at (a [view](Workspace::view)
//! pins that commit when it is made, so one operation reads one commit),
//! and nothing is ever written — a change lands as a commit built from
//! objects (git landing mode), never as files in the git directory.

use super::kind::{Kind, SpecialKind};
use super::{lock, Workspace, WorkspaceError};
use crate::diff::{ApplyError, TreeFile};
use crate::RepoPath;
use git2::{ObjectType, Oid, Repository};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

/// The repository behind a bare workspace.
pub(super) struct Bare {
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
    pub(super) fn open(root: &Path) -> Result<Option<Bare>, WorkspaceError> {
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
    pub(super) fn head_tree(&self) -> Result<Option<Oid>, WorkspaceError> {
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
    pub(super) fn entry(
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
    pub(super) fn kept_below(
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
    pub(super) fn subtree(
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

impl Workspace {
    /// Whether this workspace is a bare repository (no working tree: reads
    /// come from the branch's commit, and files are never written).
    pub fn is_bare(&self) -> bool {
        self.bare.is_some()
    }

    /// The tree this bare workspace reads: the one its view pinned, else
    /// the branch's now.
    pub(super) fn bare_tree(&self, bare: &Bare) -> Result<Option<Oid>, WorkspaceError> {
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
