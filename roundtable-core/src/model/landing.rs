//! How `patch.apply` lands a change: the workspace's landing setting.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where an applied change goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum LandingMode {
    /// The files in the working tree, nothing committed (the default).
    #[default]
    Files,
    /// One commit per applied revision on a branch, moved by
    /// compare-and-swap; the working tree and index follow it.
    Git,
}

/// The workspace's landing setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Landing {
    /// `files` or `git`.
    pub mode: LandingMode,
    /// In git mode, the branch commits land on (a short name: `main`);
    /// the working tree's `HEAD` must be on it.
    #[serde(default)]
    pub branch: Option<String>,
    /// A remote to push to with a lease: not supported yet (`null`).
    #[serde(default)]
    pub remote: Option<String>,
}

impl Landing {
    /// The full ref name of the git branch (`refs/heads/main`), in git
    /// mode.
    pub fn branch_ref(&self) -> Option<String> {
        match (self.mode, &self.branch) {
            (LandingMode::Git, Some(b)) => Some(format!("refs/heads/{b}")),
            _ => None,
        }
    }
}
