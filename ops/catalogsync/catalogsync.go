package catalogsync

// Catalog rebuild and verify: the catalog made true to the disk again.
//
// swamp's own rebuild is additive (§3.7): it never removes the rows of
// versions that vanished or were emptied (issue #3955), never fixes old
// namespace stamps (G18), and its only full repair deletes the file, which
// loses foreign rows (§3.9). Here the disk is walked, the rows the catalog
// should hold for the repo's namespace are built (ExpectedRows), and the
// catalog package compares (catalog.Diff, for verify) or reconciles
// (catalog.Rebuild: Diff and Apply in one transaction) exactly that
// namespace plus the repo's own old stamps.
//
// Guarantees:
//
//   - Both commands hold the journal lock, so no other swampj runs meanwhile,
//     and refuse (rebuild) or report (verify) an interrupted swampj operation
//     still open in the journal: the disk is mid-change until `swampj
//     recover` has run.
//   - verify writes nothing to the catalog: it is opened query-only.
//   - rebuild without Confirm writes nothing either (it opens query-only,
//     and only says what it would create or move aside).
//   - rebuild with Confirm changes the catalog in ONE transaction. A crash or
//     error before the commit leaves the previous catalog as it was. A
//     damaged catalog is moved aside with its sidecars (never deleted) by
//     catalog.Open and rebuilt.
//   - Rows of foreign namespaces (§3.9) are never touched (classifyNamespaces
//     says which namespaces are the repo's old stamps and which are foreign).
//
// Not guaranteed: swamp takes no swampj lock, so a swamp process writing
// between the walk and the commit can leave its new row out (or its old row
// in); a second verify shows it and a second rebuild fixes it.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// CodeTypeNotNormalized is an item problem found by ExpectedRows (beside the
// store package's codes): the type directory is not in normalised form, so
// swamp re-normalises it, looks under another path and never reads the item
// (§2.7.3). It gets no rows.
const CodeTypeNotNormalized store.Code = "type_not_normalized"

// CodeRowInvalid: a readable version whose metadata cannot become a row
// (catalogrow.FromMeta refused it). It is counted as unreadable.
const CodeRowInvalid store.Code = "row_invalid"

// ExpectedOptions configure ExpectedRows.
type ExpectedOptions struct {
	// StepLatestColumn selects the latest-flag rule of a catalog with the
	// §11 is_step_latest column (catalog.Catalog.HasStepLatest). Rebuild and
	// verify set it from the catalog; Expected.Mark changes it afterwards.
	StepLatestColumn bool
	// VerifyChecksum also reads every raw and compares its SHA-256 with the
	// metadata checksum. Off by default: it reads every byte of the datastore.
	VerifyChecksum bool
	// Workers is how many items are scanned at once (0: GOMAXPROCS, at
	// least 2, at most 8). The result does not depend on it.
	Workers int
	// Progress, if set, receives "scanning" (or, with VerifyChecksum,
	// "verifying checksums"): items scanned so far (total unknown).
	Progress report.Progress
}

// Problem is a store.Problem as reports carry it.
type Problem struct {
	Code    store.Code `json:"code"`
	Path    string     `json:"path"`
	Message string     `json:"message"`
}

// UnreadableVersion is a version directory that gets no row: swamp cannot
// read it (or its metadata cannot become a row).
type UnreadableVersion struct {
	Type     string    `json:"type"`
	ModelID  string    `json:"modelId"`
	DataName string    `json:"dataName"`
	Version  int64     `json:"version"`
	State    string    `json:"state"` // incomplete, damaged, missing
	Problems []Problem `json:"problems"`
}

// ItemProblem is a finding about a data item as a whole: its `latest`
// pointer, a non-canonical version directory, a type directory swamp never
// reads.
type ItemProblem struct {
	Type     string  `json:"type"`
	ModelID  string  `json:"modelId"`
	DataName string  `json:"dataName"`
	Problem  Problem `json:"problem"`
}

// itemID names an item on disk, type normalised (the catalog's three key
// columns after the namespace).
type itemID struct{ typ, model, name string }

// Expected is what the catalog should hold for one repo's namespace.
type Expected struct {
	Namespace string `json:"namespace"`
	DataRoot  string `json:"dataRoot"`
	// StepLatestColumn is the rule the flags of Rows follow (Mark).
	StepLatestColumn bool `json:"stepLatestColumn"`
	// Rows is one row per readable version of every item, stamped
	// Namespace, flags set (see Mark), in key order (type, model id, data
	// name, version), the order the diff lists them in. The catalog inserts
	// missing rows in write order, (created_at, version), so that rowid
	// order approximates the order swamp wrote them (G9).
	Rows []catalog.Row `json:"rows"`

	Items    int `json:"items"`    // data items found by the walk
	Versions int `json:"versions"` // canonical version directories on disk
	Readable int `json:"readable"` // versions with a row, plus renamed ones below
	// RenamedItems / RenamedVersions: items whose latest version is a
	// rename tombstone (lifecycle deleted + renamedTo). swamp's rename
	// removes every row of the old item (§2.6.6, §3.6) and its backfill
	// skips it (§3.7), so they get no rows; their readable versions are
	// counted here, not as unreadable.
	RenamedItems    int                 `json:"renamedItems"`
	RenamedVersions int                 `json:"renamedVersions"`
	Unreadable      []UnreadableVersion `json:"unreadable"`
	ItemProblems    []ItemProblem       `json:"itemProblems"`

	items map[itemID]bool  // every item found on disk, rows or not
	caps  map[itemID]int64 // per item: the version the flags may not pass
}

// HasItem reports whether the walk found the item (type normalised), with
// or without readable versions.
func (e *Expected) HasItem(typeNorm, modelID, dataName string) bool {
	return e.items[itemID{typeNorm, modelID, dataName}]
}

// Mark sets IsLatest and IsStepLatest on Rows by the rule of a catalog with
// (stepLatestColumn) or without the §11 column:
//
//   - Only versions at or below the item's committed latest take part. That
//     is the version `latest` designates when it is readable; when `latest`
//     is missing or unparsable, swamp's fallback, the highest version — but
//     never an unreadable one: then the highest readable version not above
//     the designated one, or failing that the highest readable version.
//     Versions above it are uncommitted deferred writes or crash remnants
//     (G8); swamp's saveDeferred leaves their flags 0 (§2.6.4), and so does
//     this. They still get rows.
//   - Among those, catalog.MarkLatest decides: the highest version of each
//     is_latest group (the item with the column; the item and step_name
//     without it, §3.5) and of each (workflow, job, step) group (§11).
//
// When no version is above the cap (the normal case) this is exactly
// catalog.MarkLatest over the item's rows.
func (e *Expected) Mark(stepLatestColumn bool) {
	e.StepLatestColumn = stepLatestColumn
	byItem := map[itemID][]int{}
	for i := range e.Rows {
		r := &e.Rows[i]
		r.IsLatest, r.IsStepLatest = false, false
		id := itemID{r.TypeNormalized, r.ModelID, r.DataName}
		if r.Version <= e.caps[id] {
			byItem[id] = append(byItem[id], i)
		}
	}
	var buf []catalog.Row
	for id, idx := range byItem {
		buf = buf[:0]
		for _, i := range idx {
			buf = append(buf, e.Rows[i])
		}
		catalogrow.MarkLatestBelow(buf, e.caps[id], stepLatestColumn)
		for k, i := range idx {
			e.Rows[i].IsLatest, e.Rows[i].IsStepLatest = buf[k].IsLatest, buf[k].IsStepLatest
		}
	}
}

// scanned is one item's contribution, built by a worker.
type scanned struct {
	id         itemID
	unread     bool // swamp never reads the item (type not normalised)
	rows       []catalog.Row
	cap        int64
	versions   int
	readable   int
	renamed    bool
	unreadable []UnreadableVersion
	problems   []ItemProblem
	err        error
}

// ExpectedRows walks the repo's data root (store.Walk, store.ScanItem) and
// builds the rows the catalog should hold for r.Namespace: one row per
// readable version (catalogrow.FromMeta, stamped with the repo's namespace,
// G18), flags by Expected.Mark. Unreadable versions are skipped and listed
// with their problems; they are not an error. The error is non-nil only when
// the walk itself fails (a directory that cannot be listed, ctx).
//
// Cost: the walk's ReadDirs, and per version one read of metadata.yaml and
// one stat of raw (content only with VerifyChecksum).
func ExpectedRows(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts ExpectedOptions) (*Expected, error) {
	fsys = fsx.OrReal(fsys)
	e := &Expected{
		Namespace:    r.Namespace,
		DataRoot:     r.DataRoot,
		Rows:         []catalog.Row{},
		Unreadable:   []UnreadableVersion{},
		ItemProblems: []ItemProblem{},
		items:        map[itemID]bool{},
		caps:         map[itemID]int64{},
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = min(max(runtime.GOMAXPROCS(0), 2), 8)
	}
	check := store.CheckOptions{VerifyChecksum: opts.VerifyChecksum}

	// The walk feeds items in order; workers scan them; results are merged
	// in walk order, so the outcome does not depend on scheduling.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		item store.Item
		out  chan scanned
	}
	jobs := make(chan job, workers*4)
	order := make(chan chan scanned, workers*16)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.out <- scanItem(fsys, r.Namespace, j.item, check)
			}
		}()
	}
	walkErr := make(chan error, 1)
	go func() {
		defer close(order)
		defer close(jobs)
		walkErr <- store.Walk(ctx, fsys, r.DataRoot, func(it store.Item) error {
			out := make(chan scanned, 1)
			select {
			case jobs <- job{it, out}:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case order <- out:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		})
	}()

	var firstErr error
	var perItem [][]catalog.Row
	total := 0
	phase := "scanning"
	if opts.VerifyChecksum {
		phase = "verifying checksums"
	}
	opts.Progress.Emit(phase, 0, 0, "items")
	for out := range order {
		s := <-out
		if s.err != nil {
			if firstErr == nil {
				firstErr = s.err
				cancel()
			}
			continue
		}
		e.merge(s)
		perItem = append(perItem, s.rows)
		total += len(s.rows)
		if opts.Progress != nil && int64(e.Items)%8 == 0 {
			opts.Progress.Emit(phase, int64(e.Items), 0, "items")
		}
	}
	wg.Wait()
	if err := <-walkErr; err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return nil, firstErr
	}

	// Walk order is key order but for type names that sort differently
	// as paths and as strings ("a/b" walks before "a-c"); sort by key,
	// moving each ~400-byte row once.
	sort.SliceStable(perItem, func(i, j int) bool { return lessItem(perItem[i], perItem[j]) })
	e.Rows = make([]catalog.Row, 0, total)
	for _, rows := range perItem {
		e.Rows = append(e.Rows, rows...)
	}
	e.Mark(opts.StepLatestColumn)
	return e, nil
}

// lessItem orders two items' row lists (versions ascending within each) by
// the key of their first row; items without rows come first.
func lessItem(a, b []catalog.Row) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == 0 && len(b) != 0
	}
	x, y := a[0], b[0]
	switch {
	case x.TypeNormalized != y.TypeNormalized:
		return x.TypeNormalized < y.TypeNormalized
	case x.ModelID != y.ModelID:
		return x.ModelID < y.ModelID
	}
	return x.DataName < y.DataName
}

func (e *Expected) merge(s scanned) {
	e.Items++
	e.ItemProblems = append(e.ItemProblems, s.problems...)
	if s.unread {
		// Not registered: its normalised key may be another, real item's.
		return
	}
	e.items[s.id] = true
	e.Versions += s.versions
	e.Readable += s.readable
	if s.renamed {
		e.RenamedItems++
		e.RenamedVersions += s.readable
	}
	e.caps[s.id] = s.cap
	e.Unreadable = append(e.Unreadable, s.unreadable...)
}

// itemLevel are the store codes about an item rather than one version.
var itemLevel = map[store.Code]bool{
	store.CodeLatestMissing:          true,
	store.CodeLatestEmpty:            true,
	store.CodeLatestUnparsable:       true,
	store.CodeLatestInvalid:          true,
	store.CodeLatestNotFound:         true,
	store.CodeLatestUnreadable:       true,
	store.CodeNonCanonicalVersionDir: true,
	store.CodeNoVersions:             true,
}

// scanItem builds one item's rows and findings.
func scanItem(fsys fsx.FS, ns string, it store.Item, check store.CheckOptions) scanned {
	s := scanned{id: itemID{it.Type, it.ModelID, it.DataName}}
	if norm := meta.NormalizeType(it.Type); norm != it.Type {
		// swamp looks this item up under norm and finds nothing (§2.7.3).
		s.unread = true
		s.problems = append(s.problems, ItemProblem{Type: it.Type, ModelID: it.ModelID, DataName: it.DataName,
			Problem: Problem{Code: CodeTypeNotNormalized, Path: it.Dir,
				Message: fmt.Sprintf("type directory %q is not normalised (%q); swamp never reads this item", it.Type, norm)}})
		return s
	}
	st, err := store.ScanItem(fsys, it, check)
	if err != nil {
		s.err = err
		return s
	}
	for _, p := range st.Problems {
		if itemLevel[p.Code] {
			s.problems = append(s.problems, ItemProblem{Type: it.Type, ModelID: it.ModelID, DataName: it.DataName,
				Problem: Problem{Code: p.Code, Path: p.Path, Message: p.Message}})
		}
	}

	// The committed latest: what `latest` designates if readable, else the
	// last good version at or below it, else the highest readable (G8).
	top := st.LatestReadable
	if top == nil {
		top = st.LastGood
	}
	if top == nil {
		top = st.HighestReadable
	}
	if top != nil {
		s.cap = top.Number
		s.renamed = top.Metadata.Lifecycle == "deleted" && top.Metadata.RenamedTo != ""
	}

	s.versions = len(st.Versions)
	for _, v := range st.Versions {
		if !v.Readable() {
			s.unreadable = append(s.unreadable, unreadableOf(it, v.Number, v.State.String(), v.Problems))
			continue
		}
		row, err := catalogrow.FromMeta(ns, it.Type, it.ModelID, v.Metadata)
		if err != nil {
			s.unreadable = append(s.unreadable, unreadableOf(it, v.Number, "damaged",
				[]store.Problem{{Code: CodeRowInvalid, Path: v.MetadataPath, Message: err.Error()}}))
			continue
		}
		s.readable++
		if !s.renamed {
			s.rows = append(s.rows, row)
		}
	}
	return s
}

func unreadableOf(it store.Item, v int64, state string, ps []store.Problem) UnreadableVersion {
	u := UnreadableVersion{Type: it.Type, ModelID: it.ModelID, DataName: it.DataName, Version: v, State: state, Problems: []Problem{}}
	for _, p := range ps {
		u.Problems = append(u.Problems, Problem{Code: p.Code, Path: p.Path, Message: p.Message})
	}
	return u
}

// Options configure Rebuild and Verify.
type Options struct {
	// Confirm makes Rebuild change the catalog; without it the
	// rebuild only reports what it would change. Verify ignores it.
	Confirm bool
	// LockTimeout bounds the wait for another swampj (0: journal default).
	LockTimeout time.Duration
	// Command is recorded as the journal lock holder.
	Command []string
	// VerifyChecksum, Workers and Progress are passed to ExpectedRows.
	VerifyChecksum bool
	Workers        int
	Progress       report.Progress
	// Logger receives warnings (a journal moved aside) at level Warn
	// (nil: nothing is logged).
	Logger *slog.Logger
}

// StaleNamespace is another namespace's rows that rebuild treats as this
// repo's old stamps (staleNamespaces) and reconciles.
type StaleNamespace struct {
	Namespace string `json:"namespace"`
	Rows      int    `json:"rows"`
	Reason    string `json:"reason"`
}

// ForeignNamespace is another namespace's rows that are kept untouched.
type ForeignNamespace struct {
	Namespace string `json:"namespace"`
	Rows      int    `json:"rows"`
	Reason    string `json:"reason"`
}

// Counts sums up a report.
type Counts struct {
	Items           int `json:"items"`
	VersionsOnDisk  int `json:"versionsOnDisk"`
	Readable        int `json:"readable"`
	Unreadable      int `json:"unreadable"`
	RenamedVersions int `json:"renamedVersions"`
	ExpectedRows    int `json:"expectedRows"`
	RowsMissing     int `json:"rowsMissing"`
	RowsStale       int `json:"rowsStale"`
	FlagsWrong      int `json:"flagsWrong"`
	FieldsWrong     int `json:"fieldsWrong"`
	WrongNamespace  int `json:"wrongNamespace"`
	ForeignKept     int `json:"foreignKept"`
}

// Report is what Rebuild and Verify found and did.
type Report struct {
	Command   string `json:"command"` // "verify" or "rebuild"
	Repo      string `json:"repo"`
	Catalog   string `json:"catalog"`
	DataRoot  string `json:"dataRoot"`
	Namespace string `json:"namespace"`
	// Confirmed: a rebuild run with Confirm. Applied: it committed a change.
	Confirmed bool `json:"confirmed"`
	Applied   bool `json:"applied"`
	// InSync: the catalog agreed with the disk before anything was done.
	InSync bool `json:"inSync"`
	// CatalogMissing: there was no catalog (verify, preview); a confirmed
	// rebuild creates it (CatalogCreated).
	CatalogMissing bool `json:"catalogMissing"`
	CatalogCreated bool `json:"catalogCreated"`
	// CatalogDamaged is why the catalog is unusable (verify, preview: a
	// confirmed rebuild would move it aside); MovedAside is what a confirmed
	// rebuild moved.
	CatalogDamaged   string             `json:"catalogDamaged,omitempty"`
	MovedAside       *catalog.MoveAside `json:"movedAside,omitempty"`
	StepLatestColumn bool               `json:"stepLatestColumn"`
	// Populated is catalog_meta.populated as found (§3.7).
	Populated bool `json:"populated"`
	// NotBuilt: the catalog exists but holds no row at all and is not
	// marked populated — what swamp leaves after invalidating or
	// recreating it (its own namespace migrate does both, §3.8). That is
	// not drift: swamp fills it with its full backfill on its next read,
	// and 'swampj catalog rebuild --confirm' (or a confirmed swampj
	// migrate) builds it now. Verify reports the rows it would hold as
	// missing but does not count them as a disagreement.
	NotBuilt bool `json:"notBuilt"`
	// OpenIntents is how many interrupted swampj operations the journal
	// holds (verify reports them; rebuild refuses to run while there are).
	OpenIntents       int                 `json:"openIntents"`
	Counts            Counts              `json:"counts"`
	StaleNamespaces   []StaleNamespace    `json:"staleNamespaces"`
	ForeignNamespaces []ForeignNamespace  `json:"foreignNamespaces"`
	Unreadable        []UnreadableVersion `json:"unreadable"`
	ItemProblems      []ItemProblem       `json:"itemProblems"`
	Diff              *catalog.Diff       `json:"diff"`
	// UnmigratedData names the un-namespaced data directory that still
	// holds data while a namespace is configured: its rows are not
	// expected (they do not describe data in the namespace), and migrating
	// first keeps them (the migration restamps them).
	UnmigratedData string `json:"unmigratedData,omitempty"`
	// SoloView (rebuild only): the namespace's own data root holds no data,
	// so the rebuild describes the un-migrated data where it is, stamped
	// solo — what a reverse migration that keeps the namespace leaves —
	// and Namespace and DataRoot are the solo ones. With data on both
	// sides a confirmed rebuild refuses (*UnmigratedError) instead.
	SoloView bool `json:"soloView,omitempty"`
	// CatalogStale is the journal's mark that a swampj operation could not
	// update the catalog (verify): a confirmed rebuild clears it.
	CatalogStale *journal.CatalogStale `json:"catalogStale,omitempty"`
	// Timings says where a confirmed rebuild spent its time.
	Timings *Timings `json:"timings,omitempty"`
}

// Timings is where a confirmed rebuild spent its time (wall clock,
// nanoseconds in JSON), phase by phase: the numbers that say whether the
// disk walk or SQLite is what a rebuild waits for.
type Timings struct {
	Lock  time.Duration `json:"lock"`  // the journal lock taken and its open intents listed
	Open  time.Duration `json:"open"`  // catalog.Open with its integrity check
	Scan  time.Duration `json:"scan"`  // the walk, every version read and checked, rows built and flagged
	Other time.Duration `json:"other"` // the catalog's other namespaces classified
	catalog.RebuildTimings
	Close time.Duration `json:"close"` // the catalog closed (SQLite checkpoints its WAL into the file)
}

// UnmigratedError refuses a confirmed rebuild while data still sits at the
// un-namespaced path: the rebuild would drop rows that a migration keeps.
type UnmigratedError struct{ Path, Namespace string }

func (e *UnmigratedError) Code() string { return "unmigrated_data" }
func (e *UnmigratedError) Error() string {
	return fmt.Sprintf("namespace %q is configured but data still sits at %s; migrate it into the namespace first "+
		"(it keeps the catalog rows of that data), then rebuild", e.Namespace, e.Path)
}

// unmigratedData returns {base}/data when a namespace is configured and that
// directory holds anything but catalog files.
func unmigratedData(fsys fsx.FS, r *repo.Repo) string {
	if r.Namespace == "" {
		return ""
	}
	dir := filepath.Join(r.Base, "data")
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if !repo.IsCatalogFile(e.Name()) {
			return dir
		}
	}
	return ""
}

// namespaceHoldsNoData reports whether the configured namespace's data
// root holds no version, item or damaged entry a rebuild would see (it may
// be missing, or hold empty directories): the same walk the rebuild does.
func namespaceHoldsNoData(ctx context.Context, fsys fsx.FS, r *repo.Repo) (bool, error) {
	exp, err := ExpectedRows(ctx, fsys, r, ExpectedOptions{})
	if err != nil {
		return false, err
	}
	return exp.Items == 0 && exp.Versions == 0 && len(exp.Rows) == 0 && len(exp.Unreadable) == 0 && len(exp.ItemProblems) == 0, nil
}

// soloView is r as the rebuild of un-migrated data sees it: no namespace,
// its data root the solo one ({Base}/data).
func soloView(r *repo.Repo) *repo.Repo {
	solo := *r
	solo.Namespace = ""
	if !r.DataLocal {
		solo.DataRoot = filepath.Join(r.Base, "data")
	}
	return &solo
}

// Rebuild makes the catalog's rows for the repo's namespace equal to
// the data on disk (see the file comment for the guarantees). While a
// namespace is configured over data that still sits at the solo path, it
// rebuilds the solo rows of that data if the namespace itself holds none
// (Report.SoloView), and refuses (*UnmigratedError) if both do. Without
// opts.Confirm it only reports. It holds the journal lock throughout and
// refuses while the journal holds an open intent (*OpenIntentsError).
func Rebuild(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options) (*Report, error) {
	fsys = fsx.OrReal(fsys)
	rep := newReport("rebuild", r)
	rep.Confirmed = opts.Confirm
	rep.UnmigratedData = unmigratedData(fsys, r)
	if rep.UnmigratedData != "" {
		empty, err := namespaceHoldsNoData(ctx, fsys, r)
		if err != nil {
			return nil, err
		}
		if !empty {
			if opts.Confirm {
				return nil, &UnmigratedError{Path: rep.UnmigratedData, Namespace: r.Namespace}
			}
		} else {
			// Everything sits at the solo path and the namespace's own
			// data root holds nothing: what a reverse migration that keeps
			// the namespace leaves, or a forward one rolled back. The
			// catalog then describes that data where it is, stamped solo,
			// as the migration's restamp leaves it; the rebuild makes it
			// so (rows still stamped with the namespace are this repo's
			// old stamps: re-stamped solo when their version is there).
			// Refusing here was a wedge: when that restamp's commit failed,
			// the stale-catalog mark it left could only be cleared by a
			// rebuild, and the rebuild refused.
			unmigrated := rep.UnmigratedData
			r = soloView(r)
			rep = newReport("rebuild", r)
			rep.Confirmed, rep.UnmigratedData, rep.SoloView = opts.Confirm, unmigrated, true
		}
	}
	if !opts.Confirm {
		// The preview is an inspection: the journal is only read.
		j, open, err := readJournalListOpen(fsys, r, opts)
		if err != nil {
			return nil, err
		}
		defer j.Close()
		if len(open) > 0 {
			return nil, report.NewOpenIntentsError(open, "rebuild the catalog")
		}
		return verifyLocked(ctx, fsys, r, opts, rep)
	}
	tm := &Timings{}
	mark := time.Now()
	lap := func(d *time.Duration) {
		now := time.Now()
		*d += now.Sub(mark)
		mark = now
	}
	sess, open, err := lockJournalListOpen(fsys, r, opts)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	j := sess.Journal()
	if len(open) > 0 {
		return nil, report.NewOpenIntentsError(open, "rebuild the catalog")
	}
	lap(&tm.Lock)

	c, err := catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{Mode: catalog.ModeReadWrite})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rep.MovedAside = c.MovedAside()
	rep.CatalogCreated = c.Created()
	if rep.Populated, err = c.Populated(ctx); err != nil {
		return nil, err
	}
	lap(&tm.Open)
	exp, err := ExpectedRows(ctx, fsys, r, expectedOpts(opts, c.HasStepLatest()))
	if err != nil {
		return nil, err
	}
	lap(&tm.Scan)
	stale, err := classifyInto(ctx, fsys, r, c, exp, rep)
	if err != nil {
		return nil, err
	}
	lap(&tm.Other)
	// One transaction: read the rows, diff, apply, commit (catalog/bulk.go).
	opts.Progress.Emit("writing catalog", 0, 0, "")
	d, applied, err := c.RebuildTimed(ctx, r.Namespace, exp.Rows, stale, &tm.RebuildTimings)
	if err != nil {
		return nil, err
	}
	mark = time.Now()
	if err := c.Close(); err != nil {
		// The rebuild is committed; SQLite checkpoints on the next open.
		session.WarnTo(opts.Logger)(fmt.Sprintf("the catalog is rebuilt, but closing it failed: %v", err))
	}
	lap(&tm.Close)
	rep.Timings = tm
	// The catalog agrees with the disk now: whatever catalog step was
	// skipped before is made good.
	if err := j.ClearCatalogStale(); err != nil {
		session.WarnTo(opts.Logger)(fmt.Sprintf("the catalog is rebuilt, but clearing the journal's stale-catalog mark failed: %v (doctor will report it until the next rebuild)", err))
	}
	rep.fill(exp, d)
	rep.InSync, rep.Applied = d.Empty(), applied
	return rep, nil
}

// lockJournalListOpen takes the journal lock (no other swampj runs while
// the catalog is compared) and lists the interrupted operations it holds.
func lockJournalListOpen(fsys fsx.FS, r *repo.Repo, opts Options) (*session.Session, []*journal.Intent, error) {
	sess, err := session.Open(fsys, r.JournalPath, journal.Options{LockTimeout: opts.LockTimeout, Command: opts.Command, Warn: session.WarnTo(opts.Logger)})
	if err != nil {
		return nil, nil, err
	}
	open, err := sess.Journal().OpenIntents()
	if err != nil {
		_ = sess.Close()
		return nil, nil, err
	}
	return sess, open, nil
}

// Verify compares the catalog with the data on disk and changes
// nothing: the catalog is opened query-only. rep.InSync says whether they
// agree. A missing catalog is reported (every expected row missing); a
// damaged one or one with a foreign schema is returned as the catalog
// package's error.
func Verify(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options) (*Report, error) {
	fsys = fsx.OrReal(fsys)
	rep := newReport("verify", r)
	rep.UnmigratedData = unmigratedData(fsys, r)
	j, open, err := readJournalListOpen(fsys, r, opts)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	rep.OpenIntents = len(open)
	if rep.CatalogStale, err = j.CatalogStale(); err != nil {
		return nil, err
	}
	return verifyLocked(ctx, fsys, r, opts, rep)
}

// readJournalListOpen is lockJournalListOpen for inspections
// (session.Inspect): no journal is created, an existing one is only read.
func readJournalListOpen(fsys fsx.FS, r *repo.Repo, opts Options) (*journal.Journal, []*journal.Intent, error) {
	return session.Inspect(fsys, r.JournalPath, journal.Options{LockTimeout: opts.LockTimeout, Warn: session.WarnTo(opts.Logger)})
}

// verifyLocked is verify (and the rebuild preview) once the lock is held.
func verifyLocked(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options, rep *Report) (*Report, error) {
	c, err := catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	var missing *catalog.MissingError
	var corrupt *catalog.CorruptError
	switch {
	case errors.As(err, &missing):
		rep.CatalogMissing = true
		return noCatalog(ctx, fsys, r, opts, rep)
	case errors.As(err, &corrupt) && rep.Command == "rebuild":
		// The confirmed rebuild moves it aside; the preview says so.
		rep.CatalogDamaged = corrupt.Reason
		return noCatalog(ctx, fsys, r, opts, rep)
	case err != nil:
		return nil, err
	}
	defer c.Close()
	if f := c.Foreign(); f != nil {
		return nil, f
	}
	if err := compare(ctx, fsys, r, c, opts, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// noCatalog reports a catalog that is not there (or will be replaced): every
// expected row is missing. A repo without data and without a catalog is in
// sync — swamp creates the file empty when it first needs it.
func noCatalog(ctx context.Context, fsys fsx.FS, r *repo.Repo, opts Options, rep *Report) (*Report, error) {
	exp, err := ExpectedRows(ctx, fsys, r, expectedOpts(opts, false))
	if err != nil {
		return nil, err
	}
	d := &catalog.Diff{
		Namespace: r.Namespace, StaleNamespaces: []string{}, Missing: exp.Rows,
		Stale: []catalog.Row{}, FlagsWrong: []catalog.RowDrift{}, FieldsWrong: []catalog.RowDrift{}, WrongNamespace: []catalog.Row{},
	}
	rep.fill(exp, d)
	rep.InSync = rep.CatalogDamaged == "" && len(exp.Rows) == 0
	return rep, nil
}

// compare walks the disk and diffs it against an open catalog, filling rep.
func compare(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, opts Options, rep *Report) error {
	var err error
	if rep.Populated, err = c.Populated(ctx); err != nil {
		return err
	}
	if rep.NotBuilt, err = catalogNotBuilt(ctx, c); err != nil {
		return err
	}
	exp, stale, err := expect(ctx, fsys, r, c, opts, rep)
	if err != nil {
		return err
	}
	opts.Progress.Emit("comparing with catalog", 0, 0, "")
	d, err := c.Diff(ctx, r.Namespace, exp.Rows, stale)
	if err != nil {
		return err
	}
	rep.fill(exp, d)
	rep.InSync = d.Empty()
	return nil
}

// catalogNotBuilt reports a catalog with no row in any namespace and no
// populated mark (see Report.NotBuilt). A catalog that is marked
// populated, or that holds any row, is compared as it is: swamp's backfill
// is additive and never removes a stale row, so rows that are there are
// held to the disk.
func catalogNotBuilt(ctx context.Context, c *catalog.Catalog) (bool, error) {
	if pop, err := c.Populated(ctx); err != nil || pop {
		return false, err
	}
	names, err := c.Namespaces(ctx)
	return len(names) == 0, err
}

// BuildIfNotBuilt fills a catalog that is not built yet (NotBuilt) from the
// disk in one transaction, as a confirmed rebuild does; a catalog with rows,
// a populated one, or none at all is left alone. The caller holds the
// journal lock, and no data is mid-change. It reports whether it built.
func BuildIfNotBuilt(ctx context.Context, fsys fsx.FS, r *repo.Repo, cat engine.CatalogOpener) (bool, error) {
	if unmigratedData(fsys, r) != "" {
		return false, nil // the rows would describe data that is about to move
	}
	c, ok, err := cat.Existing(ctx)
	if err != nil || !ok {
		return false, err
	}
	if f := c.Foreign(); f != nil {
		return false, f
	}
	if empty, err := catalogNotBuilt(ctx, c); err != nil || !empty {
		return false, err
	}
	exp, err := ExpectedRows(ctx, fsys, r, ExpectedOptions{StepLatestColumn: c.HasStepLatest()})
	if err != nil {
		return false, err
	}
	_, applied, err := c.Rebuild(ctx, r.Namespace, exp.Rows, nil)
	return applied, err
}

// expect walks the disk with the catalog's flag rule and sorts the other
// namespaces of the catalog into the repo's old stamps and foreign ones.
func expect(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, opts Options, rep *Report) (*Expected, []string, error) {
	exp, err := ExpectedRows(ctx, fsys, r, expectedOpts(opts, c.HasStepLatest()))
	if err != nil {
		return nil, nil, err
	}
	names, err := classifyInto(ctx, fsys, r, c, exp, rep)
	return exp, names, err
}

// classifyInto sorts the catalog's other namespaces (classifyNamespaces)
// into rep and returns the names of the stale ones.
func classifyInto(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, exp *Expected, rep *Report) ([]string, error) {
	stale, foreign, err := classifyNamespaces(ctx, fsys, r, c, exp)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(stale))
	for i, s := range stale {
		names[i] = s.Namespace
	}
	rep.StaleNamespaces, rep.ForeignNamespaces = stale, foreign
	for _, f := range foreign {
		rep.Counts.ForeignKept += f.Rows
	}
	return names, nil
}

func expectedOpts(opts Options, step bool) ExpectedOptions {
	return ExpectedOptions{StepLatestColumn: step, VerifyChecksum: opts.VerifyChecksum, Workers: opts.Workers, Progress: opts.Progress}
}

// classifyNamespaces decides, for every namespace stamp in the catalog other
// than the repo's own, whether its rows are this repo's old stamps (stale:
// reconciled like the own namespace — re-stamped when their version is on
// disk, deleted otherwise) or foreign rows (kept untouched, §3.9).
//
// The rule. A namespace N is an old stamp of this repo when either
//
//   - N is "" (solo) and the repo is namespaced: only this repo ever writes
//     solo rows into its repo-local catalog; foreign rows come from `swamp
//     datastore catalog pull`, which always names a namespace; or
//   - N is not "", catalog_meta has no foreign_synced:N key (its rows were
//     never pulled as another repo's catalog, §3.9), no namespace manifest
//     {base}/N/.namespace.json names another repo (a non-empty repoId
//     different from this repo's), and at least one of its rows is for an
//     item (type, model id, data name) the walk found in this repo's data
//     root — model ids are definition UUIDs, so those are this repo's data
//     written under an earlier namespace (A8, G18).
//
// Everything else is foreign and never touched, even rows that look like
// this repo's items: a namespace pulled as foreign stays foreign.
func classifyNamespaces(ctx context.Context, fsys fsx.FS, r *repo.Repo, c *catalog.Catalog, exp *Expected) ([]StaleNamespace, []ForeignNamespace, error) {
	stale, foreign := []StaleNamespace{}, []ForeignNamespace{}
	names, err := c.Namespaces(ctx)
	if err != nil {
		return nil, nil, err
	}
	md, err := c.Meta(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, ns := range names {
		if ns == r.Namespace {
			continue
		}
		rows, err := c.Rows(ctx, ns)
		if err != nil {
			return nil, nil, err
		}
		reason, isStale := staleReason(fsys, r, exp, ns, rows, md)
		if isStale {
			stale = append(stale, StaleNamespace{Namespace: ns, Rows: len(rows), Reason: reason})
		} else {
			foreign = append(foreign, ForeignNamespace{Namespace: ns, Rows: len(rows), Reason: reason})
		}
	}
	return stale, foreign, nil
}

func staleReason(fsys fsx.FS, r *repo.Repo, exp *Expected, ns string, rows []catalog.Row, md map[string]string) (string, bool) {
	if ns == "" {
		return "solo rows in a namespaced repo: written by this repo before its namespace was set", true
	}
	if _, ok := md["foreign_synced:"+ns]; ok {
		return "pulled as a foreign catalog (foreign_synced:" + ns + ")", false
	}
	if repo.ValidateNamespace(ns) == nil {
		m, found, err := repo.ReadManifest(fsys, r.Base, ns)
		switch {
		case err != nil:
			return "its namespace manifest cannot be read (" + err.Error() + "); kept to be safe", false
		case found && m.RepoID != "" && m.RepoID != r.RepoID:
			return "registered in this datastore by repo " + m.RepoID, false
		}
	}
	for _, row := range rows {
		if exp.HasItem(row.TypeNormalized, row.ModelID, row.DataName) {
			return fmt.Sprintf("rows for this repo's items (e.g. %s/%s/%s): written before a namespace change",
				row.TypeNormalized, row.ModelID, row.DataName), true
		}
	}
	return "no row is for an item of this repo", false
}

func newReport(cmd string, r *repo.Repo) *Report {
	return &Report{
		Command: cmd, Repo: r.Dir, Catalog: r.CatalogPath, DataRoot: r.DataRoot, Namespace: r.Namespace,
		StaleNamespaces: []StaleNamespace{}, ForeignNamespaces: []ForeignNamespace{},
		Unreadable: []UnreadableVersion{}, ItemProblems: []ItemProblem{},
	}
}

func (rep *Report) fill(exp *Expected, d *catalog.Diff) {
	rep.StepLatestColumn = exp.StepLatestColumn
	rep.Unreadable, rep.ItemProblems = exp.Unreadable, exp.ItemProblems
	rep.Diff = d
	rep.Counts.Items = exp.Items
	rep.Counts.VersionsOnDisk = exp.Versions
	rep.Counts.Readable = exp.Readable
	rep.Counts.Unreadable = len(exp.Unreadable)
	rep.Counts.RenamedVersions = exp.RenamedVersions
	rep.Counts.ExpectedRows = len(exp.Rows)
	rep.Counts.RowsMissing = len(d.Missing)
	rep.Counts.RowsStale = len(d.Stale)
	rep.Counts.FlagsWrong = len(d.FlagsWrong)
	rep.Counts.FieldsWrong = len(d.FieldsWrong)
	rep.Counts.WrongNamespace = len(d.WrongNamespace)
}
