//! What an evidence record (or transaction) is, as a name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of record an event must record: the evidence the policy
/// reads, and transactions (`events.verify` cross-checks each against its
/// event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A reviewer's vote.
    Vote,
    /// An orchestrator's or person's decision.
    Decision,
    /// A security review.
    SecurityReview,
    /// A request for a person's approval.
    HumanApprovalRequest,
    /// A person's approval.
    HumanApproval,
    /// A recorded test result.
    TestResult,
    /// A transaction (an apply or a rollback).
    Transaction,
}

impl RecordKind {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Vote => "vote",
            RecordKind::Decision => "decision",
            RecordKind::SecurityReview => "security_review",
            RecordKind::HumanApprovalRequest => "human_approval_request",
            RecordKind::HumanApproval => "human_approval",
            RecordKind::TestResult => "test_result",
            RecordKind::Transaction => "transaction",
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
