// A host program outside the roundtable repository (scripts/test-go copies
// it into a module of its own): it imports the Go module, governs one
// change with the typed API only, and exits non-zero if anything is off.
//
//	host DIR   (DIR is created: the repository to govern)
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	roundtable "example.invalid/roundtable/go"
)

const patch = "--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print(\"hello\")\n+print(\"hello, world\")\n"

func run(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	app := filepath.Join(root, "app.py")
	if err := os.WriteFile(app, []byte("print(\"hello\")\n"), 0o644); err != nil {
		return err
	}
	engine, err := roundtable.Open(root, map[string]any{"durability": "normal"})
	if err != nil {
		return err
	}
	defer engine.Close()
	ctx := context.Background()
	host := engine.Session(roundtable.AsOrchestrator("host"))
	ada := engine.Session(roundtable.AsAgent("ada"))
	rex := engine.Session(roundtable.AsAgent("rex"))

	for id, roles := range map[string][]string{"ada": {"author"}, "rex": {"reviewer"}} {
		if _, err := host.AgentRegister(ctx, roundtable.AgentRegisterArgs{AgentID: id, Roles: roles}); err != nil {
			return err
		}
	}
	if _, err := host.TaskCreate(ctx, roundtable.TaskCreateArgs{TaskID: roundtable.Ptr("greet"), Title: "Greet the world"}); err != nil {
		return err
	}
	if _, err := ada.ClaimAcquire(ctx, roundtable.ClaimAcquireArgs{ResourceID: "file:app.py", Type: roundtable.ClaimTypeWrite, TTLS: 600}); err != nil {
		return err
	}
	made, err := ada.ProposalCreate(ctx, roundtable.ProposalCreateArgs{
		TaskID: "greet", Title: "Greet the world", SummaryMD: "Wider greeting.", Patch: roundtable.Ptr(patch),
	})
	if err != nil {
		return err
	}
	pid := made.Proposal.ID
	if _, err := ada.ProposalRequestReview(ctx, roundtable.ProposalRequestReviewArgs{ProposalID: pid}); err != nil {
		return err
	}
	if _, err := ada.VoteCast(ctx, roundtable.VoteCastArgs{ProposalID: pid, Revision: 1, Vote: roundtable.VoteValueApprove}); !errors.Is(err, roundtable.ErrForbidden) {
		return fmt.Errorf("the author's own vote: %v", err)
	}
	if _, err := rex.VoteCast(ctx, roundtable.VoteCastArgs{ProposalID: pid, Revision: 1, Vote: roundtable.VoteValueApprove}); err != nil {
		return err
	}
	applied, err := host.PatchApply(ctx, roundtable.PatchApplyArgs{ProposalID: pid, Revision: 1})
	if err != nil {
		return err
	}
	got, err := os.ReadFile(app)
	if err != nil {
		return err
	}
	if applied.Proposal.Status != roundtable.ProposalStatusApplied || string(got) != "print(\"hello, world\")\n" {
		return fmt.Errorf("not landed: %s, %q", applied.Proposal.Status, got)
	}
	fmt.Printf("%s %s: %s\n", pid, applied.Proposal.Status, applied.Transaction.ID)
	return nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: host DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "host:", err)
		os.Exit(1)
	}
}
