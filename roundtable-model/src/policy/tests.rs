use super::*;
use crate::actor::Actor;
use crate::model::{FileState, FileSummary, TestStatus, Verdict};
use roundtable_base::id::Id;
use serde_json::json;

// ---------------------------------------------------------------- parsing

fn parse_err(text: &str) -> PolicyError {
    match Policy::parse(text) {
        Ok(p) => panic!("expected an error, parsed {p:?}"),
        Err(e) => e,
    }
}

fn glob(p: &str) -> PathGlob {
    PathGlob::new(p).expect("a valid glob")
}

#[test]
fn the_default_document_is_the_default_policy() {
    assert_eq!(Policy::parse(DEFAULT_POLICY_TOML), Ok(Policy::default()));
    // Every key but `version` is optional and defaults to the same values.
    assert_eq!(Policy::parse("version = 1\n"), Ok(Policy::default()));
    assert_eq!(
        Policy::parse("version = 1\n[approvals]\n[security_review]\n[human_approval]\n"),
        Ok(Policy::default())
    );
    let d = Policy::default();
    assert_eq!(d.approvals.minimum, 1);
    assert_eq!(
        d.approvals.blocking_votes,
        vec![VoteValue::Veto, VoteValue::Reject]
    );
    assert_eq!(d.approvals.carry_over, CarryOver::TrivialRebase);
    assert!(!d.checks.carry_on_trivial_rebase);
    assert!(d.approvals.eligible_roles.is_empty());
    assert!(d.roles.is_empty());
    assert_eq!(d.security_review.risk, vec![Risk::High, Risk::Critical]);
    assert_eq!(d.human_approval.risk, vec![Risk::Critical]);
    assert!(d.checks.required.is_empty());
    assert!(d.secrets.scan);
    assert!(d.workspace.ignore.is_empty());
}

#[test]
fn workspace_ignore_patterns_are_checked() {
    let e = parse_err("version = 1\n[workspace]\nignore = [\"ok/\", \"  \"]\n");
    assert!(matches!(e, PolicyError::Glob { .. }), "{e:?}");
    assert_eq!(details(&e)["key"], "workspace.ignore[1]");
    assert_eq!(e.line(), Some(3));
    let e = parse_err("version = 1\n[workspace]\nignore = [\"{a\"]\n");
    assert_eq!(details(&e)["key"], "workspace.ignore[0]", "{e:?}");
    let e = parse_err("version = 1\n[workspace]\nignore = [\"a\", \"a\"]\n");
    assert_eq!(details(&e)["key"], "workspace.ignore[1]", "{e:?}");
    let e = parse_err("version = 1\n[workspace]\nignores = []\n");
    assert!(matches!(e, PolicyError::UnknownKey { .. }), "{e:?}");
}

const FULL: &str = r#"
version = 1
[approvals]
minimum = 2
blocking_votes = ["veto", "reject", "revise"]
carry_over = "unchanged_resources"
eligible_roles = ["reviewer", "maintainer"]

[[roles]]
paths = ["src/auth/**", "**/*.pem"]
role = "security"

[[roles]]
paths = ["migrations/**"]
role = "dba"
minimum = 2

[security_review]
risk = ["critical"]
paths = ["infra/**"]

[human_approval]
risk = []
paths = [".github/workflows/**"]

[checks]
required = ["unit", "lint"]

[checks.e2e]
command = ["pytest", "-q", "tests/e2e"]
timeout_s = 120
env = { CI = "1" }

[secrets]
scan = false

[queue]
auto_enqueue = true
batch_size = 4
depth = 2
lanes = true

[workspace]
ignore = ["__pycache__/", "*.log", "!keep.log"]

[people]
security = ["carol"]
approve = []
"#;

#[test]
fn a_complete_document_parses_to_exact_values() {
    let p = Policy::parse(FULL).expect("valid");
    assert_eq!(
        p,
        Policy {
            version: 1,
            approvals: Approvals {
                minimum: 2,
                blocking_votes: vec![VoteValue::Veto, VoteValue::Reject, VoteValue::Revise],
                carry_over: CarryOver::UnchangedResources,
                eligible_roles: vec!["reviewer".into(), "maintainer".into()],
            },
            roles: vec![
                RoleRule {
                    paths: vec![glob("src/auth/**"), glob("**/*.pem")],
                    role: "security".into(),
                    minimum: 1,
                },
                RoleRule {
                    paths: vec![glob("migrations/**")],
                    role: "dba".into(),
                    minimum: 2,
                },
            ],
            security_review: Gate {
                risk: vec![Risk::Critical],
                paths: vec![glob("infra/**")],
                reverts: false,
                loose_match: false,
            },
            human_approval: Gate {
                risk: vec![],
                paths: vec![glob(".github/workflows/**")],
                reverts: false,
                loose_match: false,
            },
            checks: Checks {
                required: vec!["unit".into(), "lint".into()],
                carry_on_trivial_rebase: false,
                commands: [(
                    "e2e".to_owned(),
                    CheckCommand {
                        command: vec!["pytest".into(), "-q".into(), "tests/e2e".into()],
                        external: false,
                        timeout_s: 120,
                        env: [("CI".to_owned(), "1".to_owned())].into(),
                    },
                )]
                .into(),
            },
            secrets: Secrets { scan: false },
            queue: QueueRules {
                auto_enqueue: true,
                batch_size: 4,
                depth: 2,
                lanes: true,
            },
            workspace: WorkspaceRules {
                ignore: IgnoreList::new(vec![
                    "__pycache__/".into(),
                    "*.log".into(),
                    "!keep.log".into()
                ])
                .expect("valid patterns"),
            },
            people: People {
                security: Some(vec!["carol".into()]),
                approve: Some(vec![]),
                policy: None,
                revert: None,
            },
        }
    );
    let ignore = &p.workspace.ignore;
    assert!(ignore.is_ignored(std::path::Path::new("pkg/__pycache__"), true));
    assert!(!ignore.is_ignored(std::path::Path::new("pkg/__pycache__"), false));
    assert!(ignore.is_ignored(std::path::Path::new("a/b.log"), false));
    assert!(!ignore.is_ignored(std::path::Path::new("keep.log"), false));
    assert!(!ignore.is_ignored(std::path::Path::new("src/x.py"), false));
    assert_eq!(
        p.roles[0].requirement_id(),
        "role:security:src/auth/**,**/*.pem"
    );
    assert_eq!(
        serde_json::to_value(&p.roles[1]).expect("serializes"),
        json!({"paths": ["migrations/**"], "role": "dba", "minimum": 2})
    );
}

#[test]
fn an_unknown_key_is_named_with_its_line_and_column() {
    let e = parse_err("version = 1\n[approvals]\nminimun = 2\n");
    assert_eq!(e.code(), crate::ErrorCode::InvalidPolicy);
    assert_eq!(
        e,
        PolicyError::UnknownKey {
            name: "minimun".into(),
            key: Some("approvals.minimun".into()),
            line: Some(3),
            column: Some(1),
        }
    );
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 1, "key": "approvals.minimun", "name": "minimun"})
    );
    assert_eq!(
        e.to_string(),
        "policy line 3, column 1 at `approvals.minimun`: unknown key `minimun`"
    );

    let e = parse_err("version = 1\n[[roles]]\npaths = [\"a/**\"]\nrole = \"x\"\n  extra = 1\n");
    assert_eq!(
        details(&e),
        json!({"line": 5, "column": 3, "key": "roles[0].extra", "name": "extra"})
    );
    let e = parse_err("version = 1\n[secret]\nscan = true\n");
    assert_eq!(
        details(&e),
        json!({"line": 2, "column": 2, "key": "secret", "name": "secret"})
    );
}

#[test]
fn a_bad_glob_is_named() {
    let e = parse_err("version = 1\n[security_review]\npaths = [\"infra/**\", \"src/[a\"]\n");
    assert_eq!(
        e,
        PolicyError::Glob {
            glob: "src/[a".into(),
            reason: "unclosed character class; missing ']'".into(),
            key: Some("security_review.paths[1]".into()),
            line: Some(3),
            column: Some(22),
        }
    );
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 22, "key": "security_review.paths[1]", "glob": "src/[a"})
    );
    assert_eq!(e.code(), crate::ErrorCode::InvalidPolicy);
    let e = parse_err("version = 1\n[[roles]]\npaths = [\"\"]\nrole = \"security\"\n");
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 10, "key": "roles[0].paths[0]", "glob": ""})
    );
    let e = parse_err("version = 1\n[human_approval]\npaths = [\"/etc/**\"]\n");
    assert!(
        matches!(e, PolicyError::Glob { ref glob, .. } if glob == "/etc/**"),
        "{e:?}"
    );
}

#[test]
fn a_bad_enum_value_is_refused_with_its_place() {
    let e = parse_err("version = 1\n[security_review]\nrisk = [\"high\", \"hgih\"]\n");
    assert_eq!(
        e,
        PolicyError::Syntax {
            message: "unknown variant `hgih`, expected one of `low`, `normal`, `high`, `critical`"
                .into(),
            key: Some("security_review.risk[1]".into()),
            line: Some(3),
            column: Some(17),
        }
    );
    let e = parse_err("version = 1\n[approvals]\ncarry_over = \"always\"\n");
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 14, "key": "approvals.carry_over"})
    );
    let e = parse_err("version = 1\n[approvals]\nblocking_votes = [\"nope\"]\n");
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 19, "key": "approvals.blocking_votes[0]"})
    );
}

#[test]
fn other_malformed_documents_are_refused() {
    // Not TOML at all.
    let e = parse_err("version = 1\n[approvals\n");
    assert_eq!(details(&e), json!({"line": 2, "column": 11, "key": null}));
    // A wrong type.
    let e = parse_err("version = 1\n[approvals]\nminimum = \"one\"\n");
    assert_eq!(details(&e)["key"], "approvals.minimum");
    assert_eq!(e.line(), Some(3));
    let e = parse_err("version = 1\n[approvals]\nminimum = -1\n");
    assert_eq!(details(&e)["key"], "approvals.minimum");
    // No version, another version.
    let e = parse_err("[approvals]\nminimum = 1\n");
    assert_eq!(
        e,
        PolicyError::Syntax {
            message: "missing field `version`".into(),
            key: None,
            line: Some(1),
            column: Some(1),
        }
    );
    let e = parse_err("version = 2\n");
    assert_eq!(
        e,
        PolicyError::Invalid {
            message: "unsupported policy version 2; this roundtable reads version 1".into(),
            key: Some("version".into()),
            line: Some(1),
            column: Some(11),
        }
    );
    // Role labels are exact: no case folding, so an uppercase role is refused.
    let e = parse_err("version = 1\n[[roles]]\npaths = [\"a/**\"]\nrole = \"Security\"\n");
    assert_eq!(
        details(&e),
        json!({"line": 4, "column": 8, "key": "roles[0].role"})
    );
    let e = parse_err("version = 1\n[approvals]\neligible_roles = [\"reviewer \"]\n");
    assert_eq!(details(&e)["key"], "approvals.eligible_roles[0]");
    // A role rule needs paths and a positive minimum.
    let e = parse_err("version = 1\n[[roles]]\npaths = []\nrole = \"security\"\n");
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 9, "key": "roles[0].paths"})
    );
    let e = parse_err("version = 1\n[[roles]]\nrole = \"security\"\n");
    assert_eq!(details(&e)["key"], "roles[0]");
    let e = parse_err("version = 1\n[[roles]]\npaths = [\"a/**\"]\nrole = \"x\"\nminimum = 0\n");
    assert_eq!(
        details(&e),
        json!({"line": 5, "column": 11, "key": "roles[0].minimum"})
    );
    // An approving vote cannot block.
    let e = parse_err("version = 1\n[approvals]\nblocking_votes = [\"veto\", \"approve\"]\n");
    assert_eq!(
        e,
        PolicyError::Invalid {
            message: "an approving vote cannot be a blocking vote".into(),
            key: Some("approvals.blocking_votes[1]".into()),
            line: Some(3),
            column: Some(27),
        }
    );
    // Duplicates.
    let e = parse_err("version = 1\n[checks]\nrequired = [\"unit\", \"unit\"]\n");
    assert_eq!(
        details(&e),
        json!({"line": 3, "column": 21, "key": "checks.required[1]"})
    );
    let e = parse_err(
        "version = 1\n[[roles]]\npaths = [\"a/**\"]\nrole = \"x\"\n[[roles]]\npaths = [\"a/**\"]\nrole = \"x\"\nminimum = 2\n",
    );
    assert_eq!(
        details(&e),
        json!({"line": 7, "column": 8, "key": "roles[1].role"})
    );
    let e = parse_err("version = 1\n[security_review]\npaths = [\"a/**\", \"a/**\"]\n");
    assert_eq!(details(&e)["key"], "security_review.paths[1]");
    // A blank check name.
    let e = parse_err("version = 1\n[checks]\nrequired = [\" \"]\n");
    assert_eq!(details(&e)["key"], "checks.required[0]");
    // Every error has the policy code.
    assert_eq!(e.code(), crate::ErrorCode::InvalidPolicy);
}

#[test]
fn globs_match_paths_segment_by_segment() {
    let g = glob("src/auth/**");
    assert!(g.is_match("src/auth/login.rs"));
    assert!(g.is_match("src/auth/a/b.rs"));
    assert!(!g.is_match("src/authz/login.rs"));
    assert!(!g.is_match("SRC/auth/login.rs"));
    let g = glob("**/*.pem");
    assert!(g.is_match("key.pem"));
    assert!(g.is_match("deploy/certs/key.pem"));
    assert!(!g.is_match("key.pem.txt"));
    let g = glob("src/*.rs");
    assert!(g.is_match("src/lib.rs"));
    assert!(!g.is_match("src/a/lib.rs"));
}

// ------------------------------------------------------------- evaluation

/// A stand-in digest named `name` (the same name, the same digest).
fn fake(name: &str) -> crate::Digest {
    crate::Digest::of(name.as_bytes())
}

fn fs(digest: &str) -> Option<FileState> {
    Some(FileState {
        digest: fake(digest),
        executable: false,
        symlink: false,
        size: None,
    })
}

fn modify(path: &str, before: &str, after: &str) -> FileSummary {
    FileSummary {
        path: path.into(),
        operation: crate::model::OperationKind::Modify,
        other_path: None,
        before: fs(before),
        after: fs(after),
        matches: Vec::new(),
    }
}

fn rename(from: &str, to: &str, digest: &str) -> Vec<FileSummary> {
    vec![
        FileSummary {
            path: to.into(),
            operation: crate::model::OperationKind::Rename,
            other_path: Some(from.into()),
            before: fs(digest),
            after: fs(digest),
            matches: Vec::new(),
        },
        FileSummary {
            path: from.into(),
            operation: crate::model::OperationKind::RenamedAway,
            other_path: Some(to.into()),
            before: fs(digest),
            after: None,
            matches: Vec::new(),
        },
    ]
}

fn human(id: &str) -> Actor {
    Actor::human(Id::new(id).expect("a valid id"))
}

fn agent_actor(id: &str) -> Actor {
    Actor::agent(Id::new(id).expect("a valid id"))
}

/// Owned facts about one proposal; [`Fixture::input`] borrows them.
struct Fixture {
    author: String,
    risk: Risk,
    current: u32,
    revisions: Vec<(u32, String, Vec<FileSummary>)>,
    agents: Vec<(String, Vec<String>, bool)>,
    votes: Vec<(String, u32, String, VoteValue)>,
    reviews: Vec<(String, u32, Verdict, Actor)>,
    approvals: Vec<(String, u32, String)>,
    tests: Vec<(String, u32, String, TestStatus)>,
    added: Vec<(String, u32, String)>,
    /// Each revision's change id, where it is not its changeset digest.
    change_ids: Vec<(u32, String)>,
    /// The revisions the engine made by rebasing the one before.
    rebased: Vec<u32>,
    reverts: Option<String>,
}

impl Fixture {
    /// Proposal by `author` (a `reviewer`), revision 1 modifying `src/lib.rs`;
    /// agents `bob` (reviewer), `sec` (security), `off` (reviewer, disabled).
    fn new() -> Fixture {
        Fixture {
            author: "alice".into(),
            risk: Risk::Normal,
            current: 1,
            revisions: vec![(1, "sha256:c1".into(), vec![modify("src/lib.rs", "a", "b")])],
            agents: vec![
                (
                    "alice".into(),
                    vec!["reviewer".into(), "security".into()],
                    true,
                ),
                ("bob".into(), vec!["reviewer".into()], true),
                ("sec".into(), vec!["security".into()], true),
                (
                    "off".into(),
                    vec!["reviewer".into(), "security".into()],
                    false,
                ),
            ],
            votes: vec![],
            reviews: vec![],
            approvals: vec![],
            tests: vec![],
            added: vec![],
            change_ids: vec![],
            rebased: vec![],
            reverts: None,
        }
    }

    /// A new revision with `changeset_digest` that makes the change of
    /// revision `like` (a trivial rebase of it).
    fn rebase(&mut self, changeset_digest: &str, like: u32) -> &mut Fixture {
        let (_, digest, changeset) = self
            .revisions
            .iter()
            .find(|r| r.0 == like)
            .cloned()
            .expect("the revision exists");
        let id = self.change_id(like, &digest);
        self.revise(changeset_digest, changeset);
        self.change_ids.push((self.current, id));
        self.rebased.push(self.current);
        self
    }

    fn change_id(&self, n: u32, digest: &str) -> String {
        self.change_ids
            .iter()
            .find(|c| c.0 == n)
            .map_or_else(|| format!("v2:change:{digest}"), |c| c.1.clone())
    }

    fn vote(&mut self, id: &str, revision: u32, agent: &str, vote: VoteValue) -> &mut Fixture {
        self.votes.push((id.into(), revision, agent.into(), vote));
        self
    }

    fn revise(&mut self, digest: &str, changeset: Vec<FileSummary>) -> &mut Fixture {
        self.current += 1;
        self.revisions
            .push((self.current, digest.into(), changeset));
        self
    }

    fn eval(&self, policy: &Policy) -> PolicyReport {
        self.with_input(|input| evaluate(policy, input))
    }

    fn plan(&self, policy: &Policy) -> Vec<RoleNeed> {
        self.with_input(|input| review_plan(policy, input))
    }

    fn with_input<T>(&self, f: impl FnOnce(&PolicyInput<'_>) -> T) -> T {
        let ids: Vec<String> = self
            .revisions
            .iter()
            .map(|(n, d, _)| self.change_id(*n, d))
            .collect();
        let revisions: Vec<RevisionInfo<'_>> = self
            .revisions
            .iter()
            .zip(&ids)
            .map(|((n, d, c), id)| RevisionInfo {
                number: *n,
                changeset_digest: d,
                changeset: c,
                change_id: Some(id.as_str()).filter(|s| !s.is_empty()),
                rebased_from: self.rebased.contains(n).then(|| n - 1),
            })
            .collect();
        let current = *revisions
            .iter()
            .find(|r| r.number == self.current)
            .expect("the current revision exists");
        let earlier: Vec<RevisionInfo<'_>> = revisions
            .iter()
            .filter(|r| r.number != self.current)
            .copied()
            .collect();
        let agents: Vec<AgentInfo<'_>> = self
            .agents
            .iter()
            .map(|(id, roles, enabled)| AgentInfo {
                id,
                roles,
                enabled: *enabled,
            })
            .collect();
        let votes: Vec<VoteInfo<'_>> = self
            .votes
            .iter()
            .map(|(id, revision, agent, vote)| VoteInfo {
                id,
                revision: *revision,
                agent_id: agent,
                vote: *vote,
            })
            .collect();
        let reviews: Vec<ReviewInfo<'_>> = self
            .reviews
            .iter()
            .map(|(id, revision, verdict, reviewer)| ReviewInfo {
                id,
                revision: *revision,
                verdict: *verdict,
                reviewer,
            })
            .collect();
        let approvals: Vec<ApprovalInfo<'_>> = self
            .approvals
            .iter()
            .map(|(id, revision, human_id)| ApprovalInfo {
                id,
                revision: *revision,
                human_id,
            })
            .collect();
        let tests: Vec<TestInfo<'_>> = self
            .tests
            .iter()
            .map(|(id, revision, name, status)| TestInfo {
                id,
                revision: *revision,
                name,
                status: *status,
            })
            .collect();
        let added: Vec<AddedLine<'_>> = self
            .added
            .iter()
            .map(|(path, line, text)| AddedLine {
                path,
                line: *line,
                text,
            })
            .collect();
        f(&PolicyInput {
            author: &self.author,
            risk: self.risk,
            revision: current,
            earlier_revisions: &earlier,
            agents: &agents,
            votes: &votes,
            security_reviews: &reviews,
            human_approvals: &approvals,
            test_results: &tests,
            added_lines: &added,
            reverts: self.reverts.as_deref(),
        })
    }
}

fn req<'r>(report: &'r PolicyReport, id: &str) -> &'r Requirement {
    let parsed = RequirementId::parse(id).unwrap_or_else(|| panic!("{id} is not an id"));
    report
        .requirement(&parsed)
        .unwrap_or_else(|| panic!("no requirement {id} in {report:#?}"))
}

fn status(report: &PolicyReport, id: &str) -> RequirementStatus {
    req(report, id).status
}

fn evidence(report: &PolicyReport, id: &str) -> Vec<String> {
    req(report, id).evidence.clone()
}

use RequirementStatus::{NotApplicable, Satisfied, Unsatisfied};

#[test]
fn the_default_policy_on_a_fresh_revision_reports_every_requirement() {
    let report = Fixture::new().eval(&Policy::default());
    assert_eq!(
        serde_json::to_value(&report).expect("serializes"),
        json!({
            "approvable": false,
            "requirements": [
                {
                    "id": "approvals", "status": "unsatisfied", "evidence": [],
                    "missing": "1 approval more on revision 1 from enabled agents other than the author (have 0 of 1)",
                    "candidates": ["bob", "sec"], "reasons": [], "paths": [], "findings": [], "carried": []
                },
                {
                    "id": "no_blocking_votes", "status": "satisfied", "evidence": [],
                    "missing": null, "candidates": [], "reasons": [], "paths": [], "findings": [], "carried": []
                },
                {
                    "id": "security_review", "status": "not_applicable", "evidence": [],
                    "missing": null, "candidates": [], "reasons": [], "paths": [], "findings": [], "carried": []
                },
                {
                    "id": "secrets", "status": "satisfied", "evidence": [],
                    "missing": null, "candidates": [], "reasons": ["scanned 0 added lines"],
                    "paths": [], "findings": [], "carried": []
                },
                {
                    "id": "human_approval", "status": "not_applicable", "evidence": [],
                    "missing": null, "candidates": [], "reasons": [], "paths": [], "findings": [], "carried": []
                }
            ]
        })
    );
}

#[test]
fn one_approval_from_another_enabled_agent_makes_it_approvable() {
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::ApproveWithNotes);
    let report = f.eval(&Policy::default());
    assert!(report.approvable);
    let r = req(&report, "approvals");
    assert_eq!(r.status, Satisfied);
    assert_eq!(r.evidence, vec!["V1"]);
    assert_eq!(r.missing, None);
    assert_eq!(r.candidates, vec!["sec"]);
}

#[test]
fn the_author_never_approves_their_own_proposal() {
    let mut f = Fixture::new();
    f.vote("V1", 1, "alice", VoteValue::Approve);
    let report = f.eval(&Policy::default());
    assert!(!report.approvable);
    let r = req(&report, "approvals");
    assert_eq!(r.status, Unsatisfied);
    assert!(r.evidence.is_empty());
    assert_eq!(r.candidates, vec!["bob", "sec"]);
    assert_eq!(
        r.reasons,
        vec!["vote V1 is by the author and does not count"]
    );
}

#[test]
fn a_disabled_or_unregistered_agent_does_not_count() {
    let mut f = Fixture::new();
    f.vote("V1", 1, "off", VoteValue::Approve)
        .vote("V2", 1, "ghost", VoteValue::Approve);
    let report = f.eval(&Policy::default());
    let r = req(&report, "approvals");
    assert_eq!(r.status, Unsatisfied);
    assert!(r.evidence.is_empty());
    assert_eq!(
        r.reasons,
        vec![
            "vote V1 is by disabled agent off and does not count",
            "vote V2 is by unregistered agent ghost and does not count",
        ]
    );
    // A disabled agent's veto does not block either.
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve)
        .vote("V2", 1, "off", VoteValue::Veto);
    let report = f.eval(&Policy::default());
    assert!(report.approvable);
    assert_eq!(status(&report, "no_blocking_votes"), Satisfied);
}

#[test]
fn a_later_vote_supersedes_the_same_agents_earlier_vote() {
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve)
        .vote("V2", 1, "bob", VoteValue::Revise);
    let report = f.eval(&Policy::default());
    assert_eq!(status(&report, "approvals"), Unsatisfied);
    assert_eq!(
        req(&report, "approvals").reasons,
        vec!["vote V1 is superseded by vote V2"]
    );

    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Veto)
        .vote("V2", 1, "bob", VoteValue::Approve);
    let report = f.eval(&Policy::default());
    assert!(report.approvable);
    assert_eq!(evidence(&report, "approvals"), vec!["V2"]);
    assert_eq!(status(&report, "no_blocking_votes"), Satisfied);
}

#[test]
fn a_veto_or_reject_blocks() {
    for (value, name) in [(VoteValue::Veto, "veto"), (VoteValue::Reject, "reject")] {
        let mut f = Fixture::new();
        f.vote("V1", 1, "bob", VoteValue::Approve)
            .vote("V2", 1, "sec", value);
        let report = f.eval(&Policy::default());
        assert!(!report.approvable);
        assert_eq!(status(&report, "approvals"), Satisfied);
        let r = req(&report, "no_blocking_votes");
        assert_eq!(r.status, Unsatisfied);
        assert_eq!(r.evidence, vec!["V2"]);
        assert_eq!(
            r.missing.as_deref(),
            Some(
                format!("blocking votes stand: {name} by sec (V2); the voters must change their vote, or the author revise")
                    .as_str()
            )
        );
    }
    // `revise` does not block by default, but a policy can make it.
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve)
        .vote("V2", 1, "sec", VoteValue::Revise);
    assert!(f.eval(&Policy::default()).approvable);
    let strict =
        Policy::parse("version = 1\n[approvals]\nblocking_votes = [\"revise\"]\n").expect("valid");
    assert_eq!(status(&f.eval(&strict), "no_blocking_votes"), Unsatisfied);
    // With no blocking votes configured the requirement does not apply.
    let lax = Policy::parse("version = 1\n[approvals]\nblocking_votes = []\n").expect("valid");
    f.vote("V3", 1, "sec", VoteValue::Veto);
    let report = f.eval(&lax);
    assert_eq!(status(&report, "no_blocking_votes"), NotApplicable);
    assert!(report.approvable);
}

#[test]
fn minimum_zero_turns_approvals_off() {
    let p = Policy::parse("version = 1\n[approvals]\nminimum = 0\n").expect("valid");
    let report = Fixture::new().eval(&p);
    assert_eq!(status(&report, "approvals"), NotApplicable);
    assert!(report.approvable);
}

#[test]
fn eligible_roles_restrict_who_counts_toward_approvals() {
    let p =
        Policy::parse("version = 1\n[approvals]\nminimum = 1\neligible_roles = [\"security\"]\n")
            .expect("valid");
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    let report = f.eval(&p);
    let r = req(&report, "approvals");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.candidates, vec!["sec"]);
    assert_eq!(
        r.missing.as_deref(),
        Some("1 approval more on revision 1 from holders of security (have 0 of 1)")
    );
    f.vote("V2", 1, "sec", VoteValue::Approve);
    let report = f.eval(&p);
    assert_eq!(evidence(&report, "approvals"), vec!["V2"]);
    assert!(report.approvable);
}

/// Revision 1 approved by bob; revision 2 gets `changeset` with `digest`.
fn approved_then_revised(digest: &str, changeset: Vec<FileSummary>) -> Fixture {
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.revise(digest, changeset);
    f
}

#[test]
fn carry_over_never_drops_votes_on_earlier_revisions() {
    let never = Policy::parse("version = 1\n[approvals]\ncarry_over = \"never\"\n").expect("valid");
    // Even an identical changeset does not keep the approval.
    let f = approved_then_revised("sha256:c1", vec![modify("src/lib.rs", "a", "b")]);
    let report = f.eval(&never);
    let r = req(&report, "approvals");
    assert_eq!(r.status, Unsatisfied);
    assert!(r.evidence.is_empty());
    assert_eq!(
        r.reasons,
        vec!["votes by bob on revision 1 do not count: votes on revision 1 do not carry over (carry_over = \"never\")"]
    );
    assert_eq!(
        r.missing.as_deref(),
        Some(
            "1 approval more on revision 2 from enabled agents other than the author (have 0 of 1)"
        )
    );
    // A veto on revision 1 no longer blocks revision 2 either.
    let mut f = approved_then_revised("sha256:c2", vec![modify("src/lib.rs", "a", "c")]);
    f.vote("V2", 1, "sec", VoteValue::Veto);
    f.vote("V3", 2, "bob", VoteValue::Approve);
    let report = f.eval(&never);
    assert!(report.approvable);
    assert_eq!(evidence(&report, "approvals"), vec!["V3"]);
    // A vote on a later revision never counts for an earlier one.
    let mut f = Fixture::new();
    f.revise("sha256:c2", vec![modify("src/lib.rs", "a", "c")]);
    f.vote("V1", 2, "bob", VoteValue::Approve);
    f.current = 1;
    assert_eq!(status(&f.eval(&never), "approvals"), Unsatisfied);
}

#[test]
fn carry_over_trivial_rebase_keeps_every_kind_of_evidence_for_the_same_change() {
    let p = Policy::parse(
        "version = 1\n[human_approval]\nrisk = [\"high\"]\n[checks]\nrequired = [\"unit\"]\n",
    )
    .expect("valid");
    assert_eq!(p.approvals.carry_over, CarryOver::TrivialRebase);
    let mut f = Fixture::new();
    f.risk = Risk::High;
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.reviews.push((
        "S1".into(),
        1,
        Verdict::Pass,
        Actor::agent(Id::new("sec").expect("id")),
    ));
    f.approvals.push(("H1".into(), 1, "carol".into()));
    f.tests
        .push(("T1".into(), 1, "unit".into(), TestStatus::Passed));
    // Revision 2 is a rebase of revision 1: other base, same change.
    f.rebase("sha256:rebased", 1);
    let report = f.eval(&p);
    assert_eq!(evidence(&report, "approvals"), vec!["V1"]);
    assert_eq!(
        req(&report, "approvals").reasons,
        vec!["votes by bob on revision 1 carry over: rule engine_rebase: revision 2 is the engine's rebase of revision 1 and makes the same change with the same context in the same symbol (carry_over = \"trivial_rebase\")"]
    );
    assert_eq!(evidence(&report, "security_review"), vec!["S1"]);
    assert!(req(&report, "security_review").reasons.contains(
        &"security review S1 on revision 1 carries over: rule engine_rebase: revision 2 is the engine's rebase of revision 1 and makes the same change with the same context in the same symbol (carry_over = \"trivial_rebase\")".to_owned()
    ));
    assert_eq!(evidence(&report, "human_approval"), vec!["H1"]);
    // Check results do not carry unless the policy says so: they run again.
    assert_eq!(status(&report, "check:unit"), Unsatisfied);
    assert!(!report.approvable);
    let carry = Policy::parse(
        "version = 1\n[human_approval]\nrisk = [\"high\"]\n[checks]\nrequired = [\"unit\"]\ncarry_on_trivial_rebase = true\n",
    )
    .expect("valid");
    let report = f.eval(&carry);
    assert_eq!(evidence(&report, "check:unit"), vec!["T1"]);
    assert_eq!(
        req(&report, "check:unit").reasons,
        vec!["check result T1 on revision 1 carries over: rule engine_rebase: revision 2 is the engine's rebase of revision 1 and makes the same change with the same context in the same symbol (carry_over = \"trivial_rebase\")"]
    );
    assert!(report.approvable);
    // A result on the current revision wins over a carried one.
    f.tests
        .push(("T2".into(), 2, "unit".into(), TestStatus::Failed));
    assert_eq!(status(&f.eval(&carry), "check:unit"), Unsatisfied);

    // A chain of trivial rebases carries from its start; a different change
    // in between breaks it.
    f.rebase("sha256:again", 2);
    assert_eq!(evidence(&f.eval(&p), "approvals"), vec!["V1"]);
    let mut g = Fixture::new();
    g.vote("V1", 1, "bob", VoteValue::Approve);
    g.revise("sha256:other", vec![modify("src/lib.rs", "a", "z")]);
    g.rebase("sha256:back", 1);
    let report = g.eval(&p);
    assert!(evidence(&report, "approvals").is_empty());
    assert_eq!(
        req(&report, "approvals").reasons,
        vec!["votes by bob on revision 1 do not count: revisions 1 to 3 are not all the engine's rebases making the same change in the same place (carry_over = \"trivial_rebase\" carries only those)"]
    );
}

#[test]
fn carry_over_trivial_rebase_never_carries_from_a_revision_without_a_change_id() {
    let mut f = approved_then_revised("sha256:c2", vec![modify("src/lib.rs", "a", "b")]);
    // Both stored before change ids were recorded: `None` is no match.
    f.change_ids.push((1, String::new()));
    f.change_ids.push((2, String::new()));
    assert!(evidence(&f.eval(&Policy::default()), "approvals").is_empty());
}

#[test]
fn carry_over_identical_changeset_keeps_votes_only_for_the_same_changeset() {
    let p = Policy::parse("version = 1\n[approvals]\ncarry_over = \"identical_changeset\"\n")
        .expect("valid");
    let f = approved_then_revised("sha256:c1", vec![modify("src/lib.rs", "a", "b")]);
    let report = f.eval(&p);
    assert!(report.approvable);
    let r = req(&report, "approvals");
    assert_eq!(r.evidence, vec!["V1"]);
    assert_eq!(
        r.reasons,
        vec!["votes by bob on revision 1 carry over: revision 1 has the identical changeset"]
    );

    let f = approved_then_revised("sha256:c2", vec![modify("src/lib.rs", "a", "c")]);
    let report = f.eval(&p);
    assert!(!report.approvable);
    assert_eq!(
        req(&report, "approvals").reasons,
        vec!["votes by bob on revision 1 do not count: revision 1's changeset differs"]
    );

    // A carried veto blocks; a vote on the current revision supersedes it.
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Veto);
    f.revise("sha256:c1", vec![modify("src/lib.rs", "a", "b")]);
    f.vote("V2", 2, "sec", VoteValue::Approve);
    let report = f.eval(&p);
    assert_eq!(evidence(&report, "no_blocking_votes"), vec!["V1"]);
    assert!(!report.approvable);
    f.vote("V3", 2, "bob", VoteValue::Approve);
    let report = f.eval(&p);
    assert!(report.approvable);
    assert_eq!(evidence(&report, "approvals"), vec!["V3", "V2"]);
}

const SECURITY_RULE: &str = "version = 1
[approvals]
carry_over = \"unchanged_resources\"
[[roles]]
paths = [\"src/auth/**\"]
role = \"security\"
";

#[test]
fn carry_over_unchanged_resources_looks_at_the_reviewers_paths() {
    let p = Policy::parse(SECURITY_RULE).expect("valid");
    let rev1 = vec![
        modify("docs/readme.md", "d1", "d2"),
        modify("src/auth/login.rs", "l1", "l2"),
    ];
    let mut f = Fixture::new();
    f.revisions[0].2 = rev1;
    f.vote("V1", 1, "bob", VoteValue::Approve)
        .vote("V2", 1, "sec", VoteValue::Approve);
    assert!(f.eval(&p).approvable);

    // Revision 2 changes only the docs: the security reviewer's paths are
    // unchanged, so its approval carries; bob reviewed everything, so his
    // does not.
    f.revise(
        "sha256:c2",
        vec![
            modify("docs/readme.md", "d1", "d3"),
            modify("src/auth/login.rs", "l1", "l2"),
        ],
    );
    let report = f.eval(&p);
    assert_eq!(evidence(&report, "approvals"), vec!["V2"]);
    assert_eq!(status(&report, "role:security:src/auth/**"), Satisfied);
    assert_eq!(evidence(&report, "role:security:src/auth/**"), vec!["V2"]);
    assert!(report.approvable);
    assert_eq!(
        req(&report, "approvals").reasons,
        vec![
            "votes by bob on revision 1 do not count: changed since revision 1: docs/readme.md",
            "votes by sec on revision 1 carry over: the paths of the reviewer's roles are unchanged since revision 1",
        ]
    );

    // Revision 3 changes the auth file: the security approval stops counting.
    f.revise(
        "sha256:c3",
        vec![
            modify("docs/readme.md", "d1", "d3"),
            modify("src/auth/login.rs", "l1", "l3"),
        ],
    );
    let report = f.eval(&p);
    assert_eq!(status(&report, "role:security:src/auth/**"), Unsatisfied);
    assert!(evidence(&report, "approvals").is_empty());
    assert!(!report.approvable);

    // Revision 4 goes back to revision 1's changes exactly: both carry.
    f.revise(
        "sha256:c1",
        vec![
            modify("docs/readme.md", "d1", "d2"),
            modify("src/auth/login.rs", "l1", "l2"),
        ],
    );
    let report = f.eval(&p);
    assert_eq!(evidence(&report, "approvals"), vec!["V1", "V2"]);
    assert!(report.approvable);
}

#[test]
fn carry_over_unchanged_resources_counts_added_and_dropped_paths() {
    let p = Policy::parse(SECURITY_RULE).expect("valid");
    let mut f = approved_then_revised(
        "sha256:c2",
        vec![
            modify("src/lib.rs", "a", "b"),
            modify("src/new.rs", "n", "m"),
        ],
    );
    let report = f.eval(&p);
    assert!(evidence(&report, "approvals").is_empty());
    assert_eq!(
        req(&report, "approvals").reasons,
        vec!["votes by bob on revision 1 do not count: changed since revision 1: src/new.rs"]
    );
    // The mode counts as part of a change.
    f.revisions[1].2 = vec![{
        let mut m = modify("src/lib.rs", "a", "b");
        m.after = Some(FileState {
            digest: fake("b"),
            executable: true,
            symlink: false,
            size: Some(1),
        });
        m
    }];
    assert!(evidence(&f.eval(&p), "approvals").is_empty());
    // The size is not: it is only sometimes known.
    f.revisions[1].2 = vec![{
        let mut m = modify("src/lib.rs", "a", "b");
        m.after = Some(FileState {
            digest: fake("b"),
            executable: false,
            symlink: false,
            size: Some(1),
        });
        m
    }];
    assert_eq!(evidence(&f.eval(&p), "approvals"), vec!["V1"]);
}

#[test]
fn a_path_needing_the_security_role_waits_for_an_agent_with_it() {
    let p = Policy::parse(SECURITY_RULE).expect("valid");
    let mut f = Fixture::new();
    f.revisions[0].2 = vec![modify("src/auth/login.rs", "l1", "l2")];
    f.vote("V1", 1, "bob", VoteValue::Approve)
        // The author holds the security role, but does not count.
        .vote("V2", 1, "alice", VoteValue::Approve)
        // Neither does a disabled holder.
        .vote("V3", 1, "off", VoteValue::Approve);
    let report = f.eval(&p);
    assert!(!report.approvable);
    assert_eq!(status(&report, "approvals"), Satisfied);
    let r = req(&report, "role:security:src/auth/**");
    assert_eq!(r.status, Unsatisfied);
    assert!(r.evidence.is_empty());
    assert_eq!(r.candidates, vec!["sec"]);
    assert_eq!(r.paths, vec!["src/auth/login.rs"]);
    assert_eq!(r.reasons, vec!["touched paths match src/auth/**"]);
    assert_eq!(
        r.missing.as_deref(),
        Some("1 approval more on revision 1 from agents with the \"security\" role (have 0 of 1)")
    );

    f.vote("V4", 1, "sec", VoteValue::Approve);
    let report = f.eval(&p);
    assert!(report.approvable);
    let r = req(&report, "role:security:src/auth/**");
    assert_eq!(r.status, Satisfied);
    assert_eq!(r.evidence, vec!["V4"]);
    assert!(r.candidates.is_empty());
    assert_eq!(r.missing, None);
}

#[test]
fn a_role_rule_applies_only_to_matching_paths_on_either_side_of_a_rename() {
    let p = Policy::parse(SECURITY_RULE).expect("valid");
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    let report = f.eval(&p);
    assert_eq!(status(&report, "role:security:src/auth/**"), NotApplicable);
    assert!(report.approvable);
    // Moving a file out of src/auth touches src/auth.
    f.revisions[0].2 = rename("src/auth/keys.rs", "src/keys.rs", "k");
    let report = f.eval(&p);
    let r = req(&report, "role:security:src/auth/**");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.paths, vec!["src/auth/keys.rs"]);
}

#[test]
fn a_role_rule_with_no_holder_says_so() {
    let p =
        Policy::parse("version = 1\n[[roles]]\npaths = [\"db/**\"]\nrole = \"dba\"\nminimum = 2\n")
            .expect("valid");
    let mut f = Fixture::new();
    f.revisions[0].2 = vec![modify("db/schema.sql", "s1", "s2")];
    let report = f.eval(&p);
    let r = req(&report, "role:dba:db/**");
    assert_eq!(r.status, Unsatisfied);
    assert!(r.candidates.is_empty());
    assert_eq!(
        r.missing.as_deref(),
        Some("2 approvals more on revision 1 from agents with the \"dba\" role (have 0 of 2); no enabled agent other than the author holds it")
    );
}

#[test]
fn security_review_by_risk() {
    let mut f = Fixture::new();
    f.risk = Risk::High;
    f.vote("V1", 1, "bob", VoteValue::Approve);
    let report = f.eval(&Policy::default());
    assert!(!report.approvable);
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.reasons, vec!["risk is high"]);
    assert_eq!(r.candidates, vec!["sec"]);
    assert_eq!(
        r.missing.as_deref(),
        Some("a passing security review of revision 1 by a person or an agent with the \"security\" role")
    );
    assert_eq!(status(&report, "human_approval"), NotApplicable);

    // A review of another revision, or by the author, does not count.
    f.reviews
        .push(("S0".into(), 2, Verdict::Pass, agent_actor("sec")));
    f.reviews
        .push(("S1".into(), 1, Verdict::Pass, agent_actor("alice")));
    f.reviews
        .push(("S2".into(), 1, Verdict::Pass, agent_actor("bob")));
    let report = f.eval(&Policy::default());
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(
        r.reasons,
        vec![
            "risk is high",
            "review S1 by agent:alice does not count: the reviewer is not a person with the security role or an enabled, non-author agent with the \"security\" role",
            "review S2 by agent:bob does not count: the reviewer is not a person with the security role or an enabled, non-author agent with the \"security\" role",
        ]
    );

    f.reviews
        .push(("S3".into(), 1, Verdict::Pass, agent_actor("sec")));
    let report = f.eval(&Policy::default());
    assert!(report.approvable);
    assert_eq!(evidence(&report, "security_review"), vec!["S3"]);

    // Any failing review of the revision fails the gate.
    f.reviews
        .push(("S4".into(), 1, Verdict::Fail, human("carol")));
    let report = f.eval(&Policy::default());
    assert!(!report.approvable);
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.evidence, vec!["S4"]);
    assert_eq!(
        r.missing.as_deref(),
        Some("security review failed (S4): the author must revise")
    );
}

#[test]
fn security_review_by_path_and_a_failure_even_when_not_required() {
    let p = Policy::parse(
        "version = 1\n[security_review]\nrisk = []\npaths = [\"**/*.pem\", \"infra/**\"]\n",
    )
    .expect("valid");
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    assert_eq!(status(&f.eval(&p), "security_review"), NotApplicable);
    // A failing review applies the gate anyway.
    f.reviews
        .push(("S1".into(), 1, Verdict::Fail, human("carol")));
    let report = f.eval(&p);
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.reasons, vec!["a security review failed revision 1"]);
    f.reviews.clear();

    f.revisions[0].2 = vec![
        modify("certs/tls.pem", "p1", "p2"),
        modify("infra/main.tf", "t1", "t2"),
    ];
    let report = f.eval(&p);
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.paths, vec!["certs/tls.pem", "infra/main.tf"]);
    assert_eq!(
        r.reasons,
        vec![
            "path certs/tls.pem matches **/*.pem",
            "path infra/main.tf matches infra/**"
        ]
    );
    f.reviews
        .push(("S2".into(), 1, Verdict::Pass, human("carol")));
    let report = f.eval(&p);
    assert_eq!(status(&report, "security_review"), Satisfied);
    assert!(report.approvable);
}

#[test]
fn a_planted_private_key_forces_security_review() {
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.added
        .push(("src/lib.rs".into(), 3, "fn main() {}".into()));
    f.added.push((
        "src/lib.rs".into(),
        4,
        "const KEY: &str = \"-----BEGIN RSA PRIVATE KEY-----\";".into(),
    ));
    let report = f.eval(&Policy::default());
    assert!(!report.approvable);
    let finding = SecretFinding {
        path: "src/lib.rs".into(),
        line: 4,
        kind: SecretKind::PrivateKey,
    };
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.findings, vec![finding.clone()]);
    assert_eq!(
        r.reasons,
        vec!["private_key in an added line: src/lib.rs:4"]
    );
    assert_eq!(r.candidates, vec!["sec"]);
    let s = req(&report, "secrets");
    assert_eq!(s.status, Unsatisfied);
    assert_eq!(s.findings, vec![finding.clone()]);
    assert_eq!(s.paths, vec!["src/lib.rs"]);
    assert_eq!(
        s.missing.as_deref(),
        Some("1 secret in added lines: remove them, or have a security review pass revision 1")
    );
    // The report never carries the secret itself.
    let text = serde_json::to_string(&report).expect("serializes");
    assert!(!text.contains("BEGIN RSA"), "{text}");

    // A passing security review clears both.
    f.reviews
        .push(("S1".into(), 1, Verdict::Pass, agent_actor("sec")));
    let report = f.eval(&Policy::default());
    assert!(report.approvable);
    assert_eq!(evidence(&report, "security_review"), vec!["S1"]);
    assert_eq!(evidence(&report, "secrets"), vec!["S1"]);
    assert_eq!(
        req(&report, "secrets").reasons,
        vec![
            "scanned 2 added lines",
            "1 finding reviewed by a passing security review"
        ]
    );

    // With scanning off, nothing is found.
    f.reviews.clear();
    let off = Policy::parse("version = 1\n[secrets]\nscan = false\n").expect("valid");
    let report = f.eval(&off);
    assert!(report.approvable);
    assert_eq!(status(&report, "secrets"), NotApplicable);
    assert_eq!(status(&report, "security_review"), NotApplicable);
}

#[test]
fn a_gate_with_reverts_applies_to_reverts_only() {
    let p = Policy::parse("version = 1\n[human_approval]\nreverts = true\n").expect("valid");
    assert!(p.human_approval.reverts);
    assert!(!p.security_review.reverts);
    assert_eq!(
        p.human_approval.risk,
        vec![Risk::Critical],
        "other keys keep their defaults"
    );
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    assert!(f.eval(&p).approvable, "not a revert: not needed");
    f.reverts = Some("prop-1".into());
    let report = f.eval(&p);
    assert!(!report.approvable);
    let r = req(&report, "human_approval");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.reasons, vec!["it reverts proposal prop-1"]);
    // The built-in default does not ask for it.
    assert!(f.eval(&Policy::default()).approvable);
    let e = parse_err("version = 1\n[human_approval]\nreverts = \"yes\"\n");
    assert_eq!(e.code(), crate::ErrorCode::InvalidPolicy);
}

#[test]
fn a_gate_with_loose_match_applies_when_a_hunk_needed_a_loose_rung() {
    use crate::model::{MatchRung, MatchedHunk};
    let p = Policy::parse("version = 1\n[human_approval]\nloose_match = true\n").expect("valid");
    assert!(p.human_approval.loose_match);
    assert!(!p.security_review.loose_match);
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    let mut file = modify("src/a.rs", "a1", "a2");
    file.matches = vec![MatchedHunk {
        hunk: 1,
        rung: MatchRung::Exact,
        line: 3,
    }];
    f.revisions[0].2 = vec![file.clone()];
    assert!(f.eval(&p).approvable, "every hunk matched exactly");
    file.matches.push(MatchedHunk {
        hunk: 2,
        rung: MatchRung::TrailingWhitespace,
        line: 9,
    });
    f.revisions[0].2 = vec![file];
    let report = f.eval(&p);
    assert!(!report.approvable);
    let r = req(&report, "human_approval");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(
        r.reasons,
        vec!["hunk 2 of src/a.rs matched only at rung trailing_whitespace (line 9)"]
    );
    // The built-in default does not ask for it.
    assert!(f.eval(&Policy::default()).approvable);
    // A rebase making the same change keeps the gate, naming the revision
    // whose hunk was loose; another change does not.
    f.revise("sha256:c2", vec![modify("src/a.rs", "a1", "a3")]);
    f.change_ids = vec![(1, "same".into()), (2, "same".into())];
    f.vote("V2", 2, "bob", VoteValue::Approve);
    let report = f.eval(&p);
    let r = req(&report, "human_approval");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(
        r.reasons,
        vec!["hunk 2 of src/a.rs matched only at rung trailing_whitespace (line 9, in revision 1 whose change this one makes)"]
    );
    f.change_ids = vec![(1, "one".into()), (2, "other".into())];
    assert!(f.eval(&p).approvable);
}

#[test]
fn human_approval_by_risk_and_path_on_the_current_revision() {
    let mut f = Fixture::new();
    f.risk = Risk::Critical;
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.reviews
        .push(("S1".into(), 1, Verdict::Pass, human("carol")));
    let report = f.eval(&Policy::default());
    assert!(!report.approvable);
    let r = req(&report, "human_approval");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.reasons, vec!["risk is critical"]);
    assert_eq!(
        r.missing.as_deref(),
        Some("a person's approval of revision 1")
    );
    f.approvals.push(("H1".into(), 1, "carol".into()));
    let report = f.eval(&Policy::default());
    assert!(report.approvable);
    assert_eq!(evidence(&report, "human_approval"), vec!["H1"]);

    // An approval of an earlier revision does not count, whatever carries over.
    let p = Policy::parse(
        "version = 1\n[approvals]\ncarry_over = \"identical_changeset\"\n[human_approval]\nrisk = []\npaths = [\".github/workflows/**\"]\n",
    )
    .expect("valid");
    let mut f = Fixture::new();
    f.revisions[0].2 = vec![modify(".github/workflows/ci.yml", "w1", "w2")];
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.approvals.push(("H1".into(), 1, "carol".into()));
    assert!(f.eval(&p).approvable);
    let changeset = f.revisions[0].2.clone();
    f.revise("sha256:c1", changeset);
    let report = f.eval(&p);
    let r = req(&report, "human_approval");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.paths, vec![".github/workflows/ci.yml"]);
    assert_eq!(
        r.reasons,
        vec!["path .github/workflows/ci.yml matches .github/workflows/**"]
    );
    assert_eq!(status(&report, "approvals"), Satisfied);
}

#[test]
fn required_checks_need_their_latest_result_passed_on_the_revision() {
    let p =
        Policy::parse("version = 1\n[checks]\nrequired = [\"unit\", \"lint\"]\n").expect("valid");
    let mut f = Fixture::new();
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.tests
        .push(("T1".into(), 1, "unit".into(), TestStatus::Failed));
    f.tests
        .push(("T2".into(), 1, "unit".into(), TestStatus::Passed));
    f.tests
        .push(("T3".into(), 1, "lint".into(), TestStatus::Passed));
    f.tests
        .push(("T4".into(), 1, "lint".into(), TestStatus::Errored));
    f.tests
        .push(("T5".into(), 2, "lint".into(), TestStatus::Passed));
    let report = f.eval(&p);
    assert!(!report.approvable);
    let unit = req(&report, "check:unit");
    assert_eq!(unit.status, Satisfied);
    assert_eq!(unit.evidence, vec!["T2"]);
    let lint = req(&report, "check:lint");
    assert_eq!(lint.status, Unsatisfied);
    assert_eq!(lint.evidence, vec!["T4"]);
    assert_eq!(
        lint.missing.as_deref(),
        Some("check \"lint\" must pass on revision 1; its latest result (T4) is errored")
    );
    f.tests
        .push(("T6".into(), 1, "lint".into(), TestStatus::Passed));
    let report = f.eval(&p);
    assert!(report.approvable);
    assert_eq!(evidence(&report, "check:lint"), vec!["T6"]);

    // A check with no result, or a result of another name, is unsatisfied.
    f.tests = vec![("T1".into(), 1, "Unit".into(), TestStatus::Passed)];
    let report = f.eval(&p);
    let unit = req(&report, "check:unit");
    assert_eq!(unit.status, Unsatisfied);
    assert!(unit.evidence.is_empty());
    assert_eq!(
        unit.missing.as_deref(),
        Some("a passing \"unit\" result recorded for revision 1")
    );
    assert_eq!(
        report
            .requirements
            .iter()
            .map(|r| r.id.to_string())
            .collect::<Vec<_>>(),
        vec![
            "approvals",
            "no_blocking_votes",
            "security_review",
            "secrets",
            "human_approval",
            "check:unit",
            "check:lint"
        ]
    );
}

#[test]
fn the_review_plan_lists_needed_roles_and_who_can_fill_them() {
    let p = Policy::parse(SECURITY_RULE).expect("valid");
    let mut f = Fixture::new();
    assert_eq!(
        f.plan(&p),
        vec![RoleNeed {
            requirement: RequirementId::parse("approvals").expect("an id"),
            roles: vec![],
            minimum: 1,
            paths: vec![],
            candidates: vec!["bob".into(), "sec".into()],
        }]
    );
    f.revisions[0].2 = vec![modify("src/auth/login.rs", "l1", "l2")];
    f.risk = Risk::High;
    f.added.push((
        "keys/deploy".into(),
        1,
        "-----BEGIN OPENSSH PRIVATE KEY-----".into(),
    ));
    let plan = f.plan(&p);
    assert_eq!(
        plan,
        vec![
            RoleNeed {
                requirement: RequirementId::parse("approvals").expect("an id"),
                roles: vec![],
                minimum: 1,
                paths: vec![],
                candidates: vec!["bob".into(), "sec".into()],
            },
            RoleNeed {
                requirement: RequirementId::parse("role:security:src/auth/**").expect("an id"),
                roles: vec!["security".into()],
                minimum: 1,
                paths: vec!["src/auth/login.rs".into()],
                candidates: vec!["sec".into()],
            },
            RoleNeed {
                requirement: RequirementId::parse("security_review").expect("an id"),
                roles: vec!["security".into()],
                minimum: 1,
                paths: vec!["keys/deploy".into()],
                candidates: vec!["sec".into()],
            },
        ]
    );
    assert_eq!(
        serde_json::to_value(&plan[1]).expect("serializes"),
        json!({
            "requirement": "role:security:src/auth/**", "roles": ["security"], "minimum": 1,
            "paths": ["src/auth/login.rs"], "candidates": ["sec"]
        })
    );
}

#[test]
fn report_types_have_json_schemas() {
    let schema = serde_json::to_value(schemars::schema_for!(PolicyReport)).expect("serializes");
    let text = schema.to_string();
    for word in [
        "approvable",
        "requirements",
        "not_applicable",
        "findings",
        "private_key",
    ] {
        assert!(text.contains(word), "{word} missing from {text}");
    }
    let schema = serde_json::to_value(schemars::schema_for!(RoleNeed)).expect("serializes");
    assert!(schema.to_string().contains("candidates"));
    let schema = serde_json::to_value(schemars::schema_for!(Policy)).expect("serializes");
    assert!(schema.to_string().contains("unchanged_resources"));
}

#[test]
fn requirement_ids_read_back_from_their_spelling_and_nothing_else_is_one() {
    for id in [
        RequirementId::Approvals,
        RequirementId::Role("security:src/auth/**,docs/*".into()),
        RequirementId::NoBlockingVotes,
        RequirementId::SecurityReview,
        RequirementId::Secrets,
        RequirementId::HumanApproval,
        RequirementId::Check("unit".into()),
    ] {
        let spelled = id.to_string();
        assert_eq!(
            RequirementId::parse(&spelled),
            Some(id.clone()),
            "{spelled}"
        );
        let json = serde_json::to_value(&id).expect("serializes");
        assert_eq!(json, spelled.as_str());
        assert_eq!(
            serde_json::from_value::<RequirementId>(json).expect("reads"),
            id
        );
        assert!(id == spelled.as_str());
    }
    for bad in ["", "approval", "check", "role", "checks:unit"] {
        assert_eq!(RequirementId::parse(bad), None, "{bad:?}");
    }
}

/// Where an error is, as the top crate's `InvalidPolicyDetails` says it:
/// `{"line", "column", "key"}`, plus `"name"` for an unknown key and
/// `"glob"` for a bad glob; unknown places are `null`.
fn details(e: &PolicyError) -> serde_json::Value {
    match e {
        PolicyError::Syntax {
            key, line, column, ..
        }
        | PolicyError::Invalid {
            key, line, column, ..
        } => json!({"line": line, "column": column, "key": key}),
        PolicyError::UnknownKey {
            name,
            key,
            line,
            column,
        } => json!({"line": line, "column": column, "key": key, "name": name}),
        PolicyError::Glob {
            glob,
            key,
            line,
            column,
            ..
        } => json!({"line": line, "column": column, "key": key, "glob": glob}),
    }
}

#[test]
fn people_roles_parse_strictly() {
    let p = Policy::parse("version = 1\n[people]\nsecurity = [\"carol\"]\n").expect("valid");
    assert!(p.people.holds("carol", PersonRole::Security));
    assert!(!p.people.holds("dave", PersonRole::Security));
    // A role the table leaves out is every person's.
    assert!(p.people.holds("dave", PersonRole::Approve));
    assert!(p.people.holds("dave", PersonRole::Policy));
    assert_eq!(p.people.holders(PersonRole::Approve), None);
    // An empty list: nobody.
    let p = Policy::parse("version = 1\n[people]\napprove = []\n").expect("valid");
    assert!(!p.people.holds("carol", PersonRole::Approve));
    assert!(p.people.holds("carol", PersonRole::Revert));
    // `revert`: who may ask to undo an agent's work.
    let p = Policy::parse("version = 1\n[people]\nrevert = [\"olga\"]\n").expect("valid");
    assert!(p.people.holds("olga", PersonRole::Revert));
    assert!(!p.people.holds("carol", PersonRole::Revert));
    assert_eq!(
        p.people.named(PersonRole::Revert),
        Some(vec!["olga".into()])
    );
    let e = parse_err("version = 1\n[people]\nrevert = [\"olga\", \"olga\"]\n");
    assert!(e.to_string().contains("people.revert[1]"), "{e}");

    let e = parse_err("version = 1\n[people]\nreviewers = [\"carol\"]\n");
    assert_eq!(e.code(), ErrorCode::InvalidPolicy);
    assert!(e.to_string().contains("reviewers"), "{e}");
    let e = parse_err("version = 1\n[people]\nsecurity = [\"carol\", \"carol\"]\n");
    assert!(e.to_string().contains("people.security[1]"), "{e}");
    assert!(e.to_string().contains("duplicate"), "{e}");
    let e = parse_err("version = 1\n[people]\nsecurity = [\"\"]\n");
    assert!(e.to_string().contains("people.security"), "{e}");
    let e = parse_err("version = 1\n[people]\nsecurity = \"carol\"\n");
    assert!(e.to_string().contains("people.security"), "{e}");
}

#[test]
fn a_persons_review_or_approval_counts_only_while_they_hold_the_role() {
    let p = Policy::parse(
        "version = 1\n[human_approval]\nrisk = [\"high\"]\n[people]\nsecurity = [\"carol\"]\napprove = [\"erin\", \"carol\"]\n",
    )
    .expect("valid");
    let mut f = Fixture::new();
    f.risk = Risk::High;
    f.vote("V1", 1, "bob", VoteValue::Approve);
    f.reviews
        .push(("S1".into(), 1, Verdict::Pass, human("dave")));
    f.approvals.push(("H1".into(), 1, "dave".into()));
    let report = f.eval(&p);
    assert!(!report.approvable);
    let r = req(&report, "security_review");
    assert_eq!(r.status, Unsatisfied);
    assert!(r.evidence.is_empty());
    assert_eq!(r.people, Some(vec!["carol".to_owned()]));
    assert!(
        r.reasons
            .iter()
            .any(|x| x.contains("review S1 by human:dave does not count")),
        "{:?}",
        r.reasons
    );
    assert!(
        r.missing
            .as_deref()
            .is_some_and(|m| m.contains("human:carol")),
        "{r:?}"
    );
    let r = req(&report, "human_approval");
    assert_eq!(r.status, Unsatisfied);
    assert_eq!(r.people, Some(vec!["carol".to_owned(), "erin".to_owned()]));
    assert!(
        r.reasons
            .iter()
            .any(|x| x.contains("approval H1 by human:dave does not count")),
        "{:?}",
        r.reasons
    );
    assert_eq!(
        r.missing.as_deref(),
        Some(
            "an approval of revision 1 by a person with the approve role (human:carol, human:erin)"
        )
    );

    // The holders' evidence counts.
    f.reviews
        .push(("S2".into(), 1, Verdict::Pass, human("carol")));
    f.approvals.push(("H2".into(), 1, "erin".into()));
    let report = f.eval(&p);
    assert!(report.approvable, "{report:?}");
    assert_eq!(evidence(&report, "security_review"), vec!["S2"]);
    assert_eq!(evidence(&report, "human_approval"), vec!["H2"]);
    assert_eq!(req(&report, "security_review").people, None);

    // Without the table every person counts, as before (and `people` is absent).
    let open = Policy::parse("version = 1\n[human_approval]\nrisk = [\"high\"]\n").expect("valid");
    let mut f = Fixture::new();
    f.risk = Risk::High;
    f.vote("V1", 1, "bob", VoteValue::Approve);
    let report = f.eval(&open);
    assert_eq!(req(&report, "human_approval").people, None);
    assert_eq!(req(&report, "security_review").people, None);
    f.reviews
        .push(("S1".into(), 1, Verdict::Pass, human("dave")));
    f.approvals.push(("H1".into(), 1, "dave".into()));
    assert!(f.eval(&open).approvable);
}
