#!/usr/bin/env python3
"""Write sample schemas for scripts/gen-go's own test (scripts/test-go).

Usage: sample.py TOOLS_JSON OUT_DIR

OUT_DIR/tools.json is the registry's tools plus `sample.shapes`, whose
schemas use what the registry does not today: a tagged union (oneOf of
objects with a `kind` const, schemars' #[serde(tag = "kind")]), a map, a
number, a nullable list of nullable numbers, an inline object.
OUT_DIR/errors.json is an errors.json in the format roundtable-cli's golden
file will have: typed details for not_found and forbidden (forbidden's
sharing $defs/ActorKind with the tools), free-form details for conflict,
and every other code of the real errors.json (beside TOOLS_JSON) with no
schema, since the package's error codes are generated from it.
"""

import json
import sys
from pathlib import Path

SHAPE = {
    "description": "A shape.",
    "oneOf": [
        {
            "description": "A circle.",
            "type": "object",
            "properties": {"kind": {"type": "string", "const": "circle"}, "radius": {"type": "number", "description": "Its radius."}},
            "required": ["kind", "radius"],
            "additionalProperties": False,
        },
        {
            "description": "A square.",
            "type": "object",
            "properties": {
                "kind": {"type": "string", "const": "square"},
                "side": {"type": "integer"},
                "label": {"type": ["string", "null"]},
            },
            "required": ["kind", "side"],
            "additionalProperties": False,
        },
        {"description": "Nothing.", "type": "object", "properties": {"kind": {"type": "string", "const": "empty"}}, "required": ["kind"]},
    ],
}


def main() -> None:
    tools_path, out = Path(sys.argv[1]), Path(sys.argv[2])
    tools = json.loads(tools_path.read_text())
    actor_kind = next(t["output_schema"]["$defs"]["ActorKind"] for t in tools if "ActorKind" in t["output_schema"].get("$defs", {}))
    tools.append({
        "name": "sample.shapes",
        "description": "A sample tool (scripts/gen-go's test only).",
        "callers": ["orchestrator"],
        "mutates": False, "idempotent": True, "destructive": False, "waits": False,
        "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "shape": {"$ref": "#/$defs/Shape", "description": "A tagged union."},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "description": "A map."},
                "weights": {"type": ["array", "null"], "items": {"type": ["number", "null"]}},
                "origin": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                    "additionalProperties": False,
                },
            },
            "required": ["shape"],
            "$defs": {"Shape": SHAPE},
        },
        "output_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "SampleShapes",
            "description": "Result of `sample.shapes`.",
            "type": "object",
            "properties": {
                "shapes": {"type": "array", "items": {"$ref": "#/$defs/Shape"}},
                "scale": {"type": "number"},
                "counts": {"type": "object", "additionalProperties": {"type": ["integer", "null"]}},
            },
            "required": ["shapes", "scale", "counts"],
            "$defs": {"Shape": SHAPE},
        },
    })
    errors = [
        {
            "code": "not_found", "status": 12, "description": "Nothing has that id.",
            "details_schema": {
                "type": "object",
                "properties": {"kind": {"type": "string", "description": "What was looked for."}, "id": {"type": "string"}},
                "required": ["id"],
                "additionalProperties": False,
            },
        },
        {
            "code": "forbidden", "status": 13, "description": "The actor may not do that.",
            "details_schema": {
                "type": "object",
                "properties": {
                    "reason": {"$ref": "#/$defs/ForbiddenReason"},
                    "allowed_kinds": {"type": "array", "items": {"$ref": "#/$defs/ActorKind"}},
                    "holder": {"description": "Who holds it."},
                },
                "required": ["reason"],
                "$defs": {
                    "ActorKind": actor_kind,
                    "ForbiddenReason": {
                        "description": "Why (a details-only enum).",
                        "oneOf": [
                            {"const": "wrong_kind", "description": "The actor's kind may not call the tool."},
                            {"const": "unregistered", "description": "No such agent."},
                        ],
                    },
                },
            },
        },
        {"code": "conflict", "status": 14, "description": "Someone else got there first.", "details_schema": {"type": "object"}},
        {
            "code": "busy", "status": 25, "description": "Something is held (a made-up tagged union).",
            "details_schema": {"oneOf": [
                {"type": "object", "properties": {"kind": {"const": "lock"}, "waited_ms": {"type": "integer"}},
                 "required": ["kind", "waited_ms"]},
                {"type": "object", "properties": {"kind": {"const": "store"}}, "required": ["kind"]},
            ]},
        },
        {"code": "io", "status": 8, "description": "No schema at all.", "details_schema": True},
    ]
    # Every other code of the real table (errors.json beside TOOLS_JSON),
    # without a schema: the package's own code names them (codes_gen.go
    # comes from errors.json).
    sampled = {e["code"] for e in errors}
    for entry in json.loads(tools_path.with_name("errors.json").read_text()):
        if entry["code"] not in sampled:
            errors.append({**entry, "details_schema": True})
    out.mkdir(parents=True, exist_ok=True)
    (out / "tools.json").write_text(json.dumps(tools, indent=1))
    (out / "errors.json").write_text(json.dumps(errors, indent=1))


if __name__ == "__main__":
    main()
