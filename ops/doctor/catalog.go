package doctor

// The catalog check family: the catalog read beside the walk, its rows grouped by item,
// each item's rows compared with the readable versions (catalog_row_unreadable,
// catalog_latest_wrong, catalog_unusable), and catalog copies older swamp left (catalog_copy).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// catalogRead is readCatalog running (or run) apart from the rest of the
// survey: what it would have added to the survey's general unit and
// warnings is kept here until merge.
// mergeCatalog takes in the catalog, read-only (started beside the walk,
// or read now); rows of items the walk did not find are looked up on disk
// directly, as orphans.
func (s *survey) mergeCatalog(ctx context.Context) error {
	w := &s.w
	if s.catRead == nil {
		s.catRead = s.startCatalog(ctx, false)
	}
	rows, err := s.catRead.merge(s, s.general)
	s.catRead = nil
	if err != nil {
		return err
	}
	w.rows = rows
	for _, group := range rows {
		key := group.rows[0].Key()
		if di, seen := w.byKey[key]; seen {
			if di != nil {
				di.rows, di.rowPos = group.rows, group.pos
			}
			continue
		}
		if w.only != nil {
			if dir, ok := itemDirOfKey(s.r.DataRoot, key); !ok || !w.only[filepath.Clean(dir)] {
				continue // an item outside the set looked at
			}
		}
		if s.o.otherRoot {
			// Rows of items the other root does not hold: in the middle
			// of a migration they are the rows its last step restamps,
			// not damage (otherroot.go).
			continue
		}
		di, err := s.itemOfRows(key)
		if err != nil {
			if fsx.IsCrash(err) {
				return err
			}
			s.general.add(unlistable(di.item.Dir, err), false)
			continue
		}
		di.rows, di.rowPos = group.rows, group.pos
		w.byKey[key] = di
		w.orphans = append(w.orphans, di)
	}
	return nil
}

// checkCatalogCopies reports catalog copies left by older swamp (#3316).
func (s *survey) checkCatalogCopies(context.Context) error {
	u, err := s.catalogCopies()
	if err != nil {
		return err
	}
	if u != nil {
		s.units = append(s.units, u)
	}
	return nil
}

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
	c, err := s.openCatalog(ctx, general, warnings)
	if c == nil {
		return nil, err
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
	return groupRows(all), nil
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
	var changed []*protocol.RepairCatalogItem
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
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A link where the item's directory goes: one that leaves the repo
		// is reported as such, and its rows are kept (the item is
		// somewhere, not gone); swamp skips a linked data name either way.
		if _, serr := s.fsys.Stat(dir); isOutside(serr) {
			return di, serr
		}
	}
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
	u.catalog = &protocol.RepairCatalogItem{Key: di.key, Before: di.rows, After: kept, Pos: di.rowPos, Added: added}

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

// groupRows groups the catalog's rows by item, in rowid order of each
// item's first row, keeping each row's position in the whole catalog (the
// repair restores that order on undo); one backing array for all groups.
// An item whose rows are contiguous (written one after another) uses them
// in place; the others get copies.
func groupRows(all []catalog.Row) []rowGroup {
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
	return groups
}

// openCatalog opens the catalog read-only for the survey. A catalog that
// is missing, on read-only media with an unreadable WAL, damaged, not
// openable or foreign is nil, with the finding or warning that says so:
// the catalog is derived state and never blocks the check of the data.
func (s *survey) openCatalog(ctx context.Context, general *unit, warnings *[]string) (*catalog.Catalog, error) {
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
		s.catalogUnread = true
		*warnings = append(*warnings, "catalog rows not checked: "+wal.Error())
		return nil, nil
	case errors.As(err, &corrupt):
		// Derived state that SQLite cannot use (a torn first creation, a
		// file that is not a database): a confirmed repair moves it aside
		// and rebuilds it (repairDamagedCatalog).
		s.catalogDamaged = true
		s.catalogUnread = true
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
		s.catalogUnread = true
		general.add(Finding{Code: CodeCatalogUnusable, Path: s.r.CatalogPath,
			Message: fmt.Sprintf("the catalog cannot be opened, so its rows were not checked: %v", err),
			Fix:     "make " + s.r.CatalogPath + " a catalog file this user can read and write (or move it aside); a rebuild then makes it agree with the disk",
			Remedy:  report.RemedyFixAccess, Then: report.RemedyRebuildCatalog}, false)
		return nil, nil
	}
	if (c.ReadOnlyMedia() || !catalogWritable(s.fsys, s.r.CatalogPath)) && fsx.Writable(s.r.Base) {
		// This user may write the datastore but not the catalog (another
		// user's file in another user's directory): the catalog cannot
		// follow this user's changes, which only a person can end. On
		// read-only media, or where this user may write nothing, it is
		// read as it is.
		c.Close()
		s.catalogUnread = true
		why := "this user may not write it or its directory"
		if a := fsx.AccessOf(filepath.Dir(s.r.CatalogPath)); a != nil {
			why = a.String()
		}
		general.add(Finding{Code: CodeCatalogUnusable, Path: s.r.CatalogPath,
			Message: fmt.Sprintf("the catalog cannot follow this user's changes: %s", why),
			Fix:     "make " + s.r.CatalogPath + " a catalog file this user can read and write (or move it aside); a rebuild then makes it agree with the disk",
			Remedy:  report.RemedyFixAccess, Then: report.RemedyRebuildCatalog}, false)
		return nil, nil
	}
	if f := c.Foreign(); f != nil {
		c.Close()
		s.catalogUnread = true
		*warnings = append(*warnings, "catalog rows not checked: "+f.Error())
		return nil, nil
	}
	return c, nil
}

// catalogWritable reports whether this user may write the catalog: the
// file, and its -wal and -shm, or, where either is missing, the directory
// that SQLite creates it in. SQLite opens sidecars it may not write
// read-only by itself, so an open alone does not tell: the -wal and -shm
// are kept between processes (catalog/persistwal.go) and usually exist.
func catalogWritable(fsys fsx.FS, path string) bool {
	if !fsx.Writable(path) {
		return false
	}
	for _, suf := range []string{"-wal", "-shm"} {
		if _, err := fsys.Lstat(path + suf); err != nil {
			if !fsx.Writable(filepath.Dir(path)) {
				return false
			}
			continue
		}
		if !fsx.Writable(path + suf) {
			return false
		}
	}
	return true
}
