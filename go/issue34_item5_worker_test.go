package roundtable

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A reviewer's Worker votes on each review item of 10 proposals: it sees
// each proposal's vote item exactly once (its vote changes the proposal,
// which then no longer waits on it), and cancelling its context stops it
// promptly while it is blocked in inbox.wait.
func TestIssue34Item5AWorkerVotesOnEachReviewItemOnce(t *testing.T) {
	root := repo(t)
	for i := range 10 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d.txt", i)), []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := open(t, root, nil)
	h, ada, rex := e.Session(host), e.Session(AsAgent("ada")), e.Session(AsAgent("rex"))
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "ada", Roles: []string{"author"}}))
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "rex", Roles: []string{"reviewer"}}))
	must(h.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr("t"), Title: "T"}))

	var mu sync.Mutex
	seen := map[string]int{}
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	worker := Worker{Session: rex, Wait: time.Minute, Handle: func(ctx context.Context, item InboxItem) error {
		if item.Action != NextActionVote {
			return nil
		}
		if _, err := rex.VoteCast(ctx, VoteCastArgs{ProposalID: item.Proposal.ID, Revision: item.Revision, Vote: VoteValueApprove}); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		seen[item.Proposal.ID]++
		if len(seen) == 10 {
			close(all)
		}
		return nil
	}}
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()

	var ids []string
	for i := range 10 {
		name := fmt.Sprintf("f%d.txt", i)
		patch := must(MakePatch(name, []byte("old\n"), []byte("new\n")))
		made := must(ada.ProposalCreate(bg, ProposalCreateArgs{TaskID: "t", Title: "P" + name, SummaryMD: "S", Patch: Ptr(patch)}))
		must(ada.ProposalRequestReview(bg, ProposalRequestReviewArgs{ProposalID: made.Proposal.ID}))
		ids = append(ids, made.Proposal.ID)
		if i == 4 {
			time.Sleep(100 * time.Millisecond) // some while the worker waits
		}
	}
	select {
	case <-all:
	case err := <-done:
		t.Fatalf("the worker stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatalf("the worker voted on %d of 10", len(seen))
	}
	time.Sleep(300 * time.Millisecond) // would a vote item come again?
	begin := time.Now()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after the cancel: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return within a second of the cancel")
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("Run returned %v after the cancel", took)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("%s voted on %d times", id, seen[id])
		}
	}
	// Each proposal has rex's one vote.
	for _, id := range ids {
		n := 0
		for v, err := range rex.VoteListAll(bg, VoteListArgs{ProposalID: id}) {
			if err != nil {
				t.Fatal(err)
			}
			if v.AgentID == "rex" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s has %d votes by rex", id, n)
		}
	}

	// A failing Handle stops Run with its error; a missing Handle is refused.
	boom := errors.New("boom")
	failing := Worker{Session: h, Handle: func(context.Context, InboxItem) error { return boom }}
	bounded, stop := context.WithTimeout(bg, 10*time.Second)
	defer stop()
	if err := failing.Run(bounded); !errors.Is(err, boom) { // the host's inbox: 10 to apply
		t.Fatalf("a failing Handle: %v", err)
	}
	if err := (&Worker{Session: h}).Run(bg); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("no Handle: %v", err)
	}
}
