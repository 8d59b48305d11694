//! A stored policy version as a record.

use crate::actor::Actor;
use crate::clock::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A stored policy version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyRecord {
    /// The version number (1, 2, …); `null` for the built-in default.
    pub version: Option<u32>,
    /// `draft`, `active`, `retired`, or `builtin` for the default.
    pub status: String,
    /// The TOML document.
    pub document: String,
    /// `blob:sha256:` of the document.
    pub digest: String,
    /// Why it was written.
    pub note_md: Option<String>,
    /// Who wrote it (`null` for the default).
    pub created_by: Option<Actor>,
    /// When it was written.
    pub created_at: Option<Timestamp>,
    /// When it was activated.
    pub activated_at: Option<Timestamp>,
    /// When it was retired.
    pub retired_at: Option<Timestamp>,
}
