//! Issue 33 item 4: `proposal.status` names who can satisfy each
//! unsatisfied requirement (`by_requirement`), decided by the same
//! `next_actors` step that fills `next` — what `roundtable show` prints as
//! "can:", so no front end re-decides it.

use super::tools::World;
use serde_json::{json, Value};

fn by(status: &Value, requirement: &str) -> Option<Value> {
    status["by_requirement"]
        .as_array()
        .expect("by_requirement")
        .iter()
        .find(|n| n["requirement"] == requirement)
        .map(|n| n["next"].clone())
}

#[test]
fn issue33_item4_status_names_who_can_satisfy_each_requirement() {
    let w = World::new();
    let reviewer = w.reviewer.id.as_str().to_owned();
    // Pending: `next` is only the author's review request, but each
    // unsatisfied requirement still names who can satisfy it.
    let pid = w.proposal();
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    assert_eq!(
        status["next"].as_array().expect("next").len(),
        1,
        "{status:#}"
    );
    assert_eq!(status["next"][0]["action"], "request_review");
    let approvals = by(&status, "approvals").expect("approvals unsatisfied");
    assert_eq!(approvals["actor"], "reviewer", "{status:#}");
    assert_eq!(approvals["action"], "vote");
    assert_eq!(approvals["candidates"], json!([reviewer]));
    // In review: every item of by_requirement is an item of `next`.
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    let next = status["next"].as_array().expect("next");
    for n in status["by_requirement"].as_array().expect("by_requirement") {
        assert!(next.contains(&n["next"]), "{n} not in next: {status:#}");
    }
    // A blocking vote: the author answers it, and the reviewer who voted is
    // no longer a candidate for the approvals.
    w.ok(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "reject", "reason_md": "no"}),
        &w.reviewer,
    );
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    let blocking = by(&status, "no_blocking_votes").expect("a blocking vote");
    assert_eq!(blocking["actor"], "author", "{status:#}");
    assert_eq!(blocking["action"], "answer_votes");
    let approvals = by(&status, "approvals").expect("approvals unsatisfied");
    assert_eq!(approvals["candidates"], json!([]), "{status:#}");
    // Satisfied requirements are not listed; a closed proposal lists none.
    assert!(by(&status, "secrets").is_none());
    w.ok(
        "proposal.withdraw",
        json!({"proposal_id": pid, "reason_md": "done"}),
        &w.author,
    );
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    assert_eq!(status["by_requirement"], json!([]));
}
