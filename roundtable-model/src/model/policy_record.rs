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
    pub status: PolicyStatus,
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

/// Where a policy version is in its life: stored as a `draft`, made the
/// `active` one, `retired` by the next activation; `builtin` is the
/// default policy that is in force while no version is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyStatus {
    /// Stored, not (yet) in force.
    Draft,
    /// The version in force.
    Active,
    /// Was active; replaced by a later activation.
    Retired,
    /// The built-in default (no stored version is active).
    Builtin,
}

impl PolicyStatus {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyStatus::Draft => "draft",
            PolicyStatus::Active => "active",
            PolicyStatus::Retired => "retired",
            PolicyStatus::Builtin => "builtin",
        }
    }
}

impl std::fmt::Display for PolicyStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
