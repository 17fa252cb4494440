package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// Reconciliation for `swampj catalog verify` and `swampj catalog rebuild`.
//
// swamp's own rebuild is additive (swamp-format §3.7): it never removes rows of vanished
// versions, never fixes old namespace stamps (swamp-format §9.18) and its only full repair
// is deleting the file, which also loses foreign rows (swamp-format §3.9). Diff/Apply do
// the full reconciliation for one namespace and leave every other namespace
// alone: the caller walks the disk, builds the expected rows
// (ops/catalogrow.FromMeta, flags from MarkLatest), and Diff says how the
// catalog differs.

// RowDrift is a row present on both sides whose columns differ.
type RowDrift struct {
	Catalog  Row      `json:"catalog"`
	Expected Row      `json:"expected"`
	Columns  []string `json:"columns"` // differing column names, in table order
}

// Diff is how the catalog's rows of one namespace differ from the expected
// set. Its JSON field names are stable (printed by `swampj catalog verify
// --json`); every list is present, empty as [].
type Diff struct {
	Namespace       string   `json:"namespace"`
	StaleNamespaces []string `json:"stale_namespaces"` // old stamps of this repo, as the caller declared them
	// StepLatestColumn tells whether is_step_latest was compared.
	StepLatestColumn bool `json:"step_latest_column"`

	// Missing: expected rows with no row in the catalog.
	Missing []Row `json:"missing"`
	// Stale: catalog rows of Namespace (or of a stale namespace) with no
	// expected row — deleted, emptied or unreadable versions.
	Stale []Row `json:"stale"`
	// FlagsWrong: is_latest / is_step_latest differ.
	FlagsWrong []RowDrift `json:"flags_wrong"`
	// FieldsWrong: any other column differs. A row can be in both lists.
	FieldsWrong []RowDrift `json:"fields_wrong"`
	// WrongNamespace: rows stamped with a stale namespace whose item and
	// version match an expected row; Apply replaces them by a row stamped
	// Namespace. Rows of namespaces that are neither Namespace nor stale are
	// foreign (swamp-format §3.9) and never listed or touched.
	WrongNamespace []Row `json:"wrong_namespace"`
}

// Empty reports whether the catalog already equals the expectation.
func (d *Diff) Empty() bool {
	return len(d.Missing) == 0 && len(d.Stale) == 0 && len(d.FlagsWrong) == 0 &&
		len(d.FieldsWrong) == 0 && len(d.WrongNamespace) == 0
}

// Diff compares the catalog's rows of namespace ns, and of the namespaces in
// staleNamespaces (old stamps of the same repo, e.g. from before a
// `namespace set`), with expected. Every expected row must carry Namespace ns
// and its flags already computed by Catalog.MarkLatest (the rule depends on
// HasStepLatest; is_step_latest is compared only when the column exists).
// It reads one snapshot and writes nothing.
func (c *Catalog) Diff(ctx context.Context, ns string, expected []Row, staleNamespaces []string) (*Diff, error) {
	if err := c.readable(); err != nil {
		return nil, err
	}
	want, err := expectedSet(ns, expected)
	if err != nil {
		return nil, err
	}
	stale := cleanStale(ns, staleNamespaces)
	actual, err := c.loadNamespaces(ctx, c.db, "diff", append([]string{ns}, stale...))
	if err != nil {
		return nil, err
	}
	return computeDiff(ns, stale, c.hasStepLatest, expected, want, actual), nil
}

// Apply makes the catalog's rows of ns equal expected in ONE transaction, and
// sets populated = "true" (swamp-format §3.7). d supplies the stale namespaces (nil: none);
// the differences themselves are computed again inside the transaction,
// under the write lock, so rows written between Diff and Apply are neither
// lost nor resurrected — the result is always the expectation. Foreign rows
// are kept. On any error, including the "catalog.rebuild.commit" failpoint,
// the transaction is rolled back and the previous catalog is intact.
//
// Order inside the transaction: delete stale and old-stamped rows; fix rows
// whose only drift is a flag with an UPDATE in place (their rowid, hence
// their place in write order, is kept, swamp-format §9.9); then INSERT OR REPLACE missing
// and field-wrong rows in ascending (created_at, version) order, so their
// new rowids approximate write order (swamp-format §9.9).
//
// The caller holds the repo lock, so no swampj writer changes the data tree
// between its walk and this commit.
func (c *Catalog) Apply(ctx context.Context, ns string, expected []Row, d *Diff) error {
	want, err := expectedSet(ns, expected)
	if err != nil {
		return err
	}
	var staleNS []string
	if d != nil {
		if d.Namespace != ns {
			return &InvalidRowError{Op: "apply", Row: ItemKey{Namespace: ns},
				Reason: fmt.Sprintf("the diff is for namespace %q", d.Namespace)}
		}
		staleNS = d.StaleNamespaces
	}
	stale := cleanStale(ns, staleNS)
	if err := c.readable(); err != nil {
		return err
	}
	return c.writeTx(ctx, "rebuild", FailpointRebuild, func(tx *sql.Tx) error {
		actual, err := c.loadNamespaces(ctx, tx, "rebuild", append([]string{ns}, stale...))
		if err != nil {
			return err
		}
		now := computeDiff(ns, stale, c.hasStepLatest, expected, want, actual)
		return c.applyDiff(ctx, tx, now)
	})
}

// applyDiff writes d inside tx. It is the bulk writer of bulk.go — one
// implementation for Apply and Rebuild, so their statements cannot drift.
func (c *Catalog) applyDiff(ctx context.Context, tx *sql.Tx, d *Diff) error {
	return c.applyBulk(ctx, tx, d)
}

// expectedSet validates the expected rows and indexes them by version.
func expectedSet(ns string, expected []Row) (map[versionKey]struct{}, error) {
	want := make(map[versionKey]struct{}, len(expected))
	for _, r := range expected {
		if err := r.Validate("diff"); err != nil {
			return nil, err
		}
		if r.Namespace != ns {
			return nil, &InvalidRowError{Op: "diff", Row: r.Key(), Reason: fmt.Sprintf("expected rows must be stamped %q", ns)}
		}
		if _, dup := want[r.versionKey()]; dup {
			return nil, &InvalidRowError{Op: "diff", Row: r.Key(), Reason: fmt.Sprintf("version %d is expected twice", r.Version)}
		}
		want[r.versionKey()] = struct{}{}
	}
	return want, nil
}

// cleanStale sorts and de-duplicates the stale namespaces, without ns.
func cleanStale(ns string, stale []string) []string {
	out := []string{}
	seen := map[string]bool{ns: true}
	for _, s := range stale {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// loadNamespaces reads every row stamped with one of namespaces, in one
// statement (one snapshot), in rowid order.
func (c *Catalog) loadNamespaces(ctx context.Context, q queryer, op string, namespaces []string) ([]Row, error) {
	args := make([]any, len(namespaces))
	for i, n := range namespaces {
		args[i] = n
	}
	return c.queryRows(ctx, q, op, c.selectRows()+` WHERE namespace IN (?`+strings.Repeat(", ?", len(namespaces)-1)+`) ORDER BY rowid`, args...)
}

// computeDiff is the comparison itself, free of SQL.
func computeDiff(ns string, stale []string, stepLatestColumn bool, expected []Row, want map[versionKey]struct{}, actual []Row) *Diff {
	d := &Diff{
		Namespace: ns, StaleNamespaces: stale, StepLatestColumn: stepLatestColumn,
		Missing: []Row{}, Stale: []Row{}, FlagsWrong: []RowDrift{}, FieldsWrong: []RowDrift{}, WrongNamespace: []Row{},
	}
	have := make(map[versionKey]int, len(actual)) // index into actual
	for i, r := range actual {
		if r.Namespace != ns {
			continue
		}
		have[r.versionKey()] = i
		if _, ok := want[r.versionKey()]; !ok {
			d.Stale = append(d.Stale, r)
		}
	}
	for _, r := range actual {
		if r.Namespace == ns {
			continue
		}
		k := r.versionKey()
		k.Namespace = ns
		if _, ok := want[k]; ok {
			d.WrongNamespace = append(d.WrongNamespace, r)
		} else {
			d.Stale = append(d.Stale, r)
		}
	}
	if len(have) == 0 {
		d.Missing = make([]Row, 0, len(expected))
	}
	for _, e := range expected {
		i, ok := have[e.versionKey()]
		if !ok {
			d.Missing = append(d.Missing, e)
			continue
		}
		a := actual[i]
		var flags, fields []string
		for _, col := range columnDiffs(a, e, stepLatestColumn) {
			if col == "is_latest" || col == StepLatestColumn {
				flags = append(flags, col)
			} else {
				fields = append(fields, col)
			}
		}
		if len(flags) > 0 {
			d.FlagsWrong = append(d.FlagsWrong, RowDrift{Catalog: a, Expected: e, Columns: flags})
		}
		if len(fields) > 0 {
			d.FieldsWrong = append(d.FieldsWrong, RowDrift{Catalog: a, Expected: e, Columns: fields})
		}
	}
	sortRows(d.Missing)
	sortRows(d.Stale)
	sortRows(d.WrongNamespace)
	sortDrifts(d.FlagsWrong)
	sortDrifts(d.FieldsWrong)
	return d
}

// lessKeyOf orders rows by namespace, type, model, data name and version, the
// order verify prints them in.
//
// It takes pointers: sorting 100,000 rows compares them millions of times,
// and copying two 400-byte rows per comparison showed in the profile.
func lessKeyOf(a, b *Row) bool {
	switch {
	case a.Namespace != b.Namespace:
		return a.Namespace < b.Namespace
	case a.TypeNormalized != b.TypeNormalized:
		return a.TypeNormalized < b.TypeNormalized
	case a.ModelID != b.ModelID:
		return a.ModelID < b.ModelID
	case a.DataName != b.DataName:
		return a.DataName < b.DataName
	}
	return a.Version < b.Version
}

// sortRows sorts by key, stably; rows from a walk of the data tree come
// in key order already, and are then only checked.
func sortRows(rows []Row) {
	less := func(i, j int) bool { return lessKeyOf(&rows[i], &rows[j]) }
	if !sort.SliceIsSorted(rows, less) {
		sort.SliceStable(rows, less)
	}
}

func sortDrifts(ds []RowDrift) {
	less := func(i, j int) bool { return lessKeyOf(&ds[i].Expected, &ds[j].Expected) }
	if !sort.SliceIsSorted(ds, less) {
		sort.SliceStable(ds, less)
	}
}
