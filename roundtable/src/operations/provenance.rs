//! `provenance.blame`: who wrote each line of a file at the tip of the
//! landing branch (issue 36, item 2). git says which commit each line
//! comes from (`git blame --porcelain`, through
//! [`crate::landing::blame_at_tip`]); the store says what governed that
//! commit. A commit counts as roundtable's only when the store has a
//! transaction whose recorded landing commit (`transaction_landings.new_id`)
//! is that very commit, landed, and the commit's own trailers name that
//! transaction: trailers alone are text anyone can write, so a commit made
//! with plain `git commit`, or with `Roundtable-*` trailers the store does
//! not back, is reported as not governed, with git's author and committer,
//! and why.
//!
//! The join is pure (`attribute`, `check_landing`, `named_transaction`,
//! `evidence`, over values); only the tool's `prepare` (git) and `run` (the
//! store's rows) read anything.

use super::args::PathArg;
use super::{Cx, Tool, ToolError};
use crate::apply::{TransactionKind, TransactionStatus};
use crate::landing::blame::{ranges, FileAtTip, FileBlame};
use crate::model::{Approval, SecurityReviewRecord, TestResult, Vote};
use crate::store;
use crate::store::settings::TransactionLanding;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Arguments of `provenance.blame`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "ProvenanceBlameArgs")]
pub struct BlameFile {
    /// The file, relative to the repository root, as it is at the tip of
    /// the landing branch.
    pub path: PathArg,
}

/// Result of `provenance.blame`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Blame {
    /// The landing branch (`refs/heads/main`).
    pub branch: String,
    /// The commit the branch was at: the file as blamed is this commit's.
    pub commit: String,
    /// The file.
    pub path: String,
    /// How many lines it has.
    pub line_count: u32,
    /// Its lines in order, consecutive lines from one commit grouped.
    pub ranges: Vec<BlameRange>,
    /// Each commit a range names, once, in id order.
    pub commits: Vec<BlamedCommit>,
}

/// Consecutive lines that come from one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BlameRange {
    /// The first line (1-based).
    pub start_line: u32,
    /// The last line (inclusive).
    pub end_line: u32,
    /// The commit they come from (one of `commits`).
    pub commit: String,
    /// Whether roundtable landed that commit (its `governed`).
    pub governed: bool,
    /// The lines' text, without line feeds (invalid UTF-8 replaced).
    pub lines: Vec<String>,
}

/// A commit lines come from: git's facts, and roundtable's when it landed
/// it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BlamedCommit {
    /// The commit id.
    pub id: String,
    /// git's author, `name <email>`.
    pub author: String,
    /// The author time, seconds since the epoch.
    pub author_time: i64,
    /// git's committer, `name <email>`.
    pub committer: String,
    /// The first line of its message.
    pub summary: String,
    /// Whether roundtable landed it: the store holds a landed transaction
    /// whose commit is this one, and this commit's trailers name it.
    pub governed: bool,
    /// Why it is not governed (`null` when it is).
    pub not_governed: Option<NotGoverned>,
    /// What governed it (`null` when it is not governed).
    pub landing: Option<Provenance>,
}

/// Why a commit does not count as landed by roundtable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotGoverned {
    /// Its message has no `Roundtable-Transaction` trailer (or more than
    /// one): made outside roundtable.
    NoTransaction,
    /// Its trailers name a transaction the store does not have, or one
    /// that landed no commit.
    UnknownTransaction,
    /// The transaction its trailers name landed another commit: the
    /// trailers were copied or forged.
    OtherCommit,
    /// The transaction its trailers name did not land (failed or undone).
    NotLanded,
}

/// What governed a commit roundtable landed, as the store has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Provenance {
    /// The proposal.
    pub proposal_id: String,
    /// The revision landed (for a rollback: the one rolled back).
    pub revision: u32,
    /// The transaction that landed the commit.
    pub transaction_id: String,
    /// `apply`, or `rollback` (a revert commit).
    pub kind: TransactionKind,
    /// The transaction's status now (`applied`, `rolled_back`, or
    /// `applying` while its outcome is being recorded).
    pub status: TransactionStatus,
    /// For a rollback: the transaction it rolled back.
    pub rollback_of: Option<String>,
    /// The proposal's author (an agent id).
    pub author_agent: String,
    /// The proposal's task.
    pub task_id: String,
    /// Who applied it (`orchestrator:host`).
    pub applied_by: String,
    /// The records that let it land, as the store has them: those the
    /// policy counted, which the commit's trailers name.
    pub evidence: Vec<LandingEvidence>,
}

/// One record that let a change land.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LandingEvidence {
    /// What kind of record.
    pub kind: EvidenceKind,
    /// The record's id.
    pub id: String,
    /// The revision it was given on.
    pub revision: u32,
    /// Who gave it: `agent:ID` (a vote), the reviewer (a security
    /// review), `human:ID` (an approval), who recorded it (a check).
    pub by: String,
    /// For a check: `NAME=STATUS` (`unit=passed`).
    pub check: Option<String>,
}

/// The kinds of record that let a change land (the same as an
/// attribution record names).
pub use crate::model::trace::EvidenceKind;

impl super::Request for BlameFile {
    const TOOL: &'static str = "provenance.blame";
    const DESCRIPTION: &'static str = "Who wrote each line of a file at the tip of the landing branch (git mode): ranges of lines with their commit; for a commit roundtable landed (the store's transaction for that exact commit), the proposal, revision, transaction, author agent, task and the evidence that let it land. Other commits (plain git, copied trailers) are governed: false. Files mode: invalid_argument.";
    const MUTATES: bool = false;
    type Output = Blame;

    store_tool!();
}

/// What `prepare` read from git.
pub(crate) struct Blamed {
    branch: String,
    file: FileBlame,
}

impl Tool for BlameFile {
    unkeyed!();

    type Prep = Blamed;

    fn prepare(
        engine: &crate::Engine,
        _actor: &crate::Actor,
        args: &Self,
    ) -> Result<Blamed, ToolError> {
        let landing = engine
            .store()
            .read(|tx| Ok::<_, ToolError>(store::settings::landing(tx)?))?;
        let Some(branch) = landing.branch_ref() else {
            return Err(ToolError::invalid_argument(
                "landing.mode",
                "blame needs git landing mode: in files mode roundtable commits nothing, so no line can be traced to a landing (workspace.configure sets git mode)",
            ));
        };
        let path = args.path.0.as_str();
        match crate::landing::blame_at_tip(engine.root(), &branch, path)? {
            FileAtTip::Blamed(file) => Ok(Blamed { branch, file }),
            FileAtTip::Missing => Err(ToolError::not_found("file", path)),
            FileAtTip::NotAFile => Err(ToolError::invalid_argument(
                "path",
                format!("{path} is not a file at the tip of {branch}"),
            )),
        }
    }

    fn run(cx: &Cx<'_>, args: BlameFile, prep: Blamed) -> Result<Blame, ToolError> {
        let mut records: BTreeMap<String, Records> = BTreeMap::new();
        let mut facts = BTreeMap::new();
        for (id, message) in &prep.file.messages {
            let trailers = crate::landing::trailers(message);
            let fact = match named_transaction(&trailers) {
                Err(why) => Err(why),
                Ok(tid) => landing_of(cx, id, tid, &trailers, &mut records)?,
            };
            facts.insert(id.clone(), fact);
        }
        let (ranges, commits) = attribute(&prep.file, &facts);
        Ok(Blame {
            branch: prep.branch,
            commit: prep.file.tip.clone(),
            path: args.path.0.as_str().to_owned(),
            line_count: u32::try_from(prep.file.porcelain.lines.len()).unwrap_or(u32::MAX),
            ranges,
            commits,
        })
    }
}

/// A proposal's evidence records.
struct Records {
    votes: Vec<Vote>,
    reviews: Vec<SecurityReviewRecord>,
    approvals: Vec<Approval>,
    tests: Vec<TestResult>,
}

/// What the store says of commit `commit`, whose trailers name
/// transaction `tid`.
fn landing_of(
    cx: &Cx<'_>,
    commit: &str,
    tid: &str,
    trailers: &[(String, String)],
    records: &mut BTreeMap<String, Records>,
) -> Result<Result<Provenance, NotGoverned>, ToolError> {
    let landing = store::settings::transaction_landing(cx.tx, tid)?;
    let status = match &landing {
        Some(_) => Some(crate::apply::load_transaction(cx.tx, tid)?),
        None => None,
    };
    if let Err(why) = check_landing(commit, landing.as_ref(), status.as_ref().map(|t| t.status)) {
        return Ok(Err(why));
    }
    let Some(transaction) = status else {
        return Ok(Err(NotGoverned::UnknownTransaction));
    };
    let Some(proposal) = store::proposals::proposal(cx.tx, &transaction.proposal_id)? else {
        return Ok(Err(NotGoverned::UnknownTransaction));
    };
    if !records.contains_key(&proposal.id) {
        let pid = proposal.id.as_str();
        records.insert(
            proposal.id.clone(),
            Records {
                votes: store::evidence::recorded_votes(cx.tx, pid)?,
                reviews: store::evidence::recorded_security_reviews(cx.tx, pid)?,
                approvals: store::evidence::recorded_approvals(cx.tx, pid)?,
                tests: store::evidence::recorded_test_results(cx.tx, pid)?,
            },
        );
    }
    let evidence = records
        .get(&proposal.id)
        .map(|r| evidence(trailers, r))
        .unwrap_or_default();
    Ok(Ok(Provenance {
        proposal_id: proposal.id.clone(),
        revision: transaction.revision,
        transaction_id: transaction.id.clone(),
        kind: transaction.kind,
        status: transaction.status,
        rollback_of: transaction.rollback_of.clone(),
        author_agent: proposal.author.clone(),
        task_id: proposal.task_id.clone(),
        applied_by: transaction.actor.to_string(),
        evidence,
    }))
}

/// The one transaction a commit's trailers name, or why none counts.
pub(crate) fn named_transaction(trailers: &[(String, String)]) -> Result<&str, NotGoverned> {
    let mut named = trailers
        .iter()
        .filter(|(k, _)| k == "Roundtable-Transaction")
        .map(|(_, v)| v.as_str());
    match (named.next(), named.next()) {
        (Some(tid), None) if !tid.is_empty() => Ok(tid),
        _ => Err(NotGoverned::NoTransaction),
    }
}

/// Whether the store's landing of the transaction a commit names is that
/// commit, landed: `landing` its row, `status` its transaction's.
pub(crate) fn check_landing(
    commit: &str,
    landing: Option<&TransactionLanding>,
    status: Option<TransactionStatus>,
) -> Result<(), NotGoverned> {
    let Some(landing) = landing else {
        return Err(NotGoverned::UnknownTransaction);
    };
    if landing.new_id != commit {
        return Err(NotGoverned::OtherCommit);
    }
    match status {
        // `applying`: its commit is on the branch, so its commit point
        // passed; its outcome is being recorded (or recovery will).
        Some(
            TransactionStatus::Applied
            | TransactionStatus::RolledBack
            | TransactionStatus::Applying,
        ) => Ok(()),
        Some(_) => Err(NotGoverned::NotLanded),
        None => Err(NotGoverned::UnknownTransaction),
    }
}

/// The evidence a landed commit's trailers name, as `records` (its
/// proposal's) hold it, in trailer order; a name the records lack is left
/// out.
fn evidence(trailers: &[(String, String)], records: &Records) -> Vec<LandingEvidence> {
    let mut out = Vec::new();
    for (key, value) in trailers {
        let Some(id) = crate::landing::blame::evidence_id(value) else {
            continue;
        };
        let found =
            match EvidenceKind::of_trailer_key(key) {
                Some(EvidenceKind::Vote) => {
                    records
                        .votes
                        .iter()
                        .find(|v| v.id == id)
                        .map(|v| LandingEvidence {
                            kind: EvidenceKind::Vote,
                            id: v.id.clone(),
                            revision: v.revision,
                            by: format!("agent:{}", v.agent_id),
                            check: None,
                        })
                }
                Some(EvidenceKind::SecurityReview) => records
                    .reviews
                    .iter()
                    .find(|r| r.id == id)
                    .map(|r| LandingEvidence {
                        kind: EvidenceKind::SecurityReview,
                        id: r.id.clone(),
                        revision: r.revision,
                        by: r.reviewer.to_string(),
                        check: None,
                    }),
                Some(EvidenceKind::HumanApproval) => records
                    .approvals
                    .iter()
                    .find(|a| a.id == id)
                    .map(|a| LandingEvidence {
                        kind: EvidenceKind::HumanApproval,
                        id: a.id.clone(),
                        revision: a.revision,
                        by: format!("human:{}", a.human_id),
                        check: None,
                    }),
                Some(EvidenceKind::Check) => {
                    records
                        .tests
                        .iter()
                        .find(|t| t.id == id)
                        .map(|t| LandingEvidence {
                            kind: EvidenceKind::Check,
                            id: t.id.clone(),
                            revision: t.revision,
                            by: t.recorded_by.to_string(),
                            check: Some(format!("{}={}", t.name, spelling(&t.status))),
                        })
                }
                None => None,
            };
        out.extend(found);
    }
    out
}

/// A value's JSON spelling (`passed`).
fn spelling(value: &impl Serialize) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `name <email>`.
fn person(name: &str, email: &str) -> String {
    format!("{name} <{email}>")
}

/// The blame of a file joined with what the store says of each commit
/// (`facts`, by commit id; a commit without an entry is not governed):
/// the ranges, and each commit once.
pub(crate) fn attribute(
    file: &FileBlame,
    facts: &BTreeMap<String, Result<Provenance, NotGoverned>>,
) -> (Vec<BlameRange>, Vec<BlamedCommit>) {
    let lines = &file.porcelain.lines;
    let governed = |id: &str| facts.get(id).is_some_and(Result::is_ok);
    let out_ranges = ranges(lines)
        .into_iter()
        .map(|r| BlameRange {
            start_line: r.start,
            end_line: r.end,
            governed: governed(&r.commit),
            lines: lines[(r.start as usize - 1)..(r.end as usize)]
                .iter()
                .map(|l| l.content.clone())
                .collect(),
            commit: r.commit,
        })
        .collect();
    let commits = file
        .porcelain
        .commits
        .iter()
        .map(|(id, c)| {
            let fact = facts
                .get(id)
                .cloned()
                .unwrap_or(Err(NotGoverned::NoTransaction));
            BlamedCommit {
                id: id.clone(),
                author: person(&c.author, &c.author_email),
                author_time: c.author_time,
                committer: person(&c.committer, &c.committer_email),
                summary: c.summary.clone(),
                governed: fact.is_ok(),
                not_governed: fact.as_ref().err().copied(),
                landing: fact.ok(),
            }
        })
        .collect();
    (out_ranges, commits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::landing::blame::{BlameCommit, BlamedLine, Porcelain};

    fn t(k: &str, v: &str) -> (String, String) {
        (k.to_owned(), v.to_owned())
    }

    fn landing(new_id: &str) -> TransactionLanding {
        TransactionLanding {
            branch: "refs/heads/main".into(),
            old_id: "0".repeat(40),
            new_id: new_id.into(),
            remote: None,
        }
    }

    #[test]
    fn only_one_transaction_trailer_names_a_transaction() {
        assert_eq!(named_transaction(&[]), Err(NotGoverned::NoTransaction));
        assert_eq!(
            named_transaction(&[
                t("Roundtable-Proposal", "p"),
                t("Roundtable-Transaction", "tx1")
            ]),
            Ok("tx1")
        );
        assert_eq!(
            named_transaction(&[
                t("Roundtable-Transaction", "a"),
                t("Roundtable-Transaction", "b")
            ]),
            Err(NotGoverned::NoTransaction)
        );
    }

    #[test]
    fn a_commit_is_governed_only_by_its_own_landed_transaction() {
        let c = "c".repeat(40);
        let applied = Some(TransactionStatus::Applied);
        assert_eq!(check_landing(&c, Some(&landing(&c)), applied), Ok(()));
        assert_eq!(
            check_landing(&c, Some(&landing(&c)), Some(TransactionStatus::RolledBack)),
            Ok(())
        );
        assert_eq!(
            check_landing(&c, None, None),
            Err(NotGoverned::UnknownTransaction)
        );
        assert_eq!(
            check_landing(&c, Some(&landing(&"d".repeat(40))), applied),
            Err(NotGoverned::OtherCommit)
        );
        for s in [TransactionStatus::Failed, TransactionStatus::Recovered] {
            assert_eq!(
                check_landing(&c, Some(&landing(&c)), Some(s)),
                Err(NotGoverned::NotLanded)
            );
        }
    }

    #[test]
    fn attribution_groups_lines_and_names_each_commit_once() {
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let line = |commit: &str, content: &str| BlamedLine {
            commit: commit.to_owned(),
            content: content.to_owned(),
        };
        let mut commits = BTreeMap::new();
        for id in [&a, &b] {
            commits.insert(
                id.clone(),
                BlameCommit {
                    author: "n".into(),
                    author_email: "e".into(),
                    summary: format!("s{}", &id[..1]),
                    ..BlameCommit::default()
                },
            );
        }
        let file = FileBlame {
            tip: b.clone(),
            porcelain: Porcelain {
                lines: vec![line(&a, "1"), line(&a, "2"), line(&b, "3"), line(&a, "4")],
                commits,
            },
            messages: BTreeMap::new(),
        };
        let provenance = Provenance {
            proposal_id: "p".into(),
            revision: 1,
            transaction_id: "tx".into(),
            kind: TransactionKind::Apply,
            status: TransactionStatus::Applied,
            rollback_of: None,
            author_agent: "alice".into(),
            task_id: "t".into(),
            applied_by: "orchestrator:host".into(),
            evidence: vec![],
        };
        let facts = BTreeMap::from([
            (a.clone(), Ok(provenance.clone())),
            (b.clone(), Err(NotGoverned::OtherCommit)),
        ]);
        let (ranges, commits) = attribute(&file, &facts);
        let spans: Vec<(u32, u32, bool, usize)> = ranges
            .iter()
            .map(|r| (r.start_line, r.end_line, r.governed, r.lines.len()))
            .collect();
        assert_eq!(spans, [(1, 2, true, 2), (3, 3, false, 1), (4, 4, true, 1)]);
        assert_eq!(ranges[0].lines, ["1", "2"]);
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0].landing, Some(provenance));
        assert_eq!(commits[0].author, "n <e>");
        assert_eq!(commits[1].not_governed, Some(NotGoverned::OtherCommit));
        assert!(!commits[1].governed && commits[1].landing.is_none());
    }
}
