//! Issue 32, items 2, 3 and 14 (the engine's part): waits and claims at the
//! agent boundary.
//!
//! - 14: a plain `claim.acquire` (no `wait_ms`) racing an apply of its file
//!   waits the apply out (briefly) instead of failing with `busy`.
//! - 2/3: a cancelled wait wakes at once (woken by the cancel, not by
//!   looking at its token in slices) and grants nothing. (The MCP tests in
//!   roundtable-mcp hold the items over the protocol.)

use super::tools::{fingerprint, str_of, World};
use roundtable::{CallOptions, CancelToken, ErrorCode};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The one-line patch of `hello.txt` from `old` to `new`.
fn change(old: &str, new: &str) -> String {
    format!("--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-{old}\n+{new}\n")
}

/// Rounds of the race: `RT_ITEM14_ROUNDS`, default 40.
fn rounds() -> usize {
    std::env::var("RT_ITEM14_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

/// Each round the host applies a proposal changing `hello.txt` while
/// another agent acquires (and releases) a read claim on it in a loop, with
/// no `wait_ms`: not one acquire is refused with `busy` (today's code
/// refuses those that meet the apply's `applying` window), each returns a
/// claim, and every apply lands.
#[test]
fn item14_plain_claim_acquire_waits_out_a_racing_apply_instead_of_busy() {
    let w = World::new();
    let carol = w.agent("carol", &["reviewer"]);
    let mut text = "hello".to_owned();
    let mut acquired = 0usize;
    for round in 0..rounds() {
        let next = format!("v{round}");
        let pid = w.approved("file:hello.txt", &change(&text, &next));
        let applying = AtomicBool::new(true);
        let refusals = std::thread::scope(|s| {
            let applier = s.spawn(|| {
                let out = w.engine.call(
                    "patch.apply",
                    json!({"proposal_id": pid, "revision": 1}),
                    &w.host,
                );
                applying.store(false, Ordering::SeqCst);
                out
            });
            let mut refusals = Vec::new();
            while applying.load(Ordering::SeqCst) {
                match w.engine.call(
                    "claim.acquire",
                    json!({"resource_id": "file:hello.txt", "type": "read", "ttl_s": 60}),
                    &carol,
                ) {
                    Ok(out) => {
                        acquired += 1;
                        w.ok(
                            "claim.release",
                            json!({"claim_id": out["claim"]["id"]}),
                            &carol,
                        );
                    }
                    Err(e) => refusals.push(format!("{}: {e} {}", e.code(), e.details())),
                }
            }
            let landed = applier.join().expect("the applier");
            let landed = landed.unwrap_or_else(|e| panic!("round {round}: apply: {e}"));
            assert_eq!(landed["proposal"]["status"], "applied", "round {round}");
            refusals
        });
        assert!(
            refusals.is_empty(),
            "round {round}: plain acquires refused: {refusals:?}"
        );
        text = next;
    }
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read"),
        format!("{text}\n")
    );
    eprintln!(
        "item14: {} rounds, {acquired} plain acquires during applies",
        rounds()
    );
}

/// A cancelled claim wait wakes at once, even one that would otherwise
/// sleep until the holder's claim expires (no wake-up is due for 10 min),
/// and grants nothing; the other agent's retry then succeeds.
#[test]
fn a_cancelled_claim_wait_wakes_at_once_and_grants_nothing() {
    let w = World::new();
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 600}),
        &w.reviewer,
    );
    let token = CancelToken::new();
    let options = CallOptions {
        deadline: None,
        cancel: Some(token.clone()),
    };
    let before = fingerprint(w.dir.path());
    let (e, took) = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            w.engine.call_with(
                "claim.acquire",
                json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 900, "wait_ms": 60000}),
                &w.author,
                &options,
            )
        });
        std::thread::sleep(Duration::from_millis(200));
        let at = Instant::now();
        token.cancel();
        let out = waiter.join().expect("the waiter");
        (out.expect_err("cancelled"), at.elapsed())
    });
    assert_eq!(e.code(), ErrorCode::Cancelled, "{e}");
    assert!(took < Duration::from_secs(1), "woke after {took:?}");
    assert_eq!(
        fingerprint(w.dir.path()),
        before,
        "the wait changed something"
    );
    // The holder releases; the other agent's retry is granted, and the
    // cancelled caller holds nothing.
    let claims = w.ok("claim.list", json!({}), &w.host);
    let held = &claims["claims"][0];
    w.ok(
        "claim.release",
        json!({"claim_id": held["id"]}),
        &w.reviewer,
    );
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60}),
        &w.reviewer,
    );
    let claims = w.ok("claim.list", json!({}), &w.host);
    let holders: Vec<String> = claims["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .filter(|c| c["status"] == "active")
        .map(|c| str_of(&c["agent_id"]))
        .collect();
    assert_eq!(holders, vec!["bob".to_owned()]);
}
