//! Codex's own `apply_patch` cases (`tests/cases/peers/codex/`): its
//! end-to-end scenarios and the cases of its parser, matcher and applier
//! unit tests, each replayed through the pure
//! [`roundtable::edit::agent::changeset`] over an in-memory tree. Every
//! case must end in the files Codex ends in ("agree": both apply to the
//! same bytes, or both refuse and leave the files), or be refused by a
//! rule the corpus names ("refused"), or land the bytes the corpus gives
//! for a documented reason ("differs"). No case may land other bytes.

use roundtable::diff::TreeFile;
use roundtable::edit::agent::{changeset, AgentFormat};
use roundtable::{Changeset, RepoPath};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

type Files = BTreeMap<String, String>;

fn corpus() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/peers/codex/cases.json");
    let text = std::fs::read_to_string(path).expect("cases.json");
    serde_json::from_str(&text).expect("cases.json is JSON")
}

fn files(v: &Value) -> Files {
    v.as_object()
        .expect("a files object")
        .iter()
        .map(|(p, t)| (p.clone(), t.as_str().expect("text").to_owned()))
        .collect()
}

/// The tree a changeset leaves behind.
fn applied(before: &Files, cs: &Changeset) -> Files {
    let mut out = before.clone();
    for f in cs.files() {
        match &f.after {
            Some(c) => {
                out.insert(
                    f.path.as_str().to_owned(),
                    String::from_utf8(c.data.clone()).expect("utf-8 result"),
                );
            }
            None => {
                out.remove(f.path.as_str());
            }
        }
    }
    out
}

/// The rungs each path's hunks matched at, in hunk order.
fn rungs(cs: &Changeset, path: &str) -> Vec<String> {
    let p = RepoPath::from_bytes(path.as_bytes()).expect("a path");
    cs.matches(&p)
        .iter()
        .map(|m| m.rung.as_str().to_owned())
        .collect()
}

/// One case: `Ok(outcome)` or what went wrong.
fn replay(case: &Value) -> Result<&'static str, String> {
    let input = files(&case["files"]);
    let codex = files(&case["codex"]["files"]);
    let rt = &case["roundtable"];
    let tree: BTreeMap<Vec<u8>, TreeFile> = input
        .iter()
        .map(|(p, t)| {
            (
                p.as_bytes().to_vec(),
                TreeFile::regular(t.as_bytes().to_vec()),
            )
        })
        .collect();
    let patch = case["patch"].as_str().expect("patch");
    let result = changeset(AgentFormat::Codex, patch.as_bytes(), &tree);
    let outcome = rt["outcome"].as_str().expect("outcome");
    match (outcome, result) {
        ("agree", Ok(cs)) => {
            let after = applied(&input, &cs);
            if after != codex {
                return Err(format!("lands {after:?}, Codex {codex:?}"));
            }
            if let Some(want) = rt.get("rungs").and_then(Value::as_object) {
                for (path, r) in want {
                    let r: Vec<String> = serde_json::from_value(r.clone()).expect("rungs");
                    if rungs(&cs, path) != r {
                        return Err(format!(
                            "{path} matched at {:?}, not {r:?}",
                            rungs(&cs, path)
                        ));
                    }
                }
            }
            if rt.get("code").is_some() {
                return Err("applies, but the corpus says roundtable refuses it".into());
            }
            Ok("agree (applied)")
        }
        ("agree", Err(e)) => {
            if input != codex {
                return Err(format!("refused ({e}), but Codex changes the files"));
            }
            if rt["code"].as_str() != Some(e.code().as_str()) {
                return Err(format!(
                    "refused with {} ({e}), not {}",
                    e.code().as_str(),
                    rt["code"]
                ));
            }
            Ok("agree (both refuse)")
        }
        ("refused", Err(e)) => {
            if rt["code"].as_str() != Some(e.code().as_str()) {
                return Err(format!(
                    "refused with {} ({e}), not {}",
                    e.code().as_str(),
                    rt["code"]
                ));
            }
            if input == codex {
                return Err("Codex refuses too: the outcome is `agree`".into());
            }
            Ok("refused by a documented rule")
        }
        ("differs", Ok(cs)) => {
            let after = applied(&input, &cs);
            let want = files(&rt["files"]);
            if after != want {
                return Err(format!("lands {after:?}, the corpus says {want:?}"));
            }
            if after == codex {
                return Err("lands what Codex lands: the outcome is `agree`".into());
            }
            Ok("differs for a documented reason")
        }
        (o, Ok(cs)) => Err(format!(
            "applies ({:?}), expected {o}",
            applied(&input, &cs)
        )),
        (o, Err(e)) => Err(format!(
            "refused ({}: {e}), expected {o}",
            e.code().as_str()
        )),
    }
}

#[test]
fn item12_codex_peer_corpus_agrees_with_codex() {
    let doc = corpus();
    assert_eq!(doc["source"]["licence"], "Apache-2.0");
    let cases = doc["cases"].as_array().expect("cases");
    let rules = [
        "no_overwrite",
        "atomic",
        "repository_relative_paths",
        "final_newline_kept",
        "indentation",
    ];
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in cases {
        let name = case["name"].as_str().expect("name");
        assert!(
            case["source"]["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("codex-rs/apply-patch/")),
            "{name}: source"
        );
        if let Some(rule) = case["roundtable"].get("rule") {
            assert!(
                rules.contains(&rule.as_str().expect("rule")),
                "{name}: an undocumented rule {rule}"
            );
        }
        match replay(case) {
            Ok(outcome) => *counts.entry(outcome).or_default() += 1,
            Err(why) => failures.push(format!("{name}: {why}")),
        }
    }
    eprintln!("Codex apply_patch corpus: {} cases", cases.len());
    for (outcome, n) in &counts {
        eprintln!("  {outcome}: {n}");
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases fail:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // Only the one documented case lands other bytes than Codex.
    assert_eq!(counts.get("differs for a documented reason"), Some(&1));
}
