//! # roundtable-diff
//!
//! roundtable's change engine, pure and without I/O: git's diff grammar
//! ([`diff::parse`], render, apply, reverse), [`Changeset`]s (what a change
//! does to each path), edit plans and the agents' edit formats
//! ([`edit`]), and three-way merges ([`merge`]).

// Safe Rust only: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

pub mod changeset;
pub mod diff;
pub mod edit;
pub mod merge;

pub use changeset::{Changeset, FileChange, FileContent, FileMeta, Operation};

// The layer below, named at this crate's root so paths read as before.
use roundtable_base::{hex, json};
use roundtable_base::{Digest, ErrorCode, PathError, RepoPath};
