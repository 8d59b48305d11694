//! Issue 33, item 3: the fields with a fixed set of values are enums,
//! published as enums in the tools' schemas (so the bindings get enum
//! types), with the JSON values they had as strings.

use super::tools::{str_of, World, PATCH, PATCH2};
use roundtable::model::{Durability, EventKind, OperationKind, PolicyStatus, RevisionFormat};
use roundtable::session::InterdiffStatus;
use roundtable::{Engine, ErrorCode};
use serde_json::{json, Value};

/// The `const`s of the `oneOf` of `$defs/name` in `schema`.
fn constants(schema: &Value, name: &str) -> Vec<String> {
    let def = &schema["$defs"][name];
    let alts = def["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("$defs/{name} is not a oneOf: {def}"));
    alts.iter()
        .map(|a| {
            assert_eq!(a["type"], "string", "$defs/{name}: {a}");
            assert!(a["description"].is_string(), "$defs/{name}: {a}");
            str_of(&a["const"])
        })
        .collect()
}

/// The `$ref` a property's schema names, through `items` and `anyOf`.
fn named_ref(property: &Value) -> Option<String> {
    if let Some(r) = property["$ref"].as_str() {
        return Some(r.to_owned());
    }
    if property["items"].is_object() {
        return named_ref(&property["items"]);
    }
    property["anyOf"].as_array()?.iter().find_map(named_ref)
}

/// A field that must name an enum: (tool, whether in its input schema,
/// the record's `$defs` name or `""` for the root, the field, the enum,
/// the values it had as a string (empty: every event kind)).
type Case<'a> = (&'a str, bool, &'a str, &'a str, &'a str, &'a [&'a str]);

fn spellings<T: serde::Serialize>(values: &[T]) -> Vec<String> {
    values
        .iter()
        .map(|v| str_of(&serde_json::to_value(v).expect("serializes")))
        .collect()
}

#[test]
fn issue33_item3_fixed_value_fields_are_schema_enums_with_todays_spellings() {
    let tool = |name: &str| {
        Engine::tools()
            .iter()
            .find(|t| t.name == name)
            .unwrap_or_else(|| panic!("no tool {name}"))
    };
    let cases: &[Case<'_>] = &[
        ("events.list", false, "Event", "kind", "EventKind", &[]),
        ("events.wait", true, "", "kinds", "EventKind", &[]),
        (
            "patch.apply",
            false,
            "Transaction",
            "durability",
            "Durability",
            &["full", "normal", "off"],
        ),
        (
            "transaction.list",
            false,
            "Transaction",
            "durability",
            "Durability",
            &["full", "normal", "off"],
        ),
        (
            "policy.get",
            false,
            "PolicyRecord",
            "status",
            "PolicyStatus",
            &["draft", "active", "retired", "builtin"],
        ),
        (
            "proposal.compare",
            false,
            "FileInterdiff",
            "status",
            "InterdiffStatus",
            &["changed", "only_in_from", "only_in_to"],
        ),
        (
            "proposal.files",
            false,
            "FileEntry",
            "operation",
            "OperationKind",
            &[
                "create",
                "modify",
                "delete",
                "rename",
                "renamed_away",
                "copy",
            ],
        ),
        (
            "proposal.get",
            false,
            "FileSummary",
            "operation",
            "OperationKind",
            &[
                "create",
                "modify",
                "delete",
                "rename",
                "renamed_away",
                "copy",
            ],
        ),
        (
            "transaction.get",
            false,
            "JournalFile",
            "operation",
            "OperationKind",
            &[
                "create",
                "modify",
                "delete",
                "rename",
                "renamed_away",
                "copy",
            ],
        ),
        (
            "proposal.get",
            false,
            "Revision",
            "format",
            "RevisionFormat",
            &["patch", "edit_plan", "codex_patch", "search_replace"],
        ),
        (
            "proposal.get",
            false,
            "RevisionEntry",
            "format",
            "RevisionFormat",
            &["patch", "edit_plan", "codex_patch", "search_replace"],
        ),
        (
            "patch.validate",
            false,
            "Stage",
            "name",
            "StageName",
            &[
                "claims",
                "preconditions",
                "coverage",
                "dry_run",
                "policy",
                "security_review",
                "human_approval",
                "checks",
            ],
        ),
        (
            "transaction.phases",
            false,
            "Phase",
            "phase",
            "PhaseName",
            &["journaled", "write", "written", "applied", "recovered"],
        ),
        (
            "transaction.phases",
            false,
            "Phase",
            "status",
            "PhaseStatus",
            &["done", "failed"],
        ),
        (
            "queue.list",
            false,
            "QueueEntry",
            "status",
            "QueueStatus",
            &["queued", "landed", "returned", "removed"],
        ),
        (
            "queue.list",
            false,
            "QueueEntry",
            "return_reason",
            "QueueReturnReason",
            &["check_failed", "conflict", "apply_refused"],
        ),
        (
            "events.verify",
            false,
            "UnrecordedRecord",
            "kind",
            "RecordKind",
            &[
                "vote",
                "decision",
                "security_review",
                "human_approval_request",
                "human_approval",
                "test_result",
                "transaction",
            ],
        ),
    ];
    let kinds = spellings(EventKind::ALL);
    assert_eq!(kinds.len(), 35);
    assert!(
        kinds.contains(&"proposal.created".to_owned())
            && kinds.contains(&"transaction.rolled_back".to_owned())
    );
    for (name, input, record, field, enumeration, values) in cases {
        let t = tool(name);
        let schema = if *input {
            t.input_schema()
        } else {
            t.output_schema()
        };
        let owner = if record.is_empty() {
            &schema
        } else {
            &schema["$defs"][*record]
        };
        assert_eq!(
            named_ref(&owner["properties"][*field]).as_deref(),
            Some(format!("#/$defs/{enumeration}").as_str()),
            "{name}: {record}.{field}"
        );
        let want: Vec<String> = if values.is_empty() {
            kinds.clone()
        } else {
            values.iter().map(|v| (*v).to_owned()).collect()
        };
        assert_eq!(
            constants(&schema, enumeration),
            want,
            "{name}: {enumeration}"
        );
    }
    // The Rust enums serialize as those spellings.
    assert_eq!(spellings(&Durability::ALL), ["full", "normal", "off"]);
    assert_eq!(
        spellings(&[
            PolicyStatus::Draft,
            PolicyStatus::Active,
            PolicyStatus::Retired,
            PolicyStatus::Builtin
        ]),
        ["draft", "active", "retired", "builtin"]
    );
    assert_eq!(
        spellings(&[
            InterdiffStatus::Changed,
            InterdiffStatus::OnlyInFrom,
            InterdiffStatus::OnlyInTo
        ]),
        ["changed", "only_in_from", "only_in_to"]
    );
    assert_eq!(spellings(&[OperationKind::RenamedAway]), ["renamed_away"]);
    assert_eq!(
        spellings(&[RevisionFormat::SearchReplace]),
        ["search_replace"]
    );
    // A kind this version does not know is kept as spelled (a newer
    // version's store), though the schema lists only the known ones.
    let future: EventKind = serde_json::from_value(json!("merge.queued")).expect("reads");
    assert_eq!(future, EventKind::Unknown("merge.queued".into()));
    assert_eq!(
        serde_json::to_value(&future).expect("writes"),
        json!("merge.queued")
    );
}

#[test]
fn issue33_item3_enum_fields_answer_with_their_string_values() {
    let w = World::new();
    // A policy's status: the built-in default, a draft, the active one, a
    // retired one.
    let policy = |v: Value| w.ok("policy.get", v, &w.host)["policy"]["status"].clone();
    assert_eq!(policy(json!({})), json!("builtin"));
    let doc = "version = 1\n";
    let first = w.ok("policy.set", json!({"document": doc}), &w.host);
    assert_eq!(first["policy"]["status"], json!("draft"));
    assert_eq!(
        w.ok("policy.activate", json!({"version": 1}), &w.host)["policy"]["status"],
        json!("active")
    );
    w.ok("policy.set", json!({"document": doc}), &w.host);
    w.ok("policy.activate", json!({"version": 2}), &w.host);
    assert_eq!(policy(json!({"version": 1})), json!("retired"));
    // Activating anything but a draft is refused, naming the status.
    let refused = w.refused(
        "policy.activate",
        json!({"version": 1}),
        &w.host,
        ErrorCode::IllegalTransition,
    );
    assert_eq!(refused.details()["status"], json!("retired"));
    assert_eq!(refused.details()["allowed"], json!(["draft"]));

    // A file's operation, a revision's format, two revisions' interdiff,
    // coverage's uncovered operation, the events' kinds.
    let pid = w.proposal();
    w.revise(&pid, 1, PATCH2);
    let files = w.ok("proposal.files", json!({"proposal_id": pid}), &w.host);
    assert_eq!(files["files"][0]["operation"], json!("modify"));
    let got = w.ok("proposal.get", json!({"proposal_id": pid}), &w.host);
    assert_eq!(got["revisions"][0]["format"], json!("patch"));
    assert_eq!(
        got["revision"]["changeset"][0]["operation"],
        json!("modify")
    );
    let compared = w.ok(
        "proposal.compare",
        json!({"proposal_id": pid, "from_revision": 1, "to_revision": 2}),
        &w.host,
    );
    assert_eq!(
        compared["files"][0]["status"],
        json!("changed"),
        "{compared}"
    );
    let report = w.ok("patch.validate", json!({"proposal_id": pid}), &w.host);
    let coverage = report["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .find(|s| s["name"] == "coverage")
        .expect("a coverage stage")
        .clone();
    assert_eq!(coverage["status"], json!("failed"), "{coverage}");
    assert!(
        coverage.to_string().contains(r#""operation":"modify""#),
        "{coverage}"
    );
    let kinds: Vec<Value> = w.events().iter().map(|e| e["kind"].clone()).collect();
    assert!(
        kinds.contains(&json!("proposal.revised")) && kinds.contains(&json!("policy.activated")),
        "{kinds:?}"
    );
    let waited = w.ok(
        "events.wait",
        json!({"since_seq": 0, "kinds": ["proposal.revised"], "timeout_ms": 0}),
        &w.host,
    );
    assert_eq!(
        waited["events"].as_array().map(Vec::len),
        Some(1),
        "{waited}"
    );
    // An unknown kind is still refused by name, and changes nothing.
    let err = w.refused(
        "events.wait",
        json!({"since_seq": 0, "kinds": ["proposal.creatd"], "timeout_ms": 0}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    assert!(err.to_string().contains("proposal.creatd"), "{err}");

    // A transaction's durability, as the store reads it back.
    let approved = w.approved("file:hello.txt", PATCH);
    let applied = w.ok(
        "patch.apply",
        json!({"proposal_id": approved, "revision": 1}),
        &w.host,
    );
    assert_eq!(
        applied["transaction"]["durability"],
        json!("full"),
        "{applied}"
    );
    let tx = str_of(&applied["transaction"]["id"]);
    let read = w.ok("transaction.get", json!({"transaction_id": tx}), &w.host);
    assert_eq!(read["transaction"]["durability"], json!("full"));
    assert_eq!(read["files"][0]["operation"], json!("modify"), "{read}");
}
