//! Three-way merges of text, and what a change does without its positions.
//!
//! [`merge3`] is the merge a rebase makes: the change from `base` to `ours`
//! replayed onto `theirs` (the file as it is now), line by line, with
//! `git merge-file` semantics and no fuzz. Both sides are diffed against
//! the base (Myers); a stretch of the base that only one side changed takes
//! that side's lines, one both changed identically takes them once, and
//! one both changed differently — or changed in touching places — is a
//! [`Conflict`], reported with all three versions so that an agent can
//! resolve it.
//!
//! [`placed_hunks`] is the change of one file hunk by hunk, each with the
//! old lines around it: what [`Changeset::change_id`](crate::Changeset::change_id)
//! hashes to tell whether a rebase kept the change where it was.

use serde::{Deserialize, Serialize};
use similar::{Algorithm, DiffOp};

/// The lines of `data`, each with its newline (the last may lack one).
fn lines(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', data) {
        out.push(&data[start..=end]);
        start = end + 1;
    }
    if start < data.len() {
        out.push(&data[start..]);
    }
    out
}

/// A stretch of the base that one side replaced: base lines
/// `base.0..base.1` became that side's lines `side.0..side.1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Edit {
    base: (usize, usize),
    side: (usize, usize),
}

/// The edits turning `base` into `side`, in base order, adjacent
/// deletions and insertions joined into one.
fn edits(base: &[&[u8]], side: &[&[u8]]) -> Vec<Edit> {
    let ops = similar::capture_diff_slices(Algorithm::Myers, base, side);
    let mut out: Vec<Edit> = Vec::new();
    for op in ops {
        let (b, s) = match op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => ((old_index, old_index + old_len), (new_index, new_index)),
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => ((old_index, old_index), (new_index, new_index + new_len)),
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => (
                (old_index, old_index + old_len),
                (new_index, new_index + new_len),
            ),
        };
        match out.last_mut() {
            Some(last) if last.base.1 == b.0 && last.side.1 == s.0 => {
                last.base.1 = b.1;
                last.side.1 = s.1;
            }
            _ => out.push(Edit { base: b, side: s }),
        }
    }
    out
}

/// One stretch that both sides changed differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Conflict {
    /// The first base line of the stretch (1-based; for an insertion
    /// between lines, the line after it).
    pub base_line: u32,
    /// The first line of the stretch in the current file (1-based).
    pub theirs_line: u32,
    /// The base's lines (what the revision was made against).
    pub base: String,
    /// The revision's lines (the change being rebased).
    pub ours: String,
    /// The current file's lines (what landed meanwhile).
    pub theirs: String,
}

/// The outcome of a three-way merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    /// Every change merged: the resulting content.
    Clean(Vec<u8>),
    /// The stretches both sides changed differently, in file order.
    Conflicts(Vec<Conflict>),
}

/// The lines of one side for base stretch `from..to`, given that side's
/// edits inside it (lines between and around them are the base's).
fn side_range(from: usize, to: usize, inside: &[Edit]) -> (usize, usize) {
    match (inside.first(), inside.last()) {
        (Some(first), Some(last)) => (
            first.side.0 - (first.base.0 - from),
            last.side.1 + (to - last.base.1),
        ),
        _ => unreachable!("called only for a side with edits in the stretch"),
    }
}

fn text(lines: &[&[u8]]) -> String {
    String::from_utf8_lossy(&lines.concat()).into_owned()
}

/// The change from `base` to `ours`, merged onto `theirs`.
pub fn merge3(base: &[u8], ours: &[u8], theirs: &[u8]) -> Merged {
    let resolved = merge3_keeping_theirs(base, ours, theirs);
    if resolved.conflicts.is_empty() {
        Merged::Clean(resolved.data)
    } else {
        Merged::Conflicts(resolved.conflicts)
    }
}

/// A three-way merge whose conflicting stretches were left as `theirs`
/// has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The merged content: every clean stretch merged, every conflicting
    /// one as the current file (`theirs`) holds it.
    pub data: Vec<u8>,
    /// The stretches left as `theirs` has them, in file order.
    pub conflicts: Vec<Conflict>,
}

/// [`merge3`], except that a stretch both sides changed differently is
/// kept as `theirs` has it (and reported) instead of refusing the whole
/// merge: what an undo needs, which must never clobber what landed since.
pub fn merge3_keeping_theirs(base: &[u8], ours: &[u8], theirs: &[u8]) -> Resolved {
    let clean = |data: &[u8]| Resolved {
        data: data.to_vec(),
        conflicts: Vec::new(),
    };
    if ours == theirs || base == theirs {
        return clean(ours);
    }
    if base == ours {
        return clean(theirs);
    }
    let (b, o, t) = (lines(base), lines(ours), lines(theirs));
    let (eo, et) = (edits(&b, &o), edits(&b, &t));
    let mut out: Vec<&[u8]> = Vec::new();
    let mut conflicts = Vec::new();
    let (mut i, mut j) = (0, 0); // next edit of ours, of theirs
    let mut done = 0; // base lines consumed
    while i < eo.len() || j < et.len() {
        // The next stretch starts at the earliest pending edit and grows
        // while an edit of either side overlaps or touches it.
        let start = match (eo.get(i), et.get(j)) {
            (Some(a), Some(c)) => a.base.0.min(c.base.0),
            (Some(a), None) => a.base.0,
            (None, Some(c)) => c.base.0,
            (None, None) => unreachable!("the loop condition"),
        };
        let (i0, j0) = (i, j);
        let mut end = start;
        loop {
            if let Some(a) = eo.get(i).filter(|a| a.base.0 <= end) {
                end = end.max(a.base.1);
                i += 1;
            } else if let Some(c) = et.get(j).filter(|c| c.base.0 <= end) {
                end = end.max(c.base.1);
                j += 1;
            } else {
                break;
            }
        }
        out.extend_from_slice(&b[done..start]);
        done = end;
        let (ours_in, theirs_in) = (&eo[i0..i], &et[j0..j]);
        if theirs_in.is_empty() {
            let (s, e) = side_range(start, end, ours_in);
            out.extend_from_slice(&o[s..e]);
        } else if ours_in.is_empty() {
            let (s, e) = side_range(start, end, theirs_in);
            out.extend_from_slice(&t[s..e]);
        } else {
            let (os, oe) = side_range(start, end, ours_in);
            let (ts, te) = side_range(start, end, theirs_in);
            if o[os..oe] == t[ts..te] {
                out.extend_from_slice(&o[os..oe]);
            } else {
                out.extend_from_slice(&t[ts..te]);
                conflicts.push(Conflict {
                    base_line: start as u32 + 1,
                    theirs_line: ts as u32 + 1,
                    base: text(&b[start..end]),
                    ours: text(&o[os..oe]),
                    theirs: text(&t[ts..te]),
                });
            }
        }
    }
    out.extend_from_slice(&b[done..]);
    Resolved {
        data: out.concat(),
        conflicts,
    }
}

/// How many lines `text` holds (a last line without a newline counts).
pub fn line_count(text: &str) -> usize {
    lines(text.as_bytes()).len()
}

/// Lines `start..end` (0-based, end exclusive) of `from`, placed in `to`:
/// the lines of `to` they correspond to, by a line diff of the two. A
/// boundary inside a changed stretch widens to cover all of it, so the
/// result always holds whatever `to` has where `from` had those lines.
pub fn map_lines(from: &[u8], to: &[u8], start: usize, end: usize) -> (usize, usize) {
    let (f, t) = (lines(from), lines(to));
    let changes = edits(&f, &t);
    let place = |p: usize, at_end: bool| -> usize {
        let mut mapped = p;
        for e in &changes {
            if e.base.1 < p || (e.base.1 == p && e.base.0 < p) {
                // Wholly before the boundary: shifts it.
                mapped = p - e.base.1 + e.side.1;
            } else if e.base.0 < p || (e.base.0 == p && e.base.1 == p) {
                // Around it (or inserting right at it): take all of it.
                return if at_end { e.side.1 } else { e.side.0 };
            } else {
                break;
            }
        }
        mapped
    };
    let s = place(start, false);
    (s, place(end, true).max(s))
}

/// One hunk of a change in its place: the lines it removes and adds, and
/// the lines of the old content around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedHunk<'a> {
    /// The removed stretch of the old content: lines `old.0..old.1`,
    /// 0-based (equal for an insertion before old line `old.0`).
    pub old: (usize, usize),
    /// The lines it removes.
    pub removed: Vec<&'a [u8]>,
    /// The lines it adds.
    pub added: Vec<&'a [u8]>,
    /// Up to `context` old lines before the stretch.
    pub before: Vec<&'a [u8]>,
    /// Up to `context` old lines after the stretch.
    pub after: Vec<&'a [u8]>,
}

/// The hunks turning `old` into `new`, in order, each with up to `context`
/// unchanged-or-not old lines on either side (git's context: the old
/// file's lines, whatever other hunks do to them).
pub fn placed_hunks<'a>(old: &'a [u8], new: &'a [u8], context: usize) -> Vec<PlacedHunk<'a>> {
    let (a, b) = (lines(old), lines(new));
    edits(&a, &b)
        .into_iter()
        .map(|e| PlacedHunk {
            old: e.base,
            removed: a[e.base.0..e.base.1].to_vec(),
            added: b[e.side.0..e.side.1].to_vec(),
            before: a[e.base.0.saturating_sub(context)..e.base.0].to_vec(),
            after: a[e.base.1..(e.base.1 + context).min(a.len())].to_vec(),
        })
        .collect()
}

/// The lines of `new` that the change from `old` adds or rewrites, as
/// 1-based inclusive ranges in order (`(3, 5)`: lines 3 to 5): the lines
/// an author wrote, in the form an Agent Trace record's `ranges` take. A
/// pure deletion adds none.
pub fn added_lines(old: &[u8], new: &[u8]) -> Vec<(usize, usize)> {
    let (a, b) = (lines(old), lines(new));
    edits(&a, &b)
        .into_iter()
        .filter(|e| e.side.1 > e.side.0)
        .map(|e| (e.side.0 + 1, e.side.1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn added_lines_are_the_new_side_of_each_edit() {
        let old = "a\nb\nc\nd\n";
        assert_eq!(added_lines(old.as_bytes(), old.as_bytes()), vec![]);
        assert_eq!(
            added_lines(old.as_bytes(), b"a\nB\nc\nd\ne\nf\n"),
            vec![(2, 2), (5, 6)]
        );
        assert_eq!(added_lines(old.as_bytes(), b"a\nd\n"), vec![]);
        assert_eq!(added_lines(b"", b"x\ny"), vec![(1, 2)]);
    }

    fn clean(m: Merged) -> String {
        match m {
            Merged::Clean(v) => String::from_utf8(v).expect("utf-8"),
            Merged::Conflicts(c) => panic!("conflicts: {c:?}"),
        }
    }

    const BASE: &str = "a\nb\nc\nd\ne\nf\ng\n";

    #[test]
    fn disjoint_changes_merge() {
        let ours = "a\nB\nc\nd\ne\nf\ng\n";
        let theirs = "a\nb\nc\nd\ne\nF\ng\n";
        assert_eq!(
            clean(merge3(BASE.as_bytes(), ours.as_bytes(), theirs.as_bytes())),
            "a\nB\nc\nd\ne\nF\ng\n"
        );
    }

    #[test]
    fn insertions_shift_the_other_side() {
        let ours = "a\nb\nc\nd\ne\nf\nG\n";
        let theirs = "x\ny\na\nb\nc\nd\ne\nf\ng\n";
        assert_eq!(
            clean(merge3(BASE.as_bytes(), ours.as_bytes(), theirs.as_bytes())),
            "x\ny\na\nb\nc\nd\ne\nf\nG\n"
        );
    }

    #[test]
    fn identical_changes_merge_once() {
        let both = "a\nb\nC\nd\ne\nf\ng\n";
        let theirs = "a\nb\nC\nd\ne\nf\nG\n";
        assert_eq!(
            clean(merge3(BASE.as_bytes(), both.as_bytes(), theirs.as_bytes())),
            "a\nb\nC\nd\ne\nf\nG\n"
        );
    }

    #[test]
    fn overlapping_changes_conflict_with_all_three_versions() {
        let ours = "a\nb\nOURS\nd\ne\nf\ng\n";
        let theirs = "z\na\nb\nTHEIRS\nd\ne\nf\ng\n";
        let Merged::Conflicts(c) = merge3(BASE.as_bytes(), ours.as_bytes(), theirs.as_bytes())
        else {
            panic!("must conflict")
        };
        assert_eq!(
            c,
            vec![Conflict {
                base_line: 3,
                theirs_line: 4,
                base: "c\n".into(),
                ours: "OURS\n".into(),
                theirs: "THEIRS\n".into(),
            }]
        );
    }

    #[test]
    fn touching_changes_conflict() {
        // Ours changes line c, theirs inserts right after it: git conflicts.
        let ours = "a\nb\nC\nd\ne\nf\ng\n";
        let theirs = "a\nb\nc\nnew\nd\ne\nf\ng\n";
        assert!(matches!(
            merge3(BASE.as_bytes(), ours.as_bytes(), theirs.as_bytes()),
            Merged::Conflicts(_)
        ));
    }

    #[test]
    fn a_missing_final_newline_is_kept() {
        let base = "a\nb\nc";
        assert_eq!(
            clean(merge3(base.as_bytes(), b"A\nb\nc", b"a\nb\nC")),
            "A\nb\nC"
        );
    }

    #[test]
    fn every_pair_of_separated_edits_merges_to_both() {
        let base: Vec<String> = (0..8).map(|i| format!("l{i}\n")).collect();
        let with = |at: usize, text: &str| {
            let mut v = base.clone();
            v[at] = text.to_owned();
            v.concat()
        };
        for i in 0..base.len() {
            for j in 0..base.len() {
                let (ours, theirs) = (with(i, "ours\n"), with(j, "theirs\n"));
                let merged = merge3(base.concat().as_bytes(), ours.as_bytes(), theirs.as_bytes());
                if i.abs_diff(j) >= 2 {
                    let mut want = base.clone();
                    want[i] = "ours\n".into();
                    want[j] = "theirs\n".into();
                    assert_eq!(clean(merged), want.concat(), "edits at {i} and {j}");
                } else {
                    // The same or adjacent lines: a conflict, as git has it.
                    assert!(
                        matches!(merged, Merged::Conflicts(_)),
                        "edits at {i} and {j}"
                    );
                }
            }
        }
    }

    #[test]
    fn placed_hunks_carry_the_old_lines_around_them() {
        let old = "a\nb\nc\nd\ne\nf\ng\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\n";
        let hunks = placed_hunks(old.as_bytes(), new.as_bytes(), 2);
        let text = |v: &[&[u8]]| v.concat();
        assert_eq!(hunks.len(), 2);
        assert_eq!(hunks[0].old, (3, 4));
        assert_eq!(text(&hunks[0].removed), b"d\n");
        assert_eq!(text(&hunks[0].added), b"D\n");
        assert_eq!(text(&hunks[0].before), b"b\nc\n");
        assert_eq!(text(&hunks[0].after), b"e\nf\n");
        // An insertion at the end: its context stops at the file's start
        // and end.
        assert_eq!(hunks[1].old, (7, 7));
        assert_eq!(text(&hunks[1].before), b"f\ng\n");
        assert!(hunks[1].after.is_empty());
        let first = placed_hunks(b"a\n", b"Z\na\n", 3);
        assert!(first[0].before.is_empty());
        assert_eq!(text(&first[0].after), b"a\n");
    }

    #[test]
    fn a_kept_conflict_leaves_theirs_and_merges_the_rest() {
        // Undo: the change turned b into B and f into F; since then someone
        // edited B into B2. Undoing (base = after, ours = before) puts f
        // back and leaves B2 as it is, reported.
        let after = "a\nB\nc\nd\ne\nF\ng\n";
        let before = BASE;
        let now = "a\nB2\nc\nd\ne\nF\ng\n";
        let r = merge3_keeping_theirs(after.as_bytes(), before.as_bytes(), now.as_bytes());
        assert_eq!(
            String::from_utf8(r.data).expect("utf-8"),
            "a\nB2\nc\nd\ne\nf\ng\n"
        );
        assert_eq!(r.conflicts.len(), 1);
        assert_eq!(r.conflicts[0].theirs_line, 2);
        assert_eq!(r.conflicts[0].theirs, "B2\n");
        assert_eq!(line_count(&r.conflicts[0].theirs), 1);
        // Without a conflict it is merge3.
        let clean = merge3_keeping_theirs(BASE.as_bytes(), BASE.as_bytes(), after.as_bytes());
        assert!(clean.conflicts.is_empty());
        assert_eq!(clean.data, after.as_bytes());
    }

    #[test]
    fn lines_map_across_a_diff() {
        let from = "a\nb\nc\nd\n";
        // Two lines inserted before c, b replaced.
        let to = "a\nB\nx\ny\nc\nd\n";
        assert_eq!(map_lines(from.as_bytes(), to.as_bytes(), 0, 1), (0, 1));
        // b sits in a changed stretch: its whole replacement.
        assert_eq!(map_lines(from.as_bytes(), to.as_bytes(), 1, 2), (1, 4));
        assert_eq!(map_lines(from.as_bytes(), to.as_bytes(), 2, 4), (4, 6));
        // Identical contents map to themselves.
        assert_eq!(map_lines(from.as_bytes(), from.as_bytes(), 1, 3), (1, 3));
        // An empty range between two lines.
        assert_eq!(map_lines(from.as_bytes(), to.as_bytes(), 3, 3), (5, 5));
    }
}
