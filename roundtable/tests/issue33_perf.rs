//! Issue 33, the performance regressions: what the governed apply of a
//! large change stopped doing must not change what it checks.
//!
//! Acquiring a whole-tree directory claim leaves the stat cache warm (the
//! freshness checks after it `lstat` the tree instead of hashing it), and
//! a file changed after the acquisition — even to the same size, in the
//! same second — still makes the claim stale.

use super::tools::{scratch_dir, str_of, World};
use roundtable::state::{
    compute_state_with, subtree_state, subtree_state_with, CacheMode, StateOptions, CACHE_FILE,
};
use roundtable::EngineOptions;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

const FILES: usize = 40;

fn write_tree(root: &Path) {
    std::fs::create_dir_all(root.join("d")).expect("mkdir");
    for i in 0..FILES {
        std::fs::write(root.join(format!("d/f{i:02}.txt")), format!("line {i}\n")).expect("write");
    }
}

fn acquire_tree(w: &World) -> Value {
    w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:.", "type": "write", "ttl_s": 600}),
        &w.author,
    )["claim"]
        .clone()
}

fn claim_reasons(report: &Value) -> Vec<Value> {
    report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == "claims")
        .expect("a claims stage")["reasons"]
        .as_array()
        .expect("reasons")
        .clone()
}

#[test]
fn issue33_perf_directory_claim_leaves_the_stat_cache_warm() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path().to_path_buf();
    write_tree(&root);
    // The files' times precede the cache write's timestamp tick (else they
    // are racy and rehashed, which the racy test below relies on).
    std::thread::sleep(Duration::from_millis(50));

    // Reading a whole-tree state for a check writes nothing.
    let read_only = subtree_state(&root, None, None).expect("state");
    assert!(
        !root.join(CACHE_FILE).exists(),
        "a read-only check wrote the cache"
    );

    let claim = acquire_tree(&w);
    assert!(
        root.join(CACHE_FILE).is_file(),
        "the acquisition left no stat cache"
    );
    // The digest the claim recorded is the same whatever the cache did.
    assert_eq!(claim["base_digest"], read_only.to_string());
    assert_eq!(
        subtree_state_with(&root, None, None, CacheMode::ReadWrite).expect("state"),
        read_only
    );

    // Warm: a walk after the acquisition hashes nothing.
    let warm = compute_state_with(
        &root,
        StateOptions {
            cache: CacheMode::ReadWrite,
            ..StateOptions::default()
        },
    )
    .expect("state");
    assert_eq!(warm.stats.hashed, 0, "{:?}", warm.stats);
    assert!(warm.files > FILES);
}

#[test]
fn issue33_perf_a_warm_cache_does_not_hide_a_same_size_change() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path().to_path_buf();
    write_tree(&root);
    std::thread::sleep(Duration::from_millis(50));
    let claim = acquire_tree(&w);
    let claim_id = str_of(&claim["id"]);
    assert!(root.join(CACHE_FILE).is_file());
    // At once (in the cache write's tick, or the next): same size, other
    // bytes, in a file the proposal does not touch.
    std::fs::write(root.join("d/f07.txt"), "line X\n").expect("write");
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.",
                   "patch": super::tools::PATCH}),
            &w.author,
        )["proposal"]["id"],
    );
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
    let stale: Vec<Value> = claim_reasons(&report)
        .into_iter()
        .filter(|r| r["code"] == "stale_claim")
        .collect();
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["claim_id"], claim_id.as_str());
    assert_eq!(stale[0]["expected"], claim["base_digest"]);
    assert_eq!(
        stale[0]["actual"],
        subtree_state(&root, None, None).expect("state").to_string()
    );
    assert_eq!(report["valid"], false);
}
