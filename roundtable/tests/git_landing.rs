//! Issue 18 item 1: `patch.apply` in git landing mode lands a revision as
//! one commit on the configured branch (trailers naming what governed it,
//! authored as the proposal's author, committed as the host), the branch
//! moved by compare-and-swap; the working tree and the index follow; the
//! store agrees. A change the branch does not hold at a touched path, or a
//! HEAD off the branch, is `precondition_failed` with nothing changed. A
//! SIGKILL at any moment leaves the branch at the old or the new commit,
//! the working tree matching it, and the store agreeing.

use super::landing::git;
use super::tools::{fingerprint, str_of, World, PATCH};
use super::transactions::{check_worker, start_apply, start_call};
use roundtable::{Engine, EngineOptions, ErrorCode};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A repository on `main` holding `hello.txt` and `files`, committed, then
/// a World (an engine, its agents and task) on it, in git landing mode.
pub(crate) fn git_world(files: &[(&str, &str)]) -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    git(d, &["init", "-q", "-b", "main"]);
    std::fs::write(d.join("hello.txt"), "hello\n").expect("write");
    for (path, body) in files {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, body).expect("write");
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "base"]);
    let w = World::with(dir, EngineOptions::default());
    let set = w.ok(
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": null}}),
        &w.host,
    );
    assert_eq!(set["landing"]["mode"], "git");
    w
}

/// A copy of the repository (and store) at `from` into `to`, as it is.
pub(crate) fn copy_repo(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .args(["-a", "--"])
        .arg(from.join("."))
        .arg(to)
        .status()
        .expect("cp");
    assert!(status.success());
    crate::support::copy_store(from, to);
}

/// The branch ref file's bytes in the repository at `d`.
fn branch_file(d: &Path) -> Option<Vec<u8>> {
    std::fs::read(d.join(".git/refs/heads/main")).ok()
}

/// Return as soon as the branch ref of `d` is no longer `before` (the
/// commit point passed), or `child` exited.
fn until_branch_moves(d: &Path, before: Option<&Vec<u8>>, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while branch_file(d).as_ref() == before && Instant::now() < deadline {
        if child.try_wait().expect("poll").is_some() {
            return;
        }
    }
}

/// A landing commit's `Roundtable-Chain` trailer (the audit chain's head
/// when it was planned), as git reads it.
pub(crate) fn chain_trailer(d: &Path, commit: &str) -> String {
    git(
        d,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=Roundtable-Chain,valueonly)",
            commit,
        ],
    )
    .trim()
    .to_owned()
}

fn head(d: &Path) -> String {
    git(d, &["rev-parse", "refs/heads/main"]).trim().to_owned()
}

fn trailers(d: &Path, commit: &str) -> String {
    let body = git(d, &["log", "-1", "--format=%B", commit]);
    let mut child = Command::new("git")
        .args(["interpret-trailers", "--parse"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("git interpret-trailers");
    {
        use std::io::Write as _;
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(body.as_bytes())
            .expect("write");
    }
    String::from_utf8(child.wait_with_output().expect("wait").stdout).expect("utf-8")
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_git_mode_apply_lands_one_commit_and_the_tree_index_and_store_agree() {
    let w = git_world(&[("src/lib.rs", "fn a() {}\n")]);
    let d = w.dir.path();
    assert_eq!(
        w.ok("workspace.get", json!({}), &w.reviewer)["landing"],
        json!({"mode": "git", "branch": "main", "remote": null})
    );
    let base = head(d);
    let pid = w.approved("file:hello.txt", PATCH);
    w.ok(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}),
        &w.host,
    );
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tid = str_of(&out["transaction"]["id"]);
    assert_eq!(out["transaction"]["status"], "applied");
    assert_eq!(out["proposal"]["status"], "applied");
    // One commit on main, its parent the base, holding the change.
    let tip = head(d);
    assert_ne!(tip, base);
    assert_eq!(git(d, &["rev-parse", "main^"]).trim(), base);
    assert_eq!(git(d, &["show", "main:hello.txt"]), "hello, world\n");
    assert_eq!(
        git(d, &["show", "--format=", "--name-status", "main"]),
        "M\thello.txt\n"
    );
    // Trailers git reads back: the evidence the policy counted (the vote;
    // `unit` is not a required check), each with its revision and record;
    // author and committer.
    let votes = w.ok("vote.list", json!({"proposal_id": pid}), &w.host);
    let vote = str_of(&votes["votes"][0]["id"]);
    assert_eq!(
        trailers(d, &tip),
        format!(
            "Roundtable-Proposal: {pid}\nRoundtable-Revision: 1\nRoundtable-Transaction: {tid}\n\
             Roundtable-Chain: {}\nApproved-by: agent:bob (revision 1, {vote})\n",
            chain_trailer(d, &tip)
        )
    );
    assert_eq!(
        git(d, &["log", "-1", "--format=%s|%an <%ae>|%cn <%ce>", "main"]).trim(),
        "Change|alice <alice@agent.roundtable>|host <host@orchestrator.roundtable>"
    );
    // The working tree and the index are the branch's; .roundtable/ is
    // ignored; the repository is sound.
    assert_eq!(
        std::fs::read_to_string(d.join("hello.txt")).expect("read"),
        "hello, world\n"
    );
    assert_eq!(
        git(d, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    git(d, &["fsck", "--strict"]);
    let verify = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(verify["valid"], true, "{verify:#}");
    // A working-tree edit of a touched path since: the rollback is
    // refused (conflict), nothing changes.
    std::fs::write(d.join("hello.txt"), "edited\n").expect("write");
    w.refused(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &w.host,
        ErrorCode::Conflict,
    );
    assert_eq!(head(d), tip);
    std::fs::write(d.join("hello.txt"), "hello, world\n").expect("write");
    // Rolled back: a revert commit on top, the base's tree again, a
    // `Roundtable-Reverts` trailer naming the reverted commit.
    let rolled = w.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &w.host,
    );
    let rid = str_of(&rolled["transaction"]["id"]);
    let revert = head(d);
    assert_eq!(git(d, &["rev-parse", "main^"]).trim(), tip);
    assert_eq!(
        git(d, &["rev-parse", "main^{tree}"]),
        git(d, &["rev-parse", &format!("{base}^{{tree}}")])
    );
    assert_eq!(
        trailers(d, &revert),
        format!(
            "Roundtable-Proposal: {pid}\nRoundtable-Revision: 1\nRoundtable-Transaction: {rid}\n\
             Roundtable-Reverts: {tip}\n"
        )
    );
    assert_eq!(
        git(d, &["log", "-1", "--format=%s", "main"]).trim(),
        "Revert \"Change\""
    );
    assert_eq!(
        w.ok("proposal.get", json!({"proposal_id": pid}), &w.host)["proposal"]["status"],
        "rolled_back"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("hello.txt")).expect("read"),
        "hello\n"
    );
    assert_eq!(
        git(d, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    git(d, &["fsck", "--strict"]);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_branch_that_differs_at_a_touched_path_or_a_head_off_the_branch_changes_nothing() {
    let w = git_world(&[]);
    let d = w.dir.path();
    // The branch holds another hello.txt than the working tree (committed
    // behind the working tree's back).
    std::fs::write(d.join("hello.txt"), "hola\n").expect("write");
    git(d, &["commit", "-q", "-am", "hola"]);
    std::fs::write(d.join("hello.txt"), "hello\n").expect("write");
    let tip = head(d);
    let pid = w.approved("file:hello.txt", PATCH);
    let before = fingerprint(d);
    let e = w
        .engine
        .call(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        )
        .expect_err("the branch differs");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(e.details()["path"], "hello.txt");
    assert_eq!(fingerprint(d), before, "nothing changed");
    assert_eq!(head(d), tip);
    // Put the branch back to what the working tree holds; detach HEAD.
    git(d, &["commit", "-q", "-am", "hello again"]);
    git(d, &["checkout", "-q", "--detach"]);
    let tip = head(d);
    let before = fingerprint(d);
    let e = w
        .engine
        .call(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        )
        .expect_err("HEAD is detached");
    assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
    assert_eq!(fingerprint(d), before, "nothing changed");
    assert_eq!(head(d), tip);
    // Back on the branch, it lands.
    git(d, &["checkout", "-q", "main"]);
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(out["transaction"]["status"], "applied");
    assert_eq!(git(d, &["status", "--porcelain"]), "");
    super::landing::fsck(d);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn workspace_configure_refuses_what_cannot_land_and_writes_nothing() {
    // Not a git repository.
    let plain = World::new();
    let git_main = json!({"landing": {"mode": "git", "branch": "main"}});
    let e = plain.refused(
        "workspace.configure",
        git_main.clone(),
        &plain.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "landing");
    assert_eq!(
        plain.ok("workspace.get", json!({}), &plain.host)["landing"]["mode"],
        "files"
    );
    let w = git_world(&[]);
    for (args, field) in [
        (
            json!({"landing": {"mode": "git", "branch": "nope"}}),
            "landing",
        ),
        (
            json!({"landing": {"mode": "git", "branch": "bad..name"}}),
            "landing",
        ),
        (json!({"landing": {"mode": "git"}}), "landing.branch"),
        (
            json!({"landing": {"mode": "files", "branch": "main"}}),
            "landing.branch",
        ),
        (
            json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
            "landing.remote",
        ),
        (json!({"landing": {"mode": "svn"}}), "landing.mode"),
        (
            json!({"landing": {"mode": "git", "branch": "main", "x": 1}}),
            "landing",
        ),
    ] {
        let e = w.refused(
            "workspace.configure",
            args.clone(),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert!(
            e.details()["field"]
                .as_str()
                .is_some_and(|f| f.starts_with(field)),
            "{args}: {}",
            e.details()
        );
    }
    w.refused(
        "workspace.configure",
        json!({"landing": {"mode": "files"}}),
        &w.author,
        ErrorCode::Forbidden,
    );
    // Back to files mode: recorded once, and a repeat changes nothing.
    let files = json!({"landing": {"mode": "files"}});
    w.ok("workspace.configure", files.clone(), &w.host);
    let n = w.events().len();
    w.ok("workspace.configure", files, &w.host);
    assert_eq!(w.events().len(), n, "a repeat wrote an event");
    super::landing::fsck(w.dir.path());
}

/// Kill a git-mode apply at moments spread over it; after reopening, the
/// branch is at the old or the new commit, the working tree and index
/// match it, and the store says the same.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_sigkilled_git_mode_apply_leaves_branch_tree_and_store_agreeing() {
    const RUNS: usize = 30;
    let files: Vec<(String, String)> = (0..200)
        .map(|i| {
            (
                format!("d{}/f{i}.txt", i % 10),
                format!("file {i}\nline two\n"),
            )
        })
        .collect();
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    let w = git_world(&refs);
    let patch: String = (0..200)
        .map(|i| {
            let p = format!("d{}/f{i}.txt", i % 10);
            format!(
                "diff --git a/{p} b/{p}\n--- a/{p}\n+++ b/{p}\n@@ -1,2 +1,2 @@\n file {i}\n-line two\n+line two, changed\n"
            )
        })
        .collect();
    w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:.", "type": "write", "ttl_s": 36000}),
        &w.author,
    );
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Many", "summary_md": "Many files.", "patch": patch}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let World {
        dir: prepared,
        engine,
        ..
    } = w;
    drop(engine);
    let old = head(prepared.path());
    let copy = |to: &Path| copy_repo(prepared.path(), to);
    // One uninterrupted apply: how long it takes.
    let first = tempfile::tempdir().expect("tempdir");
    copy(first.path());
    let (child, _sync, _) = start_apply(first.path(), &pid);
    let t0 = Instant::now();
    check_worker(child, "uninterrupted git-mode apply");
    let full = t0.elapsed().max(Duration::from_millis(2));
    // Each apply builds its own commit (its time differs); all have the
    // old commit as parent and this tree.
    let new = head(first.path());
    assert_ne!(new, old);
    let new_tree = git(first.path(), &["rev-parse", "main^{tree}"]);
    let (mut at_old, mut at_new, mut forward) = (0, 0, 0);
    for run in 0..RUNS {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        copy(d);
        let (mut child, _sync, _) = start_apply(d, &pid);
        if run % 3 == 2 {
            // Right after the commit point: as soon as the branch moved.
            let before = branch_file(d);
            until_branch_moves(d, before.as_ref(), &mut child);
        } else {
            std::thread::sleep(
                full * u32::try_from(run).expect("small") / u32::try_from(RUNS).expect("small"),
            );
        }
        child.kill().ok();
        let _ = child.wait();
        let engine = Engine::open(d, crate::support::test_options(d)).expect("reopen recovers");
        let tip = head(d);
        let status = str_of(
            &engine
                .call(
                    "proposal.get",
                    json!({"proposal_id": pid}),
                    &super::transactions::host(),
                )
                .expect("get")["proposal"]["status"],
        );
        let txs: Vec<Value> = engine
            .call(
                "transaction.list",
                json!({"proposal_id": pid}),
                &super::transactions::host(),
            )
            .expect("list")["transactions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let tx_status = txs.first().map(|t| str_of(&t["status"]));
        if tip != old {
            assert_eq!(git(d, &["rev-parse", "main^"]).trim(), old, "run {run}");
            assert_eq!(git(d, &["rev-parse", "main^{tree}"]), new_tree, "run {run}");
            at_new += 1;
            assert_eq!(status, "applied", "run {run}");
            assert_eq!(tx_status.as_deref(), Some("applied"), "run {run}");
            // The commit has its note, the store's record (written by the
            // commit point, or by recovery when killed between the branch
            // and the notes): the branch since `old` verifies.
            let verified = engine
                .call(
                    "provenance.verify",
                    json!({"since": old}),
                    &super::transactions::host(),
                )
                .expect("provenance.verify");
            assert_eq!(verified["valid"], true, "run {run}: {verified}");
            assert_eq!(verified["checked"], 1, "run {run}");
            let events = engine
                .call(
                    "events.list",
                    json!({"since_seq": 0, "limit": 1000}),
                    &super::transactions::host(),
                )
                .expect("events");
            forward += events["events"]
                .as_array()
                .expect("events")
                .iter()
                .filter(|e| e["kind"] == "transaction.applied" && e["data"]["recovered"] == true)
                .count();
        } else {
            at_old += 1;
            assert_eq!(status, "in_review", "run {run}");
            // Nothing landed: no note either.
            assert_eq!(
                git(d, &["for-each-ref", "refs/notes/agent-trace"]),
                "",
                "run {run}"
            );
            assert!(
                matches!(tx_status.as_deref(), None | Some("recovered")),
                "run {run}: {tx_status:?}"
            );
        }
        // The working tree and the index are the branch's.
        assert_eq!(
            git(d, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "run {run}: the working tree or index differs from {tip}"
        );
        assert_eq!(
            engine
                .call("events.verify", json!({}), &super::transactions::host())
                .expect("verify")["valid"],
            true,
            "run {run}"
        );
        super::landing::fsck(d);
    }
    eprintln!(
        "git crash test: {RUNS} SIGKILLed applies: {at_new} at the new commit ({forward} brought forward on open), {at_old} at the old"
    );
    assert_eq!(at_new + at_old, RUNS);
    assert!(
        forward > 0,
        "no run was killed between the commit point and the outcome"
    );
}

/// Kill a git-mode rollback the instant its revert commit's ref moves (and
/// at moments before): after reopening, the branch is at the landed commit
/// or at its revert, and the store says the same.
#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn a_sigkilled_git_mode_rollback_is_brought_forward_or_back() {
    // Most runs are killed the instant the ref moves: the window between
    // the commit point and the outcome is short for one file, and the
    // test requires at least one kill inside it.
    const RUNS: usize = 64;
    let w = git_world(&[]);
    let pid = w.approved("file:hello.txt", PATCH);
    let tid = str_of(
        &w.ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        )["transaction"]["id"],
    );
    let World {
        dir: prepared,
        engine,
        ..
    } = w;
    drop(engine);
    let landed = head(prepared.path());
    let (mut back, mut forward, mut recovered) = (0, 0, 0);
    for run in 0..RUNS {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        copy_repo(prepared.path(), d);
        let before = branch_file(d);
        let (mut child, _sync, _) =
            start_call(d, "transaction.rollback", &json!({"transaction_id": tid}));
        if run % 4 != 3 {
            until_branch_moves(d, before.as_ref(), &mut child);
        } else {
            std::thread::sleep(Duration::from_millis(u64::try_from(run).expect("small")));
        }
        child.kill().ok();
        let _ = child.wait();
        let engine = Engine::open(d, crate::support::test_options(d)).expect("reopen recovers");
        let host = super::transactions::host();
        let proposal = str_of(
            &engine
                .call("proposal.get", json!({"proposal_id": pid}), &host)
                .expect("get")["proposal"]["status"],
        );
        let original = str_of(
            &engine
                .call("transaction.get", json!({"transaction_id": tid}), &host)
                .expect("get")["transaction"]["status"],
        );
        if head(d) == landed {
            back += 1;
            assert_eq!(proposal, "applied", "run {run}");
            assert_eq!(original, "applied", "run {run}");
            assert_eq!(
                std::fs::read_to_string(d.join("hello.txt")).expect("read"),
                "hello, world\n"
            );
        } else {
            forward += 1;
            assert_eq!(git(d, &["rev-parse", "main^"]).trim(), landed, "run {run}");
            let txs = engine
                .call("transaction.list", json!({"proposal_id": pid}), &host)
                .expect("list");
            assert_eq!(proposal, "rolled_back", "run {run}: {txs}");
            assert_eq!(original, "rolled_back", "run {run}");
            assert_eq!(
                std::fs::read_to_string(d.join("hello.txt")).expect("read"),
                "hello\n"
            );
            let events = engine
                .call("events.list", json!({"since_seq": 0, "limit": 1000}), &host)
                .expect("events");
            recovered += events["events"]
                .as_array()
                .expect("events")
                .iter()
                .filter(|e| e["kind"] == "transaction.applied" && e["data"]["recovered"] == true)
                .count();
        }
        assert_eq!(
            git(d, &["status", "--porcelain", "--untracked-files=all"]),
            "",
            "run {run}"
        );
        assert_eq!(
            engine
                .call("events.verify", json!({}), &host)
                .expect("verify")["valid"],
            true,
            "run {run}"
        );
        super::landing::fsck(d);
    }
    eprintln!(
        "git rollback crash test: {RUNS} runs: {forward} at the revert commit ({recovered} brought forward on open), {back} at the landed one"
    );
    assert_eq!(forward + back, RUNS);
    assert!(
        recovered > 0,
        "no run was killed between the commit point and the outcome"
    );
}
