"""The stubs match the extension (mypy.stubtest) and a typed host program
passes `mypy --strict`. scripts/test-python runs both directly and sets
RT_STATIC_CHECKED=1 so they are not run twice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import roundtable

HERE = Path(__file__).parent
skip = pytest.mark.skipif(os.environ.get("RT_STATIC_CHECKED") == "1", reason="run by scripts/test-python directly")


def run(*args: str, cwd: Path = HERE) -> None:
    env = dict(os.environ)
    env.setdefault("MYPY_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "roundtable-mypy-cache"))
    proc = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@skip
def test_stubtest(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    # stubtest writes its cache into the working directory: not the tree's.
    run("mypy.stubtest", "roundtable._roundtable", cwd=tmp_path)


@skip
def test_typed_usage_passes_mypy_strict() -> None:
    pytest.importorskip("mypy")
    run("mypy", "--strict", "--no-incremental", str(HERE / "typed_usage.py"))
    run("mypy", "--strict", "--no-incremental", str(HERE / "test_issue33_item3_event_data.py"))
    run("mypy", "--strict", "--no-incremental", "-p", "roundtable")


def test_typed_usage_runs(tmp_path: Path) -> None:
    sys.path.insert(0, str(HERE))
    try:
        import typed_usage
    finally:
        sys.path.remove(str(HERE))
    tools = {t["name"] for t in roundtable.tools()}
    assert typed_usage.run(tmp_path) == f"1 file, {len(tools)} tools"
    assert typed_usage.TOOLS_CALLED == tools, "every tool is called through its typed method"


BAD_ENUM_USE = '''\
from typing import NoReturn

import roundtable


def assert_never(value: NoReturn) -> NoReturn:
    raise AssertionError(value)


def misspelled(session: roundtable.Session) -> None:
    session.events_wait(since_seq=0, kinds=["proposal.creatd"])


def incomplete(status: roundtable.InterdiffStatus) -> str:
    if status == "changed":
        return "both"
    elif status == "only_in_from":
        return "earlier"
    else:
        assert_never(status)
'''


def test_issue33_item3_mypy_rejects_a_misspelled_kind_and_a_switch_that_misses_a_value(tmp_path: Path) -> None:
    """The schema's enums are ``Literal`` types: mypy --strict refuses a
    kind that is not one, and a switch that forgets a value."""
    pytest.importorskip("mypy")
    bad = tmp_path / "bad_enums.py"
    bad.write_text(BAD_ENUM_USE)
    env = dict(os.environ)
    env.setdefault("MYPY_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "roundtable-mypy-cache"))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(bad)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert 'bad_enums.py:11: error: List item 0 has incompatible type "Literal[\'proposal.creatd\']"' in out, out
    assert "bad_enums.py:20: error: Argument 1 to \"assert_never\" has incompatible type \"Literal['only_in_to']\"" in out, out
    assert "Found 2 errors" in out, out
