//! The module graph has layers and no cycle: the tool layer (`tools`), the
//! typed session over it (`session`) and the engine that holds them are
//! the top; nothing below imports them. Checked on the source, so a `use`
//! that breaks a layer fails here before it can grow into a cycle.

use std::path::{Path, PathBuf};

/// The modules above the rest: only they (and `lib.rs`) may name the tool
/// layer, the session or the engine.
const TOP: &[&str] = &["tools", "tools.rs", "session.rs", "engine.rs", "lib.rs"];

/// What a lower module must not name.
const ABOVE: &[&str] = &[
    "crate::tools",
    "crate::session",
    "crate::engine",
    "crate::Engine",
    "crate::Session",
    "crate::ToolError",
    "crate::Request",
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read the source tree") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file, without comments (a doc link may name anything).
fn code(path: &Path) -> Vec<(usize, String)> {
    std::fs::read_to_string(path)
        .expect("read a source file")
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.split("//").next().unwrap_or("").to_owned()))
        .collect()
}

fn violations(src: &Path, top: &[&str], above: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    sources(src, &mut files);
    let mut found = Vec::new();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src");
        let first = rel
            .components()
            .next()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if top.contains(&first.as_str()) {
            continue;
        }
        for (n, line) in code(&file) {
            for name in above {
                if line.contains(name) {
                    found.push(format!("{}:{n}: names {name}", rel.display()));
                }
            }
        }
    }
    found
}

#[test]
fn no_module_below_the_tool_layer_names_it_or_the_engine() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = violations(&src, TOP, ABOVE);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn the_check_finds_an_upward_use() {
    // A test that cannot fail is a defect: a planted upward `use` is found.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("model")).expect("mkdir");
    std::fs::write(
        dir.path().join("model/mod.rs"),
        "//! doc naming crate::tools is fine\nuse crate::tools::ToolError;\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("engine.rs"),
        "use crate::tools::ToolError;\n",
    )
    .expect("write");
    let found = violations(dir.path(), TOP, ABOVE);
    // The model's `use` is found (its doc comment is not); the engine, at
    // the top, may use the tools.
    assert_eq!(found, ["model/mod.rs:2: names crate::tools"]);
}

#[test]
fn the_model_policy_and_store_import_no_sql_or_tool_error_above_them() {
    // The pure layers: the model and the policy hold no rusqlite.
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let pure = [
        "model",
        "policy",
        "policy.rs",
        "coverage.rs",
        "diff",
        "edit",
        "edit.rs",
    ];
    let mut found = Vec::new();
    for name in pure {
        let mut files = Vec::new();
        let path = src.join(name);
        if path.is_dir() {
            sources(&path, &mut files);
        } else {
            files.push(path);
        }
        for file in files {
            for (n, line) in code(&file) {
                if line.contains("rusqlite") {
                    found.push(format!("{}:{n}", file.display()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "SQL in a pure layer:\n{}",
        found.join("\n")
    );
}
