//! Who acts next on a proposal, and why: one pure function over values,
//! read by `proposal.status` (its `next`) and by `inbox.list` (the entries
//! naming the caller).
//!
//! `next_actors` takes a `Situation`: the proposal, its policy
//! evaluation, whether its revision is stale, the claims stage and the
//! coverage outcome when they were run, and the evidence on the revision.
//! `proposal.status` builds it from a full validation; `inbox.list` from
//! the policy evaluation and the preconditions alone (no dry run, claims or
//! coverage: see `Situation::claims`).

use super::records::{
    Proposal, ProposalStatus, SecurityReviewRecord, TestResult, TestStatus, Vote,
};
use super::validate::{Stage, StageStatus};
use crate::actor::{Actor, ActorKind};
use crate::policy::{PolicyReport, Requirement, RequirementId, RequirementStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What rebasing a stale revision onto the current files would give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RebaseOutlook {
    /// The same change at other positions: its evidence carries.
    Trivial,
    /// A clean merge that changes the change (evidence is earned again).
    Changed,
    /// Conflicting hunks: the author resolves them and attaches.
    Conflicts,
}

/// Who is expected to act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextRole {
    /// The proposal's author.
    Author,
    /// A reviewer (an eligible agent, or a holder of the roles named).
    Reviewer,
    /// A holder of the `security` role (or a person).
    SecurityReviewer,
    /// A person.
    Human,
    /// The orchestrator (the host: it runs checks and applies).
    Orchestrator,
}

impl NextRole {
    /// The stable spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            NextRole::Author => "author",
            NextRole::Reviewer => "reviewer",
            NextRole::SecurityReviewer => "security_reviewer",
            NextRole::Human => "human",
            NextRole::Orchestrator => "orchestrator",
        }
    }
}

/// What they are expected to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NextAction {
    /// Ask for review (`proposal.request_review`).
    RequestReview,
    /// The files changed since the revision: rebase it or attach a new one.
    RebaseOrAttach,
    /// Nothing to do but wait (another agent's claim, a running apply).
    Wait,
    /// Claim what the change touches, or narrow the change.
    Claim,
    /// Answer the blocking votes (attach a revision, or convince the voter).
    AnswerVotes,
    /// Cast a vote on the revision (`vote.cast`).
    Vote,
    /// Record a security review of the revision (`security.review`).
    SecurityReview,
    /// Approve the revision as a person (`human.approve`).
    HumanApproval,
    /// Run a required check and record it (`test.record`).
    RunCheck,
    /// Run the landing queue's external check on the speculative state
    /// the item's `queue_check` names (a commit or a directory) and
    /// answer it with `test.record` (that check's name, this revision).
    RunQueueCheck,
    /// A required check failed: attach a revision that fixes it (its
    /// output: `test.get`).
    FixCheck,
    /// Apply it (`patch.apply`).
    Apply,
}

/// Who is expected to act next, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NextActor {
    /// `author`, `reviewer`, `security_reviewer`, `human` or
    /// `orchestrator`.
    pub actor: NextRole,
    /// What they are expected to do.
    pub action: NextAction,
    /// Who can (agent ids; empty when anyone of that kind can).
    pub candidates: Vec<String>,
    /// People (ids) who can, when the policy's `[people]` names them;
    /// absent: any person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub people: Option<Vec<String>>,
    /// The roles wanted, for reviewers.
    pub roles: Vec<String>,
    /// What they are expected to do, for people.
    pub why: String,
}

/// Who can satisfy one unsatisfied requirement of the policy, and how, as
/// `proposal.status` reports it in `by_requirement`: the item its `next`
/// holds for that requirement (before equal items are merged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequirementNext {
    /// The requirement (`human_approval`, `check:unit`, …).
    pub requirement: RequirementId,
    /// Who can satisfy it, and how.
    pub next: NextActor,
}

/// What [`next_actors`] decides from.
pub(crate) struct Situation<'a> {
    /// The proposal.
    pub proposal: &'a Proposal,
    /// The policy evaluation of its latest revision.
    pub policy: &'a PolicyReport,
    /// Whether the revision no longer matches the files.
    pub stale: bool,
    /// For a stale revision, what rebasing it would give (`None` when not
    /// stale, or not known).
    pub rebase: Option<RebaseOutlook>,
    /// The claims stage, when it was run (`None`: the inbox, which does not
    /// resolve claims or coverage — `proposal.status` does).
    pub claims: Option<&'a Stage>,
    /// Whether the coverage stage failed (false when it was not run).
    pub coverage_failed: bool,
    /// Whether every gate that was run passes.
    pub valid: bool,
    /// Every vote on the proposal.
    pub votes: &'a [Vote],
    /// Every security review of the proposal.
    pub reviews: &'a [SecurityReviewRecord],
    /// Every test result of the proposal, oldest first.
    pub tests: &'a [TestResult],
}

fn next(
    actor: NextRole,
    action: NextAction,
    candidates: Vec<String>,
    roles: Vec<String>,
    why: String,
) -> NextActor {
    NextActor {
        actor,
        action,
        candidates,
        people: None,
        roles,
        why,
    }
}

/// Who acts next on an open proposal (`pending` or `in_review`), in the
/// order they are found: the author's own work first, then the missing
/// evidence requirement by requirement, then the apply.
///
/// Reviewers and security reviewers who already judged the latest revision
/// are not candidates again; after a failed (not errored or skipped)
/// required check it is the author who acts, not the orchestrator.
pub(crate) fn next_actors(s: &Situation<'_>) -> Vec<NextActor> {
    use NextAction as A;
    use NextRole as R;
    let p = s.proposal;
    let author = || vec![p.author.clone()];
    if p.status == ProposalStatus::Pending {
        return vec![next(
            R::Author,
            A::RequestReview,
            author(),
            vec![],
            "request review (proposal.request_review)".into(),
        )];
    }
    let current = p.latest_revision;
    let mut out = Vec::new();
    // Approved, and only the files moved, in a way its evidence survives:
    // the orchestrator lands it (`patch.apply` with `rebase: true`), so
    // its author is not asked to rebase what the host will.
    let host_rebases = s.stale && s.policy.approvable && s.rebase == Some(RebaseOutlook::Trivial);
    if host_rebases {
        out.push(next(
            R::Author,
            A::Wait,
            author(),
            vec![],
            format!(
                "wait: the files changed since revision {current}, but its rebase is trivial and keeps the evidence, so the orchestrator lands it (patch.apply rebase: true); no need to rebase it yourself (proposal.rebase)"
            ),
        ));
    } else if s.stale {
        let why = if s.rebase == Some(RebaseOutlook::Conflicts) {
            format!(
                "the files changed since revision {current} and a rebase conflicts: resolve the conflicting hunks (proposal.rebase lists them) and attach a revision"
            )
        } else {
            format!(
                "the files changed since revision {current}: rebase it onto them (proposal.rebase) or attach a new revision"
            )
        };
        out.push(next(R::Author, A::RebaseOrAttach, author(), vec![], why));
    } else if let Some(claims) = s.claims {
        // Another agent's claim overlapping the change: name it and what
        // unblocks it, rather than asking the author to claim it.
        let reasons = claims.reasons.as_slice();
        let text = |r: &serde_json::Value, k: &str| {
            r.get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        for r in reasons.iter().filter(|r| r.get("holder").is_some()) {
            let holder = text(r, "holder");
            out.push(next(
                R::Author,
                A::Wait,
                author(),
                vec![],
                format!(
                    "wait: {holder} holds write claim {} on {}, which overlaps the change; it unblocks when {holder} releases it (claim.release) or it expires at {}",
                    text(r, "claim_id"),
                    text(r, "resource_id"),
                    text(r, "expires_at"),
                ),
            ));
        }
        // A failure of the author's own (a missing, stale or unreadable
        // claim: any reason but another's claim or a fresh claim's note),
        // or an uncovered change.
        let own = claims.status == StageStatus::Failed
            && reasons
                .iter()
                .any(|r| r.get("holder").is_none() && r.get("token").is_none());
        if own || s.coverage_failed {
            out.push(next(
                R::Author,
                A::Claim,
                author(),
                vec![],
                "claim what the change touches, or narrow the change (see the claims and coverage stages)".into(),
            ));
        }
    }
    for r in &s.policy.requirements {
        if r.status != RequirementStatus::Unsatisfied {
            continue;
        }
        let item = requirement_next(s, r);
        if !out.contains(&item) {
            out.push(item);
        }
    }
    if host_rebases {
        // Its evidence is complete; only the files moved. A trivial rebase
        // keeps that evidence, so the orchestrator lands it at once.
        out.push(next(
            R::Orchestrator,
            A::Apply,
            vec![],
            vec![],
            "the files moved under it: apply it with rebase (patch.apply rebase: true lands its trivial rebase, keeping the evidence)".into(),
        ));
    }
    if s.valid {
        out.push(next(
            R::Orchestrator,
            A::Apply,
            vec![],
            vec![],
            "apply it (patch.apply)".into(),
        ));
    }
    out
}

/// Who can satisfy each unsatisfied requirement of `s.policy`, in the
/// policy's order: one item per requirement, whatever the proposal's
/// status (a pending proposal's requirements too).
pub(crate) fn by_requirement(s: &Situation<'_>) -> Vec<RequirementNext> {
    s.policy
        .requirements
        .iter()
        .filter(|r| r.status == RequirementStatus::Unsatisfied)
        .map(|r| RequirementNext {
            requirement: r.id.clone(),
            next: requirement_next(s, r),
        })
        .collect()
}

/// Who can satisfy the unsatisfied requirement `r`: its candidates who
/// have not yet judged the latest revision, a person, the orchestrator for
/// a check not yet failed, the author for blocking votes or a failed check.
fn requirement_next(s: &Situation<'_>, r: &Requirement) -> NextActor {
    use NextAction as A;
    use NextRole as R;
    let p = s.proposal;
    let author = || vec![p.author.clone()];
    let current = p.latest_revision;
    let voted = |agent: &str| {
        s.votes
            .iter()
            .any(|v| v.revision == current && v.agent_id == agent)
    };
    let reviewed = |agent: &str| {
        s.reviews.iter().any(|review| {
            review.revision == current
                && review.reviewer.kind == ActorKind::Agent
                && review.reviewer.id.as_str() == agent
        })
    };
    let why = r.missing.clone().unwrap_or_else(|| r.id.to_string());
    match &r.id {
        RequirementId::NoBlockingVotes => next(
            R::Author,
            A::AnswerVotes,
            author(),
            vec![],
            format!("answer the blocking votes ({})", r.evidence.join(", ")),
        ),
        RequirementId::HumanApproval => NextActor {
            people: r.people.clone(),
            ..next(R::Human, A::HumanApproval, vec![], vec![], why)
        },
        RequirementId::SecurityReview | RequirementId::Secrets => NextActor {
            people: r.people.as_ref().map(|ids| {
                let judged = |id: &str| {
                    s.reviews.iter().any(|review| {
                        review.revision == current
                            && review.reviewer.kind == ActorKind::Human
                            && review.reviewer.id.as_str() == id
                    })
                };
                ids.iter().filter(|i| !judged(i)).cloned().collect()
            }),
            ..next(
                R::SecurityReviewer,
                A::SecurityReview,
                r.candidates
                    .iter()
                    .filter(|c| !reviewed(c))
                    .cloned()
                    .collect(),
                vec![crate::policy::SECURITY_ROLE.into()],
                why,
            )
        },
        RequirementId::Check(name) => {
            let latest = s
                .tests
                .iter()
                .rev()
                .find(|t| t.revision == current && &t.name == name);
            match latest {
                Some(t) if t.status == TestStatus::Failed => next(
                    R::Author,
                    A::FixCheck,
                    author(),
                    vec![],
                    format!(
                        "check {name:?} failed on revision {current} ({}; its output: test.get): attach a revision that fixes it",
                        t.id
                    ),
                ),
                _ => next(R::Orchestrator, A::RunCheck, vec![], vec![], why),
            }
        }
        RequirementId::Approvals | RequirementId::Role(_) => {
            let role = match &r.id {
                RequirementId::Role(rule) => rule.split(':').next().map(str::to_owned),
                _ => None,
            };
            next(
                R::Reviewer,
                A::Vote,
                r.candidates.iter().filter(|c| !voted(c)).cloned().collect(),
                role.into_iter().collect(),
                why,
            )
        }
    }
}

/// Whether `n` asks `actor` to act: an agent named among an author's,
/// reviewer's or security reviewer's candidates; for a human approval,
/// every person, or only those `[people] approve` names; for a security
/// review, the people `[people] security` names (when it names none,
/// people are not asked: agents with the role are); any orchestrator for
/// a check or an apply. A wait asks nobody.
pub(crate) fn asks(n: &NextActor, actor: &Actor) -> bool {
    if n.action == NextAction::Wait {
        return false;
    }
    let named = |people: &Option<Vec<String>>| {
        people
            .as_ref()
            .map(|ids| ids.iter().any(|i| i == actor.id.as_str()))
    };
    match (actor.kind, n.actor) {
        (ActorKind::Agent, NextRole::Author | NextRole::Reviewer | NextRole::SecurityReviewer) => {
            n.candidates.iter().any(|c| c == actor.id.as_str())
        }
        (ActorKind::Human, NextRole::Human) => named(&n.people).unwrap_or(true),
        (ActorKind::Human, NextRole::SecurityReviewer) => named(&n.people).unwrap_or(false),
        (ActorKind::Orchestrator, NextRole::Orchestrator) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::id::Id;
    use crate::model::Risk;
    use crate::policy::Requirement;

    fn proposal(status: ProposalStatus) -> Proposal {
        Proposal {
            id: "p1".into(),
            task_id: "t1".into(),
            author: "ada".into(),
            title: "T".into(),
            summary_md: "S".into(),
            risk: Risk::Normal,
            status,
            latest_revision: 2,
            reverts: None,
            created_at: Timestamp(0),
            updated_at: Timestamp(0),
            seq: 1,
        }
    }

    fn unsatisfied(id: RequirementId, candidates: &[&str]) -> Requirement {
        Requirement {
            id,
            status: RequirementStatus::Unsatisfied,
            evidence: Vec::new(),
            missing: Some("missing".into()),
            candidates: candidates.iter().map(|c| (*c).to_owned()).collect(),
            people: None,
            reasons: Vec::new(),
            paths: Vec::new(),
            findings: Vec::new(),
            carried: Vec::new(),
        }
    }

    fn test_result(revision: u32, status: TestStatus) -> TestResult {
        TestResult {
            id: format!("test-{revision}-{status:?}"),
            proposal_id: "p1".into(),
            revision,
            name: "unit".into(),
            status,
            duration_ms: None,
            note_md: None,
            recorded_by: Actor::orchestrator(Id::new("host").expect("id")),
            created_at: Timestamp(0),
            seq: 0,
        }
    }

    fn decide(
        p: &Proposal,
        policy: &PolicyReport,
        tests: &[TestResult],
        votes: &[Vote],
    ) -> Vec<NextActor> {
        next_actors(&Situation {
            proposal: p,
            policy,
            stale: false,
            rebase: None,
            claims: None,
            coverage_failed: false,
            valid: policy.approvable,
            votes,
            reviews: &[],
            tests,
        })
    }

    fn actions(next: &[NextActor]) -> Vec<(NextRole, NextAction)> {
        next.iter().map(|n| (n.actor, n.action)).collect()
    }

    #[test]
    fn a_failed_check_waits_on_the_author_an_unrun_or_errored_one_on_the_orchestrator() {
        let p = proposal(ProposalStatus::InReview);
        let policy = PolicyReport {
            approvable: false,
            requirements: vec![unsatisfied(RequirementId::Check("unit".into()), &[])],
        };
        let run = [(NextRole::Orchestrator, NextAction::RunCheck)];
        assert_eq!(actions(&decide(&p, &policy, &[], &[])), run);
        // A failure on an older revision does not count for the latest.
        let old = [test_result(1, TestStatus::Failed)];
        assert_eq!(actions(&decide(&p, &policy, &old, &[])), run);
        let errored = [test_result(2, TestStatus::Errored)];
        assert_eq!(actions(&decide(&p, &policy, &errored, &[])), run);
        let failed = [
            test_result(2, TestStatus::Passed),
            test_result(2, TestStatus::Failed),
        ];
        let next = decide(&p, &policy, &failed, &[]);
        assert_eq!(actions(&next), [(NextRole::Author, NextAction::FixCheck)]);
        assert_eq!(next[0].candidates, ["ada"]);
        assert!(next[0].why.contains("test-2-Failed"), "{}", next[0].why);
    }

    #[test]
    fn a_reviewer_who_voted_on_the_revision_is_no_longer_asked() {
        let p = proposal(ProposalStatus::InReview);
        let policy = PolicyReport {
            approvable: false,
            requirements: vec![unsatisfied(RequirementId::Approvals, &["bob", "cy"])],
        };
        let vote = |revision: u32| Vote {
            id: "v".into(),
            proposal_id: "p1".into(),
            revision,
            agent_id: "bob".into(),
            vote: crate::model::VoteValue::Revise,
            reason_md: None,
            created_at: Timestamp(0),
            seq: 0,
        };
        let next = decide(&p, &policy, &[], &[vote(2)]);
        assert_eq!(next[0].candidates, ["cy"]);
        let next = decide(&p, &policy, &[], &[vote(1)]);
        assert_eq!(
            next[0].candidates,
            ["bob", "cy"],
            "a vote on revision 1 is not one on 2"
        );
        let bob = Actor::agent(Id::new("bob").expect("id"));
        let cy = Actor::agent(Id::new("cy").expect("id"));
        let next = decide(&p, &policy, &[], &[vote(2)]);
        assert!(!asks(&next[0], &bob));
        assert!(asks(&next[0], &cy));
        assert!(!asks(&next[0], &Actor::human(Id::new("hana").expect("id"))));
    }

    #[test]
    fn pending_asks_for_review_and_a_valid_one_for_the_apply_waits_ask_nobody() {
        let policy = PolicyReport {
            approvable: true,
            requirements: Vec::new(),
        };
        let pending = decide(&proposal(ProposalStatus::Pending), &policy, &[], &[]);
        assert_eq!(
            actions(&pending),
            [(NextRole::Author, NextAction::RequestReview)]
        );
        let host = Actor::orchestrator(Id::new("host").expect("id"));
        let ready = decide(&proposal(ProposalStatus::InReview), &policy, &[], &[]);
        assert_eq!(
            actions(&ready),
            [(NextRole::Orchestrator, NextAction::Apply)]
        );
        assert!(asks(&ready[0], &host));
        let wait = NextActor {
            actor: NextRole::Orchestrator,
            action: NextAction::Wait,
            candidates: Vec::new(),
            people: None,
            roles: Vec::new(),
            why: "wait".into(),
        };
        assert!(!asks(&wait, &host));
    }

    #[test]
    fn people_named_by_the_policy_are_asked_and_no_other_person() {
        let carol = Actor::human(Id::new("carol").expect("id"));
        let dave = Actor::human(Id::new("dave").expect("id"));
        let item = |actor, action, people: Option<&[&str]>| NextActor {
            people: people.map(|p| p.iter().map(|s| (*s).to_owned()).collect()),
            ..next(actor, action, vec![], vec![], "why".into())
        };
        let approve = |people| item(NextRole::Human, NextAction::HumanApproval, people);
        let review = |people| {
            item(
                NextRole::SecurityReviewer,
                NextAction::SecurityReview,
                people,
            )
        };
        // Human approval: every person while [people] approve is absent.
        assert!(asks(&approve(None), &carol) && asks(&approve(None), &dave));
        assert!(asks(&approve(Some(&["carol"])), &carol));
        assert!(!asks(&approve(Some(&["carol"])), &dave));
        assert!(!asks(&approve(Some(&[])), &carol));
        // Security review: people are asked only when the policy names them.
        assert!(!asks(&review(None), &carol));
        assert!(asks(&review(Some(&["carol"])), &carol));
        assert!(!asks(&review(Some(&["carol"])), &dave));
    }
}
