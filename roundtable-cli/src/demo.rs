//! `roundtable demo`: one governed change, end to end, in a fresh temporary
//! git repository with the embedded store.
//!
//! The host registers an author, two reviewers (one with the `security`
//! role) and a task; the author claims one function (a symbol) and proposes
//! a critical change; validation fails (a hunk lies outside the claimed
//! function, no approvals yet) and the author repairs it with a second
//! revision; the reviewers approve, the security reviewer passes it, a human
//! approves; validation passes; the host applies it as one transaction,
//! shows it, and rolls it back to the exact original bytes; the audit
//! chain verifies. Every step's result is checked: the demo fails if any is
//! not what it should be.

use roundtable::{Actor, Engine, EngineOptions, ErrorCode, Id, ToolError};
use serde_json::{json, Value};
use std::fs;
use std::path::Path;

const LIB_RS: &str = "\
pub fn greet(name: &str) -> String {
    format!(\"Hello, {name}\")
}

pub fn shout(name: &str) -> String {
    greet(name).to_uppercase()
}
";

/// The author's first revision: it changes `greet` (which it claimed) but
/// also appends a function outside it.
const FIRST_PATCH: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,7 +1,11 @@
 pub fn greet(name: &str) -> String {
-    format!(\"Hello, {name}\")
+    format!(\"Hello, {name}!\")
 }
 
 pub fn shout(name: &str) -> String {
     greet(name).to_uppercase()
 }
+
+pub fn farewell(name: &str) -> String {
+    format!(\"Goodbye, {name}\")
+}
";

/// The repair: only the claimed function changes.
const SECOND_PATCH: &str = "\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,3 @@
 pub fn greet(name: &str) -> String {
-    format!(\"Hello, {name}\")
+    format!(\"Hello, {name}!\")
 }
";

fn fail(what: impl Into<String>) -> ToolError {
    let what = what.into();
    ToolError::new(
        ErrorCode::Io,
        format!("demo check failed: {what}"),
        json!({"step": what}),
    )
}

fn verify(ok: bool, what: &str) -> Result<(), ToolError> {
    if ok {
        Ok(())
    } else {
        Err(fail(what))
    }
}

fn io(e: std::io::Error) -> ToolError {
    ToolError::new(ErrorCode::Io, e.to_string(), json!({}))
}

fn id(s: &str) -> Result<Id, ToolError> {
    Id::new(s).map_err(|e| ToolError::new(ErrorCode::InvalidArgument, e.to_string(), json!({})))
}

fn text<'v>(v: &'v Value, pointer: &str) -> Result<&'v str, ToolError> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| fail(format!("no {pointer} in the result")))
}

/// A readable one-line summary of a validation report.
fn report_line(report: &Value) -> String {
    let stages = report["stages"].as_array().cloned().unwrap_or_default();
    if report["valid"] == true {
        return "valid: every gate passes".into();
    }
    let failed: Vec<String> = stages
        .iter()
        .filter(|s| s["status"] == "failed")
        .map(|s| {
            let first = s["reasons"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r.get("message").is_some()))
                .and_then(|r| r["message"].as_str())
                .unwrap_or("");
            format!("{} ({first})", s["name"].as_str().unwrap_or("?"))
        })
        .collect();
    format!("not valid — {}", failed.join("; "))
}

/// Set up a git repository with one commit, if git is installed.
fn git_init(root: &Path) -> bool {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    git(&["init", "-q"])
        && fs::write(root.join(".git/info/exclude"), ".roundtable/\n").is_ok()
        && git(&["add", "-A"])
        && git(&[
            "-c",
            "user.name=roundtable demo",
            "-c",
            "user.email=demo@example.invalid",
            "commit",
            "-qm",
            "initial",
        ])
}

/// Run the demo; `say` receives each readable line as it happens.
pub(crate) fn run(keep: bool, say: &mut dyn FnMut(&str)) -> Result<Value, ToolError> {
    let dir = tempfile::Builder::new()
        .prefix("roundtable-demo-")
        .tempdir()
        .map_err(io)?;
    let root = dir.path();
    fs::create_dir(root.join("src")).map_err(io)?;
    fs::write(root.join("src/lib.rs"), LIB_RS).map_err(io)?;
    fs::write(root.join("README.md"), "demo project\n").map_err(io)?;
    let git = git_init(root);
    let mut steps = Vec::new();
    let mut step = |name: &str, line: String, data: Value, say: &mut dyn FnMut(&str)| {
        say(&format!("{:>2}. {name:<9} {line}", steps.len() + 1));
        let mut data = data;
        data["step"] = json!(name);
        steps.push(data);
    };
    say(&format!(
        "roundtable demo: one governed change in {} ({})",
        root.display(),
        if git {
            "a fresh git repository"
        } else {
            "git is not installed: a plain directory"
        }
    ));

    let engine = Engine::open(root, EngineOptions::default())?;
    let host = Actor::orchestrator(id("host")?);
    let alice = Actor::agent(id("alice")?);
    let bob = Actor::agent(id("bob")?);
    let sam = Actor::agent(id("sam")?);
    let carol = Actor::human(id("carol")?);
    let call = |tool: &str, args: Value, actor: &Actor| engine.call(tool, args, actor);

    call(
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author"]}),
        &host,
    )?;
    call(
        "agent.register",
        json!({"agent_id": "bob", "roles": ["reviewer"]}),
        &host,
    )?;
    call(
        "agent.register",
        json!({"agent_id": "sam", "roles": ["reviewer", "security"]}),
        &host,
    )?;
    call(
        "task.create",
        json!({"task_id": "excited-greeting", "title": "Greet with more enthusiasm"}),
        &host,
    )?;
    step(
        "register",
        "author alice; reviewers bob and sam (security); human carol approves; task excited-greeting".into(),
        json!({"agents": ["alice", "bob", "sam"], "human": "carol"}),
        say,
    );

    // A symbol claim: alice may change `greet`, nothing else.
    let claim = call(
        "claim.acquire",
        json!({"resource_id": "symbol:src/lib.rs#greet", "type": "write", "ttl_s": 900, "task_id": "excited-greeting"}),
        &alice,
    )?;
    let clash = call(
        "claim.acquire",
        json!({"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 900}),
        &bob,
    )
    .err()
    .map(|e| e.code());
    verify(
        clash == Some(ErrorCode::Conflict),
        "an overlapping write claim is refused",
    )?;
    step(
        "claim",
        format!(
            "alice holds symbol:src/lib.rs#greet (lines {}-{}), fencing token {}; bob's claim on the whole file is refused (conflict)",
            claim["claim"]["span"]["start"], claim["claim"]["span"]["end"], claim["claim"]["token"]
        ),
        json!({"claim": claim["claim"]}),
        say,
    );

    let created = call(
        "proposal.create",
        json!({"task_id": "excited-greeting", "title": "Greet with an exclamation mark",
               "summary_md": "`greet` ends with `!`.", "risk": "critical", "patch": FIRST_PATCH,
               "affected_resources": ["symbol:src/lib.rs#greet"]}),
        &alice,
    )?;
    let pid = text(&created, "/proposal/id")?.to_owned();
    step(
        "propose",
        format!("{pid} revision 1 (risk critical): modifies src/lib.rs"),
        json!({"proposal": pid, "revision": created["revision"]}),
        say,
    );

    let first = call("patch.validate", json!({"proposal_id": pid}), &host)?;
    let coverage_failed = first["stages"].as_array().is_some_and(|s| {
        s.iter()
            .any(|s| s["name"] == "coverage" && s["status"] == "failed")
    });
    verify(
        first["valid"] == false && coverage_failed,
        "revision 1 is not covered by the claim",
    )?;
    step(
        "validate",
        report_line(&first),
        json!({"report": first}),
        say,
    );

    let revised = call(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": SECOND_PATCH,
               "note_md": "Only `greet` changes now."}),
        &alice,
    )?;
    verify(revised["revision"]["number"] == 2, "revision 2")?;
    let second = call("patch.validate", json!({"proposal_id": pid}), &host)?;
    let coverage_passed = second["stages"].as_array().is_some_and(|s| {
        s.iter()
            .any(|s| s["name"] == "coverage" && s["status"] == "passed")
    });
    verify(coverage_passed, "revision 2 is covered")?;
    step(
        "revise",
        format!("revision 2 changes only greet; {}", report_line(&second)),
        json!({"revision": revised["revision"], "report": second}),
        say,
    );

    let requested = call(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &alice,
    )?;
    let plan: Vec<String> = requested["review_plan"]
        .as_array()
        .map(|needs| {
            needs
                .iter()
                .map(|n| {
                    format!(
                        "{} ← {}",
                        n["requirement"].as_str().unwrap_or("?"),
                        n["candidates"]
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    step(
        "review",
        format!("review plan: {}", plan.join("; ")),
        json!({"review_plan": requested["review_plan"]}),
        say,
    );

    let own = call(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 2, "vote": "approve"}),
        &alice,
    )
    .err()
    .map(|e| e.code());
    verify(own == Some(ErrorCode::Forbidden), "the author cannot vote")?;
    call(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 2, "vote": "approve", "reason_md": "Reads well."}),
        &bob,
    )?;
    call(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 2, "vote": "approve_with_notes", "reason_md": "Fine; no input reaches the format string."}),
        &sam,
    )?;
    call(
        "security.review",
        json!({"proposal_id": pid, "revision": 2, "verdict": "pass", "note_md": "No security impact."}),
        &sam,
    )?;
    call(
        "human.approve",
        json!({"proposal_id": pid, "revision": 2, "note_md": "Ship it."}),
        &carol,
    )?;
    let ready = call("patch.validate", json!({"proposal_id": pid}), &host)?;
    verify(ready["valid"] == true, "valid once approved")?;
    step(
        "approve",
        format!("bob and sam approve revision 2, sam passes the security review, carol approves as a human; {}", report_line(&ready)),
        json!({"report": ready}),
        say,
    );

    let applied = call(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 2}),
        &host,
    )?;
    let tid = text(&applied, "/transaction/id")?.to_owned();
    let after = fs::read_to_string(root.join("src/lib.rs")).map_err(io)?;
    verify(
        after.contains("Hello, {name}!") && applied["proposal"]["status"] == "applied",
        "the change landed",
    )?;
    step(
        "apply",
        format!(
            "transaction {tid}: {} ({} file), proposal applied, claims released: {}",
            applied["transaction"]["status"].as_str().unwrap_or("?"),
            applied["transaction"]["file_count"],
            applied["released_claims"]
        ),
        json!({"transaction": applied["transaction"]}),
        say,
    );

    let shown = call("transaction.get", json!({"transaction_id": tid}), &host)?;
    let phases = call("transaction.phases", json!({"transaction_id": tid}), &host)?;
    let names: Vec<&str> = phases["phases"]
        .as_array()
        .map(|p| p.iter().filter_map(|p| p["phase"].as_str()).collect())
        .unwrap_or_default();
    let file = &shown["files"][0];
    step(
        "show",
        format!(
            "{}: {} {} → {}; phases {}",
            file["path"].as_str().unwrap_or("?"),
            file["operation"].as_str().unwrap_or("?"),
            file["before_digest"].as_str().unwrap_or("absent"),
            file["after_digest"].as_str().unwrap_or("absent"),
            names.join(" → ")
        ),
        json!({"transaction": shown, "phases": phases["phases"]}),
        say,
    );

    let rolled = call(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &host,
    )?;
    let restored = fs::read_to_string(root.join("src/lib.rs")).map_err(io)?;
    verify(
        restored == LIB_RS,
        "the rollback restored the original bytes",
    )?;
    step(
        "rollback",
        format!(
            "transaction {} restored src/lib.rs byte for byte; {tid} is rolled_back",
            text(&rolled, "/transaction/id")?
        ),
        json!({"transaction": rolled["transaction"]}),
        say,
    );

    let chain = call("events.verify", json!({}), &host)?;
    verify(chain["valid"] == true, "the audit log verifies")?;
    step(
        "audit",
        format!(
            "{} events, hash chain valid, head {}",
            chain["checked"],
            chain["head_digest"].as_str().unwrap_or("?")
        ),
        json!({"events": chain["checked"], "head_digest": chain["head_digest"]}),
        say,
    );

    drop(engine);
    let location = if keep {
        Some(dir.keep().display().to_string())
    } else {
        None
    };
    Ok(json!({"ok": true, "root": location, "git": git, "steps": steps}))
}
