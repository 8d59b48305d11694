"""The README's Python quickstart runs as written (so it cannot go stale)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def quickstart() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.find("## Python")
    assert start >= 0, "README.md has a '## Python' section"
    block = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert block, "the Python section has a ```python block"
    return block.group(1)


def test_readme_quickstart_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = quickstart()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, str(README) + ":python-quickstart", "exec"), {"__name__": "__quickstart__"})
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert "applied" in out and "rolled back" in out
