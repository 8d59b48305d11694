//! The state of a whole workspace as a value: `state:sha256:<hex>`, what
//! the workspace layer computes and every record above it stores.

use crate::ErrorCode;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The prefix of every state hash's spelling.
pub const STATE_PREFIX: &str = "state:sha256:";

/// The state of a whole workspace, spelled `state:sha256:<64 lowercase hex>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StateHash([u8; 32]);

impl StateHash {
    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// A state hash from its raw 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> StateHash {
        StateHash(bytes)
    }
}

/// A string that is not `state:sha256:` followed by 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a state hash (expected state:sha256: and 64 lowercase hex digits)")]
pub struct StateHashError(pub String);

impl StateHashError {
    /// Always [`ErrorCode::InvalidArgument`].
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidArgument
    }
}

impl FromStr for StateHash {
    type Err = StateHashError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let fail = || StateHashError(s.chars().take(100).collect());
        let hex = s.strip_prefix(STATE_PREFIX).ok_or_else(fail)?;
        crate::hex::decode_32(hex).map(StateHash).ok_or_else(fail)
    }
}

impl fmt::Display for StateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{STATE_PREFIX}{}", crate::hex::encode(&self.0))
    }
}

impl fmt::Debug for StateHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for StateHash {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

crate::string_schema!(StateHash);

impl<'de> Deserialize<'de> for StateHash {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
