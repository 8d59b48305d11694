//! Waiting instead of polling (issue 16 item 4): `events.wait` wakes on a
//! commit by this engine, another thread or another process; a waiting
//! `claim.acquire` is granted when the conflicting claim is released or
//! expires, first come first served; re-acquiring one's own claim renews
//! it.

use crate::tools::{id, scratch_dir, str_of, World};
use roundtable::clock::{ManualClock, Timestamp};
use roundtable::{Actor, Engine, EngineOptions, ErrorCode};
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const ROOT_VAR: &str = "RT_WAIT_ROOT";
const CALL_VAR: &str = "RT_WAIT_CALL";

fn world() -> World {
    World::with(scratch_dir(), EngineOptions::default())
}

/// The log's last seq.
fn head(w: &World) -> u64 {
    w.events()
        .last()
        .and_then(|e| e["seq"].as_u64())
        .unwrap_or(0)
}

fn task(w: &World, task_id: &str) {
    w.ok(
        "task.create",
        json!({"task_id": task_id, "title": "A task"}),
        &w.host,
    );
}

fn kinds(page: &Value) -> Vec<String> {
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| str_of(&e["kind"]))
        .collect()
}

#[test]
fn events_wait_returns_at_once_when_matching_events_exist() {
    let w = world();
    task(&w, "t2");
    // A minute's timeout: returning at all says it did not wait for it.
    let page = w.ok(
        "events.wait",
        json!({"since_seq": 0, "kinds": ["task.created"], "timeout_ms": 60000}),
        &w.host,
    );
    assert_eq!(page["timed_out"], false);
    assert_eq!(kinds(&page), ["task.created", "task.created"]);
    assert_eq!(page["events"][1]["subject"], "t2");
    assert_eq!(page["head_seq"].as_u64(), Some(head(&w)));
    assert_eq!(page["next_since_seq"], page["head_seq"]);
}

#[test]
fn events_wait_filters_by_kind_proposal_and_actor_and_pages_by_limit() {
    let w = world();
    let pid = w.in_review();
    let other = w.proposal();
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let mine = w.ok(
        "events.wait",
        json!({"since_seq": 0, "proposal_id": pid, "timeout_ms": 0}),
        &w.host,
    );
    assert_eq!(
        kinds(&mine),
        ["proposal.created", "proposal.review_requested", "vote.cast"]
    );
    assert!(mine["events"]
        .as_array()
        .expect("events")
        .iter()
        .all(|e| e["proposal_id"] == pid.as_str()));
    let by_bob = w.ok(
        "events.wait",
        json!({"since_seq": 0, "actor": {"kind": "agent", "id": "bob"}, "timeout_ms": 0}),
        &w.host,
    );
    assert_eq!(kinds(&by_bob), ["vote.cast"]);
    let created = w.ok(
        "events.wait",
        json!({"since_seq": 0, "kinds": ["proposal.created"], "actor": {"kind": "agent", "id": "alice"}, "timeout_ms": 0}),
        &w.host,
    );
    let subjects: Vec<String> = created["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| str_of(&e["subject"]))
        .collect();
    assert_eq!(subjects, [pid.clone(), other]);
    // A short page resumes after its last event, not at the head.
    let first = w.ok(
        "events.wait",
        json!({"since_seq": 0, "limit": 2, "timeout_ms": 0}),
        &w.host,
    );
    assert_eq!(first["events"].as_array().expect("events").len(), 2);
    assert_eq!(first["next_since_seq"], first["events"][1]["seq"]);
    assert_eq!(first["head_seq"].as_u64(), Some(head(&w)));
    let second = w.ok(
        "events.wait",
        json!({"since_seq": first["next_since_seq"], "limit": 1000, "timeout_ms": 0}),
        &w.host,
    );
    assert_eq!(
        second["events"][0]["seq"].as_u64(),
        first["events"][1]["seq"].as_u64().map(|s| s + 1)
    );
}

#[test]
fn events_wait_times_out_empty_with_the_head_to_resume_from() {
    let w = world();
    let h = head(&w);
    let start = std::time::Instant::now();
    let page = w.ok(
        "events.wait",
        json!({"since_seq": h, "timeout_ms": 50}),
        &w.host,
    );
    assert!(start.elapsed() >= Duration::from_millis(50));
    assert_eq!(page["timed_out"], true);
    assert_eq!(page["events"], json!([]));
    assert_eq!(page["head_seq"].as_u64(), Some(h));
    assert_eq!(page["next_since_seq"].as_u64(), Some(h));
    // Events exist after since_seq but none match: still a timeout, and
    // resuming from the head skips what did not match.
    let none = w.ok(
        "events.wait",
        json!({"since_seq": 0, "kinds": ["proposal.applied"], "timeout_ms": 20}),
        &w.host,
    );
    assert_eq!(none["timed_out"], true);
    assert_eq!(none["events"], json!([]));
    assert_eq!(none["next_since_seq"].as_u64(), Some(h));
}

#[test]
fn events_wait_refuses_bad_arguments_and_writes_nothing() {
    let w = world();
    for (args, field) in [
        (json!({"since_seq": 0, "timeout_ms": 60001}), "timeout_ms"),
        (json!({"since_seq": 0, "timeout_ms": -1}), "timeout_ms"),
        (json!({"since_seq": 0, "kinds": []}), "kinds"),
        (
            json!({"since_seq": 0, "kinds": ["task.created", "no.such"]}),
            "kinds[1]",
        ),
        (json!({"since_seq": 0, "limit": 0}), "limit"),
        (json!({"since_seq": -1}), "since_seq"),
        (json!({"since_seq": u64::MAX}), "since_seq"),
        (json!({"timeout_ms": 10}), "since_seq"),
        (
            json!({"since_seq": 0, "actor": {"kind": "robot", "id": "x"}}),
            "actor.kind",
        ),
        (json!({"since_seq": 0, "colour": "red"}), "colour"),
    ] {
        let err = w.refused(
            "events.wait",
            args.clone(),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], field, "{args}");
    }
}

#[test]
fn a_commit_in_another_thread_wakes_the_waiter_and_the_engine_stays_usable() {
    let w = world();
    for round in 0..20 {
        let since = head(&w);
        let task_id = format!("round-{round}");
        let page = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                w.ok(
                    "events.wait",
                    json!({"since_seq": since, "kinds": ["task.created"], "timeout_ms": 60000}),
                    &w.host,
                )
            });
            // The engine serves other calls while the waiter sleeps.
            std::thread::sleep(Duration::from_millis(5));
            let listed = w.ok("events.list", json!({"since_seq": since}), &w.host);
            assert_eq!(listed["events"], json!([]));
            task(&w, &task_id);
            waiter.join().expect("the waiter")
        });
        assert_eq!(page["timed_out"], false, "round {round}");
        assert_eq!(page["events"][0]["subject"], task_id.as_str());
    }
}

/// Not a test on its own: re-executed by the cross-process tests, open
/// the workspace, pause so the parent is asleep waiting, and make one
/// call (`RT_WAIT_CALL`: `{"tool", "args", "actor"}`).
#[test]
fn worker_makes_one_call() {
    let Some(root) = std::env::var_os(ROOT_VAR) else {
        return;
    };
    let call: Value =
        serde_json::from_str(&std::env::var(CALL_VAR).expect("RT_WAIT_CALL")).expect("json");
    let actor: Actor = serde_json::from_value(call["actor"].clone()).expect("actor");
    let engine = Engine::open(
        Path::new(&root),
        crate::support::test_options(Path::new(&root)),
    )
    .expect("open");
    std::thread::sleep(Duration::from_millis(200));
    engine
        .call(&str_of(&call["tool"]), call["args"].clone(), &actor)
        .expect("the call");
}

/// Run [`worker_makes_one_call`] in another process on `w`'s workspace
/// while `wait` runs here; `wait`'s result once the worker succeeded.
fn while_another_process_calls(
    w: &World,
    tool: &str,
    args: Value,
    actor: &Actor,
    wait: impl FnOnce() -> Value,
) -> Value {
    let child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "waiting::worker_makes_one_call",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROOT_VAR, w.dir.path())
        .env(
            CALL_VAR,
            json!({"tool": tool, "args": args, "actor": actor}).to_string(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn a worker");
    let got = wait();
    let out = child.wait_with_output().expect("the worker");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "worker: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    got
}

#[test]
fn a_commit_by_another_process_wakes_the_waiter() {
    let w = world();
    let other = Actor::orchestrator(id("other-host"));
    for round in 0..3 {
        let since = head(&w);
        let task_id = format!("elsewhere-{round}");
        let page = while_another_process_calls(
            &w,
            "task.create",
            json!({"task_id": task_id, "title": "From another process"}),
            &other,
            || {
                w.ok(
                    "events.wait",
                    json!({"since_seq": since, "actor": {"kind": "orchestrator", "id": "other-host"}, "timeout_ms": 60000}),
                    &w.host,
                )
            },
        );
        assert_eq!(page["timed_out"], false, "round {round}");
        assert_eq!(kinds(&page), ["task.created"]);
        assert_eq!(page["events"][0]["subject"], task_id.as_str());
    }
}

// ---------------------------------------------------------------------------
// Claims

fn acquire(resource: &str, wait_ms: Option<u32>) -> Value {
    match wait_ms {
        Some(ms) => {
            json!({"resource_id": resource, "type": "write", "ttl_s": 3600, "wait_ms": ms})
        }
        None => json!({"resource_id": resource, "type": "write", "ttl_s": 3600}),
    }
}

fn release(w: &World, who: &Actor, claim_id: &str) {
    w.ok("claim.release", json!({"claim_id": claim_id}), who);
}

#[test]
fn reacquiring_ones_own_live_claim_returns_it_renewed() {
    let w = world();
    let first = w.ok("claim.acquire", acquire("file:hello.txt", None), &w.author);
    let again = w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 7200}),
        &w.author,
    );
    assert_eq!(again["claim"]["id"], first["claim"]["id"]);
    assert_eq!(again["claim"]["token"], first["claim"]["token"]);
    assert_eq!(again["claim"]["status"], "active");
    let live = w.ok(
        "claim.list",
        json!({"agent_id": "alice", "status": "active"}),
        &w.host,
    );
    assert_eq!(live["claims"].as_array().expect("claims").len(), 1);
    // Another agent is still refused, naming the one claim.
    let err = w.refused(
        "claim.acquire",
        acquire("file:hello.txt", None),
        &w.reviewer,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], first["claim"]["id"]);
}

#[test]
fn a_waiting_claim_is_granted_when_the_holder_releases() {
    let w = world();
    let held = str_of(
        &w.ok(
            "claim.acquire",
            acquire("file:hello.txt", None),
            &w.reviewer,
        )["claim"]["id"],
    );
    let granted = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            w.ok(
                "claim.acquire",
                acquire("file:hello.txt", Some(60000)),
                &w.author,
            )
        });
        std::thread::sleep(Duration::from_millis(50));
        release(&w, &w.reviewer, &held);
        waiter.join().expect("the waiter")
    });
    assert_eq!(granted["claim"]["agent_id"], "alice");
    assert_eq!(granted["claim"]["status"], "active");
}

#[test]
fn a_waiting_claim_is_granted_when_the_holder_expires_by_the_engine_clock() {
    let clock = ManualClock::new(Timestamp(1_800_000_000_000));
    let w = World::with(
        scratch_dir(),
        EngineOptions {
            clock: Arc::new(clock.clone()),
            ..EngineOptions::default()
        },
    );
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 1}),
        &w.reviewer,
    );
    let granted = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            w.ok(
                "claim.acquire",
                acquire("file:hello.txt", Some(60000)),
                &w.author,
            )
        });
        std::thread::sleep(Duration::from_millis(50));
        // Nothing is committed: only the expiry time wakes the waiter.
        clock.advance_ms(2000);
        waiter.join().expect("the waiter")
    });
    assert_eq!(granted["claim"]["agent_id"], "alice");
}

#[test]
fn a_waiting_claim_that_times_out_is_the_usual_conflict_and_writes_nothing() {
    let w = world();
    let held = str_of(
        &w.ok(
            "claim.acquire",
            acquire("file:hello.txt", None),
            &w.reviewer,
        )["claim"]["id"],
    );
    let start = std::time::Instant::now();
    let err = w.refused(
        "claim.acquire",
        acquire("file:hello.txt", Some(150)),
        &w.author,
        ErrorCode::Conflict,
    );
    assert!(start.elapsed() >= Duration::from_millis(150));
    assert_eq!(err.details()["holder"]["id"], held.as_str());
    let err = w.refused(
        "claim.acquire",
        acquire("file:hello.txt", Some(60001)),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "wait_ms");
}

#[test]
fn waiters_are_granted_first_come_first_served() {
    let w = world();
    let carol = w.agent("carol", &["author"]);
    for round in 0..10 {
        let held =
            str_of(&w.ok("claim.acquire", acquire("file:hello.txt", None), &carol)["claim"]["id"]);
        // Alternate who comes first.
        let (first, second) = if round % 2 == 0 {
            (&w.author, &w.reviewer)
        } else {
            (&w.reviewer, &w.author)
        };
        std::thread::scope(|s| {
            let a = s.spawn(|| {
                w.ok(
                    "claim.acquire",
                    acquire("file:hello.txt", Some(60000)),
                    first,
                )
            });
            std::thread::sleep(Duration::from_millis(100));
            let b = s.spawn(|| {
                w.ok(
                    "claim.acquire",
                    acquire("file:hello.txt", Some(60000)),
                    second,
                )
            });
            std::thread::sleep(Duration::from_millis(100));
            release(&w, &carol, &held);
            let got_a = a.join().expect("first waiter");
            assert_eq!(
                got_a["claim"]["agent_id"],
                first.id.as_str(),
                "round {round}"
            );
            // The second waits behind the first's new claim.
            std::thread::sleep(Duration::from_millis(30));
            assert!(
                !b.is_finished(),
                "round {round}: the second was granted too"
            );
            release(&w, first, &str_of(&got_a["claim"]["id"]));
            let got_b = b.join().expect("second waiter");
            assert_eq!(
                got_b["claim"]["agent_id"],
                second.id.as_str(),
                "round {round}"
            );
            assert!(
                got_b["claim"]["token"].as_i64() > got_a["claim"]["token"].as_i64(),
                "round {round}"
            );
            release(&w, second, &str_of(&got_b["claim"]["id"]));
        });
    }
}

#[test]
fn the_typed_session_waits_too() {
    use roundtable::session::{AcquireClaim, EventKind, WaitEvents};
    let w = world();
    let host = w.engine.session(w.host.clone());
    let since = head(&w);
    let out = std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            host.events().wait(
                WaitEvents::since(since)
                    .kinds([EventKind::ClaimAcquired])
                    .timeout_ms(60000),
            )
        });
        let ada = w.engine.session(w.author.clone());
        let resource: roundtable::Resource = "file:hello.txt".parse().expect("resource");
        ada.claims()
            .acquire(AcquireClaim::write(resource, 60).wait_ms(10))
            .expect("claim");
        waiter.join().expect("the waiter")
    })
    .expect("events.wait");
    assert!(!out.timed_out);
    assert_eq!(out.events.len(), 1);
    let err = host
        .events()
        .wait(WaitEvents::since(0).timeout_ms(60001))
        .expect_err("too long");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
}

#[test]
fn a_release_by_another_process_grants_a_waiting_claim() {
    let w = world();
    let held = str_of(
        &w.ok(
            "claim.acquire",
            acquire("file:hello.txt", None),
            &w.reviewer,
        )["claim"]["id"],
    );
    let granted = while_another_process_calls(
        &w,
        "claim.release",
        json!({"claim_id": held}),
        &w.reviewer,
        || {
            w.ok(
                "claim.acquire",
                acquire("file:hello.txt", Some(60000)),
                &w.author,
            )
        },
    );
    assert_eq!(granted["claim"]["agent_id"], "alice");
    assert_eq!(granted["claim"]["status"], "active");
}
