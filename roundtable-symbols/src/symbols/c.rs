//! C: functions and prototypes, named structs/unions/enums, typedefs.

use super::{is_comment, named_children, Collector, SymbolKind};
use tree_sitter::Node;

pub(super) fn index(out: &mut Collector<'_>, root: Node<'_>) {
    items(out, root);
}

/// Comments directly above.
fn attached(node: Node<'_>, _source: &[u8]) -> bool {
    is_comment(node)
}

/// The items of `container`, one scope deeper (bounded: see
/// [`Collector::enter`]).
fn items(out: &mut Collector<'_>, container: Node<'_>) {
    if out.enter() {
        items_in(out, container);
        out.leave();
    }
}

fn items_in(out: &mut Collector<'_>, container: Node<'_>) {
    for item in named_children(container) {
        match item.kind() {
            "function_definition" => {
                if let Some(name) = item
                    .child_by_field_name("declarator")
                    .and_then(function_name)
                {
                    let name = out.text(name);
                    out.emit(&[], &name, SymbolKind::Function, item, true, attached);
                }
            }
            "declaration" => {
                if let Some(ty) = item.child_by_field_name("type") {
                    tagged_type(out, ty, ty);
                }
                let declarators = super::field_children(item, "declarator");
                let single = declarators.len() == 1;
                for d in declarators {
                    if let Some(name) = function_name(d) {
                        let name = out.text(name);
                        let span = if single { item } else { d };
                        out.emit(&[], &name, SymbolKind::Function, span, false, attached);
                    }
                }
            }
            "type_definition" => typedef(out, item),
            "struct_specifier" | "union_specifier" | "enum_specifier" => {
                // A bare `struct s { … };` or forward declaration `struct s;`.
                if let Some(name) = item.child_by_field_name("name") {
                    let name = out.text(name);
                    let definition = item.child_by_field_name("body").is_some();
                    out.emit(&[], &name, SymbolKind::Type, item, definition, attached);
                }
            }
            // Every branch of a conditional, and what a syntax error's
            // recovery kept.
            "preproc_if" | "preproc_ifdef" | "preproc_else" | "preproc_elif"
            | "preproc_elifdef" | "ERROR" => items(out, item),
            _ => {}
        }
    }
}

/// A struct/union/enum with a body and a tag, used as a declaration's type
/// (`struct s { … } v;`): the tag is a type spanning the specifier.
fn tagged_type(out: &mut Collector<'_>, ty: Node<'_>, span: Node<'_>) {
    if !matches!(
        ty.kind(),
        "struct_specifier" | "union_specifier" | "enum_specifier"
    ) || ty.child_by_field_name("body").is_none()
    {
        return;
    }
    if let Some(name) = ty.child_by_field_name("name") {
        let name = out.text(name);
        out.emit(&[], &name, SymbolKind::Type, span, true, attached);
    }
}

fn typedef(out: &mut Collector<'_>, item: Node<'_>) {
    let ty = item.child_by_field_name("type");
    let tag = ty
        .filter(|t| {
            matches!(
                t.kind(),
                "struct_specifier" | "union_specifier" | "enum_specifier"
            )
        })
        .and_then(|t| t.child_by_field_name("name"))
        .map(|n| out.text(n));
    let has_body = ty.is_some_and(|t| t.child_by_field_name("body").is_some());
    let names: Vec<String> = super::field_children(item, "declarator")
        .into_iter()
        .filter_map(|d| declared_name(d).map(|(n, _)| out.text(n)))
        .collect();
    if let (Some(ty), Some(tag)) = (ty, &tag) {
        // `typedef struct s { … } s;` is one symbol, the whole typedef.
        if has_body && !names.contains(tag) {
            tagged_type(out, ty, ty);
        }
    }
    for name in &names {
        // `typedef struct s s;` only re-exports the tag: a declaration.
        let definition = has_body || tag.as_ref() != Some(name);
        out.emit(&[], name, SymbolKind::Type, item, definition, attached);
    }
}

/// The declared identifier and the derivation applied to it first (read
/// inside out, as C does): `*f(void)` declares a function `f` returning a
/// pointer, `(*fp)(void)` a pointer `fp` to a function.
fn declared_name(declarator: Node<'_>) -> Option<(Node<'_>, Option<&'static str>)> {
    let mut node = declarator;
    let mut innermost = None;
    loop {
        match node.kind() {
            "identifier" | "type_identifier" => return Some((node, innermost)),
            "pointer_declarator" => innermost = Some("pointer"),
            "function_declarator" => innermost = Some("function"),
            "array_declarator" => innermost = Some("array"),
            "parenthesized_declarator" | "attributed_declarator" => {
                node = named_children(node).into_iter().next()?;
                continue;
            }
            "init_declarator" => {}
            _ => return None,
        }
        node = node.child_by_field_name("declarator")?;
    }
}

/// The name a declarator declares when it declares a function.
fn function_name(declarator: Node<'_>) -> Option<Node<'_>> {
    match declared_name(declarator)? {
        (name, Some("function")) => Some(name),
        _ => None,
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

    const SRC: &str = r#"#include <stdio.h>

/* Adds two numbers. */
int add(int a, int b);

/**
 * Adds, for real.
 */
int add(int a, int b) {
    return a + b;
}

static const char *name(void) { return "x"; }
int (*handler)(int);
void (*on_signal(int sig, void (*fn)(int)))(int);
int lo(void), hi(void);

struct point {
    int x;
    int y;
};
struct opaque;
typedef struct node { struct node *next; } node;
typedef struct list_s { int len; } list_t;
typedef struct point point;
typedef struct { int r, g, b; } rgb;
typedef int (*cmp_fn)(const void *, const void *);
union value { int i; double d; };
enum color { RED, GREEN };
struct point origin = { 0, 0 };

#ifdef DEBUG
static void trace(const char *m) { puts(m); }
#else
static void trace(const char *m) { (void)m; }
#endif
"#;

    #[test]
    fn names_kinds_and_spans() {
        assert_rows(
            Language::C,
            SRC,
            &[
                ("add", Function, 3, 4, false),
                ("add", Function, 6, 11, true),
                ("name", Function, 13, 13, true),
                ("on_signal", Function, 15, 15, false),
                ("lo", Function, 16, 16, false),
                ("hi", Function, 16, 16, false),
                ("point", Type, 18, 21, true),
                ("opaque", Type, 22, 22, false),
                ("node", Type, 23, 23, true),
                ("list_t", Type, 24, 24, true),
                ("list_s", Type, 24, 24, true),
                ("point", Type, 25, 25, false),
                ("rgb", Type, 26, 26, true),
                ("cmp_fn", Type, 27, 27, true),
                ("value", Type, 28, 28, true),
                ("color", Type, 29, 29, true),
                ("trace", Function, 33, 33, true),
                ("trace", Function, 35, 35, true),
            ],
        );
    }

    #[test]
    fn resolution_prefers_the_one_definition() {
        let p = "src/math.c";
        assert_eq!(resolved(p, SRC, "add"), Ok(("add".into(), 6, 11)));
        assert_eq!(resolved(p, SRC, "point"), Ok(("point".into(), 18, 21)));
        assert_eq!(resolved(p, SRC, "node"), Ok(("node".into(), 23, 23)));
        assert_eq!(
            resolved("include/math.h", SRC, "opaque"),
            Ok(("opaque".into(), 22, 22))
        );
        // Both #ifdef branches define it.
        assert_eq!(ambiguous_lines(p, SRC, "trace"), [(33, 33), (35, 35)]);
        // A function pointer variable is not a function.
        assert!(is_unknown(p, SRC, "handler"));
        assert!(is_unknown(p, SRC, "origin"));
    }

    #[test]
    fn a_syntax_error_still_indexes_the_rest() {
        let src = "int ok(void) { return 0; }\nint broken(void) { return 1 +; }\nstruct s { int x };\nint after(void) { return 2; }\n";
        assert_rows(
            Language::C,
            src,
            &[
                ("ok", Function, 1, 1, true),
                ("broken", Function, 2, 2, true),
                ("s", Type, 3, 3, true),
                ("after", Function, 4, 4, true),
            ],
        );
    }
}
