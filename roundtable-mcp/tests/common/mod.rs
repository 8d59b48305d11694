//! What the MCP test binaries share: a scratch world and the refusal reader.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own subset

use std::sync::Arc;

use roundtable::{Actor, Engine, EngineOptions, Id};
use serde_json::{json, Value};

/// A one-line change to `hello.txt`.
pub const DIFF: &str = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n";

/// The orchestrator that sets each world up.
pub fn host() -> Actor {
    Actor::orchestrator(Id::new("host").expect("id"))
}

/// A scratch repository holding `hello.txt`, with `agents` registered as
/// authors and task t1, opened with `options`.
pub fn world(options: EngineOptions, agents: &[&str]) -> (tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hello.txt"), "hello\n").expect("write");
    let engine = Engine::open(dir.path(), options).expect("open");
    for agent in agents {
        engine
            .call(
                "agent.register",
                json!({"agent_id": agent, "roles": ["author"]}),
                &host(),
            )
            .expect("register");
    }
    engine
        .call(
            "task.create",
            json!({"task_id": "t1", "title": "Greet"}),
            &host(),
        )
        .expect("task");
    (dir, Arc::new(engine))
}

/// The refusal a `tools/call` result carries: a tool error whose only
/// content is the refusal JSON as text, with no `structuredContent` (which
/// a client would check against the tool's output schema).
pub fn refusal(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "not a refusal: {result}");
    assert!(
        result.get("structuredContent").is_none(),
        "a refusal carries no structured content: {result}"
    );
    let content = result["content"].as_array().expect("content");
    assert_eq!(content.len(), 1, "{result}");
    assert_eq!(content[0]["type"], "text");
    let body: Value =
        serde_json::from_str(content[0]["text"].as_str().expect("text")).expect("refusal JSON");
    let keys: Vec<&str> = body
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["code", "details", "message"], "{body}");
    body
}
