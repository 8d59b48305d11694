//! roundtable-core's integration tests: one binary, one module per area.

mod agent_edits;
mod agents_tasks;
mod claims_touched;
mod edit_plans;
mod fuzz_replay;
mod git_landing;
mod governance;
mod governance_hardening;
mod hardening;
mod ignored;
mod inbox_revert;
mod landing;
mod layers;
mod properties;
mod proposal_base;
mod rebase;
mod review;
mod state;
mod symbols_hostile;
mod symlinks;
mod tools;
mod tools_refusals;
mod tools_scale;
mod transactions;
mod typed_api;
mod waiting;
