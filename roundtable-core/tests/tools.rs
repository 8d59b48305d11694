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

impl World {
    pub(crate) fn new() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("hello.txt"), "hello\n").expect("write");
        let engine = Engine::open(dir.path(), EngineOptions::default()).expect("open");
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
}

/// Every row of every table, as text: equal fingerprints mean an
/// unchanged store.
pub(crate) fn fingerprint(root: &Path) -> String {
    let db = rusqlite::Connection::open(root.join(".roundtable/store.db")).expect("open db");
    let mut tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("names");
    tables.retain(|t| !t.starts_with("sqlite_"));
    let mut out = String::new();
    for t in tables {
        let mut stmt = db.prepare(&format!("SELECT * FROM {t}")).expect("select");
        let n = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                let mut row = Vec::new();
                for i in 0..n {
                    row.push(format!("{:?}", r.get_ref(i)?));
                }
                Ok(row.join("|"))
            })
            .expect("rows");
        out.push_str(&format!("[{t}]\n"));
        for row in rows {
            out.push_str(&row.expect("row"));
            out.push('\n');
        }
    }
    out
}

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
