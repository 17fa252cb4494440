package ops

import (
	"context"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"
)

// RecoverOptions are the options of Recover and PreviewRecovery.
type RecoverOptions struct {
	// Repo is the root of the repo the journal belongs to: catalog steps
	// update (or, previewing, read) its catalog.
	Repo string
	// Rollback undoes every open intent, newest first, instead of
	// finishing it.
	Rollback bool
	// Common is the file system, the lock timeouts and the logger (the
	// executor's step records at level Debug). SwampLockTimeout bounds the
	// wait for the swamp locks an intent names (0: SWAMP_LOCK_TIMEOUT_MS,
	// else 60 s).
	host.Common
	// Progress, if set, receives "recovering": steps of the intent being
	// finished or undone; and "restamping catalog" while a migration's
	// restamp runs.
	Progress report.Progress
}

// Recover finishes (or, with Rollback, undoes) every open intent of j in
// id order. It stops at the first intent that cannot be completed — later
// intents may depend on it — and returns the outcomes so far with that
// error; that intent stays open. recover.Run is the usual way in: it finds
// and opens the journal first.
func Recover(ctx context.Context, j *journal.Journal, opts RecoverOptions) ([]report.IntentOutcome, error) {
	fsys := opts.Disk()
	env := &engine.Env{FS: fsys, Catalog: protocol.RepoCatalog(fsys, opts.Repo), SwampLockTimeout: opts.SwampLockTimeout,
		Progress: opts.Progress.Steps("recovering"), IntentProgress: recoveryProgress(opts.Progress), Log: opts.Logger}
	defer env.CloseCatalog()
	return session.RecoverOpen(ctx, env, j, opts.Rollback)
}

// recoveryProgress reports an intent's steps as "recovering", and a
// migration's catalog restamp (one long step, the last one left when a
// migration was killed after its renames) as "restamping catalog" while it
// runs, as the migration itself does (migrateStepProgress).
func recoveryProgress(p report.Progress) func(*journal.Intent, journal.Direction) func(done, total int) {
	if p == nil {
		return nil
	}
	return func(in *journal.Intent, dir journal.Direction) func(done, total int) {
		steps := in.Steps
		return func(done, total int) {
			next := done // the step about to run
			if dir == journal.Backward {
				next = total - 1 - done // undone from the last one down
			}
			if next >= 0 && next < len(steps) && steps[next].Kind == protocol.KindCatalog {
				p.Emit("restamping catalog", 0, 0, "")
				return
			}
			p.Emit("recovering", int64(done), int64(total), "steps")
		}
	}
}

// PreviewRecovery observes every step of every open intent of j without
// changing anything (the catalog is opened read-only): what Recover would
// do. It works on read-only media.
func PreviewRecovery(ctx context.Context, j *journal.Journal, opts RecoverOptions) ([]report.IntentOutcome, error) {
	fsys := opts.Disk()
	env := &engine.Env{FS: fsys, Catalog: protocol.ReportCatalog(fsys, opts.Repo), SwampLockTimeout: opts.SwampLockTimeout, Log: opts.Logger}
	defer env.CloseCatalog()
	return session.PreviewOpen(ctx, env, j, opts.Rollback)
}

// DescribeStep is the human form of a journal step ("rename A -> B",
// "fsync dirtied directories"), as StepView.Description shows it.
func DescribeStep(s *journal.Step) string { return engine.Describe(s) }

// IsConflict reports whether err is a step conflict (the disk matches no
// state the journal can explain).
func IsConflict(err error) bool { return session.IsConflict(err) }

// RemoveCrashLeftovers removes what writes that died before their intent
// was durable left under dataRoot, if the journal says a holder ended
// without closing it since the last look, and then clears that mark (what
// recover does after finishing the open intents).
func RemoveCrashLeftovers(ctx context.Context, j *journal.Journal, dataRoot string, c host.Common) ([]string, error) {
	fsys := c.Disk()
	return session.RemoveCrashLeftovers(ctx, fsys, j, dataRoot)
}
