//! Issue 34, item 7: one host cannot stop the others. Runs when
//! `RT_TEST_STORE` names a PostgreSQL server; on the SQLite default
//! these tests return at once.
//!
//! - A host SIGKILLed mid-landing and never restarted: its `applying`
//!   transaction is settled from another host by asking the remote
//!   (`landing.settle`), landed or not, with an abandoned lock on the
//!   remote's branch cleared.
//! - A host SIGSTOPped (paused) while the others land: the others keep
//!   landing.

use super::landing::{fsck, git};
use super::pg_hosts::{all_events, call, fresh_schema, ok, options, Crew};
use super::support::{server, store_url};
use super::tools::str_of;
use roundtable::{Engine, ErrorCode};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A bare remote on `main` holding `a.txt` and `b.txt`, and `n` bare
/// clones of it (`h0.git`, …), in `top`.
fn remote_and_clones(top: &Path, n: usize) -> (PathBuf, Vec<PathBuf>) {
    let work = top.join("seed");
    std::fs::create_dir_all(&work).expect("mkdir");
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("a.txt"), "a\n").expect("write");
    std::fs::write(work.join("b.txt"), "b\n").expect("write");
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
    let clones = (0..n)
        .map(|k| {
            let clone = top.join(format!("h{k}.git"));
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
            clone
        })
        .collect();
    (remote, clones)
}

/// A patch changing the one line of `path` from `old` to `new`.
fn change(path: &str, old: &str, new: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n")
}

/// The remote's `pre-receive` hook: while `hold` exists, a push says so
/// (creates `entered`) and waits for `verdict` (`allow` or `deny`),
/// then removes `hold` and lets the push through or refuses it; without
/// `hold`, every push goes through.
fn hold_pushes(remote: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let (hold, entered, verdict) = (
        remote.join("hold"),
        remote.join("entered"),
        remote.join("verdict"),
    );
    std::fs::write(&hold, "").expect("hold");
    let hook = remote.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\n[ -f '{h}' ] || exit 0\ntouch '{e}'\nwhile [ ! -f '{v}' ]; do sleep 0.02; done\nrm -f '{h}'\n[ \"$(cat '{v}')\" = allow ]\n",
            h = hold.display(),
            e = entered.display(),
            v = verdict.display(),
        ),
    )
    .expect("hook");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    (hold, entered, verdict)
}

/// Re-run this test binary as `pg_hosts::pg_apply_worker`: open `clone`
/// on `url` and apply `pid` once (as orchestrator `host`).
fn spawn_apply(clone: &Path, url: &str, pid: &str, ready: &Path) -> Child {
    Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "pg_hosts::pg_apply_worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RT_PG_APPLY_ROOT", clone)
        .env("RT_PG_URL", url)
        .env("RT_PG_PID", pid)
        .env("RT_PG_READY", ready)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn a host")
}

/// Whether a push of transaction `tid` is still running on this machine
/// (its `git send-pack` carries `roundtable.landing=TID`).
fn pushing(tid: &str) -> bool {
    let marker = format!("roundtable.landing={tid}");
    std::fs::read_dir("/proc").is_ok_and(|dir| {
        dir.flatten().any(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == marker.as_bytes()))
        })
    })
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn issue34_item7_a_dead_hosts_landing_is_settled_from_another_host() {
    let Some(base) = server() else { return };
    for landed in [true, false] {
        let top = tempfile::tempdir().expect("tempdir");
        let (remote, clones) = remote_and_clones(top.path(), 2);
        let old = git(&remote, &["rev-parse", "main"]).trim().to_owned();
        let url = store_url(&base, &fresh_schema("settle"));
        // Host A journals a landing of a.txt and is killed while its push
        // is in the remote's hands.
        let a = Crew::new("host", "alice", "bob", "t1");
        let pid = {
            let engine = Engine::open(&clones[0], options(&url)).expect("open A");
            a.set_up(&engine);
            a.claim(&engine, "file:a.txt").expect("claim");
            a.approved(&engine, "A", &change("a.txt", "a", "a, by A"))
                .expect("approved")
        };
        let (_hold, entered, verdict) = hold_pushes(&remote);
        let ready = top.path().join("ready");
        let mut child = spawn_apply(&clones[0], &url, &pid, &ready);
        wait_for("the push", || entered.exists());
        child.kill().expect("SIGKILL host A");
        let _ = child.wait();

        // Host B, another clone on the same store.
        let b = Crew::new("hostb", "carol", "dave", "t2");
        let engine = Engine::open(&clones[1], options(&url)).expect("open B");
        b.set_up(&engine);
        let txs = ok(
            &engine,
            "transaction.list",
            json!({"proposal_id": pid}),
            &b.host,
        );
        let tid = str_of(&txs["transactions"][0]["id"]);
        assert_eq!(txs["transactions"][0]["status"], "applying", "{txs}");
        // A's applying transaction makes its file busy on every host.
        let e = call(
            &engine,
            "claim.acquire",
            json!({"resource_id": "file:a.txt", "type": "write", "ttl_s": 60}),
            &b.author,
        )
        .expect_err("busy while A's landing is applying");
        assert_eq!(e.code(), ErrorCode::Busy, "{e}");
        // The advice, read from B, names the tool (not B's own files).
        let advice = ok(
            &engine,
            "transaction.recovery",
            json!({"transaction_id": tid}),
            &b.host,
        );
        assert_eq!(advice["actions"], json!(["settle"]), "{advice}");
        // Too young to be judged abandoned: busy, nothing changed.
        let e = call(
            &engine,
            "landing.settle",
            json!({"transaction_id": tid, "stale_after_ms": 3_600_000}),
            &b.host,
        )
        .expect_err("in flight, perhaps");
        assert_eq!(e.code(), ErrorCode::Busy, "{e}");
        let t = ok(
            &engine,
            "transaction.get",
            json!({"transaction_id": tid}),
            &b.host,
        );
        assert_eq!(t["transaction"]["status"], "applying");
        // Only the orchestrator settles.
        let e = call(
            &engine,
            "landing.settle",
            json!({"transaction_id": tid}),
            &b.author,
        )
        .expect_err("an agent");
        assert_eq!(e.code(), ErrorCode::Forbidden, "{e}");

        // The remote decides A's push; with `deny`, a killed push's lock
        // is left on the remote's branch too.
        std::fs::write(&verdict, if landed { "allow" } else { "deny" }).expect("verdict");
        wait_for("the push to end", || !pushing(&tid));
        let lock = remote.join("refs/heads/main.lock");
        if !landed {
            std::fs::write(&lock, format!("{old}\n")).expect("a stale lock");
            let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
            std::fs::File::options()
                .write(true)
                .open(&lock)
                .and_then(|f| f.set_modified(an_hour_ago))
                .expect("age the lock");
            // It fails every push: B's own landing is refused.
            b.claim(&engine, "file:b.txt").expect("claim");
            let pb = b
                .approved(&engine, "B", &change("b.txt", "b", "b, by B"))
                .expect("approved");
            let e = b
                .apply(&engine, &pb)
                .expect_err("the remote's branch is locked");
            assert_eq!(e.code(), ErrorCode::PreconditionFailed, "{e}");
        }
        let tip = git(&remote, &["rev-parse", "main"]).trim().to_owned();
        assert_eq!(tip != old, landed);
        std::thread::sleep(Duration::from_millis(1100));
        let settled = ok(
            &engine,
            "landing.settle",
            json!({"transaction_id": tid, "stale_after_ms": 1000}),
            &b.host,
        );
        assert_eq!(settled["remote_tip"], json!(tip), "{settled}");
        assert_eq!(settled["cleared_lock"], json!(!landed), "{settled}");
        assert!(!lock.exists(), "the abandoned lock stayed");
        let proposal = ok(
            &engine,
            "proposal.get",
            json!({"proposal_id": pid}),
            &b.host,
        );
        if landed {
            assert_eq!(settled["outcome"], "applied", "{settled}");
            assert_eq!(settled["transaction"]["status"], "applied");
            assert_eq!(proposal["proposal"]["status"], "applied");
            // A's claim went with its landed change: B's author claims a.txt.
            ok(
                &engine,
                "claim.acquire",
                json!({"resource_id": "file:a.txt", "type": "write", "ttl_s": 60}),
                &b.author,
            );
            assert_eq!(git(&remote, &["show", "main:a.txt"]), "a, by A\n");
        } else {
            assert_eq!(settled["outcome"], "undone", "{settled}");
            assert_eq!(settled["transaction"]["status"], "recovered");
            assert_eq!(proposal["proposal"]["status"], "in_review");
            // a.txt is no longer busy (A's author still holds its claim).
            let e = call(
                &engine,
                "claim.acquire",
                json!({"resource_id": "file:a.txt", "type": "write", "ttl_s": 60}),
                &b.author,
            )
            .expect_err("alice holds it");
            assert_ne!(e.code(), ErrorCode::Busy, "{e}");
            // The lock gone, B lands.
            let pb = str_of(
                &ok(&engine, "proposal.list", json!({"task_id": "t2"}), &b.host)["proposals"][0]
                    ["id"],
            );
            let out = b.apply(&engine, &pb).expect("B lands");
            assert_eq!(out["transaction"]["status"], "applied");
            assert_eq!(git(&remote, &["show", "main:a.txt"]), "a\n");
            assert_eq!(git(&remote, &["show", "main:b.txt"]), "b, by B\n");
        }
        // Settling again changes nothing.
        let again = ok(
            &engine,
            "landing.settle",
            json!({"transaction_id": tid, "stale_after_ms": 1000}),
            &b.host,
        );
        assert_eq!(again["outcome"], "already_finished", "{again}");
        let advice = ok(
            &engine,
            "transaction.recovery",
            json!({"transaction_id": tid}),
            &b.host,
        );
        assert_ne!(advice["actions"], json!(["settle"]), "{advice}");
        let verify = ok(&engine, "events.verify", json!({}), &b.host);
        assert_eq!(verify["valid"], true, "{verify}");
        let recorded = all_events(&engine, &b.host)
            .iter()
            .filter(|e| e["subject"] == json!(tid))
            .filter(|e| e["kind"] == "transaction.applied" || e["kind"] == "transaction.recovered")
            .count();
        assert_eq!(recorded, 1, "one outcome");
        fsck(&remote);
        fsck(&clones[1]);
    }
}
