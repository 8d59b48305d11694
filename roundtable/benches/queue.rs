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
//! landings/s, and each way's ratio to (a). `RT_QUEUE_PROPOSALS` (100) and
//! `RT_QUEUE_CHECK_MS` (200) scale it.
//!
//! Then, in the same run, **the queue across hosts**: 1, 2 and 4 hosts,
//! each an engine on its own working-tree clone of one remote (git mode
//! through it), sharing one PostgreSQL database (a schema per
//! measurement) on a cluster this bench starts with `scripts/pg-cluster`
//! (fsync on) and stops at the end. `[queue] lanes = true`, a check that
//! takes `RT_HOSTS_QUEUE_CHECK_MS` (200) ms (`sleep`), depth
//! `RT_HOSTS_QUEUE_DEPTH` (4) per host. The workload: 8 agents, each
//! adding files in a directory of its own, `RT_HOSTS_QUEUE_PROPOSALS` (64)
//! approved proposals queued in turn (disjoint lanes). Each host runs
//! `queue.run` in a loop until the queue is empty; landings per second
//! over all hosts, wall clock, each host's landings and the states checked
//! in all (a state checked twice would show there), and the ratio to one
//! host. `RT_QUEUE_HOSTS=0` leaves this part out (no PostgreSQL needed).
//!
//! `cargo bench -p roundtable --bench queue`.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::{Actor, Engine, EngineOptions};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

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
    let dir = tempfile::tempdir_in(scratch_base()).expect("tempdir");
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

/// What one queue measurement saw.
struct QueueMeasured {
    wall: Duration,
    landed: usize,
    per_host: Vec<usize>,
    states_checked: usize,
    runs: usize,
}

/// The queue across `hosts` hosts on `store` under `base`: see the module
/// documentation.
fn queue_hosts(
    base: &Path,
    hosts: usize,
    store: &str,
    proposals: usize,
    check_ms: usize,
    depth: usize,
) -> QueueMeasured {
    const AGENTS: usize = 8;
    let top = tempfile::tempdir_in(base).expect("tempdir");
    remote(top.path());
    let engines: Vec<(Engine, Actor)> = (0..hosts)
        .map(|k| {
            let name = format!("q{k}");
            git(top.path(), &["clone", "-q", "remote.git", &name]);
            let clone = top.path().join(&name);
            git(&clone, &["config", "user.name", "b"]);
            git(&clone, &["config", "user.email", "b@example.com"]);
            let engine = Engine::open(
                &clone,
                EngineOptions {
                    store: Some(store.to_owned()),
                    ..EngineOptions::default()
                },
            )
            .expect("open");
            (engine, Actor::orchestrator(id(&format!("host{k}"))))
        })
        .collect();
    let (first, host) = &engines[0];
    let reviewer = Actor::agent(id("reviewer"));
    ok(
        first,
        "agent.register",
        json!({"agent_id": "reviewer", "roles": ["reviewer"]}),
        host,
    );
    let authors: Vec<Actor> = (0..AGENTS)
        .map(|a| {
            ok(
                first,
                "agent.register",
                json!({"agent_id": format!("agent{a}"), "roles": ["author"]}),
                host,
            );
            Actor::agent(id(&format!("agent{a}")))
        })
        .collect();
    ok(
        first,
        "task.create",
        json!({"task_id": "t", "title": "bench"}),
        host,
    );
    ok(
        first,
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
        host,
    );
    let policy = format!(
        "version = 1\n[checks.unit]\ncommand = [\"sleep\", \"{}\"]\ntimeout_s = 60\n[queue]\nbatch_size = 8\ndepth = {depth}\nlanes = true\n",
        check_ms as f64 / 1000.0
    );
    let set = ok(first, "policy.set", json!({"document": policy}), host);
    ok(
        first,
        "policy.activate",
        json!({"version": set["policy"]["version"]}),
        host,
    );
    for i in 0..proposals {
        let (a, author) = (i % AGENTS, &authors[i % AGENTS]);
        let path = format!("agent{a}/f{i:03}.txt");
        ok(
            first,
            "claim.acquire",
            json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 36000}),
            author,
        );
        let patch = format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+change {i}\n");
        let pid = proposal(first, author, "t", &patch, &reviewer);
        ok(first, "queue.enqueue", json!({"proposal_id": pid}), host);
    }
    let start = Instant::now();
    let results: Vec<(usize, usize, usize)> = std::thread::scope(|s| {
        let running: Vec<_> = engines
            .iter()
            .map(|(engine, host)| {
                s.spawn(move || {
                    let (mut landed, mut checked, mut runs) = (0, 0, 0);
                    loop {
                        let run = ok(engine, "queue.run", json!({}), host);
                        runs += 1;
                        let n = run["landed"].as_array().map_or(0, Vec::len);
                        landed += n;
                        checked += run["states_checked"].as_u64().unwrap_or(0) as usize;
                        assert_eq!(run["returned"], json!([]), "{run}");
                        if run["still_queued"] == 0 {
                            return (landed, checked, runs);
                        }
                        if n == 0 {
                            // Every lane left is another host's.
                            std::thread::sleep(Duration::from_millis(20));
                        }
                    }
                })
            })
            .collect();
        running
            .into_iter()
            .map(|h| h.join().expect("a host"))
            .collect()
    });
    let wall = start.elapsed();
    let landed = git(
        &top.path().join("remote.git"),
        &["rev-list", "--count", "main"],
    )
    .trim()
    .parse::<usize>()
    .expect("a count")
        - 1;
    assert_eq!(
        landed, proposals,
        "every proposal landed once on the remote"
    );
    QueueMeasured {
        wall,
        landed,
        per_host: results.iter().map(|r| r.0).collect(),
        states_checked: results.iter().map(|r| r.1).sum(),
        runs: results.iter().map(|r| r.2).sum(),
    }
}

/// The queue across 1, 2 and 4 PostgreSQL hosts, printed side by side.
fn queue_rows(base: &Path, schema: &dyn Fn(&str) -> String) {
    let proposals = env_usize("RT_HOSTS_QUEUE_PROPOSALS", 64);
    let check_ms = env_usize("RT_HOSTS_QUEUE_CHECK_MS", 200);
    let depth = env_usize("RT_HOSTS_QUEUE_DEPTH", 4);
    println!(
        "queue across hosts: {proposals} approved proposals of 8 agents (disjoint lanes), a {check_ms} ms check, depth {depth} per host, git mode through one remote, PostgreSQL (load {})",
        loadavg()
    );
    let measured: Vec<(usize, QueueMeasured)> = [1, 2, 4]
        .into_iter()
        .map(|n| {
            (
                n,
                queue_hosts(
                    base,
                    n,
                    &schema(&format!("q{n}")),
                    proposals,
                    check_ms,
                    depth,
                ),
            )
        })
        .collect();
    let one = measured[0].1.landed as f64 / measured[0].1.wall.as_secs_f64();
    println!(
        "{:<8} {:>8} {:>12} {:>16} {:>15} {:>10}  per host",
        "hosts", "wall s", "landings/s", "ratio to 1 host", "states checked", "queue.run"
    );
    for (n, m) in &measured {
        let rate = m.landed as f64 / m.wall.as_secs_f64();
        println!(
            "{n:<8} {:>8.2} {rate:>12.2} {:>16} {:>15} {:>10}  {:?}",
            m.wall.as_secs_f64(),
            format!("{:.2}×", rate / one),
            m.states_checked,
            m.runs,
            m.per_host
        );
    }
}

fn main() {
    let n = env_usize("RT_QUEUE_PROPOSALS", 100);
    let check_ms = env_usize("RT_QUEUE_CHECK_MS", 200);
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
    if env_usize("RT_QUEUE_HOSTS", 1) == 0 {
        return;
    }
    let base = scratch_base().join("rt-bench-queue-hosts");
    std::fs::create_dir_all(&base).expect("the scratch base");
    let cluster = base.join(format!("pg-{}", std::process::id()));
    let server = pg_cluster(&["start", cluster.to_str().expect("utf-8")]);
    queue_rows(&base, &|name| format!("{server}?schema={name}"));
    pg_cluster(&["stop", cluster.to_str().expect("utf-8")]);
}
