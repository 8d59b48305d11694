package roundtable

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// benchWorkspace is the workspace bench/call_overhead.py prepared
// (RT_BENCH_ROOT, RT_BENCH_PROPOSAL), or a new one with one proposal.
func benchWorkspace(b *testing.B) (*Engine, string) {
	b.Helper()
	ctx := context.Background()
	if root := os.Getenv("RT_BENCH_ROOT"); root != "" {
		e, err := Open(root, map[string]any{"durability": "off"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { e.Close() })
		return e, os.Getenv("RT_BENCH_PROPOSAL")
	}
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "app.py"), []byte("print(\"hello\")\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	e, err := Open(root, map[string]any{"durability": "off"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	h, ada := e.Session(AsOrchestrator("host")), e.Session(AsAgent("ada"))
	must(h.AgentRegister(ctx, AgentRegisterArgs{AgentID: "ada", Roles: []string{"author"}}))
	must(h.TaskCreate(ctx, TaskCreateArgs{TaskID: Ptr("t"), Title: "bench"}))
	made := must(ada.ProposalCreate(ctx, ProposalCreateArgs{TaskID: "t", Title: "x", SummaryMD: "y",
		Patch: Ptr("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-print(\"hello\")\n+print(\"hi\")\n")}))
	return e, made.Proposal.ID
}

// `proposal.get` through the typed method: args struct in, ProposalDetail out.
func BenchmarkProposalGetTyped(b *testing.B) {
	e, pid := benchWorkspace(b)
	s, ctx := e.Session(AsOrchestrator("host")), context.Background()
	args := ProposalGetArgs{ProposalID: pid}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.ProposalGet(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// `proposal.get` with raw JSON in and out: the cgo call and nothing else.
func BenchmarkProposalGetRaw(b *testing.B) {
	e, pid := benchWorkspace(b)
	s, ctx := e.Session(AsOrchestrator("host")), context.Background()
	args := []byte(`{"proposal_id":"` + pid + `"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Call(ctx, "proposal.get", json.RawMessage(args)); err != nil {
			b.Fatal(err)
		}
	}
}
