//! Resource ids: what claims, coverage and policy talk about.
//!
//! `file:PATH`, `directory:PATH` (the repository root is `directory:.`) and
//! `symbol:PATH#NAME`. A bare path is refused, not guessed. Parsing
//! normalizes the spellings of one path to one value — `./` and repeated
//! or trailing slashes are dropped — so `directory:src/` and
//! `directory:./src` are the same resource as `directory:src`; `..`,
//! absolute paths and `.git`/`.roundtable` are refused as for any
//! [`RepoPath`]. [`Resource`]'s `Display` is the one canonical spelling.

use crate::{ErrorCode, PathError, RepoPath};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A thing an agent can claim and a change can cover.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Resource {
    /// One file.
    File(RepoPath),
    /// A directory and everything under it; `None` is the repository root.
    Directory(Option<RepoPath>),
    /// A named symbol (function, method, type) in a file, e.g. `Api.fetch`.
    Symbol {
        /// The file.
        path: RepoPath,
        /// The qualified name.
        name: String,
    },
}

/// Why a string is not a resource id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// No `file:`, `directory:` or `symbol:` prefix (a bare path is not
    /// guessed at).
    #[error("{0:?}: a resource id starts with file:, directory: or symbol:")]
    NoKind(String),
    /// The path part is not a repository path.
    #[error("{id:?}: {source}")]
    Path {
        /// The id.
        id: String,
        /// Why the path is refused.
        #[source]
        source: PathError,
    },
    /// A symbol id without `#NAME`, or with an empty or malformed name.
    #[error(
        "{0:?}: a symbol id is symbol:PATH#NAME, NAME without spaces, control characters or '#'"
    )]
    SymbolName(String),
    /// Longer than [`MAX_RESOURCE_ID_BYTES`] (the id is not repeated).
    #[error("a resource id is {0} bytes; the limit is {MAX_RESOURCE_ID_BYTES}")]
    TooLong(usize),
}

/// The longest resource id accepted, in bytes: room for a path of
/// [`MAX_PATH_BYTES`](crate::path::MAX_PATH_BYTES) with its kind prefix and
/// a symbol name.
pub const MAX_RESOURCE_ID_BYTES: usize = 4608;

impl ResourceError {
    /// `path_escape` for escaping paths, `invalid_argument` otherwise.
    pub fn code(&self) -> ErrorCode {
        match self {
            ResourceError::Path { source, .. } if source.code() == ErrorCode::PathEscape => {
                ErrorCode::PathEscape
            }
            _ => ErrorCode::InvalidArgument,
        }
    }
}

/// Drop `.` and empty components (`./a//b/` → `a/b`); `None` for the root.
fn normalize(path: &str) -> Option<String> {
    let kept: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    (!kept.is_empty()).then(|| kept.join("/"))
}

impl Resource {
    /// The file or directory the resource lives in (`None`: the root).
    pub fn path(&self) -> Option<&RepoPath> {
        match self {
            Resource::File(p) | Resource::Symbol { path: p, .. } => Some(p),
            Resource::Directory(p) => p.as_ref(),
        }
    }
}

impl FromStr for Resource {
    type Err = ResourceError;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        if id.len() > MAX_RESOURCE_ID_BYTES {
            return Err(ResourceError::TooLong(id.len()));
        }
        let path_of = |raw: &str| -> Result<Option<RepoPath>, ResourceError> {
            if raw.split('/').any(|c| c == "..") || raw.starts_with('/') {
                // Refused by RepoPath with the right code; don't normalize it away.
                return RepoPath::from_bytes(raw.as_bytes())
                    .map(Some)
                    .map_err(|source| ResourceError::Path {
                        id: id.into(),
                        source,
                    });
            }
            normalize(raw)
                .map(|p| RepoPath::from_bytes(p.as_bytes()))
                .transpose()
                .map_err(|source| ResourceError::Path {
                    id: id.into(),
                    source,
                })
        };
        let file_path = |raw: &str| -> Result<RepoPath, ResourceError> {
            path_of(raw)?.ok_or_else(|| ResourceError::Path {
                id: id.into(),
                source: RepoPath::from_bytes(b"").expect_err("the empty path is refused"),
            })
        };
        if let Some(rest) = id.strip_prefix("file:") {
            Ok(Resource::File(file_path(rest)?))
        } else if let Some(rest) = id.strip_prefix("directory:") {
            if rest.is_empty() {
                return Err(ResourceError::Path {
                    id: id.into(),
                    source: RepoPath::from_bytes(b"").expect_err("the empty path is refused"),
                });
            }
            Ok(Resource::Directory(path_of(rest)?))
        } else if let Some(rest) = id.strip_prefix("symbol:") {
            let (path, name) = rest
                .rsplit_once('#')
                .ok_or_else(|| ResourceError::SymbolName(id.into()))?;
            if name.is_empty()
                || name
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '#')
            {
                return Err(ResourceError::SymbolName(id.into()));
            }
            Ok(Resource::Symbol {
                path: file_path(path)?,
                name: name.to_owned(),
            })
        } else {
            Err(ResourceError::NoKind(id.into()))
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::File(p) => write!(f, "file:{p}"),
            Resource::Directory(None) => f.write_str("directory:."),
            Resource::Directory(Some(p)) => write!(f, "directory:{p}"),
            Resource::Symbol { path, name } => write!(f, "symbol:{path}#{name}"),
        }
    }
}

impl Serialize for Resource {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Resource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Resource {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn spellings_of_one_resource_are_one_value() {
        for (spellings, canonical) in [
            (
                &[
                    "file:src/a.rs",
                    "file:./src/a.rs",
                    "file:src//a.rs",
                    "file:src/./a.rs",
                ][..],
                "file:src/a.rs",
            ),
            (
                &[
                    "directory:src",
                    "directory:src/",
                    "directory:./src",
                    "directory:src//",
                ][..],
                "directory:src",
            ),
            (
                &["directory:.", "directory:./", "directory:.//"][..],
                "directory:.",
            ),
            (
                &[
                    "symbol:src/api.rs#Api.fetch",
                    "symbol:./src/api.rs#Api.fetch",
                ][..],
                "symbol:src/api.rs#Api.fetch",
            ),
        ] {
            let values: Vec<Resource> = spellings.iter().map(|s| parse(s)).collect();
            assert!(values.windows(2).all(|w| w[0] == w[1]), "{spellings:?}");
            assert_eq!(values[0].to_string(), canonical);
            assert_eq!(parse(canonical), values[0]);
        }
        assert_eq!(parse("directory:./"), Resource::Directory(None));
        assert_eq!(parse("directory:."), Resource::Directory(None));
    }

    #[test]
    fn refusals_have_codes() {
        let cases = [
            ("src/a.rs", ErrorCode::InvalidArgument),
            ("blob:src/a.rs", ErrorCode::InvalidArgument),
            ("file:", ErrorCode::InvalidArgument),
            ("file:.", ErrorCode::InvalidArgument),
            ("directory:", ErrorCode::InvalidArgument),
            ("file:../x", ErrorCode::PathEscape),
            ("file:a/../../x", ErrorCode::PathEscape),
            ("directory:/etc", ErrorCode::PathEscape),
            ("file:.git/config", ErrorCode::PathEscape),
            ("directory:.roundtable", ErrorCode::PathEscape),
            ("symbol:src/a.rs", ErrorCode::InvalidArgument),
            ("symbol:src/a.rs#", ErrorCode::InvalidArgument),
            ("symbol:src/a.rs#two words", ErrorCode::InvalidArgument),
            ("symbol:#main", ErrorCode::InvalidArgument),
            ("file:a\0b", ErrorCode::InvalidArgument),
        ];
        for (id, code) in cases {
            let e = id.parse::<Resource>().expect_err(id);
            assert_eq!(e.code(), code, "{id}: {e}");
        }
    }

    #[test]
    fn serde_uses_the_canonical_spelling() {
        let r = parse("directory:src/");
        assert_eq!(
            serde_json::to_string(&r).expect("serializes"),
            "\"directory:src\""
        );
        let back: Resource = serde_json::from_str("\"file:./x\"").expect("deserializes");
        assert_eq!(back, parse("file:x"));
        assert!(serde_json::from_str::<Resource>("\"x\"").is_err());
    }
}
