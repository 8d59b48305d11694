package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	roundtable "example.invalid/roundtable/go"
)

// The governed change and the cancelled apply of main.go.
func TestGovernedChangeAndCancelledApply(t *testing.T) {
	if err := run(filepath.Join(t.TempDir(), "repo")); err != nil {
		t.Fatal(err)
	}
}

// One engine, a session per agent goroutine, all at once (run with -race):
// each agent proposes its own file; every proposal is its author's, and a
// session cannot act as anyone else.
func TestSessionsInParallel(t *testing.T) {
	root := t.TempDir()
	engine, err := roundtable.Open(root, map[string]any{"durability": "off"})
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close()
	ctx := context.Background()
	host := engine.Session(roundtable.AsOrchestrator("host"))
	const agents = 6
	for i := 0; i < agents; i++ {
		id := fmt.Sprintf("agent-%d", i)
		if _, err := host.AgentRegister(ctx, roundtable.AgentRegisterArgs{AgentID: id, Roles: []string{"author"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := host.TaskCreate(ctx, roundtable.TaskCreateArgs{TaskID: roundtable.Ptr("task-" + id), Title: id}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for i := 0; i < agents; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			id := fmt.Sprintf("agent-%d", i)
			me := engine.Session(roundtable.AsAgent(id))
			path := fmt.Sprintf("file-%d.txt", i)
			made, err := me.ProposalCreate(ctx, roundtable.ProposalCreateArgs{
				TaskID: "task-" + id, Title: id, SummaryMD: "new file",
				Patch: roundtable.Ptr(fmt.Sprintf("--- /dev/null\n+++ b/%s\n@@ -0,0 +1 @@\n+%s\n", path, id)),
			})
			if err != nil {
				errs <- err
				return
			}
			got, err := me.ProposalGet(ctx, roundtable.ProposalGetArgs{ProposalID: made.Proposal.ID})
			if err != nil || got.Proposal.Author != id || got.Revision.Changeset[0].Path != path {
				errs <- fmt.Errorf("%s: %+v, %v", id, got, err)
				return
			}
			// Withdrawing another agent's proposal is refused.
			other := fmt.Sprintf("agent-%d", (i+1)%agents)
			list, err := me.ProposalList(ctx, roundtable.ProposalListArgs{Author: roundtable.Ptr(other)})
			if err != nil {
				errs <- err
				return
			}
			for _, p := range list.Proposals {
				if _, err := me.ProposalWithdraw(ctx, roundtable.ProposalWithdrawArgs{ProposalID: p.ID}); !errors.Is(err, roundtable.ErrForbidden) {
					errs <- fmt.Errorf("%s withdrew %s's proposal: %v", id, other, err)
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := host.ProposalList(ctx, roundtable.ProposalListArgs{})
	if err != nil || len(all.Proposals) != agents {
		t.Fatalf("%d proposals, %v", len(all.Proposals), err)
	}
	if _, err := os.Stat(filepath.Join(root, "file-0.txt")); !os.IsNotExist(err) {
		t.Fatalf("a proposal changed the workspace: %v", err)
	}
}
