use super::*;
use crate::diff::{parse, ParseOptions};

fn patch(text: &str) -> Patch<'_> {
    parse(text.as_bytes(), &ParseOptions::default()).expect("test patch parses")
}

fn lines(n: std::ops::RangeInclusive<u32>) -> String {
    n.map(|i| format!("l{i}\n")).collect()
}

fn hunks_of(text: &str) -> Vec<Hunk<'_>> {
    // Leak is fine in tests: the hunks borrow the text.
    let p = parse(text.as_bytes(), &ParseOptions::default()).expect("parses");
    p.into_files().remove(0).into_owned().hunks().to_vec()
}

#[test]
fn exact_position_and_offsets_both_ways() {
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n l4\n-l5\n+L5\n l6\n");
    // In place.
    assert_eq!(
        apply_hunks(lines(1..=9).as_bytes(), &h).expect("applies"),
        lines(1..=9).replace("l5\n", "L5\n").into_bytes()
    );
    // Two lines added above: found with a forward offset.
    let shifted = format!("x\ny\n{}", lines(1..=9));
    assert_eq!(
        apply_hunks(shifted.as_bytes(), &h).expect("offset"),
        shifted.replace("l5\n", "L5\n").into_bytes()
    );
    // Two lines removed above: found with a backward offset.
    let shrunk = lines(3..=9);
    assert_eq!(
        apply_hunks(shrunk.as_bytes(), &h).expect("offset"),
        shrunk.replace("l5\n", "L5\n").into_bytes()
    );
    // Context changed: refused, naming the hunk.
    let changed = lines(1..=9).replace("l6\n", "L6\n");
    assert_eq!(apply_hunks(changed.as_bytes(), &h).map_err(|e| e.0), Err(1));
}

#[test]
fn nearest_match_wins_and_forward_breaks_ties() {
    // "a b c" appears at lines 1 and 9 (0-based 0 and 8); the hunk says line 5.
    let text = "a\nb\nc\nx\nx\nx\nx\nx\na\nb\nc\n";
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -5,3 +5,3 @@\n a\n-b\n+B\n c\n");
    let out = apply_hunks(text.as_bytes(), &h).expect("applies");
    // Position 4: forward distance to 8 is 4, backward to 0 is 4; git tries
    // forward first.
    assert_eq!(out, b"a\nb\nc\nx\nx\nx\nx\nx\na\nB\nc\n");
}

#[test]
fn hunk_at_line_one_must_match_at_the_beginning() {
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-l1\n+L1\n l2\n");
    assert!(apply_hunks(lines(1..=5).as_bytes(), &h).is_ok());
    let shifted = format!("new\n{}", lines(1..=5));
    assert_eq!(
        apply_hunks(shifted.as_bytes(), &h).map_err(|e| e.0),
        Err(1),
        "git refuses: not at the start"
    );
}

#[test]
fn hunk_without_trailing_context_must_match_at_the_end() {
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -4,2 +4,3 @@\n l4\n l5\n+l6\n");
    assert_eq!(
        apply_hunks(lines(1..=5).as_bytes(), &h).expect("at end"),
        lines(1..=6).into_bytes()
    );
    let longer = lines(1..=7);
    assert!(
        apply_hunks(longer.as_bytes(), &h).is_err(),
        "git refuses: not at the end"
    );
}

#[test]
fn zero_context_insertion_lands_where_its_header_says() {
    // `git diff -U0` output applied by plain `git apply` (no --unidiff-zero)
    // appends at the end of the file: no trailing context means "match at
    // the end". roundtable places it by its header, as --unidiff-zero
    // does: after line 3.
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -3,0 +4 @@\n+INSERTED\n");
    assert_eq!(
        apply_hunks(lines(1..=4).as_bytes(), &h).expect("applies"),
        format!("{}INSERTED\n{}", lines(1..=3), lines(4..=4)).into_bytes()
    );
    // Past the end of the file: refused, not clamped.
    assert_eq!(
        apply_hunks(lines(1..=2).as_bytes(), &h).map_err(|e| e.0),
        Err(1)
    );
}

#[test]
fn lines_written_by_an_earlier_hunk_are_not_matched_again() {
    // The second hunk's pre-image equals the first hunk's output; git will
    // not match it against those patched lines, and nowhere else fits.
    let text = "a\nb\nx\nx\nx\nx\nx\nx\nx\nz\n";
    let h = hunks_of(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+q\n b\n x\n@@ -9,2 +9,2 @@\n q\n-b\n+c\n",
    );
    assert_eq!(apply_hunks(text.as_bytes(), &h).map_err(|e| e.0), Err(2));
}

#[test]
fn line_endings_and_missing_final_newline_are_exact() {
    let crlf = "one\r\ntwo\r\nthree";
    let p = patch("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n one\r\n-two\r\n+TWO\r\n three\n\\ No newline at end of file\n");
    let tree = BTreeMap::from([(b"f".to_vec(), TreeFile::regular(crlf.into()))]);
    let out = apply_in_memory(&p, &tree).expect("applies");
    assert_eq!(out[b"f".as_slice()].data, b"one\r\nTWO\r\nthree");
    // The same patch against LF content does not match.
    let lf = BTreeMap::from([(
        b"f".to_vec(),
        TreeFile::regular(b"one\ntwo\nthree".to_vec()),
    )]);
    assert_eq!(
        apply_in_memory(&p, &lf).map_err(|e| e.code()).err(),
        Some(ErrorCode::PatchDoesNotApply)
    );
    // A final newline where the patch says there is none: refused.
    let nl = BTreeMap::from([(
        b"f".to_vec(),
        TreeFile::regular(b"one\r\ntwo\r\nthree\n".to_vec()),
    )]);
    // git would apply it and drop the newline; roundtable refuses, saying why.
    let e = apply_in_memory(&p, &nl).expect_err("refused");
    assert!(
        e.to_string()
            .contains("no final newline, but in the file that line has one"),
        "{e}"
    );
}

fn tree(files: &[(&str, &str, bool)]) -> BTreeMap<Vec<u8>, TreeFile> {
    files
        .iter()
        .map(|(p, c, x)| {
            (
                p.as_bytes().to_vec(),
                TreeFile {
                    data: c.as_bytes().to_vec(),
                    executable: *x,
                    symlink: false,
                },
            )
        })
        .collect()
}

#[test]
fn rename_then_new_file_at_the_old_name() {
    let p = patch(
        "diff --git a/a b/b\nsimilarity index 100%\nrename from a\nrename to b\n\
         diff --git a/a b/a\nnew file mode 100755\n--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+fresh\n",
    );
    let out = apply_in_memory(&p, &tree(&[("a", "old\n", false)])).expect("applies");
    assert_eq!(out, tree(&[("a", "fresh\n", true), ("b", "old\n", false)]));
}

#[test]
fn copies_read_the_original_and_later_sections_see_earlier_results() {
    let p = patch(
        "--- a/a\n+++ b/a\n@@ -1 +1 @@\n-1\n+2\n\
         --- a/a\n+++ b/a\n@@ -1 +1 @@\n-2\n+3\n\
         diff --git a/a b/c\nsimilarity index 100%\ncopy from a\ncopy to c\n",
    );
    let out = apply_in_memory(&p, &tree(&[("a", "1\n", false)])).expect("applies");
    assert_eq!(out, tree(&[("a", "3\n", false), ("c", "1\n", false)]));
}

#[test]
fn mode_changes_keep_or_set_the_executable_bit() {
    let p = patch("diff --git a/s b/s\nold mode 100644\nnew mode 100755\n");
    let out = apply_in_memory(&p, &tree(&[("s", "x", false)])).expect("applies");
    assert!(out[b"s".as_slice()].executable);
    // An `index` line's mode does not override the file's: git keeps the
    // mode on disk unless `new mode` says otherwise.
    let p = patch("diff --git a/s b/s\nindex 1..2 100755\n--- a/s\n+++ b/s\n@@ -1 +1 @@\n-x\n+y\n");
    let out = apply_in_memory(&p, &tree(&[("s", "x\n", false)])).expect("applies");
    assert!(!out[b"s".as_slice()].executable);
    // A content-only change keeps the current bit.
    let p = patch("--- a/s\n+++ b/s\n@@ -1 +1 @@\n-x\n+y\n");
    let out = apply_in_memory(&p, &tree(&[("s", "x\n", true)])).expect("applies");
    assert!(out[b"s".as_slice()].executable);
}

/// A refusal case: patch, tree, expected code, text the message contains.
type RefusalCase<'a> = (&'a str, &'a [(&'a str, &'a str, bool)], ErrorCode, &'a str);

#[test]
fn refusals_have_codes_and_paths() {
    let cases: &[RefusalCase<'_>] = &[
        ("diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n", &[("n", "", false)], ErrorCode::PatchDoesNotApply, "already exists"),
        ("--- a/m\n+++ b/m\n@@ -1 +1 @@\n-x\n+y\n", &[], ErrorCode::PatchDoesNotApply, "does not exist"),
        ("diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", &[("d", "x\ny\n", false)], ErrorCode::PatchDoesNotApply, "hunk #1"),
        ("diff --git a/b b/b\nindex 1234567..89abcde 100644\nBinary files a/b and b/b differ\n", &[("b", "x", false)], ErrorCode::PatchDoesNotApply, "no data"),
        ("diff --git a/l b/l\nnew file mode 160000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n", &[], ErrorCode::UnsupportedPatch, "submodules"),
        ("diff --git a/r b/s\nsimilarity index 100%\nrename from r\nrename to s\n", &[("r", "", false), ("s", "", false)], ErrorCode::PatchDoesNotApply, "already exists"),
        ("--- a/g\n+++ b/g\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/g b/g\ndeleted file mode 100644\n--- a/g\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n", &[("g", "x\n", false)], ErrorCode::PatchDoesNotApply, "hunk #1"),
    ];
    for (text, files, code, needle) in cases {
        let err = apply_in_memory(&patch(text), &tree(files)).expect_err(text);
        assert_eq!(err.code(), *code, "{text}: {err}");
        assert!(err.to_string().contains(needle), "{text}: {err}");
    }
}

#[test]
fn binary_patches_verify_blob_ids() {
    let old = b"\x00\x01old binary".to_vec();
    let new = b"\x00\x02new binary!".to_vec();
    let id = |d: &[u8]| binary::blob_id(d, 40).expect("sha1");
    let make = |old_id: &str| {
        let mut text = format!(
            "diff --git a/b b/b\nindex {old_id}..{} 100644\nGIT binary patch\nliteral {}\n",
            id(&new),
            new.len()
        )
        .into_bytes();
        binary::encode_lines(&binary::deflate(&new), &mut text);
        text.extend_from_slice(b"\n");
        text
    };
    let good = make(&id(&old));
    let p = parse(&good, &ParseOptions::default()).expect("parses");
    let t = BTreeMap::from([(b"b".to_vec(), TreeFile::regular(old.clone()))]);
    assert_eq!(
        apply_in_memory(&p, &t).expect("applies")[b"b".as_slice()].data,
        new
    );
    // The pre-image differs from the one the patch was made against.
    let t2 = BTreeMap::from([(b"b".to_vec(), TreeFile::regular(b"other".to_vec()))]);
    let e = apply_in_memory(&p, &t2).expect_err("mismatch");
    assert!(e.to_string().contains("pre-image does not match"), "{e}");
    // Abbreviated ids cannot be verified: refused like git.
    let short = make(&id(&old)[..7]);
    let p = parse(&short, &ParseOptions::default()).expect("parses");
    assert!(apply_in_memory(&p, &t)
        .expect_err("short")
        .to_string()
        .contains("full object ids"));
}

/// The in-order fast path gives exactly what the line image gives, and
/// hands every hunk it cannot place where git looks first to the search.
#[test]
fn in_order_hunks_take_the_fast_path_and_the_rest_the_search() {
    let two = "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n l2\n-l3\n+L3\n l4\n@@ -8,3 +8,4 @@\n l8\n-l9\n+L9\n+L9b\n l10\n";
    let h = hunks_of(two);
    let old = lines(1..=12);
    let fast = apply_in_order(old.as_bytes(), &h, false).expect("both hunks are where they say");
    let mut image = Image::new(old.as_bytes());
    let (mut pre, mut post) = (Vec::new(), Vec::new());
    for hunk in &h {
        let placement = images(hunk, false, &mut pre, &mut post);
        let pos = image.find(placement, &pre).expect("found");
        image.replace(pos, pre.len(), &post);
    }
    assert_eq!(fast, image.into_bytes());
    assert_eq!(
        fast,
        old.replace("l3\n", "L3\n")
            .replace("l9\n", "L9\nL9b\n")
            .into_bytes()
    );
    // A file without a final newline keeps its last line as it is.
    let open_end = "a\nb\nc";
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n");
    assert_eq!(
        apply_in_order(open_end.as_bytes(), &h, false).expect("in place"),
        b"A\nb\nc"
    );
    // Two lines added above: not where the header says, so no fast path,
    // and the search still finds it.
    let h = hunks_of("--- a/f\n+++ b/f\n@@ -4,3 +4,3 @@\n l4\n-l5\n+L5\n l6\n");
    let shifted = format!("x\ny\n{}", lines(1..=9));
    assert!(apply_in_order(shifted.as_bytes(), &h, false).is_none());
    assert_eq!(
        apply_hunks(shifted.as_bytes(), &h).expect("offset"),
        shifted.replace("l5\n", "L5\n").into_bytes()
    );
    // A second hunk whose place holds the first hunk's output: no fast
    // path, and the search refuses as git does.
    let text = "a\nb\nx\nx\nx\nx\nx\nx\nx\nz\n";
    let h = hunks_of(
        "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+q\n b\n x\n@@ -9,2 +9,2 @@\n q\n-b\n+c\n",
    );
    assert!(apply_in_order(text.as_bytes(), &h, false).is_none());
    assert_eq!(apply_hunks(text.as_bytes(), &h).map_err(|e| e.0), Err(2));
}

/// Issue 14 item 25: the executable bit was `mode & 0o111`; git uses the
/// owner's bit alone.
#[test]
fn the_executable_bit_is_the_owners() {
    use crate::diff::Mode;
    assert!(!Mode(0o100654).is_executable());
    assert!(!Mode(0o100611).is_executable());
    assert!(Mode(0o100744).is_executable());
    assert!(Mode(0o100755).is_executable());
    let p = patch("diff --git a/f b/f\nold mode 100755\nnew mode 100654\n");
    let mut tree = BTreeMap::new();
    tree.insert(
        b"f".to_vec(),
        TreeFile {
            data: b"x\n".to_vec(),
            executable: true,
            symlink: false,
        },
    );
    let after = apply_in_memory(&p, &tree).expect("applies");
    assert!(!after[b"f".as_slice()].executable);
}

/// Issue 14 item 26: swapped and cyclic renames (`git diff -M -B`) were
/// refused because each destination still existed; git applies them.
#[test]
fn swapped_and_cyclic_renames_apply() {
    let file = |s: &str| TreeFile::regular(s.as_bytes().to_vec());
    let tree: BTreeMap<Vec<u8>, TreeFile> = [("a", "A\n"), ("b", "B\n"), ("c", "C\n")]
        .into_iter()
        .map(|(p, d)| (p.as_bytes().to_vec(), file(d)))
        .collect();
    let rename = |from: &str, to: &str| {
        format!("diff --git a/{from} b/{to}\nsimilarity index 100%\nrename from {from}\nrename to {to}\n")
    };
    let swap = [rename("a", "b"), rename("b", "a")].concat();
    let after = apply_in_memory(&patch(&swap), &tree).expect("swap applies");
    assert_eq!(after[b"a".as_slice()].data, b"B\n");
    assert_eq!(after[b"b".as_slice()].data, b"A\n");
    let cycle = [rename("a", "b"), rename("b", "c"), rename("c", "a")].concat();
    let after = apply_in_memory(&patch(&cycle), &tree).expect("cycle applies");
    assert_eq!(after[b"a".as_slice()].data, b"C\n");
    assert_eq!(after[b"b".as_slice()].data, b"A\n");
    assert_eq!(after[b"c".as_slice()].data, b"B\n");
    assert_eq!(after.len(), 3);
    // A rename onto a path nothing removes is still refused.
    let onto = rename("a", "b");
    assert!(apply_in_memory(&patch(&onto), &tree).is_err());
}

fn link(target: &str) -> TreeFile {
    TreeFile::link(target.as_bytes().to_vec())
}

fn new_link(path: &str, target: &str) -> String {
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 120000\nindex 0000000..1234567\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )
}

#[test]
fn symbolic_links_are_created_retargeted_and_deleted() {
    // Created: the target text is the content, with no final newline.
    let out = apply_in_memory(
        &patch(&new_link("docs/RelNotes", "notes/2.0.txt")),
        &tree(&[]),
    )
    .expect("a contained link applies");
    assert_eq!(out[b"docs/RelNotes".as_slice()], link("notes/2.0.txt"));
    assert!(!out[b"docs/RelNotes".as_slice()].executable);

    // Retargeted: a modification under mode 120000.
    let text = "diff --git a/l b/l\nindex 1234567..89abcde 120000\n--- a/l\n+++ b/l\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n\\ No newline at end of file\n";
    let mut t = tree(&[("old", "o", false), ("new", "n", false)]);
    t.insert(b"l".to_vec(), link("old"));
    let out = apply_in_memory(&patch(text), &t).expect("retargets");
    assert_eq!(out[b"l".as_slice()], link("new"));

    // Deleted.
    let text = "diff --git a/l b/l\ndeleted file mode 120000\nindex 1234567..0000000\n--- a/l\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n\\ No newline at end of file\n";
    let out = apply_in_memory(&patch(text), &t).expect("deletes");
    assert!(!out.contains_key(b"l".as_slice()));

    // A pure rename keeps the link a link (git states no mode for it).
    let text = "diff --git a/l b/m\nsimilarity index 100%\nrename from l\nrename to m\n";
    let out = apply_in_memory(&patch(text), &t).expect("renames");
    assert_eq!(out[b"m".as_slice()], link("old"));
}

#[test]
fn a_file_becomes_a_link_and_back_as_git_writes_it() {
    // git writes a type change as a deletion and a creation of one path.
    let to_link = format!(
        "diff --git a/p b/p\ndeleted file mode 100644\nindex 1234567..0000000\n--- a/p\n+++ /dev/null\n@@ -1 +0,0 @@\n-text\n{}",
        new_link("p", "q")
    );
    let out = apply_in_memory(
        &patch(&to_link),
        &tree(&[("p", "text\n", false), ("q", "", false)]),
    )
    .expect("file to link");
    assert_eq!(out[b"p".as_slice()], link("q"));

    let to_file = "diff --git a/p b/p\ndeleted file mode 120000\nindex 1234567..0000000\n--- a/p\n+++ /dev/null\n@@ -1 +0,0 @@\n-q\n\\ No newline at end of file\ndiff --git a/p b/p\nnew file mode 100755\nindex 0000000..1234567\n--- /dev/null\n+++ b/p\n@@ -0,0 +1 @@\n+text\n";
    let mut t = tree(&[("q", "", false)]);
    t.insert(b"p".to_vec(), link("q"));
    let out = apply_in_memory(&patch(to_file), &t).expect("link to file");
    assert_eq!(
        out[b"p".as_slice()],
        TreeFile {
            data: b"text\n".to_vec(),
            executable: true,
            symlink: false
        }
    );
}

#[test]
fn escaping_link_targets_are_path_escape() {
    for (path, target) in [
        ("l", "../x"),
        ("l", "/etc"),
        ("l", "/"),
        ("l", "a/../../x"),
        ("d/l", "../../x"),
        ("l", ".git/config"),
        ("d/l", "../.git/hooks/pre-commit"),
        ("l", "./.roundtable/store.db"),
        ("l", ".git"),
    ] {
        let err = apply_in_memory(&patch(&new_link(path, target)), &tree(&[])).expect_err(target);
        assert_eq!(
            err.code(),
            ErrorCode::PathEscape,
            "{path} -> {target}: {err}"
        );
        let shown = err.to_string();
        assert!(shown.contains(path) && shown.contains(target), "{shown}");
        assert!(
            matches!(&err, ApplyError::LinkEscape { target: t, .. } if t == target.as_bytes()),
            "{err:?}"
        );
    }
    // Inside the root: fine, dangling or not, through `.` and `..`.
    for (path, target) in [
        ("d/l", "../x"),
        ("l", "./a/../b"),
        ("d/e/l", "../../d"),
        ("l", "sub/.gitignore"),
    ] {
        apply_in_memory(&patch(&new_link(path, target)), &tree(&[]))
            .unwrap_or_else(|e| panic!("{path} -> {target}: {e}"));
    }
    // A retarget to an escaping target, and the deletion of a link that
    // escapes (its rollback would recreate it), are refused too.
    let mut t = tree(&[]);
    t.insert(b"l".to_vec(), link("ok"));
    let text = "diff --git a/l b/l\nindex 1234567..89abcde 120000\n--- a/l\n+++ b/l\n@@ -1 +1 @@\n-ok\n\\ No newline at end of file\n+../../etc/passwd\n\\ No newline at end of file\n";
    assert_eq!(
        apply_in_memory(&patch(text), &t)
            .expect_err("retarget")
            .code(),
        ErrorCode::PathEscape
    );
    t.insert(b"l".to_vec(), link("/etc"));
    let text = "diff --git a/l b/l\ndeleted file mode 120000\nindex 1234567..0000000\n--- a/l\n+++ /dev/null\n@@ -1 +0,0 @@\n-/etc\n\\ No newline at end of file\n";
    assert_eq!(
        apply_in_memory(&patch(text), &t)
            .expect_err("delete")
            .code(),
        ErrorCode::PathEscape
    );
}

#[test]
fn links_and_files_are_not_mistaken_for_each_other() {
    // A section about a regular file meets a link: never written through.
    let mut t = tree(&[]);
    t.insert(b"l".to_vec(), link("x"));
    let err = apply_in_memory(&patch("--- a/l\n+++ b/l\n@@ -1 +1 @@\n-x\n+y\n"), &t)
        .expect_err("a link is not a file");
    assert_eq!(err.code(), ErrorCode::PathEscape, "{err}");
    // A section about a link meets a regular file.
    let text = "diff --git a/f b/f\nindex 1234567..89abcde 120000\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n";
    let err = apply_in_memory(&patch(text), &tree(&[("f", "x", false)])).expect_err("not a link");
    assert_eq!(err.code(), ErrorCode::PatchDoesNotApply, "{err}");
    // One section cannot turn a file into a link (git refuses it too).
    let text = "diff --git a/f b/f\nold mode 100644\nnew mode 120000\n";
    let err = apply_in_memory(&patch(text), &tree(&[("f", "x", false)])).expect_err("type change");
    assert_eq!(err.code(), ErrorCode::PatchDoesNotApply, "{err}");
    // An empty target, or one with a NUL, is no link.
    let text = "diff --git a/l b/l\nnew file mode 120000\n";
    let err = apply_in_memory(&patch(text), &tree(&[])).expect_err("empty target");
    assert_eq!(err.code(), ErrorCode::PatchDoesNotApply, "{err}");
}

#[test]
fn submodules_stay_unsupported() {
    let text = "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n";
    let err = apply_in_memory(&patch(text), &tree(&[])).expect_err("gitlink");
    assert_eq!(err.code(), ErrorCode::UnsupportedPatch, "{err}");
    assert!(err.to_string().contains("submodule"), "{err}");
}

/// Issue 33: a section that modifies `f{n}` (its line 5), with `bad`
/// context when it must not apply.
fn modify(n: usize, bad: bool) -> String {
    let context = if bad { "nope" } else { "l4" };
    format!("diff --git a/f{n:02} b/f{n:02}\n--- a/f{n:02}\n+++ b/f{n:02}\n@@ -4,3 +4,3 @@\n {context}\n-l5\n+L5 {n}\n l6\n")
}

/// Issue 33: every outcome `sink` receives, in order, or the error's
/// code, path and message.
fn outcomes(
    two: bool,
    p: &Patch<'_>,
    t: &BTreeMap<Vec<u8>, TreeFile>,
) -> Result<Vec<FileOutcome>, (ErrorCode, Vec<u8>, String)> {
    let mut out = Vec::new();
    let mut sink = |o: FileOutcome| {
        out.push(o);
        Ok(())
    };
    let result = if two {
        apply_on_two_threads(p, t, &mut sink)
    } else {
        apply(p, t, &mut sink)
    };
    result
        .map(|()| out)
        .map_err(|e| (e.code(), e.path().to_vec(), e.to_string()))
}

/// Issue 33: the dry run computes sections' results on two threads; what
/// the sink receives (every outcome, in order) and the first failure in
/// section order are exactly the one-thread applier's, whichever thread
/// computed the failing section and whatever failed after it.
#[test]
fn issue33_results_on_two_threads_are_the_one_thread_applys() {
    let body = lines(1..=9);
    let mut files: Vec<(String, String, bool)> = (0..40)
        .map(|n| (format!("f{n:02}"), body.clone(), false))
        .collect();
    files.push(("gone".into(), "bye\n".into(), false));
    files.push(("moved".into(), body.clone(), false));
    files.push(("mode".into(), "x\n".into(), false));
    let owned: Vec<(&str, &str, bool)> = files
        .iter()
        .map(|(p, c, x)| (p.as_str(), c.as_str(), *x))
        .collect();
    let t = tree(&owned);
    // Every kind of section: modifications (computed apart), a file
    // changed twice (the first result read again, kept in place), a
    // rename with a change, a deletion, a new file, a new link, a mode
    // change without hunks.
    let mut good: String = (0..30).map(|n| modify(n, false)).collect();
    good.push_str(
        "diff --git a/f00 b/f00\n--- a/f00\n+++ b/f00\n@@ -6,3 +6,3 @@\n l6\n-l7\n+L7\n l8\n",
    );
    good.push_str("diff --git a/moved b/there\nsimilarity index 90%\nrename from moved\nrename to there\n--- a/moved\n+++ b/there\n@@ -1,3 +1,3 @@\n-l1\n+L1\n l2\n l3\n");
    good.push_str("diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n");
    good.push_str("diff --git a/new b/new\nnew file mode 100755\n--- /dev/null\n+++ b/new\n@@ -0,0 +1 @@\n+hi\n");
    good.push_str(&new_link("ln", "f01"));
    good.push_str("diff --git a/mode b/mode\nold mode 100644\nnew mode 100755\n");
    let p = patch(&good);
    assert!(p.files().len() >= APART_SECTIONS);
    let one = outcomes(false, &p, &t).expect("applies");
    assert_eq!(outcomes(true, &p, &t).expect("applies"), one);
    let last = |path: &str| one.iter().rev().find(|o| o.path == path.as_bytes());
    assert!(
        String::from_utf8_lossy(&last("f00").and_then(|o| o.new.clone()).expect("f00").data)
            .contains("L5 0\nl6\nL7\n")
    );
    assert!(last("moved").is_some_and(|o| o.new.is_none()));
    assert!(last("mode")
        .and_then(|o| o.new.as_ref())
        .is_some_and(|f| f.executable));

    // Two sections that do not apply (both computed apart): the earlier
    // one is reported, every time.
    let two_bad: String = (0..30).map(|n| modify(n, n == 3 || n == 25)).collect();
    // A computed-apart failure before one found in the walk (a new file
    // where one exists), and the other way round.
    let apart_first: String = (0..30)
        .map(|n| match n {
            5 => modify(n, true),
            20 => "diff --git a/f01 b/f01\nnew file mode 100644\n--- /dev/null\n+++ b/f01\n@@ -0,0 +1 @@\n+x\n".into(),
            _ => modify(n, false),
        })
        .collect();
    let walk_first: String = (0..30)
        .map(|n| match n {
            10 => "diff --git a/f01 b/f01\nnew file mode 100644\n--- /dev/null\n+++ b/f01\n@@ -0,0 +1 @@\n+x\n".into(),
            25 => modify(n, true),
            _ => modify(n, false),
        })
        .collect();
    for (text, path, needle) in [
        (&two_bad, "f03", "hunk #1"),
        (&apart_first, "f05", "hunk #1"),
        (&walk_first, "f01", "already exists"),
    ] {
        let p = patch(text);
        let one = outcomes(false, &p, &t).expect_err("refused");
        for _ in 0..20 {
            assert_eq!(outcomes(true, &p, &t).expect_err("refused"), one);
        }
        assert_eq!(one.0, ErrorCode::PatchDoesNotApply);
        assert_eq!(one.1, path.as_bytes(), "{}", one.2);
        assert!(one.2.contains(needle), "{}", one.2);
    }
}
