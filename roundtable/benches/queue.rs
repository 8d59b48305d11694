//! The landing queue against landing one at a time (issue 34): 100
//! approved proposals, 5% of them failing a real check that takes 200 ms,
//! landed three ways in one run, on tmpfs:
//!
//! - (a) one at a time: check the proposal on the branch, land it, next
//!   (the queue with `batch_size = 1`, `depth = 1`: the loop a host
//!   writes, run by the engine);
//! - (b) the queue with batches: every proposal of a batch of 8 checked on
//!   top of the ones ahead of it, 8 states at once;
//! - (c) the queue with lanes: proposals that share no path checked and
//!   landed independently, 8 states at once.
//!
//! Printed side by side: proposals landed per check run, wall time and
//! landings/s, and each way's ratio to (a). `cargo bench -p roundtable
//! --bench queue`; `RT_QUEUE_PROPOSALS` (100) and `RT_QUEUE_CHECK_MS` (200)
//! scale it.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::{Actor, Engine, EngineOptions};
use serde_json::json;
use std::time::{Duration, Instant};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What one way measured.
struct Measured {
    landed: usize,
    returned: usize,
    check_runs: usize,
    wall: Duration,
}

/// Queue `n` approved proposals (every twentieth breaks the check) in a
/// fresh workspace with `policy`, run the queue to the end, measure.
fn way(n: usize, check_ms: usize, batch: u32, depth: u32, lanes: bool) -> Measured {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = tempfile::tempdir_in(base).expect("tempdir");
    let d = dir.path();
    // The check: a real program that takes `check_ms` and fails when the
    // state holds a file marked broken.
    std::fs::write(
        d.join("check.sh"),
        format!(
            "sleep {}\nif grep -l BROKEN features/*.txt 2>/dev/null; then exit 1; fi\n",
            check_ms as f64 / 1000.0
        ),
    )
    .expect("write");
    std::fs::create_dir_all(d.join("features")).expect("mkdir");
    std::fs::write(d.join("features/.keep"), "").expect("write");
    let engine = Engine::open(d, EngineOptions::default()).expect("open");
    let host = Actor::orchestrator(id("host"));
    let author = Actor::agent(id("author"));
    let reviewer = Actor::agent(id("reviewer"));
    ok(
        &engine,
        "agent.register",
        json!({"agent_id": "author", "roles": ["author"]}),
        &host,
    );
    ok(
        &engine,
        "agent.register",
        json!({"agent_id": "reviewer", "roles": ["reviewer"]}),
        &host,
    );
    ok(
        &engine,
        "task.create",
        json!({"task_id": "t1", "title": "Features"}),
        &host,
    );
    let policy = format!(
        "version = 1\n[checks.unit]\ncommand = [\"sh\", \"check.sh\"]\ntimeout_s = 60\n[queue]\nbatch_size = {batch}\ndepth = {depth}\nlanes = {lanes}\n"
    );
    let set = ok(&engine, "policy.set", json!({"document": policy}), &host);
    ok(
        &engine,
        "policy.activate",
        json!({"version": set["policy"]["version"]}),
        &host,
    );
    for i in 0..n {
        let body = if i % 20 == 7 { "BROKEN" } else { "fine" };
        let path = format!("features/f{i:03}.txt");
        let patch = format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{body} {i}\n");
        ok(
            &engine,
            "claim.acquire",
            json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 36000}),
            &author,
        );
        let created = ok(
            &engine,
            "proposal.create",
            json!({"task_id": "t1", "title": format!("Feature {i}"), "summary_md": "A feature.", "patch": patch}),
            &author,
        );
        let pid = created["proposal"]["id"].clone();
        ok(
            &engine,
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &author,
        );
        ok(
            &engine,
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &reviewer,
        );
        ok(&engine, "queue.enqueue", json!({"proposal_id": pid}), &host);
    }
    let t0 = Instant::now();
    let run = ok(&engine, "queue.run", json!({"max_rounds": 1000}), &host);
    let wall = t0.elapsed();
    let count = |k: &str| run[k].as_array().map_or(0, Vec::len);
    assert_eq!(run["still_queued"], 0, "{run}");
    Measured {
        landed: count("landed"),
        returned: count("returned"),
        check_runs: count("checks"),
        wall,
    }
}

fn main() {
    let n = env("RT_QUEUE_PROPOSALS", 100);
    let check_ms = env("RT_QUEUE_CHECK_MS", 200);
    println!(
        "queue bench: {n} approved proposals, every 20th failing, a {check_ms} ms check; load {}",
        loadavg()
    );
    let ways = [
        ("(a) one at a time", way(n, check_ms, 1, 1, false)),
        ("(b) queue, batches of 8", way(n, check_ms, 8, 8, false)),
        ("(c) queue, lanes", way(n, check_ms, 8, 8, true)),
    ];
    let base_rate = ways[0].1.landed as f64 / ways[0].1.wall.as_secs_f64();
    println!(
        "{:<26} {:>7} {:>9} {:>11} {:>18} {:>10} {:>11}",
        "way", "landed", "returned", "check runs", "landed/check run", "wall s", "landings/s"
    );
    for (name, m) in &ways {
        let rate = m.landed as f64 / m.wall.as_secs_f64();
        println!(
            "{:<26} {:>7} {:>9} {:>11} {:>18.2} {:>10.2} {:>11.2}  ({:.2}x of (a))",
            name,
            m.landed,
            m.returned,
            m.check_runs,
            m.landed as f64 / m.check_runs.max(1) as f64,
            m.wall.as_secs_f64(),
            rate,
            rate / base_rate
        );
    }
}
