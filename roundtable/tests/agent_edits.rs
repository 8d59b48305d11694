//! The agent-edit corpus (`tests/cases/agent-edits/`): Codex envelopes and
//! SEARCH/REPLACE blocks of real files of this repository. Each case is
//! proposed through `proposal.create`; an accepted one is claimed,
//! approved and applied, and the files on disk must then be exactly the
//! expected bytes (every other file unchanged) with each hunk matched where
//! and at the rung the case says; a refused one must carry the expected
//! code and details and leave every store row and file as it was.

use super::tools::{fingerprint, scratch_dir, str_of, World};
use roundtable::{EngineOptions, ErrorCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

fn corpus_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/agent-edits")
}

fn corpus() -> Vec<Value> {
    let text = std::fs::read_to_string(corpus_dir().join("cases.json")).expect("cases.json");
    let v: Value = serde_json::from_str(&text).expect("cases.json is JSON");
    v["cases"].as_array().expect("cases").clone()
}

/// Every file under `root` but the store, with its bytes.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .into_owned();
            if rel == ".roundtable" {
                continue;
            }
            if entry.file_type().expect("type").is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).expect("read"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Whether `actual` holds every key of `expected` with an equal value
/// (objects compared as subsets, arrays as prefixes of subsets).
fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|av| subset(v, av))),
        (Value::Array(e), Value::Array(a)) => {
            e.len() <= a.len() && e.iter().zip(a).all(|(x, y)| subset(x, y))
        }
        _ => expected == actual,
    }
}

fn run(case: &Value) -> Result<(), String> {
    let name = case["name"].as_str().expect("name");
    let w = World::with(scratch_dir(), EngineOptions::default());
    let root = w.dir.path();
    for (path, fixture) in case["files"].as_object().expect("files") {
        let bytes =
            std::fs::read(corpus_dir().join("files").join(str_of(fixture))).expect("fixture");
        let dest = root.join(path);
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
        std::fs::write(dest, bytes).expect("write fixture");
    }
    let before = tree(root);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "directory:.", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let store_before = fingerprint(root);
    let args = json!({
        "task_id": "t1", "title": name, "summary_md": "An agent's edit.",
        "patch": case["edit"], "patch_format": case["format"],
    });
    let result = w.engine.call("proposal.create", args, &w.author);
    let expect = &case["expect"];
    if let Some(error) = expect.get("error") {
        let e = match result {
            Ok(v) => return Err(format!("expected a refusal, got {v}")),
            Err(e) => e,
        };
        let code: ErrorCode = str_of(&error["code"]).parse().expect("a known code");
        if e.code() != code {
            return Err(format!("code {} ({e}), expected {code}", e.code()));
        }
        let contains = str_of(&error["message_contains"]);
        if !e.message().contains(&contains) {
            return Err(format!("message {:?} lacks {contains:?}", e.message()));
        }
        if !subset(&error["details"], e.details()) {
            return Err(format!(
                "details {} do not include {}",
                e.details(),
                error["details"]
            ));
        }
        if fingerprint(root) != store_before {
            return Err("a refusal changed the store".into());
        }
        if tree(root) != before {
            return Err("a refusal changed a file".into());
        }
        return Ok(());
    }
    let created = result.map_err(|e| format!("refused: {e} {}", e.details()))?;
    let revision = &created["revision"];
    let want_format = match case["format"].as_str() {
        Some("codex") => "codex_patch",
        _ => "search_replace",
    };
    if revision["format"] != want_format {
        return Err(format!("stored as {}", revision["format"]));
    }
    let mut matches = Vec::new();
    for f in revision["changeset"].as_array().expect("changeset") {
        for m in f["matches"].as_array().into_iter().flatten() {
            matches.push(
                json!({"path": f["path"], "hunk": m["hunk"], "rung": m["rung"], "line": m["line"]}),
            );
        }
    }
    matches.sort_by_key(|m| m["hunk"].as_u64());
    if Value::Array(matches.clone()) != expect["matches"] {
        return Err(format!(
            "matches {} expected {}",
            Value::Array(matches),
            expect["matches"]
        ));
    }
    // Governed to the end: reviewed, validated and applied.
    let pid = str_of(&created["proposal"]["id"]);
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
    );
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
    if report["valid"] != true {
        return Err(format!("not valid: {report}"));
    }
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let mut want = before;
    for (path, content) in expect["files"].as_object().expect("files") {
        match content {
            Value::Null => {
                if want.remove(path).is_none() {
                    return Err(format!("{path} is expected removed but was not there"));
                }
            }
            c => {
                want.insert(path.clone(), str_of(&c["text"]).into_bytes());
            }
        }
    }
    let got = tree(root);
    if got != want {
        let differ: Vec<&String> = want
            .keys()
            .chain(got.keys())
            .filter(|k| want.get(*k) != got.get(*k))
            .collect();
        return Err(format!(
            "the files differ from the expected bytes: {differ:?}"
        ));
    }
    Ok(())
}

#[test]
fn every_agent_edit_yields_the_intended_bytes_or_is_refused_changing_nothing() {
    let cases = corpus();
    assert!(cases.len() >= 60, "the corpus has {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        if let Err(why) = run(case) {
            failures.push(format!("{}: {why}", case["name"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn the_corpus_covers_every_rung_refusal_and_file_operation() {
    let cases = corpus();
    let names: Vec<&str> = cases.iter().filter_map(|c| c["name"].as_str()).collect();
    let text = serde_json::to_string(&cases).expect("serializes");
    for rung in ["\"exact\"", "\"trailing_whitespace\"", "\"whitespace\""] {
        assert!(text.contains(rung), "no case matches at {rung}");
    }
    for word in [
        "ambiguous",
        "missing",
        "move",
        "delete",
        "add",
        "CRLF",
        "without a final newline",
        "three hunks",
        "nothing applies",
    ] {
        assert!(
            names.iter().any(|n| n.contains(word)),
            "no case named with {word:?}"
        );
    }
    for format in ["codex", "search_replace"] {
        let n = cases.iter().filter(|c| c["format"] == format).count();
        assert!(n >= 25, "{n} {format} cases");
    }
}

// ---- the tool surface around the formats ----

const CODEX_EXACT: &str =
    "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello, codex\n*** End Patch\n";
const SR_TRAILING: &str =
    "hello.txt\n<<<<<<< SEARCH\nhello   \n=======\nhello, blocks\n>>>>>>> REPLACE\n";

fn create(w: &World, patch: &str, format: &str) -> Result<Value, roundtable::ToolError> {
    w.engine.call(
        "proposal.create",
        json!({"task_id": "t1", "title": "Agent edit", "summary_md": "From an agent.",
               "patch": patch, "patch_format": format}),
        &w.author,
    )
}

#[test]
fn patch_format_refusals_name_the_field_and_change_nothing() {
    let w = World::new();
    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch_format": "codex",
               "edit_plan": super::tools::edit_plan()}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "patch_format");
    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": CODEX_EXACT,
               "patch_format": "git"}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "patch_format");
    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": CODEX_EXACT,
               "patch_format": "codex", "edit_plan": super::tools::edit_plan()}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(e.details()["field"], "edit_plan");
    // A Codex envelope sent as a unified diff: refused, with the format it
    // reads like.
    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": CODEX_EXACT}),
        &w.author,
        ErrorCode::InvalidPatch,
    );
    assert_eq!(e.details()["suggested_patch_format"], "codex", "{e}");
    assert!(e.message().contains("patch_format \"codex\""), "{e}");
    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": SR_TRAILING}),
        &w.author,
        ErrorCode::InvalidPatch,
    );
    assert_eq!(e.details()["suggested_patch_format"], "search_replace");
}

#[test]
fn the_rung_is_recorded_shown_and_kept_out_of_the_changeset_digest() {
    let w = World::new();
    let a = create(&w, CODEX_EXACT, "codex").expect("codex");
    assert_eq!(a["revision"]["format"], "codex_patch");
    assert_eq!(
        a["revision"]["changeset"][0]["matches"],
        json!([{"hunk": 1, "rung": "exact", "line": 1}])
    );
    let pid = str_of(&a["proposal"]["id"]);
    // attach_patch takes the formats too; the content reads back as text.
    let b = w
        .engine
        .call(
            "proposal.attach_patch",
            json!({"proposal_id": pid, "expected_revision": 1, "patch": SR_TRAILING,
                   "patch_format": "search_replace"}),
            &w.author,
        )
        .expect("attach");
    assert_eq!(b["revision"]["format"], "search_replace");
    let got = w.ok(
        "proposal.get",
        json!({"proposal_id": pid, "include_content": true}),
        &w.host,
    );
    assert_eq!(got["content"], SR_TRAILING);
    let files = w.ok("proposal.files", json!({"proposal_id": pid}), &w.host);
    assert_eq!(
        files["files"][0]["matches"],
        json!([{"hunk": 1, "rung": "trailing_whitespace", "line": 1}])
    );
    assert_eq!(files["files"][0]["added_lines"], 1);
    // Reviewers read the rendered diff.
    let diff = w.ok("proposal.diff", json!({"proposal_id": pid}), &w.host);
    assert!(
        str_of(&diff["files"][0]["diff"]).contains("+hello, blocks"),
        "{diff}"
    );
    // The same result matched exactly and loosely: one changeset digest.
    let c = create(
        &w,
        "hello.txt\n<<<<<<< SEARCH\nhello\n=======\nhello, blocks\n>>>>>>> REPLACE\n",
        "search_replace",
    )
    .expect("exact");
    assert_eq!(c["revision"]["changeset"][0]["matches"][0]["rung"], "exact");
    assert_eq!(
        c["revision"]["changeset_digest"],
        b["revision"]["changeset_digest"]
    );
    // A unified diff records no matches.
    let d = w.create();
    assert!(d["revision"]["changeset"][0].get("matches").is_none());
}

#[test]
fn loose_match_in_the_policy_asks_a_person_to_approve_a_loosely_matched_revision() {
    let w = World::new();
    let set = w.ok(
        "policy.set",
        json!({"document": "version = 1\n[human_approval]\nloose_match = true\n"}),
        &w.host,
    );
    w.ok(
        "policy.activate",
        json!({"version": set["policy"]["version"]}),
        &w.host,
    );
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let stage = |pid: &str| {
        w.ok(
            "proposal.request_review",
            json!({"proposal_id": pid}),
            &w.author,
        );
        w.ok(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &w.reviewer,
        );
        let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
        let human = report["stages"]
            .as_array()
            .expect("stages")
            .iter()
            .find(|s| s["name"] == "human_approval")
            .expect("a human_approval stage")
            .clone();
        let requirement = report["policy"]["requirements"]
            .as_array()
            .expect("requirements")
            .iter()
            .find(|r| r["id"] == "human_approval")
            .cloned()
            .unwrap_or(Value::Null);
        (report["valid"].clone(), human, requirement)
    };
    let loose = create(&w, SR_TRAILING, "search_replace").expect("loose");
    let (valid, human, requirement) = stage(&str_of(&loose["proposal"]["id"]));
    assert_eq!(valid, false);
    assert_eq!(human["status"], "failed", "{human}");
    assert_eq!(
        requirement["reasons"],
        json!(["hunk 1 of hello.txt matched only at rung trailing_whitespace (line 1)"]),
        "{requirement}"
    );
    let exact = create(&w, CODEX_EXACT, "codex").expect("exact");
    let (valid, human, _) = stage(&str_of(&exact["proposal"]["id"]));
    assert_eq!(valid, true, "{human}");
}

#[test]
fn a_version_7_store_is_migrated_to_8_keeping_revisions_and_their_references() {
    if crate::support::postgres() {
        return; // an SQLite migration
    }
    let dir = scratch_dir();
    std::fs::write(dir.path().join("hello.txt"), "hello\n").expect("write");
    std::fs::create_dir(dir.path().join(".roundtable")).expect("mkdir");
    let db_path = dir.path().join(".roundtable/store.db");
    let zero = "blob:sha256:0000000000000000000000000000000000000000000000000000000000000000";
    let state = "state:sha256:0000000000000000000000000000000000000000000000000000000000000000";
    {
        let db = crate::support::raw_sqlite(&db_path);
        for sql in [
            include_str!("../../roundtable-store/src/store/v1.sql"),
            include_str!("../../roundtable-store/src/store/v2.sql"),
            include_str!("../../roundtable-store/src/store/v3.sql"),
            include_str!("../../roundtable-store/src/store/v4.sql"),
            include_str!("../../roundtable-store/src/store/v5.sql"),
            include_str!("../../roundtable-store/src/store/v6.sql"),
            include_str!("../../roundtable-store/src/store/v7.sql"),
        ] {
            db.execute_batch(sql).expect("schema");
        }
        db.execute_batch(&format!(
            "INSERT INTO agents (id, roles, enabled, display_name, created_at, updated_at)
                 VALUES ('old', '[\"author\"]', 1, NULL, 1, 1), ('rev', '[\"reviewer\"]', 1, NULL, 1, 1);
             INSERT INTO tasks (id, title, summary_md, created_by, created_at)
                 VALUES ('t-old', 'From v7', NULL, 'orchestrator:host', 1);
             INSERT INTO blobs (digest, size, data) VALUES ('{zero}', 1, x'00');
             INSERT INTO proposals (seq, id, task_id, author, title, summary_md, risk, status, latest_revision, created_at, updated_at)
                 VALUES (3, 'p-b', 't-old', 'old', 'B', 'b', 'normal', 'in_review', 2, 3, 3);
             INSERT INTO revisions (proposal_id, number, format, digest, changeset, changeset_digest,
                                    affected_resources, base_state, base_git_head, note_md, created_by, created_at,
                                    diff_digest, rebased_from, change_id)
                 VALUES ('p-b', 1, 'patch', '{zero}', '[]', 'sha256:01', '[]', '{state}', NULL, NULL, 'agent:old', 3, '{zero}', NULL, 'sha256:c1'),
                        ('p-b', 2, 'edit_plan', '{zero}', '[]', 'sha256:02', '[\"file:a\"]', '{state}', 'abc', 'n', 'agent:old', 4, '{zero}', 1, NULL);
             INSERT INTO votes (seq, id, proposal_id, revision, agent_id, vote, reason_md, created_at)
                 VALUES (5, 'v-1', 'p-b', 2, 'rev', 'approve', NULL, 5);
             PRAGMA user_version = 7;"
        ))
        .expect("v7 rows");
    }
    let engine = roundtable::Engine::open(dir.path(), crate::support::test_options(dir.path()))
        .expect("open migrates");
    let db = crate::support::raw_sqlite(&db_path);
    let version: i64 = db
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, roundtable::store::SCHEMA_VERSION);
    assert!(version >= 8);
    type Row = (
        String,
        i64,
        String,
        String,
        Option<String>,
        Option<i64>,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = db
        .prepare("SELECT proposal_id, number, format, changeset_digest, base_git_head, rebased_from, change_id, note_md FROM revisions ORDER BY number")
        .expect("prepare")
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, r.get(7)?))
        })
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        rows,
        vec![
            (
                "p-b".into(),
                1,
                "patch".into(),
                "sha256:01".into(),
                None,
                None,
                Some("sha256:c1".into()),
                None
            ),
            (
                "p-b".into(),
                2,
                "edit_plan".into(),
                "sha256:02".into(),
                Some("abc".into()),
                Some(1),
                None,
                Some("n".into())
            ),
        ]
    );
    let dangling: Option<String> = db
        .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
        .ok();
    assert_eq!(dangling, None);
    db.execute_batch("PRAGMA foreign_keys = ON").expect("fk on");
    // Still immutable; the widened CHECK; the references still enforced.
    assert!(db
        .execute("UPDATE revisions SET note_md = 'x' WHERE number = 1", [])
        .is_err());
    assert!(db.execute("DELETE FROM revisions", []).is_err());
    let insert = |pid: &str, n: i64, format: &str| {
        db.execute(
            &format!(
                "INSERT INTO revisions (proposal_id, number, format, digest, changeset, changeset_digest,
                                        affected_resources, base_state, created_by, created_at)
                 VALUES ('{pid}', {n}, '{format}', '{zero}', '[]', 'x', '[]', '{state}', 'agent:old', 1)"
            ),
            [],
        )
    };
    assert!(insert("p-b", 3, "bogus").is_err());
    assert!(insert("p-none", 1, "codex_patch").is_err());
    insert("p-b", 3, "codex_patch").expect("codex_patch is a format");
    insert("p-b", 4, "search_replace").expect("search_replace is a format");
    assert!(db
        .execute(
            "INSERT INTO votes (seq, id, proposal_id, revision, agent_id, vote, created_at)
             VALUES (6, 'v-2', 'p-b', 9, 'rev', 'approve', 6)",
            [],
        )
        .is_err());
    // And the tools read the old rows.
    let host = roundtable::Actor::orchestrator(super::tools::id("host"));
    let got = engine
        .call(
            "proposal.get",
            json!({"proposal_id": "p-b", "revision": 2}),
            &host,
        )
        .expect("proposal.get on a migrated store");
    assert_eq!(got["revision"]["format"], "edit_plan");
    assert_eq!(got["revisions"].as_array().map(Vec::len), Some(4));
}
