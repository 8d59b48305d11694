package roundtable

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"syscall"
	"testing"
	"time"
)

// must returns v, or panics with err (which fails the test with its stack).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// The governed change with typed structs only: sessions bound to actors,
// typed arguments and results, errors.Is with the sentinels.
func TestTypedGovernedChange(t *testing.T) {
	root := repo(t)
	e := open(t, root, nil)
	ctx := context.Background()
	h, a, b, s, c := e.Session(host), e.Session(alice), e.Session(bob), e.Session(sam), e.Session(carol)

	for _, agent := range []RegisterArgs{{"alice", []string{"author"}}, {"bob", []string{"reviewer"}}, {"sam", []string{"reviewer", "security"}}} {
		got := must(h.AgentRegister(ctx, AgentRegisterArgs{AgentID: agent.id, Roles: agent.roles}))
		if !got.Created || got.Agent.ID != agent.id {
			t.Fatalf("agent.register: %+v", got)
		}
	}
	task := must(h.TaskCreate(ctx, TaskCreateArgs{TaskID: Ptr("excited-greeting"), Title: "Greet with more enthusiasm"}))
	if task.Task.CreatedBy != host {
		t.Fatalf("task: %+v", task.Task)
	}

	claim := must(a.ClaimAcquire(ctx, ClaimAcquireArgs{ResourceID: "symbol:src/lib.rs#greet", Type: ClaimTypeWrite, TTL: 900 * time.Second, TaskID: Ptr("excited-greeting")}))
	if claim.Claim.Status != ClaimStatusActive || claim.Claim.Token < 1 || claim.Claim.Span == nil || claim.Claim.Span.Start != 1 {
		t.Fatalf("claim: %+v", claim.Claim)
	}
	_, err := b.ClaimAcquire(ctx, ClaimAcquireArgs{ResourceID: "file:src/lib.rs", Type: ClaimTypeWrite, TTL: 900 * time.Second})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("overlapping claim: %v", err)
	}
	var details map[string]any
	if rterr := (*Error)(nil); !errors.As(err, &rterr) || rterr.DecodeDetails(&details) != nil || len(details) == 0 {
		t.Fatalf("the conflict's details: %v %v", err, details)
	}

	created := must(a.ProposalCreate(ctx, ProposalCreateArgs{
		TaskID: "excited-greeting", Title: "Greet with an exclamation mark", SummaryMD: "`greet` ends with `!`.",
		Risk: Ptr(RiskCritical), Patch: Ptr(firstPatch), AffectedResources: []string{"symbol:src/lib.rs#greet"},
	}))
	pid := created.Proposal.ID
	if created.Proposal.Status != ProposalStatusPending || created.Revision.Number != 1 || created.Revision.CreatedBy != alice {
		t.Fatalf("proposal.create: %+v", created)
	}
	first := must(h.PatchValidate(ctx, PatchValidateArgs{ProposalID: pid}))
	if first.Valid || !hasFailed(first, "coverage") {
		t.Fatalf("revision 1 must fail coverage: %+v", first.Stages)
	}
	revised := must(a.ProposalAttachPatch(ctx, ProposalAttachPatchArgs{ProposalID: pid, ExpectedRevision: 1, Patch: Ptr(secondPatch), NoteMD: Ptr("Only `greet` changes now.")}))
	if revised.Revision.Number != 2 || revised.Revision.DiffDigest == nil {
		t.Fatalf("revision 2: %+v", revised.Revision)
	}
	if _, err := a.ProposalAttachPatch(ctx, ProposalAttachPatchArgs{ProposalID: pid, ExpectedRevision: 1, Patch: Ptr(secondPatch)}); !errors.Is(err, ErrConflict) {
		t.Fatalf("a stale expected_revision: %v", err)
	}
	must(a.ProposalRequestReview(ctx, ProposalRequestReviewArgs{ProposalID: pid}))
	if _, err := a.VoteCast(ctx, VoteCastArgs{ProposalID: pid, Revision: 2, Vote: VoteValueApprove}); !errors.Is(err, ErrForbidden) {
		t.Fatalf("the author voted: %v", err)
	}
	vote := must(b.VoteCast(ctx, VoteCastArgs{ProposalID: pid, Revision: 2, Vote: VoteValueApprove, ReasonMD: Ptr("Reads well.")}))
	if vote.Vote.Vote != VoteValueApprove || vote.Vote.AgentID != "bob" {
		t.Fatalf("vote: %+v", vote.Vote)
	}
	must(s.VoteCast(ctx, VoteCastArgs{ProposalID: pid, Revision: 2, Vote: VoteValueApproveWithNotes, ReasonMD: Ptr("Fine.")}))
	must(s.SecurityReview(ctx, SecurityReviewArgs{ProposalID: pid, Revision: 2, Verdict: VerdictPass, NoteMD: Ptr("No security impact.")}))
	must(c.HumanApprove(ctx, HumanApproveArgs{ProposalID: pid, Revision: 2, NoteMD: Ptr("Ship it.")}))
	if ready := must(h.PatchValidate(ctx, PatchValidateArgs{ProposalID: pid})); !ready.Valid {
		t.Fatalf("not valid once approved: %+v", ready.Stages)
	}

	applied := must(h.PatchApply(ctx, PatchApplyArgs{ProposalID: pid, Revision: 2}))
	if applied.Proposal.Status != ProposalStatusApplied || applied.Transaction.Status != TransactionStatusApplied {
		t.Fatalf("patch.apply: %+v", applied)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "src/lib.rs")); string(got) == libRS {
		t.Fatal("the change did not land")
	}
	rolled := must(h.TransactionRollback(ctx, TransactionRollbackArgs{TransactionID: applied.Transaction.ID}))
	if rolled.Transaction.RollbackOf == nil || *rolled.Transaction.RollbackOf != applied.Transaction.ID {
		t.Fatalf("rollback: %+v", rolled.Transaction)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "src/lib.rs")); string(got) != libRS {
		t.Fatalf("rollback did not restore the original bytes:\n%s", got)
	}
	back := must(b.ProposalGet(ctx, ProposalGetArgs{ProposalID: pid}))
	if back.Proposal.Status != ProposalStatusRolledBack || len(back.Revisions) != 2 {
		t.Fatalf("proposal.get: %+v", back.Proposal)
	}
	page := must(h.EventsList(ctx, EventsListArgs{ProposalID: Ptr(pid), Limit: Ptr(int64(100))}))
	if len(page.Events) < 8 || page.Events[0].Actor != alice {
		t.Fatalf("events: %d, first by %+v", len(page.Events), page.Events[0].Actor)
	}
	if chain := must(h.EventsVerify(ctx, EventsVerifyArgs{})); !chain.Valid {
		t.Fatalf("audit chain: %+v", chain)
	}
}

// RegisterArgs is a test table row.
type RegisterArgs struct {
	id    string
	roles []string
}

func hasFailed(r *ValidationReport, stage StageName) bool {
	for _, s := range r.Stages {
		if s.Name == stage && s.Status == StageStatusFailed {
			return true
		}
	}
	return false
}

// A typed apply waiting on the apply lock ends when its context is
// cancelled or its deadline passes, and changes nothing.
func TestTypedApplyCancelledThroughItsContext(t *testing.T) {
	root := repo(t)
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("demo project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := open(t, root, nil)
	bgc := context.Background()
	h, a, b := e.Session(host), e.Session(alice), e.Session(bob)
	must(h.AgentRegister(bgc, AgentRegisterArgs{AgentID: "alice", Roles: []string{"author"}}))
	must(h.AgentRegister(bgc, AgentRegisterArgs{AgentID: "bob", Roles: []string{"reviewer"}}))
	must(h.TaskCreate(bgc, TaskCreateArgs{TaskID: Ptr("t1"), Title: "t"}))
	must(a.ClaimAcquire(bgc, ClaimAcquireArgs{ResourceID: "file:README.md", Type: ClaimTypeWrite, TTL: 600 * time.Second}))
	made := must(a.ProposalCreate(bgc, ProposalCreateArgs{TaskID: "t1", Title: "R", SummaryMD: "s",
		Patch: Ptr("--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-demo project\n+demo project!\n")}))
	pid := made.Proposal.ID
	must(a.ProposalRequestReview(bgc, ProposalRequestReviewArgs{ProposalID: pid}))
	must(b.VoteCast(bgc, VoteCastArgs{ProposalID: pid, Revision: 1, Vote: VoteValueApprove}))

	lock, err := os.Open(filepath.Join(root, ".roundtable"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	apply := PatchApplyArgs{ProposalID: pid, Revision: 1}
	ctx, cancel := context.WithCancel(bgc)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := h.PatchApply(ctx, apply); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("cancelled apply: %v", err)
	}
	ctx, stop := context.WithTimeout(bgc, 80*time.Millisecond)
	defer stop()
	if _, err := h.PatchApply(ctx, apply); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrDeadlineExceeded) {
		t.Fatalf("apply past its deadline: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "README.md")); string(got) != "demo project\n" {
		t.Fatalf("README.md changed: %q", got)
	}
	if txs := must(h.TransactionList(bgc, TransactionListArgs{})); len(txs.Transactions) != 0 {
		t.Fatalf("a transaction was recorded: %+v", txs.Transactions)
	}
	if got := must(h.ProposalGet(bgc, ProposalGetArgs{ProposalID: pid})); got.Proposal.Status == ProposalStatusApplied {
		t.Fatal("the proposal is applied")
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if done := must(h.PatchApply(bgc, apply)); done.Proposal.Status != ProposalStatusApplied {
		t.Fatalf("apply after the lock was released: %+v", done.Proposal)
	}
}

// Every tool of the library's registry has its typed method on Session,
// taking a context and its generated Args struct, whose JSON fields are the
// tool's input properties.
func TestEveryToolHasATypedMethod(t *testing.T) {
	var tools []struct {
		Name        string `json:"name"`
		InputSchema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"input_schema"`
	}
	if err := json.Unmarshal(must(ToolsJSON()), &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(toolNames) {
		t.Fatalf("the library has %d tools, the generated methods %d", len(tools), len(toolNames))
	}
	session := reflect.TypeOf(&Session{})
	for _, tool := range tools {
		name := goName(tool.Name)
		m, ok := session.MethodByName(name)
		if !ok {
			t.Errorf("%s: no Session.%s", tool.Name, name)
			continue
		}
		args := m.Type.In(2)
		var fields []string
		for i := 0; i < args.NumField(); i++ {
			tag := args.Field(i).Tag.Get("json")
			if j := len(tag); j > 0 {
				for k := 0; k < len(tag); k++ {
					if tag[k] == ',' {
						j = k
						break
					}
				}
				fields = append(fields, tag[:j])
			}
		}
		var want []string
		for p := range tool.InputSchema.Properties {
			want = append(want, p)
		}
		sort.Strings(fields)
		sort.Strings(want)
		if !reflect.DeepEqual(fields, want) {
			t.Errorf("%s: %s has fields %v, the schema %v", tool.Name, args.Name(), fields, want)
		}
	}
}

// goName is scripts/gen-go's name of a tool: proposal.attach_patch ->
// ProposalAttachPatch.
func goName(tool string) string {
	out := []byte{}
	up := true
	for i := 0; i < len(tool); i++ {
		ch := tool[i]
		if ch == '.' || ch == '_' {
			up = true
			continue
		}
		if up && ch >= 'a' && ch <= 'z' {
			ch -= 'a' - 'A'
		}
		up = false
		out = append(out, ch)
	}
	return string(out)
}

func TestOpenRefusesAnotherVersion(t *testing.T) {
	if err := checkVersions(HeaderABIVersion(), JSONVersion); err != nil {
		t.Fatalf("this build: %v", err)
	}
	if err := checkVersions(HeaderABIVersion()+1, JSONVersion); !errors.Is(err, ErrVersion) {
		t.Fatalf("another ABI: %v", err)
	}
	if err := checkVersions(HeaderABIVersion(), JSONVersion+1); !errors.Is(err, ErrVersion) {
		t.Fatalf("another JSON version: %v", err)
	}
	if JSONLibraryVersion() != JSONVersion {
		t.Fatalf("the library speaks JSON %d, the types are %d", JSONLibraryVersion(), JSONVersion)
	}
}

// A context that ended before the call: the call is not made, and the error
// is both the sentinel and the context's error, as when a wait is ended.
func TestAContextThatEndedBeforeTheCallChangesNothing(t *testing.T) {
	e := open(t, repo(t), nil)
	h := e.Session(host)
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	expired, stop := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer stop()
	for _, c := range []struct {
		ctx      context.Context
		sentinel error
		ctxErr   error
	}{{cancelled, ErrCancelled, context.Canceled}, {expired, ErrDeadlineExceeded, context.DeadlineExceeded}} {
		_, err := h.TaskCreate(c.ctx, TaskCreateArgs{TaskID: Ptr("t1"), Title: "t"})
		var rterr *Error
		if !errors.Is(err, c.sentinel) || !errors.Is(err, c.ctxErr) || !errors.As(err, &rterr) || rterr.Status == 0 {
			t.Fatalf("%v: %v", c.ctxErr, err)
		}
		if _, err := h.Call(c.ctx, "task.create", json.RawMessage(`{"task_id":"t2","title":"t"}`)); !errors.Is(err, c.sentinel) {
			t.Fatalf("%v through Call: %v", c.ctxErr, err)
		}
	}
	if tasks := must(h.TaskList(bg, TaskListArgs{})); len(tasks.Tasks) != 0 {
		t.Fatalf("a task was created: %+v", tasks.Tasks)
	}
}
