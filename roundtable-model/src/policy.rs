//! Policy: what a revision needs before it may be applied.
//!
//! A policy is a TOML document, parsed strictly ([`Policy::parse`]): an
//! unknown key, a value of the wrong type, an unknown enum spelling or a
//! malformed glob is refused with the key and its line and column. Every key
//! except `version` is optional, and an omitted key keeps its built-in
//! default, so `version = 1` alone is [`Policy::default()`]. The built-in
//! default in full is [`DEFAULT_POLICY_TOML`]:
//!
//! ```toml
#![doc = include_str!("policy/default.toml")]
//! ```
//!
//! [`evaluate`] turns a policy and the facts the shell gathered about one
//! revision ([`PolicyInput`]) into a [`PolicyReport`]: every requirement with
//! `satisfied | unsatisfied | not_applicable`, the ids of the records that
//! are its evidence, what is missing and who could supply it. It is pure: no
//! store, no files, no clock. [`review_plan`] lists the roles a revision
//! needs and the agents that can fill them; [`scan_secrets`] is the secret
//! scanner evaluation runs over added lines.
//!
//! The rules, all decided on values the evaluation can see:
//!
//! - votes judge one revision: a vote on another revision counts only as
//!   [`CarryOver`] allows, and never a vote on a later revision;
//! - the author never counts as their own reviewer, and the votes of an
//!   unknown or disabled agent do not count;
//! - an agent's latest vote on the most recent revision whose votes count
//!   for it supersedes its earlier ones;
//! - role labels are compared exactly (roles are `[a-z0-9_-]`, no case
//!   folding, no trimming);
//! - a secret found in an added line makes a security review required; the
//!   report names the path, line and kind, never the secret.

use crate::model::Role;
use crate::model::{Risk, VoteValue};
use crate::ErrorCode;
use globset::{GlobBuilder, GlobMatcher};
use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize, Serializer};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

mod eval;
mod secrets;
#[cfg(test)]
mod tests;

pub use eval::{
    evaluate, review_plan, AddedLine, AgentInfo, ApprovalInfo, CarriedEvidence, CarryRule,
    PolicyInput, PolicyReport, Requirement, RequirementId, RequirementStatus, ReviewInfo,
    RevisionInfo, RoleNeed, TestInfo, VoteInfo,
};
pub use secrets::{scan_secrets, SecretFinding, SecretKind};

/// The built-in default policy as a document: what applies when no policy is
/// activated. It parses to [`Policy::default()`].
pub const DEFAULT_POLICY_TOML: &str = include_str!("policy/default.toml");

/// The only policy format version this code reads.
pub const POLICY_VERSION: u32 = 1;

/// The role whose agents may record security reviews.
pub const SECURITY_ROLE: &str = "security";

/// A parsed, validated policy.
///
/// Obtain one with [`Policy::parse`] or [`Policy::default`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Policy {
    /// The format version (always [`POLICY_VERSION`]).
    pub version: u32,
    /// Approvals from reviewers and the votes that block.
    pub approvals: Approvals,
    /// Roles required when a touched path matches.
    pub roles: Vec<RoleRule>,
    /// When a security review is required.
    pub security_review: Gate,
    /// When a person's approval is required.
    pub human_approval: Gate,
    /// Checks (`test.record` names) that must pass.
    pub checks: Checks,
    /// Secret scanning of added lines.
    pub secrets: Secrets,
    /// What the workspace state leaves out besides git's ignore rules.
    pub workspace: WorkspaceRules,
    /// How the landing queue tests and lands.
    #[serde(default)]
    pub queue: QueueRules,
    /// Which people hold each role a person acts in.
    #[serde(default)]
    pub people: People,
}

/// A role a person (a `human:ID` actor) acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PersonRole {
    /// Record security reviews that count (`security.review`).
    Security,
    /// Give human approvals that count (`human.approve`).
    Approve,
    /// Store and activate policies (`policy.set`, `policy.activate`).
    Policy,
    /// Propose undoing an agent's landed work (`proposal.revert_agent`).
    Revert,
}

impl PersonRole {
    /// Every role, in a stable order.
    pub const ALL: [PersonRole; 4] = [
        PersonRole::Security,
        PersonRole::Approve,
        PersonRole::Policy,
        PersonRole::Revert,
    ];

    /// The stable spelling, also the `[people]` key (`security`, `approve`,
    /// `policy`, `revert`).
    pub fn as_str(self) -> &'static str {
        match self {
            PersonRole::Security => "security",
            PersonRole::Approve => "approve",
            PersonRole::Policy => "policy",
            PersonRole::Revert => "revert",
        }
    }
}

/// The `[people]` table: which people hold each [`PersonRole`]. A role the
/// table leaves out is held by every person (so a policy without the table
/// trusts every person, as before people had roles); a role it lists is
/// held only by the ids listed (`[]`: by nobody).
///
/// A security review or human approval by a person who does not hold the
/// role under the policy that judges the revision does not count, even
/// when it was recorded under an earlier policy; the tools refuse it up
/// front (`forbidden`, `missing_role`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct People {
    /// Who records security reviews (`None`: every person).
    pub security: Option<Vec<String>>,
    /// Who gives human approvals (`None`: every person).
    pub approve: Option<Vec<String>>,
    /// Who stores and activates policies (`None`: every person).
    pub policy: Option<Vec<String>>,
    /// Who proposes undoing an agent's work (`proposal.revert_agent`;
    /// `None`: every person).
    pub revert: Option<Vec<String>>,
}

impl People {
    /// The people who hold `role`, when the table names them (`None`:
    /// every person does).
    pub fn holders(&self, role: PersonRole) -> Option<&[String]> {
        match role {
            PersonRole::Security => self.security.as_deref(),
            PersonRole::Approve => self.approve.as_deref(),
            PersonRole::Policy => self.policy.as_deref(),
            PersonRole::Revert => self.revert.as_deref(),
        }
    }

    /// The people named for `role`, sorted (`None`: every person holds it).
    pub fn named(&self, role: PersonRole) -> Option<Vec<String>> {
        self.holders(role).map(|ids| {
            let mut ids = ids.to_vec();
            ids.sort();
            ids
        })
    }

    /// `ids` as people read them: `human:a, human:b`, or `nobody`.
    pub fn spell(ids: &[String]) -> String {
        if ids.is_empty() {
            return "nobody".into();
        }
        ids.iter()
            .map(|i| format!("human:{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Whether the person `id` holds `role`.
    pub fn holds(&self, id: &str, role: PersonRole) -> bool {
        self.holders(role)
            .is_none_or(|ids| ids.iter().any(|h| h == id))
    }
}

/// The `[workspace]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[non_exhaustive]
pub struct WorkspaceRules {
    /// Paths left out of the workspace state and of directory claims'
    /// digests, in addition to those git ignores (gitignore syntax,
    /// relative to the root).
    pub ignore: IgnoreList,
}

/// Extra ignore patterns in gitignore syntax, matched against
/// repository-relative paths as a `.gitignore` at the root would match
/// them (`__pycache__/`, `*.log`, `/build/`, `!keep.log` re-includes what an
/// earlier line of this list ignored). They add to git's rules: a path git
/// ignores stays ignored whatever this list says.
#[derive(Clone, Default)]
pub struct IgnoreList {
    patterns: Vec<String>,
    matcher: Option<ignore::gitignore::Gitignore>,
}

impl IgnoreList {
    /// Compile `patterns`; the error names the first one that is not a
    /// valid pattern (by index) and why.
    pub fn new(patterns: Vec<String>) -> Result<IgnoreList, (usize, String)> {
        let mut builder = ignore::gitignore::GitignoreBuilder::new("");
        for (i, p) in patterns.iter().enumerate() {
            let blank = p.trim().is_empty() || p.starts_with('#');
            if blank || p.contains('\n') {
                return Err((i, "a pattern is one non-blank line, not a comment".into()));
            }
            builder.add_line(None, p).map_err(|e| (i, e.to_string()))?;
        }
        let matcher = builder.build().map_err(|e| (0, e.to_string()))?;
        Ok(IgnoreList {
            matcher: (!patterns.is_empty()).then_some(matcher),
            patterns,
        })
    }

    /// The patterns as written.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// Whether the list has no pattern.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether `path` (repository-relative; `is_dir` when it names a
    /// directory) is ignored by this list's last matching pattern.
    pub fn is_ignored(&self, path: &std::path::Path, is_dir: bool) -> bool {
        self.matcher
            .as_ref()
            .is_some_and(|m| m.matched(path, is_dir).is_ignore())
    }
}

impl std::fmt::Debug for IgnoreList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(&self.patterns).finish()
    }
}

impl PartialEq for IgnoreList {
    fn eq(&self, other: &IgnoreList) -> bool {
        self.patterns == other.patterns
    }
}

impl Serialize for IgnoreList {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.patterns.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for IgnoreList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IgnoreList, D::Error> {
        let patterns = Vec::<String>::deserialize(d)?;
        IgnoreList::new(patterns)
            .map_err(|(i, e)| serde::de::Error::custom(format!("ignore[{i}]: {e}")))
    }
}

impl JsonSchema for IgnoreList {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "IgnoreList".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Ignore patterns in gitignore syntax, relative to the root."})
    }
}

/// The `[approvals]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Approvals {
    /// How many eligible reviewers must approve (`approve` or
    /// `approve_with_notes`); 0 turns the requirement off.
    pub minimum: u32,
    /// Votes that block while they stand (default `veto`, `reject`).
    pub blocking_votes: Vec<VoteValue>,
    /// Whether votes (and, under [`CarryOver::TrivialRebase`], security
    /// reviews and human approvals) on an earlier revision count for a
    /// later one.
    pub carry_over: CarryOver,
    /// Roles whose holders count toward `minimum`; empty means any enabled
    /// agent that is not the author.
    pub eligible_roles: Vec<String>,
}

/// When votes on an earlier revision count for the current one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum CarryOver {
    /// Only votes on the current revision count.
    Never,
    /// Votes, security reviews and human approvals on an earlier revision
    /// count when every revision since was made **by the engine** rebasing
    /// the one before it (`proposal.rebase`, or `patch.apply` with
    /// `rebase`; never a revision an author attached) and makes the same
    /// change in the same place ([`Revision::change_id`](crate::model::Revision::change_id):
    /// the same files, operations, modes and hunks, each with the same
    /// three lines of context around it and inside the same enclosing
    /// symbol) — a trivial rebase. Check results carry too when `[checks]
    /// carry_on_trivial_rebase` says so. The built-in default.
    #[default]
    TrivialRebase,
    /// A vote carries over when its revision's changeset digest equals the
    /// current revision's.
    IdenticalChangeset,
    /// A vote carries over when every path relevant to its reviewer has the
    /// same change (operation, before and after digest and mode) in both
    /// revisions. The paths relevant to a reviewer are the touched paths
    /// (of either revision) that match the globs of the `[[roles]]` rules
    /// for roles the reviewer holds; all touched paths if there are none.
    UnchangedResources,
}

/// A `[[roles]]` rule: a change touching `paths` needs `minimum` approvals
/// from holders of `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct RoleRule {
    /// The globs; the rule applies when any touched path matches one.
    pub paths: Vec<PathGlob>,
    /// The role, compared exactly.
    pub role: String,
    /// How many distinct holders must approve (at least 1).
    pub minimum: u32,
}

impl RoleRule {
    /// The rule's requirement id: `role:<role>:<glob>[,<glob>…]`.
    pub fn requirement_id(&self) -> RequirementId {
        let globs: Vec<&str> = self.paths.iter().map(PathGlob::as_str).collect();
        RequirementId::Role(format!("{}:{}", self.role, globs.join(",")))
    }
}

/// The `[security_review]` and `[human_approval]` tables: required when the
/// proposal's risk is listed, a touched path matches, or (with `reverts`)
/// the proposal reverts another (`proposal.revert`,
/// `proposal.revert_agent`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Gate {
    /// Risk levels that require it.
    pub risk: Vec<Risk>,
    /// Globs of paths that require it.
    pub paths: Vec<PathGlob>,
    /// Whether every revert (a proposal made by `proposal.revert` or
    /// `proposal.revert_agent`) requires it, whatever its risk and paths
    /// (default false).
    #[serde(default)]
    pub reverts: bool,
    /// Whether a revision any of whose hunks (of a Codex patch or
    /// SEARCH/REPLACE blocks) matched only below the exact rung of the
    /// matching ladder requires it (default false).
    #[serde(default)]
    pub loose_match: bool,
}

/// The `[checks]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Checks {
    /// Names of `test.record` results whose latest result on the revision
    /// must be `passed`.
    pub required: Vec<String>,
    /// Whether a check result on an earlier revision counts for a trivial
    /// rebase of it (under `carry_over = "trivial_rebase"`); default false:
    /// the checks run again on the rebased files.
    pub carry_on_trivial_rebase: bool,
    /// The checks the landing queue runs itself on each speculative state
    /// (`[checks.NAME]` tables), by name.
    #[serde(default)]
    pub commands: BTreeMap<String, CheckCommand>,
}

impl Checks {
    /// The `[checks.NAME]` checks the engine runs (a command), by name.
    pub fn run_by_engine(&self) -> impl Iterator<Item = (&String, &CheckCommand)> {
        self.commands.iter().filter(|(_, c)| !c.external)
    }

    /// The external `[checks.NAME]` checks (answered with `test.record`),
    /// by name.
    pub fn external(&self) -> impl Iterator<Item = (&String, &CheckCommand)> {
        self.commands.iter().filter(|(_, c)| c.external)
    }
}

/// A check the landing queue runs: a command run in a materialized
/// speculative state (its working directory), with bounded time and
/// output. Exit status 0 is `passed`; any other, or a signal, `failed`;
/// running past the timeout is `errored`.
///
/// Or an *external* check (`external = true`, no command): the queue
/// leaves each speculative state materialized (a commit under
/// `refs/roundtable/queue/ENTRY` in git mode, a directory under
/// `.roundtable/queue/` otherwise), announces it once (a
/// `queue.check_requested` event and an orchestrator inbox item), and
/// takes the `test.record` of that check's name on the proposal's latest
/// revision recorded after the announcement as the check's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct CheckCommand {
    /// The program and its arguments (no shell: `["sh", "-c", "…"]` for
    /// one); empty for an external check.
    pub command: Vec<String>,
    /// Whether the check is run outside the engine and answered with
    /// `test.record` (default false).
    #[serde(default)]
    pub external: bool,
    /// How long it may run, in seconds (default 600); then its process
    /// group is killed. For an external check: how long the queue waits
    /// for the answer after announcing a state (default 3600); then the
    /// proposal goes back (`check_failed`, errored).
    pub timeout_s: u32,
    /// Environment variables set for it on top of the engine's.
    pub env: BTreeMap<String, String>,
}

/// The `[queue]` table: how the landing queue tests and lands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct QueueRules {
    /// Whether `queue.run` first enqueues every open proposal that waits
    /// only on the orchestrator's apply (default false).
    pub auto_enqueue: bool,
    /// The most proposals of one lane a round takes: each is tested on
    /// top of the ones ahead of it, and the longest prefix whose states
    /// all pass lands (default 8).
    pub batch_size: u32,
    /// How many speculative states are checked at once (default 4).
    pub depth: u32,
    /// Whether proposals whose touched paths and claims do not overlap
    /// test and land in independent lanes (default false: one lane, so
    /// every state checked holds every proposal ahead of it).
    pub lanes: bool,
}

impl Default for QueueRules {
    fn default() -> QueueRules {
        QueueRules {
            auto_enqueue: false,
            batch_size: 8,
            depth: 4,
            lanes: false,
        }
    }
}

/// The `[secrets]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct Secrets {
    /// Scan added lines for private keys, cloud keys and tokens; a finding
    /// makes a security review required.
    pub scan: bool,
}

impl Default for Policy {
    /// The built-in default: one approval on the current revision from an
    /// enabled agent who is not the author; `veto` and `reject` block;
    /// security review for `high` and `critical` risk; human approval for
    /// `critical`; votes, reviews and approvals carry over a trivial rebase
    /// (check results do not); secret scanning on.
    fn default() -> Policy {
        Policy {
            version: POLICY_VERSION,
            approvals: Approvals {
                minimum: 1,
                blocking_votes: default_blocking_votes(),
                carry_over: CarryOver::TrivialRebase,
                eligible_roles: Vec::new(),
            },
            roles: Vec::new(),
            security_review: Gate {
                risk: default_security_risk(),
                paths: Vec::new(),
                reverts: false,
                loose_match: false,
            },
            human_approval: Gate {
                risk: default_human_risk(),
                paths: Vec::new(),
                reverts: false,
                loose_match: false,
            },
            checks: Checks {
                required: Vec::new(),
                carry_on_trivial_rebase: false,
                commands: BTreeMap::new(),
            },
            secrets: Secrets { scan: true },
            workspace: WorkspaceRules::default(),
            queue: QueueRules::default(),
            people: People::default(),
        }
    }
}

fn default_blocking_votes() -> Vec<VoteValue> {
    vec![VoteValue::Veto, VoteValue::Reject]
}

fn default_security_risk() -> Vec<Risk> {
    vec![Risk::High, Risk::Critical]
}

fn default_human_risk() -> Vec<Risk> {
    vec![Risk::Critical]
}

/// A compiled path glob (`src/auth/**`, `**/*.pem`).
///
/// `*` and `?` do not cross `/`; `**` spans directories (`**/` also matches
/// no directory, so `**/*.pem` matches `key.pem`); `{a,b}` alternates;
/// `[…]` is a class; `\` escapes. Matching is case-sensitive against the
/// repository-relative path.
#[derive(Debug, Clone)]
pub struct PathGlob {
    pattern: String,
    matcher: GlobMatcher,
}

impl PathGlob {
    /// Compile `pattern`; the error says why it is not a glob.
    pub fn new(pattern: &str) -> Result<PathGlob, String> {
        if pattern.is_empty() {
            return Err("a glob must not be empty".into());
        }
        if pattern.starts_with('/') {
            return Err(
                "a glob matches repository-relative paths; it must not start with '/'".into(),
            );
        }
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .empty_alternates(false)
            .build()
            .map_err(|e| e.kind().to_string())?;
        Ok(PathGlob {
            pattern: pattern.to_owned(),
            matcher: glob.compile_matcher(),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether `path` (repository-relative, `/`-separated) matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.matcher.is_match(path)
    }
}

impl PartialEq for PathGlob {
    fn eq(&self, other: &PathGlob) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for PathGlob {}

impl Serialize for PathGlob {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.pattern)
    }
}

impl<'de> serde::Deserialize<'de> for PathGlob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PathGlob, D::Error> {
        let s = String::deserialize(d)?;
        PathGlob::new(&s).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for PathGlob {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "PathGlob".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "minLength": 1, "description": "A path glob: `*` and `?` stay within a directory, `**` spans directories."})
    }
}

/// Why a policy document was refused. Every variant's code is
/// [`ErrorCode::InvalidPolicy`]; each names the key and, when known, the
/// line and column ([`PolicyError::line`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The document is not TOML, or a value has the wrong type or an
    /// unknown spelling.
    #[error("policy{}: {message}", at(.key, *.line, *.column))]
    Syntax {
        /// What is wrong.
        message: String,
        /// The dotted key path (`approvals.carry_over`, `roles[0].role`),
        /// when known.
        key: Option<String>,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column (in characters), when known.
        column: Option<usize>,
    },
    /// A key the format does not have.
    #[error("policy{}: unknown key `{name}`", at(.key, *.line, *.column))]
    UnknownKey {
        /// The unknown key's own name.
        name: String,
        /// Its dotted path (`approvals.minimun`).
        key: Option<String>,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
    },
    /// A path glob that does not compile.
    #[error("policy{}: invalid glob {glob:?}: {reason}", at(.key, *.line, *.column))]
    Glob {
        /// The glob as written.
        glob: String,
        /// Why it is refused.
        reason: String,
        /// Where it is (`roles[0].paths[1]`).
        key: Option<String>,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
    },
    /// A well-typed value the format does not allow (an unsupported
    /// version, a role rule with `minimum = 0`, `approve` as a blocking
    /// vote, a duplicate).
    #[error("policy{}: {message}", at(.key, *.line, *.column))]
    Invalid {
        /// What is wrong.
        message: String,
        /// Where it is.
        key: Option<String>,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
    },
}

fn at(key: &Option<String>, line: Option<usize>, column: Option<usize>) -> String {
    let mut s = String::new();
    if let (Some(l), Some(c)) = (line, column) {
        s.push_str(&format!(" line {l}, column {c}"));
    }
    if let Some(k) = key {
        s.push_str(&format!(" at `{k}`"));
    }
    s
}

impl PolicyError {
    /// The stable error code: always [`ErrorCode::InvalidPolicy`].
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidPolicy
    }

    /// The 1-based line the error is on, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            PolicyError::Syntax { line, .. }
            | PolicyError::UnknownKey { line, .. }
            | PolicyError::Glob { line, .. }
            | PolicyError::Invalid { line, .. } => *line,
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Where a spanned value is, for an error.
struct Place<'t> {
    text: &'t str,
}

impl Place<'_> {
    fn invalid(&self, key: String, span: Range<usize>, message: String) -> PolicyError {
        let (line, column) = line_column(self.text, span.start);
        PolicyError::Invalid {
            message,
            key: Some(key),
            line: Some(line),
            column: Some(column),
        }
    }

    fn globs(&self, key: &str, raw: Vec<Spanned<String>>) -> Result<Vec<PathGlob>, PolicyError> {
        let mut out: Vec<PathGlob> = Vec::with_capacity(raw.len());
        for (i, g) in raw.into_iter().enumerate() {
            let span = g.span();
            let pattern = g.into_inner();
            let glob = PathGlob::new(&pattern).map_err(|reason| {
                let (line, column) = line_column(self.text, span.start);
                PolicyError::Glob {
                    glob: pattern.clone(),
                    reason,
                    key: Some(format!("{key}[{i}]")),
                    line: Some(line),
                    column: Some(column),
                }
            })?;
            if out.contains(&glob) {
                return Err(self.invalid(
                    format!("{key}[{i}]"),
                    span,
                    format!("duplicate glob {pattern:?}"),
                ));
            }
            out.push(glob);
        }
        Ok(out)
    }

    /// `[approvals]`: no approving vote among the blocking votes, no
    /// duplicate in a list; what is left out is `defaults`'.
    fn approvals(&self, a: RawApprovals, defaults: Approvals) -> Result<Approvals, PolicyError> {
        let blocking_votes = match a.blocking_votes {
            None => defaults.blocking_votes,
            Some(votes) => {
                no_duplicates(self, "approvals.blocking_votes", &votes)?;
                for (i, v) in votes.iter().enumerate() {
                    if matches!(
                        v.get_ref(),
                        VoteValue::Approve | VoteValue::ApproveWithNotes
                    ) {
                        return Err(self.invalid(
                            format!("approvals.blocking_votes[{i}]"),
                            v.span(),
                            "an approving vote cannot be a blocking vote".into(),
                        ));
                    }
                }
                votes.into_iter().map(Spanned::into_inner).collect()
            }
        };
        let eligible_roles = match a.eligible_roles {
            None => Vec::new(),
            Some(roles) => {
                no_duplicates(self, "approvals.eligible_roles", &roles)?;
                roles
                    .into_iter()
                    .map(|r| r.into_inner().as_str().to_owned())
                    .collect()
            }
        };
        Ok(Approvals {
            minimum: a.minimum.unwrap_or(defaults.minimum),
            blocking_votes,
            carry_over: a.carry_over.unwrap_or_default(),
            eligible_roles,
        })
    }

    /// `[[roles]]`: each rule has at least one path glob and a minimum of
    /// at least 1, and no two rules have the same role and paths.
    fn role_rules(&self, raw: Vec<RawRoleRule>) -> Result<Vec<RoleRule>, PolicyError> {
        let mut roles: Vec<RoleRule> = Vec::with_capacity(raw.len());
        for (i, r) in raw.into_iter().enumerate() {
            let key = format!("roles[{i}]");
            let paths_span = r.paths.span();
            let paths = r.paths.into_inner();
            if paths.is_empty() {
                return Err(self.invalid(
                    format!("{key}.paths"),
                    paths_span,
                    "a role rule needs at least one path glob".into(),
                ));
            }
            let paths = self.globs(&format!("{key}.paths"), paths)?;
            let minimum =
                match r.minimum {
                    None => 1,
                    Some(m) if *m.get_ref() == 0 => return Err(self.invalid(
                        format!("{key}.minimum"),
                        m.span(),
                        "a role rule's minimum is at least 1 (remove the rule to require nothing)"
                            .into(),
                    )),
                    Some(m) => m.into_inner(),
                };
            let role_span = r.role.span();
            let rule = RoleRule {
                paths,
                role: r.role.into_inner().as_str().to_owned(),
                minimum,
            };
            if roles
                .iter()
                .any(|o| o.requirement_id() == rule.requirement_id())
            {
                return Err(self.invalid(
                    format!("{key}.role"),
                    role_span,
                    format!(
                        "duplicate role rule {:?}: another rule has the same role and paths",
                        rule.requirement_id()
                    ),
                ));
            }
            roles.push(rule);
        }
        Ok(roles)
    }

    /// The gate `[name]` (`security_review`, `human_approval`); what is
    /// left out is `default`'s.
    fn gate(&self, name: &str, raw: RawGate, default: Gate) -> Result<Gate, PolicyError> {
        let risk = match raw.risk {
            None => default.risk,
            Some(risk) => {
                no_duplicates(self, &format!("{name}.risk"), &risk)?;
                risk.into_iter().map(Spanned::into_inner).collect()
            }
        };
        let paths = match raw.paths {
            None => default.paths,
            Some(paths) => self.globs(&format!("{name}.paths"), paths)?,
        };
        Ok(Gate {
            risk,
            paths,
            reverts: raw.reverts.unwrap_or(default.reverts),
            loose_match: raw.loose_match.unwrap_or(default.loose_match),
        })
    }

    /// `checks.required`: distinct names, none blank or with surrounding
    /// whitespace.
    fn required_checks(
        &self,
        raw: Option<Vec<Spanned<String>>>,
    ) -> Result<Vec<String>, PolicyError> {
        let Some(names) = raw else {
            return Ok(Vec::new());
        };
        no_duplicates(self, "checks.required", &names)?;
        for (i, n) in names.iter().enumerate() {
            if n.get_ref().trim().is_empty() || n.get_ref().trim() != n.get_ref() {
                return Err(self.invalid(
                    format!("checks.required[{i}]"),
                    n.span(),
                    "a check name is not blank and has no surrounding whitespace".into(),
                ));
            }
        }
        Ok(names.into_iter().map(Spanned::into_inner).collect())
    }

    /// The `[checks.NAME]` tables: a command with a program, or `external
    /// = true` and no command (not both), a timeout of 1 s to a day, a
    /// name that `checks.required` does not also list (a queue check's
    /// result is the queue's own, on the state that lands).
    fn check_commands(
        &self,
        raw: BTreeMap<String, RawCheckCommand>,
        required: &[String],
        span: Range<usize>,
    ) -> Result<BTreeMap<String, CheckCommand>, PolicyError> {
        let mut out = BTreeMap::new();
        for (name, c) in raw {
            let key = |k: &str| format!("checks.{name}.{k}");
            if name.trim().is_empty() || name.trim() != name {
                return Err(self.invalid(
                    format!("checks.{name}"),
                    span,
                    "a check name is not blank and has no surrounding whitespace".into(),
                ));
            }
            if required.contains(&name) {
                return Err(self.invalid(
                    format!("checks.{name}"),
                    span,
                    format!("{name:?} is run by the landing queue; checks.required lists checks recorded with test.record, so it cannot list it too"),
                ));
            }
            let external = c.external.unwrap_or(false);
            match (&c.command, external) {
                (Some(_), true) => {
                    return Err(self.invalid(
                        key("external"),
                        span,
                        "an external check is run outside the engine and answered with test.record: it names no command (command and external = true are mutually exclusive)".into(),
                    ));
                }
                (None, true) => {}
                (command, false) => {
                    if command
                        .as_ref()
                        .and_then(|c| c.first())
                        .is_none_or(|p| p.is_empty())
                    {
                        return Err(self.invalid(
                            key("command"),
                            span,
                            "names the program to run and its arguments, e.g. [\"pytest\", \"-q\"] (or external = true for a check run outside the engine)".into(),
                        ));
                    }
                }
            }
            if external && !c.env.is_empty() {
                return Err(self.invalid(
                    key("env"),
                    span,
                    "an external check is run outside the engine: its environment is the runner's own".into(),
                ));
            }
            let timeout_s = c.timeout_s.unwrap_or(if external { 3600 } else { 600 });
            if !(1..=86_400).contains(&timeout_s) {
                return Err(self.invalid(
                    key("timeout_s"),
                    span,
                    "is from 1 to 86400 seconds".into(),
                ));
            }
            out.insert(
                name,
                CheckCommand {
                    command: c.command.unwrap_or_default(),
                    external,
                    timeout_s,
                    env: c.env,
                },
            );
        }
        Ok(out)
    }

    /// The `[queue]` table: a batch of 1 to 100, a depth of 1 to 64.
    /// `[people]`: each role's list of distinct person ids.
    fn people(&self, raw: RawPeople) -> Result<People, PolicyError> {
        let list = |role: PersonRole, ids: Option<Vec<Spanned<roundtable_base::id::Id>>>| {
            ids.map(|ids| {
                no_duplicates(self, &format!("people.{}", role.as_str()), &ids)?;
                Ok(ids
                    .into_iter()
                    .map(|i| i.into_inner().to_string())
                    .collect())
            })
            .transpose()
        };
        Ok(People {
            security: list(PersonRole::Security, raw.security)?,
            approve: list(PersonRole::Approve, raw.approve)?,
            policy: list(PersonRole::Policy, raw.policy)?,
            revert: list(PersonRole::Revert, raw.revert)?,
        })
    }

    fn queue(&self, raw: RawQueue) -> Result<QueueRules, PolicyError> {
        let d = QueueRules::default();
        let bounded = |name: &str, v: Option<Spanned<u32>>, max: u32, default: u32| {
            let Some(v) = v else { return Ok(default) };
            if (1..=max).contains(v.get_ref()) {
                Ok(*v.get_ref())
            } else {
                Err(self.invalid(
                    format!("queue.{name}"),
                    v.span(),
                    format!("is from 1 to {max}"),
                ))
            }
        };
        Ok(QueueRules {
            auto_enqueue: raw.auto_enqueue.unwrap_or(d.auto_enqueue),
            batch_size: bounded("batch_size", raw.batch_size, 100, d.batch_size)?,
            depth: bounded("depth", raw.depth, 64, d.depth)?,
            lanes: raw.lanes.unwrap_or(d.lanes),
        })
    }

    /// `workspace.ignore`: distinct gitignore patterns that compile.
    fn ignore_list(&self, raw: Option<Vec<Spanned<String>>>) -> Result<IgnoreList, PolicyError> {
        let Some(patterns) = raw else {
            return Ok(IgnoreList::default());
        };
        no_duplicates(self, "workspace.ignore", &patterns)?;
        let spans: Vec<Range<usize>> = patterns.iter().map(Spanned::span).collect();
        let written: Vec<String> = patterns.into_iter().map(Spanned::into_inner).collect();
        IgnoreList::new(written.clone()).map_err(|(i, reason)| {
            let (line, column) = line_column(self.text, spans[i].start);
            PolicyError::Glob {
                glob: written[i].clone(),
                reason,
                key: Some(format!("workspace.ignore[{i}]")),
                line: Some(line),
                column: Some(column),
            }
        })
    }
}

// The document as written: spans kept where a later check may refuse a value.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    version: Spanned<i64>,
    #[serde(default)]
    approvals: RawApprovals,
    #[serde(default)]
    roles: Vec<RawRoleRule>,
    #[serde(default)]
    security_review: RawGate,
    #[serde(default)]
    human_approval: RawGate,
    checks: Option<Spanned<RawChecks>>,
    #[serde(default)]
    secrets: RawSecrets,
    #[serde(default)]
    workspace: RawWorkspace,
    #[serde(default)]
    queue: RawQueue,
    #[serde(default)]
    people: RawPeople,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawPeople {
    security: Option<Vec<Spanned<roundtable_base::id::Id>>>,
    approve: Option<Vec<Spanned<roundtable_base::id::Id>>>,
    policy: Option<Vec<Spanned<roundtable_base::id::Id>>>,
    revert: Option<Vec<Spanned<roundtable_base::id::Id>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawQueue {
    auto_enqueue: Option<bool>,
    batch_size: Option<Spanned<u32>>,
    depth: Option<Spanned<u32>>,
    lanes: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheckCommand {
    command: Option<Vec<String>>,
    external: Option<bool>,
    timeout_s: Option<u32>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawWorkspace {
    ignore: Option<Vec<Spanned<String>>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawApprovals {
    minimum: Option<u32>,
    blocking_votes: Option<Vec<Spanned<VoteValue>>>,
    carry_over: Option<CarryOver>,
    eligible_roles: Option<Vec<Spanned<Role>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoleRule {
    paths: Spanned<Vec<Spanned<String>>>,
    role: Spanned<Role>,
    minimum: Option<Spanned<u32>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawGate {
    risk: Option<Vec<Spanned<Risk>>>,
    paths: Option<Vec<Spanned<String>>>,
    reverts: Option<bool>,
    loose_match: Option<bool>,
}

#[derive(Deserialize, Default)]
struct RawChecks {
    required: Option<Vec<Spanned<String>>>,
    carry_on_trivial_rebase: Option<bool>,
    /// Every other key is a `[checks.NAME]` table (no spans inside: a
    /// flattened map is buffered, so errors point at `[checks]`).
    #[serde(flatten)]
    commands: BTreeMap<String, RawCheckCommand>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSecrets {
    scan: Option<bool>,
}

fn no_duplicates<T: PartialEq + Serialize>(
    place: &Place<'_>,
    key: &str,
    items: &[Spanned<T>],
) -> Result<(), PolicyError> {
    for (i, item) in items.iter().enumerate() {
        if items[..i].iter().any(|e| e.get_ref() == item.get_ref()) {
            return Err(place.invalid(
                format!("{key}[{i}]"),
                item.span(),
                // The value as the document spells it (`"veto"`), never
                // Rust's debug form (`Veto`, `Role("x")`).
                format!(
                    "duplicate value {}",
                    serde_json::to_string(item.get_ref()).unwrap_or_default()
                ),
            ));
        }
    }
    Ok(())
}

impl Policy {
    /// Parse and validate a policy document.
    ///
    /// Refused: malformed TOML, an unknown key, a wrong type, an unknown
    /// spelling (`risk = ["hgih"]`), a bad glob, `version` other than 1, a
    /// `[[roles]]` rule without paths or with `minimum = 0`, `approve` or
    /// `approve_with_notes` as a blocking vote, a duplicate list entry or
    /// role rule, an empty check name.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let raw = Self::deserialize_raw(text)?;
        let place = Place { text };

        if *raw.version.get_ref() != i64::from(POLICY_VERSION) {
            return Err(place.invalid(
                "version".into(),
                raw.version.span(),
                format!(
                    "unsupported policy version {}; this roundtable reads version {POLICY_VERSION}",
                    raw.version.get_ref()
                ),
            ));
        }

        let defaults = Policy::default();
        let approvals = place.approvals(raw.approvals, defaults.approvals)?;
        let roles = place.role_rules(raw.roles)?;
        let security_review = place.gate(
            "security_review",
            raw.security_review,
            defaults.security_review,
        )?;
        let human_approval = place.gate(
            "human_approval",
            raw.human_approval,
            defaults.human_approval,
        )?;
        let (checks_span, raw_checks) = match raw.checks {
            Some(c) => (c.span(), c.into_inner()),
            None => (0..0, RawChecks::default()),
        };
        let required = place.required_checks(raw_checks.required)?;
        let commands = place.check_commands(raw_checks.commands, &required, checks_span)?;
        let ignore = place.ignore_list(raw.workspace.ignore)?;
        let queue = place.queue(raw.queue)?;
        let people = place.people(raw.people)?;

        Ok(Policy {
            version: POLICY_VERSION,
            approvals,
            roles,
            security_review,
            human_approval,
            checks: Checks {
                required,
                carry_on_trivial_rebase: raw_checks.carry_on_trivial_rebase.unwrap_or(false),
                commands,
            },
            secrets: Secrets {
                scan: raw.secrets.scan.unwrap_or(defaults.secrets.scan),
            },
            workspace: WorkspaceRules { ignore },
            queue,
            people,
        })
    }

    fn deserialize_raw(text: &str) -> Result<RawPolicy, PolicyError> {
        let de = toml::Deserializer::parse(text).map_err(|e| toml_error(text, &e, None))?;
        serde_path_to_error::deserialize::<_, RawPolicy>(de).map_err(|e| {
            // `Spanned` values add a private segment to the path; it is not a key.
            let path = e
                .path()
                .to_string()
                .replace(".$__serde_spanned_private_value", "");
            let key = (!path.is_empty() && path != ".").then_some(path);
            toml_error(text, e.inner(), key)
        })
    }
}

fn toml_error(text: &str, e: &toml::de::Error, key: Option<String>) -> PolicyError {
    let (line, column) = match e.span() {
        Some(span) => {
            let (l, c) = line_column(text, span.start);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    let message = e.message().trim_end().to_owned();
    if let Some(rest) = message.strip_prefix("unknown field `") {
        if let Some((name, _)) = rest.split_once('`') {
            return PolicyError::UnknownKey {
                name: name.to_owned(),
                key,
                line,
                column,
            };
        }
    }
    PolicyError::Syntax {
        message,
        key,
        line,
        column,
    }
}
