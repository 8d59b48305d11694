//! The symbol indexers on hostile input (issue 14, item 2): deeply nested
//! source never overflows the stack, indexing stays linear in the input,
//! and the committed corpus of the `symbols` fuzz target
//! (`tests/fuzz-corpus/symbols/`) passes the fuzzer's own check.

use roundtable::symbols::{self, Language, SymbolError};
use roundtable::ErrorCode;
use std::time::{Duration, Instant};

/// Index on a thread with a host-sized (8 MiB) stack: a stack overflow
/// aborts the whole test binary, as it would abort a host.
fn index_on_host_stack(language: Language, src: Vec<u8>) -> Result<usize, SymbolError> {
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(move || symbols::index(language, &src).map(|s| s.len()))
        .expect("spawn")
        .join()
        .expect("indexing panicked")
}

fn nested(open: &str, close: &str, n: usize) -> Vec<u8> {
    let mut s = open.repeat(n);
    s.push_str(&close.repeat(n));
    s.into_bytes()
}

/// 20,000 levels of each construct the indexers descend into (about
/// 200 KB each).
fn deep_sources() -> Vec<(&'static str, Language, Vec<u8>)> {
    const N: usize = 20_000;
    vec![
        ("rust modules", Language::Rust, nested("mod a {", "}", N)),
        (
            "rust traits in errors",
            Language::Rust,
            nested("trait T { fn f() { ", "}", N),
        ),
        (
            "rust impl of a reference type",
            Language::Rust,
            format!("impl {}T {{ fn f() {{}} }}\n", "&".repeat(N)).into_bytes(),
        ),
        ("rust blocks in a function", Language::Rust, {
            let mut s = b"fn f() ".to_vec();
            s.extend(nested("{", "}", N));
            s
        }),
        (
            "typescript namespaces",
            Language::TypeScript,
            nested("namespace a {", "}", N),
        ),
        (
            "javascript classes",
            Language::JavaScript,
            nested("class A { m() { ", "} }", N),
        ),
        (
            "c conditionals",
            Language::C,
            nested("#if X\n", "#endif\n", N),
        ),
        ("c declarators", Language::C, {
            format!("int {}f{}(void);\n", "(".repeat(N), ")".repeat(N)).into_bytes()
        }),
        (
            "go receiver pointers",
            Language::Go,
            format!("package p\nfunc (s {}T) M() {{}}\n", "*".repeat(N)).into_bytes(),
        ),
        ("go blocks", Language::Go, {
            let mut s = b"package p\nfunc f() ".to_vec();
            s.extend(nested("{", "}", N));
            s
        }),
        ("python brackets", Language::Python, nested("x = (", ")", N)),
        (
            "python classes in errors",
            Language::Python,
            nested("class A:\n def f(", ")", N),
        ),
    ]
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn deeply_nested_sources_never_overflow_the_stack() {
    for (what, language, src) in deep_sources() {
        let len = src.len();
        let start = Instant::now();
        match index_on_host_stack(language, src) {
            Ok(_) => {}
            Err(e) => assert_eq!(e.code(), ErrorCode::InvalidArgument, "{what}: {e}"),
        }
        let took = start.elapsed();
        assert!(
            took < Duration::from_secs(20),
            "{what}: {len} bytes took {took:?}"
        );
    }
}

#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn nesting_beyond_the_limit_is_a_coded_refusal() {
    let src = nested("mod a {", "}", symbols::MAX_NESTING + 1);
    let err = symbols::index(Language::Rust, &src).expect_err("too deep");
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert_eq!(err, symbols::SymbolError::NestingTooDeep);
    // At the limit, everything is indexed.
    let src = nested("mod a {", "}", symbols::MAX_NESTING);
    let index = symbols::index(Language::Rust, &src).expect("at the limit");
    assert_eq!(index.len(), symbols::MAX_NESTING);
}

/// Work that grows faster than the input shows as the time for 8n being
/// far more than 8 times that for n: a quadratic index takes 64 times as
/// long, a linear one 8. The bound sits at 24, so another build or test
/// sharing the machine (which made 4n take 10.4 times n once, in CI) does
/// not fail it while a quadratic index still would; each size's time is
/// the fastest of five runs, taken in turns so load hits both alike.
#[test]
fn indexing_time_is_linear_in_the_input() {
    let flat = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|i| format!("// f{i}\nfn f{i}() {{}}\n"))
            .collect::<String>()
            .into_bytes()
    };
    let deep = |n: usize| -> Vec<u8> {
        let mut s = "mod m {\n".repeat(100);
        for i in 0..n {
            s.push_str(&format!("fn f{i}() {{}}\n"));
        }
        s.push_str(&"}\n".repeat(100));
        s.into_bytes()
    };
    for (what, make) in [
        ("flat", &flat as &dyn Fn(usize) -> Vec<u8>),
        ("nested", &deep),
    ] {
        let (small_src, large_src) = (make(2_000), make(16_000));
        let time = |src: &[u8]| {
            let start = Instant::now();
            let _ = symbols::index(Language::Rust, src);
            start.elapsed()
        };
        let (mut small, mut large) = (time(&small_src), time(&large_src));
        for _ in 1..5 {
            small = small.min(time(&small_src));
            large = large.min(time(&large_src));
        }
        assert!(
            large < small * 24,
            "{what}: 2,000 items {small:?}, 16,000 items {large:?}"
        );
    }
}

include!("../../fuzz/check_symbols.rs");

/// The fuzzer's `-max_len` default: larger seeds would be truncated.
const MAX_SEED_BYTES: usize = 4096;

/// Every file of the `symbols` fuzz corpus (`src-*`: ordinary sources;
/// `deep-*`, `long-*`: nesting and names beyond any real code) passes the
/// fuzzer's check, on a host-sized stack.
#[cfg_attr(not(feature = "rust"), ignore = "needs the rust symbol grammar")]
#[test]
fn every_symbols_corpus_file_passes_the_fuzz_check() {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz-corpus/symbols");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read the corpus {}: {e}", dir.display()))
        .map(|e| e.expect("an entry").path())
        .collect();
    names.sort();
    assert!(
        names.len() >= 10,
        "the corpus {} is too small",
        dir.display()
    );
    for path in names {
        let data = std::fs::read(&path).expect("read a seed");
        assert!(
            data.len() <= MAX_SEED_BYTES,
            "{} is too large",
            path.display()
        );
        let name = path.display().to_string();
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || check_symbols(&data))
            .expect("spawn")
            .join()
            .unwrap_or_else(|_| panic!("{name} broke a property"));
    }
}
