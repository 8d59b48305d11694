//! `roundtable serve`: it prints one JSON line once listening and answers
//! an authenticated request; a non-loopback address is refused unless
//! allowed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

use serde_json::Value;

const TOKEN: &str = "tok-carol-0123456789";

/// Kills the server when the test ends, passing or not.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_prints_its_url_and_answers_a_bearer_request() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).expect("mkdir");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} human:carol\n")).expect("tokens");
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_roundtable"))
            .args(["serve", "--listen", "127.0.0.1:0", "--tokens"])
            .arg(&tokens)
            .arg("--workspace")
            .arg(format!("demo={}", repo.display()))
            .env_remove("ROUNDTABLE_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    );
    let stdout = child.0.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("line");
    let said: Value = serde_json::from_str(&line).expect("one JSON line");
    assert_eq!(said["workspaces"], serde_json::json!(["demo"]), "{said}");
    assert_eq!(said["tokens"], 1);
    let url = said["url"].as_str().expect("url");
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix('/'))
        .expect("http://ADDR/");
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET /api/v1/workspaces HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(
        reply.ends_with(r#"{"workspaces":[{"landing":"files","name":"demo"}]}"#),
        "{reply}"
    );
}

#[test]
fn serve_refuses_a_non_loopback_address_unless_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} human:carol\n")).expect("tokens");
    let out = Command::new(env!("CARGO_BIN_EXE_roundtable"))
        .args(["serve", "--listen", "0.0.0.0:0", "--tokens"])
        .arg(&tokens)
        .arg("--workspace")
        .arg(format!("demo={}", dir.path().display()))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let said: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(said["error"]["code"], "invalid_argument", "{said}");
    assert_eq!(said["error"]["details"]["field"], "--listen");
    assert!(
        !dir.path().join(".roundtable").exists(),
        "refused before opening a store"
    );
}

#[test]
fn demo_serve_leaves_a_change_in_carols_inbox_and_serves_it() {
    let mut child = Child(
        Command::new(env!("CARGO_BIN_EXE_roundtable"))
            .args(["demo", "--serve", "127.0.0.1:0"])
            .env_remove("ROUNDTABLE_STORE")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    );
    let mut lines = BufReader::new(child.0.stdout.take().expect("stdout")).lines();
    let mut said = Vec::new();
    let url = loop {
        let line = lines.next().expect("a line").expect("utf-8");
        if let Ok(Value::Object(bound)) = serde_json::from_str::<Value>(&line) {
            break bound["url"].as_str().expect("url").to_owned();
        }
        said.push(line);
    };
    let console = said
        .iter()
        .find_map(|l| l.strip_prefix("console: sign in as human:carol with "))
        .expect("the sign-in line");
    let (token, rest) = console.split_once(' ').expect("token then text");
    let tokens_file = rest.rsplit("tokens in ").next().expect("tokens path");
    let root = std::path::Path::new(tokens_file)
        .ancestors()
        .nth(2)
        .expect("the kept repository")
        .to_owned();
    // The kept repository goes when the test does.
    let _cleanup = Remove(root);
    assert!(
        said.iter()
            .any(|l| l.contains("waits on carol's human approval")),
        "{said:?}"
    );
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix('/'))
        .expect("http://ADDR/");
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET /api/v1/workspaces/demo/inbox HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut reply = String::new();
    stream.read_to_string(&mut reply).expect("read");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let body: Value =
        serde_json::from_str(reply.split("\r\n\r\n").nth(1).expect("body")).expect("json body");
    let items = body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{body}");
    assert_eq!(items[0]["proposal"]["title"], "Add farewell", "{body}");
    assert_eq!(items[0]["action"], "human_approval", "{body}");
    // The tokens file is the owner's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(tokens_file)
            .expect("tokens")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "{mode:o}");
    }
}

/// Removes a directory when dropped.
struct Remove(std::path::PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
