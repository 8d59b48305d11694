//! Issue 31, items 7-9: what the reviewer sees is what lands.
//!
//! Each patch here is made by git in a scratch repository (never the
//! project's) and each outcome is compared with what `git apply` (and
//! `git apply --unidiff-zero`) does to the same files on this machine:
//! where git misapplies silently, roundtable places the change where the
//! diff was made or refuses it, and every preview is rendered from the
//! changeset that lands.

use super::tools::{str_of, World};
use roundtable::diff::{self, ParseOptions, TreeFile};
use roundtable::ErrorCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Run git in `dir` with a fixed configuration (no user or system
/// configuration read); its stdout, which must be a success.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn git_output(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
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
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs")
}

/// A scratch repository holding `files`, committed.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    git(dir.path(), &["init", "-q"]);
    write(dir.path(), files);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "base"]);
    dir
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, body) in files {
        let full = root.join(path);
        std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
        std::fs::write(full, body).expect("write");
    }
}

/// Commit `files` (and the removal of `remove`) on top of HEAD.
fn commit(dir: &Path, files: &[(&str, &str)], remove: &[&str]) {
    write(dir, files);
    for p in remove {
        git(dir, &["rm", "-q", "--", p]);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "next"]);
}

/// What `git apply ARGS` makes of `patch` on a fresh checkout of `files`:
/// the file contents after (absent files `None`), or `Err` with git's
/// message when it refuses.
fn git_apply(
    files: &[(&str, &str)],
    patch: &str,
    args: &[&str],
    read: &[&str],
) -> Result<Vec<Option<String>>, String> {
    let dir = repo(files);
    let file = dir.path().join(".git/p.diff");
    std::fs::write(&file, patch).expect("write");
    let mut all = vec!["apply"];
    all.extend_from_slice(args);
    let path = file.to_str().expect("utf-8 path");
    all.push(path);
    let out = git_output(dir.path(), &all);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(read
        .iter()
        .map(|p| std::fs::read_to_string(dir.path().join(p)).ok())
        .collect())
}

fn tree(files: &[(&str, &str)]) -> BTreeMap<Vec<u8>, TreeFile> {
    files
        .iter()
        .map(|(p, c)| {
            (
                p.as_bytes().to_vec(),
                TreeFile::regular(c.as_bytes().to_vec()),
            )
        })
        .collect()
}

/// What roundtable's engine makes of `patch` on `files` (strip 1): the
/// contents of `read` after, or the refusal's code and message.
fn engine_apply(
    files: &[(&str, &str)],
    patch: &str,
    read: &[&str],
) -> Result<Vec<Option<String>>, (ErrorCode, String)> {
    let parsed = diff::parse(patch.as_bytes(), &ParseOptions::default())
        .map_err(|e| (e.code(), e.to_string()))?;
    let after =
        diff::apply_in_memory(&parsed, &tree(files)).map_err(|e| (e.code(), e.to_string()))?;
    Ok(read
        .iter()
        .map(|p| {
            after
                .get(p.as_bytes())
                .map(|f| String::from_utf8(f.data.clone()).expect("utf-8"))
        })
        .collect())
}

/// The author proposes `patch`; the reviewer approves it. Its id.
fn approved(w: &World, resource: &str, patch: &str) -> String {
    w.approved(resource, patch)
}

/// The concatenated `proposal.diff` of the latest revision.
fn preview(w: &World, pid: &str) -> String {
    let page = w.ok("proposal.diff", json!({"proposal_id": pid}), &w.reviewer);
    assert!(page["next_cursor"].is_null());
    page["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| str_of(&f["diff"]))
        .collect()
}

/// The tree of the workspace's files named `read`.
fn read_all(root: &Path, read: &[&str]) -> Vec<Option<String>> {
    read.iter()
        .map(|p| std::fs::read_to_string(root.join(p)).ok())
        .collect()
}

fn some(texts: &[&str]) -> Vec<Option<String>> {
    texts.iter().map(|t| Some((*t).to_owned())).collect()
}

const TEN: &str = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n";

/// Item 7: a `-U0` hunk is placed by its header (as `git apply
/// --unidiff-zero` reads it), not at the end of the file (as plain `git
/// apply` lands it); a section whose `index` pre-image id names the file
/// must produce its post-image id; a context-free hunk on a file that
/// changed since the diff, or after a hunk found away from its header, is
/// refused; and `proposal.diff` (which `roundtable show` prints) is the
/// changeset that lands, not the submitted text.
#[test]
fn item7_zero_context_hunks_land_where_their_header_says_and_previews_show_what_lands() {
    let base = [("f.txt", TEN)];
    let read = ["f.txt"];
    // One insertion after line 2, made by git with -U0.
    let inserted = "1\n2\nNEW\n3\n4\n5\n6\n7\n8\n9\n10\n";
    let dir = repo(&base);
    commit(dir.path(), &[("f.txt", inserted)], &[]);
    let one = git(dir.path(), &["diff", "-U0", "HEAD~1", "HEAD"]);
    assert!(one.contains("@@ -2,0 +3 @@\n+NEW\n"), "{one}");
    // Plain git lands it after line 10; --unidiff-zero after line 2.
    let at_end = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\nNEW\n";
    assert_eq!(git_apply(&base, &one, &[], &read), Ok(some(&[at_end])));
    assert_eq!(
        git_apply(&base, &one, &["--unidiff-zero"], &read),
        Ok(some(&[inserted]))
    );
    assert_eq!(engine_apply(&base, &one, &read), Ok(some(&[inserted])));

    // Several -U0 hunks (insert, replace, delete, append): the commit's
    // content, as --unidiff-zero makes it; plain git refuses the replace.
    let several = "1\n2\nNEW\n3\n4\n5\nSIX\n7\n8\n10\nEND\n";
    commit(dir.path(), &[("f.txt", several)], &[]);
    let many = git(dir.path(), &["diff", "-U0", "HEAD~2", "HEAD"]);
    assert!(git_apply(&base, &many, &[], &read).is_err(), "{many}");
    assert_eq!(
        git_apply(&base, &many, &["--unidiff-zero"], &read),
        Ok(some(&[several]))
    );
    assert_eq!(engine_apply(&base, &many, &read), Ok(some(&[several])));

    // The file changed since the diff (a line on top): its index line
    // names other content, so the context-free hunks cannot be placed.
    let drifted = [("f.txt", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")];
    let (code, message) = engine_apply(&drifted, &one, &read).expect_err("drifted");
    assert_eq!(code, ErrorCode::PatchDoesNotApply, "{message}");
    assert!(message.contains("without context"), "{message}");
    // Without an index line: a context-free hunk after a hunk found away
    // from its header (the file moved) is refused too.
    let moved = "--- a/f.txt\n+++ b/f.txt\n@@ -2,2 +2,2 @@\n-2\n+two\n 3\n@@ -5 +5 @@\n-5\n+five\n";
    assert_eq!(
        engine_apply(&base, moved, &read),
        Ok(some(&["1\ntwo\n3\n4\nfive\n6\n7\n8\n9\n10\n"]))
    );
    let (code, message) = engine_apply(&drifted, moved, &read).expect_err("moved");
    assert_eq!(code, ErrorCode::PatchDoesNotApply, "{message}");
    assert!(message.contains("earlier hunk"), "{message}");
    // ... and a context-free hunk whose removed lines are not at its
    // header's line is refused, where --unidiff-zero searches for them.
    let elsewhere = "--- a/f.txt\n+++ b/f.txt\n@@ -4 +4 @@\n-5\n+five\n";
    let (code, message) = engine_apply(&base, elsewhere, &read).expect_err("elsewhere");
    assert_eq!(code, ErrorCode::PatchDoesNotApply, "{message}");
    assert!(message.contains("header"), "{message}");

    // A header that lies about where its hunk goes, on a file with a
    // repeated block: git finds the first block and lands the change
    // there silently; roundtable sees the file is the pre-image its index
    // line names and the result is not the post-image, and refuses.
    let blocks = "head\nkey\nold\nend\nmiddle\nmiddle\nkey\nold\nend\ntail\n";
    let second = "head\nkey\nold\nend\nmiddle\nmiddle\nkey\nnew\nend\ntail\n";
    let dir = repo(&[("b.txt", blocks)]);
    commit(dir.path(), &[("b.txt", second)], &[]);
    let honest = git(dir.path(), &["diff", "-U1", "HEAD~1", "HEAD"]);
    assert!(honest.contains("@@ -7,3 +7,3 @@"), "{honest}");
    let lying = honest.replace("@@ -7,3 +7,3 @@", "@@ -2,3 +2,3 @@");
    let first = "head\nkey\nnew\nend\nmiddle\nmiddle\nkey\nold\nend\ntail\n";
    assert_eq!(
        git_apply(&[("b.txt", blocks)], &lying, &[], &["b.txt"]),
        Ok(some(&[first]))
    );
    let (code, message) =
        engine_apply(&[("b.txt", blocks)], &lying, &["b.txt"]).expect_err("lying");
    assert_eq!(code, ErrorCode::PatchDoesNotApply, "{message}");
    assert!(message.contains("post-image"), "{message}");
    assert_eq!(
        engine_apply(&[("b.txt", blocks)], &honest, &["b.txt"]),
        Ok(some(&[second]))
    );

    // Governed: the reviewer's preview shows the insertion after line 2
    // (with the context it lands in), the submitted text is kept as
    // submitted, and the landing is what the preview showed.
    let w = World::new();
    write(w.dir.path(), &base);
    let lying_refused = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "Lie", "summary_md": "x", "patch": lying.replace("b.txt", "f.txt")}),
        &w.author,
        ErrorCode::PatchDoesNotApply,
    );
    drop(lying_refused);
    let pid = approved(&w, "file:f.txt", &one);
    let shown = preview(&w, &pid);
    assert!(shown.contains(" 1\n 2\n+NEW\n 3\n 4\n 5\n"), "{shown}");
    let submitted = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "include_content": true}),
        &w.reviewer,
    );
    assert_eq!(submitted["content"], Value::String(one.clone()));
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(read_all(w.dir.path(), &read), some(&[inserted]));
    // The preview applies (with git) to the base and gives what landed.
    assert_eq!(git_apply(&base, &shown, &[], &read), Ok(some(&[inserted])));
}

/// Item 8: a series (`git log -p --reverse`, a `format-patch` mbox) that
/// modifies a file and then deletes it leaves it deleted; one that
/// modifies a file and then renames it moves the modified content. Plain
/// `git apply` resurrects the deleted file with its intermediate content
/// and exits 0. Swapped renames (one diff) still apply.
#[test]
fn item8_a_series_that_modifies_then_deletes_a_file_leaves_it_deleted() {
    let base = [("f.txt", "a\nb\n"), ("g.txt", "g\n"), ("keep.txt", "k\n")];
    let dir = repo(&base);
    commit(
        dir.path(),
        &[("f.txt", "a\nb\nc\n"), ("g.txt", "g\nG\n")],
        &[],
    );
    git(dir.path(), &["mv", "g.txt", "moved.txt"]);
    commit(dir.path(), &[], &["f.txt"]);
    let series = git(
        dir.path(),
        &[
            "log",
            "-p",
            "--reverse",
            "-M",
            "--format=commit %H%n%n    %s%n",
            "HEAD~2..HEAD",
        ],
    );
    assert!(series.contains("deleted file mode"), "{series}");
    assert!(series.contains("rename from g.txt"), "{series}");
    let read = ["f.txt", "g.txt", "moved.txt", "keep.txt"];
    let truth = vec![
        None,
        None,
        Some("g\nG\n".to_owned()),
        Some("k\n".to_owned()),
    ];
    // What git apply does: f.txt back with its intermediate content.
    let by_git = git_apply(&base, &series, &[], &read).expect("git applies it");
    assert_eq!(by_git[0].as_deref(), Some("a\nb\nc\n"));
    assert_ne!(by_git, truth);
    assert_eq!(engine_apply(&base, &series, &read), Ok(truth.clone()));
    // The same as an mbox from format-patch.
    let mbox = git(
        dir.path(),
        &["format-patch", "-M", "--stdout", "HEAD~2..HEAD"],
    );
    assert_eq!(engine_apply(&base, &mbox, &read), Ok(truth.clone()));

    // Swapped renames in one diff (each reads the original) still apply.
    let swap = "diff --git a/f.txt b/keep.txt\nsimilarity index 100%\nrename from f.txt\nrename to keep.txt\n\
diff --git a/keep.txt b/f.txt\nsimilarity index 100%\nrename from keep.txt\nrename to f.txt\n";
    assert_eq!(
        engine_apply(&base, swap, &["f.txt", "keep.txt"]),
        Ok(some(&["k\n", "a\nb\n"]))
    );
    assert_eq!(
        git_apply(&base, swap, &[], &["f.txt", "keep.txt"]),
        Ok(some(&["k\n", "a\nb\n"]))
    );

    // Governed: the changeset deletes f.txt, the preview says so, and the
    // landing leaves it deleted.
    let w = World::new();
    write(w.dir.path(), &base);
    let pid = approved(&w, "directory:.", &series);
    let revision = w.ok("proposal.get", json!({"proposal_id": pid}), &w.reviewer);
    let ops: BTreeMap<String, String> = revision["revision"]["changeset"]
        .as_array()
        .expect("changeset")
        .iter()
        .map(|f| (str_of(&f["path"]), str_of(&f["operation"])))
        .collect();
    assert_eq!(
        ops.get("f.txt").map(String::as_str),
        Some("delete"),
        "{ops:?}"
    );
    assert_eq!(
        ops.get("moved.txt").map(String::as_str),
        Some("rename"),
        "{ops:?}"
    );
    let shown = preview(&w, &pid);
    assert!(shown.contains("deleted file mode 100644\n"), "{shown}");
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(read_all(w.dir.path(), &read), truth);
}

/// `text` with every line ending in CRLF (a CR already there kept once),
/// as an editor or mail client saves a patch.
fn crlf(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|l| {
            let l = l.strip_suffix('\n').unwrap_or(l);
            format!("{}\r\n", l.strip_suffix('\r').unwrap_or(l))
        })
        .collect()
}

fn set_executable(path: &Path, executable: bool) {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o100 != 0
}

/// Item 9: a git diff saved with CRLF line ends (of files whose lines end
/// in CRLF) is read at its `diff --git`, `index` and `old mode`/`new mode`
/// lines as git reads them, and lands; git itself refuses the mode-only
/// section of it, and applies the rest as roundtable does. The parse
/// renders back byte for byte.
#[test]
fn item9_crlf_saved_git_diffs_are_read_at_their_extended_header_lines() {
    let base = [
        ("f.txt", "a\r\nb\r\nc\r\n"),
        ("e.sh", "x\r\n"),
        ("old.txt", "o1\r\no2\r\no3\r\no4\r\n"),
    ];
    let dir = repo(&base);
    set_executable(&dir.path().join("e.sh"), true);
    git(dir.path(), &["commit", "-q", "-am", "exec"]);
    write(
        dir.path(),
        &[("f.txt", "a\r\nB\r\nc\r\n"), ("n.txt", "new\r\n")],
    );
    set_executable(&dir.path().join("e.sh"), false);
    git(dir.path(), &["mv", "old.txt", "new.txt"]);
    write(dir.path(), &[("new.txt", "o1\r\no2\r\no3\r\no4\r\no5\r\n")]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "change"]);
    let lf = git(dir.path(), &["diff", "-M", "HEAD~1", "HEAD"]);
    assert!(lf.contains("old mode 100755\nnew mode 100644\n"), "{lf}");
    assert!(lf.contains("rename from old.txt\n"), "{lf}");
    let saved = crlf(&lf);
    assert!(saved.contains("index "), "{saved}");

    // git refuses the whole CRLF patch at its mode-only section ...
    let read = ["f.txt", "old.txt", "new.txt", "n.txt"];
    let truth = vec![
        Some("a\r\nB\r\nc\r\n".to_owned()),
        None,
        Some("o1\r\no2\r\no3\r\no4\r\no5\r\n".to_owned()),
        Some("new\r\n".to_owned()),
    ];
    let by_git = git_apply(&base, &saved, &[], &read).expect_err("git refuses");
    assert!(by_git.contains("lacks filename information"), "{by_git}");
    // ... and applies the rest, as roundtable applies all of it.
    let content = crlf(&git(
        dir.path(),
        &[
            "diff", "-M", "HEAD~1", "HEAD", "--", "f.txt", "old.txt", "new.txt", "n.txt",
        ],
    ));
    assert_eq!(git_apply(&base, &content, &[], &read), Ok(truth.clone()));
    assert_eq!(engine_apply(&base, &content, &read), Ok(truth.clone()));
    let parsed = diff::parse(saved.as_bytes(), &ParseOptions::default()).expect("parses");
    assert_eq!(String::from_utf8(parsed.render()).expect("utf-8"), saved);
    let mut t = tree(&base);
    t.get_mut(b"e.sh".as_slice()).expect("e.sh").executable = true;
    let after = diff::apply_in_memory(&parsed, &t).expect("applies");
    assert!(!after[b"e.sh".as_slice()].executable);
    assert_eq!(after[b"n.txt".as_slice()].data, b"new\r\n");
    // A plain (`diff -u`) CRLF diff was accepted before and still is.
    let plain = crlf("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    assert_eq!(
        engine_apply(&base, &plain, &["f.txt"]),
        Ok(some(&["a\r\nB\r\nc\r\n"]))
    );

    // Governed: proposed, approved, landed.
    let w = World::new();
    write(w.dir.path(), &base);
    set_executable(&w.dir.path().join("e.sh"), true);
    let pid = approved(&w, "directory:.", &saved);
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(read_all(w.dir.path(), &read), truth);
    assert!(!is_executable(&w.dir.path().join("e.sh")));
}

/// Item 9: `strip` on `proposal.create` and `proposal.attach_patch` reads
/// a `git diff --no-prefix` diff (strip 0) and lands it where it belongs;
/// at the default strip 1, a creation whose name only makes sense at
/// strip 0 is refused (`invalid_argument`, `suggested_strip`), where `git
/// apply` creates the file one directory up and exits 0.
#[test]
fn item9_strip_reads_no_prefix_diffs_and_refuses_names_meant_for_another_level() {
    let base = [("tests/cli-tests/a.txt", "a\n"), ("README", "r\n")];
    let dir = repo(&base);
    commit(
        dir.path(),
        &[
            ("tests/cli-tests/a.txt", "A\n"),
            ("tests/cli-tests/new.txt", "new\n"),
        ],
        &[],
    );
    let both = git(dir.path(), &["diff", "--no-prefix", "HEAD~1", "HEAD"]);
    let creation = git(
        dir.path(),
        &[
            "diff",
            "--no-prefix",
            "HEAD~1",
            "HEAD",
            "--",
            "tests/cli-tests/new.txt",
        ],
    );
    assert!(
        creation.contains("+++ tests/cli-tests/new.txt"),
        "{creation}"
    );
    // git lands the creation one directory up, silently; -p0 where it
    // belongs.
    let wrong = git_apply(
        &base,
        &creation,
        &[],
        &["cli-tests/new.txt", "tests/cli-tests/new.txt"],
    );
    assert_eq!(wrong, Ok(vec![Some("new\n".to_owned()), None]));
    let right = git_apply(&base, &creation, &["-p0"], &["tests/cli-tests/new.txt"]);
    assert_eq!(right, Ok(some(&["new\n"])));

    let w = World::new();
    write(w.dir.path(), &base);
    let create = |patch: &str, strip: Option<u64>| {
        let mut args =
            json!({"task_id": "t1", "title": "No prefix", "summary_md": "x", "patch": patch});
        if let Some(s) = strip {
            args["strip"] = json!(s);
        }
        args
    };
    // At strip 1: the creation is refused, naming the level it fits.
    for patch in [&creation, &both] {
        let e = w.refused(
            "proposal.create",
            create(patch, None),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(e.details()["field"], "strip", "{e}");
        assert_eq!(e.details()["suggested_strip"], 0, "{e}");
        assert!(!w.dir.path().join("cli-tests").exists());
    }
    // A plain diff's creation too (no `diff --git` line to go by: the
    // directory it names exists only one level up).
    let plain = "--- /dev/null\n+++ tests/cli-tests/plain.txt\n@@ -0,0 +1 @@\n+p\n";
    let e = w.refused(
        "proposal.create",
        create(plain, None),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["suggested_strip"], 0, "{e}");
    // A creation in a new directory at strip 1 is not a mistake.
    w.ok(
        "proposal.create",
        create(
            "--- /dev/null\n+++ b/fresh/dir/x.txt\n@@ -0,0 +1 @@\n+x\n",
            None,
        ),
        &w.author,
    );
    // strip is for a unified diff, 0 to 16.
    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "x", "summary_md": "x", "edit_plan": super::tools::edit_plan(), "strip": 0}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "strip");
    w.refused(
        "proposal.create",
        create(&both, Some(17)),
        &w.author,
        ErrorCode::InvalidArgument,
    );

    // At strip 0: proposed, the preview names the real paths, revised at
    // strip 0 too, landed where the files belong.
    w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:tests", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let pid =
        str_of(&w.ok("proposal.create", create(&creation, Some(0)), &w.author)["proposal"]["id"]);
    let shown = preview(&w, &pid);
    assert!(
        shown.starts_with("diff --git a/tests/cli-tests/new.txt b/tests/cli-tests/new.txt\n"),
        "{shown}"
    );
    w.ok(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": both, "strip": 0}),
        &w.author,
    );
    let files = w.ok("proposal.files", json!({"proposal_id": pid}), &w.reviewer);
    let paths: Vec<String> = files["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| str_of(&f["new_path"]))
        .collect();
    assert_eq!(paths, ["tests/cli-tests/a.txt", "tests/cli-tests/new.txt"]);
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 2, "vote": "approve"}),
        &w.reviewer,
    );
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 2}),
        &w.host,
    );
    assert_eq!(
        read_all(
            w.dir.path(),
            &["tests/cli-tests/a.txt", "tests/cli-tests/new.txt"]
        ),
        some(&["A\n", "new\n"])
    );
    assert!(!w.dir.path().join("cli-tests").exists());
}

/// A World on a git repository holding `files` (committed), with `config`
/// set in the repository's own configuration and `files` checked out
/// again under it.
fn repo_world(files: &[(&str, &str)], config: &[(&str, &str)]) -> World {
    let dir = repo(files);
    let d = dir.path();
    let mut overrides = Vec::new();
    for (key, value) in config {
        git(d, &["config", key, value]);
        overrides.push("-c".to_owned());
        overrides.push(format!("{key}={value}"));
    }
    for (path, _) in files {
        std::fs::remove_file(d.join(path)).expect("rm");
        let mut args: Vec<&str> = overrides.iter().map(String::as_str).collect();
        args.extend(["checkout", "--", path]);
        git(d, &args);
    }
    World::with(dir, roundtable::EngineOptions::default())
}

/// Files, repository configuration, and the rule the refusal should name.
type EolCase<'a> = (
    &'a [(&'a str, &'a str)],
    &'a [(&'a str, &'a str)],
    Option<&'a str>,
);

/// Item 9: in a working tree where git converts a path's line ends
/// (`.gitattributes` `eol`/`text`, or `core.autocrlf`), a diff that does
/// not apply because of them is refused with the rule named (message and
/// `eol_rule`/`eol_conversion` details); `git apply` converts the file
/// instead. Without a rule, the error is the plain one.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item9_line_ending_rules_are_named_when_a_patch_does_not_apply() {
    let lf_diff =
        "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";
    let files = [
        ("f.txt", "a\nb\nc\n"),
        (".gitattributes", "*.txt eol=crlf\n"),
    ];
    // git applies the LF diff to the CRLF checkout (converting it).
    let dir = repo(&files);
    std::fs::remove_file(dir.path().join("f.txt")).expect("rm");
    git(dir.path(), &["checkout", "--", "f.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).expect("read"),
        "a\r\nb\r\nc\r\n"
    );
    std::fs::write(dir.path().join(".git/p.diff"), lf_diff).expect("write");
    git(dir.path(), &["apply", ".git/p.diff"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f.txt")).expect("read"),
        "a\r\nB\r\nc\r\n"
    );

    let propose = |_: &World, patch: &str| json!({"task_id": "t1", "title": "Eol", "summary_md": "x", "patch": patch});
    let cases: [EolCase<'_>; 4] = [
        (&files, &[], Some("eol=crlf (from .gitattributes)")),
        (
            &[("f.txt", "a\nb\nc\n")],
            &[("core.autocrlf", "true")],
            Some("core.autocrlf=true"),
        ),
        (
            &[("f.txt", "a\nb\nc\n"), (".gitattributes", "*.txt text\n")],
            &[("core.eol", "crlf")],
            Some("text (from .gitattributes), core.eol=crlf"),
        ),
        (
            &[
                ("f.txt", "a\r\nb\r\nc\r\n"),
                (".gitattributes", "*.txt -text\n"),
            ],
            &[("core.autocrlf", "true")],
            None,
        ),
    ];
    for (files, config, rule) in cases {
        let w = repo_world(files, config);
        assert_eq!(
            std::fs::read_to_string(w.dir.path().join("f.txt")).expect("read"),
            "a\r\nb\r\nc\r\n",
            "{config:?}"
        );
        let e = w.refused(
            "proposal.create",
            propose(&w, lf_diff),
            &w.author,
            ErrorCode::PatchDoesNotApply,
        );
        assert_eq!(e.details()["path"], "f.txt");
        match rule {
            Some(rule) => {
                assert_eq!(e.details()["eol_rule"], rule, "{e}");
                assert!(e.message().contains(rule), "{e}");
                assert!(
                    str_of(&e.details()["eol_conversion"]).contains("CRLF"),
                    "{e}"
                );
            }
            None => assert!(e.details().get("eol_rule").is_none(), "{e}"),
        }
        // The diff with the working tree's line ends is accepted.
        w.ok("proposal.create", propose(&w, &crlf(lf_diff)), &w.author);
        git(w.dir.path(), &["fsck", "--strict", "--no-progress"]);
    }
    // No repository, no rule: the plain error.
    let w = World::new();
    write(w.dir.path(), &[("f.txt", "a\r\nb\r\nc\r\n")]);
    let e = w.refused(
        "proposal.create",
        propose(&w, lf_diff),
        &w.author,
        ErrorCode::PatchDoesNotApply,
    );
    assert!(e.details().get("eol_rule").is_none(), "{e}");
}
