"""Issue 16 item 7, the Python host's repro: a directory claim on `pkg/`
stays fresh when running the tests leaves `pkg/__pycache__/` behind and
`__pycache__/` is in `.gitignore`; a file git does not ignore still makes it
stale."""

from __future__ import annotations

from pathlib import Path

import roundtable
from conftest import ALICE, BOB, HOST, register

PKG_PATCH = """\
--- a/pkg/mod.py
+++ b/pkg/mod.py
@@ -1 +1 @@
-x = 1
+x = 2
"""


def test_directory_claim_unaffected_by_pycache(repo: Path, engine: roundtable.Engine) -> None:
    register(engine)
    (repo / ".gitignore").write_text("__pycache__/\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("x = 1\n")
    claim = engine.session(ALICE).claim_acquire(resource_id="directory:pkg", type="write", ttl_s=600).claim
    created = engine.session(ALICE).proposal_create(task_id="excited-greeting", title="Bump x", summary_md="x is 2.", patch=PKG_PATCH)
    pid = created.proposal.id
    engine.call(ALICE, "proposal.request_review", {"proposal_id": pid})
    engine.session(BOB).vote_cast(proposal_id=pid, revision=1, vote="approve").vote

    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "mod.cpython-312.pyc").write_bytes(b"\x00bytecode")
    report = engine.session(HOST).patch_validate(proposal_id=pid)
    assert report.stage("claims").status == "passed", report.failed
    assert report.valid, report.failed

    (repo / "pkg" / "other.py").write_text("y = 1\n")
    stale = engine.session(HOST).patch_validate(proposal_id=pid).stage("claims")
    assert stale.status == "failed"
    assert any(r.get("code") == "stale_claim" and r.get("claim_id") == claim.id for r in stale.reasons)
