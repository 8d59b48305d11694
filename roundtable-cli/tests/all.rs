//! roundtable-cli's integration tests: one binary, one module per area.

mod cli;
mod differential;
mod differential_formats;
mod human;
mod tools_cli;
