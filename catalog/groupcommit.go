package catalog

// Group commit of versioned writes' rows: the deferred transactions of
// PrepareUpsertVersions whose Commit is called while another is
// committing wait for it, then share the next transaction, one SAVEPOINT
// each, and one COMMIT (one WAL fsync at synchronous=FULL). A write
// handle's goroutines then queue in Go for microseconds instead of
// meeting SQLITE_BUSY on separate connections, where SQLite's busy
// handler sleeps 1, 2, 5, 10 ms … between tries, and each pays a fsync
// of its own.
//
// A lone Commit commits at once, alone, exactly as before (the same
// statements, the same failpoint, one COMMIT). A row set that fails is
// rolled back to its savepoint and only its Commit fails; a failed COMMIT
// (or the failpoint) fails every Commit of the group, none of whose rows
// is then in the catalog.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// rowGroup is a catalog's queue of deferred commits.
type rowGroup struct {
	mu      sync.Mutex
	queue   []*rowEntry
	leading bool
}

type rowEntry struct {
	p    *Pending
	fn   func(tx *sql.Tx) error
	done chan struct{} // closed once: committed (or failed), or to lead
	lead bool
	err  error
}

// commitDeferred runs fn in the next group transaction and returns once
// that transaction has ended.
func (g *rowGroup) commitDeferred(p *Pending, fn func(tx *sql.Tx) error) error {
	e := &rowEntry{p: p, fn: fn, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, e)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		<-e.done
		if !e.lead {
			return e.err
		}
	}
	g.commitQueued(p.c, e)
	return e.err
}

// commitQueued commits every queued entry in one transaction, wakes them
// and hands the lead on (self, the leader's own entry, is not woken).
func (g *rowGroup) commitQueued(c *Catalog, self *rowEntry) {
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	commitErr := c.commitGroup(batch)

	g.mu.Lock()
	var next *rowEntry
	if len(g.queue) > 0 {
		next = g.queue[0]
		next.lead = true
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, e := range batch {
		if commitErr != nil {
			e.err = commitErr
		}
		if e != self {
			close(e.done)
		}
	}
	if next != nil {
		close(next.done)
	}
}

// commitGroup is one BEGIN IMMEDIATE … COMMIT carrying every entry's rows.
// An entry whose statements fail gets its error and leaves nothing; the
// returned error (the failpoint's, BEGIN's or COMMIT's) is every entry's.
func (c *Catalog) commitGroup(batch []*rowEntry) error {
	op := batch[0].p.op
	tx, err := c.db.BeginTx(context.Background(), nil)
	if err != nil {
		return &DBError{Op: op + " (begin)", Path: c.path, Err: err}
	}
	ok := 0
	for i, e := range batch {
		if len(batch) == 1 {
			e.err = runRows(c, tx, e)
			if e.err != nil {
				_ = tx.Rollback()
				return nil
			}
			ok++
			break
		}
		sp := fmt.Sprintf("rows%d", i)
		if _, err := tx.Exec("SAVEPOINT " + sp); err != nil {
			_ = tx.Rollback()
			return &DBError{Op: op + " (savepoint)", Path: c.path, Err: err}
		}
		if e.err = runRows(c, tx, e); e.err != nil {
			if _, err := tx.Exec("ROLLBACK TO " + sp); err != nil {
				_ = tx.Rollback()
				return &DBError{Op: op + " (rollback to savepoint)", Path: c.path, Err: err}
			}
		} else {
			ok++
		}
		if _, err := tx.Exec("RELEASE " + sp); err != nil {
			_ = tx.Rollback()
			return &DBError{Op: op + " (release savepoint)", Path: c.path, Err: err}
		}
	}
	if ok == 0 {
		_ = tx.Rollback()
		return nil
	}
	if err := c.fsys.Failpoint(batch[0].p.failpoint); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := c.commitTx(tx); err != nil {
		return &DBError{Op: op + " (commit)", Path: c.path, Err: err}
	}
	return nil
}

// runRows runs one entry's statements, wrapping an uncoded failure as
// beginTx does.
func runRows(c *Catalog, tx *sql.Tx, e *rowEntry) error {
	err := e.fn(tx)
	if err == nil {
		return nil
	}
	var coded Coded
	if errors.As(err, &coded) {
		return err
	}
	return &DBError{Op: e.p.op, Path: c.path, Err: err}
}
