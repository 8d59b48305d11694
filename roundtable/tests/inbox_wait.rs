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

/// Store `document` as a policy and activate it (as the orchestrator).
fn activate_policy(w: &World, document: &str) {
    let set = w.ok("policy.set", json!({"document": document}), &w.host);
    let version = set["policy"]["version"].as_u64().expect("a version");
    w.ok("policy.activate", json!({"version": version}), &w.host);
}

/// A proposal by `who` with `patch`, in review; its id.
fn in_review_by(w: &World, who: &Actor, patch: &str) -> String {
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch}),
            who,
        )["proposal"]["id"],
    );
    w.ok("proposal.request_review", json!({"proposal_id": pid}), who);
    pid
}

/// Events of `kind`, oldest first.
fn events_of(w: &World, kind: &str) -> Vec<Value> {
    w.events()
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .collect()
}

/// A new author dave's change of `hello.txt` (`PATCH2`), claimed, in
/// review and approved by the reviewer; its id.
fn daves_approved_change(w: &World) -> String {
    let dave = w.agent("dave", &["author"]);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &dave,
    );
    let pd = in_review_by(w, &dave, crate::tools::PATCH2);
    w.ok(
        "vote.cast",
        json!({"proposal_id": pd, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    pd
}

const OTHER: &str = "--- a/other.txt\n+++ b/other.txt\n@@ -1 +1 @@\n-other\n+other, changed\n";

#[test]
fn issue34_item5_a_landing_wakes_the_author_it_makes_stale_and_no_other() {
    let w = world();
    std::fs::write(w.dir.path().join("other.txt"), "other\n").expect("write");
    // Only reviewers approve: alice and carol are only ever asked about
    // their own proposals.
    activate_policy(
        &w,
        "version = 1\n[approvals]\neligible_roles = [\"reviewer\"]\n",
    );
    let carol = w.agent("carol", &["author"]);
    let pa = in_review_by(&w, &w.author, crate::tools::PATCH);
    let pc = in_review_by(&w, &carol, OTHER);
    let pd = daves_approved_change(&w);
    // Nothing waits on either author now.
    let a0 = wait(&w, &w.author, &Value::Null, 0);
    let c0 = wait(&w, &carol, &Value::Null, 0);
    assert_eq!((items(&a0), items(&c0)), (vec![], vec![]));
    let ((a1, a_woke), (c1, c_waited), landed) = std::thread::scope(|s| {
        let alice = s.spawn(|| {
            let out = wait(&w, &w.author, &a0["cursor"], 60_000);
            (out, Instant::now())
        });
        let carol_waits = s.spawn(|| {
            let started = Instant::now();
            let out = wait(&w, &carol, &c0["cursor"], 1_500);
            (out, started.elapsed())
        });
        std::thread::sleep(Duration::from_millis(200));
        w.ok(
            "patch.apply",
            json!({"proposal_id": pd, "revision": 1}),
            &w.host,
        );
        let landed = Instant::now();
        (
            alice.join().expect("alice"),
            carol_waits.join().expect("carol"),
            landed,
        )
    });
    assert_eq!(a1["timed_out"], false);
    assert_eq!(items(&a1), [item(&pa, "rebase_or_attach")]);
    let woke = a_woke.saturating_duration_since(landed);
    assert!(woke < Duration::from_secs(1), "woken {woke:?} after");
    assert_eq!(c1["timed_out"], true, "{c1}");
    assert_eq!(items(&c1), []);
    assert!(c_waited >= Duration::from_millis(1_500));
    // The landing says what it changed, and tells the stale proposal.
    let applied = events_of(&w, "proposal.applied");
    assert_eq!(applied.len(), 1);
    assert_eq!(applied[0]["data"]["paths"], json!(["hello.txt"]));
    // dave claimed the file, not a symbol: no symbols known.
    assert!(
        applied[0]["data"].get("symbols").is_none(),
        "{}",
        applied[0]
    );
    let stale = events_of(&w, "proposal.stale");
    assert_eq!(stale.len(), 1, "{stale:#?}");
    assert_eq!(stale[0]["proposal_id"], pa.as_str());
    assert_eq!(stale[0]["subject"], pa.as_str());
    assert_eq!(
        stale[0]["data"],
        json!({"revision": 1, "landed_proposal_id": pd, "paths": ["hello.txt"],
               "transaction_id": applied[0]["data"]["transaction_id"]})
    );
    // carol's proposal is not stale, nor told it is.
    assert!(stale.iter().all(|e| e["proposal_id"] != pc.as_str()));
}

#[test]
fn issue34_item5_a_rollback_wakes_the_author_it_makes_stale_and_says_what_it_changed() {
    let w = world();
    activate_policy(
        &w,
        "version = 1\n[approvals]\neligible_roles = [\"reviewer\"]\n",
    );
    let pd = daves_approved_change(&w);
    let landed = w.ok(
        "patch.apply",
        json!({"proposal_id": pd, "revision": 1}),
        &w.host,
    );
    let landed_tx = str_of(&landed["transaction"]["id"]);
    // alice's change is made on what dave landed.
    let pa = in_review_by(
        &w,
        &w.author,
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hi\n+hi there\n",
    );
    let a0 = wait(&w, &w.author, &Value::Null, 0);
    assert_eq!(items(&a0), []);
    let (a1, woke, rolled) = std::thread::scope(|s| {
        let alice = s.spawn(|| {
            let out = wait(&w, &w.author, &a0["cursor"], 60_000);
            (out, Instant::now())
        });
        std::thread::sleep(Duration::from_millis(200));
        let rolled = w.ok(
            "transaction.rollback",
            json!({"transaction_id": landed_tx}),
            &w.host,
        );
        let at = Instant::now();
        let (out, woke) = alice.join().expect("alice");
        (out, woke.saturating_duration_since(at), rolled)
    });
    assert_eq!(a1["timed_out"], false, "{a1:#}");
    assert_eq!(items(&a1), [item(&pa, "rebase_or_attach")]);
    assert!(woke < Duration::from_secs(1), "woken {woke:?} after");
    let stale = events_of(&w, "proposal.stale");
    let rollback_tx = str_of(&rolled["transaction"]["id"]);
    let told: Vec<&Value> = stale
        .iter()
        .filter(|e| e["data"]["transaction_id"] == rollback_tx.as_str())
        .collect();
    assert_eq!(told.len(), 1, "{stale:#?}");
    assert_eq!(told[0]["proposal_id"], pa.as_str());
    assert_eq!(
        told[0]["data"],
        json!({"revision": 1, "landed_proposal_id": pd, "paths": ["hello.txt"],
               "transaction_id": rollback_tx})
    );
    // Rolling the rollback back lands dave's change again: its event says
    // which paths it changed, and alice, whose proposal touches them, is
    // told, as after any landing (the event is about the paths; her inbox
    // works out that her change is fresh again).
    let again = w.ok(
        "transaction.rollback",
        json!({"transaction_id": rollback_tx}),
        &w.host,
    );
    let reapplied = events_of(&w, "proposal.applied");
    let last = reapplied.last().expect("re-applied");
    assert_eq!(
        last["data"]["rolled_back_transaction_id"],
        rollback_tx.as_str()
    );
    assert_eq!(last["data"]["paths"], json!(["hello.txt"]));
    let again_tx = str_of(&again["transaction"]["id"]);
    assert!(
        events_of(&w, "proposal.stale")
            .iter()
            .any(|e| e["data"]["transaction_id"] == again_tx.as_str()
                && e["proposal_id"] == pa.as_str()),
        "alice is told of the re-apply"
    );
    let a2 = w.ok("inbox.list", json!({}), &w.author);
    assert_eq!(a2["items"], json!([]), "{a2:#}");
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn issue34_item5_a_trivially_rebasable_approved_proposal_waits_on_the_orchestrator_not_its_author()
{
    use crate::claims_touched::{approved, hold, world as two_authors, IN_SAVE, IN_TOTAL};
    let (w, ann, ben, rev) = two_authors();
    hold(&w, &ann, "symbol:m.py#User.save");
    hold(&w, &ben, "symbol:m.py#Order.total");
    let pa = approved(&w, &ann, &rev, IN_SAVE);
    let pb = approved(&w, &ben, &rev, IN_TOTAL);
    let b0 = wait(&w, &ben, &Value::Null, 0);
    assert_eq!(items(&b0), []);
    w.ok(
        "patch.apply",
        json!({"proposal_id": pa, "revision": 1}),
        &w.host,
    );
    // The landing names the symbol its author's claim covered.
    let applied = events_of(&w, "proposal.applied");
    assert_eq!(applied[0]["data"]["paths"], json!(["m.py"]));
    assert_eq!(
        applied[0]["data"]["symbols"],
        json!(["symbol:m.py#User.save"])
    );
    // ben's proposal is stale (told so), but its rebase is trivial: the
    // orchestrator lands it, ben is not asked to rebase.
    let stale = events_of(&w, "proposal.stale");
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0]["proposal_id"], pb.as_str());
    let status = w.ok("proposal.status", json!({"proposal_id": pb}), &ben);
    assert_eq!(status["stale"], true);
    let next: Vec<(String, String)> = status["next"]
        .as_array()
        .expect("next")
        .iter()
        .map(|n| (str_of(&n["actor"]), str_of(&n["action"])))
        .collect();
    assert_eq!(
        next,
        [
            ("author".to_owned(), "wait".to_owned()),
            ("orchestrator".to_owned(), "apply".to_owned())
        ],
        "{status:#}"
    );
    let bens = w.ok("inbox.list", json!({}), &ben);
    assert_eq!(bens["items"], json!([]), "{bens:#}");
    let b1 = wait(&w, &ben, &b0["cursor"], 200);
    assert_eq!(b1["timed_out"], true, "{b1:#}");
    let host = wait(&w, &w.host, &Value::Null, 0);
    assert_eq!(items(&host), [item(&pb, "apply")]);
    // And it does, as it was told.
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pb, "revision": 1, "rebase": true}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "applied");
}

#[test]
fn issue34_item5_an_expired_claim_is_released_with_an_event() {
    use roundtable::clock::{ManualClock, Timestamp};
    let clock = ManualClock::new(Timestamp(1_800_000_000_000));
    let w = World::with(
        scratch_dir(),
        EngineOptions {
            clock: std::sync::Arc::new(clock.clone()),
            ..EngineOptions::default()
        },
    );
    let held = w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 1}),
        &w.reviewer,
    )["claim"]
        .clone();
    let since = w.last_event()["seq"].as_u64().expect("a seq");
    let (told, granted) = std::thread::scope(|s| {
        // A host waiting for expiries, and an agent waiting for the file.
        let told = s.spawn(|| {
            w.ok(
                "events.wait",
                json!({"since_seq": since, "kinds": ["claim.expired"], "timeout_ms": 60_000}),
                &w.host,
            )
        });
        let granted = s.spawn(|| {
            w.ok(
                "claim.acquire",
                json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600, "wait_ms": 60_000}),
                &w.author,
            )
        });
        std::thread::sleep(Duration::from_millis(100));
        // Nothing is committed: the holder just stops renewing.
        clock.advance_ms(2_000);
        (
            told.join().expect("the host"),
            granted.join().expect("the agent"),
        )
    });
    assert_eq!(granted["claim"]["agent_id"], "alice");
    assert_eq!(granted["claim"]["status"], "active");
    assert_eq!(told["timed_out"], false);
    let expired = &told["events"][0];
    assert_eq!(expired["kind"], "claim.expired");
    assert_eq!(expired["subject"], held["id"]);
    assert_eq!(
        expired["actor"],
        json!({"kind": "orchestrator", "id": "roundtable-engine"})
    );
    assert_eq!(
        expired["data"],
        json!({"agent_id": "bob", "resource_id": "file:hello.txt", "type": "write",
               "token": held["token"], "expires_at": held["expires_at"]})
    );
    // Told once, whatever writes follow; the claim still reads expired.
    w.ok(
        "task.create",
        json!({"task_id": "t2", "title": "Another"}),
        &w.host,
    );
    let all = events_of(&w, "claim.expired");
    assert_eq!(all.len(), 1, "{all:#?}");
    let page = w.ok("claim.list", json!({"agent_id": "bob"}), &w.host);
    let claim = &page["claims"][0];
    assert_eq!(claim["id"], held["id"]);
    assert_eq!(claim["status"], "expired", "{claim}");
    assert_eq!(claim["released_at"], Value::Null);
    let listed = |status: &str| {
        let page = w.ok("claim.list", json!({"status": status}), &w.host);
        page["claims"]
            .as_array()
            .expect("claims")
            .iter()
            .map(|c| str_of(&c["id"]))
            .collect::<Vec<_>>()
    };
    assert_eq!(listed("expired"), [str_of(&held["id"])]);
    assert!(!listed("released").contains(&str_of(&held["id"])));
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);

    // With no waiter at all, the next write notes a lapsed claim; a
    // refused write notes nothing.
    let lapsing = w.ok(
        "claim.acquire",
        json!({"resource_id": "file:other.txt", "type": "write", "ttl_s": 1}),
        &w.reviewer,
    )["claim"]
        .clone();
    clock.advance_ms(2_000);
    w.refused(
        "task.create",
        json!({"task_id": "t2", "title": "Again"}),
        &w.host,
        ErrorCode::Conflict,
    );
    assert_eq!(events_of(&w, "claim.expired").len(), 1);
    w.ok(
        "task.create",
        json!({"task_id": "t3", "title": "A third"}),
        &w.host,
    );
    let all = events_of(&w, "claim.expired");
    assert_eq!(all.len(), 2);
    assert_eq!(all[1]["subject"], lapsing["id"]);

    // With nobody writing, a waiter on the log notes it at its expiry.
    let last = w.ok(
        "claim.acquire",
        json!({"resource_id": "file:third.txt", "type": "write", "ttl_s": 1}),
        &w.reviewer,
    )["claim"]
        .clone();
    let since = w.last_event()["seq"].as_u64().expect("a seq");
    let told = std::thread::scope(|s| {
        let told = s.spawn(|| {
            w.ok(
                "events.wait",
                json!({"since_seq": since, "kinds": ["claim.expired"], "timeout_ms": 60_000}),
                &w.host,
            )
        });
        std::thread::sleep(Duration::from_millis(100));
        clock.advance_ms(2_000);
        told.join().expect("the host")
    });
    assert_eq!(told["timed_out"], false);
    assert_eq!(told["events"][0]["subject"], last["id"]);
}

#[test]
fn issue34_item5_the_typed_session_waits_on_the_inbox() -> Result<(), roundtable::ToolError> {
    use roundtable::session::WaitInbox;
    let w = world();
    let pid = w.in_review();
    let bob = w.engine.session(w.reviewer.clone());
    let first = bob
        .proposals()
        .inbox_wait(WaitInbox::now().timeout_ms(60_000))?;
    assert!(!first.timed_out);
    assert_eq!(first.items.len(), 1);
    assert_eq!(first.items[0].proposal.id, pid);
    let next = bob
        .proposals()
        .inbox_wait(WaitInbox::after(first.cursor).timeout_ms(0).limit(10))?;
    assert!(next.timed_out && next.items.is_empty());
    let err = bob
        .proposals()
        .inbox_wait(WaitInbox::now().timeout_ms(600_001))
        .expect_err("past the longest wait");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(err.details()["field"], "timeout_ms");
    Ok(())
}
