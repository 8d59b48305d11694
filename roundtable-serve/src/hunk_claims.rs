//! The claims that cover each hunk of a diff, by the engine's own coverage
//! rule ([`roundtable::coverage`]), over values: a file or directory claim
//! covers every hunk of its file; a symbol claim covers a hunk that
//! removes a line of the symbol's span or inserts between two of its lines
//! ([`claim_blocks`] on the hunk's [`stated_line_changes`]).
//!
//! A symbol's span is the one its claim recorded when acquired
//! (`claim.list`'s `span`), in the lines its file had then; a hunk's old
//! line numbers are those of the proposal's base. Should the file have
//! changed between the two, the span may have moved: validation resolves
//! symbols in the current content, this view reads no file. A symbol claim
//! with no span covers every hunk of its file, as the engine's overlap rule
//! has it for a span it cannot place.

use roundtable::claims::Scope;
use roundtable::coverage::{claim_blocks, stated_line_changes, Change, LineChanges};
use roundtable::diff::LineKind as DiffKind;
use roundtable::model::{Claim, ClaimStatus};
use roundtable::{Operation, RepoPath};
use serde_json::{json, Value};

use crate::views::LineKind;

/// An active claim with the scope coverage compares.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    /// The claim.
    claim: Claim,
    /// Its resource and, for a symbol, its recorded span.
    scope: Scope,
}

impl Held {
    /// `claim` as coverage sees it; `None` when it is not active or its
    /// resource is not one this build reads.
    pub(crate) fn of(claim: Claim) -> Option<Held> {
        if claim.status != ClaimStatus::Active {
            return None;
        }
        let resource = claim.resource_id.parse().ok()?;
        Some(Held {
            scope: Scope {
                resource,
                span: claim.span,
            },
            claim,
        })
    }

    /// What the console shows of it.
    fn shown(&self) -> Value {
        json!({
            "claim_id": self.claim.id,
            "holder": self.claim.agent_id,
            "resource": self.claim.resource_id,
            "type": self.claim.claim_type,
            "until": self.claim.expires_at,
        })
    }
}

/// The active claims among `claims`, items of `claim.list` (an item that
/// is not a claim record, or not active, covers nothing).
pub(crate) fn held(claims: &[Value]) -> Vec<Held> {
    claims
        .iter()
        .filter_map(|c| serde_json::from_value::<Claim>(c.clone()).ok())
        .filter_map(Held::of)
        .collect()
}

impl From<LineKind> for DiffKind {
    fn from(kind: LineKind) -> DiffKind {
        match kind {
            LineKind::Context => DiffKind::Context,
            LineKind::Del => DiffKind::Delete,
            LineKind::Add => DiffKind::Insert,
        }
    }
}

/// The line changes of a hunk placed at old line `old_start` whose lines
/// are of `kinds`, in order; `None` when its numbers do not fit.
pub(crate) fn hunk_changes(
    old_start: u32,
    kinds: impl IntoIterator<Item = LineKind>,
) -> Option<LineChanges> {
    let kinds: Vec<DiffKind> = kinds.into_iter().map(DiffKind::from).collect();
    let old_lines = kinds.iter().filter(|k| **k != DiffKind::Insert).count();
    stated_line_changes(old_start, u32::try_from(old_lines).ok()?, kinds)
}

/// The claims of `held` that cover a hunk making `changes` to the file at
/// `path` (or, renamed, at `old_path` before), in `held`'s order.
pub(crate) fn covering<'h>(
    held: &'h [Held],
    path: &RepoPath,
    old_path: Option<&RepoPath>,
    changes: &LineChanges,
) -> Vec<&'h Held> {
    let modify = Operation::Modify;
    let change = |path| Change {
        path,
        operation: &modify,
        mode_change: false,
        lines: Some(changes),
    };
    held.iter()
        .filter(|h| {
            std::iter::once(path)
                .chain(old_path)
                .any(|p| claim_blocks(&h.scope, &change(p)))
        })
        .collect()
}

/// The claims of `held` covering a hunk of the file at `path` (`old_path`
/// before a rename), placed at old line `old_start`, with lines of
/// `kinds`, as the diff route shows them (`[]` when none does, or the
/// paths or numbers are not ones coverage reads).
pub(crate) fn shown(
    held: &[Held],
    path: &str,
    old_path: Option<&str>,
    old_start: u32,
    kinds: impl IntoIterator<Item = LineKind>,
) -> Vec<Value> {
    let Ok(path) = path.parse::<RepoPath>() else {
        return Vec::new();
    };
    let old_path = old_path.and_then(|p| p.parse::<RepoPath>().ok());
    let Some(changes) = hunk_changes(old_start, kinds) else {
        return Vec::new();
    };
    covering(held, &path, old_path.as_ref(), &changes)
        .into_iter()
        .map(Held::shown)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use LineKind::{Add, Context, Del};

    /// A claim record as `claim.list` returns it.
    fn claim(id: &str, resource: &str, span: Option<(u32, u32)>, status: &str) -> Value {
        json!({
            "id": id,
            "agent_id": "alice",
            "resource_id": resource,
            "type": "write",
            "task_id": null,
            "base_digest": "absent",
            "token": 1,
            "span": span.map(|(start, end)| json!({"start": start, "end": end})),
            "acquired_at": "2026-01-01T00:00:00.000Z",
            "expires_at": "2026-01-02T00:00:00.000Z",
            "released_at": null,
            "status": status,
        })
    }

    /// The ids of the claims covering a hunk of `src/a.rs` at `old_start`.
    fn ids(claims: &[Value], old_start: u32, kinds: &[LineKind]) -> Vec<String> {
        shown(&held(claims), "src/a.rs", None, old_start, kinds.to_vec())
            .iter()
            .map(|c| c["claim_id"].as_str().unwrap_or("?").to_owned())
            .collect()
    }

    /// Two hunks of one file: line 3 replaced (in `f`, lines 1–5), a line
    /// added after line 20 (in `g`, lines 18–25).
    const IN_F: (u32, &[LineKind]) = (2, &[Context, Del, Add, Context]);
    const IN_G: (u32, &[LineKind]) = (19, &[Context, Context, Add, Context]);

    #[test]
    fn the_records_parse_and_only_active_claims_are_held() {
        let claims = [
            claim("c1", "file:src/a.rs", None, "active"),
            claim("c2", "file:src/a.rs", None, "expired"),
            claim("c3", "file:src/a.rs", None, "released"),
            json!({"id": "c4", "resource_id": "file:src/a.rs"}),
        ];
        let held = held(&claims);
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].claim.id, "c1");
        assert_eq!(held[0].shown()["holder"], "alice");
        assert_eq!(held[0].shown()["until"], "2026-01-02T00:00:00.000Z");
    }

    #[test]
    fn a_file_claim_covers_every_hunk_of_its_file() {
        let claims = [claim("c1", "file:src/a.rs", None, "active")];
        assert_eq!(ids(&claims, IN_F.0, IN_F.1), ["c1"]);
        assert_eq!(ids(&claims, IN_G.0, IN_G.1), ["c1"]);
        // Not another file's.
        let other = [claim("c1", "file:src/b.rs", None, "active")];
        assert!(ids(&other, IN_F.0, IN_F.1).is_empty());
        // A directory above it covers it too.
        let dir = [claim("d", "directory:src", None, "active")];
        assert_eq!(ids(&dir, IN_G.0, IN_G.1), ["d"]);
    }

    #[test]
    fn a_symbol_claim_covers_only_the_hunk_that_changes_its_span() {
        let f = [claim("f", "symbol:src/a.rs#f", Some((1, 5)), "active")];
        assert_eq!(ids(&f, IN_F.0, IN_F.1), ["f"]);
        assert!(ids(&f, IN_G.0, IN_G.1).is_empty());
        let g = [claim("g", "symbol:src/a.rs#g", Some((18, 25)), "active")];
        assert!(ids(&g, IN_F.0, IN_F.1).is_empty());
        assert_eq!(ids(&g, IN_G.0, IN_G.1), ["g"]);
        // An insertion right after the span's last line is outside it.
        let ends = [claim("e", "symbol:src/a.rs#e", Some((10, 20)), "active")];
        assert!(ids(&ends, IN_G.0, IN_G.1).is_empty());
        // A hunk of context only changes no symbol.
        assert!(ids(&f, 1, &[Context, Context]).is_empty());
        // A symbol of another file covers nothing here.
        let b = [claim("b", "symbol:src/b.rs#f", Some((1, 5)), "active")];
        assert!(ids(&b, IN_F.0, IN_F.1).is_empty());
    }

    #[test]
    fn two_claims_on_one_hunk_are_both_listed_and_expired_ones_are_not() {
        let claims = [
            claim("file", "file:src/a.rs", None, "active"),
            claim("old", "symbol:src/a.rs#f", Some((1, 5)), "expired"),
            claim("f", "symbol:src/a.rs#f", Some((1, 5)), "active"),
            claim("g", "symbol:src/a.rs#g", Some((18, 25)), "active"),
        ];
        assert_eq!(ids(&claims, IN_F.0, IN_F.1), ["file", "f"]);
        assert_eq!(ids(&claims, IN_G.0, IN_G.1), ["file", "g"]);
    }

    #[test]
    fn no_claim_covers_nothing_and_bad_input_is_no_claim() {
        assert!(ids(&[], IN_F.0, IN_F.1).is_empty());
        let claims = [claim("c1", "file:src/a.rs", None, "active")];
        let held = held(&claims);
        assert!(shown(&held, "../escape", None, 1, [Del]).is_empty());
        // A hunk with old lines cannot start at line 0.
        assert!(shown(&held, "src/a.rs", None, 0, [Del]).is_empty());
    }

    #[test]
    fn a_rename_is_covered_by_a_claim_on_either_path() {
        let claims = [claim("old", "symbol:src/old.rs#f", Some((1, 5)), "active")];
        let held = held(&claims);
        let got = shown(
            &held,
            "src/a.rs",
            Some("src/old.rs"),
            IN_F.0,
            IN_F.1.to_vec(),
        );
        assert_eq!(got.len(), 1);
        assert!(shown(&held, "src/a.rs", None, IN_F.0, IN_F.1.to_vec()).is_empty());
    }
}
