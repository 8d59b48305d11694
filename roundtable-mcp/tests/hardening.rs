//! The transports' edges (issue 32 items 4 and 6): what a client gets for
//! input the SDK never sees as a request (too large, not JSON, not a
//! JSON-RPC message, an `initialize` without its version, an unknown tool),
//! the HTTP listener's header timeout and `Origin` check, and a patch at the
//! engine's limit reaching the engine through both transports.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roundtable::{Actor, Engine, EngineOptions, Id};
use roundtable_mcp::{max_message_bytes, Tokens};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

mod common;
use common::*;

const TOKEN: &str = "tok-0123456789abcdef";

fn small_patch_limit() -> EngineOptions {
    EngineOptions {
        max_patch_bytes: 1024,
        ..EngineOptions::default()
    }
}

fn proposals(engine: &Engine) -> usize {
    let host = Actor::orchestrator(Id::new("host").expect("id"));
    engine
        .call("proposal.list", json!({}), &host)
        .expect("list")["proposals"]
        .as_array()
        .map_or(0, Vec::len)
}

fn create(id: i64, patch: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "proposal.create",
        "arguments": {"task_id": "t1", "title": "Greet", "summary_md": "s", "patch": patch}}})
}

fn initialize(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}})
}

// ---- stdio -------------------------------------------------------------

/// Write `lines` (raw bytes each, a newline added) to a server acting as
/// alice over newline-delimited JSON-RPC, after the handshake; return the
/// `expected` responses that follow the handshake's, in arrival order.
fn stdio(engine: Arc<Engine>, lines: Vec<Vec<u8>>, expected: usize) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let actor = Actor::parse("agent:alice").expect("actor");
    runtime.block_on(async move {
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(roundtable_mcp::serve_io(
            engine,
            actor,
            server_read,
            server_write,
        ));
        let (client_read, mut client_write) = tokio::io::split(client);
        let writer = tokio::spawn(async move {
            let mut all = vec![initialize(0).to_string().into_bytes()];
            all.push(
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
                    .to_string()
                    .into_bytes(),
            );
            all.extend(lines);
            for line in all {
                client_write.write_all(&line).await.expect("write");
                client_write.write_all(b"\n").await.expect("write");
            }
            client_write
        });
        let mut reader = BufReader::new(client_read).lines();
        let hello = reader.next_line().await.expect("read").expect("hello");
        let hello: Value = serde_json::from_str(&hello).expect("json");
        assert_eq!(hello["id"], 0, "{hello}");
        let mut responses = Vec::new();
        while responses.len() < expected {
            let line = tokio::time::timeout(Duration::from_secs(60), reader.next_line())
                .await
                .expect("a response in time")
                .expect("read")
                .expect("a response");
            responses.push(serde_json::from_str::<Value>(&line).expect("json"));
        }
        drop(writer.await.expect("writer"));
        serving.abort();
        responses
    })
}

fn line(v: &Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

// ---- HTTP --------------------------------------------------------------

/// A server on an ephemeral loopback port, serving `engine` with alice's
/// token, on a thread of its own for the rest of the test process.
fn http(engine: Arc<Engine>) -> (SocketAddr, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens");
    std::fs::write(&file, format!("{TOKEN} agent:alice\n")).expect("write");
    let tokens = Arc::new(Tokens::load(&file).expect("tokens"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let addr = "127.0.0.1:0".parse().expect("addr");
        let _ = roundtable_mcp::run_http(engine, addr, tokens, move |bound| {
            let _ = tx.send(bound);
        });
    });
    let addr = rx.recv_timeout(Duration::from_secs(30)).expect("bound");
    (addr, dir)
}

struct Reply {
    status: u16,
    body: Vec<u8>,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{e}: {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// POST `body` to /mcp with the usual MCP headers plus `extra`, on a
/// connection of its own.
fn post(addr: SocketAddr, body: &[u8], extra: &[(&str, &str)]) -> Reply {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n\
         Content-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    stream.write_all(head.as_bytes()).expect("head");
    // The server may answer (413) before taking the whole body.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {}", String::from_utf8_lossy(&raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    Reply {
        status,
        body: raw[split + 4..].to_vec(),
    }
}

fn authed() -> (&'static str, String) {
    ("Authorization", format!("Bearer {TOKEN}"))
}

fn post_authed(addr: SocketAddr, body: &[u8], extra: &[(&str, &str)]) -> Reply {
    let (name, value) = authed();
    let mut all = vec![(name, value.as_str())];
    all.extend_from_slice(extra);
    post(addr, body, &all)
}

// ---- item 4 ------------------------------------------------------------

#[test]
fn item4_header_read_timeout_drops_a_connection_that_never_finishes_its_headers() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let (addr, _tokens) = http(engine);
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("write");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut raw = Vec::new();
    // The server closes the connection (with or without a 408 first).
    let read = stream.read_to_end(&mut raw);
    let waited = started.elapsed();
    assert!(read.is_ok(), "the connection is closed, not held: {read:?}");
    assert!(
        waited < Duration::from_secs(15),
        "dropped after the timeout: {waited:?}"
    );
    let text = String::from_utf8_lossy(&raw);
    assert!(raw.is_empty() || text.starts_with("HTTP/1.1 408"), "{text}");
    // Meanwhile, and after, a complete request is served.
    assert_eq!(
        post_authed(addr, line(&initialize(1)).as_slice(), &[]).status,
        200
    );
}

#[test]
fn item4_a_foreign_or_null_origin_is_forbidden_and_changes_nothing() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let (addr, _tokens) = http(Arc::clone(&engine));
    let port = addr.port();
    let body = line(&create(1, DIFF));
    // Loopback origins on any port: local software is as trusted as the
    // process holding the token; a page from anywhere else is not.
    let own = [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
        format!("http://localhost:{}", port.wrapping_add(1)),
        "https://[::1]".to_owned(),
    ];
    for origin in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        format!("http://evil.example:{port}"),
        format!("http://127.0.0.1.evil.example:{port}"),
    ] {
        let r = post_authed(addr, &body, &[("Origin", &origin)]);
        assert_eq!(r.status, 403, "{origin}");
        // Without a token too: the origin is checked first.
        let r = post(addr, &body, &[("Origin", &origin)]);
        assert_eq!(r.status, 403, "{origin}");
    }
    assert_eq!(proposals(&engine), 0, "a forbidden request changes nothing");
    let init = line(&initialize(1));
    for origin in &own {
        let r = post_authed(addr, &init, &[("Origin", origin)]);
        assert_eq!(
            r.status,
            200,
            "{origin}: {}",
            String::from_utf8_lossy(&r.body)
        );
    }
    // No Origin (a non-browser client) is fine.
    let r = post_authed(addr, &body, &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], false, "{}", r.json());
    assert_eq!(proposals(&engine), 1);
}

#[test]
fn item4_malformed_json_is_a_parse_error_on_both_transports() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let (addr, _tokens) = http(Arc::clone(&engine));
    let r = post_authed(addr, b"{\"jsonrpc\": \"2.0\", \"id\": 1,", &[]);
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert_eq!(v["id"], Value::Null);
    // Valid JSON that is not a JSON-RPC message: invalid request, its id kept.
    let r = post_authed(
        addr,
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":3}"#,
        &[],
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600, "{}", r.json());
    assert_eq!(r.json()["id"], 9);

    let r = stdio(
        engine,
        vec![
            b"{\"jsonrpc\": \"2.0\", \"id\": 1,".to_vec(),
            br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":3}"#.to_vec(),
            line(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})),
        ],
        3,
    );
    assert_eq!(r[0]["error"]["code"], -32700, "{}", r[0]);
    assert_eq!(r[0]["id"], Value::Null);
    assert_eq!(r[1]["error"]["code"], -32600, "{}", r[1]);
    assert_eq!(r[1]["id"], 9);
    assert_eq!(r[2]["id"], 2, "the server keeps serving: {}", r[2]);
    assert!(r[2]["result"].is_object());
}

#[test]
fn item4_an_unknown_tool_is_invalid_params_on_both_transports() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": "proposal.frobnicate", "arguments": {}}});
    let (addr, _tokens) = http(Arc::clone(&engine));
    let r = post_authed(addr, &line(&call), &[]);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["id"], 5);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("proposal.frobnicate")),
        "{v}"
    );
    let r = stdio(engine, vec![line(&call)], 1);
    assert_eq!(r[0]["error"]["code"], -32602, "{}", r[0]);
    assert_eq!(r[0]["id"], 5);
}

#[test]
fn item4_initialize_without_protocol_version_is_one_clear_error_on_both_transports() {
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
        "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let (addr, _tokens) = http(Arc::clone(&engine));
    let r = post_authed(addr, &line(&bad), &[]);
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(v["id"], 3);
    let said = v["error"]["message"].as_str().expect("message").to_owned();
    assert!(said.contains("protocolVersion"), "{said}");

    // Over stdio, a second initialize without the version (the first
    // handshake is done by the helper) gets the same error.
    let r = stdio(engine, vec![line(&bad)], 1);
    assert_eq!(r[0]["error"]["code"], -32602, "{}", r[0]);
    assert_eq!(r[0]["id"], 3);
    assert_eq!(r[0]["error"]["message"], said.as_str());
}

// ---- item 6 ------------------------------------------------------------

#[test]
fn item6_an_oversized_message_is_refused_naming_the_limit_and_the_server_keeps_serving() {
    let (_dir, engine) = world(small_patch_limit(), &["alice"]);
    let limit = max_message_bytes(1024);
    let huge = "x".repeat(limit + 10);
    // The id comes before the arguments: it is kept.
    let oversized = line(&create(7, &huge));
    assert!(oversized.len() > limit);

    let (addr, _tokens) = http(Arc::clone(&engine));
    let r = post_authed(addr, &oversized, &[]);
    assert_eq!(r.status, 413);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert_eq!(v["error"]["data"]["limit"], limit);
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("HTTP message size limit of {limit} bytes"))),
        "{v}"
    );
    assert_eq!(v["id"], 7);
    assert_eq!(post_authed(addr, &line(&create(8, DIFF)), &[]).status, 200);

    let r = stdio(
        Arc::clone(&engine),
        vec![
            oversized,
            // No id before the limit: null.
            format!("{{\"method\":\"tools/call\",\"params\":{{\"x\":\"{huge}\"}},\"id\":1}}")
                .into_bytes(),
            line(&create(9, DIFF)),
        ],
        3,
    );
    assert_eq!(r[0]["error"]["code"], -32600, "{}", r[0]);
    assert_eq!(r[0]["id"], 7);
    assert_eq!(r[0]["error"]["data"]["limit"], limit);
    assert!(r[0]["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains(&format!("stdio message size limit of {limit} bytes"))));
    assert_eq!(r[1]["id"], Value::Null, "{}", r[1]);
    assert_eq!(r[1]["error"]["code"], -32600);
    assert_eq!(r[2]["id"], 9, "the server keeps serving");
    assert_eq!(r[2]["result"]["isError"], false, "{}", r[2]);
    // Only the two small proposals exist.
    assert_eq!(proposals(&engine), 2);
}

#[test]
fn item6_a_patch_over_the_engines_limit_reaches_the_engine_on_both_transports() {
    // The issue's case: a 17 MiB patch with the default 16 MiB limit gets
    // the engine's own refusal, over stdio as over HTTP.
    let (_dir, engine) = world(EngineOptions::default(), &["alice"]);
    let limit = engine.options().max_patch_bytes;
    let patch = format!("{DIFF}{}", "+\"quoted\"\n".repeat((17 << 20) / 10));
    assert!(patch.len() > limit);
    let call = line(&create(11, &patch));
    assert!(call.len() < max_message_bytes(limit));

    let (addr, _tokens) = http(Arc::clone(&engine));
    let r = post_authed(addr, &call, &[]);
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["result"]["isError"], true, "{}", v["error"]);
    let refused = refusal(&v["result"]);
    assert_eq!(refused["code"], "invalid_argument");
    assert_eq!(refused["details"]["field"], "patch");
    assert!(refused["message"]
        .as_str()
        .is_some_and(|m| m.contains(&format!("the limit is {limit}"))));

    let r = stdio(Arc::clone(&engine), vec![call], 1);
    assert_eq!(r[0]["id"], 11);
    assert_eq!(r[0]["result"]["isError"], true, "{}", r[0]["error"]);
    assert_eq!(refusal(&r[0]["result"])["details"]["field"], "patch");
    assert_eq!(proposals(&engine), 0);
}
