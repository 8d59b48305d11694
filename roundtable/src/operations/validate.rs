//! `patch.validate`: the read-only report on one revision.
//!
//! It writes no row, no event and no file. It runs every stage and reports
//! each `passed`, `failed` or `skipped` with reasons — the whole inventory,
//! not the first failure — and each failure carries what an agent needs to
//! repair it (expected against actual digests, the uncovered path and
//! lines, the missing role with candidate agents).

use super::args::RevisionNumber;
use super::claims::{live_write_claims, resource_state, Claim, ResourceState};
use super::proposals::{changeset_against, source_bytes, summarize};
use super::records::{
    Agent, Approval, FileSummary, Proposal, Revision, SecurityReviewRecord, TestResult, Vote,
};
use super::{Cx, Tool, ToolError};
use crate::changeset::{Changeset, Operation};
use crate::claims::{overlaps, Scope};
use crate::coverage::{line_changes, Change, LineChanges};
use crate::diff::{FilePatch, LineKind, Patch};
use crate::engine::Engine;
use crate::id::Id;
use crate::model::StageName;
use crate::operations::claims::ClaimRecord;
use crate::operations::records::ProposalRecord;
use crate::operations::records::RevisionRecord;
use crate::policy::RequirementId;
use crate::policy::{
    evaluate, review_plan, AddedLine, AgentInfo, ApprovalInfo, Policy, PolicyInput, PolicyReport,
    Requirement, RequirementStatus, ReviewInfo, RevisionInfo, RoleNeed, TestInfo, VoteInfo,
};
use crate::resource::Resource;
use crate::store;
use crate::store::sql::Tx;
use crate::workspace::Workspace;
use crate::RepoPath;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use similar::{Algorithm, DiffTag};
use std::borrow::Cow;
use std::collections::HashMap;

/// A patch revision's bytes, parsed once for the dry run and the lines it
/// adds (`None` for an edit plan).
type Parsed<'e> = Option<Result<Patch<'e>, crate::diff::ParseError>>;

fn parse_revision<'e>(engine: &Engine, ev: &'e Evidence) -> Parsed<'e> {
    (ev.revision.format == crate::model::RevisionFormat::Patch)
        .then(|| crate::diff::parse(&ev.bytes, &engine.options().parse_options()))
}

/// The changeset the revision's bytes make against the files of `ws`
/// (from `parsed` for a patch).
fn dry_run(ws: &Workspace, ev: &Evidence, parsed: &Parsed<'_>) -> Result<Changeset, ToolError> {
    dry_run_in(ws, ev, parsed).map_err(|e| super::eol::explain(ws.root(), e))
}

fn dry_run_in(ws: &Workspace, ev: &Evidence, parsed: &Parsed<'_>) -> Result<Changeset, ToolError> {
    match parsed {
        Some(Ok(patch)) => Changeset::from_patch(patch, ws).map_err(ToolError::from),
        Some(Err(e)) => Err(ToolError::from(e.clone())),
        None => changeset_against(
            ws,
            ev.revision.format,
            &ev.bytes,
            &crate::diff::ParseOptions::default(),
        ),
    }
}

/// What the store knows about one revision, read in one snapshot.
pub(crate) struct Evidence {
    pub proposal: Proposal,
    pub revision: Revision,
    pub revisions: Vec<Revision>,
    /// What the changeset is derived from ([`source_bytes`]): a patch
    /// revision's stored diff (rendered from its changeset), the submitted
    /// bytes of the other formats.
    pub bytes: Vec<u8>,
    pub agents: Vec<Agent>,
    pub votes: Vec<Vote>,
    pub reviews: Vec<SecurityReviewRecord>,
    pub approvals: Vec<Approval>,
    pub tests: Vec<TestResult>,
    pub policy: Policy,
    pub policy_version: Option<u32>,
    /// The author's live write claims.
    pub claims: Vec<Claim>,
    /// Other agents' live write claims.
    pub others: Vec<Claim>,
}

/// Read everything about `proposal_id`'s revision (default the latest).
pub(crate) fn gather(
    cx: &Cx<'_>,
    proposal_id: &str,
    revision: Option<u32>,
) -> Result<Evidence, ToolError> {
    gather_then(cx, proposal_id, revision, |_| {})
}

/// [`gather`], and as soon as the revision is known — before its bytes
/// are read from the store — start reading the files it touches into the
/// view `ws` on a thread of `scope`, for the validation that follows.
pub(crate) fn gather_prefetching<'s>(
    cx: &Cx<'_>,
    proposal_id: &str,
    revision: Option<u32>,
    ws: &'s Workspace,
    scope: &'s std::thread::Scope<'s, '_>,
) -> Result<Evidence, ToolError> {
    gather_then(cx, proposal_id, revision, |r| {
        let paths: Vec<RepoPath> = r
            .changeset
            .iter()
            .flat_map(|f| std::iter::once(&f.path).chain(&f.other_path))
            .filter_map(|p| p.parse().ok())
            .collect();
        scope.spawn(move || ws.prefetch(&paths));
    })
}

fn gather_then(
    cx: &Cx<'_>,
    proposal_id: &str,
    revision: Option<u32>,
    known: impl FnOnce(&Revision),
) -> Result<Evidence, ToolError> {
    let tx = cx.tx;
    let proposal = Proposal::load(tx, proposal_id)?;
    let number = revision.unwrap_or(proposal.latest_revision);
    let revision = Revision::load(tx, &proposal.id, number)?;
    known(&revision);
    let revisions = crate::store::proposals::revisions(tx, &proposal.id)?;
    let bytes = source_bytes(tx, &revision)?;
    let agents = all_agents(tx)?;
    let id = &proposal.id;
    let votes = store::evidence::recorded_votes(tx, id)?;
    let reviews = store::evidence::recorded_security_reviews(tx, id)?;
    let approvals = store::evidence::recorded_approvals(tx, id)?;
    let tests = store::evidence::recorded_test_results(tx, id)?;
    let (record, policy) = super::policies::effective(tx)?;
    let live = live_write_claims(tx, None, cx.now)?;
    let (claims, others) = live
        .into_iter()
        .partition(|c| c.agent_id == proposal.author);
    Ok(Evidence {
        proposal,
        revision,
        revisions,
        bytes,
        agents,
        votes,
        reviews,
        approvals,
        tests,
        policy,
        policy_version: record.version,
        claims,
        others,
    })
}

/// What every proposal of an inbox page shares: the agents and the
/// effective policy, read once per page.
pub(crate) struct Shared {
    agents: Vec<Agent>,
    policy: Policy,
    policy_version: Option<u32>,
}

impl Shared {
    /// Every agent.
    pub(crate) fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// The effective policy.
    pub(crate) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The active policy's version (`None`: the built-in default).
    pub(crate) fn policy_version(&self) -> Option<u32> {
        self.policy_version
    }

    /// Read them in `cx`'s transaction.
    pub(crate) fn read(cx: &Cx<'_>) -> Result<Shared, ToolError> {
        let (record, policy) = super::policies::effective(cx.tx)?;
        Ok(Shared {
            agents: all_agents(cx.tx)?,
            policy,
            policy_version: record.version,
        })
    }
}

/// The evidence about `proposal`'s latest revision that its policy
/// evaluation needs, with `shared`'s agents and policy and no claims (the
/// inbox resolves none): per proposal, its own rows only.
pub(crate) fn gather_for_policy(
    cx: &Cx<'_>,
    proposal: &Proposal,
    shared: &Shared,
) -> Result<Evidence, ToolError> {
    let tx = cx.tx;
    let id = &proposal.id;
    let revision = Revision::load(tx, id, proposal.latest_revision)?;
    Ok(Evidence {
        proposal: proposal.clone(),
        revisions: crate::store::proposals::revisions(tx, id)?,
        bytes: source_bytes(tx, &revision)?,
        revision,
        agents: shared.agents.clone(),
        votes: store::evidence::recorded_votes(tx, id)?,
        reviews: store::evidence::recorded_security_reviews(tx, id)?,
        approvals: store::evidence::recorded_approvals(tx, id)?,
        tests: store::evidence::recorded_test_results(tx, id)?,
        policy: shared.policy.clone(),
        policy_version: shared.policy_version,
        claims: Vec::new(),
        others: Vec::new(),
    })
}

/// Every agent, by id.
fn all_agents(tx: &Tx<'_>) -> Result<Vec<Agent>, ToolError> {
    Ok(crate::store::agents::all_agents(tx)?)
}

/// The rows of `table` (its `columns`) about `proposal_id`, in the order
/// they were recorded. Only evidence its event records counts: a row
/// inserted behind roundtable's back does not (and `events.verify`
/// reports it).
impl Evidence {
    /// Run `f` on the policy input for this revision, with the lines it
    /// adds (from [`added_lines`]).
    pub(crate) fn with_input<R>(
        &self,
        lines: &[Line<'_>],
        f: impl FnOnce(&PolicyInput<'_>) -> R,
    ) -> R {
        let added: Vec<AddedLine<'_>> = lines
            .iter()
            .map(|(path, line, text)| AddedLine {
                path,
                line: *line,
                text,
            })
            .collect();
        let earlier: Vec<RevisionInfo<'_>> =
            self.revisions.iter().map(RevisionInfo::from).collect();
        let agents: Vec<AgentInfo<'_>> = self.agents.iter().map(AgentInfo::from).collect();
        let votes: Vec<VoteInfo<'_>> = self.votes.iter().map(VoteInfo::from).collect();
        let reviews: Vec<ReviewInfo<'_>> = self.reviews.iter().map(ReviewInfo::from).collect();
        let approvals: Vec<ApprovalInfo<'_>> =
            self.approvals.iter().map(ApprovalInfo::from).collect();
        let tests: Vec<TestInfo<'_>> = self.tests.iter().map(TestInfo::from).collect();
        let input = PolicyInput {
            author: &self.proposal.author,
            risk: self.proposal.risk,
            revision: RevisionInfo::from(&self.revision),
            earlier_revisions: &earlier,
            agents: &agents,
            votes: &votes,
            security_reviews: &reviews,
            human_approvals: &approvals,
            test_results: &tests,
            added_lines: &added,
            reverts: self.proposal.reverts.as_deref(),
        };
        f(&input)
    }
}

/// What the current files say about one touched path.
pub(crate) struct FileFacts<'c> {
    pub path: &'c RepoPath,
    pub operation: &'c Operation,
    pub mode_change: bool,
    /// Old content (the current file, or a rename's or copy's source),
    /// when it was read.
    pub before: Option<Vec<u8>>,
    pub after: Option<&'c [u8]>,
}

/// Which touched files [`file_facts`] reads the old content of, for the
/// lines a revision adds ([`added_lines`]); coverage reads what else it
/// needs itself.
pub(crate) enum ReadBefore<'p> {
    /// None: a patch's added lines come from its hunks.
    None,
    /// Every file's: an edit plan's added lines are a line diff.
    All,
    /// Those a patch carries as `GIT binary patch` (the paths given): their
    /// added lines are found from the old and the new content.
    Binary(Vec<&'p [u8]>),
}

impl ReadBefore<'_> {
    fn wants(&self, path: &RepoPath) -> bool {
        match self {
            ReadBefore::None => false,
            ReadBefore::All => true,
            ReadBefore::Binary(paths) => paths.contains(&path.as_str().as_bytes()),
        }
    }
}

/// The touched paths of `changeset`, with their old content where `read`
/// says.
pub(crate) fn file_facts<'c>(
    ws: &Workspace,
    changeset: &'c Changeset,
    read: &ReadBefore<'_>,
) -> Result<Vec<FileFacts<'c>>, ToolError> {
    let mut out = Vec::new();
    for f in changeset.files() {
        let source = match &f.operation {
            Operation::Modify => Some(&f.path),
            Operation::Rename { from } | Operation::Copy { from } => Some(from),
            _ => None,
        };
        let before = match source {
            Some(p) if read.wants(&f.path) => ws.read(p)?.map(|t| t.data),
            _ => None,
        };
        out.push(FileFacts {
            path: &f.path,
            operation: &f.operation,
            mode_change: f.mode_change().is_some(),
            before,
            after: f.after.as_ref().map(|c| c.data.as_slice()),
        });
    }
    Ok(out)
}

/// An added line: its path, its 1-based number in the new content and its
/// text without the line ending, borrowed where the bytes are UTF-8.
pub(crate) type Line<'a> = (Cow<'a, str>, u32, Cow<'a, str>);

/// The lines a revision adds, for secret scanning: read off the hunks of
/// `patch` (no diffing), else from a line diff of `facts` (an edit plan).
/// Without facts (the revision does not apply) there are none.
pub(crate) fn added_lines<'a>(
    patch: Option<&'a Patch<'a>>,
    facts: Option<&'a [FileFacts<'a>]>,
) -> Vec<Line<'a>> {
    let hunk_lines = match (patch, facts) {
        (Some(patch), Some(_)) => hunk_added_lines(patch),
        _ => Vec::new(),
    };
    lines_added(patch, facts, hunk_lines)
}

/// [`added_lines`], with the lines the patch's hunks add already read off
/// (`hunk_lines`: [`hunk_added_lines`] of `patch`).
fn lines_added<'a>(
    patch: Option<&'a Patch<'a>>,
    facts: Option<&'a [FileFacts<'a>]>,
    hunk_lines: Vec<Line<'a>>,
) -> Vec<Line<'a>> {
    match (patch, facts) {
        (_, None) => Vec::new(),
        (Some(patch), Some(facts)) => {
            let mut out = hunk_lines;
            // A `GIT binary patch` carries no lines: the content it results
            // in is scanned whatever its bytes, so a secret cannot be
            // smuggled in as a literal — text by a line diff, content with
            // a NUL byte by its lines that the old content lacks.
            let binary: Vec<&[u8]> = patch
                .files()
                .iter()
                .filter(|f| f.is_binary())
                .map(FilePatch::path)
                .collect();
            let (text, opaque): (Vec<&FileFacts<'_>>, Vec<&FileFacts<'_>>) = facts
                .iter()
                .filter(|f| binary.contains(&f.path.as_str().as_bytes()))
                .partition(|f| f.after.is_some_and(is_text));
            out.extend(diffed_added_lines(text));
            out.extend(new_lines(opaque));
            out
        }
        (None, Some(facts)) => diffed_added_lines(facts),
    }
}

/// Whether `bytes` read as text: git's rule, no NUL byte (any encoding,
/// decoded lossily for scanning).
fn is_text(bytes: &[u8]) -> bool {
    !bytes.contains(&0)
}

fn text(bytes: &[u8]) -> Cow<'_, str> {
    let trim = |s: &str| s.trim_end_matches(['\n', '\r']).len();
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(&s[..trim(s)]),
        Err(_) => {
            let s = String::from_utf8_lossy(bytes);
            Cow::Owned(s[..trim(&s)].to_owned())
        }
    }
}

fn hunk_added_lines<'a>(patch: &'a Patch<'a>) -> Vec<Line<'a>> {
    let lines = patch
        .files()
        .iter()
        .flat_map(|f| f.hunks())
        .map(|h| h.lines().len())
        .sum();
    let mut out = Vec::with_capacity(lines);
    for f in patch.files() {
        let path = String::from_utf8_lossy(f.path());
        for h in f.hunks() {
            let mut line = h.new_start().max(1);
            for l in h.lines() {
                match l.kind {
                    LineKind::Context => line += 1,
                    LineKind::Insert => {
                        out.push((path.clone(), line, text(l.content)));
                        line += 1;
                    }
                    LineKind::Delete => {}
                }
            }
        }
    }
    out
}

/// The lines of each file's new content that its old content does not
/// hold (in one pass each, whatever the bytes: no line diff of binary
/// content), numbered in the new content.
fn new_lines<'a>(facts: impl IntoIterator<Item = &'a FileFacts<'a>>) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    for f in facts {
        let Some(after) = f.after else { continue };
        let old: std::collections::HashSet<&[u8]> = f
            .before
            .as_deref()
            .map(crate::changeset::render::lines)
            .unwrap_or_default()
            .into_iter()
            .collect();
        for (i, line) in crate::changeset::render::lines(after)
            .into_iter()
            .enumerate()
        {
            if !old.contains(line) {
                let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
                out.push((Cow::Borrowed(f.path.as_str()), n, text(line)));
            }
        }
    }
    out
}

fn diffed_added_lines<'a>(facts: impl IntoIterator<Item = &'a FileFacts<'a>>) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    for f in facts {
        let Some(after) = f.after else { continue };
        let new = crate::changeset::render::lines(after);
        let old = f
            .before
            .as_deref()
            .map(crate::changeset::render::lines)
            .unwrap_or_default();
        for op in similar::capture_diff_slices(Algorithm::Myers, &old, &new) {
            if matches!(op.tag(), DiffTag::Insert | DiffTag::Replace) {
                for i in op.new_range() {
                    out.push((Cow::Borrowed(f.path.as_str()), i as u32 + 1, text(new[i])));
                }
            }
        }
    }
    out
}

/// What the line check cannot see: for each modified path that only
/// symbol claims cover (and that is not already reported), every claimed
/// symbol must still resolve in the result, and nothing outside the
/// claimed spans may differ ([`crate::coverage::outside_unchanged`]) — so
/// code added at a symbol's boundary that ends up outside it is uncovered.
fn symbol_results(
    ws: &Workspace,
    facts: &[FileFacts<'_>],
    covering: &[Scope],
    reported: &[crate::coverage::Uncovered],
) -> Vec<crate::coverage::Uncovered> {
    facts
        .iter()
        .filter(|f| {
            !f.mode_change
                && !crate::coverage::file_covered(f.path, covering)
                && !reported.iter().any(|u| u.path == f.path.as_str())
        })
        .filter_map(|f| {
            Some(crate::coverage::Uncovered {
                path: f.path.to_string(),
                operation: f.operation.kind(),
                reason: symbol_breach(ws, f, covering)?,
                lines: Vec::new(),
                insertions: Vec::new(),
            })
        })
        .collect()
}

/// Why the symbol claims in `covering` do not cover the change to `f`, if
/// they do not: a claimed symbol no longer resolves in the result, or the
/// result differs outside the claimed spans. `None` too when `f` is not a
/// modification, no symbol claim is on it, or its old content cannot be
/// read.
fn symbol_breach(ws: &Workspace, f: &FileFacts<'_>, covering: &[Scope]) -> Option<String> {
    let (Operation::Modify, Some(after)) = (f.operation, f.after) else {
        return None;
    };
    let claimed: Vec<(&str, crate::claims::LineSpan)> = covering
        .iter()
        .filter_map(|c| match (&c.resource, c.span) {
            (Resource::Symbol { path, name }, Some(span)) if path == f.path => {
                Some((name.as_str(), span))
            }
            _ => None,
        })
        .collect();
    if claimed.is_empty() {
        return None;
    }
    let mut new_spans = Vec::new();
    for (name, _) in &claimed {
        match crate::symbols::resolve(f.path, after, name) {
            Ok(s) => new_spans.push(crate::claims::LineSpan {
                start: s.start_line,
                end: s.end_line,
            }),
            Err(e) => {
                return Some(format!(
                    "the claimed symbol {name} is not intact in the result: {e}"
                ))
            }
        }
    }
    let before = old_content(ws, f)?;
    let old_spans: Vec<_> = claimed.iter().map(|(_, s)| *s).collect();
    (!crate::coverage::outside_unchanged(&before, &old_spans, after, &new_spans)).then(|| {
        "the result differs outside the claimed symbol spans (code added at a symbol's boundary ends up outside it)".to_owned()
    })
}

/// A stage's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// The gate holds.
    Passed,
    /// The gate does not hold: the reasons say why and what would fix it.
    Failed,
    /// The gate does not apply (or could not be run; the reasons say which).
    Skipped,
}

/// One stage of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stage {
    /// `claims`, `preconditions`, `coverage`, `dry_run`, `policy`,
    /// `security_review`, `human_approval` or `checks`.
    pub name: StageName,
    /// Its outcome.
    pub status: StageStatus,
    /// Why, one JSON object per finding (each with a `message`).
    pub reasons: Vec<Value>,
}

impl Stage {
    fn new(name: StageName, reasons: Vec<Value>, skipped: bool) -> Stage {
        let status = if skipped {
            StageStatus::Skipped
        } else if reasons
            .iter()
            .any(|r| r.get("failed") == Some(&Value::Bool(true)))
        {
            StageStatus::Failed
        } else {
            StageStatus::Passed
        };
        let reasons = reasons
            .into_iter()
            .map(|mut r| {
                if let Value::Object(m) = &mut r {
                    m.remove("failed");
                }
                r
            })
            .collect();
        Stage {
            name,
            status,
            reasons,
        }
    }
}

fn fail(message: impl Into<String>, details: Value) -> Value {
    let mut v = details;
    if !v.is_object() {
        v = json!({});
    }
    v["message"] = Value::String(message.into());
    v["failed"] = Value::Bool(true);
    v
}

fn note(message: impl Into<String>, details: Value) -> Value {
    let mut v = details;
    if !v.is_object() {
        v = json!({});
    }
    v["message"] = Value::String(message.into());
    v
}

/// The validation report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ValidationReport {
    /// True only when every stage passed or was skipped as not applicable.
    pub valid: bool,
    /// The proposal.
    pub proposal_id: String,
    /// The revision judged.
    pub revision: u32,
    /// The proposal's latest revision (a report on an older one is never
    /// valid).
    pub latest_revision: u32,
    /// The policy version in force (`null`: the built-in default).
    pub policy_version: Option<u32>,
    /// Every stage, in order.
    pub stages: Vec<Stage>,
    /// The policy evaluation: every requirement with its evidence.
    pub policy: PolicyReport,
}

/// Run every stage. Reads the workspace (only the touched files, and the
/// subtree of a directory claim) and nothing else.
pub(crate) fn validate(engine: &Engine, ev: &Evidence) -> ValidationReport {
    validate_with_changeset(engine, &engine.workspace().view(), ev).0
}

/// The patch size from which validation reads the author's claims and
/// the patch's added lines on a second thread, beside the dry run (below
/// it, a thread costs more than it saves).
const BESIDE_BYTES: usize = 1 << 20;

/// [`validate`] on `ws` (a [view](Workspace::view), so each touched file is
/// read once), also returning the changeset the stored bytes make against
/// the current files (when they apply).
///
/// The stages run in the order their inputs need — the dry run first (what
/// it read serves the preconditions; the facts it yields serve coverage and
/// policy), the claims before coverage (what they cover) — and are reported
/// in their own fixed order.
pub(crate) fn validate_with_changeset(
    engine: &Engine,
    ws: &Workspace,
    ev: &Evidence,
) -> (ValidationReport, Option<Changeset>) {
    // A patch is parsed once, here, for the dry run and for the lines it
    // adds.
    let parsed = parse_revision(engine, ev);
    let patch = parsed.as_ref().and_then(|p| p.as_ref().ok());
    let author = AuthorClaims::on_touched(ev);
    // Beside the dry run: what the author's claims hold now (a directory
    // claim lists its whole subtree) and the lines the patch's hunks add.
    // All three only read; a large change or a directory claim does the
    // two on a second thread.
    let beside = || (author.read(engine, ws, ev), patch.map(hunk_added_lines));
    let apart = author.walks() || ev.bytes.len() >= BESIDE_BYTES;
    let ((held, hunk_lines), recomputed) =
        roundtable_base::two_threads::both(apart, beside, || dry_run(ws, ev, &parsed));
    let preconditions = preconditions_stage(ws, &ev.revision.changeset, &recomputed);
    let (dry, facts) = dry_run_stage(ws, ev, patch, &recomputed);
    // The policy (the added lines and their secret scan) needs only the
    // facts: for a large change, judged beside the claims and coverage.
    let policy = || {
        let lines = lines_added(patch, facts.as_deref(), hunk_lines.unwrap_or_default());
        ev.with_input(&lines, |input| evaluate(&ev.policy, input))
    };
    let (policy, (mut claims, coverage)) =
        roundtable_base::two_threads::both(ev.bytes.len() >= BESIDE_BYTES, policy, || {
            let (claims, covering) =
                claims_stage(engine, ws, ev, patch, facts.as_deref(), &author, held);
            let coverage = coverage_stage(ws, patch, facts.as_deref(), &covering);
            (claims, coverage)
        });
    mark_superseded(ev, &mut claims);
    // Each precondition reason is a failure: they hold when there is none.
    let preconditions_hold = preconditions.reasons.is_empty();
    let mut stages = vec![claims, preconditions, coverage, dry];
    stages.extend(policy_stages(&policy));
    let valid = stages.iter().all(|s| s.status != StageStatus::Failed) && preconditions_hold;
    let report = ValidationReport {
        valid,
        proposal_id: ev.proposal.id.clone(),
        revision: ev.revision.number,
        latest_revision: ev.proposal.latest_revision,
        policy_version: ev.policy_version,
        stages,
        policy,
    };
    (report, recomputed.ok())
}

/// Preconditions: every touched path is as the revision expects. The dry
/// run (`recomputed`) just read each touched file: its record of what it
/// found is the current state (read again only for a path it did not
/// reach).
fn preconditions_stage(
    ws: &Workspace,
    stored: &[FileSummary],
    recomputed: &Result<Changeset, ToolError>,
) -> Stage {
    let seen: HashMap<&str, Option<crate::FileMeta>> = match recomputed {
        Ok(c) => c
            .files()
            .iter()
            .map(|f| (f.path.as_str(), f.before))
            .collect(),
        Err(_) => HashMap::new(),
    };
    let reasons = stored
        .iter()
        .filter_map(|f| precondition_failure(ws, &seen, f))
        .collect();
    Stage::new(StageName::Preconditions, reasons, false)
}

/// Why the stored `f` does not hold against the current files, if it does
/// not: its path is invalid or unreadable, or its content, mode or type
/// differ from what the revision expects.
///
/// Reads and hashes every file the dry run did not (never a remembered
/// digest): what validation, and so an apply, relies on.
fn precondition_failure(
    ws: &Workspace,
    seen: &HashMap<&str, Option<crate::FileMeta>>,
    f: &FileSummary,
) -> Option<Value> {
    precondition_against(f, |path| match seen.get(path.as_str()) {
        Some(m) => Ok(*m),
        None => ws.meta(path),
    })
}

/// Why the stored `f` does not hold against what `current` says is at
/// its path now, if it does not (see [`precondition_failure`]).
fn precondition_against(
    f: &FileSummary,
    current: impl FnOnce(&RepoPath) -> Result<Option<crate::FileMeta>, crate::workspace::WorkspaceError>,
) -> Option<Value> {
    let path: RepoPath = match f.path.parse() {
        Ok(p) => p,
        Err(e) => return Some(fail(format!("{}: {e}", f.path), json!({"path": f.path}))),
    };
    let actual = match current(&path) {
        Ok(m) => m,
        Err(e) => {
            let e = ToolError::from(e);
            return Some(fail(e.message(), json!({"path": f.path, "code": e.code()})));
        }
    };
    let expected = f
        .before
        .as_ref()
        .map(|b| (b.digest, b.executable, b.symlink));
    let actual = actual.map(|m| (m.digest, m.executable, m.symlink));
    (expected != actual).then(|| {
        let (expected, actual) = (show_state(&expected), show_state(&actual));
        fail(
            format!("{}: expected {expected}, found {actual}", f.path),
            json!({"path": f.path, "expected": expected, "actual": actual}),
        )
    })
}

/// A file's state for a precondition message: its digest, ` +x` when
/// executable, ` symlink` for a link; `absent` for no file.
fn show_state(state: &Option<(crate::Digest, bool, bool)>) -> String {
    match state {
        None => "absent".to_owned(),
        Some((d, x, l)) => format!(
            "{d}{}{}",
            if *x { " +x" } else { "" },
            if *l { " symlink" } else { "" }
        ),
    }
}

/// Dry run: the stored bytes, applied in memory to the current touched
/// files (`recomputed`), give exactly the stored results, and the files
/// leave room for them. Also returns the facts of the touched paths, for
/// coverage and the added lines (`None` when the revision does not apply,
/// or they could not be read).
fn dry_run_stage<'c>(
    ws: &Workspace,
    ev: &Evidence,
    patch: Option<&Patch<'_>>,
    recomputed: &'c Result<Changeset, ToolError>,
) -> (Stage, Option<Vec<FileFacts<'c>>>) {
    let mut reasons = Vec::new();
    let changeset = match recomputed {
        Ok(c) => c,
        Err(e) => {
            reasons.push(tool_failure(e));
            return (Stage::new(StageName::DryRun, reasons, false), None);
        }
    };
    if summarize(changeset) != ev.revision.changeset {
        reasons.push(fail(
            "applied to the current files, the revision gives other results than when it was made",
            json!({}),
        ));
    }
    // The files must also leave room for the results (no file where a
    // directory must be): checked without writing anything.
    if let Err(e) = ws.check_room(changeset) {
        reasons.push(tool_failure(&ToolError::from(e)));
    }
    let facts = match file_facts(ws, changeset, &needs_before(ev, patch)) {
        Ok(f) => Some(f),
        Err(e) => {
            reasons.push(fail(e.message().to_owned(), json!({"code": e.code()})));
            None
        }
    };
    (Stage::new(StageName::DryRun, reasons, false), facts)
}

/// Which old contents the added lines need: an edit plan's all, a
/// patch's those of the files it carries as `GIT binary patch`
/// ([`added_lines`] diffs only those).
fn needs_before<'p>(ev: &Evidence, patch: Option<&'p Patch<'p>>) -> ReadBefore<'p> {
    if ev.revision.format != crate::model::RevisionFormat::Patch {
        return ReadBefore::All;
    }
    let binary: Vec<&[u8]> = patch
        .map(|p| {
            p.files()
                .iter()
                .filter(|f| f.is_binary())
                .map(FilePatch::path)
                .collect()
        })
        .unwrap_or_default();
    if binary.is_empty() {
        ReadBefore::None
    } else {
        ReadBefore::Binary(binary)
    }
}

/// A failure reason carrying an error's message, code and details.
fn tool_failure(e: &ToolError) -> Value {
    fail(
        e.message().to_owned(),
        json!({"code": e.code(), "details": e.details()}),
    )
}

/// Claims: the author's live write claims on the touched paths, each fresh
/// (its resource unchanged since acquisition); nobody else's live write
/// claim overlapping the change itself ([`claim_blocks`]: a file or
/// directory claim on a touched path, a symbol claim whose current span
/// holds a changed line or insertion point; without `facts`, when the
/// revision does not apply, any claim on a touched path). Also returns
/// what the author's claims cover now, for coverage.
fn claims_stage(
    engine: &Engine,
    ws: &Workspace,
    ev: &Evidence,
    patch: Option<&Patch<'_>>,
    facts: Option<&[FileFacts<'_>]>,
    author: &AuthorClaims<'_>,
    held: Vec<Result<ResourceState, ToolError>>,
) -> (Stage, Vec<Scope>) {
    let stored = &ev.revision.changeset;
    let mut reasons = Vec::new();
    let mut covering = Vec::new();
    if author.claims.is_empty() {
        reasons.push(fail(
            format!("{} holds no live write claim on the touched paths", ev.proposal.author),
            json!({"agent_id": ev.proposal.author, "paths": stored.iter().map(|f| &f.path).collect::<Vec<_>>()}),
        ));
    }
    for ((c, scope), now) in author.claims.iter().zip(held) {
        let (reason, held) = author_claim(c, scope.clone(), now);
        reasons.push(reason);
        covering.extend(held);
    }
    let blocks = |o: &Claim| match facts {
        Some(facts) => claim_blocks(engine, ws, patch, facts, o),
        None => author.on_touched_claim(o),
    };
    for o in ev.others.iter().filter(|o| blocks(o)) {
        reasons.push(fail(
            format!("{} holds write claim {} on {}", o.agent_id, o.id, o.resource_id),
            json!({"holder": o.agent_id, "claim_id": o.id, "resource_id": o.resource_id, "expires_at": o.expires_at}),
        ));
    }
    (Stage::new(StageName::Claims, reasons, false), covering)
}

/// The paths the stored changeset touches, and the author's live write
/// claims on them (each with its scope), in the evidence's order.
struct AuthorClaims<'e> {
    touched: Vec<Scope>,
    claims: Vec<(&'e Claim, Scope)>,
}

impl<'e> AuthorClaims<'e> {
    fn on_touched(ev: &'e Evidence) -> AuthorClaims<'e> {
        let touched: Vec<Scope> = ev
            .revision
            .changeset
            .iter()
            .filter_map(|f| f.path.parse().ok())
            .map(|p: RepoPath| Scope {
                resource: Resource::File(p),
                span: None,
            })
            .collect();
        let mut out = AuthorClaims {
            touched,
            claims: Vec::new(),
        };
        out.claims = ev
            .claims
            .iter()
            .filter(|c| out.on_touched_claim(c))
            .filter_map(|c| Some((c, c.scope().ok()?)))
            .collect();
        out
    }

    /// Whether `c`'s scope overlaps a touched path.
    fn on_touched_claim(&self, c: &Claim) -> bool {
        c.scope()
            .is_ok_and(|s| self.touched.iter().any(|t| overlaps(&s, t)))
    }

    /// Whether reading what a claim holds walks a directory.
    fn walks(&self) -> bool {
        self.claims
            .iter()
            .any(|(_, s)| matches!(s.resource, Resource::Directory(_)))
    }

    /// What each claim's resource holds now (or why it cannot be read).
    fn read(
        &self,
        engine: &Engine,
        ws: &Workspace,
        ev: &Evidence,
    ) -> Vec<Result<ResourceState, ToolError>> {
        let ignore = Some(&ev.policy.workspace.ignore);
        self.claims
            .iter()
            .map(|(_, scope)| resource_state(engine, ws, &scope.resource, ignore))
            .collect()
    }
}

/// One of the author's claims on the touched paths, `c` on `scope`, with
/// what its resource holds `now`: a note when it is fresh, a failure when
/// it is stale or its resource cannot be read; and what it covers now (a
/// stale claim still describes what the author holds; an unreadable one
/// covers nothing).
fn author_claim(
    c: &Claim,
    scope: Scope,
    now: Result<ResourceState, ToolError>,
) -> (Value, Option<Scope>) {
    match now {
        Ok(now) => {
            let reason = if now.digest == c.base_digest {
                note(
                    format!("claim {} on {} is live and fresh", c.id, c.resource_id),
                    json!({"claim_id": c.id, "resource_id": c.resource_id, "token": c.token, "expires_at": c.expires_at}),
                )
            } else {
                fail(
                    format!(
                        "claim {} is stale: {} changed since it was acquired",
                        c.id, c.resource_id
                    ),
                    json!({"claim_id": c.id, "resource_id": c.resource_id, "code": "stale_claim",
                           "expected": c.base_digest, "actual": now.digest}),
                )
            };
            let held = Scope {
                resource: scope.resource,
                span: now.span,
            };
            (reason, Some(held))
        }
        Err(e) => (
            fail(
                format!("claim {}: {}", c.id, e.message()),
                json!({"claim_id": c.id, "resource_id": c.resource_id, "code": e.code(), "details": e.details()}),
            ),
            None,
        ),
    }
}

/// Coverage, from the real line changes of `facts` against what the
/// author's claims cover (`covering`); skipped when the revision does not
/// apply (no facts).
fn coverage_stage(
    ws: &Workspace,
    patch: Option<&Patch<'_>>,
    facts: Option<&[FileFacts<'_>]>,
    covering: &[Scope],
) -> Stage {
    let Some(facts) = facts else {
        let why = note(
            "not computed: the revision does not apply to the current files",
            json!({}),
        );
        return Stage::new(StageName::Coverage, vec![why], true);
    };
    let lines: Vec<Option<LineChanges>> = facts
        .iter()
        .map(|f| uncovered_line_changes(ws, patch, f, covering))
        .collect();
    let changes: Vec<Change<'_>> = facts
        .iter()
        .zip(&lines)
        .map(|(f, l)| Change {
            path: f.path,
            operation: f.operation,
            mode_change: f.mode_change,
            lines: l.as_ref(),
        })
        .collect();
    let mut found = crate::coverage::uncovered(&changes, covering);
    found.extend(symbol_results(ws, facts, covering, &found));
    let reasons = found
        .into_iter()
        .map(|u| {
            let message = format!("{}: {}", u.path, u.reason);
            fail(message, serde_json::to_value(&u).unwrap_or_default())
        })
        .collect();
    Stage::new(StageName::Coverage, reasons, false)
}

/// The line changes of `f` when it is a modified file no file or directory
/// claim covers — lines matter only there, so only those are diffed (and
/// read); `None` for any other, or when its old content cannot be read.
fn uncovered_line_changes(
    ws: &Workspace,
    patch: Option<&Patch<'_>>,
    f: &FileFacts<'_>,
    covering: &[Scope],
) -> Option<LineChanges> {
    let (Operation::Modify, Some(after)) = (f.operation, f.after) else {
        return None;
    };
    if crate::coverage::file_covered(f.path, covering) {
        return None;
    }
    let before = old_content(ws, f)?;
    Some(file_line_changes(patch, f, &before, after))
}

/// The line changes of the modification `f` from `before` to `after`:
/// the hunks' own positions when they are where they say; a diff only
/// when the patch applies at an offset (or is an edit plan, or no patch
/// is given).
fn file_line_changes(
    patch: Option<&Patch<'_>>,
    f: &FileFacts<'_>,
    before: &[u8],
    after: &[u8],
) -> LineChanges {
    let hunks = patch.and_then(|p| {
        p.files()
            .iter()
            .find(|fp| fp.path() == f.path.as_str().as_bytes())
    });
    hunks
        .and_then(|fp| crate::coverage::hunk_line_changes(fp.hunks(), before))
        .unwrap_or_else(|| line_changes(before, after))
}

/// Whether `other` (another agent's live write claim) overlaps the change
/// `facts` make — [`crate::coverage::claim_blocks`] on each touched path
/// (a rename's source too), a symbol claim's span re-resolved in the
/// current content and the path's line changes computed only for a
/// symbol claim in that file. A claim whose resource does not parse
/// blocks.
pub(crate) fn claim_blocks(
    engine: &Engine,
    ws: &Workspace,
    patch: Option<&Patch<'_>>,
    facts: &[FileFacts<'_>],
    other: &Claim,
) -> bool {
    let Ok(scope) = other.scope() else {
        return true;
    };
    let file = |p: &RepoPath| Scope {
        resource: Resource::File(p.clone()),
        span: None,
    };
    facts.iter().any(|f| {
        if let Operation::Rename { from } = f.operation {
            if overlaps(&scope, &file(from)) {
                return true;
            }
        }
        if !overlaps(&scope, &file(f.path)) {
            return false;
        }
        let Resource::Symbol { .. } = &scope.resource else {
            return true;
        };
        // A symbol's span: the ignore list plays no part.
        let span = resource_state(engine, ws, &scope.resource, None)
            .ok()
            .and_then(|s| s.span);
        let lines = match (f.operation, f.after) {
            (Operation::Modify, Some(after)) if !f.mode_change => {
                old_content(ws, f).map(|before| file_line_changes(patch, f, &before, after))
            }
            _ => None,
        };
        let now = Scope {
            resource: scope.resource.clone(),
            span,
        };
        crate::coverage::claim_blocks(
            &now,
            &Change {
                path: f.path,
                operation: f.operation,
                mode_change: f.mode_change,
                lines: lines.as_ref(),
            },
        )
    })
}

/// The old content of `f`: as its facts hold it, else read from `ws`
/// (`None` when it cannot be read).
fn old_content<'f>(ws: &Workspace, f: &'f FileFacts<'_>) -> Option<Cow<'f, [u8]>> {
    match &f.before {
        Some(b) => Some(Cow::Borrowed(b.as_slice())),
        None => ws.read(f.path).ok().flatten().map(|t| Cow::Owned(t.data)),
    }
}

/// The stages read off the policy evaluation, in order: `policy`
/// (approvals, blocking votes, roles), `security_review` (with secrets),
/// `human_approval` and `checks`.
fn policy_stages(report: &PolicyReport) -> [Stage; 4] {
    [
        requirement_stage(StageName::Policy, report, |id| {
            matches!(
                id,
                RequirementId::Approvals | RequirementId::NoBlockingVotes | RequirementId::Role(_)
            )
        }),
        requirement_stage(StageName::SecurityReview, report, |id| {
            matches!(id, RequirementId::SecurityReview | RequirementId::Secrets)
        }),
        requirement_stage(StageName::HumanApproval, report, |id| {
            *id == RequirementId::HumanApproval
        }),
        requirement_stage(StageName::Checks, report, |id| {
            matches!(id, RequirementId::Check(_))
        }),
    ]
}

/// The stage `name` of the requirements `pick` selects by id: one reason
/// each, failed when one is unsatisfied, skipped when none applies.
fn requirement_stage(
    name: StageName,
    report: &PolicyReport,
    pick: impl Fn(&RequirementId) -> bool,
) -> Stage {
    let reqs: Vec<&Requirement> = report.requirements.iter().filter(|r| pick(&r.id)).collect();
    let skipped = reqs
        .iter()
        .all(|r| r.status == RequirementStatus::NotApplicable);
    let reasons = reqs.into_iter().map(requirement_reason).collect();
    Stage::new(name, reasons, skipped)
}

/// A requirement as a stage reason: what is missing (else its id and
/// status), with its evidence; a failure when it is unsatisfied.
fn requirement_reason(r: &Requirement) -> Value {
    let details = json!({"requirement": r.id, "status": r.status, "evidence": r.evidence,
                         "missing": r.missing, "candidates": r.candidates, "paths": r.paths,
                         "findings": r.findings});
    let message = r
        .missing
        .clone()
        .unwrap_or_else(|| format!("{}: {}", r.id, super::records::enum_to_sql(&r.status)));
    if r.status == RequirementStatus::Unsatisfied {
        fail(message, details)
    } else {
        note(message, details)
    }
}

/// A report on a revision other than the latest is never valid: the first
/// stage says so, first, and fails.
fn mark_superseded(ev: &Evidence, first: &mut Stage) {
    let latest = ev.proposal.latest_revision;
    if ev.revision.number != latest {
        first.reasons.insert(
            0,
            json!({"message": format!("revision {} was superseded by revision {latest}", ev.revision.number)}),
        );
        first.status = StageStatus::Failed;
    }
}

/// Whether any stored precondition of `stored` fails against the files of
/// `ws` (the preconditions stage alone, no dry run), for an ADVISORY
/// answer only (`inbox.list`'s and `inbox.wait`'s `stale`): each touched
/// file's digest comes from `digests` when a fresh `lstat` proves it
/// unwritten since it was last hashed (same stat, and older than the
/// racy-timestamp window), else it is read and hashed
/// ([`Workspace::meta_advisory`]).
///
/// Never decides a write: `patch.validate`, `proposal.status` and
/// `patch.apply` judge preconditions with [`preconditions_stage`], which
/// reads and hashes every touched file, and the workspace checks them
/// again by `fstat` and a read before its first write.
pub(crate) fn stale_against(
    ws: &Workspace,
    digests: &crate::workspace::DigestMemo,
    stored: &[FileSummary],
) -> bool {
    stored
        .iter()
        .any(|f| precondition_against(f, |path| ws.meta_advisory(path, digests)).is_some())
}

/// The policy evaluation of the revision from the store alone: the added
/// lines (for secret scanning) are read off the stored diff's hunks, no
/// file is read. A `GIT binary patch` literal's text is not scanned here
/// (validation reads the result and does).
pub(crate) fn policy_from_store(
    engine: &Engine,
    tx: &Tx<'_>,
    ev: &Evidence,
) -> Result<PolicyReport, ToolError> {
    let rendered;
    let diff: &[u8] = if ev.revision.format == crate::model::RevisionFormat::Patch {
        &ev.bytes
    } else {
        rendered = super::review::diff_bytes(tx, &ev.revision)?;
        &rendered
    };
    let patch = crate::diff::parse(diff, &engine.options().parse_options()).ok();
    let lines = patch.as_ref().map(hunk_added_lines).unwrap_or_default();
    Ok(ev.with_input(&lines, |input| evaluate(&ev.policy, input)))
}

/// The review plan of a revision: the roles policy requires and who can
/// fill them.
pub(crate) fn plan(engine: &Engine, ev: &Evidence) -> Vec<RoleNeed> {
    let ws = engine.workspace().view();
    let parsed = parse_revision(engine, ev);
    let patch = parsed.as_ref().and_then(|p| p.as_ref().ok());
    let changeset = dry_run(&ws, ev, &parsed);
    let facts = changeset
        .as_ref()
        .ok()
        .and_then(|c| file_facts(&ws, c, &needs_before(ev, patch)).ok());
    let lines = added_lines(patch, facts.as_deref());
    ev.with_input(&lines, |input| review_plan(&ev.policy, input))
}

/// Arguments of `patch.validate`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ValidateArgs")]
pub struct Validate {
    /// The proposal.
    pub proposal_id: Id,
    /// The revision (default: the latest).
    pub revision: Option<RevisionNumber>,
}

impl super::Request for Validate {
    const TOOL: &'static str = "patch.validate";
    const DESCRIPTION: &'static str = "Report, without changing anything, whether a revision can land now: claims, preconditions against the current files, coverage, an in-memory dry run, policy, security review, human approval and required checks — every stage with its reasons.";
    const MUTATES: bool = false;
    type Output = ValidationReport;

    store_tool!();
}

impl Tool for Validate {
    const READS_FILES: bool = true;

    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: Validate, (): ()) -> Result<ValidationReport, ToolError> {
        let ws = cx.engine.workspace().view();
        std::thread::scope(|scope| {
            let revision = args.revision.map(|r| r.0);
            let ev = gather_prefetching(cx, args.proposal_id.as_str(), revision, &ws, scope)?;
            Ok(validate_with_changeset(cx.engine, &ws, &ev).0)
        })
    }
}
