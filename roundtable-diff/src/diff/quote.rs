//! git's C-style path quoting (`quote_c_style` / `unquote_c_style`).
//!
//! git quotes a path in diff headers when it contains a byte below 0x20, a
//! double quote, a backslash, DEL, or any byte of 0x80 and above (the
//! default `core.quotePath`). Inside the quotes the escapes are `\a \b \t \n
//! \v \f \r \" \\` and three-digit octal for every other such byte.

/// Whether git would quote this path.
pub(crate) fn needs_quoting(name: &[u8]) -> bool {
    name.iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f)
}

/// Append `name` to `out` as git writes it in a header: bare when no byte
/// needs quoting, otherwise in double quotes with C escapes.
pub(crate) fn write_name(out: &mut Vec<u8>, name: &[u8]) {
    if !needs_quoting(name) {
        out.extend_from_slice(name);
        return;
    }
    write_quoted(out, name);
}

/// Append `name` in double quotes with C escapes, whether or not it needs
/// them (a quoted name is never ambiguous on a `diff --git` line).
pub(crate) fn write_quoted(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'"');
    for &b in name {
        match b {
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            0x0b => out.extend_from_slice(b"\\v"),
            0x0c => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b if !(0x20..0x7f).contains(&b) => {
                out.push(b'\\');
                out.push(b'0' + (b >> 6));
                out.push(b'0' + ((b >> 3) & 7));
                out.push(b'0' + (b & 7));
            }
            b => out.push(b),
        }
    }
    out.push(b'"');
}

/// Decode a quoted name that starts at `input[0] == b'"'`.
///
/// Returns the decoded bytes and the number of input bytes consumed
/// (including both quotes), or a description of what is wrong.
pub(crate) fn unquote(input: &[u8]) -> Result<(Vec<u8>, usize), &'static str> {
    debug_assert_eq!(input.first(), Some(&b'"'));
    let mut out = Vec::with_capacity(input.len());
    let mut i = 1;
    while i < input.len() {
        let b = input[i];
        match b {
            b'"' => return Ok((out, i + 1)),
            b'\\' => {
                let Some(&e) = input.get(i + 1) else {
                    return Err("a quoted name ends inside an escape");
                };
                i += 2;
                let decoded = match e {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        let (Some(&d1), Some(&d2)) = (input.get(i), input.get(i + 1)) else {
                            return Err("an octal escape needs three digits");
                        };
                        if !(b'0'..=b'7').contains(&d1) || !(b'0'..=b'7').contains(&d2) {
                            return Err("an octal escape needs three digits");
                        }
                        i += 2;
                        ((e - b'0') << 6) | ((d1 - b'0') << 3) | (d2 - b'0')
                    }
                    _ => return Err("unknown escape in a quoted name"),
                };
                out.push(decoded);
            }
            b'\n' => return Err("a quoted name is not closed"),
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Err("a quoted name is not closed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_byte() {
        let name: Vec<u8> = (1u8..=255).collect();
        let mut quoted = Vec::new();
        write_name(&mut quoted, &name);
        let (back, used) = unquote(&quoted).expect("decodes");
        assert_eq!(back, name);
        assert_eq!(used, quoted.len());
    }

    #[test]
    fn plain_names_stay_bare_and_specials_match_git() {
        let mut out = Vec::new();
        write_name(&mut out, b"dir/a b.txt");
        assert_eq!(out, b"dir/a b.txt");
        out.clear();
        write_name(&mut out, "tab\there \"q\" back\\ é".as_bytes());
        assert_eq!(
            out,
            b"\"tab\\there \\\"q\\\" back\\\\ \\303\\251\"".as_slice()
        );
    }

    #[test]
    fn refuses_bad_escapes() {
        assert!(unquote(b"\"abc").is_err());
        assert!(unquote(b"\"a\\qb\"").is_err());
        assert!(unquote(b"\"a\\48\"").is_err());
        assert!(unquote(b"\"a\\").is_err());
    }
}
