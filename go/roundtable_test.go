package roundtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

const libRS = "pub fn greet(name: &str) -> String {\n    format!(\"Hello, {name}\")\n}\n\npub fn shout(name: &str) -> String {\n    greet(name).to_uppercase()\n}\n"

// Revision 1 changes greet but also appends a function outside the claim.
const firstPatch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,7 +1,11 @@\n pub fn greet(name: &str) -> String {\n-    format!(\"Hello, {name}\")\n+    format!(\"Hello, {name}!\")\n }\n \n pub fn shout(name: &str) -> String {\n     greet(name).to_uppercase()\n }\n+\n+pub fn farewell(name: &str) -> String {\n+    format!(\"Goodbye, {name}\")\n+}\n"

// The repair: only the claimed function changes.
const secondPatch = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n pub fn greet(name: &str) -> String {\n-    format!(\"Hello, {name}\")\n+    format!(\"Hello, {name}!\")\n }\n"

var (
	host  = AsOrchestrator("host")
	alice = AsAgent("alice")
	bob   = AsAgent("bob")
	sam   = AsAgent("sam")
	carol = AsHuman("carol")
)

type obj = map[string]any

var bg = context.Background()

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
	if err := e.CallInto(bg, actor, tool, args, &out); err != nil {
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

func TestErrors(t *testing.T) {
	e := open(t, repo(t), map[string]any{"durability": "normal"})

	_, err := e.Call(bg, host, "no.such.tool", obj{})
	var rterr *Error
	if !errors.As(err, &rterr) || rterr.Code != CodeNotFound || rterr.Status != 12 || rterr.Message == "" {
		t.Fatalf("unknown tool: %#v", err)
	}
	var details obj
	if err := json.Unmarshal(rterr.Details, &details); err != nil || details["id"] != "no.such.tool" {
		t.Fatalf("details %s: %v", rterr.Details, err)
	}
	if _, err := e.Call(bg, host, "agent.list", json.RawMessage("{oops")); code(err) != CodeInvalidArgument {
		t.Fatalf("bad JSON: %v", err)
	}
	if _, err := e.Call(bg, Actor{ID: "x", Kind: "robot"}, "agent.list", obj{}); code(err) != CodeInvalidArgument {
		t.Fatalf("bad actor kind: %v", err)
	}
	// A NUL is part of the name (pointer and length): no such tool, never
	// a call of the name before it.
	if _, err := e.Call(bg, host, "agent.list\x00", obj{}); code(err) != CodeNotFound {
		t.Fatalf("NUL in tool: %v", err)
	}
	call(t, e, "task.create", obj{"task_id": "t1", "title": "A task"}, host)
	_, err = e.Call(bg, AsAgent("mallory"), "proposal.create", obj{"task_id": "t1", "title": "x", "summary_md": "x", "patch": secondPatch})
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
	if _, err := e.Call(bg, host, "agent.list", obj{}); !errors.Is(err, ErrClosed) {
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
			me := AsAgent(fmt.Sprintf("g%d", w))
			for i := 0; i < each; i++ {
				var out obj
				err := e.CallInto(bg, me, "proposal.create", obj{
					"task_id": "t-conc", "title": fmt.Sprintf("g%d change %d", w, i), "summary_md": "x",
					"patch": secondPatch, "affected_resources": []string{"file:src/lib.rs"},
				}, &out)
				if err != nil {
					errs <- err
					continue
				}
				pid, _ := field(out, "proposal", "id").(string)
				var got obj
				if err := e.CallInto(bg, me, "proposal.get", obj{"proposal_id": pid}, &got); err != nil {
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
		if err := e.CallInto(bg, host, "events.wait", obj{"since_seq": since, "kinds": []string{"task.created"}, "timeout_ms": 60000}, &out); err != nil {
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
	if _, err := e.Call(bg, host, "events.wait", obj{"since_seq": 0, "timeout_ms": 60001}); code(err) != CodeInvalidArgument {
		t.Fatalf("timeout_ms above the bound: %v", err)
	}

	held := call(t, e, "claim.acquire", obj{"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 60}, bob)
	granted := make(chan obj, 1)
	go func() {
		var out obj
		if err := e.CallInto(bg, alice, "claim.acquire", obj{"resource_id": "file:src/lib.rs", "type": "write", "ttl_s": 60, "wait_ms": 60000}, &out); err != nil {
			t.Error(err)
		}
		granted <- out
	}()
	call(t, other, "claim.release", obj{"claim_id": field(held, "claim", "id")}, bob)
	if g := <-granted; field(g, "claim", "agent_id") != "alice" {
		t.Fatalf("waiting claim: %v", g)
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
	_, err = e.Call(bg, host, "proposal.get", json.RawMessage("{\"proposal_id\":\"x\"}\x00junk"))
	if code(err) != CodeInvalidArgument {
		t.Fatalf("a NUL inside the arguments: %v", err)
	}
}
