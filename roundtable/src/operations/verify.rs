//! `provenance.verify`: whether a branch's history is the history
//! roundtable governed.
//!
//! The branch's first-parent history is read from the repository (each
//! commit's trailers and its note under `refs/notes/agent-trace`), the
//! rest from the store; the judgement is a pure function of the two
//! ([`judge`]). A commit counts as governed only when the store holds the
//! transaction its `Roundtable-Transaction` trailer names, that
//! transaction landed exactly this commit and is not undone, its
//! `transaction.applied` event is in the log, and for an apply its note is
//! the store's attribution record and its `Roundtable-Chain` trailer names
//! an event the log holds with that digest (so a copy of the repository
//! and a copy of the log can be checked against each other). The audit
//! log itself is checked as `events.verify` checks it. Trailers alone
//! prove nothing: anyone can write them.

use super::log::VerifyEvents;
use super::{Cx, Tool, ToolError};
use crate::landing::BranchCommit;
use crate::model::trace::{ChainPoint, TraceRecord};
use crate::model::{TransactionKind, TransactionStatus};
use crate::store;
use crate::ErrorCode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most commits one call walks.
pub const MAX_COMMITS: u32 = 100_000;

/// The most findings a report lists.
pub const MAX_FINDINGS: usize = 1000;

/// Arguments of `provenance.verify`.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "VerifyProvenanceArgs")]
pub struct VerifyProvenance {
    /// The branch (`main` or `refs/heads/main`); default: the workspace's
    /// landing branch.
    #[schemars(length(min = 1, max = 255))]
    pub branch: Option<String>,
    /// Check only the commits after this one (an id, a tag, `main~10`:
    /// what git resolves); default: the whole history.
    #[schemars(length(min = 1, max = 255))]
    pub since: Option<String>,
    /// At most this many commits, newest first (default and most 100000).
    pub limit: Option<super::args::Limit<MAX_COMMITS>>,
}

/// What is wrong with a commit, or with the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProvenanceProblem {
    /// The commit names no transaction: it was not landed by roundtable
    /// (a plain `git commit`, a merge, a push behind its back).
    NotGoverned,
    /// It names a transaction the store does not have (forged trailers,
    /// or another store's).
    UnknownTransaction,
    /// The transaction it names landed another commit.
    OtherCommit,
    /// The transaction it names did not land (failed, undone, or still
    /// applying).
    NotLanded,
    /// Its transaction has no `transaction.applied` event in the log.
    EventMissing,
    /// The commit has no note under `refs/notes/agent-trace`.
    NoteMissing,
    /// Its note is not the store's attribution record for it (rewritten,
    /// or not a record at all).
    NoteDiffers,
    /// The store has no attribution record for the transaction.
    RecordMissing,
    /// Its `Roundtable-Chain` trailer is missing, malformed, or names an
    /// event the log does not hold with that digest.
    ChainPoint,
    /// A transaction the store says landed on the branch is not in its
    /// history (the branch was rewritten).
    LandingMissing,
    /// The repository allows signers (`gpg.ssh.allowedSignersFile`) and
    /// the commit is not signed by one of them.
    Signature,
    /// The audit log does not verify (`events.verify`): an event was
    /// rewritten or removed, or a record has no event.
    Log,
}

/// One thing `provenance.verify` found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceFinding {
    /// What.
    pub problem: ProvenanceProblem,
    /// The commit (`null` for the log).
    pub commit: Option<String>,
    /// The transaction concerned, when one is named.
    pub transaction_id: Option<String>,
    /// Why, for people.
    pub message: String,
}

/// Result of `provenance.verify`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProvenanceReport {
    /// Whether nothing was found: every commit checked was governed, and
    /// the log verifies.
    pub valid: bool,
    /// The branch read (`refs/heads/main`).
    pub branch: String,
    /// How many commits were checked.
    pub checked: u64,
    /// How many of them were governed (found nothing wrong).
    pub governed: u64,
    /// Whether the history goes on past `limit` (not checked).
    pub truncated: bool,
    /// What was found, oldest commit first, at most 1000.
    pub findings: Vec<ProvenanceFinding>,
    /// Whether the audit log verifies (`events.verify`).
    pub log_valid: bool,
    /// Why it does not, when it does not.
    pub log_reason: Option<String>,
}

impl super::Request for VerifyProvenance {
    const TOOL: &'static str = "provenance.verify";
    const DESCRIPTION: &'static str = "Check that a branch's first-parent history (git mode) is the one roundtable governed: for every commit, the transaction its trailers name landed exactly it, its event is in the log, its note under refs/notes/agent-trace is the store's attribution record, and its Roundtable-Chain trailer is in the log; the log itself is checked as events.verify does. Lists each commit not governed and each disagreement; valid is false when anything was found.";
    const MUTATES: bool = false;
    const CALLERS: &'static [crate::actor::ActorKind] = &[
        crate::actor::ActorKind::Orchestrator,
        crate::actor::ActorKind::Human,
    ];
    type Output = ProvenanceReport;

    store_tool!();
}

/// What the store says of a transaction a commit names.
#[derive(Debug, Clone)]
pub struct TransactionFacts {
    /// Apply or rollback.
    pub kind: TransactionKind,
    /// Its status.
    pub status: TransactionStatus,
    /// The commit its landing recorded (`None`: files mode).
    pub commit: Option<String>,
    /// Its attribution record, when it has one (`Err`: unreadable).
    pub record: Option<Result<TraceRecord, String>>,
    /// Whether its `transaction.applied` event is in the log.
    pub applied_event: bool,
    /// For its commit's `Roundtable-Chain` trailer, the digest the log
    /// holds at that seq (`None`: no such event, or no trailer).
    pub chain_digest: Option<String>,
}

impl Tool for VerifyProvenance {
    unkeyed!();

    no_prep!();

    fn run(cx: &Cx<'_>, args: VerifyProvenance, (): ()) -> Result<ProvenanceReport, ToolError> {
        let landing = store::settings::landing(cx.tx)?;
        let branch = match (&args.branch, landing.branch_ref()) {
            (Some(b), _) if b.starts_with("refs/") => b.clone(),
            (Some(b), _) => format!("refs/heads/{b}"),
            (None, Some(b)) => b,
            (None, None) => {
                return Err(ToolError::invalid_argument(
                    "branch",
                    "landing mode is files: name the branch to verify",
                ))
            }
        };
        let limit = args.limit.map_or(MAX_COMMITS, |l| l.0) as usize;
        let (commits, truncated) =
            crate::landing::branch_history(cx.engine.root(), &branch, args.since.as_deref(), limit)
                .map_err(|e| match e {
                    crate::landing::LandingError::InvalidInput { field, reason } => {
                        ToolError::invalid_argument(field, reason)
                    }
                    e if e.code() == ErrorCode::Io => ToolError::not_found("branch", &branch),
                    e => ToolError::from(e),
                })?;
        let mut facts = Vec::with_capacity(commits.len());
        for c in &commits {
            facts.push(match transaction_of(c) {
                Some(id) => transaction_facts(cx.tx, id, c)?,
                None => None,
            });
        }
        let landed = if args.since.is_none() && !truncated {
            Some(store::settings::landed_on(cx.tx, &branch)?)
        } else {
            None
        };
        let log = <VerifyEvents as Tool>::run(
            cx,
            VerifyEvents {
                expected_head: None,
            },
            (),
        )?;
        let mut findings = Vec::new();
        let mut governed = 0u64;
        for (c, f) in commits.iter().zip(&facts).rev() {
            let found = judge(c, f.as_ref());
            if found.is_empty() {
                governed += 1;
            }
            findings.extend(found);
        }
        if let Some(landed) = landed {
            let on_branch: std::collections::HashSet<&str> =
                commits.iter().map(|c| c.id.as_str()).collect();
            for (id, commit) in landed {
                if !on_branch.contains(commit.as_str()) {
                    findings.push(ProvenanceFinding {
                        problem: ProvenanceProblem::LandingMissing,
                        commit: Some(commit.clone()),
                        transaction_id: Some(id.clone()),
                        message: format!("transaction {id} landed {commit} on {branch}, which its history no longer holds: the branch was rewritten"),
                    });
                }
            }
        }
        if !log.valid {
            findings.push(ProvenanceFinding {
                problem: ProvenanceProblem::Log,
                commit: None,
                transaction_id: None,
                message: format!(
                    "the audit log does not verify: {}",
                    log.reason.as_deref().unwrap_or("see log")
                ),
            });
        }
        findings.truncate(MAX_FINDINGS);
        Ok(ProvenanceReport {
            valid: findings.is_empty(),
            branch,
            checked: commits.len() as u64,
            governed,
            truncated,
            findings,
            log_valid: log.valid,
            log_reason: log.reason,
        })
    }
}

/// The one transaction a commit's `Roundtable-Transaction` trailer names
/// (blame's rule, [`super::provenance::named_transaction`]: none when the
/// commit names none, or more than one).
fn transaction_of(commit: &BranchCommit) -> Option<&str> {
    super::provenance::named_transaction(&commit.trailers).ok()
}

/// The commit's `Roundtable-Chain` trailer, read.
fn chain_of(commit: &BranchCommit) -> Option<ChainPoint> {
    commit
        .trailers
        .iter()
        .find(|(k, _)| k == "Roundtable-Chain")
        .and_then(|(_, v)| ChainPoint::parse_trailer(v))
}

/// What the store says of transaction `id` (`None`: it has none).
fn transaction_facts(
    tx: &store::sql::Tx<'_>,
    id: &str,
    commit: &BranchCommit,
) -> Result<Option<TransactionFacts>, ToolError> {
    let transaction = match crate::apply::load_transaction(tx, id) {
        Ok(t) => t,
        Err(e) if e.code() == ErrorCode::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let landing = store::settings::transaction_landing(tx, id)?;
    let chain_digest = match chain_of(commit) {
        Some(p) => store::events::digest_at(tx, p.seq)?,
        None => None,
    };
    Ok(Some(TransactionFacts {
        kind: transaction.kind,
        status: transaction.status,
        commit: landing.map(|l| l.new_id),
        record: store::traces::get(tx, id)?,
        applied_event: store::events::names(tx, "transaction.applied", id)?,
        chain_digest,
    }))
}

/// Everything wrong with `commit` given what the store says of the
/// transaction it names (`facts`; `None`: it names none, or one the store
/// does not have). Empty: it was governed.
pub fn judge(commit: &BranchCommit, facts: Option<&TransactionFacts>) -> Vec<ProvenanceFinding> {
    let mut found = judge_governance(commit, facts);
    if commit.signed == Some(false) {
        found.push(finding(
            commit,
            ProvenanceProblem::Signature,
            format!(
                "{} is not signed by a key gpg.ssh.allowedSignersFile allows",
                short(&commit.id)
            ),
        ));
    }
    found
}

/// A finding about `commit` (naming the transaction it names).
fn finding(
    commit: &BranchCommit,
    problem: ProvenanceProblem,
    message: String,
) -> ProvenanceFinding {
    ProvenanceFinding {
        problem,
        commit: Some(commit.id.clone()),
        transaction_id: transaction_of(commit).map(str::to_owned),
        message,
    }
}

/// [`judge`] but for the signature.
fn judge_governance(
    commit: &BranchCommit,
    facts: Option<&TransactionFacts>,
) -> Vec<ProvenanceFinding> {
    let id = transaction_of(commit);
    let (Some(t), Some(f)) = (id, facts) else {
        return vec![match id {
            None => finding(
                commit,
                ProvenanceProblem::NotGoverned,
                format!(
                    "{} ({:?}) names no roundtable transaction: it was not landed by roundtable",
                    short(&commit.id),
                    commit.summary
                ),
            ),
            Some(t) => finding(
                commit,
                ProvenanceProblem::UnknownTransaction,
                format!(
                    "{} names transaction {t}, which the store does not have: its trailers were written outside roundtable",
                    short(&commit.id)
                ),
            ),
        }];
    };
    let mut out = Vec::new();
    if f.commit.as_deref() != Some(commit.id.as_str()) {
        out.push(finding(
            commit,
            ProvenanceProblem::OtherCommit,
            format!(
                "transaction {t} landed {}, not {}: this commit borrows its trailers",
                f.commit.as_deref().unwrap_or("no commit"),
                short(&commit.id)
            ),
        ));
        return out;
    }
    if !matches!(
        f.status,
        TransactionStatus::Applied | TransactionStatus::RolledBack
    ) {
        out.push(finding(
            commit,
            ProvenanceProblem::NotLanded,
            format!(
                "transaction {t} is {}, yet its commit is on the branch",
                f.status.as_str()
            ),
        ));
    }
    if !f.applied_event {
        out.push(finding(
            commit,
            ProvenanceProblem::EventMissing,
            format!("the log has no transaction.applied event for {t}"),
        ));
    }
    if f.kind != TransactionKind::Apply {
        return out;
    }
    match (chain_of(commit), &f.chain_digest) {
        (Some(p), Some(d)) if *d == p.digest => {}
        (Some(p), _) => out.push(finding(
                commit,
            ProvenanceProblem::ChainPoint,
            format!(
                "its Roundtable-Chain trailer names event {} with {}, which the log does not hold: the log or the commit was rewritten",
                p.seq, p.digest
            ),
        )),
        (None, _) => out.push(finding(
                commit,
            ProvenanceProblem::ChainPoint,
            "it has no readable Roundtable-Chain trailer".to_owned(),
        )),
    }
    match (&f.record, &commit.note) {
        (None | Some(Err(_)), _) => out.push(finding(
            commit,
            ProvenanceProblem::RecordMissing,
            format!("the store has no readable attribution record for {t}"),
        )),
        (Some(Ok(_)), None) => out.push(finding(
            commit,
            ProvenanceProblem::NoteMissing,
            format!(
                "{} has no note under {}",
                short(&commit.id),
                crate::model::trace::NOTES_REF
            ),
        )),
        (Some(Ok(record)), Some(note)) => {
            let expected = record.at_commit(&commit.id);
            let same = serde_json::from_slice::<TraceRecord>(note).is_ok_and(|n| n == expected);
            if !same {
                out.push(finding(
                commit,
                    ProvenanceProblem::NoteDiffers,
                    format!(
                        "the note of {} is not the store's attribution record for {t}: it was rewritten",
                        short(&commit.id)
                    ),
                ));
            }
        }
    }
    out
}

/// A commit id's first 12 digits.
fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timestamp;
    use crate::model::trace::{Provenance, WrittenFile};

    fn record() -> TraceRecord {
        TraceRecord::for_landing(
            Provenance {
                proposal_id: "p".into(),
                revision: 1,
                transaction_id: "tx".into(),
                task_id: "t".into(),
                agent_id: "a".into(),
                chain: ChainPoint {
                    seq: 3,
                    digest: format!("sha256:{}", "0".repeat(64)),
                },
                evidence: vec![],
            },
            &crate::model::trace::Author::default(),
            Timestamp(0),
            "1",
            &[WrittenFile {
                path: "f",
                before: None,
                after: Some(b"x\n"),
            }],
        )
    }

    fn commit(note: Option<Vec<u8>>) -> BranchCommit {
        BranchCommit {
            id: "c".repeat(40),
            summary: "s".into(),
            signed: None,
            trailers: vec![
                ("Roundtable-Transaction".into(), "tx".into()),
                (
                    "Roundtable-Chain".into(),
                    format!("3 sha256:{}", "0".repeat(64)),
                ),
            ],
            note,
        }
    }

    fn facts() -> TransactionFacts {
        TransactionFacts {
            kind: TransactionKind::Apply,
            status: TransactionStatus::Applied,
            commit: Some("c".repeat(40)),
            record: Some(Ok(record())),
            applied_event: true,
            chain_digest: Some(format!("sha256:{}", "0".repeat(64))),
        }
    }

    fn problems(c: &BranchCommit, f: Option<&TransactionFacts>) -> Vec<ProvenanceProblem> {
        judge(c, f).into_iter().map(|f| f.problem).collect()
    }

    #[test]
    fn a_governed_commit_has_nothing_to_report() {
        let note = record().at_commit(&"c".repeat(40)).to_note();
        assert_eq!(problems(&commit(Some(note)), Some(&facts())), vec![]);
    }

    #[test]
    fn an_unsigned_commit_is_reported_when_signers_are_configured() {
        let note = record().at_commit(&"c".repeat(40)).to_note();
        let unsigned = BranchCommit {
            signed: Some(false),
            ..commit(Some(note.clone()))
        };
        assert_eq!(
            problems(&unsigned, Some(&facts())),
            vec![ProvenanceProblem::Signature]
        );
        let signed = BranchCommit {
            signed: Some(true),
            ..commit(Some(note))
        };
        assert_eq!(problems(&signed, Some(&facts())), vec![]);
    }

    #[test]
    fn each_disagreement_is_its_own_problem() {
        use ProvenanceProblem as P;
        let good = record().at_commit(&"c".repeat(40)).to_note();
        let plain = BranchCommit {
            trailers: vec![],
            ..commit(None)
        };
        assert_eq!(problems(&plain, None), vec![P::NotGoverned]);
        assert_eq!(problems(&commit(None), None), vec![P::UnknownTransaction]);
        let other = TransactionFacts {
            commit: Some("d".repeat(40)),
            ..facts()
        };
        assert_eq!(
            problems(&commit(Some(good.clone())), Some(&other)),
            vec![P::OtherCommit]
        );
        assert_eq!(
            problems(&commit(None), Some(&facts())),
            vec![P::NoteMissing]
        );
        let rewritten = String::from_utf8(good.clone())
            .expect("utf-8")
            .replace("\"a\"", "\"mallory\"")
            .into_bytes();
        assert_eq!(
            problems(&commit(Some(rewritten)), Some(&facts())),
            vec![P::NoteDiffers]
        );
        let no_event = TransactionFacts {
            applied_event: false,
            chain_digest: None,
            ..facts()
        };
        assert_eq!(
            problems(&commit(Some(good)), Some(&no_event)),
            vec![P::EventMissing, P::ChainPoint]
        );
    }
}
