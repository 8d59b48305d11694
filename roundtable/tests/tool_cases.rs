//! Replays the language-neutral scenario corpus, `tests/cases/tools/*.json`
//! (the format: its README.md), through `Engine::call`. The C, Go and
//! Python suites replay the same files through their bindings.

use roundtable::{Actor, Engine};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/tools")
}

/// `value` with every `${name}` replaced by what `saved` holds: a string
/// that is exactly `${name}` becomes the saved value itself.
fn substitute(value: &Value, saved: &BTreeMap<String, Value>) -> Value {
    match value {
        Value::String(s) => {
            if let Some(name) = s.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
                if let Some(v) = saved.get(name) {
                    return v.clone();
                }
            }
            let mut out = s.clone();
            for (name, v) in saved {
                let text = v
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string());
                out = out.replace(&format!("${{{name}}}"), &text);
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, saved)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, saved)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

/// Whether `actual` has everything `expected` names: objects by key
/// (recursively), arrays element by element with the same length, other
/// values equal. `Err` names the first path that differs.
fn subset(expected: &Value, actual: &Value, at: &str) -> Result<(), String> {
    match (expected, actual) {
        (Value::Object(want), Value::Object(got)) => {
            for (k, v) in want {
                let here = format!("{at}/{k}");
                match got.get(k) {
                    Some(g) => subset(v, g, &here)?,
                    None => return Err(format!("{here}: missing")),
                }
            }
            Ok(())
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                return Err(format!(
                    "{at}: {} items, expected {}",
                    got.len(),
                    want.len()
                ));
            }
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                subset(w, g, &format!("{at}/{i}"))?;
            }
            Ok(())
        }
        (w, g) if w == g => Ok(()),
        (w, g) => Err(format!("{at}: {g}, expected {w}")),
    }
}

fn write_files(root: &Path, files: &Value) {
    for (path, text) in files.as_object().expect("files is an object") {
        let at = root.join(path);
        std::fs::create_dir_all(at.parent().expect("a parent")).expect("mkdir");
        std::fs::write(at, text.as_str().expect("file text")).expect("write");
    }
}

fn check_files(root: &Path, files: &Value) -> Result<(), String> {
    for (path, want) in files.as_object().expect("files is an object") {
        let got = std::fs::read_to_string(root.join(path)).ok();
        if got.as_deref() != want.as_str() {
            return Err(format!("file {path}: {got:?}, expected {want}"));
        }
    }
    Ok(())
}

/// Runs one scenario; `Err` names the step and what differed.
fn run(case: &Value) -> Result<usize, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("repo");
    std::fs::create_dir(&root).expect("mkdir");
    write_files(&root, &case["files"]);
    let engine =
        Engine::open(&root, crate::support::test_options(&root)).map_err(|e| e.to_string())?;
    let mut saved = BTreeMap::new();
    let steps = case["steps"].as_array().ok_or("no steps")?;
    for (i, step) in steps.iter().enumerate() {
        let tool = step["tool"].as_str().ok_or("a step without a tool")?;
        let fail = |why: String| format!("step {i} ({tool}): {why}");
        let args = substitute(&step["args"], &saved);
        let expect = substitute(&step["expect"], &saved);
        let outcome = match Actor::parse(step["as"].as_str().ok_or("a step without `as`")?) {
            Ok(actor) => engine.call(tool, args, &actor),
            // An actor no binding can even build is refused as the bindings refuse it.
            Err(_) => Err(roundtable::ToolError::invalid_argument(
                "actor",
                "not an actor",
            )),
        };
        match (outcome, expect.get("error")) {
            (Ok(result), None) => {
                subset(&expect["ok"], &result, "").map_err(fail)?;
                for (name, pointer) in step["save"].as_object().into_iter().flatten() {
                    let pointer = pointer.as_str().ok_or("a save pointer is a string")?;
                    let value = result
                        .pointer(pointer)
                        .ok_or_else(|| fail(format!("nothing at {pointer} to save")))?;
                    saved.insert(name.clone(), value.clone());
                }
            }
            (Ok(result), Some(code)) => {
                return Err(fail(format!("succeeded ({result}), expected {code}")))
            }
            (Err(e), None) => {
                return Err(fail(format!(
                    "refused: {}: {}",
                    e.code().as_str(),
                    e.message()
                )))
            }
            (Err(e), Some(code)) => {
                if Some(e.code().as_str()) != code.as_str() {
                    return Err(fail(format!(
                        "{}: {}, expected {code}",
                        e.code().as_str(),
                        e.message()
                    )));
                }
                if let Some(details) = expect.get("details") {
                    subset(details, e.details(), "details").map_err(fail)?;
                }
            }
        }
        if let Some(files) = step.get("files") {
            check_files(&root, files).map_err(fail)?;
        }
    }
    Ok(steps.len())
}

#[cfg_attr(
    not(all(
        feature = "rust",
        feature = "python",
        feature = "go",
        feature = "typescript",
        feature = "javascript",
        feature = "c"
    )),
    ignore = "needs the rust, python, go, typescript, javascript, c symbol grammar"
)]
#[test]
fn every_scenario_of_the_corpus_replays() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .expect("tests/cases/tools")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "only {} scenarios", files.len());
    let mut failures = Vec::new();
    let mut steps = 0;
    for file in &files {
        let case: Value =
            serde_json::from_slice(&std::fs::read(file).expect("read")).expect("JSON");
        match run(&case) {
            Ok(n) => steps += n,
            Err(why) => failures.push(format!("{}: {why}", file.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(steps >= 50, "only {steps} steps replayed");
}

/// The runner is not a rubber stamp: a wrong expectation, a wrong code and
/// a wrong file each fail it.
#[test]
fn a_wrong_expectation_fails_the_runner() {
    let base: Value = serde_json::from_slice(
        &std::fs::read(corpus().join("governed-change.json")).expect("read"),
    )
    .expect("JSON");
    let mut wrong_value = base.clone();
    wrong_value["steps"][0]["expect"]["ok"]["agent"]["id"] = Value::from("someone-else");
    let mut wrong_code = base.clone();
    wrong_code["steps"][0]["expect"] = serde_json::json!({"error": "conflict"});
    let mut wrong_file = base.clone();
    wrong_file["steps"][9]["files"]["src/lib.rs"] = Value::from("not this\n");
    let mut wrong_length = base;
    wrong_length["steps"][0]["expect"]["ok"]["agent"]["roles"] = serde_json::json!(["author", "x"]);
    for (what, case) in [
        ("value", wrong_value),
        ("code", wrong_code),
        ("file", wrong_file),
        ("length", wrong_length),
    ] {
        assert!(run(&case).is_err(), "a wrong {what} passed");
    }
}

/// Each kind of wrong expectation, put into governed-demo.json (which has
/// refusals with details, saves and file checks), fails the runner at the
/// step it spoiled, as in the C, Go and Python runners.
#[cfg_attr(
    not(all(
        feature = "rust",
        feature = "python",
        feature = "go",
        feature = "typescript",
        feature = "javascript",
        feature = "c"
    )),
    ignore = "needs the rust, python, go, typescript, javascript, c symbol grammar"
)]
#[test]
fn every_kind_of_wrong_expectation_fails_at_its_step() {
    let base: Value =
        serde_json::from_slice(&std::fs::read(corpus().join("governed-demo.json")).expect("read"))
            .expect("JSON");
    let steps = base["steps"].as_array().expect("steps");
    let first = |has: &dyn Fn(&Value) -> bool| steps.iter().position(has).expect("such a step");
    let refusal = first(&|s| s["expect"].get("error").is_some());
    let details = first(&|s| s["expect"].get("details").is_some());
    let files = first(&|s| s.get("files").is_some());
    let save = first(&|s| s.get("save").is_some());
    type Spoil = Box<dyn Fn(&mut Value)>;
    let spoilers: Vec<(&str, usize, Spoil)> = vec![
        (
            "type",
            0,
            Box::new(|c| c["steps"][0]["expect"]["ok"]["created"] = 1.into()),
        ),
        (
            "missing key",
            0,
            Box::new(|c| c["steps"][0]["expect"]["ok"]["no_such_field"] = Value::Null),
        ),
        (
            "expected success",
            refusal,
            Box::new(move |c| c["steps"][refusal]["expect"] = serde_json::json!({"ok": {}})),
        ),
        (
            "code",
            refusal,
            Box::new(move |c| c["steps"][refusal]["expect"]["error"] = "not_found".into()),
        ),
        (
            "details",
            details,
            Box::new(move |c| {
                c["steps"][details]["expect"]["details"] =
                    serde_json::json!({"no_such_detail": true})
            }),
        ),
        (
            "absence",
            files,
            Box::new(move |c| c["steps"][files]["files"]["src/lib.rs"] = Value::Null),
        ),
        (
            "save",
            save,
            Box::new(move |c| {
                let names: Vec<String> = c["steps"][save]["save"]
                    .as_object()
                    .expect("save")
                    .keys()
                    .cloned()
                    .collect();
                for name in names {
                    c["steps"][save]["save"][name.as_str()] = "/no/such/pointer".into();
                }
            }),
        ),
    ];
    for (what, at, spoil) in spoilers {
        let mut case = base.clone();
        spoil(&mut case);
        match run(&case) {
            Ok(_) => panic!("a wrong {what} passed"),
            Err(why) => assert!(
                why.starts_with(&format!("step {at} (")),
                "a wrong {what} (step {at}) failed elsewhere: {why}"
            ),
        }
    }
    run(&base).expect("the unspoiled scenario passes");
}
