//! Building the changeset of a 3-file patch must cost the same in a tree of
//! 1,000 files as in one of 100,000: only the touched files are read.
//!
//! `cargo bench -p roundtable --bench changeset` (trees are generated
//! on /dev/shm when it exists, else in the temp directory).

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use roundtable::diff::{parse, ParseOptions};
use roundtable::workspace::Workspace;
use roundtable::Changeset;
use std::time::{Duration, Instant};

fn tree(files: usize) -> tempfile::TempDir {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm")
    } else {
        tempfile::tempdir()
    }
    .expect("a scratch directory");
    for i in 0..files {
        let dir = base
            .path()
            .join(format!("d{:03}/e{:02}", i % 1000, (i / 1000) % 100));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let body: String = (0..40).map(|l| format!("file {i} line {l}\n")).collect();
        std::fs::write(dir.join(format!("f{i}.txt")), body).expect("write");
    }
    base
}

fn patch_for(files: &[usize]) -> String {
    let mut text = String::new();
    for &i in files {
        let path = format!("d{:03}/e{:02}/f{i}.txt", i % 1000, (i / 1000) % 100);
        text.push_str(&format!(
            "diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -19,3 +19,3 @@\n file {i} line 18\n-file {i} line 19\n+file {i} line 19 (edited)\n file {i} line 20\n"
        ));
    }
    text
}

fn best(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .expect("at least one run")
}

fn main() {
    let mut results = Vec::new();
    for size in [1_000usize, 100_000] {
        let dir = tree(size);
        let text = patch_for(&[7, size / 2 + 3, size - 1]);
        let patch = parse(text.as_bytes(), &ParseOptions::default()).expect("the patch parses");
        let ws = Workspace::open(dir.path()).expect("the tree opens");
        let took = best(50, || {
            let cs = Changeset::from_patch(&patch, &ws).expect("the patch applies");
            assert_eq!(cs.files().len(), 3);
        });
        println!(
            "changeset of a 3-file patch, tree of {size:>7} files: {:>8.1} µs",
            took.as_secs_f64() * 1e6
        );
        results.push(took);
    }
    println!(
        "ratio 100k/1k: {:.2} (1.0 = independent of tree size)",
        results[1].as_secs_f64() / results[0].as_secs_f64()
    );
}
