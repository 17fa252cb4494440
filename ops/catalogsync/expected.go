package catalogsync

// The catalog the disk implies: ExpectedRows walks and scans the data root
// (store.WalkScan) and builds the rows swamp's backfill would write.

import (
	"context"
	"fmt"
	"runtime"
	"sort"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// CodeTypeNotNormalized is an item problem found by ExpectedRows (beside the
// store package's codes): the type directory is not in normalised form, so
// swamp re-normalises it, looks under another path and never reads the item
// (swamp-format §2.7.3). It gets no rows.
const CodeTypeNotNormalized store.Code = "type_not_normalized"

// CodeRowInvalid: a readable version whose metadata cannot become a row
// (catalogrow.FromMeta refused it). It is counted as unreadable.
const CodeRowInvalid store.Code = "row_invalid"

// ExpectedOptions configure ExpectedRows.
type ExpectedOptions struct {
	// Common's FS is the disk scanned (nil: the real one); the rest is
	// not used.
	host.Common
	// StepLatestColumn selects the latest-flag rule of a catalog with the
	// swamp-format §11 is_step_latest column (catalog.Catalog.HasStepLatest). Rebuild and
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

// Problem is a store.Problem as reports carry it (report.Problem).
type Problem = report.Problem

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
	// order approximates the order swamp wrote them (swamp-format §9.9).
	Rows []catalog.Row `json:"rows"`

	Items    int `json:"items"`    // data items found by the walk
	Versions int `json:"versions"` // canonical version directories on disk
	Readable int `json:"readable"` // versions with a row, plus renamed ones below
	// RenamedItems / RenamedVersions: items whose latest version is a
	// rename tombstone (lifecycle deleted + renamedTo). swamp's rename
	// removes every row of the old item (swamp-format §2.6.6, §3.6) and its backfill
	// skips it (swamp-format §3.7), so they get no rows; their readable versions are
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
// (stepLatestColumn) or without the swamp-format §11 column:
//
//   - Only versions at or below the item's committed latest take part. That
//     is the version `latest` designates when it is readable; when `latest`
//     is missing or unparsable, swamp's fallback, the highest version — but
//     never an unreadable one: then the highest readable version not above
//     the designated one, or failing that the highest readable version.
//     Versions above it are uncommitted deferred writes or crash remnants
//     (swamp-format §9.8); swamp's saveDeferred leaves their flags 0 (swamp-format §2.6.4), and so does
//     this. They still get rows.
//   - Among those, catalog.MarkLatest decides: the highest version of each
//     is_latest group (the item with the column; the item and step_name
//     without it, swamp-format §3.5) and of each (workflow, job, step) group (swamp-format §11).
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
// swamp-format §9.18), flags by Expected.Mark. Unreadable versions are skipped and listed
// with their problems; they are not an error. The error is non-nil only when
// the walk itself fails (a directory that cannot be listed, ctx).
//
// Cost: the walk's ReadDirs, and per version one read of metadata.yaml and
// one stat of raw (content only with VerifyChecksum).
func ExpectedRows(ctx context.Context, r *repo.Repo, opts ExpectedOptions) (*Expected, error) {
	fsys := opts.Disk()
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
	// in walk order, so the outcome does not depend on scheduling. The
	// first item that cannot be scanned stops the walk.
	var perItem [][]catalog.Row
	total := 0
	phase := "scanning"
	if opts.VerifyChecksum {
		phase = "verifying checksums"
	}
	opts.Progress.Emit(phase, 0, 0, "items")
	err := store.WalkScan(ctx, fsys, r.DataRoot, store.WalkScanOptions{Workers: workers},
		func(it store.Item) scanned { return scanItem(fsys, r.Namespace, it, check) },
		func(_ store.Item, s scanned) error {
			if s.err != nil {
				return s.err
			}
			e.merge(s)
			perItem = append(perItem, s.rows)
			total += len(s.rows)
			if opts.Progress != nil && int64(e.Items)%8 == 0 {
				opts.Progress.Emit(phase, int64(e.Items), 0, "items")
			}
			return nil
		})
	if err != nil {
		return nil, err
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
	store.CodeVersionDirBeyondMax:    true,
	store.CodeNoVersions:             true,
}

// scanItem builds one item's rows and findings.
func scanItem(fsys fsx.FS, ns string, it store.Item, check store.CheckOptions) scanned {
	s := scanned{id: itemID{it.Type, it.ModelID, it.DataName}}
	if norm := meta.NormalizeType(it.Type); norm != it.Type {
		// swamp looks this item up under norm and finds nothing (swamp-format §2.7.3).
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
				Problem: report.ProblemOf(p)})
		}
	}

	// The committed latest: what `latest` designates if readable, else the
	// last good version at or below it, else the highest readable (swamp-format §9.8).
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
		u.Problems = append(u.Problems, report.ProblemOf(p))
	}
	return u
}
