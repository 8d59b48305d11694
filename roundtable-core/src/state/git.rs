//! Reading git `HEAD` in-process: no `git` binary, no git library.
//!
//! Supports the files backend: `HEAD` as a symbolic ref (`ref: refs/…`,
//! followed through loose refs, per-worktree then common, then
//! `packed-refs`, skipping `^` peeled lines) or a detached commit id; `.git`
//! as a directory or as a `gitdir: <path>` file (worktrees, submodules), with
//! `commondir`. A reftable repository is refused rather than misread.

use super::StateError;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

/// How many symbolic refs are followed (git stops at 5).
const MAX_DEPTH: usize = 10;

fn git_err(path: &Path, reason: impl Into<String>) -> StateError {
    StateError::Git {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io_err(path: &Path, source: io::Error) -> StateError {
    super::io_err(path, source)
}

/// The most a ref-sized git file (`HEAD`, a loose ref, `commondir`, a
/// `.git` file) may hold: real ones are a line.
const SMALL_FILE_CAP: u64 = 64 * 1024;
/// The most `packed-refs` may hold.
const PACKED_REFS_CAP: u64 = 256 * 1024 * 1024;

/// Reads a git metadata file, `None` if it does not exist (or is a
/// directory where a ref file was looked for). Never through a symbolic
/// link, never blocking (a FIFO or device is refused, not opened for
/// reading), and never more than `cap` bytes: `HEAD` pointing at
/// `/dev/zero` cannot exhaust memory or hang.
fn read_capped(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StateError> {
    use rustix::fs::{FileType, Mode, OFlags};
    use std::io::Read as _;
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => {
            return Err(git_err(path, "is a symbolic link (not followed)"))
        }
        Err(e) => return Err(io_err(path, e.into())),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(path, e.into()))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Ok(None),
        other => {
            let what = match other {
                FileType::Fifo => "a FIFO",
                FileType::Socket => "a socket",
                FileType::CharacterDevice => "a character device",
                FileType::BlockDevice => "a block device",
                _ => "not a regular file",
            };
            return Err(git_err(path, format!("is {what}; never read")));
        }
    }
    let mut data = Vec::new();
    fs::File::from(fd)
        .take(cap + 1)
        .read_to_end(&mut data)
        .map_err(|e| io_err(path, e))?;
    if data.len() as u64 > cap {
        return Err(git_err(path, format!("is larger than {cap} bytes")));
    }
    Ok(Some(data))
}

fn read_opt(path: &Path) -> Result<Option<Vec<u8>>, StateError> {
    read_capped(path, SMALL_FILE_CAP)
}

/// `HEAD`'s commit id as lowercase hex; `None` when `root` is not a git
/// repository (no `.git`, or a `.git` directory without `HEAD`) or the
/// current branch is unborn.
pub(super) fn read_head(root: &Path) -> Result<Option<String>, StateError> {
    let dotgit = root.join(".git");
    let meta = match fs::metadata(&dotgit) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(&dotgit, e)),
    };
    let gitdir = if meta.is_dir() {
        dotgit
    } else if meta.is_file() {
        let text = read_opt(&dotgit)?.ok_or_else(|| git_err(&dotgit, "vanished while read"))?;
        let target = text
            .strip_prefix(b"gitdir:")
            .map(|t| t.trim_ascii())
            .filter(|t| !t.is_empty() && !t.contains(&b'\n'))
            .ok_or_else(|| git_err(&dotgit, "not a `gitdir: <path>` file"))?;
        root.join(OsStr::from_bytes(target))
    } else {
        return Ok(None);
    };
    let head_path = gitdir.join("HEAD");
    let Some(head) = read_opt(&head_path)? else {
        return Ok(None);
    };
    let common = match read_opt(&gitdir.join("commondir"))? {
        Some(t) => gitdir.join(OsStr::from_bytes(t.trim_ascii())),
        None => gitdir.clone(),
    };
    if common.join("reftable").is_dir() {
        return Err(git_err(
            &common,
            "the reftable ref storage is not supported (only the files backend)",
        ));
    }

    let mut content = head;
    let mut from = head_path;
    for _ in 0..MAX_DEPTH {
        let text = content.trim_ascii();
        if let Some(name) = text.strip_prefix(b"ref:") {
            let name = name.trim_ascii();
            check_ref_name(name).map_err(|r| git_err(&from, r))?;
            match lookup(&gitdir, &common, name)? {
                Some((c, path)) => {
                    content = c;
                    from = path;
                }
                None => return Ok(None),
            }
        } else if is_object_id(text) {
            return Ok(Some(String::from_utf8_lossy(text).to_ascii_lowercase()));
        } else {
            return Err(git_err(&from, "neither a commit id nor `ref: <name>`"));
        }
    }
    Err(git_err(&from, "too many levels of symbolic refs"))
}

/// A full object id: 40 (SHA-1) or 64 (SHA-256) hex digits.
fn is_object_id(s: &[u8]) -> bool {
    (s.len() == 40 || s.len() == 64) && s.iter().all(u8::is_ascii_hexdigit)
}

/// A ref name that stays inside the git directory: `refs/…` with clean
/// components.
fn check_ref_name(name: &[u8]) -> Result<(), &'static str> {
    if !name.starts_with(b"refs/") {
        return Err("a symbolic ref outside refs/");
    }
    if name.contains(&0) || name.contains(&b'\\') {
        return Err("a ref name with a NUL or backslash");
    }
    if name
        .split(|&b| b == b'/')
        .any(|c| c.is_empty() || c == b"." || c == b"..")
    {
        return Err("a ref name with an empty, `.` or `..` component");
    }
    Ok(())
}

/// The content of ref `name`: loose (per-worktree dir, then common dir),
/// else from `packed-refs`; `None` if it does not exist.
fn lookup(
    gitdir: &Path,
    common: &Path,
    name: &[u8],
) -> Result<Option<(Vec<u8>, PathBuf)>, StateError> {
    let rel = OsStr::from_bytes(name);
    let dirs: &[&Path] = if gitdir == common {
        &[gitdir]
    } else {
        &[gitdir, common]
    };
    for dir in dirs {
        let path = dir.join(rel);
        if let Some(c) = read_opt(&path)? {
            return Ok(Some((c, path)));
        }
    }
    let packed = common.join("packed-refs");
    let Some(text) = read_capped(&packed, PACKED_REFS_CAP)? else {
        return Ok(None);
    };
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line[0] == b'#' || line[0] == b'^' {
            continue;
        }
        let Some(sp) = line.iter().position(|&b| b == b' ') else {
            return Err(git_err(&packed, "a line without `<id> <ref>`"));
        };
        if &line[sp + 1..] == name {
            return Ok(Some((line[..sp].to_vec(), packed)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_names() {
        assert!(check_ref_name(b"refs/heads/main").is_ok());
        assert!(check_ref_name(b"refs/heads/feature/x").is_ok());
        for bad in [
            &b"HEAD"[..],
            b"../../etc/passwd",
            b"refs/../../x",
            b"refs//x",
            b"refs/heads/",
            b"/refs/heads/x",
        ] {
            assert!(
                check_ref_name(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn object_ids() {
        assert!(is_object_id(&[b'a'; 40]));
        assert!(is_object_id(&[b'0'; 64]));
        assert!(!is_object_id(&[b'a'; 41]));
        assert!(!is_object_id(&[b'g'; 40]));
    }
}
