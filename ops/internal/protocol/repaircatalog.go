package protocol

// The repair-catalog step kind: the catalog half of a doctor repair
// (ops/doctor). It records every affected row before and after, so it can
// be redone and undone, restoring write order (swamp-format §9.9) on undo.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/swampj/swampj/ops/catalogrow"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
)

// KindRepairCatalog is the catalog step of a doctor repair: the rows of
// some items go from Before (as found) to After (rows of quarantined
// versions removed, latest flags per the readable versions). Its Path is
// the catalog file; while no catalog exists the step does nothing and
// never creates one.
const KindRepairCatalog = "repair-catalog"

// RepairCatalogChange is the payload of a repair-catalog step.
type RepairCatalogChange struct {
	Namespace string              `json:"namespace"`
	Items     []RepairCatalogItem `json:"items"`
	// Order is every Before row of every item in the catalog's rowid
	// order, so an undo can restore the write order across items (swamp-format §9.9).
	Order []RepairRowRef `json:"order"`
}

// RepairRowRef names one Before row: an index into Items and a version.
type RepairRowRef struct {
	Item    int   `json:"item"`
	Version int64 `json:"version"`
}

// RepairCatalogItem is one item's rows as found (Before, rowid order, flags
// included) and as the repair leaves them (After).
type RepairCatalogItem struct {
	Key    catalog.ItemKey `json:"key"`
	Before []catalog.Row   `json:"before"`
	After  []catalog.Row   `json:"after"`

	// Known while planning only: each Before row's position among all rows
	// of the namespace, and the After versions that have no Before row.
	Pos   []int          `json:"-"`
	Added map[int64]bool `json:"-"`
}

// Known reports whether the plan knows version v of the item.
func (it *RepairCatalogItem) Known(v int64) bool {
	return catalogrow.HasVersion(it.Before, v) || catalogrow.HasVersion(it.After, v)
}

func decodeDoctorChange(s *journal.Step) (*RepairCatalogChange, error) {
	var ch RepairCatalogChange
	if err := json.Unmarshal(s.Catalog, &ch); err != nil {
		return nil, fmt.Errorf("repair-catalog step does not decode: %w", err)
	}
	return &ch, nil
}

// repairCatalogOpen opens the catalog for the step; nil when there is none
// (a rollback or a recovery never creates one).
func repairCatalogOpen(ctx context.Context, env *engine.Env, s *journal.Step) (*catalog.Catalog, error) {
	if ok, err := fsx.Exists(env.FS, s.Path); err != nil || !ok {
		return nil, err
	}
	return CatalogOf(ctx, env)
}

// observeRepairCatalog: done when every item's rows (of the versions the
// plan knows) are After, not done when they are all Before, partial in
// between. A row of a version the plan does not know is a conflict: the
// item was written since the plan was made.
func observeRepairCatalog(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	ch, err := decodeDoctorChange(s)
	if err != nil {
		return engine.Conflict, "", err
	}
	c, err := repairCatalogOpen(ctx, env, s)
	var foreign *catalog.ForeignSchemaError
	switch {
	case errors.As(err, &foreign):
		return engine.NotDone, "the catalog has a schema swampj does not write", nil
	case err != nil:
		return engine.Conflict, "", err
	case c == nil:
		return engine.NotDone, "no catalog", nil
	}
	cur, order, err := readItems(ctx, c, ch)
	if err != nil {
		return engine.Conflict, "", err
	}
	step := c.HasStepLatest()
	// The before-state includes the rows' write order: an undo that
	// re-inserted some rows and stopped has every row and flag back, but
	// not yet in their old order.
	atBefore, atAfter := sameOrder(order, ch.Order), true
	for i := range ch.Items {
		it := &ch.Items[i]
		for v := range cur[it.Key] {
			if !it.Known(v) {
				return engine.Conflict, fmt.Sprintf("the catalog has a row for %s/%s/%s version %d that the repair did not plan for (written since?)",
					it.Key.TypeNormalized, it.Key.ModelID, it.Key.DataName, v), nil
			}
		}
		atBefore = atBefore && rowsAre(cur[it.Key], it.Before, step)
		atAfter = atAfter && rowsAre(cur[it.Key], it.After, step)
	}
	switch {
	case atAfter:
		return engine.Done, "", nil
	case atBefore:
		return engine.NotDone, "", nil
	}
	return engine.Partial, "some items' rows are changed, others not", nil
}

func applyRepairCatalog(ctx context.Context, env *engine.Env, s *journal.Step, _ *engine.Dirty) error {
	ch, err := decodeDoctorChange(s)
	if err != nil {
		return err
	}
	c, err := repairCatalogOpen(ctx, env, s)
	if err != nil || c == nil {
		return err // no catalog: swamp rebuilds it from the repaired disk
	}
	return repairCatalogForward(ctx, c, ch)
}

func undoRepairCatalog(ctx context.Context, env *engine.Env, s *journal.Step, _ *engine.Dirty) error {
	ch, err := decodeDoctorChange(s)
	if err != nil {
		return err
	}
	c, err := repairCatalogOpen(ctx, env, s)
	var foreign *catalog.ForeignSchemaError
	if errors.As(err, &foreign) {
		return nil // swampj never wrote to it: nothing of the repair is there
	}
	if err != nil || c == nil {
		return err
	}
	return repairCatalogBackward(ctx, c, ch)
}

// flagPasses bounds the flag-setting rounds of enforceFlags.
// Two suffice for flags that follow the latest rules (one to set, one to
// see they hold); the rest is slack.
const flagPasses = 4

// The catalog change is made of the catalog's write-through operations,
// each its own IMMEDIATE transaction (the catalog package offers no
// "replace an item's rows" in one). Every stage below is idempotent and the
// step is observed item by item, so a crash between two transactions is
// finished — or undone — by running the step again.

// repairCatalogForward makes every item's rows After:
//
//  1. the rows of versions that are not readable are removed
//     (RemoveVersion, which hands a removed row's flag to the highest
//     remaining row of its group in place, keeping its rowid — for #3955
//     that already is the answer);
//  2. a row the new latest version lacks is inserted (UpsertDeferred);
//  3. flags that still differ are set as write-through sets them
//     (enforceFlags). A catalog that still disagrees is an error.
func repairCatalogForward(ctx context.Context, c *catalog.Catalog, ch *RepairCatalogChange) error {
	cur, err := currentRows(ctx, c, ch)
	if err != nil {
		return err
	}
	for i := range ch.Items {
		it := &ch.Items[i]
		for _, v := range sortedVersions(cur[it.Key]) {
			if it.Known(v) && !catalogrow.HasVersion(it.After, v) {
				if err := c.RemoveVersion(ctx, it.Key, v); err != nil {
					return err
				}
			}
		}
		for _, row := range it.After {
			if _, ok := cur[it.Key][row.Version]; !ok {
				if err := c.UpsertDeferred(ctx, row); err != nil {
					return err
				}
			}
		}
	}
	after := func(it *RepairCatalogItem) []catalog.Row { return it.After }
	if err := enforceFlags(ctx, c, ch, after); err != nil {
		return err
	}
	cur, err = currentRows(ctx, c, ch)
	if err != nil {
		return err
	}
	step := c.HasStepLatest()
	for i := range ch.Items {
		it := &ch.Items[i]
		if !rowsAre(cur[it.Key], it.After, step) {
			return fmt.Errorf("the catalog's latest flags of %s/%s/%s did not settle: %s",
				it.Key.TypeNormalized, it.Key.ModelID, it.Key.DataName, catalogrow.Flagged(rowList(cur[it.Key]), step))
		}
	}
	return nil
}

// repairCatalogBackward puts every item's rows back as they were (Before),
// in their old write order (swamp-format §9.9):
//
//  1. rows the repair added are removed;
//  2. from the first of the old rows (in their journaled rowid order,
//     Order) that is missing, out of place or lacks a flag it had, every
//     old row is written again in that order — UpsertNewVersion for a row
//     that carried a flag, UpsertDeferred for one that did not — so each
//     gets a new rowid behind the rows before it, and each group's flag
//     ends on the row that had it (in a catalog write-through built, the
//     flagged row of a group is its newest, hence written last);
//  3. flags no write-through order produces (a catalog that had two
//     is_latest rows in a group) are restored as far as write-through
//     allows (enforceFlags, best effort).
func repairCatalogBackward(ctx context.Context, c *catalog.Catalog, ch *RepairCatalogChange) error {
	step := c.HasStepLatest()
	cur, err := currentRows(ctx, c, ch)
	if err != nil {
		return err
	}
	for i := range ch.Items {
		it := &ch.Items[i]
		for _, v := range sortedVersions(cur[it.Key]) {
			if it.Known(v) && !catalogrow.HasVersion(it.Before, v) {
				if err := c.RemoveVersion(ctx, it.Key, v); err != nil {
					return err
				}
			}
		}
	}

	cur, order, err := readItems(ctx, c, ch)
	if err != nil {
		return err
	}
	from := len(ch.Order)
	for k, ref := range ch.Order {
		it := &ch.Items[ref.Item]
		old := it.Before[catalogrow.RowIndex(it.Before, ref.Version)]
		have, ok := cur[it.Key][ref.Version]
		if k >= len(order) || order[k] != ref || !ok ||
			(old.IsLatest && !have.IsLatest) || (step && old.IsStepLatest && !have.IsStepLatest) {
			from = k
			break
		}
	}
	for _, ref := range ch.Order[from:] {
		it := &ch.Items[ref.Item]
		old := it.Before[catalogrow.RowIndex(it.Before, ref.Version)]
		if old.IsLatest || (step && old.IsStepLatest) {
			err = c.UpsertNewVersion(ctx, old)
		} else {
			err = c.UpsertDeferred(ctx, old)
		}
		if err != nil {
			return err
		}
	}
	before := func(it *RepairCatalogItem) []catalog.Row { return it.Before }
	return enforceFlags(ctx, c, ch, before)
}

// enforceFlags sets the flags of every item's target rows with
// write-through operations: UpsertNewVersion on each row that must carry a
// flag and does not (it clears the flag in the row's group, as swamp's
// write-through does), step-only holders before the item's latest row so
// the latest row takes is_latest last; UpsertDeferred on a row that must
// carry none but still does. Rows it rewrites move to the end of the write
// order, so it is the last resort: it does nothing when the flags are right.
func enforceFlags(ctx context.Context, c *catalog.Catalog, ch *RepairCatalogChange, target func(*RepairCatalogItem) []catalog.Row) error {
	step := c.HasStepLatest()
	for pass := 0; pass < flagPasses; pass++ {
		cur, err := currentRows(ctx, c, ch)
		if err != nil {
			return err
		}
		changed := false
		for i := range ch.Items {
			it := &ch.Items[i]
			for _, row := range setters(cur[it.Key], target(it), step) {
				if err := c.UpsertNewVersion(ctx, row); err != nil {
					return err
				}
				changed = true
			}
		}
		if changed {
			if cur, err = currentRows(ctx, c, ch); err != nil {
				return err
			}
		}
		for i := range ch.Items {
			it := &ch.Items[i]
			for _, row := range target(it) {
				have, ok := cur[it.Key][row.Version]
				if ok && !row.IsLatest && !(step && row.IsStepLatest) && !catalogrow.SameFlags(have, row, step) {
					if err := c.UpsertDeferred(ctx, row); err != nil {
						return err
					}
					changed = true
				}
			}
		}
		if !changed {
			return nil
		}
	}
	return nil
}

// setters lists the target rows that must carry a flag and do not:
// rows that are only is_step_latest first (each also takes is_latest for a
// moment), then the item's is_latest row(s), which take it back.
func setters(cur map[int64]catalog.Row, target []catalog.Row, step bool) []catalog.Row {
	var stepOnly, latest []catalog.Row
	for _, row := range target {
		if !row.IsLatest && !(step && row.IsStepLatest) {
			continue
		}
		have, ok := cur[row.Version]
		if ok && catalogrow.SameFlags(have, row, step) {
			continue
		}
		if row.IsLatest {
			latest = append(latest, row)
		} else {
			stepOnly = append(stepOnly, row)
		}
	}
	if len(stepOnly) > 0 {
		for _, row := range target {
			if row.IsLatest && !catalogrow.HasVersion(latest, row.Version) {
				latest = append(latest, row)
			}
		}
	}
	byVersion := func(rs []catalog.Row) {
		sort.SliceStable(rs, func(i, j int) bool { return rs[i].Version < rs[j].Version })
	}
	byVersion(stepOnly)
	byVersion(latest)
	return append(stepOnly, latest...)
}

// readItems reads the rows of the change's items in one statement:
// by item and version, and — for the versions the plan knows — in rowid
// order.
func readItems(ctx context.Context, c *catalog.Catalog, ch *RepairCatalogChange) (map[catalog.ItemKey]map[int64]catalog.Row, []RepairRowRef, error) {
	index := map[catalog.ItemKey]int{}
	byVersion := map[catalog.ItemKey]map[int64]catalog.Row{}
	for i, it := range ch.Items {
		index[it.Key] = i
		byVersion[it.Key] = map[int64]catalog.Row{}
	}
	rows, err := c.Rows(ctx, ch.Namespace)
	if err != nil {
		return nil, nil, err
	}
	var order []RepairRowRef
	for _, r := range rows {
		i, ok := index[r.Key()]
		if !ok {
			continue
		}
		byVersion[r.Key()][r.Version] = r
		if ch.Items[i].Known(r.Version) {
			order = append(order, RepairRowRef{Item: i, Version: r.Version})
		}
	}
	return byVersion, order, nil
}

// currentRows reads the rows of the change's items, by version.
func currentRows(ctx context.Context, c *catalog.Catalog, ch *RepairCatalogChange) (map[catalog.ItemKey]map[int64]catalog.Row, error) {
	m, _, err := readItems(ctx, c, ch)
	return m, err
}

func sameOrder(a, b []RepairRowRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rowsAre reports whether cur holds exactly want's versions with
// want's flags.
func rowsAre(cur map[int64]catalog.Row, want []catalog.Row, step bool) bool {
	if len(cur) != len(want) {
		return false
	}
	for _, w := range want {
		have, ok := cur[w.Version]
		if !ok || !catalogrow.SameFlags(have, w, step) {
			return false
		}
	}
	return true
}

func sortedVersions(m map[int64]catalog.Row) []int64 {
	vs := make([]int64, 0, len(m))
	for v := range m {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	return vs
}

func rowList(m map[int64]catalog.Row) []catalog.Row {
	out := make([]catalog.Row, 0, len(m))
	for _, v := range sortedVersions(m) {
		out = append(out, m[v])
	}
	return out
}
