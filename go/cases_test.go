package roundtable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The language-neutral scenario corpus, ../tests/cases/tools/*.json (the
// format: its README.md), replayed through Engine.Call. The Rust, C and
// Python suites replay the same files.

type scenario struct {
	Files map[string]string `json:"files"`
	Steps []struct {
		As     string             `json:"as"`
		Tool   string             `json:"tool"`
		Args   any                `json:"args"`
		Expect map[string]any     `json:"expect"`
		Save   map[string]string  `json:"save"`
		Files  map[string]*string `json:"files"`
	} `json:"steps"`
}

func substitute(v any, saved map[string]any) any {
	switch v := v.(type) {
	case string:
		if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
			if s, ok := saved[v[2:len(v)-1]]; ok {
				return s
			}
		}
		for name, s := range saved {
			text, ok := s.(string)
			if !ok {
				b, _ := json.Marshal(s)
				text = string(b)
			}
			v = strings.ReplaceAll(v, "${"+name+"}", text)
		}
		return v
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = substitute(x, saved)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			out[k] = substitute(x, saved)
		}
		return out
	}
	return v
}

func subsetOf(want, got any, at string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %v is not an object", at, got)
		}
		for k, x := range w {
			y, ok := g[k]
			if !ok {
				return fmt.Errorf("%s/%s: missing", at, k)
			}
			if err := subsetOf(x, y, at+"/"+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: %v, expected %v", at, got, want)
		}
		for i := range w {
			if err := subsetOf(w[i], g[i], at+"/"+strconv.Itoa(i)); err != nil {
				return err
			}
		}
		return nil
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("%s: %v, expected %v", at, got, want)
	}
	return nil
}

func jsonPointer(doc any, path string) (any, bool) {
	for _, part := range strings.Split(path, "/")[1:] {
		switch d := doc.(type) {
		case map[string]any:
			v, ok := d[part]
			if !ok {
				return nil, false
			}
			doc = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(d) {
				return nil, false
			}
			doc = d[i]
		default:
			return nil, false
		}
	}
	return doc, true
}

func actorOf(spelling string) Actor {
	kind, id, _ := strings.Cut(spelling, ":")
	return Actor{ID: id, Kind: ActorKind(kind)}
}

// replay runs one scenario: the number of steps, or the first step that
// did not do what it expects.
func replay(sc scenario, root string) (int, error) {
	for path, text := range sc.Files {
		at := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(at, []byte(text), 0o644); err != nil {
			return 0, err
		}
	}
	e, err := Open(root, nil)
	if err != nil {
		return 0, err
	}
	defer e.Close()
	saved := map[string]any{}
	for i, step := range sc.Steps {
		where := fmt.Sprintf("step %d (%s)", i, step.Tool)
		args := substitute(step.Args, saved)
		expect := substitute(map[string]any(step.Expect), saved).(map[string]any)
		raw, err := e.Call(context.Background(), actorOf(step.As), step.Tool, args)
		if err != nil {
			var rterr *Error
			if !errors.As(err, &rterr) {
				return i, fmt.Errorf("%s: %v", where, err)
			}
			if expect["error"] != string(rterr.Code) {
				return i, fmt.Errorf("%s: %s: %s, expected %v", where, rterr.Code, rterr.Message, expect["error"])
			}
			if want, ok := expect["details"]; ok {
				var details any
				if err := json.Unmarshal(rterr.Details, &details); err != nil {
					return i, err
				}
				if err := subsetOf(want, details, where+": details"); err != nil {
					return i, err
				}
			}
		} else {
			if code, ok := expect["error"]; ok {
				return i, fmt.Errorf("%s: succeeded, expected %v", where, code)
			}
			var result any
			if err := json.Unmarshal(raw, &result); err != nil {
				return i, err
			}
			if err := subsetOf(expect["ok"], result, where); err != nil {
				return i, err
			}
			for name, path := range step.Save {
				value, ok := jsonPointer(result, path)
				if !ok {
					return i, fmt.Errorf("%s: nothing at %s to save", where, path)
				}
				saved[name] = value
			}
		}
		for path, want := range step.Files {
			got, err := os.ReadFile(filepath.Join(root, path))
			switch {
			case want == nil && err == nil:
				return i, fmt.Errorf("%s: file %s exists", where, path)
			case want != nil && (err != nil || string(got) != *want):
				return i, fmt.Errorf("%s: file %s: %q, expected %q", where, path, got, *want)
			}
		}
	}
	return len(sc.Steps), nil
}

func loadScenario(t *testing.T, path string) scenario {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(text, &sc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return sc
}

func TestScenarioCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "tests", "cases", "tools", "*.json"))
	if err != nil || len(files) < 4 {
		t.Fatalf("the corpus: %v files, %v", len(files), err)
	}
	sort.Strings(files)
	for _, file := range files {
		file := file
		t.Run(filepath.Base(file), func(t *testing.T) {
			if n, err := replay(loadScenario(t, file), t.TempDir()); err != nil || n == 0 {
				t.Fatalf("%d steps: %v", n, err)
			}
		})
	}
}

// The runner is not a rubber stamp: each kind of wrong expectation, put
// into governed-demo.json, fails it at the step it spoiled.
func TestScenarioRunnerFailsAWrongExpectation(t *testing.T) {
	path := filepath.Join("..", "tests", "cases", "tools", "governed-demo.json")
	first := func(sc scenario, has func(i int) bool) int {
		for i := range sc.Steps {
			if has(i) {
				return i
			}
		}
		t.Fatal("governed-demo.json has no such step")
		return -1
	}
	refusal := func(sc scenario) int {
		return first(sc, func(i int) bool { _, ok := sc.Steps[i].Expect["error"]; return ok })
	}
	ok0 := func(sc scenario) map[string]any { return sc.Steps[0].Expect["ok"].(map[string]any) }
	spoilers := map[string]func(sc scenario) int{
		"value":  func(sc scenario) int { ok0(sc)["agent"].(map[string]any)["id"] = "someone-else"; return 0 },
		"type":   func(sc scenario) int { ok0(sc)["created"] = 1.0; return 0 },
		"length": func(sc scenario) int { ok0(sc)["agent"].(map[string]any)["roles"] = []any{"author", "x"}; return 0 },
		"missing key": func(sc scenario) int {
			ok0(sc)["no_such_field"] = nil
			return 0
		},
		"expected refusal": func(sc scenario) int { sc.Steps[0].Expect = map[string]any{"error": "conflict"}; return 0 },
		"expected success": func(sc scenario) int {
			i := refusal(sc)
			sc.Steps[i].Expect = map[string]any{"ok": map[string]any{}}
			return i
		},
		"code": func(sc scenario) int { i := refusal(sc); sc.Steps[i].Expect["error"] = "not_found"; return i },
		"details": func(sc scenario) int {
			i := first(sc, func(i int) bool { _, ok := sc.Steps[i].Expect["details"]; return ok })
			sc.Steps[i].Expect["details"] = map[string]any{"no_such_detail": true}
			return i
		},
		"file": func(sc scenario) int {
			i := first(sc, func(i int) bool { return len(sc.Steps[i].Files) > 0 })
			other := "not this\n"
			sc.Steps[i].Files["src/lib.rs"] = &other
			return i
		},
		"absence": func(sc scenario) int {
			i := first(sc, func(i int) bool { return len(sc.Steps[i].Files) > 0 })
			sc.Steps[i].Files["src/lib.rs"] = nil
			return i
		},
		"save": func(sc scenario) int {
			i := first(sc, func(i int) bool { return len(sc.Steps[i].Save) > 0 })
			for name := range sc.Steps[i].Save {
				sc.Steps[i].Save[name] = "/no/such/pointer"
			}
			return i
		},
	}
	for what, spoil := range spoilers {
		sc := loadScenario(t, path)
		at := spoil(sc)
		if n, err := replay(sc, t.TempDir()); err == nil || n != at {
			t.Errorf("a wrong %s (step %d): stopped at step %d: %v", what, at, n, err)
		}
	}
	// The scenario itself passes: the spoiling is what fails it.
	if _, err := replay(loadScenario(t, path), t.TempDir()); err != nil {
		t.Fatal(err)
	}
}
