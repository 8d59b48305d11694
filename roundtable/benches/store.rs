//! The store: what a `proposal.list` page costs as the table grows, and how
//! many durable `proposal.create` calls this machine's disk allows.
//!
//! `cargo bench -p roundtable --bench store`
//!
//! 1. **Paging.** Two workspaces, one with 1,000 proposals and one with
//!    100,000 (a few made by `proposal.create`, the rest copied from one of
//!    them with a recursive-CTE `INSERT … SELECT`, under the schema's
//!    constraints and foreign keys). `proposal.list` with `limit` 50 is
//!    timed for the first page, a middle page (reached by following
//!    `next_cursor`) and filtered pages; rounds alternate between the two
//!    workspaces. Exits non-zero if a gated page's median at 100k is more
//!    than 2× its median at 1k.
//! 2. **Durable creates.** `proposal.create` calls per second with
//!    `Durability::Full` and `Durability::Normal`, and this disk's fsync
//!    cost (4 KiB `pwrite` + `fdatasync`, in the store's directory), on the
//!    project disk (cargo's target tmp directory) and on /dev/shm.
//!
//! Sizes: `RT_BENCH_SMALL` (1000), `RT_BENCH_LARGE` (100000),
//! `RT_BENCH_PAGE_ROUNDS` (300), `RT_BENCH_CREATES` (300),
//! `RT_BENCH_FSYNCS` (300); `RT_BENCH_ONLY=paging|creates` runs one part.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::store::Durability;
use roundtable::{Actor, Engine, EngineOptions};
use serde_json::{json, Value};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

const PATCH: &str = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n";
/// Proposals made through the tool in each paging workspace.
const VIA_TOOL: usize = 20;
/// Tasks the proposals are spread over.
const TASKS: usize = 4;
const LIMIT: u64 = 50;

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// The project disk: cargo's per-target scratch directory (under target/).
fn project_dir() -> tempfile::TempDir {
    let base = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(base).expect("mkdir target tmp");
    tempfile::tempdir_in(base).expect("a scratch directory under target/")
}

fn shm_dir() -> Option<tempfile::TempDir> {
    Path::new("/dev/shm")
        .is_dir()
        .then(|| tempfile::tempdir_in("/dev/shm").expect("a scratch directory on /dev/shm"))
}

struct World {
    engine: Engine,
    author: Actor,
}

impl World {
    /// A workspace with one file, an author agent and `TASKS` tasks.
    fn new(dir: &Path, durability: Durability) -> World {
        std::fs::write(dir.join("hello.txt"), "hello\n").expect("write hello.txt");
        let engine = World::open(dir, durability);
        let host = Actor::orchestrator(id("host"));
        call(
            &engine,
            "agent.register",
            json!({"agent_id": "alice", "roles": ["author"]}),
            &host,
        );
        for t in 1..=TASKS {
            call(
                &engine,
                "task.create",
                json!({"task_id": format!("t{t}"), "title": format!("Task {t}")}),
                &host,
            );
        }
        World {
            engine,
            author: Actor::agent(id("alice")),
        }
    }

    fn open(dir: &Path, durability: Durability) -> Engine {
        Engine::open(
            dir,
            EngineOptions {
                durability,
                ..Default::default()
            },
        )
        .expect("the engine opens")
    }

    fn create(&self, n: usize) -> Value {
        call(
            &self.engine,
            "proposal.create",
            json!({
                "task_id": format!("t{}", n % TASKS + 1),
                "title": format!("Say hello #{n}"),
                "summary_md": "Greets the world.",
                "patch": PATCH,
            }),
            &self.author,
        )
    }
}

fn call(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Value {
    engine
        .call(tool, args.clone(), actor)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
}

// ---------------------------------------------------------------- paging

/// A workspace in `dir` holding `total` proposals; returns its engine.
///
/// Statuses of the copied rows: 10 % `in_review`, 5 % each `applied` and
/// `rejected`, the rest `pending`; none is `withdrawn`. Tasks round-robin.
fn paging_workspace(dir: &Path, total: usize) -> Engine {
    let w = World::new(dir, Durability::Normal);
    for n in 0..VIA_TOOL.min(total) {
        w.create(n);
    }
    drop(w);
    let db = dir.join(".roundtable/store.db");
    let conn = rusqlite::Connection::open(&db).expect("open the store with rusqlite");
    conn.execute_batch("PRAGMA foreign_keys = ON;")
        .expect("foreign keys on");
    let first = VIA_TOOL as i64 + 1;
    let last = total as i64;
    if last >= first {
        let inserted = conn
            .execute(
                "WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
                 INSERT INTO proposals (id, task_id, author, title, summary_md, risk, status,
                                        latest_revision, created_at, updated_at)
                 SELECT printf('prop-BULK%022d', n.i),
                        't' || (n.i % ?3 + 1),
                        p.author,
                        p.title || ' (copy ' || n.i || ')',
                        p.summary_md,
                        p.risk,
                        CASE n.i % 20 WHEN 0 THEN 'in_review' WHEN 10 THEN 'in_review'
                                      WHEN 5 THEN 'applied' WHEN 15 THEN 'rejected'
                                      ELSE 'pending' END,
                        p.latest_revision,
                        p.created_at + n.i,
                        p.updated_at + n.i
                 FROM n, (SELECT * FROM proposals ORDER BY seq LIMIT 1) AS p",
                rusqlite::params![first, last, TASKS as i64],
            )
            .expect("bulk insert");
        assert_eq!(inserted as i64, last - first + 1);
    }
    let count: i64 = conn
        .query_row("SELECT count(*) FROM proposals", [], |r| r.get(0))
        .expect("count");
    assert_eq!(count, total as i64);
    drop(conn);
    World::open(dir, Durability::Normal)
}

/// The arguments of one kind of page.
struct PageKind {
    name: &'static str,
    /// Filters (no `limit`, no `cursor`).
    filter: Value,
    /// Reach the middle page by following `next_cursor` (else the first page).
    middle: bool,
    /// Counted towards the 2× target.
    gated: bool,
}

fn page_kinds() -> Vec<PageKind> {
    vec![
        PageKind {
            name: "first page",
            filter: json!({}),
            middle: false,
            gated: true,
        },
        PageKind {
            name: "middle page (cursor)",
            filter: json!({}),
            middle: true,
            gated: true,
        },
        PageKind {
            name: "status=in_review, first",
            filter: json!({"status": "in_review"}),
            middle: false,
            gated: true,
        },
        PageKind {
            name: "status=in_review, middle",
            filter: json!({"status": "in_review"}),
            middle: true,
            gated: true,
        },
        PageKind {
            name: "status=withdrawn (no match)",
            filter: json!({"status": "withdrawn"}),
            middle: false,
            gated: true,
        },
        PageKind {
            name: "task_id=t2, middle",
            filter: json!({"task_id": "t2"}),
            middle: true,
            gated: true,
        },
        PageKind {
            name: "task_id+status (no match)",
            filter: json!({"task_id": "t2", "status": "withdrawn"}),
            middle: false,
            gated: false,
        },
    ]
}

fn list_args(filter: &Value, cursor: Option<&Value>) -> Value {
    let mut args = filter.clone();
    args["limit"] = json!(LIMIT);
    if let Some(c) = cursor {
        args["cursor"] = c.clone();
    }
    args
}

/// Follow `next_cursor` from the first page, checking every proposal comes
/// once; returns the cursor that reaches the middle page (`None`: the
/// first page) and the number of proposals the filter matches.
fn walk(engine: &Engine, actor: &Actor, filter: &Value) -> (Option<Value>, usize) {
    let mut cursors = vec![None::<Value>];
    let mut seen = std::collections::HashSet::new();
    loop {
        let cursor = cursors.last().expect("a cursor").clone();
        let page = call(
            engine,
            "proposal.list",
            list_args(filter, cursor.as_ref()),
            actor,
        );
        for p in page["proposals"].as_array().expect("proposals") {
            let pid = p["id"].as_str().expect("id").to_owned();
            assert!(seen.insert(pid), "a proposal listed twice");
        }
        match &page["next_cursor"] {
            Value::Null => break,
            c => cursors.push(Some(c.clone())),
        }
    }
    let middle = cursors[cursors.len() / 2].clone();
    (middle, seen.len())
}

/// SQLite's plan for the query `proposal.list` runs with `filter` (the
/// statement is rebuilt here the way `proposals.rs` builds it).
fn query_plan(db: &Path, filter: &Value) -> String {
    let conn = rusqlite::Connection::open(db).expect("open the store with rusqlite");
    let mut sql = "SELECT id, task_id, author, title, summary_md, risk, status, latest_revision, \
                   created_at, updated_at, seq FROM proposals WHERE seq > ?1"
        .to_owned();
    let mut values: Vec<String> = vec!["0".to_owned()];
    for column in ["task_id", "status", "author"] {
        if let Some(v) = filter.get(column).and_then(Value::as_str) {
            values.push(v.to_owned());
            sql.push_str(&format!(" AND {column} = ?{}", values.len()));
        }
    }
    sql.push_str(&format!(" ORDER BY seq LIMIT {}", LIMIT + 1));
    let mut stmt = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .expect("explain");
    let rows = stmt
        .query_map(rusqlite::params_from_iter(values.iter()), |r| {
            r.get::<_, String>(3)
        })
        .expect("explain runs");
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .expect("plan rows")
        .join("; ")
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn paging() -> bool {
    let small = env_usize("RT_BENCH_SMALL", 1_000);
    let large = env_usize("RT_BENCH_LARGE", 100_000);
    let rounds = env_usize("RT_BENCH_PAGE_ROUNDS", 300).max(1);
    println!("== proposal.list, limit {LIMIT}: {small} vs {large} proposals (project disk)");
    let mut engines = Vec::new();
    let mut dirs = Vec::new();
    for total in [small, large] {
        let dir = project_dir();
        let start = Instant::now();
        let engine = paging_workspace(dir.path(), total);
        let size = std::fs::metadata(dir.path().join(".roundtable/store.db"))
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "built {total:>7} proposals in {:.2} s ({} via proposal.create, store.db {:.1} MiB)",
            start.elapsed().as_secs_f64(),
            VIA_TOOL.min(total),
            size as f64 / (1 << 20) as f64
        );
        engines.push(engine);
        dirs.push(dir);
    }
    let reader = Actor::agent(id("alice"));
    let kinds = page_kinds();
    // Per kind, per workspace: the arguments of the timed call.
    let mut args: Vec<[Value; 2]> = Vec::new();
    for kind in &kinds {
        let mut pair = Vec::new();
        for (engine, total) in engines.iter().zip([small, large]) {
            let cursor = if kind.middle {
                let (cursor, matched) = walk(engine, &reader, &kind.filter);
                if kind.filter.as_object().is_some_and(|o| o.is_empty()) {
                    assert_eq!(matched, total, "paging returns each proposal once");
                }
                cursor
            } else {
                None
            };
            pair.push(list_args(&kind.filter, cursor.as_ref()));
        }
        let [a, b]: [Value; 2] = pair.try_into().expect("two workspaces");
        args.push([a, b]);
    }
    let before = loadavg();
    let mut times: Vec<[Vec<Duration>; 2]> = kinds.iter().map(|_| [vec![], vec![]]).collect();
    let mut rows: Vec<[usize; 2]> = vec![[0, 0]; kinds.len()];
    // Warm-up, then timed rounds; each round runs every page on both
    // stores, which store goes first alternating. Gated pages run first,
    // on their own: the ungated ones can scan the whole table, which
    // would leave the next call with cold caches.
    for gated in [true, false] {
        for round in 0..rounds + 10 {
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for (k, pair) in args.iter().enumerate() {
                if kinds[k].gated != gated {
                    continue;
                }
                for w in order {
                    let start = Instant::now();
                    let page = call(&engines[w], "proposal.list", pair[w].clone(), &reader);
                    let took = start.elapsed();
                    rows[k][w] = page["proposals"].as_array().map_or(0, Vec::len);
                    if round >= 10 {
                        times[k][w].push(took);
                    }
                }
            }
        }
    }
    let after = loadavg();
    println!(
        "{rounds} timed rounds (after 10 warm-up); load average {before} before, {after} after"
    );
    println!(
        "{:<30} {:>6} {:>11} {:>11} {:>6} {:>11} {:>11} {:>7}",
        "page",
        "rows",
        format!("{small} med"),
        format!("{small} best"),
        "rows",
        format!("{large} med"),
        format!("{large} best"),
        "ratio"
    );
    let mut ok = true;
    for (k, kind) in kinds.iter().enumerate() {
        let best_s = *times[k][0].iter().min().expect("a run");
        let best_l = *times[k][1].iter().min().expect("a run");
        let med_s = median(times[k][0].clone());
        let med_l = median(times[k][1].clone());
        let ratio = med_l.as_secs_f64() / med_s.as_secs_f64();
        let verdict = if !kind.gated {
            "(not gated)"
        } else if ratio <= 2.0 {
            "ok"
        } else {
            ok = false;
            "FAIL: > 2×"
        };
        println!(
            "{:<30} {:>6} {:>8.1} µs {:>8.1} µs {:>6} {:>8.1} µs {:>8.1} µs {:>6.2}× {verdict}",
            kind.name,
            rows[k][0],
            micros(med_s),
            micros(best_s),
            rows[k][1],
            micros(med_l),
            micros(best_l),
            ratio
        );
    }
    let db = dirs[1].path().join(".roundtable/store.db");
    for kind in &kinds {
        println!("plan, {:<28} {}", kind.name, query_plan(&db, &kind.filter));
    }
    println!(
        "ratio = median at {large} / median at {small}; target ≤ 2.00 for gated pages: {}",
        if ok { "met" } else { "NOT met" }
    );
    ok
}

// ------------------------------------------------------- durable creates

/// Flush requests completed and milliseconds spent flushing, from
/// /proc/diskstats, for the block device holding `path` (`None` on tmpfs
/// or when the kernel does not report flushes). Whole-device counters:
/// other processes' flushes are counted too.
fn disk_flushes(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(path).ok()?.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let stats = std::fs::read_to_string("/proc/diskstats").ok()?;
    stats.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 20 && f[0] == major.to_string() && f[1] == minor.to_string() {
            Some((f[18].parse().ok()?, f[19].parse().ok()?))
        } else {
            None
        }
    })
}

fn flush_delta(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<(u64, u64)> {
    Some((after?.0 - before?.0, after?.1 - before?.1))
}

/// What one round of a 4 KiB `pwrite` and `fdatasync` costs on a file in
/// `dir`: median and best, with `gap` of busy CPU before each round (the
/// spin is not timed), and the device's flush counters over the loop.
struct Fsync {
    median: Duration,
    best: Duration,
    flushes: Option<(u64, u64)>,
}

fn fsync_cost(dir: &Path, n: usize, gap: Duration) -> Fsync {
    let path = dir.join("fsync-probe");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .expect("open the fsync probe");
    let block = [0x5au8; 4096];
    file.write_all_at(&block, 0).expect("write");
    file.sync_all().expect("fsync");
    let mut times = Vec::with_capacity(n);
    let before = disk_flushes(dir);
    for _ in 0..n {
        let spin = Instant::now();
        while spin.elapsed() < gap {
            std::hint::spin_loop();
        }
        let start = Instant::now();
        file.write_all_at(&block, 0).expect("write");
        file.sync_data().expect("fdatasync");
        times.push(start.elapsed());
    }
    let flushes = flush_delta(before, disk_flushes(dir));
    drop(file);
    std::fs::remove_file(&path).expect("remove the fsync probe");
    Fsync {
        best: *times.iter().min().expect("a round"),
        median: median(times),
        flushes,
    }
}

/// One durability's measurements on one disk.
#[derive(Default)]
struct Creates {
    calls: Vec<Duration>,
    flushes: Option<(u64, u64)>,
}

impl Creates {
    fn mean(&self) -> Duration {
        self.calls.iter().sum::<Duration>() / self.calls.len() as u32
    }
}

fn durable_creates() {
    let n = env_usize("RT_BENCH_CREATES", 300).max(1);
    let rounds = env_usize("RT_BENCH_FSYNCS", 300).max(1);
    const BLOCK: usize = 25;
    println!();
    println!(
        "== proposal.create, {n} calls per durability (blocks of {BLOCK}, Full and Normal alternating), \
         fsync probe {rounds} rounds"
    );
    println!("load average before: {}", loadavg());
    let mut places: Vec<(&str, tempfile::TempDir)> = vec![("project disk", project_dir())];
    if let Some(shm) = shm_dir() {
        places.push(("/dev/shm", shm));
    }
    for (name, base) in &places {
        let dirs = [
            tempfile::tempdir_in(base.path()).expect("scratch"),
            tempfile::tempdir_in(base.path()).expect("scratch"),
        ];
        let worlds = [
            World::new(dirs[0].path(), Durability::Full),
            World::new(dirs[1].path(), Durability::Normal),
        ];
        for w in &worlds {
            for i in 0..10 {
                w.create(i);
            }
        }
        let mut results = [Creates::default(), Creates::default()];
        let mut done = 0;
        while done < n {
            let block = BLOCK.min(n - done);
            for (w, r) in worlds.iter().zip(results.iter_mut()) {
                let before = disk_flushes(base.path());
                for i in 0..block {
                    let start = Instant::now();
                    let out = w.create(10 + done + i);
                    r.calls.push(start.elapsed());
                    assert_eq!(out["proposal"]["status"], "pending");
                }
                let delta = flush_delta(before, disk_flushes(base.path()));
                r.flushes = match (r.flushes, delta) {
                    (Some(a), Some(b)) => Some((a.0 + b.0, a.1 + b.1)),
                    (None, d) if done == 0 => d,
                    _ => None,
                };
            }
            done += block;
        }
        let store_dir = dirs[0].path().join(".roundtable");
        let tight = fsync_cost(&store_dir, rounds, Duration::ZERO);
        let spun = fsync_cost(&store_dir, rounds / 2, Duration::from_millis(1));
        println!("-- {name} ({})", base.path().display());
        for (label, r) in ["Full", "Normal"].iter().zip(&results) {
            let mean = r.mean();
            let flushes = r.flushes.map_or("—".to_owned(), |(count, _)| {
                format!("{:.2}", count as f64 / r.calls.len() as f64)
            });
            println!(
                "proposal.create {label:<6}  {:>6.0} calls/s   mean {:>7.1} µs   median {:>7.1} µs   device flushes/call {flushes}",
                1.0 / mean.as_secs_f64(),
                micros(mean),
                micros(median(r.calls.clone())),
            );
        }
        let per_flush = |f: &Fsync| {
            f.flushes.map_or("—".to_owned(), |(count, ms)| {
                format!(
                    "{count} device flushes, {:.2} ms each in the block layer",
                    ms as f64 / count.max(1) as f64
                )
            })
        };
        println!(
            "fsync probe (4 KiB pwrite + fdatasync, in the store directory): median {:.1} µs, best {:.1} µs; {}",
            micros(tight.median),
            micros(tight.best),
            per_flush(&tight)
        );
        println!(
            "fsync probe after 1 ms of CPU each round:                       median {:.1} µs, best {:.1} µs; {}",
            micros(spun.median),
            micros(spun.best),
            per_flush(&spun)
        );
        println!(
            "Full create mean / probe median: {:.2}; (Full − Normal) mean / probe median: {:.2}",
            results[0].mean().as_secs_f64() / tight.median.as_secs_f64(),
            (results[0].mean().as_secs_f64() - results[1].mean().as_secs_f64())
                / tight.median.as_secs_f64()
        );
    }
    println!("load average after: {}", loadavg());
}

fn main() {
    let only = std::env::var("RT_BENCH_ONLY").unwrap_or_default();
    let start = Instant::now();
    let mut ok = true;
    if only.is_empty() || only == "paging" {
        ok = paging();
    }
    if only.is_empty() || only == "creates" {
        durable_creates();
    }
    println!();
    println!("total {:.1} s", start.elapsed().as_secs_f64());
    if !ok {
        std::process::exit(1);
    }
}
