//! # roundtable-store
//!
//! Every SQL statement roundtable runs: the [`store`] on SQLite (embedded,
//! the default) or PostgreSQL, its versioned migrations, the audit event
//! chain, and the change feed that wakes waiters in other processes.

// Safe Rust only: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

pub mod store;

// The layer below, named at this crate's root so paths read as before.
use roundtable_base::{actor, clock, hex, interrupt, json};
use roundtable_base::{Digest, ErrorCode};

// The records the store keeps.
use roundtable_model::{claims, model};
