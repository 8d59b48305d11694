//! aider's own SEARCH/REPLACE test suite as an oracle
//! (`tests/cases/peers/aider/`: the cases of aider's
//! `tests/basic/test_editblock.py`, Apache-2.0, converted to data). Each case
//! is built into a changeset against its files: a case marked `agree` must
//! give exactly the bytes aider gives for every path aider writes (and
//! touch nothing else); `both_refuse` must be refused where aider raises;
//! a case refused by a rule must carry the rule's code, and the rule must
//! be one the corpus names. No case may land bytes different from aider's.

use roundtable::diff::TreeFile;
use roundtable::edit::agent::{changeset, AgentFormat};
use roundtable::ErrorCode;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn corpus() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/peers/aider/cases.json");
    let text = std::fs::read_to_string(path).expect("cases.json");
    serde_json::from_str(&text).expect("cases.json is JSON")
}

fn text(v: &Value) -> &str {
    v.as_str().expect("a string")
}

/// The case's outcome, or why it disagrees with its declaration.
fn run(case: &Value, rules: &serde_json::Map<String, Value>) -> Result<String, String> {
    let tree: BTreeMap<Vec<u8>, TreeFile> = case["files"]
        .as_object()
        .expect("files")
        .iter()
        .map(|(p, c)| {
            (
                p.as_bytes().to_vec(),
                TreeFile::regular(text(c).as_bytes().to_vec()),
            )
        })
        .collect();
    let result = changeset(
        AgentFormat::SearchReplace,
        text(&case["edit"]).as_bytes(),
        &tree,
    );
    let aider = &case["aider"];
    // Whatever is declared, an accepted change must land aider's bytes.
    if let Ok(cs) = &result {
        let Some(want) = aider["files"].as_object() else {
            return Err(format!(
                "aider refuses ({}), roundtable accepts",
                aider["error"]
            ));
        };
        let got: BTreeMap<&str, Option<&[u8]>> = cs
            .files()
            .iter()
            .map(|f| (f.path.as_str(), f.after.as_ref().map(|a| &a.data[..])))
            .collect();
        let want_paths: BTreeSet<&str> = want.keys().map(String::as_str).collect();
        let got_paths: BTreeSet<&str> = got.keys().copied().collect();
        if want_paths != got_paths {
            return Err(format!(
                "touches {got_paths:?}, aider writes {want_paths:?}"
            ));
        }
        for (p, w) in want {
            if got[p.as_str()] != Some(text(w).as_bytes()) {
                return Err(format!(
                    "DIFFERENT BYTES in {p}: {:?}, aider {:?}",
                    got[p.as_str()].map(String::from_utf8_lossy),
                    text(w)
                ));
            }
        }
    }
    match (&case["roundtable"], result) {
        (Value::String(s), Ok(_)) if s == "agree" => Ok("agree".into()),
        (Value::String(s), Err(_)) if s == "both_refuse" && aider.get("error").is_some() => {
            Ok("both refuse".into())
        }
        (Value::Object(r), Err(e)) => {
            let rule = text(&r["refused"]);
            if !rules.contains_key(rule) {
                return Err(format!("the rule {rule:?} is not documented"));
            }
            let code: ErrorCode = text(&r["code"]).parse().expect("a known code");
            if e.code() != code {
                return Err(format!("refused with {} ({e}), declared {code}", e.code()));
            }
            Ok(format!("refused: {rule}"))
        }
        (declared, Ok(_)) => Err(format!("accepted, declared {declared}")),
        (declared, Err(e)) => Err(format!(
            "refused with {} ({e}) {}, declared {declared}",
            e.code(),
            e.details()
        )),
    }
}

#[test]
#[allow(clippy::print_stdout)] // the counts are the corpus's report
fn aider_test_suite_cases_agree_or_are_refused_by_a_documented_rule() {
    let doc = corpus();
    assert_eq!(doc["source"]["repo"], "Aider-AI/aider");
    assert!(text(&doc["licence"]).contains("Apache-2.0"));
    let rules = doc["rules"].as_object().expect("rules");
    let cases = doc["cases"].as_array().expect("cases");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in cases {
        match run(case, rules) {
            Ok(outcome) => *counts.entry(outcome).or_default() += 1,
            Err(why) => failures.push(format!("{}: {why}", text(&case["name"]))),
        }
    }
    println!("aider corpus, {} cases: {counts:?}", cases.len());
    assert!(
        failures.is_empty(),
        "{} of {} cases disagree:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert!(counts.get("agree").is_some_and(|n| *n >= 15), "{counts:?}");
}
