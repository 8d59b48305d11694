//! Parse throughput on a real patch: roundtable's parser against `diffy`
//! (the crate the parser was evaluated against; see ARCHITECTURE.md).
//!
//! `RT_BENCH_PATCH=/path/to/big.diff cargo bench -p roundtable --bench parse`
//! (`bench/diff_bench.py` builds such a patch and sets the variable;
//! `RT_BENCH_STRIP` sets `-p`, default 1).

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs {
        let start = Instant::now();
        let out = f();
        best = best.min(start.elapsed());
        last = Some(out);
    }
    (best, last.expect("at least one run"))
}

fn main() {
    let Ok(path) = std::env::var("RT_BENCH_PATCH") else {
        eprintln!("set RT_BENCH_PATCH to a patch file (bench/diff_bench.py makes one); skipping");
        return;
    };
    let bytes = std::fs::read(&path).expect("RT_BENCH_PATCH is readable");
    let strip = std::env::var("RT_BENCH_STRIP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mb = bytes.len() as f64 / 1e6;

    let (rt, files) = best_of(5, || {
        roundtable::diff::parse(&bytes, &roundtable::diff::ParseOptions::strip(strip))
            .expect("the benchmark patch parses")
            .files()
            .len()
    });
    let (dy, dy_files) = best_of(5, || {
        diffy::patch_set::PatchSet::parse_bytes(&bytes, diffy::patch_set::ParseOptions::gitdiff())
            .filter(Result::is_ok)
            .count()
    });
    let rate = |d: Duration| mb / d.as_secs_f64();
    println!("patch: {path} ({mb:.1} MB)");
    println!(
        "roundtable::diff::parse  {:>8.1} ms  {:>7.0} MB/s  {files} files",
        rt.as_secs_f64() * 1e3,
        rate(rt)
    );
    println!(
        "diffy PatchSet (gitdiff)  {:>8.1} ms  {:>7.0} MB/s  {dy_files} files",
        dy.as_secs_f64() * 1e3,
        rate(dy)
    );
    println!(
        "ratio roundtable/diffy throughput: {:.2}",
        rate(rt) / rate(dy)
    );
}
