//! Every refusal of the tool surface, each proven to leave the store
//! unchanged (same rows in every table, same event count) by
//! [`World::refused`].

use crate::tools::{edit_plan, fingerprint, id, str_of, World, PATCH, PATCH2};
use roundtable::{Actor, EngineOptions, ErrorCode};
use serde_json::{json, Value};

fn create_args(extra: Value) -> Value {
    let mut args =
        json!({"task_id": "t1", "title": "Say hello", "summary_md": "Greets.", "patch": PATCH});
    for (k, v) in extra.as_object().expect("object") {
        if v.is_null() {
            args.as_object_mut().expect("object").remove(k);
        } else {
            args[k] = v.clone();
        }
    }
    args
}

#[test]
fn unknown_keys_are_refused_at_the_top_level_and_nested() {
    let w = World::new();
    let pid = w.in_review();
    let hana = Actor::human(id("hana"));
    for (tool, args, field) in [
        (
            "agent.register",
            json!({"agent_id": "x", "roles": [], "admin": true}),
            "admin",
        ),
        ("task.create", json!({"title": "x", "owner": "me"}), "owner"),
        (
            "proposal.attach_patch",
            json!({"proposal_id": pid, "expected_revision": 1, "patch": PATCH2, "force": true}),
            "force",
        ),
        (
            "proposal.get",
            json!({"proposal_id": pid, "all": true}),
            "all",
        ),
        ("proposal.list", json!({"offset": 10}), "offset"),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve", "agent_id": "alice"}),
            "agent_id",
        ),
        (
            "human.approve",
            json!({"proposal_id": pid, "revision": 1, "human_id": "hana"}),
            "human_id",
        ),
        ("events.list", json!({"since": 3}), "since"),
    ] {
        let actor = match tool {
            "agent.register" | "task.create" => &w.host,
            "proposal.attach_patch" => &w.author,
            "human.approve" => &hana,
            _ => &w.reviewer,
        };
        let err = w.refused(tool, args.clone(), actor, ErrorCode::InvalidArgument);
        assert_eq!(err.details()["field"], field, "{tool} {args}");
        assert!(err.message().contains(field), "{}", err.message());
    }
    // Inside an edit plan, the plan's own strict parser names the path.
    let mut plan = edit_plan();
    plan["documentChanges"][0]["colour"] = json!("red");
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": null, "edit_plan": plan})),
        &w.author,
        ErrorCode::InvalidEditPlan,
    );
    assert_eq!(err.details()["field"], "documentChanges[0].colour");
    let mut plan = edit_plan();
    plan["documentChanges"][0]["edits"][0]["range"]["start"]["column"] = json!(1);
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": null, "edit_plan": plan})),
        &w.author,
        ErrorCode::InvalidEditPlan,
    );
    assert_eq!(
        err.details()["field"],
        "documentChanges[0].edits[0].range.start.column"
    );
    // A key given twice in JSON text is refused before decoding.
    let before = fingerprint(w.dir.path());
    let err = w
        .engine
        .call_json(
            "task.create",
            br#"{"task_id": "t5", "title": "a", "title": "b"}"#,
            &w.host,
        )
        .expect_err("duplicate key");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(fingerprint(w.dir.path()), before);
}

#[test]
fn blank_wrong_typed_missing_and_non_object_arguments_are_refused() {
    let w = World::new();
    let pid = w.in_review();
    for title in ["", "   ", " \t\n "] {
        let err = w.refused(
            "proposal.create",
            create_args(json!({"title": title})),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(
            err.details(),
            &json!({"field": "title", "reason": "is blank"})
        );
        let err = w.refused(
            "task.create",
            json!({"title": title}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "title");
    }
    for title in ["two\nlines", "tab\there", "bell\u{7}"] {
        let err = w.refused(
            "proposal.create",
            create_args(json!({"title": title})),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(
            err.details(),
            &json!({"field": "title", "reason": "must be one line, without control characters"})
        );
    }
    for (tool, args, field) in [
        (
            "proposal.create",
            create_args(json!({"summary_md": "  "})),
            "summary_md",
        ),
        (
            "proposal.create",
            create_args(json!({"patch": " \n"})),
            "patch",
        ),
        ("proposal.create", create_args(json!({"title": 5})), "title"),
        (
            "proposal.create",
            create_args(json!({"affected_resources": "file:hello.txt"})),
            "affected_resources",
        ),
        (
            "proposal.create",
            create_args(json!({"affected_resources": ["file:hello.txt", 7]})),
            "affected_resources[1]",
        ),
        (
            "proposal.create",
            create_args(json!({"affected_resources": ["bogus"]})),
            "affected_resources[0]",
        ),
        (
            "proposal.create",
            create_args(json!({"edit_plan": "{}", "patch": null})),
            "edit_plan",
        ),
        (
            "proposal.create",
            create_args(json!({"task_id": null})),
            "task_id",
        ),
        (
            "proposal.create",
            create_args(json!({"summary_md": null})),
            "summary_md",
        ),
        (
            "proposal.withdraw",
            json!({"proposal_id": pid, "reason_md": "\n"}),
            "reason_md",
        ),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": "1", "vote": "approve"}),
            "revision",
        ),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 0, "vote": "approve"}),
            "revision",
        ),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1.5, "vote": "approve"}),
            "revision",
        ),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": true}),
            "vote",
        ),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1}),
            "vote",
        ),
        (
            "vote.cast",
            json!({"proposal_id": 12, "revision": 1, "vote": "approve"}),
            "proposal_id",
        ),
        (
            "proposal.get",
            json!({"proposal_id": pid, "include_content": "yes"}),
            "include_content",
        ),
        ("proposal.list", json!({"limit": "10"}), "limit"),
        ("proposal.list", json!({"cursor": 5}), "cursor"),
        (
            "agent.register",
            json!({"agent_id": "x", "roles": "reviewer"}),
            "roles",
        ),
        (
            "agent.register",
            json!({"agent_id": "x", "roles": ["Reviewer"]}),
            "roles[0]",
        ),
        (
            "agent.register",
            json!({"agent_id": "x", "roles": [], "enabled": "no"}),
            "enabled",
        ),
        (
            "agent.register",
            json!({"agent_id": "x", "roles": ["a", "b", "a"]}),
            "roles",
        ),
    ] {
        let actor = match tool {
            "agent.register" => &w.host,
            "vote.cast" => &w.reviewer,
            _ => &w.author,
        };
        let err = w.refused(tool, args.clone(), actor, ErrorCode::InvalidArgument);
        assert_eq!(err.details()["field"], field, "{tool} {args}: {err}");
    }
    let roles: Vec<String> = (0..33).map(|i| format!("r{i}")).collect();
    let err = w.refused(
        "agent.register",
        json!({"agent_id": "x", "roles": roles}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "roles");
    for args in [json!([]), json!("x"), json!(null), json!(1)] {
        let err = w.refused("task.create", args, &w.host, ErrorCode::InvalidArgument);
        assert_eq!(err.details()["field"], "");
    }
}

#[test]
fn bad_enum_values_are_refused() {
    let w = World::new();
    let pid = w.in_review();
    let err = w.refused(
        "proposal.create",
        create_args(json!({"risk": "extreme"})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "risk");
    assert!(
        str_of(&err.details()["reason"]).contains("`low`, `normal`, `high`, `critical`"),
        "{err}"
    );
    // Enum spellings are exact: no case folding.
    w.refused(
        "proposal.create",
        create_args(json!({"risk": "High"})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    for vote in ["yes", "APPROVE", "approve-with-notes", ""] {
        let err = w.refused(
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": vote}),
            &w.reviewer,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "vote");
    }
    for status in ["open", "InReview", "in-review", "approved"] {
        let err = w.refused(
            "proposal.list",
            json!({"status": status}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "status");
    }
}

#[test]
fn oversize_values_are_refused_and_the_limits_are_inclusive() {
    let w = World::new();
    let long = "x".repeat(201);
    let err = w.refused(
        "proposal.create",
        create_args(json!({"title": long})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(
        err.details(),
        &json!({"field": "title", "reason": "is 201 characters; the limit is 200"})
    );
    // The limit counts characters, after trimming.
    let ok = w.ok(
        "proposal.create",
        create_args(json!({"title": format!("  {}  ", "é".repeat(200))})),
        &w.author,
    );
    assert_eq!(str_of(&ok["proposal"]["title"]).chars().count(), 200);
    let err = w.refused(
        "task.create",
        json!({"title": "y".repeat(201)}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "title");
    let err = w.refused(
        "proposal.create",
        create_args(json!({"summary_md": "s".repeat(65_537)})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "summary_md");
    let err = w.refused(
        "proposal.create",
        create_args(json!({"affected_resources": vec!["file:hello.txt"; 1001]})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "affected_resources");
    let err = w.refused(
        "proposal.list",
        json!({"limit": 201}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "limit");

    // A patch or plan over max_patch_bytes.
    let small = World::with(
        tempfile::tempdir().expect("tempdir"),
        EngineOptions {
            max_patch_bytes: PATCH.len(),
            max_files: 1,
            ..EngineOptions::default()
        },
    );
    small.create(); // exactly at the limit
    let big = format!("{PATCH}\n");
    let err = small.refused(
        "proposal.create",
        create_args(json!({"patch": big})),
        &small.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "patch");
    assert_eq!(
        err.details()["reason"],
        format!("is {} bytes; the limit is {}", PATCH.len() + 1, PATCH.len())
    );
    let err = small.refused(
        "proposal.create",
        create_args(json!({"patch": null, "edit_plan": edit_plan()})),
        &small.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "edit_plan");
    let pid = str_of(&small.create()["proposal"]["id"]);
    let err = small.refused(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": big}),
        &small.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "patch");
    // More files than max_files.
    let two =
        "--- /dev/null\n+++ b/a\n@@ -0,0 +1 @@\n+a\n--- /dev/null\n+++ b/b\n@@ -0,0 +1 @@\n+b\n";
    let roomy = World::with(
        tempfile::tempdir().expect("tempdir"),
        EngineOptions {
            max_files: 1,
            ..EngineOptions::default()
        },
    );
    let err = roomy.refused(
        "proposal.create",
        create_args(json!({"patch": two})),
        &roomy.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "patch");
    assert_eq!(err.details()["reason"], "touches 2 files; the limit is 1");
}

#[test]
fn ids_with_bad_characters_or_length_are_refused() {
    let w = World::new();
    for bad in ["", "a b", "a/b", "../x", "é", "a:b", &"i".repeat(129)] {
        let err = w.refused(
            "agent.register",
            json!({"agent_id": bad, "roles": []}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "agent_id", "{bad:?}");
        let err = w.refused(
            "proposal.get",
            json!({"proposal_id": bad}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "proposal_id", "{bad:?}");
        let err = w.refused(
            "task.create",
            json!({"task_id": bad, "title": "x"}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "task_id", "{bad:?}");
        let err = w.refused(
            "proposal.create",
            create_args(json!({"idempotency_key": bad})),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "idempotency_key", "{bad:?}");
    }
    // The longest id and every allowed character.
    let longest = "A-z_0.9".repeat(18) + "xx";
    assert_eq!(longest.len(), 128);
    let out = w.ok(
        "task.create",
        json!({"task_id": longest, "title": "x"}),
        &w.host,
    );
    assert_eq!(out["task"]["id"], longest.as_str());
}

#[test]
fn foreign_actors_are_refused() {
    let w = World::new();
    let pid = w.proposal();
    // Another agent attaching a revision.
    let err = w.refused(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": PATCH2}),
        &w.reviewer,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "not_author");
    assert_eq!(err.details()["author"], "alice");
    assert_eq!(
        err.details()["actor"],
        json!({"id": "bob", "kind": "agent"})
    );
    // An orchestrator or a person (even one named like the author) is not
    // an agent at all: refused for its kind.
    for actor in [w.host.clone(), Actor::human(id("alice"))] {
        let err = w.refused(
            "proposal.attach_patch",
            json!({"proposal_id": pid, "expected_revision": 1, "patch": PATCH2}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["reason"], "wrong_kind");
        assert_eq!(err.details()["allowed_kinds"], json!(["agent"]));
        assert_eq!(
            err.details()["actor"],
            serde_json::to_value(&actor).expect("json")
        );
    }
    // The author, once disabled, may not revise either.
    w.ok(
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author"], "enabled": false}),
        &w.host,
    );
    let err = w.refused(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": PATCH2}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "disabled");
    w.ok(
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author"]}),
        &w.host,
    );
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
    );

    // An agent calling human.approve (even one named like a person).
    for actor in [w.reviewer.clone(), Actor::agent(id("hana"))] {
        let err = w.refused(
            "human.approve",
            json!({"proposal_id": pid, "revision": 1}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["allowed_kinds"], json!(["human"]));
    }
    // An agent or a person calling agent.register.
    for actor in [w.author.clone(), Actor::human(id("hana"))] {
        let err = w.refused(
            "agent.register",
            json!({"agent_id": "mallory", "roles": ["security"]}),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["allowed_kinds"], json!(["orchestrator"]));
    }
    // Nobody but an agent proposes.
    for actor in [w.host.clone(), Actor::human(id("hana"))] {
        let err = w.refused(
            "proposal.create",
            create_args(json!({})),
            &actor,
            ErrorCode::Forbidden,
        );
        assert_eq!(err.details()["allowed_kinds"], json!(["agent"]));
    }
    // An unregistered agent proposes or votes.
    let ghost = Actor::agent(id("ghost"));
    for (tool, args) in [
        ("proposal.create", create_args(json!({}))),
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        ),
    ] {
        let err = w.refused(tool, args, &ghost, ErrorCode::Forbidden);
        assert_eq!(err.details()["reason"], "unregistered", "{tool}");
    }
    // A disabled agent votes.
    w.ok(
        "agent.register",
        json!({"agent_id": "bob", "roles": ["reviewer"], "enabled": false}),
        &w.host,
    );
    let err = w.refused(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.reviewer,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "disabled");
    // The author votes on its own proposal.
    let err = w.refused(
        "vote.cast",
        json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "author");
    assert_eq!(err.details()["author"], "alice");
    // Another agent withdraws it or asks for human approval.
    let carol = w.agent("carol", &["reviewer"]);
    let err = w.refused(
        "proposal.withdraw",
        json!({"proposal_id": pid}),
        &carol,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "not_author");
    let err = w.refused(
        "human.request_approval",
        json!({"proposal_id": pid, "revision": 1}),
        &carol,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "not_author");
}

#[test]
fn every_tool_refuses_the_kinds_it_is_not_for_before_reading_its_arguments() {
    let w = World::new();
    let pid = w.proposal();
    let mut refusals = 0;
    for spec in roundtable::Engine::tools() {
        assert!(!spec.callers.is_empty(), "{} has no callers", spec.name);
        for kind in roundtable::ActorKind::ALL {
            let actor = Actor {
                id: id("someone"),
                kind,
            };
            if spec.callable_by(kind) {
                continue;
            }
            // Arguments that would be refused on their own: the kind is
            // checked first, so the refusal is for the kind.
            let err = w.refused(
                spec.name,
                json!({"proposal_id": pid, "no_such_key": 1}),
                &actor,
                ErrorCode::Forbidden,
            );
            assert_eq!(err.details()["reason"], "wrong_kind", "{}", spec.name);
            let allowed: Vec<&str> = spec.callers.iter().map(|k| k.as_str()).collect();
            assert_eq!(
                err.details()["allowed_kinds"],
                json!(allowed),
                "{}",
                spec.name
            );
            refusals += 1;
        }
    }
    // Tools limited to some kinds (agent.register, patch.apply,
    // workspace.configure, landing.log, landing.settle, the four queue
    // tools, proposal.revert_agent, provenance.verify, ...).
    assert_eq!(refusals, 48);
}

#[test]
fn a_stale_expected_revision_is_a_conflict() {
    let w = World::new();
    let pid = w.proposal();
    w.revise(&pid, 1, PATCH2);
    for stale in [1, 3] {
        let err = w.refused(
            "proposal.attach_patch",
            json!({"proposal_id": pid, "expected_revision": stale, "patch": PATCH}),
            &w.author,
            ErrorCode::Conflict,
        );
        assert_eq!(
            err.details(),
            &json!({"proposal_id": pid, "expected_revision": stale, "latest_revision": 2})
        );
    }
    let err = w.refused(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "patch": PATCH}),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "expected_revision");
    let err = w.refused(
        "proposal.attach_patch",
        json!({"proposal_id": "nope", "expected_revision": 1, "patch": PATCH}),
        &w.author,
        ErrorCode::NotFound,
    );
    assert_eq!(err.details(), &json!({"kind": "proposal", "id": "nope"}));
}

#[test]
fn illegal_transitions_name_the_current_status() {
    let w = World::new();
    let illegal = |tool: &str, args: Value, actor: &Actor, status: &str| {
        let err = w.refused(tool, args.clone(), actor, ErrorCode::IllegalTransition);
        assert_eq!(err.details()["status"], status, "{tool} {args}");
        assert_eq!(err.details()["operation"], tool);
        assert!(err.message().contains(status), "{}", err.message());
        err
    };
    // Vote on a pending proposal.
    let pending = w.proposal();
    let err = illegal(
        "vote.cast",
        json!({"proposal_id": pending, "revision": 1, "vote": "approve"}),
        &w.reviewer,
        "pending",
    );
    assert_eq!(err.details()["allowed"], json!(["in_review"]));
    // Request review twice.
    w.ok(
        "proposal.request_review",
        json!({"proposal_id": pending}),
        &w.author,
    );
    let err = illegal(
        "proposal.request_review",
        json!({"proposal_id": pending}),
        &w.author,
        "in_review",
    );
    assert_eq!(err.details()["allowed"], json!(["pending"]));
    assert_eq!(err.details()["proposal_id"], pending.as_str());
    // Withdraw a withdrawn proposal; nothing else happens to it either.
    w.ok(
        "proposal.withdraw",
        json!({"proposal_id": pending}),
        &w.author,
    );
    let err = illegal(
        "proposal.withdraw",
        json!({"proposal_id": pending}),
        &w.author,
        "withdrawn",
    );
    assert_eq!(err.details()["allowed"], json!(["pending", "in_review"]));
    let human = Actor::human(id("hana"));
    for (tool, args, actor) in [
        (
            "proposal.request_review",
            json!({"proposal_id": pending}),
            &w.author,
        ),
        (
            "proposal.attach_patch",
            json!({"proposal_id": pending, "expected_revision": 1, "patch": PATCH2}),
            &w.author,
        ),
        (
            "patch.reject",
            json!({"proposal_id": pending, "reason_md": "no"}),
            &w.host,
        ),
        (
            "vote.cast",
            json!({"proposal_id": pending, "revision": 1, "vote": "approve"}),
            &w.reviewer,
        ),
        (
            "decision.record",
            json!({"proposal_id": pending, "revision": 1, "decision": "accept", "reason_md": "ok"}),
            &w.host,
        ),
        (
            "security.review",
            json!({"proposal_id": pending, "revision": 1, "verdict": "pass"}),
            &human,
        ),
        (
            "human.request_approval",
            json!({"proposal_id": pending, "revision": 1}),
            &w.author,
        ),
        (
            "human.approve",
            json!({"proposal_id": pending, "revision": 1}),
            &human,
        ),
        (
            "test.record",
            json!({"proposal_id": pending, "revision": 1, "name": "unit", "status": "passed"}),
            &w.host,
        ),
    ] {
        illegal(tool, args, actor, "withdrawn");
    }
    // A rejected proposal is closed too.
    let rejected = w.proposal();
    w.ok(
        "patch.reject",
        json!({"proposal_id": rejected, "reason_md": "no"}),
        &w.host,
    );
    illegal(
        "patch.reject",
        json!({"proposal_id": rejected, "reason_md": "no"}),
        &w.host,
        "rejected",
    );
    illegal(
        "proposal.withdraw",
        json!({"proposal_id": rejected}),
        &w.host,
        "rejected",
    );
}

#[test]
fn evidence_for_a_superseded_revision_is_a_conflict() {
    let w = World::new();
    let pid = w.in_review();
    w.revise(&pid, 1, PATCH2);
    let human = Actor::human(id("hana"));
    for (tool, rev1, actor) in [
        (
            "vote.cast",
            json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
            &w.reviewer,
        ),
        (
            "decision.record",
            json!({"proposal_id": pid, "revision": 1, "decision": "accept", "reason_md": "ok"}),
            &w.host,
        ),
        (
            "security.review",
            json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
            &human,
        ),
        (
            "human.request_approval",
            json!({"proposal_id": pid, "revision": 1}),
            &w.author,
        ),
        (
            "human.approve",
            json!({"proposal_id": pid, "revision": 1}),
            &human,
        ),
        (
            "test.record",
            json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}),
            &w.host,
        ),
    ] {
        let err = w.refused(tool, rev1.clone(), actor, ErrorCode::Conflict);
        assert_eq!(
            err.details(),
            &json!({"proposal_id": pid, "revision": 1, "latest_revision": 2}),
            "{tool}"
        );
        // A revision that never existed is not_found.
        let mut rev3 = rev1;
        rev3["revision"] = json!(3);
        let err = w.refused(tool, rev3, actor, ErrorCode::NotFound);
        assert_eq!(
            err.details(),
            &json!({"kind": "revision", "id": format!("{pid}@3")}),
            "{tool}"
        );
        // The latest is accepted.
        let mut rev2 = rev1_clone(tool, &pid);
        rev2["revision"] = json!(2);
        w.ok(tool, rev2, actor);
    }
}

/// The revision-1 arguments of each evidence tool (rebuilt: the loop
/// above moved its copy).
fn rev1_clone(tool: &str, pid: &str) -> Value {
    match tool {
        "vote.cast" => json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        "decision.record" => {
            json!({"proposal_id": pid, "revision": 1, "decision": "accept", "reason_md": "ok"})
        }
        "security.review" => json!({"proposal_id": pid, "revision": 1, "verdict": "pass"}),
        "human.request_approval" | "human.approve" => json!({"proposal_id": pid, "revision": 1}),
        "test.record" => {
            json!({"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"})
        }
        _ => unreachable!("{tool}"),
    }
}

#[test]
fn an_idempotent_replay_returns_the_first_result_and_writes_nothing() {
    let w = World::new();
    let args = create_args(json!({"idempotency_key": "create-1"}));
    let first = w.ok("proposal.create", args.clone(), &w.author);
    assert_eq!(w.rows("idempotency"), 1);
    let before = fingerprint(w.dir.path());
    let events = w.rows("events");
    let again = w.ok("proposal.create", args.clone(), &w.author);
    assert_eq!(again, first, "the same result, byte for byte");
    assert_eq!(fingerprint(w.dir.path()), before, "a replay wrote");
    assert_eq!(w.rows("events"), events);
    assert_eq!(w.rows("proposals"), 1);
    let pid = str_of(&first["proposal"]["id"]);

    // A replay of a transition returns its stored result, even though
    // the transition could not happen again now.
    let rr = json!({"proposal_id": pid, "idempotency_key": "rr-1"});
    let reviewed = w.ok("proposal.request_review", rr.clone(), &w.author);
    let before = fingerprint(w.dir.path());
    assert_eq!(w.ok("proposal.request_review", rr, &w.author), reviewed);
    assert_eq!(fingerprint(w.dir.path()), before);
    // ...while without the key it is refused.
    w.refused(
        "proposal.request_review",
        json!({"proposal_id": pid}),
        &w.author,
        ErrorCode::IllegalTransition,
    );

    // A vote replayed after the proposal moved on still returns the vote.
    let vote =
        json!({"proposal_id": pid, "revision": 1, "vote": "approve", "idempotency_key": "v-1"});
    let cast = w.ok("vote.cast", vote.clone(), &w.reviewer);
    w.revise(&pid, 1, PATCH2);
    let before = fingerprint(w.dir.path());
    assert_eq!(w.ok("vote.cast", vote, &w.reviewer), cast);
    assert_eq!(fingerprint(w.dir.path()), before);

    // A call refused with a key stores nothing: the key stays free.
    let bad =
        json!({"proposal_id": pid, "revision": 1, "vote": "approve", "idempotency_key": "v-2"});
    w.refused("vote.cast", bad, &w.reviewer, ErrorCode::Conflict);
    let good =
        json!({"proposal_id": pid, "revision": 2, "vote": "approve", "idempotency_key": "v-2"});
    assert_eq!(w.ok("vote.cast", good, &w.reviewer)["vote"]["revision"], 2);

    // A no-op agent.register with a key records the key, not an event.
    let reg = json!({"agent_id": "bob", "roles": ["reviewer"], "idempotency_key": "reg-1"});
    let events = w.rows("events");
    let out = w.ok("agent.register", reg.clone(), &w.host);
    assert_eq!(out["created"], false);
    assert_eq!(w.rows("events"), events);
    let before = fingerprint(w.dir.path());
    assert_eq!(w.ok("agent.register", reg, &w.host), out);
    assert_eq!(fingerprint(w.dir.path()), before);
}

#[test]
fn the_same_key_with_other_arguments_is_an_idempotency_conflict() {
    let w = World::new();
    w.ok(
        "proposal.create",
        create_args(json!({"idempotency_key": "k1"})),
        &w.author,
    );
    for other in [
        create_args(json!({"idempotency_key": "k1", "title": "Another title"})),
        create_args(json!({"idempotency_key": "k1", "risk": "high"})),
        create_args(json!({"idempotency_key": "k1", "patch": PATCH2})),
        create_args(json!({"idempotency_key": "k1", "affected_resources": ["file:hello.txt"]})),
    ] {
        let err = w.refused(
            "proposal.create",
            other,
            &w.author,
            ErrorCode::IdempotencyConflict,
        );
        assert_eq!(
            err.details(),
            &json!({"idempotency_key": "k1", "tool": "proposal.create"})
        );
    }
    // The same key for another tool is a conflict too.
    let pid = w.proposal();
    let err = w.refused(
        "proposal.withdraw",
        json!({"proposal_id": pid, "idempotency_key": "k1"}),
        &w.author,
        ErrorCode::IdempotencyConflict,
    );
    assert_eq!(err.details()["tool"], "proposal.create");
}

#[test]
fn the_same_key_by_another_actor_is_independent() {
    let w = World::new();
    let carol = w.agent("carol", &["author"]);
    let args = create_args(json!({"idempotency_key": "shared"}));
    let a = w.ok("proposal.create", args.clone(), &w.author);
    let c = w.ok("proposal.create", args.clone(), &carol);
    assert_ne!(a["proposal"]["id"], c["proposal"]["id"]);
    assert_eq!(a["proposal"]["author"], "alice");
    assert_eq!(c["proposal"]["author"], "carol");
    assert_eq!(w.rows("proposals"), 2);
    assert_eq!(w.rows("idempotency"), 2);
    // An orchestrator and a person both named like an agent are other actors.
    let t1 = w.ok(
        "task.create",
        json!({"title": "T", "idempotency_key": "shared"}),
        &Actor::orchestrator(id("alice")),
    );
    let t2 = w.ok(
        "task.create",
        json!({"title": "T", "idempotency_key": "shared"}),
        &Actor::human(id("alice")),
    );
    assert_ne!(t1["task"]["id"], t2["task"]["id"]);
    // Each still replays its own.
    assert_eq!(w.ok("proposal.create", args.clone(), &carol), c);
    assert_eq!(w.ok("proposal.create", args, &w.author), a);
    assert_eq!(w.rows("proposals"), 2);
}

#[test]
fn patches_that_do_not_apply_are_malformed_or_escape_are_refused() {
    let w = World::new();
    // Does not apply to the current file.
    let stale = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-goodbye\n+x\n";
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": stale})),
        &w.author,
        ErrorCode::PatchDoesNotApply,
    );
    assert_eq!(err.details()["path"], "hello.txt");
    assert_eq!(err.details()["hunk"], 1);
    // Modifies a file that does not exist.
    let missing = "--- a/absent.txt\n+++ b/absent.txt\n@@ -1 +1 @@\n-a\n+b\n";
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": missing})),
        &w.author,
        ErrorCode::PatchDoesNotApply,
    );
    assert_eq!(err.details()["path"], "absent.txt");
    // Malformed: the line is named. (Text after a section is skipped, as
    // git skips it; a hunk header there is not.)
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": format!("{PATCH}zzz\n@@ -1 +1 @@\n-a\n+b\n")})),
        &w.author,
        ErrorCode::InvalidPatch,
    );
    assert_eq!(err.details()["line"], 7);
    assert_eq!(err.details()["found"], "@@ -1 +1 @@");
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n"})),
        &w.author,
        ErrorCode::InvalidPatch,
    );
    assert!(
        err.details()["line"].as_u64().is_some(),
        "{}",
        err.details()
    );
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": "not a patch\n"})),
        &w.author,
        ErrorCode::InvalidPatch,
    );
    assert!(err.details()["line"].as_u64().is_some());
    // Escaping the root, or writing roundtable's own directory.
    for (patch, path) in [
        (
            "--- /dev/null\n+++ b/../evil.txt\n@@ -0,0 +1 @@\n+x\n",
            "../evil.txt",
        ),
        (
            "--- a/../hello.txt\n+++ b/../hello.txt\n@@ -1 +1 @@\n-hello\n+x\n",
            "../hello.txt",
        ),
        (
            "--- /dev/null\n+++ b/.roundtable/store.db\n@@ -0,0 +1 @@\n+x\n",
            ".roundtable/store.db",
        ),
        (
            "--- /dev/null\n+++ b/.git/config\n@@ -0,0 +1 @@\n+x\n",
            ".git/config",
        ),
        // Issue 14 item 19: stripping `b/` from `b//etc/x` leaves an
        // absolute path (it used to be squashed to `etc/x` and written).
        ("--- /dev/null\n+++ b//etc/x\n@@ -0,0 +1 @@\n+x\n", "/etc/x"),
        (
            "--- a//etc/x\n+++ b//etc/x\n@@ -1 +1 @@\n-hello\n+x\n",
            "/etc/x",
        ),
    ] {
        let err = w.refused(
            "proposal.create",
            create_args(json!({"patch": patch})),
            &w.author,
            ErrorCode::PathEscape,
        );
        assert_eq!(err.details()["path"], path);
    }
    // Attaching a revision that does not apply.
    let pid = w.proposal();
    let err = w.refused(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": stale}),
        &w.author,
        ErrorCode::PatchDoesNotApply,
    );
    assert_eq!(err.details()["path"], "hello.txt");
    // An edit plan whose precondition is stale.
    let mut plan = edit_plan();
    plan["documentChanges"][0]["precondition"]["expectedDigest"] =
        json!(roundtable::Digest::of(b"other\n").to_string());
    w.refused(
        "proposal.create",
        create_args(json!({"patch": null, "edit_plan": plan})),
        &w.author,
        ErrorCode::PreconditionFailed,
    );
}

#[test]
fn a_patch_and_an_edit_plan_or_neither_is_refused() {
    let w = World::new();
    let err = w.refused(
        "proposal.create",
        create_args(json!({"edit_plan": edit_plan()})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(
        err.details(),
        &json!({"field": "edit_plan", "reason": "give a patch or an edit_plan, not both"})
    );
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": null})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(
        err.details(),
        &json!({"field": "patch", "reason": "a patch or an edit_plan is required"})
    );
    let pid = w.proposal();
    for args in [
        json!({"proposal_id": pid, "expected_revision": 1}),
        json!({"proposal_id": pid, "expected_revision": 1, "patch": PATCH2, "edit_plan": edit_plan()}),
    ] {
        w.refused(
            "proposal.attach_patch",
            args,
            &w.author,
            ErrorCode::InvalidArgument,
        );
    }
}

#[test]
fn an_unknown_tool_is_not_found() {
    let w = World::new();
    for name in ["proposal.delete", "", "PROPOSAL.CREATE", "proposal.create "] {
        let err = w.refused(name, json!({}), &w.host, ErrorCode::NotFound);
        assert_eq!(err.details(), &json!({"kind": "tool", "id": name}));
    }
    let names: Vec<&str> = roundtable::Engine::tools().iter().map(|t| t.name).collect();
    for required in [
        "agent.register",
        "task.create",
        "proposal.create",
        "proposal.attach_patch",
        "proposal.get",
        "proposal.list",
        "proposal.request_review",
        "proposal.withdraw",
        "patch.reject",
        "vote.cast",
        "vote.list",
        "decision.record",
        "security.review",
        "human.request_approval",
        "human.approve",
        "test.record",
        "events.list",
        "events.verify",
    ] {
        assert!(names.contains(&required), "{required} is not registered");
    }
}

/// No message shows Rust's debug form of a value (`Id("k1")`, `Role("x")`,
/// `Veto`): ids, roles and enum values are spelled as the caller wrote them.
#[test]
fn messages_never_show_rust_debug_formatting() {
    let w = World::new();
    w.ok(
        "proposal.create",
        create_args(json!({"idempotency_key": "k1"})),
        &w.author,
    );
    let err = w.refused(
        "proposal.create",
        create_args(json!({"idempotency_key": "k1", "title": "Another title"})),
        &w.author,
        ErrorCode::IdempotencyConflict,
    );
    assert_eq!(
        err.message(),
        "idempotency key k1 was used for another call (proposal.create with other arguments)"
    );
    for (doc, shown) in [
        (
            "version = 1\n[approvals]\neligible_roles = [\"reviewer\", \"reviewer\"]\n",
            "duplicate value \"reviewer\"",
        ),
        (
            "version = 1\n[approvals]\nblocking_votes = [\"veto\", \"veto\"]\n",
            "duplicate value \"veto\"",
        ),
    ] {
        let err = w.refused(
            "policy.set",
            json!({"document": doc}),
            &w.host,
            ErrorCode::InvalidPolicy,
        );
        assert!(err.message().contains(shown), "{}", err.message());
    }
}

/// A resource id longer than the limit is `invalid_argument` naming the
/// field, and the message does not repeat the id.
#[test]
fn resource_ids_have_a_length_limit() {
    let w = World::new();
    let limit = roundtable::resource::MAX_RESOURCE_ID_BYTES;
    let long_path = format!("file:{}x", "a/".repeat(limit / 2));
    let long_symbol = format!("symbol:hello.py#{}", "n".repeat(limit));
    for id in [&long_path, &long_symbol] {
        let err = w.refused(
            "claim.acquire",
            json!({"resource_id": id, "type": "write", "ttl_s": 60}),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "resource_id", "{err}");
        assert!(
            err.message().contains(&format!("the limit is {limit}")),
            "{err}"
        );
        assert!(err.message().len() < 200, "the id is not repeated: {err}");
        let err = w.refused(
            "proposal.create",
            create_args(json!({"affected_resources": [id]})),
            &w.author,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(err.details()["field"], "affected_resources[0]", "{err}");
    }
}

/// A file name longer than the file system allows can never be created:
/// `invalid_path` when the patch is read, not `io` (`ENAMETOOLONG`) when
/// the file is opened.
#[test]
fn a_file_name_too_long_is_invalid_path() {
    let w = World::new();
    let name = "n".repeat(300);
    let patch = format!(
        "diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+x\n"
    );
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": patch})),
        &w.author,
        ErrorCode::InvalidPath,
    );
    assert!(err.message().contains("255 bytes"), "{err}");
    let deep = format!("{}x", "d/".repeat(2100));
    let patch = format!("--- /dev/null\n+++ b/{deep}\n@@ -0,0 +1 @@\n+x\n");
    w.refused(
        "proposal.create",
        create_args(json!({"patch": patch})),
        &w.author,
        ErrorCode::InvalidPath,
    );
}

/// Issue 14 item 3: what `GIT binary patch` hunks inflate to is bounded by
/// `max_inflated_bytes`, checked before inflating, and a patch over it is
/// `invalid_argument` naming the limit.
#[test]
fn binary_hunks_that_inflate_past_the_limit_are_refused() {
    use roundtable::diff::{BinaryHunk, Body, ExtendedHeader, FilePatch, Mode, Patch};
    let data = vec![b'z'; 64 << 10];
    let section = FilePatch::git(
        b"big.bin",
        b"big.bin",
        vec![
            ExtendedHeader::NewFileMode(Mode::REGULAR),
            ExtendedHeader::Index {
                old: "0".repeat(40).into(),
                new: "0".repeat(40).into(),
                mode: None,
            },
        ],
        Body::Binary {
            forward: BinaryHunk::literal(&data),
            reverse: None,
        },
    )
    .expect("a valid section");
    let text = String::from_utf8(Patch::new(vec![section]).render()).expect("ascii");
    let w = World::with(
        tempfile::tempdir().expect("tempdir"),
        EngineOptions {
            max_inflated_bytes: (64 << 10) - 1,
            ..EngineOptions::default()
        },
    );
    let err = w.refused(
        "proposal.create",
        create_args(json!({"patch": text})),
        &w.author,
        ErrorCode::InvalidArgument,
    );
    assert_eq!(err.details()["field"], "max_inflated_bytes");
    assert!(
        err.message().contains("max_inflated_bytes"),
        "{}",
        err.message()
    );
    // From JSON, as the C ABI passes it.
    let options = EngineOptions::from_json(&json!({"max_inflated_bytes": 5})).expect("valid");
    assert_eq!(options.max_inflated_bytes, 5);
}

/// Issue 32 item 8: authorization comes first. An unregistered or disabled
/// agent sending a patch that does not apply is `forbidden`, not told what
/// is wrong with the patch; nothing is written.
#[test]
fn issue32_item8_an_agent_that_may_not_propose_is_forbidden_before_its_patch_is_read() {
    let w = World::new();
    let bad = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-not there\n+x\n";
    let stranger = Actor::agent(id("mallory"));
    let err = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": bad}),
        &stranger,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "unregistered", "{}", err.details());
    // A disabled author: the same, for a new proposal and a new revision.
    let pid = w.proposal();
    w.ok(
        "agent.register",
        json!({"agent_id": "alice", "roles": ["author"], "enabled": false}),
        &w.host,
    );
    let err = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "T", "summary_md": "S", "patch": bad}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "disabled");
    let err = w.refused(
        "proposal.attach_patch",
        json!({"proposal_id": pid, "expected_revision": 1, "patch": bad}),
        &w.author,
        ErrorCode::Forbidden,
    );
    assert_eq!(err.details()["reason"], "disabled");
}
