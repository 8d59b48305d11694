//! Fuzz target `symbols`: arbitrary bytes through the symbol indexer of
//! every language. The properties live in `fuzz/check_symbols.rs`, shared
//! with the corpus replay in `roundtable/tests/symbols_hostile.rs`; run it
//! with a `-timeout` to catch work that is not linear in the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../check_symbols.rs");

fuzz_target!(|data: &[u8]| check_symbols(data));
