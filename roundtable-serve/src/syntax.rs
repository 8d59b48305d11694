//! Syntax classes for the lines of a diff: a small pure tokenizer, one line
//! at a time, chosen by file extension, carrying a [`State`] from each line
//! to the next.
//!
//! It colours, it does not parse: keywords, strings, comments, numbers,
//! called or declared function names and type names, each a byte range of
//! the line on character boundaries. A block comment or a string that may
//! span lines, opened on one line, keeps its class on the lines after it as
//! long as the caller passes each line's next state on. A diff hunk is cut
//! out of its file: its first line is read in [`State::Code`], so a hunk
//! that starts inside a comment or string is not known to.

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

    /// A string that may span lines opening at the start of `rest`: the
    /// length of its opening delimiter and what closes it.
    fn long_string(self, rest: &str) -> Option<(usize, Close)> {
        match self {
            Lang::Rust => {
                let raw = rest.strip_prefix("br").or_else(|| rest.strip_prefix('r'));
                if let Some(after) = raw {
                    let hashes = after.bytes().take_while(|b| *b == b'#').count();
                    if after[hashes..].starts_with('"') {
                        let n = u8::try_from(hashes).ok()?;
                        return Some((rest.len() - after.len() + hashes + 1, Close::RawHashes(n)));
                    }
                }
                rest.starts_with('"').then_some((1, Close::Quote('"')))
            }
            Lang::Python => ["\"\"\"", "'''"]
                .into_iter()
                .find(|t| rest.starts_with(t))
                .map(|t| {
                    (
                        3,
                        Close::Triple(if t.starts_with('"') { '"' } else { '\'' }),
                    )
                }),
            Lang::Js => rest.starts_with('`').then_some((1, Close::Quote('`'))),
            Lang::Go => rest.starts_with('`').then_some((1, Close::RawQuote('`'))),
            Lang::C => None,
        }
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

/// Where a line starts: in code, or inside a construct an earlier line
/// opened and did not close. The state of the first line of a file is
/// [`State::Code`]; each line's [`classes`] gives the next line's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum State {
    /// In code.
    #[default]
    Code,
    /// Inside a block comment, `depth` deep (Rust's nest; the others'
    /// are always 1 deep).
    Comment {
        /// How many comments are open.
        depth: u32,
    },
    /// Inside a string literal that ends at `close`.
    String {
        /// What ends it.
        close: Close,
    },
}

/// What ends a string literal that can span lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Close {
    /// The quote, not after a backslash (a Rust `"…"`, a JavaScript
    /// template literal).
    Quote(char),
    /// The quote, backslashes meaning nothing (a Go raw string).
    RawQuote(char),
    /// `"` and this many `#` (a Rust raw string, `r#"…"#`).
    RawHashes(u8),
    /// Three of the quote, not after a backslash (a Python `"""…"""`).
    Triple(char),
}

/// A construct that may run past the end of its line.
#[derive(Debug, Clone, Copy)]
enum Open {
    Comment(u32),
    String(Close),
}

/// The syntax classes of one line of `lang` that starts in `state`, as
/// `(start, end, class)` byte ranges in order, each on character
/// boundaries of `line`, and the state the next line starts in.
///
/// Block comments (all but Python) and the strings that may span lines
/// (Rust `"…"` and raw `r#"…"#`, Python triple quotes, JavaScript template
/// literals, Go raw strings) carry over; a one-line string left open ends
/// with its line. A C string continued by a trailing backslash is not
/// followed.
pub fn classes(lang: Lang, state: State, line: &str) -> (Vec<(usize, usize, Class)>, State) {
    let mut out = Vec::new();
    let mut pos = 0;
    let open = match state {
        State::Code => None,
        State::Comment { depth } => Some(Open::Comment(depth.max(1))),
        State::String { close } => Some(Open::String(close)),
    };
    if let Some(open) = open {
        let (end, still) = finish(lang, open, line);
        if end > 0 {
            out.push((0, end, class_of(open)));
        }
        if let Some(still) = still {
            return (out, state_of(still));
        }
        pos = end;
    }
    let end_of = |i: usize, c: char| i + c.len_utf8();
    while let Some(c) = line[pos..].chars().next() {
        let i = pos;
        let rest = &line[i..];
        pos = end_of(i, c);
        if rest.starts_with(lang.line_comment()) {
            out.push((i, line.len(), Class::Comment));
            break;
        }
        let opened = if lang.block_comments() && rest.starts_with("/*") {
            Some((2, Open::Comment(1)))
        } else {
            lang.long_string(rest)
                .map(|(len, close)| (len, Open::String(close)))
        };
        if let Some((len, open)) = opened {
            let (end, still) = finish(lang, open, &rest[len..]);
            let end = i + len + end;
            out.push((i, end, class_of(open)));
            if let Some(still) = still {
                return (out, state_of(still));
            }
            pos = end;
            continue;
        }
        if lang == Lang::Rust && c == '\'' {
            // A char literal ('a', '\n'), or else a lifetime, left plain.
            if let Some(len) = rust_char(rest) {
                out.push((i, i + len, Class::String));
                pos = i + len;
            }
            continue;
        }
        if lang.quote(c) {
            // A string that ends with its line, closed or not.
            let (end, _) = finish(lang, Open::String(Close::Quote(c)), &line[pos..]);
            pos += end;
            out.push((i, pos, Class::String));
            continue;
        }
        if c.is_ascii_digit() {
            let len = rest
                .find(|d: char| !(d.is_ascii_alphanumeric() || d == '_' || d == '.'))
                .unwrap_or(rest.len());
            out.push((i, i + len, Class::Number));
            pos = i + len;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let len = rest
                .find(|d: char| !(d.is_alphanumeric() || d == '_'))
                .unwrap_or(rest.len());
            let end = i + len;
            pos = end;
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
    (out, State::Code)
}

fn class_of(open: Open) -> Class {
    match open {
        Open::Comment(_) => Class::Comment,
        Open::String(_) => Class::String,
    }
}

fn state_of(open: Open) -> State {
    match open {
        Open::Comment(depth) => State::Comment { depth },
        Open::String(close) => State::String { close },
    }
}

/// The states of a diff hunk's two sides, each carried over its own lines:
/// a context line reads on both, a deleted line on the old side only, an
/// added line on the new side only. A hunk starts with both sides in
/// [`State::Code`] ([`Sides::default`]): a hunk that starts inside a
/// comment or string is not known to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sides {
    /// The old side's state.
    pub old: State,
    /// The new side's state.
    pub new: State,
}

impl Sides {
    /// The classes of `line`, a line of the old side (`on_old`), the new
    /// side (`on_new`) or both, moving those sides' states past it. A line
    /// on both sides is classed as the new side reads it; a line on
    /// neither is classed from the default state and moves nothing.
    pub fn classes(
        &mut self,
        lang: Lang,
        on_old: bool,
        on_new: bool,
        line: &str,
    ) -> Vec<(usize, usize, Class)> {
        let old = on_old.then(|| classes(lang, self.old, line));
        let new = on_new.then(|| classes(lang, self.new, line));
        if let Some((_, next)) = &old {
            self.old = *next;
        }
        match (old, new) {
            (_, Some((spans, next))) => {
                self.new = next;
                spans
            }
            (Some((spans, _)), None) => spans,
            (None, None) => classes(lang, State::Code, line).0,
        }
    }
}

/// How far into `text` the open construct `open` runs (its closing
/// delimiter included), and what is still open at the end of `text`
/// (`None`: it closed).
fn finish(lang: Lang, open: Open, text: &str) -> (usize, Option<Open>) {
    match open {
        Open::Comment(mut depth) => {
            let nests = lang == Lang::Rust;
            let mut at = 0;
            while at < text.len() {
                let rest = &text[at..];
                if rest.starts_with("*/") {
                    at += 2;
                    depth -= 1;
                    if depth == 0 {
                        return (at, None);
                    }
                } else if nests && rest.starts_with("/*") {
                    at += 2;
                    depth = depth.saturating_add(1);
                } else {
                    at += rest.chars().next().map_or(1, char::len_utf8);
                }
            }
            (text.len(), Some(Open::Comment(depth)))
        }
        Open::String(close) => {
            let (quote, escapes) = match close {
                Close::Quote(q) | Close::Triple(q) => (q, true),
                Close::RawQuote(q) => (q, false),
                Close::RawHashes(_) => ('"', false),
            };
            let mut escaped = false;
            for (j, d) in text.char_indices() {
                if escaped {
                    escaped = false;
                    continue;
                }
                if d == '\\' && escapes {
                    escaped = true;
                    continue;
                }
                if d != quote {
                    continue;
                }
                let after = j + d.len_utf8();
                let end = match close {
                    Close::Triple(q) => {
                        let three: String = [q, q, q].iter().collect();
                        text[j..].starts_with(&three).then(|| j + three.len())
                    }
                    Close::RawHashes(n) => {
                        let n = usize::from(n);
                        let hashes = text[after..].bytes().take_while(|b| *b == b'#').count();
                        (hashes >= n).then_some(after + n)
                    }
                    Close::Quote(_) | Close::RawQuote(_) => Some(after),
                };
                if let Some(end) = end {
                    return (end, None);
                }
            }
            (text.len(), Some(open))
        }
    }
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
        let (got, next) = classes(lang, State::Code, line);
        assert_eq!(next, State::Code, "{line:?} leaves nothing open");
        got.into_iter().map(|(s, e, c)| (&line[s..e], c)).collect()
    }

    /// The spans of each of `lines`, read in order from the default
    /// state, and the state after the last.
    fn run<'l>(lang: Lang, lines: &[&'l str]) -> (Vec<Vec<(&'l str, Class)>>, State) {
        let mut state = State::Code;
        let mut out = Vec::new();
        for line in lines {
            let (got, next) = classes(lang, state, line);
            out.push(got.into_iter().map(|(s, e, c)| (&line[s..e], c)).collect());
            state = next;
        }
        (out, state)
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
        let open = "static int f(void) { return 0x1F; /* open";
        let (got, next) = classes(Lang::C, State::Code, open);
        assert_eq!(next, State::Comment { depth: 1 });
        assert_eq!(
            got.into_iter()
                .map(|(s, e, c)| (&open[s..e], c))
                .collect::<Vec<_>>(),
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
        let alphabet: Vec<char> = "\"'`\\/*#_aZ9 (é€𝄞\u{0}\t!.xrb".chars().collect();
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
                for &state in &STATES {
                    let mut last = 0;
                    for (s, e, _) in classes(lang, state, &line).0 {
                        assert!(s >= last && s < e && e <= line.len(), "{line:?}");
                        assert!(
                            line.is_char_boundary(s) && line.is_char_boundary(e),
                            "{line:?}"
                        );
                        last = e;
                    }
                }
            }
        }
        let bytes: Vec<u8> = (0..=255u8).collect();
        let lossy = String::from_utf8_lossy(&bytes);
        for lang in [Lang::Rust, Lang::Python, Lang::Go, Lang::Js, Lang::C] {
            for &state in &STATES {
                let _ = classes(lang, state, &lossy);
            }
        }
    }

    /// Every state a line may start in, for the property test.
    const STATES: [State; 9] = [
        State::Code,
        State::Comment { depth: 1 },
        State::Comment { depth: 3 },
        State::String {
            close: Close::Quote('"'),
        },
        State::String {
            close: Close::Quote('`'),
        },
        State::String {
            close: Close::RawQuote('`'),
        },
        State::String {
            close: Close::RawHashes(0),
        },
        State::String {
            close: Close::RawHashes(2),
        },
        State::String {
            close: Close::Triple('\''),
        },
    ];

    #[test]
    fn rust_block_comments_nest_across_lines() {
        let (got, end) = run(
            Lang::Rust,
            &["let a = 1; /* one", "/* two */ still", "", "done */ fn f()"],
        );
        assert_eq!(
            got,
            vec![
                vec![
                    ("let", Class::Keyword),
                    ("1", Class::Number),
                    ("/* one", Class::Comment),
                ],
                vec![("/* two */ still", Class::Comment)],
                vec![],
                vec![
                    ("done */", Class::Comment),
                    ("fn", Class::Keyword),
                    ("f", Class::Function),
                ],
            ]
        );
        assert_eq!(end, State::Code);
        // An empty line keeps the comment open.
        assert_eq!(
            classes(Lang::Rust, State::Comment { depth: 2 }, "").1,
            State::Comment { depth: 2 }
        );
    }

    #[test]
    fn rust_strings_and_raw_strings_span_lines() {
        let (got, end) = run(
            Lang::Rust,
            &[
                r##"let s = r#"a "quoted" // not a comment"##,
                r#"still " raw"#,
                r##"end"# ; let t = "two"##,
                r#"lines\\\" more" + 1"#,
                r#"let u = br"x"#,
            ],
        );
        assert_eq!(
            got,
            vec![
                vec![
                    ("let", Class::Keyword),
                    (r##"r#"a "quoted" // not a comment"##, Class::String),
                ],
                vec![(r#"still " raw"#, Class::String)],
                vec![
                    (r##"end"#"##, Class::String),
                    ("let", Class::Keyword),
                    (r#""two"#, Class::String),
                ],
                vec![(r#"lines\\\" more""#, Class::String), ("1", Class::Number)],
                vec![("let", Class::Keyword), (r#"br"x"#, Class::String)],
            ]
        );
        assert_eq!(
            end,
            State::String {
                close: Close::RawHashes(0)
            }
        );
        // Fewer hashes than opened do not close it.
        let open = State::String {
            close: Close::RawHashes(2),
        };
        assert_eq!(classes(Lang::Rust, open, "\"# x").1, open);
        assert_eq!(classes(Lang::Rust, open, "\"## x").1, State::Code);
    }

    #[test]
    fn python_triple_quotes_span_lines_and_single_quotes_do_not() {
        let (got, end) = run(
            Lang::Python,
            &[
                "def f():",
                r#"    """Doc # not a comment"#,
                r#"    it's \""" still"#,
                r#"    """ + '''x''' # c"#,
                "s = 'open",
                "t = 1",
            ],
        );
        assert_eq!(
            got,
            vec![
                vec![("def", Class::Keyword), ("f", Class::Function)],
                vec![(r#""""Doc # not a comment"#, Class::String)],
                vec![(r#"    it's \""" still"#, Class::String)],
                vec![
                    (r#"    """"#, Class::String),
                    ("'''x'''", Class::String),
                    ("# c", Class::Comment),
                ],
                vec![("'open", Class::String)],
                vec![("1", Class::Number)],
            ]
        );
        assert_eq!(end, State::Code);
        // Python has no block comments.
        assert_eq!(
            classes(Lang::Python, State::Code, "x = 1 /* y").1,
            State::Code
        );
    }

    #[test]
    fn javascript_template_literals_and_comments_span_lines() {
        let (got, end) = run(
            Lang::Js,
            &["const t = `a", r"\` b ${x}", "c` + 1; /* d", "e */ return"],
        );
        assert_eq!(
            got,
            vec![
                vec![("const", Class::Keyword), ("`a", Class::String)],
                vec![(r"\` b ${x}", Class::String)],
                vec![
                    ("c`", Class::String),
                    ("1", Class::Number),
                    ("/* d", Class::Comment),
                ],
                vec![("e */", Class::Comment), ("return", Class::Keyword)],
            ]
        );
        assert_eq!(end, State::Code);
        // A JavaScript block comment does not nest.
        assert_eq!(run(Lang::Js, &["/* /* a */ x"]).1, State::Code);
    }

    #[test]
    fn go_raw_strings_span_lines_and_ignore_backslashes() {
        let (got, end) = run(Lang::Go, &[r"s := `a\", "b` + \"c", "d\""]);
        assert_eq!(
            got,
            vec![
                vec![(r"`a\", Class::String)],
                vec![("b`", Class::String), ("\"c", Class::String)],
                // A Go "…" string does not span lines: `d` is code, the
                // quote opens another.
                vec![("\"", Class::String)],
            ]
        );
        assert_eq!(end, State::Code);
        assert_eq!(
            run(Lang::Go, &["/* a", "b */ func"]).0[1],
            vec![("b */", Class::Comment), ("func", Class::Keyword)]
        );
    }

    #[test]
    fn c_block_comments_span_lines_and_strings_do_not() {
        let (got, end) = run(
            Lang::C,
            &["int x; /* a", " * \"b", " */ char *s = \"c", "d;"],
        );
        assert_eq!(
            got,
            vec![
                vec![("int", Class::Type), ("/* a", Class::Comment)],
                vec![(" * \"b", Class::Comment)],
                vec![
                    (" */", Class::Comment),
                    ("char", Class::Type),
                    ("\"c", Class::String),
                ],
                vec![],
            ]
        );
        assert_eq!(end, State::Code);
        // A C comment does not nest: the first `*/` ends it.
        assert_eq!(
            classes(Lang::C, State::Comment { depth: 1 }, "/* */ x").1,
            State::Code
        );
    }

    #[test]
    fn each_side_of_a_hunk_carries_its_own_state() {
        let mut sides = Sides::default();
        // The old side opened a comment the new side did not.
        assert_eq!(
            sides.classes(Lang::C, true, false, "x = 1; /* gone"),
            vec![(4, 5, Class::Number), (7, 14, Class::Comment)]
        );
        assert_eq!(
            sides.classes(Lang::C, false, true, "x = 2;"),
            vec![(4, 5, Class::Number)]
        );
        assert_eq!(sides.old, State::Comment { depth: 1 });
        assert_eq!(sides.new, State::Code);
        // A context line is classed as the new side reads it, and moves
        // both sides: the old side's comment ends here.
        assert_eq!(
            sides.classes(Lang::C, true, true, "*/ int y;"),
            vec![(3, 6, Class::Type)]
        );
        assert_eq!(sides.old, State::Code);
        // A deleted line inside the old side's comment is a comment.
        let mut sides = Sides {
            old: State::Comment { depth: 1 },
            new: State::Code,
        };
        assert_eq!(
            sides.classes(Lang::C, true, false, "int z;"),
            vec![(0, 6, Class::Comment)]
        );
        assert_eq!(sides.new, State::Code);
        // A line on neither side moves nothing.
        assert_eq!(
            sides.classes(Lang::C, false, false, "/* a"),
            vec![(0, 4, Class::Comment)]
        );
        assert_eq!(sides.old, State::Comment { depth: 1 });
        assert_eq!(sides.new, State::Code);
    }
}
