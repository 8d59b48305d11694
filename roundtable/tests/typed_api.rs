//! The typed session API (issue 15): the contract program, unchanged but
//! for its `use` lines, and the failure paths of building a request.

use roundtable::session::{
    AcquireClaim, Applied, ApplyRevision, CastVote, CreateProposal, CreateTask, ListEvents,
    RegisterAgent, RequestReview, Rollback, Validate,
};
use roundtable::{Actor, Engine, ErrorCode, Id, Resource};

#[test]
#[rustfmt::skip] // The contract program, byte for byte.
#[allow(clippy::unwrap_used, clippy::cmp_owned)]
fn a_governed_change_through_the_typed_api() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("a.py"), "x = 1\n")?;
    let engine = Engine::open(dir.path(), crate::support::test_options(dir.path()))?;
    let host = engine.session(Actor::orchestrator(Id::new("host")?));
    host.setup().register_agent(RegisterAgent::new("ada").roles(["author"]))?;
    host.setup().register_agent(RegisterAgent::new("rex").roles(["reviewer"]))?;
    host.setup().create_task(CreateTask::new("t1", "Bump x"))?;
    let ada = engine.session(Actor::agent(Id::new("ada")?));
    let rex = engine.session(Actor::agent(Id::new("rex")?));
    let claim = ada.claims().acquire(AcquireClaim::write("file:a.py".parse::<Resource>()?, 600))?;
    assert!(claim.claim.token > 0);
    let patch = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
    let created = ada.proposals().create(
        CreateProposal::patch("t1", "Bump x", "x goes to 2", patch).resources(["file:a.py"]))?;
    let pid = created.proposal.id.clone();
    assert_eq!(created.revision.number, 1);
    ada.proposals().request_review(RequestReview::new(&pid))?;
    let refused = ada.evidence().vote(CastVote::approve(&pid, 1)).unwrap_err();
    assert_eq!(refused.code(), ErrorCode::Forbidden);
    rex.evidence().vote(CastVote::approve(&pid, 1).reason("LGTM"))?;
    let report = host.validation().validate(Validate::new(&pid))?;
    assert!(report.valid);
    let applied = host.transactions().apply(ApplyRevision::new(&pid, 1))?;
    assert_eq!(applied.transaction.status.to_string(), "applied");
    assert_eq!(std::fs::read_to_string(dir.path().join("a.py"))?, "x = 2\n");
    host.transactions().rollback(Rollback::new(&applied.transaction.id))?;
    assert_eq!(std::fs::read_to_string(dir.path().join("a.py"))?, "x = 1\n");
    let page = host.events().list(ListEvents::since(0))?;
    assert!(page.events.iter().any(|e| e.kind.to_string() == "transaction.applied"));
    assert!(host.events().verify()?.valid);
    // Results read back as types.
    let json = serde_json::to_value(&applied)?;
    let _again: Applied = serde_json::from_value(json)?;
    Ok(())
}

fn world() -> (tempfile::TempDir, Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.py"), "x = 1\n").expect("write");
    let engine = Engine::open(dir.path(), crate::support::test_options(dir.path())).expect("open");
    (dir, engine)
}

fn event_count(engine: &Engine) -> usize {
    let host = engine.session(Actor::orchestrator(Id::new("host").expect("id")));
    host.events()
        .list(ListEvents::since(0))
        .expect("events")
        .events
        .len()
}

#[test]
fn a_request_built_from_bad_values_is_refused_naming_the_field_and_changes_nothing() {
    let (_dir, engine) = world();
    let host = engine.session(Actor::orchestrator(Id::new("host").expect("id")));
    let agent = engine.session(Actor::agent(Id::new("alice").expect("id")));
    let cases: Vec<(&str, roundtable::ToolError)> = vec![
        (
            "agent_id",
            host.setup()
                .register_agent(RegisterAgent::new("has space"))
                .expect_err("refused"),
        ),
        (
            "roles",
            host.setup()
                .register_agent(RegisterAgent::new("ada").roles(["Upper"]))
                .expect_err("refused"),
        ),
        (
            "title",
            host.setup()
                .create_task(CreateTask::new("t1", "   "))
                .expect_err("refused"),
        ),
        (
            "idempotency_key",
            host.setup()
                .create_task(CreateTask::new("t1", "Fine").idempotency_key("no/slash"))
                .expect_err("refused"),
        ),
        (
            "revision",
            host.transactions()
                .apply(ApplyRevision::new("p1", 0))
                .expect_err("refused"),
        ),
        (
            "affected_resources",
            agent
                .proposals()
                .create(CreateProposal::patch("t1", "T", "S", "x").resources(["nowhere:a"]))
                .expect_err("refused"),
        ),
        (
            "ttl_s",
            agent
                .claims()
                .acquire(AcquireClaim::write(
                    "file:a.py".parse().expect("resource"),
                    0,
                ))
                .expect_err("refused"),
        ),
    ];
    for (field, e) in cases {
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{field}: {e}");
        assert!(e.to_string().contains(field), "{field}: {e}");
    }
    // The first bad value wins; a later good one does not hide it.
    let e = host
        .setup()
        .create_task(CreateTask::new("t 1", "Fine").summary_md("ok"))
        .expect_err("refused");
    assert!(e.to_string().contains("task_id"), "{e}");
    assert_eq!(event_count(&engine), 0, "nothing was recorded");
}

#[test]
fn a_struct_literal_is_checked_by_the_json_decoder_when_it_runs() {
    let (_dir, engine) = world();
    let host = engine.session(Actor::orchestrator(Id::new("host").expect("id")));
    // The public field lets a host write revision 0; the decoder refuses it
    // exactly as it refuses `{"revision": 0}` on the JSON surface.
    let mut request = ApplyRevision::new("p1", 1).build().expect("a request");
    request.revision = roundtable::operations::args::RevisionNumber(0);
    let typed = host.transactions().apply(request).expect_err("refused");
    let json = engine
        .call(
            "patch.apply",
            serde_json::json!({"proposal_id": "p1", "revision": 0}),
            host.actor(),
        )
        .expect_err("refused");
    assert_eq!(typed.code(), ErrorCode::InvalidArgument);
    assert_eq!(typed.to_string(), json.to_string());
    assert_eq!(event_count(&engine), 0);
}

#[test]
fn typed_and_json_calls_give_the_same_result() {
    let (_dir, engine) = world();
    let host = engine.session(Actor::orchestrator(Id::new("host").expect("id")));
    let typed = host
        .setup()
        .create_task(CreateTask::new("t1", "Bump x").idempotency_key("k1"))
        .expect("created");
    // The same key through the JSON surface replays the typed call's result.
    let json = engine
        .call(
            "task.create",
            serde_json::json!({"task_id": "t1", "title": "Bump x", "idempotency_key": "k1"}),
            host.actor(),
        )
        .expect("replayed");
    assert_eq!(serde_json::to_value(&typed).expect("json"), json);
    assert_eq!(event_count(&engine), 1);
}
