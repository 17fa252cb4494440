package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/swampj/swampj/journal"
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
	open, err := j.OpenIntentsExcept(env.Parked)
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
	defer func() { env.Later = nil }()
	for i, in := range open {
		env.Later = nil
		if !rollback {
			env.Later = open[i+1:]
		}
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
		if errors.Is(err, ErrLockBusy) {
			return outs, &NeedsExclusiveError{Intent: in, Why: err.Error()}
		}
		outs = append(outs, Recovered{Intent: in, Result: res, Err: err})
		if err != nil {
			return outs, err
		}
	}
	return outs, nil
}

// driveLocked drives one intent under the swamp locks it names
// (Protocols.LockIntent): a write or a repair is finished or undone only
// while swamp cannot be writing the same model, and a migration only
// while no swamp writer is active.
//
// With try, a lock held by someone else is not waited for: it returns an
// error matching ErrLockBusy at once (a shared holder keeps the journal's
// turn while it recovers, and the lock's holder may be waiting for it).
func driveLocked(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, dir journal.Direction, try bool) (*Result, error) {
	ctx, release, err := protocols.LockIntent(ctx, env, in, try)
	if err != nil {
		return nil, err
	}
	defer release()
	return Drive(ctx, env, j, in, dir, nil)
}

// ErrLockBusy: Protocols.LockIntent with try found a lock held.
var ErrLockBusy = errors.New("another of its swamp locks is held")

func holdsAny(held map[string]bool, paths []string) bool {
	for _, p := range paths {
		if held[p] {
			return true
		}
	}
	return false
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
