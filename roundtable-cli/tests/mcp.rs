//! `roundtable mcp` over the kinds of standard input a launcher may give
//! it: a pipe, a Unix socket (how Node-based clients spawn servers) and a
//! regular file; each must answer the same requests.

use std::io::{BufRead, BufReader, Write};
use std::os::fd::OwnedFd;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

fn requests() -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "agent.get", "arguments": {"agent_id": "nobody"}}}),
    ]
    .iter()
    .map(|r| format!("{r}\n"))
    .collect()
}

fn check(lines: &[Value]) {
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["result"]["serverInfo"]["name"], "roundtable");
    let refused = &lines[1]["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    // The refusal is the text content (no structured content to check
    // against the output schema).
    assert!(refused.get("structuredContent").is_none(), "{refused}");
    let body: Value =
        serde_json::from_str(refused["content"][0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(body["code"], "not_found");
}

fn server(root: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_roundtable"));
    cmd.args(["mcp", "--root"])
        .arg(root)
        .args(["--as", "agent:alice"])
        .env_remove("ROUNDTABLE_ACTOR");
    cmd
}

fn read_lines(reader: impl std::io::Read, n: usize) -> Vec<Value> {
    BufReader::new(reader)
        .lines()
        .take(n)
        .map(|l| serde_json::from_str(&l.expect("line")).expect("json"))
        .collect()
}

#[test]
fn mcp_answers_over_a_pipe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = server(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(requests().as_bytes()).expect("write");
    let lines = read_lines(child.stdout.take().expect("stdout"), 2);
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    check(&lines);
}

#[test]
fn mcp_answers_over_a_unix_socket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().expect("socketpair");
    let out = theirs.try_clone().expect("clone");
    let mut child = server(dir.path())
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::from(OwnedFd::from(out)))
        .spawn()
        .expect("spawn");
    ours.write_all(requests().as_bytes()).expect("write");
    let lines = read_lines(ours.try_clone().expect("clone"), 2);
    ours.shutdown(std::net::Shutdown::Write).expect("shutdown");
    assert!(child.wait().expect("wait").success());
    check(&lines);
}

#[test]
fn mcp_answers_requests_read_from_a_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("requests.jsonl");
    std::fs::write(&file, requests()).expect("write");
    let out = server(dir.path())
        .stdin(std::fs::File::open(&file).expect("open"))
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = read_lines(&out.stdout[..], 2);
    lines.sort_by_key(|l| l["id"].as_i64());
    check(&lines);
}
