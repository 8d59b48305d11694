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
pub(super) fn read_capped(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, StateError> {
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

/// Where a repository's metadata is.
pub(super) struct GitDirs {
    /// The per-worktree git directory (`HEAD`, per-worktree refs).
    pub(super) gitdir: PathBuf,
    /// The common directory (`refs/`, `packed-refs`, `config`, `info/`).
    pub(super) common: PathBuf,
}

/// Whether `root` is itself a bare repository's git directory: no `.git`
/// in it, and `HEAD`, `objects/` and `refs/` are (git's own test).
pub fn is_bare_repository(root: &Path) -> bool {
    fs::symlink_metadata(root.join(".git")).is_err()
        && fs::symlink_metadata(root.join("HEAD")).is_ok_and(|m| m.is_file())
        && fs::symlink_metadata(root.join("objects")).is_ok_and(|m| m.is_dir())
        && fs::symlink_metadata(root.join("refs")).is_ok_and(|m| m.is_dir())
}

/// The git directories of the repository at `root` (a working tree, or a
/// bare repository's git directory); `None` when it is not a git
/// repository (no `.git`, or a `.git` directory without `HEAD`).
pub(super) fn git_dirs(root: &Path) -> Result<Option<GitDirs>, StateError> {
    let dotgit = root.join(".git");
    let meta = match fs::metadata(&dotgit) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if !is_bare_repository(root) {
                return Ok(None);
            }
            return Ok(Some(GitDirs {
                gitdir: root.to_path_buf(),
                common: root.to_path_buf(),
            }));
        }
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
    if read_opt(&gitdir.join("HEAD"))?.is_none() {
        return Ok(None);
    }
    let common = match read_opt(&gitdir.join("commondir"))? {
        Some(t) => gitdir.join(OsStr::from_bytes(t.trim_ascii())),
        None => gitdir.clone(),
    };
    Ok(Some(GitDirs { gitdir, common }))
}

/// `HEAD`'s commit id as lowercase hex; `None` when `root` is not a git
/// repository (no `.git`, or a `.git` directory without `HEAD`) or the
/// current branch is unborn.
pub(super) fn read_head(root: &Path) -> Result<Option<String>, StateError> {
    let Some(GitDirs { gitdir, common }) = git_dirs(root)? else {
        return Ok(None);
    };
    let head_path = gitdir.join("HEAD");
    let Some(head) = read_opt(&head_path)? else {
        return Ok(None);
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

/// The value of `core.excludesFile` in a git config file's bytes (the last
/// one wins, as in git), `~/` expanded with `$HOME`. Sections and keys are
/// case-insensitive; a value may be quoted, with `\\`, `\"`, `\t`, `\n`
/// escapes, and ends at an unquoted `#` or `;`. `include` directives are
/// not followed.
pub(super) fn excludes_file(config: &[u8]) -> Option<PathBuf> {
    let text = String::from_utf8_lossy(config);
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let mut rest = line.trim_start();
        if let Some(header) = rest.strip_prefix('[') {
            let Some((name, after)) = header.split_once(']') else {
                in_core = false;
                continue;
            };
            in_core = name.trim().eq_ignore_ascii_case("core");
            rest = after.trim_start();
        }
        if !in_core {
            continue;
        }
        let Some((key, value)) = rest.split_once('=') else {
            continue;
        };
        if key.trim().eq_ignore_ascii_case("excludesfile") {
            found = Some(config_value(value));
        }
    }
    let value = found.filter(|v| !v.is_empty())?;
    match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME").map(|home| PathBuf::from(home).join(rest)),
        None => Some(PathBuf::from(value)),
    }
}

/// A config value as git reads it: quotes removed, escapes decoded, an
/// unquoted comment dropped, surrounding unquoted whitespace trimmed.
fn config_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    // Unquoted trailing whitespace is dropped; `keep` marks how much counts.
    let mut keep = 0;
    let mut chars = raw.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => {}
                }
                keep = out.len();
                continue;
            }
            '#' | ';' if !quoted => break,
            c => out.push(c),
        }
        if quoted || !c.is_whitespace() {
            keep = out.len();
        }
    }
    out.truncate(keep);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excludes_file_from_config() {
        let get = |s: &str| excludes_file(s.as_bytes());
        assert_eq!(get("[core]\n\texcludesFile = /a/b\n"), Some("/a/b".into()));
        assert_eq!(
            get("[Core]\nexcludesfile = \"/x y/z\" ; note\n[core]\n"),
            Some("/x y/z".into())
        );
        assert_eq!(
            get("[core] excludesfile=/one\n[core]\nexcludesFile = /two  # c\n"),
            Some("/two".into())
        );
        assert_eq!(get("[user]\nexcludesfile = /no\n"), None);
        assert_eq!(get("[core \"x\"]\nexcludesfile = /no\n"), None);
        assert_eq!(get("[core]\nexcludesfile =\n"), None);
        assert_eq!(get("[core]\nexcludesfile = a\\\\b\n"), Some("a\\b".into()));
    }

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
