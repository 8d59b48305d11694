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
    use Res