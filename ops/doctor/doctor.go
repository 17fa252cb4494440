package doctor

// The doctor: find what an unclean shutdown left behind (issue #3955) and
// take it out of service without deleting a byte.
//
// Detection (Doctor without Repair) walks the repo's data root with
// store.Walk and store.ScanItem, reads the catalog read-only and the journal
// (only if it exists), and changes nothing. Every finding has a stable code
// (Code) and says what --repair --confirm would do about it.
//
// The repair, one journaled intent per run, follows the manual recovery of
// #3955 step by step:
//
//	mkdir …            the quarantine directories that do not exist yet,
//	                   {base}/.swampj-quarantine/{UTC stamp}/{ns or _solo}/…
//	barrier            make them durable
//	rename …           every unreadable version directory into quarantine
//	                   (never replacing, never deleting), leftover staging
//	                   directories, catalog copies left by older swamp (#3316),
//	                   and `latest` when no readable version remains
//	write …            a copy of each `latest` about to be rewritten, into
//	                   quarantine beside the versions it pointed at
//	barrier            fsync every directory the renames touched
//	write latest = N   N is the last readable version (store's LastGood)
//	repair-catalog     rows of quarantined versions removed; is_latest (and
//	                   is_step_latest where the column exists) set per the
//	                   readable versions that remain
//
// The quarantine is outside the data root, so swamp's walk (which descends
// dot-directories under the data root, §2.7.3) never sees the moved
// metadata.yaml files. Its layout mirrors the data root, so a person can put
// a version back by hand.
//
// Guarantees:
//
//   - Nothing is deleted. Versions, staging directories and catalog copies
//     are renamed; a rewritten `latest` keeps its old bytes in quarantine
//     (and in the journal); removed catalog rows are in the journal.
//   - Each changed item is changed under swamp's per-model lock (§8). An item
//     whose lock is busy is skipped and reported (StatusSkipped), never
//     changed under a live writer. Under the lock an incomplete version is a
//     crash remnant, not a write in progress.
//   - The plan is made after the locks and the journal lock are held, from a
//     fresh walk. A crash at any point is finished or rolled back by `swampj
//     recover`; a failure in this process is rolled back here.
//   - A version whose files cannot be read (permission, I/O error) proves
//     nothing about its bytes: its item is reported and left alone. So is an
//     item whose `latest` is a legacy symlink or not a regular file.
//
// Not guaranteed: swamp writers that ignore the per-model lock; swamp's
// catalog rows for items it never indexed (use `swampj catalog rebuild`).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// IntentKindRepair is the journal kind of a doctor repair.
const IntentKindRepair = "repair"

// Code names a kind of finding. Codes are stable: scripts read them.
type Code string

const (
	// CodeVersionUnreadable: a version directory swamp cannot read (zero-byte
	// or unparseable metadata.yaml, missing or truncated raw, …).
	CodeVersionUnreadable Code = "version_unreadable"
	// CodeLatestUnreadable: `latest` designates an unreadable version.
	CodeLatestUnreadable Code = "latest_unreadable"
	// CodeLatestNotFound: `latest` designates a version with no directory.
	CodeLatestNotFound Code = "latest_not_found"
	// CodeLatestDamaged: `latest` is missing, empty, unparsable or not a
	// positive number, so swamp falls back or finds nothing.
	CodeLatestDamaged Code = "latest_damaged"
	// CodeCatalogRowUnreadable: a catalog row (repo namespace) whose
	// version is not readable on disk.
	CodeCatalogRowUnreadable Code = "catalog_row_unreadable"
	// CodeCatalogLatestWrong: the catalog's latest flags disagree with the
	// readable latest version.
	CodeCatalogLatestWrong Code = "catalog_latest_wrong"
	// CodeCatalogUnusable: the catalog cannot be read (damaged file).
	CodeCatalogUnusable Code = "catalog_unusable"
	// CodeCatalogCopy: catalog files under {base}/{ns}/data that an older
	// swamp moved with the data (#3316); nothing reads them.
	CodeCatalogCopy Code = "catalog_copy"
	// CodeStagingLeftover: a .swampj-stage-* directory that no open intent
	// owns.
	CodeStagingLeftover Code = "staging_leftover"
	// CodeOpenIntent: an interrupted swampj operation; the disk is
	// mid-change until `swampj recover` runs.
	CodeOpenIntent Code = "open_intent"
	// CodeDirectoryUnreadable: a directory of the data root that cannot be
	// listed, so what is below it was not checked.
	CodeDirectoryUnreadable Code = "directory_unreadable"
	// CodeCatalogStale: a swampj operation finished its data change but
	// could not update the catalog (journal's stale mark); a catalog
	// rebuild makes it agree again.
	CodeCatalogStale Code = "catalog_stale"
)

// Status says what happened (or would happen) to a finding.
type Status string

const (
	// StatusFound: detection only; --repair can fix it.
	StatusFound Status = "found"
	// StatusWouldRepair: --repair preview; --confirm would fix it.
	StatusWouldRepair Status = "would-repair"
	// StatusRepaired: fixed by this run.
	StatusRepaired Status = "repaired"
	// StatusSkipped: fixable, but swamp's per-model lock was busy (or the
	// item appeared during the run); run the doctor again.
	StatusSkipped Status = "skipped"
	// StatusManual: no automatic repair; Fix says what to do.
	StatusManual Status = "manual"
)

// Finding is one problem. Version is 0 when the finding is not about
// one version; Item is "" when it is not about one data item.
type Finding struct {
	Code Code   `json:"code"`
	Path string `json:"path"`
	Item string `json:"item"` // TYPE/MODEL_ID/DATA_NAME
	// ModelName is the item's model as swamp users know it (its
	// definition's name, else the catalog's model_name); "" if unknown.
	ModelName string `json:"modelName,omitempty"`
	Version   int64  `json:"version"`
	Message   string `json:"message"`
	Fix       string `json:"fix"`
	// Remedy is the action Fix describes, when it is one of swampj's own
	// (the CLI appends its command to Fix); "" otherwise.
	Remedy report.Remedy `json:"remedy,omitempty"`
	Status Status        `json:"status"`
	// Reason says why a finding was skipped.
	Reason string `json:"reason,omitempty"`
}

// Move is one rename into quarantine.
type Move struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Options configure Doctor. The zero value only detects.
type Options struct {
	// Repair plans the repair; without Confirm it is a preview that changes
	// nothing.
	Repair bool
	// Confirm (with Repair) executes the plan as one journaled intent.
	Confirm bool
	// LockTimeout bounds each wait: for the journal lock and, per model, for
	// swamp's per-model lock — a model whose lock stays busy is skipped
	// (0: journal.DefaultLockTimeout).
	LockTimeout time.Duration
	// Now is the clock of the quarantine stamp (nil: time.Now).
	Now func() time.Time
	// VerifyChecksum also hashes every raw and compares it with the metadata
	// checksum (reads all data; a zero-filled raw of the right size is only
	// found this way).
	VerifyChecksum bool
	// Command is recorded in the intent and as the journal lock holder.
	Command []string
	// Logger receives warnings (a journal moved aside, a lock not
	// released) at level Warn, and the executor's step records of a
	// repair at level Debug (nil: nothing is logged).
	Logger *slog.Logger
	// Progress, if set, receives "scanning" (or, with VerifyChecksum,
	// "verifying checksums"): items scanned of the items walked so far.
	Progress report.Progress
	// Only, when not nil, limits the check to these data-name directories
	// and run-record files (ChangedItems after a command): the items, their
	// catalog rows and the staging directories inside them, and those
	// records (with their .log). Other items, records, catalog copies and
	// swamp's repo-wide checks are not looked at.
	Only []string

	// quarantine, when set, is the quarantine directory to use (the one
	// the lock intent of the same run created).
	quarantine string
	// warn is Logger's Warn (withDefaults).
	warn func(string)
}

func (o Options) withDefaults() Options {
	if o.LockTimeout <= 0 {
		o.LockTimeout = journal.DefaultLockTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.warn = session.WarnTo(o.Logger)
	return o
}

// Report is what Doctor found and did.
type Report struct {
	Repo      string `json:"repo"`
	DataRoot  string `json:"dataRoot"`
	Namespace string `json:"namespace"`
	Catalog   string `json:"catalog"`
	// Mode is "check", "preview" or "repair".
	Mode     string `json:"mode"`
	Items    int    `json:"items"`    // data items checked
	Versions int    `json:"versions"` // version directories checked
	// ChecksumsVerified: every raw was read and its SHA-256 compared with
	// metadata.yaml (Options.VerifyChecksum). Without it a raw of the
	// right size but the wrong bytes (zeros after a crash) is not found.
	ChecksumsVerified bool `json:"checksumsVerified"`
	// StepLatestColumn: the catalog has is_step_latest (§11).
	StepLatestColumn bool      `json:"stepLatestColumn"`
	Findings         []Finding `json:"findings"`
	// Quarantine is the directory this run moves (moved) things into.
	Quarantine string `json:"quarantine,omitempty"`
	Moves      []Move `json:"moves"`
	IntentID   uint64 `json:"intentId,omitempty"`
	// LockIntentID is the intent that moved dead lock files (0: none).
	LockIntentID uint64   `json:"lockIntentId,omitempty"`
	Warnings     []string `json:"warnings"`
	// Remaining is how many findings are still there after the run (in
	// check and preview mode: all of them).
	Remaining int `json:"remaining"`
	// Notes explain states that are not problems (never counted in
	// Remaining): what swamp's own doctor misreports (swampDoctorNote).
	Notes []string `json:"notes"`
	// SwampChecks are swamp's own doctor datastores checks, computed right
	// (check, passed, message as swamp prints them; swampDiffers where
	// swamp's answer would differ).
	SwampChecks []SwampCheck `json:"swampChecks"`
	// Locks is how many swamp lock files were judged.
	Locks int `json:"locks"`
	// Records is how many run records (outputs, workflow runs, audit) were read.
	Records int `json:"records"`
	// InFlight are versions a live writer is still writing: not problems.
	InFlight []InFlight `json:"inFlight"`
	// Checks is every check, passed or not, by stable id (doctorchecks.go).
	Checks []Check `json:"checks"`

	// catalogRebuilt: the repair rebuilt a damaged catalog.
	catalogRebuilt bool
}

// Clean reports whether nothing is left to fix.
func (r *Report) Clean() bool { return r.Remaining == 0 }

// OnlySkipped reports whether every remaining finding was skipped because
// a lock was busy (retrying later can fix them all).
func (r *Report) OnlySkipped() bool {
	if r.Remaining == 0 {
		return false
	}
	for _, f := range r.Findings {
		if f.Status != StatusRepaired && f.Status != StatusSkipped {
			return false
		}
	}
	return true
}

// RepairError is a repair that failed after its intent was journaled.
// It was rolled back (RollbackErr nil) or is left open for `swampj recover`.
type RepairError struct {
	IntentID    uint64
	Err         error
	RollbackErr error
}

func (e *RepairError) Code() string { return "repair_failed" }
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

// Doctor checks the repo's data root and catalog, and with opts.Repair
// plans (and with opts.Confirm executes) the repair. It never prints. The
// report is returned with a *OpenIntentsError when a confirmed repair
// is refused; a lock that cannot be had is a journal or lock timeout error.
func Run(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options) (*Report, error) {
	fsys = fsx.OrReal(fsys)
	o := opts.withDefaults()
	if o.Confirm && !o.Repair {
		return nil, errors.New("doctor: Confirm requires Repair")
	}
	open, stale, err := journalState(fsys, r, o)
	if err != nil {
		return nil, err
	}
	if o.Confirm && len(open) > 0 {
		// A confirmed repair re-run after a crash (its own, or any other
		// swampj operation's) finishes what was interrupted first, as every
		// mutating command does, then repairs what is left: the same
		// command run again moves the repo forward.
		if err := finishOpen(ctx, fsys, r, o); err != nil {
			return nil, err
		}
		if open, stale, err = journalState(fsys, r, o); err != nil {
			return nil, err
		}
	}
	rep, err := runDoctor(ctx, fsys, r, o, open)
	if rep != nil && stale != nil && !rep.catalogRebuilt { // a rebuild clears the mark
		rep.addCatalogStale(stale)
	}
	if rep != nil {
		rep.fillChecks()
	}
	return rep, err
}

// addCatalogStale reports the journal's stale-catalog mark: a catalog step
// that was skipped so that data or recovery could go on. Only a rebuild
// clears it (the doctor's repair rebuilds only a damaged catalog).
func (rep *Report) addCatalogStale(cs *journal.CatalogStale) {
	rep.Findings = append(rep.Findings, Finding{Code: CodeCatalogStale, Path: cs.Catalog,
		Message: fmt.Sprintf("the catalog has missed changes on disk since %s (intents %v): %s; swamp's data query does not see them",
			cs.Since.Format(time.RFC3339), cs.Intents, cs.Reason),
		Fix:    "make the catalog writable for this user if it is not, then rebuild the catalog",
		Remedy: report.RemedyRebuildCatalog,
		Status: StatusManual})
	rep.Remaining++
}

func runDoctor(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, open []*journal.Intent) (*Report, error) {
	s, err := surveyDoctor(ctx, fsys, r, o, open)
	if err != nil {
		return nil, err
	}
	switch {
	case !o.Repair:
		rep := s.report("check", nil, func(*unit) Status { return StatusFound })
		rep.markDamagedCatalog(s, StatusFound)
		return rep, nil
	case !o.Confirm:
		moves := s.plannedMoves(func(*unit) bool { return true })
		rep := s.report("preview", moves, func(*unit) Status { return StatusWouldRepair })
		rep.markDamagedCatalog(s, StatusWouldRepair)
		return rep, nil
	}
	if len(open) > 0 {
		return s.refused(open)
	}
	var rep *Report
	if !s.anyRepair() {
		// Nothing an automatic repair of the data can do: take no lock,
		// create no journal.
		rep = s.report("repair", nil, func(*unit) Status { return StatusSkipped })
	} else if rep, err = repairRun(ctx, fsys, r, o, s); err != nil {
		return rep, err
	}
	if s.catalogDamaged {
		if err := repairDamagedCatalog(ctx, fsys, r, o, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// markDamagedCatalog gives the damaged-catalog finding the status of a
// finding the repair fixes (check: found; preview: would-repair).
func (rep *Report) markDamagedCatalog(s *survey, st Status) {
	if !s.catalogDamaged {
		return
	}
	for i := range rep.Findings {
		if rep.Findings[i].Code == CodeCatalogUnusable {
			rep.Findings[i].Status = st
		}
	}
}

// repairDamagedCatalog rebuilds a catalog SQLite cannot use, after the
// data repair, so its rows describe the repaired disk: RebuildCatalog
// takes the journal lock, moves the damaged file aside with its sidecars
// (never deleting them) and builds a new catalog. It is derived state: a
// rebuild that fails leaves the finding manual with a warning and never
// fails the data's repair; only a crash or a cancel is returned.
func repairDamagedCatalog(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, rep *Report) error {
	crep, err := catalogsync.Rebuild(ctx, fsys, r, catalogsync.Options{Confirm: true, LockTimeout: o.LockTimeout, Command: o.Command, Logger: o.Logger})
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

// finishOpen drives every open intent forward under its own locks
// (recovery's path), before a confirmed repair plans anything.
func finishOpen(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options) error {
	sess, err := openRepairSession(fsys, r, o)
	if err != nil {
		return err
	}
	env := &engine.Env{FS: fsys, Catalog: engine.RepoCatalog(fsys, r.Dir), Log: o.Logger}
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
func openRepairSession(fsys fsx.FS, r *repo.Repo, o Options) (*session.Session, error) {
	return session.Open(fsys, r.JournalPath, journal.Options{LockTimeout: o.LockTimeout, Command: o.Command, Warn: o.warn})
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

// journalState reads the journal's open intents and its
// stale-catalog mark without creating a journal that does not exist, and
// without writing (read-only media): a confirmed repair checks again under
// the journal's write lock.
func journalState(fsys fsx.FS, r *repo.Repo, o Options) ([]*journal.Intent, *journal.CatalogStale, error) {
	return session.InspectState(fsys, r.JournalPath, journal.Options{LockTimeout: o.LockTimeout, Warn: o.warn})
}

// repairRun runs a confirmed repair: dead lock files first, in an
// intent of their own under the journal lock only (doctorlocks.go), so that
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
// intent.
func repairData(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, first *survey) (rep *Report, err error) {
	// 1. swamp's per-model locks of every model the first survey would
	// change, in path order; busy ones are skipped.
	held := map[string]*lock.Lock{}
	busy := map[string]string{}
	var order []*lock.Lock
	defer func() {
		for i := len(order) - 1; i >= 0; i-- {
			if err := order[i].Release(); err != nil && !fsx.IsCrash(err) {
				o.warn(fmt.Sprintf("releasing %s: %v", order[i].Path(), err))
			}
		}
	}()
	for _, p := range first.lockPaths() {
		l, err := lock.Acquire(ctx, fsys, p, lock.Options{Timeout: o.LockTimeout})
		if err != nil {
			if ctx.Err() != nil || fsx.IsCrash(err) {
				return nil, err
			}
			busy[p] = err.Error()
			continue
		}
		l.StartHeartbeat(ctx)
		held[p] = l
		order = append(order, l)
	}
	ctx, stopWatch := lock.WatchLost(ctx, order)
	defer stopWatch()

	// 2. The journal (swampj's repo lock); nothing may be open.
	sess, err := openRepairSession(fsys, r, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := closeRepairSession(sess, o, "the repair"); cerr != nil {
			rep, err = nil, cerr
		}
	}()
	open, err := sess.Journal().OpenIntents()
	if err != nil {
		return nil, err
	}
	if len(open) > 0 {
		return first.refused(open)
	}

	// 3. Plan from what the disk says now, under the locks.
	s, err := surveyDoctor(ctx, fsys, r, o, nil)
	if err != nil {
		return nil, sess.Note(err)
	}
	allowed := func(u *unit) bool { return u.lockPath == "" || held[u.lockPath] != nil }
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
		return s.reportRepair(nil, status, busy), nil
	}

	// 4. Journal and run; a failure is rolled back here and now.
	env := &engine.Env{FS: fsys, Catalog: engine.RepoCatalog(fsys, r.Dir), Log: o.Logger}
	defer env.CloseCatalog()
	if err := runRepairIntent(ctx, sess, env, in, "the repair"); err != nil {
		return nil, err
	}
	rep = s.reportRepair(in, status, busy)
	rep.IntentID = in.ID
	return rep, nil
}

// ---- the survey

// soloSegment is the quarantine segment of a solo repo; namespaces
// cannot contain "_" (§1.5), so it never collides with one.
const soloSegment = "_solo"

// stampLayout is the UTC stamp of a quarantine directory.
const stampLayout = "20060102T150405Z"

// unit is what one lock protects: an item, a staging directory, the
// catalog copies. Its findings and its share of the repair go together: a
// unit is repaired whole or not at all.
type unit struct {
	// lockPath is swamp's per-model lock to hold while the unit changes;
	// "" when there is no model directory to lock (catalog copies, rows of
	// an item that is not on disk).
	lockPath string
	// blocked says why the unit is not repaired automatically.
	blocked  string
	findings []unitFix

	moves      []Move
	lockMoves  []lockMove                // dead lock files, moved by the lock intent
	holderFix  bool                      // a stale journal holder record: replaced by opening the journal
	keepLatest *journal.Step             // a copy of the old `latest`, into quarantine
	latest     *journal.Step             // `latest` rewritten
	catalog    *engine.RepairCatalogItem // rows Before → After
}

// unitFix is a finding and whether the unit's repair fixes it.
type unitFix struct {
	Finding
	auto bool
}

func (u *unit) hasRepair() bool {
	return u.blocked == "" && (u.hasDataRepair() || len(u.lockMoves) > 0 || u.holderFix)
}

// hasDataRepair: the unit has steps in the main repair intent (not only
// dead locks or a holder record, which the lock intent handles).
func (u *unit) hasDataRepair() bool {
	return u.blocked == "" && (len(u.moves) > 0 || u.latest != nil || u.catalog != nil)
}

// lockOnly: the unit is repaired by the lock intent, before the model
// locks are taken.
func (u *unit) lockOnly() bool {
	return !u.hasDataRepair() && (len(u.lockMoves) > 0 || u.holderFix)
}

func (u *unit) add(f Finding, auto bool) {
	u.findings = append(u.findings, unitFix{Finding: f, auto: auto})
}

// surveyItem is one data item: found by the walk, or named by catalog rows.
type surveyItem struct {
	item store.Item
	key  catalog.ItemKey
	st   *store.ItemState // nil: no directory on disk (or it could not be scanned)
	rows []catalog.Row    // its catalog rows (repo namespace), rowid order
	// rowPos is each row's position among all rows of the namespace.
	rowPos []int
}

type survey struct {
	fsys fsx.FS
	r    *repo.Repo
	o    Options

	qstamp string // {qbase}/.swampj-quarantine/{stamp}
	qroot  string // {qstamp}/{ns or _solo}: mirrors the data root

	items    int
	versions int

	catalogUsable bool
	// catalogDamaged: the catalog is a file SQLite cannot use
	// (catalog.CorruptError), which a confirmed repair rebuilds.
	catalogDamaged bool
	stepCol        bool
	// cat is the catalog, open in report mode while the survey runs (nil:
	// none, or not usable).
	cat *catalog.Catalog
	// modelDirs caches modelLockPath's stat of each model directory.
	modelDirs map[string]bool
	// afterScratch is analyzeCatalog's reusable buffer.
	afterScratch []catalog.Row

	units    []*unit
	warnings []string

	// locks are the judgements of every lock file found (surveyLocks).
	locks     map[string]lock.Judgement
	lockCount int
	records   int
	// inFlight are versions a live writer is streaming (not findings).
	inFlight []InFlight

	// For swamp's own checks (doctorswamp.go): items on disk per type,
	// whether the catalog is populated, how many rows it has here.
	diskByType  map[string]int
	modelNames  map[string]string // model id → name (catalog rows, then definitions)
	notes       []string          // added to swampDoctorNotes
	populated   bool
	catalogRows int
	swamp       []SwampCheck
}

// surveyDoctor walks the data root, reads the catalog, and decides every
// finding and its repair. It changes nothing.
func surveyDoctor(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, open []*journal.Intent) (*survey, error) {
	s := &survey{fsys: fsys, r: r, o: o}
	// The catalog is read on a goroutine of its own while the walk and the
	// scan run (on a file system that allows concurrent use): it shares no
	// state with them, and read after the scan it kept one core busy and
	// the other idle for a fifth of the doctor's time. Its findings and
	// warnings are merged where a sequential read would have put them.
	var cat *catalogRead
	if fsx.Concurrent(fsys) {
		cat = s.startCatalog(ctx, true)
	}
	defer func() {
		if cat != nil {
			cat.wait()
		}
		if s.cat != nil {
			s.cat.Close()
			s.cat = nil
		}
	}()
	if err := s.chooseQuarantine(); err != nil {
		return nil, err
	}
	general := &unit{} // findings with no repair of their own
	for _, in := range open {
		f := Finding{Code: CodeOpenIntent, Path: r.JournalPath,
			Message: fmt.Sprintf("intent %d (%s: %s) is unfinished; the data it touches is mid-change", in.ID, in.Kind, in.Summary),
			Fix:     "none: finish the interrupted operation (or roll it back), then run the doctor again", Remedy: report.RemedyRecoverOrRollback}
		// Observed, not remembered: where recovery would stop on this disk.
		env := &engine.Env{FS: fsys, Catalog: engine.ReportCatalog(fsys, r.Dir)}
		if i, v, stuck := engine.Stuck(ctx, env, in); stuck {
			f.Message += fmt.Sprintf("; recovery stops at step %d (%s): the disk matches neither the state before nor after it: %s", i+1, v.Description, v.Detail)
			f.Fix = "none: recovery will not guess; inspect the paths named (a recovery dry run shows every step), put back what is missing, then finish the operation (or roll it back) and run the doctor again"
		}
		env.CloseCatalog()
		general.add(f, false)
	}

	// 1. Items on disk.
	var items []*surveyItem
	byKey := map[catalog.ItemKey]*surveyItem{}
	itemDirs := map[string]bool{}
	var only map[string]bool
	if o.Only != nil {
		only = map[string]bool{}
		for _, d := range o.Only {
			only[filepath.Clean(d)] = true
		}
	}
	// Items are scanned (every version's files opened, checksums hashed)
	// by a worker per core while the walk goes on: the scan is most of
	// the doctor's time and items are independent. Results are used in
	// walk order, so findings come out as a sequential run's would.
	type scanned struct {
		st  *store.ItemState
		err error
	}
	var (
		mu     sync.Mutex
		walked []store.Item
		scans  []scanned
		jobs   = make(chan int, 256)
		wg     sync.WaitGroup
	)
	workers := 1
	if fsx.Concurrent(fsys) {
		workers = runtime.GOMAXPROCS(0)
	}
	var walkedN atomic.Int64
	phase := "scanning"
	if o.VerifyChecksum {
		phase = "verifying checksums"
	}
	// Items scanned of items walked so far, with the versions checked and,
	// verifying checksums, the raw bytes hashed (the renderer's MB/s).
	var versionsN, bytesN atomic.Int64
	o.Progress.Emit(phase, 0, 0, "items")
	scannedN := &report.Counter{Progress: o.Progress, Phase: phase, Unit: "items", Every: 8, Total: walkedN.Load,
		Extra: func(ev *report.ProgressEvent) { ev.Versions, ev.Bytes = versionsN.Load(), bytesN.Load() }}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				mu.Lock()
				it := walked[i]
				mu.Unlock()
				st, err := store.ScanItem(fsys, it, store.CheckOptions{VerifyChecksum: o.VerifyChecksum})
				mu.Lock()
				scans[i] = scanned{st, err}
				mu.Unlock()
				if st != nil && o.Progress != nil {
					versionsN.Add(int64(len(st.Versions)))
					if o.VerifyChecksum {
						bytesN.Add(hashedBytes(st))
					}
				}
				scannedN.Add(1)
			}
		}()
	}
	// The walk's listings, kept for the search for lock files (after the
	// scan) and for staging leftovers (step 4), which would otherwise list
	// the whole tree again. A model's lock is judged as soon as the walk
	// lists the model directory, before any of its items is scanned: a
	// version a live writer is streaming is then seen under a lock already
	// known to be live (doctorinflight.go).
	listings := map[string][]fs.DirEntry{}
	early := map[string]earlyLock{}
	keep := func(dir string, ents []fs.DirEntry) {
		s.judgeEarly(dir, ents, early)
		if only == nil { // with Only, no search for leftovers
			listings[dir] = ents
		}
	}
	walkErr := store.WalkListings(ctx, fsys, r.DataRoot, func(it store.Item) error {
		if only != nil && !only[filepath.Clean(it.Dir)] {
			return nil
		}
		mu.Lock()
		walked = append(walked, it)
		scans = append(scans, scanned{})
		i := len(walked) - 1
		mu.Unlock()
		walkedN.Add(1)
		jobs <- i
		return nil
	}, keep)
	close(jobs)
	wg.Wait()
	scannedN.Report(scannedN.Done())
	for i, it := range walked {
		di := &surveyItem{item: it, key: catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: it.Type, ModelID: it.ModelID, DataName: it.DataName}}
		itemDirs[it.Dir] = true
		st, err := scans[i].st, scans[i].err
		if err != nil {
			if fsx.IsCrash(err) {
				return nil, err
			}
			general.add(unlistable(it.Dir, err), false)
			byKey[di.key] = nil // its rows must not look orphaned
			continue
		}
		di.st = st
		listings[it.Dir] = st.Entries
		s.items++
		s.versions += len(st.Versions)
		if lr := st.LatestReadable; lr != nil && !(lr.Metadata != nil && lr.Metadata.Lifecycle == "deleted" && lr.Metadata.RenamedTo != "") {
			// What swamp's walk lists, and what has an is_latest row (a
			// renamed-away item has none: swamp's rename removes its rows).
			if s.diskByType == nil {
				s.diskByType = map[string]int{}
			}
			s.diskByType[it.Type]++
		}
		items = append(items, di)
		byKey[di.key] = di
	}
	if walkErr != nil {
		if ctx.Err() != nil || fsx.IsCrash(walkErr) {
			return nil, walkErr
		}
		for _, e := range splitErrors(walkErr) {
			general.add(unlistable("", e), false)
		}
	}
	for _, e := range early {
		if fsx.IsCrash(e.err) {
			return nil, e.err
		}
	}

	// Every lock file, found in the listings the walk and the scan made
	// (the directories they did not list are listed now).
	o.Progress.Emit("checking locks", 0, 0, "")
	found, err := lock.FindLockFilesListed(fsys, r.Base, r.Namespace, func(dir string) ([]fs.DirEntry, error) {
		if ents, ok := listings[dir]; ok {
			return ents, nil
		}
		return fsys.ReadDir(dir)
	})
	if err := s.judgeLocks(ctx, found, err, early); err != nil {
		return nil, err
	}
	s.surveyJournalHolder()

	// 2. The catalog, read-only; rows of items the walk did not find are
	// looked up on disk directly.
	o.Progress.Emit("reading catalog", 0, 0, "")
	if cat == nil {
		cat = s.startCatalog(ctx, false)
	}
	rows, err := cat.merge(s, general)
	cat = nil
	if err != nil {
		return nil, err
	}
	var orphans []*surveyItem
	for _, group := range rows {
		key := group.rows[0].Key()
		if di, seen := byKey[key]; seen {
			if di != nil {
				di.rows, di.rowPos = group.rows, group.pos
			}
			continue
		}
		if only != nil {
			if dir, ok := itemDirOfKey(r.DataRoot, key); !ok || !only[filepath.Clean(dir)] {
				continue // an item outside the set looked at
			}
		}
		di, err := s.itemOfRows(key)
		if err != nil {
			if fsx.IsCrash(err) {
				return nil, err
			}
			general.add(unlistable(di.item.Dir, err), false)
			continue
		}
		di.rows, di.rowPos = group.rows, group.pos
		byKey[key] = di
		orphans = append(orphans, di)
	}

	// 3. Each item's findings and repair.
	o.Progress.Emit("checking items", 0, 0, "")
	for _, di := range append(items, orphans...) {
		if u := s.analyzeItem(di); len(u.findings) > 0 {
			s.units = append(s.units, u)
		}
	}
	if o.Repair {
		if err := s.fullCatalogRows(ctx); err != nil {
			return nil, err
		}
	}

	// 4. Staging directories no open intent owns.
	owned := map[string]bool{}
	for _, in := range open {
		for _, st := range in.Steps {
			owned[filepath.Clean(st.Path)], owned[filepath.Clean(st.To)] = true, true
		}
	}
	// With Only, what a command changed: staging directories inside the
	// changed items, and the run records it wrote (ChangedItems lists both),
	// since an interrupted command leaves exactly those behind.
	var stageRoots []string
	if only != nil {
		for _, it := range walked {
			if itemDirs[it.Dir] {
				stageRoots = append(stageRoots, it.Dir)
			}
		}
	}
	o.Progress.Emit("checking staging and run records", 0, 0, "")
	stages, err := s.findStages(ctx, itemDirs, owned, listings, stageRoots)
	if err != nil {
		return nil, err
	}
	s.units = append(s.units, stages...)

	// 5. Run records swamp reads back (outputs, workflow runs, audit).
	if err := s.surveyRecords(ctx, only); err != nil {
		return nil, err
	}

	if only == nil {
		// 6. Catalog copies left by older swamp (#3316).
		if u, err := s.catalogCopies(); err != nil {
			return nil, err
		} else if u != nil {
			s.units = append(s.units, u)
		}
	}

	// 7. swamp's own checks, computed right (doctorswamp.go).
	if only == nil {
		latest := map[string]int{}
		for _, group := range rows {
			for _, row := range group.rows {
				if row.IsLatest {
					latest[row.TypeNormalized]++
				}
			}
		}
		o.Progress.Emit("swamp's checks", 0, 0, "")
		s.swamp = s.swampChecks(s.diskByType, latest)
		for _, c := range s.swamp {
			switch {
			case c.Passed:
			case c.Check == SwampCheckMigration:
				// Where data sits is the migrate command's business (its
				// preview lists what would move), not damage: after
				// `migrate --reverse` with the namespace still set, the
				// data is at the root on purpose. Reported, not a finding.
				s.notes = append(s.notes, fmt.Sprintf("swamp's %s check fails: %s. That is a layout, not damage: "+
					"the namespace migration's preview lists what would move; after a reverse migration with the namespace still set, "+
					"unsetting the namespace finishes going back", c.Check, c.Message))
			default:
				general.add(Finding{Code: CodeSwampCheck, Path: r.Base,
					Message: fmt.Sprintf("swamp's %s check: %s", c.Check, c.Message),
					Fix:     "as the message says"}, false)
			}
		}
	}

	if len(general.findings) > 0 {
		s.units = append([]*unit{general}, s.units...)
	}
	return s, nil
}

// hashedBytes is how many raw bytes a checksum scan of st read: the raws
// whose size matched their metadata (the others are not hashed).
func hashedBytes(st *store.ItemState) int64 {
	var n int64
	for _, v := range st.Versions {
		if md := v.Metadata; v.RawSize > 0 && md != nil && md.Checksum != "" && (md.Size == nil || *md.Size == v.RawSize) {
			n += v.RawSize
		}
	}
	return n
}

// chooseQuarantine picks this run's quarantine directory. It is on the
// datastore base (the local tier when the data tree is local), so every
// rename stays on one file system, and the stamp is made unique.
func (s *survey) chooseQuarantine() error {
	base := s.r.Base
	if s.r.DataLocal {
		base = s.r.LocalDir
	}
	top := filepath.Join(base, store.QuarantineDirName)
	if s.o.quarantine != "" {
		s.qstamp = s.o.quarantine
		s.qroot = filepath.Join(s.qstamp, map[bool]string{true: soloSegment, false: s.r.Namespace}[s.r.Namespace == ""])
		return nil
	}
	stamp := s.o.Now().UTC().Format(stampLayout)
	name := stamp
	for i := 2; ; i++ {
		ok, err := fsx.Exists(s.fsys, filepath.Join(top, name))
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		name = fmt.Sprintf("%s-%d", stamp, i)
	}
	s.qstamp = filepath.Join(top, name)
	seg := s.r.Namespace
	if seg == "" {
		seg = soloSegment
	}
	s.qroot = filepath.Join(s.qstamp, seg)
	return nil
}

// qpath is where src (a path under the data root) goes in quarantine.
func (s *survey) qpath(src string) string {
	rel, err := filepath.Rel(s.r.DataRoot, src)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		rel = filepath.Base(src)
	}
	return filepath.Join(s.qroot, rel)
}

// catalogRead is readCatalog running (or run) apart from the rest of the
// survey: what it would have added to the survey's general unit and
// warnings is kept here until merge.
type catalogRead struct {
	ctx  context.Context
	done chan struct{} // nil: not started

	groups   []rowGroup
	err      error
	general  unit
	warnings []string
}

// startCatalog reads the catalog on a new goroutine, or, when !async,
// returns a read that merge does on the caller's goroutine.
func (s *survey) startCatalog(ctx context.Context, async bool) *catalogRead {
	cr := &catalogRead{ctx: ctx}
	if !async {
		return cr
	}
	cr.done = make(chan struct{})
	go func() {
		defer close(cr.done)
		cr.groups, cr.err = s.readCatalog(ctx, &cr.general, &cr.warnings)
	}()
	return cr
}

// wait returns once a started read has finished.
func (cr *catalogRead) wait() {
	if cr.done != nil {
		<-cr.done
	}
}

// merge waits for the read (or does it, when it was not started) and adds
// its findings and warnings to the survey's.
func (cr *catalogRead) merge(s *survey, general *unit) ([]rowGroup, error) {
	if cr.done == nil {
		cr.groups, cr.err = s.readCatalog(cr.ctx, general, &s.warnings)
		return cr.groups, cr.err
	}
	cr.wait()
	general.findings = append(general.findings, cr.general.findings...)
	s.warnings = append(s.warnings, cr.warnings...)
	return cr.groups, cr.err
}

// readCatalog reads the repo namespace's rows, grouped by item in rowid
// order of each item's first row. A missing catalog has no rows; a damaged
// one is a finding (added to general); a foreign one a warning (added to
// warnings). It sets the survey's catalog fields and touches nothing else
// of it, so it can run beside the scan.
func (s *survey) readCatalog(ctx context.Context, general *unit, warnings *[]string) ([]rowGroup, error) {
	c, err := catalog.Open(ctx, s.fsys, s.r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	var missing *catalog.MissingError
	var corrupt *catalog.CorruptError
	var wal *catalog.WALUnreadableError
	switch {
	case errors.As(err, &missing):
		return nil, nil
	case errors.As(err, &wal):
		// Read-only media: the catalog is derived state and never blocks
		// the check of the data.
		*warnings = append(*warnings, "catalog rows not checked: "+wal.Error())
		return nil, nil
	case errors.As(err, &corrupt):
		// Derived state that SQLite cannot use (a torn first creation, a
		// file that is not a database): a confirmed repair moves it aside
		// and rebuilds it (repairDamagedCatalog).
		s.catalogDamaged = true
		general.add(Finding{Code: CodeCatalogUnusable, Path: s.r.CatalogPath, Message: corrupt.Error(),
			Fix:    "the repair moves it aside with its sidecars (renamed beside it, never deleted) and rebuilds the catalog from the data; rebuilding the catalog does the same",
			Remedy: report.RemedyRebuildCatalog}, false)
		return nil, nil
	case err != nil && (fsx.IsCrash(err) || ctx.Err() != nil):
		return nil, err
	case err != nil:
		// The catalog is derived state: one that cannot be opened (not a
		// file, not readable by this user, busy) is a finding, never a
		// reason not to check the data.
		general.add(Finding{Code: CodeCatalogUnusable, Path: s.r.CatalogPath,
			Message: fmt.Sprintf("the catalog cannot be opened, so its rows were not checked: %v", err),
			Fix:     "make " + s.r.CatalogPath + " a catalog file this user can read and write (or move it aside), then rebuild the catalog", Remedy: report.RemedyRebuildCatalog}, false)
		return nil, nil
	}
	if f := c.Foreign(); f != nil {
		c.Close()
		*warnings = append(*warnings, "catalog rows not checked: "+f.Error())
		return nil, nil
	}
	s.cat = c // closed by surveyDoctor; a repair reads full rows from it
	s.stepCol = c.HasStepLatest()
	// Only the key, version and flag columns: the check compares nothing
	// else, and the whole catalog is read. A repair reads the full rows of
	// the items it changes (fullCatalogRows).
	all, err := c.FlagRows(ctx, s.r.Namespace)
	if err != nil {
		return nil, err
	}
	s.catalogRows = len(all)
	for i := range all {
		row := &all[i]
		if row.ModelName != "" && (i == 0 || all[i-1].ModelID != row.ModelID || all[i-1].ModelName != row.ModelName) {
			if s.modelNames == nil {
				s.modelNames = map[string]string{}
			}
			s.modelNames[row.ModelID] = row.ModelName
		}
	}
	if s.populated, err = c.Populated(ctx); err != nil {
		return nil, err
	}
	s.catalogUsable = true
	// Group by item, in rowid order of each item's first row, keeping each
	// row's position in the whole catalog (the repair restores that order
	// on undo); one backing array for all groups.
	// An item whose rows are contiguous (written one after another) uses
	// them in place; the others get copies.
	index := make(map[catalog.ItemKey]int, len(all)/4+1)
	gi := make([]int, len(all))
	type span struct{ first, last, n int }
	var spans []span
	for pos := range all {
		if pos > 0 && all[pos-1].Key() == all[pos].Key() {
			i := gi[pos-1]
			gi[pos] = i
			spans[i].last, spans[i].n = pos, spans[i].n+1
			continue
		}
		key := all[pos].Key()
		i, ok := index[key]
		if !ok {
			i = len(spans)
			index[key] = i
			spans = append(spans, span{first: pos})
		}
		gi[pos] = i
		spans[i].last, spans[i].n = pos, spans[i].n+1
	}
	positions := make([]int, len(all))
	for pos := range positions {
		positions[pos] = pos
	}
	groups := make([]rowGroup, len(spans))
	// The copies share two backing arrays, each group cut to its size, so
	// that appending grows nothing (rows written interleaved, as swamp's
	// writes of many items at once leave them, were a tenth of this read).
	scattered := 0
	for _, sp := range spans {
		if sp.last-sp.first+1 != sp.n {
			scattered += sp.n
		}
	}
	rowsBuf, posBuf := make([]catalog.Row, 0, scattered), make([]int, 0, scattered)
	for i, sp := range spans {
		if sp.last-sp.first+1 == sp.n {
			groups[i] = rowGroup{rows: all[sp.first : sp.last+1 : sp.last+1], pos: positions[sp.first : sp.last+1 : sp.last+1]}
			continue
		}
		k := len(rowsBuf)
		rowsBuf, posBuf = rowsBuf[:k+sp.n], posBuf[:k+sp.n]
		groups[i] = rowGroup{rows: rowsBuf[k : k : k+sp.n], pos: posBuf[k : k : k+sp.n]}
	}
	for pos := range all {
		g := &groups[gi[pos]]
		if sp := spans[gi[pos]]; sp.last-sp.first+1 == sp.n {
			continue
		}
		g.rows = append(g.rows, all[pos])
		g.pos = append(g.pos, pos)
	}
	return groups, nil
}

// rowGroup is one item's catalog rows in rowid order, with each
// row's position among all rows of the namespace.
type rowGroup struct {
	rows []catalog.Row
	pos  []int
}

// fullCatalogRows replaces the flag-only rows (FlagRows) of every planned
// catalog change with the item's full rows, which the journal keeps so an
// undo can put removed rows back as they were. Rows the repair adds
// (RowFromMeta) are full already.
func (s *survey) fullCatalogRows(ctx context.Context) error {
	var changed []*engine.RepairCatalogItem
	for _, u := range s.units {
		if u.catalog != nil {
			changed = append(changed, u.catalog)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	for _, ci := range changed {
		full, err := s.cat.ItemRows(ctx, ci.Key)
		if err != nil {
			return err
		}
		if len(full) != len(ci.Before) {
			return fmt.Errorf("the catalog rows of %s changed while the doctor read them; run the doctor again", ci.Key.TypeNormalized+"/"+ci.Key.ModelID+"/"+ci.Key.DataName)
		}
		byVersion := make(map[int64]catalog.Row, len(full))
		for i, row := range full {
			if row.Version != ci.Before[i].Version || !catalogrow.SameFlags(row, ci.Before[i], s.stepCol) {
				return fmt.Errorf("the catalog rows of %s changed while the doctor read them; run the doctor again", ci.Key.TypeNormalized+"/"+ci.Key.ModelID+"/"+ci.Key.DataName)
			}
			byVersion[row.Version] = row
		}
		ci.Before = full
		for i, a := range ci.After {
			if row, ok := byVersion[a.Version]; ok && !ci.Added[a.Version] {
				row.IsLatest, row.IsStepLatest = a.IsLatest, a.IsStepLatest
				ci.After[i] = row
			}
		}
	}
	return nil
}

// itemOfRows finds the item catalog rows name when the walk did not (a
// model swamp's walk does not classify, or an item gone from disk).
func (s *survey) itemOfRows(key catalog.ItemKey) (*surveyItem, error) {
	di := &surveyItem{key: key, item: store.Item{Type: key.TypeNormalized, ModelID: key.ModelID, DataName: key.DataName}}
	dir, ok := itemDirOfKey(s.r.DataRoot, key)
	if !ok {
		return di, nil // a key that is no path under the data root: no data
	}
	di.item.Dir = dir
	fi, err := s.fsys.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && !fi.IsDir():
		return di, nil
	case err != nil:
		return di, err
	}
	st, err := store.ScanItem(s.fsys, di.item, store.CheckOptions{VerifyChecksum: s.o.VerifyChecksum})
	if err != nil {
		return di, err
	}
	di.st = st
	s.items++
	s.versions += len(st.Versions)
	return di, nil
}

// itemDir is {dataRoot}/{type}/{model}/{name} for a catalog key whose
// segments are plain names; ok is false for anything that could leave the
// data root.
func itemDirOfKey(dataRoot string, key catalog.ItemKey) (string, bool) {
	segs := append(strings.Split(key.TypeNormalized, "/"), key.ModelID, key.DataName)
	for _, seg := range segs {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsAny(seg, `/\`+"\x00") {
			return "", false
		}
	}
	return filepath.Join(append([]string{dataRoot}, segs...)...), true
}

// modelLockPath is swamp's per-model lock of the model holding itemDir, or
// "" when the model directory does not exist (nothing to lock: taking the
// lock would create directories for a model that is not there).
func (s *survey) modelLockPath(typ, modelID, modelDir string) string {
	if modelDir == "" {
		return ""
	}
	// One stat per model, not per item (a survey asks for every item).
	isDir, ok := s.modelDirs[modelDir]
	if !ok {
		fi, err := s.fsys.Stat(modelDir)
		isDir = err == nil && fi.IsDir()
		if s.modelDirs == nil {
			s.modelDirs = map[string]bool{}
		}
		s.modelDirs[modelDir] = isDir
	}
	if !isDir {
		return ""
	}
	return lock.ModelPath(s.r.Base, s.r.Namespace, meta.NormalizeType(typ), modelID)
}

// pointerCodes maps store's item-level `latest` codes to findings.
var pointerCodes = map[store.Code]Code{
	store.CodeLatestUnreadable: CodeLatestUnreadable,
	store.CodeLatestNotFound:   CodeLatestNotFound,
	store.CodeLatestMissing:    CodeLatestDamaged,
	store.CodeLatestEmpty:      CodeLatestDamaged,
	store.CodeLatestUnparsable: CodeLatestDamaged,
	store.CodeLatestInvalid:    CodeLatestDamaged,
}

// analyzeItem decides an item's findings and repair.
func (s *survey) analyzeItem(di *surveyItem) *unit {
	u := &unit{}
	modelDir := ""
	if di.item.Dir != "" {
		modelDir = filepath.Dir(di.item.Dir)
	}
	u.lockPath = s.modelLockPath(di.item.Type, di.item.ModelID, modelDir)
	st := di.st
	name := di.item.Key()

	// The version the repair leaves as latest: the last readable one at or
	// below what `latest` designates, else (nothing there) the highest
	// readable one. Versions above `latest` may be uncommitted deferred
	// writes (G8), so they are used only when nothing else is readable.
	var target *store.Version
	if st != nil {
		target = st.LastGood
		if target == nil {
			target = st.HighestReadable
		}
		for _, p := range st.Problems {
			if p.Code == store.CodeMetadataUnreadable || p.Code == store.CodeRawUnreadable {
				cause := p.Err
				var pe *fs.PathError
				if errors.As(cause, &pe) {
					cause = pe.Err
				}
				u.blocked = fmt.Sprintf("%s cannot be read (%v), which says nothing about its bytes; "+
					"fix the access problem and run the doctor again", p.Path, cause)
				break
			}
		}
		s.analyzeVersions(u, di)
		s.analyzeLatest(u, di, target)
	}
	s.analyzeCatalog(u, di, target)

	if u.blocked != "" {
		for i := range u.findings {
			u.findings[i].auto = false
			u.findings[i].Fix = "none: " + u.blocked
		}
		u.moves, u.keepLatest, u.latest, u.catalog = nil, nil, nil, nil
	}
	for i := range u.findings {
		u.findings[i].Item = name
	}
	return u
}

// analyzeVersions quarantines every unreadable version directory (and a
// non-directory at the version path `latest` designates).
func (s *survey) analyzeVersions(u *unit, di *surveyItem) {
	st := di.st
	unreadable := append([]*store.Version(nil), st.Versions...)
	if l := st.Latest; l != nil && l.State == store.StateDamaged && st.LatestReadable == nil && hasCode(l.Problems, store.CodeVersionNotDir) {
		unreadable = append(unreadable, l) // a file named like the version
	}
	for _, v := range unreadable {
		if v.Readable() || s.isInFlight(u, di, v) {
			continue
		}
		dest := s.qpath(v.Dir)
		u.moves = append(u.moves, Move{From: v.Dir, To: dest})
		u.add(Finding{Code: CodeVersionUnreadable, Path: v.Dir, Version: v.Number,
			Message: fmt.Sprintf("version %d is %s: %s", v.Number, v.State, problemMessages(v.Problems)),
			Fix:     "move it to " + dest}, true)
	}
}

// allInFlight: every version of the item is a recorded write in progress.
func (s *survey) allInFlight(di *surveyItem) bool {
	n := 0
	for _, f := range s.inFlight {
		if f.Item == di.item.Key() {
			n++
		}
	}
	return n > 0 && n == len(di.st.Versions)
}

// analyzeLatest rewrites a `latest` that does not designate a readable
// version, or moves it into quarantine when no readable version remains.
func (s *survey) analyzeLatest(u *unit, di *surveyItem, target *store.Version) {
	st := di.st
	var problems []store.Problem
	for _, p := range st.Problems {
		if _, ok := pointerCodes[p.Code]; ok {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return
	}
	if _, live := s.liveHolder(u); live && committedLatest(st) == 0 && st.HighestReadable == nil && s.allInFlight(di) {
		return // the first write of the item: swamp writes latest last
	}
	path := filepath.Join(di.item.Dir, "latest")
	fi, err := s.fsys.Lstat(path)
	exists := err == nil
	fix, auto := "", true
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		u.blocked = "cannot inspect latest: " + err.Error()
	case exists && fi.Mode()&fs.ModeSymlink != 0:
		u.blocked = "latest is a legacy symlink; run 'swamp repo upgrade' (it rewrites it as a file), then the doctor again"
	case exists && !fi.Mode().IsRegular():
		u.blocked = "latest is not a regular file; move it away by hand, then run the doctor again"
	case target != nil:
		var old []byte
		if exists {
			if old, err = s.fsys.ReadFile(path); err != nil {
				u.blocked = "cannot read latest: " + err.Error()
				break
			}
		}
		data := []byte(strconv.FormatInt(target.Number, 10))
		u.latest = &journal.Step{Kind: engine.KindWrite, Path: path, Data: data, OldData: old, OldExists: exists,
			Note: fmt.Sprintf("point latest of %s at version %d, its last readable version", di.item.Key(), target.Number)}
		fix = fmt.Sprintf("rewrite latest to %d", target.Number)
		if exists {
			keep := s.qpath(path)
			u.keepLatest = &journal.Step{Kind: engine.KindWrite, Path: keep, Data: old,
				Note: fmt.Sprintf("keep the old latest of %s (%q) in quarantine", di.item.Key(), shortText(old))}
			fix += fmt.Sprintf(" (its old content %q is kept at %s)", shortText(old), keep)
		}
		if st.HighestReadable != nil && st.LastGood == nil {
			fix += "; the only readable versions are above the old latest (possibly an uncommitted deferred write)"
		}
	case exists:
		dest := s.qpath(path)
		u.moves = append(u.moves, Move{From: path, To: dest})
		fix = "move latest to " + dest + " (no readable version remains)"
	default:
		fix = "nothing to rewrite: no readable version remains and there is no latest"
		auto = len(u.moves) > 0
	}
	for _, p := range problems {
		u.add(Finding{Code: pointerCodes[p.Code], Path: path, Version: st.Pointer.Version,
			Message: p.Message, Fix: fix}, auto)
	}
}

// analyzeCatalog removes the rows of versions that are not readable and
// sets the latest flags per the readable versions that remain.
func (s *survey) analyzeCatalog(u *unit, di *surveyItem, target *store.Version) {
	if !s.catalogUsable || len(di.rows) == 0 {
		return
	}
	// The item's versions are few and sorted: looked up, not mapped (this
	// runs for every item of the catalog).
	onDiskOf := func(n int64) *store.Version {
		if di.st == nil {
			return nil
		}
		vs := di.st.Versions
		i := sort.Search(len(vs), func(i int) bool { return vs[i].Number >= n })
		if i < len(vs) && vs[i].Number == n {
			return vs[i]
		}
		return nil
	}
	readable := func(n int64) bool {
		if v := onDiskOf(n); v != nil && v.Readable() {
			return true
		}
		return di.st != nil && di.st.LatestReadable != nil && di.st.LatestReadable.Number == n
	}
	// after is built in a buffer reused across items and copied only when
	// the item needs a change.
	after, removed := s.afterScratch[:0], []catalog.Row(nil)
	defer func() { s.afterScratch = after[:0] }()
	for _, row := range di.rows {
		if readable(row.Version) {
			after = append(after, row)
		} else {
			removed = append(removed, row)
		}
	}
	var top int64
	var added map[int64]bool // versions whose row the repair writes anew
	if target != nil {
		top = target.Number
		if !catalogrow.HasVersion(after, top) {
			// The new latest has no row (the catalog lost it): give it the
			// row swamp's write-through would have written.
			if row, err := catalogrow.FromMeta(s.r.Namespace, di.key.TypeNormalized, di.key.ModelID, target.Metadata); err == nil {
				after = append(after, row)
				added = map[int64]bool{row.Version: true}
			}
		}
	}
	catalogrow.MarkLatestBelow(after, top, s.stepCol)

	flagsWrong := false
	for _, a := range after {
		i := catalogrow.RowIndex(di.rows, a.Version)
		if i < 0 || !catalogrow.SameFlags(di.rows[i], a, s.stepCol) {
			flagsWrong = true
		}
	}
	if len(removed) == 0 && !flagsWrong {
		return
	}
	var kept []catalog.Row // nil when nothing stays, as before the buffer
	if len(after) > 0 {
		kept = slices.Clone(after)
	}
	u.catalog = &engine.RepairCatalogItem{Key: di.key, Before: di.rows, After: kept, Pos: di.rowPos, Added: added}

	for _, row := range removed {
		why := "that version has no directory on disk"
		v := onDiskOf(row.Version)
		if l := di.st; v == nil && l != nil && l.Latest != nil && l.Latest.Number == row.Version && l.Latest.State != store.StateMissing {
			v = l.Latest // not listed as a version directory: a symlink or a file in its place
		}
		switch {
		case di.st == nil:
			why = "the item has no directory on disk"
		case v != nil:
			why = fmt.Sprintf("that version is %s (%s)", v.State, store.CodesOf(v.Problems))
		}
		u.add(Finding{Code: CodeCatalogRowUnreadable, Path: s.r.CatalogPath, Version: row.Version,
			Message: fmt.Sprintf("the catalog has a row for version %d (%s), but %s", row.Version, catalogrow.FlagText(row, s.stepCol), why),
			Fix:     "remove the row"}, true)
	}
	if flagsWrong && len(after) > 0 {
		u.add(Finding{Code: CodeCatalogLatestWrong, Path: s.r.CatalogPath, Version: top,
			Message: fmt.Sprintf("the catalog marks %s as latest; the readable latest is version %d",
				catalogrow.Flagged(di.rows, s.stepCol), top),
			Fix: "set the latest flags per the readable versions: " + catalogrow.Flagged(after, s.stepCol)}, true)
	}
}

// findStages lists staging directories under the data root that no open
// intent owns. Version directories of known items are not entered.
// Directories the walk and the scan listed already (listings) are not
// listed again.
//
// roots, when not nil, are the directories searched (the changed items of
// Options.Only) instead of the whole data root.
func (s *survey) findStages(ctx context.Context, itemDirs, owned map[string]bool, listings map[string][]fs.DirEntry, roots []string) ([]*unit, error) {
	var units []*unit
	var walk func(dir string, segs []string) error
	walk = func(dir string, segs []string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, ok := listings[dir]
		var err error
		if !ok {
			ents, err = s.fsys.ReadDir(dir)
		}
		if err != nil {
			if fsx.IsCrash(err) {
				return err
			}
			return nil // reported by the walk already, or gone
		}
		isItem := itemDirs[dir]
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			name := e.Name()
			if isItem && allDigits(name) {
				continue // a version directory holds only files (no path built: an item has many)
			}
			p := filepath.Join(dir, name)
			switch {
			case strings.HasPrefix(name, session.StagePrefix):
				if owned[p] {
					continue
				}
				if pid, _, attributed := session.StageOwner(name); attributed && !session.StageOwnerGone(name) {
					// A write in progress stages before its intent is
					// journaled (exec.go, Recording): its writer is alive.
					s.inFlight = append(s.inFlight, InFlight{Item: strings.Join(segs, "/"), Path: p, Pid: pid,
						Message: fmt.Sprintf("%s is being staged by a live write (pid %d); it is left alone", p, pid)})
					continue
				}
				units = append(units, s.stageUnit(p, append(segs[:len(segs):len(segs)], name)))
			case strings.HasPrefix(name, ".swampj-"):
				// swampj's own directories
			default:
				if err := walk(p, append(segs[:len(segs):len(segs)], name)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if roots == nil {
		if err := walk(s.r.DataRoot, nil); err != nil {
			return nil, err
		}
		return units, nil
	}
	for _, dir := range roots {
		rel, err := filepath.Rel(s.r.DataRoot, dir)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		if err := walk(dir, strings.Split(filepath.ToSlash(rel), "/")); err != nil {
			return nil, err
		}
	}
	return units, nil
}

// stageUnit is one leftover staging directory ({type}/{model}/{name}/stage).
func (s *survey) stageUnit(path string, segs []string) *unit {
	u := &unit{}
	item := ""
	if n := len(segs); n >= 4 {
		typ, model := strings.Join(segs[:n-3], "/"), segs[n-3]
		item = strings.Join(segs[:n-1], "/")
		u.lockPath = s.modelLockPath(typ, model, filepath.Dir(filepath.Dir(path)))
	}
	dest := s.qpath(path)
	u.moves = []Move{{From: path, To: dest}}
	u.add(Finding{Code: CodeStagingLeftover, Path: path, Item: item,
		Message: "a swampj staging directory that no open intent owns: an interrupted write whose journal record is gone; swamp never reads it",
		Fix:     "move it to " + dest}, true)
	return u
}

// catalogCopies finds catalog files under {base}/{ns}/data that an older
// swamp moved with the data (#3316). The live catalog is never among them.
func (s *survey) catalogCopies() (*unit, error) {
	if s.r.Namespace == "" {
		return nil, nil
	}
	dir := filepath.Join(s.r.Base, s.r.Namespace, "data")
	if sameDir(s.fsys, dir, filepath.Dir(s.r.CatalogPath)) {
		return nil, nil
	}
	u := &unit{}
	var names []string
	for _, name := range repo.CatalogFiles {
		p := filepath.Join(dir, name)
		ok, err := fsx.Exists(s.fsys, p)
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, name)
			u.moves = append(u.moves, Move{From: p, To: filepath.Join(s.qroot, name)})
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	u.add(Finding{Code: CodeCatalogCopy, Path: dir,
		Message: fmt.Sprintf("%s holds catalog files (%s) that an older swamp moved with the data; nothing reads them (the live catalog is %s)",
			dir, strings.Join(names, ", "), s.r.CatalogPath),
		Fix: "move them together to " + s.qroot}, true)
	return u, nil
}

// ---- the plan

// anyRepair reports whether some unit has an automatic repair.
func (s *survey) anyRepair() bool {
	for _, u := range s.units {
		if u.hasRepair() {
			return true
		}
	}
	return false
}

// lockPaths lists the per-model locks of every unit with a repair, sorted.
func (s *survey) lockPaths() []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range s.units {
		if u.hasDataRepair() && u.lockPath != "" && !seen[u.lockPath] {
			seen[u.lockPath] = true
			out = append(out, u.lockPath)
		}
	}
	sort.Strings(out)
	return out
}

func (s *survey) plannedMoves(allowed func(*unit) bool) []Move {
	moves := []Move{}
	for _, u := range s.units {
		if u.hasRepair() && allowed(u) {
			for _, m := range u.lockMoves {
				moves = append(moves, m.Move)
			}
			moves = append(moves, u.moves...)
		}
	}
	return moves
}

// plan builds the intent of the units allowed; nil when there is nothing
// to do.
func (s *survey) plan(allowed func(*unit) bool, command []string) (*journal.Intent, error) {
	var units []*unit
	for _, u := range s.units {
		if u.hasDataRepair() && allowed(u) {
			units = append(units, u)
		}
	}
	if len(units) == 0 {
		return nil, nil
	}
	in := &journal.Intent{Kind: IntentKindRepair, Repo: s.r.Dir, Command: command}
	locks := map[string]bool{}
	for _, u := range units {
		if u.lockPath != "" && !locks[u.lockPath] {
			locks[u.lockPath] = true
			in.Locks = append(in.Locks, u.lockPath)
		}
	}
	sort.Strings(in.Locks)

	// Quarantine directories that do not exist yet, outermost first.
	planned := map[string]bool{}
	var dests []string
	for _, u := range units {
		for _, m := range u.moves {
			dests = append(dests, m.To)
		}
		if u.keepLatest != nil {
			dests = append(dests, u.keepLatest.Path)
		}
	}
	for _, d := range dests {
		missing, err := engine.MissingDirs(s.fsys, filepath.Dir(d), planned)
		if err != nil {
			return nil, err
		}
		for _, m := range missing {
			in.Steps = append(in.Steps, journal.Step{Kind: engine.KindMkdir, Path: m, Note: "create a quarantine directory"})
		}
	}
	if len(in.Steps) > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the quarantine directories durable"})
	}

	moves, latests, items := 0, 0, 0
	for _, u := range units {
		for _, m := range u.moves {
			in.Steps = append(in.Steps, journal.Step{Kind: engine.KindRename, Path: m.From, To: m.To, Note: "move into quarantine"})
			moves++
		}
	}
	for _, u := range units {
		if u.keepLatest != nil {
			in.Steps = append(in.Steps, *u.keepLatest)
		}
	}
	if moves > 0 {
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindBarrier, Note: "make the moves durable"})
	}
	for _, u := range units {
		if u.latest != nil {
			in.Steps = append(in.Steps, *u.latest)
			latests++
		}
	}
	ch := engine.RepairCatalogChange{Namespace: s.r.Namespace}
	for _, u := range units {
		if u.catalog != nil {
			ch.Items = append(ch.Items, *u.catalog)
		}
	}
	if len(ch.Items) > 0 {
		items = len(ch.Items)
		var pos []int // of each ch.Order entry
		for i, it := range ch.Items {
			for j, row := range it.Before {
				ch.Order = append(ch.Order, engine.RepairRowRef{Item: i, Version: row.Version})
				pos = append(pos, it.Pos[j])
			}
		}
		sort.Sort(byPos{ch.Order, pos})
		b, err := json.Marshal(ch)
		if err != nil {
			return nil, err
		}
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindRepairCatalog, Path: s.r.CatalogPath, Catalog: b,
			Note: fmt.Sprintf("catalog rows of %d item(s): remove unreadable versions, set latest flags", items)})
	}
	in.Summary = fmt.Sprintf("doctor: move %d path(s) into quarantine, rewrite %d latest pointer(s), fix catalog rows of %d item(s)",
		moves, latests, items)
	return in, nil
}

// byPos sorts row refs by their catalog positions.
type byPos struct {
	refs []engine.RepairRowRef
	pos  []int
}

func (b byPos) Len() int           { return len(b.refs) }
func (b byPos) Less(i, j int) bool { return b.pos[i] < b.pos[j] }
func (b byPos) Swap(i, j int) {
	b.refs[i], b.refs[j] = b.refs[j], b.refs[i]
	b.pos[i], b.pos[j] = b.pos[j], b.pos[i]
}

// ---- reports

func (s *survey) newReport(mode string) *Report {
	return &Report{
		Repo: s.r.Dir, DataRoot: s.r.DataRoot, Namespace: s.r.Namespace, Catalog: s.r.CatalogPath, Mode: mode,
		Items: s.items, Versions: s.versions, ChecksumsVerified: s.o.VerifyChecksum, StepLatestColumn: s.stepCol,
		Findings: []Finding{}, Moves: []Move{}, Warnings: append([]string{}, s.warnings...),
		Notes: append(swampDoctorNotes(s.fsys, s.r), s.notes...),
		Locks: s.lockCount, Records: s.records, InFlight: append([]InFlight{}, s.inFlight...),
		SwampChecks: append([]SwampCheck{}, s.swamp...),
	}
}

// swampDoctorNotes explains, in a namespaced repo, what swamp's `doctor
// datastores` will report as "un-migrated data" although nothing is wrong
// (swamp's defect, swamp-format A13; issue #9): its check flags every
// default subdirectory of the un-namespaced base that holds a file, so it
// flags {base}/data for the repo-local catalog (which never moves) and
// {base}/outputs for the .log files swamp's own method runs keep writing
// there. Only those two are explained; a subdirectory holding real
// un-migrated data is not, since swamp is right about it.
func swampDoctorNotes(fsys fsx.FS, r *repo.Repo) []string {
	notes := []string{}
	if r.Namespace == "" {
		return notes
	}
	var what []string
	dataDir := filepath.Join(r.Base, "data")
	if ents, err := fsys.ReadDir(dataDir); err == nil && len(ents) > 0 {
		onlyCatalog := true
		for _, e := range ents {
			if !repo.IsCatalogFile(e.Name()) {
				onlyCatalog = false
				break
			}
		}
		if onlyCatalog {
			what = append(what, dataDir+" (it holds only the repo-local catalog)")
		}
	}
	outputs := filepath.Join(r.Base, "outputs")
	if files, logsOnly := countOutputs(fsys, outputs); files > 0 && logsOnly {
		what = append(what, fmt.Sprintf("%s (%d .log file(s) swamp's method runs write there)", outputs, files))
	}
	if len(what) == 0 {
		return notes
	}
	return append(notes, fmt.Sprintf("swamp's doctor datastores will report %s as un-migrated data; that is swamp's defect, "+
		"not a problem of this repo: the catalog is repo-local and never moves; root outputs logs are folded in by "+
		"the namespace migration", strings.Join(what, " and ")))
}

// countOutputs counts the files below dir and whether all are .log files.
func countOutputs(fsys fsx.FS, dir string) (files int, logsOnly bool) {
	logsOnly = true
	var walk func(d string)
	walk = func(d string) {
		ents, err := fsys.ReadDir(d)
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.IsDir() {
				walk(filepath.Join(d, e.Name()))
				continue
			}
			files++
			logsOnly = logsOnly && strings.HasSuffix(e.Name(), ".log")
		}
	}
	walk(dir)
	return files, logsOnly
}

// report lists every finding; status decides the status of the automatic
// ones (manual ones stay manual).
func (s *survey) report(mode string, moves []Move, status func(*unit) Status) *Report {
	rep := s.newReport(mode)
	if len(moves) > 0 {
		rep.Moves, rep.Quarantine = moves, s.qstamp
	}
	for _, u := range s.units {
		for _, f := range u.findings {
			f.Status = StatusManual
			if f.auto && u.hasRepair() {
				f.Status = status(u)
			}
			rep.Findings = append(rep.Findings, f.Finding)
		}
	}
	for _, f := range rep.Findings {
		if f.Status != StatusRepaired {
			rep.Remaining++
		}
	}
	s.nameModels(rep.Findings)
	return rep
}

// nameModels fills each finding's model name from the model definitions
// (models/{type}/{name}.yaml, as swamp resolves them), else from the
// catalog's model_name.
func (s *survey) nameModels(fs []Finding) {
	names := map[string]string{}
	for id, n := range s.modelNames {
		names[id] = n
	}
	if defs, err := s.r.ModelDefinitions(s.fsys); err == nil {
		for _, d := range defs {
			if d.ID != "" && d.Name != "" {
				names[d.ID] = d.Name
			}
		}
	}
	for i := range fs {
		if fs[i].Item == "" {
			continue
		}
		parts := strings.Split(fs[i].Item, "/")
		if len(parts) >= 3 {
			fs[i].ModelName = names[parts[len(parts)-2]]
		}
	}
}

// reportRepair is the report of a confirmed run: in (nil: nothing ran)
// repaired the allowed units; busy says why the others were skipped.
func (s *survey) reportRepair(in *journal.Intent, status func(*unit) Status, busy map[string]string) *Report {
	var moves []Move
	if in != nil {
		moves = s.plannedMoves(func(u *unit) bool { return status(u) == StatusRepaired })
	}
	rep := s.report("repair", moves, status)
	i := 0
	for _, u := range s.units {
		for range u.findings {
			f := &rep.Findings[i]
			i++
			if f.Status != StatusSkipped {
				continue
			}
			if why, ok := busy[u.lockPath]; ok {
				f.Reason = "swamp's model lock is busy: " + why
			} else {
				f.Reason = "found while repairing (its model lock was not taken); run the doctor again"
			}
		}
	}
	return rep
}

// refused is the report and error of a confirmed repair refused because
// intents are open.
func (s *survey) refused(open []*journal.Intent) (*Report, error) {
	e := report.NewOpenIntentsError(open, "run the doctor again")
	rep := s.report("repair", nil, func(*unit) Status { return StatusSkipped })
	for i := range rep.Findings {
		if rep.Findings[i].Status == StatusSkipped {
			rep.Findings[i].Reason = "an interrupted swampj operation is open; it must be finished (recovered) first"
		}
	}
	return rep, e
}

// ---- small helpers

func unlistable(path string, err error) Finding {
	return Finding{Code: CodeDirectoryUnreadable, Path: path, Message: err.Error(),
		Fix: "none: fix the access problem; nothing below it was checked"}
}

// splitErrors unwraps an errors.Join.
func splitErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func hasCode(ps []store.Problem, c store.Code) bool {
	for _, p := range ps {
		if p.Code == c {
			return true
		}
	}
	return false
}

func problemMessages(ps []store.Problem) string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = strings.TrimPrefix(p.Message, fmt.Sprintf("version %s: ", filepath.Base(filepath.Dir(p.Path))))
	}
	return strings.Join(msgs, "; ")
}

func shortText(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// sameDir reports whether two paths name the same directory.
func sameDir(fsys fsx.FS, a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := fsys.EvalSymlinks(a)
	rb, err2 := fsys.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
