"""The ``store`` option: a PostgreSQL database several hosts share (issue
20). The shared-store test runs when ``RT_TEST_STORE`` names a server
(``scripts/test`` starts one); the refusals run everywhere."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

import roundtable
from roundtable import Actor

HOST = Actor.orchestrator("host")


def test_a_store_url_that_is_not_postgres_is_refused_naming_the_option(tmp_path: Path) -> None:
    for url in ["mysql://db/x", "postgres://h/db?schema=Bad-Name"]:
        with pytest.raises(roundtable.InvalidArgument) as info:
            roundtable.open(tmp_path, store=url)
        assert info.value.details["field"] == "store", info.value.details
    assert not (tmp_path / ".roundtable").exists(), "a refused open created nothing"


def test_an_unreachable_server_is_a_retryable_database_error(tmp_path: Path) -> None:
    with pytest.raises(roundtable.DatabaseError) as info:
        roundtable.open(tmp_path, store="postgres://rt:secret@%2Fnonexistent-rt-socket/postgres")
    assert info.value.code == "database"
    assert info.value.details.get("retryable") is True, info.value.details
    assert "secret" not in str(info.value)


@pytest.mark.skipif(not os.environ.get("RT_TEST_STORE"), reason="no PostgreSQL server (RT_TEST_STORE)")
def test_two_hosts_on_two_clones_share_one_postgres_store(tmp_path: Path) -> None:
    base = os.environ["RT_TEST_STORE"]
    sep = "&" if "?" in base else "?"
    url = f"{base}{sep}schema=py_{uuid.uuid4().hex[:12]}"
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with roundtable.open(a, store=url, durability="off") as first, roundtable.open(b, store=url) as second:
        one = first.session(HOST)
        two = second.session(HOST)
        one.agent_register(agent_id="alice", roles=["author"])
        created = two.task_create(task_id="t1", title="Shared")
        assert created.created
        # What one host wrote, the other reads; ids are global.
        assert [t.id for t in one.task_list().tasks] == ["t1"]
        assert tuple(two.agent_get(agent_id="alice").agent.roles) == ("author",)
        assert not one.task_create(task_id="t1", title="Shared").created
        # One audit chain over both.
        report = two.events_verify()
        assert report.valid and report.last_seq == 2, report
