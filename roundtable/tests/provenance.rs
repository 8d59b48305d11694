//! Issue 36, attribution records and `provenance.verify`: every git-mode
//! landing writes its commit's Agent Trace record as a note under
//! `refs/notes/agent-trace` (valid against the format's own JSON Schema,
//! the same as the store's record), and `provenance.verify` finds the
//! commits roundtable did not govern, a rewritten note and a dropped
//! event. Files mode keeps the record in the store.

use super::git_landing::git_world;
use super::landing::{fsck, git};
use super::provenance_blame::patch;
use super::tools::{str_of, World};
use roundtable::Actor;
use serde_json::{json, Value};
use std::path::Path;

const FILES: usize = 5;
const LINES: usize = 20;

/// The body of file `f` in the initial commit.
fn initial(f: usize) -> Vec<String> {
    (1..=LINES).map(|n| format!("f{f} line {n}")).collect()
}

/// The commit `HEAD` names in the repository at `d`.
fn head(d: &Path) -> String {
    git(d, &["rev-parse", "HEAD"]).trim().to_owned()
}

/// A person's commit, behind roundtable's back: `path` in `d` gets
/// `body`, then `git commit -q -am MESSAGE` runs with `config` (`-c` pairs)
/// before it; the new commit.
fn person_commits(d: &Path, path: &str, body: &str, config: &[&str], message: &str) -> String {
    std::fs::write(d.join(path), body).expect("write");
    let mut args: Vec<&str> = config.iter().flat_map(|c| ["-c", c]).collect();
    args.extend(["commit", "-q", "-am", message]);
    git(d, &args);
    head(d)
}

/// An approved proposal by `agent` changing `path` from `old` to `new`
/// (claimed, reviewed, approved by bob); its id.
fn approved(
    w: &World,
    agent: &Actor,
    path: &str,
    old: &[String],
    new: &[String],
    title: &str,
) -> String {
    w.ok(
        "claim.acquire",
        json!({"resource_id": format!("file:{path}"), "type": "write", "ttl_s": 3600}),
        agent,
    );
    let pid = str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": title, "summary_md": "s", "patch": patch(path, old, new)}),
            agent,
        )["proposal"]["id"],
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        agent,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    pid
}

/// Land, as `agent`, a change of `path` from `old` to `new`, approved by
/// bob; the transaction id.
fn land(
    w: &World,
    agent: &Actor,
    path: &str,
    old: &[String],
    new: &[String],
    title: &str,
) -> String {
    let pid = approved(w, agent, path, old, new, title);
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    str_of(&out["transaction"]["id"])
}

fn verify(w: &World, args: Value) -> Value {
    w.ok("provenance.verify", args, &w.host)
}

/// The problems a report lists, as (problem, commit) pairs.
fn problems(report: &Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                str_of(&f["problem"]),
                f["commit"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// Validate each note against the Agent Trace schema with Python's
/// `jsonschema` (draft 2020-12, formats checked).
fn validate_against_schema(notes: &[String]) {
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/agent-trace/trace-record.json");
    let dir = tempfile::tempdir().expect("tempdir");
    let list = dir.path().join("notes.json");
    std::fs::write(&list, serde_json::to_vec(notes).expect("json")).expect("write");
    let script = r#"
import json, sys
import jsonschema
schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
bad = 0
for text in json.load(open(sys.argv[2])):
    for e in validator.iter_errors(json.loads(text)):
        bad += 1
        print(e.message, list(e.path))
print("validated", bad)
sys.exit(1 if bad else 0)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&schema)
        .arg(&list)
        .output()
        .expect("python3 (with jsonschema: apt-get install python3-jsonschema)");
    assert!(
        out.status.success(),
        "notes do not validate: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue36_fifty_landings_by_five_agents_have_valid_notes_and_verify_finds_what_was_not_governed() {
    let files: Vec<(String, String)> = (0..FILES)
        .map(|f| (format!("f{f}.txt"), initial(f).join("\n") + "\n"))
        .collect();
    let borrowed: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    let w = git_world(&borrowed);
    let d = w.dir.path().to_path_buf();
    let agents: Vec<Actor> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| w.agent(n, &["author"]))
        .collect();
    // The host says which model agent `a` runs and where its session is.
    w.ok(
        "agent.register",
        json!({"agent_id": "a", "roles": ["author"], "model_id": "anthropic/claude-opus-4-5",
               "session_url": "https://sessions.example/a/1"}),
        &w.host,
    );
    let mut content: Vec<Vec<String>> = (0..FILES).map(initial).collect();
    // Ground truth, in landing order: each commit, its transaction and
    // its author.
    let mut landed: Vec<(String, String, String)> = Vec::new();
    let mut plain = String::new();
    for i in 0..50 {
        let agent = &agents[i % 5];
        let f = (i * 7) % FILES;
        let line = (i * 3) % LINES;
        let path = format!("f{f}.txt");
        let mut new = content[f].clone();
        new[line] = format!("{} wrote this in change {i}", agent.id);
        let t = land(&w, agent, &path, &content[f], &new, &format!("Change {i}"));
        content[f] = new;
        landed.push((head(&d), t, agent.id.to_string()));
        if i == 24 {
            // A person commits behind roundtable's back, mid-history.
            content[0][LINES - 1] = "written with plain git commit".to_owned();
            let body = content[0].join("\n") + "\n";
            plain = person_commits(&d, "f0.txt", &body, &[], "A plain commit");
        }
    }
    fsck(&d);

    // Every landed commit's note parses, is its record, names its agent,
    // and validates against the Agent Trace schema.
    let mut notes = Vec::new();
    for (commit, t, agent) in &landed {
        let text = git(&d, &["notes", "--ref", "agent-trace", "show", commit]);
        let note: Value = serde_json::from_str(&text).expect("a note is JSON");
        assert_eq!(note["vcs"], json!({"type": "git", "revision": commit}));
        let meta = &note["metadata"]["dev.roundtable"];
        assert_eq!(meta["transaction_id"], json!(t));
        assert_eq!(meta["agent_id"], json!(agent));
        assert_eq!(meta["evidence"][0]["by"], "agent:bob");
        let conversation = &note["files"][0]["conversations"][0];
        assert_eq!(conversation["contributor"]["type"], "ai");
        if agent == "a" {
            assert_eq!(
                conversation["contributor"]["model_id"],
                "anthropic/claude-opus-4-5"
            );
            assert_eq!(conversation["url"], "https://sessions.example/a/1");
        } else {
            assert!(conversation.get("url").is_none(), "{note}");
            assert!(
                conversation["contributor"].get("model_id").is_none(),
                "{note}"
            );
        }
        assert_eq!(
            note["files"][0]["conversations"][0]["ranges"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
        // The commit's chain trailer is the record's.
        let chain = git(
            &d,
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Roundtable-Chain,valueonly)",
                commit,
            ],
        );
        assert_eq!(
            chain.trim(),
            format!(
                "{} {}",
                meta["chain"]["seq"],
                str_of(&meta["chain"]["digest"])
            )
        );
        notes.push(text);
    }
    validate_against_schema(&notes);

    // verify: exactly the plain commit (and the seed commit) are not
    // governed; the other 50 are.
    let report = verify(&w, json!({}));
    assert_eq!(report["checked"], 52, "{report}");
    assert_eq!(report["governed"], 50, "{report}");
    let seed = git(&d, &["rev-list", "--max-parents=0", "HEAD"])
        .trim()
        .to_owned();
    assert_eq!(
        problems(&report),
        vec![
            ("not_governed".to_owned(), seed.clone()),
            ("not_governed".to_owned(), plain.clone())
        ]
    );
    assert_eq!(report["valid"], false);
    assert_eq!(report["log_valid"], true);
    // --since the plain commit: only the 25 landings after it, all governed.
    let after = verify(&w, json!({"since": plain}));
    assert_eq!(
        (after["checked"].clone(), after["valid"].clone()),
        (json!(25), json!(true)),
        "{after}"
    );

    // A rewritten note is reported (landing 31 comes after the plain
    // commit).
    let victim = &landed[30].0;
    let forged = git(&d, &["notes", "--ref", "agent-trace", "show", victim])
        .replace("\"agent_id\": \"", "\"agent_id\": \"mallory-");
    git(
        &d,
        &[
            "notes",
            "--ref",
            "agent-trace",
            "add",
            "-f",
            "-m",
            &forged,
            victim,
        ],
    );
    let report = verify(&w, json!({"since": plain}));
    assert_eq!(
        problems(&report),
        vec![("note_differs".to_owned(), victim.clone())],
        "{report}"
    );

    // A dropped event is reported: the commit's own check and the log's.
    let (dropped_commit, dropped_tx, _) = &landed[20];
    let mut db = super::support::store_db(&d);
    db.drop_trigger("events_append_only_d", "events");
    db.execute(
        "DELETE FROM events WHERE kind = 'transaction.applied' AND subject = ?1",
        &[dropped_tx],
    );
    drop(db);
    let whole = verify(&w, json!({}));
    let found = problems(&whole);
    assert!(
        found.contains(&("event_missing".to_owned(), dropped_commit.clone())),
        "{whole}"
    );
    assert!(
        found.contains(&("log".to_owned(), String::new())),
        "{whole}"
    );
    assert_eq!(whole["log_valid"], false);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue36_forged_trailers_and_a_reused_transaction_are_not_governed() {
    let w = git_world(&[("f.txt", "one\n")]);
    let d = w.dir.path().to_path_buf();
    let t = land(
        &w,
        &w.author,
        "f.txt",
        &["one".to_owned()],
        &["two".to_owned()],
        "Two",
    );
    let real = head(&d);
    // A commit that copies the real one's trailers, and one naming a
    // transaction the store never had.
    let copy = person_commits(
        &d,
        "f.txt",
        "three\n",
        &[],
        &format!("Copy\n\nRoundtable-Transaction: {t}"),
    );
    let forged = person_commits(
        &d,
        "f.txt",
        "four\n",
        &[],
        "Forged\n\nRoundtable-Transaction: tx-never",
    );
    let report = verify(&w, json!({"since": real}));
    assert_eq!(
        problems(&report),
        vec![
            ("other_commit".to_owned(), copy),
            ("unknown_transaction".to_owned(), forged)
        ],
        "{report}"
    );
    // A session link that is not one is refused by field, changing nothing.
    for (field, value) in [("session_url", "file:///etc/passwd"), ("model_id", " ")] {
        let e = w.refused(
            "agent.register",
            json!({"agent_id": "alice", "roles": ["author"], field: value}),
            &w.host,
            roundtable::ErrorCode::InvalidArgument,
        );
        assert_eq!(e.details()["field"], field);
    }
    // Bad input changes nothing and names the field.
    let e = w.refused(
        "provenance.verify",
        json!({"since": "no-such-rev"}),
        &w.host,
        roundtable::ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "since");
    w.refused(
        "provenance.verify",
        json!({"branch": "nope"}),
        &w.host,
        roundtable::ErrorCode::NotFound,
    );
}

#[test]
fn issue36_files_mode_keeps_the_attribution_record_in_the_store() {
    let w = World::new();
    let t = land(
        &w,
        &w.author,
        "hello.txt",
        &["hello".to_owned()],
        &["hello, world".to_owned()],
        "Greet",
    );
    let rows = super::support::store_db(w.dir.path()).rows(&format!(
        "SELECT record FROM trace_records WHERE transaction_id = '{t}'"
    ));
    assert_eq!(rows.len(), 1);
    let record: Value =
        serde_json::from_str(rows[0][0].as_deref().expect("a record")).expect("json");
    assert!(record.get("vcs").is_none(), "{record}");
    assert_eq!(record["version"], "0.1");
    assert_eq!(record["metadata"]["dev.roundtable"]["agent_id"], "alice");
    assert_eq!(
        record["files"][0],
        json!({"path": "hello.txt", "conversations": [{"contributor": {"type": "ai"}, "ranges": [{"start_line": 1, "end_line": 1}]}]})
    );
    // Files mode has no branch to verify unless one is named.
    let e = w.refused(
        "provenance.verify",
        json!({}),
        &w.host,
        roundtable::ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "branch");
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue36_a_host_with_an_ssh_signing_key_signs_its_landings_and_verify_checks_them() {
    let w = git_world(&[("f.txt", "one\n")]);
    let d = w.dir.path().to_path_buf();
    let keys = tempfile::tempdir().expect("tempdir");
    let key = keys.path().join("host");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "host", "-f"])
        .arg(&key)
        .status()
        .expect("ssh-keygen");
    assert!(made.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).expect("public key");
    let allowed = keys.path().join("allowed_signers");
    std::fs::write(
        &allowed,
        format!("host@example.com namespaces=\"git\" {public}"),
    )
    .expect("write");
    let key_path = key.to_str().expect("utf-8");
    let allowed_path = allowed.to_str().expect("utf-8");
    git(&d, &["config", "gpg.format", "ssh"]);
    git(&d, &["config", "user.signingKey", key_path]);
    git(&d, &["config", "commit.gpgSign", "true"]);
    git(&d, &["config", "gpg.ssh.allowedSignersFile", allowed_path]);
    let base = head(&d);
    land(
        &w,
        &w.author,
        "f.txt",
        &["one".to_owned()],
        &["two".to_owned()],
        "Two",
    );
    let landed = head(&d);
    // git itself accepts the signature.
    git(&d, &["verify-commit", &landed]);
    // A commit a person makes without signing is reported twice over.
    let plain = person_commits(
        &d,
        "f.txt",
        "three\n",
        &["commit.gpgSign=false"],
        "Unsigned",
    );
    let report = verify(&w, json!({"since": base}));
    assert_eq!(
        problems(&report),
        vec![
            ("not_governed".to_owned(), plain.clone()),
            ("signature".to_owned(), plain)
        ],
        "{report}"
    );
    fsck(&d);
    // A signing setting roundtable cannot honour refuses the landing and
    // changes nothing.
    git(&d, &["config", "gpg.format", "openpgp"]);
    git(&d, &["reset", "-q", "--hard", &landed]);
    let pid = approved(
        &w,
        &w.author,
        "f.txt",
        &["two".to_owned()],
        &["four".to_owned()],
        "Four",
    );
    let e = w.refused(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
        roundtable::ErrorCode::InvalidArgument,
    );
    assert!(e.to_string().contains("ssh"), "{e}");
    assert_eq!(head(&d), landed);
}
