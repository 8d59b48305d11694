//! Evaluating a [`Policy`] against the facts of one revision.

use super::secrets::{scan_secrets, SecretFinding};
use super::{CarryOver, Gate, PathGlob, People, PersonRole, Policy, RoleRule, SECURITY_ROLE};
use crate::actor::{Actor, ActorKind};
use crate::changeset::same_change;
use crate::model::{
    Agent, Approval, FileState, FileSummary, MatchRung, Revision, Risk, SecurityReviewRecord,
    TestResult, TestStatus, Verdict, Vote, VoteValue,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// The facts about one proposal revision that policy evaluation needs.
///
/// The shell gathers them from the store; evaluation only reads them.
/// Slices of records are in the order they were recorded (the store's
/// `seq`): where an agent voted twice on one revision, or a check ran twice,
/// the later entry is the one that counts.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInput<'a> {
    /// The proposal's author (an agent id): never counted as a reviewer.
    pub author: &'a str,
    /// The proposal's risk level.
    pub risk: Risk,
    /// The revision being judged.
    pub revision: RevisionInfo<'a>,
    /// The proposal's other revisions, for carry-over. Only those numbered
    /// below `revision.number` are consulted (the slice may hold every
    /// revision, the current one included); order does not matter.
    pub earlier_revisions: &'a [RevisionInfo<'a>],
    /// The registered agents (every voter should be among them: a vote by
    /// an agent not listed does not count).
    pub agents: &'a [AgentInfo<'a>],
    /// Every vote on the proposal, any revision, oldest first.
    pub votes: &'a [VoteInfo<'a>],
    /// Every security review of the proposal, any revision.
    pub security_reviews: &'a [ReviewInfo<'a>],
    /// Every human approval of the proposal, any revision.
    pub human_approvals: &'a [ApprovalInfo<'a>],
    /// Every test result of the proposal, any revision, oldest first.
    pub test_results: &'a [TestInfo<'a>],
    /// The lines `revision` adds, for secret scanning.
    pub added_lines: &'a [AddedLine<'a>],
    /// The proposal this one reverts (`proposal.revert`), if it is a
    /// revert: a gate with `reverts = true` then applies.
    pub reverts: Option<&'a str>,
}

/// One revision: its number, changeset digest and per-path changes.
#[derive(Debug, Clone, Copy)]
pub struct RevisionInfo<'a> {
    /// The revision number.
    pub number: u32,
    /// `sha256:` of its canonical changeset.
    pub changeset_digest: &'a str,
    /// What it does to each path (a rename lists both paths: `rename` at the
    /// destination, `renamed_away` at the source).
    pub changeset: &'a [FileSummary],
    /// Its change in place ([`Revision::change_id`]); `None` for
    /// revisions stored before it was recorded (they never carry over a
    /// trivial rebase).
    pub change_id: Option<&'a str>,
    /// The revision it rebases when the engine made it by a rebase
    /// (`proposal.rebase`, or `patch.apply` with `rebase`); `None` for a
    /// revision an author sent.
    pub rebased_from: Option<u32>,
}

impl<'a> From<&'a Revision> for RevisionInfo<'a> {
    fn from(r: &'a Revision) -> RevisionInfo<'a> {
        RevisionInfo {
            number: r.number,
            changeset_digest: &r.changeset_digest,
            changeset: &r.changeset,
            change_id: r.change_id.as_deref(),
            rebased_from: r.rebased_from,
        }
    }
}

/// A registered agent.
#[derive(Debug, Clone, Copy)]
pub struct AgentInfo<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its roles, compared exactly.
    pub roles: &'a [String],
    /// Whether it may act: a disabled agent's votes do not count.
    pub enabled: bool,
}

impl<'a> From<&'a Agent> for AgentInfo<'a> {
    fn from(a: &'a Agent) -> AgentInfo<'a> {
        AgentInfo {
            id: &a.id,
            roles: &a.roles,
            enabled: a.enabled,
        }
    }
}

/// A vote.
#[derive(Debug, Clone, Copy)]
pub struct VoteInfo<'a> {
    /// The vote's id.
    pub id: &'a str,
    /// The revision it judges.
    pub revision: u32,
    /// The voting agent.
    pub agent_id: &'a str,
    /// The vote.
    pub vote: VoteValue,
}

impl<'a> From<&'a Vote> for VoteInfo<'a> {
    fn from(v: &'a Vote) -> VoteInfo<'a> {
        VoteInfo {
            id: &v.id,
            revision: v.revision,
            agent_id: &v.agent_id,
            vote: v.vote,
        }
    }
}

/// A security review.
#[derive(Debug, Clone, Copy)]
pub struct ReviewInfo<'a> {
    /// The review's id.
    pub id: &'a str,
    /// The revision reviewed.
    pub revision: u32,
    /// The verdict.
    pub verdict: Verdict,
    /// Who reviewed: a person, or an agent that must (still) be enabled,
    /// hold the `security` role and not be the author.
    pub reviewer: &'a Actor,
}

impl<'a> From<&'a SecurityReviewRecord> for ReviewInfo<'a> {
    fn from(r: &'a SecurityReviewRecord) -> ReviewInfo<'a> {
        ReviewInfo {
            id: &r.id,
            revision: r.revision,
            verdict: r.verdict,
            reviewer: &r.reviewer,
        }
    }
}

/// A person's approval.
#[derive(Debug, Clone, Copy)]
pub struct ApprovalInfo<'a> {
    /// The approval's id.
    pub id: &'a str,
    /// The revision approved.
    pub revision: u32,
    /// The approving person: the approval counts only while they hold the
    /// `approve` role (`[people]`).
    pub human_id: &'a str,
}

impl<'a> From<&'a Approval> for ApprovalInfo<'a> {
    fn from(a: &'a Approval) -> ApprovalInfo<'a> {
        ApprovalInfo {
            id: &a.id,
            revision: a.revision,
            human_id: &a.human_id,
        }
    }
}

/// A test result.
#[derive(Debug, Clone, Copy)]
pub struct TestInfo<'a> {
    /// The result's id.
    pub id: &'a str,
    /// The revision tested.
    pub revision: u32,
    /// The check's name, compared exactly.
    pub name: &'a str,
    /// Its outcome.
    pub status: TestStatus,
}

impl<'a> From<&'a TestResult> for TestInfo<'a> {
    fn from(t: &'a TestResult) -> TestInfo<'a> {
        TestInfo {
            id: &t.id,
            revision: t.revision,
            name: &t.name,
            status: t.status,
        }
    }
}

/// A line the revision adds.
#[derive(Debug, Clone, Copy)]
pub struct AddedLine<'a> {
    /// The file.
    pub path: &'a str,
    /// Its 1-based number in the new content.
    pub line: u32,
    /// The line's text, without its line ending.
    pub text: &'a str,
}

/// The outcome of [`evaluate`]: every requirement, not a bare boolean.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PolicyReport {
    /// True when every requirement is satisfied or not applicable.
    pub approvable: bool,
    /// Every requirement, in a fixed order: `approvals`, `role:…` (policy
    /// order), `no_blocking_votes`, `security_review`, `secrets`,
    /// `human_approval`, `check:…` (policy order).
    pub requirements: Vec<Requirement>,
}

impl PolicyReport {
    /// The requirement with id `id`.
    pub fn requirement(&self, id: &RequirementId) -> Option<&Requirement> {
        self.requirements.iter().find(|r| r.id == *id)
    }
}

/// Whether a requirement holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RequirementStatus {
    /// It holds.
    Satisfied,
    /// It does not hold: the revision is not approvable.
    Unsatisfied,
    /// The policy does not ask it of this revision.
    NotApplicable,
}

/// What a requirement is: its stable id, spelled `approvals`,
/// `role:<role>:<globs>`, `no_blocking_votes`, `security_review`,
/// `secrets`, `human_approval` or `check:<name>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequirementId {
    /// Enough approving votes of the eligible roles.
    Approvals,
    /// A path rule: approvals of a role for touched paths matching globs
    /// (`<role>:<glob>,<glob>…`).
    Role(String),
    /// No standing blocking vote.
    NoBlockingVotes,
    /// A passing security review.
    SecurityReview,
    /// No secret in the added lines.
    Secrets,
    /// A person's approval.
    HumanApproval,
    /// A required check (test result) named so.
    Check(String),
}

impl RequirementId {
    /// The id spelled `s`, if it is one.
    pub fn parse(s: &str) -> Option<RequirementId> {
        Some(match s {
            "approvals" => RequirementId::Approvals,
            "no_blocking_votes" => RequirementId::NoBlockingVotes,
            "security_review" => RequirementId::SecurityReview,
            "secrets" => RequirementId::Secrets,
            "human_approval" => RequirementId::HumanApproval,
            _ => {
                if let Some(rule) = s.strip_prefix("role:") {
                    RequirementId::Role(rule.to_owned())
                } else {
                    RequirementId::Check(s.strip_prefix("check:")?.to_owned())
                }
            }
        })
    }
}

impl fmt::Display for RequirementId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequirementId::Approvals => f.write_str("approvals"),
            RequirementId::Role(rule) => write!(f, "role:{rule}"),
            RequirementId::NoBlockingVotes => f.write_str("no_blocking_votes"),
            RequirementId::SecurityReview => f.write_str("security_review"),
            RequirementId::Secrets => f.write_str("secrets"),
            RequirementId::HumanApproval => f.write_str("human_approval"),
            RequirementId::Check(name) => write!(f, "check:{name}"),
        }
    }
}

impl PartialEq<&str> for RequirementId {
    fn eq(&self, other: &&str) -> bool {
        RequirementId::parse(other).as_ref() == Some(self)
    }
}

impl Serialize for RequirementId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for RequirementId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RequirementId, D::Error> {
        let s = String::deserialize(d)?;
        RequirementId::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("{s:?} is not a requirement id")))
    }
}

roundtable_base::string_schema!(RequirementId);

/// One requirement of the policy, judged on one revision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Requirement {
    /// A stable id: `approvals`, `role:<role>:<globs>`, `no_blocking_votes`,
    /// `security_review`, `secrets`, `human_approval`, `check:<name>`.
    pub id: RequirementId,
    /// Whether it holds.
    pub status: RequirementStatus,
    /// The ids of the records it rests on: the counted approvals, the
    /// standing blocking votes, the passing or failing reviews, the human
    /// approvals, the latest check result.
    pub evidence: Vec<String>,
    /// What is still needed, for people and agents, when unsatisfied.
    pub missing: Option<String>,
    /// Agents that could still satisfy it: enabled, holding the role, not
    /// the author, not already counted; sorted.
    pub candidates: Vec<String>,
    /// People (ids, sorted) who could satisfy it, when the policy's
    /// `[people]` names them; absent: any person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub people: Option<Vec<String>>,
    /// Why it applies and how the evidence was judged (carried-over and
    /// ignored votes, matched paths…).
    pub reasons: Vec<String>,
    /// The touched paths that made it apply (path rules), sorted.
    pub paths: Vec<String>,
    /// Secrets found in added lines (for `security_review` and `secrets`).
    pub findings: Vec<SecretFinding>,
    /// The records of `evidence` given on an earlier revision, each with
    /// the rule that carried it to this one.
    #[serde(default)]
    pub carried: Vec<CarriedEvidence>,
}

/// A record given on an earlier revision that counts for the judged one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CarriedEvidence {
    /// The record's id (a vote, security review, human approval or check
    /// result).
    pub evidence: String,
    /// The revision it was given on.
    pub revision: u32,
    /// Why it counts for the judged revision.
    pub rule: CarryRule,
}

/// The policy rule that carried evidence from an earlier revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CarryRule {
    /// `carry_over = "trivial_rebase"`: every revision since was made by
    /// the engine's rebase of the one before and makes the same change in
    /// the same place (the same change id: text, context, enclosing
    /// symbol).
    EngineRebase,
    /// `carry_over = "identical_changeset"`: the judged revision's
    /// changeset is identical.
    IdenticalChangeset,
    /// `carry_over = "unchanged_resources"`: the paths relevant to the
    /// reviewer have the same change.
    UnchangedResources,
}

impl Requirement {
    fn new(id: RequirementId, status: RequirementStatus) -> Requirement {
        Requirement {
            id,
            status,
            evidence: Vec::new(),
            missing: None,
            candidates: Vec::new(),
            people: None,
            reasons: Vec::new(),
            paths: Vec::new(),
            findings: Vec::new(),
            carried: Vec::new(),
        }
    }
}

/// A role a revision needs reviewed, and who can fill it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoleNeed {
    /// The requirement it serves (`approvals`, `role:…`, `security_review`).
    pub requirement: RequirementId,
    /// The roles that can fill it (any one); empty means any enabled agent
    /// that is not the author.
    pub roles: Vec<String>,
    /// How many distinct reviewers are needed.
    pub minimum: u32,
    /// The touched paths that make it needed (path globs, secrets found);
    /// empty when only the risk level or the general approvals need it.
    pub paths: Vec<String>,
    /// The enabled agents, never the author, that can fill it; sorted.
    pub candidates: Vec<String>,
}

/// One path's change, compared across revisions for carry-over.
type Change<'a> = (
    &'a str,
    &'a str,
    Option<&'a str>,
    Option<(crate::Digest, bool)>,
    Option<(crate::Digest, bool)>,
);

fn state(s: &Option<FileState>) -> Option<(crate::Digest, bool)> {
    s.as_ref().map(|s| (s.digest, s.executable))
}

/// Every path a changeset touches, both sides of renames and copies.
fn touched(changeset: &[FileSummary]) -> BTreeSet<&str> {
    let mut out = BTreeSet::new();
    for f in changeset {
        out.insert(f.path.as_str());
        if let Some(o) = &f.other_path {
            out.insert(o.as_str());
        }
    }
    out
}

/// The entries of `changeset` that involve `path`, in a comparable form.
fn changes_of<'a>(changeset: &'a [FileSummary], path: &str) -> Vec<Change<'a>> {
    let mut out: Vec<Change<'a>> = changeset
        .iter()
        .filter(|f| f.path == path || f.other_path.as_deref() == Some(path))
        .map(|f| {
            (
                f.operation.as_str(),
                f.path.as_str(),
                f.other_path.as_deref(),
                state(&f.before),
                state(&f.after),
            )
        })
        .collect();
    out.sort();
    out
}

fn matching<'p>(paths: &BTreeSet<&'p str>, globs: &[PathGlob]) -> Vec<&'p str> {
    paths
        .iter()
        .copied()
        .filter(|p| globs.iter().any(|g| g.is_match(p)))
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// The shared state of one evaluation.
struct Context<'p, 'a> {
    policy: &'p Policy,
    input: &'p PolicyInput<'a>,
    agents: HashMap<&'a str, AgentInfo<'a>>,
    touched: BTreeSet<&'a str>,
    /// Under `carry_over = "trivial_rebase"`: the earlier revisions whose
    /// evidence counts, because they and every revision since make the
    /// current revision's change.
    trivial: BTreeSet<u32>,
}

/// Why evidence on revision `n` carries to `current` under
/// `trivial_rebase`.
fn trivial_why(n: u32, current: u32) -> String {
    let made = if n + 1 == current {
        format!("revision {current} is the engine's rebase of revision {n} and makes")
    } else {
        format!(
            "revisions {} to {current} are each the engine's rebase of the one before and make",
            n + 1
        )
    };
    format!(
        "rule engine_rebase: {made} the same change with the same context in the same symbol (carry_over = \"trivial_rebase\")"
    )
}

/// A vote that counts for the current revision.
#[derive(Clone, Copy)]
struct Standing<'a> {
    vote: VoteInfo<'a>,
}

impl<'p, 'a> Context<'p, 'a> {
    fn new(policy: &'p Policy, input: &'p PolicyInput<'a>) -> Context<'p, 'a> {
        let agents = input.agents.iter().map(|a| (a.id, *a)).collect();
        let mut trivial = BTreeSet::new();
        if policy.approvals.carry_over == CarryOver::TrivialRebase {
            let by_number: HashMap<u32, &RevisionInfo<'_>> = input
                .earlier_revisions
                .iter()
                .map(|r| (r.number, r))
                .collect();
            // Back from the current revision, one engine-made rebase at a
            // time: each step's revision rebases the one before it and
            // makes the same change in the same place (text, context,
            // enclosing symbol). A revision an author sent ends the chain.
            let mut later = &input.revision;
            while let Some(earlier) = later
                .rebased_from
                .filter(|&n| n + 1 == later.number)
                .and_then(|n| by_number.get(&n))
            {
                if !same_change(earlier.change_id, later.change_id) {
                    break;
                }
                trivial.insert(earlier.number);
                later = earlier;
            }
        }
        Context {
            policy,
            input,
            agents,
            touched: touched(input.revision.changeset),
            trivial,
        }
    }

    /// Whether evidence on revision `n` counts for the current revision:
    /// `n` is the current one, or a trivial rebase connects them. Notes the
    /// carried record in `reasons`.
    fn counts_on(&self, n: u32, record: &str, reasons: &mut Vec<String>) -> bool {
        let current = self.input.revision.number;
        if n == current {
            return true;
        }
        let carried = self.trivial.contains(&n);
        if carried {
            reasons.push(format!(
                "{record} on revision {n} carries over: {}",
                trivial_why(n, current)
            ));
        }
        carried
    }

    fn holds(&self, agent: &str, role: &str) -> bool {
        self.agents
            .get(agent)
            .is_some_and(|a| a.roles.iter().any(|r| r == role))
    }

    /// Enabled agents other than the author holding any of `roles` (any
    /// agent when `roles` is empty), sorted.
    fn eligible(&self, roles: &[&str]) -> Vec<&'a str> {
        let mut out: Vec<&'a str> = self
            .agents
            .values()
            .filter(|a| a.enabled && a.id != self.input.author)
            .filter(|a| roles.is_empty() || roles.iter().any(|r| a.roles.iter().any(|h| h == r)))
            .map(|a| a.id)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether `agent`'s votes on `earlier` count for the current revision,
    /// and why (or why not).
    fn carries(&self, agent: &str, earlier: &RevisionInfo<'_>) -> (bool, String) {
        let current = &self.input.revision;
        match self.policy.approvals.carry_over {
            CarryOver::Never => (
                false,
                format!(
                    "votes on revision {} do not carry over (carry_over = \"never\")",
                    earlier.number
                ),
            ),
            CarryOver::TrivialRebase => {
                if self.trivial.contains(&earlier.number) {
                    (true, trivial_why(earlier.number, current.number))
                } else {
                    (
                        false,
                        format!(
                            "revisions {} to {} are not all the engine's rebases making the same change in the same place (carry_over = \"trivial_rebase\" carries only those)",
                            earlier.number, current.number
                        ),
                    )
                }
            }
            CarryOver::IdenticalChangeset => {
                if earlier.changeset_digest == current.changeset_digest {
                    (
                        true,
                        format!("revision {} has the identical changeset", earlier.number),
                    )
                } else {
                    (
                        false,
                        format!("revision {}'s changeset differs", earlier.number),
                    )
                }
            }
            CarryOver::UnchangedResources => {
                let mut paths = touched(earlier.changeset);
                paths.extend(self.touched.iter().copied());
                let globs: Vec<&PathGlob> = self
                    .policy
                    .roles
                    .iter()
                    .filter(|r| self.holds(agent, &r.role))
                    .flat_map(|r| r.paths.iter())
                    .collect();
                let mut relevant: Vec<&str> = paths
                    .iter()
                    .copied()
                    .filter(|p| globs.iter().any(|g| g.is_match(p)))
                    .collect();
                let scope = if relevant.is_empty() {
                    relevant = paths.iter().copied().collect();
                    "all touched paths"
                } else {
                    "the paths of the reviewer's roles"
                };
                let changed: Vec<&str> = relevant
                    .into_iter()
                    .filter(|p| {
                        changes_of(earlier.changeset, p) != changes_of(current.changeset, p)
                    })
                    .collect();
                if changed.is_empty() {
                    (
                        true,
                        format!("{scope} are unchanged since revision {}", earlier.number),
                    )
                } else {
                    (
                        false,
                        format!(
                            "changed since revision {}: {}",
                            earlier.number,
                            changed.join(", ")
                        ),
                    )
                }
            }
        }
    }

    /// Each agent's standing vote, and notes on the votes that do not count.
    fn standing_votes(&self) -> (BTreeMap<&'a str, Standing<'a>>, Vec<String>) {
        let current = self.input.revision.number;
        let earlier: HashMap<u32, &RevisionInfo<'a>> = self
            .input
            .earlier_revisions
            .iter()
            .filter(|r| r.number < current)
            .map(|r| (r.number, r))
            .collect();
        let mut notes = Vec::new();
        let mut carry_memo: HashMap<(&'a str, u32), bool> = HashMap::new();
        let mut standing: BTreeMap<&'a str, Standing<'a>> = BTreeMap::new();
        for v in self.input.votes {
            if v.revision > current {
                continue;
            }
            if v.agent_id == self.input.author {
                notes.push(format!("vote {} is by the author and does not count", v.id));
                continue;
            }
            match self.agents.get(v.agent_id) {
                None => {
                    notes.push(format!(
                        "vote {} is by unregistered agent {} and does not count",
                        v.id, v.agent_id
                    ));
                    continue;
                }
                Some(a) if !a.enabled => {
                    notes.push(format!(
                        "vote {} is by disabled agent {} and does not count",
                        v.id, v.agent_id
                    ));
                    continue;
                }
                Some(_) => {}
            }
            if v.revision < current {
                let counts = match carry_memo.get(&(v.agent_id, v.revision)) {
                    Some(c) => *c,
                    None => {
                        let (c, why) = match earlier.get(&v.revision) {
                            Some(r) => self.carries(v.agent_id, r),
                            None => (false, format!("revision {} is unknown", v.revision)),
                        };
                        carry_memo.insert((v.agent_id, v.revision), c);
                        notes.push(format!(
                            "votes by {} on revision {} {}: {why}",
                            v.agent_id,
                            v.revision,
                            if c { "carry over" } else { "do not count" }
                        ));
                        c
                    }
                };
                if !counts {
                    continue;
                }
            }
            match standing.get(v.agent_id) {
                Some(s) if s.vote.revision > v.revision => {
                    notes.push(format!(
                        "vote {} is superseded by vote {} on a later revision",
                        v.id, s.vote.id
                    ));
                }
                Some(s) => {
                    notes.push(format!("vote {} is superseded by vote {}", s.vote.id, v.id));
                    standing.insert(v.agent_id, Standing { vote: *v });
                }
                None => {
                    standing.insert(v.agent_id, Standing { vote: *v });
                }
            }
        }
        (standing, notes)
    }
}

fn is_approval(v: VoteValue) -> bool {
    matches!(v, VoteValue::Approve | VoteValue::ApproveWithNotes)
}

fn plural(n: u32, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Judge one revision against `policy`: one requirement per gate, in
/// report order (approvals, each role rule, no blocking votes, the
/// security review, secrets, human approval, each required check).
pub fn evaluate(policy: &Policy, input: &PolicyInput<'_>) -> PolicyReport {
    let cx = Context::new(policy, input);
    let (standing, notes) = cx.standing_votes();
    let current = input.revision.number;
    let mut requirements = vec![approvals_requirement(&cx, &standing, &notes)];
    for rule in &policy.roles {
        requirements.push(role_requirement(&cx, rule, &standing, current));
    }
    requirements.push(blocking_requirement(&cx, &standing, &notes));
    // The secrets found feed the security review.
    let findings = secret_findings(policy, input);
    let security = security_requirement(&cx, &findings);
    let security_passed =
        security.status == RequirementStatus::Satisfied && !security.evidence.is_empty();
    let security_evidence = security.evidence.clone();
    requirements.push(security);
    requirements.push(secrets_requirement(
        &cx,
        &findings,
        security_passed.then_some(security_evidence),
    ));
    requirements.push(human_approval_requirement(&cx));
    for name in &policy.checks.required {
        requirements.push(check_requirement(&cx, name));
    }
    // A landing-queue check is the queue's to run; only a result on the
    // current revision that did not pass (the queue handed it back) makes
    // it a requirement, so the author fixes it before it lands.
    for name in policy.checks.commands.keys() {
        let failed = input
            .test_results
            .iter()
            .rfind(|t| t.name == *name && t.revision == input.revision.number)
            .is_some_and(|t| t.status != TestStatus::Passed);
        if failed {
            requirements.push(check_requirement(&cx, name));
        }
    }
    for r in &mut requirements {
        r.carried = carried_evidence(&cx, &r.evidence);
    }
    PolicyReport {
        approvable: requirements
            .iter()
            .all(|r| r.status != RequirementStatus::Unsatisfied),
        requirements,
    }
}

/// `approvals`: at least `minimum` standing approvals on the current
/// revision, from holders of the eligible roles (or any enabled agent
/// other than the author when none is named); `notes` say which votes
/// were superseded or do not carry.
fn approvals_requirement(
    cx: &Context<'_, '_>,
    standing: &BTreeMap<&str, Standing<'_>>,
    notes: &[String],
) -> Requirement {
    use RequirementStatus::{NotApplicable, Satisfied, Unsatisfied};
    let current = cx.input.revision.number;
    let a = &cx.policy.approvals;
    let roles: Vec<&str> = a.eligible_roles.iter().map(String::as_str).collect();
    let mut r = Requirement::new(
        RequirementId::Approvals,
        if a.minimum == 0 {
            NotApplicable
        } else {
            Satisfied
        },
    );
    if a.minimum == 0 {
        return r;
    }
    let counted: Vec<&Standing<'_>> = standing
        .values()
        .filter(|s| is_approval(s.vote.vote))
        .filter(|s| roles.is_empty() || roles.iter().any(|role| cx.holds(s.vote.agent_id, role)))
        .collect();
    r.evidence = counted.iter().map(|s| s.vote.id.to_owned()).collect();
    let counted_agents: BTreeSet<&str> = counted.iter().map(|s| s.vote.agent_id).collect();
    r.candidates = strings(
        &cx.eligible(&roles)
            .into_iter()
            .filter(|c| !counted_agents.contains(c))
            .collect::<Vec<_>>(),
    );
    r.reasons = notes.to_vec();
    let have = u32::try_from(counted.len()).unwrap_or(u32::MAX);
    if have < a.minimum {
        r.status = Unsatisfied;
        let who = if roles.is_empty() {
            "enabled agents other than the author".to_owned()
        } else {
            format!("holders of {}", roles.join(" or "))
        };
        r.missing = Some(format!(
            "{} more on revision {current} from {who} (have {have} of {})",
            plural(a.minimum - have, "approval", "approvals"),
            a.minimum
        ));
    }
    r
}

/// `no_blocking_votes`: no standing vote of a kind the policy's
/// `blocking_votes` lists.
fn blocking_requirement(
    cx: &Context<'_, '_>,
    standing: &BTreeMap<&str, Standing<'_>>,
    notes: &[String],
) -> Requirement {
    use RequirementStatus::{NotApplicable, Satisfied, Unsatisfied};
    let blocking = &cx.policy.approvals.blocking_votes;
    let mut r = Requirement::new(
        RequirementId::NoBlockingVotes,
        if blocking.is_empty() {
            NotApplicable
        } else {
            Satisfied
        },
    );
    if blocking.is_empty() {
        return r;
    }
    let blockers: Vec<&Standing<'_>> = standing
        .values()
        .filter(|s| blocking.contains(&s.vote.vote))
        .collect();
    r.evidence = blockers.iter().map(|s| s.vote.id.to_owned()).collect();
    r.reasons = notes.to_vec();
    if !blockers.is_empty() {
        r.status = Unsatisfied;
        let list: Vec<String> = blockers
            .iter()
            .map(|s| {
                format!(
                    "{} by {} ({})",
                    json_str(&s.vote.vote),
                    s.vote.agent_id,
                    s.vote.id
                )
            })
            .collect();
        r.missing = Some(format!(
            "blocking votes stand: {}; the voters must change their vote, or the author revise",
            list.join(", ")
        ));
    }
    r
}

/// The secrets in the revision's added lines, sorted and deduplicated;
/// none when the policy does not scan.
fn secret_findings(policy: &Policy, input: &PolicyInput<'_>) -> Vec<SecretFinding> {
    if !policy.secrets.scan {
        return Vec::new();
    }
    let mut f: Vec<SecretFinding> = input
        .added_lines
        .iter()
        .filter_map(|l| scan_secrets(l.path, l.line, l.text))
        .collect();
    f.sort();
    f.dedup();
    f
}

/// `secrets`: no secret in the added lines, unless a passing security
/// review (`reviewed`: its evidence) covers them.
fn secrets_requirement(
    cx: &Context<'_, '_>,
    findings: &[SecretFinding],
    reviewed: Option<Vec<String>>,
) -> Requirement {
    use RequirementStatus::{NotApplicable, Satisfied, Unsatisfied};
    let scan = cx.policy.secrets.scan;
    let mut r = Requirement::new(
        RequirementId::Secrets,
        if scan { Satisfied } else { NotApplicable },
    );
    if !scan {
        return r;
    }
    let current = cx.input.revision.number;
    r.reasons.push(format!(
        "scanned {} added lines",
        cx.input.added_lines.len()
    ));
    if findings.is_empty() {
        return r;
    }
    r.findings = findings.to_vec();
    r.paths = findings
        .iter()
        .map(|f| f.path.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let found = u32::try_from(findings.len()).unwrap_or(u32::MAX);
    match reviewed {
        Some(evidence) => {
            r.evidence = evidence;
            r.reasons.push(format!(
                "{} reviewed by a passing security review",
                plural(found, "finding", "findings")
            ));
        }
        None => {
            r.status = Unsatisfied;
            r.candidates = strings(&cx.eligible(&[SECURITY_ROLE]));
            r.people = cx.policy.people.named(PersonRole::Security);
            r.missing = Some(format!(
                "{} in added lines: remove them, or have a security review pass revision {current}",
                plural(found, "secret", "secrets")
            ));
        }
    }
    r
}

/// `human_approval`: when the policy's gate applies to this change, a
/// person's approval of the current revision (or one that carries).
fn human_approval_requirement(cx: &Context<'_, '_>) -> Requirement {
    use RequirementStatus::{NotApplicable, Satisfied, Unsatisfied};
    let current = cx.input.revision.number;
    let (reasons, paths) = gate_reasons(cx, &cx.policy.human_approval);
    let mut r = Requirement::new(RequirementId::HumanApproval, NotApplicable);
    if reasons.is_empty() {
        return r;
    }
    r.reasons = reasons;
    r.paths = paths;
    let mut carried = Vec::new();
    let people = &cx.policy.people;
    let mut ignored = Vec::new();
    r.evidence = cx
        .input
        .human_approvals
        .iter()
        .filter(|a| {
            cx.counts_on(
                a.revision,
                &format!("human approval {}", a.id),
                &mut carried,
            )
        })
        .filter(|a| {
            let holds = people.holds(a.human_id, PersonRole::Approve);
            if !holds {
                ignored.push(format!(
                    "approval {} by human:{} does not count: [people] approve does not list them",
                    a.id, a.human_id
                ));
            }
            holds
        })
        .map(|a| a.id.to_owned())
        .collect();
    r.reasons.extend(carried);
    r.reasons.extend(ignored);
    if r.evidence.is_empty() {
        r.status = Unsatisfied;
        r.people = cx.policy.people.named(PersonRole::Approve);
        r.missing = Some(match &r.people {
            None => format!("a person's approval of revision {current}"),
            Some(ids) => format!(
                "an approval of revision {current} by a person with the approve role ({})",
                People::spell(ids)
            ),
        });
    } else {
        r.status = Satisfied;
    }
    r
}

/// `check:<name>`: the latest result of the required check `name` on the
/// current revision passed; failing that, with `carry_on_trivial_rebase`,
/// the latest on the nearest revision a trivial rebase connects.
fn check_requirement(cx: &Context<'_, '_>, name: &str) -> Requirement {
    use RequirementStatus::{Satisfied, Unsatisfied};
    let current = cx.input.revision.number;
    let mut r = Requirement::new(RequirementId::Check(name.to_string()), Unsatisfied);
    let carry = cx.policy.checks.carry_on_trivial_rebase;
    let latest = cx
        .input
        .test_results
        .iter()
        .filter(|t| t.name == name)
        .filter(|t| t.revision == current || (carry && cx.trivial.contains(&t.revision)))
        .max_by_key(|t| t.revision); // the last recorded of the highest revision
    if let Some(t) = latest.filter(|t| t.revision != current) {
        cx.counts_on(
            t.revision,
            &format!("check result {}", t.id),
            &mut r.reasons,
        );
    }
    match latest {
        Some(t) => {
            r.evidence.push(t.id.to_owned());
            if t.status == TestStatus::Passed {
                r.status = Satisfied;
            } else {
                r.missing = Some(format!(
                    "check {name:?} must pass on revision {current}; its latest result ({}) is {}",
                    t.id,
                    json_str(&t.status)
                ));
            }
        }
        None => {
            r.missing = Some(format!(
                "a passing {name:?} result recorded for revision {current}"
            ));
        }
    }
    r
}

/// Which of `evidence` were given on an earlier revision, and by which
/// rule they count: a vote by the policy's `carry_over`, any other record
/// only by an engine rebase.
fn carried_evidence(cx: &Context<'_, '_>, evidence: &[String]) -> Vec<CarriedEvidence> {
    let input = cx.input;
    let current = input.revision.number;
    let vote_rule = match cx.policy.approvals.carry_over {
        CarryOver::IdenticalChangeset => CarryRule::IdenticalChangeset,
        CarryOver::UnchangedResources => CarryRule::UnchangedResources,
        CarryOver::TrivialRebase | CarryOver::Never => CarryRule::EngineRebase,
    };
    evidence
        .iter()
        .filter_map(|id| {
            let vote = input.votes.iter().find(|v| v.id == id).map(|v| v.revision);
            let (revision, rule) = match vote {
                Some(n) => (n, vote_rule),
                None => {
                    let n = input
                        .security_reviews
                        .iter()
                        .find(|r| r.id == id)
                        .map(|r| r.revision)
                        .or_else(|| {
                            input
                                .human_approvals
                                .iter()
                                .find(|a| a.id == id)
                                .map(|a| a.revision)
                        })
                        .or_else(|| {
                            input
                                .test_results
                                .iter()
                                .find(|t| t.id == id)
                                .map(|t| t.revision)
                        })?;
                    (n, CarryRule::EngineRebase)
                }
            };
            (revision != current).then(|| CarriedEvidence {
                evidence: id.clone(),
                revision,
                rule,
            })
        })
        .collect()
}

fn json_str<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::from("?"),
    }
}

fn role_requirement(
    cx: &Context<'_, '_>,
    rule: &RoleRule,
    standing: &BTreeMap<&str, Standing<'_>>,
    current: u32,
) -> Requirement {
    let paths = matching(&cx.touched, &rule.paths);
    let mut r = Requirement::new(rule.requirement_id(), RequirementStatus::NotApplicable);
    if paths.is_empty() {
        return r;
    }
    r.paths = strings(&paths);
    r.reasons.push(format!(
        "touched paths match {}",
        rule.paths
            .iter()
            .map(PathGlob::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let counted: Vec<&Standing<'_>> = standing
        .values()
        .filter(|s| is_approval(s.vote.vote) && cx.holds(s.vote.agent_id, &rule.role))
        .collect();
    r.evidence = counted.iter().map(|s| s.vote.id.to_owned()).collect();
    let counted_agents: BTreeSet<&str> = counted.iter().map(|s| s.vote.agent_id).collect();
    r.candidates = strings(
        &cx.eligible(&[rule.role.as_str()])
            .into_iter()
            .filter(|c| !counted_agents.contains(c))
            .collect::<Vec<_>>(),
    );
    let have = u32::try_from(counted.len()).unwrap_or(u32::MAX);
    if have >= rule.minimum {
        r.status = RequirementStatus::Satisfied;
    } else {
        r.status = RequirementStatus::Unsatisfied;
        r.missing = Some(format!(
            "{} more on revision {current} from agents with the {:?} role (have {have} of {}){}",
            plural(rule.minimum - have, "approval", "approvals"),
            rule.role,
            rule.minimum,
            if r.candidates.is_empty() {
                "; no enabled agent other than the author holds it"
            } else {
                ""
            }
        ));
    }
    r
}

/// Why a gate applies (risk, matching paths), and the matching paths.
fn gate_reasons(cx: &Context<'_, '_>, gate: &Gate) -> (Vec<String>, Vec<String>) {
    let globs = &gate.paths;
    let mut reasons = Vec::new();
    if gate.risk.contains(&cx.input.risk) {
        reasons.push(format!("risk is {}", json_str(&cx.input.risk)));
    }
    if let Some(reverted) = cx.input.reverts.filter(|_| gate.reverts) {
        reasons.push(format!("it reverts proposal {reverted}"));
    }
    if gate.loose_match {
        // The revision's own hunks, and those of any earlier revision that
        // makes the same change (a rebase, or the change resubmitted as a
        // diff): the loosely placed change is still the one judged.
        let current = cx.input.revision;
        let same_change = cx.input.earlier_revisions.iter().filter(|r| {
            r.number < current.number && r.change_id.is_some() && r.change_id == current.change_id
        });
        for (r, earlier) in std::iter::once((&current, false)).chain(same_change.map(|r| (r, true)))
        {
            for f in r.changeset {
                for m in f.matches.iter().filter(|m| m.rung != MatchRung::Exact) {
                    let from = if earlier {
                        format!(", in revision {} whose change this one makes", r.number)
                    } else {
                        String::new()
                    };
                    reasons.push(format!(
                        "hunk {} of {} matched only at rung {} (line {}{from})",
                        m.hunk,
                        f.path,
                        m.rung.as_str(),
                        m.line
                    ));
                }
            }
        }
    }
    let paths = matching(&cx.touched, globs);
    for p in &paths {
        let g = globs
            .iter()
            .find(|g| g.is_match(p))
            .map_or("", PathGlob::as_str);
        reasons.push(format!("path {p} matches {g}"));
    }
    (reasons, strings(&paths))
}

fn security_requirement(cx: &Context<'_, '_>, findings: &[SecretFinding]) -> Requirement {
    use RequirementStatus::{NotApplicable, Satisfied, Unsatisfied};
    let input = cx.input;
    let current = input.revision.number;
    let gate = &cx.policy.security_review;
    let (mut reasons, paths) = gate_reasons(cx, gate);
    for f in findings {
        reasons.push(format!(
            "{} in an added line: {}:{}",
            f.kind.as_str(),
            f.path,
            f.line
        ));
    }
    let people = &cx.policy.people;
    let mut passes = Vec::new();
    let mut fails = Vec::new();
    let mut ignored = Vec::new();
    let mut carried = Vec::new();
    for rv in input.security_reviews.iter().filter(|r| {
        cx.counts_on(
            r.revision,
            &format!("security review {}", r.id),
            &mut carried,
        )
    }) {
        let counts = match rv.reviewer.kind {
            ActorKind::Human => people.holds(rv.reviewer.id.as_str(), PersonRole::Security),
            ActorKind::Agent => {
                let id = rv.reviewer.id.as_str();
                id != input.author
                    && cx
                        .agents
                        .get(id)
                        .is_some_and(|a| a.enabled && a.roles.iter().any(|r| r == SECURITY_ROLE))
            }
            ActorKind::Orchestrator => false,
        };
        if !counts {
            ignored.push(format!(
                "review {} by {} does not count: the reviewer is not a person with the security role or an enabled, non-author agent with the {SECURITY_ROLE:?} role",
                rv.id, rv.reviewer
            ));
        } else if rv.verdict == Verdict::Pass {
            passes.push(rv.id.to_owned());
        } else {
            fails.push(rv.id.to_owned());
        }
    }
    let required = !reasons.is_empty();
    let mut r = Requirement::new(RequirementId::SecurityReview, NotApplicable);
    r.findings = findings.to_vec();
    if !fails.is_empty() {
        reasons.push(format!("a security review failed revision {current}"));
    }
    if !required && fails.is_empty() {
        return r;
    }
    r.reasons = reasons;
    r.reasons.extend(carried);
    r.reasons.extend(ignored);
    r.paths = paths;
    if !fails.is_empty() {
        r.status = Unsatisfied;
        r.missing = Some(format!(
            "security review failed ({}): the author must revise",
            fails.join(", ")
        ));
        r.evidence = fails;
    } else if passes.is_empty() {
        r.status = Unsatisfied;
        r.candidates = strings(&cx.eligible(&[SECURITY_ROLE]));
        r.people = cx.policy.people.named(PersonRole::Security);
        let who = match &r.people {
            None => "a person".to_owned(),
            Some(ids) => format!("a person with the security role ({})", People::spell(ids)),
        };
        r.missing = Some(format!(
            "a passing security review of revision {current} by {who} or an agent with the {SECURITY_ROLE:?} role"
        ));
    } else {
        r.status = Satisfied;
        r.evidence = passes;
    }
    r
}

/// The roles `input`'s revision needs reviewed, and the agents (enabled,
/// never the author) that can fill each: general approvals (when
/// `approvals.minimum > 0`), every applicable `[[roles]]` rule, and the
/// security role when a security review is required.
pub fn review_plan(policy: &Policy, input: &PolicyInput<'_>) -> Vec<RoleNeed> {
    let cx = Context::new(policy, input);
    let mut out = Vec::new();
    if policy.approvals.minimum > 0 {
        let roles: Vec<&str> = policy
            .approvals
            .eligible_roles
            .iter()
            .map(String::as_str)
            .collect();
        out.push(RoleNeed {
            requirement: RequirementId::Approvals,
            roles: strings(&roles),
            minimum: policy.approvals.minimum,
            paths: Vec::new(),
            candidates: strings(&cx.eligible(&roles)),
        });
    }
    for rule in &policy.roles {
        let paths = matching(&cx.touched, &rule.paths);
        if paths.is_empty() {
            continue;
        }
        out.push(RoleNeed {
            requirement: rule.requirement_id(),
            roles: vec![rule.role.clone()],
            minimum: rule.minimum,
            paths: strings(&paths),
            candidates: strings(&cx.eligible(&[rule.role.as_str()])),
        });
    }
    let gate = &policy.security_review;
    let by_risk = gate.risk.contains(&input.risk);
    let mut paths = matching(&cx.touched, &gate.paths);
    if policy.secrets.scan {
        for l in input.added_lines {
            if scan_secrets(l.path, l.line, l.text).is_some() && !paths.contains(&l.path) {
                paths.push(l.path);
            }
        }
        paths.sort_unstable();
    }
    if by_risk || !paths.is_empty() {
        out.push(RoleNeed {
            requirement: RequirementId::SecurityReview,
            roles: vec![SECURITY_ROLE.to_owned()],
            minimum: 1,
            paths: strings(&paths),
            candidates: strings(&cx.eligible(&[SECURITY_ROLE])),
        });
    }
    out
}
