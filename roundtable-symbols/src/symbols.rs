//! The symbol index: functions, methods and types of a source file, with
//! qualified names and exact spans, so that `symbol:PATH#NAME` resources
//! resolve to the lines they cover in the file's *current* content.
//!
//! Pure: [`index`] and [`resolve`] take the file's bytes and parse them with
//! the language's [tree-sitter] grammar; nothing here reads a file.
//!
//! # Languages
//!
//! [`Language::for_path`] picks the grammar by extension: `.rs` Rust;
//! `.py`/`.pyi` Python; `.go` Go; `.ts`/`.mts`/`.cts` TypeScript; `.tsx`
//! TSX; `.js`/`.jsx`/`.mjs`/`.cjs` JavaScript (its grammar includes JSX);
//! `.c`/`.h` C. Any other file is [`SymbolError::UnsupportedLanguage`].
//!
//! # What is indexed, and the qualified names
//!
//! Names are joined with `.`. Only declaration scopes are descended —
//! files, modules/namespaces, classes, impl and trait blocks, interfaces,
//! and the conditional blocks listed below — never function bodies, so a
//! closure or a helper defined inside a function is part of that function's
//! span, not a symbol of its own.
//!
//! - **Rust**: free functions `f`; `struct`/`enum`/`union`/`trait`/`type`
//!   items by name ([`SymbolKind::Type`]); methods and associated
//!   consts/types of `impl Type`, `impl<T> Type<T>` and `impl Trait for Type`
//!   as `Type.method` (the implementing type's last path segment, without
//!   generic arguments: `impl<T> fmt::Display for a::Wrapper<T>` gives
//!   `Wrapper.fmt`); trait items as `Trait.method` (a method without a
//!   default body is a declaration); `mod a { … }` is [`SymbolKind::Module`]
//!   `a` and qualifies what it contains (`a.f`, `a.S.new`); `const`/`static`
//!   are [`SymbolKind::Const`]; `macro_rules!` is [`SymbolKind::Macro`];
//!   functions in `extern` blocks are declarations. A `mod a;` without a
//!   body and `impl` blocks themselves are not symbols.
//! - **Python**: functions `func`, classes `Class`, methods `Class.method`,
//!   nested classes `Outer.Inner.method`; definitions inside module- or
//!   class-level `if`/`try`/`with` blocks count at that level. [`resolve`]
//!   also accepts the module-qualified spelling `<module>.func`, where the
//!   module is the file stem (`pkg/util.py#util.helper`) or, for
//!   `__init__.py`, the package directory's name. Functions decorated with
//!   `@overload`/`@typing.overload` are declarations.
//! - **Go**: functions `F`; methods `Type.Method` for value and pointer
//!   receivers, generic receivers included (`func (s *Stack[T]) Push` gives
//!   `Stack.Push`); type specs and aliases ([`SymbolKind::Type`]); an
//!   interface's methods as `Iface.Method` declarations; a function without
//!   a body (implemented in assembly) is a declaration.
//! - **TypeScript/TSX/JavaScript**: functions and generators; `const`/`let`/
//!   `var` bound to an arrow function or function expression (`const f = () =>
//!   …`) as functions, bound to a class expression as a type; classes
//!   (abstract too) with their methods, constructors, getters/setters and
//!   arrow-function fields as `Class.method`; interfaces (their method
//!   signatures as `Iface.method` declarations), type aliases and enums
//!   ([`SymbolKind::Type`]); `namespace N { … }`/`module N { … }` as
//!   [`SymbolKind::Module`] qualifying its contents. `export`, `export
//!   default` and `declare` wrappers are transparent (the span includes the
//!   keyword). Overload signatures (`function f(a: string): void;`, a
//!   method signature in a class) are declarations. Anonymous default
//!   exports have no name and are not indexed.
//! - **C**: functions (a prototype is a declaration, a body a definition);
//!   named `struct`/`union`/`enum` with a body by tag name; a forward
//!   declaration `struct s;` is a declaration; typedefs by the new name
//!   ([`SymbolKind::Type`]). `typedef struct s { … } s;` is one symbol `s`
//!   (the whole typedef); with different names (`typedef struct s_ { … }
//!   s_t;`) the tag `s_` (the struct's span) and `s_t` (the whole typedef)
//!   are two. A typedef that only re-exports a tag under the same name
//!   (`typedef struct s s;`) is a declaration. Items inside `#if`/`#ifdef`/
//!   `#else` blocks are indexed as if the condition held, every branch.
//!
//! # Spans
//!
//! A symbol's span is its syntax node as the grammar delimits it — for a
//! function from its first keyword or modifier (`pub`, `export`, `async`,
//! `static`, the return type in C) to its closing brace (or `;` for a
//! declaration) — extended *upwards* over the comments, attributes and
//! decorators directly attached to it:
//!
//! - Rust `#[attr]` items (not inner `#![…]`) and comments of any style
//!   except inner doc comments (`//!`, `/*! */`);
//! - Python decorators (the grammar's `decorated_definition` node) and
//!   comments;
//! - TS/JS decorators (class decorators are in the node, method decorators
//!   precede it) and comments; Go and C comments.
//!
//! An attachment counts only while the run is unbroken: no blank line
//! between it and what follows, and a comment must start its own line (a
//! comment trailing the previous item's last line belongs to that item's
//! line, not to the next symbol). A Python docstring is inside the body and
//! so inside the span. `start_line`/`end_line` are 1-based and inclusive
//! (the line of the closing brace is the last line); `start_byte`/`end_byte`
//! are a half-open byte range of the same extent.
//!
//! # Ambiguity
//!
//! A qualified name can occur more than once in a file (a C prototype and
//! its definition, two `impl A<u8>`/`impl A<u16>` blocks both defining
//! `new`, TypeScript overloads, a getter and a setter of one property,
//! definitions in both branches of an `#ifdef` or a Python `if`). Every
//! occurrence is in the index; [`resolve`] picks one only when that is not a
//! guess: a single occurrence, or exactly one *definition* (it has a body;
//! see [`Symbol::definition`]) among otherwise bare declarations. Otherwise
//! the name is [`SymbolError::AmbiguousSymbol`], whose details list every
//! candidate with its span.
//!
//! # Syntax errors
//!
//! tree-sitter is error-tolerant: a file that does not parse still yields a
//! tree in which the broken region is an error node. The index covers every
//! item the parser recovered (items inside error regions are searched too),
//! so a file with a syntax error still indexes what it can. What the
//! recovery keeps is the parser's best guess: a symbol whose own text is
//! broken may get a shorter or longer span than the author meant, an
//! unclosed brace can make the items after it look nested (Rust
//! `impl X { fn a() {` followed by `fn after() {}` indexes `X.after`), and
//! items inside a region too broken to recover are missing. Indexing never
//! fails on malformed input; callers that must not guess can check the
//! resolved span against the lines they expect.
//!
//! # Bounds
//!
//! The walk descends at most [`MAX_NESTING`] declaration scopes and builds
//! names of at most [`MAX_QUALIFIED_NAME`] bytes; beyond either, [`index`]
//! refuses with `invalid_argument` ([`SymbolError::NestingTooDeep`],
//! [`SymbolError::NameTooLong`]) instead of exhausting the stack or
//! spending quadratic time (20,000 nested modules once did both). Nesting
//! the index does not descend into (function bodies, expressions, types)
//! costs nothing but the parse.
//!
//! Names are kept as written, so a few cannot be spelled in a
//! `symbol:PATH#NAME` id (a TS method with a quoted key containing a space,
//! a `#private` member): such symbols are indexed but resolvable only
//! through their enclosing class or the file.
//!
//! [tree-sitter]: https://tree-sitter.github.io/tree-sitter/

use crate::{ErrorCode, RepoPath};
use serde::{Deserialize, Serialize};
use std::fmt;
#[cfg(feature = "tree-sitter")]
use tree_sitter::{Node, Parser, Tree};

#[cfg(feature = "c")]
mod c;
#[cfg(feature = "go")]
mod go;
#[cfg(feature = "python")]
mod python;
#[cfg(feature = "rust")]
mod rust;
#[cfg(any(feature = "typescript", feature = "javascript"))]
mod ts;

/// A language the symbol index has a grammar for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Language {
    /// Rust (`.rs`).
    Rust,
    /// Python (`.py`, `.pyi`).
    Python,
    /// Go (`.go`).
    Go,
    /// TypeScript (`.ts`, `.mts`, `.cts`).
    TypeScript,
    /// TypeScript with JSX (`.tsx`).
    Tsx,
    /// JavaScript, JSX included (`.js`, `.jsx`, `.mjs`, `.cjs`).
    JavaScript,
    /// C (`.c`, `.h`).
    C,
}

impl Language {
    /// Every language, in declaration order.
    pub const ALL: &'static [Language] = &[
        Language::Rust,
        Language::Python,
        Language::Go,
        Language::TypeScript,
        Language::Tsx,
        Language::JavaScript,
        Language::C,
    ];

    /// The language of a file, by its extension (case-sensitive, as the
    /// tools that write these files spell them); `None` when no grammar
    /// applies.
    pub fn for_path(path: &RepoPath) -> Option<Language> {
        let name = path.as_str().rsplit('/').next().unwrap_or_default();
        let (stem, ext) = name.rsplit_once('.')?;
        if stem.is_empty() {
            // A dotfile such as `.rs` has no extension.
            return None;
        }
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "go" => Language::Go,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "c" | "h" => Language::C,
            _ => return None,
        })
        .filter(|l| l.is_built())
    }

    /// Whether this build has the language's grammar (its Cargo feature:
    /// `rust`, `python`, `go`, `typescript` for TypeScript and TSX,
    /// `javascript`, `c`). A file in a language not built is like a file in
    /// no language: it has no symbols to claim.
    pub const fn is_built(self) -> bool {
        match self {
            Language::Rust => cfg!(feature = "rust"),
            Language::Python => cfg!(feature = "python"),
            Language::Go => cfg!(feature = "go"),
            Language::TypeScript | Language::Tsx => cfg!(feature = "typescript"),
            Language::JavaScript => cfg!(feature = "javascript"),
            Language::C => cfg!(feature = "c"),
        }
    }

    /// The stable snake_case spelling (`rust`, `type_script`, …) as
    /// serialized.
    pub const fn as_str(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Go => "go",
            Language::TypeScript => "type_script",
            Language::Tsx => "tsx",
            Language::JavaScript => "java_script",
            Language::C => "c",
        }
    }
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of item a symbol is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SymbolKind {
    /// A free function (or a function bound to a `const` in TS/JS).
    Function,
    /// A function inside a type: a Rust impl or trait item, a Python or
    /// TS/JS class method, a Go method with a receiver, an interface method.
    Method,
    /// A type: struct, enum, union, trait, class, interface, type alias,
    /// typedef.
    Type,
    /// A Rust `mod` with a body, a TypeScript `namespace`/`module`.
    Module,
    /// A Rust `const` or `static` item (associated consts included).
    Const,
    /// A Rust `macro_rules!` macro.
    Macro,
}

impl SymbolKind {
    /// The stable snake_case spelling, as serialized.
    pub const fn as_str(self) -> &'static str {
        match self {
            SymbolKind::Function => "function",
            SymbolKind::Method => "method",
            SymbolKind::Type => "type",
            SymbolKind::Module => "module",
            SymbolKind::Const => "const",
            SymbolKind::Macro => "macro",
        }
    }
}

impl fmt::Display for SymbolKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One indexed symbol: its qualified name, kind and span (see the [module
/// documentation](self) for the naming and span rules).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Symbol {
    /// The qualified name, `.`-separated (`Api.fetch`, `a.f`).
    pub name: String,
    /// What kind of item it is.
    pub kind: SymbolKind,
    /// First line of the span, 1-based.
    pub start_line: u32,
    /// Last line of the span, 1-based and inclusive.
    pub end_line: u32,
    /// First byte of the span.
    pub start_byte: usize,
    /// One past the last byte of the span.
    pub end_byte: usize,
    /// `true` for a definition (the item has its body), `false` for a bare
    /// declaration: a C prototype or forward declaration, a Rust trait
    /// method without a default body or an `extern` function, a TypeScript
    /// overload or interface method signature, a Go interface method or
    /// body-less function, a Python `@overload`.
    pub definition: bool,
}

impl Symbol {
    /// Whether 1-based `line` lies inside the span.
    pub fn contains_line(&self, line: u32) -> bool {
        self.start_line <= line && line <= self.end_line
    }
}

/// Why a symbol cannot be indexed or resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SymbolError {
    /// The file's extension names no language the index has a grammar for.
    #[error(
        "{path}: symbols cannot be indexed in this kind of file (supported: {})",
        supported_extensions()
    )]
    UnsupportedLanguage {
        /// The file.
        path: String,
    },
    /// No symbol has this name.
    #[error("{path}: no symbol {name:?}{}", did_you_mean(similar))]
    UnknownSymbol {
        /// The file.
        path: String,
        /// The name asked for.
        name: String,
        /// Qualified names of symbols whose last segment is the asked
        /// name's last segment (a hint for a mistyped qualifier), in file
        /// order, each once.
        similar: Vec<String>,
    },
    /// More than one symbol has this name and none is the sole definition.
    #[error("{path}: {name:?} names {} symbols (lines {})", candidates.len(), lines_of(candidates))]
    AmbiguousSymbol {
        /// The file.
        path: String,
        /// The name asked for.
        name: String,
        /// Every symbol with that name, in file order.
        candidates: Vec<Symbol>,
    },
    /// Declaration scopes (modules, classes, impl blocks, namespaces,
    /// conditional blocks, recovered error regions) nest deeper than
    /// [`MAX_NESTING`]: the index refuses rather than exhaust the stack or
    /// spend quadratic time on qualified names.
    #[error("declarations nest more than {MAX_NESTING} levels deep; the symbol index does not descend that far")]
    NestingTooDeep,
    /// A qualified name is longer than [`MAX_QUALIFIED_NAME`] bytes.
    #[error("a qualified symbol name is {len} bytes, more than the symbol index keeps ({MAX_QUALIFIED_NAME})")]
    NameTooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// The source is larger than the parser's 32-bit offsets can address
    /// (4 GiB).
    #[error("the source is {len} bytes, more than the symbol index can parse ({MAX_SOURCE_LEN})")]
    SourceTooLarge {
        /// The source's length in bytes.
        len: usize,
    },
}

/// The extensions of the languages this build indexes, as the refusal lists them.
fn supported_extensions() -> String {
    const EXTENSIONS: &[(&str, Language)] = &[
        (".rs", Language::Rust),
        (".py .pyi", Language::Python),
        (".go", Language::Go),
        (".ts .mts .cts", Language::TypeScript),
        (".tsx", Language::Tsx),
        (".js .jsx .mjs .cjs", Language::JavaScript),
        (".c .h", Language::C),
    ];
    let built: Vec<&str> = EXTENSIONS
        .iter()
        .filter(|(_, l)| l.is_built())
        .map(|(e, _)| *e)
        .collect();
    if built.is_empty() {
        "none in this build".to_owned()
    } else {
        built.join(" ")
    }
}

fn did_you_mean(similar: &[String]) -> String {
    if similar.is_empty() {
        String::new()
    } else {
        format!(" (did you mean {}?)", similar.join(", "))
    }
}

fn lines_of(candidates: &[Symbol]) -> String {
    candidates
        .iter()
        .map(|s| format!("{}-{}", s.start_line, s.end_line))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The largest source [`index`] parses: tree-sitter addresses bytes with
/// 32-bit offsets.
pub const MAX_SOURCE_LEN: usize = u32::MAX as usize;

/// How many declaration scopes deep the index descends (each module,
/// class, impl or trait block, namespace, conditional block or recovered
/// error region is one level). Real code stays far below; deeper nesting is
/// [`SymbolError::NestingTooDeep`], so that the walk's stack and the
/// qualified names stay bounded.
pub const MAX_NESTING: usize = 128;

/// The longest qualified name the index builds, in bytes; longer is
/// [`SymbolError::NameTooLong`] (so the names of a file cost at most this
/// much per symbol).
pub const MAX_QUALIFIED_NAME: usize = 4096;

impl SymbolError {
    /// `unsupported_language`, `unknown_symbol`, `ambiguous_symbol`;
    /// `invalid_argument` for an oversized source, nesting deeper than
    /// [`MAX_NESTING`] or a name longer than [`MAX_QUALIFIED_NAME`].
    pub fn code(&self) -> ErrorCode {
        match self {
            SymbolError::UnsupportedLanguage { .. } => ErrorCode::UnsupportedLanguage,
            SymbolError::UnknownSymbol { .. } => ErrorCode::UnknownSymbol,
            SymbolError::AmbiguousSymbol { .. } => ErrorCode::AmbiguousSymbol,
            SymbolError::SourceTooLarge { .. }
            | SymbolError::NestingTooDeep
            | SymbolError::NameTooLong { .. } => ErrorCode::InvalidArgument,
        }
    }
}

/// Index every function, method and type (and Rust/TS module, Rust const
/// and macro) of `source`, sorted by start (an enclosing symbol before the
/// symbols inside it).
///
/// Never fails on malformed source: see the module documentation on syntax
/// errors. The errors are bounds: [`SymbolError::SourceTooLarge`],
/// [`SymbolError::NestingTooDeep`] (declaration scopes nested deeper than
/// [`MAX_NESTING`]) and [`SymbolError::NameTooLong`]. Time and memory are
/// linear in the source's length.
///
/// ```
/// use roundtable_symbols::symbols::{self, Language, SymbolKind};
///
/// let src = b"struct Api;\n\nimpl Api {\n    fn fetch(&self) {}\n}\n";
/// let index = symbols::index(Language::Rust, src)?;
/// let names: Vec<_> = index.iter().map(|s| (s.name.as_str(), s.kind, s.start_line, s.end_line)).collect();
/// assert_eq!(names, [("Api", SymbolKind::Type, 1, 1), ("Api.fetch", SymbolKind::Method, 4, 4)]);
/// # Ok::<(), roundtable_symbols::symbols::SymbolError>(())
/// ```
pub fn index(language: Language, source: &[u8]) -> Result<Vec<Symbol>, SymbolError> {
    check_len(source.len())?;
    walk(language, source)
}

/// Parse `source` with `language`'s grammar and collect its symbols;
/// [`SymbolError::UnsupportedLanguage`] when this build lacks the grammar.
#[cfg(feature = "tree-sitter")]
fn walk(language: Language, source: &[u8]) -> Result<Vec<Symbol>, SymbolError> {
    type Walker = fn(&mut Collector<'_>, Node<'_>);
    let (grammar, walker): (tree_sitter::Language, Walker) = match language {
        #[cfg(feature = "rust")]
        Language::Rust => (tree_sitter_rust::LANGUAGE.into(), rust::index),
        #[cfg(feature = "python")]
        Language::Python => (tree_sitter_python::LANGUAGE.into(), python::index),
        #[cfg(feature = "go")]
        Language::Go => (tree_sitter_go::LANGUAGE.into(), go::index),
        #[cfg(feature = "typescript")]
        Language::TypeScript => (
            tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            ts::index,
        ),
        #[cfg(feature = "typescript")]
        Language::Tsx => (tree_sitter_typescript::LANGUAGE_TSX.into(), ts::index),
        #[cfg(feature = "javascript")]
        Language::JavaScript => (tree_sitter_javascript::LANGUAGE.into(), ts::index),
        #[cfg(feature = "c")]
        Language::C => (tree_sitter_c::LANGUAGE.into(), c::index),
        #[allow(unreachable_patterns)]
        _ => return Err(not_built(language)),
    };
    let tree = parse(&grammar, source);
    let mut out = Collector::new(source);
    walker(&mut out, tree.root_node());
    if let Some(e) = out.error {
        return Err(e);
    }
    let mut symbols = out.symbols;
    symbols.sort_by(|a, b| {
        (a.start_byte, std::cmp::Reverse(a.end_byte))
            .cmp(&(b.start_byte, std::cmp::Reverse(b.end_byte)))
    });
    Ok(symbols)
}

/// Without any grammar there are no symbols to find.
#[cfg(not(feature = "tree-sitter"))]
fn walk(language: Language, _source: &[u8]) -> Result<Vec<Symbol>, SymbolError> {
    Err(not_built(language))
}

/// The refusal for a language whose grammar this build lacks.
#[allow(dead_code)]
fn not_built(language: Language) -> SymbolError {
    SymbolError::UnsupportedLanguage {
        path: format!("({language} source; its grammar is not built in)"),
    }
}

fn check_len(len: usize) -> Result<(), SymbolError> {
    if len > MAX_SOURCE_LEN {
        Err(SymbolError::SourceTooLarge { len })
    } else {
        Ok(())
    }
}

/// [`index`] with the language chosen by [`Language::for_path`];
/// [`SymbolError::UnsupportedLanguage`] when there is none.
pub fn index_path(path: &RepoPath, source: &[u8]) -> Result<Vec<Symbol>, SymbolError> {
    let language = Language::for_path(path).ok_or_else(|| SymbolError::UnsupportedLanguage {
        path: path.to_string(),
    })?;
    index(language, source)
}

/// Resolve `name` (the `NAME` of `symbol:PATH#NAME`) to one symbol of the
/// file at `path` whose current content is `source`.
///
/// [`SymbolError::UnknownSymbol`] when nothing has that name,
/// [`SymbolError::AmbiguousSymbol`] when several do and none is the sole
/// definition (see the module documentation), and
/// [`SymbolError::UnsupportedLanguage`] for a file without a grammar.
///
/// ```
/// use roundtable_symbols::symbols;
/// use roundtable_base::RepoPath;
///
/// let path: RepoPath = "pkg/util.py".parse()?;
/// let src = b"def helper():\n    return 1\n";
/// let sym = symbols::resolve(&path, src, "util.helper")?;
/// assert_eq!((sym.name.as_str(), sym.start_line, sym.end_line), ("helper", 1, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve(path: &RepoPath, source: &[u8], name: &str) -> Result<Symbol, SymbolError> {
    let symbols = index_path(path, source)?;
    resolve_in(path, &symbols, name).cloned()
}

/// [`resolve`] against an index already built for the file at `path` (to
/// resolve many names with one parse).
pub fn resolve_in<'a>(
    path: &RepoPath,
    symbols: &'a [Symbol],
    name: &str,
) -> Result<&'a Symbol, SymbolError> {
    #[cfg_attr(not(feature = "python"), allow(unused_mut))]
    let mut candidates: Vec<&Symbol> = symbols.iter().filter(|s| s.name == name).collect();
    #[cfg(feature = "python")]
    if candidates.is_empty() && Language::for_path(path) == Some(Language::Python) {
        if let Some(rest) = python::strip_module(path, name) {
            candidates = symbols.iter().filter(|s| s.name == rest).collect();
        }
    }
    match candidates.as_slice() {
        [] => {
            let last = name.rsplit('.').next().unwrap_or(name);
            let mut similar: Vec<String> = Vec::new();
            for s in symbols {
                if s.name.rsplit('.').next() == Some(last) && !similar.contains(&s.name) {
                    similar.push(s.name.clone());
                }
            }
            Err(SymbolError::UnknownSymbol {
                path: path.to_string(),
                name: name.to_owned(),
                similar,
            })
        }
        [one] => Ok(one),
        many => {
            let mut defs = many.iter().filter(|s| s.definition);
            match (defs.next(), defs.next()) {
                (Some(def), None) => Ok(def),
                _ => Err(SymbolError::AmbiguousSymbol {
                    path: path.to_string(),
                    name: name.to_owned(),
                    candidates: many.iter().map(|s| (*s).clone()).collect(),
                }),
            }
        }
    }
}

#[cfg(feature = "tree-sitter")]
fn parse(grammar: &tree_sitter::Language, source: &[u8]) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(grammar)
        .expect("every bundled grammar's ABI is supported by the tree-sitter runtime (tested)");
    parser
        .parse(source, None)
        .expect("a parser with a language, no timeout and no cancellation always returns a tree")
}

// ---------------------------------------------------------------------------
// Shared machinery for the per-language walkers.

#[cfg(feature = "tree-sitter")]
/// Accumulates symbols; the walkers call [`Collector::emit`].
struct Collector<'s> {
    source: &'s [u8],
    symbols: Vec<Symbol>,
    /// Scopes entered and not yet left (see [`Collector::enter`]).
    depth: usize,
    /// The first bound exceeded; once set, nothing more is collected.
    error: Option<SymbolError>,
}

#[cfg(feature = "tree-sitter")]
impl<'s> Collector<'s> {
    fn new(source: &'s [u8]) -> Self {
        Collector {
            source,
            symbols: Vec::new(),
            depth: 0,
            error: None,
        }
    }

    /// Enter one more nested scope: `false` (and the error recorded) when
    /// that would exceed [`MAX_NESTING`] or a bound was already exceeded;
    /// on `true`, [`Collector::leave`] must follow.
    fn enter(&mut self) -> bool {
        if self.error.is_some() {
            return false;
        }
        // The file itself is not a nesting level.
        if self.depth > MAX_NESTING {
            self.error = Some(SymbolError::NestingTooDeep);
            return false;
        }
        self.depth += 1;
        true
    }

    /// Leave the scope [`Collector::enter`] entered.
    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// The node's text (lossily decoded).
    fn text(&self, node: Node<'_>) -> String {
        String::from_utf8_lossy(&self.source[node.start_byte()..node.end_byte()]).into_owned()
    }

    /// Record `scope.name` spanning `node` extended upwards over the
    /// attachments `attached` accepts (see [`leading`]).
    fn emit(
        &mut self,
        scope: &[String],
        name: &str,
        kind: SymbolKind,
        node: Node<'_>,
        definition: bool,
        attached: fn(Node<'_>, &[u8]) -> bool,
    ) {
        if name.is_empty() || self.error.is_some() {
            return;
        }
        let len = scope.iter().map(|s| s.len() + 1).sum::<usize>() + name.len();
        if len > MAX_QUALIFIED_NAME {
            self.error = Some(SymbolError::NameTooLong { len });
            return;
        }
        let start = leading(node, self.source, attached);
        let mut qualified = String::with_capacity(len);
        for part in scope {
            qualified.push_str(part);
            qualified.push('.');
        }
        qualified.push_str(name);
        self.symbols.push(Symbol {
            name: qualified,
            kind,
            start_line: first_line(start),
            end_line: last_line(node),
            start_byte: start.start_byte(),
            end_byte: node.end_byte(),
            definition,
        });
    }
}

#[cfg(feature = "tree-sitter")]
/// 1-based line of the node's first byte.
fn first_line(node: Node<'_>) -> u32 {
    u32::try_from(node.start_position().row + 1).unwrap_or(u32::MAX)
}

#[cfg(feature = "tree-sitter")]
/// 1-based inclusive line of the node's last byte (a node that ends with
/// its newline ends on the line that newline terminates).
fn last_line(node: Node<'_>) -> u32 {
    let end = node.end_position();
    let row = if end.column == 0 && end.row > node.start_position().row {
        end.row
    } else {
        end.row + 1
    };
    u32::try_from(row).unwrap_or(u32::MAX)
}

#[cfg(feature = "tree-sitter")]
/// The earliest node of the unbroken run of attachments (comments,
/// attributes, decorators) directly above `node`, or `node` itself.
///
/// A preceding sibling joins the run when `attached` accepts it, no blank
/// line separates it from the run, and — for a comment — it does not share
/// a line with whatever precedes it (a trailing comment).
fn leading<'t>(node: Node<'t>, source: &[u8], attached: fn(Node<'_>, &[u8]) -> bool) -> Node<'t> {
    let mut start = node;
    while let Some(prev) = start.prev_sibling() {
        if !attached(prev, source) || last_line(prev) + 1 < first_line(start) {
            break;
        }
        if is_comment(prev) {
            if let Some(before) = prev.prev_sibling() {
                if last_line(before) >= first_line(prev) {
                    break;
                }
            }
        }
        start = prev;
    }
    start
}

#[cfg(feature = "tree-sitter")]
fn is_comment(node: Node<'_>) -> bool {
    matches!(node.kind(), "comment" | "line_comment" | "block_comment")
}

#[cfg(feature = "tree-sitter")]
/// The node's named children, in order.
fn named_children(node: Node<'_>) -> Vec<Node<'_>> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

#[cfg(any(feature = "typescript", feature = "javascript", feature = "c"))]
/// The node's children (named and anonymous) with field `field`.
fn field_children<'t>(node: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut cursor = node.walk();
    node.children_by_field_name(field, &mut cursor).collect()
}

#[cfg(all(
    test,
    feature = "rust",
    feature = "python",
    feature = "go",
    feature = "typescript",
    feature = "javascript",
    feature = "c"
))]
mod tests;
