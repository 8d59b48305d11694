//! Scenario tests of the review surface: `proposal.files` against `git
//! apply --numstat`, `proposal.diff` paging, `proposal.symbols` in every
//! supported language, `proposal.compare` (the interdiff of two revisions)
//! and `proposal.status` through a whole lifecycle.
//!
//! The patches are made by git itself, in scratch repositories (never the
//! project's), so the counts are compared with git's on git's own output.

use super::tools::{edit_plan, id, str_of, World, PATCH, PATCH2};
use roundtable::{Actor, ErrorCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// One file of a tree: its path, bytes and whether it is executable.
type File<'a> = (&'a str, &'a [u8], bool);

/// Run git in `dir` with a fixed configuration; its stdout.
fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=roundtable test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.filemode=true",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Write `files` under `root` (with their modes), deleting the paths
/// `remove`.
fn write_tree(root: &Path, files: &[File<'_>], remove: &[&str]) {
    use std::os::unix::fs::PermissionsExt as _;
    for (path, data, executable) in files {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&full, data).expect("write");
        let mode = if *executable { 0o755 } else { 0o644 };
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    for path in remove {
        std::fs::remove_file(root.join(path)).expect("remove");
    }
}

/// A scratch git repository holding `base` in one commit.
fn repo(base: &[File<'_>]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    write_tree(dir.path(), base, &[]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "base", "--allow-empty"]);
    dir
}

/// The patch git writes (`git diff --binary -M`) from `base` to `base`
/// with `after` written and `remove` deleted.
fn git_diff(base: &[File<'_>], after: &[File<'_>], remove: &[&str]) -> String {
    let dir = repo(base);
    write_tree(dir.path(), after, remove);
    git(dir.path(), &["add", "-A"]);
    let out = git(
        dir.path(),
        &[
            "diff",
            "--cached",
            "--binary",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "HEAD",
        ],
    );
    String::from_utf8(out).expect("an ASCII patch")
}

/// `git apply --numstat` on `patch`: per file, added and removed lines
/// (`None` for a binary file), in patch order.
fn numstat(patch: &str) -> Vec<(Option<u64>, Option<u64>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("p.diff"), patch).expect("write");
    let out = String::from_utf8(git(dir.path(), &["apply", "--numstat", "p.diff"])).expect("utf-8");
    out.lines()
        .map(|l| {
            let mut f = l.split('\t');
            let mut n = || f.next().expect("a field").parse::<u64>().ok();
            (n(), n())
        })
        .collect()
}

/// Whether `patch` applies to `base` (`git apply --check`).
fn applies(base: &[File<'_>], patch: &str) -> bool {
    let dir = repo(base);
    let file = dir.path().join(".git/p.diff");
    std::fs::write(&file, patch).expect("write");
    Command::new("git")
        .args(["apply", "--check"])
        .arg(&file)
        .current_dir(dir.path())
        .status()
        .expect("git runs")
        .success()
}

/// The fixture with `base` written into its workspace too.
fn world(base: &[File<'_>]) -> World {
    let w = World::new();
    write_tree(w.dir.path(), base, &[]);
    w
}

/// A proposal by the author with `patch` at `risk`; its id.
fn propose(w: &World, patch: &str, risk: &str) -> String {
    str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch, "risk": risk}),
            &w.author,
        )["proposal"]["id"],
    )
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[test]
fn proposal_files_counts_equal_git_numstat_for_text_binary_rename_and_mode_cases() {
    let blob: Vec<u8> = (0u8..=255).cycle().take(3000).collect();
    let mut blob2 = blob.clone();
    blob2[100] = 7;
    blob2.extend_from_slice(b"\0\0tail");
    let ten = numbered(10);
    let twelve = numbered(12);
    let base: Vec<File<'_>> = vec![
        ("text.txt", b"one\ntwo\nthree\nfour\n", false),
        ("gone.txt", b"a\nb\nc\n", false),
        ("img.bin", &blob, false),
        ("old.bin", b"\0\x01\x02 old binary", false),
        ("moved.txt", ten.as_bytes(), false),
        ("edited.txt", twelve.as_bytes(), false),
        ("run.sh", b"#!/bin/sh\necho hi\n", false),
    ];
    let twelve_edited = twelve.replace("line 3\n", "line three\nline 3b\n");
    let after: Vec<File<'_>> = vec![
        ("text.txt", b"one\n2\nthree\nfour\nfive\n", false),
        ("new.txt", b"x\ny\n", false),
        ("img.bin", &blob2, false),
        ("new.bin", b"\0new\0binary", false),
        ("dir/moved.txt", ten.as_bytes(), false),
        ("dir/edited.txt", twelve_edited.as_bytes(), false),
        ("run.sh", b"#!/bin/sh\necho hi\n", true),
    ];
    let patch = git_diff(
        &base,
        &after,
        &["gone.txt", "old.bin", "moved.txt", "edited.txt"],
    );
    assert!(patch.contains("GIT binary patch"), "{patch}");
    assert!(patch.contains("rename from moved.txt"), "{patch}");
    assert!(patch.contains("rename from edited.txt"), "{patch}");
    assert!(
        patch.contains("old mode 100644\nnew mode 100755"),
        "{patch}"
    );

    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    let files = w.ok("proposal.files", json!({"proposal_id": pid}), &w.reviewer);
    let list = files["files"].as_array().expect("files");
    let ours: Vec<(Option<u64>, Option<u64>)> = list
        .iter()
        .map(|f| (f["added_lines"].as_u64(), f["removed_lines"].as_u64()))
        .collect();
    let theirs = numstat(&patch);
    assert_eq!(ours, theirs, "{files:#}\n{patch}");
    let added: u64 = theirs.iter().filter_map(|c| c.0).sum();
    let removed: u64 = theirs.iter().filter_map(|c| c.1).sum();
    assert_eq!(files["added_lines"], added);
    assert_eq!(files["removed_lines"], removed);
    assert_eq!(files["revision"], 1);

    let by_path = |p: &str| -> &Value {
        list.iter()
            .find(|f| f["new_path"] == p || (f["new_path"].is_null() && f["old_path"] == p))
            .unwrap_or_else(|| panic!("no {p} in {files:#}"))
    };
    let text = by_path("text.txt");
    assert_eq!(
        (text["operation"].as_str(), text["binary"].as_bool()),
        (Some("modify"), Some(false))
    );
    assert_eq!(by_path("gone.txt")["operation"], "delete");
    assert_eq!(by_path("gone.txt")["removed_lines"], 3);
    assert_eq!(by_path("new.txt")["operation"], "create");
    assert_eq!(by_path("new.txt")["new_mode"], "100644");
    for binary in ["img.bin", "new.bin", "old.bin"] {
        let f = by_path(binary);
        assert_eq!(f["binary"], true, "{f}");
        assert!(
            f["added_lines"].is_null() && f["removed_lines"].is_null(),
            "{f}"
        );
    }
    let moved = by_path("dir/moved.txt");
    assert_eq!(moved["operation"], "rename");
    assert_eq!(moved["old_path"], "moved.txt");
    assert_eq!(
        (
            moved["added_lines"].as_u64(),
            moved["removed_lines"].as_u64()
        ),
        (Some(0), Some(0))
    );
    let edited = by_path("dir/edited.txt");
    assert_eq!(edited["operation"], "rename");
    assert_eq!(edited["old_path"], "edited.txt");
    assert_eq!(
        (
            edited["added_lines"].as_u64(),
            edited["removed_lines"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let mode = by_path("run.sh");
    assert_eq!(mode["mode_change"], true);
    assert_eq!(
        (mode["old_mode"].as_str(), mode["new_mode"].as_str()),
        (Some("100644"), Some("100755"))
    );
    assert_eq!(
        (mode["added_lines"].as_u64(), mode["removed_lines"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(text["mode_change"], false);
}

#[test]
fn proposal_files_of_an_edit_plan_and_of_an_older_revision() {
    let w = World::new();
    let pid = w.proposal();
    w.revise(&pid, 1, PATCH2);
    let one = w.ok(
        "proposal.files",
        json!({"proposal_id": pid, "revision": 1}),
        &w.reviewer,
    );
    assert_eq!(one["revision"], 1);
    assert_eq!(numstat(PATCH), [(Some(1), Some(1))]);
    assert_eq!(one["files"][0]["added_lines"], 1);
    let latest = w.ok("proposal.files", json!({"proposal_id": pid}), &w.reviewer);
    assert_eq!(latest["revision"], 2);
    let planned = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Plan", "summary_md": "By plan.", "edit_plan": edit_plan()}),
            &w.author,
        )["proposal"]["id"],
    );
    let files = w.ok(
        "proposal.files",
        json!({"proposal_id": planned}),
        &w.reviewer,
    );
    assert_eq!(files["files"][0]["operation"], "modify");
    assert_eq!(
        (
            files["added_lines"].as_u64(),
            files["removed_lines"].as_u64()
        ),
        (Some(1), Some(1))
    );
    w.refused(
        "proposal.files",
        json!({"proposal_id": pid, "revision": 3}),
        &w.reviewer,
        ErrorCode::NotFound,
    );
}

/// Every page of `proposal.diff` with `limit`; the pages.
fn pages(w: &World, pid: &str, limit: u64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"proposal_id": pid, "limit": limit});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = w.ok("proposal.diff", args, &w.reviewer);
        cursor = page["next_cursor"].clone();
        out.push(page);
        if cursor.is_null() {
            return out;
        }
        assert!(out.len() < 100, "the cursor never ends");
    }
}

fn concatenated(pages: &[Value]) -> (String, Vec<u64>) {
    let mut text = String::new();
    let mut indexes = Vec::new();
    for p in pages {
        for f in p["files"].as_array().expect("files") {
            text.push_str(f["diff"].as_str().expect("UTF-8 sections"));
            indexes.push(f["index"].as_u64().expect("index"));
        }
    }
    (text, indexes)
}

/// The pages are the stored diff — rendered from the changeset that
/// lands, not the submitted text (issue 31 item 7) — byte for byte, at
/// every page size, and that diff applies with git to the same files as
/// the submitted patch.
#[test]
fn proposal_diff_pages_concatenate_to_the_stored_diff_byte_for_byte_and_apply() {
    let blob: Vec<u8> = (0u8..200).collect();
    let base: Vec<File<'_>> = vec![
        ("a.txt", b"a\n", false),
        ("b.txt", b"b\n", false),
        ("c.bin", &blob, false),
        ("d.txt", b"d\n", false),
        ("e.sh", b"echo e\n", false),
    ];
    let after: Vec<File<'_>> = vec![
        ("a.txt", b"A\n", false),
        ("b.txt", b"b\nB\n", false),
        ("c.bin", b"\0changed", false),
        ("d/moved.txt", b"d\n", false),
        ("e.sh", b"echo e\n", true),
        ("f.txt", b"new\n", false),
    ];
    let patch = git_diff(&base, &after, &["d.txt"]);
    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    let stored = str_of(
        &w.ok(
            "proposal.get",
            json!({"proposal_id": pid, "include_content": true}),
            &w.reviewer,
        )["content"],
    );
    assert_eq!(stored, patch, "the submitted text is kept as submitted");
    let (rendered, _) = concatenated(&pages(&w, &pid, 100));
    assert_eq!(numstat(&rendered), numstat(&patch));
    for limit in [1, 2, 4, 100] {
        let got = pages(&w, &pid, limit);
        assert_eq!(got.len(), 6usize.div_ceil(limit as usize), "limit {limit}");
        for p in &got {
            assert_eq!(p["total_files"], 6);
            assert_eq!(p["revision"], 1);
            assert!(p["files"].as_array().expect("files").len() as u64 <= limit);
        }
        let (text, indexes) = concatenated(&got);
        assert_eq!(indexes, (0..6).collect::<Vec<u64>>(), "limit {limit}");
        assert_eq!(
            text, rendered,
            "limit {limit}: the pages are the diff byte for byte"
        );
        assert!(applies(&base, &text), "limit {limit}: the pages apply");
    }
    let first = w.ok(
        "proposal.diff",
        json!({"proposal_id": pid, "limit": 2}),
        &w.reviewer,
    );
    assert_eq!(first["files"][0]["new_path"], "a.txt");
    assert!(first["files"][1]["diff_base64"].is_null());
    let err = w.refused(
        "proposal.diff",
        json!({"proposal_id": pid, "cursor": "not-a-cursor"}),
        &w.reviewer,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "cursor");
    // The default page holds every file of a small revision.
    let all = w.ok("proposal.diff", json!({"proposal_id": pid}), &w.reviewer);
    assert_eq!(all["files"].as_array().expect("files").len(), 6);
    assert!(all["next_cursor"].is_null());
}

#[test]
fn proposal_diff_renders_an_edit_plan_as_a_diff_that_applies() {
    let w = World::new();
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Plan", "summary_md": "By plan.", "edit_plan": edit_plan()}),
            &w.author,
        )["proposal"]["id"],
    );
    let page = w.ok("proposal.diff", json!({"proposal_id": pid}), &w.reviewer);
    assert_eq!(page["total_files"], 1);
    let diff = str_of(&page["files"][0]["diff"]);
    assert!(diff.contains("-hello\n+hello, plan\n"), "{diff}");
    assert!(
        applies(&[("hello.txt", b"hello\n", false)], &diff),
        "{diff}"
    );
    assert_eq!(numstat(&diff), [(Some(1), Some(1))]);
}

/// Per language: the base file, the file after (keep modified, gone
/// removed, old_name renamed, fresh added), and the renamed names.
const LANGUAGES: &[(&str, &str, &str, &str, &str)] = &[
    (
        "src/lib.rs",
        "pub fn keep() -> u32 {\n    1\n}\n\npub fn gone() -> u32 {\n    2 + 2\n}\n\npub fn old_name(x: u32) -> u32 {\n    x * 3\n}\n",
        "pub fn keep() -> u32 {\n    10\n}\n\npub fn new_name(x: u32) -> u32 {\n    x * 3\n}\n\npub fn fresh(s: &str) -> usize {\n    s.len()\n}\n",
        "old_name",
        "new_name",
    ),
    (
        "pkg/mod.py",
        "def keep():\n    return 1\n\n\ndef gone():\n    return 2 + 2\n\n\ndef old_name(x):\n    return x * 3\n",
        "def keep():\n    return 10\n\n\ndef new_name(x):\n    return x * 3\n\n\ndef fresh(s):\n    return len(s)\n",
        "old_name",
        "new_name",
    ),
    (
        "main.go",
        "package main\n\nfunc keep() int {\n\treturn 1\n}\n\nfunc gone() int {\n\treturn 2 + 2\n}\n\nfunc oldName(x int) int {\n\treturn x * 3\n}\n",
        "package main\n\nfunc keep() int {\n\treturn 10\n}\n\nfunc newName(x int) int {\n\treturn x * 3\n}\n\nfunc fresh(s string) int {\n\treturn len(s)\n}\n",
        "oldName",
        "newName",
    ),
    (
        "web/app.ts",
        "export function keep(): number {\n  return 1;\n}\n\nfunction gone(): number {\n  return 2 + 2;\n}\n\nfunction oldName(x: number): number {\n  return x * 3;\n}\n",
        "export function keep(): number {\n  return 10;\n}\n\nfunction newName(x: number): number {\n  return x * 3;\n}\n\nfunction fresh(s: string): number {\n  return s.length;\n}\n",
        "oldName",
        "newName",
    ),
    (
        "web/app.js",
        "export function keep() {\n  return 1;\n}\n\nfunction gone() {\n  return 2 + 2;\n}\n\nfunction oldName(x) {\n  return x * 3;\n}\n",
        "export function keep() {\n  return 10;\n}\n\nfunction newName(x) {\n  return x * 3;\n}\n\nconst fresh = (s) => s.length;\n",
        "oldName",
        "newName",
    ),
    (
        "c/util.c",
        "int keep(void) {\n    return 1;\n}\n\nint gone(void) {\n    return 2 + 2;\n}\n\nint old_name(int x) {\n    return x * 3;\n}\n",
        "int keep(void) {\n    return 10;\n}\n\nint new_name(int x) {\n    return x * 3;\n}\n\nint fresh(const char *s) {\n    return s[0];\n}\n",
        "old_name",
        "new_name",
    ),
];

#[cfg_attr(
    not(all(
        feature = "rust",
        feature = "python",
        feature = "go",
        feature = "typescript",
        feature = "javascript",
        feature = "c"
    )),
    ignore = "needs every symbol grammar"
)]
#[test]
fn proposal_symbols_lists_added_removed_modified_and_renamed_functions_in_every_language() {
    let base: Vec<File<'_>> = LANGUAGES
        .iter()
        .map(|(p, before, ..)| (*p, before.as_bytes(), false))
        .chain([("notes.txt", &b"plain\n"[..], false)])
        .collect();
    let after: Vec<File<'_>> = LANGUAGES
        .iter()
        .map(|(p, _, after, ..)| (*p, after.as_bytes(), false))
        .chain([("notes.txt", &b"plain text\n"[..], false)])
        .collect();
    let patch = git_diff(&base, &after, &[]);
    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    let symbols = w.ok("proposal.symbols", json!({"proposal_id": pid}), &w.reviewer);
    let files = symbols["files"].as_array().expect("files");
    let languages: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f["language"].as_str())
        .collect();
    assert_eq!(
        languages,
        ["c", "go", "java_script", "python", "rust", "type_script"]
            .into_iter()
            .collect(),
        "{symbols:#}"
    );
    for (path, _, _, old, new) in LANGUAGES {
        let file = files
            .iter()
            .find(|f| f["path"] == *path)
            .unwrap_or_else(|| panic!("no {path} in {symbols:#}"));
        let got: BTreeSet<(String, String, Option<String>, String)> = file["symbols"]
            .as_array()
            .expect("symbols")
            .iter()
            .map(|s| {
                (
                    str_of(&s["change"]),
                    str_of(&s["name"]),
                    s["old_name"].as_str().map(str::to_owned),
                    str_of(&s["kind"]),
                )
            })
            .collect();
        let want: BTreeSet<(String, String, Option<String>, String)> = [
            ("modified", "keep", None),
            ("removed", "gone", None),
            ("renamed", *new, Some(*old)),
            ("added", "fresh", None),
        ]
        .into_iter()
        .map(|(c, n, o)| {
            (
                c.to_owned(),
                n.to_owned(),
                o.map(str::to_owned),
                "function".to_owned(),
            )
        })
        .collect();
        assert_eq!(got, want, "{path}: {file:#}");
        // Spans: the removed one only before, the added one only after.
        for s in file["symbols"].as_array().expect("symbols") {
            match s["change"].as_str() {
                Some("removed") => assert!(s["before"].is_array() && s["after"].is_null(), "{s}"),
                Some("added") => assert!(s["before"].is_null() && s["after"].is_array(), "{s}"),
                _ => assert!(s["before"].is_array() && s["after"].is_array(), "{s}"),
            }
        }
        let added = file["symbols"]
            .as_array()
            .expect("symbols")
            .iter()
            .find(|s| s["change"] == "added")
            .expect("added");
        let after_lines = after.iter().find(|f| f.0 == *path).expect("after").1;
        let last = after_lines.iter().filter(|b| **b == b'\n').count() as u64;
        assert_eq!(
            added["after"][1], last,
            "{path}: fresh ends on the last line"
        );
    }
    let notes = files
        .iter()
        .find(|f| f["path"] == "notes.txt")
        .expect("notes.txt");
    assert!(notes["language"].is_null() && notes["symbols"] == json!([]));
}

#[cfg_attr(
    not(all(feature = "python", feature = "go")),
    ignore = "needs the python, go symbol grammar"
)]
#[test]
fn proposal_symbols_of_created_and_deleted_files() {
    let base: Vec<File<'_>> = vec![("old.py", b"def old():\n    return 1\n", false)];
    let after: Vec<File<'_>> = vec![(
        "new.go",
        b"package x\n\nfunc New() int {\n\treturn 2\n}\n",
        false,
    )];
    let patch = git_diff(&base, &after, &["old.py"]);
    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    let symbols = w.ok("proposal.symbols", json!({"proposal_id": pid}), &w.reviewer);
    let of = |path: &str| -> Vec<(String, String)> {
        symbols["files"]
            .as_array()
            .expect("files")
            .iter()
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("no {path} in {symbols:#}"))["symbols"]
            .as_array()
            .expect("symbols")
            .iter()
            .map(|s| (str_of(&s["change"]), str_of(&s["name"])))
            .collect()
    };
    assert_eq!(of("new.go"), [("added".to_owned(), "New".to_owned())]);
    assert_eq!(of("old.py"), [("removed".to_owned(), "old".to_owned())]);
}

/// Declarations nested deeper than the symbol index descends: indexing
/// it is a refusal, so a call that parses it fails.
fn too_deep() -> String {
    let n = roundtable::symbols::MAX_NESTING + 1;
    format!("{}fn f() {{}}\n{}", "mod a {\n".repeat(n), "}\n".repeat(n))
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn proposal_symbols_paths_parses_only_the_named_files() {
    let deep = too_deep();
    let base: Vec<File<'_>> = vec![
        ("src/a.rs", b"fn one() -> u32 {\n    1\n}\n", false),
        ("src/deep.rs", deep.as_bytes(), false),
        ("src/old.rs", b"fn moved() -> u32 {\n    1\n}\n", false),
    ];
    let deep_after = deep.replace("fn f() {}", "fn f() { let _ = 2; }");
    let after: Vec<File<'_>> = vec![
        ("src/a.rs", b"fn one() -> u32 {\n    2\n}\n", false),
        ("src/deep.rs", deep_after.as_bytes(), false),
        ("src/new.rs", b"fn moved() -> u32 {\n    2\n}\n", false),
    ];
    let patch = git_diff(&base, &after, &["src/old.rs"]);
    assert!(patch.contains("rename from src/old.rs"), "{patch}");
    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    // Unfiltered, every file is parsed, and the deep one cannot be.
    let err = w.refused(
        "proposal.symbols",
        json!({"proposal_id": pid}),
        &w.reviewer,
        ErrorCode::InvalidArgument,
    );
    assert!(err.message().contains("nest"), "{err}");
    // Filtered to one file of the two Rust files changed in place, only
    // that one is parsed (the deep one is not, so the call succeeds).
    let paths = |ps: Value| -> Vec<(String, Vec<String>)> {
        let got = w.ok(
            "proposal.symbols",
            json!({"proposal_id": pid, "paths": ps}),
            &w.reviewer,
        );
        assert_eq!(got["revision"], 1, "{got}");
        got["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| {
                let names = f["symbols"]
                    .as_array()
                    .expect("symbols")
                    .iter()
                    .map(|s| str_of(&s["name"]))
                    .collect();
                (str_of(&f["path"]), names)
            })
            .collect()
    };
    let one = |path: &str, name: &str| vec![(path.to_owned(), vec![name.to_owned()])];
    assert_eq!(paths(json!(["src/a.rs"])), one("src/a.rs", "one"));
    // A renamed file is found by its new path and by its old one.
    assert_eq!(paths(json!(["src/new.rs"])), one("src/new.rs", "moved"));
    assert_eq!(paths(json!(["src/old.rs"])), one("src/new.rs", "moved"));
    // A path the revision does not touch is just absent; none named, none
    // listed.
    assert_eq!(
        paths(json!(["src/a.rs", "src/elsewhere.rs"])),
        one("src/a.rs", "one")
    );
    assert!(paths(json!([])).is_empty());
    // The typed API filters the same way.
    let typed = w
        .engine
        .session(w.reviewer.clone())
        .proposals()
        .symbols(roundtable::session::ProposalSymbols::new(&pid).paths(["src/a.rs"]))
        .expect("typed proposal.symbols");
    let typed: Vec<&str> = typed.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(typed, ["src/a.rs"]);
}

#[test]
fn proposal_symbols_refuses_paths_that_are_not_repository_paths() {
    let w = world(&[]);
    let pid = str_of(&w.create()["proposal"]["id"]);
    for (bad, reason) in [
        ("../x.rs", "has a `..` component"),
        ("/etc/passwd", "is absolute"),
        (".git/config", "enters `.git`"),
        ("a//b.rs", "has an empty component"),
        ("", "is empty"),
    ] {
        let err = w.refused(
            "proposal.symbols",
            json!({"proposal_id": pid, "paths": ["hello.txt", bad]}),
            &w.reviewer,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "paths[1]", "{bad}: {err}");
        assert!(err.message().contains(reason), "{bad}: {err}");
    }
    for bad in [json!("hello.txt"), json!([7])] {
        w.refused(
            "proposal.symbols",
            json!({"proposal_id": pid, "paths": bad}),
            &w.reviewer,
            ErrorCode::InvalidArgument,
        );
    }
    let many: Vec<String> = (0..1001).map(|i| format!("f{i}.rs")).collect();
    let err = w.refused(
        "proposal.symbols",
        json!({"proposal_id": pid, "paths": many}),
        &w.reviewer,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "paths", "{err}");
    // The typed builder refuses the same path before any call.
    let err = w
        .engine
        .session(w.reviewer.clone())
        .proposals()
        .symbols(roundtable::session::ProposalSymbols::new(&pid).paths(["../x.rs"]))
        .expect_err("refused");
    assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
}

#[test]
fn proposal_compare_shows_exactly_the_hunks_that_differ() {
    let a = numbered(30);
    let base: Vec<File<'_>> = vec![
        ("a.txt", a.as_bytes(), false),
        ("b.txt", b"b1\nb2\nb3\n", false),
    ];
    // Revision 1: two hunks in a.txt, one in b.txt.
    let a1 = a
        .replace("line 2\n", "line two\n")
        .replace("line 26\n", "line twenty-six\n");
    let rev1 = git_diff(
        &base,
        &[
            ("a.txt", a1.as_bytes(), false),
            ("b.txt", b"B1\nb2\nb3\n", false),
        ],
        &[],
    );
    // Revision 2: a.txt's first hunk changes (one more line, so the second
    // hunk shifts but keeps its content), b.txt is the same, c.txt is new.
    let a2 = a
        .replace("line 2\n", "line two\nline two and a half\n")
        .replace("line 26\n", "line twenty-six\n");
    let rev2 = git_diff(
        &base,
        &[
            ("a.txt", a2.as_bytes(), false),
            ("b.txt", b"B1\nb2\nb3\n", false),
            ("c.txt", b"c\n", false),
        ],
        &[],
    );
    let w = world(&base);
    let pid = propose(&w, &rev1, "normal");
    w.revise(&pid, 1, &rev2);
    let cmp = w.ok(
        "proposal.compare",
        json!({"proposal_id": pid, "from_revision": 1, "to_revision": 2}),
        &w.reviewer,
    );
    assert_eq!(cmp["from_revision"], 1);
    assert_eq!(cmp["to_revision"], 2);
    assert_eq!(cmp["identical"], false);
    let files = cmp["files"].as_array().expect("files");
    let paths: Vec<&str> = files.iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(
        paths,
        ["a.txt", "c.txt"],
        "b.txt is changed identically: {cmp:#}"
    );
    let a_entry = &files[0];
    assert_eq!(a_entry["status"], "changed");
    let removed: Vec<String> = a_entry["removed_hunks"]
        .as_array()
        .expect("hunks")
        .iter()
        .map(str_of)
        .collect();
    let added: Vec<String> = a_entry["added_hunks"]
        .as_array()
        .expect("hunks")
        .iter()
        .map(str_of)
        .collect();
    assert_eq!(removed.len(), 1, "{cmp:#}");
    assert_eq!(
        added.len(),
        1,
        "the shifted second hunk is the same: {cmp:#}"
    );
    assert!(
        removed[0].contains("+line two\n") && !removed[0].contains("half"),
        "{}",
        removed[0]
    );
    assert!(added[0].contains("+line two and a half\n"), "{}", added[0]);
    assert!(!removed[0].contains("twenty-six") && !added[0].contains("twenty-six"));
    assert!(
        rev1.contains(&removed[0]) && rev2.contains(&added[0]),
        "hunks are the revisions' own text"
    );
    let c_entry = &files[1];
    assert_eq!(c_entry["status"], "only_in_to");
    assert_eq!(c_entry["removed_hunks"], json!([]));
    assert_eq!(c_entry["added_hunks"].as_array().expect("hunks").len(), 1);

    // The other way round, the roles swap.
    let back = w.ok(
        "proposal.compare",
        json!({"proposal_id": pid, "from_revision": 2, "to_revision": 1}),
        &w.reviewer,
    );
    assert_eq!(back["files"][0]["removed_hunks"], a_entry["added_hunks"]);
    assert_eq!(back["files"][1]["status"], "only_in_from");

    // An identical revision: nothing to re-read.
    w.revise(&pid, 2, &rev2);
    let same = w.ok(
        "proposal.compare",
        json!({"proposal_id": pid, "from_revision": 2, "to_revision": 3}),
        &w.reviewer,
    );
    assert_eq!(same["identical"], true);
    assert_eq!(same["files"], json!([]));
    w.refused(
        "proposal.compare",
        json!({"proposal_id": pid, "from_revision": 1, "to_revision": 9}),
        &w.reviewer,
        ErrorCode::NotFound,
    );
}

#[test]
fn proposal_compare_of_a_mode_change_and_a_binary_change() {
    let base: Vec<File<'_>> = vec![("run.sh", b"echo\n", false), ("x.bin", b"\0one", false)];
    let rev1 = git_diff(
        &base,
        &[("run.sh", b"echo\n", true), ("x.bin", b"\0two", false)],
        &[],
    );
    let rev2 = git_diff(
        &base,
        &[("run.sh", b"echo\n", true), ("x.bin", b"\0three", false)],
        &[],
    );
    let w = world(&base);
    let pid = propose(&w, &rev1, "normal");
    w.revise(&pid, 1, &rev2);
    let cmp = w.ok(
        "proposal.compare",
        json!({"proposal_id": pid, "from_revision": 1, "to_revision": 2}),
        &w.reviewer,
    );
    let paths: Vec<&str> = cmp["files"]
        .as_array()
        .expect("files")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(paths, ["x.bin"], "{cmp:#}");
}

/// `proposal.status`: (actor, candidates) of each expected next actor.
fn next(w: &World, pid: &str) -> (Value, Vec<(String, Vec<String>)>) {
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.reviewer);
    let next = status["next"]
        .as_array()
        .expect("next")
        .iter()
        .map(|n| {
            let candidates = n["candidates"]
                .as_array()
                .expect("candidates")
                .iter()
                .map(str_of)
                .collect();
            (str_of(&n["actor"]), candidates)
        })
        .collect();
    (status, next)
}

fn actors(next: &[(String, Vec<String>)]) -> Vec<&str> {
    next.iter().map(|(a, _)| a.as_str()).collect()
}

#[test]
fn proposal_status_names_the_next_actor_through_a_whole_lifecycle() {
    let w = World::new();
    let sam = w.agent("sam", &["reviewer", "security"]);
    let hana = Actor::human(id("hana"));
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );

    // Pending: the author requests review.
    let pid = propose(&w, PATCH, "normal");
    let (status, n) = next(&w, &pid);
    assert_eq!(
        n,
        [("author".to_owned(), vec!["alice".to_owned()])],
        "{status:#}"
    );
    assert_eq!(
        (status["can_land"].as_bool(), status["stale"].as_bool()),
        (Some(false), Some(false))
    );
    assert_eq!(status["proposal"]["status"], "pending");

    // In review without votes: a reviewer, and who can.
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    let (status, n) = next(&w, &pid);
    assert_eq!(actors(&n), ["reviewer"], "{status:#}");
    assert!(
        n[0].1.contains(&"bob".to_owned()) && !n[0].1.contains(&"alice".to_owned()),
        "{status:#}"
    );
    assert_eq!(status["stale"], false);
    assert_eq!(status["validation"]["valid"], false);

    // Approved: valid, the orchestrator applies it.
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let (status, n) = next(&w, &pid);
    assert_eq!(actors(&n), ["orchestrator"], "{status:#}");
    assert_eq!(status["can_land"], true);

    // A critical proposal waits for the security reviewer and a human.
    let critical = propose(&w, PATCH2, "critical");
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": critical}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": critical, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let (status, n) = next(&w, &critical);
    assert_eq!(actors(&n), ["security_reviewer", "human"], "{status:#}");
    assert_eq!(n[0].1, ["sam"], "{status:#}");
    assert_eq!(status["next"][0]["roles"], json!(["security"]));
    w.ok(
        "security.review",
        json!({"proposal_id": critical, "revision": 1, "verdict": "pass"}),
        &sam,
    );
    let (status, n) = next(&w, &critical);
    assert_eq!(actors(&n), ["human"], "{status:#}");
    w.ok(
        "human.approve",
        json!({"proposal_id": critical, "revision": 1}),
        &hana,
    );
    let (status, n) = next(&w, &critical);
    assert_eq!(actors(&n), ["orchestrator"], "{status:#}");
    assert_eq!(status["can_land"], true);

    // Someone edits the file: stale, the author must revise.
    std::fs::write(w.dir.path().join("hello.txt"), "hello there\n").expect("write");
    let (status, n) = next(&w, &pid);
    assert_eq!(status["stale"], true, "{status:#}");
    assert_eq!(status["can_land"], false);
    assert_eq!(
        n[0],
        ("author".to_owned(), vec!["alice".to_owned()]),
        "{status:#}"
    );
    assert!(!actors(&n).contains(&"orchestrator"), "{status:#}");

    // Restored: valid again; applied: nobody acts on it any more.
    std::fs::write(w.dir.path().join("hello.txt"), "hello\n").expect("write");
    let (_, n) = next(&w, &pid);
    assert_eq!(actors(&n), ["orchestrator"]);
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let (status, n) = next(&w, &pid);
    assert!(n.is_empty(), "{status:#}");
    assert_eq!(status["proposal"]["status"], "applied");
    assert_eq!(status["can_land"], false);
    assert!(status["validation"].is_null());

    // The critical one no longer applies to the changed file: stale.
    let (status, n) = next(&w, &critical);
    assert_eq!(status["stale"], true, "{status:#}");
    assert_eq!(actors(&n)[0], "author");
    w.ok(
        "patch.reject",
        json!({"proposal_id": critical, "reason_md": "Superseded."}),
        &hana,
    );
    let (status, n) = next(&w, &critical);
    assert!(n.is_empty(), "{status:#}");
    assert_eq!(status["proposal"]["status"], "rejected");
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn proposal_symbols_of_one_path_equals_that_file_of_the_whole_answer() {
    // Filtered, only the named files' sections are applied (against their
    // own before-contents): each must say what the whole answer says.
    let base: Vec<File<'_>> = vec![
        ("src/a.rs", b"fn one() -> u32 {\n    1\n}\n", false),
        ("src/b.rs", b"fn doomed() {}\n", false),
        (
            "src/old.rs",
            b"fn moved() -> u32 {\n    1\n}\n\nfn stays() {}\n",
            false,
        ),
        ("img.bin", b"\x00\x01\x02binary\x00", false),
    ];
    let after: Vec<File<'_>> = vec![
        (
            "src/a.rs",
            b"fn one() -> u32 {\n    2\n}\n\nfn two() {}\n",
            false,
        ),
        ("src/c.rs", b"fn fresh() {}\n", true),
        (
            "src/new.rs",
            b"fn moved() -> u32 {\n    2\n}\n\nfn stays() {}\n",
            false,
        ),
        ("img.bin", b"\x00\x01\x03binary\x00\xff", false),
    ];
    let patch = git_diff(&base, &after, &["src/b.rs", "src/old.rs"]);
    assert!(patch.contains("rename from src/old.rs"), "{patch}");
    assert!(patch.contains("GIT binary patch"), "{patch}");
    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    let whole = w.ok("proposal.symbols", json!({"proposal_id": pid}), &w.reviewer);
    let files = whole["files"].as_array().expect("files");
    assert!(files.len() >= 5, "{whole:#}");
    for file in files {
        let path = str_of(&file["path"]);
        let one = w.ok(
            "proposal.symbols",
            json!({"proposal_id": pid, "paths": [path]}),
            &w.reviewer,
        );
        assert_eq!(one["files"], json!([file]), "{path}");
    }
    // Twice, and all named at once: the same again.
    let all: Vec<String> = files.iter().map(|f| str_of(&f["path"])).collect();
    for _ in 0..2 {
        let got = w.ok(
            "proposal.symbols",
            json!({"proposal_id": pid, "paths": all}),
            &w.reviewer,
        );
        assert_eq!(got["files"], whole["files"]);
    }
}

#[test]
fn proposal_diff_paths_returns_only_the_named_files_sections_paged_among_them() {
    let base: Vec<File<'_>> = vec![
        ("a.txt", b"a\n", false),
        ("b.txt", b"b\n", false),
        ("c.txt", b"c\n", false),
        ("old.txt", b"moved\n", false),
    ];
    let after: Vec<File<'_>> = vec![
        ("a.txt", b"a2\n", false),
        ("b.txt", b"b2\n", false),
        ("c.txt", b"c2\n", false),
        ("new.txt", b"moved\nmore\n", false),
    ];
    let patch = git_diff(&base, &after, &["old.txt"]);
    assert!(patch.contains("rename from old.txt"), "{patch}");
    let w = world(&base);
    let pid = propose(&w, &patch, "normal");
    let page = |args: Value| w.ok("proposal.diff", args, &w.reviewer);
    let sections = |got: &Value| -> Vec<(u64, String)> {
        got["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| {
                let path = f["new_path"]
                    .as_str()
                    .or(f["old_path"].as_str())
                    .unwrap_or_default();
                (f["index"].as_u64().expect("index"), path.to_owned())
            })
            .collect()
    };
    let all = page(json!({"proposal_id": pid}));
    assert_eq!(all["total_files"], 4);
    let index_of = |path: &str| {
        sections(&all)
            .into_iter()
            .find(|(_, p)| p == path)
            .map(|(i, _)| i)
            .expect("listed")
    };
    // Only the named files, each keeping its index among all of them, and
    // its exact section text.
    let got = page(json!({"proposal_id": pid, "paths": ["c.txt", "a.txt", "elsewhere.txt"]}));
    assert_eq!(
        sections(&got),
        vec![
            (index_of("a.txt"), "a.txt".to_owned()),
            (index_of("c.txt"), "c.txt".to_owned())
        ]
    );
    assert_eq!(got["total_files"], 4);
    assert!(got["next_cursor"].is_null());
    let text_of = |v: &Value, path: &str| {
        v["files"]
            .as_array()
            .expect("files")
            .iter()
            .find(|f| f["new_path"] == path)
            .map(|f| str_of(&f["diff"]))
            .expect("section")
    };
    assert_eq!(text_of(&got, "a.txt"), text_of(&all, "a.txt"));
    // A renamed file is found by its old path too.
    let got = page(json!({"proposal_id": pid, "paths": ["old.txt"]}));
    assert_eq!(
        sections(&got),
        vec![(index_of("new.txt"), "new.txt".to_owned())]
    );
    // Pages count only the named files.
    let first = page(json!({"proposal_id": pid, "paths": ["a.txt", "b.txt", "c.txt"], "limit": 2}));
    assert_eq!(sections(&first).len(), 2);
    let cursor = first["next_cursor"].clone();
    assert!(cursor.is_string(), "{first}");
    let second = page(
        json!({"proposal_id": pid, "paths": ["a.txt", "b.txt", "c.txt"], "limit": 2, "cursor": cursor}),
    );
    assert_eq!(
        sections(&second),
        vec![(index_of("c.txt"), "c.txt".to_owned())]
    );
    assert!(second["next_cursor"].is_null());
    // None named: none listed. Bad paths are refused, naming the field.
    assert!(sections(&page(json!({"proposal_id": pid, "paths": []}))).is_empty());
    let err = w.refused(
        "proposal.diff",
        json!({"proposal_id": pid, "paths": ["a.txt", "../x"]}),
        &w.reviewer,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "paths[1]", "{err}");
    let many: Vec<String> = (0..1001).map(|i| format!("f{i}.txt")).collect();
    w.refused(
        "proposal.diff",
        json!({"proposal_id": pid, "paths": many}),
        &w.reviewer,
        ErrorCode::InvalidArgument,
    );
    // The typed API filters the same way.
    let typed = w
        .engine
        .session(w.reviewer.clone())
        .proposals()
        .diff(roundtable::session::ProposalDiff::new(&pid).paths(["b.txt"]))
        .expect("typed proposal.diff");
    let typed: Vec<Option<&str>> = typed.files.iter().map(|f| f.new_path.as_deref()).collect();
    assert_eq!(typed, [Some("b.txt")]);
}
