package protocol

// The swamp locks an intent is driven under: recovery takes them before it
// finishes or undoes an intent (engine.Protocols.LockIntent).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/lock"
)

// lockIntent takes the swamp locks in names: a write or a repair is
// finished or undone only while swamp cannot be writing the same model
// (its lock, left by a process that died, is stale and taken over). Locks
// the caller holds (env.HeldLocks), or that an ancestor swamp process
// holds (lock.AcquireOrBorrow), are not taken again. It returns the
// context to drive the intent in, cancelled if a lock is lost, and the
// function that lets the locks go; on an error nothing stays held.
//
// With try, a lock held by someone else is not waited for: it returns an
// error matching engine.ErrLockBusy at once (a shared holder keeps the
// journal's turn while it recovers, and the lock's holder may be waiting
// for it).
func lockIntent(ctx context.Context, env *engine.Env, in *journal.Intent, try bool) (context.Context, func(), error) {
	timeout := env.SwampLockTimeout
	if timeout <= 0 {
		timeout = lock.TimeoutFromEnv(nil)
	}
	if try {
		timeout = time.Millisecond
	}
	var held []*lock.Lock
	handedOver := false
	defer func() {
		if !handedOver {
			lock.ReleaseAll(held, nil)
		}
	}()
	// A lock an ancestor swamp process holds (either version's variables,
	// swamp-format §13.5) is borrowed, never taken over or waited on; the locks are
	// taken in the order the intent lists them (a migration's two global
	// locks in GlobalPaths' order).
	anc := lock.AncestryFromEnv(nil)
	for _, p := range in.Locks {
		if env.HeldLocks[p] {
			continue
		}
		l, err := lock.AcquireOrBorrow(ctx, env.FS, p, anc, lock.Options{Timeout: timeout})
		if try && errors.Is(err, lock.ErrTimeout) {
			return nil, nil, fmt.Errorf("%w: %v", engine.ErrLockBusy, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("intent %d (%s) is finished only under swamp's lock %s: %w", in.ID, in.Summary, p, err)
		}
		l.StartHeartbeat(ctx)
		held = append(held, l)
	}
	// A structural intent (a migration, under swamp's global locks) moves
	// data: like the migration itself, finish or undo it only once no
	// writer holds a live per-model lock. Taking the global locks first and
	// scanning after is what keeps writers out (see lockWriteModels). The
	// scan is per datastore: 06b6147's {base}/.locks/{ns}.lock names it;
	// newer swamp's {base}/{ns}/.datastore.lock beside it would read as a
	// solo lock of {base}/{ns} (ParseGlobalPath), which is the same tree,
	// so the drain runs once per tree.
	drained := map[string]bool{}
	for _, p := range in.Locks {
		base, ns, ok := lock.ParseGlobalPath(p)
		if !ok || drained[filepath.Join(base, ns)] {
			continue
		}
		drained[filepath.Join(base, ns)] = true
		if err := waitNoOtherModelLocks(ctx, env, base, ns, anc.Lends, timeout); err != nil {
			return nil, nil, fmt.Errorf("intent %d (%s) moves data, so it is finished only while no swamp writer is active: %w", in.ID, in.Summary, err)
		}
	}
	ctx, stopWatch := lock.WatchLost(ctx, held)
	handedOver = true
	return ctx, func() {
		stopWatch()
		lock.ReleaseAll(held, nil)
	}, nil
}

// waitNoOtherModelLocks waits (bounded) until no live per-model lock is
// held but those the caller holds itself (env.HeldLocks: a write that
// finishes interrupted intents before its own) or the lender lent.
func waitNoOtherModelLocks(ctx context.Context, env *engine.Env, base, ns string, lends func(lock.Info) bool, timeout time.Duration) error {
	start := time.Now()
	for {
		live, err := lock.LiveModelLocksSkipping(env.FS, base, ns, time.Now(), lends)
		if err != nil {
			return err
		}
		var other []lock.Held
		for _, h := range live {
			if !env.HeldLocks[h.Path] {
				other = append(other, h)
			}
		}
		if len(other) == 0 {
			return nil
		}
		if time.Since(start) >= timeout {
			return &lock.TimeoutError{Path: other[0].Path, Holder: &other[0].Info, Waited: time.Since(start)}
		}
		t := time.NewTimer(min(200*time.Millisecond, timeout-time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
