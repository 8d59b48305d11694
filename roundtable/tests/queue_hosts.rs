//! Issue 34, "many hosts": hosts running one landing queue share its work
//! (each leases the lanes it works on) instead of duplicating it.
//!
//! Two engines on one workspace are two hosts on one store: its SQLite
//! store by default, or one PostgreSQL schema when `RT_TEST_STORE` names a
//! server — these tests run on both.

use super::queue::{
    activate, approved, caller, entries_of, initial_files, landing_order, proposal_ids,
    write_files, Change,
};
use super::tools::{id, str_of, World};
use roundtable::clock::Clock as _;
use roundtable::{Actor, Engine, EngineOptions};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// A policy whose check runs `before` (a shell command) and then the
/// scenario's `check.py`.
fn policy(before: &str, batch: u32, depth: u32, lanes: bool) -> String {
    format!(
        "version = 1\n[checks.unit]\ncommand = [\"sh\", \"-c\", {:?}]\ntimeout_s = 60\n[queue]\nbatch_size = {batch}\ndepth = {depth}\nlanes = {lanes}\n",
        format!("{before}\npython3 check.py")
    )
}

/// `n` changes, each a new `feature_NN.py` calling `lib0.f`: no two share
/// a path, so each is a lane of its own.
fn disjoint(n: usize) -> Vec<Change> {
    (0..n)
        .map(|i| Change {
            path: format!("feature_{i:02}.py"),
            before: None,
            after: caller("lib0"),
        })
        .collect()
}

/// A world with the scenario's files, `document` active, and `changes`
/// approved (by four authors) and queued in order: their proposal ids.
fn queued(document: &str, changes: &[Change]) -> (World, Vec<String>) {
    let w = World::new();
    write_files(w.dir.path(), &initial_files());
    activate(&w, document);
    let authors: Vec<Actor> = (0..4)
        .map(|k| w.agent(&format!("a{k}"), &["author"]))
        .collect();
    let pids = changes
        .iter()
        .enumerate()
        .map(|(i, change)| {
            let pid = approved(&w, &authors[i % 4], change);
            w.ok("queue.enqueue", json!({"proposal_id": pid}), &w.host);
            pid
        })
        .collect();
    (w, pids)
}

/// A second host's engine on `w`'s workspace (its store), with `options`
/// over the suite's.
fn second_host(root: &Path, options: EngineOptions) -> Engine {
    let suite = super::support::test_options(root);
    Engine::open(
        root,
        EngineOptions {
            store: suite.store,
            ..options
        },
    )
    .expect("a second host's engine")
}

fn call(engine: &Engine, tool: &str, args: Value, actor: &Actor) -> Value {
    engine
        .call(tool, args.clone(), actor)
        .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
}

/// An event's actor as `kind:id`.
fn actor_of(e: &Value) -> String {
    format!(
        "{}:{}",
        str_of(&e["actor"]["kind"]),
        str_of(&e["actor"]["id"])
    )
}

/// How many `queue.checked` events each state (entry, proposals ahead)
/// has, and who checked it.
fn checked_states(w: &World) -> BTreeMap<(String, String), Vec<String>> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for e in w.events() {
        if e["kind"] == "queue.checked" {
            out.entry((str_of(&e["subject"]), e["data"]["ahead"].to_string()))
                .or_default()
                .push(actor_of(&e));
        }
    }
    out
}

#[test]
fn issue34_hosts_two_hosts_with_lanes_each_land_a_share_and_check_no_state_twice() {
    // Twelve lanes, a check that takes real time, and a depth of 2: a
    // host takes two lanes a round, so both hosts have lanes to take.
    let changes = disjoint(12);
    let (w, pids) = queued(&policy("sleep 0.3", 2, 2, true), &changes);
    let other = second_host(w.dir.path(), EngineOptions::default());
    let host2 = Actor::orchestrator(id("host2"));
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| w.ok("queue.run", json!({}), &w.host));
        let b = s.spawn(|| call(&other, "queue.run", json!({}), &host2));
        (a.join().expect("host 1"), b.join().expect("host 2"))
    });
    let (landed_a, landed_b) = (
        proposal_ids(&entries_of(&a, "landed")),
        proposal_ids(&entries_of(&b, "landed")),
    );
    // Each host landed a share; together, every proposal once.
    assert!(!landed_a.is_empty() && !landed_b.is_empty(), "{a:#}\n{b:#}");
    let mut all: Vec<String> = landed_a.iter().chain(&landed_b).cloned().collect();
    all.sort();
    let mut expected = pids.clone();
    expected.sort();
    assert_eq!(all, expected, "each landed once, by one host");
    let mut order = landing_order(&w);
    order.sort();
    assert_eq!(order, expected, "one applied transaction per proposal");
    // No state was checked twice: each entry's state once, by the host
    // that landed it.
    let states = checked_states(&w);
    assert_eq!(states.len(), 12, "{states:#?}");
    for ((entry, ahead), by) in &states {
        assert_eq!(
            by.len(),
            1,
            "{entry} on {ahead} checked by {by:?}; the events: {:#}",
            json!(w
                .events()
                .into_iter()
                .filter(|e| e["subject"] == entry.as_str()
                    || e["kind"] == "transaction.applied"
                    || e["kind"].as_str().is_some_and(|k| k.starts_with("queue")))
                .map(|e| json!([e["kind"], e["subject"], e["actor"]["id"], e["data"]]))
                .collect::<Vec<_>>())
        );
    }
    assert_eq!(
        a["states_checked"].as_u64().map(|n| n as usize),
        Some(landed_a.len())
    );
    assert_eq!(
        b["states_checked"].as_u64().map(|n| n as usize),
        Some(landed_b.len())
    );
    // They met: one found a lane the other held, and names its runner.
    assert!(
        a["lanes_held"].as_u64().unwrap_or(0) + b["lanes_held"].as_u64().unwrap_or(0) > 0,
        "{a:#}\n{b:#}"
    );
    for (run, other_run) in [(&a, &b), (&b, &a)] {
        for by in run["held_by"].as_array().expect("held_by") {
            assert_eq!(by, &other_run["runner"], "{run:#}");
        }
        assert_eq!(run["returned"], json!([]));
    }
    assert_ne!(a["runner"], b["runner"]);
    assert!(
        str_of(&a["runner"]).starts_with("orchestrator:host@"),
        "{a:#}"
    );
    assert!(
        str_of(&b["runner"]).starts_with("orchestrator:host2@"),
        "{b:#}"
    );
    // The queue is empty (a host whose remaining lanes were all the
    // other's returned before they landed) and nothing stays leased.
    assert_eq!(w.ok("queue.list", json!({}), &w.host)["entries"], json!([]));
    let idle = w.ok("queue.run", json!({}), &w.host);
    assert_eq!(idle["lanes_held"], 0);
    assert_eq!(idle["landed"], json!([]));
}

/// The sync directory's `started` appears once a check runs; checks wait
/// while its `hold` exists.
fn held_check(sync: &Path) -> String {
    let (started, hold) = (sync.join("started"), sync.join("hold"));
    format!(
        "touch '{}'\nwhile [ -e '{}' ]; do sleep 0.05; done",
        started.display(),
        hold.display()
    )
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn issue34_hosts_with_one_lane_a_second_host_finds_it_held_and_returns_at_once() {
    let sync = tempfile::tempdir().expect("sync");
    std::fs::write(sync.path().join("hold"), "").expect("hold");
    let changes = disjoint(3);
    let (w, pids) = queued(&policy(&held_check(sync.path()), 8, 2, false), &changes);
    let other = second_host(w.dir.path(), EngineOptions::default());
    let host2 = Actor::orchestrator(id("host2"));
    std::thread::scope(|s| {
        let first = s.spawn(|| w.ok("queue.run", json!({}), &w.host));
        // The first host holds the lane: its checks run.
        wait_for(&sync.path().join("started"));
        let events_before = w.events().len();
        let t0 = Instant::now();
        let run = call(&other, "queue.run", json!({}), &host2);
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        assert_eq!(run["rounds"], 1, "{run:#}");
        assert_eq!(run["lanes_held"], 1);
        assert_eq!(
            run["held_by"],
            json!([format!("orchestrator:host@{}", clone_id(w.dir.path()))])
        );
        assert_eq!(run["states_checked"], 0);
        assert_eq!(run["landed"], json!([]));
        assert_eq!(run["still_queued"], 3);
        assert_eq!(
            w.events().len(),
            events_before,
            "the held run wrote no event"
        );
        std::fs::remove_file(sync.path().join("hold")).expect("release the checks");
        let first = first.join().expect("host 1");
        assert_eq!(proposal_ids(&entries_of(&first, "landed")), pids);
        assert_eq!(first["lanes_held"], 0);
    });
    assert_eq!(landing_order(&w), pids);
    let states = checked_states(&w);
    assert!(
        states
            .values()
            .all(|by| by == &["orchestrator:host".to_owned()]),
        "{states:#?}"
    );
}

fn clone_id(root: &Path) -> String {
    std::fs::read_to_string(root.join(".roundtable/clone"))
        .expect("the clone id")
        .trim()
        .to_owned()
}

#[test]
fn issue34_hosts_a_killed_hosts_lane_is_taken_over_after_the_ttl_and_lands() {
    let sync = tempfile::tempdir().expect("sync");
    std::fs::write(sync.path().join("hold"), "").expect("hold");
    let changes = disjoint(3);
    let (w, pids) = queued(&policy(&held_check(sync.path()), 8, 2, false), &changes);
    let root = w.dir.path().to_owned();
    // Another process runs the queue, and is killed while its check runs:
    // it holds the lane's lease and never releases it.
    let (mut child, _sync, _) = super::transactions::start_call(&root, "queue.run", &json!({}));
    wait_for(&sync.path().join("started"));
    child.kill().expect("kill the host");
    let _ = child.wait();
    std::fs::remove_file(sync.path().join("hold")).expect("checks run freely now");
    let dead = format!("orchestrator:host@{}", clone_id(&root));

    // A second host, its clock at the real time: the lane is held.
    let clock = roundtable::clock::ManualClock::new(roundtable::clock::SystemClock.now());
    let other = second_host(
        &root,
        EngineOptions {
            clock: std::sync::Arc::new(clock.clone()),
            ..EngineOptions::default()
        },
    );
    let host2 = Actor::orchestrator(id("host2"));
    let events_before = w.events().len();
    let run = call(&other, "queue.run", json!({}), &host2);
    assert_eq!(run["lanes_held"], 1, "{run:#}");
    assert_eq!(run["held_by"], json!([dead]));
    assert_eq!(run["landed"], json!([]));
    assert_eq!(run["still_queued"], 3);
    assert_eq!(w.events().len(), events_before);
    assert!(landing_order(&w).is_empty());
    // Still held just before the TTL ends; taken over after it, and landed.
    clock.advance_ms(25_000);
    let run = call(&other, "queue.run", json!({}), &host2);
    assert_eq!(run["lanes_held"], 1, "{run:#}");
    clock.advance_ms(6_000);
    let run = call(&other, "queue.run", json!({}), &host2);
    assert_eq!(run["lanes_held"], 0, "{run:#}");
    assert_eq!(proposal_ids(&entries_of(&run, "landed")), pids);
    assert_eq!(run["still_queued"], 0);
    assert_eq!(landing_order(&w), pids, "each landed once");
    let landed: BTreeSet<String> = w
        .events()
        .iter()
        .filter(|e| e["kind"] == "queue.landed")
        .map(actor_of)
        .collect();
    assert_eq!(landed, BTreeSet::from(["orchestrator:host2".to_owned()]));
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
}

#[test]
fn issue34_hosts_a_host_restarted_after_a_kill_takes_its_own_lane_back_at_once() {
    let sync = tempfile::tempdir().expect("sync");
    std::fs::write(sync.path().join("hold"), "").expect("hold");
    let changes = disjoint(2);
    let (w, pids) = queued(&policy(&held_check(sync.path()), 8, 2, false), &changes);
    let root = w.dir.path().to_owned();
    let (mut child, _sync, _) = super::transactions::start_call(&root, "queue.run", &json!({}));
    wait_for(&sync.path().join("started"));
    child.kill().expect("kill the host");
    let _ = child.wait();
    std::fs::remove_file(sync.path().join("hold")).expect("checks run freely now");
    // The same orchestrator on the same clone: its own lease, no wait.
    let run = w.ok("queue.run", json!({}), &w.host);
    assert_eq!(run["lanes_held"], 0, "{run:#}");
    assert_eq!(proposal_ids(&entries_of(&run, "landed")), pids);
    assert_eq!(landing_order(&w), pids);
}

/// `notes.txt`'s ten lines, line `n` (1-based) replaced by `with` when
/// given.
fn notes(edit: Option<(usize, &str)>) -> String {
    (1..=10)
        .map(|n| match edit {
            Some((at, with)) if at == n => format!("{with}\n"),
            _ => format!("line {n}\n"),
        })
        .collect()
}

/// A patch of `notes.txt` replacing line `n` with `with`.
fn notes_patch(n: usize, with: &str) -> String {
    format!("--- a/notes.txt\n+++ b/notes.txt\n@@ -{n} +{n} @@\n-line {n}\n+{with}\n")
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue34_hosts_a_host_on_its_own_clone_takes_over_a_lane_another_host_landed_part_of() {
    // Hosts on their own clones of one remote share a store only on
    // PostgreSQL.
    let Some(server) = super::support::server() else {
        return;
    };
    use super::landing::{fsck, git};
    let url = super::support::store_url(&server, &super::pg_hosts::fresh_schema("qclones"));
    let top = tempfile::tempdir().expect("tempdir");
    let base = notes(None);
    let remote = super::git_remote::bare_remote_with(top.path(), &[("notes.txt", &base)]);
    let open = |name: &str| {
        git(top.path(), &["clone", "-q", "remote.git", name]);
        let root = top.path().join(name);
        let engine = Engine::open(&root, super::pg_hosts::options(&url)).expect("open");
        (root, engine)
    };
    let (root1, h1) = open("h1");
    let (root2, h2) = open("h2");
    let (host1, host2) = (
        Actor::orchestrator(id("host1")),
        Actor::orchestrator(id("host2")),
    );
    let (author, reviewer) = (Actor::agent(id("alice")), Actor::agent(id("bob")));
    for (agent, role) in [("alice", "author"), ("bob", "reviewer")] {
        call(
            &h1,
            "agent.register",
            json!({"agent_id": agent, "roles": [role]}),
            &host1,
        );
    }
    call(
        &h1,
        "task.create",
        json!({"task_id": "t1", "title": "t"}),
        &host1,
    );
    call(
        &h1,
        "workspace.configure",
        json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
        &host1,
    );
    // One lane (both change notes.txt), one proposal a round.
    let document = "version = 1\n[checks.unit]\ncommand = [\"grep\", \"-q\", \"line 5\", \"notes.txt\"]\ntimeout_s = 60\n[queue]\nbatch_size = 1\ndepth = 1\nlanes = true\n";
    let set = call(&h1, "policy.set", json!({"document": document}), &host1);
    call(
        &h1,
        "policy.activate",
        json!({"version": set["policy"]["version"]}),
        &host1,
    );
    call(
        &h1,
        "claim.acquire",
        json!({"resource_id": "file:notes.txt", "type": "write", "ttl_s": 3600}),
        &author,
    );
    let pids: Vec<String> = [(2, "two (p1)"), (8, "eight (p2)")]
        .into_iter()
        .map(|(n, with)| {
            let pid = str_of(
                &call(
                    &h1,
                    "proposal.create",
                    json!({"task_id": "t1", "title": format!("Line {n}"), "summary_md": "s", "patch": notes_patch(n, with)}),
                    &author,
                )["proposal"]["id"],
            );
            call(&h1, "proposal.request_review", json!({"proposal_id": pid}), &author);
            call(
                &h1,
                "vote.cast",
                json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
                &reviewer,
            );
            call(&h1, "queue.enqueue", json!({"proposal_id": pid}), &host1);
            pid
        })
        .collect();
    // Host 1 lands the lane's first proposal; host 2, whose clone has
    // not seen it, takes the lane next: it catches up with the remote,
    // stacks the second on it, checks it once and lands it.
    let first = call(&h1, "queue.run", json!({"max_rounds": 1}), &host1);
    assert_eq!(
        proposal_ids(&entries_of(&first, "landed")),
        pids[..1],
        "{first:#}"
    );
    assert_eq!(
        std::fs::read_to_string(root2.join("notes.txt")).expect("read"),
        base,
        "host 2's clone is behind"
    );
    // Landing the first released the author's claim: it claims again.
    call(
        &h1,
        "claim.acquire",
        json!({"resource_id": "file:notes.txt", "type": "write", "ttl_s": 3600}),
        &author,
    );
    let second = call(&h2, "queue.run", json!({"max_rounds": 3}), &host2);
    assert_eq!(
        proposal_ids(&entries_of(&second, "landed")),
        pids[1..],
        "{second:#}"
    );
    assert_eq!(second["states_checked"], 1, "{second:#}");
    assert_eq!(second["still_queued"], 0);
    let both =
        "line 1\ntwo (p1)\nline 3\nline 4\nline 5\nline 6\nline 7\neight (p2)\nline 9\nline 10\n";
    assert_eq!(git(&remote, &["show", "main:notes.txt"]), both);
    assert_eq!(
        git(&remote, &["rev-list", "--count", "main"]).trim(),
        "3",
        "the base and one commit per proposal"
    );
    assert_eq!(
        std::fs::read_to_string(root2.join("notes.txt")).expect("read"),
        both
    );
    assert_eq!(git(&root2, &["status", "--porcelain"]), "");
    for d in [&remote, &root1, &root2] {
        fsck(d);
    }
}
