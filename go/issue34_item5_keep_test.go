package roundtable

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// KeepClaims renews claims past their TTL, reports a released claim as
// lost (once) and stops renewing it, and returns promptly when cancelled.
func TestIssue34Item5KeepClaimsRenewsAndReportsALostClaim(t *testing.T) {
	e := open(t, repo(t), nil)
	h, ada := e.Session(host), e.Session(AsAgent("ada"))
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "ada", Roles: []string{"author"}}))
	kept := must(ada.ClaimAcquire(bg, ClaimAcquireArgs{ResourceID: "file:src/lib.rs", Type: ClaimTypeWrite, TTL: time.Second})).Claim
	dropped := must(ada.ClaimAcquire(bg, ClaimAcquireArgs{ResourceID: "file:README.md", Type: ClaimTypeWrite, TTL: time.Second})).Claim

	var mu sync.Mutex
	lost := map[string][]error{}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- KeepClaims(ctx, ada, []string{kept.ID, dropped.ID}, time.Second, 200*time.Millisecond, func(id string, err error) {
			mu.Lock()
			defer mu.Unlock()
			lost[id] = append(lost[id], err)
		})
	}()
	time.Sleep(300 * time.Millisecond)
	must(ada.ClaimRelease(bg, ClaimReleaseArgs{ClaimID: dropped.ID}))
	time.Sleep(1500 * time.Millisecond) // past the 1 s TTL: only renewals keep it
	var got Claim
	for c, err := range h.ClaimListAll(bg, ClaimListArgs{AgentID: Ptr("ada")}) {
		if err != nil {
			t.Fatal(err)
		}
		if c.ID == kept.ID {
			got = c
		}
	}
	if got.Status != ClaimStatusActive || !got.ExpiresAt.After(kept.ExpiresAt) {
		t.Fatalf("the kept claim after 1.8 s: %s, expires %v (first %v)", got.Status, got.ExpiresAt, kept.ExpiresAt)
	}
	mu.Lock()
	if len(lost) != 1 || len(lost[dropped.ID]) != 1 || !errors.Is(lost[dropped.ID][0], ErrIllegalTransition) {
		t.Errorf("lost: %v", lost)
	}
	mu.Unlock()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("KeepClaims returned %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("KeepClaims did not return within a second of the cancel")
	}

	// Every claim lost: it returns nil by itself.
	alone := must(ada.ClaimAcquire(bg, ClaimAcquireArgs{ResourceID: "file:x", Type: ClaimTypeWrite, TTL: time.Minute})).Claim
	must(ada.ClaimRelease(bg, ClaimReleaseArgs{ClaimID: alone.ID}))
	if err := KeepClaims(bg, ada, []string{alone.ID}, time.Minute, 10*time.Millisecond, nil); err != nil {
		t.Fatalf("with every claim lost: %v", err)
	}
}
