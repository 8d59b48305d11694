//! roundtable-core's integration tests: one binary, one module per area.

mod fuzz_replay;
mod properties;
