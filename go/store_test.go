package roundtable

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The "store" option: a PostgreSQL database several hosts share (issue
// 20). The shared-store test runs when RT_TEST_STORE names a server
// (scripts/test starts one); the refusals run everywhere.

func TestAStoreURLThatIsNotPostgresIsRefusedNamingTheOption(t *testing.T) {
	for _, url := range []string{"mysql://db/x", "postgres://h/db?schema=Bad-Name"} {
		_, err := Open(t.TempDir(), map[string]any{"store": url})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%s: %v", url, err)
		}
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(string(e.Details), `"field":"store"`) {
			t.Fatalf("%s: details %v", url, err)
		}
	}
}

func TestAnUnreachableServerIsARetryableDatabaseError(t *testing.T) {
	_, err := Open(t.TempDir(), map[string]any{"store": "postgres://rt:secret@%2Fnonexistent-rt-socket/postgres"})
	var e *Error
	if !errors.Is(err, ErrDatabase) || !errors.As(err, &e) {
		t.Fatalf("%v", err)
	}
	if !strings.Contains(string(e.Details), `"retryable":true`) || strings.Contains(e.Error(), "secret") {
		t.Fatalf("%v %s", err, e.Details)
	}
}

func TestTwoHostsOnTwoClonesShareOnePostgresStore(t *testing.T) {
	base := os.Getenv("RT_TEST_STORE")
	if base == "" {
		t.Skip("no PostgreSQL server (RT_TEST_STORE)")
	}
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	url := fmt.Sprintf("%s%sschema=go_%d", base, sep, time.Now().UnixNano())
	first, err := Open(t.TempDir(), map[string]any{"store": url})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(t.TempDir(), map[string]any{"store": url})
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	one, two := first.Session(host), second.Session(host)
	if _, err := one.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr("t1"), Title: "Shared"}); err != nil {
		t.Fatal(err)
	}
	page, err := two.TaskList(bg, TaskListArgs{})
	if err != nil || len(page.Tasks) != 1 || page.Tasks[0].ID != "t1" {
		t.Fatalf("the other host does not see the task: %+v %v", page, err)
	}
	again, err := two.TaskCreate(bg, TaskCreateArgs{TaskID: Ptr("t1"), Title: "Shared"})
	if err != nil || again.Created == nil || *again.Created {
		t.Fatalf("ids are not global: %+v %v", again, err)
	}
	report, err := one.EventsVerify(bg, EventsVerifyArgs{})
	if err != nil || !report.Valid || report.LastSeq != 1 {
		t.Fatalf("%+v %v", report, err)
	}
}
