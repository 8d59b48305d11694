package roundtable

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Worker runs Handle for each item of its session's inbox (what waits on
// the session's actor: a proposal to review, to apply, to revise...), as
// it arrives, until the context of Run ends. It is built on `inbox.wait`:
// no empty polls, nothing missed, and an item whose proposal changes again
// (a new revision, a new vote) comes again. A reviewer is a few lines:
//
//	w := roundtable.Worker{Session: rex, Handle: func(ctx context.Context, it roundtable.InboxItem) error {
//		if it.Action != roundtable.NextActionVote {
//			return nil
//		}
//		_, err := rex.VoteCast(ctx, roundtable.VoteCastArgs{ProposalID: it.Proposal.ID, Revision: it.Revision, Vote: roundtable.VoteValueApprove})
//		return err
//	}}
//	err := w.Run(ctx) // until ctx is cancelled: context.Canceled
type Worker struct {
	// Session is whose inbox is worked (its actor's).
	Session *Session
	// Handle is called for each item, one at a time, with Run's context.
	// An error stops Run, which returns it; return nil to go on (after
	// logging, say). An item handled without changing its proposal's state
	// does not come again until that proposal changes.
	Handle func(ctx context.Context, item InboxItem) error
	// Wait is how long each `inbox.wait` waits for something new
	// (default 30 s; at most 10 minutes). Run waits again after each, so
	// it only bounds how often an idle worker calls the library.
	Wait time.Duration
	// Limit is the most items one `inbox.wait` returns (1 to 100; 0: the
	// library's default, 50).
	Limit int
}

// maxInboxWait is the longest timeout inbox.wait takes.
const maxInboxWait = 10 * time.Minute

// Run works the inbox until ctx ends (it then returns ctx.Err():
// context.Canceled or context.DeadlineExceeded, a wait in progress being
// cancelled at once), Handle fails (its error, wrapped with the item's
// proposal), or a call fails (its *Error: ErrClosed once the engine is
// closed, ErrForbidden for an actor that may not read an inbox...). Its
// first call returns at once with everything already waiting.
func (w *Worker) Run(ctx context.Context) error {
	if w.Session == nil || w.Handle == nil {
		return invalidArgument("worker", "Session and Handle are required")
	}
	wait := w.Wait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	args := InboxWaitArgs{Timeout: Ptr(min(wait, maxInboxWait))}
	if w.Limit > 0 {
		args.Limit = Ptr(int64(w.Limit))
	}
	for {
		got, err := w.Session.InboxWait(ctx, args)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		for _, item := range got.Items {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := w.Handle(ctx, item); err != nil {
				return fmt.Errorf("roundtable: worker: %s revision %d: %w", item.Proposal.ID, item.Revision, err)
			}
		}
		args.After = Ptr(got.Cursor)
	}
}

// KeepClaims keeps the session's claims alive: every `every` (ttl/3 when
// 0) it renews each with `claim.renew` for ttl from then, until ctx ends
// (it returns ctx.Err()) or no claim is left (nil). A claim that can no
// longer be renewed — it expired or was released (ErrIllegalTransition),
// it is gone (ErrNotFound), or the agent may not hold it any more
// (ErrForbidden) — is lost: lost (if not nil) is called with its id and
// the error, and it is not renewed again. Any other failure (ErrBusy, a
// store error) is retried at the next tick; ErrClosed ends it. Run it in
// a goroutine of its own next to the work the claims protect:
//
//	go roundtable.KeepClaims(ctx, ada, []string{claim.Claim.ID}, 5*time.Minute, 0, onLost)
func KeepClaims(ctx context.Context, s *Session, claimIDs []string, ttl, every time.Duration, lost func(claimID string, err error)) error {
	if ttl <= 0 {
		return invalidArgument("ttl", "must be positive")
	}
	if every <= 0 {
		every = ttl / 3
	}
	live := append([]string(nil), claimIDs...)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for len(live) > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
		kept := live[:0]
		for _, id := range live {
			_, err := s.ClaimRenew(ctx, ClaimRenewArgs{ClaimID: id, TTL: ttl})
			switch {
			case err == nil:
			case ctx.Err() != nil:
				return ctx.Err()
			case errors.Is(err, ErrClosed):
				return err
			case errors.Is(err, ErrIllegalTransition), errors.Is(err, ErrNotFound), errors.Is(err, ErrForbidden):
				if lost != nil {
					lost(id, err)
				}
				continue
			}
			kept = append(kept, id)
		}
		live = kept
	}
	return nil
}
