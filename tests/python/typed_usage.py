"""A small host program, checked with `mypy --strict` against the installed
package's stubs and annotations (tests/python/test_static.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Dict, List, Optional

import roundtable
from roundtable import Actor

PATCH = """\
--- a/app.py
+++ b/app.py
@@ -1 +1 @@
-print("hello")
+print("hello, world")
"""


def failed_stages(report: roundtable.ValidationReport) -> List[str]:
    return [s.name for s in report.stages if s.status == "failed"]


def run(root: Path) -> Optional[str]:
    (root / "app.py").write_text('print("hello")\n')
    host: Actor = Actor.orchestrator("host")
    author = Actor.agent("author")
    reviewer = Actor.agent("reviewer")
    with roundtable.open(root, durability="normal") as engine:
        engine.call("agent.register", {"agent_id": "author", "roles": ["author"]}, host)
        engine.call("agent.register", {"agent_id": "reviewer", "roles": ["reviewer"]}, host)
        engine.call("task.create", {"task_id": "t", "title": "Greet the world"}, host)
        claim: roundtable.Claim = engine.acquire_claim(author, "file:app.py", ttl_s=600)
        token: int = claim.token
        created = engine.create_proposal(
            author, task_id="t", title="Greet the world", summary_md="Wider greeting.",
            patch=PATCH, risk="low", affected_resources=["file:app.py"],
        )
        pid: str = created.proposal.id
        engine.call("proposal.request_review", {"proposal_id": pid}, author)
        vote: roundtable.Vote = engine.cast_vote(reviewer, pid, created.revision.number, "approve")
        assert vote.vote == "approve" and token > 0
        report = engine.validate(host, pid)
        if not report.valid:
            return ", ".join(failed_stages(report))
        try:
            applied: roundtable.Applied = engine.apply(host, pid, 1)
        except roundtable.ValidationFailed as e:
            details: Dict[str, object] = e.report
            return str(details.get("valid"))
        except roundtable.RoundtableError as e:
            code: str = e.code
            return code
        landed: roundtable.ProposalStatus = applied.proposal.status
        assert landed is roundtable.ProposalStatus.APPLIED
        rolled: roundtable.RolledBack = engine.rollback(host, applied.transaction.id)
        back = roundtable.Proposal.from_dict(engine.call("proposal.get", {"proposal_id": pid}, host)["proposal"])
        assert back.status is roundtable.ProposalStatus.ROLLED_BACK and back.reverts is None
        page: roundtable.EventPage = engine.events(host, proposal_id=pid, limit=100)
        kinds: List[str] = [e.kind for e in page.events]
        assert rolled.transaction.rollback_of == applied.transaction.id and kinds
    summary = roundtable.parse_patch(PATCH)
    files: List[Dict[str, object]] = summary["files"]
    changes = roundtable.apply_patch(root, PATCH, check=True)
    return f"{len(files)} file, {len(changes)} change"


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        print(run(Path(d)))
