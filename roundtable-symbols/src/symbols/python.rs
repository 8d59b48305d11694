//! Python: functions, classes, methods, nested classes.

use super::{is_comment, named_children, Collector, SymbolKind};
use crate::RepoPath;
use tree_sitter::Node;

pub(super) fn index(out: &mut Collector<'_>, root: Node<'_>) {
    block(out, root, &mut Vec::new(), false);
}

/// Comments directly above (decorators are inside `decorated_definition`).
fn attached(node: Node<'_>, _source: &[u8]) -> bool {
    is_comment(node)
}

/// The statements of `container`, one scope deeper (bounded: see
/// [`Collector::enter`]).
fn block(out: &mut Collector<'_>, container: Node<'_>, path: &mut Vec<String>, in_class: bool) {
    if out.enter() {
        block_in(out, container, path, in_class);
        out.leave();
    }
}

fn block_in(out: &mut Collector<'_>, container: Node<'_>, path: &mut Vec<String>, in_class: bool) {
    for stmt in named_children(container) {
        match stmt.kind() {
            "function_definition" | "class_definition" => {
                definition(out, stmt, stmt, path, in_class, true);
            }
            "decorated_definition" => {
                if let Some(def) = stmt.child_by_field_name("definition") {
                    let overload = named_children(stmt)
                        .into_iter()
                        .filter(|d| d.kind() == "decorator")
                        .any(|d| is_overload(out, d));
                    definition(out, stmt, def, path, in_class, !overload);
                }
            }
            // Conditional definitions count at the enclosing level; a
            // syntax error's recovered statements too.
            "if_statement"
            | "elif_clause"
            | "else_clause"
            | "try_statement"
            | "except_clause"
            | "except_group_clause"
            | "finally_clause"
            | "with_statement"
            | "block"
            | "ERROR" => {
                block(out, stmt, path, in_class);
            }
            _ => {}
        }
    }
}

/// `@overload` or `@typing.overload` (any dotted path ending in `overload`).
fn is_overload(out: &Collector<'_>, decorator: Node<'_>) -> bool {
    let text = out.text(decorator);
    let text = text.trim_start_matches('@').trim();
    text == "overload" || text.ends_with(".overload")
}

/// `outer` spans the symbol (the decorated definition), `def` is the
/// `function_definition` or `class_definition` itself.
fn definition(
    out: &mut Collector<'_>,
    outer: Node<'_>,
    def: Node<'_>,
    path: &mut Vec<String>,
    in_class: bool,
    is_definition: bool,
) {
    let Some(name) = def.child_by_field_name("name").map(|n| out.text(n)) else {
        return;
    };
    match def.kind() {
        "function_definition" => {
            let kind = if in_class {
                SymbolKind::Method
            } else {
                SymbolKind::Function
            };
            out.emit(path, &name, kind, outer, is_definition, attached);
        }
        "class_definition" => {
            out.emit(path, &name, SymbolKind::Type, outer, true, attached);
            if let Some(body) = def.child_by_field_name("body") {
                path.push(name);
                block(out, body, path, true);
                path.pop();
            }
        }
        _ => {}
    }
}

/// `name` without its module qualifier, if it has one: `util.helper` in
/// `pkg/util.py` → `helper`; for `pkg/__init__.py` both `pkg.helper` and
/// `__init__.helper` are accepted.
pub(super) fn strip_module<'n>(path: &RepoPath, name: &'n str) -> Option<&'n str> {
    let mut parts = path.as_str().rsplit('/');
    let file = parts.next()?;
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let mut modules = vec![stem];
    if stem == "__init__" {
        if let Some(package) = parts.next() {
            modules.push(package);
        }
    }
    modules.into_iter().find_map(|m| {
        name.strip_prefix(m)
            .and_then(|rest| rest.strip_prefix('.'))
            .filter(|rest| !rest.is_empty())
    })
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

    const SRC: &str = r#""""Utilities."""
import typing


# Doubles x.
def helper(x):
    return 2 * x


@dataclass
class Outer(Base):
    """An outer class."""

    class Inner:
        def method(self):
            pass

    @property
    def size(self):
        return 1

    @typing.overload
    def get(self, key: int) -> int: ...
    @overload
    def get(self, key: str) -> str: ...
    def get(self, key):
        def local():
            pass
        return key


if typing.TYPE_CHECKING:
    def checked(): ...
else:
    def checked():
        pass

try:
    from fast import speedy
except ImportError:
    def speedy():
        pass


async def main():
    await helper(1)
"#;

    #[test]
    fn names_kinds_and_spans() {
        assert_rows(
            Language::Python,
            SRC,
            &[
                ("helper", Function, 5, 7, true),
                ("Outer", Type, 10, 29, true),
                ("Outer.Inner", Type, 14, 16, true),
                ("Outer.Inner.method", Method, 15, 16, true),
                ("Outer.size", Method, 18, 20, true),
                ("Outer.get", Method, 22, 23, false),
                ("Outer.get", Method, 24, 25, false),
                ("Outer.get", Method, 26, 29, true),
                ("checked", Function, 33, 33, true),
                ("checked", Function, 35, 36, true),
                ("speedy", Function, 41, 42, true),
                ("main", Function, 45, 46, true),
            ],
        );
    }

    #[test]
    fn resolves_plain_and_module_qualified_names() {
        let p = "pkg/util.py";
        assert_eq!(resolved(p, SRC, "helper"), Ok(("helper".into(), 5, 7)));
        assert_eq!(resolved(p, SRC, "util.helper"), Ok(("helper".into(), 5, 7)));
        assert_eq!(
            resolved(p, SRC, "util.Outer.Inner.method"),
            Ok(("Outer.Inner.method".into(), 15, 16))
        );
        assert_eq!(
            resolved("pkg/__init__.py", SRC, "pkg.helper"),
            Ok(("helper".into(), 5, 7))
        );
        assert_eq!(
            resolved("pkg/__init__.py", SRC, "__init__.helper"),
            Ok(("helper".into(), 5, 7))
        );
        // Overloads are declarations: the implementation is the one definition.
        assert_eq!(
            resolved(p, SRC, "Outer.get"),
            Ok(("Outer.get".into(), 26, 29))
        );
        // Another module's name, a nested function, a bare method name: unknown.
        assert!(is_unknown(p, SRC, "other.helper"));
        assert!(is_unknown(p, SRC, "util"));
        assert!(is_unknown(p, SRC, "Outer.get.local"));
        assert!(is_unknown(p, SRC, "method"));
    }

    #[test]
    fn conditional_definitions_are_ambiguous() {
        assert_eq!(
            ambiguous_lines("pkg/util.py", SRC, "checked"),
            [(33, 33), (35, 36)]
        );
        assert_eq!(
            ambiguous_lines("pkg/util.py", SRC, "util.checked"),
            [(33, 33), (35, 36)]
        );
    }

    #[test]
    fn an_exact_name_wins_over_the_module_spelling() {
        let src = "class util:\n    def helper(self):\n        pass\n\ndef helper():\n    pass\n";
        assert_eq!(
            resolved("util.py", src, "util.helper"),
            Ok(("util.helper".into(), 2, 3))
        );
        assert_eq!(
            resolved("util.py", src, "helper"),
            Ok(("helper".into(), 5, 6))
        );
    }

    #[test]
    fn a_syntax_error_still_indexes_the_rest() {
        let src = "def ok():\n    pass\n\ndef broken(:\n    pass\n\nclass After:\n    def m(self):\n        pass\n";
        assert_rows(
            Language::Python,
            src,
            &[
                ("ok", Function, 1, 2, true),
                ("broken", Function, 4, 5, true),
                ("After", Type, 7, 9, true),
                ("After.m", Method, 8, 9, true),
            ],
        );
    }
}
