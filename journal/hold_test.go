package journal_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/journal"
)

// Shared holders run together, each taking the turn only for its commits;
// an exclusive holder waits for them and keeps new ones out meanwhile.
func TestSharedHoldersAndAnExclusiveOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".swamp", "_journal.db")
	shared := journal.Options{Shared: true, LockTimeout: 2 * time.Second}
	a, err := journal.Open(nil, path, shared)
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	b, err := journal.Open(nil, path, shared)
	if err != nil {
		t.Fatalf("a second shared holder beside the first: %v", err)
	}
	b.Release()
	// Both commit, one after the other, while both are open.
	idA, err := a.Begin(&journal.Intent{Kind: "test", Summary: "a"})
	if err != nil {
		t.Fatal(err)
	}
	idB, err := b.Begin(&journal.Intent{Kind: "test", Summary: "b"})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []*journal.Journal{a, b} {
		open, err := j.OpenIntents()
		if err != nil || len(open) != 2 || !open[0].Concurrent || !open[1].Concurrent {
			t.Fatalf("open intents seen by a shared holder: %+v (%v)", open, err)
		}
	}
	if !journal.IntentLive(path, &journal.Intent{ID: idA, Concurrent: true, PID: os.Getpid(), Host: hostname(t), Status: journal.StatusOpen}) {
		t.Fatal("a's intent, begun by a live journal of this process, does not count as live")
	}
	a.Finish(idA, journal.StatusDone)
	if journal.IntentLive(path, &journal.Intent{ID: idA, Concurrent: true, PID: os.Getpid(), Host: hostname(t), Status: journal.StatusOpen}) {
		t.Fatal("a finished intent still counts as live")
	}

	// An exclusive holder waits for both...
	exclusive := make(chan error, 1)
	var x *journal.Journal
	go func() {
		var err error
		x, err = journal.Open(nil, path, journal.Options{LockTimeout: 5 * time.Second})
		exclusive <- err
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case err := <-exclusive:
		t.Fatalf("an exclusive holder opened beside two shared ones (%v)", err)
	default:
	}
	// ...and while it waits, a new shared holder cannot slip in.
	if _, err := journal.Open(nil, path, journal.Options{Shared: true, LockTimeout: 300 * time.Millisecond}); !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("a shared holder while an exclusive one waits: want a lock timeout, got %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b.Finish(idB, journal.StatusDone)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-exclusive; err != nil {
		t.Fatalf("the exclusive holder, once the shared ones closed: %v", err)
	}
	open, err := x.OpenIntents()
	if err != nil || len(open) != 0 {
		t.Fatalf("after both closed: %+v (%v)", open, err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
}

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
