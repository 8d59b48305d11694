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
