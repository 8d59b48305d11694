//! Issue 19 item 3: a call's deadline and cancel token end every wait it
//! makes — the apply lock, a busy store, a claim wait, `events.wait` —
//! long before its own timeout, with `cancelled` or `deadline_exceeded`,
//! and nothing changes.

use super::tools::{fingerprint, str_of, World, PATCH};
use roundtable::{CallOptions, CancelToken, ErrorCode};
use serde_json::json;
use std::time::{Duration, Instant};

/// Call `tool` as `actor` under `options` and expect `code` within 5 s
/// (the waits themselves are 10 s and more), with nothing changed.
fn interrupted(
    w: &World,
    tool: &str,
    args: serde_json::Value,
    actor: &roundtable::Actor,
    options: &CallOptions,
    code: ErrorCode,
) {
    let before = fingerprint(w.dir.path());
    let start = Instant::now();
    let e = w
        .engine
        .call_with(tool, args.clone(), actor, options)
        .expect_err(tool);
    assert_eq!(e.code(), code, "{tool} {args}: {e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{tool} gave up after {:?}",
        start.elapsed()
    );
    assert_eq!(
        fingerprint(w.dir.path()),
        before,
        "{tool} changed something"
    );
}

/// A token cancelled `after` from now, on another thread.
fn cancelled_after(after: Duration) -> CallOptions {
    let token = CancelToken::new();
    let later = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(after);
        later.cancel();
    });
    CallOptions {
        deadline: None,
        cancel: Some(token),
    }
}

#[test]
fn an_apply_waiting_for_the_apply_lock_is_cancelled_or_times_out_and_changes_nothing() {
    let w = World::new();
    let pid = w.approved("file:hello.txt", PATCH);
    let held = roundtable::apply::ApplyLock::acquire(w.dir.path(), Duration::from_secs(1))
        .expect("the lock");
    let apply = json!({"proposal_id": pid, "revision": 1});
    interrupted(
        &w,
        "patch.apply",
        apply.clone(),
        &w.host,
        &cancelled_after(Duration::from_millis(50)),
        ErrorCode::Cancelled,
    );
    interrupted(
        &w,
        "patch.apply",
        apply.clone(),
        &w.host,
        &CallOptions::timeout(Duration::from_millis(80)),
        ErrorCode::DeadlineExceeded,
    );
    assert_eq!(w.rows("transactions"), 0);
    drop(held);
    // Free, the same apply lands; options that never fire change nothing.
    let out = w
        .engine
        .call_with(
            "patch.apply",
            apply,
            &w.host,
            &cancelled_after(Duration::from_secs(60)),
        )
        .expect("applies");
    assert_eq!(out["transaction"]["status"], "applied");
    // A token cancelled before the call stops it at once.
    let token = CancelToken::new();
    token.cancel();
    interrupted(
        &w,
        "proposal.get",
        json!({"proposal_id": pid}),
        &w.host,
        &CallOptions {
            deadline: None,
            cancel: Some(token),
        },
        ErrorCode::Cancelled,
    );
}

#[test]
fn events_wait_and_claim_waits_end_at_the_callers_deadline_or_cancel() {
    let w = World::new();
    interrupted(
        &w,
        "events.wait",
        json!({"since_seq": 0, "timeout_ms": 30000, "kinds": ["proposal.applied"]}),
        &w.host,
        &CallOptions::timeout(Duration::from_millis(100)),
        ErrorCode::DeadlineExceeded,
    );
    interrupted(
        &w,
        "events.wait",
        json!({"since_seq": 0, "timeout_ms": 30000, "kinds": ["proposal.applied"]}),
        &w.host,
        &cancelled_after(Duration::from_millis(50)),
        ErrorCode::Cancelled,
    );
    // Another agent holds the file; a claim waiting for it gives up.
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 600}),
        &w.reviewer,
    );
    interrupted(
        &w,
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 600, "wait_ms": 30000}),
        &w.author,
        &cancelled_after(Duration::from_millis(50)),
        ErrorCode::Cancelled,
    );
    let claims = w.ok("claim.list", json!({}), &w.host);
    let holders: Vec<String> = claims["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .map(|c| str_of(&c["agent_id"]))
        .collect();
    assert_eq!(holders, vec!["bob".to_owned()]);
}

#[test]
fn a_write_waiting_for_a_busy_store_gives_up_at_its_deadline_and_stores_nothing() {
    let w = World::new();
    let mut db = crate::support::store_db(w.dir.path());
    db.hold_write_lock();
    let create = json!({"task_id": "t1", "title": "x", "summary_md": "s", "patch": PATCH});
    let start = Instant::now();
    let e = w
        .engine
        .call_with(
            "proposal.create",
            create.clone(),
            &w.author,
            &CallOptions::timeout(Duration::from_millis(150)),
        )
        .expect_err("busy");
    assert_eq!(e.code(), ErrorCode::DeadlineExceeded, "{e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let token = CancelToken::new();
    let later = token.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        later.cancel();
    });
    let e = w
        .engine
        .call_with(
            "proposal.create",
            create.clone(),
            &w.author,
            &CallOptions {
                deadline: None,
                cancel: Some(token),
            },
        )
        .expect_err("busy");
    assert_eq!(e.code(), ErrorCode::Cancelled, "{e}");
    db.release();
    assert_eq!(w.rows("proposals"), 0);
    w.ok("proposal.create", create, &w.author);
    assert_eq!(w.rows("proposals"), 1);
}
