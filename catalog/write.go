package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Write-through operations (swamp-format §3.6). Each is one BEGIN IMMEDIATE transaction
// (the DSN's _txlock), uses INSERT OR REPLACE for rows so a rewritten row gets
// a new rowid and rowid order follows write order (swamp-format §3.2, §9.9), and calls the
// fsx failpoint right before COMMIT. All of them are idempotent, so a journal
// replay after a crash may run them again.

// writeTx runs fn in one IMMEDIATE transaction and commits it unless fn or
// the failpoint fails; then it rolls back and the catalog is unchanged. A
// failpoint error is returned as it is (fsx.IsCrash works on it).
func (c *Catalog) writeTx(ctx context.Context, op, failpoint string, fn func(tx *sql.Tx) error) error {
	p, err := c.beginTx(ctx, op, failpoint, fn)
	if err != nil {
		return err
	}
	return p.Commit()
}

// beginTx runs fn in a new IMMEDIATE transaction and returns it uncommitted.
func (c *Catalog) beginTx(ctx context.Context, op, failpoint string, fn func(tx *sql.Tx) error) (*Pending, error) {
	if c.mode == ModeReport {
		return nil, &ReadOnlyError{Path: c.path, Op: op}
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, &DBError{Op: op + " (begin)", Path: c.path, Err: err}
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		var coded Coded
		if errors.As(err, &coded) {
			return nil, err
		}
		return nil, &DBError{Op: op, Path: c.path, Err: err}
	}
	return &Pending{c: c, tx: tx, op: op, failpoint: failpoint}, nil
}

// Pending is a write transaction whose COMMIT waits for the caller: nobody
// else sees its rows until Commit. A restamp's statements have run and it
// holds the catalog's write lock until Commit or Rollback. A versioned
// write's (PrepareUpsertVersions) has only its rows checked: its BEGIN
// IMMEDIATE and statements run in Commit, so the write lock is held for
// microseconds rather than for the whole publish, and writers of other
// models commit beside each other instead of queueing behind a prepared
// transaction.
type Pending struct {
	c             *Catalog
	tx            *sql.Tx
	deferred      func(tx *sql.Tx) error // run in Commit's own transaction (tx nil until then)
	op, failpoint string
	// release, if set, runs once the transaction is over (a dedicated
	// connection goes back to the pool).
	release func()
	// Moved is how many rows a PrepareMoveStamp moves.
	Moved int64
}

func (p *Pending) done() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// Commit makes the transaction's changes durable (the failpoint first, as
// every write-through does).
func (p *Pending) Commit() error {
	defer p.done()
	if p.deferred != nil {
		fn := p.deferred
		p.deferred = nil
		if p.c.mode == ModeReport {
			return &ReadOnlyError{Path: p.c.path, Op: p.op}
		}
		return p.c.rows.commitDeferred(p, fn)
	}
	if err := p.c.fsys.Failpoint(p.failpoint); err != nil {
		_ = p.tx.Rollback()
		return err
	}
	if err := p.c.commitTx(p.tx); err != nil {
		return &DBError{Op: p.op + " (commit)", Path: p.c.path, Err: err}
	}
	return nil
}

// Rollback abandons the transaction; the catalog is as it was.
func (p *Pending) Rollback() {
	if p.tx != nil {
		_ = p.tx.Rollback()
	}
	p.deferred = nil
	p.done()
}

// PrepareUpsertVersions is UpsertVersions up to, not including, its
// transaction: the rows are checked now, and Commit runs the statements and
// commits in one short BEGIN IMMEDIATE transaction.
func (c *Catalog) PrepareUpsertVersions(ctx context.Context, rows []Row) (*Pending, error) {
	for _, r := range rows {
		if err := r.Validate("upsert"); err != nil {
			return nil, err
		}
	}
	if c.mode == ModeReport {
		return nil, &ReadOnlyError{Path: c.path, Op: "upsert"}
	}
	return &Pending{c: c, op: "upsert", failpoint: FailpointUpsert, deferred: func(tx *sql.Tx) error {
		q := c.cached(tx)
		for _, r := range rows {
			if err := c.upsertNewVersion(ctx, q, r); err != nil {
				return err
			}
		}
		return nil
	}}, nil
}

// insertSQL is the INSERT OR REPLACE of a full row.
func (c *Catalog) insertSQL() string {
	cols := rowColumns(c.hasStepLatest)
	return `INSERT OR REPLACE INTO catalog (` + strings.Join(cols, ", ") + `) VALUES (?` +
		strings.Repeat(", ?", len(cols)-1) + `)`
}

// UpsertNewVersion records a newly committed version as the latest, as
// swamp's upsertNewVersion does for save/finalize/append (swamp-format §3.5, §3.6): clear
// the flag inside the row's group, then INSERT OR REPLACE the row with the
// flag set. The groups follow the catalog's generation (latest.go): without
// is_step_latest, is_latest is cleared within (namespace, type, model,
// data_name, step_name) per swamp-format §3.5; with it, is_latest is cleared within the
// item and is_step_latest within the (workflow, job, step) group per swamp-format §11.
// The row's own IsLatest/IsStepLatest are ignored (set to true). The caller
// writes versions in ascending order, so the new row is also the highest.
func (c *Catalog) UpsertNewVersion(ctx context.Context, row Row) error {
	if err := row.Validate("upsert"); err != nil {
		return err
	}
	return c.writeTx(ctx, "upsert", FailpointUpsert, func(tx *sql.Tx) error {
		return c.upsertNewVersion(ctx, c.cached(tx), row)
	})
}

// UpsertVersions records many newly committed versions in one transaction,
// each exactly as UpsertNewVersion would, in the given order: within a group
// the last row given ends up latest (swamp's advanceLatestMarkers, swamp-format §3.6).
func (c *Catalog) UpsertVersions(ctx context.Context, rows []Row) error {
	if len(rows) == 0 {
		return nil
	}
	p, err := c.PrepareUpsertVersions(ctx, rows)
	if err != nil {
		return err
	}
	return p.Commit()
}

// UpsertVersionsBelow records versions a later version of their item may
// already follow (a write redone by recovery after a later write was
// published on top of it): each row goes in without flags, and then the
// flags of every row of its item are computed again from the rows (the
// highest version that has a row takes them, latest.go), in place, as a
// rebuild would set them. UpsertNewVersion would instead take the flags
// from the later version's row.
func (c *Catalog) UpsertVersionsBelow(ctx context.Context, rows []Row) error {
	for _, r := range rows {
		if err := r.Validate("upsert"); err != nil {
			return err
		}
	}
	return c.writeTx(ctx, "upsert", FailpointUpsert, func(tx *sql.Tx) error {
		seen := map[ItemKey]bool{}
		var keys []ItemKey
		for _, r := range rows {
			r.IsLatest, r.IsStepLatest = false, false
			if _, err := tx.ExecContext(ctx, c.insertSQL(), r.values(c.hasStepLatest)...); err != nil {
				return err
			}
			if k := r.Key(); !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			if err := c.reflagItem(ctx, tx, k); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpsertDeferred records an uncommitted version with both latest flags 0
// (swamp's saveDeferred/finalizeVersionDeferred, swamp-format §3.6). A later
// UpsertNewVersion of the same row makes it latest.
func (c *Catalog) UpsertDeferred(ctx context.Context, row Row) error {
	if err := row.Validate("upsert deferred"); err != nil {
		return err
	}
	row.IsLatest, row.IsStepLatest = false, false
	return c.writeTx(ctx, "upsert deferred", FailpointUpsert, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, c.insertSQL(), row.values(c.hasStepLatest)...)
		return err
	})
}

func (c *Catalog) upsertNewVersion(ctx context.Context, tx queryer, row Row) error {
	// The row this one replaces (same version) may sit in another group
	// (a different step wrote it); that group must not be left without a
	// flagged row.
	old, hadOld, err := c.rowByVersion(ctx, tx, row.Key(), row.Version)
	if err != nil {
		return err
	}

	latestCols := latestGroupColumns(c.hasStepLatest)
	if err := clearFlag(ctx, tx, "is_latest", latestCols, row); err != nil {
		return err
	}
	if c.hasStepLatest {
		if err := clearFlag(ctx, tx, StepLatestColumn, stepGroupColumns, row); err != nil {
			return err
		}
	}
	row.IsLatest, row.IsStepLatest = true, true
	if _, err := tx.ExecContext(ctx, c.insertSQL(), row.values(c.hasStepLatest)...); err != nil {
		return err
	}

	if hadOld {
		if old.IsLatest && old.latestGroup(c.hasStepLatest) != row.latestGroup(c.hasStepLatest) {
			if err := ensureFlagged(ctx, tx, "is_latest", latestCols, old); err != nil {
				return err
			}
		}
		if c.hasStepLatest && old.IsStepLatest && old.stepGroup() != row.stepGroup() {
			if err := ensureFlagged(ctx, tx, StepLatestColumn, stepGroupColumns, old); err != nil {
				return err
			}
		}
	}
	return nil
}

// RemoveVersion deletes one version's row (swamp's removeVersion, swamp-format §3.6). If
// that row carried a latest flag, the highest remaining version of the same
// group takes it over, in place (latest.go: ensureFlagged). A missing row is
// not an error.
func (c *Catalog) RemoveVersion(ctx context.Context, key ItemKey, version int64) error {
	if err := key.validate("remove version"); err != nil {
		return err
	}
	return c.writeTx(ctx, "remove version", FailpointRemove, func(tx *sql.Tx) error {
		old, ok, err := c.rowByVersion(ctx, tx, key, version)
		if err != nil || !ok {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM catalog WHERE `+whereEqual(itemColumns)+` AND version = ?`,
			key.Namespace, key.TypeNormalized, key.ModelID, key.DataName, version); err != nil {
			return err
		}
		if old.IsLatest {
			if err := ensureFlagged(ctx, tx, "is_latest", latestGroupColumns(c.hasStepLatest), old); err != nil {
				return err
			}
		}
		if c.hasStepLatest && old.IsStepLatest {
			if err := ensureFlagged(ctx, tx, StepLatestColumn, stepGroupColumns, old); err != nil {
				return err
			}
		}
		return nil
	})
}

// RemoveItem deletes every version of an item (swamp's remove, swamp-format §3.6).
func (c *Catalog) RemoveItem(ctx context.Context, key ItemKey) error {
	if err := key.validate("remove item"); err != nil {
		return err
	}
	return c.writeTx(ctx, "remove item", FailpointRemove, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM catalog WHERE `+whereEqual(itemColumns),
			key.Namespace, key.TypeNormalized, key.ModelID, key.DataName)
		return err
	})
}

// Restamp moves the rows of the given items from namespace fromNS to toNS,
// for a namespace migration (swamp-format §4; rows keep their writer's stamp otherwise,
// swamp-format §9.18). Each key's Namespace must be fromNS. A version that already has a
// toNS row keeps that row and loses the fromNS one, so no version is listed
// twice; the others are re-stamped in place (rowid, hence write order, is
// kept). The latest flags of each item under toNS are then recomputed from
// its versions (MarkLatest), since two stamps' flags may now overlap.
func (c *Catalog) Restamp(ctx context.Context, fromNS, toNS string, keys []ItemKey) error {
	for _, k := range keys {
		if err := k.validate("restamp"); err != nil {
			return err
		}
		if k.Namespace != fromNS {
			return &InvalidRowError{Op: "restamp", Row: k, Reason: fmt.Sprintf("key namespace is not the namespace being restamped (%q)", fromNS)}
		}
	}
	if fromNS == toNS || len(keys) == 0 {
		return nil
	}
	return c.writeTx(ctx, "restamp", FailpointRestamp, func(tx *sql.Tx) error {
		for _, k := range keys {
			args := []any{fromNS, k.TypeNormalized, k.ModelID, k.DataName}
			if _, err := tx.ExecContext(ctx,
				`DELETE FROM catalog WHERE `+whereEqual(itemColumns)+` AND version IN (
				   SELECT version FROM catalog WHERE namespace = ? AND type_normalized = ? AND model_id = ? AND data_name = ?)`,
				append(args, toNS, k.TypeNormalized, k.ModelID, k.DataName)...); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx,
				`UPDATE catalog SET namespace = ? WHERE `+whereEqual(itemColumns),
				append([]any{toNS}, args...)...); err != nil {
				return err
			}
			moved := k
			moved.Namespace = toNS
			if err := c.reflagItem(ctx, tx, moved); err != nil {
				return err
			}
		}
		return nil
	})
}

// Invalidate deletes catalog_meta.populated and nothing else (swamp-format §3.8): the next
// full query rebuilds additively, rows stay.
func (c *Catalog) Invalidate(ctx context.Context) error {
	return c.writeTx(ctx, "invalidate", FailpointInvalidate, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM catalog_meta WHERE key = ?`, metaPopulated)
		return err
	})
}

// itemColumns are the columns of an ItemKey.
var itemColumns = []string{"namespace", "type_normalized", "model_id", "data_name"}

// rowByVersion reads one row by primary key.
func (c *Catalog) rowByVersion(ctx context.Context, q queryer, key ItemKey, version int64) (Row, bool, error) {
	r, err := scanRow(q.QueryRowContext(ctx,
		`SELECT `+strings.Join(rowColumns(c.hasStepLatest), ", ")+` FROM catalog WHERE `+whereEqual(itemColumns)+` AND version = ?`,
		key.Namespace, key.TypeNormalized, key.ModelID, key.DataName, version), c.hasStepLatest)
	if errors.Is(err, sql.ErrNoRows) {
		return Row{}, false, nil
	}
	return r, err == nil, err
}

// reflagItem recomputes both flags of every row of one item with MarkLatest
// and updates, in place, only the rows whose flags change.
func (c *Catalog) reflagItem(ctx context.Context, tx queryer, key ItemKey) error {
	rows, err := tx.QueryContext(ctx,
		`SELECT `+strings.Join(rowColumns(c.hasStepLatest), ", ")+`, rowid FROM catalog WHERE `+whereEqual(itemColumns),
		key.Namespace, key.TypeNormalized, key.ModelID, key.DataName)
	if err != nil {
		return err
	}
	var items []Row
	var rowids []int64
	for rows.Next() {
		var rowid int64
		r, err := scanRow(rows, c.hasStepLatest, &rowid)
		if err != nil {
			rows.Close()
			return err
		}
		items, rowids = append(items, r), append(rowids, rowid)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	want := append([]Row(nil), items...)
	c.MarkLatest(want)
	for i := range items {
		if err := c.setFlags(ctx, tx, rowids[i], items[i], want[i]); err != nil {
			return err
		}
	}
	return nil
}

// setFlags updates the flags of one row in place when they differ.
func (c *Catalog) setFlags(ctx context.Context, tx queryer, rowid int64, have, want Row) error {
	if have.IsLatest == want.IsLatest && (!c.hasStepLatest || have.IsStepLatest == want.IsStepLatest) {
		return nil
	}
	var err error
	if c.hasStepLatest {
		_, err = tx.ExecContext(ctx, `UPDATE catalog SET is_latest = ?, `+StepLatestColumn+` = ? WHERE rowid = ?`,
			boolInt(want.IsLatest), boolInt(want.IsStepLatest), rowid)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE catalog SET is_latest = ? WHERE rowid = ?`, boolInt(want.IsLatest), rowid)
	}
	return err
}
