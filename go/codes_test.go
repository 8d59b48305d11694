package roundtable

// The Go list of codes is checked against include/roundtable.h, the header
// cgo compiles this package against (which roundtable-ffi's tests check
// against the core's error-code table). Go test files cannot use cgo, so
// the test reads the header's enum rt_status and this package's own source.

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// headerStatuses is enum rt_status of include/roundtable.h: name -> value.
func headerStatuses(t *testing.T) map[string]uint32 {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "include", "roundtable.h"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(text)
	start := strings.Index(s, "enum rt_status")
	if start < 0 {
		t.Fatal("include/roundtable.h declares no enum rt_status")
	}
	body := s[start:]
	open, close := strings.Index(body, "{"), strings.Index(body, "};")
	if open < 0 || close < open {
		t.Fatal("enum rt_status has no body")
	}
	enumerator := regexp.MustCompile(`^(RT_[A-Z0-9_]+) = ([0-9]+),$`)
	statuses := map[string]uint32{}
	for _, line := range strings.Split(body[open+1:close], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		m := enumerator.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not `RT_NAME = value,` in enum rt_status: %q", line)
		}
		v, err := strconv.ParseUint(m[2], 10, 32)
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		if _, dup := statuses[m[1]]; dup {
			t.Fatalf("%s twice in enum rt_status", m[1])
		}
		statuses[m[1]] = uint32(v)
	}
	return statuses
}

// goCodes is every `CodeX Code = "x"` constant declared in roundtable.go:
// value -> constant name.
func goCodes(t *testing.T) map[Code]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "roundtable.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[Code]string{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if ident, ok := vs.Type.(*ast.Ident); !ok || ident.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				if prev, dup := codes[Code(value)]; dup {
					t.Fatalf("%s and %s are both %q", prev, name.Name, value)
				}
				codes[Code(value)] = name.Name
			}
		}
	}
	return codes
}

// statusName is the C name of a code: not_found -> RT_NOT_FOUND.
func statusName(c Code) string { return "RT_" + strings.ToUpper(string(c)) }

func TestCodesMatchTheHeader(t *testing.T) {
	statuses := headerStatuses(t)
	codes := goCodes(t)
	if len(codes) == 0 {
		t.Fatal("found no Code constants in roundtable.go")
	}
	// Every Go code is a C status.
	for c, name := range codes {
		if _, ok := statuses[statusName(c)]; !ok {
			t.Errorf("%s = %q has no %s in include/roundtable.h", name, c, statusName(c))
		}
	}
	// Every C status but RT_OK and RT_UNKNOWN_ERROR (no rt_error_code
	// spells them) is a Go code.
	for name, value := range statuses {
		if name == "RT_OK" || name == "RT_UNKNOWN_ERROR" {
			continue
		}
		c := Code(strings.ToLower(strings.TrimPrefix(name, "RT_")))
		if _, ok := codes[c]; !ok {
			t.Errorf("include/roundtable.h has %s = %d but roundtable.go has no Code %q", name, value, c)
		}
	}
}

// Every code has its sentinel, and errors.Is matches it by code only.
func TestEveryCodeHasASentinel(t *testing.T) {
	for c := range goCodes(t) {
		sentinel, ok := sentinels[c]
		if !ok || sentinel.Code != c {
			t.Errorf("no sentinel for %q", c)
			continue
		}
		err := fmt.Errorf("wrapped: %w", &Error{Code: c, Message: "m"})
		if !errors.Is(err, sentinel) {
			t.Errorf("errors.Is(%q error, its sentinel) is false", c)
		}
		if c != CodeNotFound && errors.Is(err, ErrNotFound) {
			t.Errorf("a %q error is ErrNotFound", c)
		}
	}
}

// The statuses the library returns are the header's values for their codes.
func TestStatusesAreTheHeaderValues(t *testing.T) {
	statuses := headerStatuses(t)
	e := open(t, repo(t), nil)
	_, notFound := e.Call(bg, host, "proposal.get", obj{"proposal_id": "nope"})
	_, invalidArgument := e.Call(bg, Actor{ID: "x", Kind: "robot"}, "agent.list", obj{})
	_, invalidPatch := ParsePatch([]byte("not a patch"))
	for _, err := range []error{notFound, invalidArgument, invalidPatch} {
		var rterr *Error
		if !errors.As(err, &rterr) {
			t.Fatalf("not an *Error: %v", err)
		}
		want, ok := statuses[statusName(rterr.Code)]
		if !ok || rterr.Status != want {
			t.Errorf("%s: status %d, include/roundtable.h says %d (%v)", rterr.Code, rterr.Status, want, ok)
		}
	}
}
