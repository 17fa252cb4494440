package journal

import (
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Begin calls that arrive while a commit is in flight share the next one:
// the first caller commits alone, the 39 that queued behind it commit
// together, every intent gets its own id and is in the journal when its
// Begin returns.
func TestBeginsWaitingForACommitShareTheNext(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".swamp", "_journal.db")
	j, err := Open(nil, path, Options{Shared: true, LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	j.Release()
	const writers = 40
	queued := make(chan struct{})
	first := true
	j.group.beforeCommit = func() {
		if !first {
			return
		}
		first = false
		// The first leader commits once the others are queued behind it.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			j.group.mu.Lock()
			n := len(j.group.queue)
			j.group.mu.Unlock()
			if n == writers {
				close(queued)
				return
			}
		}
		t.Error("the other Begin calls never queued")
	}
	ids := make([]uint64, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			id, err := j.Begin(&Intent{Kind: "test", Summary: "w"})
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
			if got, err := j.Get(id); err != nil || !got.Open() {
				t.Errorf("intent %d after its Begin returned: %+v, %v", id, got, err)
			}
		})
	}
	wg.Wait()
	select {
	case <-queued:
	default:
		t.Fatal("the first commit did not wait for the queue")
	}
	if j.group.commits > 2 {
		t.Errorf("%d Begin calls made %d commits, want at most 2 (the first alone, the rest together)", writers, j.group.commits)
	}
	seen := map[uint64]bool{}
	for _, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("ids %v: want %d distinct ids", ids, writers)
		}
		seen[id] = true
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(nil, path, Options{LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	open, err := r.OpenIntents()
	if err != nil || len(open) != writers {
		t.Fatalf("open intents after reopening: %d (%v), want %d", len(open), err, writers)
	}
}
