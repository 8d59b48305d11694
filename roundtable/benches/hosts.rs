//! The governance store on PostgreSQL beside the embedded SQLite one
//! (issue 20): durable `proposal.create` calls per second, and governed
//! landings per second, with 1 and 4 hosts on PostgreSQL and 1 on SQLite,
//! in one run.
//!
//! `cargo bench -p roundtable --bench hosts`. It starts its own
//! PostgreSQL cluster with `scripts/pg-cluster` (fsync on: every commit
//! durable, as SQLite's `synchronous = FULL`), with its data directory
//! and every repository and SQLite store on the same file system
//! (`/dev/shm` when it exists, so both engines' fsyncs cost alike), and
//! stops it at the end.
//!
//! - **Hosts**: each host is one engine on its own bare clone of one bare
//!   remote, in git landing mode through the remote; the PostgreSQL hosts
//!   share one database (a schema of their own per measurement), the
//!   SQLite host has its store in its clone. 4 hosts are 4 engines on 4
//!   threads of this process, each with its own connections.
//! - **`proposal.create`**: each host creates `RT_HOSTS_CREATES` (200)
//!   proposals of a one-file patch (a new file); calls per second over all
//!   hosts, wall clock.
//! - **Landings**: each host takes `RT_HOSTS_LANDINGS` (40) changes through
//!   the whole governed cycle — claim, `proposal.create`, review request,
//!   vote, `patch.apply` pushing to the remote (applied again when another
//!   host won the push race) — landings per second over all hosts.
//!
//! - **The landing queue across hosts** (issue 34): 1, 2 and 4 hosts, each
//!   an engine on its own working-tree clone of one remote (git mode
//!   through it), on one PostgreSQL database, `[queue] lanes = true`, a
//!   check that takes `RT_HOSTS_QUEUE_CHECK_MS` (200) ms (`sleep`), depth
//!   `RT_HOSTS_QUEUE_DEPTH` (4) per host. The workload: 8 agents, each
//!   adding files in a directory of its own, `RT_HOSTS_QUEUE_PROPOSALS`
//!   (64) approved proposals queued in turn (disjoint lanes). Each host
//!   runs `queue.run` in a loop until the queue is empty; landings per
//!   second over all hosts, wall clock, with each host's landings and
//!   the states checked in all (a state checked twice would show here).
//!   `RT_HOSTS_QUEUE_ONLY=1` runs only this part.
//!
//! Prints each figure and its ratio to SQLite's one host (the queue's, to
//! PostgreSQL's one host).

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::{Actor, Engine, EngineOptions, ErrorCode};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map_or(default, |v| v.parse().expect("a number"))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@example.com")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@example.com")
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn pg_cluster(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster");
    let out = Command::new("bash")
        .arg(script)
        .args(args)
        .output()
        .expect("run pg-cluster");
    assert!(
        out.status.success(),
        "pg-cluster {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A bare remote with one file, in `top`.
fn remote(top: &Path) -> PathBuf {
    let seed = top.join("seed");
    std::fs::create_dir_all(&seed).expect("mkdir");
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("README"), "bench\n").expect("write");
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "base"]);
    git(top, &["clone", "-q", "--bare", "seed", "remote.git"]);
    top.join("remote.git")
}

struct Host {
    engine: Engine,
    name: String,
    host: Actor,
    author: Actor,
    reviewer: Actor,
}

impl Host {
    /// Host `k` on its own bare clone of `top/remote.git`, on `store`.
    fn open(top: &Path, k: usize, store: Option<&str>) -> Host {
        let clone = top.join(format!("h{k}.git"));
        git(
            top,
            &[
                "clone",
                "-q",
                "--bare",
                "remote.git",
                clone.to_str().expect("utf-8"),
            ],
        );
        let engine = Engine::open(
            &clone,
            EngineOptions {
                store: store.map(str::to_owned),
                ..EngineOptions::default()
            },
        )
        .expect("open");
        let h = Host {
            engine,
            name: format!("h{k}"),
            host: Actor::orchestrator(id(&format!("host{k}"))),
            author: Actor::agent(id(&format!("a{k}"))),
            reviewer: Actor::agent(id(&format!("r{k}"))),
        };
        ok(
            &h.engine,
            "agent.register",
            json!({"agent_id": format!("a{k}"), "roles": ["author"]}),
            &h.host,
        );
        ok(
            &h.engine,
            "agent.register",
            json!({"agent_id": format!("r{k}"), "roles": ["reviewer"]}),
            &h.host,
        );
        ok(
            &h.engine,
            "task.create",
            json!({"task_id": format!("t{k}"), "title": "bench"}),
            &h.host,
        );
        ok(
            &h.engine,
            "workspace.configure",
            json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
            &h.host,
        );
        h
    }

    fn create(&self, path: &str) -> String {
        let patch = format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{path}\n");
        ok(
            &self.engine,
            "proposal.create",
            json!({"task_id": format!("t{}", &self.name[1..]), "title": path, "summary_md": "s", "patch": patch}),
            &self.author,
        )["proposal"]["id"]
            .as_str()
            .expect("an id")
            .to_owned()
    }

    /// One whole governed landing of a new file.
    fn land(&self, path: &str) {
        ok(
            &self.engine,
            "claim.acquire",
            json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 3600}),
            &self.author,
        );
        let pid = self.create(path);
        ok(
            &self.engine,
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &self.author,
        );
        ok(
            &self.engine,
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &self.reviewer,
        );
        for _ in 0..200 {
            match self.engine.call(
                "patch.apply",
                json!({"proposal_id": pid, "revision": 1}),
                &self.host,
            ) {
                Ok(_) => return,
                Err(e) if e.code() == ErrorCode::PreconditionFailed => {}
                Err(e) => panic!("{pid}: {e} {}", e.details()),
            }
        }
        panic!("{pid} did not land");
    }
}

/// Calls per second of `hosts` hosts each running `each` times `work`,
/// on fresh hosts on `store` under `base`.
fn rate(
    base: &Path,
    hosts: usize,
    store: Option<&str>,
    each: usize,
    work: fn(&Host, usize),
) -> f64 {
    let top = tempfile::tempdir_in(base).expect("tempdir");
    remote(top.path());
    let hs: Vec<Host> = (0..hosts)
        .map(|k| Host::open(top.path(), k, store))
        .collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for h in &hs {
            s.spawn(move || {
                for i in 0..each {
                    work(h, i);
                }
            });
        }
    });
    let elapsed = start.elapsed().max(Duration::from_micros(1));
    (hosts * each) as f64 / elapsed.as_secs_f64()
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
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm/rt-bench-hosts")
    } else {
        std::env::temp_dir().join("rt-bench-hosts")
    };
    std::fs::create_dir_all(&base).expect("the scratch base");
    let creates = env_usize("RT_HOSTS_CREATES", 200);
    let landings = env_usize("RT_HOSTS_LANDINGS", 40);
    let cluster = base.join(format!("pg-{}", std::process::id()));
    let server = pg_cluster(&["start", cluster.to_str().expect("utf-8")]);
    let schema = |name: &str| format!("{server}?schema={name}");
    if std::env::var_os("RT_HOSTS_QUEUE_ONLY").is_some() {
        queue_rows(&base, &schema);
        pg_cluster(&["stop", cluster.to_str().expect("utf-8")]);
        return;
    }
    println!(
        "hosts bench: {creates} creates and {landings} landings per host, durable commits, on {} (load {})",
        base.display(),
        loadavg()
    );
    let create: fn(&Host, usize) = |h, i| {
        h.create(&format!("{}/c{i}.txt", h.name));
    };
    let land: fn(&Host, usize) = |h, i| h.land(&format!("{}/l{i}.txt", h.name));
    let pg_create = |n: usize, s: &str| rate(&base, n, Some(&schema(s)), creates, create);
    let pg_land = |n: usize, s: &str| rate(&base, n, Some(&schema(s)), landings, land);
    let rows = [
        (
            "proposal.create/s",
            rate(&base, 1, None, creates, create),
            pg_create(1, "c1"),
            pg_create(4, "c4"),
        ),
        (
            "landings/s",
            rate(&base, 1, None, landings, land),
            pg_land(1, "l1"),
            pg_land(4, "l4"),
        ),
    ];
    println!(
        "{:<20} {:>14} {:>18} {:>18}",
        "", "SQLite 1 host", "PostgreSQL 1 host", "PostgreSQL 4 hosts"
    );
    for (what, sqlite, pg1, pg4) in rows {
        println!(
            "{what:<20} {sqlite:>14.1} {:>18} {:>18}",
            format!("{pg1:.1} ({:.2}×)", pg1 / sqlite),
            format!("{pg4:.1} ({:.2}×)", pg4 / sqlite),
        );
    }
    queue_rows(&base, &schema);
    pg_cluster(&["stop", cluster.to_str().expect("utf-8")]);
}
