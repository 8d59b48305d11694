//! `roundtable serve` over real HTTP: authentication and sessions, CSRF,
//! idempotency, a governed change from proposal to landing, paging across
//! inserts, the event stream, the diff's syntax classes, and bad input.

use std::time::Duration;

use serde_json::{json, Value};

mod support;
use support::*;

const WS: &str = "/api/v1/workspaces/demo";

fn votes(w: &World, pid: &str) -> usize {
    w.engine
        .call("vote.list", json!({"proposal_id": pid}), &host())
        .expect("votes")["votes"]
        .as_array()
        .map_or(0, Vec::len)
}

fn overview(w: &World, token: &str, pid: &str) -> Value {
    let r = get(w, token, &format!("{WS}/proposals/{pid}"));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

#[test]
fn every_route_needs_credentials_and_a_revoked_token_ends_its_sessions() {
    let w = world();
    let pid = propose(&w, RUST_PATCH, "k1");
    let routes = [
        "/api/v1/session".to_owned(),
        "/api/v1/workspaces".to_owned(),
        format!("{WS}/tools"),
        format!("{WS}/inbox"),
        format!("{WS}/proposals"),
        format!("{WS}/proposals/{pid}"),
        format!("{WS}/proposals/{pid}/files"),
        format!("{WS}/proposals/{pid}/diff"),
        format!("{WS}/proposals/{pid}/symbols"),
        format!("{WS}/proposals/{pid}/interdiff?from=1&to=1"),
        format!("{WS}/transactions"),
        format!("{WS}/transactions/x"),
        format!("{WS}/claims"),
        format!("{WS}/landing"),
        format!("{WS}/events"),
    ];
    let (cookie, _) = sign_in(&w, CAROL);
    for route in &routes {
        let none = request(w.addr, "GET", route, &[], None);
        assert_eq!(none.status, 401, "{route}");
        assert!(none
            .header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer")));
        assert_eq!(none.code(), "invalid_argument", "{route}");
        let wrong = get(&w, "tok-nobody-0123456789", route);
        assert_eq!(wrong.status, 401, "{route}");
    }
    // Signed in, the cookie reads.
    let me = request(
        w.addr,
        "GET",
        "/api/v1/session",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["actor"], "human:carol");
    assert_eq!(get(&w, CAROL, &format!("{WS}/proposals/{pid}")).status, 200);
    // Revoke carol's token by rewriting the file: bearer and cookie die.
    std::thread::sleep(Duration::from_millis(20));
    let text = token_file().replace(&format!("{CAROL} human:carol\n"), "");
    std::fs::write(&w.tokens, text).expect("rewrite");
    assert_eq!(get(&w, CAROL, &format!("{WS}/proposals/{pid}")).status, 401);
    let me = request(
        w.addr,
        "GET",
        "/api/v1/session",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(me.status, 401);
    // A session ended stays ended, whatever the file says later.
    std::fs::write(&w.tokens, token_file()).expect("restore");
    let me = request(
        w.addr,
        "GET",
        "/api/v1/session",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(me.status, 401);
    // Signing in with a bad token is 401 and sets no cookie.
    let bad = request(
        w.addr,
        "POST",
        "/api/v1/session",
        &[],
        Some(br#"{"token":"tok-nobody-0123456789"}"#),
    );
    assert_eq!(bad.status, 401);
    assert!(bad.header("set-cookie").is_none());
}

#[test]
fn the_actor_comes_from_the_session_and_the_engine_refuses_what_a_kind_may_not_do() {
    let w = world();
    let pid = propose(&w, RUST_PATCH, "k1");
    ok(
        &w,
        ALICE,
        "proposal.request_review",
        &json!({"proposal_id": pid}),
        "rr",
    );
    // Dave's session approves as dave, whatever the body claims.
    let (cookie, csrf) = sign_in(&w, DAVE);
    let r = request(
        w.addr,
        "POST",
        &format!("{WS}/tools/human.approve"),
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Idempotency-Key", "a1"),
        ],
        Some(
            json!({"proposal_id": pid, "revision": 1, "actor": "human:carol"})
                .to_string()
                .as_bytes(),
        ),
    );
    // `actor` is not an argument of the tool: refused, nothing approved.
    assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
    let r = request(
        w.addr,
        "POST",
        &format!("{WS}/tools/human.approve"),
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Idempotency-Key", "a2"),
        ],
        Some(
            json!({"proposal_id": pid, "revision": 1})
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["approval"]["human_id"], "dave", "{}", r.json());
    // Another person's CSRF token does not make carol's cookie act.
    let (carol_cookie, _) = sign_in(&w, CAROL);
    let r = request(
        w.addr,
        "POST",
        &format!("{WS}/tools/patch.reject"),
        &[
            ("Cookie", &carol_cookie),
            ("X-CSRF-Token", &csrf),
            ("Idempotency-Key", "r1"),
        ],
        Some(
            json!({"proposal_id": pid, "reason_md": "no"})
                .to_string()
                .as_bytes(),
        ),
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), "forbidden");
    // An agent may not approve as a human: the engine's refusal, its code.
    let r = call(
        &w,
        ALICE,
        "human.approve",
        &json!({"proposal_id": pid, "revision": 1}),
        Some("x"),
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), "forbidden");
    assert_eq!(r.json()["error"]["details"]["reason"], "wrong_kind");
    // An agent's tool list holds no human or orchestrator tool.
    let tools = get(&w, ALICE, &format!("{WS}/tools")).json();
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert!(names.contains(&"vote.cast") && !names.contains(&"human.approve"));
    assert!(!names.contains(&"patch.apply"));
}

#[test]
fn cookie_writes_need_the_csrf_token_and_this_servers_origin() {
    let w = world();
    let pid = propose(&w, RUST_PATCH, "k1");
    ok(
        &w,
        ALICE,
        "proposal.request_review",
        &json!({"proposal_id": pid}),
        "rr",
    );
    let (cookie, csrf) = sign_in(&w, BOB);
    let vote = json!({"proposal_id": pid, "revision": 1, "vote": "approve"}).to_string();
    let path = format!("{WS}/tools/vote.cast");
    let own = format!("http://{}", w.addr);
    for (headers, why) in [
        (
            vec![("Cookie", cookie.as_str()), ("Idempotency-Key", "v")],
            "no CSRF token",
        ),
        (
            vec![
                ("Cookie", cookie.as_str()),
                ("X-CSRF-Token", "0000"),
                ("Idempotency-Key", "v"),
            ],
            "a wrong CSRF token",
        ),
        (
            vec![
                ("Cookie", cookie.as_str()),
                ("X-CSRF-Token", csrf.as_str()),
                ("Origin", "http://evil.example"),
                ("Idempotency-Key", "v"),
            ],
            "a foreign origin",
        ),
    ] {
        let r = request(w.addr, "POST", &path, &headers, Some(vote.as_bytes()));
        assert_eq!(r.status, 403, "{why}");
        assert_eq!(r.code(), "forbidden", "{why}");
        assert_eq!(votes(&w, &pid), 0, "{why}: nothing changed");
    }
    let r = request(
        w.addr,
        "POST",
        &path,
        &[
            ("Cookie", &cookie),
            ("X-CSRF-Token", &csrf),
            ("Origin", &own),
            ("Idempotency-Key", "v"),
        ],
        Some(vote.as_bytes()),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(votes(&w, &pid), 1);
    // Signing out needs the token too, then the cookie is dead.
    let out = request(
        w.addr,
        "DELETE",
        "/api/v1/session",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(out.status, 403);
    let out = request(
        w.addr,
        "DELETE",
        "/api/v1/session",
        &[("Cookie", &cookie), ("X-CSRF-Token", &csrf)],
        None,
    );
    assert_eq!(out.status, 200);
    let me = request(
        w.addr,
        "GET",
        "/api/v1/session",
        &[("Cookie", &cookie)],
        None,
    );
    assert_eq!(me.status, 401);
}

#[test]
fn a_mutating_tool_needs_an_idempotency_key_and_a_replay_has_one_effect() {
    let w = world();
    let args = json!({"task_id": "t1", "title": "T", "summary_md": "s", "patch": RUST_PATCH});
    let r = call(&w, ALICE, "proposal.create", &args, None);
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "invalid_argument");
    assert_eq!(r.json()["error"]["details"]["field"], "Idempotency-Key");
    let count = || {
        w.engine
            .call("proposal.list", json!({}), &host())
            .expect("list")["proposals"]
            .as_array()
            .map_or(0, Vec::len)
    };
    assert_eq!(count(), 0);
    let first = ok(&w, ALICE, "proposal.create", &args, "same");
    let again = ok(&w, ALICE, "proposal.create", &args, "same");
    assert_eq!(first, again);
    assert_eq!(count(), 1);
    // A read needs no key.
    let r = call(&w, ALICE, "proposal.list", &json!({}), None);
    assert_eq!(r.status, 200);
}

#[test]
fn a_governed_change_from_proposal_to_landing_over_http() {
    let w = world();
    let pid = propose(&w, RUST_PATCH, "create");
    let o = overview(&w, CAROL, &pid);
    assert_eq!(
        o["status"]["next"][0]["action"], "request_review",
        "{}",
        o["status"]
    );
    assert_eq!(
        o["status"]["validation"]["stages"][0]["status"], "failed",
        "no claim yet"
    );
    // A waiting tool (claim.acquire) through the same route.
    ok(
        &w,
        ALICE,
        "claim.acquire",
        &json!({"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 600}),
        "claim",
    );
    let o = overview(&w, CAROL, &pid);
    assert_eq!(o["claims"][0]["agent_id"], "alice", "{o}");
    let d = get(
        &w,
        CAROL,
        &format!("{WS}/proposals/{pid}/diff?path=src/lib.rs"),
    )
    .json();
    assert_eq!(d["hunks"][0]["claim"]["holder"], "alice", "{d}");
    assert_eq!(o["proposal"]["status"], "pending", "{o}");
    assert_eq!(o["revisions"].as_array().map(Vec::len), Some(1));
    assert!(o["status"]["next"].is_array());
    for key in [
        "votes",
        "checks",
        "claims",
        "carried_evidence",
        "secret_findings",
        "loose_match",
    ] {
        assert!(o[key].is_array(), "{key}: {o}");
    }
    ok(
        &w,
        ALICE,
        "proposal.request_review",
        &json!({"proposal_id": pid}),
        "rr",
    );
    let o = overview(&w, CAROL, &pid);
    assert_eq!(o["proposal"]["status"], "in_review", "{o}");
    assert_eq!(o["status"]["can_land"], false);
    let reqs = o["status"]["validation"]["policy"]["requirements"]
        .as_array()
        .expect("requirements")
        .clone();
    assert!(!reqs.is_empty());
    // Bob's inbox holds the proposal (he can review it).
    let inbox = get(&w, BOB, &format!("{WS}/inbox")).json();
    assert!(inbox["items"].to_string().contains(&pid), "{inbox}");
    ok(
        &w,
        BOB,
        "vote.cast",
        &json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        "v",
    );
    ok(
        &w,
        CAROL,
        "human.approve",
        &json!({"proposal_id": pid, "revision": 1}),
        "a",
    );
    let o = overview(&w, HOST, &pid);
    assert_eq!(o["votes"].as_array().map(Vec::len), Some(1));
    assert_eq!(o["status"]["can_land"], true, "{}", o["status"]);
    let applied = ok(
        &w,
        HOST,
        "patch.apply",
        &json!({"proposal_id": pid, "revision": 1}),
        "ap",
    );
    let tid = applied["transaction"]["id"]
        .as_str()
        .expect("tid")
        .to_owned();
    let o = overview(&w, CAROL, &pid);
    assert_eq!(o["proposal"]["status"], "applied", "{o}");
    assert_eq!(
        std::fs::read_to_string(w.dir.path().join("repo/src/lib.rs")).expect("read"),
        "pub fn greet() -> u32 {\n    42 // the answer\n}\n"
    );
    let txs = get(&w, CAROL, &format!("{WS}/transactions")).json();
    assert_eq!(txs["items"][0]["id"], tid.as_str(), "{txs}");
    let tx = get(&w, CAROL, &format!("{WS}/transactions/{tid}")).json();
    assert!(tx["phases"].is_array(), "{tx}");
    let landing = get(&w, CAROL, &format!("{WS}/landing")).json();
    assert_eq!(landing["chain"]["valid"], true, "{landing}");
    assert!(
        landing["log"].is_null(),
        "files mode has no commits: {landing}"
    );
    let list = get(&w, CAROL, &format!("{WS}/proposals?status=applied")).json();
    assert_eq!(list["items"][0]["proposal_id"], pid.as_str(), "{list}");
    assert_eq!(list["items"][0]["revision"], 1);
    let ws = get(&w, CAROL, "/api/v1/workspaces").json();
    assert_eq!(
        ws,
        json!({"workspaces": [{"name": "demo", "landing": "files"}]})
    );
}

#[test]
fn pages_continue_across_inserts_without_skipping_or_repeating() {
    let w = world();
    let mut made: Vec<String> = (0..5)
        .map(|i| propose(&w, RUST_PATCH, &format!("p{i}")))
        .collect();
    let page1 = get(&w, CAROL, &format!("{WS}/proposals?limit=2")).json();
    let cursor = page1["next_cursor"].as_str().expect("cursor").to_owned();
    for i in 5..8 {
        made.push(propose(&w, RUST_PATCH, &format!("p{i}")));
    }
    let mut seen: Vec<String> = Vec::new();
    let mut take = |page: &Value| {
        for item in page["items"].as_array().expect("items") {
            seen.push(item["proposal_id"].as_str().expect("id").to_owned());
        }
    };
    take(&page1);
    let mut next = Some(cursor);
    while let Some(c) = next {
        let page = get(&w, CAROL, &format!("{WS}/proposals?limit=2&cursor={c}")).json();
        take(&page);
        next = page["next_cursor"].as_str().map(str::to_owned);
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "a proposal repeated: {seen:?}");
    for old in &made[..5] {
        assert!(seen.contains(old), "{old} skipped: {seen:?}");
    }
    // Files of a large proposal: a new revision between pages does not
    // change the pages of the one being read.
    let pid = propose(&w, &many_files(450, "a"), "big");
    let page1 = get(&w, CAROL, &format!("{WS}/proposals/{pid}/files?limit=200")).json();
    assert_eq!(page1["items"].as_array().map(Vec::len), Some(200));
    ok(
        &w,
        ALICE,
        "proposal.attach_patch",
        &json!({"proposal_id": pid, "expected_revision": 1, "patch": format!("{}{}", many_files(450, "a"), many_files(10, "0"))}),
        "rev2",
    );
    let mut paths: Vec<String> = Vec::new();
    let mut page = page1;
    loop {
        for item in page["items"].as_array().expect("items") {
            paths.push(item["path"].as_str().expect("path").to_owned());
        }
        let Some(c) = page["next_cursor"].as_str() else {
            break;
        };
        page = get(
            &w,
            CAROL,
            &format!("{WS}/proposals/{pid}/files?limit=200&cursor={c}"),
        )
        .json();
    }
    assert_eq!(paths.len(), 450, "revision 1's files, each once");
    let mut sorted = paths.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, paths);
    let bad = get(&w, CAROL, &format!("{WS}/proposals/{pid}/files?cursor=zz"));
    assert_eq!(bad.status, 400);
}

#[test]
fn the_event_stream_resumes_exactly_where_the_client_left() {
    let w = world_with(Duration::from_millis(200), None);
    let start = *all_seqs(&w).last().expect("setup events");
    let mut stream = Events::open(&w, CAROL, &format!("?after={start}"), None);
    assert_eq!(stream.status, 200);
    let pid = propose(&w, RUST_PATCH, "e1");
    let got = stream.events(1);
    assert_eq!(got[0].1, "proposal.created", "{got:?}");
    let last = got[0].0;
    // A heartbeat while nothing happens.
    loop {
        if let Sse::Comment(c) = stream.next() {
            if c == "heartbeat" {
                break;
            }
        }
    }
    drop(stream);
    ok(
        &w,
        ALICE,
        "proposal.request_review",
        &json!({"proposal_id": pid}),
        "rr",
    );
    ok(
        &w,
        BOB,
        "vote.cast",
        &json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        "v",
    );
    let expected: Vec<u64> = all_seqs(&w).into_iter().filter(|s| *s > last).collect();
    assert!(expected.len() >= 2, "{expected:?}");
    // Last-Event-ID wins over ?after=.
    let mut again = Events::open(&w, CAROL, "?after=0", Some(last));
    let resumed: Vec<u64> = again
        .events(expected.len())
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(resumed, expected, "exactly the missed events, in order");
    // Nothing more arrives but heartbeats.
    for _ in 0..2 {
        assert!(matches!(again.next(), Sse::Comment(_)));
    }
    let bad = Events::open(&w, CAROL, "?after=x", None);
    assert_eq!(bad.status, 400);
}

#[test]
fn the_diff_classes_rust_and_a_huge_file_list_pages() {
    let w = world();
    let pid = propose(&w, RUST_PATCH, "d1");
    let d = get(
        &w,
        CAROL,
        &format!("{WS}/proposals/{pid}/diff?path=src/lib.rs"),
    )
    .json();
    assert_eq!(d["path"], "src/lib.rs", "{d}");
    let hunk = &d["hunks"][0];
    assert_eq!(hunk["old_start"], 1);
    let lines = hunk["lines"].as_array().expect("lines");
    let add = lines
        .iter()
        .find(|l| l["kind"] == "add")
        .expect("an added line");
    assert_eq!(add["new_no"], 2);
    assert_eq!(add["text"], "    42 // the answer");
    assert_eq!(add["classes"], json!([[4, 6, "num"], [7, 20, "com"]]));
    let first = &lines[0];
    assert_eq!(first["classes"][0], json!([0, 3, "kw"]));
    let missing = get(
        &w,
        CAROL,
        &format!("{WS}/proposals/{pid}/diff?path=nope.rs"),
    );
    assert_eq!(missing.status, 404);
    let big = propose(&w, &many_files(300, "b"), "d2");
    let page = get(&w, CAROL, &format!("{WS}/proposals/{big}/diff?limit=100")).json();
    assert_eq!(
        page["items"].as_array().map(Vec::len),
        Some(100),
        "{}",
        page["total_files"]
    );
    assert_eq!(page["total_files"], 300);
    let c = page["next_cursor"].as_str().expect("more");
    let page2 = get(
        &w,
        CAROL,
        &format!("{WS}/proposals/{big}/diff?limit=100&cursor={c}"),
    )
    .json();
    assert_ne!(page2["items"][0]["path"], page["items"][0]["path"]);
}

#[test]
fn bad_input_gets_a_coded_error_and_changes_nothing() {
    let w = world_with(Duration::from_secs(15), Some(4096));
    let r = get(&w, CAROL, "/api/v1/workspaces/nope/proposals");
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "not_found");
    assert_eq!(r.json()["error"]["details"]["kind"], "workspace");
    let auth = format!("Bearer {ALICE}");
    let r = request(
        w.addr,
        "POST",
        &format!("{WS}/tools/proposal.create"),
        &[("Authorization", &auth), ("Idempotency-Key", "k")],
        Some(b"{not json"),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.code(), "invalid_argument");
    let r = call(&w, ALICE, "no.such_tool", &json!({}), Some("k"));
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "not_found");
    let huge = json!({"task_id": "t1", "title": "T", "summary_md": "x".repeat(10_000)});
    let r = call(&w, ALICE, "proposal.create", &huge, Some("k"));
    assert_eq!(r.status, 413);
    assert_eq!(r.code(), "invalid_argument");
    let r = request(
        w.addr,
        "DELETE",
        &format!("{WS}/proposals"),
        &[("Authorization", &auth)],
        None,
    );
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow"), Some("GET"));
    let r = get(&w, CAROL, "/api/v1/nothing");
    assert_eq!(r.status, 404);
    assert_eq!(r.code(), "not_found");
    let r = get(&w, CAROL, &format!("{WS}/proposals?limit=500"));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["details"]["field"], "limit");
    let none = w
        .engine
        .call("proposal.list", json!({}), &host())
        .expect("list");
    assert_eq!(none["proposals"], json!([]));
}

#[test]
fn the_console_is_served_with_the_security_headers() {
    let w = world();
    let index = request(w.addr, "GET", "/", &[], None);
    assert_eq!(index.status, 200);
    assert!(index
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/html")));
    let csp = index.header("content-security-policy").expect("csp");
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self'"),
        "{csp}"
    );
    assert!(csp.contains("frame-ancestors 'none'"));
    assert_eq!(index.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(index.header("referrer-policy"), Some("no-referrer"));
    let app = request(w.addr, "GET", "/console/app.js", &[], None);
    assert_eq!(app.status, 200);
    assert!(app
        .header("content-type")
        .is_some_and(|t| t.starts_with("text/javascript")));
    assert_eq!(
        request(w.addr, "GET", "/console/nope.js", &[], None).status,
        404
    );
    let api = get(&w, CAROL, "/api/v1/workspaces");
    assert_eq!(api.header("cache-control"), Some("no-store"));
    assert!(api.header("content-security-policy").is_some());
}

#[test]
fn a_git_landing_shows_its_commit_trailers_and_the_landing_log() {
    let w = world_git();
    ok(
        &w,
        ALICE,
        "claim.acquire",
        &json!({"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 600}),
        "claim",
    );
    let pid = propose(&w, RUST_PATCH, "g1");
    ok(
        &w,
        ALICE,
        "proposal.request_review",
        &json!({"proposal_id": pid}),
        "rr",
    );
    ok(
        &w,
        BOB,
        "vote.cast",
        &json!({"proposal_id": pid, "revision": 1, "vote": "approve"}),
        "v",
    );
    let applied = ok(
        &w,
        HOST,
        "patch.apply",
        &json!({"proposal_id": pid, "revision": 1}),
        "ap",
    );
    let tid = applied["transaction"]["id"]
        .as_str()
        .expect("tid")
        .to_owned();
    let tx = get(&w, CAROL, &format!("{WS}/transactions/{tid}")).json();
    let trailers = tx["commit"]["trailers"]
        .as_array()
        .expect("a landed commit")
        .clone();
    assert!(
        trailers.contains(&json!(["Roundtable-Transaction", tid])),
        "{tx}"
    );
    assert!(
        trailers.contains(&json!(["Roundtable-Proposal", pid])),
        "{tx}"
    );
    // A person reads the landing log; the queue is the orchestrator's.
    let landing = get(&w, CAROL, &format!("{WS}/landing")).json();
    assert_eq!(
        landing["log"]["commits"][0]["id"], tx["commit"]["id"],
        "{landing}"
    );
    assert!(landing["queue"].is_null(), "{landing}");
    let host_view = get(&w, HOST, &format!("{WS}/landing")).json();
    assert!(host_view["queue"]["entries"].is_array(), "{host_view}");
    // An agent may read neither: null, not an error.
    let agent = get(&w, ALICE, &format!("{WS}/landing"));
    assert_eq!(agent.status, 200);
    assert!(agent.json()["log"].is_null());
    assert_eq!(
        get(&w, CAROL, "/api/v1/workspaces").json()["workspaces"][0]["landing"],
        "git"
    );
}

#[test]
fn a_client_that_goes_away_frees_its_stream_and_streams_are_capped() {
    let w = world_waits(Duration::from_millis(200), 1);
    let first = Events::open(&w, CAROL, "", None);
    assert_eq!(first.status, 200);
    // The cap: carol's second stream is busy; another actor's is not.
    let busy = get(&w, CAROL, &format!("{WS}/events"));
    assert_eq!(busy.status, 503);
    assert_eq!(busy.code(), "busy");
    assert_eq!(busy.json()["error"]["details"]["max_waits"], 1);
    let dave = Events::open(&w, DAVE, "", None);
    assert_eq!(dave.status, 200);
    drop(first);
    // Noticed at the next write at the latest (a heartbeat): the place is
    // free again.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let again = Events::open(&w, CAROL, "", None);
        if again.status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the place was never freed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(dave);
}

#[test]
fn beyond_loopback_only_when_allowed_and_then_the_cookie_is_secure() {
    let w = world();
    let tokens = std::sync::Arc::new(roundtable_mcp::Tokens::load(&w.tokens).expect("tokens"));
    let open = |allow: bool| {
        let mut config =
            roundtable_serve::Config::new("0.0.0.0:0".parse().expect("addr"), tokens.clone());
        config
            .workspaces
            .insert("demo".into(), std::sync::Arc::clone(&w.engine));
        config.allow_non_loopback = allow;
        config
    };
    let refused =
        roundtable_serve::run(open(false), |_| panic!("bound")).expect_err("not loopback");
    assert_eq!(refused.code(), roundtable::ErrorCode::InvalidArgument);
    let (tx, rx) = std::sync::mpsc::channel();
    let config = open(true);
    std::thread::spawn(move || {
        let _ = roundtable_serve::run(config, move |addr| {
            let _ = tx.send(addr);
        });
    });
    let bound = rx.recv_timeout(Duration::from_secs(30)).expect("listens");
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", bound.port()).parse().expect("addr");
    let r = request(
        addr,
        "POST",
        "/api/v1/session",
        &[],
        Some(json!({ "token": CAROL }).to_string().as_bytes()),
    );
    assert_eq!(r.status, 200);
    let cookie = r.header("set-cookie").expect("cookie");
    assert!(cookie.ends_with("; Secure"), "{cookie}");
}
