//! Syntax classes for the lines of a diff: a small pure tokenizer, one line
//! at a time, chosen by file extension.
//!
//! It colours, it does not parse: keywords, strings, comments, numbers,
//! called or declared function names and type names, each a byte range of
//! the line on character boundaries. A line is read on its own (a block
//! comment or string opened on an earlier line is not known), which is what
//! a diff hunk, cut out of its file, allows anyway.

use serde::Serialize;

/// A syntax class, as the console's stylesheet names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Class {
    /// A keyword of the language.
    #[serde(rename = "kw")]
    Keyword,
    /// A string or character literal.
    #[serde(rename = "str")]
    String,
    /// A comment.
    #[serde(rename = "com")]
    Comment,
    /// A number.
    #[serde(rename = "num")]
    Number,
    /// A function (or macro) name being called or declared.
    #[serde(rename = "fn")]
    Function,
    /// A type name: a built-in type, or a capitalized name.
    #[serde(rename = "ty")]
    Type,
}

/// The languages the tokenizer knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`).
    Python,
    /// Go (`.go`).
    Go,
    /// JavaScript and TypeScript (`.js`, `.mjs`, `.cjs`, `.jsx`, `.ts`, `.tsx`).
    Js,
    /// C and C++ (`.c`, `.h`, `.cc`, `.cpp`, `.hpp`).
    C,
}

impl Lang {
    /// The language of a file, by its extension; `None` for any other.
    pub fn of_path(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        Some(match ext.to_ascii_lowercase().as_str() {
            "rs" => Lang::Rust,
            "py" | "pyi" => Lang::Python,
            "go" => Lang::Go,
            "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "mts" | "cts" => Lang::Js,
            "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" | "hh" => Lang::C,
            _ => return None,
        })
    }

    fn keywords(self) -> &'static [&'static str] {
        match self {
            Lang::Rust => &[
                "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else",
                "enum", "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match",
                "mod", "move", "mut", "pub", "ref", "return", "self", "Self", "static", "struct",
                "super", "trait", "true", "type", "unsafe", "use", "where", "while",
            ],
            Lang::Python => &[
                "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
                "continue", "def", "del", "elif", "else", "except", "finally", "for", "from",
                "global", "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass",
                "raise", "return", "try", "while", "with", "yield",
            ],
            Lang::Go => &[
                "break",
                "case",
                "chan",
                "const",
                "continue",
                "default",
                "defer",
                "else",
                "fallthrough",
                "false",
                "for",
                "func",
                "go",
                "goto",
                "if",
                "import",
                "interface",
                "map",
                "nil",
                "package",
                "range",
                "return",
                "select",
                "struct",
                "switch",
                "true",
                "type",
                "var",
            ],
            Lang::Js => &[
                "async",
                "await",
                "break",
                "case",
                "catch",
                "class",
                "const",
                "continue",
                "debugger",
                "default",
                "delete",
                "do",
                "else",
                "export",
                "extends",
                "false",
                "finally",
                "for",
                "function",
                "if",
                "import",
                "in",
                "instanceof",
                "interface",
                "let",
                "new",
                "null",
                "of",
                "return",
                "static",
                "super",
                "switch",
                "this",
                "throw",
                "true",
                "try",
                "type",
                "typeof",
                "undefined",
                "var",
                "void",
                "while",
                "yield",
            ],
            Lang::C => &[
                "auto", "break", "case", "const", "continue", "default", "do", "else", "enum",
                "extern", "for", "goto", "if", "inline", "register", "restrict", "return",
                "sizeof", "static", "struct", "switch", "typedef", "union", "volatile", "while",
                "NULL", "true", "false",
            ],
        }
    }

    fn types(self) -> &'static [&'static str] {
        match self {
            Lang::Rust => &[
                "bool", "char", "str", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16",
                "i32", "i64", "i128", "isize", "f32", "f64",
            ],
            Lang::Python => &[
                "int", "float", "str", "bytes", "bool", "list", "dict", "set", "tuple", "object",
            ],
            Lang::Go => &[
                "bool", "byte", "error", "float32", "float64", "int", "int8", "int16", "int32",
                "int64", "rune", "string", "uint", "uint8", "uint16", "uint32", "uint64",
                "uintptr", "any",
            ],
            Lang::Js => &[
                "string", "number", "boolean", "bigint", "symbol", "object", "unknown", "never",
                "any",
            ],
            Lang::C => &[
                "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
                "bool", "size_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int8_t",
                "int16_t", "int32_t", "int64_t",
            ],
        }
    }

    fn line_comment(self) -> &'static str {
        match self {
            Lang::Python => "#",
            Lang::Rust | Lang::Go | Lang::Js | Lang::C => "//",
        }
    }

    fn block_comments(self) -> bool {
        !matches!(self, Lang::Python)
    }

    /// Whether `c` opens a string in this language.
    fn quote(self, c: char) -> bool {
        match self {
            Lang::Rust => c == '"',
            Lang::Python | Lang::C => c == '"' || c == '\'',
            Lang::Go | Lang::Js => c == '"' || c == '\'' || c == '`',
        }
    }
}

/// The syntax classes of one line of `lang`, as `(start, end, class)` byte
/// ranges in order, each on character boundaries of `line`.
pub fn classes(lang: Lang, line: &str) -> Vec<(usize, usize, Class)> {
    let mut out = Vec::new();
    let mut chars = line.char_indices().peekable();
    let end_of = |i: usize, c: char| i + c.len_utf8();
    while let Some((i, c)) = chars.next() {
        let rest = &line[i..];
        if rest.starts_with(lang.line_comment()) {
            out.push((i, line.len(), Class::Comment));
            break;
        }
        if lang.block_comments() && rest.starts_with("/*") {
            let end = rest[2..].find("*/").map_or(line.len(), |e| i + 2 + e + 2);
            out.push((i, end, Class::Comment));
            while chars.peek().is_some_and(|(j, _)| *j < end) {
                chars.next();
            }
            continue;
        }
        if lang == Lang::Rust && c == '\'' {
            // A char literal ('a', '\n'), or else a lifetime, left plain.
            if let Some(len) = rust_char(rest) {
                out.push((i, i + len, Class::String));
                while chars.peek().is_some_and(|(j, _)| *j < i + len) {
                    chars.next();
                }
            }
            continue;
        }
        if lang.quote(c) {
            let raw = c == '`' && lang == Lang::Go;
            let mut end = line.len();
            let mut escaped = false;
            for (j, d) in chars.by_ref() {
                if escaped {
                    escaped = false;
                } else if d == '\\' && !raw {
                    escaped = true;
                } else if d == c {
                    end = end_of(j, d);
                    break;
                }
            }
            out.push((i, end, Class::String));
            continue;
        }
        if c.is_ascii_digit() {
            let mut end = end_of(i, c);
            while let Some(&(j, d)) = chars.peek() {
                if d.is_ascii_alphanumeric() || d == '_' || d == '.' {
                    end = end_of(j, d);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push((i, end, Class::Number));
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let mut end = end_of(i, c);
            while let Some(&(j, d)) = chars.peek() {
                if d.is_alphanumeric() || d == '_' {
                    end = end_of(j, d);
                    chars.next();
                } else {
                    break;
                }
            }
            let word = &line[i..end];
            let next = line[end..].trim_start().chars().next();
            let class = if lang.keywords().contains(&word) {
                Some(Class::Keyword)
            } else if next == Some('(') || (lang == Lang::Rust && next == Some('!')) {
                Some(Class::Function)
            } else if lang.types().contains(&word) || c.is_uppercase() {
                Some(Class::Type)
            } else {
                None
            };
            if let Some(class) = class {
                out.push((i, end, class));
            }
        }
    }
    out
}

/// The length of a Rust char literal at the start of `s` (which starts
/// with `'`), if it is one.
fn rust_char(s: &str) -> Option<usize> {
    let mut it = s.char_indices().skip(1);
    let (_, first) = it.next()?;
    if first == '\\' {
        // An escape: up to the closing quote, within a short reach.
        return s
            .char_indices()
            .skip(2)
            .take(10)
            .find(|(_, c)| *c == '\'')
            .map(|(j, _)| j + 1);
    }
    let (j, second) = it.next()?;
    (second == '\'' && first != '\'').then_some(j + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(lang: Lang, line: &str) -> Vec<(&str, Class)> {
        classes(lang, line)
            .into_iter()
            .map(|(s, e, c)| (&line[s..e], c))
            .collect()
    }

    #[test]
    fn rust_lines_are_classed() {
        let got = spans(
            Lang::Rust,
            "pub fn greet(n: u32) -> String { println!(\"hi {}\", 'x'); 42 } // done",
        );
        assert_eq!(
            got,
            vec![
                ("pub", Class::Keyword),
                ("fn", Class::Keyword),
                ("greet", Class::Function),
                ("u32", Class::Type),
                ("String", Class::Type),
                ("println", Class::Function),
                ("\"hi {}\"", Class::String),
                ("'x'", Class::String),
                ("42", Class::Number),
                ("// done", Class::Comment),
            ]
        );
        // A lifetime is not a char literal.
        assert_eq!(
            spans(Lang::Rust, "fn f<'a>(x: &'a str)"),
            vec![("fn", Class::Keyword), ("str", Class::Type)]
        );
    }

    #[test]
    fn each_language_has_its_comments_and_strings() {
        assert_eq!(
            spans(Lang::Python, "def f(x): return 'a#b'  # note"),
            vec![
                ("def", Class::Keyword),
                ("f", Class::Function),
                ("return", Class::Keyword),
                ("'a#b'", Class::String),
                ("# note", Class::Comment),
            ]
        );
        assert_eq!(
            spans(Lang::Go, "func main() { s := `raw\\` }"),
            vec![
                ("func", Class::Keyword),
                ("main", Class::Function),
                ("`raw\\`", Class::String),
            ]
        );
        assert_eq!(
            spans(Lang::Js, "const x = /* c */ `t${1}`;"),
            vec![
                ("const", Class::Keyword),
                ("/* c */", Class::Comment),
                ("`t${1}`", Class::String),
            ]
        );
        assert_eq!(
            spans(Lang::C, "static int f(void) { return 0x1F; /* open"),
            vec![
                ("static", Class::Keyword),
                ("int", Class::Type),
                ("f", Class::Function),
                ("void", Class::Type),
                ("return", Class::Keyword),
                ("0x1F", Class::Number),
                ("/* open", Class::Comment),
            ]
        );
    }

    #[test]
    fn languages_come_from_extensions() {
        assert_eq!(Lang::of_path("src/lib.rs"), Some(Lang::Rust));
        assert_eq!(Lang::of_path("a/b.TSX"), Some(Lang::Js));
        assert_eq!(Lang::of_path("x.h"), Some(Lang::C));
        assert_eq!(Lang::of_path("Makefile"), None);
        assert_eq!(Lang::of_path("dir.rs/README"), None);
    }

    #[test]
    fn hostile_lines_never_panic_and_ranges_are_char_boundaries() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let alphabet: Vec<char> = "\"'`\\/*#_aZ9 (é€𝄞\u{0}\t!.x".chars().collect();
        for n in 0..3000 {
            let len = n % 40;
            let line: String = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    alphabet[(seed % alphabet.len() as u64) as usize]
                })
                .collect();
            for lang in [Lang::Rust, Lang::Python, Lang::Go, Lang::Js, Lang::C] {
                let mut last = 0;
                for (s, e, _) in classes(lang, &line) {
                    assert!(s >= last && s < e && e <= line.len(), "{line:?}");
                    assert!(
                        line.is_char_boundary(s) && line.is_char_boundary(e),
                        "{line:?}"
                    );
                    last = e;
                }
            }
        }
        let bytes: Vec<u8> = (0..=255u8).collect();
        let lossy = String::from_utf8_lossy(&bytes);
        for lang in [Lang::Rust, Lang::Python, Lang::Go, Lang::Js, Lang::C] {
            let _ = classes(lang, &lossy);
        }
    }
}
