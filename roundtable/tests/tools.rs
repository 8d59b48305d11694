//! Scenario tests of the tool surface: the proposal lifecycle and every
//! refusal, each refusal proven to leave the store unchanged.

use roundtable::{Actor, Engine, EngineOptions, ErrorCode, Id};
use serde_json::{json, Value};
use std::path::Path;

/// A fresh workspace with one file, an engine on it, a task, an author
/// agent and a reviewer agent.
pub(crate) struct World {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) engine: Engine,
    pub(crate) host: Actor,
    pub(crate) author: Actor,
    pub(crate) reviewer: Actor,
}

pub(crate) fn id(s: &str) -> Id {
    Id::new(s).expect("valid id")
}

pub(crate) const PATCH: &str =
    "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n";

/// A scratch directory on /dev/shm when there is one (fast fsync), else
/// the system temporary directory.
pub(crate) fn scratch_dir() -> tempfile::TempDir {
    if Path::new("/dev/shm").is_dir() {
        tempfile::tempdir_in("/dev/shm").expect("tempdir in /dev/shm")
    } else {
        tempfile::tempdir().expect("tempdir")
    }
}

/// A second revision's patch (also applies to the unchanged `hello.txt`).
pub(crate) const PATCH2: &str = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hi\n";

/// An edit plan turning `hello\n` into `hello, plan\n`.
pub(crate) fn edit_plan() -> Value {
    json!({"documentChanges": [{
        "path": "hello.txt",
        "kind": "modify",
        "precondition": {"expectedDigest": roundtable::Digest::of(b"hello\n").to_string()},
        "edits": [{
            "range": {"start": {"line": 0, "char": 5}, "end": {"line": 0, "char": 5}},
            "coordinateSystem": "utf8",
            "newText": ", plan"
        }]
    }]})
}

impl World {
    pub(crate) fn new() -> World {
        World::with(
            tempfile::tempdir().expect("tempdir"),
            EngineOptions::default(),
        )
    }

    /// The fixture in `dir`, its engine opened with `options`.
    pub(crate) fn with(dir: tempfile::TempDir, mut options: EngineOptions) -> World {
        std::fs::write(dir.path().join("hello.txt"), "hello\n").expect("write");
        if options.store.is_none() {
            options.store = super::support::test_options(dir.path()).store;
        }
        let engine = Engine::open(dir.path(), options).expect("open");
        let w = World {
            dir,
            engine,
            host: Actor::orchestrator(id("host")),
            author: Actor::agent(id("alice")),
            reviewer: Actor::agent(id("bob")),
        };
        w.ok(
            "agent.register",
            json!({"agent_id": "alice", "roles": ["author"]}),
            &w.host,
        );
        w.ok(
            "agent.register",
            json!({"agent_id": "bob", "roles": ["reviewer"]}),
            &w.host,
        );
        w.ok(
            "task.create",
            json!({"task_id": "t1", "title": "Greet the world"}),
            &w.host,
        );
        w
    }

    pub(crate) fn ok(&self, tool: &str, args: Value, actor: &Actor) -> Value {
        self.engine
            .call(tool, args.clone(), actor)
            .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
    }

    /// Call and expect a refusal with `code`; assert the store is unchanged.
    pub(crate) fn refused(
        &self,
        tool: &str,
        args: Value,
        actor: &Actor,
        code: ErrorCode,
    ) -> roundtable::ToolError {
        let before = fingerprint(self.dir.path());
        let err = match self.engine.call(tool, args.clone(), actor) {
            Ok(v) => panic!("{tool} {args}: expected {code}, got {v}"),
            Err(e) => e,
        };
        assert_eq!(err.code(), code, "{tool} {args}: {err} {}", err.details());
        // The details are a value of the code's details type.
        err.check_details()
            .unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
        assert_eq!(
            fingerprint(self.dir.path()),
            before,
            "{tool} changed the store"
        );
        err
    }

    pub(crate) fn create(&self) -> Value {
        self.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Say hello", "summary_md": "Greets.", "patch": PATCH}),
            &self.author,
        )
    }

    /// A new pending proposal by the author; its id.
    pub(crate) fn proposal(&self) -> String {
        str_of(&self.create()["proposal"]["id"])
    }

    /// A new in-review proposal by the author; its id.
    pub(crate) fn in_review(&self) -> String {
        let pid = self.proposal();
        self.ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &self.author,
        );
        pid
    }

    /// An approved proposal for `patch` by the author, who first claims
    /// `resource` for writing; its id.
    pub(crate) fn approved(&self, resource: &str, patch: &str) -> String {
        self.ok(
            "claim.acquire",
            json!({"resource_id": resource, "type": "write", "ttl_s": 3600}),
            &self.author,
        );
        let pid = str_of(
            &self.ok(
                "proposal.create",
                json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch}),
                &self.author,
            )["proposal"]["id"],
        );
        self.ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &self.author,
        );
        self.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &self.reviewer,
        );
        pid
    }

    /// Register an enabled agent with these roles; its actor.
    pub(crate) fn agent(&self, name: &str, roles: &[&str]) -> Actor {
        self.ok(
            "agent.register",
            json!({"agent_id": name, "roles": roles}),
            &self.host,
        );
        Actor::agent(id(name))
    }

    /// Revise `pid` (at revision `expected`) with `patch` as the author.
    pub(crate) fn revise(&self, pid: &str, expected: u32, patch: &str) -> Value {
        self.ok(
            "proposal.attach_patch",
            json!({"proposal_id": pid, "expected_revision": expected, "patch": patch}),
            &self.author,
        )
    }

    /// Every event, in seq order.
    pub(crate) fn events(&self) -> Vec<Value> {
        let page = self.ok("events.list", json!({"limit": 1000}), &self.host);
        assert!(page["next_since_seq"].is_null(), "more than 1000 events");
        page["events"].as_array().expect("events").clone()
    }

    /// The newest event.
    pub(crate) fn last_event(&self) -> Value {
        self.events().pop().expect("an event")
    }

    /// How many rows `table` holds.
    pub(crate) fn rows(&self, table: &str) -> i64 {
        super::support::store_db(self.dir.path()).count(table)
    }
}

/// A JSON string's text.
pub(crate) fn str_of(v: &Value) -> String {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .to_owned()
}

/// The `id` of each record in a JSON array.
pub(crate) fn ids_of(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|r| str_of(&r["id"]))
        .collect()
}

pub(crate) use super::support::fingerprint;

#[test]
fn a_proposal_goes_from_pending_to_in_review_with_evidence_on_its_revision() {
    let w = World::new();
    let created = w.create();
    let pid = created["proposal"]["id"].as_str().expect("id").to_owned();
    assert_eq!(created["proposal"]["status"], "pending");
    assert_eq!(created["proposal"]["latest_revision"], 1);
    assert_eq!(created["revision"]["number"], 1);
    assert!(created["revision"]["digest"]
        .as_str()
        .expect("digest")
        .starts_with("blob:sha256:"));
    assert_eq!(created["revision"]["changeset"][0]["path"], "hello.txt");
    assert_eq!(created["revision"]["changeset"][0]["operation"], "modify");
    // Nothing was written to the workspace.
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read"),
        "hello\n"
    );

    let reviewed = w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    assert_eq!(reviewed["proposal"]["status"], "in_review");
    let vote = w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    assert_eq!(vote["vote"]["agent_id"], "bob");

    let got = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "include_content": true}),
        &w.reviewer,
    );
    assert_eq!(got["content"], PATCH);
    assert_eq!(got["revisions"].as_array().expect("array").len(), 1);

    let events = w.ok("events.list", json!({}), &w.host);
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(
        kinds,
        [
            "agent.registered",
            "agent.registered",
            "task.created",
            "proposal.created",
            "proposal.review_requested",
            "vote.cast"
        ]
    );
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
}

#[test]
fn an_unknown_key_is_refused_by_name_and_changes_nothing() {
    let w = World::new();
    let err = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "x", "summary_md": "y", "patch": PATCH, "status": "applied"}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "status");
}

#[test]
fn agent_register_creates_updates_disables_and_a_no_op_writes_nothing() {
    let w = World::new();
    let out = w.ok(
        "agent.register",
        json!({"agent_id": "carol", "roles": ["security", "reviewer"], "display_name": "  Carol  "}),
        &w.host,
    );
    assert_eq!(out["created"], true);
    assert_eq!(out["agent"]["id"], "carol");
    assert_eq!(out["agent"]["roles"], json!(["reviewer", "security"]));
    assert_eq!(out["agent"]["enabled"], true);
    assert_eq!(out["agent"]["display_name"], "Carol");
    let e = w.last_event();
    assert_eq!(e["kind"], "agent.registered");
    assert_eq!(e["subject"], "carol");
    assert_eq!(e["actor"], json!({"id": "host", "kind": "orchestrator"}));
    assert_eq!(
        e["data"],
        json!({"roles": ["reviewer", "security"], "enabled": true})
    );

    // The same settings again (roles in another order): no row changes, no event.
    let before = fingerprint(w.dir.path());
    let again = w.ok(
        "agent.register",
        json!({"agent_id": "carol", "roles": ["reviewer", "security"], "display_name": "Carol"}),
        &w.host,
    );
    assert_eq!(again["created"], false);
    assert_eq!(again["agent"], out["agent"]);
    assert_eq!(
        fingerprint(w.dir.path()),
        before,
        "a no-op re-register wrote"
    );

    // New roles: an update event naming the previous ones.
    let events = w.rows("events");
    let upd = w.ok(
        "agent.register",
        json!({"agent_id": "carol", "roles": ["reviewer"], "display_name": "Carol"}),
        &w.host,
    );
    assert_eq!(upd["created"], false);
    assert_eq!(upd["agent"]["roles"], json!(["reviewer"]));
    assert_eq!(w.rows("events"), events + 1);
    let e = w.last_event();
    assert_eq!(e["kind"], "agent.updated");
    assert_eq!(
        e["data"],
        json!({"roles": ["reviewer"], "enabled": true,
               "previous": {"roles": ["reviewer", "security"], "enabled": true}})
    );

    // Disable: the agent can no longer propose or vote.
    let off = w.ok(
        "agent.register",
        json!({"agent_id": "carol", "roles": ["reviewer"], "enabled": false, "display_name": "Carol"}),
        &w.host,
    );
    assert_eq!(off["agent"]["enabled"], false);
    let e = w.last_event();
    assert_eq!(e["kind"], "agent.updated");
    assert_eq!(e["data"]["enabled"], false);
    assert_eq!(e["data"]["previous"]["enabled"], true);
    let carol = Actor::agent(id("carol"));
    let err = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "x", "summary_md": "y", "patch": PATCH}),
        &carol,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "disabled");

    // Enable again: it may propose.
    w.ok(
        "agent.register",
        json!({"agent_id": "carol", "roles": ["reviewer"], "enabled": true}),
        &w.host,
    );
    let made = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "x", "summary_md": "y", "patch": PATCH}),
        &carol,
    );
    assert_eq!(made["proposal"]["author"], "carol");
    let agents = w.rows("agents");
    assert_eq!(agents, 3, "alice, bob, carol: one row each");
}

#[test]
fn task_create_with_and_without_an_id() {
    let w = World::new();
    let out = w.ok(
        "task.create",
        json!({"task_id": "t2", "title": "  Second  ", "summary_md": " About it. "}),
        &w.host,
    );
    assert_eq!(out["task"]["id"], "t2");
    assert_eq!(out["task"]["title"], "Second");
    assert_eq!(out["task"]["summary_md"], "About it.");
    assert_eq!(
        out["task"]["created_by"],
        json!({"id": "host", "kind": "orchestrator"})
    );
    let e = w.last_event();
    assert_eq!(e["kind"], "task.created");
    assert_eq!(e["subject"], "t2");
    assert_eq!(e["data"], json!({"title": "Second"}));

    // A person may create one too; without an id one is generated.
    let human = Actor::human(id("hana"));
    let a = str_of(&w.ok("task.create", json!({"title": "A"}), &human)["task"]["id"]);
    let b = str_of(&w.ok("task.create", json!({"title": "B"}), &human)["task"]["id"]);
    assert!(a.starts_with("task-") && b.starts_with("task-"), "{a} {b}");
    assert_eq!(a.len(), "task-".len() + 26);
    assert!(a < b, "generated ids sort in creation order: {a} {b}");
    assert!(Id::new(a.clone()).is_ok());

    let err = w.refused(
        "task.create",
        json!({"task_id": "t2", "title": "again"}),
        &w.host,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details(), &json!({"kind": "task", "id": "t2"}));
    let err = w.refused(
        "task.create",
        json!({"task_id": "t3", "title": "by an agent"}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(
        err.details()["allowed_kinds"],
        json!(["orchestrator", "human"])
    );
    // A proposal for a task that does not exist.
    let err = w.refused(
        "proposal.create",
        json!({"task_id": "t9", "title": "x", "summary_md": "y", "patch": PATCH}),
        &w.author,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "task", "id": "t9"}));
}

#[test]
fn proposal_create_with_a_patch_stores_revision_one() {
    let w = World::new();
    let out = w.ok(
        "proposal.create",
        json!({
            "task_id": "t1", "title": "  Say hello ", "summary_md": "Greets.\n", "risk": "high",
            "patch": PATCH,
            "affected_resources": ["file:hello.txt", "directory:.", "file:hello.txt"],
        }),
        &w.author,
    );
    let p = &out["proposal"];
    let pid = str_of(&p["id"]);
    assert!(pid.starts_with("prop-"), "{pid}");
    assert_eq!(p["task_id"], "t1");
    assert_eq!(p["author"], "alice");
    assert_eq!(p["title"], "Say hello");
    assert_eq!(p["summary_md"], "Greets.");
    assert_eq!(p["risk"], "high");
    assert_eq!(p["status"], "pending");
    assert_eq!(p["latest_revision"], 1);
    assert!(p.get("seq").is_none(), "the keyset column is internal");
    let r = &out["revision"];
    assert_eq!(r["number"], 1);
    assert_eq!(r["format"], "patch");
    assert_eq!(
        r["digest"],
        roundtable::Digest::of(PATCH.as_bytes()).to_string()
    );
    assert_eq!(
        r["affected_resources"],
        json!(["directory:.", "file:hello.txt"])
    );
    assert_eq!(r["created_by"], json!({"id": "alice", "kind": "agent"}));
    assert!(str_of(&r["base_state"]).starts_with("state:sha256:"));
    assert!(str_of(&r["changeset_digest"]).starts_with("sha256:"));
    assert_eq!(r["note_md"], Value::Null);
    assert_eq!(
        r["changeset"],
        json!([{
            "path": "hello.txt", "operation": "modify", "other_path": null,
            "before": {"digest": roundtable::Digest::of(b"hello\n").to_string(), "executable": false, "size": null},
            "after": {"digest": roundtable::Digest::of(b"hello, world\n").to_string(), "executable": false, "size": 13},
        }])
    );
    let e = w.last_event();
    assert_eq!(e["kind"], "proposal.created");
    assert_eq!(e["subject"], pid.as_str());
    assert_eq!(e["proposal_id"], pid.as_str());
    assert_eq!(e["actor"], json!({"id": "alice", "kind": "agent"}));
    assert_eq!(
        e["data"],
        json!({"task_id": "t1", "risk": "high", "revision": 1, "format": "patch",
               "digest": r["digest"], "files": 1})
    );
    // The default risk is normal; the workspace is never written.
    assert_eq!(w.create()["proposal"]["risk"], "normal");
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read"),
        "hello\n"
    );
    // The same patch twice is stored once, beside the touched file's
    // content before and after (kept for rebase) and the diff rendered
    // from the changeset (what reviewers read).
    assert_eq!(w.rows("blobs"), 4);
    assert_eq!(w.rows("revisions"), 2);
}

#[test]
fn proposal_create_with_an_edit_plan() {
    let w = World::new();
    let out = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "Plan", "summary_md": "By plan.", "edit_plan": edit_plan()}),
        &w.author,
    );
    let r = &out["revision"];
    assert_eq!(r["format"], "edit_plan");
    assert_eq!(r["changeset"][0]["path"], "hello.txt");
    assert_eq!(r["changeset"][0]["operation"], "modify");
    assert_eq!(
        r["changeset"][0]["after"],
        json!({"digest": roundtable::Digest::of(b"hello, plan\n").to_string(), "executable": false, "size": 12})
    );
    assert_eq!(w.last_event()["data"]["format"], "edit_plan");
    let got = w.ok(
        "proposal.get",
        json!({"proposal_id": out["proposal"]["id"], "include_content": true}),
        &w.reviewer,
    );
    assert_eq!(
        got["content"],
        edit_plan(),
        "the plan comes back as an object"
    );
    assert_eq!(got["revision"]["digest"], r["digest"]);
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("hello.txt")).expect("read"),
        "hello\n"
    );
}

#[test]
fn attach_patch_adds_a_revision_and_keeps_the_old_one() {
    let w = World::new();
    let created = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "x", "summary_md": "y", "patch": PATCH,
               "affected_resources": ["file:hello.txt"]}),
        &w.author,
    );
    let pid = str_of(&created["proposal"]["id"]);
    let r1 = created["revision"].clone();
    let out = w.ok(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": PATCH2, "note_md": " Shorter. "}),
        &w.author,
    );
    assert_eq!(out["proposal"]["latest_revision"], 2);
    assert_eq!(out["proposal"]["status"], "pending");
    assert_eq!(out["revision"]["number"], 2);
    assert_eq!(out["revision"]["note_md"], "Shorter.");
    assert_eq!(
        out["revision"]["affected_resources"],
        json!(["file:hello.txt"]),
        "carried over from revision 1"
    );
    assert_eq!(
        out["revision"]["digest"],
        roundtable::Digest::of(PATCH2.as_bytes()).to_string()
    );
    let e = w.last_event();
    assert_eq!(e["kind"], "proposal.revised");
    assert_eq!(e["proposal_id"], pid.as_str());
    assert_eq!(
        e["data"],
        json!({"revision": 2, "previous_revision": 1, "format": "patch",
               "digest": out["revision"]["digest"], "files": 1})
    );
    // Revision 1 is unchanged.
    let old = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "revision": 1, "include_content": true}),
        &w.author,
    );
    assert_eq!(old["revision"], r1);
    assert_eq!(old["content"], PATCH);

    // In review it may still be revised: by edit plan, with new resources.
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    let third = w.ok(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 2, "edit_plan": edit_plan(),
               "affected_resources": ["directory:."]}),
        &w.author,
    );
    assert_eq!(third["proposal"]["latest_revision"], 3);
    assert_eq!(third["proposal"]["status"], "in_review");
    assert_eq!(third["revision"]["format"], "edit_plan");
    assert_eq!(
        third["revision"]["affected_resources"],
        json!(["directory:."])
    );
    assert_eq!(w.rows("revisions"), 3);
}

#[test]
fn proposal_get_returns_a_chosen_revision_and_content_on_request() {
    let w = World::new();
    let pid = w.proposal();
    w.revise(&pid, 1, PATCH2);
    let latest = w.ok("proposal.get", json!({"proposal_id": pid}), &w.reviewer);
    assert_eq!(latest["proposal"]["id"], pid.as_str());
    assert_eq!(latest["revision"]["number"], 2);
    assert!(latest.get("content").is_none(), "content only on request");
    let history = latest["revisions"].as_array().expect("revisions");
    let numbers: Vec<u64> = history
        .iter()
        .map(|r| r["number"].as_u64().expect("n"))
        .collect();
    assert_eq!(numbers, [1, 2]);
    assert_eq!(
        history[0]["digest"],
        roundtable::Digest::of(PATCH.as_bytes()).to_string()
    );
    assert_eq!(history[1]["format"], "patch");
    let first = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "revision": 1, "include_content": true}),
        &w.host,
    );
    assert_eq!(first["revision"]["number"], 1);
    assert_eq!(first["content"], PATCH);
    let no = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "include_content": false}),
        &w.host,
    );
    assert!(no.get("content").is_none());

    let err = w.refused(
        "proposal.get",
        json!({"proposal_id": pid, "revision": 3}),
        &w.host,
        ErrorCode::NotFound,
    );
    assert_eq!(
        err.details(),
        &json!({"kind": "revision", "id": format!("{pid}@3")})
    );
    let err = w.refused(
        "proposal.get",
        json!({"proposal_id": "nope"}),
        &w.host,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "proposal", "id": "nope"}));
    let err = w.refused(
        "proposal.get",
        json!({"proposal_id": pid, "revision": 0}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "revision");
}

#[test]
fn proposal_list_filters_pages_and_continues_with_the_cursor() {
    let w = World::new();
    w.ok(
        "task.create",
        json!({"task_id": "t2", "title": "Other"}),
        &w.host,
    );
    let carol = w.agent("carol", &["author"]);
    let mk = |task: &str, who: &Actor| {
        str_of(
            &w.ok(
                "proposal.create",
                json!({"task_id": task, "title": "x", "summary_md": "y", "patch": PATCH}),
                who,
            )["proposal"]["id"],
        )
    };
    let a1 = mk("t1", &w.author);
    let a2 = mk("t2", &w.author);
    let c1 = mk("t1", &carol);
    let a3 = mk("t1", &w.author);
    let c2 = mk("t2", &carol);
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": a2}),
        &w.author,
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": c1}),
        &carol,
    );
    w.ok("proposal.withdraw", json!({"proposal_id": a3}), &w.author);
    let list = |args: Value| {
        let page = w.ok("proposal.list", args, &w.reviewer);
        (ids_of(&page["proposals"]), page["next_cursor"].clone())
    };
    let (all, next) = list(json!({}));
    assert_eq!(
        all,
        [
            a1.as_str(),
            a2.as_str(),
            c1.as_str(),
            a3.as_str(),
            c2.as_str()
        ]
    );
    assert!(next.is_null());
    assert_eq!(
        list(json!({"task_id": "t1"})).0,
        [a1.as_str(), c1.as_str(), a3.as_str()]
    );
    assert_eq!(list(json!({"task_id": "t2"})).0, [a2.as_str(), c2.as_str()]);
    assert_eq!(
        list(json!({"author": "carol"})).0,
        [c1.as_str(), c2.as_str()]
    );
    assert_eq!(
        list(json!({"status": "in_review"})).0,
        [a2.as_str(), c1.as_str()]
    );
    assert_eq!(list(json!({"status": "withdrawn"})).0, [a3.as_str()]);
    assert_eq!(
        list(json!({"status": "pending"})).0,
        [a1.as_str(), c2.as_str()]
    );
    assert!(list(json!({"status": "applied"})).0.is_empty());
    assert_eq!(
        list(json!({"task_id": "t1", "author": "alice", "status": "pending"})).0,
        [a1.as_str()]
    );
    assert!(list(json!({"task_id": "t9"})).0.is_empty());
    // Pages of two, continued by cursor, filters kept.
    let (p1, c) = list(json!({"limit": 2}));
    assert_eq!(p1, [a1.as_str(), a2.as_str()]);
    let (p2, c) = list(json!({"limit": 2, "cursor": c}));
    assert_eq!(p2, [c1.as_str(), a3.as_str()]);
    let (p3, c) = list(json!({"limit": 2, "cursor": c}));
    assert_eq!(p3, [c2.as_str()]);
    assert!(c.is_null());
    let (f1, c) = list(json!({"author": "alice", "limit": 1}));
    assert_eq!(f1, [a1.as_str()]);
    let (f2, c) = list(json!({"author": "alice", "limit": 1, "cursor": c}));
    assert_eq!(f2, [a2.as_str()]);
    let (f3, c) = list(json!({"author": "alice", "limit": 1, "cursor": c}));
    assert_eq!(f3, [a3.as_str()]);
    assert!(c.is_null(), "no alice proposal after a3");
    // A full last page ends the listing: no cursor to an empty page.
    let (exact, c) = list(json!({"limit": 5}));
    assert_eq!(exact.len(), 5);
    assert!(c.is_null());
    let page = w.ok("proposal.list", json!({"limit": 1}), &w.host);
    assert!(page["proposals"][0].get("seq").is_none());
}

#[test]
fn request_review_moves_pending_to_in_review() {
    let w = World::new();
    let pid = w.proposal();
    let out = w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    assert_eq!(out["proposal"]["status"], "in_review");
    let e = w.last_event();
    assert_eq!(e["kind"], "proposal.review_requested");
    assert_eq!(
        e["data"],
        json!({"revision": 1, "from": "pending", "to": "in_review"})
    );
    // An orchestrator may ask too; another agent or a person may not.
    let other = w.proposal();
    for (actor, reason) in [
        (w.reviewer.clone(), "not_author"),
        (Actor::human(id("hana")), "wrong_kind"),
    ] {
        let err = w.refused(
            "proposal.request_review",
            json!({"proposal_id": other}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["reason"], reason);
    }
    let out = w.ok(
        "proposal.request_review",
        json!({"proposal_id": other}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "in_review");
    assert_eq!(
        w.last_event()["actor"],
        json!({"id": "host", "kind": "orchestrator"})
    );
}

#[test]
fn withdraw_ends_a_pending_or_in_review_proposal() {
    let w = World::new();
    let pid = w.proposal();
    let out = w.ok(
        "proposal.withdraw",
        json!({"proposal_id": pid, "reason_md": "  Not needed. "}),
        &w.author,
    );
    assert_eq!(out["proposal"]["status"], "withdrawn");
    let e = w.last_event();
    assert_eq!(e["kind"], "proposal.withdrawn");
    assert_eq!(
        e["data"],
        json!({"reason_md": "Not needed.", "from": "pending", "to": "withdrawn"})
    );
    let reviewed = w.in_review();
    let err = w.refused(
        "proposal.withdraw",
        json!({"proposal_id": reviewed}),
        &w.reviewer,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["author"], "alice");
    let out = w.ok(
        "proposal.withdraw",
        json!({"proposal_id": reviewed}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "withdrawn");
    assert_eq!(w.last_event()["data"]["from"], "in_review");
    assert_eq!(w.last_event()["data"]["reason_md"], Value::Null);
}

#[test]
fn patch_reject_rejects_with_a_decision_on_the_latest_revision() {
    let w = World::new();
    let pid = w.in_review();
    w.revise(&pid, 1, PATCH2);
    let human = Actor::human(id("hana"));
    let out = w.ok(
        "patch.reject",
        json!({"proposal_id": pid, "reason_md": " Too broad. "}),
        &human,
    );
    assert_eq!(out["proposal"]["status"], "rejected");
    let d = &out["decision"];
    assert!(str_of(&d["id"]).starts_with("dec-"));
    assert_eq!(d["proposal_id"], pid.as_str());
    assert_eq!(d["revision"], 2);
    assert_eq!(d["decision"], "reject");
    assert_eq!(d["reason_md"], "Too broad.");
    assert_eq!(d["decided_by"], json!({"id": "hana", "kind": "human"}));
    let e = w.last_event();
    assert_eq!(e["kind"], "proposal.rejected");
    assert_eq!(
        e["data"],
        json!({"revision": 2, "decision_id": d["id"], "reason_md": "Too broad.",
               "from": "in_review", "to": "rejected"})
    );
    assert_eq!(w.rows("decisions"), 1);
    // An orchestrator may reject a pending one; an agent may not reject.
    let other = w.proposal();
    let err = w.refused(
        "patch.reject",
        json!({"proposal_id": other, "reason_md": "no"}),
        &w.reviewer,
        ErrorCode::Forbidden,
    );
    assert_eq!(
        err.details()["allowed_kinds"],
        json!(["orchestrator", "human"])
    );
    let err = w.refused(
        "patch.reject",
        json!({"proposal_id": other, "reason_md": " \n "}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "reason_md");
    let err = w.refused(
        "patch.reject",
        json!({"proposal_id": other}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "reason_md");
    let out = w.ok(
        "patch.reject",
        json!({"proposal_id": other, "reason_md": "no"}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "rejected");
    assert_eq!(out["decision"]["revision"], 1);
}

#[test]
fn vote_cast_records_votes_on_the_latest_revision() {
    let w = World::new();
    let pid = w.in_review();
    let out = w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve_with_notes", "reason_md": " Nit. "}),
        &w.reviewer,
    );
    let v = &out["vote"];
    assert!(str_of(&v["id"]).starts_with("vote-"));
    assert_eq!(v["proposal_id"], pid.as_str());
    assert_eq!(v["revision"], 1);
    assert_eq!(v["agent_id"], "bob");
    assert_eq!(v["vote"], "approve_with_notes");
    assert_eq!(v["reason_md"], "Nit.");
    let e = w.last_event();
    assert_eq!(e["kind"], "vote.cast");
    assert_eq!(e["subject"], v["id"]);
    assert_eq!(e["proposal_id"], pid.as_str());
    assert_eq!(
        e["data"],
        json!({"revision": 1, "vote": "approve_with_notes", "agent_id": "bob"})
    );
    // Every vote value is accepted; the blocking ones need a reason.
    for vote in ["approve", "abstain"] {
        w.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": vote}),
            &w.reviewer,
        );
    }
    for vote in ["revise", "reject", "veto"] {
        let err = w.refused(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": vote}),
            &w.reviewer,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "reason_md", "{vote}");
        let out = w.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": vote, "reason_md": "because"}),
            &w.reviewer,
        );
        assert_eq!(out["vote"]["vote"], vote);
    }
    assert_eq!(w.rows("votes"), 6, "votes are appended, never replaced");
    // A person or orchestrator is not an agent and cannot vote.
    for actor in [Actor::human(id("hana")), w.host.clone()] {
        let err = w.refused(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["allowed_kinds"], json!(["agent"]));
    }
    let err = w.refused(
        "vote.cast",
        json!({"proposal_id": "nope", "revision": 1, "vote": "approve"}),
        &w.reviewer,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "proposal", "id": "nope"}));
}

#[test]
fn vote_list_pages_a_proposals_votes_by_revision() {
    let w = World::new();
    let pid = w.in_review();
    let carol = w.agent("carol", &["reviewer"]);
    let cast = |who: &Actor, rev: u32, vote: &str| {
        str_of(
            &w.ok(
                "vote.cast",
                json!({"proposal_id": pid, "revision": rev, "vote": vote}),
                who,
            )["vote"]["id"],
        )
    };
    let v1 = cast(&w.reviewer, 1, "approve");
    let v2 = cast(&carol, 1, "abstain");
    w.revise(&pid, 1, PATCH2);
    let v3 = cast(&carol, 2, "approve");
    // Votes on another proposal are not listed.
    let other = w.in_review();
    w.ok(
        "vote.cast",
        json!({"proposal_id": other, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let list = |args: Value| {
        let page = w.ok("vote.list", args, &w.author);
        (ids_of(&page["votes"]), page["next_cursor"].clone())
    };
    let (all, c) = list(json!({"proposal_id": pid}));
    assert_eq!(all, [v1.as_str(), v2.as_str(), v3.as_str()]);
    assert!(c.is_null());
    assert_eq!(
        list(json!({"proposal_id": pid, "revision": 1})).0,
        [v1.as_str(), v2.as_str()]
    );
    assert_eq!(
        list(json!({"proposal_id": pid, "revision": 2})).0,
        [v3.as_str()]
    );
    assert!(list(json!({"proposal_id": pid, "revision": 3}))
        .0
        .is_empty());
    let (p1, c) = list(json!({"proposal_id": pid, "limit": 2}));
    assert_eq!(p1, [v1.as_str(), v2.as_str()]);
    let (p2, c) = list(json!({"proposal_id": pid, "limit": 2, "cursor": c}));
    assert_eq!(p2, [v3.as_str()]);
    assert!(c.is_null());
    let page = w.ok("vote.list", json!({"proposal_id": pid}), &w.host);
    assert_eq!(page["votes"][0]["agent_id"], "bob");
    assert!(page["votes"][0].get("seq").is_none());

    let err = w.refused(
        "vote.list",
        json!({"proposal_id": pid, "cursor": "not-a-cursor"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "cursor");
    let err = w.refused(
        "vote.list",
        json!({"proposal_id": "nope"}),
        &w.host,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details()["kind"], "proposal");
    let err = w.refused(
        "vote.list",
        json!({"proposal_id": pid, "limit": 201}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "limit");
}

#[test]
fn decision_record_is_evidence_that_leaves_the_status_alone() {
    let w = World::new();
    let pid = w.proposal();
    let out = w.ok(
        "decision.record",
        json!({"proposal_id": pid, "revision": 1, "decision": "accept", "reason_md": "Good."}),
        &w.host,
    );
    let d = &out["decision"];
    assert!(str_of(&d["id"]).starts_with("dec-"));
    assert_eq!(d["decision"], "accept");
    assert_eq!(d["revision"], 1);
    assert_eq!(d["reason_md"], "Good.");
    assert_eq!(
        d["decided_by"],
        json!({"id": "host", "kind": "orchestrator"})
    );
    let e = w.last_event();
    assert_eq!(e["kind"], "decision.recorded");
    assert_eq!(e["subject"], d["id"]);
    assert_eq!(e["data"], json!({"revision": 1, "decision": "accept"}));
    let got = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert_eq!(got["proposal"]["status"], "pending");
    // A person may decide (in review too); an agent may not.
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    let out = w.ok(
        "decision.record",
        json!({"proposal_id": pid, "revision": 1, "decision": "defer", "reason_md": "Later."}),
        &Actor::human(id("hana")),
    );
    assert_eq!(out["decision"]["decision"], "defer");
    let err = w.refused(
        "decision.record",
        json!({"proposal_id": pid, "revision": 1, "decision": "accept", "reason_md": "me"}),
        &w.reviewer,
        ErrorCode::Forbidden,
    );
    assert_eq!(
        err.details()["actor"],
        json!({"id": "bob", "kind": "agent"})
    );
    let err = w.refused(
        "decision.record",
        json!({"proposal_id": pid, "revision": 1, "decision": "maybe", "reason_md": "?"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "decision");
    let err = w.refused(
        "decision.record",
        json!({"proposal_id": pid, "revision": 2, "decision": "accept", "reason_md": "x"}),
        &w.host,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details()["id"], format!("{pid}@2"));
    assert_eq!(w.rows("decisions"), 2);
}

#[test]
fn security_review_by_a_person_or_a_security_agent() {
    let w = World::new();
    let pid = w.proposal();
    let human = Actor::human(id("hana"));
    let out = w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &human,
    );
    let s = &out["security_review"];
    assert!(str_of(&s["id"]).starts_with("sec-"));
    assert_eq!(s["verdict"], "pass");
    assert_eq!(s["revision"], 1);
    assert_eq!(s["note_md"], Value::Null);
    assert_eq!(s["reviewer"], json!({"id": "hana", "kind": "human"}));
    let e = w.last_event();
    assert_eq!(e["kind"], "security.reviewed");
    assert_eq!(e["data"], json!({"revision": 1, "verdict": "pass"}));

    let sec = w.agent("sam", &["security"]);
    let err = w.refused(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "fail"}),
        &sec,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "note_md");
    let out = w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "fail", "note_md": "Leaks a token."}),
        &sec,
    );
    assert_eq!(out["security_review"]["verdict"], "fail");
    assert_eq!(out["security_review"]["note_md"], "Leaks a token.");
    assert_eq!(
        out["security_review"]["reviewer"],
        json!({"id": "sam", "kind": "agent"})
    );

    // An agent without the role, the author with the role, an orchestrator.
    let err = w.refused(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &w.reviewer,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "missing_role");
    assert_eq!(err.details()["required_role"], "security");
    w.ok(
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author", "security"]}),
        &w.host,
    );
    let err = w.refused(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "author");
    let err = w.refused(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &w.host,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["allowed_kinds"], json!(["human", "agent"]));
    let err = w.refused(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "ok"}),
        &human,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "verdict");
    assert_eq!(w.rows("security_reviews"), 2);
}

#[test]
fn human_approval_is_requested_by_the_author_and_granted_by_a_person() {
    let w = World::new();
    let pid = w.in_review();
    let out = w.ok(
        "human.request_approval",
        json!({"proposal_id": pid, "revision": 1, "reason_md": "Touches prod."}),
        &w.author,
    );
    let req = &out["request"];
    let req_id = str_of(&req["id"]);
    assert!(req_id.starts_with("hreq-"));
    assert_eq!(req["revision"], 1);
    assert_eq!(req["reason_md"], "Touches prod.");
    assert_eq!(req["requested_by"], json!({"id": "alice", "kind": "agent"}));
    let e = w.last_event();
    assert_eq!(e["kind"], "human.approval_requested");
    assert_eq!(e["subject"], req_id.as_str());
    assert_eq!(e["data"], json!({"revision": 1}));
    // The orchestrator may ask; another agent or a person may not.
    let by_host = w.ok(
        "human.request_approval",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    assert_eq!(by_host["request"]["reason_md"], Value::Null);
    for actor in [w.reviewer.clone(), Actor::human(id("hana"))] {
        w.refused(
            "human.request_approval",
            json!({"proposal_id": pid, "revision": 1}),
            &actor,
            ErrorCode::Forbidden,
        );
    }
    assert_eq!(w.rows("human_approval_requests"), 2);

    let hana = Actor::human(id("hana"));
    let out = w.ok(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1, "request_id": req_id, "note_md": "OK by me."}),
        &hana,
    );
    let a = &out["approval"];
    assert!(str_of(&a["id"]).starts_with("happ-"));
    assert_eq!(a["human_id"], "hana");
    assert_eq!(a["request_id"], req_id.as_str());
    assert_eq!(a["revision"], 1);
    assert_eq!(a["note_md"], "OK by me.");
    let e = w.last_event();
    assert_eq!(e["kind"], "human.approved");
    assert_eq!(e["actor"], json!({"id": "hana", "kind": "human"}));
    assert_eq!(e["data"], json!({"revision": 1, "request_id": req_id}));
    // Without a request.
    let out = w.ok(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1}),
        &hana,
    );
    assert_eq!(out["approval"]["request_id"], Value::Null);

    // Only people approve.
    for actor in [w.author.clone(), w.reviewer.clone(), w.host.clone()] {
        let err = w.refused(
            "human.approve",
            json!({"proposal_id": pid, "revision": 1}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["allowed_kinds"], json!(["human"]));
    }
    let err = w.refused(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1, "request_id": "hreq-nope"}),
        &hana,
        ErrorCode::NotFound,
    );
    assert_eq!(
        err.details(),
        &json!({"kind": "approval request", "id": "hreq-nope"})
    );
    // A request for revision 1 does not answer for revision 2.
    w.revise(&pid, 1, PATCH2);
    let err = w.refused(
        "human.approve",
        json!({"proposal_id": pid, "revision": 2, "request_id": req_id}),
        &hana,
        ErrorCode::Conflict,
    );
    assert_eq!(
        err.details(),
        &json!({"request_id": req_id, "proposal_id": pid, "revision": 1})
    );
    // Nor does one for another proposal.
    let other = w.proposal();
    let err = w.refused(
        "human.approve",
        json!({"proposal_id": other, "revision": 1, "request_id": req_id}),
        &hana,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["proposal_id"], pid.as_str());
    assert_eq!(w.rows("human_approvals"), 2);
}

#[test]
fn test_record_is_for_the_orchestrator() {
    let w = World::new();
    let pid = w.proposal();
    let out = w.ok(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": " unit ", "status": "passed",
               "duration_ms": 1234, "note_md": "42 tests"}),
        &w.host,
    );
    let t = &out["test_result"];
    assert!(str_of(&t["id"]).starts_with("test-"));
    assert_eq!(t["name"], "unit");
    assert_eq!(t["status"], "passed");
    assert_eq!(t["duration_ms"], 1234);
    assert_eq!(t["note_md"], "42 tests");
    assert_eq!(
        t["recorded_by"],
        json!({"id": "host", "kind": "orchestrator"})
    );
    let e = w.last_event();
    assert_eq!(e["kind"], "test.recorded");
    assert_eq!(
        e["data"],
        json!({"revision": 1, "name": "unit", "status": "passed"})
    );
    for status in ["failed", "skipped", "errored"] {
        let out = w.ok(
            "test.record",
            json!({"proposal_id": pid, "revision": 1, "name": "lint", "status": status}),
            &w.host,
        );
        assert_eq!(out["test_result"]["status"], status);
        assert_eq!(out["test_result"]["duration_ms"], Value::Null);
    }
    for actor in [w.author.clone(), Actor::human(id("hana"))] {
        let err = w.refused(
            "test.record",
            json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["allowed_kinds"], json!(["orchestrator"]));
    }
    let err = w.refused(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "green"}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "status");
    let err = w.refused(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed", "duration_ms": -1}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "duration_ms");
    let err = w.refused(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed",
               "duration_ms": u64::MAX}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "duration_ms");
    assert_eq!(w.rows("test_results"), 4);
}

#[test]
fn events_list_reads_after_since_seq_a_page_at_a_time() {
    let w = World::new();
    let p1 = w.proposal();
    let p2 = w.proposal();
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": p1}),
        &w.author,
    );
    let all = w.events();
    assert_eq!(all.len(), 6);
    let seqs: Vec<i64> = all
        .iter()
        .map(|e| e["seq"].as_i64().expect("seq"))
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    for pair in all.windows(2) {
        assert_eq!(pair[1]["prev_digest"], pair[0]["digest"]);
    }
    assert_eq!(all[0]["prev_digest"], roundtable::store::GENESIS_DIGEST);
    assert_eq!(
        all[0]["actor"],
        json!({"id": "host", "kind": "orchestrator"})
    );
    assert!(all[0]["at"].is_string());

    let page = |args: Value| {
        let out = w.ok("events.list", args, &w.reviewer);
        let seqs: Vec<i64> = out["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["seq"].as_i64().expect("seq"))
            .collect();
        (seqs, out["next_since_seq"].clone())
    };
    assert_eq!(page(json!({"since_seq": 4})), (vec![5, 6], Value::Null));
    assert_eq!(page(json!({"since_seq": 6})), (vec![], Value::Null));
    assert_eq!(page(json!({"since_seq": 600})), (vec![], Value::Null));
    assert_eq!(page(json!({"limit": 4})), (vec![1, 2, 3, 4], json!(4)));
    assert_eq!(
        page(json!({"since_seq": 4, "limit": 2})),
        (vec![5, 6], Value::Null)
    );
    assert_eq!(
        page(json!({"since_seq": 1, "limit": 2})),
        (vec![2, 3], json!(3))
    );
    assert_eq!(page(json!({"proposal_id": p1})), (vec![4, 6], Value::Null));
    assert_eq!(page(json!({"proposal_id": p2})), (vec![5], Value::Null));
    assert_eq!(
        page(json!({"proposal_id": p1, "since_seq": 4})),
        (vec![6], Value::Null)
    );
    assert_eq!(
        page(json!({"proposal_id": p1, "limit": 1})),
        (vec![4], json!(4))
    );
    assert_eq!(page(json!({"proposal_id": "nope"})), (vec![], Value::Null));
    for (args, field) in [
        (json!({"limit": 0}), "limit"),
        (json!({"limit": 1001}), "limit"),
        (json!({"since_seq": -1}), "since_seq"),
        (json!({"since_seq": u64::MAX}), "since_seq"),
        (json!({"since_seq": "4"}), "since_seq"),
        (json!({"proposal_id": "a b"}), "proposal_id"),
        (json!({"cursor": "x"}), "cursor"),
    ] {
        let err = w.refused(
            "events.list",
            args.clone(),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], field, "{args}");
    }
}

#[test]
fn events_verify_accepts_the_chain_and_detects_tampering() {
    // An empty log verifies.
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("open");
    let host = Actor::orchestrator(id("host"));
    let report = empty
        .call("events.verify", json!({}), &host)
        .expect("verify");
    assert_eq!(
        report,
        json!({"valid": true, "checked": 0, "last_seq": 0,
               "head_digest": roundtable::store::GENESIS_DIGEST,
               "first_invalid_seq": null, "reason": null,
               "expected_head_found": null, "records_checked": 0, "unrecorded": []})
    );
    let err = empty
        .call("events.verify", json!({"full": true}), &host)
        .expect_err("unknown key");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(err.details()["field"], "full");

    let w = World::new();
    w.in_review();
    let events = w.events();
    let report = w.ok("events.verify", json!({}), &w.reviewer);
    assert_eq!(report["valid"], true);
    assert_eq!(report["checked"], 5);
    assert_eq!(report["last_seq"], 5);
    assert_eq!(report["head_digest"], events[4]["digest"]);
    assert_eq!(report["first_invalid_seq"], Value::Null);

    // Rewrite event 3's data behind the store's back.
    let mut db = super::support::store_db(w.dir.path());
    db.drop_trigger("events_append_only_u", "events");
    db.batch("UPDATE events SET data = '{\"title\":\"Forged\"}' WHERE seq = 3");
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], false);
    assert_eq!(report["first_invalid_seq"], 3);
    assert_eq!(report["checked"], 3);
    assert_eq!(report["last_seq"], 2, "the last event that verified");
    assert_eq!(report["head_digest"], events[1]["digest"]);
    assert_eq!(
        report["reason"],
        "digest does not match the event's content"
    );

    // Restore it; then forge a digest: the next event no longer links.
    db.execute(
        "UPDATE events SET data = ?1 WHERE seq = 3",
        &[&serde_json::to_string(&events[2]["data"]).expect("json")],
    );
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
    db.execute(
        "UPDATE events SET digest = ?1 WHERE seq = 4",
        &[roundtable::store::GENESIS_DIGEST],
    );
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], false);
    assert_eq!(report["first_invalid_seq"], 4);
    db.execute(
        "UPDATE events SET digest = ?1 WHERE seq = 4",
        &[&str_of(&events[3]["digest"])],
    );
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);

    // Delete an event: the gap is found.
    db.drop_trigger("events_append_only_d", "events");
    db.batch("DELETE FROM events WHERE seq = 2");
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], false);
    assert_eq!(report["first_invalid_seq"], 3);
    assert_eq!(report["reason"], "seq 3 follows 1");
}

/// Recompute the chain from event `from` on, as someone with write access
/// to the store can: every digest and link is again consistent.
pub(crate) fn rechain(db: &mut super::support::TestDb, from: i64) {
    if super::support::postgres() {
        db.batch("DROP TRIGGER IF EXISTS events_append_only_u ON events");
    } else {
        db.batch("DROP TRIGGER IF EXISTS events_append_only_u");
    }
    let mut prev: String = if from == 1 {
        roundtable::store::GENESIS_DIGEST.to_owned()
    } else {
        db.texts(&format!(
            "SELECT digest FROM events WHERE seq = {}",
            from - 1
        ))[0]
            .clone()
            .expect("previous event")
    };
    let rows = db.rows(&format!(
        "SELECT CAST(seq AS TEXT), kind, actor_kind, actor_id, subject, proposal_id, data, CAST(at AS TEXT)
         FROM events WHERE seq >= {from} ORDER BY events.seq"
    ));
    for row in rows {
        let text = |i: usize| row[i].clone().expect("not NULL");
        let (seq, at): (i64, i64) = (text(0).parse().expect("seq"), text(7).parse().expect("at"));
        let canonical = roundtable::json::canonical(&json!({
            "seq": seq, "kind": text(1), "actor": {"kind": text(2), "id": text(3)},
            "subject": text(4), "proposal_id": row[5], "data": text(6), "at": at,
            "prev_digest": prev,
        }));
        let digest = roundtable::Digest::of(canonical.as_bytes())
            .to_string()
            .replacen("blob:", "", 1);
        db.execute(
            &format!("UPDATE events SET prev_digest = ?1, digest = ?2 WHERE seq = {seq}"),
            &[&prev, &digest],
        );
        prev = digest;
    }
}

/// Rewriting events and recomputing the chain, or deleting the last
/// events, still verifies on its own; against a head the host kept
/// outside the store it does not.
#[test]
fn events_verify_against_an_expected_head_detects_a_rewritten_or_truncated_log() {
    let w = World::new();
    let pid = w.in_review();
    let kept = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(kept["valid"], true);
    let head = json!({"seq": kept["last_seq"], "digest": kept["head_digest"]});
    let report = w.ok("events.verify", json!({"expected_head": head}), &w.host);
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["expected_head_found"], true);
    // Later events do not disturb an earlier head.
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let report = w.ok("events.verify", json!({"expected_head": head}), &w.host);
    assert_eq!(report["valid"], true, "{report}");

    // Rewrite event 3 and recompute the chain: consistent in itself.
    let mut db = super::support::store_db(w.dir.path());
    db.drop_trigger("events_append_only_u", "events");
    db.batch("UPDATE events SET data = '{\"title\":\"Forged\"}' WHERE seq = 3");
    rechain(&mut db, 3);
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
    let report = w.ok("events.verify", json!({"expected_head": head}), &w.host);
    assert_eq!(report["valid"], false, "{report}");
    assert_eq!(report["expected_head_found"], false);
    assert_eq!(report["first_invalid_seq"], head["seq"]);
    assert!(
        str_of(&report["reason"]).contains("rewritten"),
        "{}",
        report["reason"]
    );

    // Truncated below the head: the chain that is left verifies alone.
    let w = World::new();
    w.in_review();
    let kept = w.ok("events.verify", json!({}), &w.host);
    let head = json!({"seq": kept["last_seq"], "digest": kept["head_digest"]});
    let mut db = super::support::store_db(w.dir.path());
    db.drop_trigger("events_append_only_d", "events");
    db.batch("DELETE FROM events WHERE seq >= 4");
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
    let report = w.ok("events.verify", json!({"expected_head": head}), &w.host);
    assert_eq!(report["valid"], false, "{report}");
    assert_eq!(report["expected_head_found"], false);
    assert_eq!(report["last_seq"], 3);
    assert!(
        str_of(&report["reason"]).contains("events were deleted"),
        "{}",
        report["reason"]
    );

    // A malformed head is refused naming the field; the empty log's head is seq 0.
    w.refused(
        "events.verify",
        json!({"expected_head": {"seq": 1, "digest": "sha256:nope"}}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    let report = w.ok(
        "events.verify",
        json!({"expected_head": {"seq": 0, "digest": roundtable::store::GENESIS_DIGEST}}),
        &w.host,
    );
    assert_eq!(report["expected_head_found"], true);
    // The published schema names the new argument.
    let tools = Engine::tools_json();
    let verify = tools
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "events.verify")
        .expect("events.verify");
    assert!(
        verify["input_schema"]["properties"]["expected_head"].is_object(),
        "{verify:#}"
    );
}

/// A vote inserted straight into the store (no `vote.cast` event) does not
/// count toward the policy, and `events.verify` names it.
#[test]
fn evidence_without_its_event_does_not_count_and_verify_reports_it() {
    let w = World::new();
    let pid = w.in_review();
    let approvals = |w: &World| {
        let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
        report["policy"]["requirements"]
            .as_array()
            .expect("requirements")
            .iter()
            .find(|r| r["id"] == "approvals")
            .expect("approvals")["status"]
            .clone()
    };
    assert_eq!(approvals(&w), "unsatisfied");
    let mut db = super::support::store_db(w.dir.path());
    db.execute(
        "INSERT INTO votes (id, proposal_id, revision, agent_id, vote, created_at) VALUES ('vote-forged', ?1, 1, 'bob', 'approve', 1)",
        &[&pid],
    );
    assert_eq!(
        approvals(&w),
        "unsatisfied",
        "an unrecorded vote counts for nothing"
    );
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], false, "{report}");
    assert_eq!(report["first_invalid_seq"], Value::Null);
    assert_eq!(
        report["unrecorded"],
        json!([{"kind": "vote", "id": "vote-forged", "proposal_id": pid}])
    );
    assert!(
        str_of(&report["reason"]).contains("vote vote-forged"),
        "{report}"
    );

    // The real vote counts and is recorded; every kind of evidence is
    // cross-checked against its event.
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    assert_eq!(approvals(&w), "satisfied");
    let human = Actor::human(id("hana"));
    w.ok(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1}),
        &human,
    );
    w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &human,
    );
    w.ok(
        "test.record",
        json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}),
        &w.host,
    );
    w.ok(
        "decision.record",
        json!({"proposal_id": pid, "revision": 1, "decision": "defer", "reason_md": "Later."}),
        &w.host,
    );
    w.ok(
        "patch.reject",
        json!({"proposal_id": pid, "reason_md": "No."}),
        &w.host,
    );
    db.try_batch("DELETE FROM votes WHERE id = 'vote-forged'")
        .expect_err("votes are immutable");
    db.drop_trigger("votes_immutable_d", "votes");
    db.batch("DELETE FROM votes WHERE id = 'vote-forged'");
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], true, "{report}");
    assert_eq!(report["records_checked"], 6, "{report}");
    // A recorded vote edited behind the store's back no longer matches its event.
    db.drop_trigger("votes_immutable_u", "votes");
    db.batch("UPDATE votes SET vote = 'veto'");
    let report = w.ok("events.verify", json!({}), &w.host);
    assert_eq!(report["valid"], false);
    assert_eq!(report["unrecorded"][0]["kind"], "vote");
}
