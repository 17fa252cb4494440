package catalog

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Rebuild: Diff and Apply as one transaction, made cheap for whole-catalog
// row sets (`swampj catalog rebuild --confirm` over 100,000 versions).
//
// Why a separate path (added by the rebuild command; diff.go is unchanged):
// measured on 100,000 rows, Diff followed by Apply read the namespace's rows
// twice (once for the preview, again under the write lock), stable-sorted
// the ~400-byte Row structs three times (Missing in Diff, Missing again in
// Apply, then the inserts by created_at) — about a second of memmove — and
// inserted one row per statement through a 2 MB page cache that spilled to
// the WAL mid-transaction. Rebuild:
//
//   - reads the rows once, inside the transaction, and returns the Diff it
//     applied (the caller needs no separate Diff);
//   - sorts inserts through an index permutation, moving each row once;
//   - inserts in multi-row INSERT OR REPLACE statements (rowids are assigned
//     in VALUES order, so write order is kept exactly as with one row per
//     statement, swamp-format §9.9);
//   - raises this connection's page cache for the transaction and restores
//     it afterwards.
//
// The semantics are Apply's, statement for statement: the same deletes, the
// same in-place flag updates, the same inserts in the same order, populated
// set, one BEGIN IMMEDIATE transaction with FailpointRebuild before COMMIT.
// It commits nothing when the catalog already agrees and is populated.

// bulkRows is how many rows one INSERT statement carries (24 columns each:
// 576 parameters, far below SQLite's 32766).
const bulkRows = 24

// rebuildCacheKiB is the page cache of the rebuilding connection (negative
// cache_size = KiB): large enough that 100,000 rows and their nine indexes do
// not spill to the WAL before COMMIT.
const rebuildCacheKiB = 64 << 10

// Rebuild makes the catalog's rows of ns equal expected, like Diff followed
// by Apply, in one transaction, and returns the differences it found and
// whether it wrote anything (it does not when d.Empty() and the catalog is
// already populated). The expected rows should come in key order (namespace,
// type, model, data name, version) — the order a walk of the data tree gives
// — for the cheapest diff; any order is correct. On any error, including the
// FailpointRebuild failpoint, nothing is changed.
func (c *Catalog) Rebuild(ctx context.Context, ns string, expected []Row, staleNamespaces []string) (d *Diff, applied bool, err error) {
	return c.RebuildTimed(ctx, ns, expected, staleNamespaces, nil)
}

// RebuildTimings is where a Rebuild spent its time (wall clock), phase by
// phase, for the benchmarks and for a caller that wants to say why a
// rebuild took as long as it did.
type RebuildTimings struct {
	Read    time.Duration `json:"read"`    // the namespaces' rows read, under the write lock
	Diff    time.Duration `json:"diff"`    // computeDiff
	Write   time.Duration `json:"write"`   // deletes, flag updates and inserts
	Indexes time.Duration `json:"indexes"` // the explicit indexes created again after a bulk insert into an empty table
	Commit  time.Duration `json:"commit"`  // COMMIT (the WAL written and fsynced; built aside: the file written, unsynced)
	// Publish is, for a catalog built aside (CreateBuilt), its switch to
	// WAL, close, one fsync and link under the catalog's name.
	Publish time.Duration `json:"publish"`
}

// RebuildTimed is Rebuild that also fills t (if not nil) phase by phase.
func (c *Catalog) RebuildTimed(ctx context.Context, ns string, expected []Row, staleNamespaces []string, t *RebuildTimings) (d *Diff, applied bool, err error) {
	if t == nil {
		t = &RebuildTimings{}
	}
	if c.mode == ModeReport {
		return nil, false, &ReadOnlyError{Path: c.path, Op: "rebuild"}
	}
	if err := c.readable(); err != nil {
		return nil, false, err
	}
	want, err := expectedSet(ns, expected)
	if err != nil {
		return nil, false, err
	}
	stale := cleanStale(ns, staleNamespaces)

	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, false, &DBError{Op: "rebuild (connect)", Path: c.path, Err: err}
	}
	defer conn.Close()
	var cache int64
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
		return nil, false, &DBError{Op: "rebuild (cache_size)", Path: c.path, Err: err}
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA cache_size = -`+strconv.Itoa(rebuildCacheKiB)); err != nil {
		return nil, false, &DBError{Op: "rebuild (cache_size)", Path: c.path, Err: err}
	}
	defer func() {
		// The connection goes back to the pool with its old cache.
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA cache_size = `+strconv.FormatInt(cache, 10))
	}()

	if _, err := conn.ExecContext(ctx, `PRAGMA temp_store = MEMORY`); err != nil {
		return nil, false, &DBError{Op: "rebuild (temp_store)", Path: c.path, Err: err}
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA temp_store = DEFAULT`) }()

	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		return nil, false, &DBError{Op: "rebuild (begin)", Path: c.path, Err: err}
	}
	fail := func(err error) (*Diff, bool, error) {
		_ = tx.Rollback()
		var coded Coded
		if errors.As(err, &coded) {
			return nil, false, err
		}
		return nil, false, &DBError{Op: "rebuild", Path: c.path, Err: err}
	}
	mark := time.Now()
	lap := func(d *time.Duration) {
		now := time.Now()
		*d += now.Sub(mark)
		mark = now
	}
	actual, err := c.loadNamespaces(ctx, tx, "rebuild", append([]string{ns}, stale...))
	if err != nil {
		return fail(err)
	}
	lap(&t.Read)
	d = computeDiff(ns, stale, c.hasStepLatest, expected, want, actual)
	lap(&t.Diff)
	var populated string
	switch err := tx.QueryRowContext(ctx, `SELECT value FROM catalog_meta WHERE key = ?`, metaPopulated).Scan(&populated); {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fail(err)
	}
	if d.Empty() && populated == "true" {
		_ = tx.Rollback()
		return d, false, nil
	}
	if err := c.applyBulkTimed(ctx, tx, d, t); err != nil {
		return fail(err)
	}
	mark = time.Now()
	if err := c.fsys.Failpoint(FailpointRebuild); err != nil {
		_ = tx.Rollback()
		return nil, false, err
	}
	if err := c.commitTx(tx); err != nil {
		return nil, false, &DBError{Op: "rebuild (commit)", Path: c.path, Err: err}
	}
	lap(&t.Commit)
	return d, true, nil
}

// applyBulk writes a diff: deletes, in-place flag updates, then inserts in
// write order (created_at, version) with prepared statements, a permutation
// sort and multi-row inserts. Apply (diff.go) and Rebuild both use it.
func (c *Catalog) applyBulk(ctx context.Context, tx *sql.Tx, d *Diff) error {
	return c.applyBulkTimed(ctx, tx, d, &RebuildTimings{})
}

// applyBulkTimed is applyBulk adding its time to t.Write and t.Indexes.
func (c *Catalog) applyBulkTimed(ctx context.Context, tx *sql.Tx, d *Diff, t *RebuildTimings) error {
	start := time.Now()
	del, err := tx.PrepareContext(ctx, `DELETE FROM catalog WHERE `+whereEqual(itemColumns)+` AND version = ?`)
	if err != nil {
		return err
	}
	defer del.Close()
	for _, list := range [][]Row{d.Stale, d.WrongNamespace} {
		for _, r := range list {
			if _, err := del.ExecContext(ctx, r.Namespace, r.TypeNormalized, r.ModelID, r.DataName, r.Version); err != nil {
				return err
			}
		}
	}

	rewrite := map[versionKey]bool{}
	inserts := make([]*Row, 0, len(d.FieldsWrong)+len(d.Missing))
	for i := range d.FieldsWrong {
		rewrite[d.FieldsWrong[i].Expected.versionKey()] = true
		inserts = append(inserts, &d.FieldsWrong[i].Expected)
	}
	setFlags := `UPDATE catalog SET is_latest = ? WHERE ` + whereEqual(itemColumns) + ` AND version = ?`
	if c.hasStepLatest {
		setFlags = `UPDATE catalog SET is_latest = ?, ` + StepLatestColumn + ` = ? WHERE ` + whereEqual(itemColumns) + ` AND version = ?`
	}
	upd, err := tx.PrepareContext(ctx, setFlags)
	if err != nil {
		return err
	}
	defer upd.Close()
	for _, fd := range d.FlagsWrong {
		if rewrite[fd.Expected.versionKey()] {
			continue
		}
		r := fd.Expected
		args := []any{boolInt(r.IsLatest)}
		if c.hasStepLatest {
			args = append(args, boolInt(r.IsStepLatest))
		}
		args = append(args, r.Namespace, r.TypeNormalized, r.ModelID, r.DataName, r.Version)
		if _, err := upd.ExecContext(ctx, args...); err != nil {
			return err
		}
	}

	// Write order (swamp-format §9.9), the same order applyDiff uses; sorting pointers
	// moves each row once instead of at every swap.
	for i := range d.Missing {
		inserts = append(inserts, &d.Missing[i])
	}
	slices.SortStableFunc(inserts, func(a, b *Row) int {
		switch {
		case a.CreatedAt != b.CreatedAt:
			return strings.Compare(a.CreatedAt, b.CreatedAt)
		case a.Version != b.Version:
			if a.Version < b.Version {
				return -1
			}
			return 1
		case lessKeyOf(a, b):
			return -1
		case lessKeyOf(b, a):
			return 1
		}
		return 0
	})
	restore, err := dropIndexesForBulk(ctx, tx, len(inserts))
	if err != nil {
		return err
	}
	if err := c.insertBulk(ctx, tx, inserts); err != nil {
		return err
	}
	indexes := time.Now()
	t.Write += indexes.Sub(start)
	if err := restore(); err != nil {
		return err
	}
	t.Indexes += time.Since(indexes)

	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO catalog_meta (key, value) VALUES (?, 'true')`, metaPopulated)
	return err
}

// insertBulk writes rows in order, bulkRows per statement.
func (c *Catalog) insertBulk(ctx context.Context, tx *sql.Tx, rows []*Row) error {
	cols := rowColumns(c.hasStepLatest)
	one := `(?` + strings.Repeat(", ?", len(cols)-1) + `)`
	head := `INSERT OR REPLACE INTO catalog (` + strings.Join(cols, ", ") + `) VALUES `
	prepare := func(n int) (*sql.Stmt, error) {
		return tx.PrepareContext(ctx, head+one+strings.Repeat(", "+one, n-1))
	}
	var full *sql.Stmt
	if len(rows) >= bulkRows {
		var err error
		if full, err = prepare(bulkRows); err != nil {
			return err
		}
		defer full.Close()
	}
	args := make([]any, 0, bulkRows*len(cols))
	for len(rows) > 0 {
		n := min(len(rows), bulkRows)
		stmt := full
		if n < bulkRows {
			var err error
			if stmt, err = prepare(n); err != nil {
				return err
			}
			defer stmt.Close()
		}
		args = args[:0]
		for _, r := range rows[:n] {
			args = append(args, r.values(c.hasStepLatest)...)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// bulkIndexMin is how many inserts into an empty table make rebuilding the
// secondary indexes afterwards cheaper than maintaining them row by row.
const bulkIndexMin = 1000

// dropIndexesForBulk, when n rows are about to go into an empty catalog
// table, drops the table's explicit indexes and returns a function that
// creates them again from the exact text sqlite_master held, in the same
// order, inside the same transaction: CREATE INDEX sorts once instead of
// descending every index's B-tree per row. The schema after restore is the
// one before, byte for byte. It does nothing (restore is a no-op) unless the
// table is empty and the indexes are the last entries of sqlite_master, so
// that recreating them keeps sqlite_master's order as well.
func dropIndexesForBulk(ctx context.Context, tx *sql.Tx, n int) (restore func() error, err error) {
	noop := func() error { return nil }
	if n < bulkIndexMin {
		return noop, nil
	}
	var empty bool
	if err := tx.QueryRowContext(ctx, `SELECT NOT EXISTS (SELECT 1 FROM catalog)`).Scan(&empty); err != nil || !empty {
		return noop, err
	}
	all, err := masterObjects(ctx, tx)
	if err != nil {
		return nil, err
	}
	// The suffix of explicit catalog indexes.
	i := len(all)
	for i > 0 && all[i-1].typ == "index" && all[i-1].table == "catalog" && all[i-1].sql.Valid {
		i--
	}
	return dropAndRestore(ctx, tx, all[i:])
}

// masterObject is one row of sqlite_master.
type masterObject struct {
	typ, name, table string
	sql              sql.NullString
}

// masterObjects lists sqlite_master in rowid order.
func masterObjects(ctx context.Context, tx *sql.Tx) ([]masterObject, error) {
	rows, err := tx.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	var all []masterObject
	for rows.Next() {
		var o masterObject
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, o)
	}
	return all, rows.Close()
}

// dropAndRestore drops the given indexes (a suffix of sqlite_master) and
// returns a function that creates them again from their text, in order.
func dropAndRestore(ctx context.Context, tx *sql.Tx, suffix []masterObject) (restore func() error, err error) {
	if len(suffix) == 0 {
		return func() error { return nil }, nil
	}
	for _, o := range suffix {
		if _, err := tx.ExecContext(ctx, `DROP INDEX "`+strings.ReplaceAll(o.name, `"`, `""`)+`"`); err != nil {
			return nil, err
		}
	}
	return func() error {
		for _, o := range suffix {
			if _, err := tx.ExecContext(ctx, o.sql.String); err != nil {
				return err
			}
		}
		return nil
	}, nil
}
