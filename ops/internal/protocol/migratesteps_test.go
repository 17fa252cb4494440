package protocol_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/recover"
)

// TestMoveWaitsForABackingOffWriter: a writer that created its per-model
// lock in a migration's destination before it saw the datastore lock holds
// a live lock there for a moment, then backs off, leaving empty
// directories. The move step waits for that instead of calling the live
// lock data (the race test hit this under a load of 25 on two cores).
func TestMoveWaitsForABackingOffWriter(t *testing.T) {
	root := t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{
		".swamp.yaml":                  "swampVersion: test\n",
		"data/command/shell/m1/latest": "1",
		"data/command/shell/m1/1/raw":  "one",
	})
	src := filepath.Join(root, "data", "command", "shell")
	dst := filepath.Join(root, "ns", "data", "command", "shell")
	fsys := fsx.Real()
	backingOffWriter(t, filepath.Join(dst, "m1", ".lock"))
	j := openJournal(t, root)
	plan := &journal.Intent{Kind: "test", Summary: "move a model", Steps: []journal.Step{
		{Kind: protocol.KindMkdir, Path: filepath.Join(root, "ns")},
		{Kind: protocol.KindMkdir, Path: filepath.Join(root, "ns", "data")},
		{Kind: protocol.KindMkdir, Path: filepath.Join(root, "ns", "data", "command")},
		{Kind: protocol.KindMove, Path: src, To: dst},
	}}
	if _, err := engine.Execute(context.Background(), &engine.Env{FS: fsys}, j, plan, nil); err != nil {
		t.Fatalf("the move took a backing-off writer's live lock for data: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "m1", "1", "raw")); err != nil || string(b) != "one" {
		t.Fatalf("moved version: %q, %v", b, err)
	}
}

// TestMoveRmdirWaitsForABackingOffWriter: the same writer may be backing
// off in the directory a migration empties and removes (move-rmdir).
func TestMoveRmdirWaitsForABackingOffWriter(t *testing.T) {
	root := t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{".swamp.yaml": "swampVersion: test\n"})
	emptied := filepath.Join(root, "data", "command", "shell")
	fsys := fsx.Real()
	backingOffWriter(t, filepath.Join(emptied, "m1", ".lock"))
	j := openJournal(t, root)
	plan := &journal.Intent{Kind: "test", Summary: "remove an emptied model tree", Steps: []journal.Step{
		{Kind: protocol.KindMoveRmdir, Path: emptied},
	}}
	if _, err := engine.Execute(context.Background(), &engine.Env{FS: fsys}, j, plan, nil); err != nil {
		t.Fatalf("move-rmdir took a backing-off writer's live lock for data: %v", err)
	}
	if _, err := os.Lstat(emptied); !os.IsNotExist(err) {
		t.Fatalf("%s still there: %v", emptied, err)
	}
}

// backingOffWriter holds a live swamp lock at path for 400 ms, then lets
// it go: a writer that created its lock and is about to back off.
func backingOffWriter(t *testing.T, path string) {
	t.Helper()
	l, err := lock.Acquire(context.Background(), fsx.Real(), path, lock.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(400 * time.Millisecond)
		if err := l.Release(); err != nil {
			t.Error(err)
		}
	}()
}

func openJournal(t *testing.T, root string) *journal.Journal {
	t.Helper()
	j, err := journal.Open(fsx.Real(), recover.JournalPath(root), journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// racingWriterFS is the real disk on which a writer of a model below
// the move's destination takes its lock just before the move's rename (it
// passed its check of the datastore lock before the migration took it),
// and backs off a moment later.
type racingWriterFS struct {
	fsx.OS
	t    *testing.T
	to   string
	lock string
	done *bool
}

func (r racingWriterFS) RenameNoReplace(from, to string) error {
	if to == r.to && !*r.done {
		*r.done = true
		backingOffWriter(r.t, r.lock)
	}
	return r.OS.RenameNoReplace(from, to)
}

// The same writer, making its lock's directories after the move looked
// at its destination: the rename finds them, and the move waits for the
// writer, clears what it left and renames, instead of failing the
// migration with the intent open.
func TestMoveWaitsForAWriterThatCameAfterItsLook(t *testing.T) {
	root := t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{
		".swamp.yaml":                  "swampVersion: test\n",
		"data/command/shell/m1/latest": "1",
		"data/command/shell/m1/1/raw":  "one",
	})
	src := filepath.Join(root, "data", "command")
	dst := filepath.Join(root, "ns", "data", "command")
	raced := false
	fsys := racingWriterFS{t: t, to: dst, lock: filepath.Join(dst, "shell", "m2", ".lock"), done: &raced}
	j := openJournal(t, root)
	plan := &journal.Intent{Kind: "test", Summary: "move the data", Steps: []journal.Step{
		{Kind: protocol.KindMkdir, Path: filepath.Join(root, "ns")},
		{Kind: protocol.KindMkdir, Path: filepath.Join(root, "ns", "data")},
		{Kind: protocol.KindMove, Path: src, To: dst},
	}}
	if _, err := engine.Execute(context.Background(), &engine.Env{FS: fsys}, j, plan, nil); err != nil {
		t.Fatalf("the move failed on a writer's lock made after its look: %v", err)
	}
	if !raced {
		t.Fatal("the writer never raced the rename")
	}
	if b, err := os.ReadFile(filepath.Join(dst, "shell", "m1", "1", "raw")); err != nil || string(b) != "one" {
		t.Fatalf("moved version: %q, %v", b, err)
	}
}
