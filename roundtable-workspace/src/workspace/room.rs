//! The room check: nothing on disk stands in the way of a change's
//! results (a file where a directory must be, a directory holding other
//! files where a file goes, a link on the way the change does not
//! remove), found before anything is written so a check and the real
//! apply agree.

use super::error::tree;
use super::kind::{kind_at, Kind};
use super::{Workspace, WorkspaceError};
use crate::changeset::Changeset;
use crate::diff::ApplyError;
use crate::RepoPath;
use std::collections::BTreeSet;

impl Workspace {
    /// The directories writing `changeset` creates: every directory on the
    /// way to a result that is not a directory now.
    pub(crate) fn missing_dirs(
        &self,
        changeset: &Changeset,
    ) -> Result<BTreeSet<RepoPath>, WorkspaceError> {
        let mut out = BTreeSet::new();
        // Each directory on the way is looked at once, however many
        // results lie below it.
        let mut present: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for c in changeset.files().iter().filter(|c| c.after.is_some()) {
            let path = c.path.as_str();
            for (end, _) in path.match_indices('/') {
                let prefix = &path[..end];
                if present.contains(prefix) {
                    continue;
                }
                let dir = RepoPath::from_bytes(prefix.as_bytes())?;
                if out.contains(&dir) || self.kind(&dir)? != Some(Kind::Dir) {
                    out.insert(dir);
                } else {
                    present.insert(prefix);
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

    /// Refuse a write that something on disk stands in the way of, once
    /// the change's own removals are done: a file where a parent directory
    /// must be, or a directory (holding anything the change keeps) where
    /// the file goes. Found now, so a check and the real apply agree and
    /// nothing is touched.
    pub(super) fn check_room_for(
        &self,
        path: &RepoPath,
        removes: &BTreeSet<&RepoPath>,
    ) -> Result<(), WorkspaceError> {
        if let Some(bare) = &self.bare {
            return self.bare_room_for(bare, path, removes);
        }
        let in_the_way = |what: String| {
            WorkspaceError::Apply(ApplyError::File {
                path: path.as_str().as_bytes().to_vec(),
                reason: what,
            })
        };
        // Usually every directory on the way exists: then the one look-up
        // of the parent says so. Otherwise find the first that does not.
        // Nothing is written into a submodule's (a nested repository's)
        // checkout.
        let parent = match self.parent(path) {
            Err(e @ WorkspaceError::Special { .. }) => return Err(e),
            found => found.ok().flatten(),
        };
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
}
