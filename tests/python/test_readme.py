"""The Python quickstart runs as written (so it cannot go stale).

It lives in python/README.md (the package's own page, `readme` in
pyproject.toml) between ANCHOR markers, and the book's Python guide
includes it from there."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "python" / "README.md"
GUIDE = REPO / "docs" / "src" / "guides" / "python.md"
CLI_REFERENCE = REPO / "docs" / "src" / "reference" / "cli.md"


def quickstart(anchor: str = "quickstart") -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(rf"ANCHOR: {anchor} -->\n(.*?)<!-- ANCHOR_END: {anchor}", text, re.S)
    assert found, f"python/README.md marks its {anchor} with ANCHOR: {anchor}"
    block = re.search(r"```python\n(.*?)```", found.group(1), re.S)
    assert block, f"the {anchor} is a ```python block"
    return block.group(1)


def test_the_book_shows_the_quickstart_that_runs() -> None:
    assert "{{#include ../../../python/README.md:quickstart}}" in GUIDE.read_text(encoding="utf-8")


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


def test_issue34_item5_readme_fleet_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The README's reviewer and host loops, on roundtable.worker."""
    code = quickstart("fleet")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code, str(README) + ":python-fleet", "exec"), {"__name__": "__fleet__"})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.strip() == "['note0.txt', 'note1.txt', 'note2.txt']"


# Codes no CLI command can print: `Patch::reverse` (irreversible_patch) is a
# library call only.
NOT_FROM_THE_CLI = {"irreversible_patch", "cancelled", "deadline_exceeded", "inherited_engine"}


def test_readme_cli_codes_are_the_engine_codes() -> None:
    """The CLI reference's list of refusal codes is the core's table (through
    ERROR_CODES), less the codes no command can print: a new code fails here
    until the CLI reference names it."""
    import roundtable

    text = CLI_REFERENCE.read_text(encoding="utf-8")
    found = re.search(r"exits 1 \(codes:\s*(.*?):\s+every\s+row", text, re.S)
    assert found, "the CLI reference lists the CLI's refusal codes"
    listed = re.findall(r"`([a-z_]+)`", found.group(1))
    assert len(listed) == len(set(listed)), "a code is listed twice"
    engine = set(roundtable.ERROR_CODES)
    assert NOT_FROM_THE_CLI <= engine
    assert set(listed) == engine - NOT_FROM_THE_CLI
