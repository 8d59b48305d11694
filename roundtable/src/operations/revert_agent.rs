//! `proposal.revert_agent`: one governed proposal undoing everything one
//! agent landed since a point in time, keeping every other agent's work.
//!
//! The undo is computed against the current files, path by path, with the
//! rebase engine's three-way merge: for each change the agent landed,
//! newest first, the change from the file as it left it (the base) to the
//! file as it found it (ours) is merged onto the file as it is now (or as
//! the newer undos left it: theirs). A stretch another agent edited since
//! (on or touching the agent's lines) is a conflict: it is left exactly as
//! the current file has it, and reported — in the result and in the new
//! proposal's summary — with its place in the current file, the reverted
//! proposal and the later landings by other agents on that file. Nothing is
//! silently kept or clobbered: a reviewer sees each one.
//!
//! What each landing changed is read exactly: in git mode from the landed
//! commit and its parent (each file as `git checkout` writes it), in files
//! mode from the apply's journal (its before snapshot and after contents).
//!
//! The callers are an orchestrator or a person holding the `revert` role
//! (`[people] revert`); agents are refused. The proposal needs an author,
//! and authors are agents (they claim, revise and ask for review), so the
//! caller names one: `author_agent_id`, an enabled agent other than the one
//! undone. The proposal is a revert for the policy (`reverts` names the
//! newest reverted proposal, so `reverts = true` gates apply) and its risk
//! is at least the highest of what it reverts. `disable: true` also
//! disables the agent in the same store transaction (as `agent.register`
//! with `enabled: false` does): its claims and open proposals freeze and
//! its votes stop counting, so it cannot land more while the undo is
//! reviewed.

use super::args::Title;
use super::details::{
    ConflictDetails, DatabaseDetails, PreconditionFailedDetails, PreconditionReason,
};
use super::proposals::{prepare_bytes, PreparedRevision};
use super::records::{Agent, Proposal, Revision, Risk};
use super::{Cx, Tool, ToolError};
use crate::actor::{Actor, ActorKind};
use crate::apply::{journal, JournalFile, Transaction, TransactionKind, TransactionStatus};
use crate::changeset::{Changeset, FileChange, FileContent, FileMeta, Operation};
use crate::clock::Timestamp;
use crate::diff::TreeFile;
use crate::engine::Engine;
use crate::id::Id;
use crate::merge::{line_count, map_lines, merge3_keeping_theirs};
use crate::model::RevisionFormat;
use crate::operations::records::{AgentRecord, ProposalRecord, RevisionRecord};
use crate::policy::PersonRole;
use crate::store::sql::Tx;
use crate::{store, RepoPath};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Arguments of `proposal.revert_agent`.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "RevertAgentArgs")]
pub struct RevertAgent {
    /// The agent whose landed work to undo.
    pub agent_id: Id,
    /// Undo what it landed at or after this time (RFC 3339, as every
    /// timestamp reads back: a transaction's `finished_at`).
    pub since: Timestamp,
    /// The new proposal's author: an enabled agent other than `agent_id`
    /// (it claims, revises and asks for review like any author).
    pub author_agent_id: Id,
    /// Its task (default: the newest reverted proposal's).
    pub task_id: Option<Id>,
    /// Its title (default: `Undo the work of <agent_id> since <since>`).
    pub title: Option<Title>,
    /// Its risk; never below the highest risk among the reverted
    /// proposals (a lower one is raised to it).
    pub risk: Option<Risk>,
    /// Also disable `agent_id`, in the same store transaction (default
    /// false).
    pub disable: Option<bool>,
    /// Makes a retried call return the first call's result.
    pub idempotency_key: Option<Id>,
}

/// One landing the undo reverts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RevertedLanding {
    /// The landed proposal.
    pub proposal_id: String,
    /// The revision that landed.
    pub revision: u32,
    /// The transaction that landed it.
    pub transaction_id: String,
    /// When it landed.
    pub landed_at: Timestamp,
}

/// A later landing, by another agent, of a file the undo conflicts in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LaterLanding {
    /// Its proposal.
    pub proposal_id: String,
    /// Its author.
    pub agent_id: String,
}

/// A stretch the undo leaves as the current file has it: the reverted
/// change's lines there were edited since.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UndoConflict {
    /// The file.
    pub path: String,
    /// The stretch's first line in the current file (1-based).
    pub line: u32,
    /// How many lines it spans there (0: they were deleted since; the
    /// stretch is the point before `line`).
    pub lines: u32,
    /// The reverted proposal whose change is not undone there.
    pub proposal_id: String,
    /// The landings by other agents of this file after it.
    pub later: Vec<LaterLanding>,
}

/// Result of `proposal.revert_agent`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct AgentReverted {
    /// The new proposal (pending).
    pub proposal: Proposal,
    /// Its revision: 1, the undo (`proposal.get` and `proposal.diff` read
    /// it).
    pub revision: u32,
    /// What it reverts, newest first.
    pub reverted: Vec<RevertedLanding>,
    /// Where it leaves the current file as it is (also in the summary).
    pub conflicts: Vec<UndoConflict>,
    /// Whether the agent was disabled by this call.
    pub disabled: bool,
}

impl super::Request for RevertAgent {
    const TOOL: &'static str = "proposal.revert_agent";
    const DESCRIPTION: &'static str = "Propose undoing what agent_id landed since `since`: one proposal (authored by author_agent_id) whose revision 1 merges the inverse of each landing onto the current files; where other agents edited its lines since, the current text is kept and reported in conflicts and the summary. Risk at least the highest reverted; a revert for the policy. disable: also disable the agent. Orchestrator, or a person with the revert role.";
    const MUTATES: bool = true;
    const CALLERS: &'static [ActorKind] = &[ActorKind::Orchestrator, ActorKind::Human];
    type Output = AgentReverted;

    store_tool!();
}

/// One file as one landing found it and left it (`None`: absent).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Step {
    /// The file before the landing.
    pub before: Option<TreeFile>,
    /// The file after it.
    pub after: Option<TreeFile>,
}

/// One stretch of [`FileUndo`] left as it is: lines `start..end`
/// (0-based) of the current file, not undone for step `step`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Kept {
    pub step: usize,
    pub start: usize,
    pub end: usize,
}

/// The undo of one file: what it becomes, and where it was left as it is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FileUndo {
    pub result: Option<TreeFile>,
    pub kept: Vec<Kept>,
}

fn opaque(f: &TreeFile) -> bool {
    f.symlink || crate::changeset::render::is_binary(&f.data)
}

/// The undo of `steps` (one file's landings, newest first) on `current`:
/// each step's change from `after` back to `before` merged onto what the
/// newer steps left, conflicting stretches kept as they are. Pure.
pub(crate) fn undo_file(current: Option<&TreeFile>, steps: &[Step]) -> FileUndo {
    const EMPTY: &[u8] = b"";
    let mut now: Option<TreeFile> = current.cloned();
    let mut kept = Vec::new();
    // Lines `start..end` of `at` (an intermediate state) in the current file.
    let place = |at: &[u8], start: usize, end: usize| -> (usize, usize) {
        map_lines(at, current.map_or(EMPTY, |c| c.data.as_slice()), start, end)
    };
    for (i, step) in steps.iter().enumerate() {
        let (base, ours) = (step.after.as_ref(), step.before.as_ref());
        let theirs = now.as_ref();
        if ours == theirs {
            continue;
        }
        if base == theirs {
            now = ours.cloned();
            continue;
        }
        let whole = |t: Option<&TreeFile>| {
            let data = t.map_or(EMPTY, |t| t.data.as_slice());
            let (start, end) = place(data, 0, line_count(&String::from_utf8_lossy(data)));
            Kept {
                step: i,
                start,
                end,
            }
        };
        let text = |f: Option<&TreeFile>| f.is_none_or(|f| !opaque(f));
        match (base, ours, theirs) {
            (_, _, Some(t)) if text(base) && text(ours) && !opaque(t) => {
                let merged = merge3_keeping_theirs(
                    base.map_or(EMPTY, |b| b.data.as_slice()),
                    ours.map_or(EMPTY, |o| o.data.as_slice()),
                    &t.data,
                );
                for c in &merged.conflicts {
                    let start = c.theirs_line as usize - 1;
                    let (start, end) = place(&t.data, start, start + line_count(&c.theirs));
                    kept.push(Kept {
                        step: i,
                        start,
                        end,
                    });
                }
                // The mode goes back when the landing changed it and
                // nothing changed it since.
                let executable = match (base, ours) {
                    (Some(b), Some(o))
                        if b.executable != o.executable && t.executable == b.executable =>
                    {
                        o.executable
                    }
                    _ => t.executable,
                };
                now = if ours.is_none() && merged.conflicts.is_empty() && merged.data.is_empty() {
                    // It created the file, and nothing else is left in it.
                    None
                } else {
                    Some(TreeFile {
                        data: merged.data,
                        executable,
                        symlink: false,
                    })
                };
            }
            // Deleted since, re-created since, or a binary file or link
            // changed since: left as it is, whole.
            (_, _, t) => kept.push(whole(t)),
        }
    }
    FileUndo { result: now, kept }
}

/// One landing of the agent, its files as it found and left them.
pub(crate) struct Landed {
    transaction: Transaction,
    proposal: Proposal,
    files: Vec<(String, Step)>,
}

/// What `prepare` found and made.
pub(crate) struct Undo {
    /// The reverted landings, newest first (their transaction ids decide
    /// whether `run` sees the same ones).
    landed: Vec<RevertedLanding>,
    conflicts: Vec<UndoConflict>,
    revision_made: PreparedRevision,
}

/// `precondition_failed`, reason `nothing_to_revert`.
fn nothing(agent: &str, since: Timestamp, why: &str) -> ToolError {
    ToolError::new(
        format!("nothing to revert of agent {agent} since {since}: {why}"),
        PreconditionFailedDetails {
            reason: Some(PreconditionReason::NothingToRevert),
            ..PreconditionFailedDetails::default()
        },
    )
}

/// The landing time of an applied transaction.
fn landed_at(t: &Transaction) -> Timestamp {
    t.finished_at.unwrap_or(t.created_at)
}

/// Every applied (not rolled back) apply transaction, oldest first, with
/// its proposal.
fn applied(tx: &Tx<'_>) -> Result<Vec<(Transaction, Proposal)>, ToolError> {
    let all = store::transactions::list(tx, 0, None, Some(TransactionStatus::Applied), i64::MAX)?;
    let mut proposals: BTreeMap<String, Proposal> = BTreeMap::new();
    let mut out = Vec::new();
    for t in all.into_iter().filter(|t| t.kind == TransactionKind::Apply) {
        let p = match proposals.get(&t.proposal_id) {
            Some(p) => p.clone(),
            None => {
                let p = Proposal::load(tx, &t.proposal_id)?;
                proposals.insert(p.id.clone(), p.clone());
                p
            }
        };
        out.push((t, p));
    }
    Ok(out)
}

/// The agent's landings at or after `since`, newest first.
fn of_agent<'a>(
    all: &'a [(Transaction, Proposal)],
    agent: &str,
    since: Timestamp,
) -> Vec<&'a (Transaction, Proposal)> {
    all.iter()
        .rev()
        .filter(|(t, p)| p.author == agent && landed_at(t) >= since)
        .collect()
}

/// A stored blob, or a `database` error naming it.
fn blob(tx: &Tx<'_>, path: &str, digest: &crate::Digest) -> Result<Vec<u8>, ToolError> {
    store::verified_blob(tx, digest)?.map_err(|fault| {
        ToolError::new(
            format!("the content of {path} ({digest}) a landing journaled is {fault:?}"),
            DatabaseDetails {
                path: Some(path.to_owned()),
                ..DatabaseDetails::default()
            },
        )
    })
}

/// The before and after of each file a files-mode landing wrote, from its
/// journal.
fn from_journal(tx: &Tx<'_>, files: &[JournalFile]) -> Result<Vec<(String, Step)>, ToolError> {
    files
        .iter()
        .map(|f| {
            let side = |digest: &Option<crate::Digest>, exec: Option<bool>, link: Option<bool>| {
                digest
                    .as_ref()
                    .map(|d| {
                        Ok::<_, ToolError>(TreeFile {
                            data: blob(tx, &f.path, d)?,
                            executable: exec.unwrap_or(false),
                            symlink: link.unwrap_or(false),
                        })
                    })
                    .transpose()
            };
            Ok((
                f.path.clone(),
                Step {
                    before: side(&f.before_digest, f.before_executable, f.before_symlink)?,
                    after: side(&f.after_digest, f.after_executable, f.after_symlink)?,
                },
            ))
        })
        .collect()
}

/// The before and after of each file a git-mode landing wrote, from its
/// commit and the commit's parent (as `git checkout` writes them); `None`
/// when it landed no commit.
#[cfg(feature = "git")]
fn from_commit(
    engine: &Engine,
    tx: &Tx<'_>,
    t: &Transaction,
    files: &[JournalFile],
) -> Result<Option<Vec<(String, Step)>>, ToolError> {
    let Some(landing) = store::settings::transaction_landing(tx, &t.id)? else {
        return Ok(None);
    };
    let repo = crate::landing::open(engine.root())?;
    let bad = |what: &str| {
        ToolError::new(
            format!("the commit transaction {} landed: {what}", t.id),
            DatabaseDetails::default(),
        )
    };
    let commit = git2::Oid::from_str(&landing.new_id).map_err(|_| bad("not a commit id"))?;
    let parent = repo
        .find_commit(commit)
        .and_then(|c| c.parent_id(0))
        .map_err(|e| bad(&e.to_string()))?;
    let mut out = Vec::new();
    for f in files {
        let path: RepoPath = f.path.parse().map_err(|_| bad("an invalid path"))?;
        let side = |at| -> Result<Option<TreeFile>, ToolError> {
            Ok(
                crate::landing::worktree_file(&repo, at, &path)?.map(|c| TreeFile {
                    data: c.data,
                    executable: c.executable,
                    symlink: c.symlink,
                }),
            )
        };
        out.push((
            f.path.clone(),
            Step {
                before: side(parent)?,
                after: side(commit)?,
            },
        ));
    }
    Ok(Some(out))
}

/// A build without git reads every landing from its journal.
#[cfg(not(feature = "git"))]
fn from_commit(
    _engine: &Engine,
    _tx: &Tx<'_>,
    _t: &Transaction,
    _files: &[JournalFile],
) -> Result<Option<Vec<(String, Step)>>, ToolError> {
    Ok(None)
}

/// The summary a reviewer reads: what is reverted, and every stretch left
/// as it is.
fn summary(
    agent: &str,
    since: Timestamp,
    landed: &[RevertedLanding],
    conflicts: &[UndoConflict],
) -> String {
    let mut s = format!(
        "Undoes what agent `{agent}` landed since {since}, newest first, merged onto the current files.\n\nReverted:\n"
    );
    for l in landed {
        s.push_str(&format!(
            "- proposal {} (revision {}, transaction {}, landed {})\n",
            l.proposal_id, l.revision, l.transaction_id, l.landed_at
        ));
    }
    if conflicts.is_empty() {
        s.push_str("\nNo conflicts: no other agent edited these lines since.\n");
        return s;
    }
    s.push_str(&format!(
        "\n**{} conflict(s)**: other agents edited these lines since; they are left as the current files have them (not undone):\n",
        conflicts.len()
    ));
    for c in conflicts {
        let place = if c.lines == 0 {
            format!("before line {}", c.line)
        } else {
            format!("lines {}-{}", c.line, c.line + c.lines - 1)
        };
        let later: Vec<String> = c
            .later
            .iter()
            .map(|l| format!("{} by {}", l.proposal_id, l.agent_id))
            .collect();
        s.push_str(&format!(
            "- `{}` {place}: proposal {} not undone there; later landings of the file: {}\n",
            c.path,
            c.proposal_id,
            if later.is_empty() {
                "none recorded".to_owned()
            } else {
                later.join(", ")
            }
        ));
    }
    s
}

/// `forbidden` (`missing_role`) for a person without the `revert` role.
fn require_role(cx: &Cx<'_>) -> Result<(), ToolError> {
    cx.require_person_role(PersonRole::Revert)
}

/// The agents named: `agent_id` registered, `author_agent_id` another,
/// enabled agent.
fn check_agents(tx: &Tx<'_>, args: &RevertAgent) -> Result<(Agent, Agent), ToolError> {
    let agent = Agent::load(tx, args.agent_id.as_str())?
        .ok_or_else(|| ToolError::not_found("agent", args.agent_id.as_str()))?;
    if args.author_agent_id == args.agent_id {
        return Err(ToolError::invalid_argument(
            "author_agent_id",
            "names the agent being undone; name another agent",
        ));
    }
    let author = Agent::load(tx, args.author_agent_id.as_str())?
        .ok_or_else(|| ToolError::not_found("agent", args.author_agent_id.as_str()))?;
    if !author.enabled {
        return Err(ToolError::invalid_argument(
            "author_agent_id",
            format!("agent {} is disabled", author.id),
        ));
    }
    Ok((agent, author))
}

impl Tool for RevertAgent {
    type Prep = Undo;

    keyed!();

    fn prepare(engine: &Engine, actor: &Actor, args: &RevertAgent) -> Result<Undo, ToolError> {
        let agent = args.agent_id.as_str();
        let (landed, later) = super::read_cx(engine, actor, |cx| {
            require_role(cx)?;
            check_agents(cx.tx, args)?;
            let all = applied(cx.tx)?;
            let mine = of_agent(&all, agent, args.since);
            let Some(oldest) = mine.last().map(|(t, _)| t.seq) else {
                return Err(nothing(
                    agent,
                    args.since,
                    "it landed no change then that is still applied",
                ));
            };
            let mut landed = Vec::new();
            for (t, p) in &mine {
                let files = journal(cx.tx, &t.id)?;
                let files = match from_commit(engine, cx.tx, t, &files)? {
                    Some(files) => files,
                    None => from_journal(cx.tx, &files)?,
                };
                landed.push(Landed {
                    transaction: t.clone(),
                    proposal: p.clone(),
                    files,
                });
            }
            // Other agents' landings since the oldest reverted one, by
            // path: who built on the agent's files.
            let mut later: BTreeMap<String, Vec<(i64, LaterLanding)>> = BTreeMap::new();
            for (t, p) in all
                .iter()
                .filter(|(t, p)| t.seq > oldest && p.author != agent)
            {
                for f in journal(cx.tx, &t.id)? {
                    later.entry(f.path).or_default().push((
                        t.seq,
                        LaterLanding {
                            proposal_id: p.id.clone(),
                            agent_id: p.author.clone(),
                        },
                    ));
                }
            }
            Ok((landed, later))
        })?;
        // Each path's steps, newest first.
        let mut by_path: BTreeMap<&str, Vec<(usize, &Step)>> = BTreeMap::new();
        for (i, l) in landed.iter().enumerate() {
            for (path, step) in &l.files {
                by_path.entry(path.as_str()).or_default().push((i, step));
            }
        }
        let mut files = Vec::new();
        let mut conflicts = Vec::new();
        for (path, steps) in &by_path {
            let repo_path: RepoPath = path.parse().map_err(|_| {
                ToolError::new(
                    format!("a journal names an invalid path {path:?}"),
                    DatabaseDetails {
                        path: Some((*path).to_owned()),
                        ..DatabaseDetails::default()
                    },
                )
            })?;
            let current = engine.workspace().read(&repo_path)?;
            let only: Vec<Step> = steps.iter().map(|(_, s)| (*s).clone()).collect();
            let undo = undo_file(current.as_ref(), &only);
            for k in &undo.kept {
                let l = &landed[steps[k.step].0];
                let later_here = later
                    .get(*path)
                    .map(|v| {
                        let mut seen = BTreeSet::new();
                        v.iter()
                            .filter(|(seq, _)| *seq > l.transaction.seq)
                            .filter(|(_, x)| seen.insert(x.proposal_id.clone()))
                            .map(|(_, x)| x.clone())
                            .collect()
                    })
                    .unwrap_or_default();
                conflicts.push(UndoConflict {
                    path: (*path).to_owned(),
                    line: u32::try_from(k.start + 1).unwrap_or(u32::MAX),
                    lines: u32::try_from(k.end - k.start).unwrap_or(u32::MAX),
                    proposal_id: l.proposal.id.clone(),
                    later: later_here,
                });
            }
            if undo.result == current {
                continue;
            }
            let operation = match (&current, &undo.result) {
                (None, _) => Operation::Create,
                (_, None) => Operation::Delete,
                _ => Operation::Modify,
            };
            files.push(FileChange {
                path: repo_path,
                operation,
                before: current.as_ref().map(FileMeta::of),
                after: undo.result.map(|r| FileContent {
                    data: r.data,
                    executable: r.executable,
                    symlink: r.symlink,
                }),
            });
        }
        let landed: Vec<RevertedLanding> = landed
            .iter()
            .map(|l| RevertedLanding {
                proposal_id: l.proposal.id.clone(),
                revision: l.transaction.revision,
                transaction_id: l.transaction.id.clone(),
                landed_at: landed_at(&l.transaction),
            })
            .collect();
        if files.is_empty() {
            return Err(nothing(
                agent,
                args.since,
                &if conflicts.is_empty() {
                    "the current files already hold what its landings found".to_owned()
                } else {
                    format!(
                        "every line it changed was edited since by others ({} conflicts)",
                        conflicts.len()
                    )
                },
            ));
        }
        let changeset = Changeset::new(files)
            .map_err(|e| ToolError::new(e.to_string(), DatabaseDetails::default()))?;
        let bytes = changeset.render_diff(engine.workspace())?;
        let revision_made = prepare_bytes(engine, RevisionFormat::Patch, bytes)?;
        Ok(Undo {
            landed,
            conflicts,
            revision_made,
        })
    }

    fn run(cx: &Cx<'_>, args: RevertAgent, prep: Undo) -> Result<AgentReverted, ToolError> {
        require_role(cx)?;
        let (agent, author) = check_agents(cx.tx, &args)?;
        // The same landings as when the undo was computed, else retry.
        let all = applied(cx.tx)?;
        let mine = of_agent(&all, &agent.id, args.since);
        let same = mine.len() == prep.landed.len()
            && mine
                .iter()
                .zip(&prep.landed)
                .all(|((t, _), l)| t.id == l.transaction_id);
        if !same {
            return Err(ToolError::new(
                format!(
                    "the landings of agent {} changed while the undo was prepared; retry",
                    agent.id
                ),
                ConflictDetails::default(),
            ));
        }
        let newest = &mine[0].1;
        let task_id = args
            .task_id
            .as_ref()
            .map_or(newest.task_id.as_str(), Id::as_str);
        if !store::agents::task_exists(cx.tx, task_id)? {
            return Err(ToolError::not_found("task", task_id));
        }
        let highest = mine
            .iter()
            .map(|(_, p)| p.risk)
            .max()
            .unwrap_or(newest.risk);
        let risk = args.risk.map_or(highest, |r| r.max(highest));
        // The declared resources: those of every reverted revision.
        let mut resources = BTreeSet::new();
        for (t, p) in &mine {
            let r = Revision::load(cx.tx, &p.id, t.revision)?;
            resources.extend(r.affected_resources);
        }
        let resources: Vec<String> = resources.into_iter().collect();
        let title = match &args.title {
            Some(t) => t.as_str().to_owned(),
            None => format!("Undo the work of {} since {}", agent.id, args.since)
                .chars()
                .take(200)
                .collect(),
        };
        let summary = summary(&agent.id, args.since, &prep.landed, &prep.conflicts);
        let (id, revision) = super::revert::insert_revert(
            cx,
            &super::revert::NewRevert {
                task_id,
                author: &author.id,
                title: &title,
                summary_md: &summary,
                risk,
                reverts: &newest.id,
                reverted_revision: mine[0].0.revision,
                revision: &prep.revision_made,
                resources: &resources,
            },
        )?;
        let disabled = args.disable == Some(true) && agent.enabled;
        if disabled {
            super::setup::update_agent(
                cx,
                &agent,
                store::agents::AgentFields {
                    roles: &agent.roles,
                    enabled: false,
                    display_name: agent.display_name.as_deref(),
                    model_id: agent.model_id.as_deref(),
                    session_url: agent.session_url.as_deref(),
                },
            )?;
        }
        Ok(AgentReverted {
            proposal: Proposal::load(cx.tx, id.as_str())?,
            revision: revision.number,
            reverted: prep.landed,
            conflicts: prep.conflicts,
            disabled,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(s: &str) -> Option<TreeFile> {
        Some(TreeFile::regular(s.as_bytes().to_vec()))
    }

    fn step(before: &str, after: &str) -> Step {
        Step {
            before: file(before),
            after: file(after),
        }
    }

    fn text(u: &FileUndo) -> String {
        String::from_utf8(u.result.as_ref().expect("a file").data.clone()).expect("utf-8")
    }

    #[test]
    fn undoing_two_landings_keeps_the_lines_of_others() {
        // c changed b (first), then added x after d (second); someone else
        // changed f meanwhile.
        let steps = [
            step("a\nB\nc\nd\ne\nf\n", "a\nB\nc\nd\nx\ne\nf\n"),
            step("a\nb\nc\nd\ne\nf\n", "a\nB\nc\nd\ne\nf\n"),
        ];
        let now = file("a\nB\nc\nd\nx\ne\nF\n");
        let undo = undo_file(now.as_ref(), &steps);
        assert_eq!(text(&undo), "a\nb\nc\nd\ne\nF\n");
        assert!(undo.kept.is_empty());
    }

    #[test]
    fn a_line_edited_since_is_kept_and_placed_in_the_current_file() {
        // c changed b and e; later d edited c's B into B2 and added two
        // lines at the top.
        let steps = [step("a\nb\nc\nd\ne\nf\n", "a\nB\nc\nd\nE\nf\n")];
        let now = file("0\n1\na\nB2\nc\nd\nE\nf\n");
        let undo = undo_file(now.as_ref(), &steps);
        assert_eq!(text(&undo), "0\n1\na\nB2\nc\nd\ne\nf\n");
        assert_eq!(
            undo.kept,
            vec![Kept {
                step: 0,
                start: 3,
                end: 4
            }]
        );
    }

    #[test]
    fn a_file_it_created_goes_and_one_it_deleted_comes_back() {
        let created = Step {
            before: None,
            after: file("new\n"),
        };
        let undo = undo_file(file("new\n").as_ref(), std::slice::from_ref(&created));
        assert_eq!(undo.result, None);
        let deleted = Step {
            before: file("old\n"),
            after: None,
        };
        let undo = undo_file(None, std::slice::from_ref(&deleted));
        assert_eq!(undo.result, file("old\n"));
        // Re-created since by someone else: left as it is, whole.
        let undo = undo_file(file("other\n").as_ref(), &[deleted]);
        assert_eq!(undo.result, file("other\n"));
        assert_eq!(
            undo.kept,
            vec![Kept {
                step: 0,
                start: 0,
                end: 1
            }]
        );
    }

    #[test]
    fn conflicts_of_older_steps_are_placed_in_the_current_file() {
        // Oldest: c changed b to B. Then someone edited B to B2. Newest: c
        // inserted two lines at the top. Undoing the newest removes them;
        // the older one's stretch (B2) is line 3 of the current file.
        let steps = [
            step("a\nB2\nc\n", "n1\nn2\na\nB2\nc\n"),
            step("a\nb\nc\n", "a\nB\nc\n"),
        ];
        let undo = undo_file(file("n1\nn2\na\nB2\nc\n").as_ref(), &steps);
        assert_eq!(text(&undo), "a\nB2\nc\n");
        assert_eq!(
            undo.kept,
            vec![Kept {
                step: 1,
                start: 3,
                end: 4
            }]
        );
    }
}
