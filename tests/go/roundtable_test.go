package roundtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

const libRS = "pub fn greet(name: &str) -> String {\n    format!(\"Hello, {name}\")\n}\n\npub fn shout(name: &str) -> String {\n    greet(name).to_uppercase()\n}\n"

// Revision 1 changes greet but also appends a function outside the claim.
const firstPatch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,7 +1,11 @@\n pub fn greet(name: &str) -> String {\n-    format!(\"Hello, {name}\")\n+    format!(\"Hello, {name}!\")\n }\n \n pub fn shout(name: &str) -> String {\n     greet(name).to_uppercase()\n }\n+\n+pub fn farewell(name: &str) -> String {\n+    format!(\"Goodbye, {name}\")\n+}\n"

// The repair: only the claimed function changes.
const secondPatch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn greet(name: &str) -> String {\n-    format!(\"Hello, {name}\")\n+    format!(\"Hello, {name}!\")\n }\n"

var (
	host  = Orchestrator("host")
	alice = Agent("alice")
	bob   = Agent("bob")
	sam   = Agent("sam")
	carol = Human("carol")
)

type obj = map[string]any

func repo(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "src/lib.rs"), []byte(libRS), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func open(t *testing.T, root string, options map[string]any) *Engine {
	t.Helper()
	e, err := Open(root, options)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// call fails the test unless the call succeeds; returns the decoded result.
func call(t *testing.T, e *Engine, tool string, args obj, actor Actor) obj {
	t.Helper()
	var out obj
	if err := e.CallInto(tool, args, actor, &out); err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return out
}

// code is the *Error code of err (errors.As), or "" when err is not one.
func code(err error) Code {
	var rterr *Error
	if errors.As(err, &rterr) {
		return rterr.Code
	}
	return ""
}

func field(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(obj)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestVersions(t *testing.T) {
	if ABIVersion() != HeaderABIVersion() {
		t.Fatalf("library ABI %d, header ABI %d", ABIVersion(), HeaderABIVersion())
	}
	if Version() == "" {
		t.Fatal("no version")
	}
}

func TestGovernedChange(t *testing.T) {
	root := repo(t)
	e := open(t, root, nil)

	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "sam", "roles": []string{"reviewer", "security"}}, host)
	call(t, e, "task.create", obj{"task_id": "excited-greeting", "title": "Greet with more enthusiasm"}, host)

	claim := call(t, e, "claim.acquire", obj{"resource_id": "symbol:src/lib.rs#greet", "type": "write", "ttl_s": 900, "task_id": "excited-greeting"}, alice)
	if field(claim, "claim", "token") == nil {
		t.Fatalf("claim: %v", claim)
	}
	_, err := e.Call("claim.acquire", obj{"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 900}, bob)
	if code(err) != CodeConflict {
		t.Fatalf("overlapping claim: %v", err)
	}

	created := call(t, e, "proposal.create", obj{
		"task_id": "excited-greeting", "title": "Greet with an exclamation mark",
		"summary_md": "`greet` ends with `!`.", "risk": "critical", "patch": firstPatch,
		"affected_resources": []string{"symbol:src/lib.rs#greet"},
	}, alice)
	pid, _ := field(created, "proposal", "id").(string)
	if pid == "" {
		t.Fatalf("no proposal id: %v", created)
	}
	if first := call(t, e, "patch.validate", obj{"proposal_id": pid}, host); first["valid"] != false {
		t.Fatalf("revision 1 must not be valid: %v", first)
	}
	revised := call(t, e, "proposal.attach_patch", obj{"proposal_id": pid, "expected_revision": 1, "patch": secondPatch, "note_md": "Only `greet` changes now."}, alice)
	if field(revised, "revision", "number") != float64(2) {
		t.Fatalf("revision 2: %v", revised)
	}
	call(t, e, "proposal.request_review", obj{"proposal_id": pid}, alice)

	_, err = e.Call("vote.cast", obj{"proposal_id": pid, "revision": 2, "vote": "approve"}, alice)
	if !errors.Is(err, &Error{Code: CodeForbidden}) {
		t.Fatalf("the author voted: %v", err)
	}
	call(t, e, "vote.cast", obj{"proposal_id": pid, "revision": 2, "vote": "approve", "reason_md": "Reads well."}, bob)
	call(t, e, "vote.cast", obj{"proposal_id": pid, "revision": 2, "vote": "approve_with_notes", "reason_md": "Fine."}, sam)
	call(t, e, "security.review", obj{"proposal_id": pid, "revision": 2, "verdict": "pass", "note_md": "No security impact."}, sam)
	call(t, e, "human.approve", obj{"proposal_id": pid, "revision": 2, "note_md": "Ship it."}, carol)
	if ready := call(t, e, "patch.validate", obj{"proposal_id": pid}, host); ready["valid"] != true {
		t.Fatalf("not valid once approved: %v", ready)
	}

	applied := call(t, e, "patch.apply", obj{"proposal_id": pid, "revision": 2}, host)
	tid, _ := field(applied, "transaction", "id").(string)
	if got, _ := os.ReadFile(filepath.Join(root, "src/lib.rs")); string(got) == libRS || field(applied, "proposal", "status") != "applied" {
		t.Fatalf("the change did not land: %v", applied)
	}
	call(t, e, "transaction.rollback", obj{"transaction_id": tid}, host)
	if got, _ := os.ReadFile(filepath.Join(root, "src/lib.rs")); string(got) != libRS {
		t.Fatalf("rollback did not restore the original bytes:\n%s", got)
	}
	if chain := call(t, e, "events.verify", obj{}, host); chain["valid"] != true {
		t.Fatalf("audit chain: %v", chain)
	}
}

func TestErrors(t *testing.T) {
	e := open(t, repo(t), map[string]any{"durability": "normal"})

	_, err := e.Call("no.such.tool", obj{}, host)
	var rterr *Error
	if !errors.As(err, &rterr) || rterr.Code != CodeNotFound || rterr.Status != 12 || rterr.Message == "" {
		t.Fatalf("unknown tool: %#v", err)
	}
	var details obj
	if err := json.Unmarshal(rterr.Details, &details); err != nil || details["id"] != "no.such.tool" {
		t.Fatalf("details %s: %v", rterr.Details, err)
	}
	if _, err := e.Call("agent.list", json.RawMessage("{oops"), host); code(err) != CodeInvalidArgument {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := e.Call("agent.list", obj{}, Actor{ID: "x", Kind: "robot"}); code(err) != CodeInvalidArgument {
		t.Fatalf("bad actor kind: %v", err)
	}
	// A NUL is part of the name (pointer and length): no such tool, never
	// a call of the name before it.
	if _, err := e.Call("agent.list\x00", obj{}, host); code(err) != CodeNotFound {
		t.Fatalf("NUL in tool: %v", err)
	}
	call(t, e, "task.create", obj{"task_id": "t1", "title": "A task"}, host)
	_, err = e.Call("proposal.create", obj{"task_id": "t1", "title": "x", "summary_md": "x", "patch": secondPatch}, Agent("mallory"))
	if code(err) != CodeForbidden {
		t.Fatalf("unregistered agent: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing"), nil); code(err) != CodeInvalidArgument {
		t.Fatalf("missing root: %v", err)
	}
	if _, err := Open(t.TempDir(), map[string]any{"colour": 1}); code(err) != CodeInvalidArgument {
		t.Fatalf("unknown option: %v", err)
	}
	if _, err := ParsePatch([]byte("not a patch")); code(err) != CodeInvalidPatch {
		t.Fatalf("ParsePatch: %v", err)
	}
	summary, err := ParsePatch([]byte(secondPatch))
	if err != nil {
		t.Fatal(err)
	}
	var s obj
	if err := json.Unmarshal(summary, &s); err != nil || len(s["files"].([]any)) != 1 {
		t.Fatalf("summary %s: %v", summary, err)
	}
	e.Close()
	if _, err := e.Call("agent.list", obj{}, host); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	e.Close() // twice is harmless
}

// Goroutines propose against one engine at once; every proposal lands once.
func TestConcurrentProposals(t *testing.T) {
	const workers, each = 8, 5
	root := repo(t)
	e := open(t, root, map[string]any{"durability": "normal"})
	call(t, e, "task.create", obj{"task_id": "t-conc", "title": "Concurrent proposals"}, host)
	for w := 0; w < workers; w++ {
		call(t, e, "agent.register", obj{"agent_id": fmt.Sprintf("g%d", w), "roles": []string{"author"}}, host)
	}
	var wg sync.WaitGroup
	ids := make(chan string, workers*each)
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			me := Agent(fmt.Sprintf("g%d", w))
			for i := 0; i < each; i++ {
				var out obj
				err := e.CallInto("proposal.create", obj{
					"task_id": "t-conc", "title": fmt.Sprintf("g%d change %d", w, i), "summary_md": "x",
					"patch": secondPatch, "affected_resources": []string{"file:src/lib.rs"},
				}, me, &out)
				if err != nil {
					errs <- err
					continue
				}
				pid, _ := field(out, "proposal", "id").(string)
				var got obj
				if err := e.CallInto("proposal.get", obj{"proposal_id": pid}, me, &got); err != nil {
					errs <- err
					continue
				}
				ids <- pid
			}
		}(w)
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("duplicate id %s", id)
		}
		seen[id] = true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d proposals, want %d", len(seen), workers*each)
	}
	// A second engine on the same workspace sees them all.
	other := open(t, root, nil)
	list := call(t, other, "proposal.list", obj{"limit": 100}, host)
	if n := len(list["proposals"].([]any)); n != workers*each {
		t.Fatalf("proposal.list: %d, want %d", n, workers*each)
	}
}

// The Go host's repro (issue 16): re-acquiring one's own live claim returns
// it, renewed, instead of conflict; another agent is still refused.
func TestReacquiringOwnClaimReturnsIt(t *testing.T) {
	e := open(t, repo(t), map[string]any{"durability": "off"})
	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	args := obj{"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 60}
	first := call(t, e, "claim.acquire", args, alice)
	args["ttl_s"] = 600
	again := call(t, e, "claim.acquire", args, alice)
	if field(again, "claim", "id") != field(first, "claim", "id") || field(again, "claim", "token") != field(first, "claim", "token") {
		t.Fatalf("re-acquire gave another claim: %v then %v", first, again)
	}
	if field(again, "claim", "status") != "active" {
		t.Fatalf("re-acquired claim: %v", again)
	}
	if _, err := e.Call("claim.acquire", args, bob); code(err) != CodeConflict {
		t.Fatalf("another agent's claim: %v", err)
	}
}

// events.wait from goroutines: one blocks until another goroutine's commit
// (through a second engine on the workspace) wakes it; a waiting
// claim.acquire is granted when the holder releases.
func TestWaitingForEventsAndClaims(t *testing.T) {
	root := repo(t)
	e := open(t, root, map[string]any{"durability": "off"})
	other := open(t, root, map[string]any{"durability": "off"})
	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	head := call(t, e, "events.wait", obj{"since_seq": 0, "timeout_ms": 0}, host)
	since := head["head_seq"]

	done := make(chan obj, 1)
	go func() {
		var out obj
		if err := e.CallInto("events.wait", obj{"since_seq": since, "kinds": []string{"task.created"}, "timeout_ms": 60000}, host, &out); err != nil {
			t.Error(err)
		}
		done <- out
	}()
	call(t, other, "task.create", obj{"task_id": "woken", "title": "Wakes the waiter"}, host)
	got := <-done
	events, _ := got["events"].([]any)
	if got["timed_out"] != false || len(events) != 1 || field(events[0], "subject") != "woken" {
		t.Fatalf("events.wait: %v", got)
	}

	timedOut := call(t, e, "events.wait", obj{"since_seq": got["next_since_seq"], "timeout_ms": 10}, host)
	if timedOut["timed_out"] != true || timedOut["head_seq"] != got["next_since_seq"] {
		t.Fatalf("timeout: %v", timedOut)
	}
	if _, err := e.Call("events.wait", obj{"since_seq": 0, "timeout_ms": 60001}, host); code(err) != CodeInvalidArgument {
		t.Fatalf("timeout_ms above the bound: %v", err)
	}

	held := call(t, e, "claim.acquire", obj{"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 60}, bob)
	granted := make(chan obj, 1)
	go func() {
		var out obj
		if err := e.CallInto("claim.acquire", obj{"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 60, "wait_ms": 60000}, alice, &out); err != nil {
			t.Error(err)
		}
		granted <- out
	}()
	call(t, other, "claim.release", obj{"claim_id": field(held, "claim", "id")}, bob)
	if g := <-granted; field(g, "claim", "agent_id") != "alice" {
		t.Fatalf("waiting claim: %v", g)
	}
}

// The Go host's repros of issue 16: a failed check's note reads back
// (test.get) and waits on the author, and a rolled-back proposal reads
// rolled_back.
func TestFailedCheckNoteAndRolledBackStatus(t *testing.T) {
	root := repo(t)
	e := open(t, root, map[string]any{"durability": "off"})
	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	call(t, e, "task.create", obj{"task_id": "t1", "title": "Greet"}, host)
	set := call(t, e, "policy.set", obj{"document": "version = 1\n[checks]\nrequired = [\"unit\"]\n"}, host)
	call(t, e, "policy.activate", obj{"version": field(set, "policy", "version")}, host)
	call(t, e, "claim.acquire", obj{"resource_id": "symbol:src/lib.rs#greet", "type": "write", "ttl_s": 900}, alice)
	created := call(t, e, "proposal.create", obj{"task_id": "t1", "title": "Excited", "summary_md": "!", "patch": secondPatch}, alice)
	pid, _ := field(created, "proposal", "id").(string)
	call(t, e, "proposal.request_review", obj{"proposal_id": pid}, alice)
	call(t, e, "vote.cast", obj{"proposal_id": pid, "revision": 1, "vote": "approve"}, bob)

	note := "--- FAIL: TestGreet (0.00s)\n    greet_test.go:9: got \"Hello, ada!\""
	failed := call(t, e, "test.record", obj{"proposal_id": pid, "revision": 1, "name": "unit", "status": "failed", "note_md": note}, host)
	testID, _ := field(failed, "test_result", "id").(string)
	var got struct {
		TestResult struct {
			Status string  `json:"status"`
			NoteMD *string `json:"note_md"`
		} `json:"test_result"`
	}
	if err := e.CallInto("test.get", obj{"test_result_id": testID}, alice, &got); err != nil {
		t.Fatal(err)
	}
	if got.TestResult.Status != "failed" || got.TestResult.NoteMD == nil || *got.TestResult.NoteMD != note {
		t.Fatalf("test.get: %+v", got)
	}
	var inbox struct {
		Items []struct {
			Action   string `json:"action"`
			Proposal struct {
				ID string `json:"id"`
			} `json:"proposal"`
		} `json:"items"`
	}
	if err := e.CallInto("inbox.list", obj{}, alice, &inbox); err != nil || len(inbox.Items) != 1 || inbox.Items[0].Action != "fix_check" || inbox.Items[0].Proposal.ID != pid {
		t.Fatalf("alice's inbox: %+v %v", inbox, err)
	}
	if _, err := e.Call("inbox.list", obj{}, Actor{ID: "x", Kind: "robot"}); code(err) != CodeInvalidArgument {
		t.Fatalf("inbox of an unknown actor kind: %v", err)
	}
	if _, err := e.Call("inbox.list", obj{"cursor": "nope"}, host); code(err) != CodeInvalidArgument {
		t.Fatalf("bad cursor: %v", err)
	}
	if _, err := e.Call("test.get", obj{"test_result_id": "test-nope"}, host); code(err) != CodeNotFound {
		t.Fatalf("unknown test result: %v", err)
	}

	call(t, e, "test.record", obj{"proposal_id": pid, "revision": 1, "name": "unit", "status": "passed"}, host)
	applied := call(t, e, "patch.apply", obj{"proposal_id": pid, "revision": 1}, host)
	tid, _ := field(applied, "transaction", "id").(string)
	call(t, e, "transaction.rollback", obj{"transaction_id": tid}, host)
	var proposal struct {
		Proposal struct {
			Status ProposalStatus `json:"status"`
		} `json:"proposal"`
	}
	if err := e.CallInto("proposal.get", obj{"proposal_id": pid}, host, &proposal); err != nil || proposal.Proposal.Status != ProposalRolledBack {
		t.Fatalf("after rollback: %+v %v", proposal, err)
	}
	if _, err := e.Call("proposal.revert", obj{"proposal_id": pid}, alice); code(err) != CodeIllegalTransition {
		t.Fatalf("revert of a rolled-back proposal: %v", err)
	}
}

// The Go host's repro of issue 16 item 7: a directory claim on pkg/ stays
// fresh when a git-ignored __pycache__/ appears under it, and a file git
// does not ignore still makes it stale.
func TestDirectoryClaimIgnoresGitIgnoredFiles(t *testing.T) {
	root := repo(t)
	write := func(rel, text string) {
		t.Helper()
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".gitignore", "__pycache__/\n")
	write("pkg/mod.py", "x = 1\n")
	e := open(t, root, map[string]any{"durability": "off"})
	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	call(t, e, "task.create", obj{"task_id": "t1", "title": "Bump x"}, host)
	call(t, e, "claim.acquire", obj{"resource_id": "directory:pkg", "type": "write", "ttl_s": 600}, alice)
	created := call(t, e, "proposal.create", obj{
		"task_id": "t1", "title": "Bump x", "summary_md": "x is 2.",
		"patch": "--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
	}, alice)
	pid, _ := field(created, "proposal", "id").(string)
	call(t, e, "proposal.request_review", obj{"proposal_id": pid}, alice)
	call(t, e, "vote.cast", obj{"proposal_id": pid, "revision": 1, "vote": "approve"}, bob)

	write("pkg/__pycache__/mod.cpython-312.pyc", "\x00bytecode")
	if report := call(t, e, "patch.validate", obj{"proposal_id": pid}, host); report["valid"] != true {
		t.Fatalf("an ignored file made the directory claim stale: %v", report)
	}
	write("pkg/other.py", "y = 1\n")
	if report := call(t, e, "patch.validate", obj{"proposal_id": pid}, host); report["valid"] != false {
		t.Fatalf("a new tracked file must make the directory claim stale: %v", report)
	}
}

// A Latin-1 patch given as bytes (patch_base64: encoding/json encodes a
// []byte as base64) lands byte for byte; a NUL inside a string argument is
// refused, never a silent truncation.
func TestLatin1PatchLandsByteExact(t *testing.T) {
	root := repo(t)
	before := []byte("caf\xe9\nkeep \xff\n")
	if err := os.WriteFile(filepath.Join(root, "latin1.txt"), before, 0o644); err != nil {
		t.Fatal(err)
	}
	e := open(t, root, nil)
	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	call(t, e, "task.create", obj{"task_id": "t1", "title": "Latin-1"}, host)
	call(t, e, "claim.acquire", obj{"resource_id": "file:latin1.txt", "type": "write", "ttl_s": 600}, alice)
	patch := []byte("--- a/latin1.txt\n+++ b/latin1.txt\n@@ -1,2 +1,2 @@\n-caf\xe9\n+na\xefve\n keep \xff\n")
	made := call(t, e, "proposal.create", obj{"task_id": "t1", "title": "L", "summary_md": "s", "patch_base64": patch}, alice)
	pid := field(made, "proposal", "id")
	call(t, e, "proposal.request_review", obj{"proposal_id": pid}, alice)
	call(t, e, "vote.cast", obj{"proposal_id": pid, "revision": 1, "vote": "approve"}, bob)
	call(t, e, "patch.apply", obj{"proposal_id": pid, "revision": 1}, host)
	got, err := os.ReadFile(filepath.Join(root, "latin1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte("na\xefve\nkeep \xff\n"); string(got) != string(want) {
		t.Fatalf("latin1.txt = %q, want %q", got, want)
	}
	_, err = e.Call("proposal.get", json.RawMessage("{\"proposal_id\":\"x\"}\x00junk"), host)
	if code(err) != CodeInvalidArgument {
		t.Fatalf("a NUL inside the arguments: %v", err)
	}
}

// An apply waiting for the workspace apply lock (held here as another
// applier would hold it) is cancelled through its context, or gives up at
// the context's deadline, long before the busy timeout; nothing changes.
func TestCancellingAWaitingApplyChangesNothing(t *testing.T) {
	root := repo(t)
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("demo project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := open(t, root, nil)
	call(t, e, "agent.register", obj{"agent_id": "alice", "roles": []string{"author"}}, host)
	call(t, e, "agent.register", obj{"agent_id": "bob", "roles": []string{"reviewer"}}, host)
	call(t, e, "task.create", obj{"task_id": "t1", "title": "t"}, host)
	call(t, e, "claim.acquire", obj{"resource_id": "file:README.md", "type": "write", "ttl_s": 600}, alice)
	made := call(t, e, "proposal.create", obj{"task_id": "t1", "title": "R", "summary_md": "s",
		"patch": "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-demo project\n+demo project!\n"}, alice)
	pid := field(made, "proposal", "id")
	call(t, e, "proposal.request_review", obj{"proposal_id": pid}, alice)
	call(t, e, "vote.cast", obj{"proposal_id": pid, "revision": 1, "vote": "approve"}, bob)

	lock, err := os.Open(filepath.Join(root, ".roundtable"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	apply := obj{"proposal_id": pid, "revision": 1}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = e.CallContext(ctx, "patch.apply", apply, host)
	if !errors.Is(err, context.Canceled) || code(err) != CodeCancelled {
		t.Fatalf("cancelled apply: %v", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the cancelled apply returned after %v", waited)
	}
	ctx, stop := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer stop()
	_, err = e.CallContext(ctx, "patch.apply", apply, host)
	if !errors.Is(err, context.DeadlineExceeded) || code(err) != CodeDeadlineExceeded {
		t.Fatalf("apply past its deadline: %v", err)
	}
	got, _ := os.ReadFile(filepath.Join(root, "README.md"))
	if string(got) != "demo project\n" {
		t.Fatalf("README.md changed: %q", got)
	}
	txs := call(t, e, "transaction.list", obj{}, host)
	if list, _ := txs["transactions"].([]any); len(list) != 0 {
		t.Fatalf("a transaction was recorded: %v", txs)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	call(t, e, "patch.apply", apply, host)
}
