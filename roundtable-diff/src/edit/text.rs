//! Resolving positions against text and applying text edits.
//!
//! Lines end at `\r\n`, `\n` or a lone `\r` (LSP); a line's addressable
//! content excludes its terminator. Positions of one coordinate system are
//! resolved in sorted order with one forward scan per line, so resolving
//! many positions on one long line is linear, not quadratic.

use super::{CoordinateSystem, EditError, Position, TextEdit};

/// Each line's `(start, end of content)` byte offsets; there is always at
/// least one line.
pub(super) fn line_table(text: &[u8]) -> Vec<(usize, usize)> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while let Some(off) = memchr::memchr2(b'\r', b'\n', &text[i..]) {
        let at = i + off;
        lines.push((start, at));
        i = if text[at] == b'\r' && text.get(at + 1) == Some(&b'\n') {
            at + 2
        } else {
            at + 1
        };
        start = i;
    }
    lines.push((start, text.len()));
    lines
}

/// Why a position does not resolve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PositionError {
    /// The line does not exist; the text has this many lines.
    LinePastEnd(usize),
    /// `char` is past the end of the line, whose length is this.
    CharPastEnd(usize),
    /// Between the two halves of a surrogate pair.
    SplitsSurrogatePair,
    /// Inside a well-formed UTF-8 multi-byte sequence.
    SplitsUtf8Sequence,
    /// The line is not UTF-8, so it has no UTF-16 or code point offsets.
    NotUtf8,
}

impl PositionError {
    /// The message, and whether it is about `line` (else `char`).
    fn describe(self, p: Position, cs: CoordinateSystem) -> (String, bool) {
        let (l, c) = (p.line, p.character);
        match self {
            PositionError::LinePastEnd(n) => (
                format!(
                    "line {l} is past the end of the text ({n} line{})",
                    if n == 1 { "" } else { "s" }
                ),
                true,
            ),
            PositionError::CharPastEnd(len) => (
                format!(
                    "char {c} is past the end of line {l} ({len} {})",
                    cs.units()
                ),
                false,
            ),
            PositionError::SplitsSurrogatePair => (
                format!("char {c} on line {l} splits a UTF-16 surrogate pair"),
                false,
            ),
            PositionError::SplitsUtf8Sequence => (
                format!("char {c} on line {l} splits a UTF-8 multi-byte sequence"),
                false,
            ),
            PositionError::NotUtf8 => (
                format!(
                    "line {l} is not valid UTF-8, so it has no {} offsets",
                    cs.as_str()
                ),
                false,
            ),
        }
    }
}

/// Whether byte offset `c` of `line` falls inside a well-formed UTF-8
/// multi-byte sequence.
fn splits_utf8(line: &[u8], c: usize) -> bool {
    if c == 0 || c >= line.len() || line[c] & 0xC0 != 0x80 {
        return false;
    }
    for back in 1..=c.min(3) {
        let lead = c - back;
        let width = match line[lead] {
            0x80..=0xBF => continue,
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return false,
        };
        return lead + width > c
            && line
                .get(lead..lead + width)
                .is_some_and(|seq| std::str::from_utf8(seq).is_ok());
    }
    false
}

/// The line a [`resolve`] scan is on: its number, its text (`None`: not
/// UTF-8), and how far the scan got (byte offset, units counted).
type Scan<'a> = Option<(usize, Option<&'a str>, usize, usize)>;

/// The byte offsets of `positions` (all in `cs`) in `text`.
pub(super) fn resolve(
    text: &[u8],
    lines: &[(usize, usize)],
    cs: CoordinateSystem,
    positions: &[Position],
) -> Vec<Result<usize, PositionError>> {
    let mut order: Vec<usize> = (0..positions.len()).collect();
    order.sort_by_key(|&i| positions[i]);
    let mut out = vec![Ok(0); positions.len()];
    let mut scan: Scan<'_> = None;
    for i in order {
        out[i] = resolve_one(text, lines, cs, positions[i], &mut scan);
    }
    out
}

/// One position of [`resolve`]; positions come in sorted order, so a scan
/// of the same line continues where the previous one stopped.
fn resolve_one<'a>(
    text: &'a [u8],
    lines: &[(usize, usize)],
    cs: CoordinateSystem,
    p: Position,
    scan: &mut Scan<'a>,
) -> Result<usize, PositionError> {
    let line_no = p.line as usize;
    let &(start, end) = lines
        .get(line_no)
        .ok_or(PositionError::LinePastEnd(lines.len()))?;
    let line = &text[start..end];
    let c = p.character as usize;
    if cs == CoordinateSystem::Utf8 {
        if c > line.len() {
            return Err(PositionError::CharPastEnd(line.len()));
        }
        if splits_utf8(line, c) {
            return Err(PositionError::SplitsUtf8Sequence);
        }
        return Ok(start + c);
    }
    if scan.is_none_or(|s| s.0 != line_no) {
        *scan = Some((line_no, std::str::from_utf8(line).ok(), 0, 0));
    }
    let Some((_, Some(s), byte, units)) = scan.as_mut() else {
        return Err(PositionError::NotUtf8);
    };
    let mut chars = s[*byte..].chars();
    while *units < c {
        let Some(ch) = chars.next() else {
            return Err(PositionError::CharPastEnd(*units));
        };
        let w = match cs {
            CoordinateSystem::Utf16 => ch.len_utf16(),
            _ => 1,
        };
        if *units + w > c {
            return Err(PositionError::SplitsSurrogatePair);
        }
        *units += w;
        *byte += ch.len_utf8();
    }
    Ok(start + *byte)
}

/// Apply `edits` (all relative to `old`) to `old`; `field` is the file
/// change's JSON location, for messages.
pub(super) fn apply(field: &str, old: &[u8], edits: &[TextEdit]) -> Result<Vec<u8>, EditError> {
    let lines = line_table(old);
    // Byte ranges, resolved per coordinate system.
    let mut ranges = vec![(0usize, 0usize); edits.len()];
    for cs in [
        CoordinateSystem::Utf8,
        CoordinateSystem::Utf16,
        CoordinateSystem::Codepoint,
    ] {
        let idx: Vec<usize> = (0..edits.len())
            .filter(|&i| edits[i].coordinate_system == cs)
            .collect();
        if idx.is_empty() {
            continue;
        }
        let positions: Vec<Position> = idx
            .iter()
            .flat_map(|&i| [edits[i].range.start, edits[i].range.end])
            .collect();
        let resolved = resolve(old, &lines, cs, &positions);
        for (k, &i) in idx.iter().enumerate() {
            for (which, r) in [(0, &resolved[2 * k]), (1, &resolved[2 * k + 1])] {
                let off = match r {
                    Ok(off) => *off,
                    Err(e) => {
                        let p = positions[2 * k + which];
                        let (msg, about_line) = e.describe(p, cs);
                        let f = format!(
                            "{field}.edits[{i}].range.{}.{}",
                            if which == 0 { "start" } else { "end" },
                            if about_line { "line" } else { "char" }
                        );
                        return Err(EditError::invalid(&f, msg));
                    }
                };
                if which == 0 {
                    ranges[i].0 = off;
                } else {
                    ranges[i].1 = off;
                }
            }
        }
    }

    // Order by start, insertions first at an equal start, array order last;
    // then no range may begin before the furthest end so far.
    let mut order: Vec<usize> = (0..edits.len()).collect();
    order.sort_by_key(|&i| (ranges[i].0, ranges[i].1, i));
    let mut furthest: Option<usize> = None;
    for &i in &order {
        if let Some(j) = furthest {
            if ranges[i].0 < ranges[j].1 {
                let (a, b) = (i.min(j), i.max(j));
                let show = |k: usize| {
                    let r = edits[k].range;
                    format!("{} to {}", r.start, r.end)
                };
                return Err(EditError::invalid(
                    &format!("{field}.edits[{b}].range"),
                    format!("edits[{b}] ({}) overlaps edits[{a}] ({})", show(b), show(a)),
                ));
            }
        }
        if furthest.is_none_or(|j| ranges[i].1 > ranges[j].1) {
            furthest = Some(i);
        }
    }

    let grow: usize = edits.iter().map(|e| e.new_text.len()).sum();
    let mut out = Vec::with_capacity(old.len() + grow);
    let mut cursor = 0;
    for &i in &order {
        let (s, e) = ranges[i];
        out.extend_from_slice(&old[cursor..s]);
        out.extend_from_slice(edits[i].new_text.as_bytes());
        cursor = e;
    }
    out.extend_from_slice(&old[cursor..]);
    Ok(out)
}
