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
