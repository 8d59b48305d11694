//! The read models the routes return, each built only by calling tools as
//! the caller's actor: the engine decides who may read what, and a view
//! holds no rule of its own. What the engine has no data for is `[]` or
//! `null`, never made up.
//!
//! Paging: where a tool pages (`proposal.list`, `proposal.diff`,
//! `transaction.list`, `claim.list`, `inbox.list`) its cursor is passed
//! through. Where a tool returns a whole list (`proposal.files`) the view
//! pages over a stable key (the path) with an opaque cursor naming the last
//! key and the revision, so an insert between pages neither skips nor
//! repeats an item.

use roundtable::{Actor, Engine, ErrorCode, ToolError};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::hunk_symbols::{changed_lines, PageSymbols};
use crate::query::{hex, unhex, Page, Query, MAX_LIMIT};
use crate::syntax::{self, Class, Lang};

/// The page size `proposal.diff` and `inbox.list` take at most.
const DIFF_AND_INBOX_MAX: u32 = 100;

/// Tool calls as one actor.
pub(crate) struct Reader<'a> {
    engine: &'a Engine,
    actor: &'a Actor,
}

impl<'a> Reader<'a> {
    /// Calls on `engine` as `actor`.
    pub(crate) fn new(engine: &'a Engine, actor: &'a Actor) -> Reader<'a> {
        Reader { engine, actor }
    }

    fn call(&self, tool: &str, args: Value) -> Result<Value, ToolError> {
        self.engine.call(tool, args, self.actor)
    }

    /// Every item of a paged tool's list `field`, following its cursor.
    fn all(&self, tool: &str, mut args: Value, field: &str) -> Result<Vec<Value>, ToolError> {
        let mut items = Vec::new();
        loop {
            args["limit"] = json!(MAX_LIMIT);
            let page = self.call(tool, args.clone())?;
            items.extend(list(&page, field));
            match page.get("next_cursor").and_then(Value::as_str) {
                Some(next) => args["cursor"] = json!(next),
                None => return Ok(items),
            }
        }
    }
}

/// A list route's answer.
#[derive(Debug, Serialize)]
pub(crate) struct Paged {
    /// This page's items.
    pub(crate) items: Vec<Value>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub(crate) next_cursor: Option<String>,
}

impl Paged {
    fn of(page: &Value, field: &str) -> Paged {
        Paged {
            items: list(page, field),
            next_cursor: page
                .get("next_cursor")
                .and_then(Value::as_str)
                .map(str::to_owned),
        }
    }
}

/// `value[field]` as a list (empty when absent or null).
fn list(value: &Value, field: &str) -> Vec<Value> {
    value
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// `args` with `limit` (at most the tool's `max`) and `cursor` of `page`.
/// A tool that takes fewer per page than asked returns a shorter page
/// with its cursor: paging goes on from there.
fn paged(mut args: Value, page: &Page, max: u32) -> Value {
    args["limit"] = json!(page.limit.min(max));
    if let Some(cursor) = &page.cursor {
        args["cursor"] = json!(cursor);
    }
    args
}

/// The workspaces' names and landing modes.
pub(crate) fn workspace(r: &Reader<'_>, name: &str) -> Result<Value, ToolError> {
    let got = r.call("workspace.get", json!({}))?;
    Ok(json!({"name": name, "landing": got["landing"]["mode"]}))
}

/// The tools `actor` may call.
pub(crate) fn tools(actor: &Actor) -> Value {
    let tools: Vec<Value> = Engine::tools()
        .iter()
        .filter(|t| t.callable_by(actor.kind))
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "mutating": t.mutates,
                "input_schema": t.input_schema(),
                "output_schema": t.output_schema(),
            })
        })
        .collect();
    json!({ "tools": tools })
}

/// What waits on the caller (`inbox.list`).
pub(crate) fn inbox(r: &Reader<'_>, q: &Query) -> Result<Value, ToolError> {
    r.call(
        "inbox.list",
        paged(json!({}), &q.page()?, DIFF_AND_INBOX_MAX),
    )
}

/// Proposal summaries, filtered by `status` and `author`.
pub(crate) fn proposals(r: &Reader<'_>, q: &Query) -> Result<Paged, ToolError> {
    let mut args = json!({});
    for key in ["status", "author"] {
        if let Some(v) = q.get(key) {
            args[key] = json!(v);
        }
    }
    let page = r.call("proposal.list", paged(args, &q.page()?, MAX_LIMIT))?;
    let mut out = Paged::of(&page, "proposals");
    for item in &mut out.items {
        let p = std::mem::take(item);
        let next = r
            .call("proposal.status", json!({"proposal_id": p["id"]}))?
            .get("next")
            .cloned()
            .unwrap_or(Value::Null);
        *item = json!({
            "proposal_id": p["id"],
            "title": p["title"],
            "author": p["author"],
            "risk": p["risk"],
            "status": p["status"],
            "revision": p["latest_revision"],
            "updated_at": p["updated_at"],
            "next": next,
        });
    }
    Ok(out)
}

/// A proposal's overview: the record, its status with every requirement,
/// revisions, votes, checks, claims on its paths, carried evidence, secret
/// findings and loose agent-format matches.
pub(crate) fn overview(r: &Reader<'_>, id: &str) -> Result<Value, ToolError> {
    let pid = json!({ "proposal_id": id });
    let got = r.call("proposal.get", pid.clone())?;
    let status = r.call("proposal.status", pid.clone())?;
    let votes = r.all("vote.list", pid.clone(), "votes")?;
    let checks = r.all("test.list", pid.clone(), "test_results")?;
    let files = r.call("proposal.files", pid)?;
    let paths = paths_of(&files);
    let claims: Vec<Value> = r
        .all("claim.list", json!({"status": "active"}), "claims")?
        .into_iter()
        .filter(|c| covers_any(c, &paths))
        .collect();
    let requirements = list(&status["validation"]["policy"], "requirements");
    let gather = |field: &str| -> Vec<Value> {
        requirements
            .iter()
            .flat_map(|req| list(req, field))
            .collect()
    };
    let loose: Vec<Value> = list(&files, "files")
        .iter()
        .filter(|f| {
            f.get("matches")
                .and_then(Value::as_array)
                .is_some_and(|m| !m.is_empty())
        })
        .map(|f| json!({"path": path_of(f), "matches": f["matches"]}))
        .collect();
    Ok(json!({
        "proposal": got["proposal"],
        "revision": got["revision"],
        "status": status,
        "revisions": got.get("revisions").cloned().unwrap_or_else(|| json!([])),
        "votes": votes,
        "checks": checks,
        "claims": claims,
        "carried_evidence": gather("carried"),
        "secret_findings": gather("findings"),
        "loose_match": loose,
    }))
}

/// The path a `proposal.files` entry is listed under: its new path, or
/// its old one when deleted.
fn path_of(file: &Value) -> String {
    file.get("new_path")
        .and_then(Value::as_str)
        .or_else(|| file.get("old_path").and_then(Value::as_str))
        .unwrap_or("")
        .to_owned()
}

fn paths_of(files: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    for f in list(files, "files") {
        for key in ["new_path", "old_path"] {
            if let Some(p) = f.get(key).and_then(Value::as_str) {
                paths.push(p.to_owned());
            }
        }
    }
    paths
}

/// Whether claim `claim` is on one of `paths` (its file, a symbol in it,
/// or a directory holding it).
fn covers_any(claim: &Value, paths: &[String]) -> bool {
    let Some(resource) = claim.get("resource_id").and_then(Value::as_str) else {
        return false;
    };
    let Some((kind, rest)) = resource.split_once(':') else {
        return false;
    };
    let path = rest.split('#').next().unwrap_or(rest);
    paths.iter().any(|p| match kind {
        "directory" => path == "." || p.strip_prefix(path).is_some_and(|r| r.starts_with('/')),
        _ => p == path,
    })
}

/// One page of a revision's files, by path.
pub(crate) fn files(r: &Reader<'_>, id: &str, q: &Query) -> Result<Paged, ToolError> {
    let page = q.page()?;
    // The cursor names the revision and the last path of the page before.
    let after = page
        .cursor
        .as_deref()
        .map(|c| {
            unhex(c)
                .and_then(|k| {
                    let (rev, path) = k.split_once('\n')?;
                    Some((rev.parse::<u64>().ok()?, path.to_owned()))
                })
                .ok_or_else(|| {
                    ToolError::invalid_argument("cursor", "not a cursor this route made")
                })
        })
        .transpose()?;
    let revision = match &after {
        Some((rev, _)) => Some(*rev),
        None => q.number("revision")?,
    };
    let mut args = json!({ "proposal_id": id });
    if let Some(rev) = revision {
        args["revision"] = json!(rev);
    }
    let got = r.call("proposal.files", args)?;
    let rev = got["revision"].as_u64().unwrap_or(0);
    let mut entries: Vec<(String, Value)> = list(&got, "files")
        .into_iter()
        .map(|f| {
            let path = path_of(&f);
            let renamed = f["old_path"].as_str().is_some_and(|o| o != path);
            let entry = json!({
                "path": path,
                "old_path": if renamed { f["old_path"].clone() } else { Value::Null },
                "status": f["operation"],
                "added": f["added_lines"],
                "removed": f["removed_lines"],
                "binary": f["binary"],
                "mode": f.get("new_mode").filter(|m| !m.is_null()).or(f.get("old_mode")).cloned().unwrap_or(Value::Null),
                "old_mode": f.get("old_mode").cloned().unwrap_or(Value::Null),
                "mode_change": f["mode_change"],
            });
            (path, entry)
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let start = after.map_or(0, |(_, last)| entries.partition_point(|(p, _)| *p <= last));
    let rest = &entries[start.min(entries.len())..];
    let take = rest.len().min(page.limit as usize);
    let next_cursor = (take < rest.len())
        .then(|| {
            rest.get(take.wrapping_sub(1))
                .map(|(p, _)| hex(&format!("{rev}\n{p}")))
        })
        .flatten();
    Ok(Paged {
        items: rest[..take].iter().map(|(_, e)| e.clone()).collect(),
        next_cursor,
    })
}

/// A diff line as the console shows it.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct DiffLine {
    /// `context`, `add` or `del`.
    kind: LineKind,
    /// Its number in the old file (not for an added line).
    old_no: Option<u32>,
    /// Its number in the new file (not for a deleted line).
    new_no: Option<u32>,
    /// Its text, without the prefix and line end.
    text: String,
    /// Syntax classes, as byte ranges of `text`.
    classes: Vec<(usize, usize, Class)>,
}

/// What a diff line is.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LineKind {
    /// In both.
    Context,
    /// Added.
    Add,
    /// Deleted.
    Del,
}

/// One hunk.
#[derive(Debug, Serialize, PartialEq)]
pub(crate) struct DiffHunk {
    /// The `@@ … @@` line.
    header: String,
    /// Where it starts in the old file.
    old_start: u32,
    /// Where it starts in the new file.
    new_start: u32,
    /// The first of `symbols`; when none, the enclosing symbol git names
    /// after the `@@`, if any.
    symbol: Option<String>,
    /// The symbols it changes, innermost first ([`crate::hunk_symbols`]).
    symbols: Vec<Value>,
    /// The first of `claims`, if any.
    claim: Option<Value>,
    /// The active claims that cover it ([`crate::hunk_claims`]).
    claims: Vec<Value>,
    /// Its lines.
    lines: Vec<DiffLine>,
}

/// The hunks of one file's section of a unified diff, each line classed
/// by `lang`. Text before the first hunk (headers) and `\ No newline`
/// markers are left out; a section that is not text has none.
pub(crate) fn hunks(section: &str, lang: Option<Lang>) -> Vec<DiffHunk> {
    let mut out: Vec<DiffHunk> = Vec::new();
    let (mut old_left, mut new_left) = (0u32, 0u32);
    let (mut old_no, mut new_no) = (0u32, 0u32);
    let mut sides = syntax::Sides::default();
    for raw in section.split_inclusive('\n') {
        let line = raw.strip_suffix('\n').unwrap_or(raw);
        let line = line.strip_suffix('\r').unwrap_or(line);
        if old_left == 0 && new_left == 0 {
            if let Some((os, ol, ns, nl, symbol)) = hunk_header(line) {
                out.push(DiffHunk {
                    header: line.to_owned(),
                    old_start: os,
                    new_start: ns,
                    symbol,
                    symbols: Vec::new(),
                    claim: None,
                    claims: Vec::new(),
                    lines: Vec::new(),
                });
                (old_left, new_left, old_no, new_no) = (ol, nl, os, ns);
                sides = syntax::Sides::default();
            }
            continue;
        }
        let Some(hunk) = out.last_mut() else { continue };
        let (kind, text) = match line.chars().next() {
            Some('+') => (LineKind::Add, &line[1..]),
            Some('-') => (LineKind::Del, &line[1..]),
            Some(' ') => (LineKind::Context, &line[1..]),
            // An empty context line some tools write without its space.
            None => (LineKind::Context, ""),
            _ => continue,
        };
        let (o, n) = match kind {
            LineKind::Context => (Some(old_no), Some(new_no)),
            LineKind::Del => (Some(old_no), None),
            LineKind::Add => (None, Some(new_no)),
        };
        if o.is_some() {
            old_no += 1;
            old_left = old_left.saturating_sub(1);
        }
        if n.is_some() {
            new_no += 1;
            new_left = new_left.saturating_sub(1);
        }
        hunk.lines.push(DiffLine {
            kind,
            old_no: o,
            new_no: n,
            text: text.to_owned(),
            classes: lang
                .map(|l| sides.classes(l, o.is_some(), n.is_some(), text))
                .unwrap_or_default(),
        });
    }
    out
}

/// `@@ -a[,b] +c[,d] @@ symbol` read as (a, b, c, d, symbol).
fn hunk_header(line: &str) -> Option<(u32, u32, u32, u32, Option<String>)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, symbol) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((s, n)) => Some((s.parse().ok()?, n.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (os, ol) = range(old)?;
    let (ns, nl) = range(new)?;
    let symbol = Some(symbol.trim())
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    Some((os, ol, ns, nl, symbol))
}

/// One file of a diff section, as the diff route returns it.
fn file_diff(section: &Value, claims: &[Value], symbols: &PageSymbols) -> Value {
    let path = path_of(section);
    let old = section["old_path"].as_str().filter(|o| *o != path);
    let text = section["diff"].as_str();
    let mut hunks = text.map_or_else(Vec::new, |t| hunks(t, Lang::of_path(&path)));
    let held = crate::hunk_claims::held(claims);
    for h in &mut hunks {
        let kinds = h.lines.iter().map(|l| l.kind);
        h.claims = crate::hunk_claims::shown(&held, &path, old, h.old_start, kinds);
        h.claim = h.claims.first().cloned();
        let changed = changed_lines(h.lines.iter().map(|l| (l.kind, l.old_no, l.new_no)));
        h.symbols = symbols.of_hunk(&path, &changed);
        if let Some(name) = h.symbols.first().and_then(|s| s["name"].as_str()) {
            h.symbol = Some(name.to_owned());
        }
    }
    json!({
        "path": path,
        "old_path": old,
        "text": text.is_some(),
        "hunks": hunks,
    })
}

/// The diff of one file (`path`) or one page of every file's.
pub(crate) fn diff(r: &Reader<'_>, id: &str, q: &Query) -> Result<Value, ToolError> {
    let mut args = json!({ "proposal_id": id });
    if let Some(rev) = q.number("revision")? {
        args["revision"] = json!(rev);
    }
    let claims = r.all("claim.list", json!({"status": "active"}), "claims")?;
    match q.get("path") {
        Some(path) => {
            // One call: the engine picks the file's section (by its new or
            // old path), however many files the revision has.
            args["paths"] = json!([path]);
            let page = r.call("proposal.diff", args)?;
            let section = list(&page, "files")
                .into_iter()
                .next()
                .ok_or_else(|| ToolError::not_found("file", path))?;
            let symbols = page_symbols(r, id, &page, std::slice::from_ref(&section))?;
            let mut one = file_diff(&section, &claims, &symbols);
            one["revision"] = page["revision"].clone();
            Ok(one)
        }
        None => {
            let page = r.call("proposal.diff", paged(args, &q.page()?, DIFF_AND_INBOX_MAX))?;
            let sections = list(&page, "files");
            let symbols = page_symbols(r, id, &page, &sections)?;
            let items: Vec<Value> = sections
                .iter()
                .map(|s| file_diff(s, &claims, &symbols))
                .collect();
            Ok(json!({
                "revision": page["revision"],
                "total_files": page["total_files"],
                "items": items,
                "next_cursor": page["next_cursor"],
            }))
        }
    }
}

/// The symbols of the files of `sections`, of diff page `page`: one
/// `proposal.symbols` call for them. A file the symbol index refuses
/// (`invalid_argument`: nested too deep; `unsupported_language`: its
/// grammar not built) leaves the page without symbols, not without a diff.
fn page_symbols(
    r: &Reader<'_>,
    id: &str,
    page: &Value,
    sections: &[Value],
) -> Result<PageSymbols, ToolError> {
    let args = crate::hunk_symbols::request(id, &page["revision"], sections);
    match r.call("proposal.symbols", args) {
        Ok(answer) => Ok(PageSymbols::of(answer)),
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::InvalidArgument | ErrorCode::UnsupportedLanguage
            ) =>
        {
            Ok(PageSymbols::default())
        }
        Err(e) => Err(e),
    }
}

/// The symbols a revision touches (`proposal.symbols`).
pub(crate) fn symbols(r: &Reader<'_>, id: &str, q: &Query) -> Result<Value, ToolError> {
    let mut args = json!({ "proposal_id": id });
    if let Some(rev) = q.number("revision")? {
        args["revision"] = json!(rev);
    }
    r.call("proposal.symbols", args)
}

/// What changed between two revisions (`proposal.compare`).
pub(crate) fn interdiff(r: &Reader<'_>, id: &str, q: &Query) -> Result<Value, ToolError> {
    let need = |name: &str| {
        q.number(name)?
            .ok_or_else(|| ToolError::invalid_argument(name, "required: a revision number"))
    };
    r.call(
        "proposal.compare",
        json!({"proposal_id": id, "from_revision": need("from")?, "to_revision": need("to")?}),
    )
}

/// One page of transactions (`transaction.list`).
pub(crate) fn transactions(r: &Reader<'_>, q: &Query) -> Result<Paged, ToolError> {
    let page = r.call("transaction.list", paged(json!({}), &q.page()?, MAX_LIMIT))?;
    Ok(Paged::of(&page, "transactions"))
}

/// Each line of a file at the landing branch's tip with what landed it
/// (`provenance.blame` of the query's `path`; a missing path is the
/// tool's own refusal).
pub(crate) fn blame(r: &Reader<'_>, q: &Query) -> Result<Value, ToolError> {
    let mut args = json!({});
    if let Some(path) = q.get("path") {
        args["path"] = json!(path);
    }
    r.call("provenance.blame", args)
}

/// Every registered agent (`agent.list`, all pages), filtered by the
/// query's `role` and `enabled` as the tool filters.
pub(crate) fn agents(r: &Reader<'_>, q: &Query) -> Result<Value, ToolError> {
    let mut args = json!({});
    if let Some(role) = q.get("role") {
        args["role"] = json!(role);
    }
    match q.get("enabled") {
        None => {}
        Some("true") => args["enabled"] = json!(true),
        Some("false") => args["enabled"] = json!(false),
        Some(_) => return Err(ToolError::invalid_argument("enabled", "true or false")),
    }
    Ok(json!({ "agents": r.all("agent.list", args, "agents")? }))
}

/// What agent `id` landed that is still applied, oldest first: its
/// proposals (`proposal.list` by author) joined with the applied `apply`
/// transactions (`transaction.list`), each with the time it landed (the
/// transaction's `finished_at`, the `since` `proposal.revert_agent`
/// compares). The agent itself is `agent.get`'s (an unknown one is its
/// `not_found`).
pub(crate) fn landings(r: &Reader<'_>, id: &str) -> Result<Value, ToolError> {
    let agent = r.call("agent.get", json!({ "agent_id": id }))?;
    let mut titles = std::collections::BTreeMap::new();
    for p in r.all("proposal.list", json!({ "author": id }), "proposals")? {
        if let Some(pid) = p["id"].as_str() {
            titles.insert(pid.to_owned(), p["title"].clone());
        }
    }
    let landed: Vec<Value> = r
        .all(
            "transaction.list",
            json!({ "status": "applied" }),
            "transactions",
        )?
        .into_iter()
        .filter(|t| t["kind"] == "apply")
        .filter_map(|t| {
            let title = titles.get(t["proposal_id"].as_str()?)?.clone();
            let at = match &t["finished_at"] {
                Value::Null => t["created_at"].clone(),
                at => at.clone(),
            };
            Some(json!({
                "proposal_id": t["proposal_id"],
                "title": title,
                "revision": t["revision"],
                "transaction_id": t["id"],
                "landed_at": at,
            }))
        })
        .collect();
    Ok(json!({
        "agent": agent.get("agent").cloned().unwrap_or(agent),
        "landings": landed,
    }))
}

/// The most landed commits searched for a transaction's commit.
const LANDING_LOG_MAX: u32 = 1000;

/// One transaction with its files, phases and, when it landed as a git
/// commit the caller may read (`landing.log`), that commit with its
/// trailers (`commit`, else `null`).
pub(crate) fn transaction(r: &Reader<'_>, id: &str) -> Result<Value, ToolError> {
    let tid = json!({ "transaction_id": id });
    let mut got = r.call("transaction.get", tid.clone())?;
    got["phases"] = r.call("transaction.phases", tid)?["phases"].take();
    let log = optional(r.call("landing.log", json!({ "limit": LANDING_LOG_MAX })))?;
    got["commit"] = list(&log, "commits")
        .into_iter()
        .find(|c| {
            list(c, "trailers")
                .iter()
                .any(|t| t[0] == "Roundtable-Transaction" && t[1].as_str() == Some(id))
        })
        .unwrap_or(Value::Null);
    Ok(got)
}

/// A part of a view the caller may not read (`forbidden`), or that the
/// workspace's landing mode does not have (`precondition_failed`: no
/// commits in files mode), as `null`; any other refusal stands.
fn optional(out: Result<Value, ToolError>) -> Result<Value, ToolError> {
    match out {
        Ok(v) => Ok(v),
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::Forbidden | ErrorCode::PreconditionFailed
            ) =>
        {
            Ok(Value::Null)
        }
        Err(e) => Err(e),
    }
}

/// One page of claims (`claim.list`), optionally of one `status`.
pub(crate) fn claims(r: &Reader<'_>, q: &Query) -> Result<Paged, ToolError> {
    let mut args = json!({});
    if let Some(status) = q.get("status") {
        args["status"] = json!(status);
    }
    let page = r.call("claim.list", paged(args, &q.page()?, MAX_LIMIT))?;
    Ok(Paged::of(&page, "claims"))
}

/// The landing picture: the landed commits (git mode), the queue and
/// whether the event chain verifies. A part the caller may not read
/// (`forbidden`), or that the workspace's mode does not have
/// (`precondition_failed`: no commits in files mode), is `null`.
pub(crate) fn landing(r: &Reader<'_>) -> Result<Value, ToolError> {
    let optional = |out: Result<Value, ToolError>| match out {
        Ok(v) => Ok(v),
        Err(e)
            if matches!(
                e.code(),
                ErrorCode::Forbidden | ErrorCode::PreconditionFailed
            ) =>
        {
            Ok(Value::Null)
        }
        Err(e) => Err(e),
    };
    let log = optional(r.call("landing.log", json!({})))?;
    let queue = optional(r.call("queue.list", json!({})))?;
    let chain = r.call("events.verify", json!({}))?;
    let mut out = Map::new();
    out.insert("log".into(), log);
    out.insert("queue".into(), queue);
    out.insert("chain".into(), chain);
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_number_and_class_their_lines() {
        let section = "diff --git a/x.rs b/x.rs\n--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@ fn main\n fn a() {}\n-let x = 1;\n+let x = 2;\n\\ No newline at end of file\n";
        let h = hunks(section, Lang::of_path("x.rs"));
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].symbol.as_deref(), Some("fn main"));
        let kinds: Vec<_> = h[0]
            .lines
            .iter()
            .map(|l| (l.kind, l.old_no, l.new_no))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (LineKind::Context, Some(1), Some(1)),
                (LineKind::Del, Some(2), None),
                (LineKind::Add, None, Some(2)),
            ]
        );
        assert_eq!(h[0].lines[1].classes[0], (0, 3, Class::Keyword));
        // A deleted line that looks like a file header stays a line.
        let tricky = "@@ -1 +0,0 @@\n--- a/not-a-header\n";
        assert_eq!(hunks(tricky, None)[0].lines[0].text, "-- a/not-a-header");
        assert!(hunks("garbage\n@@ broken\n", None).is_empty());
    }

    #[test]
    fn claims_cover_their_files_symbols_and_directories() {
        let paths = ["src/a.rs".to_owned()];
        let c = |r: &str| json!({ "resource_id": r });
        assert!(covers_any(&c("file:src/a.rs"), &paths));
        assert!(covers_any(&c("symbol:src/a.rs#main"), &paths));
        assert!(covers_any(&c("directory:src"), &paths));
        assert!(covers_any(&c("directory:."), &paths));
        assert!(!covers_any(&c("directory:sr"), &paths));
        assert!(!covers_any(&c("file:src/a.rsx"), &paths));
    }
}
