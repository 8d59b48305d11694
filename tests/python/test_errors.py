"""Every error family is raised by a real call and caught by its class with
the right ``.code``; every code the extension knows maps to a class."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any, Callable, Type

import pytest

import roundtable
from roundtable import _roundtable
from conftest import ALICE, BOB, FIRST_PATCH, HOST, LIB_RS, SECOND_PATCH, register


def raises(cls: Type[roundtable.RoundtableError], code: str, call: Callable[[], Any]) -> roundtable.RoundtableError:
    with pytest.raises(cls) as info:
        call()
    err = info.value
    assert err.code == code, (err.code, str(err))
    assert isinstance(err, roundtable.RoundtableError)
    assert isinstance(err.details, dict)
    assert str(err) == err.message and err.message
    assert type(err) is roundtable.error_class(code) or code == "io"
    return err


def test_every_code_maps_to_a_class() -> None:
    assert len(roundtable.ERROR_CODES) == len(set(roundtable.ERROR_CODES)) >= 24
    seen = set()
    for code in roundtable.ERROR_CODES:
        cls = roundtable.error_class(code)
        assert cls is not roundtable.RoundtableError, f"{code} has no class of its own"
        assert code in cls.codes
        seen.add(cls)
        with pytest.raises(cls) as info:
            _roundtable._raise_error(code, f"a {code} error", {"k": [1, None]})
        assert type(info.value) is cls
        assert info.value.code == code
        assert info.value.details == {"k": [1, None]}
    assert len(seen) == len(roundtable.ERROR_CODES), "one class per code"
    # The families catch their members.
    assert issubclass(roundtable.PatchDoesNotApply, roundtable.PatchError)
    assert issubclass(roundtable.PathEscape, roundtable.PathError)
    assert issubclass(roundtable.AmbiguousSymbol, roundtable.SymbolError)
    assert issubclass(roundtable.IncompatibleStore, roundtable.StoreError)
    assert issubclass(roundtable.InvalidArgument, ValueError)
    assert issubclass(roundtable.NotFound, LookupError)
    assert issubclass(roundtable.RoundtableOSError, OSError)


@pytest.mark.parametrize(
    "err, builtin",
    [
        (errno.ENOENT, FileNotFoundError),
        (errno.EACCES, PermissionError),
        (errno.EPERM, PermissionError),
        (errno.EEXIST, FileExistsError),
        (errno.EISDIR, IsADirectoryError),
        (errno.ENOTDIR, NotADirectoryError),
    ],
)
def test_io_maps_to_builtin_oserror(err: int, builtin: Type[OSError]) -> None:
    with pytest.raises(builtin) as info:
        _roundtable._raise_error("io", "cannot write src/x", {"path": "src/x"}, err)
    e = info.value
    assert isinstance(e, roundtable.RoundtableOSError) and isinstance(e, roundtable.RoundtableError)
    assert (e.errno, e.filename, e.code) == (err, "src/x", "io")


def test_unknown_codes_are_refused() -> None:
    raises(roundtable.InvalidArgument, "invalid_argument", lambda: _roundtable._raise_error("nope", "x"))


def test_engine_error_families(repo: Path, engine: roundtable.Engine) -> None:
    (repo / "m.py").write_text("def f():\n    pass\n\ndef f():\n    pass\n")
    (repo / "notes.txt").write_text("hi\n")
    register(engine)

    e = raises(
        roundtable.InvalidArgument,
        "invalid_argument",
        lambda: engine.call("task.create", {"task_id": "t2", "title": "x", "colour": "red"}, HOST),
    )
    assert e.details["field"] == "colour"
    assert isinstance(e, ValueError)
    e = raises(roundtable.InvalidArgument, "invalid_argument", lambda: engine.call("task.create", {"title": object()}, HOST))
    assert e.details["field"] == "title"
    e = raises(roundtable.InvalidArgument, "invalid_argument", lambda: engine.call("task.create", {"title": "x", "n": [2**70]}, HOST))
    assert e.details["field"] == "n[0]"

    e = raises(roundtable.NotFound, "not_found", lambda: engine.call("proposal.get", {"proposal_id": "nope"}, HOST))
    assert e.details == {"kind": "proposal", "id": "nope"}
    raises(roundtable.NotFound, "not_found", lambda: engine.call("no.such.tool", {}, HOST))

    claim = engine.acquire_claim(ALICE, "file:src/lib.rs")
    raises(roundtable.Conflict, "conflict", lambda: engine.acquire_claim(BOB, "file:src/lib.rs"))
    raises(roundtable.UnknownSymbol, "unknown_symbol", lambda: engine.acquire_claim(ALICE, "symbol:src/lib.rs#nope"))
    e = raises(roundtable.AmbiguousSymbol, "ambiguous_symbol", lambda: engine.acquire_claim(ALICE, "symbol:m.py#f"))
    assert len(e.details["candidates"]) == 2
    raises(roundtable.UnsupportedLanguage, "unsupported_language", lambda: engine.acquire_claim(ALICE, "symbol:notes.txt#f"))
    raises(roundtable.InvalidPolicy, "invalid_policy", lambda: engine.call("policy.set", {"document": "bogus = ["}, HOST))
    raises(
        roundtable.InvalidEditPlan,
        "invalid_edit_plan",
        lambda: engine.create_proposal(ALICE, task_id="excited-greeting", title="t", summary_md="s", edit_plan={}),
    )

    engine.call("task.create", {"task_id": "k", "title": "a", "idempotency_key": "key-1"}, HOST)
    raises(
        roundtable.IdempotencyConflict,
        "idempotency_conflict",
        lambda: engine.call("task.create", {"task_id": "k", "title": "b", "idempotency_key": "key-1"}, HOST),
    )

    created = engine.create_proposal(
        ALICE, task_id="excited-greeting", title="t", summary_md="s", patch=SECOND_PATCH,
        risk="low", affected_resources=["file:src/lib.rs"],
    )
    pid = created.proposal.id
    raises(roundtable.Forbidden, "forbidden", lambda: engine.cast_vote(ALICE, pid, 1, "approve"))
    raises(roundtable.Conflict, "conflict", lambda: engine.attach_patch(ALICE, pid, expected_revision=7, patch=SECOND_PATCH))

    e = raises(roundtable.ValidationFailed, "validation_failed", lambda: engine.apply(HOST, pid, 1))
    assert isinstance(e, roundtable.ValidationFailed)
    assert e.report["valid"] is False and e.report["proposal_id"] == pid
    assert {s["name"] for s in e.report["stages"]} >= {"claims", "policy"}

    engine.call("proposal.request_review", {"proposal_id": pid}, ALICE)
    engine.cast_vote(BOB, pid, 1, "approve")
    assert engine.validate(HOST, pid).valid
    (repo / "src" / "lib.rs").write_text(LIB_RS + "// moved on\n")
    e = raises(roundtable.PreconditionFailed, "precondition_failed", lambda: engine.apply(HOST, pid, 1))
    assert "preconditions" in {s["name"] for s in e.details["report"]["stages"] if s["status"] == "failed"}

    engine.call("proposal.withdraw", {"proposal_id": pid}, ALICE)
    e = raises(
        roundtable.IllegalTransition,
        "illegal_transition",
        lambda: engine.attach_patch(ALICE, pid, expected_revision=1, patch=SECOND_PATCH),
    )
    assert e.details["status"] == "withdrawn"
    assert claim.status == "active"


def test_a_patch_that_is_not_utf8_is_a_coded_invalid_argument(repo: Path, engine: roundtable.Engine) -> None:
    register(engine)
    before = engine.call("events.verify", {}, HOST)["checked"]
    for call in (
        lambda: engine.create_proposal(ALICE, task_id="excited-greeting", title="t", summary_md="s", patch=b"\xff"),
        lambda: engine.attach_patch(ALICE, "prop-x", expected_revision=1, patch=b"--- a/x\n\xc3"),
    ):
        e = raises(roundtable.InvalidArgument, "invalid_argument", call)
        assert not isinstance(e, UnicodeDecodeError)
        assert e.details["field"] == "patch"
        assert "UTF-8" in e.message
    assert engine.call("events.verify", {}, HOST)["checked"] == before, "nothing was written"


def test_patch_error_families(repo: Path) -> None:
    e = raises(
        roundtable.InvalidPatch, "invalid_patch",
        lambda: roundtable.parse_patch(b"--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n+b\n"),
    )
    assert e.details["line"] == 6  # the hunk is cut short at the end of input
    e = raises(
        roundtable.PatchDoesNotApply,
        "patch_does_not_apply",
        lambda: roundtable.apply_patch(repo, FIRST_PATCH.replace("Hello", "Hullo")),
    )
    assert e.details["path"] == "src/lib.rs"
    # A symbolic link is applied when its target stays inside the root; an
    # escaping one is path_escape; a submodule (gitlink) stays unsupported.
    def link(path: str, target: str) -> str:
        return (
            f"diff --git a/{path} b/{path}\nnew file mode 120000\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
        )

    for target in ("../outside", "/etc/passwd", "src/../../x", ".git/config"):
        e = raises(roundtable.PathEscape, "path_escape", lambda: roundtable.apply_patch(repo, link("l", target)))
        assert e.details == {"path": "l", "target": target}
        assert not (repo / "l").is_symlink()
    gitlink = (
        "diff --git a/sub b/sub\nnew file mode 160000\n--- /dev/null\n+++ b/sub\n"
        "@@ -0,0 +1 @@\n+Subproject commit 1234567890123456789012345678901234567890\n"
    )
    raises(roundtable.UnsupportedPatch, "unsupported_patch", lambda: roundtable.apply_patch(repo, gitlink))
    roundtable.apply_patch(repo, link("docs-link", "src/lib.rs"))
    assert (repo / "docs-link").is_symlink()
    assert (repo / "docs-link").readlink() == Path("src/lib.rs")
    raises(
        roundtable.PathEscape, "path_escape",
        lambda: roundtable.apply_patch(repo, "--- a/.git/config\n+++ b/.git/config\n@@ -0,0 +1 @@\n+x\n"),
    )
    raises(
        roundtable.PathEscape, "path_escape",
        lambda: roundtable.apply_patch(repo, "--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n"),
    )
    raises(
        roundtable.InvalidPath, "invalid_path",
        lambda: roundtable.apply_patch(repo, "--- /dev/null\n+++ b/a/./b\n@@ -0,0 +1 @@\n+x\n"),
    )
    # Every family is also a PatchError / PathError.
    with pytest.raises(roundtable.PatchError):
        roundtable.parse_patch("--- a/x\n+++ b/x\n@@ bogus\n")
    assert (repo / "src" / "lib.rs").read_text() == LIB_RS


def test_io_from_the_os(repo: Path) -> None:
    # A name longer than the file system allows is refused as a path before
    # anything is opened (invalid_path, not io with ENAMETOOLONG).
    long = "x" * 300
    e = raises(
        roundtable.InvalidPath, "invalid_path",
        lambda: roundtable.apply_patch(repo, f"--- /dev/null\n+++ b/{long}\n@@ -0,0 +1 @@\n+x\n"),
    )
    assert "255 bytes" in e.message and not isinstance(e, OSError)
    assert not (repo / long[:255]).exists()
    # The store directory is a file: the OS refuses it.
    other = repo.parent / "other"
    other.mkdir()
    (other / ".roundtable").write_text("not a directory")
    raises(roundtable.RoundtableOSError, "io", lambda: roundtable.open(other))


def test_store_error_families(tmp_path: Path) -> None:
    roundtable.open(tmp_path).close()
    con = sqlite3.connect(tmp_path / ".roundtable" / "store.db")
    con.execute("pragma user_version = 999")
    con.commit()
    con.close()
    raises(roundtable.IncompatibleStore, "incompatible_store", lambda: roundtable.open(tmp_path))

    broken = tmp_path / "broken"
    (broken / ".roundtable").mkdir(parents=True)
    (broken / ".roundtable" / "store.db").write_bytes(b"not a database" * 100)
    # An existing file that is not a store is refused and kept, never replaced.
    e = raises(roundtable.IncompatibleStore, "incompatible_store", lambda: roundtable.open(broken))
    assert isinstance(e, roundtable.StoreError)
    assert (broken / ".roundtable" / "store.db").read_bytes() == b"not a database" * 100
