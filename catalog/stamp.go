package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/swampj/swampj"
)

// Set-based restamp: a namespace migration moves every row
// stamped one namespace to another in one statement, instead of one item at
// a time. It is only defined onto an empty stamp: then no version exists
// twice, every latest group maps one to one onto its new stamp (the groups
// only ever differ by namespace), and so no flag changes — and the rows it
// moves are exactly the rows the destination holds afterwards, which is
// what lets an undo move them back without a list of keys.

// StampError says a MoveStamp was refused because the catalog does not hold
// what the caller expected: the destination stamp has rows, or the source
// does not have the number of rows the caller counted. Nothing was changed.
type StampError struct {
	Path     string `json:"path"`
	From     string `json:"from"`
	To       string `json:"to"`
	FromRows int64  `json:"fromRows"`
	ToRows   int64  `json:"toRows"`
	WantFrom int64  `json:"wantFrom"` // -1: any
}

func (e *StampError) Code() string        { return CodeInvalidRow }
func (e *StampError) Class() swampj.Class { return swampj.ClassFailed }
func (e *StampError) DerivedState() bool  { return true }
func (e *StampError) Error() string {
	if e.ToRows > 0 {
		return fmt.Sprintf("catalog %s: cannot move the rows stamped %q to %q: %d rows are stamped %q already",
			e.Path, e.From, e.To, e.ToRows, e.To)
	}
	return fmt.Sprintf("catalog %s: cannot move the rows stamped %q to %q: %d rows are stamped %q, %d were expected",
		e.Path, e.From, e.To, e.FromRows, e.From, e.WantFrom)
}

// CountStamped returns how many rows carry namespace ns.
func (c *Catalog) CountStamped(ctx context.Context, ns string) (int64, error) {
	if err := c.readable(); err != nil {
		return 0, err
	}
	var n int64
	if err := c.db.QueryRowContext(ctx, `SELECT count(*) FROM catalog WHERE namespace = ?`, ns).Scan(&n); err != nil {
		return 0, &DBError{Op: "count rows of", Path: c.path, Err: err}
	}
	return n, nil
}

// MoveStamp re-stamps, in place, every row stamped from with to, in one
// transaction (FailpointRestamp before its COMMIT). It refuses with
// *StampError, changing nothing, when any row is stamped to, or when
// wantFrom >= 0 and the rows stamped from are not exactly wantFrom.
func (c *Catalog) MoveStamp(ctx context.Context, from, to string, wantFrom int64) error {
	p, err := c.PrepareMoveStamp(ctx, from, to, wantFrom)
	if err != nil {
		return err
	}
	return p.Commit()
}

// moveStampCacheKiB is the page cache of the connection that moves a stamp
// (as for Rebuild): the rows and the indexes it rewrites stay in memory
// until COMMIT instead of spilling to the WAL mid-transaction.
const moveStampCacheKiB = 64 << 10

// PrepareMoveStamp is MoveStamp up to, not including, its COMMIT. The
// transaction holds the catalog's write lock until Commit or Rollback, on
// a connection of its own. Pending.Moved is the number of rows it moves.
func (c *Catalog) PrepareMoveStamp(ctx context.Context, from, to string, wantFrom int64) (*Pending, error) {
	if c.mode == ModeReport {
		return nil, &ReadOnlyError{Path: c.path, Op: "restamp"}
	}
	if err := c.readable(); err != nil {
		return nil, err
	}
	if from == to {
		return nil, &InvalidRowError{Op: "restamp", Row: ItemKey{Namespace: from}, Reason: "source and destination stamp are the same"}
	}
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return nil, &DBError{Op: "restamp (connect)", Path: c.path, Err: err}
	}
	var cache int64
	release := func() {
		// The connection goes back to the pool with its old cache.
		if cache != 0 {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA cache_size = `+strconv.FormatInt(cache, 10))
		}
		_ = conn.Close()
	}
	if err := conn.QueryRowContext(ctx, `PRAGMA cache_size`).Scan(&cache); err != nil {
		release()
		return nil, &DBError{Op: "restamp (cache_size)", Path: c.path, Err: err}
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA cache_size = -`+strconv.Itoa(moveStampCacheKiB)); err != nil {
		release()
		return nil, &DBError{Op: "restamp (cache_size)", Path: c.path, Err: err}
	}
	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE (the DSN's _txlock)
	if err != nil {
		release()
		return nil, &DBError{Op: "restamp (begin)", Path: c.path, Err: err}
	}
	p := &Pending{c: c, tx: tx, op: "restamp", failpoint: FailpointRestamp, release: release}
	fail := func(err error) (*Pending, error) {
		p.Rollback()
		var coded Coded
		if errors.As(err, &coded) {
			return nil, err
		}
		return nil, &DBError{Op: "restamp", Path: c.path, Err: err}
	}
	// Counted under the write lock: nobody changes them before COMMIT.
	var nFrom, nTo, nAll int64
	if err := tx.QueryRowContext(ctx, `SELECT
		  (SELECT count(*) FROM catalog WHERE namespace = ?),
		  (SELECT count(*) FROM catalog WHERE namespace = ?),
		  (SELECT count(*) FROM catalog)`, from, to).Scan(&nFrom, &nTo, &nAll); err != nil {
		return fail(err)
	}
	if nTo > 0 || (wantFrom >= 0 && nFrom != wantFrom) {
		return fail(&StampError{Path: c.path, From: from, To: to, FromRows: nFrom, ToRows: nTo, WantFrom: wantFrom})
	}
	p.Moved = nFrom
	if nFrom == 0 {
		return p, nil
	}
	// Most of an UPDATE of the namespace is spent moving entries in the
	// indexes that hold it. When most of the table moves, dropping those
	// indexes and creating them again (one sort each) is cheaper.
	restore := func() error { return nil }
	if nFrom >= bulkIndexMin && 2*nFrom >= nAll {
		if restore, err = dropTrailingIndexes(ctx, tx, "namespace"); err != nil {
			return fail(err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE catalog SET namespace = ? WHERE namespace = ?`, to, from); err != nil {
		return fail(err)
	}
	if err := restore(); err != nil {
		return fail(err)
	}
	return p, nil
}

// dropTrailingIndexes drops the explicit catalog indexes at the end of
// sqlite_master whose definition names column, and returns a function that
// creates them again from the exact text sqlite_master held, in the same
// order, in the same transaction: the schema after restore is the one
// before, byte for byte, in the same sqlite_master order. It stops at the
// first trailing entry that is not such an index.
func dropTrailingIndexes(ctx context.Context, tx *sql.Tx, column string) (restore func() error, err error) {
	all, err := masterObjects(ctx, tx)
	if err != nil {
		return nil, err
	}
	i := len(all)
	for i > 0 && all[i-1].typ == "index" && all[i-1].table == "catalog" && all[i-1].sql.Valid &&
		indexNames(all[i-1].sql.String, column) {
		i--
	}
	return dropAndRestore(ctx, tx, all[i:])
}

// indexNames reports whether a CREATE INDEX statement lists column.
func indexNames(stmt, column string) bool {
	open := strings.Index(stmt, "(")
	if open < 0 {
		return false
	}
	for _, part := range strings.Split(strings.TrimSuffix(strings.TrimSpace(stmt[open+1:]), ")"), ",") {
		if strings.EqualFold(strings.Trim(strings.TrimSpace(part), `"`), column) {
			return true
		}
	}
	return false
}
