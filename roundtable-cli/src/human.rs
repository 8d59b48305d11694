//! The commands a person uses: `show`, `approve`, `reject`, `status` and
//! `events`. Readable text by default, JSON with `--json`; every one goes
//! through the tools ([`Engine::call`]), so it sees and refuses exactly what
//! an agent would.
//!
//! Whatever the store holds was chosen by someone else (an agent's diff,
//! file names, reasons, ids): the readable output escapes every control
//! character in it and quotes odd file names ([`terminal`]), so what a
//! person sees is what they approve.

use crate::terminal;
use clap::{Args, Subcommand};
use roundtable::{Actor, ActorKind, Engine, EngineOptions, ErrorCode, Id, ToolError};
use serde_json::{json, Value};
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
        Engine::open(&root, EngineOptions::default())
    })
}

fn call(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Result<Value, ToolError> {
    spinner(tool, || engine.call(tool, args, actor))
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
        HumanCommand::Events {
            since,
            follow,
            common,
        } => events(since, follow, &common),
    }
}

fn s<'v>(v: &'v Value, key: &str) -> &'v str {
    v[key].as_str().unwrap_or("?")
}

fn actor_name(a: &Value) -> String {
    format!("{}:{}", s(a, "kind"), s(a, "id"))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Every page of a listing tool.
fn all_pages(engine: &Engine, tool: &str, args: Value, key: &str) -> Result<Vec<Value>, ToolError> {
    let actor = reader()?;
    let mut out = Vec::new();
    let mut args = args;
    loop {
        let page = call(engine, tool, args.clone(), &actor)?;
        out.extend(page[key].as_array().cloned().unwrap_or_default());
        match &page["next_cursor"] {
            Value::String(c) => args["cursor"] = json!(c),
            _ => return Ok(out),
        }
    }
}

/// Every event after `since` (all pages).
fn events_after(
    engine: &Engine,
    since: u64,
    proposal: Option<&str>,
) -> Result<Vec<Value>, ToolError> {
    let actor = reader()?;
    let mut out = Vec::new();
    let mut since = since;
    loop {
        let mut args = json!({"since_seq": since, "limit": 1000});
        if let Some(p) = proposal {
            args["proposal_id"] = json!(p);
        }
        let page = call(engine, "events.list", args, &actor)?;
        out.extend(page["events"].as_array().cloned().unwrap_or_default());
        match page["next_since_seq"].as_u64() {
            Some(n) => since = n,
            None => return Ok(out),
        }
    }
}

/// Who can still satisfy an unsatisfied requirement.
fn who_can(req: &Value, proposal: &str, revision: u64) -> Vec<String> {
    let candidates = strings(&req["candidates"]);
    if !candidates.is_empty() {
        return candidates.iter().map(|c| format!("agent:{c}")).collect();
    }
    let rid = s(req, "id");
    let text = if rid == "human_approval" {
        format!("any person (roundtable approve {proposal} --revision {revision})")
    } else if rid == "no_blocking_votes" {
        "the author, with a new revision".to_owned()
    } else if rid.starts_with("check:") {
        "the orchestrator, recording the check (test.record)".to_owned()
    } else if rid == "security_review" || rid == "secrets" {
        "a person or an agent with the security role".to_owned()
    } else {
        "no registered agent can: register a reviewer".to_owned()
    };
    vec![text]
}

/// The data `show` prints, readable or as JSON.
fn show_view(engine: &Engine, proposal: &str, revision: Option<u32>) -> Result<Value, ToolError> {
    let actor = reader()?;
    let mut get = json!({"proposal_id": proposal});
    if let Some(r) = revision {
        get["revision"] = json!(r);
    }
    let detail = call(engine, "proposal.get", get, &actor)?;
    let p = &detail["proposal"];
    let number = detail["revision"]["number"].as_u64().unwrap_or(0);
    let latest = p["latest_revision"].as_u64().unwrap_or(0);
    let status = call(
        engine,
        "proposal.status",
        json!({"proposal_id": proposal}),
        &actor,
    )?;
    // The requirements of the revision shown: the status report's for the
    // latest, a fresh report for an older one; none once it is closed.
    let report = if number == latest {
        status["validation"].clone()
    } else {
        call(
            engine,
            "patch.validate",
            json!({"proposal_id": proposal, "revision": number}),
            &actor,
        )
        .unwrap_or(Value::Null)
    };
    // Evidence ids are record ids; the events say who made each.
    let by: std::collections::BTreeMap<String, String> = events_after(engine, 0, Some(proposal))?
        .iter()
        .map(|e| (s(e, "subject").to_owned(), actor_name(&e["actor"])))
        .collect();
    let requirements: Vec<Value> = report["policy"]["requirements"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let evidence = strings(&r["evidence"]);
            let satisfied_by: Vec<String> = evidence
                .iter()
                .map(|e| match by.get(e) {
                    Some(who) => format!("{who} ({e})"),
                    None => e.clone(),
                })
                .collect();
            let unsatisfied = r["status"] == "unsatisfied";
            json!({
                "id": r["id"],
                "status": r["status"],
                "satisfied_by": if unsatisfied { json!([]) } else { json!(satisfied_by) },
                "missing": r["missing"],
                "who_can": if unsatisfied { json!(who_can(r, proposal, latest)) } else { json!([]) },
                "evidence": r["evidence"],
            })
        })
        .collect();
    let mut diff = String::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"proposal_id": proposal, "revision": number, "limit": 100});
        if !cursor.is_null() {
            args["cursor"] = cursor;
        }
        let page = call(engine, "proposal.diff", args, &actor)?;
        for f in page["files"].as_array().cloned().unwrap_or_default() {
            match f["diff"].as_str() {
                Some(text) => diff.push_str(text),
                None => {
                    let path = f["new_path"]
                        .as_str()
                        .or(f["old_path"].as_str())
                        .unwrap_or("?");
                    let _ = writeln!(
                        diff,
                        "# {}: a section that is not UTF-8 (see --json, diff_base64)",
                        terminal::name(path)
                    );
                }
            }
        }
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    Ok(json!({
        "proposal": p,
        "revision": number,
        "latest_revision": latest,
        "can_land": status["can_land"],
        "stale": status["stale"],
        "valid": report["valid"],
        "next": status["next"],
        "requirements": requirements,
        "diff": diff,
    }))
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

fn next_line(n: &Value) -> String {
    let mut who = s(n, "actor").to_owned();
    let roles = strings(&n["roles"]);
    if !roles.is_empty() {
        let _ = write!(who, " [{}]", roles.join(", "));
    }
    let candidates = strings(&n["candidates"]);
    if !candidates.is_empty() {
        let _ = write!(who, " ({})", candidates.join(", "));
    }
    format!("{who}: {}", s(n, "why"))
}

fn show(proposal: &str, revision: Option<u32>, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let raw = show_view(&engine, proposal, revision)?;
    if common.json {
        return crate::to_json(&raw);
    }
    // Every string escaped; the diff is escaped line by line below (its
    // tabs kept).
    let view = terminal::clean(&raw);
    let paint = Paint::stdout();
    let p = &view["proposal"];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}",
        paint.wrap("1", s(p, "id")),
        paint.wrap("1", s(p, "title"))
    );
    let _ = writeln!(out, "author:   agent:{}", s(p, "author"));
    let _ = writeln!(out, "task:     {}", s(p, "task_id"));
    let _ = writeln!(out, "risk:     {}", s(p, "risk"));
    let _ = writeln!(
        out,
        "status:   {} (revision {} of {})",
        s(p, "status"),
        view["revision"],
        view["latest_revision"]
    );
    let open = matches!(s(p, "status"), "pending" | "in_review");
    if open {
        let land = if view["can_land"] == true {
            paint.wrap("32", "yes")
        } else if view["stale"] == true {
            paint.wrap("31", "no (stale: the files changed since this revision)")
        } else {
            paint.wrap("31", "no")
        };
        let _ = writeln!(out, "can land: {land}");
        let next = view["next"].as_array().cloned().unwrap_or_default();
        for (i, n) in next.iter().enumerate() {
            let label = if i == 0 { "next:    " } else { "         " };
            let _ = writeln!(out, "{label} {}", next_line(n));
        }
    }
    let requirements = view["requirements"].as_array().cloned().unwrap_or_default();
    if requirements.is_empty() {
        let _ = writeln!(
            out,
            "\nrequirements: not evaluated (the proposal is {})",
            s(p, "status")
        );
    } else {
        let _ = writeln!(out, "\nrequirements:");
        for r in &requirements {
            let line = match s(r, "status") {
                "satisfied" => {
                    let by = strings(&r["satisfied_by"]);
                    let by = if by.is_empty() {
                        String::new()
                    } else {
                        format!(" — by {}", by.join(", "))
                    };
                    format!("{} {}{by}", paint.wrap("32", "✓"), s(r, "id"))
                }
                "unsatisfied" => format!(
                    "{} {} — {}; can: {}",
                    paint.wrap("31", "✗"),
                    s(r, "id"),
                    r["missing"].as_str().unwrap_or("not satisfied"),
                    strings(&r["who_can"]).join(", ")
                ),
                _ => format!("- {} (not applicable)", s(r, "id")),
            };
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "\ndiff (revision {}):", view["revision"]);
    // Split on '\n' only: a carriage return is shown (`\r`), not taken
    // for a line end.
    let diff = s(&raw, "diff");
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
    let mut args = json!({"proposal_id": proposal, "revision": revision});
    if let Some(n) = note {
        args["note_md"] = json!(n);
    }
    let out = call(&engine, "human.approve", args, &actor).map_err(|e| {
        match e.details()["latest_revision"].as_u64() {
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
        return crate::to_json(&out);
    }
    Ok(terminal::escape(
        &format!(
            "approved revision {revision} of {proposal} as {actor} (approval {})",
            s(&out["approval"], "id")
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
    let out = call(
        &engine,
        "patch.reject",
        json!({"proposal_id": proposal, "reason_md": reason}),
        &actor,
    )?;
    if common.json {
        return crate::to_json(&out);
    }
    Ok(terminal::escape(&format!("rejected {proposal} as {actor}: {reason}"), &[]).into_owned())
}

/// How many recent transactions `status` shows.
const RECENT: usize = 10;

fn status(common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let actor = reader()?;
    let mut proposals = Vec::new();
    for state in ["pending", "in_review"] {
        proposals.extend(all_pages(
            &engine,
            "proposal.list",
            json!({"status": state, "limit": 200}),
            "proposals",
        )?);
    }
    proposals.sort_by(|a, b| {
        s(a, "created_at")
            .cmp(s(b, "created_at"))
            .then(s(a, "id").cmp(s(b, "id")))
    });
    let mut open = Vec::new();
    for p in &proposals {
        let st = call(
            &engine,
            "proposal.status",
            json!({"proposal_id": p["id"]}),
            &actor,
        )?;
        open.push(json!({
            "proposal": p,
            "can_land": st["can_land"],
            "stale": st["stale"],
            "next": st["next"],
        }));
    }
    let claims = all_pages(
        &engine,
        "claim.list",
        json!({"status": "active", "limit": 200}),
        "claims",
    )?;
    let mut transactions = all_pages(
        &engine,
        "transaction.list",
        json!({"limit": 200}),
        "transactions",
    )?;
    let skip = transactions.len().saturating_sub(RECENT);
    let transactions: Vec<Value> = transactions.drain(skip..).rev().collect();
    let view =
        json!({"open_proposals": open, "claims": claims, "recent_transactions": transactions});
    if common.json {
        return crate::to_json(&view);
    }
    let raw_claims = claims;
    let view = terminal::clean(&view);
    let open = view["open_proposals"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let claims = view["claims"].as_array().cloned().unwrap_or_default();
    let transactions = view["recent_transactions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(out, "open proposals ({}):", open.len());
    if open.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for o in &open {
        let p = &o["proposal"];
        let _ = writeln!(
            out,
            "  {} [{}, risk {}, revision {}] {} — by agent:{}",
            s(p, "id"),
            s(p, "status"),
            s(p, "risk"),
            p["latest_revision"],
            s(p, "title"),
            s(p, "author")
        );
        let state = if o["can_land"] == true {
            "can land".to_owned()
        } else if o["stale"] == true {
            "stale".to_owned()
        } else {
            "waiting".to_owned()
        };
        let next: Vec<String> = o["next"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(next_line)
            .collect();
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
    let _ = writeln!(out, "\nlive claims ({}):", claims.len());
    if claims.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for (c, raw) in claims.iter().zip(&raw_claims) {
        let _ = writeln!(
            out,
            "  {} agent:{} {} {} (token {}) until {}",
            s(c, "id"),
            s(c, "agent_id"),
            s(c, "type"),
            terminal::name(s(raw, "resource_id")),
            c["token"],
            s(c, "expires_at")
        );
    }
    let _ = writeln!(out, "\nrecent transactions ({}):", transactions.len());
    if transactions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for t in &transactions {
        let _ = writeln!(
            out,
            "  {} {} {} of {} revision {} by {} ({} files) at {}",
            s(t, "id"),
            s(t, "kind"),
            s(t, "status"),
            s(t, "proposal_id"),
            t["revision"],
            actor_name(&t["actor"]),
            t["file_count"],
            s(t, "created_at")
        );
    }
    Ok(out.trim_end().to_owned())
}

/// One event as one line: its fields escaped, its data as (safe) JSON.
fn event_line(raw: &Value) -> String {
    let e = &terminal::clean(raw);
    let mut line = format!(
        "{:>5} {} {} {} {}",
        e["seq"].as_i64().unwrap_or(0),
        s(e, "at"),
        actor_name(&e["actor"]),
        s(e, "kind"),
        s(e, "subject")
    );
    if let Some(p) = e["proposal_id"].as_str() {
        if p != s(e, "subject") {
            let _ = write!(line, " proposal={p}");
        }
    }
    if raw["data"].as_object().is_some_and(|d| !d.is_empty()) {
        let _ = write!(line, " {}", terminal::json(raw["data"].to_string()));
    }
    line
}

fn events(since: u64, follow: bool, common: &Common) -> Result<String, ToolError> {
    let engine = open(common)?;
    let render = |e: &Value| {
        if common.json {
            terminal::json(e.to_string())
        } else {
            event_line(e)
        }
    };
    let mut last = since;
    let first = events_after(&engine, last, None)?;
    if !follow {
        let lines: Vec<String> = first.iter().map(render).collect();
        return Ok(lines.join("\n"));
    }
    let mut batch = first;
    loop {
        for e in &batch {
            crate::print(&render(e));
            last = last.max(e["seq"].as_u64().unwrap_or(last));
        }
        std::thread::sleep(Duration::from_millis(500));
        batch = engine.call(
            "events.list",
            json!({"since_seq": last, "limit": 1000}),
            &reader()?,
        )?["events"]
            .as_array()
            .cloned()
            .unwrap_or_default();
    }
}
