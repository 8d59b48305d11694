//! Opcore edit plans: coordinates on mixed text, every refusal, exact
//! changesets, and the language-neutral fixtures in `tests/cases/edit/`.

use base64::Engine as _;
use roundtable::diff::TreeFile;
use roundtable::edit::{parse_plan, plan_changeset, EditError, PlanStatus};
use roundtable::{Changeset, Digest, ErrorCode, FileChange, FileContent, FileMeta, Operation};
use serde_json::{json, Value};
use std::collections::BTreeMap;

type Tree = BTreeMap<Vec<u8>, TreeFile>;

/// ASCII, CJK (3 UTF-8 bytes, 1 UTF-16 unit), an emoji outside the BMP
/// (4 UTF-8 bytes, 2 UTF-16 units, 1 code point) and CRLF line endings:
///
/// - line 0 `a漢😀b`: 9 bytes, 5 UTF-16 units, 4 code points
/// - line 1 `字😀`: 7 bytes, 3 UTF-16 units, 2 code points
/// - line 2 `end`, LF-terminated
/// - line 3: empty
const MIXED: &str = "a漢😀b\r\n字😀\r\nend\n";

fn d(data: impl AsRef<[u8]>) -> String {
    Digest::of(data.as_ref()).to_string()
}

fn b64(data: impl AsRef<[u8]>) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

fn tree(files: &[(&str, &[u8], bool)]) -> Tree {
    files
        .iter()
        .map(|(p, data, executable)| {
            (
                p.as_bytes().to_vec(),
                TreeFile {
                    data: data.to_vec(),
                    executable: *executable,
                    symlink: false,
                },
            )
        })
        .collect()
}

fn edit(cs: &str, start: (u32, u32), end: (u32, u32), text: &str) -> Value {
    json!({
        "range": {"start": {"line": start.0, "char": start.1}, "end": {"line": end.0, "char": end.1}},
        "coordinateSystem": cs,
        "newText": text,
    })
}

fn modify(path: &str, before: impl AsRef<[u8]>, edits: Vec<Value>) -> Value {
    json!({"path": path, "kind": "modify", "precondition": {"expectedDigest": d(before)}, "edits": edits})
}

fn bytes(plan: &Value) -> Vec<u8> {
    plan.to_string().into_bytes()
}

fn plan_of(changes: Vec<Value>) -> Vec<u8> {
    bytes(&json!({ "documentChanges": changes }))
}

/// The new text of `f` after `edits` on `before`.
fn edited(before: &str, edits: Vec<Value>) -> Result<String, EditError> {
    let plan = parse_plan(&plan_of(vec![modify("f", before, edits)]))?;
    let cs = plan_changeset(&plan, &tree(&[("f", before.as_bytes(), false)]))?;
    let after = cs.files()[0].after.as_ref().expect("a modify has an after");
    Ok(String::from_utf8(after.data.clone()).expect("UTF-8"))
}

#[track_caller]
fn assert_err(err: &EditError, code: ErrorCode, part: &str) {
    assert_eq!(err.code(), code, "{}", err.message());
    assert!(
        err.message().contains(part),
        "{:?} does not contain {part:?}",
        err.message()
    );
    assert_eq!(err.to_string(), err.message());
}

#[track_caller]
fn refused(plan: &[u8], code: ErrorCode, part: &str) -> EditError {
    let err = parse_plan(plan).expect_err("refused");
    assert_err(&err, code, part);
    err
}

#[track_caller]
fn refused_edit(before: &str, edits: Vec<Value>, part: &str) -> EditError {
    let err = edited(before, edits).expect_err("refused");
    assert_err(&err, ErrorCode::InvalidEditPlan, part);
    err
}

// ---- coordinates on mixed text ----

#[test]
fn replace_the_emoji_in_all_three_coordinate_systems() {
    for (cs, s, e) in [("utf8", 4, 8), ("utf16", 2, 4), ("codepoint", 2, 3)] {
        let out = edited(MIXED, vec![edit(cs, (0, s), (0, e), "X")]).expect(cs);
        assert_eq!(out, "a漢Xb\r\n字😀\r\nend\n", "{cs}");
    }
}

#[test]
fn edits_across_a_crlf_in_all_three_coordinate_systems() {
    // Replace 漢, append "!" to line 1, and remove line 1's CRLF (the
    // insertion and the removal touch at the end of line 1).
    for (cs, k1, k2, eol) in [
        ("utf8", 1, 4, 7),
        ("utf16", 1, 2, 3),
        ("codepoint", 1, 2, 2),
    ] {
        let out = edited(
            MIXED,
            vec![
                edit(cs, (1, eol), (2, 0), ""),
                edit(cs, (0, k1), (0, k2), "kan"),
                edit(cs, (1, eol), (1, eol), "!"),
            ],
        )
        .expect(cs);
        assert_eq!(out, "akan😀b\r\n字😀!end\n", "{cs}");
    }
}

#[test]
fn insert_an_emoji_between_cjk_and_emoji() {
    for (cs, c) in [("utf8", 3), ("utf16", 1), ("codepoint", 1)] {
        let out = edited(MIXED, vec![edit(cs, (1, c), (1, c), "😀")]).expect(cs);
        assert_eq!(out, "a漢😀b\r\n字😀😀\r\nend\n", "{cs}");
    }
}

#[test]
fn the_ends_of_crlf_lines_and_the_empty_last_line_are_addressable() {
    for (cs, eol0) in [("utf8", 9), ("utf16", 5), ("codepoint", 4)] {
        let out = edited(
            MIXED,
            vec![
                edit(cs, (0, eol0), (0, eol0), ";"),
                edit(cs, (3, 0), (3, 0), "tail"),
            ],
        )
        .expect(cs);
        assert_eq!(out, "a漢😀b;\r\n字😀\r\nend\ntail", "{cs}");
        let out = edited(MIXED, vec![edit(cs, (1, 0), (2, 0), "")]).expect(cs);
        assert_eq!(out, "a漢😀b\r\nend\n", "{cs}");
    }
}

#[test]
fn a_lone_cr_ends_a_line_and_cr_cr_lf_is_two() {
    assert_eq!(
        edited("a\rb", vec![edit("utf16", (1, 0), (1, 1), "B")]).expect("ok"),
        "a\rB"
    );
    assert_eq!(
        edited("a\r\r\nb", vec![edit("utf8", (2, 0), (2, 1), "B")]).expect("ok"),
        "a\r\r\nB"
    );
    refused_edit(
        "a\r\r\nb",
        vec![edit("utf8", (3, 0), (3, 0), "")],
        "line 3 is past the end of the text (3 lines)",
    );
}

#[test]
fn insertions_at_one_position_keep_array_order_and_precede_a_replacement() {
    let out = edited(
        "abc",
        vec![
            edit("utf8", (0, 1), (0, 1), "1"),
            edit("utf8", (0, 1), (0, 3), "-"),
            edit("utf8", (0, 1), (0, 1), "2"),
        ],
    )
    .expect("ok");
    assert_eq!(out, "a12-");
    // Replacements that touch at a point are not overlaps.
    let out = edited(
        "abcdef",
        vec![
            edit("utf8", (0, 3), (0, 6), "Z"),
            edit("utf8", (0, 0), (0, 3), "Y"),
        ],
    )
    .expect("ok");
    assert_eq!(out, "YZ");
}

#[test]
fn coordinate_systems_may_mix_within_one_file() {
    let out = edited(
        MIXED,
        vec![
            edit("utf8", (0, 8), (0, 9), "B"),
            edit("utf16", (0, 0), (0, 1), "A"),
            edit("codepoint", (1, 1), (1, 2), "?"),
        ],
    )
    .expect("ok");
    assert_eq!(out, "A漢😀B\r\n字?\r\nend\n");
}

#[test]
fn utf8_offsets_work_on_text_that_is_not_utf8() {
    let before = b"caf\xe9\n\xff\xfe";
    let plan = parse_plan(&plan_of(vec![modify(
        "f",
        before,
        vec![edit("utf8", (1, 1), (1, 2), "!")],
    )]))
    .expect("parses");
    let cs = plan_changeset(&plan, &tree(&[("f", before, false)])).expect("applies");
    let after = cs.files()[0].after.as_ref().expect("after");
    assert_eq!(after.data, b"caf\xe9\n\xff!");
}

// ---- position refusals ----

#[test]
fn refuses_splitting_a_surrogate_pair() {
    let err = refused_edit(
        MIXED,
        vec![edit("utf16", (0, 3), (0, 4), "")],
        "documentChanges[0].edits[0].range.start.char: char 3 on line 0 splits a UTF-16 surrogate pair",
    );
    assert_eq!(
        err.field(),
        Some("documentChanges[0].edits[0].range.start.char")
    );
    assert_eq!(err.path(), Some("f"));
    refused_edit(
        MIXED,
        vec![edit("utf16", (1, 0), (1, 2), "")],
        "range.end.char: char 2 on line 1 splits a UTF-16 surrogate pair",
    );
}

#[test]
fn refuses_splitting_a_utf8_sequence() {
    // Inside 漢 (bytes 1..4) and inside 😀 (bytes 4..8, and 3..7 on line 1).
    for (pos, c) in [((0, 2), 2), ((0, 3), 3), ((0, 5), 5), ((0, 7), 7)] {
        refused_edit(
            MIXED,
            vec![edit("utf8", pos, (0, 9), "")],
            &format!("char {c} on line 0 splits a UTF-8 multi-byte sequence"),
        );
    }
    refused_edit(
        MIXED,
        vec![edit("utf8", (1, 0), (1, 4), "")],
        "range.end.char: char 4 on line 1 splits a UTF-8 multi-byte sequence",
    );
}

#[test]
fn refuses_a_char_past_the_end_of_its_line() {
    // utf8 char 10 would be between the CR and the LF.
    refused_edit(
        MIXED,
        vec![edit("utf8", (0, 10), (0, 10), "")],
        "char 10 is past the end of line 0 (9 bytes)",
    );
    refused_edit(
        MIXED,
        vec![edit("utf16", (0, 0), (0, 6), "")],
        "char 6 is past the end of line 0 (5 UTF-16 code units)",
    );
    refused_edit(
        MIXED,
        vec![edit("codepoint", (1, 3), (1, 3), "")],
        "char 3 is past the end of line 1 (2 code points)",
    );
}

#[test]
fn refuses_a_line_past_the_end() {
    let err = refused_edit(
        MIXED,
        vec![edit("utf16", (4, 0), (4, 0), "")],
        "line 4 is past the end of the text (4 lines)",
    );
    assert_eq!(
        err.field(),
        Some("documentChanges[0].edits[0].range.start.line")
    );
    refused_edit(
        "no newline",
        vec![edit("utf8", (1, 0), (1, 0), "")],
        "line 1 is past the end of the text (1 line)",
    );
}

#[test]
fn refuses_utf16_and_codepoint_offsets_on_a_line_that_is_not_utf8() {
    for cs in ["utf16", "codepoint"] {
        let before = b"ok\n\xff\n";
        let plan = parse_plan(&plan_of(vec![modify(
            "f",
            before,
            vec![edit(cs, (1, 0), (1, 0), "x")],
        )]))
        .expect("parses");
        let err = plan_changeset(&plan, &tree(&[("f", before, false)])).expect_err(cs);
        assert_err(
            &err,
            ErrorCode::InvalidEditPlan,
            &format!("line 1 is not valid UTF-8, so it has no {cs} offsets"),
        );
        // Line 0 is UTF-8 and may be addressed.
        let plan = parse_plan(&plan_of(vec![modify(
            "f",
            before,
            vec![edit(cs, (0, 2), (0, 2), "!")],
        )]))
        .expect("parses");
        let cs = plan_changeset(&plan, &tree(&[("f", before, false)])).expect("line 0");
        assert_eq!(
            cs.files()[0].after.as_ref().expect("after").data,
            b"ok!\n\xff\n"
        );
    }
}

#[test]
fn refuses_overlapping_edits() {
    refused_edit(
        "abcdef",
        vec![
            edit("utf8", (0, 1), (0, 3), "x"),
            edit("utf8", (0, 2), (0, 4), "y"),
        ],
        "documentChanges[0].edits[1].range: edits[1] (line 0, char 2 to line 0, char 4) overlaps edits[0] (line 0, char 1 to line 0, char 3)",
    );
    // An insertion strictly inside a replaced range.
    refused_edit(
        "abcdef",
        vec![
            edit("utf8", (0, 2), (0, 2), "x"),
            edit("utf8", (0, 1), (0, 3), "y"),
        ],
        "edits[1] (line 0, char 1 to line 0, char 3) overlaps edits[0] (line 0, char 2 to line 0, char 2)",
    );
    // A range inside a longer one, found across another edit.
    refused_edit(
        "abcdefgh",
        vec![
            edit("utf8", (0, 0), (0, 6), "x"),
            edit("utf8", (0, 1), (0, 2), "y"),
            edit("utf8", (0, 4), (0, 5), "z"),
        ],
        "overlaps edits[0]",
    );
    // Identical ranges overlap; the overlap is found in bytes across coordinate systems.
    refused_edit(
        MIXED,
        vec![
            edit("utf16", (0, 2), (0, 4), "x"),
            edit("utf8", (0, 4), (0, 8), "y"),
        ],
        "edits[1] (line 0, char 4 to line 0, char 8) overlaps edits[0] (line 0, char 2 to line 0, char 4)",
    );
}

#[test]
fn refuses_a_range_that_ends_before_it_starts() {
    for (start, end, part) in [
        (
            (0, 4),
            (0, 1),
            "end (line 0, char 1) is before start (line 0, char 4)",
        ),
        (
            (1, 0),
            (0, 3),
            "end (line 0, char 3) is before start (line 1, char 0)",
        ),
    ] {
        let err = refused(
            &plan_of(vec![modify("f", MIXED, vec![edit("utf8", start, end, "")])]),
            ErrorCode::InvalidEditPlan,
            part,
        );
        assert_eq!(err.field(), Some("documentChanges[0].edits[0].range"));
    }
}

// ---- parse refusals ----

fn base_change() -> Value {
    modify("f", MIXED, vec![edit("utf8", (0, 0), (0, 0), "x")])
}

/// `base_change()` with `f` applied.
fn changed(f: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut c = base_change();
    f(&mut c);
    plan_of(vec![c])
}

#[test]
fn refuses_unknown_keys_naming_the_field() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            changed(|c| c["mode"] = json!("100755")),
            "documentChanges[0].mode: unknown key \"mode\"",
        ),
        (
            changed(|c| c["edits"][0]["annotation"] = json!("x")),
            "documentChanges[0].edits[0].annotation: unknown key",
        ),
        (
            changed(|c| c["edits"][0]["range"]["middle"] = json!({})),
            "documentChanges[0].edits[0].range.middle: unknown key",
        ),
        (
            changed(|c| c["edits"][0]["range"]["start"]["chr"] = json!(1)),
            "documentChanges[0].edits[0].range.start.chr: unknown key \"chr\" (expected one of: line, char)",
        ),
        (
            changed(|c| c["precondition"]["expectedMode"] = json!("x")),
            "documentChanges[0].precondition.expectedMode: unknown key",
        ),
        (
            bytes(&json!({"documentChanges": [base_change()], "changes": {}})),
            "changes: unknown key \"changes\"",
        ),
        (
            bytes(&json!({"proposal": {"status": "complete", "extra": 1, "workspaceEdit": {"documentChanges": [base_change()]}}})),
            "proposal.extra: unknown key",
        ),
        (
            bytes(&json!({"proposal": {"status": "complete", "workspaceEdit": {"documentChanges": [base_change()], "changeAnnotations": {}}}})),
            "proposal.workspaceEdit.changeAnnotations: unknown key",
        ),
    ];
    for (plan, part) in cases {
        let err = refused(&plan, ErrorCode::InvalidEditPlan, part);
        let field = part.split(':').next().expect("field");
        assert_eq!(err.field(), Some(field));
        assert_eq!(err.details()["field"], json!(field));
    }
}

#[test]
fn refuses_wrong_types_and_missing_fields() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            changed(|c| c["edits"][0]["range"]["start"]["line"] = json!("0")),
            "range.start.line: must be a non-negative integer of at most 4294967295, not \"0\"",
        ),
        (
            changed(|c| c["edits"][0]["range"]["start"]["char"] = json!(-1)),
            "range.start.char: must be a non-negative integer",
        ),
        (
            changed(|c| c["edits"][0]["range"]["end"]["char"] = json!(1.5)),
            "range.end.char: must be a non-negative integer",
        ),
        (
            changed(|c| c["edits"][0]["range"]["end"]["line"] = json!(4294967296u64)),
            "range.end.line: must be a non-negative integer of at most 4294967295",
        ),
        (
            changed(|c| c["edits"][0]["newText"] = json!(5)),
            "edits[0].newText: must be a string, not a number",
        ),
        (
            changed(|c| c["edits"] = json!({})),
            "documentChanges[0].edits: must be an array, not an object",
        ),
        (
            changed(|c| c["edits"] = json!([])),
            "documentChanges[0].edits: must not be empty",
        ),
        (
            changed(|c| {
                c["edits"][0]
                    .as_object_mut()
                    .expect("object")
                    .remove("coordinateSystem");
            }),
            "edits[0].coordinateSystem: is required",
        ),
        (
            changed(|c| c["edits"][0]["coordinateSystem"] = json!("utf32")),
            "edits[0].coordinateSystem: must be one of \"utf8\", \"utf16\", \"codepoint\", not \"utf32\"",
        ),
        (
            changed(|c| {
                c.as_object_mut().expect("object").remove("precondition");
            }),
            "documentChanges[0].precondition: is required",
        ),
        (
            changed(|c| c["path"] = json!(["f"])),
            "documentChanges[0].path: must be a string, not an array",
        ),
        (
            changed(|c| c["precondition"]["expectedDigest"] = json!("sha256:abc")),
            "precondition.expectedDigest: \"sha256:abc\" is not a digest",
        ),
        (
            plan_of(vec![json!("modify f")]),
            "documentChanges[0]: must be an object, not a string",
        ),
        (plan_of(vec![]), "documentChanges: is empty: the plan changes nothing"),
        (b"{}".to_vec(), "documentChanges: is required"),
        (b"[]".to_vec(), "edit plan: must be an object, not an array"),
        (b"{\"documentChanges\": [".to_vec(), "edit plan: is not valid JSON"),
        (b"{} {}".to_vec(), "edit plan: is not valid JSON: trailing characters"),
        (
            changed(|c| c["edits"][0]["rangeBasis"] = json!(d("other"))),
            "edits[0].rangeBasis: is blob:sha256:",
        ),
    ];
    for (plan, part) in cases {
        refused(&plan, ErrorCode::InvalidEditPlan, part);
    }
}

#[test]
fn refuses_duplicate_json_keys() {
    let plan = format!(
        r#"{{"documentChanges": [{{"path": "f", "path": "../x", "kind": "delete", "precondition": {{"expectedDigest": "{}"}}}}]}}"#,
        d(MIXED)
    );
    refused(
        plan.as_bytes(),
        ErrorCode::InvalidEditPlan,
        "is not valid JSON: duplicate key \"path\"",
    );
}

#[test]
fn refuses_a_bad_kind() {
    refused(
        &changed(|c| c["kind"] = json!("move")),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0].kind: must be one of \"modify\", \"create\", \"delete\", \"rename\", not \"move\"",
    );
}

#[test]
fn refuses_bad_precondition_combinations() {
    let digest = json!({"expectedDigest": d(MIXED)});
    let absent = json!({"expectedAbsence": true});
    let x = json!([edit("utf8", (0, 0), (0, 0), "x")]);
    let cases = [
        (
            json!({"path": "n", "kind": "create", "precondition": digest, "edits": x}),
            "documentChanges[0].precondition: a create must have precondition {\"expectedAbsence\": true}",
        ),
        (
            json!({"path": "f", "kind": "modify", "precondition": absent, "edits": x}),
            "a modify must have precondition {\"expectedDigest\": \"blob:sha256:…\"}",
        ),
        (
            json!({"path": "f", "kind": "delete", "precondition": absent}),
            "a delete must have precondition {\"expectedDigest\"",
        ),
        (
            json!({"path": "f", "kind": "rename", "to": "g", "precondition": absent}),
            "a rename must have precondition {\"expectedDigest\"",
        ),
        (
            json!({"path": "f", "kind": "delete", "precondition": {"expectedDigest": d(MIXED), "expectedAbsence": true}}),
            "precondition: must have exactly one of expectedDigest, expectedAbsence",
        ),
        (
            json!({"path": "f", "kind": "delete", "precondition": {}}),
            "precondition: must have exactly one of expectedDigest, expectedAbsence",
        ),
        (
            json!({"path": "n", "kind": "create", "precondition": {"expectedAbsence": false}, "edits": x}),
            "precondition.expectedAbsence: must be true",
        ),
        (
            json!({"path": "n", "kind": "create", "precondition": {"expectedAbsence": "yes"}, "edits": x}),
            "precondition.expectedAbsence: must be a boolean, not a string",
        ),
    ];
    for (change, part) in cases {
        refused(&plan_of(vec![change]), ErrorCode::InvalidEditPlan, part);
    }
}

#[test]
fn refuses_rename_without_to_and_to_elsewhere() {
    let pre = json!({"expectedDigest": d(MIXED)});
    refused(
        &plan_of(vec![
            json!({"path": "f", "kind": "rename", "precondition": pre}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0].to: is required: a rename needs `to`, its destination",
    );
    refused(
        &plan_of(vec![
            json!({"path": "f", "kind": "delete", "to": "g", "precondition": pre}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0].to: only a rename has `to` (kind is \"delete\")",
    );
    refused(
        &plan_of(vec![
            json!({"path": "f", "kind": "rename", "to": "f", "precondition": pre}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0].to: renames the file to itself",
    );
}

#[test]
fn refuses_content_that_does_not_fit_the_kind() {
    let blob = b"new\n";
    let blobs = json!({ d(blob): b64(blob) });
    refused(
        &bytes(&json!({
            "documentChanges": [{
                "path": "f", "kind": "modify", "precondition": {"expectedDigest": d(MIXED)},
                "edits": [edit("utf8", (0, 0), (0, 0), "x")], "after": d(blob),
            }],
            "blobs": blobs,
        })),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0]: has both `edits` and `after`: a file change is either text edits or a whole-blob replacement",
    );
    refused(
        &plan_of(vec![
            json!({"path": "f", "kind": "modify", "precondition": {"expectedDigest": d(MIXED)}}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0]: a modify needs `edits` or `after`",
    );
    refused(
        &plan_of(vec![
            json!({"path": "n", "kind": "create", "precondition": {"expectedAbsence": true}}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0]: a create needs `edits` or `after`",
    );
    refused(
        &plan_of(vec![
            json!({"path": "f", "kind": "delete", "precondition": {"expectedDigest": d(MIXED)},
                             "edits": [edit("utf8", (0, 0), (0, 0), "x")]}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[0].edits: a delete has no content",
    );
}

#[test]
fn refuses_bad_blobs() {
    let blob = b"new\n";
    let with = |blobs: Value| {
        bytes(&json!({
            "documentChanges": [{"path": "f", "kind": "modify",
                                 "precondition": {"expectedDigest": d(MIXED)}, "after": d(blob)}],
            "blobs": blobs,
        }))
    };
    let key = format!("blobs[{:?}]", d(blob));
    refused(
        &with(json!({})),
        ErrorCode::InvalidEditPlan,
        &format!(
            "documentChanges[0].after: blob {} is not in `blobs`",
            d(blob)
        ),
    );
    refused(
        &with(json!({ d(blob): b64("other") })),
        ErrorCode::InvalidEditPlan,
        &format!(
            "{key}: the decoded bytes have digest {}, not {}",
            d("other"),
            d(blob)
        ),
    );
    refused(
        &with(json!({ d(blob): "bmV3Cg=!" })),
        ErrorCode::InvalidEditPlan,
        &format!("{key}: is not valid base64"),
    );
    refused(
        &with(json!({ d(blob): b64(blob).trim_end_matches('=') })),
        ErrorCode::InvalidEditPlan,
        "is not valid base64",
    );
    refused(
        &with(json!({ d(blob): 7 })),
        ErrorCode::InvalidEditPlan,
        &format!("{key}: must be a string, not a number"),
    );
    refused(
        &with(json!({ d(blob): b64(blob), "sha256:x": "" })),
        ErrorCode::InvalidEditPlan,
        "blobs[\"sha256:x\"]: the key is not a digest",
    );
    refused(
        &with(json!({ d(blob): b64(blob), d(""): "" })),
        ErrorCode::InvalidEditPlan,
        &format!("blobs[{:?}]: is not referenced by any `after`", d("")),
    );
    refused(
        &with(json!([])),
        ErrorCode::InvalidEditPlan,
        "blobs: must be an object, not an array",
    );
}

#[test]
fn refuses_every_status_but_complete_with_its_reason() {
    for status in ["incomplete", "unsupported", "cancelled", "errored"] {
        let reason = json!({"message": "unresolved reference", "at": "src/x.ts"});
        let shapes = [
            json!({"proposal": {"status": status, "reason": reason.clone(), "diagnostics": [1]}}),
            json!({"proposal": {"status": status, "incompleteReason": reason.clone(), "diagnostics": [1],
                                "workspaceEdit": {"documentChanges": "not even checked"}}}),
            json!({"status": status, "reason": reason.clone(), "documentChanges": [base_change()]}),
        ];
        for plan in shapes {
            let err = refused(
                &bytes(&plan),
                ErrorCode::IncompleteEditPlan,
                &format!("the proposal's status is \"{status}\": only a complete edit plan can be applied"),
            );
            let expected = PlanStatus::ALL
                .iter()
                .copied()
                .find(|s| s.as_str() == status)
                .expect("known");
            assert_eq!(err.status(), Some(expected));
            assert_eq!(err.reason(), Some(&reason));
            assert_eq!(err.details()["status"], json!(status));
            assert_eq!(err.details()["reason"], reason);
        }
        let err = refused(
            &bytes(&json!({"proposal": {"status": status, "reason": "timed out"}})),
            ErrorCode::IncompleteEditPlan,
            "(reason: timed out)",
        );
        assert_eq!(err.details()["diagnostics"], Value::Null);
    }
}

#[test]
fn refuses_bad_or_contradictory_statuses() {
    let we = json!({"documentChanges": [base_change()]});
    refused(
        &bytes(&json!({"proposal": {"workspaceEdit": we}})),
        ErrorCode::InvalidEditPlan,
        "proposal.status: is required",
    );
    refused(
        &bytes(&json!({"proposal": {"status": "done", "workspaceEdit": we}})),
        ErrorCode::InvalidEditPlan,
        "proposal.status: must be one of \"complete\", \"incomplete\", \"unsupported\", \"cancelled\", \"errored\", not \"done\"",
    );
    refused(
        &bytes(
            &json!({"proposal": {"status": "complete", "complete": false, "workspaceEdit": we}}),
        ),
        ErrorCode::InvalidEditPlan,
        "proposal.complete: false contradicts status \"complete\"",
    );
    refused(
        &bytes(&json!({"proposal": {"status": "incomplete", "complete": true}})),
        ErrorCode::InvalidEditPlan,
        "proposal.complete: true contradicts status \"incomplete\"",
    );
    refused(
        &bytes(&json!({"proposal": {"status": "complete"}})),
        ErrorCode::InvalidEditPlan,
        "proposal.workspaceEdit: is required",
    );
}

#[test]
fn refuses_escaping_and_malformed_paths() {
    let cases = [
        ("../x", ErrorCode::PathEscape, "has a `..` component"),
        ("a/../../x", ErrorCode::PathEscape, "has a `..` component"),
        ("/abs", ErrorCode::PathEscape, "is absolute"),
        (
            ".git/config",
            ErrorCode::PathEscape,
            "enters `.git` or `.roundtable`",
        ),
        (
            "sub/.GIT/hooks/pre-commit",
            ErrorCode::PathEscape,
            "enters `.git`",
        ),
        (
            ".roundtable/store.db",
            ErrorCode::PathEscape,
            "enters `.git` or `.roundtable`",
        ),
        ("C:/x", ErrorCode::PathEscape, "drive prefix"),
        ("", ErrorCode::InvalidPath, "is empty"),
        ("a//b", ErrorCode::InvalidPath, "has an empty component"),
        ("a\u{0}b", ErrorCode::InvalidPath, "contains a NUL byte"),
    ];
    for (path, code, part) in cases {
        let err = refused(
            &plan_of(vec![modify(
                path,
                MIXED,
                vec![edit("utf8", (0, 0), (0, 0), "")],
            )]),
            code,
            part,
        );
        assert_eq!(err.field(), Some("documentChanges[0].path"));
        assert_eq!(err.path(), Some(path));
        assert!(err.message().starts_with("documentChanges[0].path: "));
        // The same for a rename's destination.
        let err = refused(
            &plan_of(vec![json!({"path": "f", "kind": "rename", "to": path,
                                 "precondition": {"expectedDigest": d(MIXED)}})]),
            code,
            part,
        );
        assert_eq!(err.field(), Some("documentChanges[0].to"));
    }
}

#[test]
fn refuses_a_path_touched_twice() {
    let pre = json!({"expectedDigest": d(MIXED)});
    let err = refused(
        &plan_of(vec![
            base_change(),
            json!({"path": "f", "kind": "delete", "precondition": pre}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[1].path: \"f\" is already touched by documentChanges[0]",
    );
    assert_eq!(err.path(), Some("f"));
    // A rename's destination counts as touched.
    refused(
        &plan_of(vec![
            json!({"path": "g", "kind": "rename", "to": "f", "precondition": pre}),
            base_change(),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[1].path: \"f\" is already touched by documentChanges[0]",
    );
    refused(
        &plan_of(vec![
            base_change(),
            json!({"path": "g", "kind": "rename", "to": "f", "precondition": pre}),
        ]),
        ErrorCode::InvalidEditPlan,
        "documentChanges[1].to: \"f\" is already touched by documentChanges[0]",
    );
}

#[test]
fn refuses_a_path_that_would_be_both_a_file_and_a_directory() {
    let blob = b"x";
    refused(
        &bytes(&json!({
            "documentChanges": [
                {"path": "a", "kind": "create", "precondition": {"expectedAbsence": true}, "after": d(blob)},
                {"path": "a/b/c", "kind": "create", "precondition": {"expectedAbsence": true}, "after": d(blob)},
            ],
            "blobs": { d(blob): b64(blob) },
        })),
        ErrorCode::InvalidEditPlan,
        "documentChanges[1].path: \"a/b/c\" needs \"a\" to be a directory, but documentChanges[0] makes it a file",
    );
}

#[test]
fn checks_proposal_labels_against_the_plan() {
    let change = base_change();
    let pre = change["precondition"].clone();
    let proposal = |extra: Value| {
        let mut p =
            json!({"status": "complete", "workspaceEdit": {"documentChanges": [change.clone()]}});
        for (k, v) in extra.as_object().expect("object") {
            p[k] = v.clone();
        }
        bytes(&json!({ "proposal": p }))
    };
    let cases = [
        (
            json!({"baseline": {"rev": "a"}, "workspaceEdit": {"baseline": {"rev": "b"}, "documentChanges": [change.clone()]}}),
            "proposal.workspaceEdit.baseline: differs from proposal.baseline",
        ),
        (
            json!({"touchedResources": [{"path": "f", "kind": "delete", "precondition": pre}]}),
            "proposal.touchedResources[0].kind: is \"delete\", but proposal.workspaceEdit.documentChanges[0].kind is \"modify\"",
        ),
        (
            json!({"touchedResources": [{"path": "f", "kind": "modify", "precondition": {"expectedDigest": d("x")}}]}),
            "proposal.touchedResources[0].precondition: disagrees with proposal.workspaceEdit.documentChanges[0].precondition",
        ),
        (
            json!({"touchedResources": [{"path": "g", "kind": "modify"}]}),
            "proposal.touchedResources[0].path: \"g\" is not changed by documentChanges",
        ),
        (
            json!({"touchedResources": []}),
            "proposal.touchedResources: does not list \"f\" (proposal.workspaceEdit.documentChanges[0])",
        ),
        (
            json!({"touchedResources": [{"path": "f", "kind": "modify"}, {"path": "f", "kind": "modify"}]}),
            "proposal.touchedResources[1].path: \"f\" is listed twice",
        ),
        (
            json!({"proposalId": "  "}),
            "proposal.proposalId: must not be blank",
        ),
        (
            json!({"provider": "lattice"}),
            "proposal.provider: must be an object, not a string",
        ),
    ];
    for (extra, part) in cases {
        refused(&proposal(extra), ErrorCode::InvalidEditPlan, part);
    }
    // Consistent labels are accepted and carried.
    let plan = parse_plan(&proposal(json!({
        "proposalId": "proposal:rename-api-fetch",
        "provider": {"id": "lattice", "version": "0.1.0"},
        "baseline": {"rev": "git:tree:9f3a1c"},
        "validAsOf": {"baseline": {"rev": "git:tree:9f3a1c"}, "blobs": [d(MIXED)]},
        "touchedResources": [{"path": "f", "kind": "modify", "precondition": pre}],
        "complete": true,
    })))
    .expect("consistent");
    assert_eq!(plan.proposal_id(), Some("proposal:rename-api-fetch"));
    assert_eq!(plan.baseline(), Some(&json!({"rev": "git:tree:9f3a1c"})));
    assert_eq!(
        plan.changes()[0].field(),
        "proposal.workspaceEdit.documentChanges[0]"
    );
}

// ---- preconditions ----

#[test]
fn reports_every_precondition_failure_at_once() {
    let plan = parse_plan(&plan_of(vec![
        modify("f", "old", vec![edit("utf8", (0, 0), (0, 0), "x")]),
        json!({"path": "g", "kind": "create", "precondition": {"expectedAbsence": true},
               "edits": [edit("utf8", (0, 0), (0, 0), "x")]}),
        json!({"path": "h", "kind": "delete", "precondition": {"expectedDigest": d(MIXED)}}),
        json!({"path": "r", "kind": "rename", "to": "s", "precondition": {"expectedDigest": d("r")}}),
    ]))
    .expect("parses");
    let t = tree(&[
        ("f", MIXED.as_bytes(), false),
        ("g", b"g\n", false),
        ("r", b"r", false),
        ("s", b"s", false),
    ]);
    let err = plan_changeset(&plan, &t).expect_err("fails");
    assert_err(
        &err,
        ErrorCode::PreconditionFailed,
        &format!(
            "precondition failed: f: expected {}, found {} (and 3 more precondition failures)",
            d("old"),
            d(MIXED)
        ),
    );
    assert_eq!(
        err.details(),
        json!({
            "path": "f", "expected": d("old"), "actual": d(MIXED),
            "failures": [
                {"field": "documentChanges[0].precondition", "path": "f", "expected": d("old"), "actual": d(MIXED)},
                {"field": "documentChanges[1].precondition", "path": "g", "expected": "absent", "actual": d("g\n")},
                {"field": "documentChanges[2].precondition", "path": "h", "expected": d(MIXED), "actual": "absent"},
                {"field": "documentChanges[3].to", "path": "s", "expected": "absent", "actual": d("s")},
            ],
        })
    );
    assert_eq!(err.failures().len(), 4);
    assert_eq!(err.failures()[2].actual, None);
    assert_eq!(
        err.failures()[2].expected,
        Some(Digest::of(MIXED.as_bytes()))
    );
}

#[test]
fn each_kind_of_precondition_failure_alone() {
    let x = json!([edit("utf8", (0, 0), (0, 0), "x")]);
    let cases = [
        (
            // digest mismatch
            json!({"path": "f", "kind": "modify", "precondition": {"expectedDigest": d("old")}, "edits": x}),
            format!(
                "precondition failed: f: expected {}, found {}",
                d("old"),
                d(MIXED)
            ),
        ),
        (
            // exists, but expected absent
            json!({"path": "f", "kind": "create", "precondition": {"expectedAbsence": true}, "edits": x}),
            format!(
                "precondition failed: f: expected absent, found {}",
                d(MIXED)
            ),
        ),
        (
            // missing, but expected a digest
            json!({"path": "missing", "kind": "modify", "precondition": {"expectedDigest": d(MIXED)}, "edits": x}),
            format!(
                "precondition failed: missing: expected {}, found absent",
                d(MIXED)
            ),
        ),
    ];
    let t = tree(&[("f", MIXED.as_bytes(), false)]);
    for (change, message) in cases {
        let plan = parse_plan(&plan_of(vec![change])).expect("parses");
        let err = plan_changeset(&plan, &t).expect_err("fails");
        assert_err(&err, ErrorCode::PreconditionFailed, &message);
        assert_eq!(err.message(), message);
        assert_eq!(err.failures().len(), 1);
    }
}

#[test]
fn a_tree_read_failure_keeps_its_code() {
    struct Broken;
    impl roundtable::diff::Tree for Broken {
        fn read(&self, path: &[u8]) -> Result<Option<TreeFile>, roundtable::diff::TreeError> {
            Err(roundtable::diff::TreeError {
                code: ErrorCode::PathEscape,
                path: path.to_vec(),
                source: "a symlink leaves the root".into(),
            })
        }
    }
    let plan = parse_plan(&plan_of(vec![base_change()])).expect("parses");
    let err = plan_changeset(&plan, &Broken).expect_err("fails");
    assert_err(
        &err,
        ErrorCode::PathEscape,
        "cannot read f: a symlink leaves the root",
    );
    assert_eq!(err.path(), Some("f"));
}

// ---- exact changesets ----

fn meta(data: &[u8], executable: bool) -> Option<FileMeta> {
    Some(FileMeta {
        digest: Digest::of(data),
        executable,
        symlink: false,
    })
}

fn content(data: &[u8], executable: bool) -> Option<FileContent> {
    Some(FileContent {
        data: data.to_vec(),
        executable,
        symlink: false,
    })
}

fn path(p: &str) -> roundtable::RepoPath {
    p.parse().expect("a clean path")
}

#[test]
fn whole_blob_create() {
    let blob = "fresh 😀\n".as_bytes();
    let plan = parse_plan(&bytes(&json!({
        "documentChanges": [{"path": "dir/new.txt", "kind": "create",
                             "precondition": {"expectedAbsence": true}, "after": d(blob)}],
        "blobs": { d(blob): b64(blob) },
    })))
    .expect("parses");
    let cs = plan_changeset(&plan, &Tree::new()).expect("applies");
    assert_eq!(
        cs,
        Changeset::new(vec![FileChange {
            path: path("dir/new.txt"),
            operation: Operation::Create,
            before: None,
            after: content(blob, false),
        }])
        .expect("one path")
    );
}

#[test]
fn an_empty_blob_create() {
    let plan = parse_plan(&bytes(&json!({
        "documentChanges": [{"path": "empty", "kind": "create",
                             "precondition": {"expectedAbsence": true}, "after": d("")}],
        "blobs": { d(""): "" },
    })))
    .expect("parses");
    let cs = plan_changeset(&plan, &Tree::new()).expect("applies");
    assert_eq!(cs.files()[0].after, content(b"", false));
}

#[test]
fn delete_keeps_the_mode_in_its_precondition() {
    let plan = parse_plan(&plan_of(vec![json!({
        "path": "run.sh", "kind": "delete", "precondition": {"expectedDigest": d("#!/bin/sh\n")},
    })]))
    .expect("parses");
    let cs = plan_changeset(&plan, &tree(&[("run.sh", b"#!/bin/sh\n", true)])).expect("applies");
    assert_eq!(
        cs.files(),
        [FileChange {
            path: path("run.sh"),
            operation: Operation::Delete,
            before: meta(b"#!/bin/sh\n", true),
            after: None,
        }]
    );
}

#[test]
fn rename_with_edits_moves_the_edited_content_and_the_executable_bit() {
    let plan = parse_plan(&plan_of(vec![json!({
        "path": "tool", "kind": "rename", "to": "bin/tool",
        "precondition": {"expectedDigest": d(MIXED)},
        "edits": [edit("codepoint", (1, 1), (1, 2), "!")],
    })]))
    .expect("parses");
    let cs = plan_changeset(&plan, &tree(&[("tool", MIXED.as_bytes(), true)])).expect("applies");
    assert_eq!(
        cs.files(),
        [
            FileChange {
                path: path("bin/tool"),
                operation: Operation::Rename { from: path("tool") },
                before: None,
                after: content("a漢😀b\r\n字!\r\nend\n".as_bytes(), true),
            },
            FileChange {
                path: path("tool"),
                operation: Operation::RenamedAway {
                    to: path("bin/tool")
                },
                before: meta(MIXED.as_bytes(), true),
                after: None,
            },
        ]
    );
}

#[test]
fn a_plain_rename_moves_the_bytes() {
    let before = b"\x00\xffbinary";
    let plan = parse_plan(&plan_of(vec![json!({
        "path": "a.bin", "kind": "rename", "to": "b.bin",
        "precondition": {"expectedDigest": d(before)},
    })]))
    .expect("parses");
    let cs = plan_changeset(&plan, &tree(&[("a.bin", before, false)])).expect("applies");
    assert_eq!(cs.files()[0].path, path("a.bin"));
    assert_eq!(cs.files()[1].after, content(before, false));
}

#[test]
fn multi_file_plan_like_the_specs_example() {
    let blob = "fresh 😀\n".as_bytes();
    let plan = parse_plan(&bytes(&json!({
        "baseline": {"rev": "git:tree:9f3a1c"},
        "documentChanges": [
            modify("src/api.ts", MIXED, vec![edit("utf16", (0, 2), (0, 4), "🙂")]),
            {"path": "src/server.ts", "kind": "modify",
             "precondition": {"expectedDigest": d("server\n")}, "after": d(blob)},
            {"path": "src/legacy.ts", "kind": "delete",
             "precondition": {"expectedDigest": d("legacy\n")}},
            {"path": "src/b.ts", "kind": "rename", "to": "src/c.ts",
             "precondition": {"expectedDigest": d("b\r\n")},
             "edits": [edit("codepoint", (0, 0), (0, 1), "c")]},
            {"path": "src/new.ts", "kind": "create", "after": d(blob),
             "precondition": {"expectedAbsence": true}},
        ],
        "blobs": { d(blob): b64(blob) },
    })))
    .expect("parses");
    let t = tree(&[
        ("src/api.ts", MIXED.as_bytes(), false),
        ("src/server.ts", b"server\n", true),
        ("src/legacy.ts", b"legacy\n", false),
        ("src/b.ts", b"b\r\n", false),
        ("src/untouched.ts", b"untouched\n", false),
    ]);
    let cs = plan_changeset(&plan, &t).expect("applies");
    let expected = Changeset::new(vec![
        FileChange {
            path: path("src/api.ts"),
            operation: Operation::Modify,
            before: meta(MIXED.as_bytes(), false),
            after: content("a漢🙂b\r\n字😀\r\nend\n".as_bytes(), false),
        },
        FileChange {
            path: path("src/b.ts"),
            operation: Operation::RenamedAway {
                to: path("src/c.ts"),
            },
            before: meta(b"b\r\n", false),
            after: None,
        },
        FileChange {
            path: path("src/c.ts"),
            operation: Operation::Rename {
                from: path("src/b.ts"),
            },
            before: None,
            after: content(b"c\r\n", false),
        },
        FileChange {
            path: path("src/legacy.ts"),
            operation: Operation::Delete,
            before: meta(b"legacy\n", false),
            after: None,
        },
        FileChange {
            path: path("src/new.ts"),
            operation: Operation::Create,
            before: None,
            after: content(blob, false),
        },
        FileChange {
            path: path("src/server.ts"),
            operation: Operation::Modify,
            before: meta(b"server\n", true),
            after: content(blob, true),
        },
    ])
    .expect("distinct paths");
    assert_eq!(cs, expected);
    assert_eq!(plan.baseline(), Some(&json!({"rev": "git:tree:9f3a1c"})));
}

#[test]
fn reads_only_the_touched_files() {
    use std::cell::RefCell;
    struct Counting(Tree, RefCell<Vec<String>>);
    impl roundtable::diff::Tree for Counting {
        fn read(&self, p: &[u8]) -> Result<Option<TreeFile>, roundtable::diff::TreeError> {
            self.1
                .borrow_mut()
                .push(String::from_utf8_lossy(p).into_owned());
            self.0.read(p)
        }
    }
    let t = Counting(
        tree(&[("a", b"a", false), ("b", b"b", false), ("c", b"c", false)]),
        RefCell::new(Vec::new()),
    );
    let plan = parse_plan(&plan_of(vec![
        json!({"path": "b", "kind": "rename", "to": "d", "precondition": {"expectedDigest": d("b")}}),
    ]))
    .expect("parses");
    plan_changeset(&plan, &t).expect("applies");
    assert_eq!(*t.1.borrow(), ["b", "d"]);
}

// ---- the language-neutral fixtures ----

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/cases/edit")
}

fn decode(v: &Value) -> Vec<u8> {
    match (v.get("text"), v.get("base64")) {
        (Some(Value::String(t)), None) => t.as_bytes().to_vec(),
        (None, Some(Value::String(b))) => base64::engine::general_purpose::STANDARD
            .decode(b)
            .expect("fixture base64"),
        _ => panic!("fixture content needs text or base64: {v}"),
    }
}

fn operation_json(op: &Operation) -> Value {
    match op {
        Operation::Create => json!({"kind": "create"}),
        Operation::Modify => json!({"kind": "modify"}),
        Operation::Delete => json!({"kind": "delete"}),
        Operation::Rename { from } => json!({"kind": "rename", "from": from.as_str()}),
        Operation::RenamedAway { to } => json!({"kind": "renamed_away", "to": to.as_str()}),
        other => panic!("an edit plan makes no {other:?}"),
    }
}

/// A file's resulting bytes and executable bit, or `None` for removed.
type After = Option<(Vec<u8>, bool)>;

/// A changeset in the fixtures' JSON shape, with contents as bytes.
fn changeset_json(cs: &Changeset) -> Vec<(Value, After)> {
    cs.files()
        .iter()
        .map(|f| {
            (
                json!({
                    "path": f.path.as_str(),
                    "operation": operation_json(&f.operation),
                    "before": f.before.map(|b| json!({"digest": b.digest.to_string(), "executable": b.executable})),
                }),
                f.after.as_ref().map(|a| (a.data.clone(), a.executable)),
            )
        })
        .collect()
}

fn run_case(case: &Value) {
    let name = case["name"].as_str().expect("name");
    let mut t = Tree::new();
    for (p, f) in case["files"].as_object().expect("files") {
        t.insert(
            p.as_bytes().to_vec(),
            TreeFile {
                data: decode(f),
                executable: f["executable"].as_bool().expect("executable"),
                symlink: false,
            },
        );
    }
    let input = match case.get("plan_text") {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        _ => bytes(&case["plan"]),
    };
    let result = parse_plan(&input).and_then(|plan| plan_changeset(&plan, &t));
    let expect = &case["expect"];
    if let Some(e) = expect.get("error") {
        let err = result.expect_err(name);
        assert_eq!(err.code().as_str(), e["code"], "{name}: {}", err.message());
        let part = e["message_contains"].as_str().expect("message_contains");
        assert!(
            err.message().contains(part),
            "{name}: {:?} lacks {part:?}",
            err.message()
        );
        if let Some(want) = e.get("details") {
            let got = err.details();
            for (k, v) in want.as_object().expect("details") {
                assert_eq!(&got[k], v, "{name}: details.{k}");
            }
        }
        return;
    }
    let cs = result.unwrap_or_else(|e| panic!("{name}: {}", e.message()));
    let got = changeset_json(&cs);
    let want = expect["changeset"].as_array().expect("changeset");
    assert_eq!(got.len(), want.len(), "{name}");
    for ((head, after), w) in got.iter().zip(want) {
        assert_eq!(head["path"], w["path"], "{name}");
        assert_eq!(head["operation"], w["operation"], "{name}");
        assert_eq!(head["before"], w["before"], "{name}");
        let want_after = match &w["after"] {
            Value::Null => None,
            a => Some((decode(a), a["executable"].as_bool().expect("executable"))),
        };
        assert_eq!(after, &want_after, "{name}: after of {}", head["path"]);
    }
}

#[test]
fn replays_the_language_neutral_fixtures() {
    let mut count = 0;
    for file in ["coordinates.json", "refusals.json", "changesets.json"] {
        let text = std::fs::read(fixture_dir().join(file)).expect("fixture file");
        let doc: Value = serde_json::from_slice(&text).expect("fixture JSON");
        for case in doc["cases"].as_array().expect("cases") {
            run_case(case);
            count += 1;
        }
    }
    assert!(count >= 58, "only {count} fixture cases");
}

#[test]
fn rename_with_a_whole_blob_after() {
    let blob = b"replaced\n";
    let plan = parse_plan(&bytes(&json!({
        "documentChanges": [{"path": "old.txt", "kind": "rename", "to": "new.txt",
                             "precondition": {"expectedDigest": d("old\n")}, "after": d(blob)}],
        "blobs": { d(blob): b64(blob) },
    })))
    .expect("parses");
    let cs = plan_changeset(&plan, &tree(&[("old.txt", b"old\n", true)])).expect("applies");
    assert_eq!(
        cs.files(),
        [
            FileChange {
                path: path("new.txt"),
                operation: Operation::Rename {
                    from: path("old.txt"),
                },
                before: None,
                after: content(blob, true),
            },
            FileChange {
                path: path("old.txt"),
                operation: Operation::RenamedAway {
                    to: path("new.txt"),
                },
                before: meta(b"old\n", true),
                after: None,
            },
        ]
    );
}

#[test]
fn refuses_deeply_nested_json_without_overflowing() {
    let deep = format!(
        "{{\"documentChanges\": {}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    refused(
        deep.as_bytes(),
        ErrorCode::InvalidEditPlan,
        "is not valid JSON: recursion limit exceeded",
    );
}
