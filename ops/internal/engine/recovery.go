package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
)

// Recovered is what recovery did with one open intent: Result is nil when
// the intent was never driven (its locks could not be taken), Err non-nil
// when it is still open.
type Recovered struct {
	Intent *journal.Intent
	Result *Result
	Err    error
}

// NeedsExclusiveError: a shared holder of the journal (a writer beside
// other writers, journal.Options.Shared) found an open intent only an
// exclusive holder may drive — one begun by an exclusive holder (a
// migration, a repair), or one of its own models' writes whose other locks
// are busy. Nothing was driven from that intent on; the caller finishes
// the intents exclusively (session.OpenForWrite) and starts again.
type NeedsExclusiveError struct {
	Intent *journal.Intent
	Why    string
}

func (e *NeedsExclusiveError) Error() string {
	return fmt.Sprintf("intent %d (%s) is finished only by a process holding the repo alone: %s", e.Intent.ID, e.Intent.Summary, e.Why)
}

// RecoverOpen drives every open intent in id order: forward (finish) unless
// rollback is set or the intent was already being rolled back. It stops at
// the first intent that cannot be completed — later intents may depend on
// it — and returns the outcomes so far (the last one failed) with that
// error.
//
// A shared holder of the journal (journal.Journal.Shared) drives only what
// it may (journal/hold.go): an intent begun beside other writers
// (Intent.Concurrent) that names one of the swamp locks this holder holds
// (env.HeldLocks), whose writer therefore is gone. One that names none of
// them belongs to other models and is left open untouched (its writer may
// be alive; a later holder of its locks finishes it); any other stops the
// loop with a *NeedsExclusiveError.
func RecoverOpen(ctx context.Context, env *Env, j *journal.Journal, rollback bool) ([]Recovered, error) {
	env = env.OrRealFS()
	open, err := j.OpenIntents()
	if err != nil {
		return nil, err
	}
	dir := journal.Forward
	if rollback {
		dir = journal.Backward
	}
	var outs []Recovered
	// Roll back newest first, so an intent is undone only after everything
	// that came after it.
	if rollback {
		for a, b := 0, len(open)-1; a < b; a, b = a+1, b-1 {
			open[a], open[b] = open[b], open[a]
		}
	}
	for _, in := range open {
		try := false
		if j.Shared() {
			switch {
			case !in.Concurrent:
				return outs, &NeedsExclusiveError{Intent: in, Why: "it was begun by a command that ran alone"}
			case !holdsAny(env.HeldLocks, in.Locks):
				continue
			}
			try = true
		}
		if env.IntentProgress != nil {
			env.Progress = env.IntentProgress(in, dir)
		}
		if env.Progress != nil {
			// Shown before the first step, which may be the long one (a
			// migration killed after its renames: only the restamp is left).
			env.Progress(0, len(in.Steps))
		}
		res, err := driveLocked(ctx, env, j, in, dir, try)
		if errors.Is(err, errLockBusy) {
			return outs, &NeedsExclusiveError{Intent: in, Why: err.Error()}
		}
		outs = append(outs, Recovered{Intent: in, Result: res, Err: err})
		if err != nil {
			return outs, err
		}
	}
	return outs, nil
}

// driveLocked drives one intent under the swamp locks it names: a write
// or a repair is finished or undone only while swamp cannot be writing the
// same model (its lock, left by a process that died, is stale and taken
// over). Locks the caller holds, or that an ancestor swamp process holds
// (lock.AcquireOrBorrow), are not taken again.
//
// With try, a lock held by someone else is not waited for: it returns an
// error matching errLockBusy at once (a shared holder keeps the journal's
// turn while it recovers, and the lock's holder may be waiting for it).
func driveLocked(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, dir journal.Direction, try bool) (*Result, error) {
	timeout := env.SwampLockTimeout
	if timeout <= 0 {
		timeout = lock.TimeoutFromEnv(nil)
	}
	if try {
		timeout = time.Millisecond
	}
	var held []*lock.Lock
	defer func() { lock.ReleaseAll(held, nil) }()
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
			return nil, fmt.Errorf("%w: %v", errLockBusy, err)
		}
		if err != nil {
			return nil, fmt.Errorf("intent %d (%s) is finished only under swamp's lock %s: %w", in.ID, in.Summary, p, err)
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
			return nil, fmt.Errorf("intent %d (%s) moves data, so it is finished only while no swamp writer is active: %w", in.ID, in.Summary, err)
		}
	}
	ctx, stopWatch := lock.WatchLost(ctx, held)
	defer stopWatch()
	return Drive(ctx, env, j, in, dir, nil)
}

// errLockBusy: driveLocked with try found a lock held.
var errLockBusy = errors.New("another of its swamp locks is held")

func holdsAny(held map[string]bool, paths []string) bool {
	for _, p := range paths {
		if held[p] {
			return true
		}
	}
	return false
}

// waitNoOtherModelLocks waits (bounded) until no live per-model lock is
// held but those the caller holds itself (env.HeldLocks: a write that
// finishes interrupted intents before its own) or the lender lent.
func waitNoOtherModelLocks(ctx context.Context, env *Env, base, ns string, lends func(lock.Info) bool, timeout time.Duration) error {
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

// StepObservation is what the disk says about one step now.
type StepObservation struct {
	Description string
	// Observed is the Observation's name, "unknown" for a kind this build
	// does not know, or "error" when observing failed (Detail says why).
	Observed string
	Detail   string
}

// ObserveSteps observes every step of in without changing anything (a
// recovery dry run).
func ObserveSteps(ctx context.Context, env *Env, in *journal.Intent) []StepObservation {
	env = env.OrRealFS()
	out := make([]StepObservation, 0, len(in.Steps))
	for i := range in.Steps {
		s := &in.Steps[i]
		v := StepObservation{Description: Describe(s)}
		k, err := KindOf(s)
		if err != nil {
			v.Observed, v.Detail = "unknown", err.Error()
		} else {
			obs, detail, oerr := k.Observe(ctx, env, s)
			v.Observed, v.Detail = obs.String(), detail
			if oerr != nil {
				v.Observed, v.Detail = "error", oerr.Error()
			}
		}
		out = append(out, v)
	}
	return out
}

// Stuck is where recovery of an open intent stops on the disk as it is
// now, in the direction it would run (forward, or backward for an intent
// already being rolled back): the first step the disk contradicts (its
// 0-based index, and what the observation saw). ok is false when nothing
// stops it. It changes nothing.
func Stuck(ctx context.Context, env *Env, in *journal.Intent) (index int, v StepObservation, ok bool) {
	env = env.OrRealFS()
	backward := in.Direction == journal.Backward
	settled := true // forward: every earlier step is done (or a barrier)
	for n := range in.Steps {
		i := n
		if backward {
			i = len(in.Steps) - 1 - n
		}
		s := &in.Steps[i]
		k, err := KindOf(s)
		if err != nil {
			return i, StepObservation{Description: Describe(s), Observed: "unknown", Detail: err.Error()}, true
		}
		obs, detail, err := k.Observe(ctx, env, s)
		if err != nil {
			// Unreadable now (media, permissions): not a contradiction.
			return 0, StepObservation{}, false
		}
		// A missing step stops a forward run only once every step before
		// it is done; before that it is what an unreached step looks like.
		if obs == Conflict || (obs == Missing && !backward && settled) || (obs == Superseded && backward) {
			return i, StepObservation{Description: Describe(s), Observed: obs.String(), Detail: detail}, true
		}
		// A barrier (a flush) has no state of its own to observe.
		settled = settled && (obs == Done || obs == Superseded || s.Kind == KindBarrier)
	}
	return 0, StepObservation{}, false
}
