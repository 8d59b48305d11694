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
//! Prints each figure and its ratio to SQLite's one host. The landing
//! queue across 1, 2 and 4 PostgreSQL hosts is measured by the queue bench.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::{Actor, Engine, EngineOptions, ErrorCode};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

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

fn main() {
    let base = scratch_base().join("rt-bench-hosts");
    std::fs::create_dir_all(&base).expect("the scratch base");
    let creates = env_usize("RT_HOSTS_CREATES", 200);
    let landings = env_usize("RT_HOSTS_LANDINGS", 40);
    let cluster = base.join(format!("pg-{}", std::process::id()));
    let server = pg_cluster(&["start", cluster.to_str().expect("utf-8")]);
    let schema = |name: &str| format!("{server}?schema={name}");
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
    pg_cluster(&["stop", cluster.to_str().expect("utf-8")]);
}
