//! Transactions: what the transaction engine records of one apply or
//! rollback, its journal, and what recovery did.

use crate::actor::Actor;
use crate::clock::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What one transaction does: apply a revision, or roll back a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionKind {
    /// Applies a proposal's revision.
    Apply,
    /// Restores the before snapshot of an earlier transaction.
    Rollback,
}

impl TransactionKind {
    /// The stable spelling (`apply`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionKind::Apply => "apply",
            TransactionKind::Rollback => "rollback",
        }
    }
}

/// Where a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionStatus {
    /// Journaled; files may be partly written (in flight, or crashed).
    Applying,
    /// Every file is at its after state, and the store says so.
    Applied,
    /// Writing failed and was undone: every file is at its before state.
    Failed,
    /// Found `applying` after a crash and put back to its before state.
    Recovered,
    /// Applied, then rolled back by a later transaction.
    RolledBack,
}

impl TransactionStatus {
    /// The stable spelling (`applied`).
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionStatus::Applying => "applying",
            TransactionStatus::Applied => "applied",
            TransactionStatus::Failed => "failed",
            TransactionStatus::Recovered => "recovered",
            TransactionStatus::RolledBack => "rolled_back",
        }
    }
}

impl std::fmt::Display for TransactionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One path in a transaction's journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JournalFile {
    /// The path.
    pub path: String,
    /// `create`, `modify`, `delete`, `rename`, `renamed_away`, `copy`.
    pub operation: super::OperationKind,
    /// `blob:sha256:` before (`null`: absent).
    pub before_digest: Option<crate::Digest>,
    /// Executable before.
    pub before_executable: Option<bool>,
    /// Every permission bit (`st_mode & 0o7777`, e.g. `384` for `0600`)
    /// of the regular file before: what a rollback or recovery recreates
    /// it with if the change deleted it. Written only when recorded
    /// (absent for a path that was absent or a link, for a bare
    /// repository, and in journals written before schema version 12:
    /// such a file is recreated `0644`, or `0755` when executable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_mode: Option<u32>,
    /// `blob:sha256:` after (`null`: absent).
    pub after_digest: Option<crate::Digest>,
    /// Executable after.
    pub after_executable: Option<bool>,
    /// A symbolic link before (its digest is its target's); written only
    /// when it was.
    #[serde(skip_serializing_if = "not_true")]
    pub before_symlink: Option<bool>,
    /// A symbolic link after; written only when it is.
    #[serde(skip_serializing_if = "not_true")]
    pub after_symlink: Option<bool>,
}

fn not_true(b: &Option<bool>) -> bool {
    *b != Some(true)
}

/// A transaction as the tools return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Transaction {
    /// Its id.
    pub id: String,
    /// `apply` or `rollback`.
    pub kind: TransactionKind,
    /// The proposal.
    pub proposal_id: String,
    /// The revision applied (for a rollback: the revision it undoes).
    pub revision: u32,
    /// For a rollback, the transaction it rolls back.
    pub rollback_of: Option<String>,
    /// Where it is.
    pub status: TransactionStatus,
    /// Who ran it.
    pub actor: Actor,
    /// The process that ran it.
    pub pid: i64,
    /// How durably it was written: `full`, `normal` or `off`.
    pub durability: super::Durability,
    /// `sha256:` over the touched paths' before states.
    pub before_digest: String,
    /// `sha256:` over their after states.
    pub after_digest: String,
    /// Why it failed, if it did.
    pub error: Option<Value>,
    /// When it started.
    pub created_at: Timestamp,
    /// When it reached its final status.
    pub finished_at: Option<Timestamp>,
    /// How many paths it touches.
    pub file_count: u64,
    #[serde(skip)]
    /// The store's row sequence: the keyset-paging cursor (not serialized).
    pub seq: i64,
}

/// Where a journaled path is now, compared with the journal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PathState {
    /// It has its after state.
    AtAfter,
    /// It has its before state.
    AtBefore,
    /// Neither: something else changed it.
    Diverged,
}

/// One path compared with the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PathReport {
    /// The path.
    pub path: String,
    /// Where it is.
    pub state: PathState,
    /// Its digest now (`absent`, or `blob:sha256:…` with ` +x` when
    /// executable, ` symlink` for a symbolic link: the digest of its
    /// target).
    pub actual: String,
    /// Its before state, spelled the same way.
    pub before: String,
    /// Its after state.
    pub after: String,
}

/// What recovering one transaction did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Recovery {
    /// The transaction.
    pub transaction_id: String,
    /// Paths put back to their before state.
    pub restored: Vec<String>,
    /// Paths already at their before state.
    pub already_before: Vec<String>,
    /// Paths at neither state: left alone, never overwritten.
    pub conflicts: Vec<PathReport>,
    /// Leftover staging files and backup directories removed.
    pub leftovers: Vec<String>,
}

/// A transaction recovery could not finish (bring forward or put back):
/// left `applying`, the failure recorded as a failed `recovered` phase,
/// and tried again by the next open of the workspace and the next apply.
/// Recovery never fails an open for it: the rest of the workspace goes on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unrecovered {
    /// The transaction.
    pub transaction_id: String,
    /// The failure's stable code (`io`, `precondition_failed`, …).
    pub code: crate::ErrorCode,
    /// What failed.
    pub message: String,
    /// The failure's details.
    pub details: serde_json::Value,
}

/// A step of a transaction, as its phases record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    /// The journal was committed.
    Journaled,
    /// Writing the files (recorded when it failed).
    Write,
    /// The files were written and flushed.
    Written,
    /// The outcome was committed.
    Applied,
    /// Recovery put the paths back.
    Recovered,
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    /// It completed.
    Done,
    /// It failed (the transaction was undone).
    Failed,
}

impl PhaseName {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseName::Journaled => "journaled",
            PhaseName::Write => "write",
            PhaseName::Written => "written",
            PhaseName::Applied => "applied",
            PhaseName::Recovered => "recovered",
        }
    }
}

impl PhaseStatus {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Done => "done",
            PhaseStatus::Failed => "failed",
        }
    }
}

/// One phase of a transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Phase {
    /// `journaled`, `write`, `written`, `applied`, `recovered`.
    pub phase: PhaseName,
    /// `done` or `failed`.
    pub status: PhaseStatus,
    /// Details.
    pub detail: Value,
    /// When.
    pub at: Timestamp,
}
