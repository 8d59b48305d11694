package roundtable

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// typeOfTool is the generated Args struct and result struct of tool: the
// parameter and result of its Session method.
func typeOfTool(t *testing.T, tool string) (args, result reflect.Type) {
	t.Helper()
	m, ok := reflect.TypeOf(&Session{}).MethodByName(goName(tool))
	if !ok {
		t.Fatalf("no Session method for %s", tool)
	}
	return m.Type.In(2), m.Type.Out(0).Elem()
}

// withoutNulls is a JSON value with every object member whose value is null
// dropped (the types omit an optional nil field; the library may write
// null): the rest must be equal.
func withoutNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if x != nil {
				out[k] = withoutNulls(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = withoutNulls(x)
		}
		return out
	}
	return v
}

// roundTrip decodes text into a new value of type typ with its generated
// UnmarshalJSON, encodes it back with MarshalJSON, and reports where the
// JSON value differs (nulls aside), or "".
func roundTrip(t *testing.T, typ reflect.Type, text []byte) string {
	t.Helper()
	ptr := reflect.New(typ)
	if err := ptr.Interface().(json.Unmarshaler).UnmarshalJSON(text); err != nil {
		return "decode: " + err.Error()
	}
	back, err := ptr.Elem().Interface().(json.Marshaler).MarshalJSON()
	if err != nil {
		return "encode: " + err.Error()
	}
	var want, got any
	if err := json.Unmarshal(text, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		return "the encoding is not JSON: " + err.Error()
	}
	if err := subsetOf(withoutNulls(want), withoutNulls(got), typ.Name()); err != nil {
		return err.Error()
	}
	if err := subsetOf(withoutNulls(got), withoutNulls(want), typ.Name()); err != nil {
		return "added: " + err.Error()
	}
	return ""
}

// Every result of the scenario corpus (tests/cases/tools: every tool, its
// refusals aside) decodes into its tool's generated result struct and
// encodes back to the same JSON value, and so do the arguments of every
// call that succeeded: the structs have every field (the schemas say
// additionalProperties: false) and the codec loses nothing.
func TestCorpusRoundTripsThroughTheTypes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "tests", "cases", "tools", "*.json"))
	if err != nil || len(files) < 4 {
		t.Fatalf("the corpus: %v files, %v", len(files), err)
	}
	sort.Strings(files)
	tools := map[string]int{}
	for _, file := range files {
		sc := loadScenario(t, file)
		root := t.TempDir()
		for path, text := range sc.Files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		e := open(t, root, nil)
		saved := map[string]any{}
		for i, step := range sc.Steps {
			args := substitute(step.Args, saved)
			raw, err := e.Call(context.Background(), actorOf(step.As), step.Tool, args)
			if err != nil {
				continue
			}
			argsType, resultType := typeOfTool(t, step.Tool)
			if diff := roundTrip(t, resultType, raw); diff != "" {
				t.Errorf("%s step %d (%s): the result through %s: %s\n%s", filepath.Base(file), i, step.Tool, resultType.Name(), diff, raw)
			}
			argsText, _ := json.Marshal(args)
			if diff := roundTrip(t, argsType, argsText); diff != "" {
				t.Errorf("%s step %d (%s): the arguments through %s: %s\n%s", filepath.Base(file), i, step.Tool, argsType.Name(), diff, argsText)
			}
			tools[step.Tool]++
			var result any
			if err := json.Unmarshal(raw, &result); err != nil {
				t.Fatal(err)
			}
			for name, path := range step.Save {
				if v, ok := jsonPointer(result, path); ok {
					saved[name] = v
				}
			}
		}
	}
	// The corpus calls (nearly) every tool successfully.
	var missing []string
	for _, name := range toolNames {
		if tools[name] == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > len(toolNames)/5 {
		t.Fatalf("only %d of %d tools succeeded in the corpus; never: %v", len(tools), len(toolNames), missing)
	}
	t.Logf("%d tools round-tripped (never called successfully: %v)", len(tools), missing)
}

// A spoiled codec fails the round trip: a result struct missing a field, or
// decoding a field wrongly, is caught.
func TestRoundTripCatchesALostField(t *testing.T) {
	e := open(t, repo(t), nil)
	text, err := e.Call(bg, host, "agent.register", obj{"agent_id": "ada", "roles": []string{"author"}, "display_name": "Ada"})
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(AgentRegistered{})
	if diff := roundTrip(t, typ, text); diff != "" {
		t.Fatalf("a faithful round trip differs: %s", diff)
	}
	// A member the struct lacks is noticed...
	extra := bytes.Replace(text, []byte(`"created":`), []byte(`"surplus":1,"created":`), 1)
	if diff := roundTrip(t, typ, extra); !strings.Contains(diff, "surplus") {
		t.Fatalf("a member the struct lacks was not noticed: %q", diff)
	}
	// ...and so is a value the codec would not carry.
	var a AgentRegistered
	if err := a.UnmarshalJSON(text); err != nil || a.Agent.DisplayName == nil || *a.Agent.DisplayName != "Ada" || !a.Created {
		t.Fatalf("%+v, %v", a, err)
	}
	a.Agent.Roles = nil
	back, _ := a.MarshalJSON()
	var again any
	if json.Unmarshal(back, &again) != nil || subsetOf(withoutNulls(mustAny(text)), withoutNulls(again), "") == nil {
		t.Fatalf("a changed value went unnoticed: %s", back)
	}
}

func mustAny(text []byte) any {
	var v any
	if err := json.Unmarshal(text, &v); err != nil {
		panic(err)
	}
	return v
}

// A typed call refuses a string that is not UTF-8 before it reaches the
// library (encoding/json would send U+FFFD instead, and the corrupted patch
// would land), naming the field; nothing is created.
func TestTypedCallsRefuseStringsThatAreNotUTF8(t *testing.T) {
	root := repo(t)
	e := open(t, root, nil)
	h, a := e.Session(host), e.Session(alice)
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "alice", Roles: []string{"author"}}))
	must(h.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr("t1"), Title: "t"}))
	latin1 := strings.Replace(secondPatch, "Hello", "H\xe9llo", 1)
	args := ProposalCreateArgs{TaskID: "t1", Title: "x", SummaryMD: "y", Patch: &latin1}
	_, err := a.ProposalCreate(bg, args)
	var rterr *Error
	if !errors.As(err, &rterr) || !errors.Is(err, ErrInvalidArgument) || !strings.Contains(rterr.Message, "patch") ||
		!strings.Contains(string(rterr.Details), `"field":"patch"`) {
		t.Fatalf("a Latin-1 patch through the typed method: %v (%s)", err, rterr.Details)
	}
	// The same struct through Session.Call (encoding/json calls MarshalJSON).
	if _, err := a.Call(bg, "proposal.create", args); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a Latin-1 patch through Call: %v", err)
	}
	// And an actor id that is not UTF-8.
	if _, err := e.Session(AsAgent("\xff")).AgentList(bg, AgentListArgs{}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("a Latin-1 actor id: %v", err)
	}
	if list := must(h.ProposalList(bg, ProposalListArgs{})); len(list.Proposals) != 0 {
		t.Fatalf("a proposal was created: %+v", list.Proposals)
	}
}

// Optional arguments left nil are not sent; a required list left nil is
// sent empty; the JSON is compact and its fields in a fixed order.
func TestArgumentsEncoding(t *testing.T) {
	cases := []struct {
		args json.Marshaler
		want string
	}{
		{ProposalListArgs{}, `{}`},
		{AgentRegisterArgs{AgentID: "ada"}, `{"agent_id":"ada","roles":[]}`},
		{ProposalGetArgs{ProposalID: "p", Revision: Ptr(int64(-2))}, `{"proposal_id":"p","revision":-2}`},
		{ClaimAcquireArgs{ResourceID: "file:a", Type: ClaimTypeRead, TTL: 5 * time.Second, TaskID: Ptr("")},
			`{"resource_id":"file:a","type":"read","ttl_s":5,"task_id":""}`},
		{TaskCreateArgs{Title: "a \"b\" \\ c\n\t\x01 é ✓ 😀 <&> \u2028"},
			`{"title":"a \"b\" \\ c\n\t\u0001 é ✓ 😀 <&> ` + "\u2028" + `"}`},
	}
	for _, c := range cases {
		got, err := c.args.MarshalJSON()
		if err != nil || string(got) != c.want {
			t.Errorf("%T: %s (%v), want %s", c.args, got, err, c.want)
		}
	}
}

// Strings survive our encoder into encoding/json's decoder and
// encoding/json's encoder into our decoder, whatever they hold.
func FuzzStringsRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back\slash /`, "\x00\x01\x1f\x7f", "\n\r\t\b\f",
		"é✓😀", "\u2028\u2029", "<script>&amp;</script>", strings.Repeat("long ", 40) + "\\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := TaskCreateArgs{Title: s}
		ours, err := args.MarshalJSON()
		if !utf8.ValidString(s) {
			if !errors.As(err, new(*notUTF8)) {
				t.Fatalf("%q: not refused: %s, %v", s, ours, err)
			}
			return
		}
		var back struct{ Title string }
		if err != nil || json.Unmarshal(ours, &back) != nil || back.Title != s {
			t.Fatalf("%q: ours %s (%v) reads back as %q", s, ours, err, back.Title)
		}
		theirs, _ := json.Marshal(map[string]string{"title": s})
		var decoded TaskCreateArgs
		if err := decoded.UnmarshalJSON(theirs); err != nil || decoded.Title != s {
			t.Fatalf("%q: encoding/json's %s decodes as %q (%v)", s, theirs, decoded.Title, err)
		}
		// \u escapes, surrogate pairs included.
		escaped := []byte(`{"title":"`)
		for _, r := range s {
			if r >= 0x10000 {
				hi, lo := (r-0x10000)>>10+0xD800, (r-0x10000)&0x3FF+0xDC00
				escaped = append(escaped, []byte(`\u`+hex16(hi)+`\u`+hex16(lo))...)
			} else {
				escaped = append(escaped, []byte(`\u`+hex16(r))...)
			}
		}
		escaped = append(escaped, `"}`...)
		decoded = TaskCreateArgs{}
		if err := decoded.UnmarshalJSON(escaped); err != nil || decoded.Title != strings.ToValidUTF8(s, "\uFFFD") {
			t.Fatalf("%q: %s decodes as %q (%v)", s, escaped, decoded.Title, err)
		}
	})
}

func hex16(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

// The decoder refuses what is not the JSON of the type, and says where.
func TestDecoderRefusesMalformedJSON(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2)
	for _, text := range []string{
		``, `[]`, `"x"`, `{`, `{"proposal_id"`, `{"proposal_id":}`, `{"proposal_id":"p"`,
		`{"proposal_id":"p",}`, `{"proposal_id":"p"} x`, `{"proposal_id":"p"}{}`,
		`{"proposal_id":1}`, `{"proposal_id":"p","revision":"2"}`, `{"proposal_id":"p","revision":1.5}`,
		`{"proposal_id":"p","revision":1e3}`, `{"proposal_id":"p","revision":9223372036854775808}`,
		`{"proposal_id":"p","revision":01}`, `{"proposal_id":"p","revision":-}`, `{"proposal_id":"p","revision":tru}`,
		`{"proposal_id":"\q"}`, `{"proposal_id":"\u12"}`, `{"proposal_id":"a\"` + "\n" + `b"}`,
		`{"proposal_id":"p","x":[1,2}`, `{"proposal_id":"p","x":{"a" 1}}`, `{"proposal_id":"p","x":nul}`,
		`{"proposal_id":"p","x":` + deep + `}`, `{'proposal_id':'p'}`,
	} {
		var args ProposalGetArgs
		err := args.UnmarshalJSON([]byte(text))
		if err == nil {
			t.Errorf("%.60q: accepted as %+v", text, args)
		} else if !strings.Contains(err.Error(), "offset") {
			t.Errorf("%.60q: %v (no offset)", text, err)
		}
	}
	// What it accepts: unknown members skipped, whitespace anywhere, null
	// for an optional field, a lone surrogate read as U+FFFD, a later
	// duplicate winning.
	var args ProposalGetArgs
	text := " {\n\"x\" : [1, {\"y\": null, \"z\": [true, false, -1.5e-3, \"\\\"\"]}],\t\"proposal_id\" : \"a\\ud800b\" ," +
		" \"revision\": null, \"include_content\": true, \"proposal_id\": \"\\u00e9\\/\\ud83d\\ude00\" } "
	if err := args.UnmarshalJSON([]byte(text)); err != nil || args.ProposalID != "é/😀" || args.Revision != nil ||
		args.IncludeContent == nil || !*args.IncludeContent {
		t.Fatalf("%+v, %v", args, err)
	}
	if err := args.UnmarshalJSON([]byte(`{"proposal_id":"a\ud800b"}`)); err != nil || args.ProposalID != "a\uFFFDb" {
		t.Fatalf("a lone surrogate: %q, %v", args.ProposalID, err)
	}
	// null leaves the value as it is, as encoding/json does.
	if err := args.UnmarshalJSON([]byte(`null`)); err != nil || args.ProposalID != "a\uFFFDb" {
		t.Fatalf("null: %+v, %v", args, err)
	}
}

// Arbitrary input never panics the decoder, and what it accepts is JSON.
func FuzzDecoder(f *testing.F) {
	for _, seed := range []string{`{}`, `{"proposal":{"id":"p"},"revisions":[{"number":1}]}`, `{"content":{"a":[1,"\u00e9",null]}}`,
		`{"revision":{"changeset":[{"before":null,"after":{"size":3}}]}}`, `{"x":"\ud83d\ude00"}`, `[`, `{"a":`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d ProposalDetail
		err := d.UnmarshalJSON(data)
		if err == nil && !json.Valid(data) && !bytes.ContainsFunc(data, func(r rune) bool { return r < 0x20 }) {
			t.Fatalf("accepted %q, which is not JSON", data)
		}
	})
}

// Open refuses a library of another ABI or JSON version, saying which.
func TestOpenRefusesALibraryOfAnotherVersion(t *testing.T) {
	saved := linkedVersions
	t.Cleanup(func() { linkedVersions = saved })
	root := repo(t)
	for _, c := range []struct {
		abi, json uint32
		says      string
	}{
		{HeaderABIVersion() + 1, JSONVersion, "ABI"},
		{HeaderABIVersion(), JSONVersion + 1, "JSON version"},
	} {
		linkedVersions = func() (uint32, uint32) { return c.abi, c.json }
		e, err := Open(root, nil)
		if e != nil || !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), c.says) {
			t.Fatalf("ABI %d, JSON %d: %v, %v", c.abi, c.json, e, err)
		}
		if _, err := os.Stat(filepath.Join(root, ".roundtable")); !os.IsNotExist(err) {
			t.Fatalf("the refused Open touched the workspace: %v", err)
		}
	}
	linkedVersions = saved
	open(t, root, nil)
}

// Error.DecodeDetails decodes the details; the typed accessors (details_gen.go,
// with errors.json) refuse an error of another code.
func TestErrorDetails(t *testing.T) {
	e := open(t, repo(t), nil)
	_, err := e.Session(host).ProposalGet(bg, ProposalGetArgs{ProposalID: "prop-nope"})
	var rterr *Error
	if !errors.As(err, &rterr) || rterr.Code != CodeNotFound {
		t.Fatalf("%v", err)
	}
	var details map[string]any
	if err := rterr.DecodeDetails(&details); err != nil || details["id"] != "prop-nope" {
		t.Fatalf("details %v: %v", details, err)
	}
	var into struct{ ID string }
	if err := rterr.detailsInto(CodeConflict, func(d *decoder) { d.skip() }); err == nil || !strings.Contains(err.Error(), "not_found") {
		t.Fatalf("details of another code: %v", err)
	}
	if err := rterr.detailsInto(CodeNotFound, func(d *decoder) {
		for more := d.object(); more; more = d.more() {
			if string(d.key) == "id" {
				into.ID = d.str()
			} else {
				d.skip()
			}
		}
	}); err != nil || into.ID != "prop-nope" {
		t.Fatalf("details: %+v, %v", into, err)
	}
}
