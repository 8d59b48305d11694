//! What the API tests share: a scratch governed repository served
//! in-process on port 0, its token file, and a tiny blocking HTTP client on
//! `std::net::TcpStream`.
#![allow(dead_code, unreachable_pub)] // each test uses its own subset

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use roundtable::{Actor, Engine, EngineOptions, Id};
use roundtable_mcp::Tokens;
use serde_json::{json, Value};

/// The tokens every world's file holds, by actor.
pub const ALICE: &str = "tok-alice-0123456789";
pub const BOB: &str = "tok-bob-0123456789ab";
pub const CAROL: &str = "tok-carol-0123456789";
pub const DAVE: &str = "tok-dave-01234567890";
pub const HOST: &str = "tok-host-0123456789a";

/// The token file's text.
pub fn token_file() -> String {
    format!(
        "{ALICE} agent:alice\n{BOB} agent:bob\n{CAROL} human:carol\n{DAVE} human:dave\n{HOST} orchestrator:host\n"
    )
}

/// A served scratch world.
pub struct World {
    pub addr: SocketAddr,
    pub dir: tempfile::TempDir,
    pub tokens: PathBuf,
    pub engine: Arc<Engine>,
}

/// The orchestrator.
pub fn host() -> Actor {
    Actor::orchestrator(Id::new("host").expect("id"))
}

/// Serve a fresh world: `hello.txt` and `src/lib.rs`, alice an author,
/// bob a reviewer, task t1; workspace `demo`.
pub fn world() -> World {
    world_with(Duration::from_secs(15), None)
}

/// [`world`] with a heartbeat interval and a body limit.
pub fn world_with(heartbeat: Duration, max_body: Option<usize>) -> World {
    serve(heartbeat, max_body, false, roundtable_mcp::MAX_WAITS)
}

/// [`world`] with a heartbeat interval and at most `max_waits` streams
/// per actor.
pub fn world_waits(heartbeat: Duration, max_waits: usize) -> World {
    serve(heartbeat, None, false, max_waits)
}

/// [`world`] as a git repository on `main`, landing in git mode.
pub fn world_git() -> World {
    serve(
        Duration::from_secs(15),
        None,
        true,
        roundtable_mcp::MAX_WAITS,
    )
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// [`world`] with its server's configuration changed by `tune` first.
pub fn world_tuned(tune: impl FnOnce(&mut roundtable_serve::Config)) -> World {
    serve_tuned(false, tune)
}

fn serve(heartbeat: Duration, max_body: Option<usize>, git_mode: bool, max_waits: usize) -> World {
    serve_tuned(git_mode, |config| {
        config.heartbeat = heartbeat;
        config.max_body_bytes = max_body;
        config.max_waits = max_waits;
    })
}

fn serve_tuned(git_mode: bool, tune: impl FnOnce(&mut roundtable_serve::Config)) -> World {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    std::fs::create_dir_all(root.join("src")).expect("mkdir");
    std::fs::write(root.join("hello.txt"), "hello\n").expect("write");
    std::fs::write(
        root.join("src/lib.rs"),
        "pub fn greet() -> u32 {\n    1\n}\n",
    )
    .expect("write");
    if git_mode {
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "base"]);
    }
    let engine = Engine::open(&root, EngineOptions::default()).expect("open");
    if git_mode {
        engine
            .call(
                "workspace.configure",
                json!({"landing": {"mode": "git", "branch": "main", "remote": null}}),
                &host(),
            )
            .expect("git mode");
    }
    for (agent, role) in [("alice", "author"), ("bob", "reviewer")] {
        engine
            .call(
                "agent.register",
                json!({"agent_id": agent, "roles": [role]}),
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
    let engine = Arc::new(engine);
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, token_file()).expect("tokens");
    let loaded = Arc::new(Tokens::load(&tokens).expect("load"));
    let mut config = roundtable_serve::Config::new("127.0.0.1:0".parse().expect("addr"), loaded);
    config.workspaces.insert("demo".into(), Arc::clone(&engine));
    tune(&mut config);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = roundtable_serve::run(config, move |addr| {
            let _ = tx.send(addr);
        });
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server listens");
    World {
        addr,
        dir,
        tokens,
        engine,
    }
}

/// A response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}), status {}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The error code of an error body.
    pub fn code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("no error code: {}", String::from_utf8_lossy(&self.body)))
            .to_owned()
    }
}

/// Send one request (`Connection: close`) and read the whole response.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    let body = body.unwrap_or(b"");
    if !body.is_empty() || method != "GET" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write head");
    // A server refusing a large body early may close before it is all sent.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    Reply {
        status,
        headers,
        body: raw[end + 4..].to_vec(),
    }
}

/// `GET path` with a bearer token.
pub fn get(w: &World, token: &str, path: &str) -> Reply {
    request(
        w.addr,
        "GET",
        path,
        &[("Authorization", &format!("Bearer {token}"))],
        None,
    )
}

/// Call `tool` with a bearer token (and an idempotency key when given).
pub fn call(w: &World, token: &str, tool: &str, args: &Value, key: Option<&str>) -> Reply {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if let Some(key) = key {
        headers.push(("Idempotency-Key", key));
    }
    request(
        w.addr,
        "POST",
        &format!("/api/v1/workspaces/demo/tools/{tool}"),
        &headers,
        Some(args.to_string().as_bytes()),
    )
}

/// Call `tool` and expect success.
pub fn ok(w: &World, token: &str, tool: &str, args: &Value, key: &str) -> Value {
    let r = call(w, token, tool, args, Some(key));
    assert_eq!(
        r.status,
        200,
        "{tool}: {}",
        String::from_utf8_lossy(&r.body)
    );
    r.json()
}

/// A browser session: its cookie header value and CSRF token.
pub fn sign_in(w: &World, token: &str) -> (String, String) {
    let r = request(
        w.addr,
        "POST",
        "/api/v1/session",
        &[("Content-Type", "application/json")],
        Some(json!({ "token": token }).to_string().as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let set = r.header("set-cookie").expect("set-cookie").to_owned();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = set.split(';').next().expect("cookie").to_owned();
    (cookie, r.json()["csrf"].as_str().expect("csrf").to_owned())
}

/// A patch that creates `n` files under `many/`.
pub fn many_files(n: usize, tag: &str) -> String {
    let mut patch = String::new();
    for i in 0..n {
        patch.push_str(&format!(
            "diff --git a/many/{tag}{i:04}.txt b/many/{tag}{i:04}.txt\nnew file mode 100644\n--- /dev/null\n+++ b/many/{tag}{i:04}.txt\n@@ -0,0 +1 @@\n+{i}\n"
        ));
    }
    patch
}

/// The one-line change to `src/lib.rs`.
pub const RUST_PATCH: &str = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn greet() -> u32 {\n-    1\n+    42 // the answer\n }\n";

/// alice proposes `patch`: the proposal id.
pub fn propose(w: &World, patch: &str, key: &str) -> String {
    let out = ok(
        w,
        ALICE,
        "proposal.create",
        &json!({"task_id": "t1", "title": format!("Change {key}"), "summary_md": "s", "patch": patch}),
        key,
    );
    out["proposal"]["id"].as_str().expect("id").to_owned()
}

/// An event stream read over HTTP/1.0 (so the body is the raw stream).
pub struct Events {
    reader: BufReader<TcpStream>,
    pub status: u16,
}

/// One server-sent event, or a comment.
#[derive(Debug, Clone, PartialEq)]
pub enum Sse {
    Event { id: u64, kind: String, data: Value },
    Comment(String),
}

impl Events {
    pub fn open(w: &World, token: &str, query: &str, last_event_id: Option<u64>) -> Events {
        let mut stream = TcpStream::connect(w.addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut head = format!(
            "GET /api/v1/workspaces/demo/events{query} HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n",
            w.addr
        );
        if let Some(id) = last_event_id {
            head.push_str(&format!("Last-Event-ID: {id}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).expect("write");
        let mut reader = BufReader::new(stream);
        let mut status_line = String::new();
        reader.read_line(&mut status_line).expect("status");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("status");
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("header");
            if line.trim().is_empty() {
                break;
            }
        }
        Events { reader, status }
    }

    /// The next event or comment.
    pub fn next(&mut self) -> Sse {
        let mut fields: Vec<(String, String)> = Vec::new();
        loop {
            let mut line = String::new();
            let n = self.reader.read_line(&mut line).expect("read");
            assert!(n > 0, "the stream ended");
            let line = line.trim_end_matches('\n');
            if line.is_empty() {
                if fields.is_empty() {
                    continue;
                }
                break;
            }
            if let Some(comment) = line.strip_prefix(':') {
                if fields.is_empty() {
                    return Sse::Comment(comment.trim().to_owned());
                }
                continue;
            }
            let (k, v) = line.split_once(": ").unwrap_or((line, ""));
            fields.push((k.to_owned(), v.to_owned()));
        }
        let field = |name: &str| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        Sse::Event {
            id: field("id").parse().expect("id"),
            kind: field("event"),
            data: serde_json::from_str(&field("data")).expect("data"),
        }
    }

    /// The next `n` events, skipping comments.
    pub fn events(&mut self, n: usize) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        while out.len() < n {
            if let Sse::Event { id, kind, data } = self.next() {
                assert_eq!(data["seq"].as_u64(), Some(id));
                out.push((id, kind));
            }
        }
        out
    }
}

/// Every event seq in the store, as the orchestrator sees them.
pub fn all_seqs(w: &World) -> Vec<u64> {
    let got = w
        .engine
        .call(
            "events.list",
            json!({"since_seq": 0, "limit": 1000}),
            &host(),
        )
        .expect("events");
    got["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect()
}
