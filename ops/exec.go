package ops

import (
	"context"
	"errors"
	"fmt"

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
)

func (o Observation) String() string {
	return [...]string{"not done", "done", "partial", "missing", "conflict"}[o]
}

// Env is what steps act on.
type Env struct {
	FS fsx.FS
	// Catalog opens the repo's catalog on first use (nil: catalog steps fail).
	Catalog CatalogOpener
	// Progress, if set, is called after each step (from the executor's
	// goroutine). It must not block.
	Progress func(done, total int)
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

// ConflictError says the disk matches neither the before nor the after state
// of a step, so swampj will not guess. The intent stays open.
type ConflictError struct {
	IntentID uint64
	Index    int
	Step     journal.Step
	Detail   string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("intent %d, step %d (%s): the disk matches neither the state before nor after it: %s. "+
		"Nothing more was changed; inspect these paths, then run 'swampj recover' (or 'swampj recover --rollback')",
		e.IntentID, e.Index+1, Describe(&e.Step), e.Detail)
}

// Execute journals a new intent (one synced commit) and runs it forward.
// On failure the intent stays open for recovery or a re-run.
func Execute(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, live LiveApply) (*Result, error) {
	for i := range in.Steps {
		if s := &in.Steps[i]; s.Kind == KindWrite && s.Temp == "" {
			s.Temp = fsx.TempName(s.Path)
		}
	}
	if _, err := j.Begin(in); err != nil {
		return nil, err
	}
	return Drive(ctx, env, j, in, journal.Forward, live)
}

// Drive runs an already journaled intent in the given direction until every
// step is observed done (forward) or undone (backward). If a step cannot be
// redone, a forward run turns into a rollback (the decision is journaled
// first and is never flipped back). Drive is what recovery calls.
func Drive(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, dir journal.Direction, live LiveApply) (*Result, error) {
	if in.Direction == journal.Backward {
		dir = journal.Backward // a rollback once decided is finished, never reversed
	}
	if dir == journal.Backward && in.Direction != journal.Backward {
		if err := j.Decide(in.ID, journal.Backward); err != nil {
			return nil, err
		}
		in.Direction = journal.Backward
	}
	res := &Result{IntentID: in.ID, Kind: in.Kind, Summary: in.Summary, Direction: dir, Steps: len(in.Steps)}
	d := &Dirty{fs: env.FS}
	var err error
	if dir == journal.Forward {
		err = forward(ctx, env, j, in, live, d, res)
		if errors.Is(err, ErrCannotRedo) {
			if derr := j.Decide(in.ID, journal.Backward); derr != nil {
				return res, derr
			}
			in.Direction = journal.Backward
			res.Direction = journal.Backward
			err = backward(ctx, env, in, d, res)
		}
	} else {
		err = backward(ctx, env, in, d, res)
	}
	if err == nil {
		err = d.Flush()
	}
	res.DirSyncs = d.syncs
	if err != nil {
		if !fsx.IsCrash(err) {
			j.NoteError(in.ID, err.Error())
		}
		res.Status = journal.StatusOpen
		return res, err
	}
	if res.Direction == journal.Forward {
		res.Status = journal.StatusDone
	} else {
		res.Status = journal.StatusRolledBack
	}
	j.Finish(in.ID, res.Status)
	return res, nil
}

func forward(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, live LiveApply, d *Dirty, res *Result) error {
	for i := range in.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &in.Steps[i]
		k, err := kindOf(s)
		if err != nil {
			return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: err}
		}
		obs, detail, err := k.Observe(ctx, env, s)
		if err != nil {
			return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: err}
		}
		switch obs {
		case Done:
			res.Skipped++
		case NotDone, Partial:
			apply := k.Apply
			if f := live[i]; f != nil {
				apply = f
			}
			if err := apply(ctx, env, s, d); err != nil {
				if errors.Is(err, ErrCannotRedo) || fsx.IsCrash(err) {
					return err
				}
				return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Forward, Err: err}
			}
			res.Applied++
		case Missing, Conflict:
			return &ConflictError{IntentID: in.ID, Index: i, Step: *s, Detail: detail}
		}
		if env.Progress != nil {
			env.Progress(i+1, len(in.Steps))
		}
	}
	return nil
}

func backward(ctx context.Context, env *Env, in *journal.Intent, d *Dirty, res *Result) error {
	n := len(in.Steps)
	for i := n - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &in.Steps[i]
		k, err := kindOf(s)
		if err != nil {
			return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Backward, Err: err}
		}
		obs, detail, err := k.Observe(ctx, env, s)
		if err != nil {
			return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Backward, Err: err}
		}
		switch obs {
		case Done, Partial:
			if err := k.Undo(ctx, env, s, d); err != nil {
				if fsx.IsCrash(err) {
					return err
				}
				return &StepError{IntentID: in.ID, Index: i, Step: *s, Direction: journal.Backward, Err: err}
			}
			res.Undone++
		case NotDone, Missing:
			res.Skipped++
		case Conflict:
			return &ConflictError{IntentID: in.ID, Index: i, Step: *s, Detail: detail}
		}
		if env.Progress != nil {
			env.Progress(n-i, n)
		}
	}
	return nil
}

// Dirty collects directories whose entries changed and still need an fsync.
type Dirty struct {
	fs    fsx.FS
	order []string
	set   map[string]bool
	syncs int
}

// Add marks directories dirty.
func (d *Dirty) Add(dirs ...string) {
	if d.set == nil {
		d.set = map[string]bool{}
	}
	for _, dir := range dirs {
		if !d.set[dir] {
			d.set[dir] = true
			d.order = append(d.order, dir)
		}
	}
}

// Synced records that a step fsynced dir itself.
func (d *Dirty) Synced(dir string) {
	if d.set[dir] {
		delete(d.set, dir)
		for i, x := range d.order {
			if x == dir {
				d.order = append(d.order[:i], d.order[i+1:]...)
				break
			}
		}
	}
	d.syncs++
}

// Flush fsyncs every dirty directory once, in the order they became dirty.
// A directory that no longer exists (it was renamed away) needs no fsync:
// its entries' fate is carried by the directory it moved into.
func (d *Dirty) Flush() error {
	for _, dir := range d.order {
		if ok, err := fsx.Exists(d.fs, dir); err != nil {
			return err
		} else if !ok {
			continue
		}
		if err := d.fs.SyncDir(dir); err != nil {
			return err
		}
		d.syncs++
	}
	d.order, d.set = nil, nil
	return nil
}
