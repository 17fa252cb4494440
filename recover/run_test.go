package recover_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/recover"
)

// The crash tests of recovery drive real intents through the executor, so
// they live with it: ops/internal/engine/recover_test.go.

func TestCleanPathCreatesNothing(t *testing.T) {
	root := t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{".swamp.yaml": "x: 1\n"})
	before := fsxtest.Snapshot(t, root, nil)
	rep, err := recover.Run(context.Background(), root, recover.Options{})
	if err != nil || rep.JournalExists || len(rep.Intents) != 0 {
		t.Fatalf("%+v %v", rep, err)
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, root, nil)); len(d) > 0 {
		t.Fatalf("recover on a clean repo changed the tree: %v", d)
	}
}

// TestRunOutsideARepoIsTyped: a wrong path is an error, never a silent
// success that skips recovery.
func TestRunOutsideARepoIsTyped(t *testing.T) {
	dir := t.TempDir()
	_, err := recover.Run(context.Background(), dir, recover.Options{})
	if !errors.Is(err, recover.ErrNotARepo) {
		t.Fatalf("want ErrNotARepo for %s, got %v", dir, err)
	}
	if strings.Contains(err.Error(), "--repo") || strings.Contains(err.Error(), "swampj ") {
		t.Fatalf("a library error must not name CLI flags or commands: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("created %v", ents)
	}
}

// TestNothingOpenBesideRunningWriters: with nothing to recover, recover
// (a start-up hook) returns at once beside a data writer holding the repo
// lock shared, instead of waiting to hold the repo alone; with an intent
// open it still waits, and times out while the writer runs.
func TestNothingOpenBesideRunningWriters(t *testing.T) {
	root := t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{".swamp.yaml": "x: 1\n"})
	w, err := journal.Open(nil, recover.JournalPath(root), journal.Options{Shared: true, LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	w.Release()
	defer w.Close()
	start := time.Now()
	if _, err := recover.Run(context.Background(), root, recover.Options{Common: host.Common{JournalLockTimeout: 300 * time.Millisecond}}); err != nil {
		t.Fatalf("recover with nothing open beside a writer: %v", err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Fatalf("recover with nothing open took %s beside a writer: it waited", d)
	}
	if _, err := w.Begin(&journal.Intent{Kind: "test", Summary: "open"}); err != nil {
		t.Fatal(err)
	}
	if _, err := recover.Run(context.Background(), root, recover.Options{Common: host.Common{JournalLockTimeout: 300 * time.Millisecond}}); !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("recover with an intent open beside its live writer: want a lock timeout, got %v", err)
	}
}
