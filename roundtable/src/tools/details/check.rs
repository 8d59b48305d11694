//! A small JSON Schema validator for the subset the details schemas (and
//! the tool schemas they borrow records from) are written in.
//!
//! Assertions: `type`, `enum`, `const`, `properties`, `required`,
//! `additionalProperties`, `items`, `minItems`, `maxItems`, `minLength`,
//! `maxLength`, `minimum`, `maximum`, `pattern`, `$ref` (to `#/$defs/NAME`
//! of the root schema), `anyOf`, `oneOf`, `allOf`, and the boolean schemas
//! `true` and `false`. Annotations (`description`, `title`, `default`,
//! `format`, …) are skipped. Any other keyword is a violation of its own:
//! a schema this validator cannot fully check never passes silently.

use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// Keywords that only describe: they never refuse a value.
const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$defs",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "contentEncoding",
    "contentMediaType",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Where a value does not conform, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// The value's place: `$` for the root, then `.key` and `[index]`
    /// (`$.report.stages[0].status`).
    pub path: String,
    /// What the schema wanted there.
    pub reason: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.path, self.reason)
    }
}

/// Whether `value` conforms to `root` (a schema whose `$ref`s point into
/// its own `$defs`); the first violation found when it does not.
pub(crate) fn validate(root: &Value, value: &Value) -> Result<(), Violation> {
    Checker { root, depth: 0 }.check(root, value, "$")
}

struct Checker<'r> {
    root: &'r Value,
    depth: usize,
}

/// How deep `$ref`s may nest before the schema is taken to be cyclic on
/// this value (the details schemas nest a handful deep).
const MAX_DEPTH: usize = 64;

fn fail(path: &str, reason: impl Into<String>) -> Result<(), Violation> {
    Err(Violation {
        path: path.to_owned(),
        reason: reason.into(),
    })
}

/// JSON Schema's name for the type of `value` (`integer` for a number
/// without a fraction).
fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    let actual = type_name(value);
    actual == name || (name == "number" && actual == "integer")
}

/// `pattern` compiled once per distinct pattern.
fn pattern_matches(pattern: &str, text: &str) -> Result<bool, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, regex::Regex>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(re) = cache.get(pattern) {
        return Ok(re.is_match(text));
    }
    let re = regex::Regex::new(pattern).map_err(|e| format!("pattern {pattern:?}: {e}"))?;
    let matched = re.is_match(text);
    cache.insert(pattern.to_owned(), re);
    Ok(matched)
}

fn number(schema: &Value, keyword: &str, path: &str) -> Result<f64, Violation> {
    schema.as_f64().ok_or_else(|| Violation {
        path: path.to_owned(),
        reason: format!("the schema's {keyword} is not a number"),
    })
}

fn size(schema: &Value, keyword: &str, path: &str) -> Result<usize, Violation> {
    schema
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Violation {
            path: path.to_owned(),
            reason: format!("the schema's {keyword} is not a count"),
        })
}

fn child(path: &str, key: &str) -> String {
    format!("{path}.{key}")
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

impl Checker<'_> {
    fn check(&mut self, schema: &Value, value: &Value, path: &str) -> Result<(), Violation> {
        let keywords = match schema {
            Value::Bool(true) => return Ok(()),
            Value::Bool(false) => return fail(path, "the schema is `false`: no value conforms"),
            Value::Object(keywords) => keywords,
            _ => return fail(path, "the schema is neither an object nor a boolean"),
        };
        for (keyword, arg) in keywords {
            match keyword.as_str() {
                k if ANNOTATIONS.contains(&k) => {}
                "type" => self.check_type(arg, value, path)?,
                "enum" => {
                    let Some(values) = arg.as_array() else {
                        return fail(path, "the schema's enum is not an array");
                    };
                    if !values.contains(value) {
                        return fail(path, format!("{value} is not one of {arg}"));
                    }
                }
                "const" => {
                    if value != arg {
                        return fail(path, format!("{value} is not the constant {arg}"));
                    }
                }
                "properties" => {
                    let Some(props) = arg.as_object() else {
                        return fail(path, "the schema's properties is not an object");
                    };
                    if let Value::Object(fields) = value {
                        for (key, sub) in props {
                            if let Some(v) = fields.get(key) {
                                self.check(sub, v, &child(path, key))?;
                            }
                        }
                    }
                }
                "required" => {
                    let Some(keys) = arg.as_array() else {
                        return fail(path, "the schema's required is not an array");
                    };
                    if let Value::Object(fields) = value {
                        for key in keys {
                            let Some(key) = key.as_str() else {
                                return fail(path, "the schema's required holds a non-string");
                            };
                            if !fields.contains_key(key) {
                                return fail(path, format!("the required key `{key}` is missing"));
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Value::Object(fields) = value {
                        self.check_additional(keywords, arg, fields, path)?;
                    }
                }
                "items" => {
                    if let Value::Array(items) = value {
                        for (i, item) in items.iter().enumerate() {
                            self.check(arg, item, &index(path, i))?;
                        }
                    }
                }
                "minItems" | "maxItems" => {
                    let bound = size(arg, keyword, path)?;
                    if let Value::Array(items) = value {
                        let ok = if keyword == "minItems" {
                            items.len() >= bound
                        } else {
                            items.len() <= bound
                        };
                        if !ok {
                            return fail(
                                path,
                                format!("{} items, but {keyword} is {bound}", items.len()),
                            );
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    let bound = size(arg, keyword, path)?;
                    if let Value::String(s) = value {
                        let n = s.chars().count();
                        let ok = if keyword == "minLength" {
                            n >= bound
                        } else {
                            n <= bound
                        };
                        if !ok {
                            return fail(path, format!("{n} characters, but {keyword} is {bound}"));
                        }
                    }
                }
                "minimum" | "maximum" => {
                    let bound = number(arg, keyword, path)?;
                    if let Some(n) = value.as_f64() {
                        let ok = if keyword == "minimum" {
                            n >= bound
                        } else {
                            n <= bound
                        };
                        if !ok {
                            return fail(path, format!("{value} is outside {keyword} {arg}"));
                        }
                    }
                }
                "pattern" => {
                    let Some(pattern) = arg.as_str() else {
                        return fail(path, "the schema's pattern is not a string");
                    };
                    if let Value::String(s) = value {
                        match pattern_matches(pattern, s) {
                            Ok(true) => {}
                            Ok(false) => {
                                return fail(path, format!("{value} does not match {pattern:?}"))
                            }
                            Err(e) => return fail(path, e),
                        }
                    }
                }
                "$ref" => self.check_ref(arg, value, path)?,
                "anyOf" | "oneOf" | "allOf" => self.check_combination(keyword, arg, value, path)?,
                other => {
                    return fail(
                        path,
                        format!("the schema uses `{other}`, which this validator does not check"),
                    )
                }
            }
        }
        Ok(())
    }

    fn check_type(&self, arg: &Value, value: &Value, path: &str) -> Result<(), Violation> {
        let names: Vec<&str> = match arg {
            Value::String(s) => vec![s.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return fail(path, "the schema's type is neither a string nor an array"),
        };
        if names.iter().any(|n| has_type(value, n)) {
            Ok(())
        } else {
            fail(
                path,
                format!(
                    "expected {}, found {}",
                    names.join(" or "),
                    type_name(value)
                ),
            )
        }
    }

    fn check_additional(
        &mut self,
        keywords: &Map<String, Value>,
        arg: &Value,
        fields: &Map<String, Value>,
        path: &str,
    ) -> Result<(), Violation> {
        let declared = keywords.get("properties").and_then(Value::as_object);
        for (key, v) in fields {
            if declared.is_some_and(|d| d.contains_key(key)) {
                continue;
            }
            if arg == &Value::Bool(false) {
                let known: Vec<&str> = declared
                    .map(|d| d.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                return fail(
                    path,
                    format!(
                        "the key `{key}` is not allowed (the schema's keys: {})",
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                );
            }
            self.check(arg, v, &child(path, key))?;
        }
        Ok(())
    }

    fn check_ref(&mut self, arg: &Value, value: &Value, path: &str) -> Result<(), Violation> {
        let Some(name) = arg.as_str().and_then(|r| r.strip_prefix("#/$defs/")) else {
            return fail(path, format!("the $ref {arg} does not point into #/$defs"));
        };
        let Some(target) = self.root.get("$defs").and_then(|d| d.get(name)) else {
            return fail(path, format!("the $ref {arg} names no $defs entry"));
        };
        if self.depth >= MAX_DEPTH {
            return fail(path, format!("$refs nest deeper than {MAX_DEPTH}"));
        }
        self.depth += 1;
        let out = self.check(target, value, path);
        self.depth -= 1;
        out
    }

    fn check_combination(
        &mut self,
        keyword: &str,
        arg: &Value,
        value: &Value,
        path: &str,
    ) -> Result<(), Violation> {
        let Some(alternatives) = arg.as_array().filter(|a| !a.is_empty()) else {
            return fail(
                path,
                format!("the schema's {keyword} is not a non-empty array"),
            );
        };
        let mut passed = 0;
        let mut first_failure = None;
        for alt in alternatives {
            match self.check(alt, value, path) {
                Ok(()) => passed += 1,
                Err(v) => {
                    if keyword == "allOf" {
                        return Err(v);
                    }
                    first_failure.get_or_insert(v);
                }
            }
        }
        match keyword {
            "anyOf" if passed == 0 => fail(
                path,
                format!(
                    "matches none of the {} anyOf alternatives (the first: {})",
                    alternatives.len(),
                    first_failure.map_or_else(String::new, |v| v.to_string())
                ),
            ),
            "oneOf" if passed != 1 => fail(
                path,
                if passed == 0 {
                    format!(
                        "matches none of the {} oneOf alternatives (the first: {})",
                        alternatives.len(),
                        first_failure.map_or_else(String::new, |v| v.to_string())
                    )
                } else {
                    format!("matches {passed} of the oneOf alternatives, not exactly one")
                },
            ),
            _ => Ok(()),
        }
    }
}

/// Every keyword of `schema` (and of the schemas inside it) this
/// validator does not know, as `path: keyword`; and every `$ref` that
/// names no entry of `root`'s `$defs`.
#[cfg(test)]
pub(crate) fn unsupported(root: &Value) -> Vec<String> {
    fn walk(root: &Value, schema: &Value, path: &str, out: &mut Vec<String>) {
        let Value::Object(keywords) = schema else {
            if !schema.is_boolean() {
                out.push(format!("{path}: not a schema"));
            }
            return;
        };
        for (keyword, arg) in keywords {
            let here = format!("{path}/{keyword}");
            match keyword.as_str() {
                "$defs" | "properties" => {
                    for (name, sub) in arg.as_object().into_iter().flatten() {
                        walk(root, sub, &format!("{here}/{name}"), out);
                    }
                }
                "items" | "additionalProperties" => walk(root, arg, &here, out),
                "anyOf" | "oneOf" | "allOf" => {
                    for (i, sub) in arg.as_array().into_iter().flatten().enumerate() {
                        walk(root, sub, &format!("{here}/{i}"), out);
                    }
                }
                "$ref" => {
                    let name = arg.as_str().and_then(|r| r.strip_prefix("#/$defs/"));
                    if name.and_then(|n| root.get("$defs")?.get(n)).is_none() {
                        out.push(format!("{path}: unresolvable $ref {arg}"));
                    }
                }
                "type" | "enum" | "const" | "required" | "minItems" | "maxItems" | "minLength"
                | "maxLength" | "minimum" | "maximum" | "pattern" => {}
                k if ANNOTATIONS.contains(&k) => {}
                other => out.push(format!("{path}: {other}")),
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, "#", &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(schema: Value, value: Value) {
        if let Err(v) = validate(&schema, &value) {
            panic!("{value} should conform to {schema}: {v}");
        }
    }

    fn bad(schema: Value, value: Value, path: &str, reason_has: &str) {
        match validate(&schema, &value) {
            Ok(()) => panic!("{value} should not conform to {schema}"),
            Err(v) => {
                assert_eq!(v.path, path, "{v}");
                assert!(v.reason.contains(reason_has), "{reason_has:?} in {v}");
            }
        }
    }

    #[test]
    fn types() {
        let s = json!({"type": "integer"});
        ok(s.clone(), json!(3));
        ok(s.clone(), json!(3.0));
        bad(s.clone(), json!(3.5), "$", "expected integer, found number");
        bad(s, json!("3"), "$", "expected integer, found string");
        ok(json!({"type": "number"}), json!(3));
        let s = json!({"type": ["string", "null"]});
        ok(s.clone(), json!(null));
        ok(s.clone(), json!("x"));
        bad(
            s,
            json!(false),
            "$",
            "expected string or null, found boolean",
        );
        bad(json!({"type": "object"}), json!([]), "$", "found array");
        bad(json!({"type": "array"}), json!({}), "$", "found object");
        bad(json!({"type": "boolean"}), json!(null), "$", "found null");
    }

    #[test]
    fn objects_properties_required_and_additional_properties() {
        let s = json!({
            "type": "object",
            "properties": {"id": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["id"],
            "additionalProperties": false
        });
        ok(s.clone(), json!({"id": "a"}));
        ok(s.clone(), json!({"id": "a", "n": 1}));
        bad(
            s.clone(),
            json!({"n": 1}),
            "$",
            "the required key `id` is missing",
        );
        bad(
            s.clone(),
            json!({"id": "a", "extra": 1}),
            "$",
            "`extra` is not allowed",
        );
        bad(s, json!({"id": 7}), "$.id", "expected string");
        // An open object admits other keys; a schema for them checks them.
        let open = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        ok(open, json!({"id": "a", "anything": [1]}));
        let map = json!({"type": "object", "additionalProperties": {"type": "integer"}});
        ok(map.clone(), json!({"a": 1, "b": 2}));
        bad(map, json!({"a": 1, "b": "2"}), "$.b", "expected integer");
    }

    #[test]
    fn arrays_items_and_sizes() {
        let s = json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2});
        ok(s.clone(), json!(["a"]));
        bad(s.clone(), json!([]), "$", "minItems");
        bad(s.clone(), json!(["a", "b", "c"]), "$", "maxItems");
        bad(s, json!(["a", 2]), "$[1]", "expected string");
        let nested = json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "object", "properties": {"k": {"const": 1}}}}}});
        bad(
            nested,
            json!({"xs": [{"k": 1}, {"k": 2}]}),
            "$.xs[1].k",
            "not the constant 1",
        );
    }

    #[test]
    fn enums_consts_bounds_and_patterns() {
        let e = json!({"enum": ["a", "b"]});
        ok(e.clone(), json!("b"));
        bad(e, json!("c"), "$", "is not one of");
        ok(json!({"const": true}), json!(true));
        bad(
            json!({"const": true}),
            json!(false),
            "$",
            "not the constant true",
        );
        let n = json!({"type": "integer", "minimum": 0, "maximum": 10});
        ok(n.clone(), json!(0));
        bad(n.clone(), json!(-1), "$", "minimum");
        bad(n, json!(11), "$", "maximum");
        let s = json!({"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^[a-z]+$"});
        ok(s.clone(), json!("abc"));
        bad(s.clone(), json!("a"), "$", "minLength");
        bad(s.clone(), json!("abcd"), "$", "maxLength");
        bad(s, json!("aB"), "$", "does not match");
    }

    #[test]
    fn refs_resolve_into_the_roots_defs() {
        let s = json!({
            "type": "object",
            "properties": {"who": {"$ref": "#/$defs/Who"}},
            "$defs": {"Who": {"type": "object", "properties": {"kind": {"$ref": "#/$defs/Kind"}}, "required": ["kind"]},
                      "Kind": {"oneOf": [{"const": "agent"}, {"const": "human"}]}}
        });
        ok(s.clone(), json!({"who": {"kind": "agent"}}));
        bad(s.clone(), json!({"who": {}}), "$.who", "`kind` is missing");
        bad(
            s,
            json!({"who": {"kind": "robot"}}),
            "$.who.kind",
            "none of the 2 oneOf",
        );
        let dangling = json!({"$ref": "#/$defs/Nope"});
        bad(dangling, json!(1), "$", "names no $defs entry");
        let outside = json!({"$ref": "https://example.com/s"});
        bad(outside, json!(1), "$", "does not point into #/$defs");
        // A schema that refers to itself through a value that never ends
        // is not possible in JSON; a cycle without progress is cut off.
        let cycle = json!({"$ref": "#/$defs/A", "$defs": {"A": {"$ref": "#/$defs/A"}}});
        bad(cycle, json!(1), "$", "nest deeper");
    }

    #[test]
    fn any_of_one_of_all_of() {
        let any = json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]});
        ok(any.clone(), json!("x"));
        ok(any.clone(), json!(1));
        bad(any, json!(-1), "$", "none of the 2 anyOf");
        let one = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
        bad(one.clone(), json!(1), "$", "matches 2 of the oneOf");
        ok(one, json!(1.5));
        let all = json!({"allOf": [{"type": "integer"}, {"maximum": 3}]});
        ok(all.clone(), json!(2));
        bad(all, json!(4), "$", "maximum");
    }

    #[test]
    fn boolean_schemas_annotations_and_unknown_keywords() {
        ok(json!(true), json!({"any": "thing"}));
        bad(json!(false), json!(null), "$", "`false`");
        ok(
            json!({"description": "d", "title": "t", "format": "uint32", "default": 1}),
            json!("anything"),
        );
        // A keyword the validator cannot check is a violation, not a pass.
        bad(json!({"not": {"type": "string"}}), json!(1), "$", "`not`");
        assert_eq!(
            unsupported(
                &json!({"properties": {"a": {"not": {}}}, "$defs": {"B": {"$ref": "#/$defs/C"}}})
            ),
            [
                "#/$defs/B: unresolvable $ref \"#/$defs/C\"",
                "#/properties/a: not"
            ]
        );
        assert!(unsupported(&json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": true}})).is_empty());
    }
}
