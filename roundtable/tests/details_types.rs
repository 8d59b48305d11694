//! Issue 33 item 3: every error code has one typed details type, whose
//! schemars schema is the code's published details schema, and real
//! refusals carry details that read back as their code's type.

use crate::tools::World;
use roundtable::operations::details::{
    details_schema, ConflictDetails, Details, ForbiddenDetails, ForbiddenReason,
    IllegalTransitionDetails, InvalidArgumentDetails, NotFoundDetails, RecordStatus,
};
use roundtable::{ErrorCode, ToolError};
use serde_json::json;

/// `not_found` → `NotFoundDetails`.
fn type_name(code: ErrorCode) -> String {
    let camel: String = code
        .as_str()
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    format!("{camel}Details")
}

#[test]
fn issue33_item3_every_code_has_a_typed_details_schema() {
    let listed = roundtable::operations::details::errors_json();
    let listed = listed.as_array().expect("a list");
    assert_eq!(listed.len(), ErrorCode::ALL.len(), "every code listed once");
    for &code in ErrorCode::ALL {
        let schema = details_schema(code);
        // The schema is schemars' schema of the code's own type.
        assert_eq!(schema["title"], type_name(code), "{code}");
        assert_eq!(schema["type"], "object", "{code}");
        assert_eq!(schema["additionalProperties"], false, "{code}: closed");
        assert_eq!(
            schema["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{code}"
        );
        let described = schema["description"].as_str().unwrap_or_default();
        assert!(
            described.starts_with(&format!("The details of `{code}`: ")),
            "{code}: {described}"
        );
        let entry = listed
            .iter()
            .find(|e| e["code"] == code.as_str())
            .unwrap_or_else(|| panic!("{code} is not listed"));
        assert_eq!(entry["details_schema"], schema, "{code}");
        // Details the type does not have are refused: the type is closed.
        let e =
            ToolError::from_json(code, "m", json!({"no_such_key": 1})).expect_err("an unknown key");
        assert!(e.to_string().contains("no_such_key"), "{code}: {e}");
        // A code whose type has no required key takes empty details, and
        // they read back as they were.
        let required = schema["required"].as_array().map_or(0, Vec::len);
        let empty = ToolError::from_json(code, "m", json!({}));
        assert_eq!(empty.is_ok(), required == 0, "{code}: {empty:?}");
        if let Ok(e) = empty {
            assert_eq!(e.code(), code);
            e.check_details().expect("reads back");
        }
    }
    // The type names its code: a value builds an error of that code.
    assert_eq!(<ConflictDetails as Details>::CODE, ErrorCode::Conflict);
    let e = ToolError::new("m", ConflictDetails::default());
    assert_eq!(e.code(), ErrorCode::Conflict);
}

/// A sample of real refusals: their details read back as their code's
/// type, with the values the refusal names (every refusal the `refused`
/// helper sees is also read back there).
#[test]
fn issue33_item3_real_refusals_read_back_as_their_codes_type() {
    let w = World::new();
    let e = w.refused(
        "proposal.get",
        json!({"proposal_id": "p-none"}),
        &w.host,
        ErrorCode::NotFound,
    );
    let d: NotFoundDetails = e.details_as().expect("not_found's type");
    assert_eq!((d.kind.as_str(), d.id.as_str()), ("proposal", "p-none"));
    assert!(
        e.details_as::<ConflictDetails>().is_none(),
        "another code's type"
    );

    let e = w.refused(
        "proposal.create",
        json!({"task_id": "t1", "title": "x", "summary_md": "x", "patch": "x"}),
        &w.host,
        ErrorCode::Forbidden,
    );
    let d: ForbiddenDetails = e.details_as().expect("forbidden's type");
    assert_eq!(d.actor, w.host);
    assert_eq!(d.reason, Some(ForbiddenReason::WrongKind));
    assert_eq!(
        d.allowed_kinds,
        Some(vec![roundtable::ActorKind::Agent]),
        "{}",
        e.details()
    );

    let e = w.refused(
        "proposal.get",
        json!({"proposal_id": 7}),
        &w.host,
        ErrorCode::InvalidArgument,
    );
    let d: InvalidArgumentDetails = e.details_as().expect("invalid_argument's type");
    assert_eq!(d.field.as_deref(), Some("proposal_id"), "{}", e.details());

    // Withdraw a withdrawn proposal: illegal_transition naming the statuses.
    let id = w.proposal();
    w.ok("proposal.withdraw", json!({"proposal_id": id}), &w.author);
    let e = w.refused(
        "proposal.withdraw",
        json!({"proposal_id": id}),
        &w.author,
        ErrorCode::IllegalTransition,
    );
    let d: IllegalTransitionDetails = e.details_as().expect("illegal_transition's type");
    assert_eq!(
        d.status,
        Some(RecordStatus::Proposal(
            roundtable::model::ProposalStatus::Withdrawn
        )),
        "{}",
        e.details()
    );
    assert!(d.allowed.is_some_and(|a| !a.is_empty()));
}
