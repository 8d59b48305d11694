// A host program outside the roundtable repository (scripts/test-go copies
// this directory into a module of its own, which gets the roundtable module
// through a `replace` directive or `go get`): it governs one change with
// the typed API only — the patch made from the file's contents
// (MakePatch), the reviewer and the host's landing loop (through the
// landing queue) as Workers on their inboxes, the transactions read with
// an iterator — cancels an apply
// waiting on the apply lock through its context and checks that nothing
// changed, and exits non-zero if anything is off. main_test.go runs the
// same under `go test -race`.
//
//	host DIR   (DIR is created: the repository to govern)
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	roundtable "example.invalid/roundtable/go"
)

const (
	before = "print(\"hello\")\n"
	after  = "print(\"hello, world\")\n"
)

func run(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	app := filepath.Join(root, "app.py")
	if err := os.WriteFile(app, []byte(before), 0o644); err != nil {
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
	if _, err := ada.ClaimAcquire(ctx, roundtable.ClaimAcquireArgs{ResourceID: "file:app.py", Type: roundtable.ClaimTypeWrite, TTL: 600 * time.Second}); err != nil {
		return err
	}
	patch, err := roundtable.MakePatch("app.py", []byte(before), []byte(after))
	if err != nil {
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
	// The reviewer: a Worker on rex's inbox votes on what waits on it (here
	// it stops after its one vote; a fleet's reviewer runs until shutdown).
	reviewing, reviewed := context.WithCancel(ctx)
	defer reviewed()
	reviewer := roundtable.Worker{Session: rex, Handle: func(ctx context.Context, item roundtable.InboxItem) error {
		if item.Action != roundtable.NextActionVote {
			return nil
		}
		_, err := rex.VoteCast(ctx, roundtable.VoteCastArgs{ProposalID: item.Proposal.ID, Revision: item.Revision, Vote: roundtable.VoteValueApprove})
		reviewed()
		return err
	}}
	if err := reviewer.Run(reviewing); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the reviewer: %v", err)
	}
	report, err := host.PatchValidate(ctx, roundtable.PatchValidateArgs{ProposalID: pid})
	if err != nil || !report.Valid {
		return fmt.Errorf("not valid once approved: %+v, %v", report, err)
	}

	// An operator holds the apply lock (.roundtable/apply.lock, as with
	// flock(1)): the apply waits, and its context ends the wait.
	apply := roundtable.PatchApplyArgs{ProposalID: pid, Revision: 1}
	if err := withApplyLockHeld(root, func() error {
		cancelled, cancel := context.WithCancel(ctx)
		start := time.Now() // before the timer: the wait is at least its 100 ms
		timer := time.AfterFunc(100*time.Millisecond, cancel)
		defer timer.Stop()
		_, err := host.PatchApply(cancelled, apply)
		if !errors.Is(err, context.Canceled) || !errors.Is(err, roundtable.ErrCancelled) {
			return fmt.Errorf("the cancelled apply: %v", err)
		}
		if waited := time.Since(start); waited < 100*time.Millisecond || waited > 10*time.Second {
			return fmt.Errorf("the cancelled apply returned after %v", waited)
		}
		late, stop := context.WithTimeout(ctx, 100*time.Millisecond)
		defer stop()
		if _, err := host.PatchApply(late, apply); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, roundtable.ErrDeadlineExceeded) {
			return fmt.Errorf("the apply past its deadline: %v", err)
		}
		return nil
	}); err != nil {
		return err
	}
	// Nothing changed: the file, the proposal, the transactions.
	if got, err := os.ReadFile(app); err != nil || string(got) != before {
		return fmt.Errorf("app.py changed by a cancelled apply: %q, %v", got, err)
	}
	for tx, err := range host.TransactionListAll(ctx, roundtable.TransactionListArgs{}) {
		return fmt.Errorf("a cancelled apply left a transaction: %+v, %v", tx, err)
	}
	if got, err := host.ProposalGet(ctx, roundtable.ProposalGetArgs{ProposalID: pid}); err != nil || got.Proposal.Status != roundtable.ProposalStatusInReview {
		return fmt.Errorf("the proposal after the cancelled apply: %+v, %v", got, err)
	}

	// The host's landing loop: a Worker on its inbox puts what is approved
	// in the landing queue and runs it (each proposal checked on top of
	// those ahead of it, landed in order); it stops once the one change
	// has landed.
	var landedEntry *roundtable.QueueEntry
	landing, landed := context.WithCancel(ctx)
	defer landed()
	lander := roundtable.Worker{Session: host, Handle: func(ctx context.Context, item roundtable.InboxItem) error {
		if item.Action != roundtable.NextActionApply {
			return nil
		}
		if _, err := host.QueueEnqueue(ctx, roundtable.QueueEnqueueArgs{ProposalID: item.Proposal.ID}); err != nil {
			return err
		}
		run, err := host.QueueRun(ctx, roundtable.QueueRunArgs{})
		if err != nil {
			return err
		}
		for i := range run.Landed {
			if run.Landed[i].ProposalID == pid {
				landedEntry = &run.Landed[i]
				landed()
			}
		}
		return nil
	}}
	if err := lander.Run(landing); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the landing loop: %v", err)
	}
	got, err := os.ReadFile(app)
	if err != nil {
		return err
	}
	applied, err := host.ProposalGet(ctx, roundtable.ProposalGetArgs{ProposalID: pid})
	if err != nil {
		return err
	}
	if landedEntry == nil || landedEntry.TransactionID == nil || applied.Proposal.Status != roundtable.ProposalStatusApplied || string(got) != after {
		return fmt.Errorf("not landed: %s, %q", applied.Proposal.Status, got)
	}
	fmt.Printf("%s %s: %s\n", pid, applied.Proposal.Status, *landedEntry.TransactionID)
	return nil
}

// withApplyLockHeld runs f while this process holds the workspace's apply
// lock file.
func withApplyLockHeld(root string, f func() error) error {
	lock, err := os.OpenFile(filepath.Join(root, ".roundtable", "apply.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	return f()
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
