//! Agents and tasks are readable (issue 16, item 9): a host reconciling
//! after a restart lists what is registered instead of upserting blind, and
//! creating an identical task again is not a conflict.

use roundtable::session::{
    CreateTask, GetAgent, GetTask, ListAgents, ListEvents, ListTasks, RegisterAgent, Session,
};
use roundtable::{Actor, Engine, ErrorCode, Id};
use std::collections::BTreeSet;

fn world() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("open");
    (dir, engine)
}

fn host(engine: &Engine) -> Session<'_> {
    engine.session(Actor::orchestrator(Id::new("host").expect("id")))
}

fn events(s: &Session<'_>) -> usize {
    s.events()
        .list(ListEvents::since(0).limit(1000))
        .expect("events")
        .events
        .len()
}

#[test]
fn agents_list_in_registration_order_a_page_at_a_time_with_filters() {
    let (_dir, engine) = world();
    let host = host(&engine);
    // Registered out of id order: the list follows registration.
    let names: Vec<String> = (0..250).map(|i| format!("a{:03}", (i * 7) % 250)).collect();
    for (i, name) in names.iter().enumerate() {
        let role = if i % 5 == 0 { "reviewer" } else { "author" };
        host.setup()
            .register_agent(RegisterAgent::new(name).roles([role]).enabled(i % 10 != 3))
            .expect("registered");
    }
    let mut seen = Vec::new();
    let mut pages = 0;
    let mut cursor = None;
    loop {
        let mut request = ListAgents::all().limit(100);
        if let Some(c) = cursor.take() {
            request = request.cursor(c);
        }
        let page = host.setup().list_agents(request).expect("a page");
        pages += 1;
        assert!(page.agents.len() <= 100);
        seen.extend(page.agents.into_iter().map(|a| a.id));
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, names, "every agent once, in registration order");

    let reviewers = host
        .setup()
        .list_agents(ListAgents::all().role("reviewer").limit(200))
        .expect("reviewers");
    assert_eq!(reviewers.agents.len(), 50);
    assert!(reviewers.agents.iter().all(|a| a.roles == ["reviewer"]));
    let disabled = host
        .setup()
        .list_agents(ListAgents::all().enabled(false).limit(200))
        .expect("disabled");
    assert_eq!(disabled.agents.len(), 25);
    assert!(disabled.agents.iter().all(|a| !a.enabled));
    assert!(disabled.next_cursor.is_none());

    let one = host.setup().get_agent(GetAgent::new("a007")).expect("get");
    assert_eq!(one.agent.id, "a007");
    // The JSON surface says the same.
    let json = engine
        .call(
            "agent.list",
            serde_json::json!({"role": "reviewer", "limit": 1}),
            host.actor(),
        )
        .expect("json");
    assert_eq!(json["agents"][0]["id"], reviewers.agents[0].id);
    assert!(json["next_cursor"].is_string());
}

#[test]
fn reads_of_what_is_not_there_and_bad_pages_are_refused_with_their_codes() {
    let (_dir, engine) = world();
    let host = host(&engine);
    let cases = [
        (
            host.setup().get_agent(GetAgent::new("nobody")).map(|_| ()),
            ErrorCode::NotFound,
        ),
        (
            host.setup().get_task(GetTask::new("none")).map(|_| ()),
            ErrorCode::NotFound,
        ),
        (
            host.setup()
                .list_agents(ListAgents::all().limit(0))
                .map(|_| ()),
            ErrorCode::InvalidArgument,
        ),
        (
            host.setup()
                .list_tasks(ListTasks::all().limit(201))
                .map(|_| ()),
            ErrorCode::InvalidArgument,
        ),
        (
            host.setup()
                .list_agents(ListAgents::all().role("Not A Role"))
                .map(|_| ()),
            ErrorCode::InvalidArgument,
        ),
    ];
    for (i, (result, code)) in cases.into_iter().enumerate() {
        assert_eq!(result.expect_err("refused").code(), code, "case {i}");
    }
    let e = engine
        .call(
            "task.list",
            serde_json::json!({"cursor": "not-a-cursor"}),
            host.actor(),
        )
        .expect_err("a cursor this tool never returned");
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    let e = engine
        .call(
            "agent.get",
            serde_json::json!({"agent_id": "a", "extra": 1}),
            host.actor(),
        )
        .expect_err("unknown key");
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
}

#[test]
fn creating_an_identical_task_again_returns_it_and_another_under_its_id_is_a_conflict() {
    let (_dir, engine) = world();
    let host = host(&engine);
    let first = host
        .setup()
        .create_task(CreateTask::new("t1", "Fix the parser").summary_md("It drops hunks."))
        .expect("created");
    assert!(first.created);
    let before = events(&host);
    let again = host
        .setup()
        .create_task(CreateTask::new("t1", "Fix the parser").summary_md("It drops hunks."))
        .expect("the same task again");
    assert!(!again.created);
    assert_eq!(again.task, first.task);
    assert_eq!(events(&host), before, "nothing recorded for the repeat");
    for other in [
        CreateTask::new("t1", "Fix the lexer").summary_md("It drops hunks."),
        CreateTask::new("t1", "Fix the parser"),
    ] {
        let e = host.setup().create_task(other).expect_err("another task");
        assert_eq!(e.code(), ErrorCode::Conflict, "{e}");
    }
    assert_eq!(events(&host), before);
    assert_eq!(
        host.setup().get_task(GetTask::new("t1")).expect("get").task,
        first.task
    );

    for i in 2..=120 {
        host.setup()
            .create_task(CreateTask::new(format!("t{i}"), "Another"))
            .expect("created");
    }
    let mut ids = BTreeSet::new();
    let mut cursor = None;
    loop {
        let mut request = ListTasks::all().limit(50);
        if let Some(c) = cursor.take() {
            request = request.cursor(c);
        }
        let page = host.setup().list_tasks(request).expect("page");
        for t in page.tasks {
            assert!(ids.insert(t.id), "a task twice");
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(ids.len(), 120);
}
