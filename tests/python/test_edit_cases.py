"""Replays the edit-plan fixtures, tests/cases/edit/*.json (format: its
README.md and generate.py), through the Python binding: each case's files
in a workspace, its plan proposed with ``proposal.create``, and the
revision's changeset (paths, operations, before and after digests and
executable bits) or the refusal compared with the expectation. The Rust
suite replays the same fixtures against the core directly
(roundtable/tests/edit_plans.rs)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import roundtable
from roundtable import Actor

FIXTURES = Path(__file__).resolve().parents[1] / "cases" / "edit"
HOST, ADA = Actor.orchestrator("host"), Actor.agent("ada")


def cases() -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for file in sorted(FIXTURES.glob("*.json")):
        for case in json.loads(file.read_text())["cases"]:
            out.append((f"{file.stem}: {case['name']}", case))
    return out


CASES = cases()


def digest(data: bytes) -> str:
    return "blob:sha256:" + hashlib.sha256(data).hexdigest()


def expected_bytes(after: Dict[str, Any]) -> bytes:
    return after["text"].encode() if "text" in after else base64.b64decode(after["base64"])


def subset(want: Any, got: Any, at: str) -> None:
    if isinstance(want, dict):
        assert isinstance(got, dict), f"{at}: {got!r}"
        for k, v in want.items():
            assert k in got, f"{at}/{k}: missing from {got!r}"
            subset(v, got[k], f"{at}/{k}")
    else:
        assert want == got, f"{at}: {got!r}, expected {want!r}"


@pytest.mark.parametrize("name,case", CASES, ids=[n for n, _ in CASES])
def test_edit_fixture(name: str, case: Dict[str, Any], tmp_path: Path) -> None:
    if "plan" not in case:
        pytest.skip("plan_text: input that is not JSON cannot be an edit_plan argument (a JSON object)")
    root = tmp_path / "repo"
    root.mkdir()
    for path, f in case["files"].items():
        at = root / path
        at.parent.mkdir(parents=True, exist_ok=True)
        at.write_bytes(base64.b64decode(f["base64"]))
        if f.get("executable"):
            os.chmod(at, 0o755)
    with roundtable.open(root, durability="off") as engine:
        engine.call(HOST, "agent.register", {"agent_id": "ada", "roles": ["author"]})
        engine.call(HOST, "task.create", {"task_id": "t", "title": "edit fixture"})
        args = {"task_id": "t", "title": "fixture", "summary_md": name, "edit_plan": case["plan"]}
        expect = case["expect"]
        if "error" in expect:
            with pytest.raises(roundtable.RoundtableError) as raised:
                engine.call(ADA, "proposal.create", args)
            error = expect["error"]
            assert raised.value.code == error["code"], f"{raised.value.code}: {raised.value}"
            assert error.get("message_contains", "") in str(raised.value)
            subset(error.get("details", {}), raised.value.details, "details")
            assert engine.call(HOST, "proposal.list", {})["proposals"] == [], "a refused plan made nothing"
            return
        made = engine.call(ADA, "proposal.create", args)
        got = {f["path"]: f for f in made["revision"]["changeset"]}
        want = expect["changeset"]
        assert sorted(got) == sorted(w["path"] for w in want)
        for w in want:
            g = got[w["path"]]
            kind = w["operation"]["kind"]
            assert g["operation"] == kind, f"{w['path']}: {g['operation']}, expected {kind}"
            if w["before"] is None:
                assert g.get("before") is None, w["path"]
            else:
                assert g["before"]["digest"] == w["before"]["digest"], w["path"]
                assert g["before"]["executable"] == w["before"]["executable"], w["path"]
            if w["after"] is None:
                assert g.get("after") is None, w["path"]
            else:
                assert g["after"]["digest"] == digest(expected_bytes(w["after"])), w["path"]
                assert g["after"]["executable"] == w["after"]["executable"], w["path"]
