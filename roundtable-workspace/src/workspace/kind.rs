//! What is at a path, looked at with `statat` and never followed: a
//! file, a directory, a link, or a [`SpecialKind`] that is never opened.

use super::error::tree;
use super::{errno, Workspace, WorkspaceError};
use crate::RepoPath;
use rustix::fs::{AtFlags, FileType};
use std::io;
use std::os::fd::AsFd;

/// What is at a path, without following links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Link,
    /// A FIFO, socket or device: never opened.
    Special(SpecialKind),
}

/// A kind of file roundtable never opens: opening a FIFO blocks until a
/// writer comes, a device may do anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecialKind {
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A submodule (a gitlink in a bare repository's tree): another
    /// repository's commit, not a file.
    Submodule,
}

impl SpecialKind {
    /// The kind of a non-regular, non-directory, non-link file mode.
    pub(super) fn of(file_type: FileType) -> Option<SpecialKind> {
        match file_type {
            FileType::Fifo => Some(SpecialKind::Fifo),
            FileType::Socket => Some(SpecialKind::Socket),
            FileType::CharacterDevice => Some(SpecialKind::CharDevice),
            FileType::BlockDevice => Some(SpecialKind::BlockDevice),
            _ => None,
        }
    }

    /// Its stable spelling (`fifo`, `socket`, `char_device`, `block_device`,
    /// `submodule`).
    pub fn as_str(self) -> &'static str {
        match self {
            SpecialKind::Fifo => "fifo",
            SpecialKind::Socket => "socket",
            SpecialKind::CharDevice => "char_device",
            SpecialKind::BlockDevice => "block_device",
            SpecialKind::Submodule => "submodule",
        }
    }
}

impl std::fmt::Display for SpecialKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Workspace {
    /// What is at `path`; a link on the way is [`WorkspaceError::Symlink`].
    pub(super) fn kind_strict(&self, path: &RepoPath) -> Result<Option<Kind>, WorkspaceError> {
        if self.seen(path).is_some() {
            return Ok(Some(Kind::File));
        }
        if let Some(bare) = &self.bare {
            return self.bare_kind(bare, path);
        }
        match self.parent(path)? {
            None => Ok(None),
            Some((dir, name)) => kind_at(&*dir, &name).map_err(|e| tree(path, e)),
        }
    }

    /// What is at `path` for a write that may remove a link on the way:
    /// nothing, when one is there.
    pub(super) fn kind(&self, path: &RepoPath) -> Result<Option<Kind>, WorkspaceError> {
        if self.seen(path).is_some() {
            return Ok(Some(Kind::File));
        }
        if let Some(bare) = &self.bare {
            return self.bare_kind(bare, path);
        }
        match self.parent(path) {
            Ok(None) => Ok(None),
            // A link where a directory would be: nothing lies below it (a
            // link is never followed). Reads through it stay refused; the
            // room check refuses a write below it unless the change
            // removes the link first.
            Err(WorkspaceError::Symlink { .. }) => Ok(None),
            Err(e) => Err(e),
            Ok(Some((dir, name))) => kind_at(&*dir, &name).map_err(|e| tree(path, e)),
        }
    }

    /// Whether a directory is at `path` (not through a link).
    pub fn is_dir(&self, path: &RepoPath) -> Result<bool, WorkspaceError> {
        Ok(self.kind(path)? == Some(Kind::Dir))
    }

    /// Whether no file is at `path`, the way a change that creates it
    /// sees it (and the dry run, through
    /// [`Tree::exists`](crate::diff::Tree::exists)): nothing there,
    /// or a directory — which the room check then decides about.
    pub fn no_file_at(&self, path: &RepoPath) -> Result<bool, WorkspaceError> {
        Ok(matches!(self.kind(path)?, None | Some(Kind::Dir)))
    }
}

/// What `name` in `dir` is, not following a link; `None` when nothing is
/// there.
pub(super) fn kind_at(dir: impl AsFd, name: &str) -> io::Result<Option<Kind>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Link,
            other => SpecialKind::of(other).map_or(Kind::Link, Kind::Special),
        })),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(errno(e)),
    }
}
