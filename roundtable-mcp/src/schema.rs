//! The MCP view of a registry schema: what every client can read.
//!
//! The registry's schemas (derived by schemars from the request and result
//! types, and the contract `roundtable tools`, the Python and Go bindings
//! are generated from) stay as they are. MCP clients get a rewritten copy
//! that means the same but uses only what every client handles, and that is
//! lean enough for a model's context:
//!
//! - no `format` outside JSON Schema's own vocabulary: schemars' `uint32`,
//!   `int64`, `double`... make the TypeScript SDK (ajv) warn once per use;
//!   an integer format becomes the `minimum`/`maximum` it stands for;
//! - no `type` arrays: `{"type": ["string", "null"], ...}` becomes
//!   `{"anyOf": [{"type": "string", ...}, {"type": "null"}]}`, which
//!   single-`type` dialects (Gemini's function declarations) accept;
//! - no schema that accepts anything without saying so (a bare `true`, or
//!   `{}` for a free JSON value): it becomes an explicit `anyOf` over the six
//!   JSON types, the same set of values;
//! - no `$schema`, `title` or root `description` (the tool's name and
//!   description say it); an output schema keeps no `description` at all
//!   (the model reads the result, not its schema; the input schema's
//!   field descriptions stay), and a string enum spelled as `oneOf` of
//!   `const`s becomes one `enum` there;
//! - no conditional (`if`/`then`) in an output schema, and no `$defs`
//!   entry nothing then refers to: the event record names each kind's
//!   data type by conditionals, which say what this version writes, but a
//!   client that validates a result must not refuse an `events.list` page
//!   holding an event an older version stored in another shape (the
//!   registry's schema and the bindings keep the per-kind types).
//!
//! [`for_clients`] is pure; a test holds every tool of every actor kind to
//! these rules.

use serde_json::{json, Map, Value};

/// Which side of a tool a schema describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// The arguments: what the model writes, so descriptions stay.
    Input,
    /// The result: what a client validates, so descriptions go.
    Output,
}

/// The formats of JSON Schema 2020-12's format vocabulary; any other is
/// dropped (an integer one after turning into bounds).
pub(crate) const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose value is one subschema.
const ONE: &[&str] = &[
    "items",
    "contains",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
    "contentSchema",
];

/// Keywords whose boolean value is a rule, not a schema: `false` forbids
/// other properties, `true` allows them.
const BOOLEAN_OK: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "additionalItems",
    "unevaluatedItems",
];

/// Keywords whose value is a list of subschemas.
const LIST: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Keywords that say nothing about which values pass.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
];

/// Keywords that can reject `null` (kept on the `null` branch of a split
/// `type` array; every other assertion applies to one type only).
const ANY_TYPE: &[&str] = &[
    "enum", "const", "not", "allOf", "anyOf", "oneOf", "if", "then", "else", "$ref",
];

/// `schema` as MCP clients get it (see the module documentation); the
/// registry promises every tool schema is a JSON object.
pub(crate) fn for_clients(schema: Value, side: Side) -> Map<String, Value> {
    match node(schema, side) {
        Value::Object(mut map) => {
            map.remove("$schema");
            // "Arguments of `vote.cast`.": the tool's description says
            // what it does.
            map.remove("description");
            if side == Side::Output {
                prune_defs(&mut map);
            }
            map
        }
        other => panic!("a tool schema is not an object: {other}"),
    }
}

/// One schema position, rewritten with everything under it.
fn node(schema: Value, side: Side) -> Value {
    let mut map = match schema {
        Value::Object(map) => map,
        // A bare `true` accepts any value; `false` none.
        Value::Bool(true) => return any_value(Map::new()),
        Value::Bool(false) => return json!({"not": {}}),
        other => return other,
    };
    map.remove("title");
    if side == Side::Output {
        map.remove("description");
        drop_conditionals(&mut map);
    }
    for key in ONE {
        if let Some(sub) = map.remove(*key) {
            let sub = match sub {
                Value::Bool(b) if BOOLEAN_OK.contains(key) => Value::Bool(b),
                sub => node(sub, side),
            };
            map.insert((*key).to_owned(), sub);
        }
    }
    for key in LIST {
        if let Some(Value::Array(subs)) = map.get_mut(*key) {
            for sub in subs.iter_mut() {
                *sub = node(sub.take(), side);
            }
        }
    }
    for key in MAP {
        if let Some(Value::Object(subs)) = map.get_mut(*key) {
            for sub in subs.values_mut() {
                *sub = node(sub.take(), side);
            }
        }
    }
    format_to_bounds(&mut map);
    if side == Side::Output {
        one_enum(&mut map);
    }
    if !constrains(&map) {
        return any_value(map);
    }
    split_type_array(map)
}

/// An output schema's `allOf` without its conditionals (`if`/`then`), and
/// without the `allOf` when nothing else was in it.
fn drop_conditionals(map: &mut Map<String, Value>) {
    for key in ["if", "then", "else"] {
        map.remove(key);
    }
    if let Some(Value::Array(all)) = map.get_mut("allOf") {
        all.retain(|s| s.get("if").is_none());
        if all.is_empty() {
            map.remove("allOf");
        }
    }
}

/// The root's `$defs` without the entries nothing outside `$defs` refers
/// to, directly or through other entries.
fn prune_defs(root: &mut Map<String, Value>) {
    let Some(Value::Object(defs)) = root.remove("$defs") else {
        return;
    };
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(name) = m
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    out.push(name.to_owned());
                }
                m.values().for_each(|x| refs(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
            _ => {}
        }
    }
    let mut todo = Vec::new();
    refs(&Value::Object(root.clone()), &mut todo);
    let mut kept = Map::new();
    while let Some(name) = todo.pop() {
        if kept.contains_key(&name) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            refs(def, &mut todo);
            kept.insert(name, def.clone());
        }
    }
    if !kept.is_empty() {
        let ordered: Map<String, Value> = defs
            .into_iter()
            .filter(|(name, _)| kept.contains_key(name))
            .collect();
        root.insert("$defs".to_owned(), Value::Object(ordered));
    }
}

/// Drop a non-standard `format`; an integer one becomes its range.
fn format_to_bounds(map: &mut Map<String, Value>) {
    let Some(format) = map.get("format").and_then(Value::as_str) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    let bounds: Option<(Value, Value)> = match format {
        "int8" => Some((i8::MIN.into(), i8::MAX.into())),
        "int16" => Some((i16::MIN.into(), i16::MAX.into())),
        "int32" => Some((i32::MIN.into(), i32::MAX.into())),
        "int64" | "int" => Some((i64::MIN.into(), i64::MAX.into())),
        "uint8" => Some((0.into(), u8::MAX.into())),
        "uint16" => Some((0.into(), u16::MAX.into())),
        "uint32" => Some((0.into(), u32::MAX.into())),
        "uint64" | "uint" => Some((0.into(), u64::MAX.into())),
        _ => None,
    };
    map.remove("format");
    if let Some((min, max)) = bounds {
        // A bound the type already states (schemars writes `minimum: 0`
        // for unsigned types) is kept; the tighter one wins.
        tighten(map, "minimum", min, |new, old| new > old);
        tighten(map, "maximum", max, |new, old| new < old);
    }
}

fn tighten(map: &mut Map<String, Value>, key: &str, bound: Value, better: fn(f64, f64) -> bool) {
    let new = bound.as_f64().unwrap_or_default();
    match map.get(key).and_then(Value::as_f64) {
        Some(old) if !better(new, old) => {}
        _ => {
            map.insert(key.to_owned(), bound);
        }
    }
}

/// `{"oneOf": [{"type": "string", "const": "a"}, ...]}` (a documented
/// string enum, once its descriptions are gone) as one `enum`.
fn one_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("oneOf") else {
        return;
    };
    let consts: Option<Vec<Value>> = branches
        .iter()
        .map(|b| {
            let b = b.as_object()?;
            let only_const = b.keys().all(|k| k == "const" || k == "type")
                && b.get("type").is_none_or(|t| t == "string");
            let c = b.get("const")?;
            (only_const && c.is_string()).then(|| c.clone())
        })
        .collect();
    if let Some(consts) = consts.filter(|c| !c.is_empty()) {
        map.remove("oneOf");
        map.insert("type".to_owned(), "string".into());
        map.insert("enum".to_owned(), Value::Array(consts));
    }
}

/// Whether a schema object asserts anything about a value (the Inspector's
/// rule: some keyword other than annotations; `if` only with `then` or
/// `else`).
fn constrains(map: &Map<String, Value>) -> bool {
    map.keys().any(|k| {
        !ANNOTATIONS.contains(&k.as_str()) && !matches!(k.as_str(), "if" | "then" | "else")
    }) || (map.contains_key("if") && (map.contains_key("then") || map.contains_key("else")))
}

/// The schema of any JSON value, said explicitly, keeping `annotations`
/// (a description).
fn any_value(mut annotations: Map<String, Value>) -> Value {
    let types = ["object", "array", "string", "number", "boolean", "null"];
    annotations.insert(
        "anyOf".to_owned(),
        types.iter().map(|t| json!({ "type": t })).collect(),
    );
    Value::Object(annotations)
}

/// `{"type": [A, B], rest}` as `{"anyOf": [{"type": A, rest}, {"type": B,
/// rest}]}`, annotations staying outside; a `null` branch keeps only the
/// keywords that can judge `null` (the others apply to one type only, so
/// the two spellings accept the same values).
fn split_type_array(mut map: Map<String, Value>) -> Value {
    let Some(Value::Array(types)) = map.get("type") else {
        return Value::Object(map);
    };
    let types = types.clone();
    map.remove("type");
    let mut outer = Map::new();
    let mut rest = Map::new();
    for (k, v) in map {
        if ANNOTATIONS.contains(&k.as_str()) {
            outer.insert(k, v);
        } else {
            rest.insert(k, v);
        }
    }
    // A second `anyOf` cannot sit beside the new one: it moves into the
    // branches with the rest.
    let branches: Vec<Value> = types
        .into_iter()
        .map(|ty| {
            let mut branch = Map::new();
            let null = ty == "null";
            branch.insert("type".to_owned(), ty);
            for (k, v) in &rest {
                if !null || ANY_TYPE.contains(&k.as_str()) {
                    branch.insert(k.clone(), v.clone());
                }
            }
            Value::Object(branch)
        })
        .collect();
    outer.insert("anyOf".to_owned(), Value::Array(branches));
    Value::Object(outer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_formats_become_bounds_and_others_go() {
        let s = for_clients(
            json!({"type": "object", "properties": {
                "a": {"type": "integer", "format": "uint32", "minimum": 0},
                "b": {"type": "integer", "format": "int64"},
                "c": {"type": "number", "format": "double"},
                "d": {"type": "string", "format": "date-time"},
                "e": {"type": "integer", "format": "uint64", "minimum": 1}}}),
            Side::Input,
        );
        let p = &s["properties"];
        assert_eq!(
            p["a"],
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})
        );
        assert_eq!(
            p["b"],
            json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
        );
        assert_eq!(p["c"], json!({"type": "number"}));
        assert_eq!(p["d"], json!({"type": "string", "format": "date-time"}));
        assert_eq!(
            p["e"],
            json!({"type": "integer", "minimum": 1, "maximum": u64::MAX})
        );
    }

    #[test]
    fn type_arrays_split_into_any_of_with_the_same_values() {
        let s = for_clients(
            json!({"type": "object", "properties": {
                "n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0,
                      "description": "How many."},
                "e": {"type": ["string", "null"], "enum": ["a", "b", null]}}}),
            Side::Input,
        );
        assert_eq!(
            s["properties"]["n"],
            json!({"description": "How many.", "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 4294967295u32},
                {"type": "null"}]})
        );
        assert_eq!(
            s["properties"]["e"],
            json!({"anyOf": [
                {"type": "string", "enum": ["a", "b", null]},
                {"type": "null", "enum": ["a", "b", null]}]})
        );
    }

    #[test]
    fn free_values_say_so_and_rules_stay_booleans() {
        let s = for_clients(
            json!({"type": "object", "title": "T", "$schema": "x", "description": "Arguments.",
                   "additionalProperties": false,
                   "properties": {"d": {"description": "Details."},
                                  "r": {"type": "array", "items": true}}}),
            Side::Input,
        );
        assert!(s.get("title").is_none() && s.get("$schema").is_none());
        assert!(s.get("description").is_none());
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["d"]["description"], "Details.");
        assert_eq!(
            s["properties"]["d"]["anyOf"].as_array().map(Vec::len),
            Some(6)
        );
        assert_eq!(
            s["properties"]["r"]["items"]["anyOf"]
                .as_array()
                .map(Vec::len),
            Some(6)
        );
    }

    #[test]
    fn output_schemas_lose_descriptions_and_keep_enums() {
        let s = for_clients(
            json!({"type": "object", "description": "Result.",
                   "properties": {"description": {"type": "string", "description": "A field named so."},
                                  "v": {"$ref": "#/$defs/V", "description": "The vote."}},
                   "$defs": {"V": {"oneOf": [
                        {"type": "string", "const": "approve", "description": "Yes."},
                        {"type": "string", "const": "reject", "description": "No."}]}}}),
            Side::Output,
        );
        assert!(s.get("description").is_none());
        // A property named `description` is a name, not the keyword.
        assert_eq!(s["properties"]["description"], json!({"type": "string"}));
        assert_eq!(s["properties"]["v"], json!({"$ref": "#/$defs/V"}));
        assert_eq!(
            s["$defs"]["V"],
            json!({"type": "string", "enum": ["approve", "reject"]})
        );
        // Input keeps the variants' descriptions (the model picks one).
        let i = for_clients(
            json!({"type": "object", "$defs": {"V": {"oneOf": [
                {"type": "string", "const": "approve", "description": "Yes."}]}}}),
            Side::Input,
        );
        assert_eq!(i["$defs"]["V"]["oneOf"][0]["description"], "Yes.");
    }

    #[test]
    fn issue33_item3_output_schemas_lose_conditionals_and_the_defs_only_they_named() {
        let event = json!({"type": "object",
            "properties": {"kind": {"$ref": "#/$defs/K"}, "data": {}},
            "allOf": [{"if": {"properties": {"kind": {"const": "a"}}},
                       "then": {"properties": {"data": {"$ref": "#/$defs/A"}}}}],
            "$defs": {"K": {"type": "string"},
                      "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                      "B": {"type": "integer"}}});
        let s = for_clients(event.clone(), Side::Output);
        assert!(s.get("allOf").is_none(), "{s:?}");
        assert_eq!(s["$defs"], json!({"K": {"type": "string"}}));
        // What the output still refers to stays, through other entries too.
        let mut kept = event.clone();
        kept["properties"]["a"] = json!({"$ref": "#/$defs/A"});
        let s = for_clients(kept, Side::Output);
        let names: Vec<&String> = s["$defs"].as_object().expect("defs").keys().collect();
        assert_eq!(names, ["A", "B", "K"]);
        // The input side keeps both.
        let i = for_clients(event, Side::Input);
        assert_eq!(i["allOf"][0]["if"]["properties"]["kind"]["const"], "a");
        assert_eq!(i["$defs"].as_object().expect("defs").len(), 3);
    }
}
