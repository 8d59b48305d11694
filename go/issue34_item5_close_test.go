package roundtable

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Close is prompt with 16 goroutines blocked in events.wait with long
// timeouts (half with context.Background(), half with a context of their
// own): it returns within a second, every waiter gets a cancelled error,
// and a call made after Close gets ErrClosed at once.
func TestIssue34Item5CloseCancelsWaitersAndRefusesNewCalls(t *testing.T) {
	e, err := Open(repo(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := e.Session(host)
	const waiters = 16
	long := Ptr(60 * time.Second)
	var started, done sync.WaitGroup
	errs := make([]error, waiters)
	for i := range waiters {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ctx := bg
			if i%2 == 1 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(bg)
				defer cancel()
			}
			started.Done()
			_, errs[i] = h.EventsWait(ctx, EventsWaitArgs{SinceSeq: 1 << 40, Timeout: long})
		}()
	}
	// And a Worker blocked in inbox.wait (nothing waits on the host).
	workerDone := make(chan error, 1)
	go func() {
		w := Worker{Session: h, Wait: time.Minute, Handle: func(context.Context, InboxItem) error { return nil }}
		workerDone <- w.Run(bg)
	}()
	started.Wait()
	time.Sleep(300 * time.Millisecond) // let them reach the wait
	begin := time.Now()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begin); took > time.Second {
		t.Fatalf("Close took %v with %d waiters", took, waiters)
	}
	done.Wait()
	if err := <-workerDone; !errors.Is(err, ErrCancelled) {
		t.Errorf("the worker in inbox.wait: %v", err)
	}
	for i, err := range errs {
		var rterr *Error
		if !errors.As(err, &rterr) || rterr.Code != CodeCancelled || !errors.Is(err, ErrCancelled) {
			t.Errorf("waiter %d: %v, want a cancelled *Error", i, err)
		}
	}

	begin = time.Now()
	_, err = h.AgentList(bg, AgentListArgs{})
	var rterr *Error
	if !errors.As(err, &rterr) || rterr.Code != CodeClosed || !errors.Is(err, ErrClosed) {
		t.Fatalf("a call after Close: %v", err)
	}
	if _, err := e.Call(bg, host, "events.wait", obj{"since_seq": 0, "timeout_ms": 60000}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a raw wait after Close: %v", err)
	}
	if took := time.Since(begin); took > 100*time.Millisecond {
		t.Fatalf("calls after Close took %v", took)
	}
	if errors.Is(err, ErrCancelled) || errors.Is(ErrClosed, ErrNotFound) {
		t.Fatal("ErrClosed matches another code")
	}
	if err := e.Close(); err != nil { // twice is harmless
		t.Fatal(err)
	}
	var none *Engine
	if err := none.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := none.Session(host).AgentList(bg, AgentListArgs{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("a call on a nil engine: %v", err)
	}
}

// A call racing Close either runs or fails with ErrClosed or a cancelled
// error, never anything else, and Close from several goroutines at once
// returns in each.
func TestIssue34Item5CloseRacesCallsSafely(t *testing.T) {
	e, err := Open(repo(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := e.Session(host)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg, time.Minute)
			defer cancel()
			for range 50 {
				var err error
				if i%2 == 0 {
					_, err = h.AgentList(ctx, AgentListArgs{})
				} else {
					_, err = h.EventsWait(bg, EventsWaitArgs{SinceSeq: 1 << 40, Timeout: Ptr(50 * time.Millisecond)})
				}
				if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrCancelled) {
					t.Errorf("a call racing Close: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Close()
		}()
	}
	wg.Wait()
}
