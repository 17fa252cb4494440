package ops

import (
	"context"
	"fmt"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/repo"
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

// Recovery is what Recover did.
type Recovery struct {
	// Intents are the outcomes of the open intents, in id order, up to
	// the one recovery stopped at.
	Intents []report.IntentOutcome
	// RemovedStages are the staging directories and temp files removed
	// because a write died before its intent was journaled.
	RemovedStages []string
}

// RecoveryError is a failure of Recover, PreviewRecovery or
// InspectRecovery, with the phase it happened in: what is true on disk
// depends on it (see the phases). It is transparent: errors.Is and
// errors.As see Err.
type RecoveryError struct {
	Phase RecoveryPhase
	Err   error
}

func (e *RecoveryError) Error() string { return e.Err.Error() }
func (e *RecoveryError) Unwrap() error { return e.Err }

// RecoveryPhase is where a recovery failed.
type RecoveryPhase string

// The phases of a recovery.
const (
	// PhaseOpen: the journal could not be opened (a lock held past the
	// timeout, a damaged or unwritable file). Nothing was recovered.
	PhaseOpen RecoveryPhase = "open"
	// PhaseRead: the journal was opened but its open intents could not be
	// listed. Nothing was recovered.
	PhaseRead RecoveryPhase = "read"
	// PhaseRecover: an open intent could not be finished or undone; it
	// stays open, and Recovery.Intents says how far recovery got.
	PhaseRecover RecoveryPhase = "recover"
	// PhaseLeftovers: every open intent was recovered, but looking for
	// what a crashed write left (or recording that it was looked for)
	// failed; the journal still says a crash happened.
	PhaseLeftovers RecoveryPhase = "leftovers"
	// PhaseClose: every step is done on disk, but closing the journal,
	// which commits the done marks, failed: those intents stay open in the
	// journal.
	PhaseClose RecoveryPhase = "close"
)

// Recover recovers the repo at opts.Repo in one journal session: it opens
// the repo's journal (creating it if need be) and holds its exclusive lock
// throughout; finishes (or, with Rollback, undoes) every open intent in id
// order, stopping at the first that cannot be completed — later intents
// may depend on it; then, if the journal says a holder ended without
// closing it since the last look, removes what writes that died before
// their intent was durable left; and closes the journal, which commits the
// done marks. A simulated crash (fsx.IsCrash) abandons the journal instead.
// The Recovery is returned with every error, which is a *RecoveryError
// naming the phase. recover.Run is the usual way in: it finds the repo and
// decides what recovery may do there first.
func Recover(ctx context.Context, opts RecoverOptions) (*Recovery, error) {
	rec := &Recovery{}
	sess, err := session.Open(opts.Common, repo.JournalPathOf(opts.Repo))
	if err != nil {
		return rec, &RecoveryError{Phase: PhaseOpen, Err: err}
	}
	fsys := opts.Disk()
	env := &engine.Env{FS: fsys, Catalog: protocol.RepoCatalog(fsys, opts.Repo), SwampLockTimeout: opts.SwampLockTimeout,
		Progress: opts.Progress.Steps("recovering"), IntentProgress: recoveryProgress(opts.Progress), Log: opts.Logger}
	rec.Intents, err = session.RecoverOpen(ctx, env, sess.Journal(), opts.Rollback)
	env.CloseCatalog()
	if err != nil {
		return rec, closeAfter(sess, PhaseRecover, err)
	}
	if sess.Journal().CrashLeftoversUnchecked() {
		if err := removeLeftovers(ctx, sess, opts, rec); err != nil {
			return rec, closeAfter(sess, PhaseLeftovers, err)
		}
	}
	if err := sess.Close(); err != nil {
		return rec, &RecoveryError{Phase: PhaseClose, Err: err}
	}
	return rec, nil
}

// closeAfter ends a session whose recovery failed in phase: abandoned
// after a simulated crash, else closed (its own failure is not reported:
// err is what matters).
func closeAfter(sess *session.Session, phase RecoveryPhase, err error) error {
	sess.Note(err)
	_ = sess.Close()
	return &RecoveryError{Phase: phase, Err: err}
}

// removeLeftovers is Recover's sweep of what crashed writes staged. A repo
// whose configuration cannot be loaded is not swept (a warning): the
// doctor finds them.
func removeLeftovers(ctx context.Context, sess *session.Session, opts RecoverOptions, rec *Recovery) error {
	r, err := repo.Load(opts.Disk(), opts.Repo, nil)
	if err != nil {
		session.WarnTo(opts.Logger)(fmt.Sprintf("could not look for staging directories left by a crashed write (%v); the doctor finds them", err))
		return nil
	}
	removed, err := sess.SweepLeftovers(ctx, opts.Disk(), r.DataRoot)
	rec.RemovedStages = append(rec.RemovedStages, removed...)
	return err
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

// PreviewRecovery observes every step of every open intent of the repo at
// opts.Repo without changing anything (the journal and the catalog are
// opened read-only): what Recover would do. It works on read-only media.
// The journal must exist; an error opening it is returned as it is.
func PreviewRecovery(ctx context.Context, opts RecoverOptions) ([]report.IntentOutcome, error) {
	j, err := session.OpenReadOnly(opts.Common, repo.JournalPathOf(opts.Repo))
	if err != nil {
		return nil, err
	}
	defer j.Close()
	fsys := opts.Disk()
	env := &engine.Env{FS: fsys, Catalog: protocol.ReportCatalog(fsys, opts.Repo), SwampLockTimeout: opts.SwampLockTimeout, Log: opts.Logger}
	defer env.CloseCatalog()
	return session.PreviewOpen(ctx, env, j, opts.Rollback)
}

// Pending is what a read-only look at a repo's journal finds left to
// recover.
type Pending struct {
	// Intents are the open intents.
	Intents []*journal.Intent
	// CrashLeftovers: a holder ended without closing the journal since
	// the last look, so a recovery looks for what crashed writes left.
	CrashLeftovers bool
}

// InspectRecovery opens the existing journal of the repo at opts.Repo
// read-only, writing nothing (it works on read-only media), and says what
// is left to recover. A failure is a *RecoveryError: PhaseOpen (the
// journal's own error, a *journal.CorruptError or *journal.MediaError
// among them) or PhaseRead.
func InspectRecovery(opts RecoverOptions) (*Pending, error) {
	j, err := session.OpenReadOnly(opts.Common, repo.JournalPathOf(opts.Repo))
	if err != nil {
		return nil, &RecoveryError{Phase: PhaseOpen, Err: err}
	}
	defer j.Close()
	open, err := j.OpenIntents()
	if err != nil {
		return nil, &RecoveryError{Phase: PhaseRead, Err: err}
	}
	return &Pending{Intents: open, CrashLeftovers: j.CrashLeftoversUnchecked()}, nil
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
