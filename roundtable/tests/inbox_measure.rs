//! A measurement, not a test: what repeated `inbox.list` calls cost with
//! one many-file proposal in review (the review console calls it on every
//! event). Run with `--ignored --nocapture`; it prints timings and asserts
//! nothing about time.

use super::tools::{scratch_dir, str_of, World};
use roundtable::EngineOptions;
use serde_json::json;
use std::time::{Duration, Instant};

/// Files the proposal touches.
const FILES: usize = 2000;
/// Timed calls.
const CALLS: usize = 50;

#[test]
#[ignore = "a measurement, not a test: run with --ignored --nocapture"]
#[allow(clippy::print_stdout)] // printing the timings is its whole output
fn measure_inbox_list_over_a_2000_file_proposal() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path();
    std::fs::create_dir_all(root.join("d")).expect("mkdir");
    let mut patch = String::new();
    for i in 0..FILES {
        let f = format!("d/f{i:04}.txt");
        std::fs::write(root.join(&f), format!("line {i:04}\n")).expect("write");
        patch.push_str(&format!(
            "--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-line {i:04}\n+line {i:04} changed\n"
        ));
    }
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Many", "summary_md": "Many files.", "patch": patch}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    // The files' times more than a second old (else no digest is trusted).
    std::thread::sleep(Duration::from_millis(2100));
    let call = || {
        let page = w.ok("inbox.list", json!({"limit": 50}), &w.reviewer);
        assert_eq!(page["items"][0]["action"], "vote", "{page}");
    };
    call(); // the first call reads every file
    let mut times: Vec<Duration> = (0..CALLS)
        .map(|_| {
            let start = Instant::now();
            call();
            start.elapsed()
        })
        .collect();
    let total: Duration = times.iter().sum();
    times.sort();
    println!(
        "inbox.list x {CALLS}, one proposal of {FILES} files: total {total:?}, mean {:?}, median {:?}, max {:?}",
        total / u32::try_from(CALLS).expect("small"),
        times[CALLS / 2],
        times[CALLS - 1],
    );
}
