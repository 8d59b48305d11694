//! Helpers the benches share: the generated tree layout, tool calls that
//! must succeed, and the summary statistics. Each bench uses a subset.
#![allow(dead_code)]

use roundtable::{Actor, Engine, Id};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// Where file `i` lives: three directory levels, fan-out 10, 100 files per
/// leaf directory (a 100,000-file tree has 1,110 directories).
pub(crate) fn rel(i: usize) -> String {
    format!(
        "d{}/e{}/g{}/f{i}.txt",
        i / 10_000,
        (i / 1000) % 10,
        (i / 100) % 10
    )
}

/// A scratch directory under `base` holding `files` files laid out by
/// [`rel`], file `i` with the content `body(i)`.
pub(crate) fn tree(base: &Path, files: usize, body: fn(usize) -> String) -> tempfile::TempDir {
    std::fs::create_dir_all(base).expect("the scratch base");
    let dir = tempfile::tempdir_in(base).expect("a scratch directory");
    for i in 0..files {
        let path = dir.path().join(rel(i));
        if i % 100 == 0 {
            std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        }
        std::fs::write(path, body(i)).expect("write");
    }
    dir
}

pub(crate) fn id(s: &str) -> Id {
    Id::new(s).expect("a valid id")
}

/// `tool` called as `actor`, which must succeed.
pub(crate) fn ok(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Value {
    engine
        .call(tool, args.clone(), actor)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
}

/// proposal.create in `task`, request_review and `reviewer`'s approval;
/// the proposal's id.
pub(crate) fn proposal(
    engine: &Engine,
    author: &Actor,
    task: &str,
    patch: &str,
    reviewer: &Actor,
) -> String {
    let created = ok(
        engine,
        "proposal.create",
        json!({"task_id": task, "title": "Edit", "summary_md": "Edits.", "patch": patch}),
        author,
    );
    let pid = created["proposal"]["id"]
        .as_str()
        .expect("a proposal id")
        .to_owned();
    ok(
        engine,
        "proposal.request_review",
        json!({"proposal_id": pid}),
        author,
    );
    ok(
        engine,
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        reviewer,
    );
    pid
}

/// (median, p90, min) of `samples`.
pub(crate) fn stats(samples: &[Duration]) -> (Duration, Duration, Duration) {
    let mut s = samples.to_vec();
    s.sort_unstable();
    let at = |q: f64| s[((s.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), s[0])
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The 1-, 5- and 15-minute load averages, as /proc/loadavg spells them.
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".to_owned())
}
