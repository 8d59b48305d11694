// The properties the `symbols` fuzz target checks, shared word for word by
// the fuzz target (`fuzz/fuzz_targets/symbols.rs`) and the corpus replay
// test (`roundtable/tests/symbols_hostile.rs`), which both `include!` this
// file. It names everything by its full path so that it drops into either
// crate.

/// A file name of each language, to resolve names through.
fn symbols_check_path(language: roundtable::symbols::Language) -> roundtable::RepoPath {
    use roundtable::symbols::Language;
    let name = match language {
        Language::Rust => "f.rs",
        Language::Python => "f.py",
        Language::Go => "f.go",
        Language::TypeScript => "f.ts",
        Language::Tsx => "f.tsx",
        Language::JavaScript => "f.js",
        Language::C => "f.c",
    };
    name.parse().expect("a valid path")
}

/// Check every property on `data` in every language; panics on a
/// violation. (A stack overflow aborts the process, which the fuzzer and
/// the test harness both report.)
///
/// `index` never panics and either refuses with `invalid_argument` (a
/// bound: nesting, name length, size) or returns symbols that are sorted by
/// start (an enclosing one first), whose spans lie inside the source
/// (`start_byte <= end_byte <= len`, `1 <= start_line <= end_line`, the
/// last line at most one past the source's lines), whose names are
/// non-empty and within `MAX_QUALIFIED_NAME`; and every indexed name
/// resolves (to a symbol of that name) or is ambiguous, never unknown.
fn check_symbols(data: &[u8]) {
    for &language in roundtable::symbols::Language::ALL {
        match roundtable::symbols::index(language, data) {
            Ok(symbols) => check_symbol_index(language, data, &symbols),
            Err(e) => assert_eq!(
                e.code(),
                roundtable::ErrorCode::InvalidArgument,
                "{language}: {e}\ninput: b\"{}\"",
                data.escape_ascii()
            ),
        }
    }
}

/// The properties of the index of `data` in `language`.
fn check_symbol_index(
    language: roundtable::symbols::Language,
    data: &[u8],
    symbols: &[roundtable::symbols::Symbol],
) {
    let lines = u32::try_from(data.iter().filter(|&&b| b == b'\n').count() + 1).unwrap_or(u32::MAX);
    let path = symbols_check_path(language);
    for (i, s) in symbols.iter().enumerate() {
        let at = || {
            format!(
                "{language}: symbol {i} {s:?}\ninput: b\"{}\"",
                data.escape_ascii()
            )
        };
        assert!(
            s.start_byte <= s.end_byte && s.end_byte <= data.len(),
            "{}",
            at()
        );
        assert!(1 <= s.start_line && s.start_line <= s.end_line, "{}", at());
        assert!(s.end_line <= lines, "{}", at());
        assert!(!s.name.is_empty(), "{}", at());
        assert!(
            s.name.len() <= roundtable::symbols::MAX_QUALIFIED_NAME,
            "{}",
            at()
        );
        if let Some(next) = symbols.get(i + 1) {
            assert!(
                (s.start_byte, std::cmp::Reverse(s.end_byte))
                    <= (next.start_byte, std::cmp::Reverse(next.end_byte)),
                "{}: not sorted before {next:?}",
                at()
            );
        }
        match roundtable::symbols::resolve_in(&path, symbols, &s.name) {
            Ok(found) => assert_eq!(found.name, s.name, "{}", at()),
            Err(roundtable::symbols::SymbolError::AmbiguousSymbol { .. }) => {}
            Err(e) => panic!("{}: {e}", at()),
        }
    }
}
