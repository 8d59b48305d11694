//! End-to-end tests of the `roundtable` binary: output shapes, exit codes,
//! and that every refusal leaves the directory exactly as it was.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

fn roundtable(args: &[&str], stdin: Option<&[u8]>) -> (i32, Value, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_roundtable"));
    cmd.args(args);
    let out = if let Some(input) = stdin {
        use std::io::Write as _;
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("writes");
        child.wait_with_output().expect("finishes")
    } else {
        cmd.output().expect("runs")
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        json,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every regular file and symlink under `root`: bytes (or link target) and mode.
fn snapshot(root: &Path) -> BTreeMap<String, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("readable") {
            let path = entry.expect("entry").path();
            let meta = fs::symlink_metadata(&path).expect("stat");
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .display()
                .to_string();
            if meta.file_type().is_symlink() {
                out.insert(
                    rel,
                    (
                        fs::read_link(&path)
                            .expect("link")
                            .display()
                            .to_string()
                            .into_bytes(),
                        0o120000,
                    ),
                );
            } else if meta.is_dir() {
                out.insert(format!("{rel}/"), (Vec::new(), meta.permissions().mode()));
                stack.push(path);
            } else {
                out.insert(
                    rel,
                    (fs::read(&path).expect("read"), meta.permissions().mode()),
                );
            }
        }
    }
    out
}

fn scratch(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (p, c) in files {
        let at = dir.path().join(p);
        fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        fs::write(at, c).expect("write");
    }
    dir
}

fn write_patch(dir: &Path, text: &str) -> String {
    let p = dir.join("change.diff");
    fs::write(&p, text).expect("write patch");
    p.display().to_string()
}

const MODIFY_AND_CREATE: &str = "\
diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,2 @@
 one
-two
+TWO
diff --git a/sub/new.sh b/sub/new.sh
new file mode 100755
--- /dev/null
+++ b/sub/new.sh
@@ -0,0 +1 @@
+echo hi
";

#[test]
fn parse_prints_the_documented_shape() {
    let patches = tempfile::tempdir().expect("tempdir");
    let file = write_patch(patches.path(), MODIFY_AND_CREATE);
    let (code, json, _) = roundtable(&["patch", "parse", &file], None);
    assert_eq!(code, 0);
    let files = json["files"].as_array().expect("files");
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["status"], "modified");
    assert_eq!(files[0]["old_path"], "a.txt");
    assert_eq!(
        files[0]["hunks"][0],
        serde_json::json!({"old_start": 1, "old_lines": 2, "new_start": 1, "new_lines": 2})
    );
    assert_eq!(
        (
            files[0]["added_lines"].as_u64(),
            files[0]["removed_lines"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(files[1]["status"], "added");
    assert_eq!(files[1]["old_path"], Value::Null);
    assert_eq!(files[1]["new_mode"], "100755");
    assert_eq!(files[1]["binary"], false);
    // Standard input works too.
    let (code, json, _) = roundtable(&["patch", "parse", "-"], Some(MODIFY_AND_CREATE.as_bytes()));
    assert_eq!((code, json["files"].as_array().map(Vec::len)), (0, Some(2)));
}

#[test]
fn malformed_patch_is_a_json_error_with_the_line() {
    let (code, json, _) = roundtable(
        &["patch", "parse", "-"],
        Some(b"--- a/x\n+++ b/x\n@@ -1,3 +1 @@\n-a\n+b\n"),
    );
    assert_eq!(code, 1);
    assert_eq!(json["error"]["code"], "invalid_patch");
    assert_eq!(json["error"]["details"]["line"], 6);
    assert!(
        json["error"]["details"]["expected"]
            .as_str()
            .is_some_and(|e| e.contains("2 more old")),
        "{json}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let (code, _, stderr) = roundtable(&["patch", "apply", "x.diff"], None);
    assert_eq!(code, 2, "missing --root");
    assert!(stderr.contains("--root"));
    let (code, _, _) = roundtable(&["patch", "frobnicate"], None);
    assert_eq!(code, 2);
}

#[test]
fn apply_and_check() {
    let root = scratch(&[("a.txt", "one\ntwo\n")]);
    let patches = tempfile::tempdir().expect("tempdir");
    let file = write_patch(patches.path(), MODIFY_AND_CREATE);
    let before = snapshot(root.path());
    let root_arg = root.path().display().to_string();

    let (code, json, _) = roundtable(
        &["patch", "apply", "--root", &root_arg, "--check", &file],
        None,
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["check"], true);
    assert_eq!(json["changes"].as_array().map(Vec::len), Some(2));
    assert_eq!(snapshot(root.path()), before, "--check writes nothing");

    let (code, json, _) = roundtable(&["patch", "apply", "--root", &root_arg, &file], None);
    assert_eq!(code, 0, "{json}");
    assert_eq!(
        fs::read_to_string(root.path().join("a.txt")).expect("a"),
        "one\nTWO\n"
    );
    let script = root.path().join("sub/new.sh");
    assert_eq!(fs::read_to_string(&script).expect("new"), "echo hi\n");
    assert_eq!(
        fs::metadata(&script).expect("meta").permissions().mode() & 0o111,
        0o111
    );
    // No staging or backup files are left behind.
    assert!(
        snapshot(root.path()).keys().all(|k| !k.contains(".rt-")),
        "{:?}",
        snapshot(root.path()).keys()
    );

    // Applying again is refused (the file to create exists) and changes nothing.
    let after = snapshot(root.path());
    let (code, json, _) = roundtable(&["patch", "apply", "--root", &root_arg, &file], None);
    assert_eq!(code, 1);
    assert_eq!(json["error"]["code"], "patch_does_not_apply");
    assert_eq!(snapshot(root.path()), after);
}

#[test]
fn a_failing_hunk_in_a_later_file_leaves_every_file_untouched() {
    let root = scratch(&[
        ("a.txt", "one\ntwo\n"),
        ("b.txt", "changed by someone else\n"),
    ]);
    let patches = tempfile::tempdir().expect("tempdir");
    let file = write_patch(
        patches.path(),
        &format!("{MODIFY_AND_CREATE}--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-original\n+edited\n"),
    );
    let before = snapshot(root.path());
    let (code, json, _) = roundtable(
        &[
            "patch",
            "apply",
            "--root",
            &root.path().display().to_string(),
            &file,
        ],
        None,
    );
    assert_eq!(code, 1);
    assert_eq!(json["error"]["code"], "patch_does_not_apply");
    assert_eq!(json["error"]["details"]["path"], "b.txt");
    assert_eq!(json["error"]["details"]["hunk"], 1);
    assert_eq!(snapshot(root.path()), before);
}

#[test]
fn escaping_paths_are_refused_before_anything_is_read() {
    let root = scratch(&[("a.txt", "one\n"), ("real/f", "x\n")]);
    std::os::unix::fs::symlink(root.path().join("real"), root.path().join("linkdir"))
        .expect("symlink");
    std::os::unix::fs::symlink("a.txt", root.path().join("linkfile")).expect("symlink");
    let outside = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink("/", root.path().join("slash")).expect("symlink");
    let cases = [
        ("../outside.txt", "path_escape"),
        ("..", "path_escape"),
        ("sub/..", "path_escape"),
        ("sub/../a.txt", "path_escape"),
        ("sub/../../outside.txt", "path_escape"),
        (".git/config", "path_escape"),
        ("x/.roundtable/store", "path_escape"),
        ("linkdir/f", "path_escape"),
        ("linkfile", "path_escape"),
        ("slash/etc/hostname", "path_escape"),
        // Repeated slashes are squashed, as git does: `a//b` is `a/b`,
        // which does not exist here.
        ("a//b", "patch_does_not_apply"),
        ("\"nul\\000byte\"", "invalid_path"),
        // A directory where a file is expected.
        ("real", "patch_does_not_apply"),
    ];
    for (path, want) in cases {
        let before = snapshot(root.path());
        let text = if let Some(quoted) = path.strip_prefix('"') {
            format!("--- \"a/{quoted}\n+++ \"b/{quoted}\n@@ -1 +1 @@\n-x\n+y\n")
        } else {
            format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x\n+y\n")
        };
        let file = write_patch(outside.path(), &text);
        let (code, json, _) = roundtable(
            &[
                "patch",
                "apply",
                "--root",
                &root.path().display().to_string(),
                &file,
            ],
            None,
        );
        assert_eq!(
            (code, json["error"]["code"].as_str()),
            (1, Some(want)),
            "{path}: {json}"
        );
        assert_eq!(snapshot(root.path()), before, "{path}");
    }
    // An absolute path is refused with -p0 as well.
    let file = write_patch(
        outside.path(),
        "--- /etc/hostname\n+++ /etc/hostname\n@@ -1 +1 @@\n-x\n+y\n",
    );
    let (code, json, _) = roundtable(
        &[
            "patch",
            "apply",
            "--root",
            &root.path().display().to_string(),
            "-p0",
            &file,
        ],
        None,
    );
    assert_eq!(
        (code, json["error"]["code"].as_str()),
        (1, Some("path_escape")),
        "{json}"
    );
}

#[test]
fn demo_runs_every_step() {
    let (code, json, _) = roundtable(&["demo", "--json"], None);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["ok"], true);
    let steps: Vec<&str> = json["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["step"].as_str())
        .collect();
    assert_eq!(
        steps,
        [
            "register", "claim", "propose", "validate", "revise", "review", "approve", "apply",
            "show", "rollback", "audit"
        ]
    );
    // The first validation fails on coverage (a hunk outside the claimed
    // symbol); the repaired revision is covered.
    let first = &json["steps"][3]["report"];
    assert_eq!(first["valid"], false);
    let status = |report: &Value, name: &str| {
        report["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .find(|s| s["name"] == name)
            .map(|s| s["status"].clone())
    };
    assert_eq!(status(first, "coverage"), Some(json!("failed")));
    assert_eq!(
        status(&json["steps"][4]["report"], "coverage"),
        Some(json!("passed"))
    );
    assert_eq!(json["steps"][6]["report"]["valid"], true);
    assert_eq!(json["steps"][7]["transaction"]["status"], "applied");
    assert_eq!(json["steps"][9]["transaction"]["kind"], "rollback");
}

#[test]
fn demo_git_lands_the_change_and_its_revert_as_commits_and_log_shows_their_trailers() {
    let (code, json, _) = roundtable(&["demo", "--git", "--json", "--keep"], None);
    assert_eq!(code, 0, "{json}");
    assert_eq!(json["landing_git"], true);
    let steps: Vec<&str> = json["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["step"].as_str())
        .collect();
    assert_eq!(
        steps,
        [
            "register", "claim", "propose", "validate", "revise", "review", "approve", "apply",
            "show", "revert", "log", "audit"
        ]
    );
    let commits = json["steps"][10]["commits"].as_array().expect("commits");
    assert_eq!(commits.len(), 2);
    let root = json["root"].as_str().expect("kept").to_owned();
    // `roundtable log` reads the same commits back, newest (the revert)
    // first, with the trailers naming what governed each.
    let (code, log, _) = roundtable(&["log", "--root", &root, "--json"], None);
    assert_eq!(code, 0, "{log}");
    assert_eq!(&log, &json["steps"][10]["commits"]);
    let keys: Vec<&str> = log[1]["trailers"]
        .as_array()
        .expect("trailers")
        .iter()
        .filter_map(|t| t[0].as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "Roundtable-Proposal",
            "Roundtable-Revision",
            "Roundtable-Transaction",
            "Roundtable-Chain",
            "Approved-by",
            "Approved-by",
            "Security-Reviewed-by",
            "Human-Approved-by"
        ]
    );
    assert!(log[0]["summary"]
        .as_str()
        .is_some_and(|s| s.starts_with("Revert ")));
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&root)
        .output()
        .expect("git status");
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    std::fs::remove_dir_all(&root).expect("remove the kept repository");
}

#[test]
fn blame_names_the_proposal_and_agent_of_landed_lines_and_marks_the_others() {
    let (code, demo, _) = roundtable(&["demo", "--git", "--json", "--keep"], None);
    assert_eq!(code, 0, "{demo}");
    let root = demo["root"].as_str().expect("kept").to_owned();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8")
    };
    // A person's plain commit on top: its line is not roundtable's.
    let lib = Path::new(&root).join("src/lib.rs");
    let text = fs::read_to_string(&lib).expect("read");
    fs::write(&lib, format!("{text}// by hand\n")).expect("write");
    git(&["add", "src/lib.rs"]);
    git(&[
        "-c",
        "user.name=Pat",
        "-c",
        "user.email=pat@example.com",
        "commit",
        "-q",
        "-m",
        "By hand",
    ]);
    let (code, json, _) = roundtable(&["blame", "src/lib.rs", "--root", &root, "--json"], None);
    assert_eq!(code, 0, "{json}");
    let lines = text.lines().count() + 1;
    assert_eq!(json["line_count"], lines);
    let governed: Vec<&Value> = json["commits"]
        .as_array()
        .expect("commits")
        .iter()
        .filter(|c| c["governed"] == true)
        .collect();
    assert_eq!(governed.len(), 1, "{json:#}");
    let landing = &governed[0]["landing"];
    assert_eq!(landing["author_agent"], "alice");
    let kinds: Vec<&str> = landing["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["vote", "security_review", "human_approval"]);
    let last = json["ranges"]
        .as_array()
        .and_then(|r| r.last())
        .expect("a range");
    assert_eq!(last["governed"], false);
    assert_eq!(last["lines"], json!(["// by hand"]));
    // Readable: one line per source line, the landed ones naming the
    // proposal and alice, the others marked and naming git's author.
    let out = Command::new(env!("CARGO_BIN_EXE_roundtable"))
        .args(["blame", "src/lib.rs", "--root", &root])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), lines, "{text}");
    let pid = landing["proposal_id"].as_str().expect("pid");
    assert!(
        rows.iter()
            .any(|r| r.starts_with(' ') && r.contains(pid) && r.contains("alice")),
        "{text}"
    );
    assert!(rows[lines - 1].starts_with('!'), "{text}");
    assert!(
        rows[lines - 1].contains("not roundtable") && rows[lines - 1].contains("git:Pat"),
        "{text}"
    );
    assert!(
        rows[lines - 1].ends_with(&format!("{lines}) // by hand")),
        "{text}"
    );
    // A path that is not at the tip: refused (exit 1, not_found), nothing
    // changed.
    let before = snapshot(Path::new(&root));
    let (code, err, _) = roundtable(&["blame", "nope.rs", "--root", &root, "--json"], None);
    assert_eq!(code, 1);
    assert_eq!(err["error"]["code"], "not_found", "{err}");
    assert_eq!(snapshot(Path::new(&root)), before);
    fs::remove_dir_all(&root).expect("remove the kept repository");
}

#[test]
fn log_in_files_mode_says_nothing_is_committed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf-8");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roundtable"))
        .args(["log", "--root", root])
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("landing mode is files"));
}

#[test]
fn demo_prints_readable_steps() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roundtable"))
        .arg("demo")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("roundtable demo: one governed change in "),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(" 4. validate  not valid")),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("10. rollback ")),
        "{text}"
    );
    assert_eq!(lines.last(), Some(&"ok: every step checked"), "{text}");
}

/// `blob:sha256:` of `data`, computed by `sha256sum`, independently of the
/// library under test.
fn digest(data: &str) -> String {
    use std::fmt::Write as _;
    let out = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn();
    let mut child = out.expect("sha256sum runs");
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(data.as_bytes())
            .expect("writes");
    }
    let output = child.wait_with_output().expect("finishes");
    let hex = String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string();
    let mut s = String::new();
    write!(s, "blob:sha256:{hex}").expect("formats");
    s
}

#[test]
fn edit_apply_applies_plans_and_refuses_stale_ones() {
    let root = scratch(&[("src/a.txt", "héllo wörld\n"), ("old.txt", "o\n")]);
    let plans = tempfile::tempdir().expect("tempdir");
    let plan = serde_json::json!({
        "status": "complete",
        "documentChanges": [
            {"path": "src/a.txt", "kind": "modify",
             "precondition": {"expectedDigest": digest("héllo wörld\n")},
             "edits": [{"range": {"start": {"line": 0, "char": 6}, "end": {"line": 0, "char": 11}},
                        "coordinateSystem": "codepoint", "newText": "there"}]},
            {"path": "old.txt", "kind": "rename", "to": "new.txt",
             "precondition": {"expectedDigest": digest("o\n")}}
        ]
    });
    let file = plans.path().join("plan.json");
    fs::write(&file, plan.to_string()).expect("write plan");
    let file = file.display().to_string();
    let root_arg = root.path().display().to_string();
    let before = snapshot(root.path());

    let (code, json, _) = roundtable(
        &["edit", "apply", "--root", &root_arg, "--check", &file],
        None,
    );
    assert_eq!(code, 0, "{json}");
    assert_eq!(snapshot(root.path()), before, "--check writes nothing");

    let (code, json, _) = roundtable(&["edit", "apply", "--root", &root_arg, &file], None);
    assert_eq!(code, 0, "{json}");
    assert_eq!(
        fs::read_to_string(root.path().join("src/a.txt")).expect("a"),
        "héllo there\n"
    );
    assert_eq!(
        fs::read_to_string(root.path().join("new.txt")).expect("renamed"),
        "o\n"
    );
    assert!(!root.path().join("old.txt").exists());

    // The same plan again: its preconditions no longer hold.
    let after = snapshot(root.path());
    let (code, json, _) = roundtable(&["edit", "apply", "--root", &root_arg, &file], None);
    assert_eq!(code, 1);
    assert_eq!(json["error"]["code"], "precondition_failed", "{json}");
    assert_eq!(json["error"]["details"]["path"], "src/a.txt");
    assert_eq!(
        json["error"]["details"]["expected"],
        digest("héllo wörld\n")
    );
    assert_eq!(json["error"]["details"]["actual"], digest("héllo there\n"));
    assert_eq!(snapshot(root.path()), after);

    // Escapes in a plan are refused before anything is read.
    for (path, code_want) in [
        ("../x", "path_escape"),
        (".git/config", "path_escape"),
        ("linkdir/f", "path_escape"),
    ] {
        if path == "linkdir/f" {
            std::os::unix::fs::symlink(root.path().join("src"), root.path().join("linkdir"))
                .expect("symlink");
        }
        let bad = serde_json::json!({"status": "complete", "documentChanges": [
            {"path": path, "kind": "create", "precondition": {"expectedAbsence": true},
             "edits": [{"range": {"start": {"line": 0, "char": 0}, "end": {"line": 0, "char": 0}}, "coordinateSystem": "utf8", "newText": "x"}]}]});
        let f = plans.path().join("bad.json");
        fs::write(&f, bad.to_string()).expect("write");
        let snap = snapshot(root.path());
        let (code, json, _) = roundtable(
            &[
                "edit",
                "apply",
                "--root",
                &root_arg,
                &f.display().to_string(),
            ],
            None,
        );
        assert_eq!(
            (code, json["error"]["code"].as_str()),
            (1, Some(code_want)),
            "{path}: {json}"
        );
        assert_eq!(snapshot(root.path()), snap);
    }
}

#[test]
fn state_prints_hash_head_and_count_and_ignores_touch() {
    let root = scratch(&[("a", "1\n"), ("d/b", "2\n")]);
    let root_arg = root.path().display().to_string();
    let (code, first, _) = roundtable(&["state", "--root", &root_arg], None);
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["files"], 2);
    assert_eq!(first["git_head"], Value::Null);
    assert!(
        first["state"]
            .as_str()
            .is_some_and(|s| s.starts_with("state:sha256:")),
        "{first}"
    );
    // Touching a file changes nothing; changing a byte changes the state.
    let f = fs::File::options()
        .append(true)
        .open(root.path().join("a"))
        .expect("open");
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .expect("touch");
    let (_, touched, _) = roundtable(&["state", "--root", &root_arg], None);
    assert_eq!(touched["state"], first["state"]);
    fs::write(root.path().join("a"), "1!\n").expect("write");
    let (_, changed, _) = roundtable(&["state", "--root", &root_arg], None);
    assert_ne!(changed["state"], first["state"]);
    let (code, json, _) = roundtable(&["state", "--root", "/nonexistent/root"], None);
    assert_eq!(code, 1, "{json}");
}

/// Lay out a fixture's `files` (`{path: {base64, executable}}`) in a fresh
/// directory.
fn fixture_tree(files: &Value) -> tempfile::TempDir {
    use base64::Engine as _;
    let dir = tempfile::tempdir().expect("tempdir");
    for (path, file) in files.as_object().expect("files is an object") {
        let at = dir.path().join(path);
        fs::create_dir_all(at.parent().expect("parent")).expect("mkdir");
        let data = base64::engine::general_purpose::STANDARD
            .decode(file["base64"].as_str().expect("base64"))
            .expect("valid base64");
        fs::write(&at, data).expect("write");
        let mode = if file["executable"] == true {
            0o755
        } else {
            0o644
        };
        fs::set_permissions(&at, fs::Permissions::from_mode(mode)).expect("chmod");
    }
    dir
}

fn fixture_cases(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/cases/edit")
        .join(name);
    let text = fs::read_to_string(&path).expect("fixture file");
    let all: Value = serde_json::from_str(&text).expect("fixture JSON");
    let cases = all["cases"].as_array().expect("cases").clone();
    assert!(!cases.is_empty(), "{name} has no cases");
    cases
}

fn write_plan(dir: &Path, case: &Value) -> String {
    let file = dir.join("plan.json");
    match case.get("plan_text") {
        Some(text) => fs::write(&file, text.as_str().expect("plan_text is a string")),
        None => fs::write(&file, case["plan"].to_string()),
    }
    .expect("write plan");
    file.display().to_string()
}

/// Every refusal of the shared edit-plan fixtures, through the CLI on a
/// real directory: the documented code, and the tree byte-identical after.
#[test]
fn every_edit_plan_refusal_leaves_the_tree_as_it_was() {
    let plans = tempfile::tempdir().expect("tempdir");
    for case in fixture_cases("refusals.json") {
        let name = case["name"].as_str().unwrap_or("?");
        let root = fixture_tree(&case["files"]);
        let plan = write_plan(plans.path(), &case);
        let before = snapshot(root.path());
        for check in [true, false] {
            let root_arg = root.path().display().to_string();
            let mut args = vec!["edit", "apply", "--root", root_arg.as_str()];
            if check {
                args.push("--check");
            }
            args.push(&plan);
            let (code, json, _) = roundtable(&args, None);
            let want = &case["expect"]["error"];
            assert_eq!(code, 1, "{name}: {json}");
            assert_eq!(json["error"]["code"], want["code"], "{name}: {json}");
            let needle = want["message_contains"].as_str().unwrap_or_default();
            assert!(
                json["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(needle)),
                "{name}: {json}"
            );
            assert_eq!(snapshot(root.path()), before, "{name}: the tree changed");
        }
    }
}

/// The fixtures' successful plans, applied through the CLI: each touched
/// path ends up with exactly the expected bytes and mode, or is gone.
#[test]
fn edit_plan_fixtures_apply_on_disk() {
    use base64::Engine as _;
    let plans = tempfile::tempdir().expect("tempdir");
    for case in fixture_cases("changesets.json") {
        let name = case["name"].as_str().unwrap_or("?");
        let root = fixture_tree(&case["files"]);
        let plan = write_plan(plans.path(), &case);
        let (code, json, _) = roundtable(
            &[
                "edit",
                "apply",
                "--root",
                &root.path().display().to_string(),
                &plan,
            ],
            None,
        );
        assert_eq!(code, 0, "{name}: {json}");
        for change in case["expect"]["changeset"].as_array().expect("changeset") {
            let at = root.path().join(change["path"].as_str().expect("path"));
            match change["after"].as_object() {
                None => assert!(!at.exists(), "{name}: {} should be gone", at.display()),
                Some(after) => {
                    let want = match after.get("text") {
                        Some(t) => t.as_str().expect("text").as_bytes().to_vec(),
                        None => base64::engine::general_purpose::STANDARD
                            .decode(after["base64"].as_str().expect("base64"))
                            .expect("valid base64"),
                    };
                    assert_eq!(
                        fs::read(&at).expect("written"),
                        want,
                        "{name}: {}",
                        at.display()
                    );
                    let exec = fs::metadata(&at).expect("meta").permissions().mode() & 0o111 != 0;
                    assert_eq!(
                        exec,
                        after["executable"] == true,
                        "{name}: mode of {}",
                        at.display()
                    );
                }
            }
        }
    }
}
