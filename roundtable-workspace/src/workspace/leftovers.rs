//! Removing what an interrupted write left — its staged results, its
//! backup directories and the directories it created — and nothing else.

use super::kind::{kind_at, Kind};
use super::stage::temp_prefix;
use super::{errno, Workspace, WorkspaceError, DIR_FLAGS};
use crate::RepoPath;
use rustix::fs::{AtFlags, Mode};
use std::collections::BTreeSet;
use std::io;

impl Workspace {
    /// Remove what an interrupted write tagged `tag` may have left next to
    /// `paths` — and nothing else: its staged results
    /// (`.rt-stage-TAG-*`) in the directories on the way to each path, its
    /// backup directories (`.rt-backup-TAG-*`) at the root, and of the
    /// directories it created (`created`), those now empty. A user's file
    /// or directory is never touched, whatever its name. Only called under
    /// the apply lock, when no apply is running. Returns what it removed.
    pub(crate) fn remove_leftovers(
        &self,
        paths: &[RepoPath],
        tag: &str,
        created: &BTreeSet<RepoPath>,
    ) -> Result<Vec<String>, WorkspaceError> {
        if self.memo.is_some() {
            return self.plain().remove_leftovers(paths, tag, created);
        }
        let (stage, backup) = (
            temp_prefix("stage", Some(tag)),
            temp_prefix("backup", Some(tag)),
        );
        let mut removed = Vec::new();
        let mut dirs: BTreeSet<String> = BTreeSet::new();
        dirs.insert(String::new());
        for p in paths {
            let components: Vec<&str> = p.components().collect();
            for depth in 1..components.len() {
                dirs.insert(components[..depth].join("/"));
            }
        }
        let io = |p: &str, e: io::Error| WorkspaceError::Commit {
            path: p.to_owned(),
            source: e,
        };
        for dir in &dirs {
            let Some(fd) = self.open_dir(dir)? else {
                continue;
            };
            let names: Vec<String> = rustix::fs::Dir::read_from(&*fd)
                .map_err(|e| io(dir, errno(e)))?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            for name in names {
                let shown = if dir.is_empty() {
                    name.clone()
                } else {
                    format!("{dir}/{name}")
                };
                let kind = kind_at(&*fd, &name).map_err(|e| io(&shown, e))?;
                if name.starts_with(&stage) && matches!(kind, Some(Kind::File | Kind::Link)) {
                    rustix::fs::unlinkat(&*fd, name.as_str(), AtFlags::empty())
                        .map_err(|e| io(&shown, errno(e)))?;
                    removed.push(shown);
                } else if dir.is_empty() && name.starts_with(&backup) && kind == Some(Kind::Dir) {
                    let backups = rustix::fs::openat(&*fd, name.as_str(), DIR_FLAGS, Mode::empty())
                        .map_err(|e| io(&shown, errno(e)))?;
                    for entry in rustix::fs::Dir::read_from(&backups)
                        .map_err(|e| io(&shown, errno(e)))?
                        .flatten()
                    {
                        let n = entry.file_name().to_string_lossy().into_owned();
                        if n != "." && n != ".." {
                            rustix::fs::unlinkat(&backups, n.as_str(), AtFlags::empty())
                                .map_err(|e| io(&shown, errno(e)))?;
                        }
                    }
                    rustix::fs::unlinkat(&*fd, name.as_str(), AtFlags::REMOVEDIR)
                        .map_err(|e| io(&shown, errno(e)))?;
                    removed.push(shown);
                }
            }
        }
        // Directories the interrupted write created and nothing now uses,
        // deepest first.
        for dir in created.iter().rev() {
            if let Some((parent, name)) = self.parent(dir)? {
                if rustix::fs::unlinkat(&*parent, name.as_str(), AtFlags::REMOVEDIR).is_ok() {
                    removed.push(format!("{dir}/"));
                }
            }
        }
        Ok(removed)
    }
}
