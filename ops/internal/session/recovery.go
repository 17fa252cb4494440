package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
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

// RecoverOptions are the options of Recover and PreviewRecovery.
type RecoverOptions struct {
	// FS is the disk (nil: the real one).
	FS fsx.FS
	// Repo is the root of the repo the journal belongs to: catalog steps
	// update (or, previewing, read) its catalog.
	Repo string
	// Rollback undoes every open intent, newest first, instead of
	// finishing it.
	Rollback bool
	// SwampLockTimeout bounds the wait for the swamp locks an intent names
	// (0: SWAMP_LOCK_TIMEOUT_MS, else 60 s).
	SwampLockTimeout time.Duration
	// Progress, if set, receives "recovering": steps of the intent being
	// finished or undone.
	Progress Progress
	// Logger receives the executor's step records at level Debug (nil:
	// nothing is logged).
	Logger *slog.Logger
}

// Recover finishes (or, with Rollback, undoes) every open intent of j in
// id order. It stops at the first intent that cannot be completed — later
// intents may depend on it — and returns the outcomes so far with that
// error; that intent stays open. recover.Run is the usual way in: it finds
// and opens the journal first.
func Recover(ctx context.Context, j *journal.Journal, opts RecoverOptions) ([]IntentOutcome, error) {
	fsys := orReal(opts.FS)
	env := &engine.Env{FS: fsys, Catalog: engine.RepoCatalog(fsys, opts.Repo), SwampLockTimeout: opts.SwampLockTimeout,
		Progress: stepProgress(opts.Progress, "recovering"), Log: opts.Logger}
	defer env.CloseCatalog()
	return recoverOpen(ctx, env, j, opts.Rollback)
}

// PreviewRecovery observes every step of every open intent of j without
// changing anything (the catalog is opened read-only): what Recover would
// do. It works on read-only media.
func PreviewRecovery(ctx context.Context, j *journal.Journal, opts RecoverOptions) ([]IntentOutcome, error) {
	fsys := orReal(opts.FS)
	env := &engine.Env{FS: fsys, Catalog: engine.ReportCatalog(fsys, opts.Repo), SwampLockTimeout: opts.SwampLockTimeout, Log: opts.Logger}
	defer env.CloseCatalog()
	return previewOpen(ctx, env, j, opts.Rollback)
}

// recoverOpen is Recover on the caller's Env (a write or a migration that
// finishes interrupted intents before its own, under locks it holds).
func recoverOpen(ctx context.Context, env *engine.Env, j *journal.Journal, rollback bool) ([]IntentOutcome, error) {
	recs, err := engine.RecoverOpen(ctx, env, j, rollback)
	var outs []IntentOutcome
	if n := len(recs); err != nil && n > 0 && recs[n-1].Err != nil {
		err = stillOpen(recs[n-1], rollback)
	}
	for _, rec := range recs {
		out := outcome(rec.Intent)
		if res := rec.Result; res != nil {
			out.Direction, out.Status = res.Direction, res.Status
			out.Applied, out.Undone, out.Skipped = res.Applied, res.Undone, res.Skipped
			out.CatalogStale = res.CatalogStale
		}
		if rec.Err != nil {
			out.Error = rec.Err.Error()
		}
		outs = append(outs, out)
	}
	return outs, err
}

// previewOpen observes every step of every open intent, for a dry run.
func previewOpen(ctx context.Context, env *engine.Env, j *journal.Journal, rollback bool) ([]IntentOutcome, error) {
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
		for i, o := range engine.ObserveSteps(ctx, env, in) {
			out.Steps = append(out.Steps, StepView{Index: i + 1, Description: o.Description, Observed: o.Observed, Detail: o.Detail})
		}
		outs = append(outs, out)
	}
	return outs, nil
}

// DescribeStep is the human form of a journal step ("rename A -> B",
// "fsync dirtied directories"), as StepView.Description shows it.
func DescribeStep(s *journal.Step) string { return engine.Describe(s) }

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

// newOpenIntentsError lists the open intents' ids.
func newOpenIntentsError(open []*journal.Intent, then string) *OpenIntentsError {
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

// IntentStillOpenError is an intent that recovery (or a command finishing
// interrupted intents before its own) could not finish or undo: what
// failed, and that the intent stays open. Nothing it did is lost: the next
// recovery observes every step again and goes on where the disk says it
// stopped. errors.Is and errors.As see the cause.
type IntentStillOpenError struct {
	ID      uint64
	Summary string
	// Direction is the way it was being driven; RollbackRecorded says the
	// journal holds the decision to roll it back (never reversed).
	Direction        journal.Direction
	RollbackRecorded bool
	Err              error
}

// stillOpen wraps the error of the intent recovery stopped at, unless it
// is a simulated crash (the process model stopped: nothing more is said)
// or a conflict, whose error already says what to inspect.
func stillOpen(rec engine.Recovered, rollback bool) error {
	if fsx.IsCrash(rec.Err) || IsConflict(rec.Err) {
		return rec.Err
	}
	dir := journal.Forward
	switch {
	case rec.Result != nil:
		dir = rec.Result.Direction
	case rollback || rec.Intent.Direction == journal.Backward:
		dir = journal.Backward
	}
	return &IntentStillOpenError{ID: rec.Intent.ID, Summary: rec.Intent.Summary, Direction: dir,
		RollbackRecorded: rec.Intent.Direction == journal.Backward, Err: rec.Err}
}

func (e *IntentStillOpenError) Unwrap() error { return e.Err }

func (e *IntentStillOpenError) Error() string {
	msg := e.Err.Error()
	if !strings.Contains(msg, fmt.Sprintf("intent %d", e.ID)) {
		msg = fmt.Sprintf("intent %d (%s), going %s: %s", e.ID, e.Summary, e.Direction, msg)
	}
	var next string
	switch {
	case e.RollbackRecorded:
		next = "recover again once that is fixed; its rollback is recorded and is finished, never reversed"
	case e.Direction == journal.Backward:
		next = "roll it back again once that is fixed, or finish it instead"
	default:
		next = "recover again once that is fixed, or roll it back"
	}
	return fmt.Sprintf("%s. Intent %d is still open, and what its steps did so far stays on disk: %s", msg, e.ID, next)
}
