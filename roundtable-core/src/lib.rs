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
//! transaction with its audit event (see [`tools`] for the registry and
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

/// `JsonSchema` for a type the tools' schemas spell as a plain string: an
/// open set of spellings (digests, state hashes, requirement ids that
/// carry a name). A closed set of values is an enum that derives
/// `JsonSchema`, published as one.
macro_rules! string_schema {
    ($($t:ty),* $(,)?) => {$(
        impl schemars::JsonSchema for $t {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                "String".into()
            }

            fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
                <String as schemars::JsonSchema>::json_schema(g)
            }
        }
    )*};
}

pub mod actor;
pub mod apply;
pub mod changeset;
pub mod claims;
pub mod clock;
pub mod coverage;
pub mod diff;
mod digest;
#[cfg(doctest)]
mod doctests;
pub mod edit;
mod engine;
mod error;
pub mod fsck;
mod hex;
pub mod id;
pub mod interrupt;
pub mod json;
pub mod landing;
pub mod merge;
pub mod model;
pub mod path;
pub mod policy;
pub mod resource;
pub mod session;
pub mod state;
pub mod store;
pub mod symbols;
pub mod tools;
pub mod workspace;

pub use actor::{Actor, ActorKind};
pub use changeset::{Changeset, FileChange, FileContent, FileMeta, Operation};
pub use digest::{Digest, DigestError, DIGEST_PREFIX};
pub use engine::{Engine, EngineOptions};
pub use error::{ErrorCode, UnknownErrorCode};
pub use id::Id;
pub use interrupt::{CallOptions, CancelToken};
pub use path::{PathError, RepoPath};
pub use resource::{Resource, ResourceError};
pub use session::Session;
pub use tools::{Request, ToolError};
