//! `proposal.status` and `inbox.list`'s staleness check share one
//! computation among the callers asking the same thing at once — but only
//! a computation that started after each of them asked. So however the
//! calls interleave with writes, no answer misses a write committed (or a
//! file changed) before its call began.

use super::tools::{scratch_dir, str_of, World};
use roundtable::{Actor, EngineOptions};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

const FILES: usize = 120;
const REVIEWERS: usize = 6;
const READERS: usize = 4;

fn name(i: usize) -> String {
    format!("d/f{i:03}.txt")
}

fn write_files(root: &Path) {
    fs::create_dir_all(root.join("d")).expect("mkdir");
    for i in 0..FILES {
        fs::write(root.join(name(i)), format!("line {i:03}\n")).expect("write");
    }
}

/// A diff changing every file's line.
fn patch() -> String {
    (0..FILES)
        .map(|i| {
            let f = name(i);
            format!("--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-line {i:03}\n+line {i:03} changed\n")
        })
        .collect()
}

/// How many approving votes `status` counts.
fn approvals(status: &Value) -> usize {
    status["validation"]["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == "approvals")
        .and_then(|r| r["evidence"].as_array())
        .map_or(0, Vec::len)
}

/// Whether `actor`'s inbox asks it to rebase `pid`.
fn asked_to_rebase(w: &World, actor: &Actor, pid: &str) -> bool {
    let page = w.ok("inbox.list", json!({"limit": 100}), actor);
    page["items"].as_array().expect("items").iter().any(|i| {
        i["proposal"]["id"] == pid && i["role"] == "author" && i["action"] == "rebase_or_attach"
    })
}

#[test]
fn concurrent_reads_never_miss_what_was_written_before_they_asked() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path().to_path_buf();
    write_files(&root);
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch()}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    let reviewers: Vec<Actor> = (0..REVIEWERS)
        .map(|i| w.agent(&format!("r{i}"), &["reviewer"]))
        .collect();
    let asked = AtomicUsize::new(0);
    let status = || {
        asked.fetch_add(1, Ordering::SeqCst);
        w.ok("proposal.status", json!({"proposal_id": pid}), &w.host)
    };
    let start = w.engine.shared_read_stats().status;
    assert_eq!(approvals(&status()), 0);

    // Votes committed so far, and whether a touched file was changed.
    let cast = AtomicUsize::new(0);
    let broken = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let checked = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..READERS {
            s.spawn(|| {
                // A few rounds after the writer is done, so reads overlap
                // its every step and also see the end state.
                let mut after = 0;
                while after < 3 {
                    if done.load(Ordering::SeqCst) {
                        after += 1;
                    }
                    let votes = cast.load(Ordering::SeqCst);
                    let was_broken = broken.load(Ordering::SeqCst);
                    let got = status();
                    assert!(
                        approvals(&got) >= votes,
                        "proposal.status counts {} approvals, {votes} were cast before it was asked",
                        approvals(&got)
                    );
                    if was_broken {
                        assert_eq!(got["stale"], true, "changed before it was asked");
                        assert!(
                            asked_to_rebase(&w, &w.author, &pid),
                            "inbox.list missed a file changed before it was asked"
                        );
                    }
                    checked.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
        for r in &reviewers {
            w.ok(
                "vote.cast",
                json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
                r,
            );
            cast.fetch_add(1, Ordering::SeqCst);
        }
        fs::write(root.join(name(FILES / 2)), "changed behind\n").expect("write");
        broken.store(true, Ordering::SeqCst);
        done.store(true, Ordering::SeqCst);
    });
    assert!(checked.load(Ordering::SeqCst) >= READERS * 3);
    let end = status();
    assert_eq!(approvals(&end), REVIEWERS);
    assert_eq!(end["stale"], true);
    assert!(asked_to_rebase(&w, &w.author, &pid));
    // Every call was answered by a validation, its own or one shared.
    let stats = w.engine.shared_read_stats().status;
    assert_eq!(
        (stats.computed - start.computed) + (stats.shared - start.shared),
        asked.load(Ordering::SeqCst) as u64,
        "{stats:?}"
    );
}
