//! Rust: free functions, impl/trait methods, types, modules, consts, macros.

use super::{is_comment, named_children, Collector, SymbolKind};
use tree_sitter::Node;

/// Where an item sits: it decides whether a function is a method.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Module,
    Impl,
    Trait,
    Extern,
}

pub(super) fn index(out: &mut Collector<'_>, root: Node<'_>) {
    items(out, root, &mut Vec::new(), Scope::Module);
}

/// Attributes and comments, except inner ones (`#![…]`, `//!`, `/*!`),
/// which belong to the enclosing module.
fn attached(node: Node<'_>, source: &[u8]) -> bool {
    if node.kind() == "attribute_item" {
        return true;
    }
    if is_comment(node) {
        let text = &source[node.start_byte()..node.end_byte()];
        return !(text.starts_with(b"//!") || text.starts_with(b"/*!"));
    }
    false
}

/// The items of `container`, one scope deeper (bounded: see
/// [`Collector::enter`]).
fn items(out: &mut Collector<'_>, container: Node<'_>, path: &mut Vec<String>, scope: Scope) {
    if out.enter() {
        items_in(out, container, path, scope);
        out.leave();
    }
}

fn items_in(out: &mut Collector<'_>, container: Node<'_>, path: &mut Vec<String>, scope: Scope) {
    for item in named_children(container) {
        let name = |out: &Collector<'_>| {
            item.child_by_field_name("name")
                .map(|n| out.text(n))
                .unwrap_or_default()
        };
        let method_or_fn = if matches!(scope, Scope::Impl | Scope::Trait) {
            SymbolKind::Method
        } else {
            SymbolKind::Function
        };
        match item.kind() {
            "function_item" => {
                let n = name(out);
                let definition = item.child_by_field_name("body").is_some();
                out.emit(path, &n, method_or_fn, item, definition, attached);
            }
            "function_signature_item" => {
                let n = name(out);
                out.emit(path, &n, method_or_fn, item, false, attached);
            }
            "struct_item" | "enum_item" | "union_item" | "type_item" => {
                let n = name(out);
                out.emit(path, &n, SymbolKind::Type, item, true, attached);
            }
            "associated_type" => {
                let n = name(out);
                out.emit(path, &n, SymbolKind::Type, item, false, attached);
            }
            "const_item" | "static_item" => {
                let n = name(out);
                let definition = item.child_by_field_name("value").is_some();
                out.emit(path, &n, SymbolKind::Const, item, definition, attached);
            }
            "macro_definition" => {
                let n = name(out);
                out.emit(path, &n, SymbolKind::Macro, item, true, attached);
            }
            "trait_item" => {
                let n = name(out);
                out.emit(path, &n, SymbolKind::Type, item, true, attached);
                if let Some(body) = item.child_by_field_name("body") {
                    path.push(n);
                    items(out, body, path, Scope::Trait);
                    path.pop();
                }
            }
            "impl_item" => {
                let ty = item
                    .child_by_field_name("type")
                    .map(|t| type_name(out, t))
                    .unwrap_or_default();
                if let (false, Some(body)) = (ty.is_empty(), item.child_by_field_name("body")) {
                    path.push(ty);
                    items(out, body, path, Scope::Impl);
                    path.pop();
                }
            }
            "mod_item" => {
                if let Some(body) = item.child_by_field_name("body") {
                    let n = name(out);
                    out.emit(path, &n, SymbolKind::Module, item, true, attached);
                    path.push(n);
                    items(out, body, path, Scope::Module);
                    path.pop();
                }
            }
            "foreign_mod_item" => {
                if let Some(body) = item.child_by_field_name("body") {
                    items(out, body, path, Scope::Extern);
                }
            }
            // Recovered items inside a syntax error sit in the same scope.
            "ERROR" => items(out, item, path, scope),
            _ => {}
        }
    }
}

/// The implementing type's name: the last path segment, generic arguments,
/// references and pointers stripped (`&'a mut a::B<T>` → `B`); other types
/// (tuples, slices) by their text without whitespace.
fn type_name(out: &Collector<'_>, ty: Node<'_>) -> String {
    // A loop, not recursion: `&&&…T` may be nested arbitrarily deep.
    let mut ty = ty;
    loop {
        match ty.kind() {
            "generic_type" | "reference_type" | "pointer_type" => {
                match ty.child_by_field_name("type") {
                    Some(inner) => ty = inner,
                    None => return String::new(),
                }
            }
            "scoped_type_identifier" => {
                return ty
                    .child_by_field_name("name")
                    .map(|t| out.text(t))
                    .unwrap_or_default()
            }
            _ => {
                // Other types by their text without whitespace, bounded
                // like any qualified name.
                let end = ty
                    .end_byte()
                    .min(ty.start_byte() + super::MAX_QUALIFIED_NAME + 1);
                let text = String::from_utf8_lossy(&out.source[ty.start_byte()..end]);
                return text.split_whitespace().collect();
            }
        }
    }
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
mod tests {
    use crate::symbols::tests::{ambiguous_lines, assert_rows, is_unknown, resolved};
    use crate::symbols::{Language, SymbolKind::*};

    const SRC: &str = r#"//! Crate docs belong to the module, not to the first item.
use std::fmt;

/// A client.
#[derive(Debug)]
pub struct Api<T> {
    base: T,
}

// Inherent methods.
impl<T> Api<T> {
    /// Makes one.
    #[must_use]
    pub fn new(base: T) -> Self {
        Api { base }
    }

    const RETRIES: u32 = 3;

    pub(crate) async fn fetch(&self) {}
}

impl<T: fmt::Debug> fmt::Display for crate::Api<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.base)
    }
}

impl<'a> Drop for &'a mut Api<u8> {
    fn drop(&mut self) {}
}

fn free() {} // trailing comment: not attached to `next`
fn next() {}

pub trait Source {
    type Item;
    fn get(&self) -> Self::Item;
    fn name(&self) -> &str {
        "source"
    }
}

#[cfg(all(test, feature = "rust", feature = "python", feature = "go", feature = "typescript", feature = "javascript", feature = "c"))]
mod tests {
    use super::*;

    #[test]
    fn it_works() {}
}

mod elsewhere;

macro_rules! square {
    ($x:expr) => {
        $x * $x
    };
}

static GREETING: &str = "hi";
pub enum Mode { A, B }
union Bits { i: u32, f: f32 }
type Pair = (u8, u8);
extern "C" {
    fn abs(x: i32) -> i32;
}
"#;

    #[test]
    fn names_kinds_and_spans() {
        assert_rows(
            Language::Rust,
            SRC,
            &[
                ("Api", Type, 4, 8, true),
                ("Api.new", Method, 12, 16, true),
                ("Api.RETRIES", Const, 18, 18, true),
                ("Api.fetch", Method, 20, 20, true),
                ("Api.fmt", Method, 24, 26, true),
                ("Api.drop", Method, 30, 30, true),
                ("free", Function, 33, 33, true),
                ("next", Function, 34, 34, true),
                ("Source", Type, 36, 42, true),
                ("Source.Item", Type, 37, 37, false),
                ("Source.get", Method, 38, 38, false),
                ("Source.name", Method, 39, 41, true),
                ("tests", Module, 44, 50, true),
                ("tests.it_works", Function, 48, 49, true),
                ("square", Macro, 54, 58, true),
                ("GREETING", Const, 60, 60, true),
                ("Mode", Type, 61, 61, true),
                ("Bits", Type, 62, 62, true),
                ("Pair", Type, 63, 63, true),
                ("abs", Function, 65, 65, false),
            ],
        );
    }

    #[test]
    fn resolves_methods_by_type_and_modules_by_path() {
        assert_eq!(
            resolved("src/api.rs", SRC, "Api.fetch"),
            Ok(("Api.fetch".into(), 20, 20))
        );
        assert_eq!(
            resolved("src/api.rs", SRC, "tests.it_works"),
            Ok(("tests.it_works".into(), 48, 49))
        );
        assert_eq!(resolved("src/api.rs", SRC, "Api"), Ok(("Api".into(), 4, 8)));
        // Methods are qualified by their type only, never by the trait.
        assert!(is_unknown("src/api.rs", SRC, "Display.fmt"));
        assert!(is_unknown("src/api.rs", SRC, "fetch"));
        assert!(is_unknown("src/api.rs", SRC, "elsewhere"));
    }

    #[test]
    fn nested_modules_qualify_everything_inside() {
        let src = "mod a {\n    fn f() {}\n    mod b {\n        pub struct S;\n        impl S {\n            fn m() {}\n        }\n    }\n}\n";
        assert_rows(
            Language::Rust,
            src,
            &[
                ("a", Module, 1, 9, true),
                ("a.f", Function, 2, 2, true),
                ("a.b", Module, 3, 8, true),
                ("a.b.S", Type, 4, 4, true),
                ("a.b.S.m", Method, 6, 6, true),
            ],
        );
    }

    #[test]
    fn impl_blocks_of_different_generic_arguments_are_ambiguous() {
        let src = "struct W<T>(T);\nimpl W<u8> {\n    fn new() -> Self { W(0) }\n}\nimpl W<u16> {\n    fn new() -> Self { W(0) }\n}\n";
        assert_eq!(ambiguous_lines("src/w.rs", src, "W.new"), [(3, 3), (6, 6)]);
    }

    #[test]
    fn a_syntax_error_still_indexes_the_rest() {
        let src = "fn ok() {}\n\nfn broken( {\n    let x = ;\n}\n\nstruct After;\nimpl After { fn m(&self) {} }\n";
        assert_rows(
            Language::Rust,
            src,
            &[
                ("ok", Function, 1, 1, true),
                ("broken", Function, 3, 5, true),
                ("After", Type, 7, 7, true),
                ("After.m", Method, 8, 8, true),
            ],
        );
        assert_eq!(
            resolved("src/e.rs", src, "After.m"),
            Ok(("After.m".into(), 8, 8))
        );
    }
}
