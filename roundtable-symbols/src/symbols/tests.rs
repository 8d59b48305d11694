//! Cross-language tests: language detection, errors and their details,
//! resolution rules. Per-language indexing tests sit in each language's
//! module.

use super::*;
use serde_json::json;

/// `(name, kind, start_line, end_line, definition)` of every symbol.
pub(super) type Row = (&'static str, SymbolKind, u32, u32, bool);

/// Index `src` and compare every symbol's row with `expected`.
#[track_caller]
pub(super) fn assert_rows(language: Language, src: &str, expected: &[Row]) {
    let got: Vec<(String, SymbolKind, u32, u32, bool)> = index(language, src.as_bytes())
        .expect("indexing never fails on a small source")
        .into_iter()
        .map(|s| (s.name, s.kind, s.start_line, s.end_line, s.definition))
        .collect();
    let want: Vec<(String, SymbolKind, u32, u32, bool)> = expected
        .iter()
        .map(|&(n, k, a, b, d)| (n.to_owned(), k, a, b, d))
        .collect();
    assert_eq!(got, want);
}

/// Resolve `name` in `src` at `path` to `(name, start_line, end_line)`.
#[track_caller]
pub(super) fn resolved(
    path: &str,
    src: &str,
    name: &str,
) -> Result<(String, u32, u32), SymbolError> {
    let path: RepoPath = path.parse().expect("test paths are valid");
    resolve(&path, src.as_bytes(), name).map(|s| (s.name, s.start_line, s.end_line))
}

/// The spans (start, end line) of an ambiguity's candidates.
#[track_caller]
pub(super) fn ambiguous_lines(path: &str, src: &str, name: &str) -> Vec<(u32, u32)> {
    match resolved(path, src, name) {
        Err(SymbolError::AmbiguousSymbol { candidates, .. }) => candidates
            .iter()
            .map(|c| (c.start_line, c.end_line))
            .collect(),
        other => panic!("expected ambiguous_symbol, got {other:?}"),
    }
}

/// Whether resolving `name` is `unknown_symbol`.
#[track_caller]
pub(super) fn is_unknown(path: &str, src: &str, name: &str) -> bool {
    matches!(
        resolved(path, src, name),
        Err(SymbolError::UnknownSymbol { .. })
    )
}

fn path(s: &str) -> RepoPath {
    s.parse().expect("test paths are valid")
}

#[test]
fn languages_by_extension() {
    let cases = [
        ("src/lib.rs", Some(Language::Rust)),
        ("a/b.py", Some(Language::Python)),
        ("a/b.pyi", Some(Language::Python)),
        ("cmd/main.go", Some(Language::Go)),
        ("web/app.ts", Some(Language::TypeScript)),
        ("web/app.mts", Some(Language::TypeScript)),
        ("web/app.cts", Some(Language::TypeScript)),
        ("web/App.tsx", Some(Language::Tsx)),
        ("web/app.js", Some(Language::JavaScript)),
        ("web/App.jsx", Some(Language::JavaScript)),
        ("web/app.mjs", Some(Language::JavaScript)),
        ("web/app.cjs", Some(Language::JavaScript)),
        ("src/x.c", Some(Language::C)),
        ("include/x.h", Some(Language::C)),
        ("README.md", None),
        ("Makefile", None),
        ("src/x.cpp", None),
        ("src/x.RS", None),
        ("dir.rs/file", None),
        (".rs", None),
    ];
    for (p, want) in cases {
        assert_eq!(Language::for_path(&path(p)), want, "{p}");
    }
}

#[test]
fn every_grammar_loads_and_parses() {
    for &language in Language::ALL {
        // An empty file has no symbols, in every language.
        assert_eq!(index(language, b""), Ok(vec![]), "{language}");
    }
}

#[test]
fn unsupported_extension_is_an_error_with_its_code() {
    let p = path("docs/notes.md");
    let err = index_path(&p, b"# fn main() {}\n").expect_err("markdown has no grammar");
    assert_eq!(
        err,
        SymbolError::UnsupportedLanguage {
            path: "docs/notes.md".into()
        }
    );
    assert_eq!(err.code(), ErrorCode::UnsupportedLanguage);
    assert_eq!(
        resolve(&p, b"", "main").expect_err("no grammar").code(),
        ErrorCode::UnsupportedLanguage
    );
}

#[test]
fn unknown_symbol_names_similar_ones() {
    let src = "struct A;\nimpl A { fn run(&self) {} }\nstruct B;\nimpl B { fn run(&self) {} }\n";
    let err = resolve(&path("src/x.rs"), src.as_bytes(), "C.run").expect_err("no C");
    assert_eq!(err.code(), ErrorCode::UnknownSymbol);
    assert_eq!(
        err,
        SymbolError::UnknownSymbol {
            path: "src/x.rs".into(),
            name: "C.run".into(),
            similar: vec!["A.run".into(), "B.run".into()],
        }
    );
    assert_eq!(
        err.to_string(),
        "src/x.rs: no symbol \"C.run\" (did you mean A.run, B.run?)"
    );
    let err = resolve(&path("src/x.rs"), src.as_bytes(), "nothing").expect_err("no such name");
    assert_eq!(err.to_string(), "src/x.rs: no symbol \"nothing\"");
}

#[test]
fn ambiguous_symbol_lists_every_candidate_with_its_span() {
    let src =
        "struct A<T>(T);\nimpl A<u8> {\n    fn new() {}\n}\nimpl A<u16> {\n    fn new() {}\n}\n";
    let err = resolve(&path("src/a.rs"), src.as_bytes(), "A.new").expect_err("two definitions");
    assert_eq!(err.code(), ErrorCode::AmbiguousSymbol);
    let SymbolError::AmbiguousSymbol {
        path: p,
        name,
        candidates,
    } = &err
    else {
        panic!("not ambiguous: {err:?}");
    };
    assert_eq!((p.as_str(), name.as_str()), ("src/a.rs", "A.new"));
    assert_eq!(
        serde_json::to_value(candidates).expect("symbols serialize"),
        json!([
            { "name": "A.new", "kind": "method", "start_line": 3, "end_line": 3,
              "start_byte": 33, "end_byte": 44, "definition": true },
            { "name": "A.new", "kind": "method", "start_line": 6, "end_line": 6,
              "start_byte": 65, "end_byte": 76, "definition": true },
        ])
    );
    assert_eq!(
        err.to_string(),
        "src/a.rs: \"A.new\" names 2 symbols (lines 3-3, 6-6)"
    );
}

#[test]
fn a_sole_definition_wins_over_declarations_but_not_over_another_definition() {
    let one = "int f(void);\nint f(void);\nint f(void) { return 0; }\n";
    assert_eq!(resolved("a.c", one, "f"), Ok(("f".into(), 3, 3)));
    // Declarations only: nothing to prefer.
    assert_eq!(
        ambiguous_lines("a.h", "int f(void);\nint f(void);\n", "f"),
        [(1, 1), (2, 2)]
    );
    // Two definitions (both branches of an #ifdef): ambiguous, declarations listed too.
    let two = "int f(void);\n#ifdef X\nint f(void) { return 1; }\n#else\nint f(void) { return 2; }\n#endif\n";
    assert_eq!(ambiguous_lines("a.c", two, "f"), [(1, 1), (3, 3), (5, 5)]);
}

#[test]
fn resolve_in_reuses_one_index() {
    let p = path("src/m.rs");
    let symbols = index_path(&p, b"fn a() {}\nfn b() {}\n").expect("index");
    let a = resolve_in(&p, &symbols, "a").expect("a");
    let b = resolve_in(&p, &symbols, "b").expect("b");
    assert_eq!(
        (a.start_byte, a.end_byte, b.start_byte, b.end_byte),
        (0, 9, 10, 19)
    );
    assert!(a.contains_line(1) && !a.contains_line(2));
}

#[test]
fn symbols_serialize_in_snake_case() {
    let symbols = index(Language::Go, b"package p\n\nfunc F() {}\n").expect("index");
    assert_eq!(
        serde_json::to_value(&symbols).expect("serializable"),
        json!([{ "name": "F", "kind": "function", "start_line": 3, "end_line": 3,
                 "start_byte": 11, "end_byte": 22, "definition": true }])
    );
    let kinds = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Type,
        SymbolKind::Module,
        SymbolKind::Const,
        SymbolKind::Macro,
    ];
    for kind in kinds {
        assert_eq!(
            serde_json::to_value(kind).expect("serializable"),
            json!(kind.as_str())
        );
    }
    for &language in Language::ALL {
        assert_eq!(
            serde_json::to_value(language).expect("serializable"),
            json!(language.as_str())
        );
    }
}

#[test]
fn oversized_sources_are_refused_before_parsing() {
    assert_eq!(check_len(MAX_SOURCE_LEN), Ok(()));
    let err = check_len(MAX_SOURCE_LEN + 1).expect_err("too large");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(
        err,
        SymbolError::SourceTooLarge {
            len: MAX_SOURCE_LEN + 1
        }
    );
}

#[test]
fn non_utf8_source_is_indexed_lossily() {
    let src = b"fn caf\xe9() {}\nfn ok() {}\n";
    let names: Vec<String> = index(Language::Rust, src)
        .expect("index")
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names.last().map(String::as_str), Some("ok"));
}
