//! Issue 34 item 5: the loops every host writes, owned by the library.
//! `inbox.wait` blocks until something new waits on the caller.

use crate::tools::{scratch_dir, str_of, World};
use roundtable::{Actor, EngineOptions, ErrorCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn world() -> World {
    World::with(scratch_dir(), EngineOptions::default())
}

/// `inbox.wait` as `actor`, after `cursor` (`Value::Null`: none).
fn wait(w: &World, actor: &Actor, cursor: &Value, timeout_ms: u64) -> Value {
    let mut args = json!({ "timeout_ms": timeout_ms });
    if !cursor.is_null() {
        args["after"] = cursor.clone();
    }
    w.ok("inbox.wait", args, actor)
}

/// `(proposal id, action)` of each item of a result.
fn items(result: &Value) -> Vec<(String, String)> {
    result["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| (str_of(&i["proposal"]["id"]), str_of(&i["action"])))
        .collect()
}

fn item(pid: &str, action: &str) -> (String, String) {
    (pid.to_owned(), action.to_owned())
}

#[test]
fn issue34_item5_returns_at_once_when_the_inbox_is_not_empty() {
    let w = world();
    let pid = w.in_review();
    let started = Instant::now();
    // A minute's timeout: returning at all says it did not wait for it.
    let out = wait(&w, &w.reviewer, &Value::Null, 60_000);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(out["timed_out"], false);
    assert_eq!(items(&out), [item(&pid, "vote")]);
    // The very items inbox.list lists.
    let listed = w.ok("inbox.list", json!({}), &w.reviewer);
    assert_eq!(out["items"], listed["items"]);
    assert!(out["cursor"].as_str().is_some_and(|c| !c.is_empty()));
}

#[test]
fn issue34_item5_a_vote_wakes_the_waiting_author_within_a_second() {
    let w = world();
    let pid = w.in_review();
    // Nothing waits on the author yet: a look returns nothing.
    let first = wait(&w, &w.author, &Value::Null, 0);
    assert_eq!(first["timed_out"], true);
    assert_eq!(items(&first), []);
    let cursor = first["cursor"].clone();
    let (out, woke_after) = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let out = wait(&w, &w.author, &cursor, 60_000);
            (out, Instant::now())
        });
        std::thread::sleep(Duration::from_millis(200));
        let voted = Instant::now();
        w.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "reject", "reason_md": "Say more."}),
            &w.reviewer,
        );
        let (out, woke) = waiter.join().expect("the waiter");
        (out, woke.saturating_duration_since(voted))
    });
    assert_eq!(out["timed_out"], false);
    assert_eq!(items(&out), [item(&pid, "answer_votes")]);
    assert!(
        woke_after < Duration::from_secs(1),
        "woken {woke_after:?} after the vote"
    );
}

#[test]
fn issue34_item5_times_out_with_no_items_and_a_cursor() {
    let w = world();
    let started = Instant::now();
    let out = wait(&w, &w.author, &Value::Null, 300);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(out["timed_out"], true);
    assert_eq!(out["items"], json!([]));
    // The cursor continues: another wait times out the same way.
    let again = wait(&w, &w.author, &out["cursor"], 100);
    assert_eq!(again["timed_out"], true);
    assert_eq!(again["items"], json!([]));
}

#[test]
fn issue34_item5_after_a_cursor_an_item_returns_only_when_its_proposal_changed() {
    let w = world();
    let p1 = w.in_review();
    let first = wait(&w, &w.reviewer, &Value::Null, 0);
    assert_eq!(items(&first), [item(&p1, "vote")]);
    // Told already: it does not come back.
    let quiet = wait(&w, &w.reviewer, &first["cursor"], 200);
    assert_eq!(quiet["timed_out"], true, "{quiet}");
    assert_eq!(items(&quiet), []);
    // Another proposal is new: only it comes.
    let p2 = w.in_review();
    let second = wait(&w, &w.reviewer, &quiet["cursor"], 60_000);
    assert_eq!(items(&second), [item(&p2, "vote")]);
    // A new revision of p1 changes it: p1 comes again, p2 does not.
    w.revise(&p1, 1, crate::tools::PATCH2);
    let third = wait(&w, &w.reviewer, &second["cursor"], 60_000);
    assert_eq!(items(&third), [item(&p1, "vote")]);
    assert_eq!(third["items"][0]["revision"], 2);
    // The older cursor still sees everything since it.
    let older = wait(&w, &w.reviewer, &first["cursor"], 0);
    assert_eq!(items(&older), [item(&p1, "vote"), item(&p2, "vote")]);
}

#[test]
fn issue34_item5_a_worker_loop_sees_each_proposal_once_and_never_an_empty_result() {
    const N: usize = 7;
    let w = world();
    let before: Vec<String> = (0..3).map(|_| w.in_review()).collect();
    let (seen, results) = std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 3..N {
                std::thread::sleep(Duration::from_millis(30));
                w.in_review();
            }
        });
        // The worker: `limit` 2 splits the first three over two results.
        let mut cursor = Value::Null;
        let mut seen: Vec<String> = Vec::new();
        let mut results = 0;
        while seen.len() < N {
            let mut args = json!({"timeout_ms": 60_000, "limit": 2});
            if !cursor.is_null() {
                args["after"] = cursor.clone();
            }
            let r = w.ok("inbox.wait", args, &w.reviewer);
            results += 1;
            assert_eq!(r["timed_out"], false, "an empty result: {r}");
            let got = items(&r);
            assert!(!got.is_empty() && got.len() <= 2, "{r}");
            for (pid, action) in got {
                assert_eq!(action, "vote");
                // The callback: vote, so it waits on the worker no more.
                w.ok(
                    "vote.cast",
                    json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
                    &w.reviewer,
                );
                seen.push(pid);
            }
            cursor = r["cursor"].clone();
            assert!(results <= 2 * N, "too many results");
        }
        (seen, results)
    });
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), N, "each once: {seen:?}");
    assert_eq!(seen.len(), N, "each once: {seen:?}");
    assert_eq!(seen[..3], before[..], "oldest first");
    assert!(results >= 2);
    // Nothing is left for the worker.
    let none = w.ok(
        "inbox.wait",
        json!({"timeout_ms": 0, "after": cursor_after_all(&w)}),
        &w.reviewer,
    );
    assert_eq!(none["items"], json!([]));
}

/// A cursor past everything so far (a look with no cursor returns what
/// waits now; the reviewer has voted on everything, so nothing).
fn cursor_after_all(w: &World) -> Value {
    let r = w.ok("inbox.wait", json!({"timeout_ms": 0}), &w.reviewer);
    assert_eq!(r["items"], json!([]), "{r}");
    r["cursor"].clone()
}

#[test]
fn issue34_item5_bad_arguments_are_refused_naming_the_field() {
    let w = world();
    w.in_review();
    w.in_review();
    let page = w.ok("inbox.list", json!({"limit": 1}), &w.host);
    let list_cursor = page["next_cursor"].clone();
    let cases = [
        (json!({"timeout_ms": 600_001}), "timeout_ms"),
        (json!({"timeout_ms": -1}), "timeout_ms"),
        (json!({"timeout_ms": "1"}), "timeout_ms"),
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 101}), "limit"),
        (json!({"after": "not a cursor"}), "after"),
        (json!({"after": 7}), "after"),
        (json!({"after": list_cursor}), "after"),
        // Past this store's log head: from another store.
        (json!({"after": "dzo5OTk5Ljk5OTkuMA"}), "after"),
    ];
    for (args, field) in cases {
        let err = w.refused(
            "inbox.wait",
            args.clone(),
            &w.reviewer,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], field, "{args}");
    }
    // Bounds are accepted.
    let out = w.ok(
        "inbox.wait",
        json!({"timeout_ms": 0, "limit": 100}),
        &w.reviewer,
    );
    assert_eq!(out["timed_out"], false);
}
