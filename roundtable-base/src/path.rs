//! [`RepoPath`]: a path that can only name something inside a repository.

use crate::ErrorCode;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A clean, relative, contained path inside a repository: `/`-separated,
/// UTF-8, no empty, `.` or `..` components, not absolute, no drive prefix,
/// no NUL byte, and no `.git` or `.roundtable` component (compared
/// case-insensitively, as git protects `.git` on case-insensitive
/// filesystems, and under every spelling HFS+ or NTFS reads as `.git`:
/// see [`crate::fsck`]), nor a directory named as git's `.gitmodules` or
/// `.gitattributes` — every name `git fsck --strict` refuses in a tree.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RepoPath(String);

/// Why a path is not a [`RepoPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path:?}: {reason}")]
pub struct PathError {
    /// The refused path (lossily decoded).
    pub path: String,
    /// Why.
    pub reason: &'static str,
    code: ErrorCode,
}

impl PathError {
    /// A refusal of `path` with `code`.
    pub fn new(path: &str, reason: &'static str, code: ErrorCode) -> PathError {
        PathError {
            path: path.to_owned(),
            reason,
            code,
        }
    }

    /// `path_escape` for paths that would leave the root or enter
    /// `.git`/`.roundtable`; `invalid_path` for malformed ones.
    pub fn code(&self) -> ErrorCode {
        self.code
    }
}

/// The longest file name (one path component) in bytes: Linux's
/// `NAME_MAX`. A longer one can never be created, so it is refused as
/// `invalid_path` up front rather than failing as `io` (`ENAMETOOLONG`)
/// when a file is opened.
pub const MAX_NAME_BYTES: usize = 255;

/// The longest repository path in bytes (`PATH_MAX` less the terminating
/// NUL).
pub const MAX_PATH_BYTES: usize = 4095;

impl RepoPath {
    /// Validate `bytes` as a repository path.
    pub fn from_bytes(bytes: &[u8]) -> Result<RepoPath, PathError> {
        let fail = |code, reason| PathError {
            path: String::from_utf8_lossy(bytes).into_owned(),
            reason,
            code,
        };
        let s =
            std::str::from_utf8(bytes).map_err(|_| fail(ErrorCode::InvalidPath, "is not UTF-8"))?;
        if s.is_empty() {
            return Err(fail(ErrorCode::InvalidPath, "is empty"));
        }
        if s.contains('\0') {
            return Err(fail(ErrorCode::InvalidPath, "contains a NUL byte"));
        }
        if s.len() > MAX_PATH_BYTES {
            return Err(fail(
                ErrorCode::InvalidPath,
                "is longer than 4095 bytes (the path length limit)",
            ));
        }
        if s.starts_with('/') {
            return Err(fail(ErrorCode::PathEscape, "is absolute"));
        }
        let first = s.split('/').next().unwrap_or_default();
        if first.len() >= 2
            && first.as_bytes()[1] == b':'
            && first.as_bytes()[0].is_ascii_alphabetic()
        {
            return Err(fail(ErrorCode::PathEscape, "starts with a drive prefix"));
        }
        let last = s.split('/').count() - 1;
        for (i, component) in s.split('/').enumerate() {
            match component {
                "" => return Err(fail(ErrorCode::InvalidPath, "has an empty component")),
                "." => return Err(fail(ErrorCode::InvalidPath, "has a `.` component")),
                ".." => return Err(fail(ErrorCode::PathEscape, "has a `..` component")),
                c if c.eq_ignore_ascii_case(".git") || c.eq_ignore_ascii_case(".roundtable") => {
                    return Err(fail(
                        ErrorCode::PathEscape,
                        "enters `.git` or `.roundtable`",
                    ))
                }
                c if crate::fsck::is_dotgit(c) || is_dot_roundtable(c) => {
                    return Err(fail(
                        ErrorCode::PathEscape,
                        "enters what a file system reads as `.git` or `.roundtable` (HFS+ ignores some Unicode code points; NTFS trailing dots and spaces, `:stream` suffixes, the short name `git~1`)",
                    ))
                }
                c if i < last && crate::fsck::DotFile::of(c).is_some() => {
                    return Err(fail(
                        ErrorCode::InvalidPath,
                        "makes a directory of a name git reads as `.gitmodules` or `.gitattributes` (git fsck refuses it)",
                    ))
                }
                c if c.len() > MAX_NAME_BYTES => {
                    return Err(fail(
                        ErrorCode::InvalidPath,
                        "has a name longer than 255 bytes (the file name limit)",
                    ))
                }
                _ => {}
            }
        }
        Ok(RepoPath(s.to_owned()))
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its components, root first.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }
}

/// Whether `component` is `.roundtable`, ASCII case-insensitively, or
/// what NTFS reads as it (trailing dots and spaces, a `:stream` suffix).
fn is_dot_roundtable(component: &str) -> bool {
    let head = component.split(':').next().unwrap_or_default();
    head.trim_end_matches(['.', ' '])
        .eq_ignore_ascii_case(".roundtable")
}

impl std::str::FromStr for RepoPath {
    type Err = PathError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RepoPath::from_bytes(s.as_bytes())
    }
}

impl fmt::Display for RepoPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_clean_paths() {
        for p in [
            "a",
            "src/lib.rs",
            "dir with space/x",
            "back\\slash",
            "é/ü.txt",
            ".gitignore",
            "a/.github/x",
        ] {
            assert_eq!(RepoPath::from_bytes(p.as_bytes()).expect(p).as_str(), p);
        }
    }

    #[test]
    fn refuses_escapes_with_codes() {
        let cases: &[(&[u8], ErrorCode)] = &[
            (b"", ErrorCode::InvalidPath),
            (b"/etc/passwd", ErrorCode::PathEscape),
            (b"../x", ErrorCode::PathEscape),
            (b"a/../../x", ErrorCode::PathEscape),
            (b"a//b", ErrorCode::InvalidPath),
            (b"a/./b", ErrorCode::InvalidPath),
            (b"a/", ErrorCode::InvalidPath),
            (b".git/config", ErrorCode::PathEscape),
            (b"sub/.GIT/hooks/x", ErrorCode::PathEscape),
            (b".roundtable/store", ErrorCode::PathEscape),
            (b"C:/windows", ErrorCode::PathEscape),
            (b"a\0b", ErrorCode::InvalidPath),
            (&[b'n'; 256], ErrorCode::InvalidPath),
            (&[b'n'; 4096], ErrorCode::InvalidPath),
            (b"\xff", ErrorCode::InvalidPath),
        ];
        for (p, code) in cases {
            let err = RepoPath::from_bytes(p).expect_err(&String::from_utf8_lossy(p));
            assert_eq!(err.code(), *code, "{:?}", String::from_utf8_lossy(p));
        }
    }
}
