//! The records tools return are the [domain model](crate::model)'s; what
//! the tools add is how each is loaded for a call and the checks a call
//! makes on it (each refusal a [`ToolError`] with its stable code).

use super::details::{BusyDetails, ConflictDetails, IllegalTransitionDetails, RecordStatus};
pub use crate::model::{
    Agent, Approval, ApprovalRequest, Decision, DecisionValue, Event, FileState, FileSummary,
    Proposal, ProposalStatus, Revision, Risk, SecurityReviewRecord, Task, TestResult, TestStatus,
    Verdict, Vote, VoteValue,
};
use crate::operations::ToolError;
pub(crate) use crate::store::enum_to_sql;
use crate::store::sql::Tx;

/// How a tool loads an agent's record.
pub(crate) trait AgentRecord: Sized {
    /// The agent named `id`, if it is registered.
    fn load(tx: &Tx<'_>, id: &str) -> Result<Option<Self>, ToolError>;
}

/// How a tool loads a proposal and checks it for a call.
pub(crate) trait ProposalRecord: Sized {
    /// The proposal named `id`, or `not_found`.
    fn load(tx: &Tx<'_>, id: &str) -> Result<Self, ToolError>;
    /// `illegal_transition` unless the status is one of `allowed`.
    fn require_status(&self, allowed: &[ProposalStatus], operation: &str) -> Result<(), ToolError>;
    /// `not_found` for a revision that never existed, `conflict` for a superseded one.
    fn require_latest(&self, revision: u32) -> Result<(), ToolError>;
    /// `busy` while a transaction is `applying` this proposal.
    fn require_not_applying(&self, tx: &Tx<'_>, operation: &str) -> Result<(), ToolError>;
}

/// How a tool loads a revision.
pub(crate) trait RevisionRecord: Sized {
    /// Revision `number` of `proposal_id`, or `not_found`.
    fn load(tx: &Tx<'_>, proposal_id: &str, number: u32) -> Result<Self, ToolError>;
}

impl AgentRecord for Agent {
    fn load(tx: &Tx<'_>, id: &str) -> Result<Option<Agent>, ToolError> {
        Ok(crate::store::agents::agent(tx, id)?)
    }
}

impl ProposalRecord for Proposal {
    /// The proposal named `id`, or `not_found`.
    fn load(tx: &Tx<'_>, id: &str) -> Result<Proposal, ToolError> {
        crate::store::proposals::proposal(tx, id)?
            .ok_or_else(|| ToolError::not_found("proposal", id))
    }

    /// `illegal_transition` unless the status is one of `allowed`.
    fn require_status(&self, allowed: &[ProposalStatus], operation: &str) -> Result<(), ToolError> {
        if allowed.contains(&self.status) {
            return Ok(());
        }
        let names: Vec<&str> = allowed.iter().map(|s| s.as_str()).collect();
        Err(ToolError::new(
            format!(
                "proposal {} is {}; {operation} needs it to be {}",
                self.id,
                self.status.as_str(),
                names.join(" or ")
            ),
            IllegalTransitionDetails {
                proposal_id: Some(self.id.clone()),
                status: Some(RecordStatus::Proposal(self.status)),
                allowed: Some(allowed.iter().map(|&s| RecordStatus::Proposal(s)).collect()),
                operation: Some(operation.to_owned()),
                ..IllegalTransitionDetails::default()
            },
        ))
    }

    /// Check that `revision` exists and is the latest: `not_found` for a
    /// revision that never existed, `conflict` for a superseded one.
    fn require_latest(&self, revision: u32) -> Result<(), ToolError> {
        if revision > self.latest_revision {
            return Err(ToolError::not_found(
                "revision",
                &format!("{}@{revision}", self.id),
            ));
        }
        if revision < self.latest_revision {
            return Err(ToolError::new(
                format!(
                    "revision {revision} of proposal {} was superseded by revision {}",
                    self.id, self.latest_revision
                ),
                ConflictDetails {
                    proposal_id: Some(self.id.clone()),
                    revision: Some(u64::from(revision)),
                    latest_revision: Some(u64::from(self.latest_revision)),
                    ..ConflictDetails::default()
                },
            ));
        }
        Ok(())
    }

    /// `busy` while a transaction is `applying` this proposal: the apply
    /// checked its status and revision in the same store transaction as
    /// its journal, so until its outcome is recorded nothing may change
    /// either (withdraw, reject, a new revision, a rebase). Checked in the
    /// caller's write transaction: the status check and the journal are
    /// one atomic step whichever commits first.
    fn require_not_applying(&self, tx: &Tx<'_>, operation: &str) -> Result<(), ToolError> {
        let Some(transaction) = crate::store::transactions::applying_for(tx, &self.id)? else {
            return Ok(());
        };
        Err(ToolError::new(
            format!(
                "transaction {transaction} is applying proposal {}: {operation} waits until it lands or is undone; nothing changed, retry soon",
                self.id
            ),
            BusyDetails {
                transaction_id: Some(transaction),
                proposal_id: Some(self.id.clone()),
                ..BusyDetails::default()
            },
        ))
    }
}

impl RevisionRecord for Revision {
    fn load(tx: &Tx<'_>, proposal_id: &str, number: u32) -> Result<Revision, ToolError> {
        crate::store::proposals::revision(tx, proposal_id, number)?
            .ok_or_else(|| ToolError::not_found("revision", &format!("{proposal_id}@{number}")))
    }
}
