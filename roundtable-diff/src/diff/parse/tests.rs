use super::*;
use crate::diff::{FileStatus, LineKind};

fn ok(text: &[u8]) -> Patch<'_> {
    match parse(text, &ParseOptions::default()) {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn err(text: &[u8]) -> ParseError {
    parse(text, &ParseOptions::default()).expect_err("must be refused")
}

const MODIFY: &[u8] = b"diff --git a/src/x.rs b/src/x.rs
index 83db48f..bf269f4 100644
--- a/src/x.rs
+++ b/src/x.rs
@@ -1,3 +1,4 @@ fn main() {
 one
-two
+TWO
+three
 four
";

#[test]
fn modification_with_heading_round_trips() {
    let p = ok(MODIFY);
    let f = &p.files()[0];
    assert_eq!(f.status(), FileStatus::Modified);
    assert_eq!(f.old_path(), Some(b"src/x.rs".as_slice()));
    assert_eq!(f.new_path(), Some(b"src/x.rs".as_slice()));
    assert_eq!(f.old_mode(), Some(Mode::REGULAR));
    assert_eq!(f.index(), Some(("83db48f", "bf269f4")));
    let h = &f.hunks()[0];
    assert_eq!(
        (h.old_start(), h.old_lines(), h.new_start(), h.new_lines()),
        (1, 3, 1, 4)
    );
    assert_eq!(h.heading(), b" fn main() {");
    let kinds: Vec<_> = h.lines().map(|l| l.kind).collect();
    use LineKind::*;
    assert_eq!(kinds, [Context, Delete, Insert, Insert, Context]);
    assert_eq!(
        h.lines().nth(1).map(|l| l.content),
        Some(b"two\n".as_slice())
    );
    assert_eq!((f.added_lines(), f.removed_lines()), (2, 1));
    assert_eq!(p.render(), MODIFY);
}

#[test]
fn quoted_names_rename_copy_and_modes() {
    let text = b"diff --git \"a/tab\\there\" \"b/tab\\there\"
old mode 100644
new mode 100755
diff --git a/old name.txt b/new name.txt
similarity index 90%
rename from old name.txt
rename to new name.txt
index c0d0fb4..83db48f 100644
--- a/old name.txt\t
+++ b/new name.txt\t
@@ -1,2 +1,3 @@
 line1
 line2
+line3
diff --git a/src.c \"b/caf\\303\\251.c\"
similarity index 100%
copy from src.c
copy to \"caf\\303\\251.c\"
";
    let p = ok(text);
    let [mode, rename, copy] = p.files() else {
        panic!("three sections")
    };
    assert_eq!(mode.status(), FileStatus::Modified);
    assert_eq!(mode.path(), b"tab\there");
    assert_eq!(
        (mode.old_mode(), mode.new_mode()),
        (Some(Mode::REGULAR), Some(Mode::EXECUTABLE))
    );
    assert!(mode.hunks().is_empty());
    assert_eq!(rename.status(), FileStatus::Renamed);
    assert_eq!(rename.old_path(), Some(b"old name.txt".as_slice()));
    assert_eq!(rename.new_path(), Some(b"new name.txt".as_slice()));
    assert_eq!(copy.status(), FileStatus::Copied);
    assert_eq!(copy.new_path(), Some("café.c".as_bytes()));
    assert_eq!(p.render(), text.to_vec());
}

#[test]
fn new_empty_deleted_and_no_newline() {
    let text = b"diff --git a/empty b/empty
new file mode 100644
index 0000000..e69de29
diff --git a/gone b/gone
deleted file mode 100755
index 257cc56..0000000
--- a/gone
+++ /dev/null
@@ -1 +0,0 @@
-foo
diff --git a/n b/n
index 1..2 100644
--- a/n
+++ b/n
@@ -1 +1 @@
-a
\\ No newline at end of file
+a
";
    let p = ok(text);
    let [empty, gone, n] = p.files() else {
        panic!("three sections")
    };
    assert_eq!(empty.status(), FileStatus::Added);
    assert_eq!(empty.new_path(), Some(b"empty".as_slice()));
    assert_eq!(empty.old_path(), None);
    assert_eq!(gone.status(), FileStatus::Deleted);
    assert_eq!(gone.old_mode(), Some(Mode::EXECUTABLE));
    let lines: Vec<_> = n.hunks()[0].lines().collect();
    assert_eq!(
        (lines[0].content, lines[0].no_newline),
        (b"a".as_slice(), true)
    );
    assert_eq!(
        (lines[1].content, lines[1].no_newline),
        (b"a\n".as_slice(), false)
    );
    assert_eq!(p.render(), text.to_vec());
}

#[test]
fn plain_unified_diff_with_timestamps_and_strip_levels() {
    let text = b"--- old/dir/f.txt\t2024-01-01 10:00:00.000000000 +0100
+++ new/dir/f.txt\t2024-01-02 10:00:00.000000000 +0100
@@ -1 +1 @@
-a
+b
";
    let p = ok(text);
    assert_eq!(p.files()[0].path(), b"dir/f.txt");
    assert!(!p.files()[0].is_git());
    assert_eq!(p.render(), text.to_vec());
    let p0 = parse(text, &ParseOptions::strip(0)).expect("p0");
    // old/… and new/… differ; git keeps the new name.
    assert_eq!(p0.files()[0].path(), b"new/dir/f.txt");
    let p2 = parse(text, &ParseOptions::strip(2)).expect("p2");
    assert_eq!(p2.files()[0].path(), b"f.txt");
    let e = parse(text, &ParseOptions::strip(3)).expect_err("too deep");
    assert_eq!(e.code(), ErrorCode::InvalidPatch);
    assert!(
        e.expected()
            .contains("removing 3 leading pathname components"),
        "{e}"
    );
}

#[test]
fn preamble_and_signature_are_skipped() {
    let mut text =
        b"From 1234 Mon Sep 17 00:00:00 2001\nSubject: [PATCH] x\n\n---\n x | 2 +-\n\n".to_vec();
    text.extend_from_slice(MODIFY);
    text.extend_from_slice(b"-- \n2.39.5\n\n");
    let p = ok(&text);
    assert_eq!(p.files().len(), 1);
}

#[test]
fn binary_literal_and_marker() {
    let mut text = b"diff --git a/b.bin b/b.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\nGIT binary patch\nliteral 5\n".to_vec();
    binary::encode_lines(&binary::deflate(b"\0\x01\x02\x03\x04"), &mut text);
    text.extend_from_slice(b"\nliteral 0\n");
    binary::encode_lines(&binary::deflate(b""), &mut text);
    text.extend_from_slice(b"\ndiff --git a/c.bin b/c.bin\nindex 1234567..89abcde 100644\nBinary files a/c.bin and b/c.bin differ\n");
    let p = ok(&text);
    let [lit, marker] = p.files() else {
        panic!("two sections")
    };
    match lit.body() {
        Body::Binary { forward, reverse } => {
            assert_eq!(forward.method, BinaryMethod::Literal);
            assert_eq!(forward.inflate().expect("inflates"), b"\0\x01\x02\x03\x04");
            assert_eq!(reverse.as_ref().map(|r| r.size), Some(0));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(marker.body(), Body::BinaryMarker(m) if &**m == b"a/c.bin and b/c.bin"));
    assert_eq!(p.render(), text);
}

/// Each malformed input is refused with the line it goes wrong on.
#[test]
fn malformed_patches_name_the_line() {
    let cases: &[(&[u8], usize, &str)] = &[
        (b"", 1, "at least one file section"),
        (b"just some text\n", 2, "at least one file section"),
        (b"@@ -1 +1 @@\n-a\n+b\n", 1, "file header"),
        (b"--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n+b\n", 6, "1 more old"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n*b\n", 5, "hunk line starting"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b", 5, "ending in a newline"),
        (b"--- a/x\n+++ b/x\n@@ -x +1 @@\n-a\n+b\n", 3, "hunk header"),
        (b"--- a/x\n+++ b/x\n@@ -99999999999 +1 @@\n-a\n+b\n", 3, "hunk header"),
        (b"--- a/x\n+++ b/x\n", 3, "at least one file section"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n", 3, "adds or removes at least one line"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\njunk\n@@ -1 +1 @@\n-a\n+b\n", 7, "before this hunk"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n-a\n+b\n", 4, "before `\\ No newline"),
        (b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n\\ No newline at end of file\n b\n", 6, "side ended"),
        (b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n@@ -5 +5 @@\n-c\n+d\n", 7, "no further hunk"),
        (b"diff --git a/x b/x\nold mode 10064x\n", 2, "octal file mode"),
        (b"diff --git a/x b/x\nindex zz..yy 100644\n", 2, "index"),
        (b"diff --git a/x b/y\nsimilarity index 101%\n", 2, "percentage"),
        (b"diff --git a/x b/y\nrename from x\n", 1, "both `rename from` and `rename to`"),
        (b"diff --git a/x b/y\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n", 1, "rename from"),
        (b"diff --git a/x b/x\nnew file mode 100644\n--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+a\n", 1, "/dev/null"),
        (b"diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -1 +1 @@\n-a\n+a\n", 1, "no old lines"),
        (b"diff --git a/x b/x\n--- a/x\n+++ b/z\n@@ -1 +1 @@\n-a\n+b\n", 1, "a name change needs"),
        (b"diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/z\n@@ -0,0 +1 @@\n+b\n", 1, "match the `diff --git` header"),
        (b"diff --git a/x b/x\nindex 1..2 100644\n", 1, "a change"),
        (b"diff --git a/x b/x\n@@ -1 +1 @@\n-a\n+b\n", 2, "file header"),
        (b"diff --git a/x b/x\nold mode 100644\nold mode 100755\n", 1, "at most once"),
        (b"diff --git a/x b/x\nindex 1..2\nGIT binary patch\nliteral 3\nA,,,,,\n\n", 5, "base85"),
        (b"diff --git a/x b/x\nindex 1..2\nGIT binary patch\nliteral 3\nHcmV?d00001\n\n", 4, "inflates to a different size"),
        (b"diff --git a/x b/x\nindex 1..2\nGIT binary patch\nliteral 0\nHcmV?d00001\n", 6, "empty line ending"),
        (b"diff --git \"a/x b/x\nold mode 100644\nnew mode 100755\n", 1, "file names"),
        (b"--- \"a/x\\q\"\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", 1, "unknown escape"),
        (b"--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n", 1, "at most one"),
    ];
    for (text, line, expected) in cases {
        let e = err(text);
        assert_eq!(
            e.code(),
            ErrorCode::InvalidPatch,
            "{:?}",
            String::from_utf8_lossy(text)
        );
        assert!(
            e.to_string().contains(expected) && e.line() == *line,
            "input {:?}\n  got {e} (line {})\n  want line {line}, containing {expected:?}",
            String::from_utf8_lossy(text),
            e.line()
        );
    }
}

#[test]
fn combined_diffs_are_unsupported() {
    let e = err(b"diff --cc file.c\nindex 1,2..3\n");
    assert_eq!(e.code(), ErrorCode::UnsupportedPatch);
    assert_eq!(e.line(), 1);
}

#[test]
fn git_names_split_like_git() {
    let split_p = |s: &[u8], p: usize| {
        split_git_names(s, p).map(|(a, b)| {
            (
                String::from_utf8(a).unwrap_or_default(),
                String::from_utf8(b).unwrap_or_default(),
            )
        })
    };
    let split = |s: &[u8]| split_p(s, 1);
    let split2 = |s: &[u8]| split_p(s, 2);
    assert_eq!(
        split(b"a/x y b/x y"),
        Some(("a/x y".into(), "b/x y".into()))
    );
    assert_eq!(split(b"a/x b/x"), Some(("a/x".into(), "b/x".into())));
    assert_eq!(
        split(b"\"a/q\\\"\" b/plain"),
        Some(("a/q\"".into(), "b/plain".into()))
    );
    assert_eq!(
        split(b"a/plain \"b/q\\\"\""),
        Some(("a/plain".into(), "b/q\"".into()))
    );
    // With -p2 the halves are compared after two components.
    assert_eq!(
        split2(b"a/old/x b/new/x"),
        Some(("a/old/x".into(), "b/new/x".into()))
    );
    assert_eq!(split(b"a/old/x b/new/x"), None);
    // A rename between bare names with spaces is ambiguous.
    assert_eq!(split(b"a/one two b/three four"), None);
}

#[test]
fn empty_context_lines_are_accepted() {
    // Some tools strip the space from empty context lines; git accepts them.
    let p = ok(b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n");
    let lines: Vec<_> = p.files()[0].hunks()[0].lines().collect();
    assert_eq!(
        (lines[1].kind, lines[1].content),
        (LineKind::Context, b"\n".as_slice())
    );
}

/// Issue 14 item 22: the parser used to stop at the first `-- ` line, so a
/// two-mail `git format-patch --stdout` mbox applied only its first mail.
#[test]
fn every_mail_of_an_mbox_is_parsed_past_signatures() {
    let mail = |n: u8, path: &str| -> Vec<u8> {
        format!(
            "From 000000000000000000000000000000000000000{n} Mon Sep 17 00:00:00 2001\n\
             From: x <x@y>\nSubject: [PATCH {n}/2] change {path}\n\n\
             body, with a line of dashes\n--\n---\n {path} | 1 +\n\n\
             diff --git a/{path} b/{path}\nindex 1111111..2222222 100644\n\
             --- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n a\n+b\n-- \n2.39.5\n\n"
        )
        .into_bytes()
    };
    let text = [mail(1, "one"), mail(2, "two")].concat();
    let p = ok(&text);
    let paths: Vec<&[u8]> = p.files().iter().map(|f| f.path()).collect();
    assert_eq!(paths, [b"one".as_slice(), b"two".as_slice()]);
    // A signature-less mbox too (`format-patch --no-signature`).
    let bare = String::from_utf8(text)
        .expect("ascii")
        .replace("-- \n2.39.5\n", "");
    assert_eq!(ok(bare.as_bytes()).files().len(), 2);
}

/// Issue 14 item 23: text between file sections (which git skips) was
/// refused, so every multi-file `diff -ruN`, `svn diff` and `hg diff` was
/// `invalid_patch`.
#[test]
fn text_between_sections_is_skipped_like_git() {
    let diff_r = b"
diff -ruN a/one b/one\n--- a/one\t2024-01-01 10:00:00.000000000 +0100\n+++ b/one\t2024-01-02 10:00:00.000000000 +0100\n@@ -1 +1 @@\n-a\n+b\n\
diff -ruN a/two b/two\n--- a/two\t2024-01-01 10:00:00.000000000 +0100\n+++ b/two\t2024-01-02 10:00:00.000000000 +0100\n@@ -1 +1 @@\n-c\n+d\n";
    let svn = b"Index: one\n===================================================================\n--- one\t(revision 3)\n+++ one\t(working copy)\n@@ -1 +1 @@\n-a\n+b\n\
Index: dir/two\n===================================================================\n--- dir/two\t(revision 3)\n+++ dir/two\t(working copy)\n@@ -1 +1 @@\n-c\n+d\n";
    let hg = b"# HG changeset patch\n# User x\ndiff -r 1234abcd -r 5678ef01 one\n--- a/one\tThu Jan 01 00:00:00 1970 +0000\n+++ b/one\tThu Jan 01 00:00:01 1970 +0000\n@@ -1 +1 @@\n-a\n+b\n\
diff -r 1234abcd -r 5678ef01 two\n--- a/two\tThu Jan 01 00:00:00 1970 +0000\n+++ b/two\tThu Jan 01 00:00:01 1970 +0000\n@@ -1 +1 @@\n-c\n+d\n";
    for (text, strip, want) in [
        (diff_r.as_slice(), 1, [b"one".as_slice(), b"two"]),
        (svn.as_slice(), 0, [b"one".as_slice(), b"dir/two"]),
        (hg.as_slice(), 1, [b"one".as_slice(), b"two"]),
    ] {
        let p = parse(text, &ParseOptions::strip(strip))
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(text)));
        let paths: Vec<&[u8]> = p.files().iter().map(|f| f.path()).collect();
        assert_eq!(paths, want, "{}", String::from_utf8_lossy(text));
    }
    // What git refuses stays refused: a hunk with no file header, even
    // after a section and some text.
    let e = err(b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nsome text\n@@ -3 +3 @@\n-c\n+d\n");
    assert_eq!((e.code(), e.line()), (ErrorCode::InvalidPatch, 7), "{e}");
    // Unlike git, which skips them and applies the rest, `diff -r`'s
    // reports of changes the patch does not carry are refused.
    for line in [
        "Binary files a/b.bin and b/b.bin differ\n",
        "Only in a: gone\n",
    ] {
        let text = format!("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n{line}");
        let e = err(text.as_bytes());
        assert_eq!(
            (e.code(), e.line()),
            (ErrorCode::UnsupportedPatch, 6),
            "{e}"
        );
    }
}

/// Issue 14 item 24: `post<TAB>image.txt` was read as `post`, a
/// space-separated timestamp was kept in the name, and GNU diff's epoch
/// timestamp was ignored (a deleted file was left behind, empty).
#[test]
fn plain_names_with_tabs_and_timestamps_read_like_git() {
    let cases: &[(&[u8], &[u8])] = &[
        (
            b"--- a/post\timage.txt\t2024-01-01 10:00:00.000000000 +0100\n+++ b/post\timage.txt\t2024-01-02 10:00:00.000000000 +0100\n",
            b"post\timage.txt",
        ),
        (
            b"--- a/with space.txt 2024-01-01 10:00:00 +0100\n+++ b/with space.txt 2024-01-02 10:00:00 +0100\n",
            b"with space.txt",
        ),
        (
            b"--- a/posix.txt\t2024-01-01 10:00:00\n+++ b/posix.txt\t2024-01-02 10:00:00\n",
            b"posix.txt",
        ),
        (b"--- a/crlf.txt\r\n+++ b/crlf.txt\r\n", b"crlf.txt"),
        (b"--- a/x.c.orig\n+++ b/x.c\n", b"x.c"),
    ];
    for (names, want) in cases {
        let text = [*names, b"@@ -1 +1 @@\n-a\n+b\n".as_slice()].concat();
        let p = ok(&text);
        assert_eq!(
            p.files()[0].path(),
            *want,
            "{}",
            String::from_utf8_lossy(&text)
        );
        assert_eq!(p.files()[0].status(), FileStatus::Modified);
    }
    // Epoch timestamps: created and deleted files.
    let created = b"--- a/new.txt\t1970-01-01 00:00:00.000000000 +0000\n+++ b/new.txt\t2024-01-02 10:00:00.000000000 +0100\n@@ -0,0 +1 @@\n+a\n";
    let p = ok(created);
    assert_eq!(p.files()[0].status(), FileStatus::Added);
    assert_eq!(p.files()[0].new_path(), Some(b"new.txt".as_slice()));
    let deleted = b"--- a/old.txt\t2024-01-02 10:00:00.000000000 +0100\n+++ b/old.txt\t1970-01-01 01:00:00.000000000 +0100\n@@ -1 +0,0 @@\n-a\n";
    let p = ok(deleted);
    assert_eq!(p.files()[0].status(), FileStatus::Deleted);
    assert_eq!(p.files()[0].old_path(), Some(b"old.txt".as_slice()));
    // West of Greenwich the epoch is on 1969-12-31.
    assert!(has_epoch_timestamp(
        b"a/x\t1969-12-31 19:00:00.000000000 -0500"
    ));
    assert!(has_epoch_timestamp(b"a/x\t1970-01-01 05:30:00 +05:30"));
    assert!(!has_epoch_timestamp(b"a/x\t1970-01-01 00:00:01 +0000"));
    assert!(!has_epoch_timestamp(b"a/x\t1970-01-01 01:00:00 +0000"));
    assert!(!has_epoch_timestamp(b"a/x 1970-01-01 00:00:00 +0000"));
    assert!(!has_epoch_timestamp(b"a/x\t1970-01-01 00:00:00.5 +0000"));
}

/// Issue 14 item 19: `+++ b//etc/x` was stripped to `etc/x` (repeated
/// slashes squashed before stripping); git strips to `/etc/x`, an
/// absolute path, and refuses it.
#[test]
fn a_doubled_slash_after_the_prefix_strips_to_an_absolute_path() {
    let p = ok(b"--- a//etc/x\n+++ b//etc/x\n@@ -1 +1 @@\n-a\n+b\n");
    assert_eq!(p.files()[0].path(), b"/etc/x");
    let p = ok(b"diff --git a//etc/x b//etc/x\n--- a//etc/x\n+++ b//etc/x\n@@ -1 +1 @@\n-a\n+b\n");
    assert_eq!(p.files()[0].path(), b"/etc/x");
    // Repeated slashes inside the name are squashed, as git does.
    let p = ok(b"--- a/d//x\n+++ b/d//x\n@@ -1 +1 @@\n-a\n+b\n");
    assert_eq!(p.files()[0].path(), b"d/x");
}

/// Issue 14 item 3: a `GIT binary patch` literal's declared size was not
/// bounded, so a small patch inflated to gigabytes in every stage.
#[test]
fn binary_hunks_over_the_inflate_limit_are_refused_before_inflating() {
    let data = vec![0u8; 1 << 20];
    let mut text = b"diff --git a/z.bin b/z.bin\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..1111111111111111111111111111111111111111\nGIT binary patch\nliteral 1048576\n".to_vec();
    binary::encode_lines(&binary::deflate(&data), &mut text);
    text.extend_from_slice(b"\nliteral 0\n");
    binary::encode_lines(&binary::deflate(b""), &mut text);
    text.push(b'\n');
    let limited = ParseOptions {
        max_inflated_bytes: (1 << 20) - 1,
        ..ParseOptions::default()
    };
    let e = parse(&text, &limited).expect_err("over the limit");
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    assert_eq!(e.field(), Some("max_inflated_bytes"));
    assert!(e.to_string().contains("max_inflated_bytes"), "{e}");
    assert!(parse(&text, &ParseOptions::default()).is_ok());
    // A declared size far beyond what the data holds is refused by the
    // limit, before any inflating (not after reading gigabytes).
    let bomb = String::from_utf8(text.clone())
        .expect("ascii")
        .replace("literal 1048576", "literal 99999999999");
    let e = parse(bomb.as_bytes(), &ParseOptions::default()).expect_err("bomb");
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    // A delta counts the content it builds, read from its header: a delta
    // of a few bytes that claims to build 1 GiB.
    let mut delta = vec![0u8];
    let mut n: u64 = 1 << 30;
    while n >= 0x80 {
        delta.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    delta.push(n as u8);
    let mut text = format!(
        "diff --git a/z.bin b/z.bin\nindex 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644\nGIT binary patch\ndelta {}\n",
        delta.len()
    )
    .into_bytes();
    binary::encode_lines(&binary::deflate(&delta), &mut text);
    text.push(b'\n');
    let e = parse(&text, &ParseOptions::default()).expect_err("delta bomb");
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
}
