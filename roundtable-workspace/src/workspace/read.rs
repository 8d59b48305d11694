//! Reading files: each opened from its directory's handle without
//! following links (a link at the path is read with `readlinkat`, a FIFO,
//! socket or device never opened), and the [`Tree`] the patch applier
//! reads through.

use super::error::{boxed, tree};
use super::kind::{kind_at, Kind, SpecialKind};
use super::view::{Seen, Stamp};
use super::{errno, lock, Workspace, WorkspaceError};
use crate::changeset::FileMeta;
use crate::diff::{ApplyError, Tree, TreeError, TreeFile};
use crate::RepoPath;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use std::io::{self, Read as _};
use std::os::fd::OwnedFd;
use std::sync::Arc;

impl Workspace {
    /// The file at `path`: its bytes and executable bit, or `None` if
    /// nothing is there. A symbolic link at the path is read as a link
    /// (its target, [`TreeFile::symlink`] set; never followed); one on the
    /// way is [`WorkspaceError::Symlink`]; a directory is not a file.
    pub fn read(&self, path: &RepoPath) -> Result<Option<TreeFile>, WorkspaceError> {
        Ok(self.load(path)?.map(Seen::into_file))
    }

    /// The file at `path` as this view first saw it (read now if it has
    /// not seen it, and remembered when it remembers files).
    pub(super) fn load(&self, path: &RepoPath) -> Result<Option<Arc<Seen>>, WorkspaceError> {
        if let Some(seen) = self.seen(path) {
            return Ok(Some(seen));
        }
        let Some((file, stamp)) = self.read_stamped(path)? else {
            return Ok(None);
        };
        let seen = Arc::new(Seen {
            file,
            meta: Default::default(),
            stamp,
        });
        if let Some(files) = self.memo.as_ref().and_then(|m| m.files.as_ref()) {
            // Another thread may have read it meanwhile: the first read is
            // the one everybody sees.
            let mut files = lock(files);
            let first = files.entry(path.clone()).or_insert(seen);
            return Ok(Some(Arc::clone(first)));
        }
        Ok(Some(seen))
    }

    /// The file at `path` read now, with what `fstat` said of it.
    fn read_stamped(&self, path: &RepoPath) -> Result<Option<(TreeFile, Stamp)>, WorkspaceError> {
        if let Some(bare) = &self.bare {
            return Ok(self.bare_read(bare, path)?.map(|f| (f, Stamp::never())));
        }
        let Some((dir, name)) = self.parent(path)? else {
            return Ok(None);
        };
        // Look before opening: a FIFO, socket or device is never opened
        // (opening a FIFO blocks until a writer comes); a link is read as
        // a link (its target), never followed.
        match kind_at(&*dir, &name).map_err(|e| tree(path, e))? {
            Some(Kind::Special(kind)) => {
                return Err(WorkspaceError::Special {
                    path: path.to_string(),
                    kind,
                })
            }
            Some(Kind::Link) => return read_link_at(&dir, &name, path),
            _ => {}
        }
        // Non-blocking, so one swapped in after the look cannot block
        // either; `fstat` below then refuses it.
        let fd = match rustix::fs::openat(
            &*dir,
            name.as_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(None),
            Err(rustix::io::Errno::LOOP) => {
                return Err(WorkspaceError::Symlink {
                    path: path.to_string(),
                    link: path.to_string(),
                })
            }
            Err(e) => return Err(tree(path, errno(e))),
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| tree(path, errno(e)))?;
        let file_type = FileType::from_raw_mode(stat.st_mode);
        if let Some(kind) = SpecialKind::of(file_type) {
            return Err(WorkspaceError::Special {
                path: path.to_string(),
                kind,
            });
        }
        if file_type != FileType::RegularFile {
            return Err(WorkspaceError::Apply(ApplyError::File {
                path: path.as_str().as_bytes().to_vec(),
                reason: "is not a regular file".into(),
            }));
        }
        let mut data = Vec::with_capacity(usize::try_from(stat.st_size).unwrap_or(0));
        std::fs::File::from(fd)
            .read_to_end(&mut data)
            .map_err(|e| tree(path, e))?;
        let file = TreeFile {
            data,
            // git's rule: the owner's bit alone (`ce_permissions`).
            executable: stat.st_mode & 0o100 != 0,
            symlink: false,
        };
        Ok(Some((file, Stamp::of(&stat))))
    }

    /// The file at `path` and its digest and mode, from one read.
    pub fn read_with_meta(
        &self,
        path: &RepoPath,
    ) -> Result<Option<(TreeFile, FileMeta)>, WorkspaceError> {
        Ok(self.load(path)?.map(|seen| {
            let meta = seen.meta();
            (Seen::into_file(seen), meta)
        }))
    }

    /// [`read_with_meta`](Workspace::read_with_meta), with every
    /// permission bit (`0o7777`) of the file as it was read: `None` for a
    /// symbolic link, or in a bare repository (a blob has only git's two
    /// modes). What a governed apply journals, so that a rollback or a
    /// recovery recreates a file it deleted with its mode.
    pub fn read_with_mode(
        &self,
        path: &RepoPath,
    ) -> Result<Option<(TreeFile, FileMeta, Option<u32>)>, WorkspaceError> {
        Ok(self.load(path)?.map(|seen| {
            let meta = seen.meta();
            let mode = seen.stamp.permissions();
            (Seen::into_file(seen), meta, mode)
        }))
    }

    /// The digest and mode of the file at `path`, or `None` if absent.
    pub fn meta(&self, path: &RepoPath) -> Result<Option<FileMeta>, WorkspaceError> {
        Ok(self.load(path)?.map(|seen| seen.meta()))
    }

    /// The digest and mode of the file at `path` now, to check that it
    /// still is `expected` (`None`: absent). On a view, a file it read
    /// that is expected unchanged is compared with what it saw by a fresh
    /// `fstat`, and read again only when that cannot decide.
    pub(super) fn meta_now(
        &self,
        path: &RepoPath,
        expected: Option<&FileMeta>,
    ) -> Result<Option<FileMeta>, WorkspaceError> {
        if expected.is_none() && self.no_file_at(path)? {
            return Ok(None);
        }
        if let Some(seen) = self.seen(path) {
            let meta = seen.meta();
            if let Some((dir, name)) = self.parent(path)? {
                if let Ok(st) = rustix::fs::statat(&*dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                {
                    if seen.stamp.unchanged(&Stamp::of(&st)) && Some(&meta) == expected {
                        return Ok(Some(meta));
                    }
                }
            }
        }
        Ok(self.read_stamped(path)?.map(|(f, _)| FileMeta::of(&f)))
    }
}

impl Tree for Workspace {
    fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| boxed(path, e.code(), e))?;
        Workspace::read(self, &repo_path).map_err(|e| boxed(path, e.code(), e))
    }

    fn read_meta(&self, path: &[u8]) -> Result<Option<(TreeFile, FileMeta)>, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| boxed(path, e.code(), e))?;
        self.read_with_meta(&repo_path)
            .map_err(|e| boxed(path, e.code(), e))
    }

    fn exists(&self, path: &[u8]) -> Result<bool, TreeError> {
        let repo_path = RepoPath::from_bytes(path).map_err(|e| boxed(path, e.code(), e))?;
        // A directory does not count: git lets a file be created over one
        // and the room check above decides whether it may. A link on the
        // way is refused here (the applier does not ask below a link the
        // patch removes).
        self.kind_strict(&repo_path)
            .map(|kind| !matches!(kind, None | Some(Kind::Dir)))
            .map_err(|e| boxed(path, e.code(), e))
    }
}

/// The symbolic link `name` in `dir` (at `path`), read with `readlinkat`,
/// never followed.
fn read_link_at(
    dir: &OwnedFd,
    name: &str,
    path: &RepoPath,
) -> Result<Option<(TreeFile, Stamp)>, WorkspaceError> {
    let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(tree(path, errno(e))),
    };
    let target = match rustix::fs::readlinkat(dir, name, Vec::new()) {
        Ok(t) => t.into_bytes(),
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        // Replaced by something else since the look: read it again.
        Err(rustix::io::Errno::INVAL) => {
            return Err(tree(
                path,
                io::Error::other("replaced while it was read (a link, then not)"),
            ))
        }
        Err(e) => return Err(tree(path, errno(e))),
    };
    Ok(Some((TreeFile::link(target), Stamp::of(&stat))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use std::fs;

    #[test]
    fn reads_never_follow_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("tempdir");
        fs::write(outside.path().join("secret"), "s").expect("write");
        let root = dir.path();
        fs::create_dir(root.join("real")).expect("mkdir");
        fs::write(root.join("real/f"), "f").expect("write");
        std::os::unix::fs::symlink(outside.path(), root.join("out")).expect("link");
        std::os::unix::fs::symlink("real", root.join("alias")).expect("link");
        std::os::unix::fs::symlink("real/f", root.join("flink")).expect("link");
        std::os::unix::fs::symlink("/", root.join("slash")).expect("link");
        let ws = Workspace::open(root).expect("opens");
        let p = |s: &str| RepoPath::from_bytes(s.as_bytes()).expect("valid");
        assert_eq!(
            ws.read(&p("real/f")).expect("reads").map(|f| f.data),
            Some(b"f".to_vec())
        );
        for path in ["out/secret", "alias/f", "slash/etc/hostname"] {
            let e = ws.read(&p(path)).expect_err(path);
            assert_eq!(e.code(), ErrorCode::PathEscape, "{path}: {e}");
        }
        // A link at the path itself is read as a link: its target, not
        // what it points at.
        for (path, target) in [("flink", "real/f"), ("slash", "/"), ("alias", "real")] {
            assert_eq!(
                ws.read(&p(path)).expect(path),
                Some(TreeFile::link(target.as_bytes().to_vec())),
                "{path}"
            );
        }
        assert!(ws.read(&p("missing/x")).expect("absent").is_none());
        assert!(ws.read(&p("real/f/below")).expect("below a file").is_none());
    }
}
