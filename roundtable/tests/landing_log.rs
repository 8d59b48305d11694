//! Issue 33 item 4: `landing.log` returns the commits roundtable landed on
//! the workspace's branch (what `roundtable log` prints), to the
//! orchestrator and to people; a workspace in files mode, a limit out of
//! range or an agent caller is refused with a stable code, changing
//! nothing.

use super::git_landing::git_world;
use super::landing::{fsck, git};
use super::tools::{id, World, PATCH};
use roundtable::session::LandingLog;
use roundtable::{Actor, ErrorCode};
use serde_json::json;

fn tip(w: &World) -> String {
    git(w.dir.path(), &["rev-parse", "refs/heads/main"])
        .trim()
        .to_owned()
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue33_item4_landing_log_lists_landed_commits() {
    let w = git_world(&[]);
    let d = w.dir.path();
    // Nothing landed yet: the base commit carries no trailer.
    let empty = w.ok("landing.log", json!({}), &w.host);
    assert_eq!(empty, json!({"branch": "refs/heads/main", "commits": []}));
    let pid = w.approved("file:hello.txt", PATCH);
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let tid = applied["transaction"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let landed = tip(&w);
    let log = w.ok("landing.log", json!({"limit": 5}), &w.host);
    assert_eq!(log["branch"], "refs/heads/main");
    let commits = log["commits"].as_array().expect("commits");
    assert_eq!(commits.len(), 1, "{log:#}");
    assert_eq!(commits[0]["id"], landed.as_str());
    assert_eq!(commits[0]["summary"], "Change");
    assert_eq!(commits[0]["author"], "alice <alice@agent.roundtable>");
    assert_eq!(
        commits[0]["trailers"][0],
        json!(["Roundtable-Proposal", pid])
    );
    assert_eq!(
        commits[0]["trailers"][1],
        json!(["Roundtable-Revision", "1"])
    );
    assert_eq!(
        commits[0]["trailers"][2],
        json!(["Roundtable-Transaction", tid])
    );
    // The typed API, as a person: the same commit, as the same JSON.
    let person = w.engine.session(Actor::human(id("carol")));
    let typed = person
        .transactions()
        .landed(LandingLog::new().limit(1))
        .expect("landing.log as a person");
    assert_eq!(serde_json::to_value(&typed).expect("json"), log);
    // Reading changed nothing: the branch, the tree, the repository.
    assert_eq!(tip(&w), landed);
    assert_eq!(
        git(d, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    fsck(d);
}

#[cfg_attr(not(feature = "git"), ignore = "needs the git feature")]
#[test]
fn issue33_item4_landing_log_refuses_files_mode_bad_limits_and_agents() {
    // Files mode commits nothing: precondition_failed naming the setting.
    let files = World::new();
    let e = files.refused(
        "landing.log",
        json!({}),
        &files.host,
        ErrorCode::PreconditionFailed,
    );
    assert_eq!(e.details()["landing"]["mode"], "files", "{}", e.details());
    let details = e
        .details_as::<roundtable::operations::details::PreconditionFailedDetails>()
        .expect("the details are precondition_failed's type");
    assert!(details.landing.is_some_and(|l| l.branch_ref().is_none()));
    // The typed API refuses the same way.
    let typed = files
        .engine
        .session(files.host.clone())
        .transactions()
        .landed(LandingLog::new())
        .expect_err("files mode");
    assert_eq!(typed.code(), ErrorCode::PreconditionFailed);

    let w = git_world(&[]);
    let pid = w.approved("file:hello.txt", PATCH);
    w.ok(
        "patch.apply",
        json!({"proposal_id": pid, "revision": 1}),
        &w.host,
    );
    let before = tip(&w);
    for limit in [json!(0), json!(1001), json!(-1), json!("5")] {
        let e = w.refused(
            "landing.log",
            json!({"limit": limit}),
            &w.host,
            ErrorCode::InvalidArgument,
        );
        assert_eq!(e.details()["field"], "limit", "{limit}: {}", e.details());
    }
    w.refused(
        "landing.log",
        json!({"since": 1}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    // A limit the draft refuses never reaches the tool.
    let typed = w
        .engine
        .session(w.host.clone())
        .transactions()
        .landed(LandingLog::new().limit(0))
        .expect_err("limit 0");
    assert_eq!(typed.code(), ErrorCode::InvalidArgument);
    // History is for the host and for people, not for agents.
    let e = w.refused("landing.log", json!({}), &w.author, ErrorCode::Forbidden);
    assert_eq!(e.details()["reason"], "wrong_kind", "{}", e.details());
    assert_eq!(tip(&w), before);
    fsck(w.dir.path());
}
