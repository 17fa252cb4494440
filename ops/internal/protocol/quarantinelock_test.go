package protocol_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/recover"
)

// A dead lock is moved only while it is still dead by newer swamp's rule
// (swamp-format §13.3): a zero-byte lock rewritten 10 s ago (past 06b6147-era
// swampj's 5 s window, within the 30 s TTL) is a writer at work again, so
// the step refuses, and the file stays.
func TestQuarantineLockRefusesAnEmptyLockWithinTheTTL(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, ".swamp", "data", "command", "shell", "m1", ".lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-10 * time.Second)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(fsx.Real(), recover.JournalPath(root), journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	to := filepath.Join(root, ".swamp", "q.lock")
	in := &journal.Intent{Kind: "repair", Summary: "quarantine a lock", Repo: root,
		Steps: []journal.Step{{Kind: protocol.KindQuarantineLock, Path: p, To: to, OldData: []byte{}}}}
	_, err = engine.Execute(context.Background(), &engine.Env{FS: fsx.Real()}, j, in, nil)
	var ce *lock.ChangedError
	if !errors.As(err, &ce) {
		t.Fatalf("want a *lock.ChangedError (the lock is in flight), got %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the in-flight lock was moved: %v", err)
	}
}
