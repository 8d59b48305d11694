//! Issue 33 item 3 (second half): one data type per event kind.
//!
//! `tests/cases/events/recorded.jsonl` holds, for every kind, each shape
//! of `data` the suite wrote BEFORE the types existed (the untyped `json!`
//! objects of commit d15ac02: the suite was run with every appended event
//! recorded, and one line kept per kind and set of keys), and for each kind
//! or field added since (issue 34: `proposal.stale`, `claim.expired`, a
//! landing's `paths` and `symbols`, the queue's events) the bytes it was
//! added with. The stored text
//! feeds the audit log's hash chain, so the typed values must write the
//! same bytes.

use super::support::store_db;
use super::tools::{str_of, World, PATCH};
use roundtable::model::{Event, EventData, EventKind};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;

/// Each recorded `(kind, data text)`.
fn recorded() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/events/recorded.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            (str_of(&v["kind"]), str_of(&v["data"]))
        })
        .collect()
}

#[test]
fn issue33_item3_event_data_bytes_unchanged() {
    let recorded = recorded();
    let mut kinds = BTreeSet::new();
    for (kind, text) in &recorded {
        let kind = EventKind::parse(kind);
        let data: Value = serde_json::from_str(text).expect("stored data is JSON");
        let typed = EventData::from_stored(&kind, &data)
            .unwrap_or_else(|| panic!("{kind} does not read as its type: {text}"));
        assert_eq!(typed.kind(), kind);
        assert_eq!(
            &typed.stored_text(),
            text,
            "{kind}: the typed value writes other bytes"
        );
        kinds.insert(kind);
    }
    let all: BTreeSet<EventKind> = EventKind::ALL.iter().cloned().collect();
    assert_eq!(
        kinds, all,
        "the fixture holds every kind this version writes"
    );

    // What the bytes guard: a value of another shape is refused, and the
    // same content written in another key order is not what is stored.
    let vote = EventKind::VoteCast;
    assert!(EventData::from_stored(&vote, &json!({"revision": 1})).is_none());
    let typed = EventData::from_stored(
        &vote,
        &json!({"vote": "approve", "revision": 1, "agent_id": "bob"}),
    )
    .expect("reads");
    assert_eq!(
        typed.stored_text(),
        r#"{"agent_id":"bob","revision":1,"vote":"approve"}"#
    );
}

#[test]
fn issue33_item3_every_event_written_reads_as_its_type_with_its_stored_bytes() {
    let w = World::new();
    let pid = w.approved("file:hello.txt", PATCH);
    let tid = str_of(
        &w.ok(
            "patch.apply",
            json!({"proposal_id": pid, "revision": 1}),
            &w.host,
        )["transaction"]["id"],
    );
    w.ok(
        "transaction.rollback",
        json!({"transaction_id": tid}),
        &w.host,
    );
    let other = w.proposal();
    w.ok(
        "proposal.withdraw",
        json!({"proposal_id": other}),
        &w.author,
    );

    let stored: Vec<Option<String>> = store_db(w.dir.path())
        .rows("SELECT data FROM events ORDER BY seq")
        .into_iter()
        .map(|mut row| row.remove(0))
        .collect();
    let events: Vec<Event> = w
        .events()
        .into_iter()
        .map(|e| serde_json::from_value(e).expect("an event"))
        .collect();
    assert_eq!(events.len(), stored.len());
    let mut kinds = BTreeSet::new();
    for (event, text) in events.iter().zip(&stored) {
        let typed = event
            .typed_data()
            .unwrap_or_else(|| panic!("{} does not read as its type: {}", event.kind, event.data));
        assert_eq!(typed.kind(), event.kind);
        assert_eq!(Some(typed.stored_text()), *text, "{}", event.kind);
        kinds.insert(event.kind.as_str().to_owned());
    }
    for k in [
        "claim.acquired",
        "proposal.applied",
        "claim.released",
        "transaction.started",
        "transaction.applied",
        "transaction.rolled_back",
        "proposal.rolled_back",
        "proposal.withdrawn",
    ] {
        assert!(kinds.contains(k), "{k} not written: {kinds:?}");
    }
    assert_eq!(w.ok("events.verify", json!({}), &w.host)["valid"], true);
}

#[test]
fn issue33_item3_an_event_of_another_shape_or_kind_still_reads() {
    // A newer version's kind and an older version's shape, stored: the
    // log still lists them, each with its data as stored, and only their
    // typed view is absent.
    let w = World::new();
    let mut db = store_db(w.dir.path());
    let seq = db.int("SELECT max(seq) FROM events");
    for (n, kind, data) in [
        (1, "merge.queued", r#"{"queue":3}"#),
        (2, "vote.cast", r#"{"value":"yes"}"#),
    ] {
        // The seq is spelled in the statement: an integer column takes no
        // text parameter on PostgreSQL.
        db.execute(
            &format!(
                "INSERT INTO events (seq, kind, actor_kind, actor_id, subject, proposal_id, data, at, prev_digest, digest)
                 VALUES ({}, ?1, 'orchestrator', 'host', 'x', NULL, ?2, 1, 'p', 'd')",
                seq + n
            ),
            &[kind, data],
        );
    }
    let events: Vec<Event> = w
        .events()
        .into_iter()
        .map(|e| serde_json::from_value(e).expect("an event"))
        .collect();
    let [.., future, old] = events.as_slice() else {
        panic!("two events appended: {events:?}");
    };
    assert_eq!(future.kind, EventKind::parse("merge.queued"));
    assert_eq!(future.data, json!({"queue": 3}));
    assert!(future.typed_data().is_none());
    assert_eq!(old.kind, EventKind::VoteCast);
    assert_eq!(old.data, json!({"value": "yes"}));
    assert!(old.typed_data().is_none());
}
