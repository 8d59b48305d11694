//! Claims: leases an agent holds on resources, and when two of them
//! overlap. Pure: the store keeps the claims, this decides.
//!
//! A directory overlaps everything under it (`directory:.` overlaps
//! everything); a file overlaps its symbols; two symbols of one file overlap
//! only if their line spans do. Only *write* claims of different agents
//! conflict.

use crate::resource::Resource;
use crate::RepoPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a claim is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ClaimType {
    /// The holder intends to change the resource: exclusive among agents.
    Write,
    /// The holder reads it (shared; records the digest it read).
    Read,
    /// The holder reviews it (shared).
    Review,
}

impl ClaimType {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimType::Write => "write",
            ClaimType::Read => "read",
            ClaimType::Review => "review",
        }
    }
}

/// A 1-based, inclusive line span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct LineSpan {
    /// The first line.
    pub start: u32,
    /// The last line.
    pub end: u32,
}

impl LineSpan {
    /// Whether the two spans share a line.
    pub fn intersects(self, other: LineSpan) -> bool {
        self.start <= other.end && other.start <= self.end
    }

    /// Whether old line `line` lies inside the span.
    pub fn contains_line(self, line: u32) -> bool {
        self.start <= line && line <= self.end
    }

    /// Whether an insertion after old line `after` (0: before the first
    /// line) lands strictly inside the span, between two of its lines.
    pub fn contains_insertion(self, after: u32) -> bool {
        self.start <= after && after < self.end
    }
}

/// What a claim covers: its resource, and for a symbol the span it had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The resource.
    pub resource: Resource,
    /// For a symbol, its line span; `None` for files and directories.
    pub span: Option<LineSpan>,
}

/// Whether `path` is `dir` or lies under it (`None` is the root).
pub fn under(dir: Option<&RepoPath>, path: &RepoPath) -> bool {
    match dir {
        None => true,
        Some(d) => {
            let (d, p) = (d.as_str(), path.as_str());
            p == d || (p.len() > d.len() && p.starts_with(d) && p.as_bytes()[d.len()] == b'/')
        }
    }
}

/// `held` as it is in the current content of its file, whose symbol index
/// is `symbols`: a symbol claim's span re-resolved there (a file that
/// shifted moves its symbols), or no span — overlapping every symbol of
/// the file — when the name no longer resolves to one symbol. Files and
/// directories are returned as they are.
pub fn current_scope(held: &Scope, symbols: &[crate::symbols::Symbol]) -> Scope {
    match &held.resource {
        Resource::Symbol { path, name } => Scope {
            resource: held.resource.clone(),
            span: crate::symbols::resolve_in(path, symbols, name)
                .ok()
                .map(|s| LineSpan {
                    start: s.start_line,
                    end: s.end_line,
                }),
        },
        _ => held.clone(),
    }
}

/// Whether two scopes overlap.
pub fn overlaps(a: &Scope, b: &Scope) -> bool {
    use Resource::{Directory, File, Symbol};
    match (&a.resource, &b.resource) {
        (Directory(x), Directory(y)) => match (x, y) {
            (None, _) | (_, None) => true,
            (Some(x), Some(y)) => under(Some(x), y) || under(Some(y), x),
        },
        (Directory(d), File(p) | Symbol { path: p, .. })
        | (File(p) | Symbol { path: p, .. }, Directory(d)) => under(d.as_ref(), p),
        (File(x), File(y) | Symbol { path: y, .. }) | (Symbol { path: y, .. }, File(x)) => x == y,
        (Symbol { path: x, name: n }, Symbol { path: y, name: m }) => {
            x == y
                && (n == m
                    || match (a.span, b.span) {
                        (Some(s), Some(t)) => s.intersects(t),
                        // A symbol whose span is unknown overlaps every
                        // symbol of its file.
                        _ => true,
                    })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(id: &str, span: Option<(u32, u32)>) -> Scope {
        Scope {
            resource: id.parse().expect("resource"),
            span: span.map(|(start, end)| LineSpan { start, end }),
        }
    }

    #[test]
    fn directories_overlap_what_is_under_them_only() {
        let src = scope("directory:src", None);
        assert!(overlaps(&src, &scope("file:src/a.rs", None)));
        assert!(overlaps(&scope("file:src/a.rs", None), &src));
        assert!(overlaps(&src, &scope("directory:src/deep", None)));
        assert!(overlaps(&src, &scope("symbol:src/a.rs#f", Some((1, 2)))));
        assert!(
            !overlaps(&src, &scope("file:srcs/a.rs", None)),
            "a name prefix is not a parent"
        );
        assert!(!overlaps(&src, &scope("directory:lib", None)));
        let root = scope("directory:.", None);
        assert!(overlaps(&root, &scope("file:x", None)));
        assert!(overlaps(&root, &src));
    }

    #[test]
    fn files_overlap_their_symbols_and_symbols_overlap_by_span() {
        let file = scope("file:src/a.rs", None);
        assert!(overlaps(&file, &scope("symbol:src/a.rs#f", Some((3, 9)))));
        assert!(!overlaps(&file, &scope("symbol:src/b.rs#f", Some((3, 9)))));
        assert!(!overlaps(&file, &scope("file:src/b.rs", None)));
        let f = scope("symbol:src/a.rs#f", Some((3, 9)));
        assert!(
            overlaps(&f, &scope("symbol:src/a.rs#g", Some((9, 12)))),
            "line 9 shared"
        );
        assert!(!overlaps(&f, &scope("symbol:src/a.rs#g", Some((10, 12)))));
        assert!(overlaps(&f, &scope("symbol:src/a.rs#f", Some((3, 9)))));
        assert!(!overlaps(&f, &scope("symbol:src/b.rs#f", Some((3, 9)))));
    }

    #[test]
    fn span_containment() {
        let s = LineSpan { start: 3, end: 9 };
        assert!(s.contains_line(3) && s.contains_line(9) && !s.contains_line(10));
        // Inserting after line 3 (between 3 and 4) is inside; after 9 is not;
        // before the first line (after line 2) is not.
        assert!(s.contains_insertion(3) && s.contains_insertion(8));
        assert!(!s.contains_insertion(9) && !s.contains_insertion(2));
    }
}
