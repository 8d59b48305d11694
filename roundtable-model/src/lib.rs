//! # roundtable-model
//!
//! roundtable's records and rules as pure values: the records the store
//! keeps ([`model`]), claim scopes ([`claims`]), what a change touches and
//! whether claims cover it ([`coverage`]), and policy documents and their
//! evaluation ([`policy`]).

// Safe Rust only: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

pub mod claims;
pub mod coverage;
pub mod model;
pub mod policy;

// The layer below, named at this crate's root so paths read as before.
use roundtable_base::{actor, clock, resource};
use roundtable_base::{Digest, ErrorCode, RepoPath, StateHash};

// The change engine and the symbol index these records describe.
use roundtable_diff::{changeset, diff};

use roundtable_symbols::symbols;
