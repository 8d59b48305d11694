//! TypeScript, TSX and JavaScript: functions, const-bound function
//! expressions, classes and their members, interfaces, type aliases, enums,
//! namespaces.

use super::{field_children, is_comment, named_children, Collector, SymbolKind};
use tree_sitter::Node;

pub(super) fn index(out: &mut Collector<'_>, root: Node<'_>) {
    statements(out, root, &mut Vec::new());
}

/// Decorators and comments directly above.
fn attached(node: Node<'_>, _source: &[u8]) -> bool {
    node.kind() == "decorator" || is_comment(node)
}

fn statements(out: &mut Collector<'_>, container: Node<'_>, path: &mut Vec<String>) {
    for stmt in named_children(container) {
        statement(out, stmt, stmt, path);
    }
}

/// Index the declaration `decl`; `outer` is the node the span covers (the
/// `export`/`declare` wrapper when there is one).
/// Each declaration is one scope deeper (bounded: see [`Collector::enter`]).
fn statement(out: &mut Collector<'_>, decl: Node<'_>, outer: Node<'_>, path: &mut Vec<String>) {
    if out.enter() {
        statement_in(out, decl, outer, path);
        out.leave();
    }
}

fn statement_in(out: &mut Collector<'_>, decl: Node<'_>, outer: Node<'_>, path: &mut Vec<String>) {
    let name = |out: &Collector<'_>| {
        decl.child_by_field_name("name")
            .map(|n| out.text(n))
            .unwrap_or_default()
    };
    match decl.kind() {
        "export_statement" => {
            if let Some(inner) = decl.child_by_field_name("declaration") {
                statement(out, inner, outer, path);
            }
        }
        "ambient_declaration" => {
            for inner in named_children(decl) {
                statement(out, inner, outer, path);
            }
        }
        "expression_statement" => {
            // `namespace N { … }` parses as an expression statement.
            for inner in named_children(decl) {
                if inner.kind() == "internal_module" {
                    statement(out, inner, outer, path);
                }
            }
        }
        "function_declaration" | "generator_function_declaration" => {
            let n = name(out);
            out.emit(path, &n, SymbolKind::Function, outer, true, attached);
        }
        "function_signature" => {
            let n = name(out);
            out.emit(path, &n, SymbolKind::Function, outer, false, attached);
        }
        "class_declaration" | "abstract_class_declaration" => {
            let n = name(out);
            class(out, decl, outer, n, path);
        }
        "interface_declaration" => {
            let n = name(out);
            out.emit(path, &n, SymbolKind::Type, outer, true, attached);
            if let (false, Some(body)) = (n.is_empty(), decl.child_by_field_name("body")) {
                path.push(n);
                for member in named_children(body) {
                    if member.kind() == "method_signature" {
                        let m = member_name(out, member);
                        out.emit(path, &m, SymbolKind::Method, member, false, attached);
                    }
                }
                path.pop();
            }
        }
        "type_alias_declaration" | "enum_declaration" => {
            let n = name(out);
            out.emit(path, &n, SymbolKind::Type, outer, true, attached);
        }
        "internal_module" | "module" => {
            let Some(name_node) = decl.child_by_field_name("name") else {
                return;
            };
            // `declare module "pkg" { … }` names a package, not a scope.
            if name_node.kind() == "string" {
                return;
            }
            let n = out.text(name_node);
            out.emit(path, &n, SymbolKind::Module, outer, true, attached);
            if let Some(body) = decl.child_by_field_name("body") {
                path.push(n);
                statements(out, body, path);
                path.pop();
            }
        }
        "lexical_declaration" | "variable_declaration" => {
            let declarators: Vec<Node<'_>> = named_children(decl)
                .into_iter()
                .filter(|d| d.kind() == "variable_declarator")
                .collect();
            let single = declarators.len() == 1;
            for d in declarators {
                // `const f = () => …;` spans the whole statement; in
                // `const f = …, g = …;` each declarator spans itself.
                let span = if single { outer } else { d };
                declarator(out, d, span, path);
            }
        }
        "ERROR" => statements(out, decl, path),
        _ => {}
    }
}

fn declarator(out: &mut Collector<'_>, d: Node<'_>, span: Node<'_>, path: &mut Vec<String>) {
    let (Some(name), Some(value)) = (
        d.child_by_field_name("name"),
        d.child_by_field_name("value"),
    ) else {
        return;
    };
    if name.kind() != "identifier" {
        return;
    }
    let n = out.text(name);
    match value.kind() {
        "arrow_function" | "function_expression" | "function" | "generator_function" => {
            out.emit(path, &n, SymbolKind::Function, span, true, attached);
        }
        "class" => class(out, value, span, n, path),
        _ => {}
    }
}

/// A class (declaration or expression) named `n`, spanning `outer`, and its
/// members.
fn class(
    out: &mut Collector<'_>,
    decl: Node<'_>,
    outer: Node<'_>,
    n: String,
    path: &mut Vec<String>,
) {
    out.emit(path, &n, SymbolKind::Type, outer, true, attached);
    let Some(body) = decl.child_by_field_name("body") else {
        return;
    };
    if n.is_empty() {
        return;
    }
    path.push(n);
    for member in named_children(body) {
        match member.kind() {
            "method_definition" => {
                let m = member_name(out, member);
                out.emit(path, &m, SymbolKind::Method, member, true, attached);
            }
            "method_signature" | "abstract_method_signature" => {
                let m = member_name(out, member);
                out.emit(path, &m, SymbolKind::Method, member, false, attached);
            }
            "public_field_definition" | "field_definition" => {
                let is_fn = field_children(member, "value").into_iter().any(|v| {
                    matches!(
                        v.kind(),
                        "arrow_function" | "function_expression" | "function"
                    )
                });
                if is_fn {
                    let m = member_name(out, member);
                    out.emit(path, &m, SymbolKind::Method, member, true, attached);
                }
            }
            _ => {}
        }
    }
    path.pop();
}

/// A member's name: identifiers as written (`#private` included), string
/// keys without their quotes, computed keys by their text (`[Symbol.iterator]`).
fn member_name(out: &Collector<'_>, member: Node<'_>) -> String {
    let Some(name) = member
        .child_by_field_name("name")
        .or_else(|| member.child_by_field_name("property"))
    else {
        return String::new();
    };
    let text = out.text(name);
    if name.kind() == "string" {
        if let Some(inner) = text.get(1..text.len().saturating_sub(1)) {
            return inner.to_owned();
        }
    }
    text
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

    const TS: &str = r#"import { get } from "./http";

/** A client. */
@injectable()
export class Api<T> extends Base {
  private retries = 3;

  constructor(private readonly base: string) {
    super();
  }

  /** Fetches. */
  @memo
  async fetch(url: string): Promise<T> {
    return get(this.base + url);
  }

  get size(): number { return 1; }
  set size(v: number) {}

  onClick = (e: Event) => {};

  parse(a: string): T;
  parse(a: number): T;
  parse(a: unknown): T {
    return a as T;
  }
}

export function load(a: string): void;
export function load(a: number): void;
export function load(a: unknown) {}

export const retry = async <T>(f: () => Promise<T>) => f();
const double = function (x: number) { return 2 * x; }, limit = 10;
let notAFunction = 3;

export interface Shape {
  area(): number;
  name: string;
}
export type Id = string | number;
export enum Color { Red, Green }

namespace Geometry {
  export function dist(): number { return 0; }
}
declare function ambient(x: number): void;
export default class Main {}
abstract class Job { abstract run(): void; }
function* ids() { yield 1; }
"#;

    #[test]
    fn typescript_names_kinds_and_spans() {
        assert_rows(
            Language::TypeScript,
            TS,
            &[
                ("Api", Type, 3, 28, true),
                ("Api.constructor", Method, 8, 10, true),
                ("Api.fetch", Method, 12, 16, true),
                ("Api.size", Method, 18, 18, true),
                ("Api.size", Method, 19, 19, true),
                ("Api.onClick", Method, 21, 21, true),
                ("Api.parse", Method, 23, 23, false),
                ("Api.parse", Method, 24, 24, false),
                ("Api.parse", Method, 25, 27, true),
                ("load", Function, 30, 30, false),
                ("load", Function, 31, 31, false),
                ("load", Function, 32, 32, true),
                ("retry", Function, 34, 34, true),
                ("double", Function, 35, 35, true),
                ("Shape", Type, 38, 41, true),
                ("Shape.area", Method, 39, 39, false),
                ("Id", Type, 42, 42, true),
                ("Color", Type, 43, 43, true),
                ("Geometry", Module, 45, 47, true),
                ("Geometry.dist", Function, 46, 46, true),
                ("ambient", Function, 48, 48, false),
                ("Main", Type, 49, 49, true),
                ("Job", Type, 50, 50, true),
                ("Job.run", Method, 50, 50, false),
                ("ids", Function, 51, 51, true),
            ],
        );
    }

    #[test]
    fn typescript_resolution() {
        let p = "web/api.ts";
        assert_eq!(
            resolved(p, TS, "Api.fetch"),
            Ok(("Api.fetch".into(), 12, 16))
        );
        // Overload signatures are declarations; the implementation wins.
        assert_eq!(
            resolved(p, TS, "Api.parse"),
            Ok(("Api.parse".into(), 25, 27))
        );
        assert_eq!(resolved(p, TS, "load"), Ok(("load".into(), 32, 32)));
        assert_eq!(
            resolved(p, TS, "Geometry.dist"),
            Ok(("Geometry.dist".into(), 46, 46))
        );
        // A getter and a setter are two definitions of one name.
        assert_eq!(ambiguous_lines(p, TS, "Api.size"), [(18, 18), (19, 19)]);
        assert!(is_unknown(p, TS, "notAFunction"));
        assert!(is_unknown(p, TS, "limit"));
        assert!(is_unknown(p, TS, "fetch"));
    }

    #[test]
    fn the_span_of_a_decorated_method_starts_at_its_doc_comment() {
        let path: crate::RepoPath = "web/api.ts".parse().expect("valid");
        let sym = crate::symbols::resolve(&path, TS.as_bytes(), "Api.fetch").expect("resolves");
        assert!(TS[sym.start_byte..sym.end_byte]
            .starts_with("/** Fetches. */\n  @memo\n  async fetch("));
        assert!(TS[sym.start_byte..sym.end_byte].ends_with("url);\n  }"));
    }

    #[test]
    fn tsx_components() {
        let src = "export const Button = (props: Props) => <button>{props.label}</button>;\n\nexport function App() {\n  return <Button label=\"x\" />;\n}\n";
        assert_rows(
            Language::Tsx,
            src,
            &[
                ("Button", Function, 1, 1, true),
                ("App", Function, 3, 5, true),
            ],
        );
        assert_eq!(
            resolved("web/App.tsx", src, "App"),
            Ok(("App".into(), 3, 5))
        );
    }

    const JS: &str = r#"'use strict';

// Counts things.
class Counter {
  #count = 0;

  increment() {
    this.#count++;
  }

  static create() { return new Counter(); }

  reset = () => { this.#count = 0; };
}

function helper() {}
const arrow = () => 1;
var legacy = function named() {};
const Widget = class {
  render() {}
};
module.exports = { Counter };
"#;

    #[test]
    fn javascript_names_kinds_and_spans() {
        assert_rows(
            Language::JavaScript,
            JS,
            &[
                ("Counter", Type, 3, 14, true),
                ("Counter.increment", Method, 7, 9, true),
                ("Counter.create", Method, 11, 11, true),
                ("Counter.reset", Method, 13, 13, true),
                ("helper", Function, 16, 16, true),
                ("arrow", Function, 17, 17, true),
                ("legacy", Function, 18, 18, true),
                ("Widget", Type, 19, 21, true),
                ("Widget.render", Method, 20, 20, true),
            ],
        );
        assert_eq!(
            resolved("lib/counter.js", JS, "Counter.increment"),
            Ok(("Counter.increment".into(), 7, 9))
        );
        assert_eq!(
            resolved("lib/counter.mjs", JS, "arrow"),
            Ok(("arrow".into(), 17, 17))
        );
        assert!(is_unknown("lib/counter.js", JS, "named"));
    }

    #[test]
    fn jsx_in_a_js_file() {
        let src = "function App() {\n  return <div className=\"x\">hi</div>;\n}\n";
        assert_rows(Language::JavaScript, src, &[("App", Function, 1, 3, true)]);
        assert_eq!(
            resolved("web/App.jsx", src, "App"),
            Ok(("App".into(), 1, 3))
        );
    }

    #[test]
    fn a_syntax_error_still_indexes_the_rest() {
        let src = "function ok() {}\nclass C {\n  m() { if ( }\n}\nfunction after() {}\n";
        let rows = [
            ("ok", Function, 1, 1, true),
            ("C", Type, 2, 4, true),
            ("C.m", Method, 3, 3, true),
            ("after", Function, 5, 5, true),
        ];
        assert_rows(Language::JavaScript, src, &rows);
        assert_rows(Language::TypeScript, src, &rows);
    }
}
