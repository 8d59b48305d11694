//! Issue 31, items 17–20: the transaction engine keeps its word.
//!
//! - 17: past the commit point `patch.apply` never answers a retryable
//!   `database` ("nothing was written"): it reports the landing, or
//!   `database` with `landed: true` (never retryable), and a retry with the
//!   same idempotency key returns the landing's stored result.
//! - 18: fencing compares tokens: an author's claim that lapsed, or whose
//!   resource another agent was granted since, refuses the landing in the
//!   journal's own store transaction (`stale_claim`), nothing changed.
//! - 19: withdraw, reject, attach and rebase racing an apply, in files and
//!   git mode: no round leaves a transaction `applying`, a proposal whose
//!   status disagrees with the tree and the branch, or a workspace that
//!   does not open; a store an older engine left that way opens and
//!   records the landing.
//! - 20: `proposal.rebase` of a landed proposal is `illegal_transition`.

use super::claims_touched::approved;
use super::landing::fsck;
use super::landing::git;
use super::support::{store_db, test_options};
use super::tools::{id, scratch_dir, str_of, World, PATCH};
use roundtable::clock::{ManualClock, Timestamp};
use roundtable::{Actor, Engine, EngineOptions, ErrorCode, ToolError};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A World in `dir` (a git repository on `main` holding `hello.txt`
/// committed, in git landing mode, when `git_mode`), opened with `options`.
fn world_in(dir: tempfile::TempDir, git_mode: bool, options: EngineOptions) -> World {
    if git_mode {
        let d = dir.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("hello.txt"), "hello\n").expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "base"]);
    }
    let w = World::with(dir, options);
    if git_mode {
        w.ok(
            "workspace.configure",
            json!({"landing": {"mode": "git", "branch": "main", "remote": null}}),
            &w.host,
        );
    }
    w
}

fn fast() -> EngineOptions {
    EngineOptions {
        durability: roundtable::store::Durability::Normal,
        ..EngineOptions::default()
    }
}

fn new_file(path: &str, body: &str) -> String {
    format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{body}\n")
}

fn transactions_applying(engine: &Engine, host: &Actor) -> Vec<Value> {
    engine
        .call("transaction.list", json!({"status": "applying"}), host)
        .expect("transaction.list")["transactions"]
        .as_array()
        .expect("transactions")
        .clone()
}

// ---------------------------------------------------------------- item 20

#[test]
fn item20_rebase_of_a_landed_proposal_is_illegal_transition() {
    let w = World::new();
    // Landed by `rebase: true`: revision 1 made stale by another landing
    // above it, rebased trivially by the host and applied as revision 2.
    std::fs::write(w.dir.path().join("hello.txt"), "a\nb\nc\nd\ne\nhello\n").expect("write");
    let ours = "--- a/hello.txt\n+++ b/hello.txt\n@@ -4,3 +4,3 @@\n d\n e\n-hello\n+hello, world\n";
    let pid = approved(&w, &w.author, &w.reviewer, ours);
    let carol = w.agent("carol", &["author"]);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &carol,
    );
    let theirs = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1,3 +1,4 @@\n+0\n a\n b\n c\n";
    let other = approved(&w, &carol, &w.reviewer, theirs);
    w.ok(
        "patch.apply",
        json!({"proposal_id": other, "revision": 1}),
        &w.host,
    );
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1, "rebase": true}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "applied");
    assert_eq!(
        out["proposal"]["latest_revision"], 2,
        "landed by the host's rebase"
    );
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read"),
        "0\na\nb\nc\nd\ne\nhello, world\n"
    );
    let latest = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host)["proposal"]
        ["latest_revision"]
        .as_u64()
        .expect("latest");
    for expected in 1..=latest {
        for actor in [&w.host, &w.author] {
            let e = w.refused(
                "proposal.rebase",
                json!({"proposal_id": pid, "expected_revision": expected}),
                actor,
                ErrorCode::IllegalTransition,
            );
            assert_eq!(e.details()["status"], "applied", "{e}");
            assert_eq!(e.details()["proposal_id"], pid.as_str());
        }
    }
}

// ---------------------------------------------------------------- item 19

/// A store an older engine left bricked: a git-mode apply that landed
/// (the branch at its commit) but stayed `applying`, its proposal
/// `withdrawn`. The workspace opens, the landing is recorded (the
/// proposal `applied`, the event saying what it overrode), and applies go
/// on.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item19_a_landed_apply_left_applying_with_its_proposal_withdrawn_opens_and_is_recorded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = world_in(dir, true, EngineOptions::default());
    let d = w.dir.path().to_path_buf();
    let pid = w.approved("file:hello.txt", PATCH);
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tid = str_of(&out["transaction"]["id"]);
    let World { engine, host, .. } = w;
    drop(engine);
    // What the race left: the outcome not recorded, the proposal withdrawn.
    let mut db = store_db(&d);
    db.execute(
        "UPDATE transactions SET status = 'applying', finished_at = NULL WHERE id = ?1",
        &[&tid],
    );
    db.execute(
        "UPDATE proposals SET status = 'withdrawn' WHERE id = ?1",
        &[&pid],
    );
    drop(db);
    let engine = Engine::open(&d, test_options(&d)).expect("the workspace opens");
    let t = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("get");
    assert_eq!(t["transaction"]["status"], "applied");
    let p = engine
        .call("proposal.get", json!({"proposal_id": pid}), &host)
        .expect("get");
    assert_eq!(p["proposal"]["status"], "applied", "the branch holds it");
    assert!(transactions_applying(&engine, &host).is_empty());
    assert_eq!(
        std::fs::read_to_string(d.join("hello.txt")).expect("read"),
        "hello, world\n"
    );
    assert_eq!(git(&d, &["show", "main:hello.txt"]), "hello, world\n");
    fsck(&d);
}

/// The status check and the journal are one step: a transaction
/// `applying` a proposal makes withdraw, reject, attach and rebase wait
/// (`busy`, nothing changed).
#[test]
fn item19_a_proposal_being_applied_cannot_be_withdrawn_rejected_revised_or_rebased() {
    let w = World::new();
    let pid = w.approved("file:hello.txt", PATCH);
    // A transaction `applying` it (an applier between its journal and its
    // outcome): made by tampering, the apply lock held so nobody recovers it.
    let mut db = store_db(w.dir.path());
    db.execute(
        "INSERT INTO transactions (id, kind, proposal_id, revision, status, actor, pid, durability,
             before_digest, after_digest, created_at, created_dirs)
         VALUES ('tx-held', 'apply', ?1, 1, 'applying', 'orchestrator:host', 1, 'full', 'b', 'a', 0, '[]')",
        &[&pid],
    );
    drop(db);
    let calls = [
        (
            "proposal.withdraw",
            json!({"proposal_id": pid, "reason_md": "no"}),
            &w.author,
        ),
        (
            "patch.reject",
            json!({"proposal_id": pid, "reason_md": "no"}),
            &w.host,
        ),
        (
            "proposal.attach_patch",
            json!({"proposal_id": pid, "expected_revision": 1, "patch": super::tools::PATCH2}),
            &w.author,
        ),
        (
            "proposal.rebase",
            json!({"proposal_id": pid, "expected_revision": 1}),
            &w.host,
        ),
    ];
    for (tool, args, actor) in calls {
        let e = match w.engine.call(tool, args.clone(), actor) {
            Ok(v) => panic!("{tool}: {v}"),
            Err(e) => e,
        };
        if tool == "proposal.rebase" {
            // Its revision is up to date: nothing to rebase, said first.
            assert!(
                matches!(e.code(), ErrorCode::Busy | ErrorCode::Conflict),
                "{tool}: {e}"
            );
            continue;
        }
        assert_eq!(e.code(), ErrorCode::Busy, "{tool}: {e} {}", e.details());
        assert_eq!(e.details()["transaction_id"], "tx-held");
        assert_eq!(e.details()["proposal_id"], pid.as_str());
    }
    let p = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert_eq!(p["proposal"]["status"], "in_review");
    assert_eq!(p["proposal"]["latest_revision"], 1);
}

/// The racing operation of a round.
#[derive(Debug, Clone, Copy)]
enum Op {
    Withdraw,
    Reject,
    Attach,
    Rebase,
}

const OPS: [Op; 4] = [Op::Withdraw, Op::Reject, Op::Attach, Op::Rebase];

/// Rounds per mode: `RT_ITEM19_ROUNDS`, default 100 (200 in all).
fn race_rounds() -> usize {
    std::env::var("RT_ITEM19_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100)
}

fn race(git_mode: bool) -> std::collections::BTreeMap<String, usize> {
    let w = world_in(scratch_dir(), git_mode, fast());
    let d = w.dir.path().to_path_buf();
    // The racing operations come from a second engine on the workspace,
    // as from another process.
    let other = Engine::open(&d, test_options_fast(&d)).expect("open");
    let mut tally = std::collections::BTreeMap::new();
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let rounds = race_rounds();
    let carol = w.agent("carol", &["author"]);
    for round in 0..rounds {
        let op = OPS[round % OPS.len()];
        let path = format!("r/{round}.txt");
        // What the proposal adds: in the file (and on the branch) exactly
        // when it landed.
        let (pid, marker) = match op {
            // A stale revision: the host's apply rebases it first
            // (`rebase: true`) while the author's rebase races it.
            Op::Rebase => stale_proposal(&w, &carol, &path, round),
            _ => (
                w.approved(
                    &format!("file:{path}"),
                    &new_file(&path, &round.to_string()),
                ),
                round.to_string(),
            ),
        };
        let has_marker = |text: &str| text.lines().any(|l| l == marker);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let delay = Duration::from_micros(seed % 4000);
        let barrier = std::sync::Barrier::new(2);
        let (applied, raced) = std::thread::scope(|s| {
            let a = s.spawn(|| {
                barrier.wait();
                w.engine.call(
                    "patch.apply",
                    json!({"proposal_id": pid, "revision": 1,
                           "rebase": matches!(op, Op::Rebase)}),
                    &w.host,
                )
            });
            let b = s.spawn(|| {
                barrier.wait();
                std::thread::sleep(delay);
                let (tool, args, actor) = match op {
                    Op::Withdraw => (
                        "proposal.withdraw",
                        json!({"proposal_id": pid, "reason_md": "gave up"}),
                        &w.author,
                    ),
                    Op::Reject => (
                        "patch.reject",
                        json!({"proposal_id": pid, "reason_md": "no"}),
                        &w.host,
                    ),
                    Op::Attach => (
                        "proposal.attach_patch",
                        json!({"proposal_id": pid, "expected_revision": 1,
                               "patch": new_file(&path, "attached")}),
                        &w.author,
                    ),
                    Op::Rebase => (
                        "proposal.rebase",
                        json!({"proposal_id": pid, "expected_revision": 1}),
                        &w.author,
                    ),
                };
                other.call(tool, args, actor)
            });
            (
                a.join().expect("apply thread"),
                b.join().expect("op thread"),
            )
        });
        let spell = |r: &Result<Value, ToolError>| match r {
            Ok(_) => "ok".to_owned(),
            Err(e) => e.code().as_str().to_owned(),
        };
        *tally
            .entry(format!(
                "{op:?}: apply {} / op {}",
                spell(&applied),
                spell(&raced)
            ))
            .or_default() += 1;
        for (what, r) in [("apply", &applied), ("op", &raced)] {
            if let Err(e) = r {
                assert!(
                    matches!(
                        e.code(),
                        ErrorCode::IllegalTransition
                            | ErrorCode::Conflict
                            | ErrorCode::Busy
                            | ErrorCode::ValidationFailed
                            | ErrorCode::PatchDoesNotApply
                            | ErrorCode::PreconditionFailed
                    ),
                    "round {round} {op:?}: {what}: {e} {}",
                    e.details()
                );
            }
        }
        // No transaction left applying.
        let applying = transactions_applying(&w.engine, &w.host);
        assert!(
            applying.is_empty(),
            "round {round} {op:?}: apply {applied:?}, op {raced:?}: {applying:?}"
        );
        // The proposal's status agrees with the tree and the branch.
        let status = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host)["proposal"]
            ["status"]
            .as_str()
            .expect("status")
            .to_owned();
        let landed = status == "applied";
        assert_eq!(
            landed,
            applied.is_ok(),
            "round {round} {op:?}: {status} {applied:?}"
        );
        let in_tree = std::fs::read_to_string(d.join(&path)).is_ok_and(|t| has_marker(&t));
        assert_eq!(
            in_tree, landed,
            "round {round} {op:?}: {status}, in the tree: {in_tree}"
        );
        if git_mode {
            let shown = std::process::Command::new("git")
                .args(["show", &format!("main:{path}")])
                .current_dir(&d)
                .stderr(std::process::Stdio::null())
                .output()
                .expect("git");
            let on_branch =
                shown.status.success() && has_marker(&String::from_utf8_lossy(&shown.stdout));
            assert_eq!(
                on_branch, landed,
                "round {round} {op:?}: {status}, on main: {on_branch}"
            );
        }
        match (op, &raced) {
            (Op::Withdraw, Ok(_)) => assert_eq!(status, "withdrawn", "round {round}"),
            (Op::Reject, Ok(_)) => assert_eq!(status, "rejected", "round {round}"),
            // Item 20: a rebase that lost to the landing says so.
            (Op::Rebase, Err(e)) if landed => assert!(
                e.code() == ErrorCode::IllegalTransition
                    || e.code() == ErrorCode::Busy
                    || (e.code() == ErrorCode::Conflict && e.details()["latest_revision"].is_u64()),
                "round {round}: {e} {}",
                e.details()
            ),
            _ => {}
        }
        // The workspace opens.
        drop(Engine::open(&d, test_options_fast(&d)).expect("the workspace opens"));
    }
    if git_mode {
        fsck(&d);
    }
    tally
}

/// For a rebase round: `path` created by a landing, then a proposal by
/// the author changing its last line (revision 1, approved), made stale by
/// carol's landing above it; the author claims the file again. The
/// proposal and the line it adds.
fn stale_proposal(w: &World, carol: &Actor, path: &str, round: usize) -> (String, String) {
    let claim = |who: &Actor| {
        w.ok(
            "claim.acquire",
            json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 3600}),
            who,
        );
    };
    let approved = |who: &Actor, patch: &str| approved(w, who, &w.reviewer, patch);
    let apply = |pid: &str| {
        w.ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        );
    };
    claim(&w.author);
    let base = format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,6 @@\n+a\n+b\n+c\n+d\n+e\n+f\n");
    apply(&approved(&w.author, &base));
    let marker = format!("changed-{round}");
    let ours = format!("--- a/{path}\n+++ b/{path}\n@@ -4,3 +4,3 @@\n d\n e\n-f\n+{marker}\n");
    let pid = approved(&w.author, &ours);
    claim(carol);
    let theirs = format!("--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,4 @@\n+0\n a\n b\n c\n");
    apply(&approved(carol, &theirs));
    claim(&w.author);
    (pid, marker)
}

fn test_options_fast(root: &Path) -> EngineOptions {
    EngineOptions {
        durability: roundtable::store::Durability::Normal,
        ..test_options(root)
    }
}

#[test]
fn item19_withdraw_reject_attach_and_rebase_racing_apply_leave_nothing_applying_files_mode() {
    let start = Instant::now();
    let tally = race(false);
    eprintln!(
        "item 19 race, files mode: {} rounds in {:?}: {tally:?}",
        race_rounds(),
        start.elapsed()
    );
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item19_withdraw_reject_attach_and_rebase_racing_apply_leave_nothing_applying_git_mode() {
    let start = Instant::now();
    let tally = race(true);
    eprintln!(
        "item 19 race, git mode: {} rounds in {:?}: {tally:?}",
        race_rounds(),
        start.elapsed()
    );
}

// ---------------------------------------------------------------- item 18

/// Host A validates alice's revision, then waits for the store (another
/// writer holds it); meanwhile alice's claim lapses (`lapse`), or another
/// agent is granted the file with a newer token and releases it. A's
/// journal must see the token superseded: `stale_claim`, nothing applied.
fn fenced_after_validation(lapse: bool) {
    let clock = ManualClock::new(Timestamp(1_000_000));
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        ..EngineOptions::default()
    };
    let w = World::with(tempfile::tempdir().expect("tempdir"), options);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60}),
        &w.author,
    );
    let pid = approved(&w, &w.author, &w.reviewer, PATCH);
    let before = super::tools::fingerprint(w.dir.path());
    let mut db = store_db(w.dir.path());
    db.hold_write_lock();
    let result = std::thread::scope(|s| {
        let apply = s.spawn(|| {
            w.engine.call(
                "patch.apply",
                json!({"proposal_id": pid, "revision": 1}),
                &w.host,
            )
        });
        // A validates (reads) and then waits for the store's write lock.
        std::thread::sleep(Duration::from_millis(600));
        if lapse {
            clock.advance_ms(61_000);
        } else {
            // bob was granted hello.txt (a newer token) and released it,
            // under another host's clock: alice's claim still reads live.
            db.batch(
                "UPDATE counters SET value = value + 1 WHERE name = 'claim_token';
                 INSERT INTO claims (id, agent_id, resource_id, path, type, task_id, base_digest, token,
                     acquired_at, expires_at, released_at)
                 SELECT 'cl-bob', 'bob', 'file:hello.txt', 'hello.txt', 'write', NULL, 'absent', value,
                     1000500, 1060500, 1000600 FROM counters WHERE name = 'claim_token';",
            );
        }
        db.batch("COMMIT");
        apply.join().expect("apply")
    });
    let e = result.expect_err("the superseded token refuses the landing");
    assert_eq!(e.code(), ErrorCode::StaleClaim, "{e} {}", e.details());
    assert_eq!(
        e.details()["reason"],
        if lapse { "lapsed" } else { "superseded" }
    );
    assert_eq!(e.details()["proposal_id"], pid.as_str());
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read"),
        "hello\n"
    );
    if lapse {
        // Nothing was written but the clock moved.
        assert_eq!(super::tools::fingerprint(w.dir.path()), before);
    }
    assert_eq!(w.rows("transactions"), 0);
    let p = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert_eq!(p["proposal"]["status"], "in_review");
}

#[test]
fn item18_a_claim_that_lapsed_after_validation_refuses_the_landing() {
    fenced_after_validation(true);
}

#[test]
fn item18_a_newer_grant_on_the_resource_after_validation_refuses_the_landing() {
    fenced_after_validation(false);
}

// ---------------------------------------------------------------- item 17

/// A bare remote on `main` holding `hello.txt`, and a bare clone of it;
/// their paths.
fn remote_and_clone(top: &Path) -> (PathBuf, PathBuf) {
    let seed = top.join("seed");
    std::fs::create_dir_all(&seed).expect("mkdir");
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("hello.txt"), "hello\n").expect("write");
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "base"]);
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
    let clone = top.join("host.git");
    git(
        top,
        &[
            "clone",
            "-q",
            "--bare",
            "remote.git",
            clone.to_str().expect("utf-8"),
        ],
    );
    (remote, clone)
}

/// How the fault meets the landing, right after the push.
enum Fault<'a> {
    /// Another writer holds the store's write lock past the busy timeout.
    StoreLockHeld,
    /// The PostgreSQL server restarts.
    Restart(&'a super::pg_hosts::Cluster),
}

/// On `engine`, a clone of a remote: git landing mode to `origin`, and
/// alice's proposal creating `new.txt` (claimed, in review, approved by
/// bob); its id.
fn approved_new_file(engine: &Engine) -> String {
    let host = Actor::orchestrator(id("host"));
    let author = Actor::agent(id("alice"));
    let ok = |tool: &str, args: Value, actor: &Actor| {
        engine
            .call(tool, args.clone(), actor)
            .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
    };
    ok(
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author"]}),
        &host,
    );
    ok(
        "agent.register",
        json!({"agent_id": "bob", "roles": ["reviewer"]}),
        &host,
    );
    ok("task.create", json!({"task_id": "t1", "title": "t"}), &host);
    ok(
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
        &host,
    );
    ok(
        "claim.acquire",
        json!({"resource_id": "file:new.txt", "type": "write", "ttl_s": 3600}),
        &author,
    );
    let pid = str_of(
        &ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "New", "summary_md": "s", "patch": new_file("new.txt", "new")}),
            &author,
        )["proposal"]["id"],
    );
    ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &author,
    );
    ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &Actor::agent(id("bob")),
    );
    pid
}

/// The push succeeds, recording the outcome fails: the call reports the
/// landing (`landed: true`, never retryable) or succeeds, and a same-key
/// retry returns the landing's result; the change is on the remote once.
fn landed_then_fault(options: &dyn Fn(&Path) -> EngineOptions, fault: Fault<'_>) {
    let top = tempfile::tempdir().expect("tempdir");
    let (remote, clone) = remote_and_clone(top.path());
    let engine = Engine::open(&clone, options(&clone)).expect("open");
    let host = Actor::orchestrator(id("host"));
    let pid = approved_new_file(&engine);
    let old = git(&remote, &["rev-parse", "main"]).trim().to_owned();
    // Hold this clone's branch lock: the landing pushes (the commit
    // point), then waits to follow — the moment the fault is injected.
    let ref_lock = clone.join("refs/heads/main.lock");
    std::fs::write(&ref_lock, "").expect("lock the clone's branch");
    // As the fleet's hosts call it: rebasing a stale revision first.
    let args =
        json!({"proposal_id": pid, "revision": 1, "rebase": true, "idempotency_key": "land-once"});
    let mut db = store_db(&clone);
    let first = std::thread::scope(|s| {
        let apply = s.spawn(|| engine.call("patch.apply", args.clone(), &host));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let tip = git(&remote, &["rev-parse", "main"]).trim().to_owned();
            if tip != old {
                break;
            }
            assert!(Instant::now() < deadline, "the push never happened");
            std::thread::sleep(Duration::from_millis(2));
        }
        match fault {
            Fault::StoreLockHeld => db.hold_write_lock(),
            Fault::Restart(cluster) => cluster.run("restart"),
        }
        std::fs::remove_file(&ref_lock).expect("unlock the branch");
        let first = apply.join().expect("apply");
        if matches!(fault, Fault::StoreLockHeld) {
            db.release();
        }
        first
    });
    drop(db);
    let landed = git(&remote, &["rev-parse", "main"]).trim().to_owned();
    assert_ne!(landed, old, "the push landed");
    match &first {
        Ok(v) => {
            assert_eq!(v["transaction"]["status"], "applied");
            assert_eq!(v["proposal"]["status"], "applied");
        }
        Err(e) => {
            assert_eq!(e.code(), ErrorCode::Database, "{e} {}", e.details());
            assert_eq!(e.details()["landed"], true, "{e} {}", e.details());
            assert!(e.details().get("retryable").is_none(), "{}", e.details());
        }
    }
    if first.is_err() {
        // A client that resubmits without its key lands nothing twice:
        // the landing is recorded first, and the proposal is applied.
        let e = engine
            .call(
                "patch.apply",
                json!({"proposal_id": pid, "revision": 1}),
                &host,
            )
            .expect_err("no second landing");
        assert_eq!(
            e.code(),
            ErrorCode::IllegalTransition,
            "{e} {}",
            e.details()
        );
        assert_eq!(e.details()["status"], "applied");
    }
    // The same call again, same key: the landing's result, not a second
    // landing, not a refusal.
    let again = engine
        .call("patch.apply", args.clone(), &host)
        .unwrap_or_else(|e| panic!("same-key retry: {e} {}", e.details()));
    assert_eq!(again["transaction"]["status"], "applied");
    assert_eq!(again["proposal"]["status"], "applied");
    if let Err(e) = &first {
        assert_eq!(again["transaction"]["id"], e.details()["transaction_id"]);
    }
    let third = engine.call("patch.apply", args, &host).expect("replayed");
    assert_eq!(third["transaction"]["id"], again["transaction"]["id"]);
    assert!(transactions_applying(&engine, &host).is_empty());
    // Once on the remote.
    assert_eq!(git(&remote, &["rev-parse", "main"]).trim(), landed);
    assert_eq!(git(&remote, &["rev-parse", "main^"]).trim(), old);
    assert_eq!(git(&remote, &["show", "main:new.txt"]), "new\n");
    fsck(&remote);
    fsck(&clone);
    eprintln!(
        "item 17: first call {}",
        match &first {
            Ok(_) => "reported the landing".to_owned(),
            Err(e) => format!("{}: {e}", e.code()),
        }
    );
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item17_a_landing_whose_outcome_meets_a_held_store_lock_says_it_landed_and_a_retry_returns_it() {
    // A short busy timeout: the held lock outlasts the retries.
    let options = |root: &Path| EngineOptions {
        busy_timeout: Duration::from_millis(300),
        ..test_options(root)
    };
    landed_then_fault(&options, Fault::StoreLockHeld);
}

#[test]
fn item17_a_landing_whose_outcome_meets_a_postgres_restart_reports_it_and_a_retry_returns_it() {
    if super::support::server().is_none() {
        return;
    }
    let cluster = super::pg_hosts::Cluster::start();
    let url = super::support::store_url(&cluster.url, "item17");
    let options = |_: &Path| EngineOptions {
        store: Some(url.clone()),
        ..EngineOptions::default()
    };
    landed_then_fault(&options, Fault::Restart(&cluster));
}

/// Recovery that cannot finish a landing (this clone's branch diverged
/// from the remote's, so it cannot follow) never makes the workspace
/// unopenable: the open succeeds and reports it (`Engine::unrecovered`),
/// the failure is recorded as a failed `recovered` phase, and the way out
/// — remove the cause, open again — finishes it.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn item19_recovery_that_cannot_finish_opens_reports_and_the_way_out_finishes_it() {
    let top = tempfile::tempdir().expect("tempdir");
    let (remote, clone) = remote_and_clone(top.path());
    let host = Actor::orchestrator(id("host"));
    let (pid, tid, old) = {
        let engine = Engine::open(&clone, test_options(&clone)).expect("open");
        let ok = |tool: &str, args: Value, actor: &Actor| {
            engine
                .call(tool, args.clone(), actor)
                .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
        };
        let pid = approved_new_file(&engine);
        let old = git(&clone, &["rev-parse", "main"]).trim().to_owned();
        let out = ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &host,
        );
        (pid, str_of(&out["transaction"]["id"]), old)
    };
    // As if its outcome had not been recorded, and this clone's branch had
    // meanwhile been set to a commit of its own, off the remote's history.
    let mut db = store_db(&clone);
    db.execute(
        "UPDATE transactions SET status = 'applying', finished_at = NULL WHERE id = ?1",
        &[&tid],
    );
    db.execute(
        "UPDATE proposals SET status = 'in_review' WHERE id = ?1",
        &[&pid],
    );
    drop(db);
    let tree = git(&clone, &["rev-parse", &format!("{old}^{{tree}}")])
        .trim()
        .to_owned();
    let stray = git(&clone, &["commit-tree", &tree, "-p", &old, "-m", "stray"])
        .trim()
        .to_owned();
    git(&clone, &["update-ref", "refs/heads/main", &stray]);

    let engine = Engine::open(&clone, test_options(&clone)).expect("the workspace opens");
    let left = engine.unrecovered();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].transaction_id, tid);
    assert_eq!(left[0].code, ErrorCode::PreconditionFailed, "{left:?}");
    let t = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("get");
    assert_eq!(t["transaction"]["status"], "applying", "left, not guessed");
    let phases = engine
        .call("transaction.phases", json!({"transaction_id": tid}), &host)
        .expect("phases");
    let failed: Vec<&Value> = phases["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter(|p| p["phase"] == "recovered" && p["status"] == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{phases}");
    assert_eq!(failed[0]["detail"]["error"]["code"], "precondition_failed");
    // Other calls go on meanwhile.
    engine
        .call("task.create", json!({"task_id": "t2", "title": "t"}), &host)
        .expect("the workspace works");
    drop(engine);

    // The way out: the cause removed (the branch back on the remote's
    // history), the workspace opened again.
    git(&clone, &["update-ref", "refs/heads/main", &old]);
    let engine = Engine::open(&clone, test_options(&clone)).expect("reopen");
    assert!(
        engine.unrecovered().is_empty(),
        "{:?}",
        engine.unrecovered()
    );
    let t = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("get");
    assert_eq!(t["transaction"]["status"], "applied");
    let p = engine
        .call("proposal.get", json!({"proposal_id": pid}), &host)
        .expect("get");
    assert_eq!(p["proposal"]["status"], "applied");
    assert_eq!(
        git(&clone, &["rev-parse", "main"]).trim(),
        git(&remote, &["rev-parse", "main"]).trim(),
        "this clone's branch followed the remote's"
    );
    fsck(&remote);
    fsck(&clone);
}
