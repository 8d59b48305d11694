//! `roundtable demo`: one governed change, end to end, in a fresh
//! temporary repository — what exists of the governed path today:
//!
//! 1. the host registers an author and a reviewer agent and a task;
//! 2. the author proposes a patch (revision 1), revises it (revision 2) and
//!    asks for review; the reviewer approves revision 2; the host records a
//!    passing test;
//! 3. the host applies the approved revision's stored bytes (after checking
//!    them against their digest) all-or-nothing;
//! 4. a second agent's stale patch is refused without touching anything;
//! 5. the change is undone by applying the reverse patch;
//! 6. the audit log's hash chain verifies.
//!
//! Every step's result is checked; the demo fails if any is wrong.

use roundtable::diff::{self, ParseOptions};
use roundtable::{workspace, Actor, Engine, EngineOptions, ErrorCode, Id, ToolError};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

type Failure = ToolError;

/// The author's first revision: only the new function.
const FIRST_PATCH: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,7 @@
 pub fn greet(name: &str) -> String {
     format!(\"Hello, {name}\")
 }
+
+pub fn farewell(name: &str) -> String {
+    format!(\"Bye, {name}\")
+}
";

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

/// Every project file's bytes (roundtable's own `.roundtable/` excluded).
fn snapshot(root: &Path) -> Result<BTreeMap<String, Vec<u8>>, Failure> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.file_name().is_some_and(|n| n == ".roundtable") {
                // roundtable's own store and cache are not the project's files.
                continue;
            }
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

fn id(s: &str) -> Result<Id, Failure> {
    Id::new(s).map_err(|e| Failure::new(ErrorCode::InvalidArgument, e.to_string(), json!({})))
}

fn text<'v>(v: &'v Value, pointer: &str) -> Result<&'v str, Failure> {
    v.pointer(pointer).and_then(Value::as_str).ok_or_else(|| {
        Failure::new(
            ErrorCode::Io,
            format!("demo check failed: no {pointer} in {v}"),
            json!({}),
        )
    })
}

/// The governed part: agents, a task, a proposal with two revisions, a
/// review, a vote and a test result, all through the tool surface.
/// Returns the approved revision's patch bytes as read back from the store.
fn govern(engine: &Engine, steps: &mut Vec<Value>) -> Result<String, Failure> {
    let host = Actor::orchestrator(id("host")?);
    let author = Actor::agent(id("alice")?);
    let reviewer = Actor::agent(id("bob")?);
    engine.call("agent.register", json!({"agent_id": "alice", "roles": ["author"]}), &host)?;
    engine.call("agent.register", json!({"agent_id": "bob", "roles": ["reviewer"]}), &host)?;
    engine.call("task.create", json!({"task_id": "farewell", "title": "Say goodbye"}), &host)?;
    steps.push(json!({"step": "register", "agents": ["alice", "bob"], "task": "farewell"}));

    let created = engine.call(
        "proposal.create",
        json!({
            "task_id": "farewell", "title": "Add farewell()", "summary_md": "Adds `farewell`.",
            "patch": FIRST_PATCH, "affected_resources": ["file:src/lib.rs"],
        }),
        &author,
    )?;
    let pid = text(&created, "/proposal/id")?.to_owned();
    steps.push(json!({"step": "propose", "proposal": pid, "revision": created["revision"]["number"], "digest": created["revision"]["digest"]}));

    // The reviewer cannot vote before review is requested, and the author
    // can never vote on its own proposal.
    let early = engine
        .call("vote.cast", json!({"proposal_id": pid, "revision": 1, "vote": "approve"}), &reviewer)
        .err()
        .map(|e| e.code());
    verify(early == Some(ErrorCode::IllegalTransition), "no vote before review")?;

    let revised = engine.call(
        "proposal.attach_patch",
        json!({
            "proposal_id": pid, "expected_revision": 1, "patch": AGENT_PATCH,
            "affected_resources": ["directory:."], "note_md": "Also renames README and adds run.sh.",
        }),
        &author,
    )?;
    verify(revised["proposal"]["latest_revision"] == 2, "revision 2")?;
    steps.push(json!({"step": "revise", "revision": 2, "digest": revised["revision"]["digest"], "files": revised["revision"]["changeset"]}));

    engine.call("proposal.request_review", json!({"proposal_id": pid}), &author)?;
    let own = engine
        .call("vote.cast", json!({"proposal_id": pid, "revision": 2, "vote": "approve"}), &author)
        .err()
        .map(|e| e.code());
    verify(own == Some(ErrorCode::Forbidden), "authors do not vote")?;
    let stale_vote = engine
        .call("vote.cast", json!({"proposal_id": pid, "revision": 1, "vote": "approve"}), &reviewer)
        .err()
        .map(|e| e.code());
    verify(stale_vote == Some(ErrorCode::Conflict), "no vote on a superseded revision")?;
    let vote = engine.call(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 2, "vote": "approve", "reason_md": "Looks right."}),
        &reviewer,
    )?;
    engine.call(
        "test.record",
        json!({"proposal_id": pid, "revision": 2, "name": "unit", "status": "passed"}),
        &host,
    )?;
    steps.push(json!({"step": "review", "vote": vote["vote"], "test": "passed"}));

    let got = engine.call(
        "proposal.get",
        json!({"proposal_id": pid, "revision": 2, "include_content": true}),
        &host,
    )?;
    Ok(text(&got, "/content")?.to_owned())
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

    let engine = Engine::open(root, EngineOptions::default())?;
    let approved = govern(&engine, &mut steps)?;
    verify(snapshot(root)? == before, "proposing and reviewing wrote no file")?;

    // The host applies the approved revision's stored bytes.
    let patch = diff::parse(approved.as_bytes(), &ParseOptions::default())?;
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

    let host = Actor::orchestrator(id("host")?);
    let chain = engine.call("events.verify", json!({}), &host)?;
    verify(chain["valid"] == true, "the audit log verifies")?;
    steps.push(json!({"step": "audit", "events": chain["checked"], "head_digest": chain["head_digest"]}));

    let location = if keep {
        Some(dir.keep().display().to_string())
    } else {
        None
    };
    Ok(json!({"ok": true, "root": location, "steps": steps}))
}
