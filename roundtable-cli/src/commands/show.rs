//! `roundtable show`: a proposal — title, author, risk, status, each
//! policy requirement (✓/✗ with who satisfied it or who can) and the diff.

use crate::cli_util::{
    all_pages, esc, esc_join, events_after, next_line, open, reader, spelling, spinner,
    to_json_sorted, Common, Paint,
};
use crate::terminal;
use clap::Args;
use roundtable::operations::records::Proposal;
use roundtable::operations::review::NextActor;
use roundtable::policy::RequirementStatus;
use roundtable::session::{
    GetProposal, GetProposalStatus, NextRole, ProposalDiff, ProposalStatus, RequirementNext,
    Validate,
};
use roundtable::{Engine, ToolError};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

#[derive(Args)]
pub(crate) struct ShowArgs {
    /// The proposal id.
    proposal: String,
    /// The revision (default: the latest).
    #[arg(long)]
    revision: Option<u32>,
    #[command(flatten)]
    common: Common,
}

impl ShowArgs {
    pub(crate) fn common(&self) -> &Common {
        &self.common
    }
}

pub(crate) fn run(args: ShowArgs) -> Result<String, ToolError> {
    show(&args.proposal, args.revision, &args.common)
}

/// Who can still satisfy an unsatisfied requirement, as `show` words it:
/// the core decides who ([`RequirementNext`], from `proposal.status`);
/// this only says it for a person.
fn who_can(next: &NextActor, proposal: &str, revision: u32) -> Vec<String> {
    let agents = || {
        next.candidates
            .iter()
            .map(|c| format!("agent:{c}"))
            .collect()
    };
    let text = match next.actor {
        NextRole::Reviewer | NextRole::SecurityReviewer if !next.candidates.is_empty() => {
            return agents()
        }
        NextRole::Human => {
            format!("any person (roundtable approve {proposal} --revision {revision})")
        }
        NextRole::Author => "the author, with a new revision".to_owned(),
        NextRole::Orchestrator => "the orchestrator, recording the check (test.record)".to_owned(),
        NextRole::SecurityReviewer => "a person or an agent with the security role".to_owned(),
        NextRole::Reviewer => "no registered agent can: register a reviewer".to_owned(),
    };
    vec![text]
}

/// One policy requirement as `show` reports it.
#[derive(Serialize)]
struct RequirementView {
    id: String,
    status: RequirementStatus,
    /// Who made each piece of evidence (`agent:bob (vote-…)`); empty while
    /// unsatisfied.
    satisfied_by: Vec<String>,
    missing: Option<String>,
    /// Who can still satisfy it; empty unless unsatisfied.
    who_can: Vec<String>,
    evidence: Vec<String>,
}

/// One hunk's match, for the reviewer.
#[derive(Serialize)]
struct MatchView {
    path: String,
    hunk: u32,
    rung: roundtable::model::MatchRung,
    line: u32,
}

/// The data `show` prints, readable or as JSON.
#[derive(Serialize)]
struct ShowView {
    proposal: Proposal,
    /// The revision shown.
    revision: u32,
    latest_revision: u32,
    can_land: bool,
    stale: bool,
    /// The revision's validity; `null` when it was not evaluated.
    valid: Option<bool>,
    /// What the revision was submitted as (`patch`, `edit_plan`,
    /// `codex_patch`, `search_replace`).
    format: roundtable::model::RevisionFormat,
    /// Where each hunk of a Codex patch or SEARCH/REPLACE revision matched,
    /// and the rung it needed; empty for the other formats.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    matches: Vec<MatchView>,
    next: Vec<NextActor>,
    requirements: Vec<RequirementView>,
    /// The revision's diff, every page (a note for a section that is not
    /// UTF-8).
    diff: String,
}

fn show_view(
    engine: &Engine,
    proposal: &str,
    revision: Option<u32>,
) -> Result<ShowView, ToolError> {
    let reader = engine.session(reader()?);
    let mut get = GetProposal::new(proposal);
    if let Some(r) = revision {
        get = get.revision(r);
    }
    let detail = spinner("proposal.get", || reader.proposals().get(get))?;
    let number = detail.revision.number;
    let latest = detail.proposal.latest_revision;
    let status = spinner("proposal.status", || {
        reader.proposals().status(GetProposalStatus::new(proposal))
    })?;
    // The requirements of the revision shown: the status report's for the
    // latest, a fresh report for an older one; none once it is closed.
    let report = if number == latest {
        status.validation
    } else {
        spinner("patch.validate", || {
            reader
                .validation()
                .validate(Validate::new(proposal).revision(number))
        })
        .ok()
    };
    let by_requirement: Vec<RequirementNext> = status.by_requirement;
    // Evidence ids are record ids; the events say who made each.
    let by: BTreeMap<String, String> = events_after(&reader, 0, Some(proposal))?
        .into_iter()
        .map(|e| (e.subject, e.actor.to_string()))
        .collect();
    let requirements = report
        .as_ref()
        .map(|report| {
            report
                .policy
                .requirements
                .iter()
                .map(|r| {
                    let unsatisfied = r.status == RequirementStatus::Unsatisfied;
                    let satisfied_by = if unsatisfied {
                        Vec::new()
                    } else {
                        r.evidence
                            .iter()
                            .map(|e| match by.get(e) {
                                Some(who) => format!("{who} ({e})"),
                                None => e.clone(),
                            })
                            .collect()
                    };
                    RequirementView {
                        id: r.id.to_string(),
                        status: r.status,
                        satisfied_by,
                        missing: r.missing.clone(),
                        // Empty when the latest revision's status names
                        // no one for it (an older revision's requirement
                        // that the latest one satisfies).
                        who_can: if unsatisfied {
                            by_requirement
                                .iter()
                                .find(|n| n.requirement == r.id)
                                .map(|n| who_can(&n.next, proposal, latest))
                                .unwrap_or_default()
                        } else {
                            Vec::new()
                        },
                        evidence: r.evidence.clone(),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let sections = all_pages(|cursor| {
        let mut page = ProposalDiff::new(proposal).revision(number).limit(100);
        if let Some(c) = cursor {
            page = page.cursor(c);
        }
        let page = spinner("proposal.diff", || reader.proposals().diff(page))?;
        Ok((page.files, page.next_cursor))
    })?;
    let mut diff = String::new();
    for section in &sections {
        match &section.diff {
            Some(text) => diff.push_str(text),
            None => {
                let path = section
                    .new_path
                    .as_deref()
                    .or(section.old_path.as_deref())
                    .unwrap_or("?");
                let _ = writeln!(
                    diff,
                    "# {}: a section that is not UTF-8 (see --json, diff_base64)",
                    terminal::name(path)
                );
            }
        }
    }
    let matches = detail
        .revision
        .changeset
        .iter()
        .flat_map(|f| {
            f.matches.iter().map(|m| MatchView {
                path: f.path.clone(),
                hunk: m.hunk,
                rung: m.rung,
                line: m.line,
            })
        })
        .collect();
    Ok(ShowView {
        format: detail.revision.format,
        matches,
        proposal: detail.proposal,
        revision: number,
        latest_revision: latest,
        can_land: status.can_land,
        stale: status.stale,
        valid: report.as_ref().map(|r| r.valid),
        next: status.next,
        requirements,
        diff,
    })
}

fn show(proposal: &str, revision: Option<u32>, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let view = show_view(&engine, proposal, revision)?;
    if common.json {
        return to_json_sorted(&view);
    }
    // Every string from the store escaped; the diff is escaped line by
    // line below (its tabs kept).
    let paint = Paint::stdout();
    let p = &view.proposal;
    let status = p.status.as_str();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}",
        paint.wrap("1", &esc(&p.id)),
        paint.wrap("1", &esc(&p.title))
    );
    let _ = writeln!(out, "author:   agent:{}", esc(&p.author));
    let _ = writeln!(out, "task:     {}", esc(&p.task_id));
    let _ = writeln!(out, "risk:     {}", spelling(&p.risk));
    let _ = writeln!(
        out,
        "status:   {status} (revision {} of {})",
        view.revision, view.latest_revision
    );
    if view.format.is_text() && view.format != roundtable::model::RevisionFormat::Patch {
        let loose = view
            .matches
            .iter()
            .filter(|m| m.rung != roundtable::model::MatchRung::Exact)
            .count();
        let summary = if loose == 0 {
            "every hunk matched exactly".to_owned()
        } else {
            paint.wrap(
                "33",
                &format!(
                    "{loose} of {} hunks matched only ignoring whitespace",
                    view.matches.len()
                ),
            )
        };
        let _ = writeln!(out, "format:   {} ({summary})", view.format.as_str());
        for m in &view.matches {
            let rung = if m.rung == roundtable::model::MatchRung::Exact {
                m.rung.as_str().to_owned()
            } else {
                paint.wrap("33", &format!("{} ⚠", m.rung.as_str()))
            };
            let _ = writeln!(
                out,
                "          hunk {} → {}:{} ({rung})",
                m.hunk,
                terminal::name(&m.path),
                m.line
            );
        }
    }
    if matches!(p.status, ProposalStatus::Pending | ProposalStatus::InReview) {
        let land = if view.can_land {
            paint.wrap("32", "yes")
        } else if view.stale {
            paint.wrap("31", "no (stale: the files changed since this revision)")
        } else {
            paint.wrap("31", "no")
        };
        let _ = writeln!(out, "can land: {land}");
        for (i, n) in view.next.iter().enumerate() {
            let label = if i == 0 { "next:    " } else { "         " };
            let _ = writeln!(out, "{label} {}", next_line(n));
        }
    }
    if view.requirements.is_empty() {
        let _ = writeln!(
            out,
            "\nrequirements: not evaluated (the proposal is {status})"
        );
    } else {
        let _ = writeln!(out, "\nrequirements:");
        for r in &view.requirements {
            let line = match r.status {
                RequirementStatus::Satisfied => {
                    let by = if r.satisfied_by.is_empty() {
                        String::new()
                    } else {
                        format!(" — by {}", esc_join(&r.satisfied_by, ", "))
                    };
                    format!("{} {}{by}", paint.wrap("32", "✓"), esc(&r.id))
                }
                RequirementStatus::Unsatisfied => format!(
                    "{} {} — {}; can: {}",
                    paint.wrap("31", "✗"),
                    esc(&r.id),
                    esc(r.missing.as_deref().unwrap_or("not satisfied")),
                    esc_join(&r.who_can, ", ")
                ),
                RequirementStatus::NotApplicable => {
                    format!("- {} (not applicable)", esc(&r.id))
                }
            };
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "\ndiff (revision {}):", view.revision);
    // Split on '\n' only: a carriage return is shown (`\r`), not taken
    // for a line end.
    let diff = view.diff.as_str();
    for line in diff.strip_suffix('\n').unwrap_or(diff).split('\n') {
        let _ = writeln!(out, "{}", paint.diff_line(&terminal::escape(line, &['\t'])));
    }
    Ok(out.trim_end().to_owned())
}
