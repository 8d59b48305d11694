// `roundtable mcp` driven by the official MCP TypeScript SDK client (npm
// `@modelcontextprotocol/sdk`, pinned in package.json), as a Node-based
// coding agent's harness would: a whole governed change over stdio and over
// streamable HTTP (agent proposes, reviewer votes, host applies), refusals
// read as tool errors with their stable code, and `tools/list` read without
// one schema warning. Then the MCP Inspector's `--cli --strict` schema lint
// for every actor kind.
//
// Run by scripts/test-mcp: `node --test tests/mcp-ts/`, with RT_BIN naming
// the roundtable binary. Loopback only.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = join(HERE, "..", "..");
const RT = process.env.RT_BIN ?? join(REPO, "target", "debug", "roundtable");
const INSPECTOR = join(
  HERE,
  "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js",
);
const DIFF = "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello, world\n";
const ALICE = "alice-token-0123456789";
const ROB = "rob-token-0123456789abc";
const HOST = "host-token-0123456789ab";

// Every console.warn the SDK prints (ajv's "unknown format ... ignored" was
// one per non-standard format, 474 per tools/list before issue 32).
const warnings = [];
const warn = console.warn;
before(() => {
  console.warn = (...args) => {
    warnings.push(args.join(" "));
    warn(...args);
  };
});
after(() => {
  console.warn = warn;
});

const scratch = [];
after(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

function git(root, ...args) {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@e",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@e",
  };
  const out = spawnSync("git", ["-C", root, ...args], { env, encoding: "utf8" });
  assert.equal(out.status, 0, out.stderr);
  return out.stdout;
}

function hostCall(root, tool, args) {
  const out = spawnSync(
    RT,
    ["call", tool, "--root", root, "--as", "orchestrator:host", "--args", JSON.stringify(args)],
    { encoding: "utf8" },
  );
  assert.equal(out.status, 0, out.stdout + out.stderr);
  return JSON.parse(out.stdout);
}

/** A fresh git repository with alice (author), rob (reviewer) and task t1. */
function repo() {
  const root = mkdtempSync(join(tmpdir(), "rt-mcp-ts-"));
  scratch.push(root);
  git(root, "init", "-q");
  writeFileSync(join(root, "hello.txt"), "hello\n");
  git(root, "add", ".");
  git(root, "commit", "-qm", "init");
  hostCall(root, "agent.register", { agent_id: "alice", roles: ["author"] });
  hostCall(root, "agent.register", { agent_id: "rob", roles: ["reviewer"] });
  hostCall(root, "task.create", { task_id: "t1", title: "Greet" });
  return root;
}

async function stdioClient(root, actor) {
  const transport = new StdioClientTransport({
    command: RT,
    args: ["mcp", "--root", root, "--as", actor],
    stderr: "inherit",
  });
  const client = new Client({ name: "roundtable-ts-test", version: "1" });
  await client.connect(transport);
  return client;
}

/** `roundtable mcp --http` on an ephemeral loopback port. */
async function httpServer(root) {
  const tokens = join(root, ".tokens");
  writeFileSync(tokens, `${ALICE} agent:alice\n${ROB} agent:rob\n${HOST} orchestrator:host\n`);
  const proc = spawn(RT, ["mcp", "--root", root, "--http", "127.0.0.1:0", "--tokens", tokens], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const line = await new Promise((resolve, reject) => {
    createInterface({ input: proc.stdout }).once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`roundtable mcp --http exited ${code}`)));
  });
  const ready = JSON.parse(line);
  return { url: ready.url, close: () => proc.kill() };
}

async function httpClient(url, token) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "roundtable-ts-test", version: "1" });
  await client.connect(transport);
  return client;
}

/** A successful result: structured content, the same JSON as text. */
function structured(result) {
  assert.ok(!result.isError, JSON.stringify(result));
  assert.ok(result.structuredContent, JSON.stringify(result));
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  return result.structuredContent;
}

/** A refusal: a tool error whose text is `{"code", "message", "details"}`. */
function refusal(result) {
  assert.equal(result.isError, true, JSON.stringify(result));
  assert.equal(result.structuredContent, undefined, JSON.stringify(result));
  const body = JSON.parse(result.content[0].text);
  assert.deepEqual(Object.keys(body).sort(), ["code", "details", "message"]);
  return body;
}

/**
 * The governed change of tests/mcp/test_mcp.py: alice claims and proposes,
 * asks for review, is refused her own vote (readably: the TS SDK checked
 * error results' structured content against the output schema and said
 * "data must have required property 'vote'" before issue 32), rob approves,
 * the host applies.
 */
async function governedChange(root, alice, rob, host) {
  const warned = warnings.length;
  const agentTools = (await alice.listTools()).tools.map((t) => t.name);
  assert.ok(agentTools.includes("proposal.create") && !agentTools.includes("patch.apply"));
  const hostTools = (await host.listTools()).tools.map((t) => t.name);
  assert.ok(hostTools.includes("patch.apply") && !hostTools.includes("proposal.create"));
  await rob.listTools();

  const claim = structured(
    await alice.callTool({
      name: "claim.acquire",
      arguments: { resource_id: "file:hello.txt", type: "write", ttl_s: 600 },
    }),
  );
  assert.equal(claim.claim.agent_id, "alice");
  const created = structured(
    await alice.callTool({
      name: "proposal.create",
      arguments: {
        task_id: "t1",
        title: "Greet",
        summary_md: "s",
        patch: DIFF,
        affected_resources: ["file:hello.txt"],
      },
    }),
  );
  const pid = created.proposal.id;
  assert.equal(created.proposal.author, "alice");
  structured(await alice.callTool({ name: "proposal.request_review", arguments: { proposal_id: pid } }));

  const own = refusal(
    await alice.callTool({
      name: "vote.cast",
      arguments: { proposal_id: pid, revision: 1, vote: "approve" },
    }),
  );
  assert.equal(own.code, "forbidden");
  assert.equal(own.details.reason, "author");
  assert.match(own.message, /author/);
  assert.doesNotMatch(own.message, /schema|required property/);
  const unknown = refusal(await alice.callTool({ name: "proposal.get", arguments: { proposal_id: "prop-nope" } }));
  assert.equal(unknown.code, "not_found");
  // The refused vote recorded nothing.
  const votes = structured(await rob.callTool({ name: "vote.list", arguments: { proposal_id: pid } }));
  assert.deepEqual(votes.votes, []);

  structured(
    await rob.callTool({
      name: "vote.cast",
      arguments: { proposal_id: pid, revision: 1, vote: "approve" },
    }),
  );
  const applied = structured(
    await host.callTool({ name: "patch.apply", arguments: { proposal_id: pid, revision: 1 } }),
  );
  assert.equal(applied.transaction.status, "applied");
  const after = structured(await alice.callTool({ name: "proposal.get", arguments: { proposal_id: pid } }));
  assert.equal(after.proposal.status, "applied");
  assert.equal(readFileSync(join(root, "hello.txt"), "utf8"), "hello, world\n");
  git(root, "fsck", "--strict");
  // No schema warning from the SDK for any tool list or result.
  assert.deepEqual(warnings.slice(warned), []);
}

test("a whole governed change over stdio, one server per actor", async () => {
  const root = repo();
  const clients = await Promise.all(
    ["agent:alice", "agent:rob", "orchestrator:host"].map((a) => stdioClient(root, a)),
  );
  try {
    await governedChange(root, ...clients);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
});

test("a whole governed change over streamable HTTP with bearer tokens", async () => {
  const root = repo();
  const server = await httpServer(root);
  try {
    const clients = await Promise.all([ALICE, ROB, HOST].map((t) => httpClient(server.url, t)));
    try {
      await governedChange(root, ...clients);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  } finally {
    server.close();
  }
});

/** The Inspector's `--cli --method tools/list --strict` against `target`. */
function inspectorStrict(args) {
  const out = spawnSync(process.execPath, [INSPECTOR, "--cli", "--method", "tools/list", "--strict", ...args], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  assert.equal(out.status, 0, `exit ${out.status}: ${out.stderr.slice(0, 4000)}`);
  // --strict prints each finding (and the count) on stderr: none.
  assert.equal(out.stderr.trim(), "", out.stderr.slice(0, 4000));
  return JSON.parse(out.stdout).tools;
}

test("MCP Inspector --cli --strict: zero errors and zero warnings for every actor kind", async () => {
  const root = repo();
  for (const actor of ["agent:alice", "orchestrator:host", "human:h"]) {
    const tools = inspectorStrict([RT, "mcp", "--root", root, "--as", actor]);
    assert.ok(tools.length > 0, actor);
    const bytes = Buffer.byteLength(JSON.stringify({ tools }));
    console.log(`tools/list for ${actor.split(":")[0]}: ${tools.length} tools, ${bytes} bytes`);
  }
  const server = await httpServer(root);
  try {
    for (const token of [ALICE, HOST]) {
      inspectorStrict(["--transport", "http", "--server-url", server.url, "--header", `Authorization: Bearer ${token}`]);
    }
  } finally {
    server.close();
  }
});

// -- the MCP conformance suite (npm `@modelcontextprotocol/conformance`) -----

const CONFORMANCE = join(HERE, "node_modules/@modelcontextprotocol/conformance/dist/index.js");

/**
 * The server scenarios that apply to roundtable; README.md beside this file
 * lists the others and why they do not apply.
 */
const SCENARIOS = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];

/**
 * A loopback proxy in front of `target` that adds the bearer token the
 * suite's client cannot send. Every other header passes unchanged, except
 * a Host naming the proxy itself, which becomes the server's (so a foreign
 * Host or Origin the suite sends still reaches the server as sent).
 */
async function tokenProxy(target, token) {
  const http = await import("node:http");
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const own = `127.0.0.1:${server.address().port}`;
    const headers = { ...req.headers, authorization: `Bearer ${token}` };
    if (headers.host === own) headers.host = to.host;
    const up = http.request(
      { host: to.hostname, port: to.port, path: req.url, method: req.method, headers },
      (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      },
    );
    up.on("error", (e) => {
      res.writeHead(502);
      res.end(String(e));
    });
    req.pipe(up);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${server.address().port}${to.pathname}`, close: () => server.close() };
}

test("MCP conformance suite: the applicable server scenarios over streamable HTTP", async () => {
  const root = repo();
  const server = await httpServer(root);
  const proxy = await tokenProxy(server.url, ALICE);
  const out = mkdtempSync(join(tmpdir(), "rt-conformance-"));
  scratch.push(out);
  try {
    for (const scenario of SCENARIOS) {
      const run = await new Promise((resolve) => {
        const child = spawn(
          process.execPath,
          [CONFORMANCE, "server", "--url", proxy.url, "--scenario", scenario, "-o", out],
          { stdio: ["ignore", "pipe", "pipe"] },
        );
        let text = "";
        child.stdout.on("data", (d) => (text += d));
        child.stderr.on("data", (d) => (text += d));
        child.on("exit", (code) => resolve({ code, text }));
      });
      const summary = run.text.split("\n").filter((l) => /passed|failed/i.test(l));
      console.log(`${scenario}: ${summary.join(" | ")}`);
      assert.equal(run.code, 0, `${scenario}:\n${run.text}`);
    }
  } finally {
    proxy.close();
    server.close();
  }
});
