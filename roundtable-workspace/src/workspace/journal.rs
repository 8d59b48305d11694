//! The undo journal of a commit: every step in order, and where each
//! replaced or removed file's old content is kept until the commit is done
//! (a hard link in a hidden backup directory, or the caller's copy).

use super::stage::{create_unique, permissions, regular_mode, temp_prefix};
use super::{errno, Workspace, DIR_FLAGS};
use crate::RepoPath;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::io::{self, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::sync::Arc;

/// Old contents the caller holds in memory, with their executable bits:
/// a commit that has them restores from them if it must undo, instead of
/// keeping hard links to the old files.
/// (A link's is its target, with the third flag set.)
pub(crate) type Held<'k> = std::collections::HashMap<&'k RepoPath, (&'k [u8], bool, bool)>;

/// Every step of a commit, so it can be undone in reverse, and the backup
/// directory holding old contents until the commit is done.
pub(super) struct Journal<'k> {
    pub(super) steps: Vec<Step<'k>>,
    /// Every directory a step wrote in (`a/b`, `""` for the root) with the
    /// handle it used: checked after the commit to still be at its path.
    pub(super) used: Vec<(String, Arc<OwnedFd>)>,
    /// The old contents the caller holds, if it holds them.
    held: Option<&'k Held<'k>>,
    /// A hidden directory at the root (so directories emptied by the change
    /// really are empty), with its name.
    backups: Option<(Arc<OwnedFd>, Arc<OwnedFd>, String)>,
    /// Set when undo failed: the backups are the only copy, keep them.
    keep_backups: bool,
    /// The tag of every temporary name ([`WriteOptions::tag`](super::WriteOptions::tag)).
    tag: Option<&'k str>,
}

/// Where a replaced or removed file's old content is while the commit runs.
pub(super) enum Backup<'k> {
    /// A hard link, under this name, in the backup directory.
    Link(String),
    /// The caller's copy, its executable bit, whether it is a link, and
    /// the permission bits the file had on disk (restored with it).
    Held(&'k [u8], bool, bool, Option<u32>),
}

/// One step of a commit, undone in reverse.
pub(super) enum Step<'k> {
    /// The file at `path` was unlinked; its content lives on in `backup`.
    /// (By path, not directory handle: its directory may be removed and
    /// re-created by later steps and their undoing.)
    Removed { path: RepoPath, backup: Backup<'k> },
    /// The empty directory at `path` was removed.
    RemovedDir { path: RepoPath },
    /// A directory was created.
    CreatedDir { parent: Arc<OwnedFd>, name: String },
    /// A new file was renamed onto `name`, replacing the file whose old
    /// content is in `backup`, if there was one.
    Placed {
        dir: Arc<OwnedFd>,
        name: String,
        backup: Option<Backup<'k>>,
    },
}

impl<'k> Journal<'k> {
    /// A journal that restores from `held` where it has a path's content.
    pub(super) fn holding(held: Option<&'k Held<'k>>, tag: Option<&'k str>) -> Journal<'k> {
        Journal {
            steps: Vec::new(),
            used: Vec::new(),
            held,
            backups: None,
            keep_backups: false,
            tag,
        }
    }

    /// Keep the old content of `path` (`name` in `dir`) until the commit is
    /// done: the caller's copy when it holds one, else a hard link in the
    /// backup directory (no copy).
    pub(super) fn backup(
        &mut self,
        root: &Arc<OwnedFd>,
        path: &RepoPath,
        dir: &OwnedFd,
        name: &str,
    ) -> io::Result<Backup<'k>> {
        if let Some(&(data, executable, symlink)) = self.held.and_then(|h| h.get(path)) {
            let mode = regular_mode(dir, name)?;
            return Ok(Backup::Held(data, executable, symlink, mode));
        }
        self.link_backup(root, dir, name).map(Backup::Link)
    }

    fn link_backup(
        &mut self,
        root: &Arc<OwnedFd>,
        dir: &OwnedFd,
        name: &str,
    ) -> io::Result<String> {
        if self.backups.is_none() {
            let ((), dir_name) = create_unique(&temp_prefix("backup", self.tag), |n| {
                rustix::fs::mkdirat(&**root, n, Mode::from_raw_mode(0o700))
            })?;
            let fd = rustix::fs::openat(&**root, dir_name.as_str(), DIR_FLAGS, Mode::empty())
                .map_err(errno)?;
            self.backups = Some((Arc::clone(root), Arc::new(fd), dir_name));
        }
        let (_, backups, _) = self.backups.as_ref().expect("created above");
        let backup = self.steps.len().to_string();
        rustix::fs::linkat(dir, name, &**backups, backup.as_str(), AtFlags::empty())
            .map_err(errno)?;
        Ok(backup)
    }

    /// Put the old content in `backup` back at `name` in `dir`.
    fn put_back(&self, backup: &Backup<'_>, dir: &OwnedFd, name: &str) -> rustix::io::Result<()> {
        match backup {
            Backup::Link(b) => rustix::fs::renameat(self.backup_dir(), b.as_str(), dir, name),
            Backup::Held(data, executable, symlink, old) => {
                let os = |e: io::Error| {
                    rustix::io::Errno::from_raw_os_error(
                        e.raw_os_error()
                            .unwrap_or(rustix::io::Errno::IO.raw_os_error()),
                    )
                };
                if *symlink {
                    let target = std::ffi::OsStr::from_bytes(data);
                    let ((), temp) = create_unique(&temp_prefix("stage", self.tag), |n| {
                        rustix::fs::symlinkat(target, dir, n)
                    })
                    .map_err(os)?;
                    return rustix::fs::renameat(dir, temp.as_str(), dir, name).inspect_err(|_| {
                        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                    });
                }
                let mode = Mode::from_raw_mode(permissions(*old, *executable));
                let (fd, temp) = create_unique(&temp_prefix("stage", self.tag), |n| {
                    rustix::fs::openat(
                        dir,
                        n,
                        OFlags::WRONLY
                            | OFlags::CREATE
                            | OFlags::EXCL
                            | OFlags::NOFOLLOW
                            | OFlags::CLOEXEC,
                        mode,
                    )
                })
                .map_err(os)?;
                rustix::fs::fchmod(&fd, mode)?;
                let written = std::fs::File::from(fd).write_all(data).map_err(os);
                match written.and_then(|()| rustix::fs::renameat(dir, temp.as_str(), dir, name)) {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        let _ = rustix::fs::unlinkat(dir, temp.as_str(), AtFlags::empty());
                        Err(e)
                    }
                }
            }
        }
    }

    fn backup_dir(&self) -> &OwnedFd {
        &self
            .backups
            .as_ref()
            .expect("a backup exists only with its directory")
            .1
    }

    /// Undo every step, last first; what could not be undone, if
    /// anything, as one message.
    pub(super) fn undo(&mut self, ws: &Workspace) -> Result<(), String> {
        let mut failures = Vec::new();
        let parent = |path: &RepoPath| match ws.parent(path) {
            Ok(Some(found)) => Ok(found),
            _ => Err(rustix::io::Errno::NOENT),
        };
        while let Some(step) = self.steps.pop() {
            let result = match &step {
                Step::Placed {
                    dir,
                    name,
                    backup: Some(b),
                } => self.put_back(b, dir, name),
                Step::Placed {
                    dir,
                    name,
                    backup: None,
                } => rustix::fs::unlinkat(&**dir, name.as_str(), AtFlags::empty()),
                Step::CreatedDir { parent, name } => {
                    rustix::fs::unlinkat(&**parent, name.as_str(), AtFlags::REMOVEDIR)
                }
                Step::RemovedDir { path } => parent(path).and_then(|(dir, name)| {
                    rustix::fs::mkdirat(&*dir, name.as_str(), Mode::from_raw_mode(0o755))
                }),
                Step::Removed { path, backup } => {
                    parent(path).and_then(|(dir, name)| self.put_back(backup, &dir, &name))
                }
            };
            if let Err(e) = result {
                failures.push(e.to_string());
            }
        }
        if failures.is_empty() {
            return Ok(());
        }
        // Old contents that could not be put back stay in the backup
        // directory: name it so a person can recover them.
        self.keep_backups = true;
        if let Some((_, _, name)) = &self.backups {
            failures.push(format!("old contents are kept in {name} at the root"));
        }
        Err(failures.join("; "))
    }
}

impl Drop for Journal<'_> {
    fn drop(&mut self) {
        if self.keep_backups {
            return;
        }
        if let Some((root, dir, name)) = self.backups.take() {
            if let Ok(entries) = rustix::fs::Dir::read_from(&*dir) {
                for entry in entries.flatten() {
                    let n = entry.file_name().to_string_lossy().into_owned();
                    if n != "." && n != ".." {
                        let _ = rustix::fs::unlinkat(&*dir, n.as_str(), AtFlags::empty());
                    }
                }
            }
            let _ = rustix::fs::unlinkat(&*root, name.as_str(), AtFlags::REMOVEDIR);
        }
    }
}
