//! Rebase and evidence that survives it (issue 16, items 2 and 3): two
//! agents change different functions of one file; whichever lands second
//! is rebased by `proposal.rebase` and keeps its approval (a trivial
//! rebase); a third agent whose change truly conflicts gets the conflicting
//! hunks, resolves them and lands.

use super::claims_touched::{approved, content, hold, validate, world, IN_SAVE, IN_TOTAL};
use super::tools::{str_of, World};
use roundtable::{Actor, ErrorCode};
use serde_json::{json, Value};

/// From the original `m.py`, changes `User.save` to return 100: conflicts
/// with [`IN_SAVE`].
const CONFLICTING: &str = "--- a/m.py\n+++ b/m.py\n@@ -2,3 +2,3 @@\n     def save(self):\n-        return 1\n+        return 100\n \n";

fn apply(w: &World, pid: &str, revision: u32) -> Value {
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": revision}),
        &w.host,
    )
}

fn rebase(w: &World, pid: &str, expected: u32, who: &Actor) -> Value {
    w.ok(
        "proposal.rebase",
        json!({"proposal_id": pid, "expected_revision": expected}),
        who,
    )
}

/// Release every claim `who` holds.
fn release_all(w: &World, who: &Actor) {
    let list = w.ok("claim.list", json!({"agent_id": who.id.as_str()}), &w.host);
    for c in list["claims"].as_array().expect("claims") {
        w.ok("claim.release", json!({"claim_id": c["id"]}), who);
    }
}

/// The policy requirement `id` of a validation report.
pub(crate) fn requirement<'r>(report: &'r Value, id: &str) -> &'r Value {
    report["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no requirement {id} in {report:#}"))
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn disjoint_changes_rebase_trivially_and_keep_their_approval_in_either_order() {
    for a_first in [true, false] {
        let (w, a, b, r) = world();
        hold(&w, &a, "symbol:m.py#User.save");
        hold(&w, &b, "symbol:m.py#Order.total");
        let pa = approved(&w, &a, &r, IN_SAVE);
        let pb = approved(&w, &b, &r, IN_TOTAL);
        let (first, second, second_author) = if a_first {
            (&pa, &pb, &b)
        } else {
            (&pb, &pa, &a)
        };
        apply(&w, first, 1);
        let status = w.ok(
            "proposal.status",
            json!({"proposal_id": second}),
            second_author,
        );
        assert_eq!(status["stale"], true, "{status:#}");
        assert!(
            status["next"]
                .as_array()
                .expect("next")
                .iter()
                .any(|n| n["why"]
                    .as_str()
                    .is_some_and(|w| w.contains("proposal.rebase"))),
            "{status:#}"
        );

        let out = rebase(&w, second, 1, second_author);
        let rev = &out["revision"];
        assert_eq!(rev["number"], 2);
        assert_eq!(rev["rebased_from"], 1);
        assert_eq!(rev["format"], "patch");
        assert_eq!(out["proposal"]["latest_revision"], 2);
        let detail = w.ok(
            "proposal.get",
            json!({"proposal_id": second, "revision": 1}),
            &w.host,
        );
        // The same change at another base: another changeset digest, the
        // same change id.
        assert_eq!(detail["revision"]["change_id"], rev["change_id"]);
        assert_ne!(
            detail["revision"]["changeset_digest"],
            rev["changeset_digest"]
        );
        let event = w.last_event();
        assert_eq!(event["kind"], "proposal.revised");
        assert_eq!(event["data"]["rebased_from"], 1);

        // The approval on revision 1 carries over, and the report says why.
        let report = validate(&w, second);
        assert_eq!(report["valid"], true, "{report:#}");
        let approvals = requirement(&report, "approvals");
        assert_eq!(approvals["status"], "satisfied");
        assert_eq!(approvals["evidence"].as_array().map(Vec::len), Some(1));
        assert!(
            approvals["reasons"]
                .as_array()
                .expect("reasons")
                .iter()
                .any(|t| t
                    .as_str()
                    .is_some_and(|t| t.contains("carry over") && t.contains("rule engine_rebase"))),
            "{approvals:#}"
        );
        apply(&w, second, 2);
        assert_eq!(
            content(&w),
            "class User:\n    def save(self):\n        return 10\n\n\nclass Order:\n    def total(self):\n        return 20\n"
        );
    }
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn a_conflicting_rebase_reports_the_hunks_changes_nothing_and_lands_after_a_resolution() {
    let (w, a, b, r) = world();
    let c = w.agent("cat", &["author"]);
    hold(&w, &a, "symbol:m.py#User.save");
    hold(&w, &b, "symbol:m.py#Order.total");
    let pa = approved(&w, &a, &r, IN_SAVE);
    let pb = approved(&w, &b, &r, IN_TOTAL);
    let pc = approved(&w, &c, &r, CONFLICTING);
    apply(&w, &pa, 1);
    rebase(&w, &pb, 1, &b);
    apply(&w, &pb, 2);
    // cat claims the function now that ann's claim is released.
    hold(&w, &c, "symbol:m.py#User.save");

    let err = w.refused(
        "proposal.rebase",
        json!({"proposal_id": pc, "expected_revision": 1}),
        &c,
        ErrorCode::Conflict,
    );
    let details = err.details();
    assert_eq!(details["reason"], "merge_conflict", "{details:#}");
    assert_eq!(
        details["files"],
        json!([{
            "path": "m.py",
            "reason": null,
            "hunks": [{
                "base_line": 3,
                "theirs_line": 3,
                "base": "        return 1\n",
                "ours": "        return 100\n",
                "theirs": "        return 10\n",
            }],
        }])
    );
    let status = w.ok("proposal.status", json!({"proposal_id": pc}), &c);
    assert_eq!(status["stale"], true);
    // Its author is told the rebase conflicts; the orchestrator is not
    // offered to land it.
    let next = status["next"].as_array().expect("next");
    assert!(
        next.iter().any(|n| n["actor"] == "author"
            && n["action"] == "rebase_or_attach"
            && n["why"].as_str().is_some_and(|t| t.contains("conflicts"))),
        "{status:#}"
    );
    assert!(
        !next.iter().any(|n| n["actor"] == "orchestrator"),
        "{status:#}"
    );

    // cat resolves: keeps its own value on top of what landed.
    let resolution = "--- a/m.py\n+++ b/m.py\n@@ -2,3 +2,3 @@\n     def save(self):\n-        return 10\n+        return 100\n \n";
    w.ok(
        "proposal.attach_patch",
        json!({"proposal_id": pc, "expected_revision": 1, "patch": resolution}),
        &c,
    );
    // A different change: the approval of revision 1 does not carry.
    let report = validate(&w, &pc);
    assert_eq!(requirement(&report, "approvals")["status"], "unsatisfied");
    w.ok(
        "vote.cast",
        json!({"proposal_id": pc, "revision": 2, "vote": "approve"}),
        &r,
    );
    assert_eq!(validate(&w, &pc)["valid"], true);
    apply(&w, &pc, 2);
    assert!(content(&w).contains("return 100\n"));
    assert!(content(&w).contains("return 20\n"));
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn a_rebase_that_loses_part_of_the_change_does_not_keep_the_approval() {
    // ann's change touches both functions; ben lands the Order.total half.
    let (w, a, b, r) = world();
    let both = "--- a/m.py\n+++ b/m.py\n@@ -2,7 +2,7 @@\n     def save(self):\n-        return 1\n+        return 10\n \n \n class Order:\n     def total(self):\n-        return 2\n+        return 20\n";
    hold(&w, &a, "file:m.py");
    let pa = approved(&w, &a, &r, both);
    release_all(&w, &a);
    hold(&w, &b, "symbol:m.py#Order.total");
    let pb = approved(&w, &b, &r, IN_TOTAL);
    apply(&w, &pb, 1);
    hold(&w, &a, "file:m.py");
    let out = rebase(&w, &pa, 1, &a);
    let v1 = w.ok(
        "proposal.get",
        json!({"proposal_id": pa, "revision": 1}),
        &a,
    );
    assert_ne!(out["revision"]["change_id"], v1["revision"]["change_id"]);
    let report = validate(&w, &pa);
    let approvals = requirement(&report, "approvals");
    assert_eq!(approvals["status"], "unsatisfied", "{approvals:#}");
    assert!(
        approvals["reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .any(|t| t
                .as_str()
                .is_some_and(|t| t.contains("not all the engine's rebases"))),
        "{approvals:#}"
    );
    // The merged revision changes only what is still to change.
    let diff = w.ok(
        "proposal.get",
        json!({"proposal_id": pa, "include_content": true}),
        &a,
    );
    let text = str_of(&diff["content"]);
    assert!(text.contains("+        return 10\n"), "{text}");
    assert!(!text.contains("return 20"), "{text}");
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn rebase_refusals_change_nothing() {
    let (w, a, b, r) = world();
    hold(&w, &a, "symbol:m.py#User.save");
    let pa = approved(&w, &a, &r, IN_SAVE);
    let args = json!({"proposal_id": pa, "expected_revision": 1});
    // Not stale.
    let err = w.refused("proposal.rebase", args.clone(), &a, ErrorCode::Conflict);
    assert_eq!(err.details()["reason"], "up_to_date");
    // Another agent may not; an orchestrator may (but here: up to date).
    w.refused("proposal.rebase", args.clone(), &b, ErrorCode::Forbidden);
    w.refused(
        "proposal.rebase",
        args.clone(),
        &w.host,
        ErrorCode::Conflict,
    );
    // Unknown proposal, unknown revision, bad arguments.
    w.refused(
        "proposal.rebase",
        json!({"proposal_id": "prop_nope", "expected_revision": 1}),
        &a,
        ErrorCode::NotFound,
    );
    w.refused(
        "proposal.rebase",
        json!({"proposal_id": pa, "expected_revision": 0}),
        &a,
        ErrorCode::InvalidArgument,
    );
    w.refused(
        "proposal.rebase",
        json!({"proposal_id": pa, "expected_revision": 1, "force": true}),
        &a,
        ErrorCode::InvalidArgument,
    );
    // Superseded revision: conflict naming the latest.
    std::fs::write(w.dir.path().join("m.py"), "class User:\n    def save(self):\n        return 1\n\n\nclass Order:\n    def total(self):\n        return 3\n").expect("write");
    let v2 = "--- a/m.py\n+++ b/m.py\n@@ -2,3 +2,3 @@\n     def save(self):\n-        return 1\n+        return 11\n \n";
    w.ok(
        "proposal.attach_patch",
        json!({"proposal_id": pa, "expected_revision": 1, "patch": v2}),
        &a,
    );
    std::fs::write(w.dir.path().join("m.py"), "# moved\nclass User:\n    def save(self):\n        return 1\n\n\nclass Order:\n    def total(self):\n        return 3\n").expect("write");
    let err = w.refused("proposal.rebase", args, &a, ErrorCode::Conflict);
    assert_eq!(err.details()["latest_revision"], 2, "{}", err.details());
    // A closed proposal is not rebased.
    w.ok("proposal.withdraw", json!({"proposal_id": pa}), &a);
    w.refused(
        "proposal.rebase",
        json!({"proposal_id": pa, "expected_revision": 2}),
        &a,
        ErrorCode::IllegalTransition,
    );
}

#[test]
fn whole_file_conflicts_name_the_reason() {
    let (w, a, _b, r) = world();
    hold(&w, &a, "file:m.py");
    let delete = "diff --git a/m.py b/m.py\ndeleted file mode 100644\n--- a/m.py\n+++ /dev/null\n@@ -1,8 +0,0 @@\n-class User:\n-    def save(self):\n-        return 1\n-\n-\n-class Order:\n-    def total(self):\n-        return 2\n";
    let pa = approved(&w, &a, &r, delete);
    std::fs::write(w.dir.path().join("m.py"), "changed\n").expect("write");
    let err = w.refused(
        "proposal.rebase",
        json!({"proposal_id": pa, "expected_revision": 1}),
        &a,
        ErrorCode::Conflict,
    );
    let files = &err.details()["files"];
    assert_eq!(files[0]["path"], "m.py");
    assert_eq!(
        files[0]["reason"],
        "the revision deletes it, and it was changed meanwhile"
    );
    assert_eq!(files[0]["hunks"], json!([]));
}

#[test]
fn a_rename_with_edits_rebases_onto_a_changed_source() {
    let (w, a, _b, r) = world();
    std::fs::write(w.dir.path().join("old.txt"), "1\n2\n3\n4\n5\n6\n7\n8\n").expect("write");
    hold(&w, &a, "directory:.");
    let rename = "diff --git a/old.txt b/new.txt\nsimilarity index 87%\nrename from old.txt\nrename to new.txt\n--- a/old.txt\n+++ b/new.txt\n@@ -1,3 +1,3 @@\n-1\n+one\n 2\n 3\n";
    let pa = approved(&w, &a, &r, rename);
    std::fs::write(w.dir.path().join("old.txt"), "1\n2\n3\n4\n5\n6\n7\nEIGHT\n").expect("write");
    // The claim read the old content: claim again.
    release_all(&w, &a);
    hold(&w, &a, "directory:.");
    let out = rebase(&w, &pa, 1, &a);
    let ops: Vec<(String, String)> = out["revision"]["changeset"]
        .as_array()
        .expect("changeset")
        .iter()
        .map(|f| (str_of(&f["path"]), str_of(&f["operation"])))
        .collect();
    assert_eq!(
        ops,
        vec![
            ("new.txt".to_owned(), "rename".to_owned()),
            ("old.txt".to_owned(), "renamed_away".to_owned())
        ]
    );
    let report = validate(&w, &pa);
    assert_eq!(report["valid"], true, "{report:#}");
    apply(&w, &pa, 2);
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("new.txt")).expect("read"),
        "one\n2\n3\n4\n5\n6\n7\nEIGHT\n"
    );
    assert!(!w.dir.path().join("old.txt").exists());
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn apply_with_rebase_lands_a_trivial_rebase_and_keeps_the_approval() {
    let (w, a, b, r) = world();
    hold(&w, &a, "symbol:m.py#User.save");
    hold(&w, &b, "symbol:m.py#Order.total");
    let pa = approved(&w, &a, &r, IN_SAVE);
    let pb = approved(&w, &b, &r, IN_TOTAL);
    apply(&w, &pa, 1);
    // The orchestrator is told it may land the stale, approved proposal.
    let status = w.ok("proposal.status", json!({"proposal_id": pb}), &w.host);
    assert!(
        status["next"]
            .as_array()
            .expect("next")
            .iter()
            .any(|n| n["actor"] == "orchestrator"
                && n["action"] == "apply"
                && n["why"].as_str().is_some_and(|t| t.contains("rebase"))),
        "{status:#}"
    );
    // Without rebase: precondition_failed, as before.
    w.refused(
        "patch.apply",
        json!({"proposal_id": pb, "revision": 1}),
        &w.host,
        ErrorCode::PreconditionFailed,
    );
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pb, "revision": 1, "rebase": true}),
        &w.host,
    );
    assert_eq!(out["proposal"]["status"], "applied");
    assert_eq!(out["proposal"]["latest_revision"], 2);
    assert_eq!(out["transaction"]["revision"], 2, "{out:#}");
    let v2 = w.ok(
        "proposal.get",
        json!({"proposal_id": pb, "revision": 2}),
        &w.host,
    );
    assert_eq!(v2["revision"]["rebased_from"], 1);
    assert_eq!(
        content(&w),
        "class User:\n    def save(self):\n        return 10\n\n\nclass Order:\n    def total(self):\n        return 20\n"
    );
    // Not stale: rebase changes nothing about an ordinary apply.
    let (w, a, _b, r) = world();
    hold(&w, &a, "symbol:m.py#User.save");
    let pa = approved(&w, &a, &r, IN_SAVE);
    let out = w.ok(
        "patch.apply",
        json!({"proposal_id": pa, "revision": 1, "rebase": true}),
        &w.host,
    );
    assert_eq!(out["proposal"]["latest_revision"], 1);
}

#[cfg_attr(not(feature = "python"), ignore = "needs the python symbol grammar")]
#[test]
fn apply_with_rebase_refuses_a_rebase_that_is_not_trivial_or_conflicts_and_writes_nothing() {
    // A conflict: cat's change and ann's landed one touch the same line.
    let (w, a, _b, r) = world();
    let c = w.agent("cat", &["author"]);
    hold(&w, &a, "symbol:m.py#User.save");
    let pa = approved(&w, &a, &r, IN_SAVE);
    let pc = approved(&w, &c, &r, CONFLICTING);
    apply(&w, &pa, 1);
    hold(&w, &c, "symbol:m.py#User.save");
    let err = w.refused(
        "patch.apply",
        json!({"proposal_id": pc, "revision": 1, "rebase": true}),
        &w.host,
        ErrorCode::Conflict,
    );
    assert_eq!(err.details()["reason"], "merge_conflict");

    // Not trivial: half of ann's two-function change landed already.
    let both = "--- a/m.py\n+++ b/m.py\n@@ -2,7 +2,7 @@\n     def save(self):\n-        return 1\n+        return 10\n \n \n class Order:\n     def total(self):\n-        return 2\n+        return 20\n";
    let (w, a, b, r) = world();
    hold(&w, &a, "file:m.py");
    let p_both = approved(&w, &a, &r, both);
    release_all(&w, &a);
    hold(&w, &b, "symbol:m.py#Order.total");
    let p_total = approved(&w, &b, &r, IN_TOTAL);
    apply(&w, &p_total, 1);
    hold(&w, &a, "file:m.py");
    let err = w.refused(
        "patch.apply",
        json!({"proposal_id": p_both, "revision": 1, "rebase": true}),
        &w.host,
        ErrorCode::ValidationFailed,
    );
    assert_eq!(err.details()["reason"], "not_trivial");
    assert_eq!(err.details()["stage"], "rebase");
}
