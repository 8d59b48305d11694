//! # roundtable-base
//!
//! The values every layer of roundtable shares, and nothing else: the
//! stable [`ErrorCode`] table, repository paths ([`RepoPath`], git's fsck
//! rules), digests ([`Digest`], [`StateHash`]), ids, actors, resources,
//! the clock, strict JSON decoding, per-call cancellation and the split of
//! a large change's work over two threads. Every other
//! roundtable crate depends on this one; it depends on none of them.

// Safe Rust only: bindings live in their own crates.
#![forbid(unsafe_code)]
// Every public item is part of the documented API.
#![deny(missing_docs)]

/// `JsonSchema` for a type the tools' schemas spell as a plain string: an
/// open set of spellings (digests, state hashes, requirement ids that
/// carry a name). A closed set of values is an enum that derives
/// `JsonSchema`, published as one.
#[macro_export]
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
pub mod clock;
pub mod digest;
pub mod error;
pub mod fsck;
pub mod hex;
pub mod id;
pub mod interrupt;
pub mod json;
pub mod path;
pub mod resource;
pub mod state_hash;
pub mod two_threads;

pub use actor::{Actor, ActorKind};
pub use digest::{Digest, DigestError, DIGEST_PREFIX};
pub use error::{ErrorCode, UnknownErrorCode};
pub use id::Id;
pub use interrupt::{CallOptions, CancelToken};
pub use path::{PathError, RepoPath};
pub use resource::{Resource, ResourceError};
pub use state_hash::StateHash;
