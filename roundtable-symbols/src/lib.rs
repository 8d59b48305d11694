//! # roundtable-symbols
//!
//! The symbol index behind `symbol:PATH#NAME` resources: each supported
//! language's tree-sitter grammar finds the functions, types and methods a
//! file defines, with their line spans.

// Safe Rust only: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

pub mod symbols;

// The layer below, named at this crate's root so paths read as before.

use roundtable_base::{ErrorCode, RepoPath};
