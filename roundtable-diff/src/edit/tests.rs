//! Unit tests of the line table, position resolution and the plan types.
//! (Behaviour through the public API is tested in `tests/edit_plans.rs`.)

use super::text::{line_table, resolve, PositionError};
use super::*;

const MIXED: &str = "a漢😀b\r\n字😀\r\nend\n";

fn pos(line: u32, character: u32) -> Position {
    Position { line, character }
}

#[test]
fn lines_end_at_crlf_lf_and_lone_cr() {
    assert_eq!(line_table(b""), [(0, 0)]);
    assert_eq!(line_table(b"a"), [(0, 1)]);
    assert_eq!(line_table(b"a\n"), [(0, 1), (2, 2)]);
    assert_eq!(line_table(b"a\r\nb"), [(0, 1), (3, 4)]);
    assert_eq!(line_table(b"a\rb"), [(0, 1), (2, 3)]);
    assert_eq!(line_table(b"a\r\r\nb"), [(0, 1), (2, 2), (4, 5)]);
    assert_eq!(line_table(b"\n\r"), [(0, 0), (1, 1), (2, 2)]);
    assert_eq!(
        line_table(MIXED.as_bytes()),
        [(0, 9), (11, 18), (20, 23), (24, 24)]
    );
}

/// Every character boundary of every line resolves to the same byte offset
/// in all three coordinate systems, counted independently here.
#[test]
fn every_boundary_agrees_across_coordinate_systems() {
    let text = "a漢😀b\r\n字😀\r\n\rend\n😀😀\r";
    let lines = line_table(text.as_bytes());
    assert_eq!(lines.len(), 6);
    for (l, &(start, end)) in lines.iter().enumerate() {
        let l = l as u32;
        let (mut u8s, mut u16s, mut cps) = (0u32, 0u32, 0u32);
        let mut boundaries = vec![(0, 0, 0, start)];
        for ch in text[start..end].chars() {
            u8s += ch.len_utf8() as u32;
            u16s += ch.len_utf16() as u32;
            cps += 1;
            boundaries.push((u8s, u16s, cps, start + u8s as usize));
        }
        for (a, b, c, byte) in boundaries {
            for (cs, ch) in [
                (CoordinateSystem::Utf8, a),
                (CoordinateSystem::Utf16, b),
                (CoordinateSystem::Codepoint, c),
            ] {
                assert_eq!(
                    resolve(text.as_bytes(), &lines, cs, &[pos(l, ch)]),
                    [Ok(byte)],
                    "{cs:?} line {l} char {ch}"
                );
            }
        }
        for (cs, len) in [
            (CoordinateSystem::Utf8, u8s),
            (CoordinateSystem::Utf16, u16s),
            (CoordinateSystem::Codepoint, cps),
        ] {
            assert_eq!(
                resolve(text.as_bytes(), &lines, cs, &[pos(l, len + 1)]),
                [Err(PositionError::CharPastEnd(len as usize))]
            );
        }
    }
}

#[test]
fn resolves_unsorted_positions_and_reports_each() {
    let t = MIXED.as_bytes();
    let lines = line_table(t);
    let got = resolve(
        t,
        &lines,
        CoordinateSystem::Utf16,
        &[
            pos(1, 3),
            pos(0, 3),
            pos(0, 5),
            pos(9, 0),
            pos(0, 2),
            pos(1, 2),
        ],
    );
    assert_eq!(
        got,
        [
            Ok(18),
            Err(PositionError::SplitsSurrogatePair),
            Ok(9),
            Err(PositionError::LinePastEnd(4)),
            Ok(4),
            Err(PositionError::SplitsSurrogatePair),
        ]
    );
}

#[test]
fn utf8_boundaries_ignore_bytes_outside_well_formed_sequences() {
    // \xe6\xbc is a truncated 漢: each byte is its own unit; \xe6\xbc\xa2 is whole.
    let t = b"\xe6\xbc|\xe6\xbc\xa2|\xa2\xa2";
    let lines = line_table(t);
    let all: Vec<Position> = (0..=t.len() as u32).map(|c| pos(0, c)).collect();
    let got = resolve(t, &lines, CoordinateSystem::Utf8, &all);
    let split = Err(PositionError::SplitsUtf8Sequence);
    assert_eq!(
        got,
        [
            Ok(0),
            Ok(1),
            Ok(2),
            Ok(3),
            split,
            split,
            Ok(6),
            Ok(7),
            Ok(8),
            Ok(9)
        ]
    );
    assert_eq!(
        resolve(t, &lines, CoordinateSystem::Codepoint, &[pos(0, 0)]),
        [Err(PositionError::NotUtf8)]
    );
}

#[test]
fn many_positions_on_one_long_line_resolve_in_one_scan() {
    // 200k code points on one line and 20k positions: quadratic would be
    // 4·10⁹ steps; one forward scan is instant.
    let line = "漢😀".repeat(100_000);
    let lines = line_table(line.as_bytes());
    let positions: Vec<Position> = (0..20_000u32).rev().map(|i| pos(0, i * 10)).collect();
    let got = resolve(
        line.as_bytes(),
        &lines,
        CoordinateSystem::Codepoint,
        &positions,
    );
    for (p, r) in positions.iter().zip(got) {
        assert_eq!(r, Ok(p.character as usize / 2 * 7));
    }
}

#[test]
fn spellings() {
    let names: Vec<&str> = PlanStatus::ALL.iter().map(|s| s.as_str()).collect();
    assert_eq!(
        names,
        [
            "complete",
            "incomplete",
            "unsupported",
            "cancelled",
            "errored"
        ]
    );
    assert_eq!(CoordinateSystem::Utf16.as_str(), "utf16");
    assert_eq!(
        ChangeKind::Rename {
            to: "x".parse().expect("path")
        }
        .as_str(),
        "rename"
    );
    assert_eq!(pos(3, 4).to_string(), "line 3, char 4");
}

#[test]
fn a_parsed_plan_exposes_its_changes() {
    let d = Digest::of(b"x");
    let json = format!(
        r#"{{"documentChanges": [{{"path": "p", "kind": "modify", "precondition": {{"expectedDigest": "{d}"}},
            "edits": [{{"range": {{"start": {{"line": 0, "char": 0}}, "end": {{"line": 0, "char": 1}}}},
                        "coordinateSystem": "codepoint", "newText": "y", "rangeBasis": "{d}"}}]}}]}}"#
    );
    let plan = parse_plan(json.as_bytes()).expect("parses");
    assert_eq!(plan.proposal_id(), None);
    let c = &plan.changes()[0];
    assert_eq!(c.field(), "documentChanges[0]");
    assert_eq!(c.path().as_str(), "p");
    assert_eq!(c.kind(), &ChangeKind::Modify);
    assert_eq!(c.precondition(), &Precondition::ExpectedDigest(d));
    assert_eq!(
        c.content(),
        &ContentChange::Edits(vec![TextEdit {
            range: Range {
                start: pos(0, 0),
                end: pos(0, 1)
            },
            coordinate_system: CoordinateSystem::Codepoint,
            new_text: "y".into(),
            range_basis: Some(d),
        }])
    );
}

#[test]
fn details_of_an_invalid_plan() {
    let e = EditError::invalid("documentChanges[0].kind", "bad");
    assert_eq!(e.message(), "documentChanges[0].kind: bad");
    assert_eq!(e.details(), json!({"field": "documentChanges[0].kind"}));
    let root = EditError::invalid("", "is not valid JSON");
    assert_eq!(root.message(), "edit plan: is not valid JSON");
    assert_eq!(root.details(), json!({"field": ""}));
    assert_eq!(root.code(), ErrorCode::InvalidEditPlan);
}
