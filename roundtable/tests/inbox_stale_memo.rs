//! `inbox.list`'s `stale` from the engine's digest memo: a warm page
//! `lstat`s the files a proposal touches instead of reading and hashing
//! them, and still sees every change — a rewrite, a same-size rewrite with
//! the mtime set back (within the same second too: the racy case), a
//! rename over the file — exactly as `proposal.status`'s full validation
//! does.

use super::tools::{scratch_dir, str_of, World};
use roundtable::{Actor, EngineOptions};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Sleep until every file written before the call is more than a second
/// old: the memo trusts no digest of a younger file.
fn settle() {
    std::thread::sleep(Duration::from_millis(2100));
}

/// `line N\n` in `d/fNNN.txt` for each of `n` files.
fn write_files(root: &Path, n: usize) {
    fs::create_dir_all(root.join("d")).expect("mkdir");
    for i in 0..n {
        fs::write(root.join(name(i)), format!("line {i:03}\n")).expect("write");
    }
}

fn name(i: usize) -> String {
    format!("d/f{i:03}.txt")
}

/// A diff changing each of the first `n` files' line.
fn patch(n: usize) -> String {
    (0..n)
        .map(|i| {
            let f = name(i);
            format!("--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-line {i:03}\n+line {i:03} changed\n")
        })
        .collect()
}

/// An in-review proposal by the author changing the first `n` files.
fn in_review(w: &World, n: usize) -> String {
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch(n)}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    pid
}

/// `(role, action)` of `actor`'s inbox items about `pid`.
fn inbox_of(w: &World, actor: &Actor, pid: &str) -> Vec<(String, String)> {
    let page = w.ok("inbox.list", json!({"limit": 100}), actor);
    assert!(page["next_cursor"].is_null());
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["proposal"]["id"] == pid)
        .map(|i| (str_of(&i["role"]), str_of(&i["action"])))
        .collect()
}

/// Whether the author's inbox asks to rebase `pid` (the inbox's `stale`),
/// asserted equal to `proposal.status`'s `stale` (a full validation that
/// reads every file).
fn stale(w: &World, pid: &str) -> bool {
    let rebase = ("author".to_owned(), "rebase_or_attach".to_owned());
    let inbox = inbox_of(w, &w.author, pid).contains(&rebase);
    let status: Value = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    assert_eq!(
        status["stale"], inbox,
        "inbox.list and proposal.status disagree"
    );
    inbox
}

/// Rewrite `rel` with `data` and set its mtime back to what it was.
fn rewrite_keeping_mtime(root: &Path, rel: &str, data: &str) {
    let path = root.join(rel);
    let before = fs::metadata(&path).expect("stat");
    fs::write(&path, data).expect("write");
    set_mtime(&path, before.modified().expect("mtime"));
    let after = fs::metadata(&path).expect("stat");
    assert_eq!(after.len(), before.len(), "the same size");
    assert_eq!(
        after.modified().expect("mtime"),
        before.modified().expect("mtime")
    );
}

fn set_mtime(path: &Path, when: SystemTime) {
    let file = fs::File::options().write(true).open(path).expect("open");
    file.set_modified(when).expect("set mtime");
}

#[test]
fn inbox_stale_from_the_digest_memo_sees_every_rewrite() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path().to_path_buf();
    write_files(&root, 4);
    let pid = in_review(&w, 3); // d/f003.txt is not touched
    settle();

    assert!(!stale(&w, &pid), "untouched: not stale");
    let warm = w.engine.advisory_digest_stats();
    assert!(!stale(&w, &pid));
    let again = w.engine.advisory_digest_stats();
    assert_eq!(again.hashed, warm.hashed, "a warm page hashes nothing");
    assert_eq!(again.reused, warm.reused + 3, "{again:?}");

    // A file the proposal does not touch changes: still not stale.
    fs::write(root.join(name(3)), "other\n").expect("write");
    assert!(!stale(&w, &pid));

    // A same-size rewrite of a settled, remembered file, its mtime set
    // back: the ctime moved, so it is hashed again and seen.
    rewrite_keeping_mtime(&root, &name(0), "LINE 000\n");
    assert!(stale(&w, &pid), "a same-size rewrite is seen");
    // Back to the bytes the revision expects: not stale (digests, not
    // times, decide).
    rewrite_keeping_mtime(&root, &name(0), "line 000\n");
    assert!(!stale(&w, &pid));

    // The racy case: read, then rewritten to the same size within the
    // same second with its mtime set back; the digest taken of a file
    // that young is never trusted.
    rewrite_keeping_mtime(&root, &name(1), "line 001\n");
    assert!(!stale(&w, &pid));
    rewrite_keeping_mtime(&root, &name(1), "LINE 001\n");
    assert!(stale(&w, &pid), "a rewrite in the same second is seen");
    rewrite_keeping_mtime(&root, &name(1), "line 001\n");
    assert!(!stale(&w, &pid));
    settle();
    assert!(!stale(&w, &pid));

    // A rename over a settled file: another inode, same size and mtime.
    let target = root.join(name(2));
    let mtime = fs::metadata(&target)
        .expect("stat")
        .modified()
        .expect("mtime");
    let tmp = root.join("d/tmp");
    fs::write(&tmp, "LINE 002\n").expect("write");
    set_mtime(&tmp, mtime);
    fs::rename(&tmp, &target).expect("rename");
    assert!(stale(&w, &pid), "a rename over the file is seen");
    // Renamed over with the expected bytes: not stale.
    fs::write(&tmp, "line 002\n").expect("write");
    fs::rename(&tmp, &target).expect("rename");
    assert!(!stale(&w, &pid));

    // Removed: stale.
    fs::remove_file(root.join(name(0))).expect("rm");
    assert!(stale(&w, &pid), "a removed file is seen");
}

#[test]
fn a_warm_inbox_list_over_a_many_file_proposal_hashes_no_file() {
    const FILES: usize = 300;
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path().to_path_buf();
    write_files(&root, FILES);
    let pid = in_review(&w, FILES);
    settle();

    let start = w.engine.advisory_digest_stats();
    let vote = vec![("reviewer".to_owned(), "vote".to_owned())];
    assert_eq!(inbox_of(&w, &w.reviewer, &pid), vote);
    let cold = w.engine.advisory_digest_stats();
    assert_eq!(cold.hashed - start.hashed, FILES as u64, "{cold:?}");

    for _ in 0..3 {
        let before = w.engine.advisory_digest_stats();
        assert_eq!(inbox_of(&w, &w.reviewer, &pid), vote);
        assert!(inbox_of(&w, &w.author, &pid).is_empty(), "not stale");
        let after = w.engine.advisory_digest_stats();
        assert_eq!(after.hashed, before.hashed, "a warm page hashed a file");
        assert_eq!(after.reused - before.reused, 2 * FILES as u64);
    }

    // One file changes: that one alone is hashed, and the proposal is stale.
    let before = w.engine.advisory_digest_stats();
    rewrite_keeping_mtime(&root, &name(FILES - 1), "LINE 299\n");
    assert_eq!(
        inbox_of(&w, &w.author, &pid),
        [("author".to_owned(), "rebase_or_attach".to_owned())]
    );
    let after = w.engine.advisory_digest_stats();
    assert_eq!(after.hashed - before.hashed, 1, "{after:?}");
}
