//! The server in-process over a byte pipe, speaking raw JSON-RPC lines as a
//! client does: both protocol eras, the filtered tool list, results and
//! refusals, and an actor that arguments cannot change.

use std::sync::Arc;

use roundtable::{Actor, Engine, EngineOptions, Id};
use roundtable_mcp::McpServer;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

mod common;
use common::*;

/// Send `requests` (one JSON-RPC message each) to a server acting as
/// `actor`; return the responses by id.
fn exchange(engine: Arc<Engine>, actor: &str, requests: &[Value]) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let actor = Actor::parse(actor).expect("actor");
    let requests = requests.to_vec();
    runtime.block_on(async move {
        use rmcp::ServiceExt;
        let (client, server) = tokio::io::duplex(1 << 20);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(async move {
            let running = McpServer::for_actor(engine, actor)
                .serve((server_read, server_write))
                .await
                .expect("serve");
            let _ = running.waiting().await;
        });
        let (client_read, mut client_write) = tokio::io::split(client);
        let expected = requests.iter().filter(|r| r.get("id").is_some()).count();
        for r in &requests {
            client_write
                .write_all(format!("{r}\n").as_bytes())
                .await
                .expect("write");
        }
        let mut lines = BufReader::new(client_read).lines();
        let mut responses = Vec::new();
        while responses.len() < expected {
            let line = lines.next_line().await.expect("read").expect("a response");
            responses.push(serde_json::from_str::<Value>(&line).expect("json"));
        }
        drop(client_write);
        serving.abort();
        responses.sort_by_key(|r| r["id"].as_i64());
        responses
    })
}

fn initialize() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    })
}

fn names(list: &Value) -> Vec<&str> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect()
}

#[test]
fn the_handshake_era_lists_the_agents_tools_and_runs_them() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let mut requests = initialize();
    requests.extend([
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "proposal.create",
            "arguments": {"task_id": "t1", "title": "Greet", "summary_md": "s", "patch": DIFF}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "patch.apply", "arguments": {"proposal_id": "p", "revision": 1}}}),
        // Naming another actor in the arguments is refused, not obeyed.
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "proposal.create",
            "arguments": {"task_id": "t1", "title": "G", "summary_md": "s", "patch": DIFF,
                          "actor": "orchestrator:host"}}}),
    ]);
    let r = exchange(Arc::clone(&engine), "agent:alice", &requests);
    assert_eq!(r[0]["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(r[0]["result"]["serverInfo"]["name"], "roundtable");
    let tools = names(&r[1]);
    assert!(tools.contains(&"proposal.create") && tools.contains(&"events.wait"));
    assert!(!tools.contains(&"patch.apply") && !tools.contains(&"agent.register"));
    let created = &r[2]["result"];
    assert_eq!(created["isError"], false, "{created}");
    assert_eq!(created["structuredContent"]["proposal"]["author"], "alice");
    let text: Value =
        serde_json::from_str(created["content"][0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(text, created["structuredContent"]);
    let refused = refusal(&r[3]["result"]);
    assert_eq!(refused["code"], "forbidden");
    assert_eq!(refused["details"]["reason"], "wrong_kind");
    let named = refusal(&r[4]["result"]);
    assert_eq!(named["code"], "invalid_argument");
    assert_eq!(named["details"]["field"], "actor");
    // Exactly one proposal exists, by alice.
    let host = Actor::orchestrator(Id::new("host").expect("id"));
    let list = engine
        .call("proposal.list", json!({}), &host)
        .expect("list");
    assert_eq!(list["proposals"].as_array().map(Vec::len), Some(1));
}

#[test]
fn the_stateless_era_discovers_and_calls_with_per_request_meta() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let r = exchange(
        engine,
        "orchestrator:host",
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta()}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta()}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": meta(),
                "name": "task.get", "arguments": {"task_id": "t1"}}}),
            // Without the per-request metadata the revision requires.
            json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {}}),
        ],
    );
    let versions = r[0]["result"]["supportedVersions"]
        .as_array()
        .expect("versions");
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")));
    assert!(r[0]["result"]["capabilities"]["tools"].is_object());
    let tools = names(&r[1]);
    assert!(tools.contains(&"patch.apply") && !tools.contains(&"proposal.create"));
    assert_eq!(
        r[2]["result"]["structuredContent"]["task"]["title"],
        "Greet"
    );
    assert!(r[3]["error"]["code"].is_i64(), "{}", r[3]);
}

/// Issue 32 item 1: a refusal reaches a client that checks
/// `structuredContent` against the tool's output schema (the TypeScript
/// SDK does so even on `isError` results) as a readable tool error: the
/// refusal JSON is the text content and there is no structured content
/// to mismatch the schema. The refused vote changes nothing.
#[test]
fn item1_refusals_readable_by_typescript_clients() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let mut requests = initialize();
    requests.extend([
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "proposal.create",
            "arguments": {"task_id": "t1", "title": "Greet", "summary_md": "s", "patch": DIFF}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ]);
    let r = exchange(Arc::clone(&engine), "agent:alice", &requests);
    let pid = r[1]["result"]["structuredContent"]["proposal"]["id"]
        .as_str()
        .expect("proposal id")
        .to_owned();
    let vote_schema = r[2]["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "vote.cast")
        .expect("vote.cast listed")["outputSchema"]
        .clone();
    assert!(vote_schema["required"]
        .as_array()
        .expect("required")
        .contains(&json!("vote")));

    let mut requests = initialize();
    requests.extend([
        // The author votes on its own proposal, in both protocol eras.
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "vote.cast",
            "arguments": {"proposal_id": pid, "revision": 1, "vote": "approve"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"_meta": meta(),
            "name": "vote.cast",
            "arguments": {"proposal_id": pid, "revision": 1, "vote": "approve"}}}),
    ]);
    let r = exchange(Arc::clone(&engine), "agent:alice", &requests);
    for response in &r[1..=2] {
        let body = refusal(&response["result"]);
        assert_eq!(body["code"], "forbidden", "{body}");
        assert_eq!(body["details"]["reason"], "author", "{body}");
        assert!(
            body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{body}"
        );
    }
    // Nothing changed: no vote was recorded.
    let host = Actor::orchestrator(Id::new("host").expect("id"));
    let votes = engine
        .call("vote.list", json!({"proposal_id": pid}), &host)
        .expect("votes");
    assert_eq!(votes["votes"].as_array().map(Vec::len), Some(0), "{votes}");
}
