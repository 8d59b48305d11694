package roundtable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The list iterators walk every page (limit 1 or 2 makes several), yield
// each item once in order, stop when the loop breaks, and yield a failed
// call once and stop.
func TestIssue34Item5IteratorsWalkEveryPageAndStopOnError(t *testing.T) {
	e := open(t, repo(t), nil)
	h := e.Session(host)
	for i := range 5 {
		must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: fmt.Sprintf("a%d", i), Roles: []string{"reviewer"}}))
		must(h.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr(fmt.Sprintf("t%d", i)), Title: "T"}))
	}
	var agents []string
	for agent, err := range h.AgentListAll(bg, AgentListArgs{Limit: Ptr(int64(2))}) {
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, agent.ID)
	}
	if fmt.Sprint(agents) != "[a0 a1 a2 a3 a4]" {
		t.Fatalf("agents over pages of 2: %v", agents)
	}
	pages := 0
	counting := func(ctx context.Context, args TaskListArgs) (*TaskPage, error) {
		pages++
		return h.TaskList(ctx, args)
	}
	var tasks []string
	for task, err := range walk(bg, counting, TaskListArgs{Limit: Ptr(int64(1))},
		func(a *TaskListArgs, c *string) { a.Cursor = c },
		func(p *TaskPage) ([]Task, *string) { return p.Tasks, p.NextCursor }) {
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task.ID)
	}
	if fmt.Sprint(tasks) != "[t0 t1 t2 t3 t4]" || pages < 5 {
		t.Fatalf("tasks over %d pages of 1: %v", pages, tasks)
	}
	// events.list pages by since_seq.
	n := 0
	for ev, err := range h.EventsListAll(bg, EventsListArgs{Limit: Ptr(int64(3))}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if ev.Seq != int64(n) {
			t.Fatalf("event %d has seq %d", n, ev.Seq)
		}
	}
	if n != 10 {
		t.Fatalf("%d events, want 10", n)
	}

	// A break stops the walk: no further page is asked for.
	pages = 0
	for range walk(bg, counting, TaskListArgs{Limit: Ptr(int64(1))},
		func(a *TaskListArgs, c *string) { a.Cursor = c },
		func(p *TaskPage) ([]Task, *string) { return p.Tasks, p.NextCursor }) {
		break
	}
	if pages != 1 {
		t.Fatalf("a break asked for %d pages", pages)
	}

	// A call failing after the first page: yielded once, then the walk ends.
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var got []string
	var errs []error
	for task, err := range h.TaskListAll(ctx, TaskListArgs{Limit: Ptr(int64(2))}) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		got = append(got, task.ID)
		cancel() // the next page's call fails
	}
	if fmt.Sprint(got) != "[t0 t1]" || len(errs) != 1 || !errors.Is(errs[0], ErrCancelled) {
		t.Fatalf("after a failed page: items %v, errors %v", got, errs)
	}
	// A refused first call: one error, no item.
	errs = nil
	for _, err := range h.AgentListAll(bg, AgentListArgs{Limit: Ptr(int64(0))}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], ErrInvalidArgument) {
		t.Fatalf("a refused call: %v", errs)
	}
}

// Durations and timestamps: time.Duration and time.Time in Go, the same
// integers and RFC 3339 strings on the wire, round-tripping exactly.
func TestIssue34Item5DurationsAndTimesRoundTrip(t *testing.T) {
	const wire = `{"id":"c1","agent_id":"ada","resource_id":"file:a","type":"write","base_digest":"absent","token":1,` +
		`"acquired_at":"2026-12-03T09:32:59.123Z","expires_at":"2026-12-03T09:42:59.123Z","status":"active","released_at":"2026-12-03T09:35:00.000Z"}`
	var c Claim
	if err := json.Unmarshal([]byte(wire), &c); err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 12, 3, 9, 32, 59, 123e6, time.UTC)
	if !c.AcquiredAt.Equal(want) || c.ExpiresAt.Sub(c.AcquiredAt) != 10*time.Minute || c.ReleasedAt == nil || c.ReleasedAt.Second() != 0 {
		t.Fatalf("decoded: %+v", c)
	}
	if back, err := json.Marshal(c); err != nil || string(back) != wire {
		t.Fatalf("re-encoded:\n%s\n%s (%v)", back, wire, err)
	}
	// A time in another zone is written in UTC; a bad one is refused.
	c.AcquiredAt = want.In(time.FixedZone("X", 3600))
	if back, _ := json.Marshal(c); !bytes.Contains(back, []byte(`"acquired_at":"2026-12-03T09:32:59.123Z"`)) {
		t.Fatalf("another zone: %s", back)
	}
	if err := json.Unmarshal([]byte(`{"acquired_at":"yesterday"}`), &c); err == nil {
		t.Fatal("a bad time decoded")
	}

	// Durations: the unit of the property's name; a remainder rounds up.
	args := ClaimAcquireArgs{ResourceID: "file:a", Type: ClaimTypeWrite, TTL: 1500 * time.Millisecond, Wait: Ptr(time.Nanosecond)}
	if text, err := json.Marshal(args); err != nil || string(text) != `{"resource_id":"file:a","type":"write","ttl_s":2,"wait_ms":1}` {
		t.Fatalf("encoded: %s, %v", text, err)
	}
	var back ClaimAcquireArgs
	if err := json.Unmarshal([]byte(`{"resource_id":"file:a","type":"write","ttl_s":600,"wait_ms":250}`), &back); err != nil ||
		back.TTL != 10*time.Minute || back.Wait == nil || *back.Wait != 250*time.Millisecond {
		t.Fatalf("decoded: %+v, %v", back, err)
	}

	// Through the library: a claim's TTL and a test's duration.
	e := open(t, repo(t), nil)
	h, ada := e.Session(host), e.Session(AsAgent("ada"))
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "ada", Roles: []string{"author"}}))
	before := time.Now().Add(-time.Second)
	claim := must(ada.ClaimAcquire(bg, ClaimAcquireArgs{ResourceID: "file:src/lib.rs", Type: ClaimTypeWrite, TTL: 90 * time.Second}))
	got := claim.Claim
	if got.ExpiresAt.Sub(got.AcquiredAt) != 90*time.Second || got.AcquiredAt.Before(before) || got.AcquiredAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("the claim: acquired %v, expires %v", got.AcquiredAt, got.ExpiresAt)
	}
	must(h.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr("t"), Title: "T"}))
	made := must(ada.ProposalCreate(bg, ProposalCreateArgs{TaskID: "t", Title: "P", SummaryMD: "S", Patch: Ptr(secondPatch)}))
	rec := must(h.TestRecord(bg, TestRecordArgs{ProposalID: made.Proposal.ID, Revision: 1, Name: "unit", Status: TestStatusPassed, Duration: Ptr(1234 * time.Millisecond)}))
	if rec.TestResult.Duration == nil || *rec.TestResult.Duration != 1234*time.Millisecond {
		t.Fatalf("the test's duration: %+v", rec.TestResult)
	}
	// events.wait's timeout is a duration too: 50 ms, then timed out.
	start := time.Now()
	w := must(h.EventsWait(bg, EventsWaitArgs{SinceSeq: 1 << 40, Timeout: Ptr(50 * time.Millisecond)}))
	if !w.TimedOut || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("a 50 ms wait: %+v after %v", w, time.Since(start))
	}
}
