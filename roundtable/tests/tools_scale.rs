//! The tool surface at scale: keyset paging through 10,000 proposals, and
//! two processes writing one workspace at once.

use crate::tools::{id, ids_of, scratch_dir, str_of, World, PATCH};
use roundtable::store::Durability;
use roundtable::{Actor, Engine, EngineOptions, ErrorCode};
use serde_json::json;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn create_args(title: &str) -> serde_json::Value {
    json!({"task_id": "t1", "title": title, "summary_md": "Greets.", "patch": PATCH})
}

#[test]
fn ten_thousand_proposals_page_by_fifty_each_exactly_once_in_creation_order() {
    const N: usize = 10_000;
    let w = World::with(
        scratch_dir(),
        EngineOptions {
            durability: Durability::Normal,
            ..EngineOptions::default()
        },
    );
    let started = Instant::now();
    let mut created = Vec::with_capacity(N);
    for i in 0..N {
        let out = w
            .engine
            .call("proposal.create", create_args(&format!("p{i}")), &w.author)
            .unwrap_or_else(|e| panic!("create {i}: {e} {}", e.details()));
        created.push(str_of(&out["proposal"]["id"]));
    }
    let creating = started.elapsed();
    let mut sorted = created.clone();
    sorted.sort();
    assert_eq!(sorted, created, "generated ids sort in creation order");

    let started = Instant::now();
    let mut listed = Vec::with_capacity(N);
    let mut cursor = serde_json::Value::Null;
    let mut pages = 0;
    loop {
        let mut args = json!({"limit": 50});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = w.ok("proposal.list", args, &w.reviewer);
        let ids = ids_of(&page["proposals"]);
        pages += 1;
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            assert!(ids.len() <= 50);
            listed.extend(ids);
            break;
        }
        assert_eq!(ids.len(), 50, "page {pages} is short but has a cursor");
        assert!(cursor.is_string(), "{cursor}");
        listed.extend(ids);
        assert!(pages <= N / 50, "more pages than proposals");
    }
    let paging = started.elapsed();
    assert_eq!(pages, N / 50, "the last full page carries no cursor");
    assert_eq!(listed.len(), N);
    assert_eq!(listed, created, "each exactly once, oldest first");
    let unique: HashSet<&String> = listed.iter().collect();
    assert_eq!(unique.len(), N);
    eprintln!("{N} proposal.create calls in {creating:?}; {pages} pages of 50 in {paging:?}");

    // A filter pages the same way.
    let page = w.ok(
        "proposal.list",
        json!({"author": "alice", "status": "pending", "limit": 200}),
        &w.host,
    );
    assert_eq!(ids_of(&page["proposals"]), created[..200]);
    let next = w.ok(
        "proposal.list",
        json!({"author": "alice", "status": "pending", "limit": 200, "cursor": page["next_cursor"]}),
        &w.host,
    );
    assert_eq!(ids_of(&next["proposals"]), created[200..400]);
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
}

#[test]
fn a_garbage_cursor_is_invalid_argument_cursor() {
    use base64::Engine as _;
    let w = World::new();
    w.proposal();
    w.proposal();
    let page = w.ok("proposal.list", json!({"limit": 1}), &w.host);
    let good = str_of(&page["next_cursor"]);
    let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
    for bad in [
        "garbage!".to_owned(),
        String::new(),
        format!("{good}="),
        format!("x{good}"),
        b64("s:-1"),
        b64("s:"),
        b64("t:1"),
        b64("s:1x"),
        b64("s:99999999999999999999"),
    ] {
        let err = w.refused(
            "proposal.list",
            json!({"cursor": bad}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "cursor", "{bad:?}");
    }
    // The good one still works.
    let next = w.ok(
        "proposal.list",
        json!({"limit": 1, "cursor": good}),
        &w.host,
    );
    assert_eq!(next["proposals"].as_array().expect("page").len(), 1);
}

const ROOT_VAR: &str = "RT_WORKER_ROOT";
const SYNC_VAR: &str = "RT_WORKER_SYNC";
const NAME_VAR: &str = "RT_WORKER_NAME";
const COUNT_VAR: &str = "RT_WORKER_COUNT";
const PER_WORKER: usize = 500;

fn wait_for(path: &Path, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(Instant::now() < deadline, "timed out waiting for {why}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Not a test on its own: when the parent test below re-executes this
/// binary with the worker variables set, create proposals; otherwise
/// return at once.
#[test]
fn worker_creates_proposals() {
    let Some(root) = std::env::var_os(ROOT_VAR) else {
        return;
    };
    let root = PathBuf::from(root);
    let sync = PathBuf::from(std::env::var_os(SYNC_VAR).expect("RT_WORKER_SYNC"));
    let name = std::env::var(NAME_VAR).expect("RT_WORKER_NAME");
    let count: usize = std::env::var(COUNT_VAR)
        .expect("RT_WORKER_COUNT")
        .parse()
        .expect("a count");
    let engine =
        Engine::open(&root, crate::support::test_options(&root)).expect("open the workspace");
    let me = Actor::agent(id(&name));
    std::fs::write(sync.join(format!("{name}.ready")), "").expect("signal ready");
    wait_for(&sync.join("go"), "the start signal");
    for i in 0..count {
        engine
            .call("proposal.create", create_args(&format!("{name} {i}")), &me)
            .unwrap_or_else(|e| panic!("{name} create {i}: {} {e} {}", e.code(), e.details()));
    }
}

#[test]
fn two_processes_creating_500_proposals_each_make_1000_and_the_chain_verifies() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let workers = ["w1", "w2"];
    for name in workers {
        w.agent(name, &["author"]);
    }
    let events_before = w.rows("events");
    let sync = tempfile::tempdir().expect("sync dir");
    let exe = std::env::current_exe().expect("the test binary");
    let started = Instant::now();
    let mut children: Vec<_> = workers
        .iter()
        .map(|name| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "tools_scale::worker_creates_proposals",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ROOT_VAR, w.dir.path())
                .env(SYNC_VAR, sync.path())
                .env(NAME_VAR, name)
                .env(COUNT_VAR, PER_WORKER.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    // Start barrier: both have opened the store before either writes.
    for (name, child) in workers.iter().zip(children.iter_mut()) {
        let ready = sync.path().join(format!("{name}.ready"));
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ready.exists() {
            if let Some(status) = child.try_wait().expect("poll worker") {
                panic!("worker {name} exited before it was ready: {status}");
            }
            assert!(Instant::now() < deadline, "worker {name} never got ready");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    std::fs::write(sync.path().join("go"), "").expect("start");
    for (name, child) in workers.iter().zip(children) {
        let out = child.wait_with_output().expect("wait for a worker");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "worker {name} failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stdout.contains("test result: ok. 1 passed"),
            "worker {name} did not run the worker test:\n{stdout}\n{stderr}"
        );
    }
    let elapsed = started.elapsed();

    // Every proposal, once, by page.
    let mut all = Vec::new();
    let mut cursor = serde_json::Value::Null;
    loop {
        let mut args = json!({"limit": 200});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = w.ok("proposal.list", args, &w.host);
        all.extend(page["proposals"].as_array().expect("page").iter().cloned());
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(all.len(), 2 * PER_WORKER);
    let ids: HashSet<String> = all.iter().map(|p| str_of(&p["id"])).collect();
    assert_eq!(ids.len(), 2 * PER_WORKER, "ids are unique across processes");
    for name in workers {
        let titles: HashSet<String> = all
            .iter()
            .filter(|p| p["author"] == name)
            .map(|p| str_of(&p["title"]))
            .collect();
        let expected: HashSet<String> = (0..PER_WORKER).map(|i| format!("{name} {i}")).collect();
        assert_eq!(titles, expected, "{name}'s proposals");
    }
    // How interleaved the two writers were (for the record, not asserted:
    // scheduling decides it).
    let switches = all
        .windows(2)
        .filter(|p| p[0]["author"] != p[1]["author"])
        .count();
    eprintln!(
        "2 processes × {PER_WORKER} proposal.create (durability full) in {elapsed:?}; \
         {switches} author switches in creation order"
    );
    assert_eq!(w.rows("events"), events_before + 2 * PER_WORKER as i64);
    assert_eq!(w.rows("revisions"), 2 * PER_WORKER as i64);
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["checked"], events_before + 2 * PER_WORKER as i64);
    assert_eq!(report["first_invalid_seq"], serde_json::Value::Null);
}
