package recover

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/wrapped"
)

// Options for Run.
type Options struct {
	// Common is the file system, the lock timeouts, the recorded command
	// and the logger. SwampLockTimeout bounds the wait for swamp's
	// per-model lock of an interrupted write or repair, which is finished
	// only under it (0: SWAMP_LOCK_TIMEOUT_MS, else 60 s); a timeout is an
	// error matching lock.ErrTimeout, and the intent stays open. The Logger
	// receives warnings (a damaged journal moved aside) at level Warn, and
	// the executor's step records at level Debug.
	host.Common
	// Rollback undoes open intents instead of finishing them.
	Rollback bool
	// DryRun reports what each open intent's steps observe, changing nothing.
	DryRun bool
	// Progress, if set, receives "recovering": steps of the intent being
	// finished or undone.
	Progress report.Progress
}

// Report is what Run found and did.
type Report struct {
	Repo          string `json:"repo"`
	Journal       string `json:"journal"`
	JournalExists bool   `json:"journalExists"`
	DryRun        bool   `json:"dryRun"`
	Rollback      bool   `json:"rollback"`
	// ReadOnly: the journal was only read — a dry run, or media that
	// cannot be written holding no open intent (nothing to do).
	ReadOnly   bool                   `json:"readOnly"`
	Intents    []report.IntentOutcome `json:"intents"`
	Finished   int                    `json:"finished"`
	RolledBack int                    `json:"rolledBack"`
	// RemovedStages are the staging directories and temp files removed
	// because a write died before its intent was journaled (they never
	// held anything acknowledged).
	RemovedStages []string `json:"removedStages,omitempty"`
	// WrappedRuns are the wrapped commands (`swampj run`) that died
	// without their final barrier, settled after the intents: what each
	// one's change log named was doctored and repaired (package
	// ops/wrapped).
	WrappedRuns []wrapped.Settled `json:"wrappedRuns,omitempty"`
	// WrappedRunsPending (a dry run): wrapped runs whose wrapper died,
	// which the real run would settle.
	WrappedRunsPending int `json:"wrappedRunsPending,omitempty"`
	// JournalSetAside is where a damaged journal was moved (nothing is
	// deleted), and JournalDamage why it could not be read; "" when the
	// journal was readable. The interrupted operations it may have held
	// are unknown: swampj plans from the disk, so running an interrupted
	// command again finishes it.
	JournalSetAside string `json:"journalSetAside,omitempty"`
	JournalDamage   string `json:"journalDamage,omitempty"`
}

// JournalPath is where a repo's journal lives: repo-local, outside every
// namespaced subdirectory, so no migration ever moves it.
func JournalPath(repoDir string) string { return repo.JournalPathOf(repoDir) }

// Error classes a startup hook branches on (errors.Is).
var (
	// ErrNotARepo: the directory given is not inside any swamp repo (no
	// .swamp.yaml at or above it). It is repo.ErrNotARepo.
	ErrNotARepo = repo.ErrNotARepo
	// ErrBusy: another process holds the journal lock or a swamp lock the
	// recovery needs past its timeout; the intent stays open, nothing was
	// changed. Retry later (the CLI exits 75). It is swampj.ErrBusy.
	ErrBusy = swampj.ErrBusy
)

// Run recovers the swamp repo that holds dir: dir itself or its nearest
// ancestor holding .swamp.yaml (repo.Find), so a hook started anywhere
// inside the repo recovers the whole repo. Report.Repo is that root.
//
// A dir outside every repo is an error matching ErrNotARepo, never a silent
// success. Finding the root costs two stats per directory climbed; nothing
// is created.
//
// A repo whose .swamp.yaml is lost but whose journal is there
// (*repo.ConfigLostError) is still recovered: an interrupted intent that
// was rewriting the file puts it back. If the file is still missing
// afterwards, Run returns the *repo.ConfigLostError, saying why.
func Run(ctx context.Context, dir string, opts Options) (*Report, error) {
	fsys := fsx.OrReal(opts.FS)
	repoDir, err := repo.Find(fsys, dir)
	var lost *repo.ConfigLostError
	if errors.As(err, &lost) {
		repoDir, err = lost.Dir, nil
	}
	if err != nil {
		return &Report{Repo: dir, DryRun: opts.DryRun, Rollback: opts.Rollback, Intents: []report.IntentOutcome{}}, err
	}
	rep, err := runAt(ctx, fsys, repoDir, opts)
	if lost != nil {
		if back, serr := fsx.Exists(fsys, filepath.Join(repoDir, repo.ConfigFileName)); serr != nil || !back {
			lost.Cause, lost.Recovered = err, err == nil && !opts.DryRun
			return rep, lost
		}
	}
	return rep, err
}

func runAt(ctx context.Context, fsys fsx.FS, repoDir string, opts Options) (*Report, error) {
	rep, err := recoverIntents(ctx, fsys, repoDir, opts)
	if err == nil && opts.DryRun {
		rep.WrappedRunsPending = wrapped.CountPending(fsys, rep.Journal)
	}
	if err != nil || opts.DryRun || opts.Rollback {
		return rep, err
	}
	// A wrapped run that died is settled once the journal's intents are:
	// its repair is a journaled intent of its own.
	if wrapped.Pending(fsys, rep.Journal) {
		r, lerr := repo.Load(fsys, repoDir, os.Getenv)
		if lerr != nil {
			return rep, nil // a remote datastore: swampj run's cache doctor settles it
		}
		rep.WrappedRuns, err = wrapped.Settle(ctx, r, wrapped.SettleOptions{Common: host.Common{JournalLockTimeout: opts.JournalLockTimeout, SwampLockTimeout: opts.SwampLockTimeout, Command: opts.Command, Logger: opts.Logger, FS: fsys}})
	}
	return rep, err
}

func recoverIntents(ctx context.Context, fsys fsx.FS, repoDir string, opts Options) (*Report, error) {
	rep := &Report{Repo: repoDir, Journal: JournalPath(repoDir), DryRun: opts.DryRun, Rollback: opts.Rollback, Intents: []report.IntentOutcome{}}
	// The format marker before the journal (swamp-format §13.1): a host's startup hook
	// must not recover into a layout swampj does not know. A dry run only
	// reads.
	if err := checkFormat(fsys, repoDir, opts); err != nil {
		return rep, err
	}
	exists, err := journal.Exists(fsys, rep.Journal)
	if err != nil {
		return rep, err
	}
	rep.JournalExists = exists
	if !opts.DryRun {
		// A catalog creation that crashed before its link leaves a temp
		// file that never held a row; the catalog never blocks recovery,
		// so one that cannot be removed is only a warning.
		if err := catalog.CleanCreationLeftovers(fsys, repo.CatalogPathOf(repoDir)); fsx.IsCrash(err) || ctx.Err() != nil {
			return rep, err
		} else if err != nil && opts.Logger != nil {
			opts.Logger.Warn(fmt.Sprintf("left an unfinished catalog creation beside %s in place: %v", repo.CatalogPathOf(repoDir), err))
		}
	}
	if !exists {
		// A creation that crashed before its rename leaves only a temp file.
		err := journal.CleanCreationLeftovers(fsys, rep.Journal)
		if journal.IsMediaErr(err) {
			// It never held an intent: on media that cannot be written
			// there is still nothing to do.
			if opts.Logger != nil {
				opts.Logger.Warn(fmt.Sprintf("left a journal creation leftover beside %s in place: %v", rep.Journal, err))
			}
			return rep, nil
		}
		return rep, err
	}
	ro := ops.RecoverOptions{Common: opts.Common, Repo: repoDir, Rollback: opts.Rollback}
	ro.FS = fsys
	if opts.DryRun {
		return dryRun(ctx, ro, rep)
	}
	if idle(fsys, rep.Journal, ro) {
		return rep, nil
	}
	ro.Progress = opts.Progress
	rec, err := ops.Recover(ctx, ro)
	if rec.Intents != nil {
		rep.Intents = rec.Intents
	}
	rep.RemovedStages = append(rep.RemovedStages, rec.RemovedStages...)
	for _, o := range rec.Intents {
		switch o.Status {
		case journal.StatusDone:
			rep.Finished++
		case journal.StatusRolledBack:
			rep.RolledBack++
		}
	}
	var failed *ops.RecoveryError
	if !errors.As(err, &failed) {
		return rep, err
	}
	switch failed.Phase {
	case ops.PhaseOpen:
		return rep, notOpened(ro, failed.Err, rep)
	case ops.PhaseLeftovers:
		if !fsx.IsCrash(failed.Err) {
			return rep, &LeftoversError{Recovered: rep.Finished + rep.RolledBack, Err: failed.Err}
		}
	case ops.PhaseClose:
		return rep, marksLost(rep, failed.Err)
	}
	return rep, failed.Err
}

// notOpened is a journal that could not be opened for writing: on
// read-only media recover only reads it (readOnlyRecover), a damaged one
// set aside is what recovery can do about it, and anything else is
// openFailed.
func notOpened(ro ops.RecoverOptions, err error, rep *Report) error {
	var media *journal.MediaError
	if errors.As(err, &media) {
		return readOnlyRecover(ro, media, rep)
	}
	var damaged *journal.CorruptError
	if errors.As(err, &damaged) && damaged.MovedTo != "" {
		// Setting a damaged journal aside is what recovery can do about
		// it, and it is done: the next command starts a fresh journal.
		rep.JournalSetAside, rep.JournalDamage = damaged.MovedTo, damaged.Reason
		return nil
	}
	return openFailed(ro, rep.Journal, err)
}

// idle reports, from a read-only look, that there is nothing to recover:
// no open intent, no crash left to look after (the journal's unclean-end
// mark, or a holder record left by a holder that died with the journal's
// turn), no creation leftover it could not remove, and a journal that is
// not an empty file. Then Run returns without taking the repo alone, so a start-up hook
// never waits for the data writers running beside it (journal/hold.go).
// Anything else — an open intent, a lock timeout, a damaged journal — is
// left to the ordinary path, which reports it.
func idle(fsys fsx.FS, path string, ro ops.RecoverOptions) bool {
	if _, err := fsys.Lstat(journal.HolderPath(path)); err == nil {
		return false
	}
	// An empty journal file (an interrupted creation) is set aside and
	// made again by journal.Open: that is recovery's to do.
	if fi, err := fsys.Lstat(path); err != nil || fi.Size() == 0 {
		return false
	}
	p, err := ops.InspectRecovery(ro)
	if err != nil || len(p.Intents) > 0 || p.CrashLeftovers {
		return false
	}
	// What journal.Open would clean once it held the lock: a creation's
	// temp file whose creator is gone (a rename that left both names).
	// Safe without the lock (a live creator's is spared), as on the path
	// with no journal.
	return journal.CleanCreationLeftovers(fsys, path) == nil
}

// marksLost is a journal Close that failed after every open intent was
// recovered: the done (or rolled-back) marks are committed at Close, so
// the intents stay open in the journal although every step is done. The
// report is corrected to say so.
func marksLost(rep *Report, err error) error {
	e := &MarksLostError{Journal: rep.Journal, Err: err}
	for i := range rep.Intents {
		o := &rep.Intents[i]
		switch o.Status {
		case journal.StatusDone:
			rep.Finished--
		case journal.StatusRolledBack:
			rep.RolledBack--
		default:
			continue
		}
		e.IDs = append(e.IDs, o.ID)
		o.Status = journal.StatusOpen
		o.Error = fmt.Sprintf("every step is done on disk, but the journal could not record it: %v", err)
	}
	return e
}

// dryRun observes every open intent with the journal and the catalog opened
// read-only: it writes nothing, so it works on read-only media too.
func dryRun(ctx context.Context, ro ops.RecoverOptions, rep *Report) (*Report, error) {
	rep.ReadOnly = true
	var err error
	rep.Intents, err = ops.PreviewRecovery(ctx, ro)
	if rep.Intents == nil {
		rep.Intents = []report.IntentOutcome{}
	}
	if err == nil {
		for _, in := range rep.Intents {
			if in.Blocked != nil {
				return rep, &BlockedError{Intent: in.ID, Direction: in.Direction, Step: *in.Blocked}
			}
		}
	}
	return rep, err
}

// BlockedError is a dry run's answer when recovery of an open intent
// would stop at a step the disk contradicts (someone changed the paths by
// hand): the run would change nothing more and leave the intent open.
// It matches swampj.ErrConflict.
type BlockedError struct {
	Intent    uint64
	Direction journal.Direction
	Step      report.StepView
}

func (e *BlockedError) Error() string {
	dir := "finish"
	if e.Direction == journal.Backward {
		dir = "roll back"
	}
	return fmt.Sprintf("recovery cannot %s intent %d as the disk is: step %d (%s) conflicts: the disk matches neither the state before nor after it: %s. "+
		"A recovery would stop there and change nothing more; nothing was changed now. Inspect these paths and put them right, then finish the intent or roll it back",
		dir, e.Intent, e.Step.Index, e.Step.Description, e.Step.Detail)
}

func (e *BlockedError) Is(target error) bool { return target == swampj.ErrConflict }

// Code is swampj.ErrConflict's.
func (e *BlockedError) Code() string        { return swampj.ErrConflict.(swampj.Coded).Code() }
func (e *BlockedError) Class() swampj.Class { return swampj.ClassFailed }

// readOnlyRecover is recover on a journal that cannot be opened for writing
// (read-only media, no write permission): with no open intent there is
// nothing to do — the startup-hook case — and with one it is an error that
// names the intents. Nothing is changed either way.
func readOnlyRecover(ro ops.RecoverOptions, media *journal.MediaError, rep *Report) error {
	p, err := ops.InspectRecovery(ro)
	var failed *ops.RecoveryError
	if !errors.As(err, &failed) {
		failed = &ops.RecoveryError{Phase: ops.PhaseRead, Err: err}
	}
	if err != nil && failed.Phase == ops.PhaseOpen {
		err = failed.Err
		var ce *journal.CorruptError
		var unreadable *journal.MediaError
		switch {
		case errors.As(err, &ce):
			return fmt.Errorf("%w; it cannot be moved aside here: %w", err, media)
		case errors.As(err, &unreadable) && unreadable.Reading():
			// This user may not even read it: that says all (and no
			// inspection can help).
			return unreadable
		}
		return fmt.Errorf("%w (and reading it read-only failed: %v)", media, err)
	}
	if err != nil {
		return failed.Err // the listing failed
	}
	rep.ReadOnly = true
	if len(p.Intents) == 0 {
		return nil
	}
	return &PendingError{Intents: p.Intents, Media: media}
}

// PendingError is returned by Run when the journal holds interrupted
// operations but cannot be written (read-only media, no permission): nothing
// was recovered or changed. errors.As to *journal.MediaError sees the cause.
type PendingError struct {
	Intents []*journal.Intent
	Media   *journal.MediaError
}

func (e *PendingError) Unwrap() error { return e.Media }

// Code is the stable code of the cause (read_only_media, permission_denied).
func (e *PendingError) Code() string { return e.Media.Code() }

func (e *PendingError) Class() swampj.Class { return swampj.ClassFailed }

func (e *PendingError) Error() string {
	ids := make([]string, len(e.Intents))
	for i, in := range e.Intents {
		ids[i] = fmt.Sprintf("%d (%s)", in.ID, in.Summary)
	}
	why := "the file system is read-only (EROFS)"
	fix := "Recover where the repo can be written (remount it read-write)"
	if !e.Media.ReadOnly() {
		why = fmt.Sprintf("this process may not write it (%v)", e.Media.Err)
		fix = "Recover as a user who may write the repo's .swamp directory"
	}
	return fmt.Sprintf("the journal %s holds %d interrupted operation(s) — intent %s — but %s: nothing was recovered or changed, "+
		"and nothing is damaged. %s; a dry run shows what it would do", e.Media.Path, len(e.Intents), strings.Join(ids, ", "), why, fix)
}

// openFailed says what an error opening the journal for writing means for
// recovery: nothing was recovered or changed, and which interrupted
// operations (read with the journal opened read-only) stay as they are.
// Errors that already say so — another holder (busy), a damaged journal
// moved aside, a journal that is not a file — are returned as they are.
func openFailed(ro ops.RecoverOptions, path string, err error) error {
	var ce *journal.CorruptError
	var nf *journal.NotAFileError
	if errors.Is(err, ErrBusy) || errors.As(err, &ce) || errors.As(err, &nf) || fsx.IsCrash(err) {
		return err
	}
	e := &OpenError{Path: path, Err: err}
	if p, rerr := ops.InspectRecovery(ro); rerr == nil {
		e.Intents, e.Read = p.Intents, true
	}
	return e
}

// OpenError is returned by Run when the journal could not be opened for
// writing for a reason other than the media (read-only, no permission:
// *PendingError) or another holder (ErrBusy): an I/O error, a full disk.
// Nothing was recovered or changed. Intents lists the interrupted
// operations that stay open, when the journal could still be read (Read).
type OpenError struct {
	Path    string
	Read    bool
	Intents []*journal.Intent
	Err     error
}

func (e *OpenError) Unwrap() error { return e.Err }

func (e *OpenError) Error() string {
	what := "what it holds could not be read either"
	if e.Read {
		what = "it holds no interrupted operation"
	}
	if len(e.Intents) > 0 {
		ids := make([]string, len(e.Intents))
		for i, in := range e.Intents {
			ids[i] = fmt.Sprintf("%d (%s)", in.ID, in.Summary)
		}
		what = fmt.Sprintf("its %d interrupted operation(s) — intent %s — stay open as they were", len(e.Intents), strings.Join(ids, ", "))
	}
	return fmt.Sprintf("could not open the journal %s to recover: %v. Nothing was recovered or changed; %s. Recover again once that is fixed",
		e.Path, e.Err, what)
}

// LeftoversError is returned by Run when every open intent was recovered
// (Report.Intents says how), but looking for what a crashed write left
// outside the journal — or recording that it was looked for — failed.
// Nothing is lost: the journal still says a crash happened, and the next
// recovery (or write) looks again.
type LeftoversError struct {
	Recovered int
	Err       error
}

func (e *LeftoversError) Unwrap() error { return e.Err }

func (e *LeftoversError) Error() string {
	return fmt.Sprintf("recovered %d interrupted operation(s), but looking for the staging directories a crashed write may have left failed: %v. "+
		"Nothing is lost (they never held anything acknowledged): the next recovery looks again", e.Recovered, e.Err)
}

// MarksLostError is returned by Run when every open intent was finished or
// rolled back on disk but the journal could not record it (its marks are
// committed when the journal is closed): those intents (IDs) stay open in
// the journal, and Report.Intents says so. Nothing is lost or half-done:
// the next recovery observes every step done and only marks them.
type MarksLostError struct {
	Journal string
	IDs     []uint64
	Err     error
}

func (e *MarksLostError) Unwrap() error { return e.Err }

func (e *MarksLostError) Error() string {
	if len(e.IDs) == 0 {
		return fmt.Sprintf("closing the journal %s: %v", e.Journal, e.Err)
	}
	ids := make([]string, len(e.IDs))
	for i, id := range e.IDs {
		ids[i] = fmt.Sprint(id)
	}
	return fmt.Sprintf("recovered intent %s on disk — every step is done — but the journal %s could not record it: %v. "+
		"It stays open in the journal; the next recovery observes every step done and only marks it (nothing is redone): recover again once that is fixed",
		strings.Join(ids, ", "), e.Journal, e.Err)
}

// checkFormat is repo.RefuseUnknownFormat for a repo whose configuration
// may be lost (repo.CheckRepoFormat's base).
func checkFormat(fsys fsx.FS, repoDir string, opts Options) error {
	_, err := repo.CheckRepoFormat(fsys, repoDir, nil)
	var unreadable *repo.FormatMarkerUnreadableError
	if opts.DryRun && errors.As(err, &unreadable) {
		if opts.Logger != nil {
			opts.Logger.Warn(unreadable.Warning())
		}
		return nil
	}
	return err
}
