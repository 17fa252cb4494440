package lock

import (
	"context"
	"fmt"

	"github.com/swampj/swampj/fsx"
)

// ReleaseAll releases locks newest first. A release that fails for any
// reason but a (simulated) crash is reported to warn (nil: dropped): the
// work the locks guarded is complete either way, and a lock left behind is
// stale once its heartbeat stops.
func ReleaseAll(locks []*Lock, warn func(string)) {
	for i := len(locks) - 1; i >= 0; i-- {
		if err := locks[i].Release(); err != nil && !fsx.IsCrash(err) && warn != nil {
			warn(fmt.Sprintf("releasing %s: %v", locks[i].Path(), err))
		}
	}
}

// WatchLost returns a context that is cancelled, with the cause, when any
// of locks is taken over (Lost), so the work under them stops and rolls
// back instead of finishing unprotected. stop ends the watch.
func WatchLost(ctx context.Context, locks []*Lock) (_ context.Context, stop func()) {
	if len(locks) == 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	for _, l := range locks {
		go func(l *Lock) {
			select {
			case <-l.Lost():
				cancel(fmt.Errorf("swamp's model lock %s was lost: %w", l.Path(), l.LostErr()))
			case <-done:
			}
		}(l)
	}
	return ctx, func() { close(done); cancel(nil) }
}
