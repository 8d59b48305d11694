#!/usr/bin/env python3
"""Writes the language-neutral edit-plan fixtures in this directory.

Each ``*.json`` file is ``{"cases": [case, ...]}``; a case is

    {"name": str,
     "files": {path: {"base64": str, "executable": bool}},   # the tree before
     "plan": object            # the plan; serialize it to get the input bytes
       | "plan_text": str,     # ...or the exact input text (malformed JSON cases)
     "expect": {"changeset": [change, ...]}                  # sorted by path
             | {"error": {"code": str, "message_contains": str,
                          "details": object}}}               # details: a subset

    change = {"path": str,
              "operation": {"kind": "create"|"modify"|"delete"|"rename"|"renamed_away",
                            "from"?: str, "to"?: str},
              "before": {"digest": str, "executable": bool} | null,
              "after": {"text": str, "executable": bool}
                     | {"base64": str, "executable": bool} | null}

Every expected text below is written out by hand; the digests are computed.
Run ``python3 generate.py`` after editing; the Rust suite
(roundtable/tests/edit_plans.rs) replays every case, and so can the C
and Python suites.
"""

import base64
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# ASCII, CJK (3 UTF-8 bytes, 1 UTF-16 unit), an emoji outside the BMP
# (4 UTF-8 bytes, 2 UTF-16 units, 1 code point) and CRLF line endings.
#   line 0 "a漢😀b"  : 9 bytes, 5 UTF-16 units, 4 code points
#   line 1 "字😀"    : 7 bytes, 3 UTF-16 units, 2 code points
#   line 2 "end"     : LF-terminated
#   line 3 ""        : the empty last line after the final LF
MIXED = "a漢😀b\r\n字😀\r\nend\n"


def digest(data: bytes) -> str:
    return "blob:sha256:" + hashlib.sha256(data).hexdigest()


def enc(s) -> bytes:
    return s.encode("utf-8") if isinstance(s, str) else s


def files(**kw):
    out = {}
    for path, content in kw.items():
        exe = False
        if isinstance(content, tuple):
            content, exe = content
        out[path.replace("__", "/").replace("_dot_", ".")] = {
            "base64": base64.b64encode(enc(content)).decode(), "executable": exe}
    return out


def edit(cs, start, end, text, **extra):
    e = {"range": {"start": {"line": start[0], "char": start[1]},
                   "end": {"line": end[0], "char": end[1]}},
         "coordinateSystem": cs, "newText": text}
    e.update(extra)
    return e


def modify(path, before, edits):
    return {"path": path, "kind": "modify",
            "precondition": {"expectedDigest": digest(enc(before))}, "edits": edits}


def plan(*changes, **top):
    p = {"documentChanges": list(changes)}
    p.update(top)
    return p


def meta(before, exe=False):
    return {"digest": digest(enc(before)), "executable": exe}


def after_text(text, exe=False):
    return {"text": text, "executable": exe}


def modified(path, before, after, exe=False):
    return {"path": path, "operation": {"kind": "modify"},
            "before": meta(before, exe), "after": after_text(after, exe)}


def ok(name, tree, p, changes):
    return {"name": name, "files": tree, "plan": p, "expect": {"changeset": changes}}


def err(name, tree, p, code, part, details=None):
    e = {"code": code, "message_contains": part}
    if details is not None:
        e["details"] = details
    case = {"name": name, "files": tree, "expect": {"error": e}}
    case["plan_text" if isinstance(p, str) else "plan"] = p
    return case


def one_edit(name, text, cs, start, end, new, expected):
    return ok(name, files(f=text), plan(modify("f", text, [edit(cs, start, end, new)])),
              [modified("f", text, expected)])


def coordinates():
    m = MIXED
    cases = []
    # Replace the emoji on line 0 with "X".
    for cs, s, e in [("utf8", 4, 8), ("utf16", 2, 4), ("codepoint", 2, 3)]:
        cases.append(one_edit(f"replace emoji, {cs}", m, cs, (0, s), (0, e), "X",
                              "a漢Xb\r\n字😀\r\nend\n"))
    # Replace 漢 with "kan", append "!" to line 1, and join lines 1 and 2 by
    # removing the CRLF (the insertion and the removal touch at a point).
    for cs, k1, k2, eol in [("utf8", 1, 4, 7), ("utf16", 1, 2, 3), ("codepoint", 1, 2, 2)]:
        cases.append(ok(f"three edits across a CRLF, {cs}", files(f=m),
                        plan(modify("f", m, [edit(cs, (1, eol), (2, 0), ""),
                                             edit(cs, (0, k1), (0, k2), "kan"),
                                             edit(cs, (1, eol), (1, eol), "!")])),
                        [modified("f", m, "akan😀b\r\n字😀!end\n")]))
    # Insert an emoji between 字 and 😀 on line 1.
    for cs, c in [("utf8", 3), ("utf16", 1), ("codepoint", 1)]:
        cases.append(one_edit(f"insert emoji, {cs}", m, cs, (1, c), (1, c), "😀",
                              "a漢😀b\r\n字😀😀\r\nend\n"))
    # The empty last line is addressable.
    for cs in ["utf8", "utf16", "codepoint"]:
        cases.append(one_edit(f"insert on the empty last line, {cs}", m, cs, (3, 0), (3, 0),
                              "tail", "a漢😀b\r\n字😀\r\nend\ntail"))
    # Delete the whole of line 1 including its CRLF.
    for cs in ["utf8", "utf16", "codepoint"]:
        cases.append(one_edit(f"delete a CRLF line, {cs}", m, cs, (1, 0), (2, 0), "",
                              "a漢😀b\r\nend\n"))
    # A lone CR ends a line too (LSP).
    cases.append(one_edit("lone CR ends a line", "a\rb", "utf16", (1, 0), (1, 1), "B", "a\rB"))
    cases.append(one_edit("CR CR LF is two line ends", "a\r\r\nb", "utf8", (2, 0), (2, 1), "B",
                          "a\r\r\nB"))
    # Two insertions at one position keep array order.
    cases.append(ok("insertions at one position keep array order", files(f="abc"),
                    plan(modify("f", "abc", [edit("utf8", (0, 1), (0, 1), "1"),
                                             edit("utf8", (0, 1), (0, 3), "-"),
                                             edit("utf8", (0, 1), (0, 1), "2")])),
                    [modified("f", "abc", "a12-")]))
    # utf8 offsets need no UTF-8 text, only no split sequence.
    lat = b"caf\xe9\n\xff\xfe"
    cases.append(ok("utf8 offsets in non-UTF-8 text", files(f=lat),
                    plan(modify("f", lat, [edit("utf8", (1, 1), (1, 2), "!")])),
                    [{"path": "f", "operation": {"kind": "modify"}, "before": meta(lat),
                      "after": {"base64": base64.b64encode(b"caf\xe9\n\xff!").decode(),
                                "executable": False}}]))
    # Mixed coordinate systems in one file resolve independently.
    cases.append(ok("utf8 and utf16 edits in one file", files(f=m),
                    plan(modify("f", m, [edit("utf8", (0, 8), (0, 9), "B"),
                                         edit("utf16", (0, 0), (0, 1), "A")])),
                    [modified("f", m, "A漢😀B\r\n字😀\r\nend\n")]))
    return cases


def refusals():
    m = MIXED
    t = files(f=m)
    inv = "invalid_edit_plan"
    one = lambda cs, s, e: plan(modify("f", m, [edit(cs, s, e, "")]))
    d = digest(enc(m))
    blob = b"new\n"
    cases = [
        err("split surrogate pair", t, one("utf16", (0, 3), (0, 4)), inv,
            "char 3 on line 0 splits a UTF-16 surrogate pair",
            {"field": "documentChanges[0].edits[0].range.start.char", "path": "f"}),
        err("split UTF-8 sequence of a CJK character", t, one("utf8", (0, 0), (0, 2)), inv,
            "char 2 on line 0 splits a UTF-8 multi-byte sequence",
            {"field": "documentChanges[0].edits[0].range.end.char"}),
        err("split UTF-8 sequence of an emoji", t, one("utf8", (1, 5), (1, 7)), inv,
            "char 5 on line 1 splits a UTF-8 multi-byte sequence"),
        err("char past the end, utf8 (between CR and LF)", t, one("utf8", (0, 10), (0, 10)), inv,
            "char 10 is past the end of line 0 (9 bytes)"),
        err("char past the end, utf16", t, one("utf16", (0, 0), (0, 6)), inv,
            "char 6 is past the end of line 0 (5 UTF-16 code units)"),
        err("char past the end, codepoint", t, one("codepoint", (1, 3), (1, 3)), inv,
            "char 3 is past the end of line 1 (2 code points)"),
        err("line past the end", t, one("utf16", (4, 0), (4, 0)), inv,
            "line 4 is past the end of the text (4 lines)",
            {"field": "documentChanges[0].edits[0].range.start.line"}),
        err("utf16 on a line that is not UTF-8", files(f=b"ok\n\xff\n"),
            plan(modify("f", b"ok\n\xff\n", [edit("utf16", (1, 0), (1, 0), "x")])), inv,
            "line 1 is not valid UTF-8, so it has no utf16 offsets"),
        err("overlapping edits", files(f="abcdef"),
            plan(modify("f", "abcdef", [edit("utf8", (0, 1), (0, 3), "x"),
                                        edit("utf8", (0, 2), (0, 4), "y")])), inv,
            "edits[1] (line 0, char 2 to line 0, char 4) overlaps edits[0] (line 0, char 1 to line 0, char 3)"),
        err("insertion inside a replaced range", files(f="abcdef"),
            plan(modify("f", "abcdef", [edit("utf8", (0, 2), (0, 2), "x"),
                                        edit("utf8", (0, 1), (0, 3), "y")])), inv,
            "edits[1] (line 0, char 1 to line 0, char 3) overlaps edits[0]"),
        err("end before start", t, one("utf8", (0, 4), (0, 1)), inv,
            "end (line 0, char 1) is before start (line 0, char 4)",
            {"field": "documentChanges[0].edits[0].range"}),
        err("unknown key in a position", t,
            plan(modify("f", m, [{"range": {"start": {"line": 0, "char": 0, "chr": 1},
                                            "end": {"line": 0, "char": 0}},
                                  "coordinateSystem": "utf8", "newText": ""}])), inv,
            'unknown key "chr"', {"field": "documentChanges[0].edits[0].range.start.chr"}),
        err("unknown key in a change", t,
            plan(dict(modify("f", m, [edit("utf8", (0, 0), (0, 0), "")]), mode="100755")),
            inv, 'documentChanges[0].mode: unknown key "mode"'),
        err("bad kind", t, plan({"path": "f", "kind": "move", "precondition": {"expectedDigest": d}}),
            inv, 'documentChanges[0].kind: must be one of "modify", "create", "delete", "rename", not "move"'),
        err("rename without to", t,
            plan({"path": "f", "kind": "rename", "precondition": {"expectedDigest": d}}),
            inv, "a rename needs `to`"),
        err("create with expectedDigest", {},
            plan({"path": "n", "kind": "create", "precondition": {"expectedDigest": d},
                  "edits": [edit("utf8", (0, 0), (0, 0), "x")]}),
            inv, 'a create must have precondition {"expectedAbsence": true}'),
        err("modify with expectedAbsence", t,
            plan({"path": "f", "kind": "modify", "precondition": {"expectedAbsence": True},
                  "edits": [edit("utf8", (0, 0), (0, 0), "x")]}),
            inv, 'a modify must have precondition {"expectedDigest"'),
        err("both edits and after", t,
            plan(dict(modify("f", m, [edit("utf8", (0, 0), (0, 0), "x")]), after=digest(blob)),
                 blobs={digest(blob): base64.b64encode(blob).decode()}),
            inv, "has both `edits` and `after`"),
        err("blob missing", t,
            plan({"path": "f", "kind": "modify", "precondition": {"expectedDigest": d},
                  "after": digest(blob)}),
            inv, f"documentChanges[0].after: blob {digest(blob)} is not in `blobs`"),
        err("blob with the wrong digest", t,
            plan({"path": "f", "kind": "modify", "precondition": {"expectedDigest": d},
                  "after": digest(blob)}, blobs={digest(blob): base64.b64encode(b"other").decode()}),
            inv, "the decoded bytes have digest " + digest(b"other")),
        err("blob that is not base64", t,
            plan({"path": "f", "kind": "modify", "precondition": {"expectedDigest": d},
                  "after": digest(blob)}, blobs={digest(blob): "bmV3Cg=!"}),
            inv, "is not valid base64"),
        err("path escapes with ..", t,
            plan(modify("../x", m, [edit("utf8", (0, 0), (0, 0), "")])), "path_escape",
            'documentChanges[0].path: "../x": has a `..` component'),
        err("absolute path", t,
            plan(modify("/abs", m, [edit("utf8", (0, 0), (0, 0), "")])), "path_escape",
            "is absolute"),
        err("path into .git", t,
            plan(modify(".git/config", m, [edit("utf8", (0, 0), (0, 0), "")])), "path_escape",
            "enters `.git` or `.roundtable`"),
        err("path touched twice", t,
            plan(modify("f", m, [edit("utf8", (0, 0), (0, 0), "x")]),
                 {"path": "f", "kind": "delete", "precondition": {"expectedDigest": d}}),
            inv, 'documentChanges[1].path: "f" is already touched by documentChanges[0]'),
        err("duplicate JSON key", t,
            '{"documentChanges": [], "documentChanges": []}', inv, 'duplicate key "documentChanges"'),
    ]
    for status in ["incomplete", "unsupported", "cancelled", "errored"]:
        cases.append(err(f"status {status}", t,
                         {"proposal": {"status": status, "reason": "could not resolve every reference"}},
                         "incomplete_edit_plan", f'status is "{status}"',
                         {"status": status, "reason": "could not resolve every reference"}))
    # Preconditions, all reported at once.
    cases.append(err("every precondition failure in one error",
                     files(f=m, g="g\n"),
                     plan(modify("f", "old", [edit("utf8", (0, 0), (0, 0), "x")]),
                          {"path": "g", "kind": "create", "precondition": {"expectedAbsence": True},
                           "edits": [edit("utf8", (0, 0), (0, 0), "x")]},
                          {"path": "h", "kind": "delete", "precondition": {"expectedDigest": d}}),
                     "precondition_failed", "(and 2 more precondition failures)",
                     {"path": "f", "expected": digest(b"old"), "actual": d,
                      "failures": [
                          {"field": "documentChanges[0].precondition", "path": "f",
                           "expected": digest(b"old"), "actual": d},
                          {"field": "documentChanges[1].precondition", "path": "g",
                           "expected": "absent", "actual": digest(b"g\n")},
                          {"field": "documentChanges[2].precondition", "path": "h",
                           "expected": d, "actual": "absent"}]}))
    cases.append(err("rename onto an existing file", files(f=m, g="g\n"),
                     plan({"path": "f", "kind": "rename", "to": "g",
                           "precondition": {"expectedDigest": d}}),
                     "precondition_failed", "g: expected absent, found " + digest(b"g\n"),
                     {"path": "g", "expected": "absent", "actual": digest(b"g\n")}))
    return cases


def changesets():
    m = MIXED
    blob = "fresh 😀\n"
    b = enc(blob)
    d = digest(enc(m))
    spec_like = plan(
        modify("src/api.ts", m, [edit("utf16", (0, 2), (0, 4), "🙂")]),
        {"path": "src/server.ts", "kind": "modify",
         "precondition": {"expectedDigest": digest(b"server\n")}, "after": digest(b)},
        {"path": "src/legacy.ts", "kind": "delete",
         "precondition": {"expectedDigest": digest(b"legacy\n")}},
        {"path": "src/b.ts", "kind": "rename", "to": "src/c.ts",
         "precondition": {"expectedDigest": digest(b"b\r\n")},
         "edits": [edit("codepoint", (0, 0), (0, 1), "c")]},
        {"path": "src/new.ts", "kind": "create", "after": digest(b),
         "precondition": {"expectedAbsence": True}},
        blobs={digest(b): base64.b64encode(b).decode()})
    return [
        ok("whole-blob create", {},
           plan({"path": "dir/new.txt", "kind": "create", "after": digest(b),
                 "precondition": {"expectedAbsence": True}},
                blobs={digest(b): base64.b64encode(b).decode()}),
           [{"path": "dir/new.txt", "operation": {"kind": "create"}, "before": None,
             "after": after_text(blob)}]),
        ok("create with edits on empty text", {},
           plan({"path": "n", "kind": "create", "precondition": {"expectedAbsence": True},
                 "edits": [edit("utf16", (0, 0), (0, 0), "漢\r\n")]}),
           [{"path": "n", "operation": {"kind": "create"}, "before": None,
             "after": after_text("漢\r\n")}]),
        ok("delete an executable file", files(run=("#!/bin/sh\n", True)),
           plan({"path": "run", "kind": "delete",
                 "precondition": {"expectedDigest": digest(b"#!/bin/sh\n")}}),
           [{"path": "run", "operation": {"kind": "delete"},
             "before": meta("#!/bin/sh\n", True), "after": None}]),
        ok("rename with edits keeps the executable bit", files(tool=(m, True)),
           plan({"path": "tool", "kind": "rename", "to": "bin/tool",
                 "precondition": {"expectedDigest": d},
                 "edits": [edit("codepoint", (1, 1), (1, 2), "!")]}),
           [{"path": "bin/tool", "operation": {"kind": "rename", "from": "tool"}, "before": None,
             "after": after_text("a漢😀b\r\n字!\r\nend\n", True)},
            {"path": "tool", "operation": {"kind": "renamed_away", "to": "bin/tool"},
             "before": meta(m, True), "after": None}]),
        ok("multi-file plan like the spec's example",
           files(src__api_dot_ts=m, src__server_dot_ts="server\n", src__legacy_dot_ts="legacy\n",
                 src__b_dot_ts="b\r\n"),
           spec_like,
           [modified("src/api.ts", m, "a漢🙂b\r\n字😀\r\nend\n"),
            {"path": "src/b.ts", "operation": {"kind": "renamed_away", "to": "src/c.ts"},
             "before": meta("b\r\n"), "after": None},
            {"path": "src/c.ts", "operation": {"kind": "rename", "from": "src/b.ts"},
             "before": None, "after": after_text("c\r\n")},
            {"path": "src/legacy.ts", "operation": {"kind": "delete"},
             "before": meta("legacy\n"), "after": None},
            {"path": "src/new.ts", "operation": {"kind": "create"}, "before": None,
             "after": after_text(blob)},
            {"path": "src/server.ts", "operation": {"kind": "modify"}, "before": meta("server\n"),
             "after": after_text(blob)}]),
        ok("proposal wrapper", files(f=m),
           {"proposal": {"proposalId": "proposal:x", "status": "complete",
                         "baseline": {"rev": "git:tree:9f3a1c"},
                         "touchedResources": [{"path": "f", "kind": "modify",
                                               "precondition": {"expectedDigest": d}}],
                         "workspaceEdit": {"baseline": {"rev": "git:tree:9f3a1c"},
                                           "documentChanges": [
                                               modify("f", m, [edit("utf8", (2, 0), (2, 3), "END")])]}}},
           [modified("f", m, "a漢😀b\r\n字😀\r\nEND\n")]),
    ]


def write(name, cases):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump({"cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    write("coordinates.json", coordinates())
    write("refusals.json", refusals())
    write("changesets.json", changesets())
