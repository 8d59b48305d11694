//! Coverage: whether an author's claims cover every change of a changeset.
//! Pure: the caller resolves the claims' symbol spans in the current
//! content and computes each modification's line changes.
//!
//! - Creating, deleting, renaming (both paths), copying to a path and
//!   changing a mode need **file or directory** coverage of the path.
//! - A content modification needs file or directory coverage, **or** every
//!   removed line and every insertion point inside claimed symbol spans —
//!   contained, not merely overlapping: a change that starts inside a
//!   claimed function and runs past its end is uncovered.
//!
//! Every uncovered change is reported, not the first.

use crate::changeset::Operation;
use crate::claims::{under, LineSpan, Scope};
use crate::resource::Resource;
use crate::RepoPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use similar::{Algorithm, DiffTag};

/// Where a content change touches the old text, in old line numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LineChanges {
    /// Old lines removed or replaced (1-based).
    pub removed: Vec<u32>,
    /// Insertion points of pure additions: "after old line N" (0 = before
    /// the first line).
    pub insertions: Vec<u32>,
}

/// The line changes turning `before` into `after` (Myers line diff).
pub fn line_changes(before: &[u8], after: &[u8]) -> LineChanges {
    let (a, b) = (
        crate::changeset::render::lines(before),
        crate::changeset::render::lines(after),
    );
    let mut out = LineChanges::default();
    for op in similar::capture_diff_slices(Algorithm::Myers, &a, &b) {
        let old = op.old_range();
        match op.tag() {
            DiffTag::Equal => {}
            DiffTag::Delete | DiffTag::Replace => {
                out.removed.extend(old.map(|i| i as u32 + 1));
            }
            DiffTag::Insert => out.insertions.push(old.start as u32),
        }
    }
    out
}

/// The line changes a file's `hunks` state, at their own positions (the
/// change as submitted, not a re-diff that may align an insertion
/// elsewhere); `None` when some hunk's old side is not at its stated place
/// in `before` (the patch applies at an offset there), where only a diff
/// can tell.
pub fn hunk_line_changes(hunks: &[crate::diff::Hunk<'_>], before: &[u8]) -> Option<LineChanges> {
    use crate::diff::LineKind;
    let old = crate::changeset::render::lines(before);
    let same = |at: usize, content: &[u8]| {
        let trim = |l: &[u8]| -> usize {
            l.strip_suffix(b"\n").map_or(l.len(), |l| {
                l.strip_suffix(b"\r").map_or(l.len(), <[u8]>::len)
            })
        };
        old.get(at)
            .is_some_and(|l| l[..trim(l)] == content[..trim(content)])
    };
    let mut out = LineChanges::default();
    for h in hunks {
        let mut at = first_old_index(h.old_start(), h.old_lines())?;
        for l in h.lines() {
            if l.kind != LineKind::Insert {
                if !same(at, l.content) {
                    return None;
                }
                at += 1;
            }
        }
        let one = stated_line_changes(h.old_start(), h.old_lines(), h.lines().map(|l| l.kind))?;
        out.removed.extend(one.removed);
        out.insertions.extend(one.insertions);
    }
    Some(out)
}

/// The 0-based index of the first old line a hunk's header places it at:
/// `-N,0` means "after line N".
fn first_old_index(old_start: u32, old_lines: u32) -> Option<usize> {
    if old_lines == 0 {
        Some(old_start as usize)
    } else {
        (old_start as usize).checked_sub(1)
    }
}

/// The line changes one hunk states, taken at the position its header
/// (`-old_start,old_lines`) gives, from the kinds of its lines in order:
/// each deleted line is a removed old line; a run of added lines after a
/// context line (or at the hunk's start) is one insertion point, while
/// added lines next to deleted ones replace them (the removed lines say
/// where). Nothing is checked against the file: [`hunk_line_changes`]
/// checks, this only reads the hunk. `None` when a line number does not
/// fit.
///
/// ```
/// use roundtable_model::coverage::stated_line_changes;
/// use roundtable_diff::diff::LineKind::{Context, Delete, Insert};
///
/// // @@ -3,3 +3,4 @@: line 4 replaced, a line added after line 5.
/// let c = stated_line_changes(3, 3, [Context, Delete, Insert, Context, Insert]).expect("fits");
/// assert_eq!((c.removed, c.insertions), (vec![4], vec![5]));
/// ```
pub fn stated_line_changes(
    old_start: u32,
    old_lines: u32,
    kinds: impl IntoIterator<Item = crate::diff::LineKind>,
) -> Option<LineChanges> {
    use crate::diff::LineKind;
    let mut at = first_old_index(old_start, old_lines)?;
    let mut out = LineChanges::default();
    // The kind of the previous line, and whether the current run of
    // insertions recorded a point: an insertion next to a deletion is
    // part of a replacement (the removed lines say where), not a pure
    // addition.
    let mut previous = LineKind::Context;
    let mut pushed = false;
    for kind in kinds {
        match kind {
            LineKind::Context | LineKind::Delete => {
                if kind == LineKind::Delete {
                    if previous == LineKind::Insert && pushed {
                        out.insertions.pop();
                    }
                    out.removed.push(u32::try_from(at + 1).ok()?);
                }
                at += 1;
                pushed = false;
            }
            LineKind::Insert => {
                if previous == LineKind::Context {
                    out.insertions.push(u32::try_from(at).ok()?);
                    pushed = true;
                }
            }
        }
        previous = kind;
    }
    Some(out)
}

/// Whether everything outside the claimed spans is unchanged: `before`
/// with the lines of `old_spans` taken out equals `after` with the lines
/// of `new_spans` (the same symbols, resolved in the result) taken out,
/// each maximal run of claimed lines standing as one marker. This is exact
/// whatever a diff would align: code added at a symbol's boundary that ends
/// up outside it, or a symbol's lines moved past unclaimed code, make it
/// `false`.
pub fn outside_unchanged(
    before: &[u8],
    old_spans: &[LineSpan],
    after: &[u8],
    new_spans: &[LineSpan],
) -> bool {
    fn outside<'d>(data: &'d [u8], spans: &[LineSpan]) -> Vec<Option<&'d [u8]>> {
        let mut out = Vec::new();
        for (i, line) in crate::changeset::render::lines(data)
            .into_iter()
            .enumerate()
        {
            let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
            if spans.iter().any(|s| s.contains_line(n)) {
                if out.last() != Some(&None) {
                    out.push(None);
                }
            } else {
                out.push(Some(line));
            }
        }
        out
    }
    outside(before, old_spans) == outside(after, new_spans)
}

/// One touched path, as coverage sees it.
#[derive(Debug, Clone)]
pub struct Change<'a> {
    /// The path.
    pub path: &'a RepoPath,
    /// What happens to it.
    pub operation: &'a Operation,
    /// Whether its executable bit changes.
    pub mode_change: bool,
    /// For a content modification, where its lines change.
    pub lines: Option<&'a LineChanges>,
}

/// A change the claims do not cover.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Uncovered {
    /// The path.
    pub path: String,
    /// `create`, `modify`, `delete`, `rename`, `renamed_away`, `copy`.
    pub operation: crate::model::OperationKind,
    /// What is missing.
    pub reason: String,
    /// Removed old lines outside every claimed symbol span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<u32>,
    /// Insertion points ("after old line N") outside every claimed span.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub insertions: Vec<u32>,
}

/// Whether some claim covers `path` as a whole file (a file or directory
/// claim), so its line changes do not matter.
pub fn file_covered(path: &RepoPath, claims: &[Scope]) -> bool {
    claims.iter().any(|c| match &c.resource {
        Resource::File(p) => p == path,
        Resource::Directory(d) => under(d.as_ref(), path),
        Resource::Symbol { .. } => false,
    })
}

/// Whether another agent's claim `other` (a symbol's span re-resolved in
/// the current content) overlaps `change` itself: a file or directory
/// claim on its path; a symbol claim in its file whose span contains one
/// of its removed lines or insertion points. A symbol claim blocks
/// whatever else happens to its file (a structural or mode change, line
/// changes not computed, a span that no longer resolves).
pub fn claim_blocks(other: &Scope, change: &Change<'_>) -> bool {
    match &other.resource {
        Resource::File(_) | Resource::Directory(_) => {
            file_covered(change.path, std::slice::from_ref(other))
        }
        Resource::Symbol { path, .. } if path == change.path => {
            match (change.operation, change.lines, other.span) {
                (Operation::Modify, Some(lines), Some(span)) if !change.mode_change => {
                    lines.removed.iter().any(|&l| span.contains_line(l))
                        || lines.insertions.iter().any(|&i| span.contains_insertion(i))
                }
                _ => true,
            }
        }
        Resource::Symbol { .. } => false,
    }
}

/// One path a landed change touched, with its content before and after,
/// for [`used_by`].
#[derive(Debug, Clone, Copy)]
pub struct Landed<'a> {
    /// The path.
    pub path: &'a RepoPath,
    /// What happened to it.
    pub operation: &'a Operation,
    /// Whether its mode changed.
    pub mode_change: bool,
    /// Its content before (`None`: absent, or not known).
    pub before: Option<&'a [u8]>,
    /// Its content after (`None`: removed).
    pub after: Option<&'a [u8]>,
}

/// Whether a claim on `resource` served the landed change `files`: a file
/// or directory claim on a touched path (or a rename's other path); a
/// symbol claim whose span, resolved in the content before the change,
/// holds a removed line or an insertion point of its file's change (or
/// any change to its file that is not a plain content modification). A
/// symbol claim elsewhere in a touched file served nothing: landing the
/// change leaves it held.
pub fn used_by(resource: &Resource, files: &[Landed<'_>]) -> bool {
    let whole = |p: &RepoPath| Scope {
        resource: Resource::File(p.clone()),
        span: None,
    };
    let held = Scope {
        resource: resource.clone(),
        span: None,
    };
    files.iter().any(|f| {
        let other = match f.operation {
            Operation::Rename { from } | Operation::Copy { from } => Some(from),
            Operation::RenamedAway { to } => Some(to),
            _ => None,
        };
        if other.is_some_and(|o| crate::claims::overlaps(&held, &whole(o))) {
            return true;
        }
        if !crate::claims::overlaps(&held, &whole(f.path)) {
            return false;
        }
        let Resource::Symbol { name, .. } = resource else {
            return true;
        };
        let (Operation::Modify, false, Some(before), Some(after)) =
            (f.operation, f.mode_change, f.before, f.after)
        else {
            return true;
        };
        let Ok(symbol) = crate::symbols::resolve(f.path, before, name) else {
            // It named nothing in this file: it covered nothing here.
            return false;
        };
        let lines = line_changes(before, after);
        claim_blocks(
            &Scope {
                resource: resource.clone(),
                span: Some(LineSpan {
                    start: symbol.start_line,
                    end: symbol.end_line,
                }),
            },
            &Change {
                path: f.path,
                operation: f.operation,
                mode_change: false,
                lines: Some(&lines),
            },
        )
    })
}

/// Every change of `changes` that `claims` do not cover.
pub fn uncovered(changes: &[Change<'_>], claims: &[Scope]) -> Vec<Uncovered> {
    let mut out = Vec::new();
    for change in changes {
        if file_covered(change.path, claims) {
            continue;
        }
        let operation = change.operation.kind();
        let path = change.path.to_string();
        let whole = |reason: &str| Uncovered {
            path: path.clone(),
            operation,
            reason: reason.to_owned(),
            lines: Vec::new(),
            insertions: Vec::new(),
        };
        match (change.operation, change.lines) {
            (Operation::Modify, _) if change.mode_change => out.push(whole(
                "a mode change needs a file or directory claim on the path",
            )),
            (Operation::Modify, Some(lines)) => {
                let spans: Vec<_> = claims
                    .iter()
                    .filter_map(|c| match &c.resource {
                        Resource::Symbol { path, .. } if path == change.path => c.span,
                        _ => None,
                    })
                    .collect();
                let lines_out: Vec<u32> = lines
                    .removed
                    .iter()
                    .copied()
                    .filter(|&l| !spans.iter().any(|s| s.contains_line(l)))
                    .collect();
                let inserts_out: Vec<u32> = lines
                    .insertions
                    .iter()
                    .copied()
                    .filter(|&l| !spans.iter().any(|s| s.contains_insertion(l)))
                    .collect();
                if !lines_out.is_empty() || !inserts_out.is_empty() {
                    let reason = if spans.is_empty() {
                        "no file, directory or symbol claim covers the path"
                    } else {
                        "changed lines lie outside every claimed symbol span"
                    };
                    out.push(Uncovered {
                        lines: lines_out,
                        insertions: inserts_out,
                        ..whole(reason)
                    });
                }
            }
            (Operation::Modify, None) => {
                out.push(whole("no file or directory claim covers the path"))
            }
            _ => out.push(whole(&format!(
                "{} needs a file or directory claim on the path",
                change.operation.name()
            ))),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> RepoPath {
        p.parse().expect("path")
    }

    fn claim(id: &str, span: Option<(u32, u32)>) -> Scope {
        Scope {
            resource: id.parse().expect("resource"),
            span: span.map(|(start, end)| LineSpan { start, end }),
        }
    }

    #[test]
    fn hunk_line_changes_use_the_hunks_own_positions() {
        let before = b"a\nb\nc\n";
        let patch = b"--- a/f\n+++ b/f\n@@ -1,2 +1,4 @@\n+b\n+x\n a\n-b\n+B\n";
        let patch =
            crate::diff::parse(patch, &crate::diff::ParseOptions::strip(1)).expect("parses");
        let hunks = patch.files()[0].hunks();
        let c = hunk_line_changes(hunks, before).expect("at its place");
        // A pure insertion before line 1 (a re-diff could align it after
        // it), and line 2 replaced.
        assert_eq!(c.insertions, [0]);
        assert_eq!(c.removed, [2]);
        // Not where it says: no positions to trust.
        assert_eq!(hunk_line_changes(hunks, b"z\na\nb\n"), None);
    }

    #[test]
    fn stated_line_changes_read_the_hunk_alone() {
        use crate::diff::LineKind::{Context, Delete, Insert};
        // `-0,0`: an insertion before the first line.
        let c = stated_line_changes(0, 0, [Insert, Insert]).expect("fits");
        assert_eq!((c.removed, c.insertions), (vec![], vec![0]));
        // `-7,0`: after line 7.
        assert_eq!(
            stated_line_changes(7, 0, [Insert])
                .expect("fits")
                .insertions,
            [7]
        );
        // Added lines before a deletion replace it: no insertion point.
        let c = stated_line_changes(2, 2, [Insert, Delete, Context]).expect("fits");
        assert_eq!((c.removed, c.insertions), (vec![2], vec![]));
        // Two runs, two points; a context-only hunk changes nothing.
        let c =
            stated_line_changes(1, 3, [Context, Insert, Context, Context, Insert]).expect("fits");
        assert_eq!(c.insertions, [1, 3]);
        assert_eq!(
            stated_line_changes(5, 2, [Context, Context]),
            Some(LineChanges::default())
        );
        // Line 0 of a hunk with old lines names nothing.
        assert_eq!(stated_line_changes(0, 1, [Delete]), None);
    }

    #[test]
    fn outside_unchanged_compares_everything_but_the_claimed_spans() {
        let span = |start, end| LineSpan { start, end };
        let before = b"x\nfn f {\n 1\n}\ny\n";
        let grown = b"x\nfn f {\n 1\n 2\n}\ny\n";
        assert!(outside_unchanged(
            before,
            &[span(2, 4)],
            grown,
            &[span(2, 5)]
        ));
        let added = b"x\nfn f {\n}\nfn g {\n}\ny\n";
        assert!(!outside_unchanged(
            before,
            &[span(2, 4)],
            added,
            &[span(2, 3)]
        ));
    }

    #[test]
    fn line_changes_number_old_lines() {
        let before = b"a\nb\nc\nd\n";
        let after = b"a\nB\nc\nnew\nd\n";
        let c = line_changes(before, after);
        assert_eq!(c.removed, [2]);
        assert_eq!(c.insertions, [3]);
        let appended = line_changes(b"a\n", b"a\nb\n");
        assert_eq!(appended.insertions, [1]);
        assert!(appended.removed.is_empty());
        assert_eq!(line_changes(b"a\n", b"a\n"), LineChanges::default());
    }

    #[test]
    fn structural_changes_need_file_or_directory_claims_on_every_path() {
        let (a, b) = (path("src/a.rs"), path("src/b.rs"));
        let rename = Operation::Rename { from: a.clone() };
        let away = Operation::RenamedAway { to: b.clone() };
        let changes = [
            Change {
                path: &b,
                operation: &rename,
                mode_change: false,
                lines: None,
            },
            Change {
                path: &a,
                operation: &away,
                mode_change: false,
                lines: None,
            },
        ];
        // Only the destination is claimed: the source is reported.
        let report = uncovered(&changes, &[claim("file:src/b.rs", None)]);
        assert_eq!(report.len(), 1);
        assert_eq!(report[0].path, "src/a.rs");
        assert_eq!(report[0].operation, "renamed_away");
        // A directory claim covers both; a symbol claim never covers a create.
        assert!(uncovered(&changes, &[claim("directory:src", None)]).is_empty());
        let create = Operation::Create;
        let created = [Change {
            path: &a,
            operation: &create,
            mode_change: false,
            lines: None,
        }];
        assert_eq!(
            uncovered(&created, &[claim("symbol:src/a.rs#f", Some((1, 9)))]).len(),
            1
        );
    }

    #[test]
    fn modifications_inside_claimed_spans_are_covered_and_overlaps_are_not() {
        let p = path("src/a.rs");
        let modify = Operation::Modify;
        let inside = LineChanges {
            removed: vec![4, 5],
            insertions: vec![6],
        };
        let f = claim("symbol:src/a.rs#f", Some((3, 9)));
        let ch = |lines| {
            [Change {
                path: &p,
                operation: &modify,
                mode_change: false,
                lines: Some(lines),
            }]
        };
        assert!(uncovered(&ch(&inside), std::slice::from_ref(&f)).is_empty());
        // Starts inside f, runs past its end: lines 10 and 11 are reported.
        let past = LineChanges {
            removed: vec![8, 9, 10, 11],
            insertions: vec![],
        };
        let report = uncovered(&ch(&past), std::slice::from_ref(&f));
        assert_eq!(report[0].lines, [10, 11]);
        assert_eq!(
            report[0].reason,
            "changed lines lie outside every claimed symbol span"
        );
        // An insertion right after the span's last line is outside it.
        let after_end = LineChanges {
            removed: vec![],
            insertions: vec![9],
        };
        assert_eq!(
            uncovered(&ch(&after_end), std::slice::from_ref(&f))[0].insertions,
            [9]
        );
        // Two claimed spans together cover a change across both.
        let g = claim("symbol:src/a.rs#g", Some((10, 12)));
        assert!(uncovered(&ch(&past), &[f, g]).is_empty());
        // A mode change is never covered by symbols.
        let moded = [Change {
            path: &p,
            operation: &modify,
            mode_change: true,
            lines: Some(&inside),
        }];
        assert_eq!(
            uncovered(&moded, &[claim("symbol:src/a.rs#f", Some((1, 99)))]).len(),
            1
        );
        assert!(uncovered(&moded, &[claim("file:src/a.rs", None)]).is_empty());
    }

    #[test]
    fn every_uncovered_change_is_reported() {
        let (a, b) = (path("a"), path("b"));
        let (c, d) = (Operation::Create, Operation::Delete);
        let changes = [
            Change {
                path: &a,
                operation: &c,
                mode_change: false,
                lines: None,
            },
            Change {
                path: &b,
                operation: &d,
                mode_change: false,
                lines: None,
            },
        ];
        let report = uncovered(&changes, &[]);
        assert_eq!(
            report.iter().map(|u| u.path.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn another_claim_blocks_only_where_it_overlaps_the_change() {
        let p = path("src/lib.rs");
        let modify = Operation::Modify;
        let lines = LineChanges {
            removed: vec![2],
            insertions: vec![3],
        };
        let change = Change {
            path: &p,
            operation: &modify,
            mode_change: false,
            lines: Some(&lines),
        };
        let symbol = |span: Option<(u32, u32)>| Scope {
            resource: Resource::Symbol {
                path: p.clone(),
                name: "f".into(),
            },
            span: span.map(|(start, end)| LineSpan { start, end }),
        };
        // A symbol elsewhere in the file does not block; one holding a
        // changed line or an insertion point does.
        assert!(!claim_blocks(&symbol(Some((5, 7))), &change));
        assert!(claim_blocks(&symbol(Some((1, 2))), &change));
        assert!(claim_blocks(&symbol(Some((3, 4))), &change));
        // An insertion at a span's end is outside it.
        assert!(!claim_blocks(
            &symbol(Some((3, 3))),
            &Change {
                lines: Some(&LineChanges {
                    removed: vec![],
                    insertions: vec![3]
                }),
                ..change.clone()
            }
        ));
        // Unresolved span, unknown lines, a mode change: blocks.
        assert!(claim_blocks(&symbol(None), &change));
        assert!(claim_blocks(
            &symbol(Some((5, 7))),
            &Change {
                lines: None,
                ..change.clone()
            }
        ));
        assert!(claim_blocks(
            &symbol(Some((5, 7))),
            &Change {
                mode_change: true,
                ..change.clone()
            }
        ));
        // A file or directory claim on the path blocks, one elsewhere not.
        let file = |f: &str| Scope {
            resource: Resource::File(path(f)),
            span: None,
        };
        assert!(claim_blocks(&file("src/lib.rs"), &change));
        assert!(!claim_blocks(&file("src/other.rs"), &change));
        let dir = Scope {
            resource: Resource::Directory(Some(path("src"))),
            span: None,
        };
        assert!(claim_blocks(&dir, &change));
        let other = Scope {
            resource: Resource::Symbol {
                path: path("b.rs"),
                name: "f".into(),
            },
            span: None,
        };
        assert!(!claim_blocks(&other, &change));
    }
}
