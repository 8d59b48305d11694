//! `roundtable demo`: one change, end to end, in a fresh temporary
//! directory — what exists of the governed path today: parse, check, apply
//! all-or-nothing, refuse a stale patch without touching anything, and
//! undo by applying the reverse patch.

use crate::Failure;
use roundtable::diff::{self, ParseOptions};
use roundtable::workspace;
use roundtable::ErrorCode;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

const LIB_RS: &str = "pub fn greet(name: &str) -> String {\n    format!(\"Hello, {name}\")\n}\n";
const README: &str = "demo project\n";

const AGENT_PATCH: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 3b18e51..c0d2a5f 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,7 @@
 pub fn greet(name: &str) -> String {
     format!(\"Hello, {name}\")
 }
+
+pub fn farewell(name: &str) -> String {
+    format!(\"Goodbye, {name}\")
+}
diff --git a/README b/README.md
similarity index 60%
rename from README
rename to README.md
index 1e4e5a1..5a5d2b0 100644
--- a/README
+++ b/README.md
@@ -1 +1,2 @@
 demo project
+Run ./run.sh to try it.
diff --git a/run.sh b/run.sh
new file mode 100755
index 0000000..7c4a013
--- /dev/null
+++ b/run.sh
@@ -0,0 +1,2 @@
+#!/bin/sh
+cargo test
";

/// A second agent's patch, written against the tree before the first
/// change landed: `README` has since been renamed away.
const STALE_PATCH: &str = "\
diff --git a/README b/README
--- a/README
+++ b/README
@@ -1 +1 @@
-demo project
+Demo project
";

fn snapshot(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failure> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                out.insert(rel, fs::read(&path).map_err(io)?);
            }
        }
    }
    Ok(out)
}

fn io(e: std::io::Error) -> Failure {
    Failure::new(ErrorCode::Io, e.to_string(), json!({}))
}

fn verify(ok: bool, what: &str) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(Failure::new(
            ErrorCode::Io,
            format!("demo check failed: {what}"),
            json!({"step": what}),
        ))
    }
}

pub(crate) fn run(keep: bool) -> Result<Value, Failure> {
    let dir = tempfile::Builder::new()
        .prefix("roundtable-demo-")
        .tempdir()
        .map_err(io)?;
    let root = dir.path();
    fs::create_dir(root.join("src")).map_err(io)?;
    fs::write(root.join("src/lib.rs"), LIB_RS).map_err(io)?;
    fs::write(root.join("README"), README).map_err(io)?;
    let before = snapshot(root)?;
    let mut steps = Vec::new();

    // 1. The agent's patch: parse, check, apply.
    let patch = diff::parse(AGENT_PATCH.as_bytes(), &ParseOptions::default())?;
    steps.push(json!({"step": "parse", "files": patch.files().len()}));
    let planned = workspace::apply_patch(root, &patch, true)?;
    verify(snapshot(root)? == before, "--check wrote nothing")?;
    steps.push(json!({"step": "check", "changes": planned}));
    let applied = workspace::apply_patch(root, &patch, false)?;
    let after = snapshot(root)?;
    verify(
        after.contains_key("README.md") && !after.contains_key("README"),
        "rename landed",
    )?;
    verify(
        after
            .get("src/lib.rs")
            .is_some_and(|c| c.windows(8).any(|w| w == b"farewell")),
        "modification landed",
    )?;
    steps.push(json!({"step": "apply", "changes": applied}));

    // 2. A stale patch is refused and changes nothing.
    let stale = diff::parse(STALE_PATCH.as_bytes(), &ParseOptions::default())?;
    let refused = match workspace::apply_patch(root, &stale, false) {
        Ok(_) => {
            return Err(Failure::new(
                ErrorCode::Io,
                "demo check failed: stale patch applied",
                json!({}),
            ))
        }
        Err(e) => e,
    };
    verify(
        snapshot(root)? == after,
        "refused patch left every file as it was",
    )?;
    steps.push(
        json!({"step": "refuse_stale", "code": refused.code(), "message": refused.to_string()}),
    );

    // 3. The reverse patch restores the original tree exactly.
    let reverse = patch
        .reverse()
        .map_err(|e| Failure::new(e.code(), e.to_string(), json!({})))?;
    workspace::apply_patch(root, &reverse, false)?;
    verify(
        snapshot(root)? == before,
        "reverse patch restored the original",
    )?;
    steps.push(json!({"step": "undo", "restored": true}));

    let location = if keep {
        Some(dir.keep().display().to_string())
    } else {
        None
    };
    Ok(json!({"ok": true, "root": location, "steps": steps}))
}
