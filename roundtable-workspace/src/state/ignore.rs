//! git's ignore rules for the workspace state, with the `ignore` crate's
//! matcher and our own contained reads.
//!
//! A path is ignored, as `git status` decides it, by the first of these
//! that has a matching pattern (the last matching line within one source
//! wins; `!pattern` re-includes):
//!
//! 1. the `.gitignore` of the path's own directory, then of each directory
//!    above it up to the root;
//! 2. `$GIT_COMMON_DIR/info/exclude`;
//! 3. the file `core.excludesFile` names: the repository's own
//!    `.git/config` first, else the user's global configuration
//!    (`GIT_CONFIG_GLOBAL`, `~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`,
//!    `/etc/gitconfig`; default `$XDG_CONFIG_HOME/git/ignore`), found by
//!    [`ignore::gitignore::gitconfig_excludes_path`].
//!
//! Without a git directory only the `.gitignore` files apply.
//!
//! A directory that is ignored is not walked: nothing under it is part of
//! the state, whatever a deeper pattern says (git cannot re-include a file
//! whose directory is excluded either). Independently, a path matching the
//! policy's `[workspace] ignore` list is ignored too (that list cannot
//! re-include what git ignores).
//!
//! `.gitignore` files are read through the walk's own directory
//! descriptors with `O_NOFOLLOW`: one that is a symbolic link, a directory
//! or a special file is not read (as git ≥ 2.32 refuses a symlinked
//! `.gitignore`). Lines that are not valid patterns are skipped, as git
//! skips them.

use super::{io_err, StateError};
use crate::policy::IgnoreList;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::io::Read as _;
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::Arc;

/// The most a `.gitignore` or exclude file may hold.
const IGNORE_FILE_CAP: u64 = 16 * 1024 * 1024;

/// The patterns of one source, matched against paths relative to the
/// directory the source belongs to.
pub(crate) fn compile<'a>(lines: impl IntoIterator<Item = &'a str>) -> Gitignore {
    // Every matcher is rooted at "": callers pass paths already relative
    // to the source's directory, so the crate strips nothing.
    let mut builder = GitignoreBuilder::new("");
    for line in lines {
        // A line that is not a valid pattern is skipped, as git skips it.
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The patterns of an ignore file's bytes (a UTF-8 BOM skipped, CRLF line
/// ends accepted, invalid UTF-8 read lossily).
fn parse(bytes: &[u8]) -> Gitignore {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    compile(text.lines())
}

/// One directory's `.gitignore` and those above it.
pub(super) struct Level {
    /// The directory's path relative to the repository root, with a
    /// trailing `/` (empty for the root).
    dir: Vec<u8>,
    rules: Gitignore,
    parent: Option<Arc<Level>>,
}

/// The ignore rules of one walk.
pub(super) struct Rules<'a> {
    /// The walk root's path relative to the repository root, with a
    /// trailing `/` (empty when the walk starts at the root).
    base: Vec<u8>,
    /// `info/exclude`, then `core.excludesFile`.
    repo: Vec<Gitignore>,
    /// The policy's list.
    policy: Option<&'a IgnoreList>,
}

impl<'a> Rules<'a> {
    /// The repository-wide rules for a walk of `base` (repository-relative
    /// `/`-separated, empty for the root) in the repository at `root`.
    pub(super) fn load(
        root: &Path,
        base: &[u8],
        policy: Option<&'a IgnoreList>,
    ) -> Result<Rules<'a>, StateError> {
        let mut repo = Vec::new();
        if let Some(dirs) = super::git::git_dirs(root)? {
            if let Some(bytes) =
                super::git::read_capped(&dirs.common.join("info/exclude"), IGNORE_FILE_CAP)?
            {
                repo.push(parse(&bytes));
            }
            let local = match super::git::read_capped(&dirs.common.join("config"), 1 << 20)? {
                Some(config) => super::git::excludes_file(&config),
                None => None,
            };
            // A relative path is taken from the root (git: from the work tree
            // it runs in).
            let local = local.map(|p| root.join(p));
            let path = local.or_else(ignore::gitignore::gitconfig_excludes_path);
            if let Some(path) = path {
                // Outside the repository: a link is followed (dotfiles often
                // are links), but a FIFO or device is still never read.
                if let Some(bytes) = read_outside(&path)? {
                    repo.push(parse(&bytes));
                }
            }
        }
        let mut base = base.to_vec();
        if !base.is_empty() {
            base.push(b'/');
        }
        Ok(Rules {
            base,
            repo,
            policy: policy.filter(|p| !p.is_empty()),
        })
    }

    /// The same rules for a walk of `base` (repository-relative, empty for
    /// the root).
    pub(super) fn rebase(self, base: &[u8]) -> Rules<'a> {
        let mut base = base.to_vec();
        if !base.is_empty() {
            base.push(b'/');
        }
        Rules { base, ..self }
    }

    /// The stack for the directory `rel` (walk-relative, empty for the walk
    /// root) whose `.gitignore` holds `bytes`, above its parent's `parent`.
    pub(super) fn push(
        &self,
        parent: Option<&Arc<Level>>,
        rel: &[u8],
        bytes: &[u8],
    ) -> Option<Arc<Level>> {
        let rules = parse(bytes);
        if rules.is_empty() {
            return parent.cloned();
        }
        let mut dir = self.base.clone();
        dir.extend_from_slice(rel);
        if !rel.is_empty() {
            dir.push(b'/');
        }
        Some(Arc::new(Level {
            dir,
            rules,
            parent: parent.cloned(),
        }))
    }

    /// Whether nothing can be ignored below `stack` (the walk may skip
    /// building paths).
    pub(super) fn inert(&self, stack: Option<&Arc<Level>>) -> bool {
        stack.is_none() && self.repo.iter().all(Gitignore::is_empty) && self.policy.is_none()
    }

    /// Whether `rel` (walk-relative), a directory or not, is ignored under
    /// the `.gitignore` stack of its parent directory.
    pub(super) fn ignored(&self, stack: Option<&Arc<Level>>, rel: &[u8], is_dir: bool) -> bool {
        let mut full = Vec::with_capacity(self.base.len() + rel.len());
        full.extend_from_slice(&self.base);
        full.extend_from_slice(rel);
        if let Some(policy) = self.policy {
            if policy.is_ignored(path_of(&full), is_dir) {
                return true;
            }
        }
        let mut level = stack;
        while let Some(l) = level {
            let below = full.get(l.dir.len()..).unwrap_or_default();
            match l.rules.matched(path_of(below), is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => level = l.parent.as_ref(),
            }
        }
        for rules in &self.repo {
            match rules.matched(path_of(&full), is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
        }
        false
    }
}

fn path_of(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

/// The `.gitignore` in the directory `dir` (opened by the walk), if there is
/// a regular file by that name; never through a link, never blocking.
pub(super) fn read_gitignore(
    dir: BorrowedFd<'_>,
    shown: &Path,
) -> Result<Option<Vec<u8>>, StateError> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, ".gitignore", flags, Mode::empty()) {
        Ok(fd) => fd,
        // Absent, a link (not followed) or not openable as a file.
        Err(Errno::NOENT | Errno::LOOP | Errno::NOTDIR | Errno::NXIO) => return Ok(None),
        Err(e) => return Err(io_err(&shown.join(".gitignore"), e.into())),
    };
    read_regular(fd, &shown.join(".gitignore"))
}

/// Reads `fd` when it is a regular file within the cap.
fn read_regular(fd: std::os::fd::OwnedFd, shown: &Path) -> Result<Option<Vec<u8>>, StateError> {
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(shown, e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let mut data = Vec::new();
    std::fs::File::from(fd)
        .take(IGNORE_FILE_CAP + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_err(shown, e))?;
    if data.len() as u64 > IGNORE_FILE_CAP {
        return Err(StateError::Git {
            path: shown.to_path_buf(),
            reason: format!("is larger than {IGNORE_FILE_CAP} bytes"),
        });
    }
    Ok(Some(data))
}

/// An excludes file outside the repository (links followed, FIFOs and
/// devices never read); `None` when it does not exist.
fn read_outside(path: &Path) -> Result<Option<Vec<u8>>, StateError> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => read_regular(fd, path),
        // A missing or unreadable global file is what git skips too.
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(lines: &[&str]) -> Rules<'static> {
        Rules {
            base: Vec::new(),
            repo: vec![compile(lines.iter().copied())],
            policy: None,
        }
    }

    #[test]
    fn deeper_gitignore_files_win_and_negation_re_includes() {
        let r = rules(&["*.log"]);
        let root = r.push(None, b"", b"build/\n!keep.log\n");
        let sub = r.push(root.as_ref(), b"a", b"*.tmp\n!x.tmp\n*.keep2\n");
        assert!(r.ignored(root.as_ref(), b"build", true));
        assert!(
            !r.ignored(root.as_ref(), b"build", false),
            "dir-only pattern"
        );
        assert!(r.ignored(root.as_ref(), b"a.log", false), "info/exclude");
        assert!(
            !r.ignored(root.as_ref(), b"keep.log", false),
            "re-included above"
        );
        assert!(r.ignored(sub.as_ref(), b"a/y.tmp", false));
        assert!(!r.ignored(sub.as_ref(), b"a/x.tmp", false));
        assert!(r.ignored(sub.as_ref(), b"a/deep.log", false));
        assert!(!r.ignored(sub.as_ref(), b"a/keep.log", false));
    }

    #[test]
    fn anchored_patterns_are_relative_to_their_directory() {
        let r = Rules {
            base: b"pkg/".to_vec(),
            repo: Vec::new(),
            policy: None,
        };
        let top = r.push(None, b"", b"/gen\n");
        let sub = r.push(top.as_ref(), b"sub", b"/out.txt\n");
        assert!(r.ignored(top.as_ref(), b"gen", true));
        assert!(!r.ignored(sub.as_ref(), b"sub/gen", true));
        assert!(r.ignored(sub.as_ref(), b"sub/out.txt", false));
        assert!(!r.ignored(sub.as_ref(), b"sub/x/out.txt", false));
        assert!(r.inert(None));
        assert!(!r.inert(top.as_ref()));
    }

    #[test]
    fn ignore_file_bytes() {
        let g = parse(b"\xEF\xBB\xBF*.o\r\n# comment\n\xFF.bin\n[\n");
        assert!(g.matched("x.o", false).is_ignore());
        assert!(!g.matched("# comment", false).is_ignore());
    }
}
