"""Shared fixtures: a fresh repository with the demo's files, and the actors
of the demo's governed change (roundtable-cli/src/demo.rs)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import roundtable
from roundtable import Actor

LIB_RS = """\
pub fn greet(name: &str) -> String {
    format!("Hello, {name}")
}

pub fn shout(name: &str) -> String {
    greet(name).to_uppercase()
}
"""

# Revision 1 changes `greet` (claimed) but also appends a function outside it.
FIRST_PATCH = """\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,7 +1,11 @@
 pub fn greet(name: &str) -> String {
-    format!("Hello, {name}")
+    format!("Hello, {name}!")
 }
 
 pub fn shout(name: &str) -> String {
     greet(name).to_uppercase()
 }
+
+pub fn farewell(name: &str) -> String {
+    format!("Goodbye, {name}")
+}
"""

# The repair: only the claimed function changes.
SECOND_PATCH = """\
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,3 +1,3 @@
 pub fn greet(name: &str) -> String {
-    format!("Hello, {name}")
+    format!("Hello, {name}!")
 }
"""

HOST = Actor.orchestrator("host")
ALICE = Actor.agent("alice")
BOB = Actor.agent("bob")
SAM = Actor.agent("sam")
CAROL = Actor.human("carol")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with src/lib.rs and README.md."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "lib.rs").write_text(LIB_RS)
    (root / "README.md").write_text("demo project\n")
    return root


@pytest.fixture
def engine(repo: Path) -> Iterator[roundtable.Engine]:
    with roundtable.open(repo, durability="off") as e:
        yield e


def register(engine: roundtable.Engine) -> None:
    """The demo's agents and task."""
    engine.call(HOST, "agent.register", {"agent_id": "alice", "roles": ["author"]})
    engine.call(HOST, "agent.register", {"agent_id": "bob", "roles": ["reviewer"]})
    engine.call(HOST, "agent.register", {"agent_id": "sam", "roles": ["reviewer", "security"]})
    engine.call(HOST, "task.create", {"task_id": "excited-greeting", "title": "Greet with more enthusiasm"})


def files(root: Path) -> Dict[str, str]:
    """Every file under root except the store: path -> sha256 and mode."""
    out: Dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".roundtable"]
        for name in filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest() + f":{st.st_mode:o}"
    return out


def store_rows(root: Path) -> List[str]:
    """Every row of every table of the store, as SQL text."""
    dbs = sorted((root / ".roundtable").rglob("*.db")) + sorted((root / ".roundtable").rglob("*.sqlite*"))
    dbs = [d for d in dbs if not str(d).endswith(("-wal", "-shm", "-journal"))]
    assert dbs, "the store database exists"
    rows: List[str] = []
    for db in dbs:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows.extend(con.iterdump())
        finally:
            con.close()
    return rows
