"""Replays the language-neutral scenario corpus, tests/cases/tools/*.json
(the format: that directory's README.md), through ``engine.call``, each
scenario in a fresh workspace. The Rust, C and Go suites replay the same
files; tests/python/test_edit_cases.py replays the edit-plan fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

import roundtable
from roundtable import Actor

CORPUS = Path(__file__).resolve().parents[1] / "cases" / "tools"
SCENARIOS = sorted(CORPUS.glob("*.json"))


class StepFailed(Exception):
    """Scenario step `step` did not do what it expects."""

    def __init__(self, step: int, why: str) -> None:
        super().__init__(f"step {step}: {why}")
        self.step = step


def dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, sort_keys=True)


def substitute(v: Any, saved: Dict[str, Any]) -> Any:
    """A string that is exactly ``${name}`` becomes the saved value; a
    ``${name}`` inside a longer string is replaced by the saved string."""
    if isinstance(v, str):
        if v.startswith("${") and v.endswith("}") and v[2:-1] in saved:
            return saved[v[2:-1]]
        for name, value in saved.items():
            if isinstance(value, str):
                v = v.replace("${" + name + "}", value)
        return v
    if isinstance(v, list):
        return [substitute(x, saved) for x in v]
    if isinstance(v, dict):
        return {k: substitute(x, saved) for k, x in v.items()}
    return v


def same_scalar(want: Any, got: Any) -> bool:
    """JSON equality, type included: true is not 1, 1 is not "1"."""
    if isinstance(want, bool) or isinstance(got, bool):
        return type(want) is type(got) and want == got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return bool(want == got)
    return type(want) is type(got) and want == got


def mismatch(want: Any, got: Any, at: str) -> Optional[str]:
    """Where ``got`` lacks what ``want`` names (objects by key, arrays
    element by element with the same length, other values equal), or None."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{at or '/'}: {dump(got)} is not an object"
        for k, w in want.items():
            if k not in got:
                return f"{at}/{k}: missing (expected {dump(w)})"
            m = mismatch(w, got[k], f"{at}/{k}")
            if m:
                return m
        return None
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{at or '/'}: {dump(got)}, expected {len(want)} items {dump(want)}"
        for i, (w, g) in enumerate(zip(want, got)):
            m = mismatch(w, g, f"{at}/{i}")
            if m:
                return m
        return None
    if not same_scalar(want, got):
        return f"{at or '/'}: {dump(got)}, expected {dump(want)}"
    return None


def pointer(doc: Any, ptr: str) -> Any:
    """RFC 6901; KeyError when nothing is there."""
    if ptr == "":
        return doc
    for token in ptr.lstrip("/").split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict) and token in doc:
            doc = doc[token]
        elif isinstance(doc, list) and token.isdigit() and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            raise KeyError(ptr)
    return doc


def check_files(root: Path, files: Dict[str, Optional[str]]) -> Optional[str]:
    for path, want in files.items():
        at = root / path
        got = at.read_bytes().decode("utf-8", "replace") if at.is_file() else None
        if got != want:
            return f"file {path}: {dump(got)}, expected {dump(want)}"
    return None


def actor(spelling: str) -> Actor:
    return Actor.parse(spelling)


def run(scenario: Dict[str, Any], root: Path) -> int:
    """Replays one scenario in the empty directory ``root``: the number of
    steps, or StepFailed naming the first step that differed and how."""
    for path, text in scenario["files"].items():
        at = root / path
        at.parent.mkdir(parents=True, exist_ok=True)
        at.write_bytes(text.encode("utf-8"))
    saved: Dict[str, Any] = {}
    steps: List[Dict[str, Any]] = scenario["steps"]
    with roundtable.open(root, durability="off") as engine:
        for i, step in enumerate(steps):
            tool = step["tool"]

            def fail(why: str) -> StepFailed:
                return StepFailed(i, f"({tool} as {step['as']}): {why}")

            args = substitute(step.get("args", {}), saved)
            expect = substitute(step["expect"], saved)
            try:
                # An actor no binding can build (an unknown kind) is refused
                # before the call, with the code the library gives it.
                result: Any = engine.call(actor(step["as"]), tool, args)
                error: Optional[roundtable.RoundtableError] = None
            except roundtable.RoundtableError as e:
                result, error = None, e
            if "error" in expect:
                if error is None:
                    raise fail(f"succeeded ({dump(result)}), expected {expect['error']}")
                if error.code != expect["error"]:
                    raise fail(f"{error.code}: {error.message} {dump(error.details)}, expected {expect['error']}")
                if "details" in expect:
                    m = mismatch(expect["details"], error.details, "details")
                    if m:
                        raise fail(m)
            else:
                if error is not None:
                    raise fail(f"refused: {error.code}: {error.message} {dump(error.details)}")
                m = mismatch(expect["ok"], result, "")
                if m:
                    raise fail(m)
                for name, ptr in step.get("save", {}).items():
                    try:
                        saved[name] = pointer(result, ptr)
                    except KeyError:
                        raise fail(f"nothing at {ptr} to save") from None
            if "files" in step:
                m = check_files(root, step["files"])
                if m:
                    raise fail(m)
    return len(steps)


def load(path: Path) -> Dict[str, Any]:
    doc: Dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def test_the_corpus_is_there() -> None:
    assert len(SCENARIOS) >= 4, SCENARIOS


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path, tmp_path: Path) -> None:
    try:
        steps = run(load(path), tmp_path)
    except StepFailed as e:
        pytest.fail(f"{path.name}: {e}", pytrace=False)
    assert steps >= 1


# ---- the runner is not a rubber stamp ----------------------------------


def first_step(steps: List[Dict[str, Any]], match: Any) -> int:
    """The index of the first step for which ``match(step)`` holds."""
    for i, s in enumerate(steps):
        if match(s):
            return i
    raise AssertionError("no such step")


def refusal(steps: List[Dict[str, Any]]) -> int:
    return first_step(steps, lambda st: "error" in st["expect"])


def wrong_value(s: List[Dict[str, Any]]) -> int:
    s[0]["expect"]["ok"]["agent"]["id"] = "someone-else"
    return 0


def wrong_type(s: List[Dict[str, Any]]) -> int:
    # created is true: 1 is not true.
    s[0]["expect"]["ok"]["created"] = 1
    return 0


def missing_key(s: List[Dict[str, Any]]) -> int:
    s[0]["expect"]["ok"]["agent"]["no_such_field"] = None
    return 0


def wrong_length(s: List[Dict[str, Any]]) -> int:
    s[0]["expect"]["ok"]["agent"]["roles"] = ["author", "reviewer"]
    return 0


def wrong_code(s: List[Dict[str, Any]]) -> int:
    s[0]["expect"] = {"error": "conflict"}
    return 0


def wrong_success(s: List[Dict[str, Any]]) -> int:
    i = refusal(s)
    s[i]["expect"] = {"ok": {}}
    return i


def wrong_error_code(s: List[Dict[str, Any]]) -> int:
    i = refusal(s)
    s[i]["expect"]["error"] = "not_found" if s[i]["expect"]["error"] != "not_found" else "conflict"
    return i


def wrong_details(s: List[Dict[str, Any]]) -> int:
    i = refusal(s)
    s[i]["expect"]["details"] = {"no_such_detail": True}
    return i


def wrong_file(s: List[Dict[str, Any]]) -> int:
    i = first_step(s, lambda st: any(v is not None for v in st.get("files", {}).values()))
    path = next(p for p, v in s[i]["files"].items() if v is not None)
    s[i]["files"][path] = "not this\n"
    return i


def wrong_absence(s: List[Dict[str, Any]]) -> int:
    i = first_step(s, lambda st: any(v is not None for v in st.get("files", {}).values()))
    path = next(p for p, v in s[i]["files"].items() if v is not None)
    s[i]["files"][path] = None
    return i


def wrong_save(s: List[Dict[str, Any]]) -> int:
    i = first_step(s, lambda st: "save" in st)
    name = next(iter(s[i]["save"]))
    s[i]["save"][name] = "/no/such/pointer"
    return i


WRONG = [
    ("governed-change.json", wrong_value),
    ("governed-change.json", wrong_type),
    ("governed-change.json", missing_key),
    ("governed-change.json", wrong_length),
    ("governed-change.json", wrong_code),
    ("governed-change.json", wrong_file),
    ("governed-change.json", wrong_absence),
    ("governed-change.json", wrong_save),
    ("refusals-state.json", wrong_success),
    ("refusals-state.json", wrong_error_code),
    ("refusals-state.json", wrong_details),
]


@pytest.mark.parametrize("name,spoil", WRONG, ids=[f.__name__ for _, f in WRONG])
def test_a_wrong_expectation_fails_the_runner(name: str, spoil: Any, tmp_path: Path) -> None:
    scenario = load(CORPUS / name)
    spoiled = spoil(scenario["steps"])
    with pytest.raises(StepFailed) as failed:
        run(scenario, tmp_path)
    assert failed.value.step == spoiled, f"failed at step {failed.value.step}, not the spoiled {spoiled}: {failed.value}"


def test_mismatch_rules() -> None:
    assert mismatch({"a": 1}, {"a": 1, "b": 2}, "") is None
    assert mismatch({"a": [{"x": 1}, {}]}, {"a": [{"x": 1, "y": 2}, {"z": 3}]}, "") is None
    assert mismatch({"a": [{}]}, {"a": [{}, {}]}, "") == '/a: [{}, {}], expected 1 items [{}]'
    assert mismatch(True, 1, "") is not None
    assert mismatch(1, True, "") is not None
    assert mismatch("1", 1, "") is not None
    assert mismatch(None, {}, "") is not None
    assert mismatch({"a": None}, {}, "") == "/a: missing (expected null)"
    assert mismatch({"a": None}, {"a": None}, "") is None
    assert substitute({"x": "${p}", "y": "in ${p}.", "n": "${n}"}, {"p": "P", "n": 3}) == {"x": "P", "y": "in P.", "n": 3}
    assert pointer({"a": [{"b~/c": 5}]}, "/a/0/b~0~1c") == 5
    with pytest.raises(KeyError):
        pointer({"a": []}, "/a/0")
