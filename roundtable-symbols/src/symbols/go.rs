//! Go: functions, methods with receivers, type specs, interface methods.

use super::{is_comment, named_children, Collector, SymbolKind};
use tree_sitter::Node;

pub(super) fn index(out: &mut Collector<'_>, root: Node<'_>) {
    decls(out, root);
}

/// Doc comments: any comment directly above.
fn attached(node: Node<'_>, _source: &[u8]) -> bool {
    is_comment(node)
}

/// The declarations of `container`, one scope deeper (bounded: see
/// [`Collector::enter`]).
fn decls(out: &mut Collector<'_>, container: Node<'_>) {
    if out.enter() {
        decls_in(out, container);
        out.leave();
    }
}

fn decls_in(out: &mut Collector<'_>, container: Node<'_>) {
    for decl in named_children(container) {
        match decl.kind() {
            "function_declaration" => {
                if let Some(name) = decl.child_by_field_name("name") {
                    let name = out.text(name);
                    let definition = decl.child_by_field_name("body").is_some();
                    out.emit(&[], &name, SymbolKind::Function, decl, definition, attached);
                }
            }
            "method_declaration" => {
                let receiver = decl
                    .child_by_field_name("receiver")
                    .and_then(first_type_identifier)
                    .map(|t| out.text(t));
                if let (Some(receiver), Some(name)) = (receiver, decl.child_by_field_name("name")) {
                    let name = out.text(name);
                    let definition = decl.child_by_field_name("body").is_some();
                    out.emit(
                        &[receiver],
                        &name,
                        SymbolKind::Method,
                        decl,
                        definition,
                        attached,
                    );
                }
            }
            "type_declaration" => {
                let specs: Vec<Node<'_>> = named_children(decl)
                    .into_iter()
                    .filter(|s| matches!(s.kind(), "type_spec" | "type_alias"))
                    .collect();
                let single = specs.len() == 1;
                for spec in specs {
                    // `type T …` spans the whole declaration; inside
                    // `type ( … )` each spec spans itself.
                    let outer = if single { decl } else { spec };
                    type_spec(out, spec, outer);
                }
            }
            "ERROR" => decls(out, decl),
            _ => {}
        }
    }
}

fn type_spec(out: &mut Collector<'_>, spec: Node<'_>, outer: Node<'_>) {
    let Some(name) = spec.child_by_field_name("name").map(|n| out.text(n)) else {
        return;
    };
    out.emit(&[], &name, SymbolKind::Type, outer, true, attached);
    let Some(ty) = spec.child_by_field_name("type") else {
        return;
    };
    if ty.kind() == "interface_type" {
        let scope = [name];
        for elem in named_children(ty) {
            if elem.kind() == "method_elem" {
                if let Some(m) = elem.child_by_field_name("name") {
                    let m = out.text(m);
                    out.emit(&scope, &m, SymbolKind::Method, elem, false, attached);
                }
            }
        }
    }
}

/// The receiver's type name: the first type identifier in the receiver
/// list (`(s *Stack[T])` → `Stack`).
fn first_type_identifier(node: Node<'_>) -> Option<Node<'_>> {
    // Depth first, in order, with an explicit stack: `(s ****…T)` may be
    // nested arbitrarily deep. The receiver's own name (`s`) is an
    // identifier, skipped; type parameters come after the type's name, so
    // the first hit wins.
    let mut stack = vec![node];
    while let Some(node) = stack.pop() {
        if node.kind() == "type_identifier" {
            return Some(node);
        }
        let mut children = named_children(node);
        children.reverse();
        stack.extend(children);
    }
    None
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
    use crate::symbols::tests::{assert_rows, is_unknown, resolved};
    use crate::symbols::{Language, SymbolKind::*};

    const SRC: &str = r#"// Package stack is a stack.
package stack

import "fmt"

// Stack holds items.
// It is generic.
type Stack[T any] struct {
	items []T
}

// Push adds v.
func (s *Stack[T]) Push(v T) {
	s.items = append(s.items, v)
}

func (s Stack[T]) Len() int { return len(s.items) }

type (
	// ID is an id.
	ID int
	Name = string
)

type Shape interface {
	Area() float64
	fmt.Stringer
}

func New[T any]() *Stack[T] {
	return &Stack[T]{}
}

func add(x, y int) int

var counter = 0
"#;

    #[test]
    fn names_kinds_and_spans() {
        assert_rows(
            Language::Go,
            SRC,
            &[
                ("Stack", Type, 6, 10, true),
                ("Stack.Push", Method, 12, 15, true),
                ("Stack.Len", Method, 17, 17, true),
                ("ID", Type, 20, 21, true),
                ("Name", Type, 22, 22, true),
                ("Shape", Type, 25, 28, true),
                ("Shape.Area", Method, 26, 26, false),
                ("New", Function, 30, 32, true),
                ("add", Function, 34, 34, false),
            ],
        );
    }

    #[test]
    fn resolves_pointer_and_value_receivers_alike() {
        let p = "stack/stack.go";
        assert_eq!(
            resolved(p, SRC, "Stack.Push"),
            Ok(("Stack.Push".into(), 12, 15))
        );
        assert_eq!(
            resolved(p, SRC, "Stack.Len"),
            Ok(("Stack.Len".into(), 17, 17))
        );
        assert_eq!(resolved(p, SRC, "New"), Ok(("New".into(), 30, 32)));
        assert!(is_unknown(p, SRC, "Push"));
        assert!(is_unknown(p, SRC, "counter"));
        assert!(is_unknown(p, SRC, "stack.New"));
    }

    #[test]
    fn a_method_defined_twice_is_ambiguous() {
        let src = "package p\n\ntype T struct{}\n\nfunc (t T) M() {}\n\nfunc (t *T) M() {}\n";
        assert_eq!(
            crate::symbols::tests::ambiguous_lines("p/t.go", src, "T.M"),
            [(5, 5), (7, 7)]
        );
    }

    #[test]
    fn a_syntax_error_still_indexes_the_rest() {
        let src = "package p\n\nfunc ok() {}\n\nfunc broken( {\n}\n\ntype After struct{}\nfunc (a After) M() {}\n";
        assert_rows(
            Language::Go,
            src,
            &[
                ("ok", Function, 3, 3, true),
                ("broken", Function, 5, 6, true),
                ("After", Type, 8, 8, true),
                ("After.M", Method, 9, 9, true),
            ],
        );
    }
}
