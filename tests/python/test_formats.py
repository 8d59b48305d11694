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
    created = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="Exclaim", summary_md="!", patch=CODEX, patch_format="codex")
    assert created.revision.format == "codex_patch"
    change = created.revision.changeset[0]
    assert change.raw["matches"] == [{"hunk": 1, "rung": "exact", "line": 2}]
    revised = engine.session(ALICE).proposal_attach_patch(proposal_id=created.proposal.id, expected_revision=1, patch=BLOCKS, patch_format="search_replace", note_md="Hi.")
    # The search carries trailing blanks: matched at the second rung.
    assert revised.revision.format == "search_replace"
    assert revised.revision.changeset[0].raw["matches"] == [{"hunk": 1, "rung": "trailing_whitespace", "line": 2}]


def test_an_ambiguous_match_is_refused_naming_the_candidates(repo: Path, engine: roundtable.Engine) -> None:
    register(engine)
    before_files, before_rows = files(repo), store_rows(repo)
    with pytest.raises(roundtable.PatchDoesNotApply) as refused:
        engine.session(ALICE).proposal_create(task_id="excited-greeting", title="Brace", summary_md="?", patch="src/lib.rs\n<<<<<<< SEARCH\n}\n=======\n} // end\n>>>>>>> REPLACE\n", patch_format="search_replace")
    assert refused.value.code == "patch_does_not_apply"
    assert refused.value.details["reason"] == "ambiguous"
    assert refused.value.details["hunk"] == 1
    assert [c["line"] for c in refused.value.details["candidates"]] == [3, 7]
    assert files(repo) == before_files and store_rows(repo) == before_rows


def test_a_latin1_patch_given_as_bytes_lands_byte_exact(repo: Path, engine: roundtable.Engine) -> None:
    """`patch_base64`: a diff that is not UTF-8 crosses JSON exactly."""
    import base64

    from conftest import BOB, HOST

    register(engine)
    (repo / "latin1.txt").write_bytes(b"caf\xe9\nkeep \xff\n")
    engine.call(
        ALICE, "claim.acquire", {"resource_id": "file:latin1.txt", "type": "write", "ttl_s": 600}
    )
    patch = b"--- a/latin1.txt\n+++ b/latin1.txt\n@@ -1,2 +1,2 @@\n-caf\xe9\n+na\xefve\n keep \xff\n"
    made = engine.call(
        ALICE,
        "proposal.create",
        {
            "task_id": "excited-greeting",
            "title": "Latin-1",
            "summary_md": "bytes",
            "patch_base64": base64.b64encode(patch).decode("ascii"),
        },
    )
    pid = made["proposal"]["id"]
    got = engine.call(BOB, "proposal.get", {"proposal_id": pid, "include_content": True})
    assert base64.b64decode(got["content_base64"]) == patch
    engine.call(ALICE, "proposal.request_review", {"proposal_id": pid})
    engine.call(BOB, "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"})
    engine.call(HOST, "patch.apply", {"proposal_id": pid, "revision": 1})
    assert (repo / "latin1.txt").read_bytes() == b"na\xefve\nkeep \xff\n"
