#!/usr/bin/env python3
"""Writes cases.json: the cases of aider's own SEARCH/REPLACE test suite,
as data, replayed against roundtable by roundtable/tests/peers_aider.rs.

Source: https://github.com/Aider-AI/aider, file tests/basic/test_editblock.py
at commit 1956104d337c501a2c4e0dc987919531856da2d3 (read for the rules:
aider/coders/editblock_coder.py at 0006d70a7c02aba0f078b0105e466c88466e2292).
aider is licensed under the Apache License 2.0; the edit texts, file
contents and expected results below are taken from that test file (test
names kept), adapted only as each case's `note` says. No aider code is
used: each expected result is the one aider's test asserts, or, for a
parsing test, the result of applying the edits it asserts to the file
given here.

Format of cases.json: {"source", "licence", "rules": {rule: text},
"cases": [{"name", "aider_test", "note", "files": {path: text},
"edit": the SEARCH/REPLACE text,
"aider": {"files": {path: text}} | {"error": what aider raises},
"roundtable": "agree" | "both_refuse" | {"refused": rule, "code": code}}]}

`aider.files` lists every path aider writes (the others stay unchanged).
Run `python3 generate.py` here to rewrite cases.json.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

RULES = {
    "prose": "Text outside the blocks is refused (invalid_patch, naming the line): only a file path "
    "(its decorations stripped), fences, blank lines and `...` may surround blocks. aider skips "
    "prose; roundtable refuses it rather than risk reading a sentence as a path.",
    "ambiguous": "A SEARCH that matches several places (at the first rung that matches) is refused "
    "(patch_does_not_apply, reason ambiguous, naming the places); aider replaces the first.",
    "blank_line": "A blank SEARCH line must match a blank line of the file (patch_does_not_apply); "
    "aider retries without a leading blank SEARCH line.",
    "literal_path": "The path is the line as written, its decorations stripped; aider matches a "
    "similar name among the files in the chat, roundtable never guesses a file (precondition_failed: "
    "the named file does not exist).",
    "one_path": "One path line precedes a block; several are refused (invalid_patch); aider takes the "
    "last.",
    "literal_search": "SEARCH and REPLACE texts are literal; aider first strips a filename line and "
    "fences wrapping them (patch_does_not_apply when the wrapped text is not in the file).",
}

cases = []


def case(name, test, files, edit, aider, roundtable, note=""):
    cases.append({"name": name, "aider_test": test, "note": note, "files": files, "edit": edit,
                  "aider": aider, "roundtable": roundtable})


def refused(rule, code):
    return {"refused": rule, "code": code}


def block(path, search, replace):
    head = path + "\n" if path is not None else ""
    return head + "<<<<<<< SEARCH\n" + search + "=======\n" + replace + ">>>>>>> REPLACE\n"


# --- replace_most_similar_chunk(whole, part, replace) tests: one block on f.txt.
def chunk(test, whole, part, replace, expected, roundtable):
    case(test, test, {"f.txt": whole}, block("f.txt", part, replace),
         {"files": {"f.txt": expected}}, roundtable,
         "whole/part/replace as the file, the SEARCH and the REPLACE of one block")


chunk("test_replace_part_with_missing_varied_leading_whitespace",
      "\n    line1\n    line2\n        line3\n    line4\n",
      "line2\n    line3\n", "new_line2\n    new_line3\n",
      "\n    line1\n    new_line2\n        new_line3\n    line4\n", "agree")
chunk("test_replace_part_with_missing_leading_whitespace",
      "    line1\n    line2\n    line3\n", "line1\nline2\n", "new_line1\nnew_line2\n",
      "    new_line1\n    new_line2\n    line3\n", "agree")
chunk("test_replace_multiple_matches",
      "line1\nline2\nline1\nline3\n", "line1\n", "new_line\n",
      "new_line\nline2\nline1\nline3\n", refused("ambiguous", "patch_does_not_apply"))
chunk("test_replace_multiple_matches_missing_whitespace",
      "    line1\n    line2\n    line1\n    line3\n", "line1\n", "new_line\n",
      "    new_line\n    line2\n    line1\n    line3\n", refused("ambiguous", "patch_does_not_apply"))
chunk("test_replace_part_with_just_some_missing_leading_whitespace",
      "    line1\n    line2\n    line3\n", " line1\n line2\n", " new_line1\n     new_line2\n",
      "    new_line1\n        new_line2\n    line3\n", "agree")
chunk("test_replace_part_with_missing_leading_whitespace_including_blank_line",
      "    line1\n    line2\n    line3\n", "\n  line1\n  line2\n", "  new_line1\n  new_line2\n",
      "    new_line1\n    new_line2\n    line3\n", refused("blank_line", "patch_does_not_apply"))


# --- find_original_update_blocks tests: the asserted edits applied to a file
# made of their SEARCH texts; each with prose also replayed without it.
def parsed(test, edit, files, result, roundtable, bare=None, bare_roundtable="agree"):
    note = "the edits aider's test asserts, applied to the files given here"
    case(test, test, files, edit, result, roundtable, note)
    if bare is not None:
        case(test + " (prose removed)", test, files, bare, result, bare_roundtable,
             note + "; the prose lines around the blocks removed")


PROSE = refused("prose", "invalid_patch")

parsed("test_find_original_update_blocks", """
Here's the change:

```text
foo.txt
<<<<<<< SEARCH
Two
=======
Tooooo
>>>>>>> REPLACE
```

Hope you like it!
""", {"foo.txt": "One\nTwo\nThree\n"}, {"files": {"foo.txt": "One\nTooooo\nThree\n"}}, PROSE,
       "```text\nfoo.txt\n" + block(None, "Two\n", "Tooooo\n") + "```\n")

parsed("test_find_original_update_blocks_quote_below_filename", """
Here's the change:

foo.txt
```text
<<<<<<< SEARCH
Two
=======
Tooooo
>>>>>>> REPLACE
```

Hope you like it!
""", {"foo.txt": "One\nTwo\nThree\n"}, {"files": {"foo.txt": "One\nTooooo\nThree\n"}}, PROSE,
       "foo.txt\n```text\n" + block(None, "Two\n", "Tooooo\n") + "```\n")

parsed("test_find_original_update_blocks_unclosed", """
Here's the change:

```text
foo.txt
<<<<<<< SEARCH
Two
=======
Tooooo


oops!
""", {"foo.txt": "One\nTwo\nThree\n"}, {"error": "ValueError: Expected `>>>>>>> REPLACE` or `=======`"},
       "both_refuse", "```text\nfoo.txt\n<<<<<<< SEARCH\nTwo\n=======\nTooooo\n\n\noops!\n", "both_refuse")

parsed("test_find_original_update_blocks_missing_filename", """
Here's the change:

```text
<<<<<<< SEARCH
Two
=======
Tooooo


oops!
>>>>>>> REPLACE
""", {"foo.txt": "One\nTwo\nThree\n"}, {"error": "ValueError: Bad/missing filename"},
       "both_refuse", "```text\n<<<<<<< SEARCH\nTwo\n=======\nTooooo\n\n\noops!\n>>>>>>> REPLACE\n",
       "both_refuse")

NO_FINAL = """
aider/coder.py
<<<<<<< SEARCH
            self.console.print("[red]^C again to quit")
=======
            self.io.tool_error("^C again to quit")
>>>>>>> REPLACE

aider/coder.py
<<<<<<< SEARCH
            self.io.tool_error("Malformed ORIGINAL/UPDATE blocks, retrying...")
            self.io.tool_error(err)
=======
            self.io.tool_error("Malformed ORIGINAL/UPDATE blocks, retrying...")
            self.io.tool_error(str(err))
>>>>>>> REPLACE

aider/coder.py
<<<<<<< SEARCH
            self.console.print("[red]Unable to get commit message from gpt-3.5-turbo. Use /commit to try again.\n")
=======
            self.io.tool_error("Unable to get commit message from gpt-3.5-turbo. Use /commit to try again.")
>>>>>>> REPLACE

aider/coder.py
<<<<<<< SEARCH
            self.console.print("[red]Skipped commit.")
=======
            self.io.tool_error("Skipped commit.")
>>>>>>> REPLACE"""


def sides(text):
    """The SEARCH and REPLACE texts of each block of `text`, in order."""
    out = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "<<<<<<< SEARCH":
            j = lines.index("=======", i)
            k = lines.index(">>>>>>> REPLACE", j)
            out.append(("".join(l + "\n" for l in lines[i + 1:j]), "".join(l + "\n" for l in lines[j + 1:k])))
            i = k
        i += 1
    return out


nf = sides(NO_FINAL)
parsed("test_find_original_update_blocks_no_final_newline", NO_FINAL,
       {"aider/coder.py": "".join(s for s, _ in nf)},
       {"files": {"aider/coder.py": "".join(r for _, r in nf)}}, "agree")

INCOMPLETE = """
No problem! Here are the changes to patch `subprocess.check_output` instead of `subprocess.run` in both tests:

```python
tests/test_repomap.py
<<<<<<< SEARCH
    def test_check_for_ctags_failure(self):
        with patch("subprocess.run") as mock_run:
            mock_run.side_effect = Exception("ctags not found")
=======
    def test_check_for_ctags_failure(self):
        with patch("subprocess.check_output") as mock_check_output:
            mock_check_output.side_effect = Exception("ctags not found")
>>>>>>> REPLACE

<<<<<<< SEARCH
    def test_check_for_ctags_success(self):
        with patch("subprocess.run") as mock_run:
            mock_run.return_value = CompletedProcess(args=["ctags", "--version"], returncode=0, stdout='''{
  "_type": "tag",
  "name": "status",
  "path": "aider/main.py",
  "pattern": "/^    status = main()$/",
  "kind": "variable"
}''')
=======
    def test_check_for_ctags_success(self):
        with patch("subprocess.check_output") as mock_check_output:
            mock_check_output.return_value = '''{
  "_type": "tag",
  "name": "status",
  "path": "aider/main.py",
  "pattern": "/^    status = main()$/",
  "kind": "variable"
}'''
>>>>>>> REPLACE
```

These changes replace the `subprocess.run` patches with `subprocess.check_output` patches in both `test_check_for_ctags_failure` and `test_check_for_ctags_success` tests.
"""
inc = sides(INCOMPLETE)
inc_lines = INCOMPLETE.split("\n")
parsed("test_incomplete_edit_block_missing_filename", INCOMPLETE,
       {"tests/test_repomap.py": "".join(s for s, _ in inc)},
       {"files": {"tests/test_repomap.py": "".join(r for _, r in inc)}}, PROSE,
       "\n".join(l for l in inc_lines if not l.startswith(("No problem!", "These changes"))))

parsed("test_find_original_update_blocks_mupltiple_same_file", """
Here's the change:

```text
foo.txt
<<<<<<< SEARCH
one
=======
two
>>>>>>> REPLACE

...

<<<<<<< SEARCH
three
=======
four
>>>>>>> REPLACE
```

Hope you like it!
""", {"foo.txt": "one\nthree\n"}, {"files": {"foo.txt": "two\nfour\n"}}, PROSE,
       "```text\nfoo.txt\n" + block(None, "one\n", "two\n") + "\n...\n\n" + block(None, "three\n", "four\n") + "```\n")

parsed("test_deepseek_coder_v2_filename_mangling", """
Here's the change:

 ```python
foo.txt
```
```python
<<<<<<< SEARCH
one
=======
two
>>>>>>> REPLACE
```

Hope you like it!
""", {"foo.txt": "one\n"}, {"files": {"foo.txt": "two\n"}}, PROSE,
       " ```python\nfoo.txt\n```\n```python\n" + block(None, "one\n", "two\n") + "```\n")

parsed("test_new_file_created_in_same_folder", """
Here's the change:

path/to/a/file2.txt
```python
<<<<<<< SEARCH
=======
three
>>>>>>> REPLACE
```

another change

path/to/a/file1.txt
```python
<<<<<<< SEARCH
one
=======
two
>>>>>>> REPLACE
```

Hope you like it!
""", {"path/to/a/file1.txt": "one\n"},
       {"files": {"path/to/a/file2.txt": "three\n", "path/to/a/file1.txt": "two\n"}}, PROSE,
       "path/to/a/file2.txt\n```python\n" + block(None, "", "three\n") + "```\n\npath/to/a/file1.txt\n```python\n"
       + block(None, "one\n", "two\n") + "```\n")

parsed("test_find_original_update_blocks_quad_backticks_with_triples_in_LLM_reply", """
Here's the change:

foo.txt
```text
<<<<<<< SEARCH
=======
Tooooo
>>>>>>> REPLACE
```

Hope you like it!
""", {}, {"files": {"foo.txt": "Tooooo\n"}}, PROSE,
       "foo.txt\n```text\n" + block(None, "", "Tooooo\n") + "```\n")

SH = """#!/bin/bash
# Check if exactly one argument is provided
if [ "$#" -ne 1 ]; then
    echo "Usage: $0 <argument>" >&2
    exit 1
fi

# Echo the first argument
echo "$1"

exit 0
"""
parsed("test_find_original_update_blocks_with_sh_language_identifier",
       "\nHere's a shell script:\n\n```sh\ntest_hello.sh\n" + block(None, "", SH) + "```\n",
       {}, {"files": {"test_hello.sh": SH}}, PROSE,
       "```sh\ntest_hello.sh\n" + block(None, "", SH) + "```\n")

CS_S = 'Console.WriteLine("Hello World!");\n'
CS_R = 'Console.WriteLine("Hello, C# World!");\n'
parsed("test_find_original_update_blocks_with_csharp_language_identifier",
       "\nHere's a C# code change:\n\n```csharp\nProgram.cs\n" + block(None, CS_S, CS_R) + "```\n",
       {"Program.cs": CS_S}, {"files": {"Program.cs": CS_R}}, PROSE,
       "```csharp\nProgram.cs\n" + block(None, CS_S, CS_R) + "```\n")

# --- Coder runs (a mocked model reply applied to real files).
parsed("test_create_new_file_with_other_file_in_chat",
       "\nDo this:\n\nnewfile.txt\n" + block(None, "", "creating a new file\n") + "\n",
       {"file.txt": "one\ntwo\nthree\n"}, {"files": {"newfile.txt": "creating a new file\n"}}, PROSE,
       "newfile.txt\n" + block(None, "", "creating a new file\n"))
parsed("test_full_edit",
       "\nDo this:\n\ntmpfile.txt\n" + block(None, "two\n", "new\n") + "\n",
       {"tmpfile.txt": "one\ntwo\nthree\n"}, {"files": {"tmpfile.txt": "one\nnew\nthree\n"}}, PROSE,
       "tmpfile.txt\n" + block(None, "two\n", "new\n"))
cases[-1]["note"] += " (the temporary file named tmpfile.txt; test_full_edit_dry_run is the same edit with aider's dry-run I/O flag, not a separate case: a changeset never writes)"
cases[-2]["note"] += " (the temporary file named tmpfile.txt)"

# --- find_filename(lines, fence, valid_fnames): the lines before a block on
# files file1.py, file2.py, dir/file3.py.
CHAT = {"file1.py": "x\n", "file2.py": "x\n", "dir/file3.py": "x\n"}


def filename(label, lines, aider_path, roundtable, search="x\n"):
    edit = "".join(l + "\n" for l in lines) + block(None, search, "y\n")
    case("test_find_filename: " + label, "test_find_filename", dict(CHAT), edit,
         {"files": {aider_path: "y\n"}}, roundtable,
         "the lines aider's test gives find_filename, followed by a block")


filename("filename on a single line", ["file1.py", "```"], "file1.py", "agree")
filename("filename in fence", ["```python", "file3.py", "```"], "dir/file3.py",
         refused("literal_path", "precondition_failed"))
filename("no valid filename", ["```", "invalid_file.py", "```"], "invalid_file.py", "agree", search="")
cases[-1]["note"] += " (an empty SEARCH, creating it: aider's test asserts only the name)"
filename("multiple fences", ["```python", "file1.py", "```", "```", "file2.py", "```"], "file2.py",
         refused("one_path", "invalid_patch"))
filename("extra characters", ["# file1.py", "```"], "file1.py", "agree")
filename("fuzzy matching", ["file1_py", "```"], "file1.py", refused("literal_path", "precondition_failed"))
CHAT["\\windows\\__init__.py"] = "x\n"
filename("fuzzy matching a backslashed path", ["\\windows__init__.py", "```"], "\\windows\\__init__.py",
         refused("literal_path", "precondition_failed"))

# --- strip_quoted_wrapping, as do_replace applies it to SEARCH and REPLACE.
WRAPPED = "We just want this content\nNot the filename and triple quotes\n"
case("test_strip_quoted_wrapping", "test_strip_quoted_wrapping", {"filename.ext": WRAPPED},
     block("filename.ext", "filename.ext\n```\n" + WRAPPED + "```\n", "filename.ext\n```\nNew content\n```\n"),
     {"files": {"filename.ext": "New content\n"}}, refused("literal_search", "patch_does_not_apply"),
     "the test's input as a SEARCH (and a REPLACE wrapped alike) of filename.ext")
BARE = "We just want this content\nNot the triple quotes\n"
case("test_strip_quoted_wrapping_no_filename", "test_strip_quoted_wrapping_no_filename",
     {"filename.ext": BARE}, block("filename.ext", "```\n" + BARE + "```\n", "New content\n"),
     {"files": {"filename.ext": "New content\n"}}, refused("literal_search", "patch_does_not_apply"),
     "the test's input as a SEARCH of filename.ext")
case("test_strip_quoted_wrapping_no_wrapping", "test_strip_quoted_wrapping_no_wrapping",
     {"filename.ext": BARE}, block("filename.ext", BARE, "New content\n"),
     {"files": {"filename.ext": "New content\n"}}, "agree", "the test's input as a SEARCH of filename.ext")

doc = {
    "source": {"repo": "Aider-AI/aider", "path": "tests/basic/test_editblock.py",
               "commit": "1956104d337c501a2c4e0dc987919531856da2d3"},
    "licence": "Apache-2.0 (aider); the cases are data taken from its test suite",
    "rules": RULES,
    "cases": cases,
}
with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump(doc, f, indent=1, ensure_ascii=False)
    f.write("\n")
print(len(cases), "cases")
