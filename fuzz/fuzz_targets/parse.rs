//! Fuzz target `parse`: arbitrary bytes through the diff parser, renderer,
//! reverser and applier. The properties live in `fuzz/check.rs`, shared with
//! the corpus replay test `roundtable/tests/fuzz_replay.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../check.rs");

fuzz_target!(|data: &[u8]| check(data));
