package doctor

// The survey: its state, the phases that walk the data root and scan each
// item (store.WalkScan), and the per-item pass. It changes nothing.

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync/atomic"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// soloSegment is the quarantine segment of a solo repo; namespaces
// cannot contain "_" (swamp-format §1.5), so it never collides with one.
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
	blocked string
	// blockedBy is the person's action blocked names (RemedyFixAccess
	// when unset).
	blockedBy report.Remedy
	findings  []unitFix

	moves      []Move
	rmdirs     []string                    // directories the moves empty, removed after them (hiddenlocal.go)
	lockMoves  []lockMove                  // dead lock files, moved by the lock intent
	holderFix  bool                        // a stale journal holder record: replaced by opening the journal
	keepLatest *journal.Step               // a copy of the old `latest`, into quarantine
	latest     *journal.Step               // `latest` rewritten
	catalog    *protocol.RepairCatalogItem // rows Before → After
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
	open []*journal.Intent // the journal's open intents (checkOpenIntents)

	// general holds the findings with no repair of their own.
	general *unit
	w       walkState
	// catRead is the catalog being read beside the walk (nil: read in
	// mergeCatalog, or already merged).
	catRead *catalogRead

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

	// For swamp's own checks (swamp.go): items on disk per type,
	// whether the catalog is populated, how many rows it has here.
	diskByType map[string]int
	modelNames map[string]string // model id → name (catalog rows, then definitions)
	notes      []Notice          // added to swampDoctorNotes
	// readOnly: the datastore is on read-only media (swamp's health check
	// fails for that alone: a note, not a finding).
	readOnly bool
	// notWritable: this user may not write the datastore (permission);
	// like readOnly, a note, not a finding.
	notWritable bool
	// catalogUnread: a catalog exists but could not be read here, so
	// swamp's completeness check was not computed.
	catalogUnread bool
	populated     bool
	catalogRows   int
	swamp         []SwampCheck
}

// walkState is what the walk and the scan (phase scanItems) found, for
// the phases after them.
type walkState struct {
	// only: with Options.Only, the item directories looked at (nil: all).
	only     map[string]bool
	walked   []store.Item                    // every item walked, in walk order
	items    []*surveyItem                   // the scanned ones (on disk)
	orphans  []*surveyItem                   // named by catalog rows only
	byKey    map[catalog.ItemKey]*surveyItem // nil value: on disk, not scannable
	itemDirs map[string]bool
	// listings are the walk's and the scan's directory listings, kept for
	// the search for lock files and for staging leftovers, which would
	// otherwise list the whole tree again.
	listings map[string][]fs.DirEntry
	// early: each model's lock, judged as soon as the walk listed the model
	// directory, before any of its items was scanned (inflight.go).
	early map[string]earlyLock
	// rows are the catalog's rows of the namespace, by item.
	rows []rowGroup
}

// surveyDoctor walks the data root, reads the catalog, and decides every
// finding and its repair. It changes nothing. Its phases run in the order
// of the phases table (codes.go); each is one function of its check
// family's file.
func surveyDoctor(ctx context.Context, fsys fsx.FS, r *repo.Repo, o Options, open []*journal.Intent) (*survey, error) {
	s := &survey{fsys: fsys, r: r, o: o, open: open, general: &unit{}}
	// The catalog is read on a goroutine of its own while the walk and the
	// scan run (on a file system that allows concurrent use): it shares no
	// state with them, and read after the scan it kept one core busy and
	// the other idle for a fifth of the doctor's time. Its findings and
	// warnings are merged where a sequential read would have put them
	// (phase mergeCatalog).
	if fsx.Concurrent(fsys) {
		s.catRead = s.startCatalog(ctx, true)
	}
	defer func() {
		if s.catRead != nil {
			s.catRead.wait()
		}
		if s.cat != nil {
			s.cat.Close()
			s.cat = nil
		}
	}()
	if err := s.chooseQuarantine(); err != nil {
		return nil, err
	}
	s.w.byKey = map[catalog.ItemKey]*surveyItem{}
	s.w.itemDirs = map[string]bool{}
	s.w.listings = map[string][]fs.DirEntry{}
	s.w.early = map[string]earlyLock{}
	if o.Only != nil {
		s.w.only = map[string]bool{}
		for _, d := range o.Only {
			s.w.only[filepath.Clean(d)] = true
		}
	}
	for _, p := range phases {
		if (p.whole && s.w.only != nil) || (p.repoWide && o.otherRoot) {
			continue
		}
		if p.progress != "" {
			o.Progress.Emit(p.progress, 0, 0, "")
		}
		if err := p.run(s, ctx); err != nil {
			return nil, err
		}
	}
	if len(s.general.findings) > 0 {
		s.units = append([]*unit{s.general}, s.units...)
	}
	return s, nil
}

// checkOpenIntents reports each interrupted operation, and where recovery
// would stop on this disk: observed, not remembered.
func (s *survey) checkOpenIntents(ctx context.Context) error {
	if d := s.o.journalDamaged; d != nil {
		s.general.add(Finding{Code: CodeJournalDamaged, Path: d.Path,
			Message: fmt.Sprintf("the journal cannot be read (%s): the interrupted operations it may record are unknown; the data was checked all the same", d.Reason),
			Fix: "recovery moves the damaged journal aside (nothing is deleted) and starts a fresh one; then re-run any operation that was interrupted " +
				"(swampj plans from the disk) and run the doctor again",
			Remedy: report.RemedyRecover, Then: report.RemedyCheckAgain}, false)
	}
	for _, in := range s.open {
		if journal.IntentLive(s.r.JournalPath, in) {
			// A writer beside others (journal/hold.go) is in the middle
			// of it: a write in progress, not an interruption.
			s.notes = append(s.notes, Note(fmt.Sprintf("intent %d (%s: %s) is a write in progress (pid %d, alive); what it touches may change while this runs",
				in.ID, in.Kind, in.Summary, in.PID), report.RemedyCheckAgain))
			continue
		}
		f := Finding{Code: CodeOpenIntent, Path: s.r.JournalPath,
			Message: fmt.Sprintf("intent %d (%s: %s) is unfinished; the data it touches is mid-change", in.ID, in.Kind, in.Summary),
			Fix:     "none: finish the interrupted operation (or roll it back), then run the doctor again", Remedy: report.RemedyRecoverOrRollback, Then: report.RemedyCheckAgain}
		env := &engine.Env{FS: s.fsys, Catalog: protocol.ReportCatalog(s.fsys, s.r.Dir)}
		if i, v, stuck := engine.Stuck(ctx, env, in); stuck {
			f.Message += fmt.Sprintf("; recovery stops at step %d (%s): the disk matches neither the state before nor after it: %s", i+1, v.Description, v.Detail)
			f.Fix = "none: recovery will not guess; inspect the paths named (a recovery dry run shows every step), put back what is missing, then finish the operation (or roll it back) and run the doctor again"
			f.Remedy, f.Then = report.RemedyInspect, report.RemedyRecoverOrRollback
			if in.Kind == "migrate" || in.Kind == "reverse" || in.Kind == "unset-migrate" {
				if p, ok := protocol.FileWhereDirectory(s.fsys, in.Steps[i].Path, in.Steps[i].To); ok {
					// Not a person's guess at what to put back: the
					// obstacle is known, and the migration run again
					// finishes the intent once it is gone.
					f.Fix = protocol.FileWhereDirectoryText(p)
					f.Then = map[string]report.Remedy{"migrate": report.RemedyMigrate, "reverse": report.RemedyMigrateReverse,
						"unset-migrate": report.RemedyUnsetMigrate}[in.Kind]
				}
			}
		}
		env.CloseCatalog()
		s.general.add(f, false)
	}
	return nil
}

// itemScan is one item's scan, made on a worker.
type itemScan struct {
	st  *store.ItemState
	err error
}

// scanItems walks the data root and scans every item (every version's
// files opened, checksums hashed) on a worker per core while the walk goes
// on (store.WalkScan); results are used in walk order, so findings come
// out as a sequential run's would.
func (s *survey) scanItems(ctx context.Context) error {
	o, w := s.o, &s.w
	workers := 1
	if fsx.Concurrent(s.fsys) {
		workers = runtime.GOMAXPROCS(0)
	}
	phase := "scanning"
	if o.VerifyChecksum {
		phase = "verifying checksums"
	}
	// Items scanned of items walked so far, with the versions checked and,
	// verifying checksums, the raw bytes hashed (the renderer's MB/s).
	var walkedN, versionsN, bytesN atomic.Int64
	o.Progress.Emit(phase, 0, 0, "items")
	scannedN := &report.Counter{Progress: o.Progress, Phase: phase, Unit: "items", Every: 8, Total: walkedN.Load,
		Extra: func(ev *report.ProgressEvent) { ev.Versions, ev.Bytes = versionsN.Load(), bytesN.Load() }}
	scan := func(it store.Item) itemScan {
		st, err := store.ScanItem(s.fsys, it, store.CheckOptions{VerifyChecksum: o.VerifyChecksum})
		if st != nil && o.Progress != nil {
			versionsN.Add(int64(len(st.Versions)))
			if o.VerifyChecksum {
				bytesN.Add(hashedBytes(st))
			}
		}
		scannedN.Add(1)
		return itemScan{st, err}
	}
	var scans []itemScan
	walkErr := store.WalkScan(ctx, s.fsys, s.r.DataRoot, store.WalkScanOptions{
		Workers: workers,
		Only:    func(it store.Item) bool { return w.only == nil || w.only[filepath.Clean(it.Dir)] },
		Walked:  func(store.Item) { walkedN.Add(1) },
		Listings: func(dir string, ents []fs.DirEntry) {
			s.judgeEarly(dir, ents, w.early)
			if w.only == nil { // with Only, no search for leftovers
				w.listings[dir] = ents
			}
		},
	}, scan, func(it store.Item, sc itemScan) error {
		w.walked = append(w.walked, it)
		scans = append(scans, sc)
		return nil
	})
	scannedN.Report(scannedN.Done())
	for i, it := range w.walked {
		if err := s.addScanned(it, scans[i]); err != nil {
			return err
		}
	}
	if walkErr != nil {
		if ctx.Err() != nil || fsx.IsCrash(walkErr) {
			return walkErr
		}
		for _, e := range splitErrors(walkErr) {
			s.general.add(unlistable("", e), false)
		}
	}
	for _, e := range w.early {
		if fsx.IsCrash(e.err) {
			return e.err
		}
	}
	return nil
}

// addScanned takes one scanned item into the survey.
func (s *survey) addScanned(it store.Item, sc itemScan) error {
	w := &s.w
	di := &surveyItem{item: it, key: catalog.ItemKey{Namespace: s.r.Namespace, TypeNormalized: it.Type, ModelID: it.ModelID, DataName: it.DataName}}
	w.itemDirs[it.Dir] = true
	if sc.err != nil {
		if fsx.IsCrash(sc.err) {
			return sc.err
		}
		s.general.add(unlistable(it.Dir, sc.err), false)
		w.byKey[di.key] = nil // its rows must not look orphaned
		return nil
	}
	st := sc.st
	di.st = st
	w.listings[it.Dir] = st.Entries
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
	w.items = append(w.items, di)
	w.byKey[di.key] = di
	return nil
}

// checkItems decides each item's findings and repair (items.go), the
// orphans' included, and with Repair reads the full rows a repair needs.
func (s *survey) checkItems(ctx context.Context) error {
	for _, di := range append(s.w.items, s.w.orphans...) {
		if u := s.analyzeItem(di); len(u.findings) > 0 {
			s.units = append(s.units, u)
		}
	}
	if s.o.Repair {
		return s.fullCatalogRows(ctx)
	}
	return nil
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
