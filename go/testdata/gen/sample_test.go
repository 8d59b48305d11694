package roundtable

// scripts/gen-go's own test (scripts/test-go): this file is copied into a
// copy of the module generated from sample.py's schemas, which have a
// tagged union, a map, numbers, nullable items, an inline object and an
// errors.json.

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestSampleTaggedUnionRoundTrips(t *testing.T) {
	in := `{"shapes":[{"kind":"circle","radius":1.5},{"kind":"square","side":2,"label":null},` +
		`{"label":"x","side":3,"kind":"square"},{"kind":"empty"}],"scale":-0.25,"counts":{"b":2,"a":null}}`
	var got SampleShapes
	if err := json.Unmarshal([]byte(in), &got); err != nil {
		t.Fatal(err)
	}
	s := got.Shapes
	if len(s) != 4 || s[0].Circle == nil || s[0].Circle.Radius != 1.5 || s[0].Square != nil ||
		s[1].Square == nil || s[1].Square.Side != 2 || s[1].Square.Label != nil ||
		s[2].Square == nil || s[2].Square.Label == nil || *s[2].Square.Label != "x" || s[3].Empty == nil ||
		got.Scale != -0.25 || got.Counts["a"] != nil || got.Counts["b"] == nil || *got.Counts["b"] != 2 {
		t.Fatalf("%+v", got)
	}
	for i, tag := range []string{"circle", "square", "square", "empty"} {
		if s[i].Tag() != tag {
			t.Errorf("shape %d: tag %q, want %q", i, s[i].Tag(), tag)
		}
	}
	out, err := json.Marshal(got)
	want := `{"shapes":[{"kind":"circle","radius":1.5},{"kind":"square","side":2},{"kind":"square","side":3,"label":"x"},` +
		`{"kind":"empty"}],"scale":-0.25,"counts":{"a":null,"b":2}}`
	if err != nil || string(out) != want {
		t.Fatalf("%s (%v)\nwant %s", out, err, want)
	}
	var again SampleShapes
	if err := json.Unmarshal(out, &again); err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("%+v (%v)", again, err)
	}
	// Refused: an unknown or missing tag, no variant or two.
	for _, bad := range []string{`{"kind":"hexagon"}`, `{"radius":1}`, `{"kind":1}`, `[]`} {
		var sh Shape
		if err := sh.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%s: accepted as %+v", bad, sh)
		} else if bad == `{"kind":"hexagon"}` && !strings.Contains(err.Error(), "hexagon") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	for _, bad := range []Shape{{}, {Circle: &ShapeCircle{}, Empty: &ShapeEmpty{}}} {
		if out, err := json.Marshal(bad); err == nil || !strings.Contains(err.Error(), "exactly one") {
			t.Errorf("%+v: %s, %v", bad, out, err)
		}
	}
}

func TestSampleArguments(t *testing.T) {
	half := 0.5
	args := SampleShapesArgs{
		Shape:   Shape{Square: &ShapeSquare{Side: 4, Label: Ptr("sq")}},
		Labels:  map[string]string{"z": "1", "a": "2", "m": "\"3\""},
		Weights: []*float64{&half, nil, Ptr(1e21)},
		Origin:  &SampleShapesArgsOrigin{X: 1, Y: -2.5},
	}
	out, err := args.MarshalJSON()
	want := `{"shape":{"kind":"square","side":4,"label":"sq"},"labels":{"a":"2","m":"\"3\"","z":"1"},` +
		`"origin":{"x":1,"y":-2.5},"weights":[0.5,null,1e+21]}`
	if err != nil || string(out) != want {
		t.Fatalf("%s (%v)\nwant %s", out, err, want)
	}
	var back SampleShapesArgs
	if err := back.UnmarshalJSON(out); err != nil || !reflect.DeepEqual(back, args) {
		t.Fatalf("%+v, %v", back, err)
	}
	args.Origin.X = math.NaN()
	if _, err := args.MarshalJSON(); err == nil || !strings.Contains(err.Error(), "x") {
		t.Fatalf("NaN: %v", err)
	}
	args.Origin.X = 0
	args.Labels["\xff"] = "latin-1 key"
	if _, err := args.MarshalJSON(); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("a key that is not UTF-8: %v", err)
	}
	// Through a session the typed arguments reach the library, which has no
	// such tool.
	root := t.TempDir()
	e, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	delete(args.Labels, "\xff")
	if _, err := e.Session(AsOrchestrator("host")).SampleShapes(context.Background(), args); !errors.Is(err, ErrNotFound) {
		t.Fatalf("sample.shapes: %v", err)
	}
}

func TestSampleErrorDetails(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	host := e.Session(AsOrchestrator("host"))
	_, err = host.ProposalGet(ctx, ProposalGetArgs{ProposalID: "prop-nope"})
	var rterr *Error
	if !errors.As(err, &rterr) {
		t.Fatal(err)
	}
	nf, err := rterr.NotFoundDetails()
	if err != nil || nf.ID != "prop-nope" || nf.Kind == nil || *nf.Kind != "proposal" {
		t.Fatalf("not_found details: %+v, %v", nf, err)
	}
	if d, err := rterr.ForbiddenDetails(); err == nil || d != nil {
		t.Fatalf("a not_found error's forbidden details: %+v, %v", d, err)
	}
	// An agent cannot register agents: forbidden, with the kinds that may.
	_, err = e.Session(AsAgent("ada")).AgentRegister(ctx, AgentRegisterArgs{AgentID: "ada", Roles: []string{"author"}})
	if !errors.As(err, &rterr) || rterr.Code != CodeForbidden {
		t.Fatalf("agent.register as an agent: %v", err)
	}
	fb, err := rterr.ForbiddenDetails()
	if err != nil || fb.Reason != ForbiddenReasonWrongKind || !reflect.DeepEqual(fb.AllowedKinds, []ActorKind{ActorKindOrchestrator}) {
		t.Fatalf("forbidden details: %+v, %v (%s)", fb, err, rterr.Details)
	}
	if !reflect.DeepEqual(ForbiddenReasons, []ForbiddenReason{ForbiddenReasonWrongKind, ForbiddenReasonUnregistered}) {
		t.Fatalf("the details' own enum: %v", ForbiddenReasons)
	}
	busy := &Error{Code: CodeBusy, Details: json.RawMessage(`{"kind":"lock","waited_ms":5}`)}
	if d, err := busy.BusyDetails(); err != nil || d.Tag() != "lock" || d.Lock == nil || d.Lock.Waited != 5*time.Millisecond {
		t.Fatalf("busy details (a tagged union): %+v, %v", d, err)
	}
	busy.Details = json.RawMessage(`{"kind":"elsewhere"}`)
	if d, err := busy.BusyDetails(); err == nil || !strings.Contains(err.Error(), "elsewhere") {
		t.Fatalf("busy details of an unknown kind: %+v, %v", d, err)
	}
	if !reflect.DeepEqual(detailsCodes, []Code{CodeNotFound, CodeForbidden, CodeBusy}) {
		t.Fatalf("typed details for %v", detailsCodes)
	}
}
