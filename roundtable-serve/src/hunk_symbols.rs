//! The symbols each hunk of a diff changes, over values: the engine's
//! `proposal.symbols` says which functions, methods and types a revision
//! adds, removes, renames or modifies, with their line spans before and
//! after; a hunk changes a symbol when it adds a line inside the symbol's
//! span after the change, or removes one inside its span before.
//!
//! A hunk's own line numbers place it: its removed lines are numbered in
//! the old file, its added lines in the new one, the two sides the spans
//! are given in. Context lines change nothing, so a hunk whose changed
//! lines all fall between symbols changes none. A file no grammar indexes
//! has no symbols, so none of its hunks names one.

use roundtable::operations::review::{FileSymbols, SymbolChange, Symbols};
use serde_json::{json, Value};

use crate::views::LineKind;

/// One changed line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Changed {
    /// Line `n` (1-based) of the old file, removed.
    Removed(u32),
    /// Line `n` (1-based) of the new file, added.
    Added(u32),
}

/// The changed lines of a hunk whose lines are `(kind, old number, new
/// number)`, in the hunk's order; context lines, and a line without the
/// number its kind needs, are left out.
pub(crate) fn changed_lines(
    lines: impl IntoIterator<Item = (LineKind, Option<u32>, Option<u32>)>,
) -> Vec<Changed> {
    lines
        .into_iter()
        .filter_map(|(kind, old, new)| match kind {
            LineKind::Context => None,
            LineKind::Del => old.map(Changed::Removed),
            LineKind::Add => new.map(Changed::Added),
        })
        .collect()
}

/// Whether `line` is inside `span` (`[start, end]`, both included).
fn within(span: Option<[u32; 2]>, line: u32) -> bool {
    span.is_some_and(|[start, end]| start <= line && line <= end)
}

/// The span of `symbol` that `change` falls in, if it does.
fn hit(symbol: &SymbolChange, change: Changed) -> Option<[u32; 2]> {
    match change {
        Changed::Added(n) => symbol.after.filter(|_| within(symbol.after, n)),
        Changed::Removed(n) => symbol.before.filter(|_| within(symbol.before, n)),
    }
}

/// The symbols of one file's `symbols` that a hunk making `changed`
/// changes: those whose span after contains an added line or whose span
/// before contains a removed one. In the order the hunk first reaches
/// them, and among those it first reaches at one line the innermost first
/// (the shorter span: a method before the type holding it); a symbol
/// listed twice under one name, kind and change is given once.
pub(crate) fn hunk_symbols<'s>(
    changed: &[Changed],
    symbols: &'s [SymbolChange],
) -> Vec<&'s SymbolChange> {
    let mut found: Vec<(usize, u32, usize)> = symbols
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            changed.iter().enumerate().find_map(|(at, c)| {
                hit(s, *c).map(|[start, end]| (at, end.saturating_sub(start), i))
            })
        })
        .collect();
    found.sort_unstable();
    let mut out: Vec<&SymbolChange> = Vec::new();
    for (_, _, i) in found {
        let s = &symbols[i];
        if !out
            .iter()
            .any(|o| o.name == s.name && o.kind == s.kind && o.change == s.change)
        {
            out.push(s);
        }
    }
    out
}

/// What the console shows of a symbol a hunk changes.
fn shown(symbol: &SymbolChange) -> Value {
    json!({"name": symbol.name, "kind": symbol.kind, "change": symbol.change})
}

/// The symbols of a page of diff sections, by file, as `proposal.symbols`
/// answered for them.
#[derive(Debug, Default)]
pub(crate) struct PageSymbols(Vec<FileSymbols>);

impl PageSymbols {
    /// `answer`, a `proposal.symbols` result; none when it is not one.
    pub(crate) fn of(answer: Value) -> PageSymbols {
        PageSymbols(
            serde_json::from_value::<Symbols>(answer)
                .map(|s| s.files)
                .unwrap_or_default(),
        )
    }

    /// The symbols a hunk making `changed` to the file listed at `path`
    /// changes, as the diff route shows them (`{name, kind, change}`,
    /// innermost first; `[]` for a file without symbols).
    pub(crate) fn of_hunk(&self, path: &str, changed: &[Changed]) -> Vec<Value> {
        self.0
            .iter()
            .find(|f| f.path == path)
            .map(|f| hunk_symbols(changed, &f.symbols))
            .unwrap_or_default()
            .into_iter()
            .map(shown)
            .collect()
    }
}

/// The `proposal.symbols` arguments for a page of `proposal.diff`
/// sections of revision `revision` of `proposal_id`: only the page's files,
/// by every path they have.
pub(crate) fn request(proposal_id: &str, revision: &Value, sections: &[Value]) -> Value {
    let mut paths: Vec<&str> = sections
        .iter()
        .flat_map(|s| ["new_path", "old_path"].map(|k| s.get(k).and_then(Value::as_str)))
        .flatten()
        .collect();
    paths.sort_unstable();
    paths.dedup();
    let mut args = json!({"proposal_id": proposal_id, "paths": paths});
    if revision.is_u64() {
        args["revision"] = revision.clone();
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtable::symbols::SymbolKind;
    use LineKind::{Add, Context, Del};

    fn symbol(
        change: &str,
        name: &str,
        kind: SymbolKind,
        before: Option<[u32; 2]>,
        after: Option<[u32; 2]>,
    ) -> SymbolChange {
        SymbolChange {
            change: change.to_owned(),
            name: name.to_owned(),
            old_name: None,
            kind,
            before,
            after,
        }
    }

    fn names(changed: &[Changed], symbols: &[SymbolChange]) -> Vec<String> {
        hunk_symbols(changed, symbols)
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// `f` on lines 1–5 and `g` on lines 10–15, both modified in place.
    fn two() -> Vec<SymbolChange> {
        vec![
            symbol(
                "modified",
                "f",
                SymbolKind::Function,
                Some([1, 5]),
                Some([1, 5]),
            ),
            symbol(
                "modified",
                "g",
                SymbolKind::Function,
                Some([10, 15]),
                Some([10, 15]),
            ),
        ]
    }

    #[test]
    fn the_changed_lines_of_a_hunk_are_its_added_and_removed_ones() {
        let lines = [
            (Context, Some(2), Some(2)),
            (Del, Some(3), None),
            (Add, None, Some(3)),
            (Add, None, Some(4)),
            (Context, Some(4), Some(5)),
            // A line without the number its kind needs is no change.
            (Add, Some(9), None),
        ];
        assert_eq!(
            changed_lines(lines),
            [Changed::Removed(3), Changed::Added(3), Changed::Added(4)]
        );
    }

    #[test]
    fn a_hunk_inside_one_function_names_it() {
        let hunk = [Changed::Removed(3), Changed::Added(3)];
        assert_eq!(names(&hunk, &two()), ["f"]);
        // A pure addition inside g, or a pure removal.
        assert_eq!(names(&[Changed::Added(12)], &two()), ["g"]);
        assert_eq!(names(&[Changed::Removed(15)], &two()), ["g"]);
    }

    #[test]
    fn a_hunk_spanning_two_functions_names_both_in_its_order() {
        let hunk = [Changed::Removed(5), Changed::Removed(10), Changed::Added(5)];
        assert_eq!(names(&hunk, &two()), ["f", "g"]);
        let reversed = [Changed::Added(11), Changed::Removed(4)];
        assert_eq!(names(&reversed, &two()), ["g", "f"]);
    }

    #[test]
    fn an_added_function_is_found_by_its_span_after() {
        let symbols = [symbol(
            "added",
            "h",
            SymbolKind::Function,
            None,
            Some([7, 9]),
        )];
        assert_eq!(
            names(&[Changed::Added(6), Changed::Added(7)], &symbols),
            ["h"]
        );
        // Old line 7, removed, is not in a span the symbol had before.
        assert!(names(&[Changed::Removed(7)], &symbols).is_empty());
    }

    #[test]
    fn a_removed_function_is_found_by_its_span_before() {
        let symbols = [symbol(
            "removed",
            "gone",
            SymbolKind::Function,
            Some([20, 24]),
            None,
        )];
        assert_eq!(names(&[Changed::Removed(24)], &symbols), ["gone"]);
        assert!(names(&[Changed::Added(21)], &symbols).is_empty());
    }

    #[test]
    fn a_hunk_outside_every_symbol_names_none() {
        // Lines 6–9 are between f and g; line 16 after g.
        let hunk = [Changed::Removed(7), Changed::Added(7), Changed::Added(16)];
        assert!(names(&hunk, &two()).is_empty());
        assert!(names(&[], &two()).is_empty());
    }

    #[test]
    fn a_method_comes_before_the_type_holding_it_and_each_symbol_once() {
        let symbols = [
            symbol(
                "modified",
                "Api",
                SymbolKind::Type,
                Some([1, 30]),
                Some([1, 31]),
            ),
            symbol(
                "modified",
                "Api.fetch",
                SymbolKind::Method,
                Some([10, 14]),
                Some([10, 15]),
            ),
            symbol(
                "modified",
                "Api.fetch",
                SymbolKind::Method,
                Some([10, 14]),
                Some([10, 15]),
            ),
        ];
        let hunk = [Changed::Removed(12), Changed::Added(12), Changed::Added(13)];
        assert_eq!(names(&hunk, &symbols), ["Api.fetch", "Api"]);
        // A change to the type outside the method: the type only.
        assert_eq!(names(&[Changed::Added(3)], &symbols), ["Api"]);
    }

    #[test]
    fn a_file_without_a_grammar_or_not_listed_names_none() {
        let answer = json!({
            "revision": 1,
            "files": [
                {"path": "notes.txt", "language": null, "symbols": []},
                {"path": "src/a.rs", "language": "rust", "symbols": [
                    {"change": "modified", "name": "f", "old_name": null, "kind": "function",
                     "before": [1, 5], "after": [1, 5]},
                ]},
            ],
        });
        let page = PageSymbols::of(answer);
        let hunk = [Changed::Removed(3), Changed::Added(3)];
        assert!(page.of_hunk("notes.txt", &hunk).is_empty());
        assert!(page.of_hunk("src/b.rs", &hunk).is_empty());
        assert_eq!(
            page.of_hunk("src/a.rs", &hunk),
            [json!({"name": "f", "kind": "function", "change": "modified"})]
        );
        // An answer that is not a proposal.symbols result names nothing.
        assert!(PageSymbols::of(json!({"oops": 1}))
            .of_hunk("src/a.rs", &hunk)
            .is_empty());
    }

    #[test]
    fn the_request_names_every_path_of_the_page_once_at_its_revision() {
        let sections = [
            json!({"new_path": "b.rs", "old_path": "a.rs"}),
            json!({"new_path": null, "old_path": "gone.rs"}),
            json!({"new_path": "b.rs", "old_path": "b.rs"}),
        ];
        assert_eq!(
            request("p1", &json!(2), &sections),
            json!({"proposal_id": "p1", "revision": 2, "paths": ["a.rs", "b.rs", "gone.rs"]})
        );
        assert_eq!(
            request("p1", &Value::Null, &[]),
            json!({"proposal_id": "p1", "paths": []})
        );
    }
}
