//! The commands a person uses: `show`, `approve`, `reject`, `status` and
//! `events`. Readable text by default, JSON with `--json`; every one goes
//! through the typed session API ([`Engine::session`]), which runs the
//! tools, so it sees and refuses exactly what an agent would.
//!
//! Whatever the store holds was chosen by someone else (an agent's diff,
//! file names, reasons, ids): the readable output escapes every control
//! character in it and quotes odd file names ([`terminal`]), so what a
//! person sees is what they approve.

use crate::terminal;
use clap::{Args, Subcommand};
use roundtable::apply::Transaction;
use roundtable::policy::{Requirement, RequirementStatus};
use roundtable::session::{
    Approve, ClaimStatus, Cursor, GetProposal, GetProposalStatus, ListClaims, ListEvents,
    ListProposals, ListTransactions, ProposalDiff, ProposalStatus, Reject, Validate, WaitEvents,
};
use roundtable::tools::claims::Claim;
use roundtable::tools::records::{Event, Proposal};
use roundtable::tools::review::NextActor;
use roundtable::{Actor, ActorKind, Engine, ErrorCode, Id, Session, ToolError};
use serde::Serialize;
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

/// Options every human command takes.
#[derive(Args)]
pub(crate) struct Common {
    /// The repository root.
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Print JSON instead of readable text.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
pub(crate) enum HumanCommand {
    /// Show a proposal: title, author, risk, status, each policy
    /// requirement (✓/✗ with who satisfied it or who can) and the diff.
    Show {
        /// The proposal id.
        proposal: String,
        /// The revision (default: the latest).
        #[arg(long)]
        revision: Option<u32>,
        #[command(flatten)]
        common: Common,
    },
    /// Approve a revision of a proposal as a person (`human.approve`).
    ///
    /// Only the latest revision can be approved: naming an older one is
    /// refused with a message saying which revision is the latest.
    Approve {
        /// The proposal id.
        proposal: String,
        /// The revision approved (must be the latest).
        #[arg(long)]
        revision: u32,
        /// A note kept with the approval.
        #[arg(long)]
        note: Option<String>,
        /// Who approves, as human:NAME (default: $ROUNDTABLE_HUMAN, else
        /// the OS user $USER).
        #[arg(long = "as", value_name = "human:NAME")]
        actor: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Reject a proposal as a person (`patch.reject`).
    Reject {
        /// The proposal id.
        proposal: String,
        /// Why (kept as the decision's reason).
        #[arg(long)]
        reason: String,
        /// Who rejects, as human:NAME (default: $ROUNDTABLE_HUMAN, else
        /// the OS user $USER).
        #[arg(long = "as", value_name = "human:NAME")]
        actor: Option<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Open proposals and what each waits for, live claims with their
    /// expiry, recent transactions.
    Status {
        #[command(flatten)]
        common: Common,
    },
    /// The commits roundtable landed on the workspace's branch (git landing
    /// mode), newest first, each with the trailers naming what governed it.
    Log {
        /// At most this many commits.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        #[command(flatten)]
        common: Common,
    },
    /// Open the workspace — which finishes or undoes every transaction a
    /// crashed or interrupted applier left `applying` — and report what
    /// recovery could not finish (exit 1, `busy`, naming each transaction
    /// and its cause), or that nothing is left applying.
    Recover {
        #[command(flatten)]
        common: Common,
    },
    /// The audit log, one line per event (with --json, one JSON object per
    /// line).
    Events {
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        since: u64,
        /// Keep polling and printing new events until interrupted.
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        common: Common,
    },
}

impl HumanCommand {
    fn common(&self) -> &Common {
        match self {
            HumanCommand::Show { common, .. }
            | HumanCommand::Approve { common, .. }
            | HumanCommand::Reject { common, .. }
            | HumanCommand::Status { common }
            | HumanCommand::Log { common, .. }
            | HumanCommand::Recover { common }
            | HumanCommand::Events { common, .. } => common,
        }
    }

    /// Whether the output (errors too) is JSON.
    pub(crate) fn json(&self) -> bool {
        self.common().json
    }
}

/// Run `f` under a spinner on stderr (only when stderr is a terminal):
/// for anything that can take more than a second.
pub(crate) fn spinner<T>(what: &str, f: impl FnOnce() -> T) -> T {
    if !std::io::stderr().is_terminal() {
        return f();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(100));
    let out = f();
    bar.finish_and_clear();
    out
}

fn invalid(field: &str, reason: impl Into<String>) -> ToolError {
    ToolError::invalid_argument(field, reason.into())
}

fn id(s: &str, field: &str) -> Result<Id, ToolError> {
    Id::new(s).map_err(|e| invalid(field, e.to_string()))
}

/// The person acting: `--as`, else `$ROUNDTABLE_HUMAN` (`NAME` or
/// `human:NAME`), else `$USER`.
fn human(actor: Option<&str>) -> Result<Actor, ToolError> {
    let spelled = match actor {
        Some(a) => a.to_owned(),
        None => {
            let env = std::env::var("ROUNDTABLE_HUMAN")
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| std::env::var("USER").ok().filter(|v| !v.is_empty()))
                .or_else(|| std::env::var("LOGNAME").ok().filter(|v| !v.is_empty()))
                .ok_or_else(|| {
                    invalid(
                        "--as",
                        "no human given: pass --as human:NAME or set $ROUNDTABLE_HUMAN",
                    )
                })?;
            if env.contains(':') {
                env
            } else {
                format!("human:{env}")
            }
        }
    };
    let actor = Actor::parse(&spelled).map_err(|e| invalid("--as", e.to_string()))?;
    if actor.kind != ActorKind::Human {
        return Err(invalid(
            "--as",
            format!("{spelled}: these commands act as a person (human:NAME)"),
        ));
    }
    Ok(actor)
}

/// The reader for read-only commands (reads write no event).
fn reader() -> Result<Actor, ToolError> {
    Ok(Actor::orchestrator(id("roundtable-cli", "--as")?))
}

fn open(common: &Common) -> Result<Engine, ToolError> {
    let root = crate::absolute(&common.root);
    spinner("opening the store", || {
        Engine::open(&root, crate::engine_options())
    })
}

/// Run a human command; its output text.
pub(crate) fn run(command: HumanCommand) -> Result<String, ToolError> {
    match command {
        HumanCommand::Show {
            proposal,
            revision,
            common,
        } => show(&proposal, revision, &common),
        HumanCommand::Approve {
            proposal,
            revision,
            note,
            actor,
            common,
        } => approve(&proposal, revision, note, actor.as_deref(), &common),
        HumanCommand::Reject {
            proposal,
            reason,
            actor,
            common,
        } => reject(&proposal, &reason, actor.as_deref(), &common),
        HumanCommand::Status { common } => status(&common),
        HumanCommand::Log { limit, common } => log(limit, &common),
        HumanCommand::Recover { common } => recover(&common),
        HumanCommand::Events {
            since,
            follow,
            common,
        } => events(since, follow, &common),
    }
}

/// A string from the store as a person may see it: every unsafe
/// character escaped.
fn esc(text: &str) -> Cow<'_, str> {
    terminal::escape(text, &[])
}

/// Strings from the store, each escaped, joined with `sep`.
fn esc_join(items: &[String], sep: &str) -> String {
    items.iter().map(|s| esc(s)).collect::<Vec<_>>().join(sep)
}

/// The stable spelling of an enum value (`critical`, `rollback`): what
/// its JSON says.
fn spelling(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => "?".to_owned(),
    }
}

/// Every record of a listing: `page` fetches the page after a cursor (the
/// first page for none) and returns its records and `next_cursor`.
fn all_pages<T>(
    mut page: impl FnMut(Option<Cursor>) -> Result<(Vec<T>, Option<Cursor>), ToolError>,
) -> Result<Vec<T>, ToolError> {
    let mut out = Vec::new();
    let mut cursor = None;
    loop {
        let (records, next) = page(cursor)?;
        out.extend(records);
        match next {
            Some(next) => cursor = Some(next),
            None => return Ok(out),
        }
    }
}

/// Every event after `since` (all pages).
fn events_after(
    reader: &Session<'_>,
    since: u64,
    proposal: Option<&str>,
) -> Result<Vec<Event>, ToolError> {
    let mut out = Vec::new();
    let mut since = since;
    loop {
        let mut list = ListEvents::since(since).limit(1000);
        if let Some(p) = proposal {
            list = list.proposal_id(p);
        }
        let page = spinner("events.list", || reader.events().list(list))?;
        out.extend(page.events);
        match page.next_since_seq.and_then(|n| u64::try_from(n).ok()) {
            Some(n) => since = n,
            None => return Ok(out),
        }
    }
}

/// Who can still satisfy an unsatisfied requirement.
fn who_can(req: &Requirement, proposal: &str, revision: u32) -> Vec<String> {
    if !req.candidates.is_empty() {
        return req
            .candidates
            .iter()
            .map(|c| format!("agent:{c}"))
            .collect();
    }
    use roundtable::policy::RequirementId as R;
    let text = match &req.id {
        R::HumanApproval => {
            format!("any person (roundtable approve {proposal} --revision {revision})")
        }
        R::NoBlockingVotes => "the author, with a new revision".to_owned(),
        R::Check(_) => "the orchestrator, recording the check (test.record)".to_owned(),
        R::SecurityReview | R::Secrets => "a person or an agent with the security role".to_owned(),
        R::Approvals | R::Role(_) => "no registered agent can: register a reviewer".to_owned(),
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
                        who_can: if unsatisfied {
                            who_can(r, proposal, latest)
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

/// Colours, on only when stdout is a terminal (and `$NO_COLOR` is unset).
struct Paint(bool);

impl Paint {
    fn stdout() -> Paint {
        Paint(std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none())
    }
    fn wrap(&self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    fn diff_line(&self, line: &str) -> String {
        if line.starts_with("+++ ") || line.starts_with("--- ") || line.starts_with("diff --git ") {
            self.wrap("1", line)
        } else if line.starts_with('+') {
            self.wrap("32", line)
        } else if line.starts_with('-') {
            self.wrap("31", line)
        } else if line.starts_with("@@") {
            self.wrap("36", line)
        } else {
            line.to_owned()
        }
    }
}

/// Who acts next and why, every string escaped.
fn next_line(n: &NextActor) -> String {
    let mut who = esc(n.actor.as_str()).into_owned();
    if !n.roles.is_empty() {
        let _ = write!(who, " [{}]", esc_join(&n.roles, ", "));
    }
    if !n.candidates.is_empty() {
        let _ = write!(who, " ({})", esc_join(&n.candidates, ", "));
    }
    format!("{who}: {}", esc(&n.why))
}

fn show(proposal: &str, revision: Option<u32>, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let view = show_view(&engine, proposal, revision)?;
    if common.json {
        return crate::to_json_sorted(&view);
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

fn approve(
    proposal: &str,
    revision: u32,
    note: Option<String>,
    actor: Option<&str>,
    common: &Common,
) -> Result<String, ToolError> {
    let actor = human(actor)?;
    let engine = open(common)?;
    let person = engine.session(actor);
    let mut request = Approve::new(proposal, revision);
    if let Some(n) = &note {
        request = request.note_md(n);
    }
    let out = spinner("human.approve", || person.evidence().approve(request)).map_err(|e| {
        match e.details().get("latest_revision").and_then(Value::as_u64) {
            Some(latest) if e.code() == ErrorCode::Conflict => ToolError::new(
                ErrorCode::Conflict,
                format!(
                    "revision {revision} of {proposal} is not the latest: the latest is revision {latest} \
                     (review it with `roundtable show {proposal}`, then approve --revision {latest})"
                ),
                e.details().clone(),
            ),
            _ => e,
        }
    })?;
    if common.json {
        return crate::to_json_sorted(&out);
    }
    Ok(terminal::escape(
        &format!(
            "approved revision {revision} of {proposal} as {} (approval {})",
            person.actor(),
            out.approval.id
        ),
        &[],
    )
    .into_owned())
}

fn reject(
    proposal: &str,
    reason: &str,
    actor: Option<&str>,
    common: &Common,
) -> Result<String, ToolError> {
    let actor = human(actor)?;
    let engine = open(common)?;
    let person = engine.session(actor);
    let out = spinner("patch.reject", || {
        person.proposals().reject(Reject::new(proposal, reason))
    })?;
    if common.json {
        return crate::to_json_sorted(&out);
    }
    Ok(terminal::escape(
        &format!("rejected {proposal} as {}: {reason}", person.actor()),
        &[],
    )
    .into_owned())
}

/// How many recent transactions `status` shows.
const RECENT: usize = 10;

/// An open proposal and what it waits for, as `status` reports it.
#[derive(Serialize)]
struct OpenProposal {
    proposal: Proposal,
    can_land: bool,
    stale: bool,
    next: Vec<NextActor>,
}

/// The data `status` prints, readable or as JSON.
#[derive(Serialize)]
struct StatusView {
    open_proposals: Vec<OpenProposal>,
    claims: Vec<Claim>,
    /// The latest transactions, newest first.
    recent_transactions: Vec<Transaction>,
}

fn status_view(engine: &Engine) -> Result<StatusView, ToolError> {
    let reader = engine.session(reader()?);
    let mut proposals = Vec::new();
    for state in [ProposalStatus::Pending, ProposalStatus::InReview] {
        proposals.extend(all_pages(|cursor| {
            let mut list = ListProposals::all().status(state).limit(200);
            if let Some(c) = cursor {
                list = list.cursor(c);
            }
            let page = spinner("proposal.list", || reader.proposals().list(list))?;
            Ok((page.proposals, page.next_cursor))
        })?);
    }
    proposals.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    let mut open_proposals = Vec::new();
    for proposal in proposals {
        let st = spinner("proposal.status", || {
            reader
                .proposals()
                .status(GetProposalStatus::new(&proposal.id))
        })?;
        open_proposals.push(OpenProposal {
            proposal,
            can_land: st.can_land,
            stale: st.stale,
            next: st.next,
        });
    }
    let claims = all_pages(|cursor| {
        let mut list = ListClaims::all().status(ClaimStatus::Active).limit(200);
        if let Some(c) = cursor {
            list = list.cursor(c);
        }
        let page = spinner("claim.list", || reader.claims().list(list))?;
        Ok((page.claims, page.next_cursor))
    })?;
    let mut transactions = all_pages(|cursor| {
        let mut list = ListTransactions::all().limit(200);
        if let Some(c) = cursor {
            list = list.cursor(c);
        }
        let page = spinner("transaction.list", || reader.transactions().list(list))?;
        Ok((page.transactions, page.next_cursor))
    })?;
    let skip = transactions.len().saturating_sub(RECENT);
    let recent_transactions = transactions.drain(skip..).rev().collect();
    Ok(StatusView {
        open_proposals,
        claims,
        recent_transactions,
    })
}

/// `roundtable log`: the landed commits of the workspace's branch.
fn log(limit: usize, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let host = engine.session(roundtable::Actor::orchestrator(
        roundtable::Id::new("cli")
            .map_err(|e| ToolError::invalid_argument("actor", e.to_string()))?,
    ));
    let settings = host
        .setup()
        .workspace(roundtable::session::GetWorkspace::new())?;
    let Some(branch) = settings.landing.branch_ref() else {
        return Ok(if common.json {
            "[]\n".to_owned()
        } else {
            "landing mode is files: roundtable commits nothing (workspace.configure sets git mode)\n".to_owned()
        });
    };
    let commits = roundtable::landing::landed_commits(engine.root(), &branch, limit)
        .map_err(|e| ToolError::new(e.code(), e.to_string(), serde_json::json!({"ref": branch})))?;
    if common.json {
        return crate::to_json_sorted(&commits);
    }
    let mut out = String::new();
    if commits.is_empty() {
        let _ = writeln!(
            out,
            "no commit on {} was landed by roundtable",
            esc(&branch)
        );
    }
    for c in &commits {
        let _ = writeln!(out, "{} {}", &c.id[..c.id.len().min(12)], esc(&c.summary));
        let _ = writeln!(out, "    author {}", esc(&c.author));
        for (k, v) in &c.trailers {
            let _ = writeln!(out, "    {}: {}", esc(k), esc(v));
        }
    }
    Ok(out)
}

/// `roundtable recover`: opening the engine runs recovery; what it could
/// not finish is [`Engine::unrecovered`], reported as `busy` (the
/// transactions stay `applying`) until its causes are removed.
fn recover(common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let left = engine.unrecovered();
    let Some(first) = left.first() else {
        return Ok(if common.json {
            "{\"unrecovered\":[]}\n".to_owned()
        } else {
            "nothing is left applying: every transaction is applied, recovered or failed\n"
                .to_owned()
        });
    };
    let each: Vec<String> = left
        .iter()
        .map(|u| format!("{} ({}: {})", u.transaction_id, u.code, u.message))
        .collect();
    Err(ToolError::new(
        roundtable::ErrorCode::Busy,
        format!(
            "{} transaction(s) left applying could not be recovered: {}; remove the cause and run `roundtable recover` again",
            left.len(),
            each.join("; ")
        ),
        serde_json::json!({"transaction_id": first.transaction_id}),
    ))
}

fn status(common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let view = status_view(&engine)?;
    if common.json {
        return crate::to_json_sorted(&view);
    }
    // Every string from the store escaped (a resource id quoted when odd).
    let mut out = String::new();
    let _ = writeln!(out, "open proposals ({}):", view.open_proposals.len());
    if view.open_proposals.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for o in &view.open_proposals {
        let p = &o.proposal;
        let _ = writeln!(
            out,
            "  {} [{}, risk {}, revision {}] {} — by agent:{}",
            esc(&p.id),
            p.status.as_str(),
            spelling(&p.risk),
            p.latest_revision,
            esc(&p.title),
            esc(&p.author)
        );
        let state = if o.can_land {
            "can land"
        } else if o.stale {
            "stale"
        } else {
            "waiting"
        };
        let next: Vec<String> = o.next.iter().map(next_line).collect();
        let _ = writeln!(
            out,
            "    {state}; next: {}",
            if next.is_empty() {
                "nobody".to_owned()
            } else {
                next.join("; ")
            }
        );
    }
    let _ = writeln!(out, "\nlive claims ({}):", view.claims.len());
    if view.claims.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for c in &view.claims {
        let _ = writeln!(
            out,
            "  {} agent:{} {} {} (token {}) until {}",
            esc(&c.id),
            esc(&c.agent_id),
            c.claim_type.as_str(),
            terminal::name(&c.resource_id),
            c.token,
            c.expires_at
        );
    }
    let _ = writeln!(
        out,
        "\nrecent transactions ({}):",
        view.recent_transactions.len()
    );
    if view.recent_transactions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for t in &view.recent_transactions {
        let _ = writeln!(
            out,
            "  {} {} {} of {} revision {} by {} ({} files) at {}",
            esc(&t.id),
            spelling(&t.kind),
            t.status.as_str(),
            esc(&t.proposal_id),
            t.revision,
            esc(&t.actor.to_string()),
            t.file_count,
            t.created_at
        );
    }
    Ok(out.trim_end().to_owned())
}

/// One event as one line: its fields escaped, its data as (safe) JSON.
fn event_line(e: &Event) -> String {
    let mut line = format!(
        "{:>5} {} {} {} {}",
        e.seq,
        e.at,
        esc(&e.actor.to_string()),
        esc(e.kind.as_str()),
        esc(&e.subject)
    );
    if let Some(p) = &e.proposal_id {
        if *p != e.subject {
            let _ = write!(line, " proposal={}", esc(p));
        }
    }
    if e.data.as_object().is_some_and(|d| !d.is_empty()) {
        let _ = write!(line, " {}", terminal::json(e.data.to_string()));
    }
    line
}

/// One event as one line of JSON: the object `events.list` returns for it.
fn event_json(e: &Event) -> Result<String, ToolError> {
    let value = serde_json::to_value(e)
        .map_err(|err| ToolError::new(ErrorCode::Io, err.to_string(), json!({})))?;
    Ok(terminal::json(value.to_string()))
}

fn events(since: u64, follow: bool, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let reader = engine.session(reader()?);
    let render = |e: &Event| {
        if common.json {
            event_json(e)
        } else {
            Ok(event_line(e))
        }
    };
    let mut last = since;
    let first = events_after(&reader, last, None)?;
    if !follow {
        let lines = first.iter().map(render).collect::<Result<Vec<_>, _>>()?;
        return Ok(lines.join("\n"));
    }
    let mut batch = first;
    loop {
        for e in &batch {
            crate::print(&render(e)?);
            last = last.max(u64::try_from(e.seq).unwrap_or(last));
        }
        // A long poll: it returns as soon as an event is committed, by any
        // process, and costs nothing while none is.
        batch = reader
            .events()
            .wait(WaitEvents::since(last).limit(1000).timeout_ms(60_000))?
            .events;
    }
}
