package roundtable

import (
	"context"
	"testing"
	"time"
)

// Issue 33, item 3: the fields with a fixed set of values are enums in the
// schema, so the generated Go has a named string type with one constant
// per value, and a host switches on them (go vet checks the switch's
// types: comparing a Kind with a plain string variable does not compile).
func TestIssue33Item3AHostSwitchesOnTheGeneratedEnums(t *testing.T) {
	root := repo(t)
	e := open(t, root, nil)
	ctx := context.Background()
	h, a := e.Session(host), e.Session(alice)
	must(h.AgentRegister(ctx, AgentRegisterArgs{AgentID: "alice", Roles: []string{"author"}}))
	must(h.TaskCreate(ctx, TaskCreateArgs{TaskID: Ptr("greet"), Title: "Greet"}))
	created := must(a.ProposalCreate(ctx, ProposalCreateArgs{
		TaskID: "greet", Title: "Exclaim", SummaryMD: "`greet` ends with `!`.", Patch: Ptr(firstPatch),
	}))
	pid := created.Proposal.ID
	must(a.ProposalAttachPatch(ctx, ProposalAttachPatchArgs{ProposalID: pid, ExpectedRevision: 1, Patch: Ptr(secondPatch)}))

	// The event kind: what a dashboard does with each event.
	seen := map[string]int{}
	for _, ev := range must(h.EventsList(ctx, EventsListArgs{})).Events {
		switch ev.Kind {
		case EventKindAgentRegistered, EventKindAgentUpdated:
			seen["agent"]++
		case EventKindTaskCreated:
			seen["task"]++
		case EventKindProposalCreated:
			seen["created"]++
		case EventKindProposalRevised:
			seen["revised"]++
		default:
			t.Errorf("event %d: a kind this flow does not make: %q", ev.Seq, ev.Kind)
		}
	}
	if want := map[string]int{"agent": 1, "task": 1, "created": 1, "revised": 1}; len(seen) != len(want) ||
		seen["agent"] != 1 || seen["task"] != 1 || seen["created"] != 1 || seen["revised"] != 1 {
		t.Fatalf("events by kind: %v, want %v", seen, want)
	}
	// The enum goes back in as a filter.
	wait := must(h.EventsWait(ctx, EventsWaitArgs{Kinds: []EventKind{EventKindProposalRevised}, Timeout: Ptr(0 * time.Millisecond)}))
	if len(wait.Events) != 1 || wait.Events[0].Kind != EventKindProposalRevised {
		t.Fatalf("events.wait by kind: %+v", wait.Events)
	}

	// A file's operation, and how two revisions differ per file.
	for _, f := range must(h.ProposalFiles(ctx, ProposalFilesArgs{ProposalID: pid})).Files {
		switch f.Operation {
		case OperationKindModify:
		case OperationKindCreate, OperationKindDelete, OperationKindRename, OperationKindRenamedAway, OperationKindCopy:
			t.Errorf("%v: the revision only modifies src/lib.rs, got %q", f.NewPath, f.Operation)
		default:
			t.Errorf("an operation the schema does not list: %q", f.Operation)
		}
	}
	diff := must(h.ProposalCompare(ctx, ProposalCompareArgs{ProposalID: pid, FromRevision: 1, ToRevision: 2}))
	if len(diff.Files) != 1 {
		t.Fatalf("proposal.compare: %+v", diff)
	}
	switch diff.Files[0].Status {
	case InterdiffStatusChanged:
	case InterdiffStatusOnlyInFrom, InterdiffStatusOnlyInTo:
		t.Fatalf("both revisions touch %s: %q", diff.Files[0].Path, diff.Files[0].Status)
	default:
		t.Fatalf("a status the schema does not list: %q", diff.Files[0].Status)
	}

	// Every generated list holds each spelling once.
	kinds := map[EventKind]bool{}
	for _, k := range EventKinds {
		if kinds[k] {
			t.Fatalf("%q is listed twice", k)
		}
		kinds[k] = true
	}
	if !kinds[EventKindProposalApplied] || len(Durabilities) != 3 || len(PolicyStatuses) != 4 || len(RevisionFormats) != 4 {
		t.Fatalf("the generated lists: %v %v %v %v", EventKinds, Durabilities, PolicyStatuses, RevisionFormats)
	}
}
