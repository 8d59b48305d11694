//! Text from the store made safe to print for a person.
//!
//! Everything the human commands print that an agent (or anyone who can
//! write a proposal, a claim or an event) chose — diff bytes, file names,
//! titles, reasons, ids — passes through [`escape`] first: a terminal
//! escape sequence (`ESC[2K ESC[1G` erasing the line just printed), a
//! carriage return, a backspace, a C1 control (`U+009B` is a one-character
//! CSI) or a bidirectional override (`U+202E`, "Trojan Source") would
//! otherwise make the screen show something other than what is approved.
//! Each is printed as a visible escape (`\x1b`, `\r`, `\u{202e}`) instead.
//!
//! JSON output is safe by construction once [`json`] has run: serde
//! already escapes C0 controls inside strings; [`json`] escapes the rest.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as itself: every control
/// character (C0, DEL, C1), the bidirectional formatting characters, the
/// zero-width and line/paragraph separators, and the byte-order mark.
pub(crate) fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// `text` with every [unsafe](is_unsafe) character but those in `keep`
/// written as a visible escape: `\t`, `\n`, `\r`, `\x1b` (below U+0080),
/// `\u{9b}` (above).
pub(crate) fn escape<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    if !text.chars().any(|c| is_unsafe(c) && !keep.contains(&c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) || keep.contains(&c) {
            out.push(c);
            continue;
        }
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Whether a file name (or resource id) needs quoting to be read
/// unambiguously: empty, or with a space, a quote, a backslash or an
/// [unsafe](is_unsafe) character.
fn is_odd(name: &str) -> bool {
    name.is_empty()
        || name
            .chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '\\' || is_unsafe(c))
}

/// A file name (or resource id) as a person should read it: as it is when
/// it is plain, else in double quotes with `"` and `\` backslashed and
/// every unsafe character escaped (the way git quotes odd names).
pub(crate) fn name(name: &str) -> Cow<'_, str> {
    if !is_odd(name) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push_str(&escape(c.encode_utf8(&mut [0; 4]), &[])),
        }
    }
    out.push('"');
    Cow::Owned(out)
}

/// JSON text with every unsafe character that serde leaves raw (DEL, C1
/// controls, bidirectional and zero-width characters) written as a
/// `\uXXXX` escape: the same JSON value, safe on a terminal. Such a
/// character can only occur inside a string, where the escape means it.
pub(crate) fn json(text: String) -> String {
    if !needs_json_escape(&text) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) && c != '\n' {
            // Outside strings serde writes only '\n' (pretty output) and
            // spaces; every other control is already escaped by serde.
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether [`json`] would change `text`: some [unsafe](is_unsafe)
/// character other than a newline. Printable ASCII and newlines (almost
/// all of a JSON document) are passed over in blocks ([`plain_prefix`]);
/// a character is decoded only where a byte is a control or not ASCII.
fn needs_json_escape(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut at = 0;
    loop {
        at += plain_prefix(bytes.get(at..).unwrap_or_default());
        // `at` is a character boundary: every byte before it was plain
        // ASCII or ended a character decoded below.
        let Some(c) = text.get(at..).and_then(|rest| rest.chars().next()) else {
            return false;
        };
        if is_unsafe(c) && c != '\n' {
            return true;
        }
        at += c.len_utf8();
    }
}

/// How many leading bytes of `bytes` are printable ASCII or newlines.
/// Whole 32-byte blocks are judged at once, without an early exit, which
/// the compiler turns into vector instructions.
fn plain_prefix(bytes: &[u8]) -> usize {
    let odd = |b: u8| (b < b' ' && b != b'\n') || b >= 0x7f;
    let mut n = 0;
    for block in bytes.chunks_exact(32) {
        if block.iter().fold(0u8, |any, &b| any | u8::from(odd(b))) != 0 {
            break;
        }
        n += 32;
    }
    let rest = bytes.get(n..).unwrap_or_default();
    n + rest.iter().position(|&b| odd(b)).unwrap_or(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn escapes_controls_and_bidi_and_keeps_the_rest() {
        assert_eq!(escape("plain é 你好", &[]), "plain é 你好");
        assert_eq!(
            escape("a\x1b[2K\x1b[1Gb\rc\u{8}\u{7f}", &[]),
            "a\\x1b[2K\\x1b[1Gb\\rc\\x08\\x7f"
        );
        assert_eq!(
            escape("\u{9b}31m\u{202e}x\u{2066}", &[]),
            "\\u{9b}31m\\u{202e}x\\u{2066}"
        );
        assert_eq!(escape("\tindented\n", &['\t']), "\tindented\\n");
    }

    #[test]
    fn quotes_odd_names_only() {
        assert_eq!(name("src/lib.rs"), "src/lib.rs");
        assert_eq!(name("my file.txt"), "\"my file.txt\"");
        assert_eq!(name("a\x1b[2Kb\"c\\"), "\"a\\x1b[2Kb\\\"c\\\\\"");
        assert_eq!(name(""), "\"\"");
    }

    #[test]
    fn json_escapes_what_serde_leaves_and_stays_the_same_value() {
        let v = serde_json::json!({"k\u{9b}": "a\u{1b}b\u{9b}c\u{202e}d\u{7f}"});
        for text in [
            v.to_string(),
            serde_json::to_string_pretty(&v).expect("json"),
        ] {
            let safe = json(text);
            assert!(!safe.chars().any(|c| is_unsafe(c) && c != '\n'), "{safe}");
            let back: Value = serde_json::from_str(&safe).expect("still JSON");
            assert_eq!(back, v);
        }
    }

    /// The byte-at-a-time prefilter finds an unsafe character wherever the
    /// whole-text character scan does, before, after and between plain
    /// ASCII and other non-ASCII text, and lets newlines and safe
    /// non-ASCII through.
    #[test]
    fn issue33_perf_json_prefilter_agrees_with_the_character_scan() {
        let pieces = [
            "",
            "a",
            "{\"k\":1}",
            "\n",
            "é",
            "你好",
            "\u{7f}",
            "\u{1b}",
            "\u{9b}",
            "\u{202e}",
            "\u{feff}",
            "\u{200b}",
            "\u{2066}",
            "\u{10ffff}",
            "😀",
            "\t",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let text = format!("{a}x{b}{c}y");
                    let want = text.chars().any(|ch| is_unsafe(ch) && ch != '\n');
                    assert_eq!(needs_json_escape(&text), want, "{text:?}");
                }
            }
        }
        // Past whole blocks: an unsafe character at every offset of a long
        // plain run is still found.
        for n in 0..100 {
            let text = format!("{}\u{9b}{}", "a".repeat(n), "b".repeat(n % 7));
            assert!(needs_json_escape(&text), "{n}");
            assert!(!needs_json_escape(&text.replace('\u{9b}', "é")), "{n}");
        }
        let plain = "{\"files\":[\"é/ok\"]}\n".repeat(1000);
        assert!(!needs_json_escape(&plain));
        assert_eq!(json(plain.clone()), plain);
    }
}
