"""The agent-native change formats through the typed methods."""

from __future__ import annotations

from pathlib import Path

import pytest

import roundtable
from conftest import ALICE, files, register, store_rows

CODEX = """\
*** Begin Patch
*** Update File: src/lib.rs
@@ pub fn greet(name: &str) -> String {
-    format!("Hello, {name}")
+    format!("Hello, {name}!")
*** End Patch
"""

BLOCKS = """\
src/lib.rs
<<<<<<< SEARCH
    format!("Hello, {name}")   
=======
    format!("Hi, {name}!")
>>>>>>> REPLACE
"""


def test_create_and_attach_take_the_patch_format(repo: Path, engine: roundtable.Engine) -> None:
    register(engine)
    created = engine.create_proposal(
        ALICE, task_id="excited-greeting", title="Exclaim", summary_md="!", patch=CODEX, patch_format="codex"
    )
    assert created.revision.format == "codex_patch"
    change = created.revision.changeset[0]
    assert change.raw["matches"] == [{"hunk": 1, "rung": "exact", "line": 2}]
    revised = engine.attach_patch(
        ALICE,
        created.proposal.id,
        expected_revision=1,
        patch=BLOCKS,
        patch_format="search_replace",
        note_md="Hi.",
    )
    # The search carries trailing blanks: matched at the second rung.
    assert revised.revision.format == "search_replace"
    assert revised.revision.changeset[0].raw["matches"] == [{"hunk": 1, "rung": "trailing_whitespace", "line": 2}]


def test_an_ambiguous_match_is_refused_naming_the_candidates(repo: Path, engine: roundtable.Engine) -> None:
    register(engine)
    before_files, before_rows = files(repo), store_rows(repo)
    with pytest.raises(roundtable.PatchDoesNotApply) as refused:
        engine.create_proposal(
            ALICE,
            task_id="excited-greeting",
            title="Brace",
            summary_md="?",
            patch="src/lib.rs\n<<<<<<< SEARCH\n}\n=======\n} // end\n>>>>>>> REPLACE\n",
            patch_format="search_replace",
        )
    assert refused.value.code == "patch_does_not_apply"
    assert refused.value.details["reason"] == "ambiguous"
    assert refused.value.details["hunk"] == 1
    assert [c["line"] for c in refused.value.details["candidates"]] == [3, 7]
    assert files(repo) == before_files and store_rows(repo) == before_rows
