//! `roundtable serve` over real HTTP, for issue 36: the blame of a file,
//! what an agent landed, and undoing an agent's work
//! (`proposal.revert_agent`) as a person.

use serde_json::{json, Value};

mod support;
use support::*;

const WS: &str = "/api/v1/workspaces/demo";

/// carol may ask to undo an agent; dave may not.
const POLICY: &str = "version = 1\n\n[approvals]\nminimum = 1\n\n[people]\nrevert = [\"carol\"]\n";

/// alice claims `src/lib.rs`, proposes `patch`, bob approves, the host
/// lands it: the proposal id.
fn land(w: &World, patch: &str, key: &str) -> String {
    ok(
        w,
        ALICE,
        "claim.acquire",
        &json!({"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 600}),
        &format!("{key}-claim"),
    );
    let pid = propose(w, patch, key);
    ok(
        w,
        ALICE,
        "proposal.request_review",
        &json!({"proposal_id": pid}),
        &format!("{key}-rr"),
    );
    ok(
        w,
        BOB,
        "vote.cast",
        &json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        &format!("{key}-v"),
    );
    ok(
        w,
        HOST,
        "patch.apply",
        &json!({"proposal_id": pid, "revision": 1}),
        &format!("{key}-ap"),
    );
    pid
}

/// A commit made with plain git on `main`, outside roundtable.
fn plain_commit(w: &World, path: &str, text: &str) {
    let root = w.dir.path().join("repo");
    std::fs::write(root.join(path), text).expect("write");
    for args in [vec!["add", path], vec!["commit", "-q", "-m", "by hand"]] {
        let status = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=Pat Person",
                "-c",
                "user.email=pat@example.invalid",
            ])
            .args(&args)
            .current_dir(&root)
            .status()
            .expect("git runs");
        assert!(status.success(), "git {args:?}");
    }
}

/// Every proposal, as the orchestrator lists them.
fn proposal_ids(w: &World) -> Vec<Value> {
    let got = w
        .engine
        .call("proposal.list", json!({"limit": 200}), &host())
        .expect("list");
    got["proposals"]
        .as_array()
        .expect("proposals")
        .iter()
        .map(|p| p["id"].clone())
        .collect()
}

/// `POST …/agents/{agent}/revert` with a bearer token.
fn revert(w: &World, token: &str, agent: &str, args: &Value, key: Option<&str>) -> Reply {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if let Some(key) = key {
        headers.push(("Idempotency-Key", key));
    }
    request(
        w.addr,
        "POST",
        &format!("{WS}/agents/{agent}/revert"),
        &headers,
        Some(args.to_string().as_bytes()),
    )
}

#[test]
fn blame_names_the_proposal_and_agent_of_each_line_and_marks_a_plain_commit() {
    let w = world_git();
    let pid = land(&w, RUST_PATCH, "b1");
    plain_commit(
        &w,
        "src/lib.rs",
        "pub fn greet() -> u32 {\n    42 // the answer\n}\n// by hand\n",
    );
    let r = get(&w, CAROL, &format!("{WS}/blame?path=src/lib.rs"));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let b = r.json();
    assert_eq!(b["path"], "src/lib.rs");
    assert_eq!(b["line_count"], 4, "{b}");
    let commits: Vec<Value> = b["commits"].as_array().expect("commits").clone();
    let of_line = |n: u64| -> Value {
        let range = b["ranges"]
            .as_array()
            .expect("ranges")
            .iter()
            .find(|r| r["start_line"].as_u64() <= Some(n) && r["end_line"].as_u64() >= Some(n))
            .cloned()
            .expect("a range for the line");
        commits
            .iter()
            .find(|c| c["id"] == range["commit"])
            .cloned()
            .expect("its commit")
    };
    let landed = of_line(2);
    assert_eq!(landed["governed"], true, "{b}");
    assert_eq!(landed["landing"]["proposal_id"], pid.as_str());
    assert_eq!(landed["landing"]["author_agent"], "alice");
    assert_eq!(landed["landing"]["task_id"], "t1");
    assert!(
        landed["landing"]["evidence"].as_array().is_some_and(|e| e
            .iter()
            .any(|x| x["kind"] == "vote" && x["by"] == "agent:bob")),
        "{landed}"
    );
    let by_hand = of_line(4);
    assert_eq!(by_hand["governed"], false, "{b}");
    assert_eq!(by_hand["not_governed"], "no_transaction");
    assert!(by_hand["author"]
        .as_str()
        .is_some_and(|a| a.starts_with("Pat Person")));
    // The tool's own refusals, with their stable codes.
    let missing = get(&w, CAROL, &format!("{WS}/blame"));
    assert_eq!(missing.status, 400);
    assert_eq!(missing.code(), "invalid_argument");
    let absent = get(&w, CAROL, &format!("{WS}/blame?path=nope.txt"));
    assert!(
        absent.status >= 400,
        "{}",
        String::from_utf8_lossy(&absent.body)
    );
    // No credentials: no blame.
    let anon = request(
        w.addr,
        "GET",
        &format!("{WS}/blame?path=src/lib.rs"),
        &[],
        None,
    );
    assert_eq!(anon.status, 401);
    // A write method on a read route.
    let post = request(
        w.addr,
        "POST",
        &format!("{WS}/blame?path=src/lib.rs"),
        &[("Authorization", &format!("Bearer {CAROL}"))],
        Some(b"{}"),
    );
    assert_eq!(post.status, 405);
}

#[test]
fn an_agents_landings_are_its_applied_proposals_with_the_time_they_landed() {
    let w = world_git();
    let pid = land(&w, RUST_PATCH, "l1");
    let r = get(&w, CAROL, &format!("{WS}/agents/alice/landings")).json();
    assert_eq!(r["agent"]["id"], "alice", "{r}");
    let landings = r["landings"].as_array().expect("landings");
    assert_eq!(landings.len(), 1, "{r}");
    assert_eq!(landings[0]["proposal_id"], pid.as_str());
    assert_eq!(landings[0]["title"], "Change l1");
    let tid = landings[0]["transaction_id"].as_str().expect("tid");
    let tx = get(&w, CAROL, &format!("{WS}/transactions/{tid}")).json();
    assert_eq!(
        landings[0]["landed_at"], tx["transaction"]["finished_at"],
        "{tx}"
    );
    // bob landed nothing; an unknown agent is the engine's not_found.
    let bob = get(&w, CAROL, &format!("{WS}/agents/bob/landings")).json();
    assert_eq!(bob["landings"], json!([]), "{bob}");
    let nobody = get(&w, CAROL, &format!("{WS}/agents/nobody/landings"));
    assert_eq!(nobody.status, 404);
    assert_eq!(nobody.code(), "not_found");
    // The agents to pick an author from.
    let agents = get(&w, CAROL, &format!("{WS}/agents?enabled=true")).json();
    let ids: Vec<&Value> = agents["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| &a["id"])
        .collect();
    assert_eq!(ids, [&json!("alice"), &json!("bob")], "{agents}");
    let bad = get(&w, CAROL, &format!("{WS}/agents?enabled=maybe"));
    assert_eq!(bad.status, 400);
    assert_eq!(bad.code(), "invalid_argument");
}

#[test]
fn undoing_an_agent_is_one_governed_proposal_and_every_refusal_changes_nothing() {
    let w = world_git();
    let draft = w
        .engine
        .call("policy.set", json!({"document": POLICY}), &host())
        .expect("policy");
    let version = draft
        .get("policy")
        .unwrap_or(&draft)
        .get("version")
        .cloned()
        .expect("a version");
    w.engine
        .call("policy.activate", json!({"version": version}), &host())
        .expect("activate");
    let pid = land(&w, RUST_PATCH, "u1");
    let landings = get(&w, CAROL, &format!("{WS}/agents/alice/landings")).json();
    let since = landings["landings"][0]["landed_at"].clone();
    let args = json!({"since": since, "author_agent_id": "bob"});
    let before = proposal_ids(&w);

    // A browser session that does not echo its CSRF token, and one from
    // another site: refused before the engine.
    let (cookie, csrf) = sign_in(&w, CAROL);
    let path = format!("{WS}/agents/alice/revert");
    let body = args.to_string();
    let no_csrf = request(
        w.addr,
        "POST",
        &path,
        &[("Cookie", &cookie), ("Idempotency-Key", "k-csrf")],
        Some(body.as_bytes()),
    );
    assert_eq!(
        no_csrf.status,
        403,
        "{}",
        String::from_utf8_lossy(&no_csrf.body)
    );
    let foreign = request(
        w.addr,
        "POST",
        &path,
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", "https://evil.example"),
            ("Idempotency-Key", "k-origin"),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(foreign.status, 403);
    // No idempotency key; another agent in the body than in the path; a
    // since that is not a time; GET on the route.
    let no_key = revert(&w, CAROL, "alice", &args, None);
    assert_eq!(no_key.status, 400);
    assert_eq!(no_key.code(), "invalid_argument");
    let mut other = args.clone();
    other["agent_id"] = json!("bob");
    let two = revert(&w, CAROL, "alice", &other, Some("k-two"));
    assert_eq!(two.status, 400);
    assert_eq!(
        two.json()["error"]["details"]["field"],
        "agent_id",
        "{}",
        two.json()
    );
    let mut bad_time = args.clone();
    bad_time["since"] = json!("yesterday");
    let bad = revert(&w, CAROL, "alice", &bad_time, Some("k-bad"));
    assert_eq!(bad.status, 400);
    assert_eq!(bad.code(), "invalid_argument");
    assert_eq!(get(&w, CAROL, &path).status, 405);
    // dave holds no revert role: the engine's forbidden.
    let dave = revert(&w, DAVE, "alice", &args, Some("k-dave"));
    assert_eq!(dave.status, 403, "{}", String::from_utf8_lossy(&dave.body));
    assert_eq!(dave.code(), "forbidden");
    assert_eq!(proposal_ids(&w), before, "a refusal made a proposal");

    // carol, through her browser session with its CSRF token.
    let made = request(
        w.addr,
        "POST",
        &path,
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Idempotency-Key", "k-carol"),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(made.status, 200, "{}", String::from_utf8_lossy(&made.body));
    let made = made.json();
    let new = made["proposal"]["id"].clone();
    assert_eq!(made["proposal"]["author"], "bob", "{made}");
    assert_eq!(made["reverted"][0]["proposal_id"], pid.as_str(), "{made}");
    assert_eq!(made["conflicts"], json!([]));
    assert_eq!(made["disabled"], false);
    // A retry with the same key is the same proposal.
    let again = request(
        w.addr,
        "POST",
        &path,
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Idempotency-Key", "k-carol"),
        ],
        Some(body.as_bytes()),
    );
    assert_eq!(again.status, 200);
    assert_eq!(again.json()["proposal"]["id"], new);
    let after = proposal_ids(&w);
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    assert!(after.contains(&new));
    // Nothing landed: the branch still has alice's line.
    assert!(
        std::fs::read_to_string(w.dir.path().join("repo/src/lib.rs"))
            .expect("read")
            .contains("42")
    );
}
