#!/usr/bin/env python3
"""Writes cases.json: agent-style edits (Codex `apply_patch` envelopes and
SEARCH/REPLACE blocks) of real files of this repository, copied into
`files/` (`id_crlf.rs` is `roundtable-base/src/id.rs` with CRLF line
endings, `resource_noeol.rs` is `resource.rs` without its final newline,
`claims_trailing.rs` is `claims.rs` with trailing blanks on some lines).

Each case is written from its *intent*: which lines of which file the agent
means to change, and to what. The edit text is made from those lines (with a
deliberate drift for the loose rungs: trailing blanks added, indentation
dropped, inner spaces doubled); the expected bytes are made by replacing
exactly those lines, never by searching for them, so a matcher that places a
hunk anywhere else fails the case. A refusal case names the expected code, a
substring of the message and a subset of the details (the hunk, the path,
the reason, the candidate lines).

Format of cases.json: {"cases": [{
  "name", "format": "codex" | "search_replace",
  "files": {repo path: fixture file name under files/},
  "edit": the text,
  "expect": {"files": {repo path: {"text": ...} | null (removed)},
             "matches": [{"path", "hunk", "rung", "line"}]}
          | {"error": {"code", "message_contains", "details"}}}]}

`expect.files` lists every path the change touches, and nothing else.
Run `python3 generate.py` here to rewrite cases.json.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, "files")


def fixture(name):
    with open(os.path.join(FILES, name), "rb") as f:
        return f.read().decode("utf-8")


def split(text):
    """[(content, terminator)] as the core splits lines."""
    out = []
    rest = text
    while rest:
        i = rest.find("\n")
        if i < 0:
            out.append((rest, ""))
            break
        line = rest[: i + 1]
        if line.endswith("\r\n"):
            out.append((line[:-2], "\r\n"))
        else:
            out.append((line[:-1], "\n"))
        rest = rest[i + 1 :]
    return out


def lines_of(name):
    return [c for c, _ in split(fixture(name))]


def replaced(text, edits):
    """`text` with each (first line 1-based, count, new lines) replaced; new
    lines take the file's first terminator, and a missing final newline
    stays missing."""
    ls = split(text)
    eol = next((t for _, t in ls if t), "\n")
    final = not ls or ls[-1][1] != ""
    for start, count, new in sorted(edits, key=lambda e: e[0], reverse=True):
        ls[start - 1 : start - 1 + count] = [(n, eol) for n in new]
    out = []
    for i, (c, t) in enumerate(ls):
        out.append(c)
        if i < len(ls) - 1 or final:
            out.append(t or eol)
    return "".join(out)


def trailing(ls):
    return [l + "  " for l in ls]


def dedent(ls):
    return [l.lstrip() for l in ls]


def spaced(ls):
    """Inner spaces doubled (the indentation kept)."""
    return [l[: len(l) - len(l.lstrip())] + l.lstrip().replace(" ", "  ") for l in ls]


def indent_of(l):
    return len(l) - len(l.lstrip(" \t"))


def outdent(ls, k):
    return [l[k:] if l.strip() else l for l in ls]


def drifted(search, new):
    """A uniform indentation drift, as an agent makes it: the indentation
    the search and the replacement all share dropped from both (the core
    re-indents the replacement by the file's offset, aider's rule)."""
    k = min((indent_of(l) for l in search + new if l.strip()), default=0)
    return outdent(search, k), outdent(new, k)


CASES = []


def ok(name, fmt, files, edit, expect_files, matches):
    CASES.append(
        {
            "name": name,
            "format": fmt,
            "files": files,
            "edit": edit,
            "expect": {
                "files": {
                    p: (None if t is None else {"text": t})
                    for p, t in expect_files.items()
                },
                "matches": [
                    {"path": p, "hunk": h, "rung": r, "line": l}
                    for p, h, r, l in matches
                ],
            },
        }
    )


def refused(name, fmt, files, edit, code, contains, details):
    CASES.append(
        {
            "name": name,
            "format": fmt,
            "files": files,
            "edit": edit,
            "expect": {
                "error": {
                    "code": code,
                    "message_contains": contains,
                    "details": details,
                }
            },
        }
    )


def sr_block(path, search, replace, with_path=True):
    head = [path] if with_path else []
    return "\n".join(
        head + ["<<<<<<< SEARCH"] + search + ["======="] + replace + [">>>>>>> REPLACE"]
    ) + "\n"


def codex(*sections):
    return "\n".join(["*** Begin Patch"] + [s for sec in sections for s in sec] + ["*** End Patch"]) + "\n"


def update(path, *hunks, move=None):
    out = ["*** Update File: " + path]
    if move:
        out.append("*** Move to: " + move)
    for h in hunks:
        out.extend(h)
    return out


def hunk(ls, start, before, removed, added, after, drift=None, anchors=(), eof=False, bare=False):
    """A Codex hunk from the file lines `ls`: `before` context lines from
    line `start`, then `removed` lines, the `added` lines, `after` context
    lines. Returns (the hunk's lines, the edit (first removed line, count,
    added))."""
    old = ls[start - 1 : start - 1 + before + removed + after]
    if drift:
        old = drift(old)
    body = []
    if anchors:
        body += ["@@ " + a for a in anchors]
    elif not bare:
        body.append("@@")
    body += [" " + l for l in old[:before]]
    body += ["-" + l for l in old[before : before + removed]]
    body += ["+" + l for l in added]
    body += [" " + l for l in old[before + removed :]]
    if eof:
        body.append("*** End of File")
    return body, (start + before, removed, added)


# ---------------------------------------------------------------- claims.rs
C = "src/claims.rs"
CF = {C: "claims.rs"}
c = lines_of("claims.rs")
ct = fixture("claims.rs")

# SEARCH/REPLACE, one rung each.
new49 = ["        self.start <= other.end && other.start <= self.end // shared line"]
ok("sr exact: one line", "search_replace", CF, sr_block(C, c[48:49], new49),
   {C: replaced(ct, [(49, 1, new49)])}, [(C, 1, "exact", 49)])
new48 = ["    pub fn intersects(self, other: LineSpan) -> bool {", "        other.start <= self.end && self.start <= other.end", "    }"]
ok("sr trailing drift: trailing blanks added to the search", "search_replace", CF,
   sr_block(C, trailing(c[47:50]), new48), {C: replaced(ct, [(48, 3, new48)])},
   [(C, 1, "trailing_whitespace", 48)])
new53 = ["    pub fn contains_line(self, line: u32) -> bool {", "        (self.start..=self.end).contains(&line)", "    }"]
ok("sr whitespace drift: indentation dropped from search and replacement", "search_replace", CF,
   sr_block(C, *drifted(c[52:55], new53)), {C: replaced(ct, [(53, 3, new53)])},
   [(C, 1, "whitespace", 53)])
refused("sr whitespace drift: indentation dropped unevenly is refused", "search_replace", CF,
        sr_block(C, dedent(c[52:55]), new53), "patch_does_not_apply", "indentation",
        {"hunk": 1, "path": C, "reason": "indentation", "candidates": [{"line": 54}]})
ok("sr whitespace drift: inner spaces doubled", "search_replace", CF,
   sr_block(C, spaced(c[59:60]), ["        self.start <= after && after + 1 <= self.end"]),
   {C: replaced(ct, [(60, 1, ["        self.start <= after && after + 1 <= self.end"])])},
   [(C, 1, "whitespace", 60)])

# Ambiguous and missing.
refused("sr ambiguous: a closing brace matches many lines", "search_replace", CF,
        sr_block(C, ["    }"], ["    } // end"]), "patch_does_not_apply", "matches",
        {"hunk": 1, "path": C, "reason": "ambiguous", "rung": "exact",
         "candidates": [{"line": 34, "text": "    }"}]})
refused("sr ambiguous only at the whitespace rung", "search_replace", CF,
        sr_block(C, ["  }"], ["}"]), "patch_does_not_apply", "at rung whitespace",
        {"hunk": 1, "path": C, "reason": "ambiguous", "rung": "whitespace"})
refused("sr missing: nothing like it", "search_replace", CF,
        sr_block(C, ["pub fn nonexistent() {}"], ["pub fn exists() {}"]),
        "patch_does_not_apply", "no line resembles its first line",
        {"hunk": 1, "path": C, "reason": "not_found", "candidates": []})
near = c[47:50]
near = [near[0], "        self.start < other.end && other.start < self.end", near[2]]
refused("sr near miss: the middle line differs", "search_replace", CF,
        sr_block(C, near, new48), "patch_does_not_apply", "nearest candidates",
        {"hunk": 1, "path": C, "reason": "not_found",
         "candidates": [{"line": 49, "text": c[48], "expected": near[1], "matched_from": 48, "matched_lines": 1}]})

# Several blocks of one file.
n30 = ['            ClaimType::Write => "w",']
n74 = ["pub fn under(dir: Option<&RepoPath>, path: &RepoPath) -> bool { // contained"]
ok("sr two blocks in one file", "search_replace", CF,
   sr_block(C, c[29:30], n30) + sr_block(C, c[73:74], n74),
   {C: replaced(ct, [(30, 1, n30), (74, 1, n74)])}, [(C, 1, "exact", 30), (C, 2, "exact", 74)])
ok("sr consecutive blocks share the path line", "search_replace", CF,
   sr_block(C, c[29:30], n30) + sr_block(C, c[73:74], n74, with_path=False),
   {C: replaced(ct, [(30, 1, n30), (74, 1, n74)])}, [(C, 1, "exact", 30), (C, 2, "exact", 74)])
ok("sr three blocks, out of file order, mixed rungs", "search_replace", CF,
   sr_block(C, c[73:74], n74) + sr_block(C, trailing(c[29:30]), n30)
   + sr_block(C, dedent(c[40:41]), ["pub start: u32, // first"]),
   {C: replaced(ct, [(30, 1, n30), (74, 1, n74), (41, 1, ["    pub start: u32, // first"])])},
   [(C, 1, "exact", 74), (C, 2, "trailing_whitespace", 30), (C, 3, "whitespace", 41)])
refused("sr a block cannot match lines an earlier block replaced", "search_replace", CF,
        sr_block(C, c[47:49], ["x"]) + sr_block(C, c[48:50], ["y"]),
        "patch_does_not_apply", "match nowhere", {"hunk": 2, "path": C, "reason": "not_found"})
refused("sr one good block and one missing: nothing applies", "search_replace", CF,
        sr_block(C, c[29:30], n30) + sr_block(C, ["    fn gone(&self);"], ["    fn back(&self);"]),
        "patch_does_not_apply", "hunk 2", {"hunk": 2, "path": C, "reason": "not_found"})
ok("sr deleting lines: an empty replacement", "search_replace", CF,
   sr_block(C, c[56:62], []), {C: replaced(ct, [(57, 6, [])])}, [(C, 1, "exact", 57)])
ok("sr inside Markdown fences", "search_replace", CF,
   C + "\n```rust\n" + sr_block(C, c[48:49], new49, with_path=False) + "```\n",
   {C: replaced(ct, [(49, 1, new49)])}, [(C, 1, "exact", 49)])
refused("sr prose outside a block", "search_replace", CF,
        "Here is the change:\n" + sr_block(C, c[48:49], new49), "invalid_patch",
        "reads as prose", {"line": 1})

# Creating files.
ok("sr empty SEARCH creates a missing file", "search_replace", CF,
   sr_block("src/new.rs", [], ["//! A new module.", "", "pub fn f() {}"]),
   {"src/new.rs": "//! A new module.\n\npub fn f() {}\n"}, [])
refused("sr empty SEARCH on an existing file", "search_replace", CF,
        sr_block(C, [], ["// appended"]), "precondition_failed", "an empty SEARCH creates a file",
        {"hunk": 1, "path": C, "expected": "absent"})
refused("sr search in a missing file", "search_replace", CF,
        sr_block("src/missing.rs", ["fn a() {}"], ["fn b() {}"]), "precondition_failed",
        "does not exist", {"path": "src/missing.rs", "expected": "present", "actual": "absent"})
refused("sr a path out of the root", "search_replace", CF,
        sr_block("../etc/passwd", ["root"], ["toor"]), "path_escape", "", {"line": 1})
refused("sr a path into .git", "search_replace", CF,
        sr_block(".git/config", ["[core]"], ["[core2]"]), "path_escape", "", {"line": 1})

# Malformed.
refused("sr missing REPLACE marker", "search_replace", CF,
        "\n".join([C, "<<<<<<< SEARCH", c[48], "=======", new49[0]]) + "\n",
        "invalid_patch", ">>>>>>> REPLACE", {})
refused("sr a second divider", "search_replace", CF,
        "\n".join([C, "<<<<<<< SEARCH", c[48], "=======", "a", "=======", "b", ">>>>>>> REPLACE"]) + "\n",
        "invalid_patch", "line 6", {"line": 6})
refused("sr a block without a path", "search_replace", CF,
        sr_block(C, c[48:49], new49, with_path=False), "invalid_patch", "file path", {"line": 1})

# Codex envelopes.
h, e = hunk(c, 46, 2, 1, ["    /// Whether the two spans share at least one line."], 2)
ok("codex exact: context, one removed, one added", "codex", CF, codex(update(C, h)),
   {C: replaced(ct, [e])}, [(C, 1, "exact", 46)])
h, e = hunk(c, 52, 1, 1, ["    pub fn contains_line(self, line: u32) -> bool { // inclusive"], 2, drift=trailing)
ok("codex trailing drift", "codex", CF, codex(update(C, h)), {C: replaced(ct, [e])},
   [(C, 1, "trailing_whitespace", 52)])
added57 = ["    pub fn contains_insertion(self, at: u32) -> bool {"]
k57 = min(indent_of(l) for l in c[56:61] + added57 if l.strip())
h, _ = hunk(c, 57, 2, 1, outdent(added57, k57), 2, drift=lambda ls: outdent(ls, k57))
ok("codex whitespace drift keeps the file's context lines", "codex", CF, codex(update(C, h)),
   {C: replaced(ct, [(59, 1, added57)])}, [(C, 1, "whitespace", 57)])
h, _ = hunk(c, 57, 2, 1, added57, 3, drift=dedent)
refused("codex whitespace drift: indentation dropped unevenly is refused", "codex", CF,
        codex(update(C, h)), "patch_does_not_apply", "indentation",
        {"hunk": 1, "path": C, "reason": "indentation"})
h, e = hunk(c, 46, 2, 1, ["X"], 2, bare=True)
ok("codex first hunk without an @@ line", "codex", CF, codex(update(C, h)),
   {C: replaced(ct, [e])}, [(C, 1, "exact", 46)])
h1, e1 = hunk(c, 27, 1, 1, ["    /// The stable spelling (snake_case)."], 1)
h2, e2 = hunk(c, 39, 1, 2, ["    /// The first line of the span.", "    pub start: u32,"], 1)
h3, e3 = hunk(c, 72, 1, 1, ["/// Whether `path` is `dir` or lies under it (`None`: the root)."], 1)
ok("codex three hunks in one file", "codex", CF, codex(update(C, h1, h2, h3)),
   {C: replaced(ct, [e1, e2, e3])}, [(C, 1, "exact", 27), (C, 2, "exact", 39), (C, 3, "exact", 72)])
h1, e1 = hunk(c, 27, 1, 1, ["    /// The stable spelling (snake_case)."], 1)
h2, _ = hunk(c, 39, 1, 2, ["    /// nothing"], 1)
h2 = [l.replace("The first line.", "The very first line.") for l in h2]
refused("codex a good hunk and a missing one: nothing applies", "codex", CF,
        codex(update(C, h1, h2)), "patch_does_not_apply", "hunk 2",
        {"hunk": 2, "path": C, "reason": "not_found"})
refused("codex a hunk is sought after the previous one", "codex", CF,
        codex(update(C, hunk(c, 46, 1, 1, ["a"], 1)[0], hunk(c, 47, 1, 1, ["b"], 1)[0])),
        "patch_does_not_apply", "match nowhere", {"hunk": 2, "reason": "not_found"})


def twice(ls):
    """A line found exactly twice, and a unique line between them."""
    for i, l in enumerate(ls):
        if len(l.strip()) < 8:
            continue
        where = [j for j, m in enumerate(ls) if m == l]
        if len(where) == 2 and where[0] == i:
            for k in range(where[0] + 1, where[1]):
                a = ls[k]
                if a.strip() and ls.count(a) == 1 and sum(1 for m in ls if m.strip() == a.strip()) == 1:
                    return where, a.strip()
    raise SystemExit("no line found twice")


(first, second), anchor = twice(c)
repl = [c[second] + " // the second"]
h, e = hunk(c, second + 1, 0, 1, repl, 0, anchors=[anchor])
ok("codex an @@ anchor picks the occurrence after it", "codex", CF, codex(update(C, h)),
   {C: replaced(ct, [e])}, [(C, 1, "exact", second + 1)])
h, _ = hunk(c, second + 1, 0, 1, repl, 0)
refused("codex the same line without its anchor is ambiguous", "codex", CF, codex(update(C, h)),
        "patch_does_not_apply", "matches 2 places",
        {"hunk": 1, "reason": "ambiguous", "count": 2,
         "candidates": [{"line": first + 1, "text": c[first]}, {"line": second + 1, "text": c[second]}]})
h, _ = hunk(c, second + 1, 0, 1, repl, 0, anchors=["impl NoSuchThing {"])
refused("codex an anchor that matches nothing", "codex", CF, codex(update(C, h)),
        "patch_does_not_apply", "anchor", {"hunk": 1, "reason": "not_found", "anchor": "impl NoSuchThing {"})
anchor_line = c.index("impl LineSpan {") + 1
ok("codex insertion after an anchor", "codex", CF,
   codex(update(C, ["@@ impl LineSpan {", "+    /// Spans are inclusive at both ends."])),
   {C: replaced(ct, [(anchor_line + 1, 0, ["    /// Spans are inclusive at both ends."])])},
   [(C, 1, "exact", anchor_line + 1)])
# As Codex does: added lines with no context and no anchor go at the end.
ok("codex an insertion with no context is appended at the end", "codex", CF,
   codex(update(C, ["@@", "+// appended"])),
   {C: replaced(ct, [(len(c) + 1, 0, ["// appended"])])}, [(C, 1, "exact", len(c) + 1)])
refused("codex a hunk that changes nothing", "codex", CF,
        codex(update(C, ["@@", " " + c[48]])), "invalid_patch", "adds or removes no line", {"hunk": 1})
refused("codex ambiguous at the whitespace rung", "codex", CF,
        codex(update(C, ["@@", "-  }", "+}"])), "patch_does_not_apply", "rung whitespace",
        {"hunk": 1, "reason": "ambiguous", "rung": "whitespace"})

# Codex's leniencies: a heredoc wrapper with padded markers; typographic
# punctuation in the file read as ASCII at the last rung.
k = next(k for k, l in enumerate(c) if "self.start <= other.end && other.start <= self.end" in l) + 1
h, e = hunk(c, k, 0, 1, ["        self.start <= other.end && other.start <= self.end // heredoc"], 0)
ok("codex heredoc wrapper and padded markers", "codex", CF,
   "apply_patch <<'EOF'\n  *** Begin Patch\n  *** Update File: " + C + "\n" + "\n".join(h)
   + "\n\n *** End Patch \nEOF\n",
   {C: replaced(ct, [e])}, [(C, 1, "exact", k)])
dash = next(k for k, l in enumerate(c) if "no span \u2014 overlapping" in l) + 1
ok("codex ASCII hunk on a line with an em dash: the unicode_punctuation rung", "codex", CF,
   codex(update(C, ["@@", "-" + c[dash - 1].replace("\u2014", "-"),
                    "+/// shifted moves its symbols), or no span (overlapping every symbol of"])),
   {C: replaced(ct, [(dash, 1, ["/// shifted moves its symbols), or no span (overlapping every symbol of"])])},
   [(C, 1, "unicode_punctuation", dash)])

# Files: add, delete, move.
ok("codex add a file", "codex", CF,
   codex(["*** Add File: src/added.rs", "+//! Added.", "+", "+pub const X: u8 = 1;"]),
   {"src/added.rs": "//! Added.\n\npub const X: u8 = 1;\n"}, [])
ok("codex add an empty file", "codex", CF, codex(["*** Add File: src/empty.rs"]),
   {"src/empty.rs": ""}, [])
refused("codex add over an existing file", "codex", CF,
        codex(["*** Add File: " + C, "+x"]), "precondition_failed", "exists",
        {"path": C, "expected": "absent"})
ok("codex delete a file", "codex", CF, codex(["*** Delete File: " + C]), {C: None}, [])
refused("codex delete a missing file", "codex", CF, codex(["*** Delete File: src/gone.rs"]),
        "precondition_failed", "does not exist", {"path": "src/gone.rs", "actual": "absent"})
refused("codex update a missing file", "codex", CF,
        codex(update("src/gone.rs", ["@@", "-a", "+b"])), "precondition_failed", "does not exist",
        {"path": "src/gone.rs"})
h, e = hunk(c, 1, 0, 1, ["//! Claims (moved): leases an agent holds on resources, and when two of them"], 1)
ok("codex update and move", "codex", CF, codex(update(C, h, move="src/leases.rs")),
   {C: None, "src/leases.rs": replaced(ct, [e])}, [(C, 1, "exact", 1)])
ok("codex move without changes", "codex", CF, codex(update(C, move="src/leases.rs")),
   {C: None, "src/leases.rs": ct}, [])
refused("codex move onto an existing file", "codex", {C: "claims.rs", "src/path.rs": "path.rs"},
        codex(update(C, move="src/path.rs")), "precondition_failed", "exists",
        {"path": "src/path.rs", "expected": "absent"})
refused("codex the same file twice", "codex", CF,
        codex(["*** Delete File: " + C, "*** Add File: " + C, "+x"]), "invalid_patch",
        "already changed", {"path": C})
refused("codex a path that is both a file and a directory", "codex", CF,
        codex(["*** Add File: src/x", "+a", "*** Add File: src/x/y.rs", "+b"]), "invalid_patch",
        "to be a directory", {"path": "src/x/y.rs", "file": "src/x"})
refused("codex an absolute path", "codex", CF, codex(["*** Delete File: /etc/passwd"]),
        "path_escape", "absolute", {"line": 2})
refused("codex a path into .roundtable", "codex", CF, codex(["*** Add File: .roundtable/x", "+x"]),
        "path_escape", "", {"line": 2})

# Malformed envelopes.
refused("codex without Begin Patch", "codex", CF,
        "\n".join(update(C, ["@@", "-" + c[48], "+x"]) + ["*** End Patch"]) + "\n",
        "invalid_patch", "*** Begin Patch", {"line": 1})
refused("codex without End Patch", "codex", CF,
        "\n".join(["*** Begin Patch"] + update(C, ["@@", "-" + c[48], "+x"])) + "\n",
        "invalid_patch", "*** End Patch", {})
refused("codex an unknown section header", "codex", CF,
        codex(["*** Rename File: " + C]), "invalid_patch", "*** Add File", {"line": 2})
refused("codex a hunk line without a prefix", "codex", CF,
        codex(update(C, ["@@", "-" + c[48], "x"])), "invalid_patch", "a hunk line", {"line": 5})
refused("codex an update with no hunk", "codex", CF, codex(update(C)), "invalid_patch",
        "*** Update File", {"line": 2})
refused("codex an empty envelope", "codex", CF, "*** Begin Patch\n*** End Patch\n",
        "invalid_patch", "a file section", {"line": 2})

# ------------------------------------------------------------ several files
P = "src/path.rs"
p = lines_of("path.rs")
pt = fixture("path.rs")
TWO = {C: "claims.rs", P: "path.rs"}
np = ["pub struct RepoPath(String); // always clean"]
ok("sr two files in one document", "search_replace", TWO,
   sr_block(C, c[48:49], new49) + sr_block(P, p[13:14], np),
   {C: replaced(ct, [(49, 1, new49)]), P: replaced(pt, [(14, 1, np)])},
   [(C, 1, "exact", 49), (P, 2, "exact", 14)])
refused("sr two files, the second missing its match: neither changes", "search_replace", TWO,
        sr_block(C, c[48:49], new49) + sr_block(P, ["pub struct RepoPath(Vec<u8>);"], np),
        "patch_does_not_apply", "of src/path.rs", {"hunk": 2, "path": P, "reason": "not_found"})
h, e = hunk(p, 12, 1, 1, ["pub struct RepoPath(String); // clean"], 1)
ok("codex add, update and delete in one envelope", "codex", TWO,
   codex(["*** Add File: src/lib.rs", "+pub mod claims;"], update(P, h), ["*** Delete File: " + C]),
   {"src/lib.rs": "pub mod claims;\n", P: replaced(pt, [e]), C: None}, [(P, 1, "exact", 12)])
h, _ = hunk(p, 12, 1, 1, ["x"], 1)
refused("codex a good file and a bad one: nothing applies", "codex", TWO,
        codex(update(P, h), update(C, ["@@", "-fn not_here() {}", "+fn here() {}"])),
        "patch_does_not_apply", "hunk 2", {"hunk": 2, "path": C})
h, e = hunk(p, 45, 2, 1, ["    /// Validate `bytes` as a repository path (never trusting them)."], 1)
ok("codex envelope with CRLF line endings on an LF file", "codex", {P: "path.rs"},
   codex(update(P, h)).replace("\n", "\r\n"), {P: replaced(pt, [e])}, [(P, 1, "exact", 45)])
ok("sr blocks with CRLF line endings on an LF file", "search_replace", {P: "path.rs"},
   sr_block(P, p[13:14], np).replace("\n", "\r\n"), {P: replaced(pt, [(14, 1, np)])},
   [(P, 1, "exact", 14)])

# ------------------------------------------------------------------- CRLF
I = "src/id.rs"
i_ = lines_of("id_crlf.rs")
it = fixture("id_crlf.rs")
IF = {I: "id_crlf.rs"}


def first_index(ls, pred):
    return next(k for k, l in enumerate(ls) if pred(l))


k = first_index(i_, lambda l: l.startswith("pub struct Id"))
h, e = hunk(i_, k, 1, 1, ["pub struct Id(String); // checked"], 1)
ok("codex CRLF file, LF envelope, exact: new lines take CRLF", "codex", IF, codex(update(I, h)),
   {I: replaced(it, [e])}, [(I, 1, "exact", k)])
h, e = hunk(i_, k, 1, 1, ["pub struct Id(String);", "// (an identifier)"], 1, drift=trailing)
ok("codex CRLF file, trailing drift", "codex", IF, codex(update(I, h)), {I: replaced(it, [e])},
   [(I, 1, "trailing_whitespace", k)])
j = first_index(i_, lambda l: l.strip().startswith("pub fn new("))
ok("sr CRLF file, whitespace drift", "search_replace", IF,
   sr_block(I, *drifted(i_[j - 1 : j + 1], ["    pub fn new(s: &str) -> Result<Id, IdError> { // strict", i_[j]])),
   {I: replaced(it, [(j, 2, ["    pub fn new(s: &str) -> Result<Id, IdError> { // strict", i_[j]])])},
   [(I, 1, "whitespace", j)])
ok("sr CRLF file, two blocks", "search_replace", IF,
   sr_block(I, i_[k - 1 : k], ["pub struct Id(String);  "]) + sr_block(I, i_[0:1], ["//! Ids."]),
   {I: replaced(it, [(k, 1, ["pub struct Id(String);  "]), (1, 1, ["//! Ids."])])},
   [(I, 1, "exact", k), (I, 2, "exact", 1)])
ok("codex CRLF file, delete", "codex", IF, codex(["*** Delete File: " + I]), {I: None}, [])

# ------------------------------------------------------- no final newline
R = "src/resource.rs"
r = lines_of("resource_noeol.rs")
rt = fixture("resource_noeol.rs")
RF = {R: "resource_noeol.rs"}
n = len(r)
ok("codex replace the last line of a file without a final newline", "codex", RF,
   codex(update(R, ["@@", " " + r[n - 2], "-" + r[n - 1], "+} // tests", "*** End of File"])),
   {R: replaced(rt, [(n, 1, ["} // tests"])])}, [(R, 1, "exact", n - 1)])
ok("codex append at the end of a file without a final newline", "codex", RF,
   codex(update(R, ["@@", "+", "+// The end.", "*** End of File"])),
   {R: replaced(rt, [(n + 1, 0, ["", "// The end."])])}, [(R, 1, "exact", n + 1)])
refused("codex End of File on lines that do not end the file", "codex", RF,
        codex(update(R, ["@@", "-" + r[0], "+//! x", "*** End of File"])),
        "patch_does_not_apply", "hunk 1", {"hunk": 1, "reason": "not_found", "at_end": True})
refused("sr the last two lines of a file are ambiguous without more context", "search_replace", RF,
        sr_block(R, r[n - 2 : n], ["    }", "} // end of tests"]), "patch_does_not_apply",
        "matches 7 places", {"hunk": 1, "reason": "ambiguous", "count": 7})
ok("sr replace the last line of a file without a final newline", "search_replace", RF,
   sr_block(R, r[n - 3 : n], [r[n - 3], "    }", "} // end of tests"]),
   {R: replaced(rt, [(n - 2, 3, [r[n - 3], "    }", "} // end of tests"])])}, [(R, 1, "exact", n - 2)])
m = first_index(r, lambda l: l.startswith("pub enum Resource"))
ok("sr edit the middle of a file without a final newline", "search_replace", RF,
   sr_block(R, trailing(r[m : m + 1]), ["pub enum Resource { // what a claim names"]),
   {R: replaced(rt, [(m + 1, 1, ["pub enum Resource { // what a claim names"])])},
   [(R, 1, "trailing_whitespace", m + 1)])

# --------------------------------------------- a file with trailing blanks
T = "src/claims.rs"
tt = "".join(
    (cc + "   " if 46 <= k2 <= 50 else cc) + tm for k2, (cc, tm) in enumerate(split(ct), start=1)
)
with open(os.path.join(FILES, "claims_trailing.rs"), "w") as f:
    f.write(tt)
ok("sr the file has trailing blanks the search omits", "search_replace", {T: "claims_trailing.rs"},
   sr_block(T, c[47:50], new48), {T: replaced(tt, [(48, 3, new48)])},
   [(T, 1, "trailing_whitespace", 48)])
h, e = hunk(c, 47, 1, 1, ["    pub fn intersects(self, other: LineSpan) -> bool { // shared"], 1)
ok("codex the file has trailing blanks the hunk omits; context keeps them", "codex",
   {T: "claims_trailing.rs"}, codex(update(T, h)), {T: replaced(tt, [e])},
   [(T, 1, "trailing_whitespace", 47)])

# ------------------------------------------------------- shell and Python
S = "scripts/test"
s = lines_of("test.sh")
st = fixture("test.sh")
SF = {S: "test.sh"}
ok("sr shell script, exact", "search_replace", SF,
   sr_block(S, s[9:10], ["cargo fmt --all -- --check"]),
   {S: replaced(st, [(10, 1, ["cargo fmt --all -- --check"])])}, [(S, 1, "exact", 10)])
h, e = hunk(s, 11, 1, 1, ["step \"lint (clippy, warnings are errors)\""], 1, drift=trailing)
ok("codex shell script, trailing drift", "codex", SF, codex(update(S, h)),
   {S: replaced(st, [e])}, [(S, 1, "trailing_whitespace", 11)])
refused("sr shell script: part of a line is no match (blocks are whole lines)", "search_replace", SF,
        sr_block(S, ["cargo"], ["cargo +stable"]), "patch_does_not_apply", "", {"reason": "not_found"})

Y = "python/roundtable/_records.py"
y = lines_of("records.py")
yt = fixture("records.py")
YF = {Y: "records.py"}
q = first_index(y, lambda l: l.startswith("class ChangedFile"))
body = y[q + 15 : q + 18]
ok("sr Python, whitespace drift (indentation lost)", "search_replace", YF,
   sr_block(Y, *drifted(body, [body[0], body[1].replace("d.get(\"other_path\")", "d.get(\"other_path\") or None"), body[2]])),
   {Y: replaced(yt, [(q + 16, 3, [body[0], body[1].replace("d.get(\"other_path\")", "d.get(\"other_path\") or None"), body[2]])])},
   [(Y, 1, "whitespace", q + 16)])
raw = first_index(y[q:], lambda l: "raw=dict(d)," in l) + q
h, e = hunk(y, raw + 1, 0, 1, ["            raw=dict(d),  # a copy"], 0, anchors=["class ChangedFile(_Record):"])
refused("codex Python, an anchor does not make a later repeated line unique", "codex", YF,
        codex(update(Y, h)), "patch_does_not_apply", "places", {"hunk": 1, "reason": "ambiguous"})
h, e = hunk(y, raw, 1, 1, ["            raw=dict(d),  # a copy"], 1, anchors=["class ChangedFile(_Record):"])
ok("codex Python, an anchor and context make it unique", "codex", YF, codex(update(Y, h)),
   {Y: replaced(yt, [e])}, [(Y, 1, "exact", raw)])
ok("codex Python, add a module next to it", "codex", YF,
   codex(["*** Add File: python/roundtable/_formats.py", "+\"\"\"Change formats.\"\"\"", "+", "+FORMATS = (\"unified\", \"codex\", \"search_replace\")"]),
   {"python/roundtable/_formats.py": "\"\"\"Change formats.\"\"\"\n\nFORMATS = (\"unified\", \"codex\", \"search_replace\")\n"}, [])

with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump({"cases": CASES}, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(len(CASES), "cases")
