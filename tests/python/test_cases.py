"""The language-neutral corpora, replayed through ``engine.call``:

- tests/cases/tools/*.json, the tool scenarios (format: that directory's
  README.md), each in a fresh workspace;
- tests/cases/tools/self-test/*.json, scenarios wrong on purpose: each must
  fail at exactly its ``fails_at`` step, so the matcher is shown to catch
  what it claims to;
- tests/cases/edit/*.json, the edit-plan fixtures, through proposal.create
  with the plan and (when accepted) the apply, the files on disk compared.

The Rust, C and Go suites replay the same files.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest

import roundtable
from roundtable import Actor

CASES = Path(__file__).resolve().parent.parent / "cases"
TOOLS = CASES / "tools"
SELF_TEST = TOOLS / "self-test"
EDIT = CASES / "edit"

CASE_KEYS = {"description", "files", "steps"}
STEP_KEYS = {"note", "actor", "tool", "args", "expect", "save", "files"}


class CaseFailure(Exception):
    """A case failed at step `step` (-1: before any step)."""

    def __init__(self, step: int, message: str) -> None:
        super().__init__(message)
        self.step = step
        self.message = message


def dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def mismatch(expected: Any, actual: Any, where: str) -> Optional[str]:
    """Where `actual` fails to match `expected` (the README's subset rules), or None."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"at {where or '/'}: expected an object {dump(expected)}, got {dump(actual)}"
        for k, v in expected.items():
            if k not in actual:
                return f"at {where}/{k}: expected {dump(v)}, got no such key (keys: {sorted(actual)})"
            m = mismatch(v, actual[k], f"{where}/{k}")
            if m:
                return m
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"at {where or '/'}: expected an array {dump(expected)}, got {dump(actual)}"
        if len(expected) != len(actual):
            return f"at {where or '/'}: expected {len(expected)} elements {dump(expected)}, got {len(actual)}: {dump(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            m = mismatch(e, a, f"{where}/{i}")
            if m:
                return m
        return None
    same_type = (
        (expected is None and actual is None)
        or (isinstance(expected, bool) and isinstance(actual, bool))
        or (isinstance(expected, str) and isinstance(actual, str))
        or (
            isinstance(expected, (int, float))
            and not isinstance(expected, bool)
            and isinstance(actual, (int, float))
            and not isinstance(actual, bool)
        )
    )
    if not same_type or expected != actual:
        return f"at {where or '/'}: expected {dump(expected)}, got {dump(actual)}"
    return None


def substitute(v: Any, saved: Dict[str, Any]) -> Any:
    """Every string "${name}" replaced by the value saved as name."""
    if isinstance(v, str) and v.startswith("${") and v.endswith("}"):
        name = v[2:-1]
        if name not in saved:
            raise KeyError(name)
        return saved[name]
    if isinstance(v, dict):
        return {k: substitute(x, saved) for k, x in v.items()}
    if isinstance(v, list):
        return [substitute(x, saved) for x in v]
    return v


def pointer(doc: Any, ptr: str) -> Any:
    """RFC 6901: the value at `ptr` in `doc`; KeyError when there is none."""
    if ptr == "":
        return doc
    if not ptr.startswith("/"):
        raise KeyError(ptr)
    for token in ptr[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and (token == "0" or not token.startswith("0")) and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            raise KeyError(ptr)
    return doc


def content(spec: Dict[str, Any]) -> Tuple[bytes, bool]:
    """A file spec's bytes and executable bit."""
    extra = set(spec) - {"text", "base64", "executable"}
    if extra or ("text" in spec) == ("base64" in spec):
        raise ValueError(f"a file needs text or base64 (and may say executable): {dump(spec)}")
    data = spec["text"].encode("utf-8") if "text" in spec else base64.b64decode(spec["base64"], validate=True)
    return data, bool(spec.get("executable", False))


def write_files(root: Path, files: Dict[str, Any]) -> None:
    for path, spec in files.items():
        data, executable = content(spec)
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        p.chmod(0o755 if executable else 0o644)


def check_files(root: Path, files: Dict[str, Any]) -> Optional[str]:
    for path, spec in files.items():
        p = root / path
        if spec is None:
            if os.path.lexists(p):
                return f"file {path}: expected absent, but it exists"
            continue
        data, executable = content(spec)
        if p.is_symlink() or not p.is_file():
            return f"file {path}: expected a regular file, found {'nothing' if not os.path.lexists(p) else 'something else'}"
        got = p.read_bytes()
        if got != data:
            return f"file {path}: expected {data!r}, got {got!r}"
        got_x = bool(p.stat().st_mode & stat.S_IXUSR)
        if got_x != executable:
            return f"file {path}: expected executable {executable}, got {got_x}"
    return None


def run_case(case: Dict[str, Any], root: Path) -> None:
    """Replay one scenario in the empty directory `root`; raises CaseFailure."""
    extra = set(case) - CASE_KEYS - {"fails_at"}
    if extra or not isinstance(case.get("steps"), list) or not isinstance(case.get("files"), dict):
        raise CaseFailure(-1, f"a case is {{description, files, steps}}; unknown keys {sorted(extra)}")
    write_files(root, case["files"])
    saved: Dict[str, Any] = {}
    with roundtable.open(root, durability="off") as engine:
        for i, s in enumerate(case["steps"]):
            tool = s.get("tool", "?")

            def fail(message: str) -> CaseFailure:
                note = f" ({s['note']})" if "note" in s else ""
                return CaseFailure(i, f"steps[{i}] {tool}{note}: {message}")

            unknown = set(s) - STEP_KEYS
            if unknown or not {"actor", "tool", "expect"} <= set(s):
                raise fail(f"a step has actor, tool, expect and maybe note, args, save, files; got keys {sorted(s)}")
            expect = s["expect"]
            if not (set(expect) == {"ok"} or set(expect) in ({"error"}, {"error", "details"})):
                raise fail(f"expect is {{ok}} or {{error, details?}}, got {dump(expect)}")
            try:
                args = substitute(s.get("args", {}), saved)
                expect = substitute(expect, saved)
            except KeyError as e:
                raise fail(f"${{{e.args[0]}}} was not saved by an earlier step")
            a = s["actor"]
            if set(a) != {"kind", "id"}:
                raise fail(f"an actor is {{kind, id}}: {dump(a)}")
            who = Actor.parse(f"{a['kind']}:{a['id']}")
            try:
                result: Any = engine.call(who, tool, args)
                error = None
            except roundtable.RoundtableError as e:
                result, error = None, e
            if "ok" in expect:
                if error is not None:
                    raise fail(f"expected success, got {error.code}: {error.message} {dump(error.details)}")
                m = mismatch(expect["ok"], result, "")
                if m:
                    raise fail(m)
            else:
                if error is None:
                    raise fail(f"expected error {expect['error']}, got success: {dump(result)}")
                if error.code != expect["error"]:
                    raise fail(f"expected error {expect['error']}, got {error.code}: {error.message} {dump(error.details)}")
                if "details" in expect:
                    m = mismatch(expect["details"], error.details, "")
                    if m:
                        raise fail(f"details {m}")
            for name, ptr in s.get("save", {}).items():
                if error is not None:
                    raise fail("save needs a successful call")
                try:
                    saved[name] = pointer(result, ptr)
                except KeyError:
                    raise fail(f"save {name}: nothing at {ptr} in {dump(result)}")
            if "files" in s:
                m = check_files(root, s["files"])
                if m:
                    raise fail(m)


def load(path: Path) -> Dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        doc: Dict[str, Any] = json.load(f)
    return doc


TOOL_CASES = sorted(TOOLS.glob("*.json"))
SELF_TESTS = sorted(SELF_TEST.glob("*.json"))


def test_the_corpus_is_there() -> None:
    assert len(TOOL_CASES) >= 8, TOOL_CASES
    assert len(SELF_TESTS) >= 10, SELF_TESTS


def test_the_corpus_is_what_generate_py_writes() -> None:
    subprocess.run([sys.executable, str(TOOLS / "generate.py"), "--check"], check=True)


@pytest.mark.parametrize("path", TOOL_CASES, ids=[p.name for p in TOOL_CASES])
def test_tool_case(path: Path, tmp_path: Path) -> None:
    case = load(path)
    assert "fails_at" not in case, "fails_at belongs in self-test/ only"
    try:
        run_case(case, tmp_path)
    except CaseFailure as e:
        pytest.fail(f"{path.name}: {e.message}", pytrace=False)


@pytest.mark.parametrize("path", SELF_TESTS, ids=[p.name for p in SELF_TESTS])
def test_self_test_case_fails_where_it_says(path: Path, tmp_path: Path) -> None:
    case = load(path)
    want = case["fails_at"]
    with pytest.raises(CaseFailure) as failed:
        run_case(case, tmp_path)
    assert failed.value.step == want, f"{path.name}: failed at {failed.value.step}, not {want}: {failed.value.message}"


# ---- the edit-plan fixtures, through the tool surface ---------------------

HOST = Actor.orchestrator("host")
ALICE = Actor.agent("alice")
BOB = Actor.agent("bob")


def edit_fixtures() -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for path in sorted(EDIT.glob("*.json")):
        for c in load(path)["cases"]:
            out.append((f"{path.name}::{c['name']}", c))
    return out


EDIT_CASES = edit_fixtures()


def test_every_edit_fixture_is_replayed() -> None:
    assert len(EDIT_CASES) >= 58
    assert sum("plan_text" in c for _, c in EDIT_CASES) == 1


def after_bytes(spec: Dict[str, Any]) -> bytes:
    return spec["text"].encode("utf-8") if "text" in spec else base64.b64decode(spec["base64"])


@pytest.mark.parametrize("case", [c for _, c in EDIT_CASES], ids=[n for n, _ in EDIT_CASES])
def test_edit_fixture(case: Dict[str, Any], tmp_path: Path) -> None:
    """The fixture's tree in a fresh workspace, its plan proposed by alice
    (who claims the whole tree). A refusal must have the fixture's code,
    message part and details; an accepted plan's changeset summary must
    name the fixture's paths, operations and before states, and once
    approved and applied the files on disk must be the expected bytes and
    modes (and renamed-away or deleted paths gone)."""
    if "plan_text" in case:
        pytest.skip("plan_text is not a JSON value: the tool surface takes the plan inside the arguments' JSON")
    files = {p: {"base64": f["base64"], "executable": f["executable"]} for p, f in case["files"].items()}
    write_files(tmp_path, files)
    with roundtable.open(tmp_path, durability="off") as e:
        e.call(HOST, "agent.register", {"agent_id": "alice", "roles": ["author"]})
        e.call(HOST, "agent.register", {"agent_id": "bob", "roles": ["reviewer"]})
        e.call(HOST, "task.create", {"task_id": "t", "title": "edit"})
        e.call(ALICE, "claim.acquire", {"resource_id": "directory:.", "type": "write", "ttl_s": 600})
        args = {"task_id": "t", "title": "edit", "summary_md": "an edit plan", "edit_plan": case["plan"]}
        expect = case["expect"]
        if "error" in expect:
            want = expect["error"]
            with pytest.raises(roundtable.RoundtableError) as refused:
                e.call(ALICE, "proposal.create", args)
            err = refused.value
            assert err.code == want["code"], err.message
            assert want["message_contains"] in err.message
            m = mismatch(want.get("details", {}), err.details, "")
            assert m is None, m
            assert e.call(HOST, "proposal.list", {})["proposals"] == []
            assert check_files(tmp_path, files) is None
            return
        made = e.call(ALICE, "proposal.create", args)
        got = made["revision"]["changeset"]
        want_cs = expect["changeset"]
        assert [f["path"] for f in got] == [w["path"] for w in want_cs]
        for g, w in zip(got, want_cs):
            op = w["operation"]
            assert g["operation"] == op["kind"], g
            assert g["other_path"] == op.get("from", op.get("to")), g
            before = g["before"] and {"digest": g["before"]["digest"], "executable": g["before"]["executable"]}
            assert before == w["before"], g
            if w["after"] is None:
                assert g["after"] is None, g
            else:
                assert g["after"]["executable"] == w["after"]["executable"], g
                assert g["after"]["size"] == len(after_bytes(w["after"])), g
        pid = made["proposal"]["id"]
        e.call(ALICE, "proposal.request_review", {"proposal_id": pid})
        e.call(BOB, "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"})
        e.call(HOST, "patch.apply", {"proposal_id": pid, "revision": 1})
        after = {
            w["path"]: None
            if w["after"] is None
            else {"base64": base64.b64encode(after_bytes(w["after"])).decode(), "executable": w["after"]["executable"]}
            for w in want_cs
        }
        m = check_files(tmp_path, after)
        assert m is None, m
        untouched = {p: f for p, f in files.items() if p not in after}
        assert check_files(tmp_path, untouched) is None
