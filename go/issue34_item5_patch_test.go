package roundtable

import (
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// git runs git in dir, failing the test on error.
func git(t *testing.T, dir string, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// MakePatch's patches (a modification, a creation, a deletion, a Latin-1
// file, a binary file) pass `git apply --check` against the old files, and
// land through proposal.create and patch.apply, leaving the new contents.
func TestIssue34Item5MakePatchAppliesWithGitAndThroughTheEngine(t *testing.T) {
	root := repo(t)
	files := map[string]string{"src/lib.rs": libRS, "gone.txt": "bye\n", "l1.txt": "cafe\n", "img.bin": "text\n"}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, root, "", "init", "-q")
	newLib := strings.Replace(libRS, "Hello", "Hi", 1) + "\npub fn extra() {}"
	var patches []string
	for _, make := range []func() (string, error){
		func() (string, error) { return MakePatch("src/lib.rs", []byte(libRS), []byte(newLib)) },
		func() (string, error) { return MakeCreatePatch("docs/new file.md", []byte("# New\n")) },
		func() (string, error) { return MakeDeletePatch("gone.txt", []byte("bye\n")) },
		func() (string, error) { return MakePatch("l1.txt", []byte("cafe\n"), []byte("caf\xe9\n")) },
		func() (string, error) { return MakePatch("img.bin", []byte("text\n"), []byte("\x00\x01\x02")) },
	} {
		p, err := make()
		if err != nil {
			t.Fatal(err)
		}
		git(t, root, p, "apply", "--check", "-")
		patches = append(patches, p)
	}
	if !strings.Contains(patches[1], "new file mode 100644") || !strings.Contains(patches[2], "deleted file mode 100644") {
		t.Fatalf("creation/deletion headers:\n%s\n%s", patches[1], patches[2])
	}

	e := open(t, root, nil)
	h, ada, rex := e.Session(host), e.Session(AsAgent("ada")), e.Session(AsAgent("rex"))
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "ada", Roles: []string{"author"}}))
	must(h.AgentRegister(bg, AgentRegisterArgs{AgentID: "rex", Roles: []string{"reviewer"}}))
	must(h.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr("t"), Title: "T"}))
	for _, name := range []string{"src/lib.rs", "docs/new file.md", "gone.txt", "l1.txt", "img.bin"} {
		must(ada.ClaimAcquire(bg, ClaimAcquireArgs{ResourceID: "file:" + name, Type: ClaimTypeWrite, TTL: 600 * time.Second}))
	}
	all := strings.Join(patches, "")
	args := ProposalCreateArgs{TaskID: "t", Title: "Made", SummaryMD: "From contents."}
	// The Latin-1 file makes the patch non-UTF-8: it goes as base64.
	args.PatchBase64 = Ptr(base64.StdEncoding.EncodeToString([]byte(all)))
	made := must(ada.ProposalCreate(bg, args))
	pid := made.Proposal.ID
	must(ada.ProposalRequestReview(bg, ProposalRequestReviewArgs{ProposalID: pid}))
	must(rex.VoteCast(bg, VoteCastArgs{ProposalID: pid, Revision: 1, Vote: VoteValueApprove}))
	must(h.PatchApply(bg, PatchApplyArgs{ProposalID: pid, Revision: 1}))
	want := map[string]string{"src/lib.rs": newLib, "docs/new file.md": "# New\n", "l1.txt": "caf\xe9\n", "img.bin": "\x00\x01\x02"}
	for name, data := range want {
		if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(got) != data {
			t.Errorf("%s after the apply: %q, %v", name, got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "gone.txt")); !os.IsNotExist(err) {
		t.Errorf("gone.txt is still there: %v", err)
	}

	// No change is an empty patch; a path outside the repository is refused.
	if p, err := MakePatch("same", []byte("x\n"), []byte("x\n")); p != "" || err != nil {
		t.Errorf("no change: %q, %v", p, err)
	}
	if _, err := MakeCreatePatch("../escape", []byte("x")); !errors.Is(err, ErrPathEscape) {
		t.Errorf("a path outside: %v", err)
	}
	if _, err := MakePatch("", nil, []byte("x")); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("an empty path: %v", err)
	}
	// An empty file is created as one (nil and empty are both "empty").
	p, err := MakeCreatePatch("empty", nil)
	if err != nil || !strings.Contains(p, "new file mode") {
		t.Errorf("an empty file: %q, %v", p, err)
	}
}
