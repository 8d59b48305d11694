//! Evidence about one revision: votes, decisions, security reviews, human
//! approval requests and grants, test results.
//!
//! Every record names the revision it judges, which must be the proposal's
//! latest (a superseded revision is `conflict`), and is never changed
//! afterwards. Evidence is only recorded on open proposals (`pending` or
//! `in_review`; votes need `in_review`).

use super::args::{Cursor, Limit, Markdown, RevisionNumber, Title};
use super::details::{ConflictDetails, ForbiddenDetails, ForbiddenReason};
use super::records::{
    enum_to_sql, Approval, ApprovalRequest, Decision, DecisionValue, Proposal, ProposalStatus,
    SecurityReviewRecord, TestResult, TestStatus, Verdict, Vote, VoteValue,
};
use super::Request as _;
use super::{Cx, Tool, ToolError};
use crate::actor::ActorKind;
use crate::id::Id;
use crate::operations::records::ProposalRecord;
use crate::policy::PersonRole;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

const OPEN: &[ProposalStatus] = &[ProposalStatus::Pending, ProposalStatus::InReview];

/// Load the proposal, authorize the caller against it, then check it is
/// open and `revision` is its latest (a caller who may not act learns that
/// first, not the proposal's state).
fn judged(
    cx: &Cx<'_>,
    proposal_id: &Id,
    revision: RevisionNumber,
    allowed: &[ProposalStatus],
    tool: &str,
    authorize: impl FnOnce(&Proposal) -> Result<(), ToolError>,
) -> Result<Proposal, ToolError> {
    let p = Proposal::load(cx.tx, proposal_id.as_str())?;
    authorize(&p)?;
    p.require_status(allowed, tool)?;
    p.require_latest(revision.0)?;
    Ok(p)
}

/// Arguments of `vote.cast`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "VoteCastArgs")]
pub struct CastVote {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision voted on: must be the latest.
    pub revision: RevisionNumber,
    /// The vote.
    pub vote: VoteValue,
    /// Why; required for `revise`, `reject` and `veto`.
    pub reason_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `vote.cast`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct VoteRecorded {
    /// The vote as stored.
    pub vote: Vote,
}

impl super::Request for CastVote {
    const TOOL: &'static str = "vote.cast";
    const DESCRIPTION: &'static str = "Vote on the latest revision of an in-review proposal (an enabled agent other than the author). A later vote by the same agent on the same revision supersedes its earlier one; votes are never edited.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent];
    type Output = VoteRecorded;

    store_tool!();
}

impl Tool for CastVote {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: CastVote, (): ()) -> Result<VoteRecorded, ToolError> {
        let agent = cx.enabled_agent(Self::TOOL)?;
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        if p.author == agent.id {
            return Err(ToolError::new(
                format!(
                    "{} is the author of {}; authors do not vote on their own proposals",
                    agent.id, p.id
                ),
                ForbiddenDetails {
                    author: Some(p.author.clone()),
                    ..ForbiddenDetails::new(cx.actor, ForbiddenReason::Author)
                },
            ));
        }
        p.require_status(&[ProposalStatus::InReview], Self::TOOL)?;
        p.require_latest(args.revision.0)?;
        if matches!(
            args.vote,
            VoteValue::Revise | VoteValue::Reject | VoteValue::Veto
        ) && args.reason_md.is_none()
        {
            return Err(ToolError::invalid_argument(
                "reason_md",
                format!("is required with a {} vote", enum_to_sql(&args.vote)),
            ));
        }
        let id = cx.new_id("vote");
        store::evidence::insert_vote(
            cx.tx,
            id.as_str(),
            &p.id,
            args.revision.0,
            &agent.id,
            args.vote,
            args.reason_md.as_ref().map(|t| t.as_str()),
            cx.now,
        )?;
        cx.event(
            id.as_str(),
            Some(&p.id),
            crate::model::VoteCastData {
                revision: args.revision.0,
                vote: args.vote,
                agent_id: agent.id.clone(),
            },
        )?;
        let vote = store::evidence::vote(cx.tx, id.as_str())?.expect("the vote was just written");
        Ok(VoteRecorded { vote })
    }
}

/// Arguments of `vote.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "VoteListArgs")]
pub struct ListVotes {
    /// The proposal.
    pub proposal_id: Id,
    /// Only votes on this revision.
    pub revision: Option<RevisionNumber>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<Limit<200>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// Result of `vote.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct VotePage {
    /// Votes, oldest first.
    pub votes: Vec<Vote>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListVotes {
    const TOOL: &'static str = "vote.list";
    const DESCRIPTION: &'static str =
        "List a proposal's votes oldest first, optionally for one revision.";
    const MUTATES: bool = false;
    type Output = VotePage;

    store_tool!();
}

impl Tool for ListVotes {
    no_prep!();

    unkeyed!();

    fn run(cx: &Cx<'_>, args: ListVotes, (): ()) -> Result<VotePage, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut votes = store::evidence::list_votes(
            cx.tx,
            &p.id,
            after,
            args.revision.map(|r| r.0),
            i64::from(limit) + 1,
        )?;
        let next_cursor = Cursor::page(&mut votes, limit, |v| v.seq);
        Ok(VotePage { votes, next_cursor })
    }
}

/// Store a decision on `revision` (its caller writes the event).
pub(crate) fn insert_decision(
    cx: &Cx<'_>,
    p: &Proposal,
    revision: u32,
    decision: DecisionValue,
    reason_md: &str,
) -> Result<Decision, ToolError> {
    let id = cx.new_id("dec");
    let decision = Decision {
        id: id.to_string(),
        proposal_id: p.id.clone(),
        revision,
        decision,
        reason_md: reason_md.to_owned(),
        decided_by: cx.actor.clone(),
        created_at: cx.now,
    };
    store::evidence::insert_decision(cx.tx, &decision)?;
    Ok(decision)
}

/// Arguments of `decision.record`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "DecisionRecordArgs")]
pub struct RecordDecision {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision decided on: must be the latest.
    pub revision: RevisionNumber,
    /// The decision.
    pub decision: DecisionValue,
    /// Why.
    pub reason_md: Markdown,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `decision.record`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct DecisionRecorded {
    /// The decision as stored.
    pub decision: Decision,
}

impl super::Request for RecordDecision {
    const TOOL: &'static str = "decision.record";
    const DESCRIPTION: &'static str = "Record a decision (accept, reject, defer) on the latest revision of an open proposal (orchestrator or human). It is evidence only: use patch.reject to reject the proposal.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = DecisionRecorded;

    store_tool!();
}

impl Tool for RecordDecision {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: RecordDecision, (): ()) -> Result<DecisionRecorded, ToolError> {
        let p = judged(
            cx,
            &args.proposal_id,
            args.revision,
            OPEN,
            Self::TOOL,
            |_| Ok(()),
        )?;
        let decision = insert_decision(
            cx,
            &p,
            args.revision.0,
            args.decision,
            args.reason_md.as_str(),
        )?;
        cx.event(
            &decision.id,
            Some(&p.id),
            crate::model::DecisionRecordedData {
                revision: args.revision.0,
                decision: args.decision,
            },
        )?;
        Ok(DecisionRecorded { decision })
    }
}

/// Arguments of `security.review`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "SecurityReviewArgs")]
pub struct RecordSecurityReview {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision reviewed: must be the latest.
    pub revision: RevisionNumber,
    /// The verdict.
    pub verdict: Verdict,
    /// Notes; required with a `fail` verdict.
    pub note_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `security.review`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SecurityReviewed {
    /// The review as stored.
    pub security_review: SecurityReviewRecord,
}

impl super::Request for RecordSecurityReview {
    const TOOL: &'static str = "security.review";
    const DESCRIPTION: &'static str = "Record a security review verdict on the latest revision of an open proposal (a person or an enabled agent holding the security role, not the author).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Human, ActorKind::Agent];
    type Output = SecurityReviewed;

    store_tool!();
}

impl Tool for RecordSecurityReview {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: RecordSecurityReview, (): ()) -> Result<SecurityReviewed, ToolError> {
        let p = judged(
            cx,
            &args.proposal_id,
            args.revision,
            OPEN,
            Self::TOOL,
            |p| {
                if cx.actor.kind != ActorKind::Agent {
                    return cx.require_person_role(PersonRole::Security);
                }
                let agent = cx.enabled_agent(Self::TOOL)?;
                if !agent.roles.iter().any(|r| r == "security") {
                    return Err(ToolError::new(
                        format!("agent {} does not have the security role", agent.id),
                        ForbiddenDetails {
                            required_role: Some("security".to_owned()),
                            ..ForbiddenDetails::new(cx.actor, ForbiddenReason::MissingRole)
                        },
                    ));
                }
                if agent.id == p.author {
                    return Err(ToolError::new(
                        format!(
                            "{} is the author of {}; it cannot review its own proposal",
                            agent.id, p.id
                        ),
                        ForbiddenDetails {
                            author: Some(p.author.clone()),
                            ..ForbiddenDetails::new(cx.actor, ForbiddenReason::Author)
                        },
                    ));
                }
                Ok(())
            },
        )?;
        if args.verdict == Verdict::Fail && args.note_md.is_none() {
            return Err(ToolError::invalid_argument(
                "note_md",
                "is required with a fail verdict",
            ));
        }
        let id = cx.new_id("sec");
        let note = args.note_md.as_ref().map(|t| t.as_str().to_owned());
        let security_review = SecurityReviewRecord {
            id: id.to_string(),
            proposal_id: p.id.clone(),
            revision: args.revision.0,
            verdict: args.verdict,
            note_md: note,
            reviewer: cx.actor.clone(),
            created_at: cx.now,
        };
        store::evidence::insert_security_review(cx.tx, &security_review)?;
        cx.event(
            id.as_str(),
            Some(&p.id),
            crate::model::SecurityReviewedData {
                revision: args.revision.0,
                verdict: args.verdict,
            },
        )?;
        Ok(SecurityReviewed { security_review })
    }
}

/// Arguments of `human.request_approval`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HumanRequestApprovalArgs")]
pub struct RequestApproval {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision to approve: must be the latest.
    pub revision: RevisionNumber,
    /// Why a person should look.
    pub reason_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `human.request_approval`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRequested {
    /// The request as stored.
    pub request: ApprovalRequest,
}

impl super::Request for RequestApproval {
    const TOOL: &'static str = "human.request_approval";
    const DESCRIPTION: &'static str = "Ask a person to approve the latest revision of an open proposal (the author or an orchestrator).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Agent, ActorKind::Orchestrator];
    type Output = ApprovalRequested;

    store_tool!();
}

impl Tool for RequestApproval {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: RequestApproval, (): ()) -> Result<ApprovalRequested, ToolError> {
        let p = judged(
            cx,
            &args.proposal_id,
            args.revision,
            OPEN,
            Self::TOOL,
            |p| cx.require_author_or_orchestrator(&p.author, Self::TOOL),
        )?;
        let id = cx.new_id("hreq");
        let reason = args.reason_md.as_ref().map(|t| t.as_str().to_owned());
        let request = ApprovalRequest {
            id: id.to_string(),
            proposal_id: p.id.clone(),
            revision: args.revision.0,
            reason_md: reason,
            requested_by: cx.actor.clone(),
            created_at: cx.now,
        };
        store::evidence::insert_approval_request(cx.tx, &request)?;
        cx.event(
            id.as_str(),
            Some(&p.id),
            crate::model::HumanApprovalRequestedData {
                revision: args.revision.0,
            },
        )?;
        Ok(ApprovalRequested { request })
    }
}

/// Arguments of `human.approve`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "HumanApproveArgs")]
pub struct Approve {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision approved: must be the latest.
    pub revision: RevisionNumber,
    /// The request this answers (it must be for the same revision).
    pub request_id: Option<Id>,
    /// Notes.
    pub note_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `human.approve`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Approved {
    /// The approval as stored.
    pub approval: Approval,
}

impl super::Request for Approve {
    const TOOL: &'static str = "human.approve";
    const DESCRIPTION: &'static str =
        "Approve the latest revision of an open proposal (a person holding the approve role).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Human];
    type Output = Approved;

    store_tool!();
}

impl Tool for Approve {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: Approve, (): ()) -> Result<Approved, ToolError> {
        let p = judged(
            cx,
            &args.proposal_id,
            args.revision,
            OPEN,
            Self::TOOL,
            |_| cx.require_person_role(PersonRole::Approve),
        )?;
        if let Some(request_id) = &args.request_id {
            let request = store::evidence::approval_request_target(cx.tx, request_id.as_str())?;
            match request {
                None => {
                    return Err(ToolError::not_found(
                        "approval request",
                        request_id.as_str(),
                    ))
                }
                Some((pid, rev)) if pid != p.id || rev != args.revision.0 => {
                    return Err(ToolError::new(
                        format!("approval request {request_id} is for {pid} revision {rev}"),
                        ConflictDetails {
                            request_id: Some(request_id.to_string()),
                            proposal_id: Some(pid),
                            revision: Some(u64::from(rev)),
                            ..ConflictDetails::default()
                        },
                    ))
                }
                Some(_) => {}
            }
        }
        let id = cx.new_id("happ");
        let note = args.note_md.as_ref().map(|t| t.as_str().to_owned());
        let request_id = args.request_id.as_ref().map(|r| r.as_str().to_owned());
        let approval = Approval {
            id: id.to_string(),
            proposal_id: p.id.clone(),
            revision: args.revision.0,
            request_id: request_id.clone(),
            human_id: cx.actor.id.to_string(),
            note_md: note,
            created_at: cx.now,
        };
        store::evidence::insert_approval(cx.tx, &approval)?;
        cx.event(
            id.as_str(),
            Some(&p.id),
            crate::model::HumanApprovedData {
                revision: args.revision.0,
                request_id,
            },
        )?;
        Ok(Approved { approval })
    }
}

/// Arguments of `test.record`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TestRecordArgs")]
pub struct RecordTest {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision tested: must be the latest.
    pub revision: RevisionNumber,
    /// The check's name (`unit`, `lint`…).
    pub name: Title,
    /// Its outcome.
    pub status: TestStatus,
    /// How long it took, in milliseconds.
    pub duration_ms: Option<u64>,
    /// Notes or an output excerpt.
    pub note_md: Option<Markdown>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// Result of `test.record`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TestRecorded {
    /// The result as stored.
    pub test_result: TestResult,
}

impl super::Request for RecordTest {
    const TOOL: &'static str = "test.record";
    const DESCRIPTION: &'static str = "Record a test or check result for the latest revision of an open proposal (orchestrator only: the host runs the tests).";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator];
    type Output = TestRecorded;

    store_tool!();
}

impl Tool for RecordTest {
    keyed!();
    no_prep!();

    fn run(cx: &Cx<'_>, args: RecordTest, (): ()) -> Result<TestRecorded, ToolError> {
        let p = judged(
            cx,
            &args.proposal_id,
            args.revision,
            OPEN,
            Self::TOOL,
            |_| Ok(()),
        )?;
        if args.duration_ms.is_some_and(|d| i64::try_from(d).is_err()) {
            return Err(ToolError::invalid_argument("duration_ms", "is too large"));
        }
        let id = cx.new_id("test");
        let note = args.note_md.as_ref().map(|t| t.as_str().to_owned());
        let test_result = TestResult {
            id: id.to_string(),
            proposal_id: p.id.clone(),
            revision: args.revision.0,
            name: args.name.as_str().to_owned(),
            status: args.status,
            duration_ms: args.duration_ms,
            note_md: note,
            recorded_by: cx.actor.clone(),
            created_at: cx.now,
            seq: 0,
        };
        store::evidence::insert_test_result(cx.tx, &test_result)?;
        cx.event(
            id.as_str(),
            Some(&p.id),
            crate::model::TestRecordedData {
                revision: args.revision.0,
                name: args.name.as_str().to_owned(),
                status: args.status,
            },
        )?;
        Ok(TestRecorded { test_result })
    }
}

/// Arguments of `test.list`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TestListArgs")]
pub struct ListTests {
    /// The proposal.
    pub proposal_id: Id,
    /// Only results on this revision.
    pub revision: Option<RevisionNumber>,
    /// Only results of this check (`unit`, `lint`…), compared exactly.
    pub name: Option<Title>,
    /// Page size, 1 to 200 (default 50).
    pub limit: Option<Limit<200>>,
    /// Continue after the page that returned this `next_cursor`.
    pub cursor: Option<Cursor>,
}

/// Result of `test.list`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TestPage {
    /// Test results with their notes, oldest first.
    pub test_results: Vec<TestResult>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl super::Request for ListTests {
    const TOOL: &'static str = "test.list";
    const DESCRIPTION: &'static str = "List a proposal's test and check results oldest first, with their notes (a failed check's output), optionally for one revision or one check name; keyset-paged.";
    const MUTATES: bool = false;
    type Output = TestPage;

    store_tool!();
}

impl Tool for ListTests {
    no_prep!();

    unkeyed!();

    fn run(cx: &Cx<'_>, args: ListTests, (): ()) -> Result<TestPage, ToolError> {
        let p = Proposal::load(cx.tx, args.proposal_id.as_str())?;
        let limit = args.limit.map_or(50, |l| l.0);
        let after = Cursor::start(args.cursor.as_ref())?;
        let mut test_results = store::evidence::list_test_results(
            cx.tx,
            &p.id,
            after,
            args.revision.map(|r| r.0),
            args.name.as_ref().map(|n| n.as_str()),
            i64::from(limit) + 1,
        )?;
        let next_cursor = Cursor::page(&mut test_results, limit, |t| t.seq);
        Ok(TestPage {
            test_results,
            next_cursor,
        })
    }
}

/// Arguments of `test.get`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "TestGetArgs")]
pub struct GetTest {
    /// The test result (`test.record`'s `test_result.id`).
    pub test_result_id: Id,
}

/// Result of `test.get`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TestDetail {
    /// The result, with its note.
    pub test_result: TestResult,
}

impl super::Request for GetTest {
    const TOOL: &'static str = "test.get";
    const DESCRIPTION: &'static str =
        "Read one test or check result by id, with its note (a failed check's output).";
    const MUTATES: bool = false;
    type Output = TestDetail;

    store_tool!();
}

impl Tool for GetTest {
    no_prep!();

    unkeyed!();

    fn run(cx: &Cx<'_>, args: GetTest, (): ()) -> Result<TestDetail, ToolError> {
        let id = args.test_result_id.as_str();
        let test_result = store::evidence::test_result(cx.tx, id)?
            .ok_or_else(|| ToolError::not_found("test result", id))?;
        Ok(TestDetail { test_result })
    }
}
