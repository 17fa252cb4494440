package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
)

// Observation is what the disk says about one step.
type Observation int

const (
	// NotDone: the step's before-state is on disk.
	NotDone Observation = iota
	// Done: the step's after-state is on disk.
	Done
	// Partial: some of the step's effect is on disk, not all (a staging
	// directory half written). Forward, it is applied; backward, undone.
	Partial
	// Missing: neither before- nor after-state, because an earlier step is
	// not done (a rename whose source was never created). Backward there is
	// nothing to undo; forward it is a conflict.
	Missing
	// Conflict: the disk matches neither state. The intent stops.
	Conflict
	// Superseded: the step was done and a later writer built on it (a
	// `latest` that names a newer version than the intent published, which
	// only a writer who saw the intent's version could have written).
	// Forward it counts as done; backward it stops the rollback before
	// anything is undone, because undoing it would hide the later write.
	Superseded
	// WrittenAhead: a write step's before-state is on disk and its temp
	// file holds the new content, written ahead (by this run's
	// prepareTemps, on purpose, or by an earlier run). The executor treats
	// it as Partial (forward: applied; backward: the temp removed); it is
	// its own observation so that a trace does not call a healthy write's
	// own temp "partial".
	WrittenAhead
)

func (o Observation) String() string {
	return [...]string{"not done", "done", "partial", "missing", "conflict", "superseded", "written ahead"}[o]
}

// Env is what steps act on.
type Env struct {
	// FS is the disk (nil: the real one).
	FS fsx.FS
	// Catalog opens the repo's catalog on first use, for the kinds that
	// change it (a protocol.CatalogOpener; nil: catalog steps fail). The
	// executor only carries it; CloseCatalog closes it.
	Catalog io.Closer
	// Progress, if set, is called after each step (from the executor's
	// goroutine). It must not block.
	Progress func(done, total int)
	// IntentProgress, if set, gives recovery the Progress of each intent
	// it drives, before it drives it (a phase named after the steps, such
	// as a migration's restamp).
	IntentProgress func(in *journal.Intent, dir journal.Direction) func(done, total int)
	// SwampLockTimeout bounds recovery's wait for the swamp locks an
	// intent names (0: SWAMP_LOCK_TIMEOUT_MS, else 60 s).
	SwampLockTimeout time.Duration
	// HeldLocks are swamp lock files the caller holds already (a write
	// that finishes interrupted intents before its own): recovery does
	// not take them again.
	HeldLocks map[string]bool
	// Later are the open intents a forward recovery drives after the one
	// it is driving, in order (Kind.ApplyBelow looks at them).
	Later []*journal.Intent
	// ParkDone, if set, takes the done mark of a live forward run whose
	// catalog rows are not yet durable (a lazy catalog): the holder marks
	// the intent done after its next catalog sync (catalogdurable.go).
	ParkDone func(id uint64)
	// Parked reports the intents parked by this process's holder: they
	// are finished but for their mark, and recovery leaves them alone.
	Parked func(id uint64) bool
	// Log receives the executor's debug records (nil: none): per intent
	// driven, per step (kind, paths, what the observation said, what was
	// done) and when the intent is settled. See trace.go.
	Log *slog.Logger
}

// OrRealFS returns env, or a copy of it on the real disk when env.FS is nil.
func (env *Env) OrRealFS() *Env {
	if env.FS != nil {
		return env
	}
	c := *env
	c.FS = fsx.Real()
	return &c
}

// ErrCannotRedo is returned by a step that cannot be applied from the
// journal alone (a version payload the journal does not hold). The executor
// then rolls the intent back.
var ErrCannotRedo = errors.New("step cannot be redone from the journal")

// LiveApply supplies apply functions for steps that only the running command
// can perform (streaming a payload), by step index.
type LiveApply map[int]func(ctx context.Context, env *Env, s *journal.Step, d *Dirty) error

// Result of running an intent.
type Result struct {
	IntentID  uint64            `json:"intentId"`
	Kind      string            `json:"kind"`
	Summary   string            `json:"summary"`
	Direction journal.Direction `json:"direction"`
	Status    journal.Status    `json:"status"`
	Steps     int               `json:"steps"`
	Applied   int               `json:"applied"`
	Skipped   int               `json:"alreadyInPlace"`
	Undone    int               `json:"undone"`
	DirSyncs  int               `json:"dirFsyncs"`
	// CatalogStale is set when a catalog step was skipped (Derived): why
	// the catalog could not follow. The data change is complete; the
	// journal holds the stale mark until a catalog rebuild.
	CatalogStale string `json:"catalogStale,omitempty"`
	// CatalogErr is the error behind CatalogStale (errors.Is works on it).
	CatalogErr error `json:"-"`
	// catalogFound: a catalog step was found in place, not done by this
	// run, so the catalog must be synced before the intent is marked
	// finished (catalogdurable.go).
	catalogFound bool
}

// skipDerived records that step i, which only changes the catalog, could
// not be done (err) and is skipped: the intent goes on without it.
func (res *Result) skipDerived(i int, s *journal.Step, err error) {
	res.Skipped++
	res.CatalogErr = err
	res.CatalogStale = fmt.Sprintf("step %d (%s): %v", i+1, Describe(s), err)
}

// derivedSkippable reports whether a step's failure may be recorded as a
// stale catalog instead of stopping the intent: only derived steps, never
// a (simulated) crash, never a cancellation the caller asked for.
func derivedSkippable(ctx context.Context, k Kind, err error) bool {
	return k.Derived && !fsx.IsCrash(err) && ctx.Err() == nil && !errors.Is(err, ErrCannotRedo)
}

// stepFailed is what a failed observe, apply or undo of step i means, in
// either direction: a crash (simulated) stops the intent as it is; a
// derived step's failure is skipped and recorded as a stale catalog (nil
// is returned, and the caller goes on with the next step); anything else
// stops the intent with a StepError naming the step.
func stepFailed(ctx context.Context, k Kind, in *journal.Intent, i int, dir journal.Direction, obs Observation, err error, res *Result, tr *trace) error {
	s := &in.Steps[i]
	switch {
	case fsx.IsCrash(err):
		return err
	case derivedSkippable(ctx, k, err):
		res.skipDerived(i, s, err)
		tr.step(i, s, obs, err.Error(), "skipped: catalog stale")
		return nil
	}
	tr.step(i, s, obs, err.Error(), "failed")
	return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: dir, Err: err}
}

// StepError says which step of which intent failed and why. The intent stays
// open; the error carries both ways out.
type StepError struct {
	IntentID  uint64
	Index     int
	Step      journal.Step
	Direction journal.Direction
	Err       error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("intent %d, step %d (%s) failed going %s: %v", e.IntentID, e.Index+1, Describe(&e.Step), e.Direction, e.Err)
}
func (e *StepError) Unwrap() error { return e.Err }

// Is makes every StepError match swampj.ErrStepFailed.
func (e *StepError) Is(target error) bool { return target == swampj.ErrStepFailed }

// Code is the code of what failed below when that has one (a full disk,
// a conflict), else swampj.ErrStepFailed's.
func (e *StepError) Code() string {
	return swampj.CodeOr(swampj.CauseOf(e.Err), swampj.ErrStepFailed.(swampj.Coded).Code())
}

// Class is the class of what failed below when that has one.
func (e *StepError) Class() swampj.Class {
	return swampj.ClassOr(swampj.CauseOf(e.Err), swampj.ClassFailed)
}

// ConflictError says the disk matches neither the before nor the after state
// of a step, so swampj will not guess. The intent stays open.
type ConflictError struct {
	IntentID uint64
	Index    int
	Step     journal.Step
	Detail   string
	// Superseded: a rollback refused because a later write built on the
	// step (see Superseded); nothing was undone, and forward finishes it.
	Superseded bool
}

func (e *ConflictError) Error() string {
	if e.Superseded {
		return fmt.Sprintf("intent %d, step %d (%s): %s. Rolling back would hide that later write, so nothing was undone; "+
			"recover forward to finish the intent", e.IntentID, e.Index+1, Describe(&e.Step), e.Detail)
	}
	return fmt.Sprintf("intent %d, step %d (%s): the disk matches neither the state before nor after it: %s. "+
		"Nothing more was changed; inspect these paths, then finish the intent or roll it back",
		e.IntentID, e.Index+1, Describe(&e.Step), e.Detail)
}

// Is makes every ConflictError match swampj.ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == swampj.ErrConflict }

// Code is swampj.ErrConflict's.
func (e *ConflictError) Code() string        { return swampj.ErrConflict.(swampj.Coded).Code() }
func (e *ConflictError) Class() swampj.Class { return swampj.ClassFailed }

// Execute journals a new intent (one synced commit) and runs it forward.
// On failure the intent stays open for recovery or a re-run.
func Execute(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, live LiveApply) (*Result, error) {
	if err := Record(j, in); err != nil {
		return nil, err
	}
	return Drive(ctx, env, j, in, journal.Forward, live)
}

// Record journals a new intent (one synced commit) without running it:
// Drive runs it. The temp names of its write steps are chosen here, so
// that recovery knows every file the run may create.
func Record(j *journal.Journal, in *journal.Intent) error {
	nameTemps(in)
	_, err := j.Begin(in)
	return err
}

// Drive runs an already journaled intent in the given direction until every
// step is observed done (forward) or undone (backward). If a step cannot be
// redone, a forward run turns into a rollback (the decision is journaled
// first and is never flipped back). Drive is what recovery calls.
func Drive(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, dir journal.Direction, live LiveApply) (*Result, error) {
	return drive(ctx, env.OrRealFS(), j, in, dir, live, nil)
}

func drive(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, dir journal.Direction, live LiveApply, rec *Recording) (*Result, error) {
	if in.Direction == journal.Backward {
		dir = journal.Backward // a rollback once decided is finished, never reversed
	}
	res := &Result{IntentID: in.ID, Kind: in.Kind, Summary: in.Summary, Direction: dir, Steps: len(in.Steps)}
	d := &Dirty{fs: env.FS, rec: rec}
	if rec != nil {
		// The catalog statements need nothing from the staging: they run
		// from the start, beside the journal commit and the staging.
		prepareAhead(ctx, env, in.Steps, -1, d)
	}
	tr := newTrace(ctx, env, in)
	if tr != nil && rec != nil {
		tr.hold = true // the intent's id comes with its commit
	}
	tr.start(dir)
	if dir == journal.Backward && in.Direction != journal.Backward {
		if err := decideBackward(ctx, env, j, in, d); err != nil {
			d.discard()
			return nil, err
		}
	}
	var err error
	if dir == journal.Forward {
		err = forward(ctx, env, j, in, live, d, res, tr)
		if err == nil && d.rec != nil {
			err = d.rec.Wait() // a plan of staging steps only
		}
		if err != nil && !d.recorded() {
			d.discard()
			tr.release()
			return nil, err // nothing but staging ran: DriveRecording cleans up
		}
		res.IntentID = in.ID
		if errors.Is(err, ErrCannotRedo) {
			if derr := decideBackward(ctx, env, j, in, d); derr != nil {
				d.discard()
				return res, derr
			}
			res.Direction = journal.Backward
			tr.start(journal.Backward)
			err = backward(ctx, env, in, d, res, tr)
		}
	} else {
		err = backward(ctx, env, in, d, res, tr)
	}
	if err == nil {
		err = d.SyncContent()
	}
	if err == nil {
		err = d.Flush()
	}
	d.discard()
	if err == nil && res.CatalogStale != "" {
		// Before the intent is marked finished: a crash in between leaves
		// it open, and recovery tries the catalog again.
		err = j.MarkCatalogStale(in.ID, protocols.CatalogPath(in.Repo), res.CatalogStale)
	}
	res.DirSyncs = d.syncs
	if err != nil {
		if !fsx.IsCrash(err) {
			j.NoteError(in.ID, err.Error())
		}
		res.Status = journal.StatusOpen
		tr.end(res, err)
		return res, err
	}
	if res.Direction == journal.Forward {
		res.Status = journal.StatusDone
	} else {
		res.Status = journal.StatusRolledBack
	}
	if err := finish(ctx, env, j, in, res, rec != nil); err != nil {
		res.Status = journal.StatusOpen
		tr.end(res, err)
		return res, err
	}
	tr.end(res, nil)
	return res, nil
}

// decideBackward journals that the intent is rolled back. First it removes
// what only a rollback would remove and nothing points at — the hidden
// staging directories of versions never published — because on a full
// disk the journal commit needs the space they hold (a write larger than
// the free space fills the disk with its own stage). A crash in between
// leaves a forward intent whose stage is gone, which recovery cannot redo
// and so rolls back: the same outcome. A rollback that would hide a later
// write (supersededStep) is refused here, before anything changes.
func decideBackward(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, d *Dirty) error {
	if i, detail, ok := supersededStep(ctx, env, in); ok {
		// Refused before the direction is journaled: forward still works.
		return &ConflictError{IntentID: in.ID, Index: i, Step: in.Steps[i], Detail: detail, Superseded: true}
	}
	for i := range in.Steps {
		s := &in.Steps[i]
		k, err := KindOf(s)
		if err != nil || !k.Stages {
			continue
		}
		if staged, err := fsx.Exists(env.FS, s.Path); err != nil {
			return err
		} else if staged {
			if err := k.Undo(ctx, env, s, d); err != nil {
				return err
			}
		}
	}
	if err := j.Decide(in.ID, journal.Backward); err != nil {
		return err
	}
	in.Direction = journal.Backward
	return nil
}

func forward(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, live LiveApply, d *Dirty, res *Result, tr *trace) error {
	superseded := "" // why, once a step was found superseded
	for i := range in.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &in.Steps[i]
		k, err := KindOf(s)
		if err != nil {
			return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: err}
		}
		if !k.Stages && d.rec != nil {
			// The first step a reader may see: what was staged and the
			// intent itself become durable together, first.
			var serr error
			if d.hasUnsynced() {
				prepareTemps(env, in.Steps[i:], d)
				prepareAhead(ctx, env, in.Steps, i, d)
				serr = d.SyncContent()
			}
			if err := d.rec.Wait(); err != nil {
				return err
			}
			d.rec = nil
			tr.release()
			if serr != nil {
				return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: serr}
			}
		}
		obs, detail, err := k.Observe(ctx, env, s)
		if err != nil {
			if err := stepFailed(ctx, k, in, i, journal.Forward, obs, err, res, tr); err != nil {
				return err
			}
			continue
		}
		if d.deferredWrites && !(k.WriteAhead != nil && s.Temp != "" && d.prepared[s.Temp]) {
			// The `latest` replaces before this step left their directory
			// fsyncs to one flush, together, before any other step.
			if err := d.Flush(); err != nil {
				return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: err}
			}
		}
		if k.Derived && superseded != "" && (obs == NotDone || obs == Partial || obs == WrittenAhead) {
			// The catalog change as planned would flag this intent's
			// version as latest, which it no longer is. The rows go in
			// below the later version (ApplyBelow), else the catalog is
			// left to be rebuilt from the disk.
			if aw := d.ahead[i]; aw != nil {
				// Prepared as planned, with the flags: never committed.
				<-aw.done
				if aw.err == nil && aw.p != nil {
					aw.p.Rollback()
				}
				delete(d.ahead, i)
			}
			if k.ApplyBelow == nil {
				res.skipDerived(i, s, errors.New(superseded))
				tr.step(i, s, obs, superseded, "skipped: catalog stale")
				continue
			}
			if err := k.ApplyBelow(ctx, env, s, d); err != nil {
				if err := stepFailed(ctx, k, in, i, journal.Forward, obs, err, res, tr); err != nil {
					return err
				}
				continue
			}
			res.Applied++
			tr.step(i, s, obs, superseded, "applied below the later write")
			continue
		}
		switch obs {
		case Done, Superseded:
			res.Skipped++
			res.catalogFound = res.catalogFound || k.Derived
			if obs == Superseded {
				superseded = "a later write superseded this intent: " + detail
			}
			tr.step(i, s, obs, detail, "in place")
		case NotDone, Partial, WrittenAhead:
			if !k.Stages && d.hasUnsynced() {
				// This step may publish what the staging steps before it
				// wrote: make all of that durable first, in one go. What
				// later steps can do ahead runs meanwhile.
				prepareTemps(env, in.Steps[i:], d)
				prepareAhead(ctx, env, in.Steps, i, d)
				if err := d.SyncContent(); err != nil {
					return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: err}
				}
			}
			apply := k.Apply
			if f := live[i]; f != nil {
				apply = f
			}
			if aw := d.ahead[i]; aw != nil {
				delete(d.ahead, i)
				apply = aw.commitOr(apply)
			}
			if err := apply(ctx, env, s, d); err != nil {
				if errors.Is(err, ErrCannotRedo) {
					tr.step(i, s, obs, detail, "cannot redo: rolling back")
					return err
				}
				if err := stepFailed(ctx, k, in, i, journal.Forward, obs, err, res, tr); err != nil {
					return err
				}
				break
			}
			res.Applied++
			tr.step(i, s, obs, detail, "applied")
		case Missing, Conflict:
			tr.step(i, s, obs, detail, "conflict")
			return &ConflictError{IntentID: in.ID, Index: i, Step: *s, Detail: detail}
		}
		if env.Progress != nil {
			env.Progress(i+1, len(in.Steps))
		}
	}
	return nil
}

func backward(ctx context.Context, env *Env, in *journal.Intent, d *Dirty, res *Result, tr *trace) error {
	n := len(in.Steps)
	if i, detail, ok := supersededStep(ctx, env, in); ok {
		s := &in.Steps[i]
		tr.step(i, s, Superseded, detail, "conflict")
		return &ConflictError{IntentID: in.ID, Index: i, Step: *s, Detail: detail, Superseded: true}
	}
	for i := n - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &in.Steps[i]
		k, err := KindOf(s)
		if err != nil {
			return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Backward, Err: err}
		}
		obs, detail, err := k.Observe(ctx, env, s)
		if err != nil {
			if err := stepFailed(ctx, k, in, i, journal.Backward, obs, err, res, tr); err != nil {
				return err
			}
			continue
		}
		switch obs {
		case Done, Partial, WrittenAhead:
			if err := k.Undo(ctx, env, s, d); err != nil {
				if err := stepFailed(ctx, k, in, i, journal.Backward, obs, err, res, tr); err != nil {
					return err
				}
				break
			}
			res.Undone++
			tr.step(i, s, obs, detail, "undone")
		case NotDone, Missing:
			res.Skipped++
			res.catalogFound = res.catalogFound || k.Derived
			tr.step(i, s, obs, detail, "nothing to undo")
		case Conflict, Superseded:
			tr.step(i, s, obs, detail, "conflict")
			return &ConflictError{IntentID: in.ID, Index: i, Step: *s, Detail: detail, Superseded: obs == Superseded}
		}
		if env.Progress != nil {
			env.Progress(n-i, n)
		}
	}
	return nil
}

// supersededStep finds a step of in that a later writer built on (only a
// Supersedable kind's can be: a `latest` pointer moved past the intent's
// version). A rollback checks first, because by the time its backward
// walk reached that step it would have undone the steps after it (the
// catalog rows).
func supersededStep(ctx context.Context, env *Env, in *journal.Intent) (int, string, bool) {
	for i := range in.Steps {
		s := &in.Steps[i]
		k, err := KindOf(s)
		if err != nil || !k.Supersedable {
			continue
		}
		if obs, detail, err := k.Observe(ctx, env, s); err == nil && obs == Superseded {
			return i, detail, true
		}
	}
	return 0, "", false
}
