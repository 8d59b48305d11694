//! Roles for people (`[people]` in the policy): a person who does not
//! hold a role is refused its tool with `forbidden` (`missing_role`) and
//! nothing changes; evidence a person recorded counts only while they
//! hold the role; the inbox asks only the people the policy names; and
//! the policy role keeps a person without it from rewriting the policy
//! to grant themselves one.

use super::tools::{str_of, World, PATCH};
use roundtable::{Actor, ErrorCode};
use serde_json::{json, Value};

fn person(name: &str) -> Actor {
    Actor::human(super::tools::id(name))
}

/// Store `document` as a draft and activate it as `who`.
fn activate(w: &World, document: &str, who: &Actor) {
    let set = w.ok("policy.set", json!({"document": document}), who);
    let version = set["policy"]["version"].as_u64().expect("a version");
    w.ok("policy.activate", json!({"version": version}), who);
}

const ROLES: &str = r#"version = 1
[security_review]
risk = ["high"]
[human_approval]
risk = ["high"]
[people]
security = ["carol"]
approve = ["carol", "erin"]
policy = ["carol"]
"#;

/// An approved, high-risk proposal (it needs a security review and a
/// person's approval); its id.
fn risky(w: &World) -> String {
    w.ok(
        "claim.acquire",
        json!({"resource_id": "file:hello.txt", "type": "write", "ttl_s": 3600}),
        &w.author,
    );
    let created = w.ok(
        "proposal.create",
        json!({"task_id": "t1", "title": "Risky", "summary_md": "Greets.", "patch": PATCH, "risk": "high"}),
        &w.author,
    );
    let pid = str_of(&created["proposal"]["id"]);
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
    pid
}

fn requirement(w: &World, pid: &str, id: &str) -> Value {
    let status = w.ok("proposal.status", json!({"proposal_id": pid}), &w.host);
    status["validation"]["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .find(|r| r["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no {id} in {status}"))
}

/// `(role, action)` of `who`'s inbox items for `pid`.
fn asked(w: &World, who: &Actor, pid: &str) -> Vec<(String, String)> {
    let page = w.ok("inbox.list", json!({"limit": 100}), who);
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["proposal"]["id"] == pid)
        .map(|i| (str_of(&i["role"]), str_of(&i["action"])))
        .collect()
}

#[test]
fn a_person_without_the_security_role_is_refused_and_nothing_changes() {
    let w = World::new();
    activate(&w, ROLES, &w.host);
    let pid = risky(&w);
    let dave = person("dave");
    let err = w.refused(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass", "note_md": "looks fine"}),
        &dave,
        ErrorCode::Forbidden,
    );
    assert_eq!(
        err.to_string(),
        "human:dave does not hold the security role: the policy's [people] security lists human:carol"
    );
    assert_eq!(err.details()["reason"], "missing_role");
    assert_eq!(err.details()["required_role"], "security");
    // Nor may dave approve as a person.
    let err = w.refused(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1}),
        &dave,
        ErrorCode::Forbidden,
    );
    assert_eq!(
        err.to_string(),
        "human:dave does not hold the approve role: the policy's [people] approve lists human:carol, human:erin"
    );
    let r = requirement(&w, &pid, "security_review");
    assert_eq!(r["status"], "unsatisfied");
    assert_eq!(r["people"], json!(["carol"]));

    // carol holds both: her evidence counts and the proposal can land.
    let carol = person("carol");
    w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &carol,
    );
    w.ok(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1}),
        &person("erin"),
    );
    assert_eq!(
        requirement(&w, &pid, "security_review")["status"],
        "satisfied"
    );
    assert_eq!(
        requirement(&w, &pid, "human_approval")["status"],
        "satisfied"
    );
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
}

#[test]
fn the_inbox_asks_only_the_people_the_policy_names() {
    let w = World::new();
    activate(&w, ROLES, &w.host);
    let pid = risky(&w);
    let security = ("security_reviewer".to_owned(), "security_review".to_owned());
    let approval = ("human".to_owned(), "human_approval".to_owned());
    assert_eq!(
        asked(&w, &person("carol"), &pid),
        vec![security.clone(), approval.clone()]
    );
    assert_eq!(asked(&w, &person("erin"), &pid), vec![approval.clone()]);
    assert_eq!(asked(&w, &person("dave"), &pid), vec![]);
    // Once carol passed it she is not asked for it again.
    w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &person("carol"),
    );
    assert_eq!(asked(&w, &person("carol"), &pid), vec![approval]);

    // Without the table, every person is asked for the approval and none
    // for the security review (agents with the role are), as before.
    let w = World::new();
    activate(
        &w,
        "version = 1\n[security_review]\nrisk = [\"high\"]\n[human_approval]\nrisk = [\"high\"]\n",
        &w.host,
    );
    let pid = risky(&w);
    for name in ["carol", "dave"] {
        assert_eq!(
            asked(&w, &person(name), &pid),
            vec![("human".to_owned(), "human_approval".to_owned())]
        );
    }
}

#[test]
fn evidence_stops_counting_when_the_policy_takes_the_role_away() {
    let w = World::new();
    activate(&w, ROLES, &w.host);
    let pid = risky(&w);
    w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &person("carol"),
    );
    assert_eq!(
        requirement(&w, &pid, "security_review")["status"],
        "satisfied"
    );
    // The orchestrator names someone else: carol's review no longer counts.
    activate(
        &w,
        &ROLES.replace("security = [\"carol\"]", "security = [\"frank\"]"),
        &w.host,
    );
    let r = requirement(&w, &pid, "security_review");
    assert_eq!(r["status"], "unsatisfied", "{r}");
    let why = r["reasons"].to_string();
    assert!(why.contains("by human:carol does not count"), "{why}");
    w.refused(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
        ErrorCode::ValidationFailed,
    );
}

#[test]
fn a_person_without_the_policy_role_cannot_grant_themselves_one() {
    let w = World::new();
    activate(&w, ROLES, &w.host);
    let dave = person("dave");
    let grant = ROLES.replace("security = [\"carol\"]", "security = [\"carol\", \"dave\"]");
    let err = w.refused(
        "policy.set",
        json!({"document": grant}),
        &dave,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["required_role"], "policy");
    // A draft someone else stored cannot be activated by dave either.
    let set = w.ok("policy.set", json!({"document": grant}), &w.host);
    let version = set["policy"]["version"].clone();
    w.refused(
        "policy.activate",
        json!({"version": version}),
        &dave,
        ErrorCode::Forbidden,
    );
    // carol holds the policy role.
    w.ok(
        "policy.activate",
        json!({"version": version}),
        &person("carol"),
    );
    let pid = risky(&w);
    w.ok(
        "security.review",
        json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        &dave,
    );
}

#[test]
fn an_empty_list_leaves_a_role_to_nobody_and_a_bad_table_is_refused() {
    let w = World::new();
    activate(
        &w,
        &ROLES.replace("approve = [\"carol\", \"erin\"]", "approve = []"),
        &w.host,
    );
    let pid = risky(&w);
    let err = w.refused(
        "human.approve",
        json!({"proposal_id": pid, "revision": 1}),
        &person("carol"),
        ErrorCode::Forbidden,
    );
    assert!(
        err.to_string().ends_with("[people] approve lists nobody"),
        "{err}"
    );
    let err = w.refused(
        "policy.set",
        json!({"document": "version = 1\n[people]\nreviewers = [\"carol\"]\n"}),
        &w.host,
        ErrorCode::InvalidPolicy,
    );
    assert!(err.to_string().contains("reviewers"), "{err}");
}
