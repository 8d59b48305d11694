//! Replays the committed corpus of the `parse` fuzz target
//! (`tests/fuzz-corpus/parse/` at the repository root) through the same
//! property check the fuzzer runs (`fuzz/check.rs`), and holds each kind of
//! seed to what it is, by name:
//!
//! - `git-*.diff` (written by `git diff`) and `plain-*.diff` (GNU `diff -u`)
//!   parse, and render back byte for byte (at strip level 1, or 0 for a name
//!   with `-p0`: names without a directory prefix);
//! - `mail-*.patch` (`git format-patch`) parse, and render as the part from
//!   the first `diff --git` line up to the `-- ` signature;
//! - `bad-*.diff` are refused: `bad-combined-*` as `unsupported_patch`, the
//!   others as `invalid_patch`;
//! - any other file (`crash-*.bin`: inputs the fuzzer once broke the engine
//!   with) must only pass the property check.

use roundtable::diff::{self, ParseOptions};
use roundtable::ErrorCode;
use std::path::PathBuf;

include!("../../fuzz/check.rs");

/// A corpus file that is larger than this is not "small"; the fuzzer's
/// `-max_len` default is 4096, so larger seeds would be truncated anyway.
const MAX_SEED_BYTES: usize = 4096;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz-corpus/parse");
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()));
    let mut files: Vec<(String, Vec<u8>)> = entries
        .map(|entry| {
            let path = entry.expect("a directory entry").path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .expect("corpus file names are UTF-8")
                .to_owned();
            let data = std::fs::read(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            (name, data)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "the corpus {} is empty", dir.display());
    files
}

fn names_like<'c>(corpus: &'c [(String, Vec<u8>)], prefix: &str, suffix: &str) -> Vec<&'c str> {
    corpus
        .iter()
        .map(|(name, _)| name.as_str())
        .filter(|n| n.starts_with(prefix) && n.ends_with(suffix))
        .collect()
}

/// Run `f` on every corpus file selected by `select`, and fail once with
/// the names and messages of all that panicked.
fn for_each(
    corpus: &[(String, Vec<u8>)],
    select: impl Fn(&str) -> bool,
    f: impl Fn(&str, &[u8]),
) -> usize {
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, data) in corpus.iter().filter(|(n, _)| select(n)) {
        count += 1;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(name, data)));
        if let Err(payload) = outcome {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(non-string panic)".to_owned());
            failures.push(format!("{name}: {message}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} corpus files failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    count
}

#[test]
fn corpus_has_every_kind_of_seed() {
    let corpus = corpus();
    let git = names_like(&corpus, "git-", ".diff");
    let bad = names_like(&corpus, "bad-", ".diff");
    assert!(git.len() >= 20, "only {} git seeds: {git:?}", git.len());
    assert!(
        bad.len() >= 4,
        "only {} malformed seeds: {bad:?}",
        bad.len()
    );
    assert!(!names_like(&corpus, "plain-", ".diff").is_empty());
    assert!(!names_like(&corpus, "mail-", ".patch").is_empty());
    assert!(!names_like(&corpus, "bad-combined-", ".diff").is_empty());
    for (name, data) in &corpus {
        assert!(
            data.len() <= MAX_SEED_BYTES,
            "{name} has {} bytes; corpus files stay small (at most {MAX_SEED_BYTES})",
            data.len()
        );
        let known = ["git-", "plain-", "mail-", "bad-", "crash-"];
        assert!(
            known.iter().any(|p| name.starts_with(p)),
            "{name}: corpus files are named git-*, plain-*, mail-*, bad-* or crash-*"
        );
    }
}

#[test]
fn every_corpus_file_passes_the_fuzz_check() {
    let corpus = corpus();
    let checked = for_each(&corpus, |_| true, |_, data| check(data));
    assert_eq!(checked, corpus.len());
}

#[test]
fn git_and_plain_diffs_render_byte_identically() {
    let corpus = corpus();
    let selected =
        |n: &str| (n.starts_with("git-") || n.starts_with("plain-")) && n.ends_with(".diff");
    let count = for_each(&corpus, selected, |name, data| {
        let strip = if name.contains("-p0") { 0 } else { 1 };
        let patch = diff::parse(data, &ParseOptions::strip(strip))
            .unwrap_or_else(|e| panic!("{name} does not parse at strip {strip}: {e}"));
        assert!(!patch.files().is_empty(), "{name}: no file sections");
        let rendered = patch.render();
        assert!(
            rendered == data,
            "{name}: render() differs from the input\ninput:    b\"{}\"\nrendered: b\"{}\"",
            data.escape_ascii(),
            rendered.escape_ascii()
        );
    });
    assert!(count >= 20, "only {count} git/plain seeds");
}

#[test]
fn format_patch_mails_render_their_diff_part() {
    let corpus = corpus();
    let selected = |n: &str| n.starts_with("mail-") && n.ends_with(".patch");
    let count = for_each(&corpus, selected, |name, data| {
        let start = find(data, b"\ndiff --git ")
            .unwrap_or_else(|| panic!("{name}: no `diff --git` line"))
            + 1;
        let end =
            find(data, b"\n-- \n").unwrap_or_else(|| panic!("{name}: no `-- ` signature")) + 1;
        assert!(start < end, "{name}: the signature comes before the diff");
        let patch = diff::parse(data, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        let rendered = patch.render();
        assert!(
            rendered == data[start..end],
            "{name}: render() is not the diff part of the mail\nrendered: b\"{}\"",
            rendered.escape_ascii()
        );
    });
    assert!(count >= 1);
}

#[test]
fn malformed_seeds_are_refused_with_their_code() {
    let corpus = corpus();
    let selected = |n: &str| n.starts_with("bad-") && n.ends_with(".diff");
    let count = for_each(&corpus, selected, |name, data| {
        let expected = if name.starts_with("bad-combined-") {
            ErrorCode::UnsupportedPatch
        } else {
            ErrorCode::InvalidPatch
        };
        for strip in 0..=2 {
            match diff::parse(data, &ParseOptions::strip(strip)) {
                Ok(patch) => panic!("{name} (strip {strip}) parsed: {patch:?}"),
                Err(e) => assert_eq!(e.code(), expected, "{name} (strip {strip}): {e}"),
            }
        }
    });
    assert!(count >= 4, "only {count} malformed seeds");
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The trees `check` applies to are not vacuous: real git diffs apply to the
/// pre-image tree built from them, and their reverse restores it.
#[test]
fn git_diffs_apply_to_their_preimage_tree_and_reverse() {
    let corpus = corpus();
    let selected = |n: &str| n.starts_with("git-") && n.ends_with(".diff");
    let count = for_each(&corpus, selected, |name, data| {
        let patch = diff::parse(data, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
        let tree = preimage_tree(&patch);
        let result = diff::apply_in_memory(&patch, &tree);
        // Sections whose pre-image the patch does not carry, or that
        // roundtable does not apply.
        let expected_failure = if name.contains("binary-delta") || name.contains("binary-marker") {
            Some(ErrorCode::PatchDoesNotApply)
        } else if name.contains("unified0") {
            // Hunks without context must match at the end of the file, as
            // in `git apply` without `--unidiff-zero`.
            Some(ErrorCode::PatchDoesNotApply)
        } else {
            None
        };
        let after = match (result, expected_failure) {
            (Ok(after), None) => after,
            (Err(e), Some(code)) => return assert_eq!(e.code(), code, "{name}: {e}"),
            (Ok(_), Some(code)) => panic!("{name} applied; expected {code}"),
            (Err(e), None) => panic!("{name} does not apply to its pre-image tree: {e}"),
        };
        match patch.reverse() {
            Ok(reversed) => {
                let back = diff::apply_in_memory(&reversed, &after)
                    .unwrap_or_else(|e| panic!("{name}: the reverse does not apply: {e}"));
                assert!(
                    back == tree,
                    "{name}: apply then reverse is not the identity"
                );
            }
            Err(e) => assert!(name.contains("copy"), "{name}: cannot reverse: {e}"),
        }
    });
    assert!(count >= 20);
}
