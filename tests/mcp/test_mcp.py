"""`roundtable mcp` driven by the official MCP Python SDK (PyPI `mcp`), as a
coding agent's client would: over stdio in both protocol eras (the
`initialize` handshake and the 2026-07-28 stateless revision), and over
streamable HTTP with bearer tokens.

The binary is $RT_BIN (default: target/debug/roundtable, which the cargo
test step builds).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
RT = os.environ.get("RT_BIN", str(REPO / "target" / "debug" / "roundtable"))
ERAS = ["legacy", "2026-07-28", "auto"]
HELLO = "hello\n"
DIFF = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n"


def host_call(root: Path, tool: str, args: dict[str, Any]) -> Any:
    out = subprocess.run(
        [RT, "call", tool, "--root", str(root), "--as", "orchestrator:host", "--args", json.dumps(args)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "hello.txt").write_text(HELLO)
    (tmp_path / "notes.md").write_text("# Notes\n\nfirst line\nsecond line\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True, env=env)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-qm", "init"], check=True, env=env)
    for agent, roles in [("alice", ["author"]), ("rob", ["reviewer"])]:
        host_call(tmp_path, "agent.register", {"agent_id": agent, "roles": roles})
    host_call(tmp_path, "task.create", {"task_id": "t1", "title": "Greet"})
    return tmp_path


def stdio(root: Path, actor: str | None, mode: str = "auto", env: dict[str, str] | None = None) -> Client:
    args = ["mcp", "--root", str(root)] + (["--as", actor] if actor else [])
    params = StdioServerParameters(command=RT, args=args, env={**os.environ, **(env or {})})
    return Client(params, mode=mode)  # type: ignore[arg-type, unused-ignore]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    assert result.structured_content is not None
    # The text rendering is the same JSON.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def refusal(result: Any) -> dict[str, Any]:
    """A refusal: a tool error whose one text content is the refusal JSON, with no structured content (which
    clients such as the TypeScript SDK check against the tool's output schema even on errors)."""
    assert result.is_error, result
    assert result.structured_content is None, result
    assert len(result.content) == 1, result
    body = json.loads(result.content[0].text)
    assert set(body) == {"code", "message", "details"}, body
    return body


def blob(text: str) -> str:
    return "blob:sha256:" + hashlib.sha256(text.encode()).hexdigest()


# (format, proposal.create arguments, the path the change touches)
CHANGES: list[tuple[str, dict[str, Any], str]] = [
    ("unified", {"patch": DIFF}, "hello.txt"),
    ("codex", {"patch_format": "codex",
               "patch": "*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello\n+hello, codex\n*** End Patch\n"},
     "hello.txt"),
    ("search_replace", {"patch_format": "search_replace",
                        "patch": "notes.md\n<<<<<<< SEARCH\nsecond line\n=======\nsecond line, edited\n>>>>>>> REPLACE\n"},
     "notes.md"),
    ("edit_plan", {"edit_plan": {"documentChanges": [{"path": "docs/new.md", "kind": "create",
                                                      "precondition": {"expectedAbsence": True}, "after": blob("# New\n")}],
                                 "blobs": {blob("# New\n"): base64.b64encode(b"# New\n").decode()}}},
     "docs/new.md"),
]


@pytest.mark.parametrize("mode", ERAS)
def test_an_agent_sees_only_its_tools_with_schemas_and_annotations(repo: Path, mode: str) -> None:
    async def go() -> None:
        async with stdio(repo, "agent:alice", mode) as client:
            if mode != "auto":
                assert client.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for hidden in ["patch.apply", "agent.register", "task.create", "transaction.rollback", "test.record",
                           "human.approve", "policy.activate"]:
                assert hidden not in tools, hidden
            for shown in ["proposal.create", "proposal.status", "proposal.rebase", "vote.cast", "events.wait",
                          "claim.acquire", "inbox.list"]:
                assert shown in tools, shown
            for t in tools.values():
                assert t.input_schema["type"] == "object"
                assert t.output_schema is not None and t.output_schema["type"] == "object"
                assert t.annotations is not None and t.annotations.read_only_hint is not None
            get = tools["proposal.get"].annotations
            assert get is not None and get.read_only_hint and get.idempotent_hint
            create = tools["proposal.create"].annotations
            assert create is not None and not create.read_only_hint and not create.destructive_hint
            assert not create.idempotent_hint
            assert tools["claim.release"].annotations.destructive_hint  # type: ignore[union-attr]
            assert "patch" in tools["proposal.create"].input_schema["properties"]
    run(go())


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("name,change,path", CHANGES, ids=[c[0] for c in CHANGES])
def test_an_agent_proposes_in_each_format_and_reads_the_status(repo: Path, mode: str, name: str,
                                                               change: dict[str, Any], path: str) -> None:
    async def go() -> None:
        async with stdio(repo, "agent:alice", mode) as client:
            out = structured(await client.call_tool(
                "proposal.create", {"task_id": "t1", "title": f"Via {name}", "summary_md": "s", **change}))
            pid = out["proposal"]["id"]
            assert out["proposal"]["author"] == "alice"
            files = structured(await client.call_tool("proposal.files", {"proposal_id": pid}))
            assert [f["new_path"] or f["old_path"] for f in files["files"]] == [path], files
            status = structured(await client.call_tool("proposal.status", {"proposal_id": pid}))
            assert status["proposal"]["id"] == pid and status["can_land"] is False
            assert status["next"], status
    run(go())
    # Nothing was applied: a proposal changes no file.
    assert (repo / "hello.txt").read_text() == HELLO


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_refusals_are_tool_errors_with_the_stable_code_and_change_nothing(repo: Path, mode: str) -> None:
    async def go() -> None:
        async with stdio(repo, "agent:alice", mode) as client:
            # A tool the agent's kind may not call (and does not see).
            body = refusal(await client.call_tool("patch.apply", {"proposal_id": "p", "revision": 1}))
            assert body["code"] == "forbidden" and body["details"]["reason"] == "wrong_kind"
            # The actor is never read from arguments.
            for key in ["actor", "author", "agent_id"]:
                body = refusal(await client.call_tool(
                    "proposal.create", {"task_id": "t1", "title": "T", "summary_md": "s", "patch": DIFF,
                                        key: "orchestrator:host"}))
                assert body["code"] == "invalid_argument" and body["details"]["field"] == key
            body = refusal(await client.call_tool(
                "proposal.create", {"task_id": "t1", "title": "T", "summary_md": "s",
                                    "patch": DIFF.replace("-hello", "-goodbye")}))
            assert body["code"] in {"patch_does_not_apply", "precondition_failed"}, body
            body = refusal(await client.call_tool("proposal.get", {"proposal_id": "prop-nope"}))
            assert body["code"] == "not_found"
            # A tool that does not exist is the request's JSON-RPC error
            # (invalid params), not a tool result.
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("no.such_tool", {})
            assert unknown.value.error.code == -32602 and "no.such_tool" in unknown.value.error.message
            listed = structured(await client.call_tool("proposal.list", {}))
            assert listed["proposals"] == []
    run(go())
    assert (repo / "hello.txt").read_text() == HELLO


def test_a_whole_governed_change_over_mcp_with_one_server_per_actor(repo: Path) -> None:
    async def go() -> None:
        async with stdio(repo, "agent:alice", "legacy") as alice, \
                stdio(repo, "agent:rob", "2026-07-28") as rob, \
                stdio(repo, "orchestrator:host", "auto") as host:
            host_tools = {t.name for t in (await host.list_tools()).tools}
            assert "patch.apply" in host_tools and "proposal.create" not in host_tools
            claim = structured(await alice.call_tool(
                "claim.acquire", {"resource_id": "file:hello.txt", "type": "write", "ttl_s": 600}))
            assert claim["claim"]["agent_id"] == "alice", claim
            pid = structured(await alice.call_tool(
                "proposal.create", {"task_id": "t1", "title": "Greet", "summary_md": "s", "patch": DIFF,
                                    "affected_resources": ["file:hello.txt"]}))["proposal"]["id"]
            structured(await alice.call_tool("proposal.request_review", {"proposal_id": pid}))
            # The author may not vote on its own change.
            assert refusal(await alice.call_tool(
                "vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"}))["code"] == "forbidden"
            structured(await rob.call_tool("vote.cast", {"proposal_id": pid, "revision": 1, "vote": "approve"}))
            applied = structured(await host.call_tool("patch.apply", {"proposal_id": pid, "revision": 1}))
            assert applied["transaction"]["status"] == "applied", applied
            status = structured(await alice.call_tool("proposal.get", {"proposal_id": pid}))
            assert status["proposal"]["status"] == "applied"
    run(go())
    assert (repo / "hello.txt").read_text() == "hello, world\n"


def test_stdio_needs_an_actor_from_the_host_and_takes_one_from_the_environment(repo: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ROUNDTABLE_ACTOR"}
    out = subprocess.run([RT, "mcp", "--root", str(repo)], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=30)
    assert out.returncode == 1
    assert out.stdout == "", "stdout belongs to the protocol"
    assert json.loads(out.stderr)["error"]["code"] == "invalid_argument"
    out = subprocess.run([RT, "mcp", "--root", str(repo), "--as", "robot:x"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=30)
    assert out.returncode == 1 and json.loads(out.stderr)["error"]["details"]["field"] == "--as"

    async def go() -> None:
        async with stdio(repo, None, "legacy", env={"ROUNDTABLE_ACTOR": "agent:rob"}) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "vote.cast" in tools and "patch.apply" not in tools
    run(go())


# -- streamable HTTP ---------------------------------------------------------

ALICE = "alice-token-0123456789"
HOST = "host-token-0123456789ab"


class Http:
    def __init__(self, repo: Path, tokens: Path) -> None:
        self.tokens = tokens
        self.proc = subprocess.Popen(
            [RT, "mcp", "--root", str(repo), "--http", "127.0.0.1:0", "--tokens", str(tokens)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read() if self.proc.stderr else ""
        ready = json.loads(line)
        self.url: str = ready["url"]
        self.count: int = ready["tokens"]

    def client(self, token: str | None, mode: str) -> Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        transport = streamable_http_client(self.url, http_client=httpx2.AsyncClient(headers=headers))
        return Client(transport, mode=mode)  # type: ignore[arg-type, unused-ignore]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def http(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Http]:
    tokens = tmp_path_factory.mktemp("tokens") / "tokens"
    tokens.write_text(f"# minted by the host\n{ALICE} agent:alice\n{HOST} orchestrator:host\n")
    server = Http(repo, tokens)
    yield server
    server.close()


def post(url: str, headers: dict[str, str]) -> httpx2.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}
    return httpx2.post(url, json=body, headers={"Accept": "application/json, text/event-stream", **headers})


def test_http_refuses_a_missing_or_unknown_token_with_401_and_never_a_default_actor(http: Http) -> None:
    assert http.count == 2
    for headers in [{}, {"Authorization": "Bearer nope-nope-nope-nope"}, {"Authorization": f"Basic {ALICE}"}]:
        r = post(http.url, headers)
        assert r.status_code == 401, (headers, r.status_code, r.text)
        assert r.headers["www-authenticate"].startswith("Bearer")
    assert post(http.url, {"Authorization": f"Bearer {ALICE}"}).status_code == 200

    async def go() -> None:
        with pytest.raises(Exception):
            async with http.client(None, "legacy") as client:
                await client.list_tools()
    run(go())


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_http_binds_each_request_to_its_tokens_actor(http: Http, repo: Path, mode: str) -> None:
    async def go() -> None:
        async with http.client(ALICE, mode) as alice, http.client(HOST, mode) as host:
            alice_tools = {t.name for t in (await alice.list_tools()).tools}
            host_tools = {t.name for t in (await host.list_tools()).tools}
            assert "patch.apply" not in alice_tools and "proposal.create" in alice_tools
            assert "patch.apply" in host_tools and "proposal.create" not in host_tools
            out = structured(await alice.call_tool(
                "proposal.create", {"task_id": "t1", "title": "Over HTTP", "summary_md": "s", "patch": DIFF}))
            assert out["proposal"]["author"] == "alice"
            assert refusal(await alice.call_tool(
                "patch.apply", {"proposal_id": out["proposal"]["id"], "revision": 1}))["code"] == "forbidden"
    run(go())


def test_http_reads_the_token_file_again_when_the_host_changes_it(http: Http) -> None:
    rob = "rob-token-0123456789abc"
    assert post(http.url, {"Authorization": f"Bearer {rob}"}).status_code == 401
    http.tokens.write_text(f"{HOST} orchestrator:host\n{rob} agent:rob\n")
    assert post(http.url, {"Authorization": f"Bearer {rob}"}).status_code == 200
    # Alice was revoked by the same edit.
    assert post(http.url, {"Authorization": f"Bearer {ALICE}"}).status_code == 401


def test_http_is_loopback_only_and_a_bad_token_file_is_refused(repo: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{ALICE} agent:alice\n")
    out = subprocess.run([RT, "mcp", "--root", str(repo), "--http", "0.0.0.0:0", "--tokens", str(tokens)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and json.loads(out.stderr)["error"]["details"]["field"] == "--http"
    tokens.write_text("short agent:alice\n")
    out = subprocess.run([RT, "mcp", "--root", str(repo), "--http", "127.0.0.1:0", "--tokens", str(tokens)],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 1
    err = json.loads(out.stderr)["error"]
    assert err["code"] == "invalid_argument" and "line 1" in err["message"]


# -- the README's client configurations ---------------------------------------

def guide_configs() -> list[dict[str, Any]]:
    import re

    # The client configurations the MCP guide of the book gives.
    section = (REPO / "docs/src/guides/mcp.md").read_text(encoding="utf-8")
    servers = []
    for block in re.findall(r"```json\n(.*?)```", section, re.S):
        servers.extend(json.loads(block)["mcpServers"].values())
    return servers


def test_the_guide_client_configs_start_a_server_that_serves_their_actor(repo: Path) -> None:
    servers = guide_configs()
    stdio_servers = [s for s in servers if "command" in s]
    assert len(stdio_servers) >= 2 and any("url" in s for s in servers)

    async def go(server: dict[str, Any]) -> None:
        assert server["command"] == "roundtable"
        args = [str(repo) if a == "." else a for a in server["args"]]
        actor = args[args.index("--as") + 1]
        params = StdioServerParameters(command=RT, args=args, cwd=str(repo), env=dict(os.environ))
        async with Client(params, mode="legacy") as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "proposal.create" in tools and "patch.apply" not in tools, actor
            body = refusal(await client.call_tool("agent.get", {"agent_id": actor.split(":", 1)[1]}))
            assert body["code"] == "not_found"  # the README's agents are examples, not registered
    for server in stdio_servers:
        run(go(server))
