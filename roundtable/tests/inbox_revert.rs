//! Issue 16 items 5 and 6: reading check results back (`test.list`,
//! `test.get`), who a failed check waits on, the inbox, a rolled-back
//! proposal's status and landing it again, and `proposal.revert`.

use super::tools::{fingerprint, id, str_of, World, PATCH};
use roundtable::{Actor, ErrorCode};
use serde_json::{json, Value};

/// Store `document` as a draft and activate it (as the orchestrator).
fn activate_policy(w: &World, document: &str) {
    let set = w.ok("policy.set", json!({"document": document}), &w.host);
    let version = set["policy"]["version"].as_u64().expect("a version");
    w.ok("policy.activate", json!({"version": version}), &w.host);
}

fn hello(w: &World) -> String {
    std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read hello.txt")
}

/// `(actor, action)` of each `next` entry of `pid`'s status.
fn next_of(w: &World, pid: &str) -> Vec<(String, String)> {
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    status["next"]
        .as_array()
        .expect("next")
        .iter()
        .map(|n| (str_of(&n["actor"]), str_of(&n["action"])))
        .collect()
}

/// `(proposal id, role, action)` of every inbox item of `actor` (all pages).
fn inbox(w: &World, actor: &Actor) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut args = json!({"limit": 2});
        if !cursor.is_null() {
            args["cursor"] = cursor.clone();
        }
        let page = w.ok("inbox.list", args, actor);
        for item in page["items"].as_array().expect("items") {
            assert_eq!(item["revision"], item["proposal"]["latest_revision"]);
            out.push((
                str_of(&item["proposal"]["id"]),
                str_of(&item["role"]),
                str_of(&item["action"]),
            ));
        }
        cursor = page["next_cursor"].clone();
        if cursor.is_null() {
            return out;
        }
    }
}

/// The newest event of `kind`.
fn last_of(w: &World, kind: &str) -> Value {
    w.events()
        .into_iter()
        .rev()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event"))
}

fn item(pid: &str, role: &str, action: &str) -> (String, String, String) {
    (pid.to_owned(), role.to_owned(), action.to_owned())
}

/// An applied proposal changing `hello.txt` to `hello, world`; (its id, the
/// transaction id).
fn applied(w: &World) -> (String, String) {
    let pid = w.approved("file:hello.txt", PATCH);
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(hello(w), "hello, world\n");
    (pid, str_of(&out["transaction"]["id"]))
}

#[test]
fn a_failed_checks_note_reads_back_and_next_names_the_author() {
    let w = World::new();
    activate_policy(&w, "version = 1\n[checks]\nrequired = [\"unit\"]\n");
    let pid = w.approved("file:hello.txt", PATCH);
    // No result yet: the orchestrator runs the check.
    assert!(next_of(&w, &pid).contains(&("orchestrator".into(), "run_check".into())));
    assert!(inbox(&w, &w.host).contains(&item(&pid, "orchestrator", "run_check")));

    let note = "```\nFAILED tests/test_hello.py::test_greeting - AssertionError\n```";
    let recorded = w.ok(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "failed",
               "duration_ms": 1200, "note_md": note}),
        &w.host,
    );
    let test_id = str_of(&recorded["test_result"]["id"]);
    let got = w.ok("test.get", json!({"test_result_id": test_id}), &w.author);
    assert_eq!(got["test_result"]["note_md"], note);
    assert_eq!(got["test_result"]["status"], "failed");
    assert_eq!(got["test_result"]["name"], "unit");

    // After a failed required check the author acts, not the orchestrator.
    let next = next_of(&w, &pid);
    assert!(
        next.contains(&("author".into(), "fix_check".into())),
        "{next:?}"
    );
    assert!(!next.iter().any(|(_, a)| a == "run_check"), "{next:?}");
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    let why = status["next"]
        .as_array()
        .expect("next")
        .iter()
        .find(|n| n["action"] == "fix_check")
        .map(|n| str_of(&n["why"]))
        .expect("a fix_check entry");
    assert!(why.contains(&test_id), "{why}");
    assert!(inbox(&w, &w.author).contains(&item(&pid, "author", "fix_check")));
    assert!(!inbox(&w, &w.host).iter().any(|i| i.0 == pid));

    // test.list: by proposal, revision and name, paged.
    w.ok(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "lint", "status": "passed"}),
        &w.host,
    );
    let all = w.ok("test.list", json!({"proposal_id": pid}), &w.author);
    assert_eq!(all["test_results"].as_array().expect("list").len(), 2);
    assert_eq!(all["test_results"][0]["note_md"], note);
    assert!(all["next_cursor"].is_null());
    let first = w.ok(
        "test.list",
        json!({"proposal_id": pid, "limit": 1}),
        &w.author,
    );
    assert_eq!(first["test_results"][0]["name"], "unit");
    let second = w.ok(
        "test.list",
        json!({"proposal_id": pid, "limit": 1, "cursor": first["next_cursor"]}),
        &w.author,
    );
    assert_eq!(second["test_results"][0]["name"], "lint");
    let named = w.ok(
        "test.list",
        json!({"proposal_id": pid, "name": "lint", "revision": 1}),
        &w.author,
    );
    assert_eq!(named["test_results"].as_array().expect("list").len(), 1);
    let none = w.ok(
        "test.list",
        json!({"proposal_id": pid, "revision": 2}),
        &w.author,
    );
    assert!(none["test_results"].as_array().expect("list").is_empty());

    // Failure paths.
    let e = w.refused(
        "test.get",
        json!({"test_result_id": "test-nope"}),
        &w.author,
        ErrorCode::NotFound,
    );
    assert_eq!(e.details()["kind"], "test result");
    w.refused(
        "test.list",
        json!({"proposal_id": "prop-nope"}),
        &w.author,
        ErrorCode::NotFound,
    );
    let e = w.refused(
        "test.list",
        json!({"proposal_id": pid, "cursor": "not-a-cursor"}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "cursor");
    w.refused(
        "test.get",
        json!({"test_result_id": test_id, "note": 1}),
        &w.author,
        ErrorCode::InvalidArgument,
    );

    // A passing result on a new revision makes it landable again.
    w.revise(&pid, 1, super::tools::PATCH2);
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 2, "vote": "approve"}),
        &w.reviewer,
    );
    w.ok(
        "test.record",
        json!({"proposal_id": pid, "revision": 2, "name": "unit", "status": "passed"}),
        &w.host,
    );
    assert!(next_of(&w, &pid).contains(&("orchestrator".into(), "apply".into())));
}

#[test]
fn the_inbox_lists_what_waits_on_each_actor() {
    let w = World::new();
    let sec = w.agent("sec", &["security"]);
    let human = Actor::human(id("hana"));
    // Pending: the author asks for review.
    let pending = w.proposal();
    assert_eq!(
        inbox(&w, &w.author),
        vec![item(&pending, "author", "request_review")]
    );
    assert!(inbox(&w, &w.reviewer).is_empty());
    // In review, critical: a vote (not from the author), a security review,
    // a human approval.
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pending}),
        &w.author,
    );
    let critical = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Critical", "summary_md": "x", "patch": PATCH,
                   "risk": "critical"}),
            &w.author,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": critical}),
        &w.author,
    );
    let bob = inbox(&w, &w.reviewer);
    assert_eq!(
        bob,
        vec![
            item(&pending, "reviewer", "vote"),
            item(&critical, "reviewer", "vote")
        ]
    );
    assert!(inbox(&w, &w.author).is_empty(), "the author does not vote");
    assert!(inbox(&w, &sec).contains(&item(&critical, "security_reviewer", "security_review")));
    assert_eq!(
        inbox(&w, &human),
        vec![item(&critical, "human", "human_approval")]
    );
    // A vote cast leaves the voter's inbox (any vote on the revision).
    w.ok(
        "vote.cast",
        json!({"proposal_id": pending, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    assert_eq!(
        inbox(&w, &w.reviewer),
        vec![item(&critical, "reviewer", "vote")]
    );
    // Approved: the orchestrator applies (claims and coverage are the
    // apply's to check again).
    assert_eq!(
        inbox(&w, &w.host),
        vec![item(&pending, "orchestrator", "apply")]
    );
    // The files changed under it: the author rebases or attaches.
    std::fs::write(w.dir.path().join("hello.txt"), "changed\n").expect("write");
    let author = inbox(&w, &w.author);
    assert!(
        author.contains(&item(&pending, "author", "rebase_or_attach")),
        "{author:?}"
    );
    assert!(author.contains(&item(&critical, "author", "rebase_or_attach")));
    assert!(inbox(&w, &w.host).is_empty());
    // The same rule in proposal.status.
    assert!(next_of(&w, &pending).contains(&("author".into(), "rebase_or_attach".into())));

    // Paging: one proposal per page, the cursor continues.
    let page = w.ok("inbox.list", json!({"limit": 1}), &w.author);
    assert_eq!(page["examined"], 1);
    assert!(!page["next_cursor"].is_null());
    let next = w.ok(
        "inbox.list",
        json!({"limit": 1, "cursor": page["next_cursor"]}),
        &w.author,
    );
    assert_eq!(next["items"][0]["proposal"]["id"], critical.as_str());
    assert!(next["next_cursor"].is_null());

    // Failure paths: a bad cursor, an unregistered agent, unknown keys.
    let e = w.refused(
        "inbox.list",
        json!({"cursor": "czotMQ"}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "cursor");
    w.refused(
        "inbox.list",
        json!({"limit": 0}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    w.refused(
        "inbox.list",
        json!({"actor": "bob"}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    let e = w.refused(
        "inbox.list",
        json!({}),
        &Actor::agent(id("nobody")),
        ErrorCode::Forbidden,
    );
    assert_eq!(e.details()["reason"], "unregistered");
    // An actor of a kind roundtable does not know is refused before any tool runs.
    let bad: Result<Actor, _> = serde_json::from_value(json!({"id": "x", "kind": "robot"}));
    assert!(bad.is_err());
}

/// The inbox remembers what it worked out per proposal; what it remembers
/// must follow every change that would change it: evidence written by
/// another engine on the same store, a new policy, a changed agent.
#[test]
fn the_inbox_remembers_nothing_that_changed_since() {
    let w = World::new();
    let pid = w.in_review();
    assert_eq!(inbox(&w, &w.reviewer), vec![item(&pid, "reviewer", "vote")]);
    assert!(inbox(&w, &w.host).is_empty());
    // A vote cast through another engine on the same store.
    let other = roundtable::Engine::open(w.dir.path(), crate::support::test_options(w.dir.path()))
        .expect("a second engine");
    other
        .call(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &w.reviewer,
        )
        .expect("vote");
    assert!(inbox(&w, &w.reviewer).is_empty());
    assert_eq!(
        inbox(&w, &w.host),
        vec![item(&pid, "orchestrator", "apply")]
    );
    // A policy that wants two approvals: no apply any more, a vote wanted.
    let carol = w.agent("carol", &["reviewer"]);
    activate_policy(&w, "version = 1\n\n[approvals]\nminimum = 2\n");
    assert!(inbox(&w, &w.host).is_empty(), "{:?}", inbox(&w, &w.host));
    assert_eq!(inbox(&w, &carol), vec![item(&pid, "reviewer", "vote")]);
    // The approving reviewer disabled: its vote no longer counts.
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &carol,
    );
    assert_eq!(
        inbox(&w, &w.host),
        vec![item(&pid, "orchestrator", "apply")]
    );
    w.ok(
        "agent.register",
        json!({"agent_id": "carol", "roles": ["reviewer"], "enabled": false}),
        &w.host,
    );
    assert!(
        inbox(&w, &w.host).is_empty(),
        "a disabled agent's vote counted"
    );
}

#[test]
fn a_rolled_back_proposal_reads_rolled_back_and_can_land_again() {
    let w = World::new();
    let (pid, tx) = applied(&w);
    let out = w.ok(
        "transaction.rollback",
        json!({"transaction_id": tx}),
        &w.host,
    );
    let rollback_tx = str_of(&out["transaction"]["id"]);
    assert_eq!(hello(&w), "hello\n");
    let got = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert_eq!(got["proposal"]["status"], "rolled_back");
    // Its event, after the transaction's, names both transactions.
    let last = last_of(&w, "proposal.rolled_back");
    assert_eq!(last["proposal_id"], pid.as_str());
    assert_eq!(last["data"]["from"], "applied");
    assert_eq!(last["data"]["to"], "rolled_back");
    assert_eq!(last["data"]["transaction_id"], rollback_tx.as_str());
    assert_eq!(last["data"]["rolled_back_transaction_id"], tx.as_str());
    // The status filter of proposal.list knows it.
    let listed = w.ok("proposal.list", json!({"status": "rolled_back"}), &w.host);
    assert_eq!(listed["proposals"][0]["id"], pid.as_str());
    let applied_list = w.ok("proposal.list", json!({"status": "applied"}), &w.host);
    assert!(applied_list["proposals"]
        .as_array()
        .expect("list")
        .is_empty());
    // Not open: nothing waits, nobody votes on it.
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    assert_eq!(status["can_land"], false);
    assert!(!inbox(&w, &w.host).iter().any(|i| i.0 == pid));
    w.refused(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
        ErrorCode::IllegalTransition,
    );

    // Landing again re-validates: the author's claims went with the first
    // apply, so it is refused until the author claims again.
    w.refused(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
        ErrorCode::ValidationFailed,
    );
    assert_eq!(hello(&w), "hello\n");
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let again = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(again["proposal"]["status"], "applied");
    assert_eq!(hello(&w), "hello, world\n");
    assert_eq!(
        last_of(&w, "proposal.applied")["data"]["from"],
        "rolled_back"
    );

    // Rolling back a rollback re-applies, and the proposal follows.
    let tx2 = str_of(&again["transaction"]["id"]);
    let back = w.ok(
        "transaction.rollback",
        json!({"transaction_id": tx2}),
        &w.host,
    );
    let status = |w: &World| {
        w.ok("proposal.get", json!({"proposal_id": pid}), &w.host)["proposal"]["status"].clone()
    };
    assert_eq!(status(&w), "rolled_back");
    let rb = str_of(&back["transaction"]["id"]);
    w.ok(
        "transaction.rollback",
        json!({"transaction_id": rb}),
        &w.host,
    );
    assert_eq!(status(&w), "applied");
    assert_eq!(hello(&w), "hello, world\n");
    let last = last_of(&w, "proposal.applied");
    assert_eq!(last["data"]["from"], "rolled_back");
    assert_eq!(last["data"]["rolled_back_transaction_id"], rb.as_str());
    let verified = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(verified["valid"], true, "{verified}");
}

#[test]
fn a_revert_is_a_new_proposal_governed_like_any_other() {
    let w = World::new();
    activate_policy(&w, "version = 1\n[human_approval]\nreverts = true\n");
    let (pid, _) = applied(&w);
    let carol = w.agent("carol", &["author"]);
    let made = w.ok("proposal.revert", json!({"proposal_id": pid}), &carol);
    let rid = str_of(&made["proposal"]["id"]);
    assert_eq!(made["proposal"]["author"], "carol");
    assert_eq!(made["proposal"]["status"], "pending");
    assert_eq!(made["proposal"]["reverts"], pid.as_str());
    assert_eq!(made["proposal"]["task_id"], "t1");
    assert_eq!(made["proposal"]["title"], "Revert \"Change\"");
    assert_eq!(made["revision"]["number"], 1);
    // Nothing is written to the files by proposing.
    assert_eq!(hello(&w), "hello, world\n");
    let got = w.ok(
        "proposal.get",
        json!({"proposal_id": rid, "include_content": true}),
        &w.host,
    );
    assert_eq!(got["proposal"]["reverts"], pid.as_str());
    let text = str_of(&got["content"]);
    assert!(text.contains("-hello, world\n+hello\n"), "{text}");
    let created = w.last_event();
    assert_eq!(created["kind"], "proposal.created");
    assert_eq!(created["data"]["reverts"], pid.as_str());
    assert_eq!(created["data"]["reverted_revision"], 1);
    // An ordinary proposal says it reverts nothing.
    let plain = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert!(plain["proposal"]["reverts"].is_null());

    // Governed: claims, review, and (by this policy) a person's approval.
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &carol,
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": rid}),
        &carol,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": rid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let report = w.ok("patch.validate", json!({"proposal_id": rid}), &w.host);
    assert_eq!(report["valid"], false);
    let human = report["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == "human_approval")
        .expect("human_approval")
        .clone();
    assert_eq!(human["status"], "unsatisfied");
    assert_eq!(human["reasons"][0], format!("it reverts proposal {pid}"));
    assert!(next_of(&w, &rid).contains(&("human".into(), "human_approval".into())));
    w.refused(
        "patch.apply",
        json!({"proposal_id": rid, "revision": 1}),
        &w.host,
        ErrorCode::ValidationFailed,
    );
    w.ok(
        "human.approve",
        json!({"proposal_id": rid, "revision": 1}),
        &Actor::human(id("hana")),
    );
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": rid, "revision": 1}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "applied");
    assert_eq!(hello(&w), "hello\n");
    // The reverted proposal stays applied: its change was undone by
    // another governed change, not rolled back.
    let original = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert_eq!(original["proposal"]["status"], "applied");
}

#[test]
fn a_revert_applies_over_later_changes_elsewhere_in_the_file() {
    let w = World::new();
    std::fs::write(w.dir.path().join("hello.txt"), "a\nb\nc\nd\ne\nf\ng\nh\n").expect("write");
    let first = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n";
    let pid = w.approved("file:hello.txt", first);
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    // A later, unrelated change to the end of the file.
    std::fs::write(w.dir.path().join("hello.txt"), "A\nb\nc\nd\ne\nf\ng\nH\n").expect("write");
    let made = w.ok("proposal.revert", json!({"proposal_id": pid}), &w.author);
    let rid = str_of(&made["proposal"]["id"]);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": rid}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": rid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    w.ok(
        "patch.apply",
        json!({"proposal_id": rid, "revision": 1}),
        &w.host,
    );
    assert_eq!(hello(&w), "a\nb\nc\nd\ne\nf\ng\nH\n");
}

#[test]
fn a_revert_is_refused_unless_its_inverse_applies_to_an_applied_proposal() {
    let w = World::new();
    // Not applied (in review): nothing to revert.
    let open = w.in_review();
    let e = w.refused(
        "proposal.revert",
        json!({"proposal_id": open}),
        &w.author,
        ErrorCode::IllegalTransition,
    );
    assert_eq!(e.details()["status"], "in_review");
    w.refused(
        "proposal.revert",
        json!({"proposal_id": "prop-nope"}),
        &w.author,
        ErrorCode::NotFound,
    );
    let (pid, tx) = applied(&w);
    // Only an agent may author it; the orchestrator cannot name one.
    w.refused(
        "proposal.revert",
        json!({"proposal_id": pid}),
        &w.host,
        ErrorCode::Forbidden,
    );
    w.refused(
        "proposal.revert",
        json!({"proposal_id": pid, "author": "alice"}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    w.refused(
        "proposal.revert",
        json!({"proposal_id": pid}),
        &Actor::agent(id("nobody")),
        ErrorCode::Forbidden,
    );
    w.refused(
        "proposal.revert",
        json!({"proposal_id": pid, "task_id": "t-nope"}),
        &w.author,
        ErrorCode::NotFound,
    );
    // Later work changed the lines it would restore: the inverse does not
    // apply, nothing is stored and no file changes.
    std::fs::write(w.dir.path().join("hello.txt"), "hello, everyone\n").expect("write");
    let before = fingerprint(w.dir.path());
    let e = w.refused(
        "proposal.revert",
        json!({"proposal_id": pid}),
        &w.author,
        ErrorCode::PreconditionFailed,
    );
    assert_eq!(e.details()["proposal_id"], pid.as_str());
    assert_eq!(e.details()["revision"], 1);
    assert_eq!(fingerprint(w.dir.path()), before);
    assert_eq!(hello(&w), "hello, everyone\n");
    // Rolled back: already undone, so a revert makes no sense.
    std::fs::write(w.dir.path().join("hello.txt"), "hello, world\n").expect("write");
    w.ok(
        "transaction.rollback",
        json!({"transaction_id": tx}),
        &w.host,
    );
    let e = w.refused(
        "proposal.revert",
        json!({"proposal_id": pid}),
        &w.author,
        ErrorCode::IllegalTransition,
    );
    assert_eq!(e.details()["status"], "rolled_back");
}

#[test]
fn a_version_5_store_is_migrated_to_6_keeping_rows_indexes_and_keys() {
    if crate::support::postgres() {
        return; // an SQLite migration
    }
    let dir = super::tools::scratch_dir();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").expect("write");
    std::fs::create_dir(dir.path().join(".roundtable")).expect("mkdir");
    let db_path = dir.path().join(".roundtable/store.db");
    {
        let db = crate::support::raw_sqlite(&db_path);
        for sql in [
            include_str!("../../roundtable-store/src/store/v1.sql"),
            include_str!("../../roundtable-store/src/store/v2.sql"),
            include_str!("../../roundtable-store/src/store/v3.sql"),
            include_str!("../../roundtable-store/src/store/v4.sql"),
            include_str!("../../roundtable-store/src/store/v5.sql"),
        ] {
            db.execute_batch(sql).expect("schema");
        }
        db.execute_batch(
            "INSERT INTO agents (id, roles, enabled, display_name, created_at, updated_at)
                 VALUES ('old', '[\"author\"]', 1, NULL, 1, 1);
             INSERT INTO tasks (id, title, summary_md, created_by, created_at)
                 VALUES ('t-old', 'From v5', NULL, 'orchestrator:host', 1);
             INSERT INTO blobs (digest, size, data) VALUES ('blob:sha256:0000000000000000000000000000000000000000000000000000000000000000', 1, x'00');
             INSERT INTO proposals (seq, id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at)
                 VALUES (7, 'p-a', 't-old', 'old', 'A', 'a', 'low', 'applied', 1, 1, 2),
                        (12, 'p-b', 't-old', 'old', 'B', 'b', 'normal', 'in_review', 1, 3, 3);
             INSERT INTO revisions (proposal_id, number, format, digest, changeset, changeset_digest,
                                    affected_resources, base_state, base_git_head, note_md, created_by, created_at, diff_digest)
                 VALUES ('p-b', 1, 'patch', 'blob:sha256:0000000000000000000000000000000000000000000000000000000000000000', '[]', 'sha256:00', '[]', 'state:sha256:0000000000000000000000000000000000000000000000000000000000000000', NULL, NULL, 'agent:old', 3, 'blob:sha256:0000000000000000000000000000000000000000000000000000000000000000');
             PRAGMA user_version = 5;",
        )
        .expect("v5 rows");
    }
    let engine = roundtable::Engine::open(dir.path(), crate::support::test_options(dir.path()))
        .expect("open migrates");
    let db = crate::support::raw_sqlite(&db_path);
    let version: i64 = db
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, roundtable::store::SCHEMA_VERSION);
    assert!(version >= 6);
    // Rows and their keyset order kept.
    let rows: Vec<(i64, String, String)> = db
        .prepare("SELECT seq, id, status FROM proposals ORDER BY seq")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        rows,
        vec![
            (7, "p-a".into(), "applied".into()),
            (12, "p-b".into(), "in_review".into())
        ]
    );
    // Every index is back, and the keys hold.
    let indexes: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'proposals' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("names");
    for want in [
        "proposals_by_author",
        "proposals_by_author_status",
        "proposals_by_status",
        "proposals_by_task",
        "proposals_by_task_author",
        "proposals_by_task_author_status",
        "proposals_by_task_status",
    ] {
        assert!(
            indexes.iter().any(|i| i == want),
            "{want} missing: {indexes:?}"
        );
    }
    let dangling: Option<String> = db
        .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
        .ok();
    assert_eq!(dangling, None);
    // The widened CHECK, the new column, the references still enforced.
    db.execute_batch("PRAGMA foreign_keys = ON").expect("fk on");
    db.execute(
        "UPDATE proposals SET status = 'rolled_back' WHERE id = 'p-a'",
        [],
    )
    .expect("rolled_back is a status");
    assert!(db
        .execute("UPDATE proposals SET status = 'bogus' WHERE id = 'p-a'", [])
        .is_err());
    assert!(db
        .execute(
            "UPDATE proposals SET reverts = 'p-none' WHERE id = 'p-b'",
            []
        )
        .is_err());
    assert!(db
        .execute(
            "INSERT INTO revisions (proposal_id, number, format, digest, changeset, changeset_digest,
                                    affected_resources, base_state, created_by, created_at, diff_digest)
             VALUES ('p-none', 1, 'patch', 'blob:sha256:0000000000000000000000000000000000000000000000000000000000000000', '[]', 'x', '[]', 'x', 'agent:old', 1, 'blob:sha256:0000000000000000000000000000000000000000000000000000000000000000')",
            [],
        )
        .is_err());
    // And the tools read the old rows.
    let host = Actor::orchestrator(id("host"));
    let got = engine
        .call("proposal.get", json!({"proposal_id": "p-b"}), &host)
        .expect("proposal.get on a migrated store");
    assert!(got["proposal"]["reverts"].is_null());
    let page = engine
        .call("proposal.list", json!({"status": "rolled_back"}), &host)
        .expect("list");
    assert_eq!(page["proposals"][0]["id"], "p-a");
    drop(engine);
    // The engine's own connection has its foreign keys on again: a reopen
    // neither migrates again nor fails.
    roundtable::Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("reopen");
}

#[test]
fn a_change_the_diff_cannot_reverse_is_reverted_from_the_journal() {
    let w = World::new();
    // A copy cannot be reversed as a diff ("un-copy"): the revert is made
    // from the apply's before snapshot.
    let copy = "diff --git a/hello.txt b/copy.txt\nsimilarity index 100%\ncopy from hello.txt\ncopy to copy.txt\n";
    let pid = w.approved("directory:.", copy);
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert!(w.dir.path().join("copy.txt").exists());
    let made = w.ok(
        "proposal.revert",
        json!({"proposal_id": pid, "title": "Drop the copy", "risk": "low"}),
        &w.author,
    );
    assert_eq!(made["proposal"]["title"], "Drop the copy");
    // Never below the reverted proposal's risk (normal).
    assert_eq!(made["proposal"]["risk"], "normal");
    let changes = made["revision"]["changeset"].as_array().expect("changeset");
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["path"], "copy.txt");
    assert_eq!(changes[0]["operation"], "delete");
    // Once the copy changed, the snapshot no longer says what to restore.
    std::fs::write(w.dir.path().join("copy.txt"), "edited\n").expect("write");
    let e = w.refused(
        "proposal.revert",
        json!({"proposal_id": pid}),
        &w.author,
        ErrorCode::PreconditionFailed,
    );
    assert_eq!(e.details()["paths"], json!(["copy.txt"]));
}

/// What an inbox page costs beside asking `proposal.status` of each
/// proposal: run with `--ignored --nocapture` (prints, asserts nothing
/// about time).
#[test]
#[ignore = "a measurement, not a test: run with --ignored --nocapture"]
#[allow(clippy::print_stdout)] // printing the timings is its whole output
fn measure_inbox_against_status_per_proposal() {
    let w = World::new();
    let n = 100;
    let mut pids = Vec::new();
    for i in 0..n {
        let body: String = (0..200)
            .map(|l| format!("line {l} of file {i}\n"))
            .collect();
        std::fs::write(w.dir.path().join(format!("f{i}.txt")), body).expect("write");
        let patch = format!(
            "--- a/f{i}.txt\n+++ b/f{i}.txt\n@@ -1,2 +1,2 @@\n-line 0 of file {i}\n+line zero of file {i}\n line 1 of file {i}\n"
        );
        pids.push(w.approved(&format!("file:f{i}.txt"), &patch));
    }
    let time = |label: &str, f: &dyn Fn()| {
        let start = std::time::Instant::now();
        f();
        println!("{label}: {:?}", start.elapsed());
    };
    time("inbox.list, host, 1 page of 100 proposals", &|| {
        let page = w.ok("inbox.list", json!({"limit": 100}), &w.host);
        assert_eq!(page["items"].as_array().expect("items").len(), n);
    });
    time("inbox.list, reviewer, 1 page of 100 proposals", &|| {
        w.ok("inbox.list", json!({"limit": 100}), &w.reviewer);
    });
    time("proposal.status x 100", &|| {
        for pid in &pids {
            w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
        }
    });
}
