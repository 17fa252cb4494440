// Package doctor finds what an unclean shutdown left behind (issue #3955)
// and takes it out of service without deleting a byte.
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
// dot-directories under the data root, swamp-format §2.7.3) never sees the moved
// metadata.yaml files. Its layout mirrors the data root, so a person can put
// a version back by hand.
//
// Guarantees:
//
//   - Nothing is deleted. Versions, staging directories and catalog copies
//     are renamed; a rewritten `latest` keeps its old bytes in quarantine
//     (and in the journal); removed catalog rows are in the journal.
//   - Each changed item is changed under swamp's per-model lock (swamp-format §8). An item
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
//
// # Reading order
//
// doctor.go (Run, a filesystem datastore's entry point; ops.Doctor
// dispatches on the datastore's kind; the options and the report),
// cachereport.go (what the report adds for an extension datastore's
// cache), codes.go (every
// finding code with its check and remedy, and the survey's phases in
// order), survey.go (the survey: its state and the phases that walk and
// scan), then one file per check family: items.go, catalog.go,
// staging.go, locks.go, records.go, inflight.go (what a live writer is
// doing), swamp.go (swamp's own checks); plan.go (the repair intent),
// repair.go (running it, under which locks), findings.go (the report),
// helpers.go. An extension datastore (S3, GCS): package ops/doctor/cache
// (the checks of swamp's local cache of the bucket, and its repair under
// the bucket's lock), in this package's findings and report.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/repo"
)

// IntentKindRepair is the journal kind of a doctor repair.
const IntentKindRepair = "repair"

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
	// Then is the action that follows Remedy, when one does (a person
	// makes the catalog writable, then the repair rebuilds it); "" when
	// Remedy is all there is to do.
	Then   report.Remedy `json:"then,omitempty"`
	Status Status        `json:"status"`
	// Next, for a finding of an extension datastore's cache, is what
	// swamp does next with its file when nothing intervenes (NextPush,
	// NextServe, NextRepull); NextSays says it in words. "" elsewhere.
	Next     string `json:"next,omitempty"`
	NextSays string `json:"nextSays,omitempty"`
	// Reason says why a finding was skipped.
	Reason string `json:"reason,omitempty"`

	// swampCheck is the id of the swamp check a CodeSwampCheck finding
	// reports.
	swampCheck string
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
	// Common is the file system, the lock timeouts, the recorded command
	// and the logger. SwampLockTimeout bounds the wait, per model, for
	// swamp's per-model lock; a model whose lock stays busy is skipped (0:
	// the same as JournalLockTimeout). The Logger receives warnings (a
	// journal moved aside, a lock not released) at level Warn, and the
	// executor's step records of a repair at level Debug.
	host.Common
	// Now is the clock of the quarantine stamp (nil: time.Now).
	Now func() time.Time
	// VerifyChecksum also hashes every raw and compares it with the metadata
	// checksum (reads all data; a zero-filled raw of the right size is only
	// found this way).
	VerifyChecksum bool
	// Progress, if set, receives "scanning" (or, with VerifyChecksum,
	// "verifying checksums"): items scanned of the items walked so far.
	Progress report.Progress
	// Only, when not nil, limits the check to these data-name directories
	// and run-record files (ChangedItems after a command): the items, their
	// catalog rows and the staging directories inside them, and those
	// records (with their .log). Other items, records, catalog copies and
	// swamp's repo-wide checks are not looked at.
	Only []string
	// ChangedSince, when set, limits the check of an extension
	// datastore's cache to the files modified at or after it (what a
	// wrapped command wrote) and the items they are in.
	ChangedSince time.Time
	// Env looks environment variables up (nil: the process environment):
	// SWAMP_DATASTORE, SWAMP_HOME and HOME say which datastore and which
	// cache ops.Doctor checks, and the bucket lock reads its credentials.
	Env func(string) string
	// BucketLock takes the lock in the bucket that a repair of an
	// extension datastore's cache runs under (nil: the datastore's own,
	// over S3 or GCS); SwampLockTimeout bounds the wait for it.
	BucketLock remote.Locker

	// quarantine, when set, is the quarantine directory to use (the one
	// the lock intent of the same run created).
	quarantine string
	// warn is Logger's Warn (withDefaults).
	warn func(string)
	// journalDamaged is why the journal could not be read (nil: it could,
	// or there is none): a finding, and no open intents are known.
	journalDamaged *journal.CorruptError
	// otherRoot: this run surveys the un-namespaced root of a namespaced
	// repo beside the configured one (otherroot.go): the repo-wide checks
	// (journal, catalog copies, swamp's checks, always-local directories)
	// are the configured run's.
	otherRoot bool
	// staleBefore is the journal's stale-catalog mark as the run found
	// it, for the catalog work a confirmed repair does in its session
	// (settleCatalog).
	staleBefore *journal.CatalogStale
}

// WithDefaults is o with its zero fields set to their defaults: the
// journal's lock timeout, SwampLockTimeout as JournalLockTimeout,
// time.Now, the process environment, and warnings to the Logger.
func (o Options) WithDefaults() Options {
	if o.JournalLockTimeout <= 0 {
		o.JournalLockTimeout = journal.DefaultLockTimeout
	}
	if o.SwampLockTimeout <= 0 {
		o.SwampLockTimeout = o.JournalLockTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Env == nil {
		o.Env = os.Getenv
	}
	o.warn = session.WarnTo(o.Logger)
	return o
}

// Report is what Doctor found and did.
type Report struct {
	Repo      string `json:"repo"`
	DataRoot  string `json:"dataRoot"`
	Namespace string `json:"namespace"`
	// OtherDataRoot is the un-namespaced data root of a namespaced repo,
	// checked too when it exists (swamp does not read it while the
	// namespace is set); OtherItems and OtherVersions are what it holds.
	OtherDataRoot string `json:"otherDataRoot,omitempty"`
	OtherItems    int    `json:"otherItems,omitempty"`
	OtherVersions int    `json:"otherVersions,omitempty"`
	Catalog       string `json:"catalog"`
	// Mode is "check", "preview" or "repair".
	Mode     string `json:"mode"`
	Items    int    `json:"items"`    // data items checked
	Versions int    `json:"versions"` // version directories checked
	// ChecksumsVerified: every raw was read and its SHA-256 compared with
	// metadata.yaml (Options.VerifyChecksum). Without it a raw of the
	// right size but the wrong bytes (zeros after a crash) is not found.
	ChecksumsVerified bool `json:"checksumsVerified"`
	// StepLatestColumn: the catalog has is_step_latest (swamp-format §11).
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
	// Notices are the notes and then the warnings, each with its remedy
	// (notice.go).
	Notices []Notice `json:"notices"`
	// ReadOnly: the datastore is on read-only media. The data checks ran
	// in full; swamp cannot write here, which is a note (its health check
	// fails), not a finding.
	ReadOnly bool `json:"readOnly"`
	// NotWritable: this user may read the datastore but not write it (a
	// permission, not the media). The data checks ran in full; that swamp
	// run as this user cannot write here is a note, not a finding.
	NotWritable bool `json:"notWritable"`
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
	// Checks is every check, passed or not, by stable id (codes.go).
	Checks []Check `json:"checks"`
	// Outcome is what the run leaves (outcome.go); Actions what to do
	// next, in order, for the findings still there.
	Outcome Outcome  `json:"outcome"`
	Actions []Action `json:"actions"`
	// Cache is set when the datastore is an extension datastore (S3,
	// GCS): the data root checked is swamp's local cache of the bucket
	// (ops/doctor/cache), and the catalog and item counts are not looked at.
	Cache *CacheReport `json:"cache,omitempty"`

	// catalogRebuilt: the repair rebuilt a damaged catalog.
	catalogRebuilt bool
	// catalogSettled: the repair did its catalog work (a damaged
	// catalog's rebuild, settleCatalog) in its own journal session.
	catalogSettled bool
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

// Run checks the repo's data root and catalog (a filesystem datastore:
// ops.Doctor checks any kind), and with opts.Repair
// plans (and with opts.Confirm executes) the repair. It never prints. The
// report is returned with a *OpenIntentsError when a confirmed repair
// is refused; a lock that cannot be had is a journal or lock timeout error.
func Run(ctx context.Context, r *repo.Repo, opts Options) (*Report, error) {
	fsys := opts.Disk()
	o := opts.WithDefaults()
	if o.Confirm && !o.Repair {
		return nil, errors.New("doctor: Confirm requires Repair")
	}
	// The format marker before the journal or any lock (swamp-format §13.1).
	var formatWarning string
	if err := repo.RefuseUnknownFormat(fsys, r.Base, o.Confirm, func(w string) { formatWarning = w }); err != nil {
		return nil, err
	}
	open, stale, err := journalState(r, o)
	var damaged *journal.CorruptError
	if errors.As(err, &damaged) && !o.Confirm {
		// A journal that cannot be read hides the interrupted operations
		// it may hold, not the data: the data is checked all the same and
		// the damaged journal is one finding among the others.
		o.journalDamaged, err = damaged, nil
	}
	var setAside string
	if errors.As(err, &damaged) && o.Confirm {
		// A confirmed repair sets a damaged journal aside as recovery does
		// (nothing is deleted) and repairs the data with a fresh one: the
		// operations it may have held are unknown either way, and the data
		// is what the repair is for.
		setAside, err = setJournalAside(r, o)
		if err == nil {
			open, stale, err = journalState(r, o)
		}
	}
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
		if open, stale, err = journalState(r, o); err != nil {
			return nil, err
		}
	}
	o.staleBefore = stale
	rep, err := runDoctor(ctx, fsys, r, o, open)
	if rep != nil && setAside != "" {
		msg := fmt.Sprintf("the journal %s was damaged (%s): moved it to %s (nothing is deleted) and started a fresh one; "+
			"an interrupted operation it may have recorded is finished by running that operation again", r.JournalPath, damaged.Reason, setAside)
		rep.Warnings = append(rep.Warnings, msg)
		rep.Notices = append(rep.Notices, Notice{Kind: NoticeWarning, Message: msg, Remedy: report.RemedyNone})
	}
	switch {
	case rep == nil:
	case o.Confirm && err == nil && rep.catalogSettled:
	case o.Confirm && err == nil:
		if err := settleCatalog(ctx, r, o, rep, stale, nil); err != nil {
			return nil, err
		}
	default:
		st := map[string]Status{"check": StatusFound, "preview": StatusWouldRepair}[rep.Mode]
		if st == "" {
			st = StatusSkipped // a refused repair
		}
		rep.wholeCatalog(stale, o, st)
		rep.markOpenIntents(st)
	}
	if rep != nil && err == nil {
		if err := rep.checkOtherRoot(ctx, fsys, r, o); err != nil {
			return nil, err
		}
	}
	if rep != nil {
		if formatWarning != "" {
			rep.Warnings = append([]string{formatWarning}, rep.Warnings...)
			rep.Notices = append([]Notice{warningNotice(formatWarning)}, rep.Notices...)
		}
		rep.Tally()
	}
	return rep, err
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
	if s.catalogDamaged && !o.otherRoot && !rep.catalogSettled {
		if err := repairDamagedCatalog(ctx, nil, r, o, rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// markOpenIntents gives an open intent that recovery can finish the status
// of a finding the repair fixes: a confirmed repair finishes every open
// intent before it plans (finishOpen). One recovery would stop at (a
// conflict, whose remedy is a person's) stays manual.
func (rep *Report) markOpenIntents(st Status) {
	for i := range rep.Findings {
		if f := &rep.Findings[i]; f.Code == CodeOpenIntent && f.Status == StatusManual && !f.Remedy.Human() && st != StatusSkipped {
			f.Status = st
		}
	}
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

// journalState reads the journal's open intents and its
// stale-catalog mark without creating a journal that does not exist, and
// without writing (read-only media): a confirmed repair checks again under
// the journal's write lock.
func journalState(r *repo.Repo, o Options) ([]*journal.Intent, *journal.CatalogStale, error) {
	return session.InspectState(o.Common, r.JournalPath)
}

// setJournalAside opens the damaged journal for writing, which moves it
// aside (journal.Open, through the session as every journal the doctor
// opens) and leaves room for a fresh one; it returns where it went.
func setJournalAside(r *repo.Repo, o Options) (string, error) {
	sess, err := session.Open(o.Common, r.JournalPath)
	if err == nil {
		return "", sess.Close() // readable after all (repaired by another process meanwhile)
	}
	var moved *journal.CorruptError
	if errors.As(err, &moved) && moved.MovedTo != "" {
		return moved.MovedTo, nil
	}
	return "", err
}
