//! Ignored files stay out (issue 16, item 7): the workspace state and
//! directory claims follow git's ignore rules and the policy's
//! `[workspace] ignore` list, while a patch may still touch an ignored
//! path by name.

use super::tools::{str_of, World};
use serde_json::{json, Value};

fn write(w: &World, rel: &str, body: &str) {
    let path = w.dir.path().join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, body).expect("write");
}

fn claims_stage(report: &Value) -> &Value {
    report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == "claims")
        .expect("a claims stage")
}

/// A reviewed, approved proposal by the author with `patch`; its id.
fn approved(w: &World, patch: &str) -> String {
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    pid
}

const PKG_PATCH: &str = "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";

/// The host's repro: a directory claim on `pkg/` stays fresh when
/// `pkg/__pycache__/x.pyc` appears and `__pycache__/` is in `.gitignore`.
#[test]
fn a_directory_claim_is_not_stale_when_an_ignored_file_appears_under_it() {
    let w = World::new();
    write(&w, ".gitignore", "__pycache__/\n");
    write(&w, "pkg/mod.py", "x = 1\n");
    let claim = w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:pkg", "type": "write", "ttl_s": 600}),
        &w.author,
    )["claim"]
        .clone();
    let pid = approved(&w, PKG_PATCH);
    // Running the tests leaves bytecode behind.
    write(&w, "pkg/__pycache__/mod.cpython-312.pyc", "\u{0}bytecode");
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.author);
    assert_eq!(claims_stage(&report)["status"], "passed", "{report:#}");
    assert_eq!(report["valid"], true, "{report:#}");
    // A file that is not ignored still makes the claim stale.
    write(&w, "pkg/other.py", "y = 1\n");
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.author);
    let stage = claims_stage(&report);
    assert_eq!(stage["status"], "failed", "{report:#}");
    let stale: Vec<&Value> = stage["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter(|r| r["code"] == "stale_claim")
        .collect();
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["claim_id"], claim["id"]);
}

// ---------------------------------------------------------------------------
// The state follows git's rules.

use roundtable::policy::IgnoreList;
use roundtable::state::{compute_state_with, subtree_state, CacheMode, StateOptions};
use roundtable::RepoPath;
use std::path::Path;

fn put(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, body).expect("write");
}

/// A bare-bones git directory: enough for the rules to find `info/` and
/// `config` (an unborn branch, no commit).
fn git_init(root: &Path) {
    put(root, ".git/HEAD", "ref: refs/heads/main\n");
}

fn files(root: &Path, ignore: Option<&IgnoreList>) -> usize {
    let options = StateOptions {
        cache: CacheMode::Off,
        threads: 2,
        ignore,
    };
    compute_state_with(root, options).expect("state").files
}

fn state(root: &Path) -> roundtable::state::StateHash {
    compute_state_with(root, CacheMode::Off)
        .expect("state")
        .state
}

#[test]
fn the_state_leaves_out_what_every_gitignore_level_ignores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    put(root, "src/main.py", "print(1)\n");
    let bare = state(root);
    put(root, ".gitignore", "*.log\n__pycache__/\n!keep.log\n");
    put(root, "src/.gitignore", "/gen/\n!debug.log\n");
    let with_ignores = state(root);
    assert_eq!(
        files(root, None),
        3,
        "the .gitignore files themselves count"
    );
    for (rel, counted) in [
        ("a.log", false),
        ("keep.log", true),
        ("src/__pycache__/main.cpython-312.pyc", false),
        ("src/gen/out.py", false),
        ("gen/out.py", true),
        ("src/debug.log", true),
        ("src/deep/x.log", false),
    ] {
        let before = state(root);
        put(root, rel, "bytes\n");
        assert_eq!(state(root) == before, !counted, "{rel}");
    }
    // Removing every counted file brings the state back.
    for rel in ["keep.log", "gen/out.py", "src/debug.log"] {
        std::fs::remove_file(root.join(rel)).expect("rm");
    }
    assert_eq!(state(root), with_ignores);
    assert_ne!(with_ignores, bare);
}

#[test]
fn an_ignored_directory_is_not_walked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    put(root, ".gitignore", "build/\n");
    put(root, "build/out.o", "x");
    // A re-include under an ignored directory has no effect (as in git).
    put(root, "build/.gitignore", "!*\n");
    put(root, "build/keep.txt", "x");
    assert_eq!(files(root, None), 1);
    let before = state(root);
    put(root, "build/keep.txt", "changed");
    put(root, "build/deep/er/x.o", "new");
    assert_eq!(state(root), before);
}

#[test]
fn info_exclude_and_core_excludes_file_apply() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git_init(root);
    put(root, "a.tmp", "x");
    put(root, "b.bak", "x");
    put(root, "c.txt", "x");
    assert_eq!(files(root, None), 3);
    put(root, ".git/info/exclude", "# local\n*.tmp\n");
    assert_eq!(files(root, None), 2);
    let excludes = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(excludes.path(), "*.bak\n*.txt\n").expect("write");
    put(
        root,
        ".git/config",
        &format!(
            "[core]\n\tbare = false\n\texcludesFile = \"{}\"\n",
            excludes.path().display()
        ),
    );
    assert_eq!(files(root, None), 0);
    // A .gitignore re-include outranks the exclude files.
    put(root, ".gitignore", "!c.txt\n");
    assert_eq!(files(root, None), 2, ".gitignore and c.txt");
}

#[test]
fn a_symlinked_gitignore_is_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let outside = tempfile::tempdir().expect("tempdir");
    put(outside.path(), "rules", "*.txt\n");
    std::os::unix::fs::symlink(outside.path().join("rules"), root.join(".gitignore"))
        .expect("symlink");
    put(root, "a.txt", "x");
    // The link itself is an entry; its target's patterns do not apply.
    assert_eq!(files(root, None), 2);
}

#[test]
fn the_policy_list_adds_to_git_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    put(root, ".gitignore", "*.log\n");
    put(root, "a.log", "x");
    put(root, "cache/x.bin", "x");
    put(root, "keep.bin", "x");
    let list = IgnoreList::new(vec!["cache/".into(), "!a.log".into()]).expect("valid");
    assert_eq!(files(root, None), 3);
    // `!a.log` does not re-include what git ignores.
    assert_eq!(files(root, Some(&list)), 2);
}

#[test]
fn a_subtree_state_applies_the_ancestors_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    put(root, "pkg/sub/a.py", "x");
    let pkg_sub = "pkg/sub".parse::<RepoPath>().expect("a path");
    let sub = || subtree_state(root, Some(&pkg_sub), None).expect("subtree");
    let before = sub();
    put(root, ".gitignore", "*.pyc\n");
    put(root, "pkg/.gitignore", "/sub/tmp/\n");
    assert_eq!(sub(), before, "the ancestors' .gitignore files are outside");
    put(root, "pkg/sub/a.pyc", "x");
    put(root, "pkg/sub/tmp/t", "x");
    assert_eq!(sub(), before, "ignored by the ancestors' rules");
    put(root, "pkg/sub/b.py", "x");
    assert_ne!(sub(), before);
    // A claimed directory that is itself ignored holds nothing.
    let ignored = "pkg/sub/tmp".parse::<RepoPath>().expect("a path");
    let empty = "empty".parse::<RepoPath>().expect("a path");
    std::fs::create_dir(root.join("empty")).expect("mkdir");
    assert_eq!(
        subtree_state(root, Some(&ignored), None).expect("subtree"),
        subtree_state(root, Some(&empty), None).expect("subtree")
    );
    // The policy's list applies to subtrees too.
    let list = IgnoreList::new(vec!["b.py".into()]).expect("valid");
    assert_eq!(
        subtree_state(root, Some(&pkg_sub), Some(&list)).expect("subtree"),
        before
    );
}

// ---------------------------------------------------------------------------
// Through the tools.

/// A patch may still change an ignored path when it names it: it is
/// proposed, validated under a directory claim and applied.
#[test]
fn a_patch_may_touch_an_ignored_path_explicitly() {
    let w = World::new();
    write(&w, ".gitignore", "*.log\n");
    write(&w, "logs/app.log", "one\n");
    w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:logs", "type": "write", "ttl_s": 600}),
        &w.author,
    );
    let patch = "--- a/logs/app.log\n+++ b/logs/app.log\n@@ -1 +1 @@\n-one\n+two\n";
    let pid = approved(&w, patch);
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.author);
    assert_eq!(report["valid"], true, "{report:#}");
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(applied["transaction"]["status"], "applied");
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("logs/app.log")).expect("read"),
        "two\n"
    );
}

/// The policy's `[workspace] ignore` keeps a directory claim fresh too,
/// from the policy in force when the claim is taken and checked.
#[test]
fn the_policy_ignore_list_keeps_a_directory_claim_fresh() {
    let w = World::new();
    let doc = "version = 1\n[workspace]\nignore = [\"*.cache\"]\n";
    let set = w.ok("policy.set", json!({"document": doc}), &w.host);
    w.ok(
        "policy.activate",
        json!({"version": set["policy"]["version"]}),
        &w.host,
    );
    write(&w, "pkg/mod.py", "x = 1\n");
    w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:pkg", "type": "write", "ttl_s": 600}),
        &w.author,
    );
    let pid = approved(&w, PKG_PATCH);
    write(&w, "pkg/build.cache", "junk");
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.author);
    assert_eq!(claims_stage(&report)["status"], "passed", "{report:#}");
}
