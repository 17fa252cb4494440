package doctor

// Running a confirmed repair: open intents finished first, dead locks in an intent of
// their own, then the data repair under swamp's per-model locks and the journal
// session; a failure is rolled back at once (RepairError).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogwriters"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
)

// RepairError is a repair that failed after its intent was journaled.
// It was rolled back (RollbackErr nil) or is left open for `swampj recover`.
type RepairError struct {
	IntentID    uint64
	Err         error
	RollbackErr error
}

// Code is the code of what failed below when that has one, else "repair_failed".
func (e *RepairError) Code() string {
	return swampj.CodeOr(swampj.CauseOf(errors.Join(e.Err, e.RollbackErr)), "repair_failed")
}

// Class is the class of what failed below when that has one, else ClassFailed.
func (e *RepairError) Class() swampj.Class {
	return swampj.ClassOr(swampj.CauseOf(errors.Join(e.Err, e.RollbackErr)), swampj.ClassFailed)
}

func (e *RepairError) Error() string {
	if e.RollbackErr != nil {
		return fmt.Sprintf("the repair failed: %v; rolling it back failed too: %v. Intent %d is still open: recovery finishes it",
			e.Err, e.RollbackErr, e.IntentID)
	}
	return fmt.Sprintf("the repair failed: %v; it was rolled back, nothing changed (intent %d)", e.Err, e.IntentID)
}

func (e *RepairError) Unwrap() []error {
	if e.RollbackErr != nil {
		return []error{e.Err, e.RollbackErr}
	}
	return []error{e.Err}
}

// repairDamagedCatalog rebuilds a catalog SQLite cannot use, after the
// data repair, so its rows describe the repaired disk: the rebuild moves
// the damaged file aside with its sidecars (never deleting them) and
// builds a new catalog, in the repair's session sess (nil: a session of
// its own, when the repair changed no data). It is derived state: a
// rebuild that fails leaves the finding manual with a warning and never
// fails the data's repair; only a crash or a cancel is returned.
func repairDamagedCatalog(ctx context.Context, sess *session.Session, r *repo.Repo, o Options, rep *Report) error {
	crep, err := rebuildCatalog(ctx, sess, r, o)
	if err != nil {
		if fsx.IsCrash(err) || ctx.Err() != nil {
			return err
		}
		o.warn(fmt.Sprintf("the damaged catalog was not rebuilt: %v", err))
		return nil
	}
	rep.catalogRebuilt = true
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.Code != CodeCatalogUnusable || f.Status == StatusRepaired {
			continue
		}
		f.Status = StatusRepaired
		f.Fix = "rebuilt from the data"
		if crep.MovedAside != nil {
			var to []string
			for _, m := range crep.MovedAside.Files {
				to = append(to, m.To)
			}
			f.Fix = "moved aside to " + strings.Join(to, ", ") + " and rebuilt from the data"
		}
		rep.Remaining--
	}
	return nil
}

// rebuildCatalog is a confirmed catalog rebuild in the repair's session
// sess, or, with none, in a session of the rebuild's own.
func rebuildCatalog(ctx context.Context, sess *session.Session, r *repo.Repo, o Options) (*catalogsync.Report, error) {
	if sess != nil {
		return catalogsync.RebuildIn(ctx, sess, r, catalogsync.Options{Common: o.Common})
	}
	return catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: o.Common, Confirm: true})
}

// catalogInSession is a confirmed repair's catalog work, done in the
// repair's session before it closes (the catalog is derived from the data
// the session just repaired): the rebuild of a damaged catalog, then what
// only a rebuild ends (settleCatalog). The run of the un-namespaced root
// beside a namespace leaves it to the configured root's run.
func catalogInSession(ctx context.Context, sess *session.Session, r *repo.Repo, o Options, first *survey, rep *Report) error {
	if o.otherRoot {
		return nil
	}
	if first.catalogDamaged {
		if err := repairDamagedCatalog(ctx, sess, r, o, rep); err != nil {
			return err
		}
	}
	rep.catalogSettled = true
	return settleCatalog(ctx, r, o, rep, o.staleBefore, sess)
}

// finishOpen drives every open intent forward under its own locks
// (recovery's path), before a confirmed repair plans anything.
func finishOpen(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options) error {
	sess, err := openRepairSession(r, o)
	if err != nil {
		return err
	}
	env := &engine.Env{FS: fsys, Catalog: protocol.RepoCatalog(fsys, r.Dir), Log: o.Logger}
	outs, rerr := sess.FinishOpen(ctx, env)
	env.CloseCatalog()
	for _, out := range outs {
		o.warn(out.Sentence() + ", before the repair")
	}
	if sess.Crashed() {
		_ = sess.Close() // abandons
		return rerr
	}
	if cerr := sess.Close(); rerr == nil && cerr != nil {
		o.warn(fmt.Sprintf("closing the journal: %v (the next recovery marks the intents done)", cerr))
	}
	if rerr != nil {
		return fmt.Errorf("an interrupted operation could not be finished, so nothing was repaired: %w", rerr)
	}
	return nil
}

// openRepairSession opens the journal for a confirmed repair: swampj's
// repo lock, held to the end of the run.
func openRepairSession(r *repo.Repo, o Options) (*session.Session, error) {
	return session.Open(o.Common, r.JournalPath)
}

// closeRepairSession closes a repair's session, committing its done mark.
// Losing the mark costs only a re-observation at the next recovery, so it
// is a warning, unless the process model died right there: that crash is
// returned.
func closeRepairSession(sess *session.Session, o Options, what string) error {
	if err := sess.Close(); fsx.IsCrash(err) {
		return err
	} else if err != nil {
		o.warn(fmt.Sprintf("closing the journal: %v (the next recovery marks %s done)", err, what))
	}
	return nil
}

// runRepairIntent journals in and runs it; a failure is rolled back here
// and now, and returned as a *RepairError that says whether the rollback
// got everything back. A crash (of the run or of its rollback) is returned
// as it is.
func runRepairIntent(ctx context.Context, sess *session.Session, env *engine.Env, in *journal.Intent, what string) error {
	_, err := sess.Execute(ctx, env, in, nil)
	switch {
	case err == nil:
		return nil
	case sess.Crashed():
		return err
	case in.ID == 0: // not journaled: nothing was touched
		return fmt.Errorf("recording %s in the journal: %w", what, err)
	}
	if cause := context.Cause(ctx); cause != nil && errors.Is(err, context.Canceled) && !errors.Is(cause, context.Canceled) {
		err = cause // a lost model lock, not the user's interrupt
	}
	re := &RepairError{IntentID: in.ID, Err: err}
	_, rerr := engine.Drive(context.WithoutCancel(ctx), env, sess.Journal(), in, journal.Backward, nil)
	if rerr = sess.Note(rerr); sess.Crashed() {
		return rerr
	}
	re.RollbackErr = rerr
	return re
}

// repairRun runs a confirmed repair: dead lock files first, in an
// intent of their own under the journal lock only (locks.go), so that
// the models they wedged can be locked; then the data repair.
func repairRun(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, first *survey) (*Report, error) {
	var fixed []unitFix
	var lockMoves []Move
	var lockIntent uint64
	needLocks := false
	for _, u := range first.units {
		if u.blocked == "" && len(u.lockMoves) > 0 {
			needLocks = true
		}
		if u.holderFix {
			fixed = append(fixed, u.findings...) // replaced by any journal.Open below
		}
	}
	if needLocks {
		f, m, id, q, err := lockRepair(ctx, fsys, r, o)
		if err != nil {
			var oe *report.OpenIntentsError
			if errors.As(err, &oe) {
				return first.report("repair", nil, func(*unit) Status { return StatusSkipped }), err
			}
			return nil, err
		}
		fixed, lockMoves, lockIntent = append(f, fixed...), m, id
		if id != 0 {
			o.quarantine = q // one quarantine directory for the whole run
		}
	}
	rep, err := repairData(ctx, fsys, r, o, first)
	if rep == nil {
		return rep, err
	}
	var fs []Finding
	for _, f := range fixed {
		f.Status = StatusRepaired
		fs = append(fs, f.Finding)
	}
	rep.Findings = append(fs, rep.Findings...)
	rep.Moves = append(lockMoves, rep.Moves...)
	if len(lockMoves) > 0 {
		rep.Quarantine = o.quarantine
	}
	rep.LockIntentID = lockIntent
	return rep, err
}

// repairData runs the data repair: per-model locks first (the order
// swampj's writers use), then the journal, a fresh survey under both, one
// intent (repairLocked). Then, swamp's model locks let go — the catalog is
// no model's — the catalog work is done in the same journal session
// (catalogInSession).
func repairData(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, first *survey) (rep *Report, err error) {
	locks, lockedCtx, err := lockModels(ctx, fsys, o, first)
	if err != nil {
		return nil, err
	}
	defer locks.release(o)
	// The journal (swampj's repo lock), held to the end.
	sess, err := openRepairSession(r, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := closeRepairSession(sess, o, "the repair"); cerr != nil {
			rep, err = nil, cerr
		}
	}()
	if rep, err = repairLocked(lockedCtx, fsys, sess, r, o, first, locks); err != nil {
		return rep, err
	}
	locks.release(o)
	if err := catalogInSession(ctx, sess, r, o, first, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// modelLocks are the swamp model locks a data repair holds, and the ones
// it found busy.
type modelLocks struct {
	held  map[string]*lock.Lock
	busy  map[string]string
	order []*lock.Lock
	stop  func() // stops watching for a lost lock
}

// lockModels takes swamp's per-model locks of every model the first
// survey would change, in path order; busy ones are skipped. The context
// returned is cancelled when a held lock is lost.
func lockModels(ctx context.Context, fsys fsx.FS, o Options, first *survey) (*modelLocks, context.Context, error) {
	m := &modelLocks{held: map[string]*lock.Lock{}, busy: map[string]string{}, stop: func() {}}
	// A lock an ancestor swamp process holds (either version's variables,
	// swamp-format §13.5: a doctor run as a swamp shell step of that model) is
	// borrowed, as swamp's own child would work under it.
	anc := lock.AncestryFromEnv(nil)
	for _, p := range first.lockPaths() {
		l, err := lock.AcquireOrBorrow(ctx, fsys, p, anc, lock.Options{Timeout: o.SwampLockTimeout})
		if err != nil {
			if ctx.Err() != nil || fsx.IsCrash(err) {
				m.release(o)
				return nil, nil, err
			}
			m.busy[p] = err.Error()
			continue
		}
		l.StartHeartbeat(ctx)
		m.held[p] = l
		m.order = append(m.order, l)
	}
	lockedCtx, stop := lock.WatchLost(ctx, m.order)
	m.stop = stop
	return m, lockedCtx, nil
}

// release stops the watch and releases the locks, the last taken first; a
// second call does nothing.
func (m *modelLocks) release(o Options) {
	m.stop()
	m.stop = func() {}
	for i := len(m.order) - 1; i >= 0; i-- {
		if err := m.order[i].Release(); err != nil && !fsx.IsCrash(err) {
			o.warn(fmt.Sprintf("releasing %s: %v", m.order[i].Path(), err))
		}
	}
	m.order = nil
}

// repairLocked is the data repair under the model locks and the journal:
// nothing may be open; it plans from what the disk says now and journals
// and runs one intent, a failure rolled back here and now.
func repairLocked(ctx context.Context, fsys fsx.FS, sess *session.Session, r *repo.Repo, o Options, first *survey, locks *modelLocks) (*Report, error) {
	open, err := sess.Journal().OpenIntents()
	if err != nil {
		return nil, err
	}
	if len(open) > 0 {
		return first.refused(open)
	}
	s, err := surveyDoctor(ctx, fsys, r, o, nil)
	if err != nil {
		return nil, sess.Note(err)
	}
	allowed := func(u *unit) bool { return u.lockPath == "" || locks.held[u.lockPath] != nil }
	in, err := s.plan(allowed, o.Command)
	if err != nil {
		return nil, sess.Note(err)
	}
	status := func(u *unit) Status {
		if allowed(u) && !u.lockOnly() {
			return StatusRepaired
		}
		return StatusSkipped
	}
	if in == nil {
		return s.reportRepair(nil, status, locks.busy), nil
	}
	env := &engine.Env{FS: fsys, Catalog: protocol.RepoCatalog(fsys, r.Dir), Log: o.Logger}
	defer env.CloseCatalog()
	if err := runRepairIntent(ctx, sess, env, in, "the repair"); err != nil {
		return nil, err
	}
	// A shared datastore's other checkouts learn of the change through
	// swampj's writer token (swamp-format §13.7), rewritten once the repair is durable.
	if _, terr := catalogwriters.Record(fsys, r); terr != nil {
		o.warn(fmt.Sprintf("the repair is done, but other checkouts sharing the datastore may not see it until their catalog is rebuilt: %v", terr))
	}
	rep := s.reportRepair(in, status, locks.busy)
	rep.IntentID = in.ID
	return rep, nil
}
