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

use super::landing::{fsck, git};
use super::support::{server, store_url};
use super::tools::{id, str_of};
use roundtable::{Actor, Engine, EngineOptions, ErrorCode, ToolError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A fresh schema name.
pub(super) fn fresh_schema(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos();
    format!("{prefix}_{}_{nanos}", std::process::id())
}

pub(super) fn options(url: &str) -> EngineOptions {
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
pub(super) fn remote_with_symbols(top: &Path) -> PathBuf {
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
pub(super) fn append_to_body(path: &str, content: &str, line: &str) -> String {
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
pub(super) fn all_events(engine: &Engine, actor: &Actor) -> Vec<Value> {
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

pub(super) fn call(
    engine: &Engine,
    tool: &str,
    args: Value,
    actor: &Actor,
) -> Result<Value, ToolError> {
    engine.call(tool, args, actor)
}

pub(super) fn ok(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Value {
    call(engine, tool, args.clone(), actor)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
}

/// Bring a bare clone's `main` to the remote's.
pub(super) fn fetch(clone: &Path) {
    git(
        clone,
        &["fetch", "-q", "origin", "+refs/heads/main:refs/heads/main"],
    );
}

pub(super) fn blob_of(clone: &Path, path: &str) -> String {
    git(clone, &["rev-parse", &format!("main:{path}")])
        .trim()
        .to_owned()
}

/// The actors of one host: its orchestrator, an author and a reviewer.
pub(super) struct Crew {
    pub(super) host: Actor,
    pub(super) author: Actor,
    pub(super) reviewer: Actor,
    task: String,
}

impl Crew {
    /// Host `host`, agents `author` and `reviewer`, task `task`.
    pub(super) fn new(host: &str, author: &str, reviewer: &str, task: &str) -> Crew {
        Crew {
            host: Actor::orchestrator(id(host)),
            author: Actor::agent(id(author)),
            reviewer: Actor::agent(id(reviewer)),
            task: task.to_owned(),
        }
    }

    /// Register the agents, create the task, land through `origin`.
    pub(super) fn set_up(&self, engine: &Engine) {
        for (tool, args) in [
            (
                "agent.register",
                json!({"agent_id": self.author.id.as_str(), "roles": ["author"]}),
            ),
            (
                "agent.register",
                json!({"agent_id": self.reviewer.id.as_str(), "roles": ["reviewer"]}),
            ),
            (
                "task.create",
                json!({"task_id": self.task, "title": "many hosts"}),
            ),
            (
                "workspace.configure",
                json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
            ),
        ] {
            ok(engine, tool, args, &self.host);
        }
    }

    /// A proposal of `patch` titled `title`, in review and approved (the
    /// author's claims are the caller's).
    pub(super) fn approved(
        &self,
        engine: &Engine,
        title: &str,
        patch: &str,
    ) -> Result<String, ToolError> {
        let pid = str_of(
            &call(
                engine,
                "proposal.create",
                json!({"task_id": self.task, "title": title, "summary_md": "s", "patch": patch}),
                &self.author,
            )?["proposal"]["id"],
        );
        call(
            engine,
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &self.author,
        )?;
        call(
            engine,
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &self.reviewer,
        )?;
        Ok(pid)
    }

    /// Apply `pid`.
    pub(super) fn apply(&self, engine: &Engine, pid: &str) -> Result<Value, ToolError> {
        call(
            engine,
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &self.host,
        )
    }

    /// Claim `resource` for writing as the author.
    pub(super) fn claim(&self, engine: &Engine, resource: &str) -> Result<Value, ToolError> {
        call(
            engine,
            "claim.acquire",
            json!({"resource_id": resource, "type": "write", "ttl_s": 36000}),
            &self.author,
        )
    }
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
    let crew = Crew::new(
        &format!("host{k}"),
        &format!("a{k}"),
        &format!("r{k}"),
        &format!("t{k}"),
    );
    crew.set_up(&engine);
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
                &crew.author,
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
                &crew.author,
            );
        };
        let content = git(&clone, &["show", &format!("main:{path}")]);
        let patch = append_to_body(&path, &content, &format!("    // a{k} {i}"));
        let pid = crew
            .approved(&engine, &format!("a{k} {i}"), &patch)
            .unwrap_or_else(|e| panic!("a{k} {i}: {e} {}", e.details()));
        // Another host's landing of another file may win the push race:
        // applying again fetches and lands on the new tip.
        let mut landed = false;
        for _ in 0..100 {
            match crew.apply(&engine, &pid) {
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
        let stderr = String::from_utf8_lossy(&out.stderr);
        // The panic's own lines first: a long backtrace must not push
        // them out of a truncated CI log.
        let panic: Vec<&str> = stderr
            .lines()
            .skip_while(|l| !l.contains("panicked at"))
            .take(4)
            .collect();
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "host failed ({}): {}\n{stdout}\n{stderr}",
            out.status,
            panic.join("\n"),
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
    fsck(&remote);
    // Each host's clone took every landing's objects as git would, loose
    // (a pack per landing had reached git's `gc.autoPackLimit` of 50, and
    // the automatic gc it started raced the host's next fetch).
    for k in 0..HOSTS {
        let clone = top.path().join(format!("h{k}.git"));
        let counts = git(&clone, &["count-objects", "-v"]);
        let packs: usize = counts
            .lines()
            .find_map(|l| l.strip_prefix("packs: "))
            .and_then(|n| n.parse().ok())
            .expect("a pack count");
        assert!(packs < 50, "host {k}'s clone holds {packs} packs");
        fsck(&clone);
    }

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
pub(crate) struct Cluster {
    dir: tempfile::TempDir,
    pub(crate) url: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/pg-cluster")
}

impl Cluster {
    pub(crate) fn start() -> Cluster {
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

    pub(crate) fn run(&self, what: &str) {
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

/// Not a test on its own: re-executed by the SIGKILL test with
/// `RT_PG_APPLY_ROOT` set, open the clone on the shared store, say so,
/// and apply the proposal once.
#[test]
fn pg_apply_worker() {
    let Some(root) = std::env::var_os("RT_PG_APPLY_ROOT") else {
        return;
    };
    let url = std::env::var("RT_PG_URL").expect("url");
    let pid = std::env::var("RT_PG_PID").expect("pid");
    let ready = PathBuf::from(std::env::var_os("RT_PG_READY").expect("ready"));
    let engine = Engine::open(Path::new(&root), options(&url)).expect("open");
    std::fs::write(&ready, "").expect("ready");
    let host = Actor::orchestrator(id("host"));
    ok(
        &engine,
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &host,
    );
}

/// The commit `refs/heads/main` of a bare repository holds when loose.
fn loose_main(git_dir: &Path) -> Option<Vec<u8>> {
    std::fs::read(git_dir.join("refs/heads/main")).ok()
}

#[test]
fn a_host_sigkilled_mid_landing_recovers_on_open_and_the_shared_store_agrees_with_the_remote() {
    let Some(base) = server() else { return };
    const RUNS: usize = 15;
    const FILES: usize = 80;
    let (mut at_old, mut at_new, mut forward) = (0, 0, 0);
    let mut full = std::time::Duration::from_millis(300);
    for run in 0..=RUNS {
        // Run 0 is not killed: it times a whole landing.
        let top = tempfile::tempdir().expect("tempdir");
        let remote = top.path().join("remote.git");
        let work = top.path().join("seed");
        std::fs::create_dir_all(&work).expect("mkdir");
        git(&work, &["init", "-q", "-b", "main"]);
        for i in 0..FILES {
            std::fs::create_dir_all(work.join(format!("d{}", i % 8))).expect("mkdir");
            std::fs::write(
                work.join(format!("d{}/f{i}.txt", i % 8)),
                format!("file {i}\nline two\n"),
            )
            .expect("write");
        }
        git(&work, &["add", "-A"]);
        git(&work, &["commit", "-q", "-m", "files"]);
        git(
            top.path(),
            &[
                "clone",
                "-q",
                "--bare",
                "seed",
                remote.to_str().expect("utf-8"),
            ],
        );
        git(top.path(), &["clone", "-q", "remote.git", "clone"]);
        let clone = top.path().join("clone");
        let old = git(&remote, &["rev-parse", "main"]).trim().to_owned();
        let url = store_url(&base, &fresh_schema("kill"));
        let crew = Crew::new("host", "alice", "bob", "t1");
        let host = crew.host.clone();
        let pid = {
            let engine = Engine::open(&clone, options(&url)).expect("open");
            crew.set_up(&engine);
            crew.claim(&engine, "directory:.").expect("claim");
            let patch: String = (0..FILES)
                .map(|i| {
                    let p = format!("d{}/f{i}.txt", i % 8);
                    format!("--- a/{p}\n+++ b/{p}\n@@ -1,2 +1,2 @@\n file {i}\n-line two\n+line two, changed\n")
                })
                .collect();
            crew.approved(&engine, "Many", &patch).expect("approved")
        };
        let ready = top.path().join("ready");
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "pg_hosts::pg_apply_worker",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("RT_PG_APPLY_ROOT", &clone)
            .env("RT_PG_URL", &url)
            .env("RT_PG_PID", &pid)
            .env("RT_PG_READY", &ready)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !ready.exists() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let t0 = std::time::Instant::now();
        if run == 0 {
            assert!(child.wait().expect("wait").success(), "the untouched apply");
            full = t0.elapsed().max(std::time::Duration::from_millis(2));
        } else {
            if run % 3 == 0 {
                // Right after the commit point: as soon as the remote's
                // branch moved.
                let before = loose_main(&remote);
                while loose_main(&remote) == before && std::time::Instant::now() < deadline {
                    if child.try_wait().expect("poll").is_some() {
                        break;
                    }
                }
            } else {
                std::thread::sleep(full * u32::try_from(run).expect("small") / RUNS as u32);
            }
            child.kill().ok();
            let _ = child.wait();
        }
        let engine = Engine::open(&clone, options(&url)).expect("reopen recovers");
        let status = str_of(
            &ok(&engine, "proposal.get", json!({"proposal_id": pid}), &host)["proposal"]["status"],
        );
        let txs = ok(
            &engine,
            "transaction.list",
            json!({"proposal_id": pid}),
            &host,
        )["transactions"]
            .clone();
        let tx_status = txs[0]["status"].as_str().map(str::to_owned);
        let tip = git(&remote, &["rev-parse", "main"]).trim().to_owned();
        if tip == old {
            at_old += 1;
            assert_eq!(status, "in_review", "run {run}");
            assert!(
                matches!(tx_status.as_deref(), None | Some("recovered")),
                "run {run}: {tx_status:?}"
            );
        } else {
            at_new += 1;
            assert_eq!(
                git(&remote, &["rev-parse", "main^"]).trim(),
                old,
                "run {run}"
            );
            assert_eq!(status, "applied", "run {run}");
            assert_eq!(tx_status.as_deref(), Some("applied"), "run {run}");
            forward += all_events(&engine, &host)
                .iter()
                .filter(|e| e["kind"] == "transaction.applied" && e["data"]["recovered"] == true)
                .count();
        }
        // The clone is the remote's commit, working tree and index too.
        assert_eq!(
            git(&clone, &["rev-parse", "refs/heads/main"]).trim(),
            tip,
            "run {run}"
        );
        assert_eq!(
            git(&clone, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "run {run}"
        );
        assert_eq!(
            ok(&engine, "events.verify", json!({}), &host)["valid"],
            true,
            "run {run}"
        );
        fsck(&remote);
        fsck(&clone);
    }
    eprintln!(
        "postgres crash test: {RUNS} SIGKILLed landings: {at_new} landed ({forward} brought forward on open), {at_old} did not"
    );
    assert_eq!(at_new + at_old, RUNS + 1);
    assert!(at_old > 0, "no run was killed before the commit point");
    assert!(
        forward > 0,
        "no run was killed between the push and the outcome"
    );
}

#[test]
fn a_database_restart_mid_landing_leaves_the_shared_store_agreeing_with_the_remote() {
    if server().is_none() {
        return;
    }
    let cluster = Cluster::start();
    let url = store_url(&cluster.url, "landing");
    let top = tempfile::tempdir().expect("tempdir");
    let remote = remote_with_symbols(top.path());
    let clone = top.path().join("h.git");
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
    let crew = Crew::new("host", "alice", "bob", "t1");
    let host = crew.host.clone();
    let mut landed = Vec::new();
    let mut refused = 0;
    {
        let engine = Engine::open(&clone, options(&url)).expect("open");
        crew.set_up(&engine);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let met = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            let restarter = s.spawn(|| {
                // At least three restarts, and more (up to 15) until one
                // meets a step: an outcome the engine retries through a
                // restart no longer fails the step.
                for n in 0..15 {
                    if n >= 3 && met.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(400));
                    cluster.run("restart");
                }
                stop.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                // Each step may meet the restart: a refused step is given
                // up (its proposal stays unlanded) and the next one begun.
                let path = format!("new/{i}.txt");
                i += 1;
                let step = || -> Result<String, ToolError> {
                    crew.claim(&engine, &format!("file:{path}"))?;
                    let patch = format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{path}\n");
                    let pid = crew.approved(&engine, &path, &patch)?;
                    crew.apply(&engine, &pid)?;
                    Ok(pid)
                };
                match step() {
                    Ok(pid) => landed.push(pid),
                    Err(e) => {
                        assert_eq!(e.code(), ErrorCode::Database, "{e} {}", e.details());
                        refused += 1;
                        met.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            }
            restarter.join().expect("restarter");
        });
        // The server is back: the next landing of this live engine first
        // finishes what the restarts left half done.
        let patch = "--- /dev/null\n+++ b/new/last.txt\n@@ -0,0 +1 @@\n+new/last.txt\n";
        crew.claim(&engine, "file:new/last.txt").expect("claim");
        let pid = crew
            .approved(&engine, "new/last.txt", patch)
            .expect("approved");
        crew.apply(&engine, &pid).expect("the last landing");
        landed.push(pid);
        agree(&engine, &remote, &landed, &host);
    }
    assert!(refused > 0, "no step met a restart");
    // Reopened, too.
    let engine = Engine::open(&clone, options(&url)).expect("reopen");
    let on_remote = agree(&engine, &remote, &landed, &host);
    eprintln!(
        "restart mid-landing: {} landed, {refused} steps refused, {on_remote} on the remote",
        landed.len(),
    );
}

/// The shared store agrees with the remote: every file on the remote's
/// branch under `new/` belongs to an applied proposal and every applied
/// proposal's file is there, each of `landed` is applied, nothing is left
/// `applying`, the chain verifies. How many files the remote has.
fn agree(engine: &Engine, remote: &Path, landed: &[String], host: &Actor) -> usize {
    let on_remote: Vec<String> = git(remote, &["ls-tree", "-r", "--name-only", "main", "new/"])
        .lines()
        .map(str::to_owned)
        .collect();
    let mut applied = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let page = ok(
            engine,
            "proposal.list",
            json!({"limit": 200, "cursor": cursor}),
            host,
        );
        for p in page["proposals"].as_array().expect("proposals") {
            if p["status"] == "applied" {
                applied.push(str_of(&p["title"]));
            }
        }
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    applied.sort();
    let mut on_remote = on_remote;
    on_remote.sort();
    assert_eq!(applied, on_remote, "the store and the remote disagree");
    assert!(landed.iter().all(|pid| {
        ok(engine, "proposal.get", json!({"proposal_id": pid}), host)["proposal"]["status"]
            == "applied"
    }));
    let stuck = ok(
        engine,
        "transaction.list",
        json!({"status": "applying"}),
        host,
    )["transactions"]
        .as_array()
        .expect("transactions")
        .len();
    assert_eq!(stuck, 0, "a transaction left applying");
    assert_eq!(ok(engine, "events.verify", json!({}), host)["valid"], true);
    fsck(remote);
    on_remote.len()
}

#[test]
fn a_statement_past_the_statement_timeout_is_a_retryable_database_error() {
    let Some(base) = server() else { return };
    let url = store_url(&base, &fresh_schema("timeout"));
    let root = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(
        root.path(),
        EngineOptions {
            store: Some(url.clone()),
            statement_timeout: std::time::Duration::from_millis(200),
            ..EngineOptions::default()
        },
    )
    .expect("open");
    let host = Actor::orchestrator(id("host"));
    ok(
        &engine,
        "task.create",
        json!({"task_id": "t1", "title": "x"}),
        &host,
    );
    // Another session holds the tasks table: reading it waits, and the
    // statement timeout ends the wait.
    let mut other = url
        .split_once("?schema=")
        .map(|(server, _)| server.to_owned())
        .expect("a schema")
        .parse::<postgres::Config>()
        .expect("url")
        .connect(postgres::NoTls)
        .expect("connect");
    let schema = url.rsplit_once("schema=").expect("schema").1;
    other
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE \"{schema}\".tasks IN ACCESS EXCLUSIVE MODE"
        ))
        .expect("lock");
    let started = std::time::Instant::now();
    let e = call(&engine, "task.get", json!({"task_id": "t1"}), &host).expect_err("timed out");
    assert_eq!(e.code(), ErrorCode::Database, "{e}");
    assert_eq!(e.details()["retryable"], true, "{e} {}", e.details());
    assert!(e.to_string().contains("57014"), "{e}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    other.batch_execute("ROLLBACK").expect("unlock");
    ok(&engine, "task.get", json!({"task_id": "t1"}), &host);
}

#[test]
fn a_postgres_schema_newer_than_this_code_is_refused_and_kept() {
    let Some(base) = server() else { return };
    let url = store_url(&base, &fresh_schema("newer"));
    let root = tempfile::tempdir().expect("tempdir");
    drop(Engine::open(root.path(), options(&url)).expect("create"));
    let schema = url.rsplit_once("schema=").expect("schema").1.to_owned();
    let mut admin = base
        .parse::<postgres::Config>()
        .expect("url")
        .connect(postgres::NoTls)
        .expect("connect");
    admin
        .batch_execute(&format!(
            "INSERT INTO \"{schema}\".roundtable_schema (version) VALUES (99)"
        ))
        .expect("a newer version");
    let e = Engine::open(root.path(), options(&url)).expect_err("too new");
    assert_eq!(e.code(), ErrorCode::IncompatibleStore, "{e}");
    let kept: i64 = admin
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".roundtable_schema"),
            &[],
        )
        .expect("count")
        .get(0);
    // One row per migration applied, and the newer one.
    assert_eq!(
        kept,
        roundtable::store::PG_SCHEMA_VERSION + 1,
        "the schema was left as it was"
    );
}
