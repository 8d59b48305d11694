//! Issue 20: many hosts on one PostgreSQL store. Runs when
//! `RT_TEST_STORE` names a PostgreSQL server (`scripts/test` starts a
//! throwaway one); on the SQLite default these tests have nothing to run
//! against and return at once.
//!
//! - Four engines in four processes, each on its own bare clone of one
//!   remote, all on one database: four agents each land 25 proposals
//!   under contended symbol claims. Every proposal lands exactly once, the
//!   remote's history holds each change once, the event chain verifies
//!   without gaps, no claim was granted while another was live on the same
//!   resource, and every landing's author held the resource's latest grant.
//! - The database restarted mid-run: calls fail `database`, retryable,
//!   and what failed left nothing half-written; the engine carries on.
//! - A host SIGKILLed mid-landing: its clone recovers on open, and the
//!   shared store agrees with the remote.

use super::landing::git;
use super::tools::{id, str_of};
use roundtable::{Actor, Engine, EngineOptions, ErrorCode, ToolError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The PostgreSQL server the suite runs against, if any.
fn server() -> Option<String> {
    std::env::var("RT_TEST_STORE")
        .ok()
        .filter(|s| !s.is_empty())
}

/// A store URL on `base` in a schema of its own.
fn store_url(base: &str, schema: &str) -> String {
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}schema={schema}")
}

/// A fresh schema name.
fn fresh_schema(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}

fn options(url: &str) -> EngineOptions {
    EngineOptions {
        store: Some(url.to_owned()),
        ..EngineOptions::default()
    }
}

const SYMBOLS: usize = 5;
const HOSTS: usize = 4;
const PER_HOST_VAR: &str = "RT_PG_HOSTS_PROPOSALS";

fn per_host() -> usize {
    std::env::var(PER_HOST_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25)
}

/// A bare remote on `main` with `src/fJ.rs` holding function `fJ`, for
/// each of the [`SYMBOLS`].
fn remote_with_symbols(top: &Path) -> PathBuf {
    let work = top.join("seed");
    std::fs::create_dir_all(work.join("src")).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    for j in 0..SYMBOLS {
        std::fs::write(
            work.join(format!("src/f{j}.rs")),
            format!("fn f{j}() {{\n    // start\n}}\n"),
        )
        .expect("write");
    }
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "base"]);
    let remote = top.join("remote.git");
    git(
        top,
        &[
            "clone",
            "-q",
            "--bare",
            "seed",
            remote.to_str().expect("utf-8"),
        ],
    );
    remote
}

/// A patch adding `line` as the last line of `content`'s function body.
fn append_to_body(path: &str, content: &str, line: &str) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let n = lines.len();
    assert!(n >= 2 && lines[n - 1] == "}", "{content}");
    format!(
        "--- a/{path}\n+++ b/{path}\n@@ -{},2 +{},3 @@\n {}\n+{line}\n }}\n",
        n - 1,
        n - 1,
        lines[n - 2]
    )
}

/// The whole log, page by page.
fn all_events(engine: &Engine, actor: &Actor) -> Vec<Value> {
    let mut events = Vec::new();
    let mut since = 0;
    loop {
        let page = ok(
            engine,
            "events.list",
            json!({"since_seq": since, "limit": 1000}),
            actor,
        );
        let got = page["events"].as_array().expect("events").clone();
        if got.is_empty() {
            return events;
        }
        since = got.last().expect("one")["seq"].as_i64().expect("seq");
        events.extend(got);
    }
}

/// How many tasks the store holds, page by page.
fn task_count(engine: &Engine, actor: &Actor) -> usize {
    let mut count = 0;
    let mut cursor = Value::Null;
    loop {
        let page = ok(
            engine,
            "task.list",
            json!({"limit": 200, "cursor": cursor}),
            actor,
        );
        count += page["tasks"].as_array().expect("tasks").len();
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            return count;
        }
    }
}

fn call(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Result<Value, ToolError> {
    engine.call(tool, args, actor)
}

fn ok(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Value {
    call(engine, tool, args.clone(), actor)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
}

/// Bring a bare clone's `main` to the remote's.
fn fetch(clone: &Path) {
    git(
        clone,
        &["fetch", "-q", "origin", "+refs/heads/main:refs/heads/main"],
    );
}

fn blob_of(clone: &Path, path: &str) -> String {
    git(clone, &["rev-parse", &format!("main:{path}")])
        .trim()
        .to_owned()
}

/// Not a test on its own: one host of the many-hosts test, re-executed by
/// it with `RT_PG_HOST` set. Its agent lands its proposals one by one,
/// each under a write claim on one of the shared symbols, and writes a
/// line per landing to the report file: `pid resource token`.
#[test]
fn pg_host_worker() {
    let Ok(k) = std::env::var("RT_PG_HOST") else {
        return;
    };
    let clone = PathBuf::from(std::env::var("RT_PG_CLONE").expect("clone"));
    let url = std::env::var("RT_PG_URL").expect("url");
    let report = PathBuf::from(std::env::var("RT_PG_REPORT").expect("report"));
    let engine = Engine::open(&clone, options(&url)).expect("open the clone on the shared store");
    let host = Actor::orchestrator(id(&format!("host{k}")));
    let author = Actor::agent(id(&format!("a{k}")));
    let reviewer = Actor::agent(id(&format!("r{k}")));
    ok(
        &engine,
        "agent.register",
        json!({"agent_id": format!("a{k}"), "roles": ["author"]}),
        &host,
    );
    ok(
        &engine,
        "agent.register",
        json!({"agent_id": format!("r{k}"), "roles": ["reviewer"]}),
        &host,
    );
    let task = format!("t{k}");
    ok(
        &engine,
        "task.create",
        json!({"task_id": task, "title": "many hosts"}),
        &host,
    );
    ok(
        &engine,
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
        &host,
    );
    let k: usize = k.parse().expect("host number");
    let mut lines = String::new();
    for i in 0..per_host() {
        let j = (i + k) % SYMBOLS;
        let path = format!("src/f{j}.rs");
        let resource = format!("symbol:{path}#f{j}");
        // Claim on fresh content: fetch, claim (waiting for the holder),
        // and if the symbol's file moved meanwhile, let go and again.
        let claim = loop {
            fetch(&clone);
            let seen = blob_of(&clone, &path);
            let claim = ok(
                &engine,
                "claim.acquire",
                json!({"resource_id": resource, "type": "write", "ttl_s": 3600, "wait_ms": 60_000}),
                &author,
            )["claim"]
                .clone();
            fetch(&clone);
            if blob_of(&clone, &path) == seen {
                break claim;
            }
            ok(
                &engine,
                "claim.release",
                json!({"claim_id": claim["id"]}),
                &author,
            );
        };
        let content = git(&clone, &["show", &format!("main:{path}")]);
        let patch = append_to_body(&path, &content, &format!("    // a{k} {i}"));
        let pid = str_of(
            &ok(
                &engine,
                "proposal.create",
                json!({"task_id": task, "title": format!("a{k} {i}"), "summary_md": "s", "patch": patch}),
                &author,
            )["proposal"]["id"],
        );
        ok(
            &engine,
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &author,
        );
        ok(
            &engine,
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &reviewer,
        );
        // Another host's landing of another file may win the push race:
        // applying again fetches and lands on the new tip.
        let mut landed = false;
        for _ in 0..100 {
            match call(
                &engine,
                "patch.apply",
                json!({"proposal_id": pid, "revision": 1}),
                &host,
            ) {
                Ok(out) => {
                    assert_eq!(out["transaction"]["status"], "applied");
                    landed = true;
                    break;
                }
                Err(e)
                    if e.code() == ErrorCode::PreconditionFailed
                        && e.details()["remote"].is_string() => {}
                Err(e) => panic!("{pid}: {e} {}", e.details()),
            }
        }
        assert!(landed, "{pid} did not land in 100 tries");
        lines.push_str(&format!("{pid} {resource} {}\n", claim["token"]));
    }
    std::fs::write(&report, lines).expect("report");
}

#[test]
fn four_hosts_on_one_postgres_store_land_every_proposal_once_under_contended_symbol_claims() {
    let Some(base) = server() else { return };
    let url = store_url(&base, &fresh_schema("hosts"));
    let top = tempfile::tempdir().expect("tempdir");
    let remote = remote_with_symbols(top.path());
    let base_commit = git(&remote, &["rev-parse", "main"]).trim().to_owned();
    let mut children = Vec::new();
    for k in 0..HOSTS {
        let clone = top.path().join(format!("h{k}.git"));
        git(
            top.path(),
            &[
                "clone",
                "-q",
                "--bare",
                "remote.git",
                clone.to_str().expect("utf-8"),
            ],
        );
        let report = top.path().join(format!("h{k}.report"));
        let child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "pg_hosts::pg_host_worker",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RT_PG_HOST", k.to_string())
            .env("RT_PG_CLONE", &clone)
            .env("RT_PG_URL", &url)
            .env("RT_PG_REPORT", &report)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn a host");
        children.push((child, report));
    }
    let mut landings: Vec<(String, String, i64)> = Vec::new();
    for (child, report) in children {
        let out = child.wait_with_output().expect("wait for a host");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "host failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&report).expect("report");
        for line in text.lines() {
            let mut parts = line.split(' ');
            let pid = parts.next().expect("pid").to_owned();
            let resource = parts.next().expect("resource").to_owned();
            let token: i64 = parts.next().expect("token").parse().expect("token");
            landings.push((pid, resource, token));
        }
    }
    let n = HOSTS * per_host();
    assert_eq!(landings.len(), n);

    // The remote: one linear history, each change on it exactly once.
    let log = git(&remote, &["rev-list", "--parents", "main"]);
    let commits: Vec<&str> = log.lines().collect();
    assert_eq!(commits.len(), n + 1, "one commit per proposal");
    assert!(commits.iter().all(|l| l.split(' ').count() <= 2), "a merge");
    assert_eq!(commits.last().map(|l| l.trim()), Some(base_commit.as_str()));
    let mut markers = BTreeMap::new();
    for j in 0..SYMBOLS {
        let content = git(&remote, &["show", &format!("main:src/f{j}.rs")]);
        for line in content.lines().filter(|l| l.starts_with("    // a")) {
            *markers.entry(line.to_owned()).or_insert(0) += 1;
        }
    }
    assert_eq!(markers.len(), n, "every change is on the remote");
    assert!(markers.values().all(|&c| c == 1), "a change landed twice");

    // The shared store: every proposal applied once; the chain verifies
    // and has no gaps.
    let viewer = top.path().join("viewer.git");
    git(
        top.path(),
        &[
            "clone",
            "-q",
            "--bare",
            "remote.git",
            viewer.to_str().expect("utf-8"),
        ],
    );
    let engine = Engine::open(&viewer, options(&url)).expect("open a viewer");
    let host = Actor::orchestrator(id("viewer"));
    let verify = ok(&engine, "events.verify", json!({}), &host);
    assert_eq!(verify["valid"], true, "{verify}");
    let events = all_events(&engine, &host);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"].as_i64(), Some(i as i64 + 1), "a gap in the chain");
    }
    assert_eq!(verify["last_seq"].as_i64(), Some(events.len() as i64));
    let applied: Vec<&Value> = events
        .iter()
        .filter(|e| e["kind"] == "proposal.applied")
        .collect();
    assert_eq!(applied.len(), n, "one landing per proposal");
    let mut per_proposal: HashMap<&str, usize> = HashMap::new();
    for e in &applied {
        *per_proposal
            .entry(e["proposal_id"].as_str().expect("pid"))
            .or_default() += 1;
    }
    assert!(per_proposal.values().all(|&c| c == 1));

    // Claims: per resource, in commit order, a grant only once the
    // previous grant was released; every landing's author held the
    // resource's latest grant, with the token it reported.
    let mut holder: HashMap<String, (String, i64, String)> = HashMap::new(); // resource -> (claim id, token, agent)
    let mut claim_resource: HashMap<String, String> = HashMap::new();
    let mut last_token = 0;
    let by_pid: HashMap<&str, (&str, i64)> = landings
        .iter()
        .map(|(p, r, t)| (p.as_str(), (r.as_str(), *t)))
        .collect();
    let mut checked = 0;
    for e in &events {
        match e["kind"].as_str() {
            Some("claim.acquired") => {
                let resource = str_of(&e["data"]["resource_id"]);
                let token = e["data"]["token"].as_i64().expect("token");
                assert!(token > last_token, "tokens grow in commit order");
                last_token = token;
                assert!(
                    !holder.contains_key(&resource),
                    "{resource} granted while {:?} was live",
                    holder.get(&resource)
                );
                let claim = str_of(&e["subject"]);
                claim_resource.insert(claim.clone(), resource.clone());
                holder.insert(resource, (claim, token, str_of(&e["actor"]["id"])));
            }
            Some("claim.released") => {
                let claim = str_of(&e["subject"]);
                if let Some(resource) = claim_resource.get(&claim) {
                    if holder.get(resource).is_some_and(|(c, _, _)| *c == claim) {
                        holder.remove(resource);
                    }
                }
            }
            Some("proposal.applied") => {
                let pid = e["proposal_id"].as_str().expect("pid");
                let (resource, token) = by_pid[pid];
                let (_, latest, agent) = holder
                    .get(resource)
                    .unwrap_or_else(|| panic!("{pid} landed with no live grant on {resource}"));
                assert_eq!(*latest, token, "{pid} landed with a superseded token");
                let author = ok(&engine, "proposal.get", json!({"proposal_id": pid}), &host)
                    ["proposal"]["author"]
                    .clone();
                assert_eq!(author, json!(agent), "{pid}: the grant is another agent's");
                checked += 1;
            }
            _ => {}
        }
    }
    assert_eq!(checked, n);
}

/// A cluster of the test's own, started with `scripts/pg-cluster`, so
/// restarting it disturbs no other test; stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    url: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster")
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("rt-pg-")
            .tempdir_in("/tmp")
            .expect("tempdir");
        let out = Command::new("bash")
            .arg(script())
            .args(["start"])
            .arg(dir.path().join("c"))
            .arg("--fast")
            .output()
            .expect("run pg-cluster");
        assert!(
            out.status.success(),
            "pg-cluster start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Cluster { dir, url }
    }

    fn run(&self, what: &str) {
        let out = Command::new("bash")
            .arg(script())
            .arg(what)
            .arg(self.dir.path().join("c"))
            .output()
            .expect("run pg-cluster");
        assert!(
            out.status.success(),
            "pg-cluster {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(script())
            .arg("stop")
            .arg(self.dir.path().join("c"))
            .output();
    }
}

#[test]
fn a_database_restart_fails_calls_as_retryable_database_errors_and_writes_nothing_half() {
    if server().is_none() {
        return;
    }
    let cluster = Cluster::start();
    let url = store_url(&cluster.url, "restart");
    let root = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(root.path(), options(&url)).expect("open");
    let host = Actor::orchestrator(id("host"));
    ok(
        &engine,
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author"]}),
        &host,
    );
    let mut created = 0;
    let mut refused = Vec::new();
    for round in 0..3 {
        // Tasks are created from two threads while the server restarts
        // under them.
        let stop = std::sync::atomic::AtomicBool::new(false);
        let results: Vec<Result<Value, ToolError>> = std::thread::scope(|s| {
            let makers: Vec<_> = (0..2)
                .map(|t| {
                    let (engine, host, stop) = (&engine, &host, &stop);
                    s.spawn(move || {
                        let mut out = Vec::new();
                        let mut i = 0;
                        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                            out.push(call(
                                engine,
                                "task.create",
                                json!({"task_id": format!("r{round}-{t}-{i}"), "title": "x"}),
                                host,
                            ));
                            i += 1;
                        }
                        out
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(150));
            cluster.run("restart");
            std::thread::sleep(std::time::Duration::from_millis(300));
            stop.store(true, std::sync::atomic::Ordering::SeqCst);
            makers
                .into_iter()
                .flat_map(|m| m.join().expect("maker"))
                .collect()
        });
        for r in results {
            match r {
                Ok(v) => {
                    assert_eq!(v["created"], true);
                    created += 1;
                }
                Err(e) => {
                    assert_eq!(e.code(), ErrorCode::Database, "{e}");
                    assert_eq!(e.details()["retryable"], true, "{e} {}", e.details());
                    refused.push(e.to_string());
                }
            }
        }
    }
    assert!(
        !refused.is_empty(),
        "no call met the restart (created {created})"
    );
    // Nothing half-written: every task the store holds was reported
    // created, with its event; the chain verifies; the engine goes on.
    assert_eq!(
        task_count(&engine, &host),
        created,
        "refused calls left tasks behind"
    );
    let verify = ok(&engine, "events.verify", json!({}), &host);
    assert_eq!(verify["valid"], true, "{verify}");
    let task_events = all_events(&engine, &host)
        .iter()
        .filter(|e| e["kind"] == "task.created")
        .count();
    assert_eq!(task_events, created);
    ok(
        &engine,
        "task.create",
        json!({"task_id": "after", "title": "x"}),
        &host,
    );
    eprintln!(
        "restart: {created} created, {} refused, e.g. {}",
        refused.len(),
        refused[0]
    );
}

#[test]
fn a_store_url_the_server_refuses_is_a_retryable_database_error_at_open() {
    if server().is_none() {
        return;
    }
    let root = tempfile::tempdir().expect("tempdir");
    // A socket directory no server listens in.
    let e = Engine::open(
        root.path(),
        options("postgres://roundtable:secret@%2Fnonexistent-rt-socket/postgres"),
    )
    .expect_err("no server");
    assert_eq!(e.code(), ErrorCode::Database, "{e}");
    assert_eq!(e.details()["retryable"], true, "{}", e.details());
    assert!(
        !e.to_string().contains("secret"),
        "the message names no password"
    );
}
