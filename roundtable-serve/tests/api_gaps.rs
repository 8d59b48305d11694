//! `roundtable serve` over real HTTP, for issue 35: browser sessions that
//! time out, and the claim that covers each hunk of a diff.

use std::time::Duration;

use serde_json::json;

mod support;
use support::*;

const WS: &str = "/api/v1/workspaces/demo";

/// `GET /api/v1/session` with the session cookie: its status and code.
fn whoami(w: &World, cookie: &str) -> Reply {
    request(
        w.addr,
        "GET",
        "/api/v1/session",
        &[("Cookie", cookie)],
        None,
    )
}

#[test]
fn an_idle_session_ends_and_one_in_use_lives_on_until_its_lifetime() {
    // Wide margins: the machine running the test may be busy.
    let idle = Duration::from_millis(1000);
    let w = world_tuned(|config| {
        config.session_idle = idle;
        config.session_lifetime = Duration::from_millis(4000);
    });
    // Left alone past its idle timeout: refused, then unknown.
    let (cookie, _) = sign_in(&w, CAROL);
    assert_eq!(whoami(&w, &cookie).status, 200);
    std::thread::sleep(idle + Duration::from_millis(500));
    let gone = whoami(&w, &cookie);
    assert_eq!(gone.status, 401);
    assert_eq!(gone.code(), "invalid_argument");
    assert!(
        gone.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("idle")),
        "{}",
        gone.json()
    );
    let again = whoami(&w, &cookie);
    assert_eq!(again.status, 401);
    assert!(
        again.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.contains("idle")),
        "removed, not expired again: {}",
        again.json()
    );
    // Bearer tokens are not sessions: they do not time out.
    assert_eq!(get(&w, CAROL, &format!("{WS}/proposals")).status, 200);
    // Used every 200 ms, a session outlives its idle timeout several
    // times over, on any authenticated route…
    let (cookie, _) = sign_in(&w, DAVE);
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(2500) {
        std::thread::sleep(Duration::from_millis(200));
        let r = request(
            w.addr,
            "GET",
            &format!("{WS}/proposals"),
            &[("Cookie", &cookie)],
            None,
        );
        assert_eq!(r.status, 200, "after {:?}", started.elapsed());
    }
    // …but not its lifetime.
    while started.elapsed() < Duration::from_millis(4600) {
        std::thread::sleep(Duration::from_millis(200));
        let r = whoami(&w, &cookie);
        if r.status == 401 {
            let message = r.json()["error"]["message"].clone();
            assert!(
                message.as_str().is_some_and(|m| m.contains("lifetime")),
                "{message}"
            );
            return;
        }
    }
    panic!("the session outlived its lifetime");
}

/// Two functions ten lines apart.
const TWO: &str = "fn first() -> u32 {\n    1\n}\n// 1\n// 2\n// 3\n// 4\n// 5\n// 6\n// 7\n// 8\n// 9\n// 10\nfn second() -> u32 {\n    2\n}\n";

/// A change to each function: two hunks.
const TWO_PATCH: &str = "--- a/src/two.rs\n+++ b/src/two.rs\n@@ -1,5 +1,5 @@\n fn first() -> u32 {\n-    1\n+    10\n }\n // 1\n // 2\n@@ -12,5 +12,5 @@\n // 9\n // 10\n fn second() -> u32 {\n-    2\n+    20\n }\n";

#[test]
fn each_hunk_shows_the_claims_that_cover_it() {
    let w = world();
    std::fs::write(w.dir.path().join("repo/src/two.rs"), TWO).expect("write");
    let acquire = |token: &str, resource: &str, kind: &str, key: &str| {
        ok(
            &w,
            token,
            "claim.acquire",
            &json!({"resource_id": resource, "type": kind, "ttl_s": 600}),
            key,
        )["claim"]["id"]
            .as_str()
            .expect("claim id")
            .to_owned()
    };
    let first = acquire(ALICE, "symbol:src/two.rs#first", "write", "c1");
    let pid = propose(&w, TWO_PATCH, "p1");
    let hunks = |w: &World| {
        let d = get(
            w,
            CAROL,
            &format!("{WS}/proposals/{pid}/diff?path=src/two.rs"),
        )
        .json();
        d["hunks"].as_array().expect("hunks").clone()
    };
    let ids = |hunk: &serde_json::Value| -> Vec<String> {
        hunk["claims"]
            .as_array()
            .expect("claims")
            .iter()
            .map(|c| c["claim_id"].as_str().expect("id").to_owned())
            .collect()
    };
    let got = hunks(&w);
    assert_eq!(got.len(), 2, "{got:?}");
    // The symbol claim covers the hunk in its function, not the other.
    assert_eq!(ids(&got[0]), vec![first.clone()]);
    assert_eq!(got[0]["claim"]["resource"], "symbol:src/two.rs#first");
    assert_eq!(got[0]["claim"]["holder"], "alice");
    assert!(ids(&got[1]).is_empty());
    assert!(got[1]["claim"].is_null());
    // A second claim, on the other function, covers only that hunk.
    let second = acquire(BOB, "symbol:src/two.rs#second", "review", "c2");
    let got = hunks(&w);
    assert_eq!(ids(&got[0]), vec![first.clone()]);
    assert_eq!(ids(&got[1]), vec![second.clone()]);
    // Released, a claim covers nothing any more.
    ok(
        &w,
        ALICE,
        "claim.release",
        &json!({"claim_id": first}),
        "r1",
    );
    let got = hunks(&w);
    assert!(ids(&got[0]).is_empty() && got[0]["claim"].is_null());
    assert_eq!(ids(&got[1]), [second]);
}
