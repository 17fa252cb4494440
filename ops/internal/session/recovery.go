package session

import (
	"context"
	"errors"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/report"
)

// RecoverOpen is Recover on the caller's Env (a write or a migration that
// finishes interrupted intents before its own, under locks it holds).
func RecoverOpen(ctx context.Context, env *engine.Env, j *journal.Journal, rollback bool) ([]report.IntentOutcome, error) {
	recs, err := engine.RecoverOpen(ctx, env, j, rollback)
	var outs []report.IntentOutcome
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

// PreviewOpen observes every step of every open intent, for a dry run.
func PreviewOpen(ctx context.Context, env *engine.Env, j *journal.Journal, rollback bool) ([]report.IntentOutcome, error) {
	open, err := j.OpenIntents()
	if err != nil {
		return nil, err
	}
	var outs []report.IntentOutcome
	for _, in := range open {
		out := outcome(in)
		out.Direction = journal.Forward
		if rollback || in.Direction == journal.Backward {
			out.Direction = journal.Backward
		}
		for i, o := range engine.ObserveSteps(ctx, env, in) {
			out.Steps = append(out.Steps, report.StepView{Index: i + 1, Description: o.Description, Observed: o.Observed, Detail: o.Detail})
		}
		// Where the run would stop, judged as the run judges it: a
		// preview that says "would go forward" must not be followed by a
		// run that stops at a conflict.
		probe := in
		if out.Direction != in.Direction {
			turned := *in
			turned.Direction = out.Direction
			probe = &turned
		}
		if i, v, stuck := engine.Stuck(ctx, env, probe); stuck {
			out.Blocked = &report.StepView{Index: i + 1, Description: v.Description, Observed: v.Observed, Detail: v.Detail}
		}
		outs = append(outs, out)
	}
	return outs, nil
}

func outcome(in *journal.Intent) report.IntentOutcome {
	return report.IntentOutcome{ID: in.ID, Kind: in.Kind, Summary: in.Summary, CreatedAt: in.CreatedAt.Format("2006-01-02T15:04:05Z07:00"),
		PID: in.PID, Direction: in.Direction, Status: in.Status, Error: in.LastError}
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
	return &report.IntentStillOpenError{ID: rec.Intent.ID, Summary: rec.Intent.Summary, Direction: dir,
		RollbackRecorded: rec.Intent.Direction == journal.Backward, Err: rec.Err}
}

// IsConflict reports whether err is a step conflict (the disk matches no
// state the journal can explain).
func IsConflict(err error) bool {
	var ce *engine.ConflictError
	return errors.As(err, &ce)
}
