//! # roundtable
//!
//! roundtable governs the changes AI agents propose to a code repository:
//! agents propose patches, reviewers and policy decide, the host applies —
//! atomically, with a record and a way back.
//!
//! The entry point is [`Engine`]: a repository root, its store
//! (`<root>/.roundtable/store.db`) and the tool surface every front end
//! shares — `engine.call(tool, args, actor)`, with the [`Actor`] supplied by
//! the host, arguments decoded strictly, every state change one SQL
//! transaction with its audit event (see [`registry`] for the tools, [`operations`] for what they do and
//! [`store`] for the schema).
//!
//! Underneath is the diff engine everything else builds on:
//!
//! - [`diff::parse`] reads git's full diff grammar (extended headers,
//!   C-quoted names, renames, copies, modes, binary patches) into a typed
//!   [`diff::Patch`], refusing anything malformed with the line and what was
//!   expected;
//! - [`diff::Patch::render`] writes it back byte-for-byte;
//! - [`diff::apply()`] computes new contents as `git apply` would, placing
//!   or refusing where git would misapply silently (`-U0` hunks, a file
//!   modified then deleted in a series);
//! - [`diff::Patch::reverse`] inverts it.
//!
//! ```
//! use roundtable::diff::{self, ParseOptions, TreeFile};
//! use std::collections::BTreeMap;
//!
//! let patch = diff::parse(b"--- a/n.txt\n+++ b/n.txt\n@@ -1 +1 @@\n-one\n+two\n", &ParseOptions::default())?;
//! let tree = BTreeMap::from([(b"n.txt".to_vec(), TreeFile::regular(b"one\n".to_vec()))]);
//! let after = diff::apply_in_memory(&patch, &tree)?;
//! assert_eq!(after[b"n.txt".as_slice()].data, b"two\n");
//!
//! // Applying the reverse patch restores the original.
//! let back = diff::apply_in_memory(&patch.reverse()?, &after)?;
//! assert_eq!(back, tree);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Errors are typed per module and each maps to one stable [`ErrorCode`].

// The core is safe Rust: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

pub use roundtable_base::{actor, clock, fsck, id, interrupt, json, path, resource};
pub use roundtable_diff::{changeset, diff, edit, merge};
pub use roundtable_model::{claims, coverage, model, policy};
pub use roundtable_store::store;
pub use roundtable_symbols::symbols;
pub use roundtable_workspace::{apply, landing, state, workspace};
// Shared values this crate names at its root, as the layers below do.
use roundtable_base::hex;

#[cfg(doctest)]
mod doctests;
mod engine;
pub mod operations;
pub mod registry;
pub mod session;

pub use engine::{Engine, EngineOptions, SharedReadStats};
pub use operations::flights::FlightStats;
pub use operations::{Request, ToolError};
pub use roundtable_base::{
    Actor, ActorKind, CallOptions, CancelToken, Digest, DigestError, ErrorCode, Id, PathError,
    RepoPath, Resource, ResourceError, UnknownErrorCode, DIGEST_PREFIX,
};
pub use roundtable_diff::{Changeset, FileChange, FileContent, FileMeta, Operation};
pub use session::Session;
