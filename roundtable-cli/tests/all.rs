//! roundtable-cli's integration tests: one binary, one module per area.

mod cli;
mod differential;
mod differential_formats;
mod differential_history;
mod human;
mod mcp;
mod serve;
mod tools_cli;
