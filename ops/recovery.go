package ops

import (
	"context"
	"errors"
	"fmt"
	"github.com/swampj/swampj/ops/internal/engine"
	"strconv"
	"strings"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
)

// IntentOutcome is what recovery did (or would do) with one open intent.
type IntentOutcome struct {
	ID        uint64            `json:"id"`
	Kind      string            `json:"kind"`
	Summary   string            `json:"summary"`
	CreatedAt string            `json:"createdAt"`
	PID       int               `json:"pid"`
	Direction journal.Direction `json:"direction"`
	Status    journal.Status    `json:"status"`
	Applied   int               `json:"applied"`
	Undone    int               `json:"undone"`
	Skipped   int               `json:"alreadyInPlace"`
	Error     string            `json:"error,omitempty"`
	// CatalogStale: the intent's catalog step was skipped (why).
	CatalogStale string `json:"catalogStale,omitempty"`
	// Steps is filled by a dry run: what each step observes now.
	Steps []StepView `json:"steps,omitempty"`
}

// Sentence says in words what recovery did with the intent: finished it,
// rolled it back, or could not (and why).
func (o IntentOutcome) Sentence() string {
	what := fmt.Sprintf("interrupted intent %d (%s: %s)", o.ID, o.Kind, o.Summary)
	var s string
	switch o.Status {
	case journal.StatusDone:
		s = "finished " + what
	case journal.StatusRolledBack:
		s = "rolled back " + what
	default:
		s = "could not finish " + what + "; it is still open"
		if o.Error != "" {
			s += ": " + o.Error
		}
	}
	if o.CatalogStale != "" {
		s += " (the catalog could not follow and is marked stale: " + o.CatalogStale + ")"
	}
	return s
}

// StepView is one step and what the disk says about it.
type StepView struct {
	Index       int    `json:"index"`
	Description string `json:"description"`
	Observed    string `json:"observed"`
	Detail      string `json:"detail,omitempty"`
}

// RecoverOpen drives every open intent in id order: forward (finish) unless
// rollback is set or the intent was already being rolled back. It stops at
// the first intent that cannot be completed — later intents may depend on
// it — and returns the outcomes so far with that error.
func RecoverOpen(ctx context.Context, env *engine.Env, j *journal.Journal, rollback bool) ([]IntentOutcome, error) {
	env = env.OrRealFS()
	open, err := j.OpenIntents()
	if err != nil {
		return nil, err
	}
	dir := journal.Forward
	if rollback {
		dir = journal.Backward
	}
	var outs []IntentOutcome
	// Roll back newest first, so an intent is undone only after everything
	// that came after it.
	if rollback {
		for a, b := 0, len(open)-1; a < b; a, b = a+1, b-1 {
			open[a], open[b] = open[b], open[a]
		}
	}
	for _, in := range open {
		out := outcome(in)
		res, err := driveLocked(ctx, env, j, in, dir)
		if res != nil {
			out.Direction, out.Status = res.Direction, res.Status
			out.Applied, out.Undone, out.Skipped = res.Applied, res.Undone, res.Skipped
			out.CatalogStale = res.CatalogStale
		}
		if err != nil {
			out.Error = err.Error()
			outs = append(outs, out)
			return outs, err
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// driveLocked drives one intent under the swamp locks it names: a write
// or a repair is finished or undone only while swamp cannot be writing the
// same model (its lock, left by a process that died, is stale and taken
// over). Locks the caller holds, or that the process named by
// SWAMP_LOCK_HOLDER_PID holds and lent to this one, are not taken again.
func driveLocked(ctx context.Context, env *engine.Env, j *journal.Journal, in *journal.Intent, dir journal.Direction) (*engine.Result, error) {
	timeout := env.SwampLockTimeout
	if timeout <= 0 {
		timeout = lock.TimeoutFromEnv(nil)
	}
	var held []*lock.Lock
	defer func() { releaseModelLocks(held, func(string) {}) }()
	lender := lock.HolderPidFromEnv(nil)
	for _, p := range in.Locks {
		if env.HeldLocks[p] || lock.LentBy(env.FS, p, lender, time.Now()) {
			continue
		}
		l, err := lock.Acquire(ctx, env.FS, p, lock.Options{Timeout: timeout})
		if err != nil {
			return nil, fmt.Errorf("intent %d (%s) is finished only under swamp's lock %s: %w", in.ID, in.Summary, p, err)
		}
		l.StartHeartbeat(ctx)
		held = append(held, l)
	}
	// A structural intent (a migration, under swamp's global lock) moves
	// data: like the migration itself, finish or undo it only once no
	// writer holds a live per-model lock. Taking the global lock first and
	// scanning after is what keeps writers out (see lockWriteModels).
	for _, p := range in.Locks {
		if base, ns, ok := lock.ParseGlobalPath(p); ok {
			if err := waitNoOtherModelLocks(ctx, env, base, ns, lender, timeout); err != nil {
				return nil, fmt.Errorf("intent %d (%s) moves data, so it is finished only while no swamp writer is active: %w", in.ID, in.Summary, err)
			}
		}
	}
	ctx, stopWatch := watchModelLocks(ctx, held)
	defer stopWatch()
	return engine.Drive(ctx, env, j, in, dir, nil)
}

// waitNoOtherModelLocks waits (bounded) until no live per-model lock is
// held but those the caller holds itself (env.HeldLocks: a write that
// finishes interrupted intents before its own) or the lender lent.
func waitNoOtherModelLocks(ctx context.Context, env *engine.Env, base, ns string, lender int, timeout time.Duration) error {
	start := time.Now()
	for {
		live, err := lock.LiveModelLocks(env.FS, base, ns, time.Now(), lender)
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

// PreviewOpen observes every step of every open intent without changing
// anything, for recover --dry-run.
func PreviewOpen(ctx context.Context, env *engine.Env, j *journal.Journal, rollback bool) ([]IntentOutcome, error) {
	env = env.OrRealFS()
	open, err := j.OpenIntents()
	if err != nil {
		return nil, err
	}
	var outs []IntentOutcome
	for _, in := range open {
		out := outcome(in)
		out.Direction = journal.Forward
		if rollback || in.Direction == journal.Backward {
			out.Direction = journal.Backward
		}
		for i := range in.Steps {
			s := &in.Steps[i]
			v := StepView{Index: i + 1, Description: engine.Describe(s)}
			k, err := engine.KindOf(s)
			if err != nil {
				v.Observed, v.Detail = "unknown", err.Error()
			} else {
				obs, detail, oerr := k.Observe(ctx, env, s)
				v.Observed, v.Detail = obs.String(), detail
				if oerr != nil {
					v.Observed, v.Detail = "error", oerr.Error()
				}
			}
			out.Steps = append(out.Steps, v)
		}
		outs = append(outs, out)
	}
	return outs, nil
}

func outcome(in *journal.Intent) IntentOutcome {
	return IntentOutcome{ID: in.ID, Kind: in.Kind, Summary: in.Summary, CreatedAt: in.CreatedAt.Format("2006-01-02T15:04:05Z07:00"),
		PID: in.PID, Direction: in.Direction, Status: in.Status, Error: in.LastError}
}

// IsConflict reports whether err is a step conflict (the disk matches no
// state the journal can explain).
func IsConflict(err error) bool {
	var ce *engine.ConflictError
	return errors.As(err, &ce)
}

// OpenIntentsError refuses work that needs a settled disk (a catalog
// rebuild, a doctor repair) while the journal holds an interrupted
// operation: the data on disk is mid-change.
type OpenIntentsError struct {
	IDs  []uint64
	Then string // what to do after recovering, e.g. "rebuild the catalog"
}

// NewOpenIntentsError lists the open intents' ids.
func NewOpenIntentsError(open []*journal.Intent, then string) *OpenIntentsError {
	e := &OpenIntentsError{Then: then}
	for _, in := range open {
		e.IDs = append(e.IDs, in.ID)
	}
	return e
}

func (e *OpenIntentsError) Code() string { return "open_intents" }
func (e *OpenIntentsError) Error() string {
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = strconv.FormatUint(id, 10)
	}
	return fmt.Sprintf("the journal holds %d interrupted operation(s) (intent %s); the data on disk is mid-change, so nothing was changed. "+
		"Recover first, then %s", len(e.IDs), strings.Join(ids, ", "), e.Then)
}
