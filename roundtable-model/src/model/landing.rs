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
    /// In git mode, a remote to push each landing to with a lease (the
    /// remote's branch must still be where this one was): a remote
    /// configured in the repository, or a path, naming a bare repository
    /// on this machine. `null`: the branch is this repository's own.
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
