//! A fleet of agents on one large repository (issue 16): 16 agent threads ×
//! 25 proposals on a 100,000-file tree on tmpfs, two reviewer threads and
//! one orchestrator thread, all on one engine, none polling: every thread
//! sleeps in `events.wait` and acts on what `inbox.list` says.
//!
//! `cargo bench -p roundtable --bench fleet`. Each agent claims what it
//! changes — a `file:` claim on one of its own files, or (every fifth
//! change, 20% of them) a `symbol:` claim on its own function in the shared
//! `hot.py` — proposes, asks for review and waits for its proposal to land;
//! when another agent's change to `hot.py` lands first, its revision is
//! stale, and the orchestrator lands it with `patch.apply rebase: true` (a
//! trivial rebase, which keeps the approval). Reviewers vote on what their
//! inbox lists; the orchestrator applies what its inbox lists. Printed: landed/s, p50/p99
//! create→applied latency and CPU per landing, beside the floor — the same
//! 400 changes applied one by one with `git apply` (one process per patch)
//! to a copy of the tree on the same file system, in the same run. Target:
//! the fleet's rate ≥ 0.5× the floor's; exits non-zero below it.
//!
//! `RT_FLEET_FILES` (100000), `RT_FLEET_AGENTS` (16) and
//! `RT_FLEET_CHANGES` (25 per agent) scale it down for a quick look.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::{Actor, Engine, EngineOptions, ErrorCode};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Time spent in each tool across the fleet's threads: (calls, total).
static PROFILE: Mutex<std::collections::BTreeMap<&'static str, (u32, Duration)>> =
    Mutex::new(std::collections::BTreeMap::new());

/// `tool` called as `actor`, its time added to [`PROFILE`].
fn call(
    engine: &Engine,
    tool: &'static str,
    args: Value,
    actor: &Actor,
) -> Result<Value, roundtable::ToolError> {
    let t = Instant::now();
    let out = engine.call(tool, args, actor);
    let took = t.elapsed();
    let mut profile = PROFILE.lock().expect("lock");
    let entry = profile.entry(tool).or_default();
    entry.0 += 1;
    entry.1 += took;
    out
}

/// [`call`], which must succeed.
fn okt(engine: &Engine, tool: &'static str, args: Value, actor: &Actor) -> Value {
    call(engine, tool, args.clone(), actor)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
}

/// The fleet's landing rate must be at least this share of the floor's.
const TARGET_RATIO: f64 = 0.5;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn small_body(i: usize) -> String {
    (0..4).map(|l| format!("file {i} line {l}\n")).collect()
}

/// `hot.py`: one function per agent, each `return {version}`, two blank
/// lines apart (so changes to neighbours never touch).
fn hot(versions: &[usize]) -> String {
    versions
        .iter()
        .enumerate()
        .map(|(a, v)| format!("def f{a}():\n    return {v}\n\n\n"))
        .collect()
}

/// Agent `a`'s own file for change `k`: distinct for every (a, k), spread
/// over the tree.
fn own_file(a: usize, k: usize, fleet: &Fleet) -> usize {
    let slots = fleet.agents * fleet.changes;
    assert!(fleet.files >= slots, "fewer files than changes");
    (a * fleet.changes + k) * (fleet.files / slots)
}

/// The change agent `a` makes as its `k`-th: (resource to claim, patch).
fn change(a: usize, k: usize, fleet: &Fleet) -> (String, String) {
    if k.is_multiple_of(5) {
        let v = k / 5;
        let line = a * 4 + 1; // `def f{a}():` (1-based)
        let patch = format!(
            "--- a/hot.py\n+++ b/hot.py\n@@ -{line},3 +{line},3 @@\n def f{a}():\n-    return {v}\n+    return {}\n \n",
            v + 1
        );
        (format!("symbol:hot.py#f{a}"), patch)
    } else {
        let i = own_file(a, k, fleet);
        let path = rel(i);
        let patch = format!(
            "--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n file {i} line 0\n-file {i} line 1\n+file {i} line 1 by a{a}\n file {i} line 2\n"
        );
        (format!("file:{path}"), patch)
    }
}

/// This process's CPU time (user + system), from /proc/self/stat in clock
/// ticks (100 per second on Linux: 10 ms resolution, fine over seconds).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    let after_name = stat.rsplit(')').next().expect("the fields after the name");
    let ticks: Vec<u64> = after_name
        .split_whitespace()
        .skip(11) // state … cmajflt: utime is field 14, the 12th after the name
        .take(2)
        .map(|f| f.parse().expect("a tick count"))
        .collect();
    Duration::from_millis((ticks[0] + ticks[1]) * 10)
}

/// `claim.acquire` with `wait_ms`; `busy` (an apply is committing the
/// resource right now: milliseconds) is retried, and counted.
fn acquire(engine: &Engine, me: &Actor, resource: &str, busy: &AtomicUsize) {
    for _ in 0..1000 {
        let r = call(
            engine,
            "claim.acquire",
            json!({"resource_id": resource, "type": "write", "ttl_s": 3600, "wait_ms": 60000}),
            me,
        );
        match r {
            Ok(_) => return,
            Err(e) if e.code() == ErrorCode::Busy => {
                busy.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => panic!("claim.acquire {resource}: {e} {}", e.details()),
        }
    }
    panic!("claim.acquire {resource}: busy 1000 times");
}

/// `events.wait` after `since` for events of `kinds`.
fn wait(engine: &Engine, actor: &Actor, since: i64, kinds: &[&str], timeout_ms: u64) -> Value {
    okt(
        engine,
        "events.wait",
        json!({"since_seq": since, "kinds": kinds, "timeout_ms": timeout_ms, "limit": 1000}),
        actor,
    )
}

/// Every inbox item of `actor`, all pages.
fn inbox(engine: &Engine, actor: &Actor) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"limit": 100});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = okt(engine, "inbox.list", args, actor);
        items.extend(page["items"].as_array().cloned().unwrap_or_default());
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            return items;
        }
    }
}

/// Refusals a thread racing others expects and moves past: the state moved
/// on under it (stale, superseded, already voted or applied, busy).
fn expected_race(e: &roundtable::ToolError) -> bool {
    matches!(
        e.code(),
        ErrorCode::PreconditionFailed
            | ErrorCode::ValidationFailed
            | ErrorCode::Conflict
            | ErrorCode::IllegalTransition
            | ErrorCode::Busy
    )
}

struct Fleet {
    agents: usize,
    changes: usize,
    files: usize,
}

struct Outcome {
    wall: Duration,
    cpu: Duration,
    latencies: Vec<Duration>,
    rebases: usize,
    applies_refused: usize,
    busy: usize,
}

/// Every proposal in `status`, counted a page at a time.
fn count(engine: &Engine, host: &Actor, status: &str) -> usize {
    let mut n = 0;
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"status": status, "limit": 100});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = okt(engine, "proposal.list", args, host);
        n += page["proposals"].as_array().map_or(0, Vec::len);
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            return n;
        }
    }
}

fn agent_thread(
    engine: &Engine,
    fleet: &Fleet,
    a: usize,
    latencies: &Mutex<Vec<Duration>>,
    busy: &AtomicUsize,
) {
    let me = Actor::agent(id(&format!("a{a}")));
    // The log position this agent has read up to: its own proposal's
    // `proposal.applied` always comes after it.
    let mut seq = 0;
    for k in 0..fleet.changes {
        let (resource, patch) = change(a, k, fleet);
        let ta = Instant::now();
        acquire(engine, &me, &resource, busy);
        if std::env::var_os("RT_FLEET_TRACE").is_some() {
            println!("a{a} k{k} acquire {:.1} ms", ms(ta.elapsed()));
        }
        let t0 = Instant::now();
        let created = okt(
            engine,
            "proposal.create",
            json!({"task_id": "t1", "title": format!("a{a} change {k}"), "summary_md": "Fleet change.", "patch": patch}),
            &me,
        );
        let pid = created["proposal"]["id"].as_str().expect("id").to_owned();
        okt(
            engine,
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &me,
        );
        // Sleep until it lands (the orchestrator rebases it if the files
        // moved under it).
        'landing: loop {
            let w = okt(
                engine,
                "events.wait",
                json!({"since_seq": seq, "proposal_id": pid, "kinds": ["proposal.applied"], "timeout_ms": 30_000}),
                &me,
            );
            seq = w["next_since_seq"].as_i64().expect("seq");
            if w["timed_out"] == false {
                break 'landing;
            }
        }
        if std::env::var_os("RT_FLEET_TRACE").is_some() {
            println!("a{a} k{k} landed {:.1} ms", ms(t0.elapsed()));
        }
        latencies.lock().expect("lock").push(t0.elapsed());
    }
}

fn reviewer_thread(engine: &Engine, r: usize, done: &AtomicBool) {
    // Each proposal needs one approval; reviewer `r` approves those of
    // authors a{n} with n % 2 == r.
    let me = Actor::agent(id(&format!("r{r}")));
    let mut seq = 0;
    while !done.load(Ordering::Relaxed) {
        for item in inbox(engine, &me) {
            // Reviewer r takes the proposals of every other author.
            let author = item["proposal"]["author"].as_str().unwrap_or_default();
            let n: usize = author.trim_start_matches('a').parse().unwrap_or(0);
            if item["action"] != "vote" || n % 2 != r {
                continue;
            }
            let r = call(
                engine,
                "vote.cast",
                json!({"proposal_id": item["proposal"]["id"], "revision": item["revision"], "vote": "approve"}),
                &me,
            );
            if let Err(e) = r {
                assert!(expected_race(&e), "vote: {e} {}", e.details());
            }
        }
        let w = wait(
            engine,
            &me,
            seq,
            &["proposal.review_requested", "proposal.revised"],
            1000,
        );
        seq = w["next_since_seq"].as_i64().expect("seq");
    }
}

#[allow(clippy::too_many_arguments)]
fn orchestrator_thread(
    engine: &Engine,
    host: &Actor,
    total: usize,
    landed: &AtomicUsize,
    rebases: &AtomicUsize,
    refused: &AtomicUsize,
    done: &AtomicBool,
    finished: &Mutex<Option<Instant>>,
) {
    let mut seq = 0;
    let deadline = Instant::now() + Duration::from_secs(900);
    while landed.load(Ordering::Relaxed) < total {
        assert!(
            Instant::now() < deadline,
            "the fleet stalled at {} of {total} landed",
            landed.load(Ordering::Relaxed)
        );
        for item in inbox(engine, host) {
            if item["action"] != "apply" {
                continue;
            }
            let r = call(
                engine,
                "patch.apply",
                json!({"proposal_id": item["proposal"]["id"], "revision": item["revision"], "rebase": true}),
                host,
            );
            match r {
                Ok(out) => {
                    landed.fetch_add(1, Ordering::Relaxed);
                    if out["transaction"]["revision"] != item["revision"] {
                        rebases.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Err(e) if expected_race(&e) => {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("apply: {e} {}", e.details()),
            }
        }
        if landed.load(Ordering::Relaxed) == total {
            break;
        }
        let w = wait(engine, host, seq, &["vote.cast", "proposal.revised"], 1000);
        seq = w["next_since_seq"].as_i64().expect("seq");
    }
    *finished.lock().expect("lock") = Some(Instant::now());
    done.store(true, Ordering::Relaxed);
}

fn run_fleet(root: &Path, fleet: &Fleet) -> Outcome {
    let engine = Engine::open(root, EngineOptions::default()).expect("open");
    let host = Actor::orchestrator(id("host"));
    let agents = (0..fleet.agents).map(|a| (format!("a{a}"), "author"));
    let reviewers = (0..2).map(|r| (format!("r{r}"), "reviewer"));
    for (name, role) in agents.chain(reviewers) {
        okt(
            &engine,
            "agent.register",
            json!({"agent_id": name, "roles": [role]}),
            &host,
        );
    }
    okt(
        &engine,
        "task.create",
        json!({"task_id": "t1", "title": "Fleet"}),
        &host,
    );
    let total = fleet.agents * fleet.changes;
    let (landed, rebases, refused, busy) = Default::default();
    let done = AtomicBool::new(false);
    let latencies = Mutex::new(Vec::with_capacity(total));
    let finished = Mutex::new(None);
    let start_cpu = cpu_time();
    let start = Instant::now();
    std::thread::scope(|s| {
        for a in 0..fleet.agents {
            let (engine, latencies, busy) = (&engine, &latencies, &busy);
            s.spawn(move || agent_thread(engine, fleet, a, latencies, busy));
        }
        for r in 0..2 {
            let (engine, done) = (&engine, &done);
            s.spawn(move || reviewer_thread(engine, r, done));
        }
        let (engine, host, landed, rebases, refused, done, finished) = (
            &engine, &host, &landed, &rebases, &refused, &done, &finished,
        );
        s.spawn(move || {
            orchestrator_thread(
                engine, host, total, landed, rebases, refused, done, finished,
            )
        });
    });
    // Until the last landing (the reviewers then notice within their wait's
    // timeout that there is nothing left).
    let wall = finished
        .into_inner()
        .expect("lock")
        .expect("the orchestrator finished")
        - start;
    let cpu = cpu_time() - start_cpu;
    // Every proposal landed exactly once, and the log verifies.
    assert_eq!(count(&engine, &host, "applied"), total);
    let verify = okt(&engine, "events.verify", json!({}), &host);
    assert_eq!(verify["valid"], true, "{verify:#}");
    let landed: AtomicUsize = landed;
    assert_eq!(landed.into_inner(), total);
    Outcome {
        wall,
        cpu,
        latencies: latencies.into_inner().expect("lock"),
        rebases: AtomicUsize::into_inner(rebases),
        applies_refused: AtomicUsize::into_inner(refused),
        busy: AtomicUsize::into_inner(busy),
    }
}

/// The floor: the same changes, in agent order, each applied by its own
/// `git apply` process to a copy of the tree.
fn run_floor(root: &Path, fleet: &Fleet) -> Duration {
    let dir = root.join(".floor-patches");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let paths: Vec<std::path::PathBuf> = (0..fleet.changes)
        .flat_map(|k| (0..fleet.agents).map(move |a| (a, k)))
        .enumerate()
        .map(|(n, (a, k))| {
            let path = dir.join(format!("{n}.patch"));
            std::fs::write(&path, change(a, k, fleet).1).expect("write");
            path
        })
        .collect();
    let start = Instant::now();
    for p in &paths {
        let status = std::process::Command::new("git")
            .arg("apply")
            .arg(p)
            .current_dir(root)
            .status()
            .expect("run git apply");
        assert!(status.success(), "git apply {}", p.display());
    }
    let took = start.elapsed();
    std::fs::remove_dir_all(&dir).expect("cleanup");
    took
}

fn percentile(samples: &[Duration], q: f64) -> Duration {
    let mut s = samples.to_vec();
    s.sort_unstable();
    s[((s.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let fleet = Fleet {
        agents: env("RT_FLEET_AGENTS", 16),
        changes: env("RT_FLEET_CHANGES", 25),
        files: env("RT_FLEET_FILES", 100_000),
    };
    let base = if Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm/rt-fleet")
    } else {
        std::env::temp_dir().join("rt-fleet")
    };
    let t = Instant::now();
    let governed = tree(&base, fleet.files, small_body);
    let floor = tree(&base, fleet.files, small_body);
    for dir in [governed.path(), floor.path()] {
        std::fs::write(dir.join("hot.py"), hot(&vec![0; fleet.agents])).expect("write hot.py");
    }
    println!(
        "# fleet: {} agents × {} changes on {} files ({}), trees built in {:.1} s; load {}",
        fleet.agents,
        fleet.changes,
        fleet.files,
        base.display(),
        t.elapsed().as_secs_f64(),
        loadavg()
    );
    let floor_time = run_floor(floor.path(), &fleet);
    let out = run_fleet(governed.path(), &fleet);
    let read = |dir: &Path| std::fs::read_to_string(dir.join("hot.py")).expect("read hot.py");
    assert_eq!(
        read(governed.path()),
        read(floor.path()),
        "the fleet and the floor end with the same hot.py"
    );
    assert_eq!(
        read(governed.path()),
        hot(&vec![fleet.changes.div_ceil(5); fleet.agents])
    );
    let n = out.latencies.len();
    let rate = n as f64 / out.wall.as_secs_f64();
    let floor_rate = n as f64 / floor_time.as_secs_f64();
    let ratio = rate / floor_rate;
    println!();
    println!("| run | landings | wall | landed/s | p50 create→applied | p99 create→applied | CPU per landing |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
    println!(
        "| governed fleet ({} agents, 2 reviewers, 1 orchestrator) | {n} | {:.2} s | {rate:.1} | {:.1} ms | {:.1} ms | {:.2} ms |",
        fleet.agents,
        out.wall.as_secs_f64(),
        ms(percentile(&out.latencies, 0.5)),
        ms(percentile(&out.latencies, 0.99)),
        ms(out.cpu) / n as f64,
    );
    println!(
        "| floor: `git apply`, one process per patch | {n} | {:.2} s | {floor_rate:.1} | — | — | — |",
        floor_time.as_secs_f64()
    );
    println!();
    println!(
        "rebases: {} · applies refused (raced): {} · claim.acquire busy retries: {} · load {}",
        out.rebases,
        out.applies_refused,
        out.busy,
        loadavg()
    );
    println!();
    println!("| tool | calls | total | mean | per landing |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (tool, (calls, total)) in PROFILE.lock().expect("lock").iter() {
        println!(
            "| `{tool}` | {calls} | {:.0} ms | {:.2} ms | {:.2} ms |",
            ms(*total),
            ms(*total) / f64::from(*calls),
            ms(*total) / n as f64
        );
    }
    println!("(wall time inside each call, summed over threads: waits included)");
    let met = ratio >= TARGET_RATIO;
    println!(
        "- fleet rate ≥ {TARGET_RATIO}× the floor: **{}** ({ratio:.2}×)",
        if met { "met" } else { "not met" }
    );
    if !met {
        std::process::exit(1);
    }
}
