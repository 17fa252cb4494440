package protocol

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/lock"
)

// TestLockIntentLetsGoOfWhatItTookWhenALockIsBusy: recovery takes an
// intent's swamp locks in order; when a later one is held by someone else,
// the ones taken before it are let go again (the intent is not driven,
// and a model's lock left held would stop swamp writing it).
func TestLockIntentLetsGoOfWhatItTookWhenALockIsBusy(t *testing.T) {
	fsys := fsx.Real()
	dir := t.TempDir()
	first, second := filepath.Join(dir, "a.lock"), filepath.Join(dir, "b.lock")
	busy, err := lock.Acquire(context.Background(), fsys, second, lock.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.ReleaseAll([]*lock.Lock{busy}, nil)
	env := &engine.Env{FS: fsys, SwampLockTimeout: 200 * time.Millisecond}
	in := &journal.Intent{ID: 1, Summary: "test", Locks: []string{first, second}}

	_, release, err := lockIntent(context.Background(), env, in, true)
	if !errors.Is(err, engine.ErrLockBusy) {
		if release != nil {
			release()
		}
		t.Fatalf("the second lock is held: got %v, want ErrLockBusy", err)
	}
	if free, err := lock.Free(fsys, first, 0); err != nil || !free {
		t.Fatalf("the first lock stayed held after the second was busy (free=%v, err=%v)", free, err)
	}

	// Once the second is free, both are taken, and released together.
	lock.ReleaseAll([]*lock.Lock{busy}, nil)
	ctx, release, err := lockIntent(context.Background(), env, in, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range in.Locks {
		if free, err := lock.Free(fsys, p, 0); err != nil || free {
			t.Fatalf("%s is not held while the intent is driven (free=%v, err=%v)", p, free, err)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("the drive's context is done: %v", ctx.Err())
	}
	release()
	for _, p := range in.Locks {
		if free, err := lock.Free(fsys, p, 0); err != nil || !free {
			t.Fatalf("%s stayed held after release (free=%v, err=%v)", p, free, err)
		}
	}
}
