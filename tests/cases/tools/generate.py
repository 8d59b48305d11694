#!/usr/bin/env python3
"""Writes the tool-scenario corpus in this directory (see README.md).

Every expected value below is written out by hand from what the tool is
meant to do; the only things computed are file digests (sha256) and
base64. Nothing here runs the engine. Run ``python3 generate.py`` after
editing, ``python3 generate.py --check`` to verify that the JSON files are
what this script writes.
"""

import base64
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


# ---- actors ------------------------------------------------------------

def actor(kind, id):
    return {"kind": kind, "id": id}


HOST = actor("orchestrator", "host")
ALICE = actor("agent", "alice")
BOB = actor("agent", "bob")
SAM = actor("agent", "sam")
MALLORY = actor("agent", "mallory")
CAROL = actor("human", "carol")


# ---- files -------------------------------------------------------------

def text(s, executable=False):
    f = {"text": s}
    if executable:
        f["executable"] = True
    return f


def raw(data, executable=False):
    f = {"base64": base64.b64encode(data).decode("ascii")}
    if executable:
        f["executable"] = True
    return f


def digest(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    return "blob:sha256:" + hashlib.sha256(data).hexdigest()


# ---- steps -------------------------------------------------------------

def step(who, tool, args=None, ok=None, error=None, details=None, save=None, files=None,
         note=None):
    s = {}
    if note is not None:
        s["note"] = note
    s["actor"] = who
    s["tool"] = tool
    if args is not None:
        s["args"] = args
    if error is not None:
        assert ok is None
        s["expect"] = {"error": error}
        if details is not None:
            s["expect"]["details"] = details
    else:
        assert details is None
        s["expect"] = {"ok": ok if ok is not None else {}}
    if save is not None:
        s["save"] = save
    if files is not None:
        s["files"] = files
    return s


def mark(tag=""):
    """Save the head of the audit log (its digest and seq) as head<tag>/seq<tag>."""
    return step(HOST, "events.verify", {}, ok={"valid": True},
                save={"head" + tag: "/head_digest", "seq" + tag: "/last_seq"},
                note="the audit log's head, to show later that nothing was written")


def unchanged(tag="", files=None):
    """The audit log's head is still the one mark(tag) saved: no call in
    between wrote anything (every write appends an event)."""
    return step(HOST, "events.verify", {},
                ok={"valid": True, "head_digest": "${head" + tag + "}", "last_seq": "${seq" + tag + "}"},
                files=files, note="nothing was written since the mark")


def register(agent_id, roles, created=True):
    return step(HOST, "agent.register", {"agent_id": agent_id, "roles": roles},
                ok={"agent": {"id": agent_id, "roles": roles, "enabled": True}, "created": created})


def task(task_id, title):
    return step(HOST, "task.create", {"task_id": task_id, "title": title},
                ok={"task": {"id": task_id, "title": title, "created_by": HOST}, "created": True})


def case(description, files, steps):
    return {"description": description, "files": files, "steps": steps}


# ---- the demo's repository -------------------------------------------------

LIB_RS = """\
pub fn greet(name: &str) -> String {
    format!("Hello, {name}")
}

pub fn shout(name: &str) -> String {
    greet(name).to_uppercase()
}
"""

LIB_RS_AFTER = LIB_RS.replace('"Hello, {name}"', '"Hello, {name}!"')

# Revision 1 changes `greet` (claimed) but also appends a function outside
# the claim.
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

DEMO_FILES = {"src/lib.rs": text(LIB_RS), "README.md": text("demo project\n")}


def governed_change():
    pid = "${pid}"
    return case(
        "The governed change of `roundtable demo`: agents and a task, a symbol claim "
        "and a conflicting one, a revision that strays outside its claim and its "
        "repair, review by two agents, a security review and a human approval, "
        "validation, apply (the file on disk), a second apply refused, rollback "
        "(the original bytes back), and an audit log that verifies.",
        DEMO_FILES,
        [
            register("alice", ["author"]),
            register("bob", ["reviewer"]),
            register("sam", ["reviewer", "security"]),
            task("excited-greeting", "Greet with more enthusiasm"),
            step(ALICE, "claim.acquire",
                 {"resource_id": "symbol:src/lib.rs#greet", "type": "write", "ttl_s": 900,
                  "task_id": "excited-greeting"},
                 ok={"claim": {"resource_id": "symbol:src/lib.rs#greet", "type": "write",
                               "agent_id": "alice", "status": "active", "token": 1,
                               "span": {"start": 1, "end": 3}, "task_id": "excited-greeting",
                               "released_at": None,
                               "base_digest": digest(LIB_RS)}},
                 save={"claim": "/claim/id"}),
            mark(),
            step(BOB, "claim.acquire",
                 {"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 900},
                 error="conflict",
                 details={"holder": {"id": "${claim}", "agent_id": "alice",
                                     "resource_id": "symbol:src/lib.rs#greet"}},
                 note="bob's file claim overlaps alice's symbol claim"),
            unchanged(),
            step(HOST, "claim.list", {"status": "active"},
                 ok={"claims": [{"id": "${claim}", "agent_id": "alice"}]}),
            step(ALICE, "proposal.create",
                 {"task_id": "excited-greeting", "title": "Greet with an exclamation mark",
                  "summary_md": "`greet` ends with `!`.", "risk": "critical",
                  "patch": FIRST_PATCH, "affected_resources": ["symbol:src/lib.rs#greet"]},
                 ok={"proposal": {"author": "alice", "status": "pending", "risk": "critical",
                                  "latest_revision": 1, "task_id": "excited-greeting",
                                  "title": "Greet with an exclamation mark", "reverts": None},
                     "revision": {"number": 1, "format": "patch", "created_by": ALICE,
                                  "affected_resources": ["symbol:src/lib.rs#greet"],
                                  "changeset": [{"path": "src/lib.rs", "operation": "modify",
                                                 "other_path": None,
                                                 "before": {"digest": digest(LIB_RS),
                                                            "executable": False},
                                                 "after": {"executable": False}}]}},
                 save={"pid": "/proposal/id"}),
            step(HOST, "patch.validate", {"proposal_id": pid},
                 ok={"proposal_id": pid, "revision": 1, "valid": False,
                     "stages": [{"name": "claims", "status": "passed"},
                                {"name": "preconditions", "status": "passed"},
                                {"name": "coverage", "status": "failed"},
                                {"name": "dry_run", "status": "passed"},
                                {"name": "policy", "status": "failed"},
                                {"name": "security_review", "status": "failed"},
                                {"name": "human_approval", "status": "failed"},
                                {"name": "checks", "status": "skipped"}]},
                 note="farewell is outside the claim; nobody has reviewed yet"),
            mark("2"),
            step(BOB, "proposal.attach_patch",
                 {"proposal_id": pid, "expected_revision": 1, "patch": SECOND_PATCH},
                 error="forbidden", note="only the author revises a proposal"),
            unchanged("2"),
            step(ALICE, "proposal.attach_patch",
                 {"proposal_id": pid, "expected_revision": 1, "patch": SECOND_PATCH,
                  "note_md": "Only `greet` changes now."},
                 ok={"proposal": {"id": pid, "latest_revision": 2, "status": "pending"},
                     "revision": {"number": 2, "note_md": "Only `greet` changes now.",
                                  "changeset": [{"path": "src/lib.rs",
                                                 "after": {"digest": digest(LIB_RS_AFTER),
                                                           "size": len(LIB_RS_AFTER)}}]}}),
            step(ALICE, "proposal.request_review", {"proposal_id": pid},
                 ok={"proposal": {"id": pid, "status": "in_review"}}),
            mark("3"),
            step(ALICE, "vote.cast", {"proposal_id": pid, "revision": 2, "vote": "approve"},
                 error="forbidden", details={"reason": "author", "author": "alice"},
                 note="authors do not vote on their own proposals"),
            unchanged("3"),
            step(BOB, "vote.cast",
                 {"proposal_id": pid, "revision": 2, "vote": "approve", "reason_md": "Reads well."},
                 ok={"vote": {"agent_id": "bob", "proposal_id": pid, "revision": 2,
                              "vote": "approve", "reason_md": "Reads well."}}),
            step(SAM, "vote.cast",
                 {"proposal_id": pid, "revision": 2, "vote": "approve_with_notes",
                  "reason_md": "Fine; no input reaches the format string."},
                 ok={"vote": {"agent_id": "sam", "vote": "approve_with_notes"}}),
            step(SAM, "security.review",
                 {"proposal_id": pid, "revision": 2, "verdict": "pass",
                  "note_md": "No security impact."}),
            step(CAROL, "human.approve",
                 {"proposal_id": pid, "revision": 2, "note_md": "Ship it."}),
            step(HOST, "patch.validate", {"proposal_id": pid},
                 ok={"revision": 2, "valid": True,
                     "stages": [{"name": "claims", "status": "passed"},
                                {"name": "preconditions", "status": "passed"},
                                {"name": "coverage", "status": "passed"},
                                {"name": "dry_run", "status": "passed"},
                                {"name": "policy", "status": "passed"},
                                {"name": "security_review", "status": "passed"},
                                {"name": "human_approval", "status": "passed"},
                                {"name": "checks", "status": "skipped"}]}),
            step(HOST, "patch.apply", {"proposal_id": pid, "revision": 2},
                 ok={"proposal": {"id": pid, "status": "applied"},
                     "transaction": {"kind": "apply", "status": "applied", "file_count": 1,
                                     "proposal_id": pid, "revision": 2, "actor": HOST,
                                     "rollback_of": None, "error": None},
                     "released_claims": ["${claim}"],
                     "validation": {"valid": True}},
                 save={"tx": "/transaction/id"},
                 files={"src/lib.rs": text(LIB_RS_AFTER), "README.md": text("demo project\n")}),
            mark("4"),
            step(HOST, "patch.apply", {"proposal_id": pid, "revision": 2},
                 error="illegal_transition",
                 details={"proposal_id": pid, "status": "applied"},
                 note="an applied proposal is not applied twice"),
            unchanged("4", files={"src/lib.rs": text(LIB_RS_AFTER)}),
            step(HOST, "transaction.get", {"transaction_id": "${tx}"},
                 ok={"transaction": {"id": "${tx}", "kind": "apply", "status": "applied"}}),
            step(HOST, "transaction.rollback", {"transaction_id": "${tx}"},
                 ok={"transaction": {"kind": "rollback", "status": "applied",
                                     "rollback_of": "${tx}", "proposal_id": pid}},
                 files={"src/lib.rs": text(LIB_RS), "README.md": text("demo project\n")}),
            step(HOST, "proposal.get", {"proposal_id": pid},
                 ok={"proposal": {"id": pid, "status": "rolled_back", "latest_revision": 2}}),
            step(HOST, "events.verify", {}, ok={"valid": True, "first_invalid_seq": None}),
        ],
    )


CASES = {
    "governed-change": governed_change,
}


def render(make):
    return json.dumps(make(), ensure_ascii=False, indent=1) + "\n"


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        sys.exit("usage: generate.py [--check]")
    stale = []
    wanted = {name + ".json" for name in CASES}
    for name, make in CASES.items():
        path = os.path.join(HERE, name + ".json")
        want = render(make)
        if check:
            try:
                with open(path, encoding="utf-8") as f:
                    have = f.read()
            except FileNotFoundError:
                have = None
            if have != want:
                stale.append(name + ".json")
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(want)
    extra = sorted(f for f in os.listdir(HERE) if f.endswith(".json") and f not in wanted)
    if check and (stale or extra):
        sys.exit("tests/cases/tools is not what generate.py writes: "
                 + ", ".join(stale + [f + " (not written by generate.py)" for f in extra]))


if __name__ == "__main__":
    main(sys.argv)
