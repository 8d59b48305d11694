//! End-to-end tests of the tool surface on the command line: `init`,
//! `call` (arguments inline, from a file and from standard input) and
//! `tools`.

use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

/// What one run printed: exit status, stdout parsed as JSON, stdout's text.
struct Run {
    code: i32,
    json: Value,
    stdout: String,
}

fn run_in(cwd: Option<&Path>, args: &[&str], stdin: Option<&[u8]>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_roundtable"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().expect("runs");
    let mut input = child.stdin.take().expect("stdin");
    // Write stdin from another thread: a large input must not deadlock
    // against a child that is already writing its output.
    let data = stdin.unwrap_or_default().to_vec();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        // The child may exit without reading (a refusal); that is not a failure here.
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().expect("finishes");
    writer.join().expect("writer thread");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    Run {
        code: out.status.code().unwrap_or(-1),
        json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
        stdout,
    }
}

fn rt(args: &[&str]) -> Run {
    run_in(None, args, None)
}

/// `roundtable call TOOL --root ROOT --as ACTOR --args ARGS`, which must succeed.
fn call_ok(root: &Path, tool: &str, actor: &str, args: &Value) -> Value {
    let root = root.display().to_string();
    let args = args.to_string();
    let r = rt(&[
        "call", tool, "--root", &root, "--as", actor, "--args", &args,
    ]);
    assert_eq!(r.code, 0, "{tool}: {}", r.stdout);
    r.json
}

/// A call that must be refused: exit 1 and `{"error": {...}}`; returns the error.
fn call_err(root: &Path, tool: &str, actor: &str, args: &str) -> Value {
    let root = root.display().to_string();
    let r = rt(&["call", tool, "--root", &root, "--as", actor, "--args", args]);
    assert_eq!(r.code, 1, "{tool}: {}", r.stdout);
    let error = &r.json["error"];
    for key in ["code", "message", "details"] {
        assert!(error.get(key).is_some(), "{key} in {}", r.stdout);
    }
    error.clone()
}

fn event_count(root: &Path) -> usize {
    let page = call_ok(
        root,
        "events.list",
        "orchestrator:host",
        &json!({"limit": 1000}),
    );
    page["events"].as_array().expect("events").len()
}

fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("a.txt"), "one\ntwo\n").expect("write");
    dir
}

const SMALL_PATCH: &str = "\
--- a/a.txt
+++ b/a.txt
@@ -1,2 +1,2 @@
 one
-two
+TWO
";

/// A patch adding a file of `lines` lines (about 40 bytes each).
fn big_patch(lines: usize) -> String {
    let mut p = format!("--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,{lines} @@\n");
    for i in 0..lines {
        p.push_str(&format!("+line {i:08} of a large generated file\n"));
    }
    p
}

/// `--store` (or `ROUNDTABLE_STORE`) names a PostgreSQL store several
/// roots share; a URL that is not one is `invalid_argument` naming it.
/// The shared half runs when `RT_TEST_STORE` names a server.
#[test]
fn the_store_option_shares_one_postgres_store_between_roots() {
    let dir = repo();
    let root = dir.path().display().to_string();
    let bad = rt(&["--store", "mysql://db/x", "init", "--root", &root]);
    assert_eq!(bad.code, 1, "{}", bad.stdout);
    assert_eq!(bad.json["error"]["code"], "invalid_argument");
    assert_eq!(bad.json["error"]["details"]["field"], "store");
    let Some(base) = std::env::var("RT_TEST_STORE")
        .ok()
        .filter(|s| !s.is_empty())
    else {
        return;
    };
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}schema=cli_{}", std::process::id());
    let other = repo();
    let other_root = other.path().display().to_string();
    let first = rt(&["--store", &url, "init", "--root", &root]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    assert_eq!(first.json["engine"], "postgres");
    assert!(!first.json["store"].as_str().unwrap_or("").is_empty());
    let created = rt(&[
        "--store",
        &url,
        "call",
        "task.create",
        "--root",
        &root,
        "--as",
        "orchestrator:host",
        "--args",
        r#"{"task_id":"t1","title":"Shared"}"#,
    ]);
    assert_eq!(created.code, 0, "{}", created.stdout);
    // The other root reads it, through ROUNDTABLE_STORE.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_roundtable"));
    let out = cmd
        .args([
            "call",
            "task.get",
            "--root",
            &other_root,
            "--as",
            "orchestrator:host",
            "--args",
            r#"{"task_id":"t1"}"#,
        ])
        .env("ROUNDTABLE_STORE", &url)
        .output()
        .expect("runs");
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(got["task"]["title"], "Shared", "{got}");
}

#[test]
fn init_creates_the_store_then_reports_it_exists() {
    let dir = repo();
    let root = dir.path().display().to_string();
    let first = rt(&["init", "--root", &root]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    assert_eq!(first.json["created"], true);
    assert_eq!(
        first.json["schema_version"].as_i64(),
        Some(roundtable::store::SCHEMA_VERSION)
    );
    let canonical = fs::canonicalize(dir.path()).expect("canonical");
    assert_eq!(first.json["root"], canonical.display().to_string());
    let store = first.json["store"].as_str().expect("store path");
    assert!(Path::new(store).is_file(), "{store}");
    assert!(Path::new(store).starts_with(canonical.join(".roundtable")));

    // Again: nothing created, same store. Without --root: the current directory.
    let again = run_in(Some(dir.path()), &["init"], None);
    assert_eq!(again.code, 0, "{}", again.stdout);
    assert_eq!(again.json["created"], false);
    assert_eq!(again.json["store"], first.json["store"]);
    // On a pipe the output is one compact line.
    assert_eq!(again.stdout.trim_end().lines().count(), 1);

    let missing = rt(&["init", "--root", "/nonexistent/roundtable-root"]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    assert_eq!(missing.json["error"]["code"], "invalid_argument");
}

/// `git` in `dir`; its stdout (the command must succeed).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn init_in_a_fresh_git_repository_leaves_nothing_for_git_add_to_commit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git(root, &["init", "-q"]);
    fs::write(root.join("hello.txt"), "hello\n").expect("write");
    let init = run_in(Some(root), &["init"], None);
    assert_eq!(init.code, 0, "{}", init.stdout);
    assert_eq!(init.json["created"], true);
    assert_eq!(
        fs::read_to_string(root.join(".roundtable/.gitignore")).expect("ignore file"),
        "*\n"
    );
    // Every command that opens the store (a call writes it, WAL files too).
    let task = run_in(
        Some(root),
        &[
            "call",
            "task.create",
            "--as",
            "orchestrator:host",
            "--args",
            r#"{"task_id":"t1","title":"One"}"#,
        ],
        None,
    );
    assert_eq!(task.code, 0, "{}", task.stdout);
    git(root, &["add", "-A"]);
    let staged = git(root, &["diff", "--cached", "--name-only"]);
    assert_eq!(
        staged.lines().collect::<Vec<_>>(),
        ["hello.txt"],
        "{staged}"
    );
    assert_eq!(
        git(root, &["status", "--porcelain", "--ignored=no"])
            .lines()
            .count(),
        1
    );
}

#[test]
fn a_whole_flow_through_call() {
    let dir = repo();
    let root = dir.path();
    let root_arg = root.display().to_string();
    let host = "orchestrator:host";

    let alice = call_ok(
        root,
        "agent.register",
        host,
        &json!({"agent_id": "alice", "roles": ["author"]}),
    );
    assert_eq!(alice["agent"]["id"], "alice");
    call_ok(
        root,
        "agent.register",
        host,
        &json!({"agent_id": "bob", "roles": ["reviewer"]}),
    );
    let task = call_ok(
        root,
        "task.create",
        host,
        &json!({"task_id": "t1", "title": "Shout two"}),
    );
    assert_eq!(task["task"]["id"], "t1");

    // A proposal whose arguments come on standard input.
    let args = json!({
        "task_id": "t1", "title": "Capitalize two", "summary_md": "TWO, not two.",
        "patch": SMALL_PATCH, "affected_resources": ["file:a.txt"],
    })
    .to_string();
    let created = run_in(
        None,
        &[
            "call",
            "proposal.create",
            "--root",
            &root_arg,
            "--as",
            "agent:alice",
            "--args",
            "-",
        ],
        Some(args.as_bytes()),
    );
    assert_eq!(created.code, 0, "{}", created.stdout);
    let pid = created.json["proposal"]["id"]
        .as_str()
        .expect("proposal id")
        .to_owned();
    assert_eq!(created.json["proposal"]["status"], "pending");
    assert_eq!(created.json["proposal"]["latest_revision"], 1);
    assert_eq!(created.json["revision"]["number"], 1);
    assert!(created.json["revision"]["digest"]
        .as_str()
        .is_some_and(|d| d.starts_with("blob:sha256:")));

    // A second proposal, with a patch of over a megabyte, from a file.
    let big = big_patch(30_000);
    assert!(big.len() > 1 << 20);
    let args_dir = tempfile::tempdir().expect("tempdir");
    let args_file = args_dir.path().join("args.json");
    fs::write(
        &args_file,
        json!({
            "task_id": "t1", "title": "Add a big file", "summary_md": "Generated.",
            "patch": big, "affected_resources": ["file:big.txt"],
        })
        .to_string(),
    )
    .expect("write args");
    let at_file = format!("@{}", args_file.display());
    let second = rt(&[
        "call",
        "proposal.create",
        "--root",
        &root_arg,
        "--as",
        "agent:alice",
        "--args",
        &at_file,
    ]);
    assert_eq!(second.code, 0, "{}", second.stdout);
    assert_ne!(second.json["proposal"]["id"].as_str(), Some(pid.as_str()));
    assert_eq!(second.json["revision"]["number"], 1);
    // The store holds the megabyte patch byte for byte.
    let stored = call_ok(
        root,
        "proposal.get",
        host,
        &json!({"proposal_id": second.json["proposal"]["id"], "include_content": true}),
    );
    assert!(
        stored["content"].as_str() == Some(big.as_str()),
        "content differs"
    );
    // Proposing wrote no project file.
    assert_eq!(
        fs::read_to_string(root.join("a.txt")).expect("read"),
        "one\ntwo\n"
    );
    assert!(!root.join("big.txt").exists());

    let listed = call_ok(root, "proposal.list", host, &json!({"task_id": "t1"}));
    assert_eq!(listed["proposals"].as_array().map(Vec::len), Some(2));

    let reviewing = call_ok(
        root,
        "proposal.request_review",
        "agent:alice",
        &json!({"proposal_id": pid}),
    );
    assert_eq!(reviewing["proposal"]["status"], "in_review");

    // The author may not vote on its own proposal; another agent may.
    let own = call_err(
        root,
        "vote.cast",
        "agent:alice",
        &json!({"proposal_id": pid, "revision": 1, "vote": "approve"}).to_string(),
    );
    assert_eq!(own["code"], "forbidden");
    let vote = call_ok(
        root,
        "vote.cast",
        "agent:bob",
        &json!({"proposal_id": pid, "revision": 1, "vote": "approve", "reason_md": "Loud and right."}),
    );
    assert_eq!(vote["vote"]["vote"], "approve", "{vote}");
    let votes = call_ok(root, "vote.list", host, &json!({"proposal_id": pid}));
    assert_eq!(votes["votes"].as_array().map(Vec::len), Some(1));

    let events = call_ok(root, "events.list", host, &json!({}));
    let events = events["events"].as_array().expect("events");
    assert!(events.len() >= 7, "{events:?}");
    for e in events {
        for key in ["seq", "kind", "actor"] {
            assert!(e.get(key).is_some(), "{key} in {e}");
        }
    }
    // `--args` defaults to `{}`.
    let chain = rt(&["call", "events.verify", "--root", &root_arg, "--as", host]);
    assert_eq!(chain.code, 0, "{}", chain.stdout);
    assert_eq!(chain.json["valid"], true, "{}", chain.stdout);
}

#[test]
fn refusals_exit_1_with_a_code_and_change_nothing() {
    let dir = repo();
    let root = dir.path();
    let host = "orchestrator:host";
    call_ok(
        root,
        "task.create",
        host,
        &json!({"task_id": "t1", "title": "x"}),
    );
    let before = event_count(root);

    let unknown = call_err(
        root,
        "task.create",
        host,
        r#"{"task_id": "t2", "title": "x", "colour": "red"}"#,
    );
    assert_eq!(unknown["code"], "invalid_argument");
    assert_eq!(unknown["details"]["field"], "colour");

    let duplicate = call_err(
        root,
        "task.create",
        host,
        r#"{"task_id": "t3", "title": "x", "title": "y"}"#,
    );
    assert_eq!(duplicate["code"], "invalid_argument");
    assert!(
        duplicate["message"]
            .as_str()
            .is_some_and(|m| m.contains("duplicate")),
        "{duplicate}"
    );

    let not_json = call_err(root, "task.create", host, "{\"title\": ");
    assert_eq!(not_json["code"], "invalid_argument");

    for bad in ["robot:x", "alice", "agent:", "agent:a b"] {
        let e = call_err(root, "task.create", bad, r#"{"title": "x"}"#);
        assert_eq!(e["code"], "invalid_argument", "{bad}: {e}");
        assert_eq!(e["details"]["field"], "--as", "{bad}: {e}");
    }

    let no_tool = call_err(root, "task.frobnicate", host, "{}");
    assert_eq!(no_tool["code"], "not_found");
    assert_eq!(no_tool["details"]["id"], "task.frobnicate");

    let missing_file = call_err(root, "task.create", host, "@/nonexistent/args.json");
    assert_eq!(missing_file["code"], "io");

    assert_eq!(event_count(root), before, "no refusal wrote an event");
}

#[test]
fn a_refused_actor_creates_no_store() {
    let dir = repo();
    let e = call_err(dir.path(), "task.create", "robot:x", r#"{"title": "x"}"#);
    assert_eq!(e["code"], "invalid_argument");
    assert!(!dir.path().join(".roundtable").exists());
}

#[test]
fn call_usage_errors_exit_2() {
    // Missing --as is a usage error, as is a missing tool name.
    assert_eq!(rt(&["call", "events.verify"]).code, 2);
    assert_eq!(rt(&["call", "--as", "agent:a"]).code, 2);
}

#[test]
fn tools_lists_every_tool_with_strict_schemas() {
    let r = rt(&["tools"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let tools = r.json.as_array().expect("a list");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let want = [
        "agent.register",
        "task.create",
        "proposal.create",
        "proposal.attach_patch",
        "proposal.get",
        "proposal.list",
        "proposal.request_review",
        "proposal.withdraw",
        "patch.reject",
        "vote.cast",
        "vote.list",
        "decision.record",
        "security.review",
        "human.request_approval",
        "human.approve",
        "test.record",
        "events.list",
        "events.verify",
    ];
    for name in want {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(names.len(), tools.len(), "every entry has a name");
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "names are unique");
    for t in tools {
        let name = &t["name"];
        assert!(
            t["description"]
                .as_str()
                .is_some_and(|d| !d.trim().is_empty()),
            "{name}"
        );
        assert!(t["mutates"].is_boolean(), "{name}");
        assert_eq!(t["input_schema"]["type"], "object", "{name}");
        assert_eq!(t["input_schema"]["additionalProperties"], false, "{name}");
        assert!(t["output_schema"].is_object(), "{name}");
    }
    let mutates = |n: &str| {
        tools
            .iter()
            .find(|t| t["name"] == n)
            .map(|t| t["mutates"].clone())
    };
    assert_eq!(mutates("proposal.create"), Some(Value::Bool(true)));
    assert_eq!(mutates("proposal.get"), Some(Value::Bool(false)));
}

/// `roundtable tools` byte for byte as recorded before the typed core
/// (issue 15): every name, description, and input and output schema of
/// the JSON surface. A change to it is a change to the contract: rewrite
/// the file with `RT_UPDATE_GOLDEN=1` only when that is what you mean.
#[test]
fn tools_output_is_the_recorded_contract() {
    recorded_contract("tools", "tools.json", "name");
}

/// `roundtable COMMAND` (a JSON list of records, each named by `key`)
/// compared byte for byte with `schema/FILE` (at the repository root), rewritten there with
/// `RT_UPDATE_GOLDEN=1`. A difference names the record that changed,
/// went or came before failing on the bytes.
fn recorded_contract(command: &str, file: &str, key: &str) {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schema")
        .join(file);
    let r = rt(&[command]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    if std::env::var_os("RT_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &r.stdout).expect("write the golden file");
    }
    let want = std::fs::read_to_string(&golden).expect("read the golden file");
    if r.stdout == want {
        return;
    }
    let parse = |text: &str| -> Vec<Value> {
        serde_json::from_str::<Value>(text)
            .expect("JSON")
            .as_array()
            .expect("a list")
            .clone()
    };
    let (now, then) = (parse(&r.stdout), parse(&want));
    for t in &then {
        match now.iter().find(|n| n[key] == t[key]) {
            None => panic!("{} is gone", t[key]),
            Some(n) if n != t => panic!("{} changed:\nnow  {n}\nthen {t}", t[key]),
            Some(_) => {}
        }
    }
    assert_eq!(now.len(), then.len(), "{command}: records were added");
    panic!("{command}: the same records and schemas, but not the same bytes (key order or layout)");
}

/// `roundtable errors` byte for byte as recorded: every error code, its C
/// status, its description and the JSON Schema of its details. The Go and
/// Python bindings generate their typed details from this file, so a
/// change to it is a change to the contract: rewrite it with
/// `RT_UPDATE_GOLDEN=1` only when that is what you mean.
#[test]
fn errors_output_is_the_recorded_contract() {
    recorded_contract("errors", "errors.json", "code");
}

/// The recorded errors list every code once, sorted, with its C status,
/// and a `$defs` entry that the tool schemas also have is the very same
/// record there (the bindings generate one type from both files).
#[test]
fn errors_json_shares_its_records_with_the_tool_schemas() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema");
    let read = |name: &str| -> Value {
        serde_json::from_str(&fs::read_to_string(dir.join(name)).expect("read")).expect("JSON")
    };
    let (errors, tools) = (read("errors.json"), read("tools.json"));
    let mut defs = serde_json::Map::new();
    for tool in tools.as_array().expect("tools") {
        for side in ["input_schema", "output_schema"] {
            if let Some(d) = tool[side]["$defs"].as_object() {
                defs.extend(d.clone());
            }
        }
    }
    let errors = errors.as_array().expect("a list");
    let codes: Vec<&str> = errors
        .iter()
        .map(|e| e["code"].as_str().expect("code"))
        .collect();
    let mut sorted = codes.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(codes, sorted, "sorted by code, each once");
    assert_eq!(codes.len(), roundtable::ErrorCode::ALL.len());
    let mut shared = 0;
    for e in errors {
        let code: roundtable::ErrorCode =
            e["code"].as_str().expect("code").parse().expect("a code");
        assert_eq!(e["status"], code.number(), "{code}");
        let keys: Vec<&String> = e.as_object().expect("entry").keys().collect();
        assert_eq!(
            keys,
            ["code", "description", "details_schema", "status"],
            "{code}"
        );
        for (name, schema) in e["details_schema"]["$defs"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if let Some(tool_def) = defs.get(name) {
                assert_eq!(
                    schema, tool_def,
                    "{code}: $defs/{name} differs from the tool schemas'"
                );
                shared += 1;
            }
        }
    }
    assert!(
        shared > 0,
        "the details borrow records from the tool schemas"
    );
}
