//! `patch.validate` of a 3-file change must cost about the same in a
//! workspace of 1,000 files as in one of 100,000 (target: within 2×): it
//! reads the store snapshot and the touched files, not the repository.
//!
//! `cargo bench -p roundtable --bench validate`. Workspaces are
//! generated on /dev/shm when it exists (else in the temp directory) and,
//! unless `RT_BENCH_DISK=0`, a second pair under cargo's target temporary
//! directory (the project disk). Each workspace gets the whole flow —
//! agents, task, a write claim on each of the three files, the proposal,
//! review, an approval — and then `patch.validate` is timed, the
//! workspaces interleaved round by round. A second proposal, by another
//! agent holding a *directory* claim, shows what a directory claim costs:
//! its freshness check digests the subtree with a walk of the whole tree.
//!
//! Exits non-zero when, on one filesystem, the 100k/1k ratio of the median
//! with file claims exceeds 2.0.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

mod common;

use common::*;
use roundtable::{Actor, Engine, EngineOptions, Id};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Timed rounds of the file-claim validation (each round: every workspace once).
const ROUNDS: usize = 300;
/// Timed rounds of the directory-claim validation (it walks the tree).
const DIR_ROUNDS: usize = 15;
/// The file the directory-claim proposal changes; its directory is claimed.
const DIR_FILE: usize = 150;

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

fn actor(kind: fn(Id) -> Actor, name: &str) -> Actor {
    kind(id(name))
}

/// One generated workspace with both proposals made and approved.
struct Bench {
    label: String,
    files: usize,
    _dir: tempfile::TempDir,
    engine: Engine,
    reader: Actor,
    /// The 3-file proposal, its author holding a file claim on each file.
    file_claims: String,
    /// The 1-file proposal, its author holding a claim on the file's directory.
    dir_claim: String,
    generate: Duration,
    warm_state: Duration,
    create: Duration,
}

impl Bench {
    fn new(label: &str, base: &Path, files: usize) -> Bench {
        let start = Instant::now();
        let dir = tree(base, files, numbered_lines);
        let generate = start.elapsed();
        let engine = Engine::open(dir.path(), EngineOptions::default()).expect("the engine opens");
        let host = actor(Actor::orchestrator, "host");
        let alice = actor(Actor::agent, "alice");
        let bob = actor(Actor::agent, "bob");
        let carol = actor(Actor::agent, "carol");
        for (name, role) in [
            ("alice", "author"),
            ("bob", "reviewer"),
            ("carol", "author"),
        ] {
            ok(
                &engine,
                "agent.register",
                json!({"agent_id": name, "roles": [role]}),
                &host,
            );
        }
        for task in ["t1", "t2"] {
            ok(
                &engine,
                "task.create",
                json!({"task_id": task, "title": "Edit some files"}),
                &host,
            );
        }
        let touched = [7, files / 2 + 3, files - 1];
        for &i in &touched {
            ok(
                &engine,
                "claim.acquire",
                json!({"resource_id": format!("file:{}", rel(i)), "type": "write", "ttl_s": 3600, "task_id": "t1"}),
                &alice,
            );
        }
        let dir_path = rel(DIR_FILE);
        ok(
            &engine,
            "claim.acquire",
            json!({"resource_id": format!("directory:{}", parent(&dir_path)), "type": "write", "ttl_s": 3600, "task_id": "t2"}),
            &carol,
        );

        // The whole-tree state, timed for the report (it warms the stat cache).
        let start = Instant::now();
        let state = roundtable::state::compute_state(dir.path()).expect("the state");
        let warm_state = start.elapsed();
        assert_eq!(state.files, files, "the state counts every generated file");

        let start = Instant::now();
        let file_claims = proposal(&engine, &alice, "t1", &line19_patch(&touched), &bob);
        let create = start.elapsed();
        let dir_claim = proposal(&engine, &carol, "t2", &line19_patch(&[DIR_FILE]), &bob);

        let b = Bench {
            label: label.to_owned(),
            files,
            _dir: dir,
            engine,
            reader: alice,
            file_claims,
            dir_claim,
            generate,
            warm_state,
            create,
        };
        for pid in [&b.file_claims, &b.dir_claim] {
            let report = b.validate(pid);
            assert_eq!(report["valid"], true, "{pid} validates: {report:#}");
        }
        b
    }

    fn validate(&self, pid: &str) -> Value {
        ok(
            &self.engine,
            "patch.validate",
            json!({"proposal_id": pid}),
            &self.reader,
        )
    }

    fn time(&self, pid: &str) -> Duration {
        let start = Instant::now();
        let report = self.validate(pid);
        let took = start.elapsed();
        assert_eq!(report["valid"], true);
        took
    }
}

fn main() {
    let shm = Path::new("/dev/shm");
    let fast: PathBuf = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let mut places = vec![(fast.display().to_string(), fast.join("rt-validate-bench"))];
    if std::env::var("RT_BENCH_DISK").as_deref() != Ok("0") {
        let disk = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rt-validate-bench");
        places.push((disk.display().to_string(), disk));
    }

    let mut benches = Vec::new();
    for (label, base) in &places {
        for files in [1_000usize, 100_000] {
            let b = Bench::new(label, base, files);
            println!(
                "setup {files:>7} files on {label}: generated in {:.1} s, warm-up state {:.0} ms, proposal.create (warm cache) + review + vote {:.1} ms",
                b.generate.as_secs_f64(),
                ms(b.warm_state),
                ms(b.create)
            );
            benches.push(b);
        }
    }

    // Warm-up, then interleaved rounds so that load on a shared machine
    // falls on every workspace alike.
    for b in &benches {
        for _ in 0..20 {
            b.time(&b.file_claims);
        }
    }
    let mut file_samples = vec![Vec::with_capacity(ROUNDS); benches.len()];
    for _ in 0..ROUNDS {
        for (b, s) in benches.iter().zip(&mut file_samples) {
            s.push(b.time(&b.file_claims));
        }
    }
    let mut dir_samples = vec![Vec::with_capacity(DIR_ROUNDS); benches.len()];
    for b in &benches {
        b.time(&b.dir_claim);
    }
    for _ in 0..DIR_ROUNDS {
        for (b, s) in benches.iter().zip(&mut dir_samples) {
            s.push(b.time(&b.dir_claim));
        }
    }

    println!();
    println!(
        "patch.validate, {ROUNDS} rounds (file claims) / {DIR_ROUNDS} rounds (directory claim):"
    );
    let mut medians = Vec::new();
    for ((b, f), d) in benches.iter().zip(&mut file_samples).zip(&mut dir_samples) {
        let (fm, fp, fmin) = stats(f);
        let (dm, dp, _) = stats(d);
        println!(
            "  {:>7} files on {}: 3 files, 3 file claims: median {:.3} ms, p90 {:.3} ms, min {:.3} ms | 1 file, 1 directory claim: median {:.2} ms, p90 {:.2} ms",
            b.files,
            b.label,
            ms(fm),
            ms(fp),
            ms(fmin),
            ms(dm),
            ms(dp)
        );
        medians.push((b.label.clone(), b.files, fm, dm));
    }

    println!();
    let mut over = false;
    for pair in medians.chunks(2) {
        let [(label, _, small, small_dir), (_, _, large, large_dir)] = pair else {
            continue;
        };
        let ratio = large.as_secs_f64() / small.as_secs_f64();
        let dir_ratio = large_dir.as_secs_f64() / small_dir.as_secs_f64();
        println!(
            "ratio 100k/1k on {label}: {ratio:.2} with file claims (target ≤ 2.0: {}); {dir_ratio:.1} with a directory claim (not a target)",
            if ratio <= 2.0 { "met" } else { "NOT met" }
        );
        over |= ratio > 2.0;
    }
    drop(benches);
    for (_, base) in &places {
        // The scratch base, if nothing else uses it.
        std::fs::remove_dir(base).ok();
    }
    if over {
        std::process::exit(1);
    }
}
