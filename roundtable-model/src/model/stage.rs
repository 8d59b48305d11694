//! The stages of a validation report.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;

/// One stage of a validation report, in the order the report lists them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum StageName {
    /// The author holds fresh claims on what the change touches, and no
    /// other agent holds a write claim there.
    Claims,
    /// Each touched path is still what the revision was made against.
    Preconditions,
    /// The author's claims cover every changed line.
    Coverage,
    /// The stored change still applies to the files and gives the same result.
    DryRun,
    /// The policy's approvals, votes and secret scan.
    Policy,
    /// The security review the policy asks for.
    SecurityReview,
    /// The human approval the policy asks for.
    HumanApproval,
    /// The checks (test results) the policy requires.
    Checks,
}

impl StageName {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Claims => "claims",
            StageName::Preconditions => "preconditions",
            StageName::Coverage => "coverage",
            StageName::DryRun => "dry_run",
            StageName::Policy => "policy",
            StageName::SecurityReview => "security_review",
            StageName::HumanApproval => "human_approval",
            StageName::Checks => "checks",
        }
    }
}

impl fmt::Display for StageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for StageName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}
