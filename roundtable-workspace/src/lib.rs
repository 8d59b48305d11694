//! # roundtable-workspace
//!
//! The layer that touches the world: the contained [`workspace`] (every
//! file opened from the root's descriptor, never through a link), the
//! workspace [`state`] hash, the journaled transaction engine ([`apply`])
//! and git [`landing`] (its libgit2 half behind the `git` feature).

// Safe Rust only: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

pub mod apply;
pub mod landing;
pub mod state;
pub mod workspace;

// The layer below, named at this crate's root so paths read as before.
use roundtable_base::{actor, clock, hex, interrupt};
use roundtable_base::{Digest, ErrorCode, Id, PathError, RepoPath};

// The layers below: changes, records and rules, the store.
use roundtable_diff::{changeset, diff};

use roundtable_model::{model, policy};
use roundtable_store::store;
