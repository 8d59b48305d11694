//! Scenario tests of the governance layer: claims with fencing tokens and
//! expiry, symbol coverage, policy (versions, carry-over, blocking votes,
//! roles, secrets, risk, checks) and the read-only `patch.validate` report.

use super::tools::{fingerprint, id, ids_of, scratch_dir, str_of, World, PATCH, PATCH2};
use roundtable::clock::{ManualClock, Timestamp};
use roundtable::{Actor, Digest, Engine, EngineOptions, ErrorCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Where every test's clock starts (2027-01-15, in milliseconds).
const T0: i64 = 1_800_000_000_000;

/// A Rust file with two functions: `alpha` spans lines 1-3, `beta` 5-7.
const LIB_RS: &str = "pub fn alpha() -> u32 {\n    1\n}\n\npub fn beta() -> u32 {\n    2\n}\n";

/// A Python class: `Api` spans lines 1-6, `Api.fetch` 2-3, `Api.store` 5-6.
const API_PY: &str = "class Api:\n    def fetch(self):\n        return 1\n\n    def store(self, v):\n        self.v = v\n";

/// Changes line 2 only: inside `alpha`.
const INSIDE_ALPHA: &str = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn alpha() -> u32 {\n-    1\n+    10\n }\n";

/// Replaces lines 2-4: starts inside `alpha`, runs past its end.
const PAST_ALPHA: &str = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,5 +1,5 @@\n pub fn alpha() -> u32 {\n-    1\n-}\n-\n+    10\n+} // alpha\n+// between\n pub fn beta() -> u32 {\n";

/// Inserts a line right after `alpha`'s closing brace (after old line 3).
const AFTER_ALPHA: &str =
    "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -3,2 +3,3 @@\n }\n+// after alpha\n \n";

/// A fresh [`World`] whose engine reads a manual clock, and the clock.
fn world() -> (World, ManualClock) {
    let clock = ManualClock::new(Timestamp(T0));
    let options = EngineOptions {
        clock: Arc::new(clock.clone()),
        ..EngineOptions::default()
    };
    (World::with(scratch_dir(), options), clock)
}

/// Write `text` to `path` in the workspace, creating parent directories.
fn write(w: &World, path: &str, text: &str) {
    let full = w.dir.path().join(path);
    std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
    std::fs::write(full, text).expect("write");
}

/// Acquire a claim; the claim.
fn acquire(w: &World, who: &Actor, resource: &str, kind: &str, ttl_s: u32) -> Value {
    w.ok(
        "claim.acquire",
        json!({"resource_id": resource, "type": kind, "ttl_s": ttl_s}),
        who,
    )["claim"]
        .clone()
}

/// Acquire a write claim for an hour; its id.
fn hold(w: &World, who: &Actor, resource: &str) -> String {
    str_of(&acquire(w, who, resource, "write", 3600)["id"])
}

/// A claim's fencing token.
fn token(claim: &Value) -> i64 {
    claim["token"].as_i64().expect("a token")
}

/// A proposal by the author with `patch` at `risk`; its id.
fn propose(w: &World, patch: &str, risk: &str) -> String {
    str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch, "risk": risk}),
            &w.author,
        )["proposal"]["id"],
    )
}

/// `proposal.request_review` by the author; its result.
fn request_review(w: &World, pid: &str) -> Value {
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    )
}

/// Cast a vote on `revision`; the vote's id.
fn vote(w: &World, who: &Actor, pid: &str, revision: u32, value: &str) -> String {
    str_of(
        &w.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": revision, "vote": value, "reason_md": "Because."}),
            who,
        )["vote"]["id"],
    )
}

/// The `patch.validate` report on the latest revision.
fn validate(w: &World, pid: &str) -> Value {
    w.ok("patch.validate", json!({"proposal_id": pid}), &w.host)
}

/// The stage `name` of a report.
fn stage<'r>(report: &'r Value, name: &str) -> &'r Value {
    report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no stage {name} in {report:#}"))
}

/// The status of stage `name`.
fn status<'r>(report: &'r Value, name: &str) -> &'r str {
    stage(report, name)["status"].as_str().expect("a status")
}

/// The policy requirement `rid` of a report.
fn requirement<'r>(report: &'r Value, rid: &str) -> &'r Value {
    report["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == rid)
        .unwrap_or_else(|| panic!("no requirement {rid} in {report:#}"))
}

/// The reasons of stage `name` that carry `field`.
fn reasons_with<'r>(report: &'r Value, name: &str, field: &str) -> Vec<&'r Value> {
    stage(report, name)["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter(|r| r.get(field).is_some())
        .collect()
}

/// Store `document` as a draft and activate it (as the orchestrator); its
/// version.
fn activate_policy(w: &World, document: &str) -> u64 {
    let set = w.ok("policy.set", json!({"document": document}), &w.host);
    let version = set["policy"]["version"].as_u64().expect("a version");
    w.ok("policy.activate", json!({"version": version}), &w.host);
    version
}

/// Every workspace file but the store's, with its bytes.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            if rel == ".roundtable" {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

// ---------------------------------------------------------------------------
// 1. Claims

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn a_file_and_its_directory_conflict_in_either_order() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    write(&w, "pkg/a.txt", "a\n");
    // File first, then its directory (and the root) by another agent.
    let file = hold(&w, &w.author, "file:src/lib.rs");
    for resource in ["directory:src", "directory:.", "symbol:src/lib.rs#alpha"] {
        let err = w.refused(
            "claim.acquire",
            json!({"resource_id": resource, "type": "write", "ttl_s": 60}),
            &w.reviewer,
            ErrorCode::Conflict,
        );
        assert_eq!(err.details()["holder"]["id"], file.as_str(), "{resource}");
        assert_eq!(err.details()["holder"]["agent_id"], "alice");
        assert_eq!(err.details()["holder"]["resource_id"], "file:src/lib.rs");
    }
    // Directory first, then a file under it.
    let dir = hold(&w, &w.reviewer, "directory:pkg");
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "file:pkg/a.txt", "type": "write", "ttl_s": 60}),
        &w.author,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], dir.as_str());
    assert_eq!(err.details()["holder"]["agent_id"], "bob");
    // Disjoint resources do not conflict, and a name prefix is not a parent.
    write(&w, "pkgs/b.txt", "b\n");
    hold(&w, &w.author, "file:pkgs/b.txt");
    hold(&w, &w.reviewer, "file:hello.txt");
    // One agent's own claims never conflict with each other, and the same
    // claim twice is the claim itself, renewed (same id, same token).
    hold(&w, &w.author, "directory:src");
    let before = w.ok(
        "claim.list",
        json!({"agent_id": "alice", "resource_id": "file:src/lib.rs"}),
        &w.host,
    )["claims"][0]
        .clone();
    let again = w.ok(
        "claim.acquire",
        json!({"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 600}),
        &w.author,
    );
    assert_eq!(again["claim"]["id"], file.as_str());
    assert_eq!(again["claim"]["token"], before["token"]);
    assert_eq!(again["claim"]["status"], "active");
    assert_ne!(again["claim"]["expires_at"], before["expires_at"]);
    let event = w.last_event();
    assert_eq!(event["kind"], "claim.renewed");
    assert_eq!(event["data"]["reacquired"], true);
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn the_root_directory_overlaps_everything() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    let carol = w.agent("carol", &["author"]);
    let root = hold(&w, &carol, "directory:.");
    for resource in [
        "file:hello.txt",
        "file:not/yet/there.txt",
        "directory:src",
        "directory:.",
        "symbol:src/lib.rs#beta",
    ] {
        let err = w.refused(
            "claim.acquire",
            json!({"resource_id": resource, "type": "write", "ttl_s": 60}),
            &w.author,
            ErrorCode::Conflict,
        );
        assert_eq!(err.details()["holder"]["id"], root.as_str(), "{resource}");
    }
    // And the root conflicts with anything claimed before it.
    let (w, _) = world();
    let carol = w.agent("carol", &["author"]);
    let file = hold(&w, &w.author, "file:hello.txt");
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "directory:.", "type": "write", "ttl_s": 60}),
        &carol,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], file.as_str());
}

#[cfg_attr(
    not(all(feature = "rust", feature = "python")),
    ignore = "needs the rust, python symbol grammar"
)]
#[test]
fn two_symbols_of_one_file_conflict_only_when_their_spans_overlap() {
    let (w, _) = world();
    write(&w, "src/api.py", API_PY);
    let carol = w.agent("carol", &["author"]);
    let fetch = acquire(&w, &w.author, "symbol:src/api.py#Api.fetch", "write", 60);
    assert_eq!(fetch["span"], json!({"start": 2, "end": 3}));
    assert_eq!(
        fetch["base_digest"],
        Digest::of(b"def fetch(self):\n        return 1").to_string(),
        "a symbol's digest is of its span's bytes"
    );
    // Disjoint spans of one file: both succeed.
    let store = acquire(&w, &w.reviewer, "symbol:src/api.py#Api.store", "write", 60);
    assert_eq!(store["span"], json!({"start": 5, "end": 6}));
    assert_eq!(store["status"], "active");
    // The class spans both methods: refused, naming the first holder.
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/api.py#Api", "type": "write", "ttl_s": 60}),
        &carol,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], fetch["id"]);
    assert_eq!(
        err.details()["holder"]["resource_id"],
        "symbol:src/api.py#Api.fetch"
    );
    // The same symbol, and the file, overlap too.
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/api.py#Api.store", "type": "write", "ttl_s": 60}),
        &carol,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], store["id"]);
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "file:src/api.py", "type": "write", "ttl_s": 60}),
        &carol,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], fetch["id"]);
    // In the other order: the class first blocks a method.
    let (w, _) = world();
    write(&w, "src/api.py", API_PY);
    let class = acquire(&w, &w.author, "symbol:src/api.py#Api", "write", 60);
    assert_eq!(class["span"], json!({"start": 1, "end": 6}));
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/api.py#Api.fetch", "type": "write", "ttl_s": 60}),
        &w.reviewer,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], class["id"]);
    // Rust: two functions of one file are disjoint.
    write(&w, "src/lib.rs", LIB_RS);
    let alpha = acquire(&w, &w.author, "symbol:src/lib.rs#alpha", "write", 60);
    let beta = acquire(&w, &w.reviewer, "symbol:src/lib.rs#beta", "write", 60);
    assert_eq!(alpha["span"], json!({"start": 1, "end": 3}));
    assert_eq!(beta["span"], json!({"start": 5, "end": 7}));
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn read_and_review_claims_never_conflict() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    let carol = w.agent("carol", &["author"]);
    let write_claim = hold(&w, &w.reviewer, "directory:.");
    // Reads and reviews beside another agent's write claim.
    for (who, resource, kind) in [
        (&w.author, "file:hello.txt", "read"),
        (&w.author, "directory:.", "review"),
        (&carol, "symbol:src/lib.rs#alpha", "read"),
        (&carol, "directory:src", "review"),
    ] {
        let c = acquire(&w, who, resource, kind, 60);
        assert_eq!(c["type"], kind);
        assert_eq!(c["status"], "active");
    }
    // A write claim beside other agents' read and review claims.
    w.ok(
        "claim.release",
        json!({"claim_id": write_claim}),
        &w.reviewer,
    );
    let c = acquire(&w, &w.reviewer, "directory:.", "write", 60);
    assert_eq!(c["status"], "active");
    assert_eq!(w.rows("claims"), 6);
}

#[test]
fn fencing_tokens_only_grow_and_renew_keeps_the_token() {
    let (w, clock) = world();
    let a = acquire(&w, &w.author, "file:hello.txt", "write", 60);
    assert_eq!(a["acquired_at"], Timestamp(T0).to_string());
    assert_eq!(a["expires_at"], Timestamp(T0 + 60_000).to_string());
    assert_eq!(a["base_digest"], Digest::of(b"hello\n").to_string());
    assert_eq!(a["released_at"], Value::Null);
    assert_eq!(a["task_id"], Value::Null);
    let b = acquire(&w, &w.reviewer, "file:other.txt", "read", 60);
    assert_eq!(b["base_digest"], "absent", "the file does not exist");
    assert!(token(&b) > token(&a));
    let e = w.last_event();
    assert_eq!(e["kind"], "claim.acquired");
    assert_eq!(e["subject"], b["id"]);
    assert_eq!(e["data"]["token"], b["token"]);

    // Renew: a later expiry from now, the same claim and token.
    clock.advance_ms(30_000);
    let renewed = w.ok(
        "claim.renew",
        json!({"claim_id": a["id"], "ttl_s": 120}),
        &w.author,
    )["claim"]
        .clone();
    assert_eq!(renewed["id"], a["id"]);
    assert_eq!(renewed["token"], a["token"]);
    assert_eq!(renewed["acquired_at"], a["acquired_at"]);
    assert_eq!(
        renewed["expires_at"],
        Timestamp(T0 + 30_000 + 120_000).to_string()
    );
    assert_eq!(w.last_event()["kind"], "claim.renewed");
    // Past the original expiry, the renewed claim still holds.
    clock.advance_ms(60_000);
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60}),
        &w.reviewer,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], a["id"]);

    // Release, then re-acquire: a larger token.
    let released = w.ok("claim.release", json!({"claim_id": a["id"]}), &w.author)["claim"].clone();
    assert_eq!(released["status"], "released");
    assert_eq!(released["released_at"], Timestamp(T0 + 90_000).to_string());
    let c = acquire(&w, &w.reviewer, "file:hello.txt", "write", 10);
    assert!(token(&c) > token(&b));
    // Expire it, and the re-acquisition gets a larger token still.
    clock.advance_ms(10_000);
    let d = acquire(&w, &w.author, "file:hello.txt", "write", 60);
    assert!(token(&d) > token(&c));
    let tokens: Vec<i64> = [&a, &b, &c, &d].iter().map(|c| token(c)).collect();
    let mut sorted = tokens.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(tokens, sorted, "strictly increasing");
}

#[test]
fn only_the_holder_renews_and_releases_and_only_active_claims() {
    let (w, clock) = world();
    let a = str_of(&acquire(&w, &w.author, "file:hello.txt", "write", 60)["id"]);
    let carol = w.agent("carol", &["author"]);
    for (tool, args) in [
        ("claim.renew", json!({"claim_id": a, "ttl_s": 60})),
        ("claim.release", json!({"claim_id": a})),
    ] {
        for actor in [&w.reviewer, &carol] {
            let err = w.refused(tool, args.clone(), actor, ErrorCode::Forbidden);
            assert_eq!(err.details()["holder"], "alice", "{tool}");
            assert_eq!(err.details()["reason"], "not_holder", "{tool}");
        }
    }
    // A person may neither renew nor release; an orchestrator may release
    // but not renew.
    let hana = Actor::human(id("hana"));
    w.refused(
        "claim.renew",
        json!({"claim_id": a, "ttl_s": 60}),
        &hana,
        ErrorCode::Forbidden,
    );
    w.refused(
        "claim.release",
        json!({"claim_id": a}),
        &hana,
        ErrorCode::Forbidden,
    );
    w.refused(
        "claim.renew",
        json!({"claim_id": a, "ttl_s": 60}),
        &w.host,
        ErrorCode::Forbidden,
    );
    let err = w.refused(
        "claim.renew",
        json!({"claim_id": "claim-nope", "ttl_s": 60}),
        &w.author,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "claim", "id": "claim-nope"}));

    // An expired claim cannot be renewed (nor released).
    clock.advance_ms(60_000);
    let err = w.refused(
        "claim.renew",
        json!({"claim_id": a, "ttl_s": 60}),
        &w.author,
        ErrorCode::IllegalTransition,
    );
    assert_eq!(err.details()["status"], "expired");
    assert_eq!(err.details()["claim_id"], a.as_str());
    assert_eq!(err.details()["allowed"], json!(["active"]));
    w.refused(
        "claim.release",
        json!({"claim_id": a}),
        &w.author,
        ErrorCode::IllegalTransition,
    );
    // A released claim cannot be released again (nor renewed).
    let b = str_of(&acquire(&w, &w.author, "file:hello.txt", "write", 60)["id"]);
    let out = w.ok("claim.release", json!({"claim_id": b}), &w.host);
    assert_eq!(out["claim"]["status"], "released");
    for (tool, args) in [
        ("claim.release", json!({"claim_id": b})),
        ("claim.renew", json!({"claim_id": b, "ttl_s": 60})),
    ] {
        let err = w.refused(tool, args, &w.author, ErrorCode::IllegalTransition);
        assert_eq!(err.details()["status"], "released", "{tool}");
    }
}

#[test]
fn claim_list_filters_by_agent_resource_and_status_and_pages() {
    let (w, clock) = world();
    write(&w, "src/lib.rs", LIB_RS);
    let expired = str_of(&acquire(&w, &w.author, "file:hello.txt", "write", 10)["id"]);
    let released = str_of(&acquire(&w, &w.author, "file:src/lib.rs", "read", 600)["id"]);
    w.ok("claim.release", json!({"claim_id": released}), &w.author);
    let bob_active = str_of(&acquire(&w, &w.reviewer, "file:hello.txt", "review", 600)["id"]);
    let alice_active = str_of(&acquire(&w, &w.author, "directory:src", "write", 600)["id"]);
    clock.advance_ms(10_000);
    let alice_again = str_of(&acquire(&w, &w.author, "file:hello.txt", "write", 600)["id"]);
    let list = |args: Value| {
        let page = w.ok("claim.list", args, &w.reviewer);
        (ids_of(&page["claims"]), page["next_cursor"].clone())
    };
    let (all, c) = list(json!({}));
    assert_eq!(
        all,
        [
            expired.as_str(),
            released.as_str(),
            bob_active.as_str(),
            alice_active.as_str(),
            alice_again.as_str()
        ]
    );
    assert!(c.is_null());
    let (mine, _) = list(json!({"agent_id": "alice"}));
    assert_eq!(
        mine,
        [
            expired.as_str(),
            released.as_str(),
            alice_active.as_str(),
            alice_again.as_str()
        ]
    );
    let (hello, _) = list(json!({"resource_id": "file:hello.txt"}));
    assert_eq!(
        hello,
        [expired.as_str(), bob_active.as_str(), alice_again.as_str()]
    );
    let (active, _) = list(json!({"status": "active"}));
    assert_eq!(
        active,
        [
            bob_active.as_str(),
            alice_active.as_str(),
            alice_again.as_str()
        ]
    );
    let (exp, _) = list(json!({"status": "expired"}));
    assert_eq!(exp, [expired.as_str()]);
    let (rel, _) = list(json!({"status": "released"}));
    assert_eq!(rel, [released.as_str()]);
    let (both, _) =
        list(json!({"agent_id": "alice", "resource_id": "file:hello.txt", "status": "active"}));
    assert_eq!(both, [alice_again.as_str()]);
    // The status is computed when read: the expired claim says so.
    let page = w.ok("claim.list", json!({"status": "expired"}), &w.host);
    assert_eq!(page["claims"][0]["status"], "expired");
    // Pages of two.
    let (p1, c1) = list(json!({"limit": 2}));
    assert_eq!(p1, [expired.as_str(), released.as_str()]);
    let (p2, c2) = list(json!({"limit": 2, "cursor": c1}));
    assert_eq!(p2, [bob_active.as_str(), alice_active.as_str()]);
    let (p3, c3) = list(json!({"limit": 2, "cursor": c2}));
    assert_eq!(p3, [alice_again.as_str()]);
    assert!(c3.is_null());
    let (p, c) = list(json!({"agent_id": "alice", "limit": 3}));
    assert_eq!(
        p,
        [expired.as_str(), released.as_str(), alice_active.as_str()]
    );
    let (p, c) = list(json!({"agent_id": "alice", "limit": 3, "cursor": c}));
    assert_eq!(p, [alice_again.as_str()]);
    assert!(c.is_null());
    let err = w.refused(
        "claim.list",
        json!({"cursor": "nonsense"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "cursor");
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn unknown_or_ambiguous_symbols_and_unknown_tasks_are_refused() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    // Two `impl` blocks both define `A.new`.
    write(
        &w,
        "src/ambiguous.rs",
        "struct A<T>(T);\n\nimpl A<u8> {\n    fn new() {}\n}\n\nimpl A<u16> {\n    fn new() {}\n}\n",
    );
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/lib.rs#gamma", "type": "write", "ttl_s": 60}),
        &w.author,
        ErrorCode::UnknownSymbol,
    );
    assert_eq!(err.details()["path"], "src/lib.rs");
    assert_eq!(err.details()["name"], "gamma");
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/missing.rs#alpha", "type": "read", "ttl_s": 60}),
        &w.author,
        ErrorCode::UnknownSymbol,
    );
    assert_eq!(err.details()["path"], "src/missing.rs");
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:src/ambiguous.rs#A.new", "type": "write", "ttl_s": 60}),
        &w.author,
        ErrorCode::AmbiguousSymbol,
    );
    assert_eq!(err.details()["name"], "A.new");
    let lines: Vec<(Value, Value)> = err.details()["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .map(|c| (c["start_line"].clone(), c["end_line"].clone()))
        .collect();
    assert_eq!(lines, [(json!(4), json!(4)), (json!(8), json!(8))]);
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60, "task_id": "t-nope"}),
        &w.author,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "task", "id": "t-nope"}));
    // Non-agents, and a zero lease, are refused too.
    w.refused(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60}),
        &w.host,
        ErrorCode::Forbidden,
    );
    w.refused(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 0}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(w.rows("claims"), 0);
    // With the task, it is recorded.
    let c = w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60, "task_id": "t1"}),
        &w.author,
    );
    assert_eq!(c["claim"]["task_id"], "t1");
}

// ---------------------------------------------------------------------------
// 2-3. Expiry and staleness

#[test]
fn an_expired_claim_no_longer_blocks_and_no_longer_covers() {
    let (w, clock) = world();
    let claim = str_of(&acquire(&w, &w.author, "file:hello.txt", "write", 60)["id"]);
    let pid = w.in_review();
    vote(&w, &w.reviewer, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], true, "{report:#}");
    assert_eq!(status(&report, "claims"), "passed");
    assert_eq!(status(&report, "coverage"), "passed");
    assert_eq!(
        stage(&report, "claims")["reasons"][0]["claim_id"],
        claim.as_str()
    );
    // One millisecond before expiry, it still blocks.
    clock.advance_ms(59_999);
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60}),
        &w.reviewer,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["holder"]["id"], claim.as_str());
    assert_eq!(validate(&w, &pid)["valid"], true);
    // At expiry, it neither covers nor blocks.
    clock.advance_ms(1);
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], false);
    assert_eq!(status(&report, "claims"), "failed");
    assert_eq!(
        stage(&report, "claims")["reasons"][0]["agent_id"],
        "alice",
        "{report:#}"
    );
    assert_eq!(status(&report, "coverage"), "failed");
    let uncovered = &stage(&report, "coverage")["reasons"][0];
    assert_eq!(uncovered["path"], "hello.txt");
    assert_eq!(uncovered["operation"], "modify");
    assert_eq!(uncovered["lines"], json!([1]));
    // Everything else still passes.
    for name in ["preconditions", "dry_run", "policy"] {
        assert_eq!(status(&report, name), "passed", "{name}");
    }
    let bobs = str_of(&acquire(&w, &w.reviewer, "file:hello.txt", "write", 60)["id"]);
    // Now another agent's live claim is reported too.
    let report = validate(&w, &pid);
    let holders = reasons_with(&report, "claims", "holder");
    assert_eq!(holders.len(), 1);
    assert_eq!(holders[0]["holder"], "bob");
    assert_eq!(holders[0]["claim_id"], bobs.as_str());
    let list = w.ok("claim.list", json!({"agent_id": "alice"}), &w.host);
    assert_eq!(list["claims"][0]["status"], "expired");
    // Read and review claims never cover a change.
    acquire(&w, &w.author, "file:hello.txt", "read", 600);
    acquire(&w, &w.author, "directory:.", "review", 600);
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "claims"), "failed");
    assert_eq!(status(&report, "coverage"), "failed");
}

#[test]
fn a_claim_whose_file_changed_after_acquisition_is_stale() {
    let (w, _) = world();
    let claim = str_of(&acquire(&w, &w.author, "file:hello.txt", "write", 600)["id"]);
    // Someone edits the file outside roundtable; the proposal is made
    // against the new content, so only the claim is stale.
    std::fs::write(w.dir.path().join("hello.txt"), "hello there\n").expect("write");
    let patch = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello there\n+hello, world\n";
    let pid = propose(&w, patch, "normal");
    request_review(&w, &pid);
    vote(&w, &w.reviewer, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], false);
    assert_eq!(status(&report, "claims"), "failed");
    let stale = reasons_with(&report, "claims", "code");
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["code"], "stale_claim");
    assert_eq!(stale[0]["claim_id"], claim.as_str());
    assert_eq!(stale[0]["resource_id"], "file:hello.txt");
    assert_eq!(stale[0]["expected"], Digest::of(b"hello\n").to_string());
    assert_eq!(stale[0]["actual"], Digest::of(b"hello there\n").to_string());
    for name in ["preconditions", "coverage", "dry_run", "policy"] {
        assert_eq!(status(&report, name), "passed", "{name}");
    }
    // A fresh claim on the new content makes it valid again.
    w.ok("claim.release", json!({"claim_id": claim}), &w.author);
    hold(&w, &w.author, "file:hello.txt");
    assert_eq!(validate(&w, &pid)["valid"], true);
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn a_symbol_claim_goes_stale_only_when_its_own_bytes_change() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    let claim = acquire(&w, &w.author, "symbol:src/lib.rs#alpha", "write", 600);
    // Only `beta` changes: `alpha`'s claim stays fresh.
    write(&w, "src/lib.rs", &LIB_RS.replace("    2\n", "    20\n"));
    let pid = propose(&w, INSIDE_ALPHA, "normal");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "claims"), "passed", "{report:#}");
    assert_eq!(status(&report, "coverage"), "passed", "{report:#}");
    // `alpha` itself changes: stale, with both digests.
    let changed = LIB_RS.replace("    1\n", "    1 + 0\n");
    write(&w, "src/lib.rs", &changed);
    let patch = INSIDE_ALPHA.replace("-    1\n", "-    1 + 0\n");
    let pid = propose(&w, &patch, "normal");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "claims"), "failed");
    let stale = reasons_with(&report, "claims", "code");
    assert_eq!(stale[0]["code"], "stale_claim");
    assert_eq!(stale[0]["claim_id"], claim["id"]);
    assert_eq!(stale[0]["expected"], claim["base_digest"]);
    assert_eq!(
        stale[0]["actual"],
        Digest::of(b"pub fn alpha() -> u32 {\n    1 + 0\n}").to_string()
    );
}

// ---------------------------------------------------------------------------
// 4. Coverage

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn a_symbol_claim_covers_changes_inside_its_span_only() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    hold(&w, &w.author, "symbol:src/lib.rs#alpha");
    let inside = propose(&w, INSIDE_ALPHA, "normal");
    let report = validate(&w, &inside);
    assert_eq!(status(&report, "claims"), "passed", "{report:#}");
    assert_eq!(status(&report, "coverage"), "passed", "{report:#}");

    // Starts inside alpha and leaves it: old line 4 is outside.
    let past = propose(&w, PAST_ALPHA, "normal");
    let report = validate(&w, &past);
    assert_eq!(report["valid"], false);
    assert_eq!(status(&report, "claims"), "passed");
    assert_eq!(status(&report, "coverage"), "failed");
    let reasons = stage(&report, "coverage")["reasons"]
        .as_array()
        .expect("reasons");
    assert_eq!(reasons.len(), 1, "{report:#}");
    assert_eq!(reasons[0]["path"], "src/lib.rs");
    assert_eq!(reasons[0]["operation"], "modify");
    assert_eq!(reasons[0]["lines"], json!([4]));
    assert_eq!(reasons[0].get("insertions"), None);
    assert_eq!(
        reasons[0]["reason"],
        "changed lines lie outside every claimed symbol span"
    );

    // An insertion right after alpha's last line is outside it.
    let after = propose(&w, AFTER_ALPHA, "normal");
    let report = validate(&w, &after);
    assert_eq!(status(&report, "coverage"), "failed");
    let reason = &stage(&report, "coverage")["reasons"][0];
    assert_eq!(reason["path"], "src/lib.rs");
    assert_eq!(reason["insertions"], json!([3]));
    assert_eq!(reason.get("lines"), None);

    // Claiming beta too covers the overlap; a file claim covers everything.
    hold(&w, &w.author, "symbol:src/lib.rs#beta");
    assert_eq!(
        status(&validate(&w, &past), "coverage"),
        "failed",
        "line 4 is between them"
    );
    hold(&w, &w.author, "file:src/lib.rs");
    for pid in [&inside, &past, &after] {
        let report = validate(&w, pid);
        assert_eq!(status(&report, "coverage"), "passed", "{report:#}");
    }
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn structural_changes_need_file_or_directory_claims_and_all_are_reported() {
    let (w, _) = world();
    write(&w, "src/old.txt", "old\n");
    write(&w, "src/gone.rs", "fn gone() {}\n");
    write(&w, "src/lib.rs", LIB_RS);
    let patch = concat!(
        "diff --git a/src/created.txt b/src/created.txt\n",
        "new file mode 100644\n",
        "--- /dev/null\n",
        "+++ b/src/created.txt\n",
        "@@ -0,0 +1 @@\n",
        "+created\n",
        "diff --git a/src/gone.rs b/src/gone.rs\n",
        "deleted file mode 100644\n",
        "--- a/src/gone.rs\n",
        "+++ /dev/null\n",
        "@@ -1 +0,0 @@\n",
        "-fn gone() {}\n",
        "diff --git a/src/old.txt b/src/new.txt\n",
        "similarity index 100%\n",
        "rename from src/old.txt\n",
        "rename to src/new.txt\n",
        "diff --git a/hello.txt b/hello.txt\n",
        "old mode 100644\n",
        "new mode 100755\n",
    );
    let pid = propose(&w, patch, "normal");
    let uncovered = |report: &Value| -> Vec<(String, String)> {
        stage(report, "coverage")["reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .map(|r| (str_of(&r["path"]), str_of(&r["operation"])))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let pair = |p: &str, o: &str| (p.to_owned(), o.to_owned());
    // No claims at all: every change is reported, not the first.
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "coverage"), "failed");
    assert_eq!(
        uncovered(&report),
        [
            pair("hello.txt", "modify"),
            pair("src/created.txt", "create"),
            pair("src/gone.rs", "delete"),
            pair("src/new.txt", "rename"),
            pair("src/old.txt", "renamed_away"),
        ]
    );
    let mode = stage(&report, "coverage")["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .find(|r| r["path"] == "hello.txt")
        .expect("the mode change")
        .clone();
    assert_eq!(
        mode["reason"],
        "a mode change needs a file or directory claim on the path"
    );
    // A symbol claim on the deleted file does not cover its deletion; the
    // destination of the rename alone leaves its source uncovered.
    hold(&w, &w.author, "symbol:src/gone.rs#gone");
    hold(&w, &w.author, "file:src/new.txt");
    hold(&w, &w.author, "file:src/created.txt");
    let report = validate(&w, &pid);
    assert_eq!(
        uncovered(&report),
        [
            pair("hello.txt", "modify"),
            pair("src/gone.rs", "delete"),
            pair("src/old.txt", "renamed_away"),
        ]
    );
    // File claims on the rest cover everything.
    hold(&w, &w.author, "file:src/old.txt");
    hold(&w, &w.author, "file:src/gone.rs");
    hold(&w, &w.author, "file:hello.txt");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "coverage"), "passed", "{report:#}");
    assert_eq!(status(&report, "claims"), "passed", "{report:#}");

    // A directory claim covers both sides of a rename.
    let (w, _) = world();
    write(&w, "src/old.txt", "old\n");
    let rename = "diff --git a/src/old.txt b/src/new.txt\nsimilarity index 100%\nrename from src/old.txt\nrename to src/new.txt\n";
    let pid = propose(&w, rename, "normal");
    hold(&w, &w.author, "directory:src");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "coverage"), "passed", "{report:#}");
}

#[test]
fn directory_claims_cover_everything_under_them_and_stay_fresh_until_it_changes() {
    let (w, _) = world();
    // The root claim: the store's own files under .roundtable/ never make
    // it stale.
    let root = hold(&w, &w.author, "directory:.");
    let create = "diff --git a/new/dir/file.txt b/new/dir/file.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new/dir/file.txt\n@@ -0,0 +1 @@\n+new\n";
    let patch = format!("{PATCH}{create}");
    let pid = propose(&w, &patch, "normal");
    request_review(&w, &pid);
    vote(&w, &w.reviewer, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], true, "{report:#}");
    assert_eq!(
        stage(&report, "claims")["reasons"][0]["claim_id"],
        root.as_str()
    );
    // A claim on a directory that does not exist yet covers a file created
    // in it.
    w.ok("claim.release", json!({"claim_id": root}), &w.author);
    hold(&w, &w.author, "directory:new");
    hold(&w, &w.author, "file:hello.txt");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], true, "{report:#}");
    // A file added under the claimed directory makes the claim stale.
    write(&w, "new/other.txt", "x\n");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "claims"), "failed");
    let stale = reasons_with(&report, "claims", "code");
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["code"], "stale_claim");
    assert_eq!(stale[0]["resource_id"], "directory:new");
    assert_ne!(stale[0]["expected"], stale[0]["actual"]);
    assert_eq!(status(&report, "coverage"), "passed");
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn a_mode_change_needs_a_file_claim_even_inside_a_claimed_symbol() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    hold(&w, &w.author, "symbol:src/lib.rs#alpha");
    let patch = format!(
        "diff --git a/src/lib.rs b/src/lib.rs\nold mode 100644\nnew mode 100755\n{INSIDE_ALPHA}"
    );
    let pid = propose(&w, &patch, "normal");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "coverage"), "failed");
    let reasons = stage(&report, "coverage")["reasons"]
        .as_array()
        .expect("reasons");
    assert_eq!(reasons.len(), 1);
    assert_eq!(reasons[0]["path"], "src/lib.rs");
    assert_eq!(
        reasons[0]["reason"],
        "a mode change needs a file or directory claim on the path"
    );
    hold(&w, &w.author, "file:src/lib.rs");
    assert_eq!(status(&validate(&w, &pid), "coverage"), "passed");
}

// ---------------------------------------------------------------------------
// 5. Policy

#[test]
fn by_default_an_approval_survives_no_revision_the_author_sends() {
    let (w, _) = world();
    hold(&w, &w.author, "file:hello.txt");
    let pid = w.in_review();
    let v = vote(&w, &w.reviewer, &pid, 1, "approve");
    assert_eq!(
        requirement(&validate(&w, &pid), "approvals")["evidence"],
        json!([v])
    );
    // The same change again, sent by the author: under the default
    // carry_over = "trivial_rebase" only the engine's rebases carry.
    w.revise(&pid, 1, PATCH);
    let report = validate(&w, &pid);
    assert_eq!(report["revision"], 2);
    assert_eq!(report["valid"], false, "{report:#}");
    assert_eq!(requirement(&report, "approvals")["evidence"], json!([]));
    // Another change: the vote stays with the revisions it judged.
    w.revise(&pid, 2, super::tools::PATCH2);
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], false);
    assert_eq!(requirement(&report, "approvals")["evidence"], json!([]));
}

#[test]
fn with_never_carry_over_a_new_revision_stops_an_earlier_approval_counting() {
    let (w, _) = world();
    let version = activate_policy(&w, "version = 1\n[approvals]\ncarry_over = \"never\"\n");
    assert_eq!(version, 1);
    hold(&w, &w.author, "file:hello.txt");
    let pid = w.in_review();
    let v = vote(&w, &w.reviewer, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], true, "{report:#}");
    assert_eq!(requirement(&report, "approvals")["evidence"], json!([v]));
    // The same patch again: still a new revision, and under carry_over =
    // "never" the vote stays with revision 1.
    w.revise(&pid, 1, PATCH);
    let report = validate(&w, &pid);
    assert_eq!(report["revision"], 2);
    assert_eq!(report["valid"], false);
    assert_eq!(status(&report, "policy"), "failed");
    let approvals = requirement(&report, "approvals");
    assert_eq!(approvals["status"], "unsatisfied");
    assert_eq!(approvals["evidence"], json!([]));
    assert_eq!(approvals["candidates"], json!(["bob"]));
    assert!(
        approvals["reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .any(|r| r
                .as_str()
                .is_some_and(|r| r.contains("carry_over = \"never\""))),
        "{approvals:#}"
    );
    let v2 = vote(&w, &w.reviewer, &pid, 2, "approve_with_notes");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], true);
    assert_eq!(requirement(&report, "approvals")["evidence"], json!([v2]));
}

#[test]
fn with_identical_changeset_carry_over_an_approval_survives_an_identical_revision_only() {
    let (w, _) = world();
    let version = activate_policy(
        &w,
        "version = 1\n\n[approvals]\ncarry_over = \"identical_changeset\"\n",
    );
    hold(&w, &w.author, "file:hello.txt");
    let pid = w.in_review();
    let v = vote(&w, &w.reviewer, &pid, 1, "approve");
    assert_eq!(validate(&w, &pid)["policy_version"], version);
    // The identical patch again: the approval carries over.
    w.revise(&pid, 1, PATCH);
    let report = validate(&w, &pid);
    assert_eq!(report["revision"], 2);
    assert_eq!(report["valid"], true, "{report:#}");
    let approvals = requirement(&report, "approvals");
    assert_eq!(approvals["status"], "satisfied");
    assert_eq!(approvals["evidence"], json!([v]));
    // A different patch: it does not.
    w.revise(&pid, 2, PATCH2);
    let report = validate(&w, &pid);
    assert_eq!(report["revision"], 3);
    assert_eq!(report["valid"], false);
    let approvals = requirement(&report, "approvals");
    assert_eq!(approvals["status"], "unsatisfied");
    assert_eq!(approvals["evidence"], json!([]));
}

#[test]
fn a_veto_blocks() {
    let (w, _) = world();
    hold(&w, &w.author, "file:hello.txt");
    let carol = w.agent("carol", &["reviewer"]);
    let pid = w.in_review();
    let approve = vote(&w, &w.reviewer, &pid, 1, "approve");
    let veto = vote(&w, &carol, &pid, 1, "veto");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], false);
    assert_eq!(report["policy"]["approvable"], false);
    assert_eq!(status(&report, "policy"), "failed");
    assert_eq!(requirement(&report, "approvals")["status"], "satisfied");
    assert_eq!(
        requirement(&report, "approvals")["evidence"],
        json!([approve])
    );
    let blocking = requirement(&report, "no_blocking_votes");
    assert_eq!(blocking["status"], "unsatisfied");
    assert_eq!(blocking["evidence"], json!([veto]));
    let reason = stage(&report, "policy")["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .find(|r| r["requirement"] == "no_blocking_votes")
        .expect("the blocking reason")
        .clone();
    assert_eq!(reason["status"], "unsatisfied");
    assert_eq!(reason["evidence"], json!([veto]));
    // A reject blocks too; a later approval by the same agent lifts it.
    let reject = vote(&w, &carol, &pid, 1, "reject");
    let report = validate(&w, &pid);
    assert_eq!(
        requirement(&report, "no_blocking_votes")["evidence"],
        json!([reject])
    );
    vote(&w, &carol, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(
        requirement(&report, "no_blocking_votes")["status"],
        "satisfied"
    );
    assert_eq!(report["valid"], true, "{report:#}");
}

#[test]
fn a_path_needing_the_security_role_waits_for_a_security_agent() {
    let (w, _) = world();
    activate_policy(
        &w,
        "version = 1\n\n[[roles]]\npaths = [\"src/auth/**\"]\nrole = \"security\"\n",
    );
    // The author holds the role too, but never counts for their own change.
    w.agent("alice", &["author", "security"]);
    let sam = w.agent("sam", &["security"]);
    write(
        &w,
        "src/auth/login.rs",
        "pub fn login() -> bool {\n    false\n}\n",
    );
    hold(&w, &w.author, "directory:src/auth");
    let patch = "--- a/src/auth/login.rs\n+++ b/src/auth/login.rs\n@@ -1,3 +1,3 @@\n pub fn login() -> bool {\n-    false\n+    true\n }\n";
    let pid = propose(&w, patch, "normal");
    let out = request_review(&w, &pid);
    assert_eq!(out["proposal"]["status"], "in_review");
    let rid = "role:security:src/auth/**";
    assert_eq!(
        out["review_plan"],
        json!([
            {"requirement": "approvals", "roles": [], "minimum": 1, "paths": [],
             "candidates": ["bob", "sam"]},
            {"requirement": rid, "roles": ["security"], "minimum": 1,
             "paths": ["src/auth/login.rs"], "candidates": ["sam"]},
        ])
    );
    // bob's approval satisfies the general approvals but not the role.
    let bobs = vote(&w, &w.reviewer, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], false);
    assert_eq!(report["policy"]["approvable"], false);
    assert_eq!(status(&report, "policy"), "failed");
    assert_eq!(requirement(&report, "approvals")["evidence"], json!([bobs]));
    let role = requirement(&report, rid);
    assert_eq!(role["status"], "unsatisfied");
    assert_eq!(role["evidence"], json!([]));
    assert_eq!(role["candidates"], json!(["sam"]));
    assert_eq!(role["paths"], json!(["src/auth/login.rs"]));
    let reason = stage(&report, "policy")["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .find(|r| r["requirement"] == rid)
        .expect("the role reason")
        .clone();
    assert_eq!(reason["candidates"], json!(["sam"]));
    assert!(reason["missing"]
        .as_str()
        .expect("missing")
        .contains("\"security\""));
    // sam approves: approvable.
    let sams = vote(&w, &sam, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(requirement(&report, rid)["status"], "satisfied");
    assert_eq!(requirement(&report, rid)["evidence"], json!([sams]));
    assert_eq!(report["policy"]["approvable"], true);
    assert_eq!(report["valid"], true, "{report:#}");
}

#[test]
fn a_planted_private_key_forces_a_security_review() {
    let (w, _) = world();
    let sam = w.agent("sam", &["security"]);
    hold(&w, &w.author, "file:hello.txt");
    let planted = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1,3 @@\n hello\n+-----BEGIN RSA PRIVATE KEY-----\n+MIIEowIBAAKCAQEA\n";
    for reviewer in [Actor::human(id("hana")), sam.clone()] {
        let pid = propose(&w, planted, "normal");
        let out = request_review(&w, &pid);
        let needs: Vec<&Value> = out["review_plan"]
            .as_array()
            .expect("plan")
            .iter()
            .filter(|n| n["requirement"] == "security_review")
            .collect();
        assert_eq!(
            needs,
            [
                &json!({"requirement": "security_review", "roles": ["security"], "minimum": 1,
                     "paths": ["hello.txt"], "candidates": ["sam"]})
            ]
        );
        vote(&w, &w.reviewer, &pid, 1, "approve");
        let report = validate(&w, &pid);
        assert_eq!(report["valid"], false);
        assert_eq!(status(&report, "policy"), "passed");
        assert_eq!(status(&report, "security_review"), "failed");
        let finding = json!([{"path": "hello.txt", "line": 2, "kind": "private_key"}]);
        let security = requirement(&report, "security_review");
        assert_eq!(security["status"], "unsatisfied");
        assert_eq!(security["findings"], finding);
        assert_eq!(security["candidates"], json!(["sam"]));
        let secrets = requirement(&report, "secrets");
        assert_eq!(secrets["status"], "unsatisfied");
        assert_eq!(secrets["findings"], finding);
        assert_eq!(secrets["paths"], json!(["hello.txt"]));
        // The report never repeats the secret.
        assert!(!report.to_string().contains("MIIEowIBAAKCAQEA"));
        // An agent without the role cannot pass it.
        w.refused(
            "security.review",
            json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
            &w.reviewer,
            ErrorCode::Forbidden,
        );
        let review = w.ok(
            "security.review",
            json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
            &reviewer,
        );
        let rid = str_of(&review["security_review"]["id"]);
        let report = validate(&w, &pid);
        assert_eq!(status(&report, "security_review"), "passed", "{report:#}");
        assert_eq!(
            requirement(&report, "security_review")["evidence"],
            json!([rid])
        );
        assert_eq!(requirement(&report, "secrets")["status"], "satisfied");
        assert_eq!(report["valid"], true, "{report:#}");
    }
    // A key already in the file, outside the added lines, is not a finding.
    write(&w, "keys.txt", "-----BEGIN RSA PRIVATE KEY-----\nold\n");
    hold(&w, &w.author, "file:keys.txt");
    let pid = propose(
        &w,
        "--- a/keys.txt\n+++ b/keys.txt\n@@ -1,2 +1,2 @@\n -----BEGIN RSA PRIVATE KEY-----\n-old\n+new\n",
        "normal",
    );
    let report = validate(&w, &pid);
    assert_eq!(
        requirement(&report, "secrets")["status"],
        "satisfied",
        "{report:#}"
    );
    assert_eq!(requirement(&report, "secrets")["findings"], json!([]));
    assert_eq!(
        requirement(&report, "security_review")["status"],
        "not_applicable"
    );
    // Without a secret, no security review is asked of a normal-risk change
    // (the stage passes: the scan ran and found nothing).
    let pid = propose(&w, PATCH, "normal");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "security_review"), "passed");
    assert_eq!(requirement(&report, "secrets")["status"], "satisfied");
    assert_eq!(
        requirement(&report, "security_review")["status"],
        "not_applicable"
    );
}

#[test]
fn high_risk_needs_a_security_review_and_critical_a_human_approval_too() {
    let (w, _) = world();
    hold(&w, &w.author, "file:hello.txt");
    let hana = Actor::human(id("hana"));
    let approved = |risk: &str| {
        let pid = propose(&w, PATCH, risk);
        request_review(&w, &pid);
        vote(&w, &w.reviewer, &pid, 1, "approve");
        pid
    };
    let normal = approved("normal");
    let report = validate(&w, &normal);
    assert_eq!(report["valid"], true, "{report:#}");
    assert_eq!(
        requirement(&report, "security_review")["status"],
        "not_applicable"
    );
    assert_eq!(status(&report, "human_approval"), "skipped");

    let high = approved("high");
    let report = validate(&w, &high);
    assert_eq!(report["valid"], false);
    assert_eq!(status(&report, "security_review"), "failed");
    assert_eq!(status(&report, "human_approval"), "skipped");
    w.ok(
        "security.review",
        json!({"proposal_id": high, "revision": 1, "verdict": "pass"}),
        &hana,
    );
    let report = validate(&w, &high);
    assert_eq!(status(&report, "security_review"), "passed");
    assert_eq!(report["valid"], true, "{report:#}");

    let critical = approved("critical");
    w.ok(
        "security.review",
        json!({"proposal_id": critical, "revision": 1, "verdict": "pass"}),
        &hana,
    );
    let report = validate(&w, &critical);
    assert_eq!(status(&report, "security_review"), "passed");
    assert_eq!(status(&report, "human_approval"), "failed");
    assert_eq!(
        requirement(&report, "human_approval")["status"],
        "unsatisfied"
    );
    assert_eq!(report["valid"], false);
    let approval = w.ok(
        "human.approve",
        json!({"proposal_id": critical, "revision": 1}),
        &hana,
    );
    let report = validate(&w, &critical);
    assert_eq!(status(&report, "human_approval"), "passed");
    assert_eq!(
        requirement(&report, "human_approval")["evidence"],
        json!([approval["approval"]["id"]])
    );
    assert_eq!(report["valid"], true, "{report:#}");
    // A failing security review blocks even a passed one.
    let sam = w.agent("sam", &["security"]);
    w.ok(
        "security.review",
        json!({"proposal_id": critical, "revision": 1, "verdict": "fail", "note_md": "No."}),
        &sam,
    );
    let report = validate(&w, &critical);
    assert_eq!(status(&report, "security_review"), "failed");
    assert_eq!(report["valid"], false);
}

#[test]
fn required_checks_must_pass_on_the_revision() {
    let (w, _) = world();
    activate_policy(&w, "version = 1\n\n[checks]\nrequired = [\"unit\"]\n");
    hold(&w, &w.author, "file:hello.txt");
    let pid = w.in_review();
    vote(&w, &w.reviewer, &pid, 1, "approve");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "checks"), "failed");
    assert_eq!(requirement(&report, "check:unit")["status"], "unsatisfied");
    assert_eq!(report["valid"], false);
    let record = |name: &str, st: &str| {
        str_of(
            &w.ok(
                "test.record",
                json!({"proposal_id": pid, "revision": 1, "name": name, "status": st}),
                &w.host,
            )["test_result"]["id"],
        )
    };
    // Another check's pass does not count; a failure of this one does not.
    record("lint", "passed");
    let failed = record("unit", "failed");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "checks"), "failed");
    assert_eq!(
        requirement(&report, "check:unit")["evidence"],
        json!([failed])
    );
    let passed = record("unit", "passed");
    let report = validate(&w, &pid);
    assert_eq!(status(&report, "checks"), "passed");
    assert_eq!(
        requirement(&report, "check:unit")["evidence"],
        json!([passed])
    );
    assert_eq!(report["valid"], true, "{report:#}");
    // The latest result counts.
    record("unit", "errored");
    assert_eq!(status(&validate(&w, &pid), "checks"), "failed");
}

// ---------------------------------------------------------------------------
// 6. Policy versions

#[test]
fn policy_versions_go_from_draft_to_active_to_retired_one_active_at_a_time() {
    let (w, _) = world();
    let builtin = w.ok("policy.get", json!({}), &w.author)["policy"].clone();
    assert_eq!(builtin["status"], "builtin");
    assert_eq!(builtin["version"], Value::Null);
    assert_eq!(builtin["document"], roundtable::policy::DEFAULT_POLICY_TOML);
    assert_eq!(builtin["created_by"], Value::Null);

    let doc1 = "version = 1\n\n[approvals]\nminimum = 2\n";
    let set = w.ok(
        "policy.set",
        json!({"document": doc1, "note_md": "Two reviewers."}),
        &w.host,
    )["policy"]
        .clone();
    assert_eq!(set["version"], 1);
    assert_eq!(set["status"], "draft");
    assert_eq!(set["document"], doc1);
    assert_eq!(set["digest"], Digest::of(doc1.as_bytes()).to_string());
    assert_eq!(set["note_md"], "Two reviewers.");
    assert_eq!(
        set["created_by"],
        json!({"id": "host", "kind": "orchestrator"})
    );
    assert_eq!(w.last_event()["kind"], "policy.drafted");
    // A draft does not apply.
    assert_eq!(
        w.ok("policy.get", json!({}), &w.author)["policy"]["status"],
        "builtin"
    );

    let out = w.ok("policy.activate", json!({"version": 1}), &w.host);
    assert_eq!(out["policy"]["status"], "active");
    assert_eq!(out["policy"]["activated_at"], Timestamp(T0).to_string());
    assert_eq!(out["retired_version"], Value::Null);
    assert_eq!(
        w.ok("policy.get", json!({}), &w.author)["policy"]["version"],
        1
    );

    // A person may write and activate policy too.
    let hana = Actor::human(id("hana"));
    let doc2 = "version = 1\n";
    let v2 = w.ok("policy.set", json!({"document": doc2}), &hana)["policy"].clone();
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["created_by"], json!({"id": "hana", "kind": "human"}));
    let before = w.events().len();
    let out = w.ok("policy.activate", json!({"version": 2}), &hana);
    assert_eq!(out["policy"]["status"], "active");
    assert_eq!(out["retired_version"], 1);
    let events = w.events();
    assert_eq!(events.len(), before + 1, "one event for the swap");
    assert_eq!(events[before]["kind"], "policy.activated");
    assert_eq!(events[before]["data"]["retired_version"], 1);
    let old = w.ok("policy.get", json!({"version": 1}), &w.author)["policy"].clone();
    assert_eq!(old["status"], "retired");
    assert_eq!(old["retired_at"], Timestamp(T0).to_string());
    let current = w.ok("policy.get", json!({}), &w.author)["policy"].clone();
    assert_eq!(current["version"], 2);
    assert_eq!(current["status"], "active");
    let active = crate::support::store_db(w.dir.path())
        .int("SELECT count(*) FROM policies WHERE status = 'active'");
    assert_eq!(active, 1);

    // Only a draft can be activated.
    for version in [1, 2] {
        let err = w.refused(
            "policy.activate",
            json!({"version": version}),
            &w.host,
            ErrorCode::IllegalTransition,
        );
        assert_eq!(err.details()["allowed"], json!(["draft"]));
        assert_eq!(
            err.details()["status"],
            if version == 1 { "retired" } else { "active" }
        );
    }
    let err = w.refused(
        "policy.activate",
        json!({"version": 9}),
        &w.host,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "policy", "id": "9"}));
    w.refused(
        "policy.get",
        json!({"version": 9}),
        &w.author,
        ErrorCode::NotFound,
    );
}

#[test]
fn invalid_policies_and_unauthorized_writers_are_refused() {
    let (w, _) = world();
    let err = w.refused(
        "policy.set",
        json!({"document": "version = 1\n\n[approvals]\nminimun = 2\n"}),
        &w.host,
        ErrorCode::InvalidPolicy,
    );
    assert_eq!(err.details()["line"], 4);
    assert_eq!(err.details()["name"], "minimun");
    // The line is the one in the document as submitted, leading blank
    // lines included.
    let err = w.refused(
        "policy.set",
        json!({"document": "\n\n# Team policy\nversion = 1\n[approvals]\nminimun = 2\n"}),
        &w.host,
        ErrorCode::InvalidPolicy,
    );
    assert_eq!(err.details()["line"], 6);
    w.refused(
        "policy.set",
        json!({"document": " \n\t\n"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    let err = w.refused(
        "policy.set",
        json!({"document": "version = 1\n[checks\n"}),
        &w.host,
        ErrorCode::InvalidPolicy,
    );
    assert_eq!(err.details()["line"], 2);
    let err = w.refused(
        "policy.set",
        json!({"document": "version = 1\n\n[[roles]]\npaths = [\"src/{a\"]\nrole = \"security\"\n"}),
        &w.host,
        ErrorCode::InvalidPolicy,
    );
    assert_eq!(err.details()["line"], 4);
    assert_eq!(err.details()["glob"], "src/{a");
    let err = w.refused(
        "policy.set",
        json!({"document": "version = 2\n"}),
        &w.host,
        ErrorCode::InvalidPolicy,
    );
    assert_eq!(err.details()["line"], 1);

    // Agents may neither set nor activate.
    for agent in [&w.author, &w.reviewer] {
        let err = w.refused(
            "policy.set",
            json!({"document": "version = 1\n"}),
            agent,
            ErrorCode::Forbidden,
        );
        assert_eq!(
            err.details()["allowed_kinds"],
            json!(["orchestrator", "human"])
        );
    }
    w.ok("policy.set", json!({"document": "version = 1\n"}), &w.host);
    w.refused(
        "policy.activate",
        json!({"version": 1}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(w.rows("policies"), 1);
    let p = w.ok("policy.get", json!({"version": 1}), &w.reviewer)["policy"].clone();
    assert_eq!(p["status"], "draft");
}

// ---------------------------------------------------------------------------
// 7. patch.validate is read-only and complete

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn validate_twice_returns_the_same_report_and_changes_nothing() {
    let (w, _) = world();
    write(&w, "src/lib.rs", LIB_RS);
    hold(&w, &w.author, "symbol:src/lib.rs#alpha");
    // A failing report (uncovered lines, no approval) and a valid one.
    let failing = propose(&w, PAST_ALPHA, "high");
    hold(&w, &w.author, "file:hello.txt");
    let valid = w.in_review();
    vote(&w, &w.reviewer, &valid, 1, "approve");
    for pid in [&failing, &valid] {
        let rows = fingerprint(w.dir.path());
        let events = w.events().len();
        let files = snapshot(w.dir.path());
        let first = validate(&w, pid);
        let second = validate(&w, pid);
        assert_eq!(first, second);
        assert_eq!(fingerprint(w.dir.path()), rows, "no row changed");
        assert_eq!(w.events().len(), events, "no event");
        assert_eq!(snapshot(w.dir.path()), files, "no workspace file changed");
    }
    let report = validate(&w, &failing);
    assert_eq!(report["valid"], false);
    // Every stage is reported, in order, whatever failed.
    let stages: Vec<(String, String)> = report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| (str_of(&s["name"]), str_of(&s["status"])))
        .collect();
    let expect = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    assert_eq!(
        stages,
        expect(&[
            ("claims", "passed"),
            ("preconditions", "passed"),
            ("coverage", "failed"),
            ("dry_run", "passed"),
            ("policy", "failed"),
            ("security_review", "failed"),
            ("human_approval", "skipped"),
            ("checks", "skipped"),
        ])
    );
    let report = validate(&w, &valid);
    assert_eq!(report["valid"], true, "{report:#}");
    assert_eq!(report["revision"], 1);
    assert_eq!(report["latest_revision"], 1);
    assert_eq!(report["policy_version"], Value::Null);
    assert_eq!(report["policy"]["approvable"], true);
    let stages: Vec<(String, String)> = report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| (str_of(&s["name"]), str_of(&s["status"])))
        .collect();
    assert_eq!(
        stages,
        expect(&[
            ("claims", "passed"),
            ("preconditions", "passed"),
            ("coverage", "passed"),
            ("dry_run", "passed"),
            ("policy", "passed"),
            ("security_review", "passed"),
            ("human_approval", "skipped"),
            ("checks", "skipped"),
        ])
    );
}

#[test]
fn validate_reports_changed_files_and_superseded_revisions() {
    let (w, _) = world();
    hold(&w, &w.author, "file:hello.txt");
    let pid = w.in_review();
    vote(&w, &w.reviewer, &pid, 1, "approve");
    assert_eq!(validate(&w, &pid)["valid"], true);
    // A superseded revision is never valid.
    w.revise(&pid, 1, PATCH2);
    vote(&w, &w.reviewer, &pid, 2, "approve");
    assert_eq!(validate(&w, &pid)["valid"], true);
    let old = w.ok(
        "patch.validate",
        json!({"proposal_id": pid, "revision": 1}),
        &w.author,
    );
    assert_eq!(old["valid"], false);
    assert_eq!(old["revision"], 1);
    assert_eq!(old["latest_revision"], 2);
    assert_eq!(status(&old, "claims"), "failed");
    assert_eq!(
        stage(&old, "claims")["reasons"][0]["message"],
        "revision 1 was superseded by revision 2"
    );
    // The file changes under the proposal: preconditions and the dry run
    // fail, with the expected and actual digests.
    std::fs::write(w.dir.path().join("hello.txt"), "bye\n").expect("write");
    let report = validate(&w, &pid);
    assert_eq!(report["valid"], false);
    assert_eq!(status(&report, "preconditions"), "failed");
    let pre = &stage(&report, "preconditions")["reasons"][0];
    assert_eq!(pre["path"], "hello.txt");
    assert_eq!(pre["expected"], Digest::of(b"hello\n").to_string());
    assert_eq!(pre["actual"], Digest::of(b"bye\n").to_string());
    assert_eq!(status(&report, "dry_run"), "failed");
    assert_eq!(status(&report, "coverage"), "skipped");
    let err = w.refused(
        "patch.validate",
        json!({"proposal_id": pid, "revision": 3}),
        &w.author,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details()["id"], format!("{pid}@3"));
}

// ---------------------------------------------------------------------------
// 8. Migration

#[test]
fn a_schema_version_1_store_is_migrated_keeping_its_rows() {
    if crate::support::postgres() {
        return; // an SQLite migration
    }
    let dir = scratch_dir();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").expect("write");
    std::fs::create_dir(dir.path().join(".roundtable")).expect("mkdir");
    let db_path = dir.path().join(".roundtable/store.db");
    {
        let db = crate::support::raw_sqlite(&db_path);
        db.execute_batch(include_str!("../../roundtable-store/src/store/v1.sql"))
            .expect("v1 schema");
        db.execute_batch(
            "INSERT INTO agents (id, roles, enabled, display_name, created_at, updated_at)
                 VALUES ('old', '[\"author\"]', 1, 'Old Agent', 1, 1);
             INSERT INTO tasks (id, title, summary_md, created_by, created_at)
                 VALUES ('t-old', 'From v1', NULL, 'orchestrator:host', 1);
             PRAGMA user_version = 1;",
        )
        .expect("v1 rows");
    }
    let engine =
        Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("open migrates");
    let version: i64 = crate::support::raw_sqlite(&db_path)
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("user_version");
    assert_eq!(version, roundtable::store::SCHEMA_VERSION);
    assert!(version > 1);
    let db = crate::support::raw_sqlite(&db_path);
    let agent: (String, String) = db
        .query_row(
            "SELECT roles, display_name FROM agents WHERE id = 'old'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("the v1 agent is kept");
    assert_eq!(agent, ("[\"author\"]".to_owned(), "Old Agent".to_owned()));
    let title: String = db
        .query_row("SELECT title FROM tasks WHERE id = 't-old'", [], |r| {
            r.get(0)
        })
        .expect("the v1 task is kept");
    assert_eq!(title, "From v1");
    // The new tables work with the old rows.
    let old = Actor::agent(id("old"));
    let claim = engine
        .call(
            "claim.acquire",
            json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 60, "task_id": "t-old"}),
            &old,
        )
        .expect("claim on a migrated store");
    assert_eq!(claim["claim"]["task_id"], "t-old");
    assert_eq!(claim["claim"]["token"], 1);
    let policy = engine
        .call("policy.get", json!({}), &old)
        .expect("policy.get");
    assert_eq!(policy["policy"]["status"], "builtin");
    drop(engine);
    // Reopening does not migrate again.
    let engine =
        Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("reopen");
    let page = engine
        .call("claim.list", json!({}), &old)
        .expect("claim.list");
    assert_eq!(page["claims"].as_array().expect("claims").len(), 1);
}
