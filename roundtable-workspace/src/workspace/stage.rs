//! Staging: each result written to a temporary file (or, for a link,
//! created under a temporary name) beside its target, waiting to be
//! renamed into place, and removed if it never is.

use super::error::tree;
use super::flush::Flush;
use super::{errno, parent_of, Verified, Workspace, WorkspaceError, DIR_FLAGS};
use crate::changeset::FileContent;
use crate::diff::{ApplyError, TreeFile};
use crate::RepoPath;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::io::{self, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::sync::Arc;

/// A result to stage: its bytes (a link's target) and its mode.
#[derive(Debug, Clone, Copy)]
pub(super) struct Content<'d> {
    /// The bytes; for a link, its target.
    pub(super) data: &'d [u8],
    /// Whether the executable bit is set.
    pub(super) executable: bool,
    /// Whether it is a symbolic link.
    pub(super) symlink: bool,
    /// The permission bits to create it with when no regular file is at
    /// its path (a rollback or recovery recreating a file the change
    /// deleted: the bits its journal recorded); `None`: git's `0644` or
    /// `0755`. A file that is there keeps its own bits.
    pub(super) mode: Option<u32>,
}

impl<'d> From<&'d FileContent> for Content<'d> {
    fn from(c: &'d FileContent) -> Content<'d> {
        Content {
            data: &c.data,
            executable: c.executable,
            symlink: c.symlink,
            mode: None,
        }
    }
}

impl<'d> From<&'d TreeFile> for Content<'d> {
    fn from(f: &'d TreeFile) -> Content<'d> {
        Content {
            data: &f.data,
            executable: f.executable,
            symlink: f.symlink,
            mode: None,
        }
    }
}

/// The prefix of a temporary name: `.rt-stage-` or `.rt-backup-`, then
/// the tag and a dash when there is one.
pub(super) fn temp_prefix(kind: &str, tag: Option<&str>) -> String {
    match tag {
        Some(tag) => format!(".rt-{kind}-{tag}-"),
        None => format!(".rt-{kind}-"),
    }
}

impl Workspace {
    /// Write `content` to a temporary file in the nearest existing
    /// directory on the way to `path` (its parents may not exist yet),
    /// flushed when `flush` is per file; a symbolic link (`data` its
    /// target) is created there under a temporary name, once its target is
    /// checked to stay inside the root. Temporary names carry `tag`.
    pub(super) fn stage(
        &self,
        path: &RepoPath,
        content: Content<'_>,
        flush: Flush,
        tag: Option<&str>,
        verified: &Verified,
    ) -> Result<Staged, WorkspaceError> {
        let Content {
            data,
            executable,
            symlink,
            mode: recorded,
        } = content;
        if symlink {
            check_link(path, data)?;
        }
        let found = match verified.get(parent_of(path)) {
            Some(dir) => Some(Arc::clone(dir)),
            None => self.parent(path).ok().flatten().map(|(dir, _)| dir),
        };
        // The permission bits of the file the result replaces, if it is
        // a regular file: kept, so a 0600 `.env` stays 0600; with none
        // there, the bits recorded for it (a deleted file recreated).
        let name = path.components().last().unwrap_or_default();
        let old = found
            .as_ref()
            .and_then(|dir| regular_mode(dir, name).ok().flatten())
            .or(recorded);
        let dir = match found {
            Some(dir) => dir,
            None => {
                let components: Vec<&str> = path.components().collect();
                let mut dir = Arc::clone(&self.dir);
                for component in &components[..components.len() - 1] {
                    match rustix::fs::openat(&*dir, *component, DIR_FLAGS, Mode::empty()) {
                        Ok(fd) => dir = Arc::new(fd),
                        Err(_) => break, // missing (or to be replaced): stage higher up
                    }
                }
                dir
            }
        };
        if symlink {
            let target = std::ffi::OsStr::from_bytes(data);
            let ((), name) = create_unique(&temp_prefix("stage", tag), |name| {
                rustix::fs::symlinkat(target, &*dir, name)
            })
            .map_err(|e| tree(path, e))?;
            // Its directory is flushed after the rename (a link has no
            // data of its own to flush).
            return Ok(Staged {
                dir,
                name,
                placed: false,
            });
        }
        let mode = Mode::from_raw_mode(permissions(old, executable));
        let (fd, name) = create_unique(&temp_prefix("stage", tag), |name| {
            rustix::fs::openat(
                &*dir,
                name,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                mode,
            )
        })
        .map_err(|e| tree(path, e))?;
        let staged = Staged {
            dir: Arc::clone(&dir),
            name,
            placed: false,
        };
        // The mode is set explicitly: the umask must not decide the bit.
        rustix::fs::fchmod(&fd, mode).map_err(|e| tree(path, errno(e)))?;
        let mut file = std::fs::File::from(fd);
        file.write_all(data).map_err(|e| tree(path, e))?;
        if flush == Flush::PerFile {
            file.sync_data().map_err(|e| tree(path, e))?;
        }
        Ok(staged)
    }
}

/// The permission bits (`0o7777`) of the regular file `name` in `dir`;
/// `None` when it is not one (missing, a link, a directory).
pub(super) fn regular_mode(dir: &OwnedFd, name: &str) -> io::Result<Option<u32>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {
            Ok(Some(st.st_mode & 0o7777))
        }
        Ok(_) | Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(errno(e)),
    }
}

/// The permission bits a result is written with: a new file's are
/// `0644`, or `0755` when executable (git's two modes, the umask not
/// consulted); a replaced file keeps every bit of `old` (`0600`, `0444`,
/// `0750`, set-id bits), except that becoming executable adds `x` wherever
/// it may be read, and ceasing to be clears every `x`.
pub(super) fn permissions(old: Option<u32>, executable: bool) -> u32 {
    match old {
        None if executable => 0o755,
        None => 0o644,
        Some(old) if executable && old & 0o111 == 0 => old | ((old & 0o444) >> 2),
        Some(old) if executable => old,
        Some(old) => old & !0o111,
    }
}

/// Refuse to create a link at `path` whose target is empty or leaves the
/// root ([`crate::diff::link_target_escapes`]): the applier checked it
/// already; every other changeset (a rollback's, a recovery's) is checked
/// here.
fn check_link(path: &RepoPath, target: &[u8]) -> Result<(), WorkspaceError> {
    let raw = path.as_str().as_bytes();
    if target.is_empty() || crate::diff::link_target_escapes(raw, target) {
        return Err(WorkspaceError::Apply(ApplyError::LinkEscape {
            path: raw.to_vec(),
            target: target.to_vec(),
        }));
    }
    Ok(())
}

/// Create something under a fresh random name (`create` makes it).
pub(super) fn create_unique<T>(
    prefix: &str,
    mut create: impl FnMut(&str) -> rustix::io::Result<T>,
) -> io::Result<(T, String)> {
    use std::hash::{BuildHasher as _, Hasher as _};
    let seed = std::collections::hash_map::RandomState::new();
    for attempt in 0u32..32 {
        let mut h = seed.build_hasher();
        h.write_u32(std::process::id());
        h.write_u32(attempt);
        let name = format!("{prefix}{:016x}", h.finish());
        match create(&name) {
            Ok(t) => return Ok((t, name)),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(errno(e)),
        }
    }
    Err(io::Error::other("could not find a free temporary name"))
}

/// A result written to a temporary file, waiting to be renamed into place;
/// removed if it never is.
pub(super) struct Staged {
    /// The directory it was written in.
    pub(super) dir: Arc<OwnedFd>,
    /// Its temporary name there.
    pub(super) name: String,
    /// Set once it is renamed into place.
    pub(super) placed: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.placed {
            let _ = rustix::fs::unlinkat(&*self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::permissions;

    #[test]
    fn permissions_keep_every_bit_and_follow_the_executable_one() {
        assert_eq!(permissions(None, false), 0o644);
        assert_eq!(permissions(None, true), 0o755);
        assert_eq!(permissions(Some(0o600), false), 0o600);
        assert_eq!(permissions(Some(0o444), false), 0o444);
        assert_eq!(permissions(Some(0o750), true), 0o750);
        assert_eq!(permissions(Some(0o4750), true), 0o4750);
        assert_eq!(permissions(Some(0o600), true), 0o700);
        assert_eq!(permissions(Some(0o640), true), 0o750);
        assert_eq!(permissions(Some(0o750), false), 0o640);
    }
}
