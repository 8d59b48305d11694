//! Placing agent-native hunks costs about the file's lines plus the hunks'
//! lines, not their product: 50,000 SEARCH/REPLACE blocks (and a Codex
//! envelope of 50,000 hunks) on a 200,000-line file. Before the line index
//! this took 36.6 s.
//!
//! `cargo bench -p roundtable --bench agent_edits`

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use roundtable::diff::TreeFile;
use roundtable::edit::agent::{changeset, AgentFormat};
use std::collections::BTreeMap;
use std::time::Instant;

const LINES: usize = 200_000;
const HUNKS: usize = 50_000;

fn main() {
    let file: String = (0..LINES)
        .map(|i| format!("    value_{i} = {i}\n"))
        .collect();
    let tree = BTreeMap::from([(b"big.py".to_vec(), TreeFile::regular(file.into_bytes()))]);
    let every = LINES / HUNKS;
    let mut sr = String::from("big.py\n");
    let mut codex = String::from("*** Begin Patch\n*** Update File: big.py\n");
    for i in (0..LINES).step_by(every) {
        sr.push_str(&format!(
            "<<<<<<< SEARCH\n    value_{i} = {i}\n=======\n    value_{i} = {i} + 1\n    extra_{i} = 0\n>>>>>>> REPLACE\n"
        ));
        codex.push_str(&format!(
            "@@\n-    value_{i} = {i}\n+    value_{i} = {i} + 1\n+    extra_{i} = 0\n"
        ));
    }
    codex.push_str("*** End Patch\n");
    for (name, format, text) in [
        ("search_replace", AgentFormat::SearchReplace, &sr),
        ("codex", AgentFormat::Codex, &codex),
    ] {
        let start = Instant::now();
        let cs = changeset(format, text.as_bytes(), &tree).expect("applies");
        let took = start.elapsed();
        assert_eq!(cs.files().len(), 1);
        println!(
            "agent_edits/{name}: {HUNKS} hunks x {LINES} lines: {:.3} s",
            took.as_secs_f64()
        );
    }
}
