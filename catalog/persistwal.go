package catalog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"
)

// The WAL is kept between processes (SQLITE_FCNTL_PERSIST_WAL, see
// keepsWAL for the connections that do not set it): the
// last close checkpoints and then truncates the -wal to zero bytes
// (journal_size_limit is set, open.go) instead of deleting it and the
// -shm, so a command neither deletes nor re-creates them. Every committed
// row is in the database file after the close, as before. SQLite
// (swamp's included) opens a database beside an empty -wal and a stale
// -shm the usual way: the first connection resets the -shm and recovers
// the (empty) log.
//
// It saves no flush of a one-write process (design §3.1): SQLite fsyncs
// the directory on the first sync of every WAL it opens, created or not,
// and syncs the header of a log it starts over, new or truncated. Kept
// without the truncation the header sync goes, but the checkpointed
// frames stay valid: the next process's first open recovers them all
// again (it resets the -shm that said they were copied) and appends, so
// the log grows by every write and each close checkpoints all of it.

// walSizeLimit is PRAGMA journal_size_limit: the size a WAL is cut back to
// when a checkpoint lets a writer start it over (SQLite's default
// autocheckpoint, 1000 pages of 4 KiB, stays below it), and, being
// non-negative, what makes the last close truncate a kept WAL to zero.
const walSizeLimit = 4 << 20

// persistWALConnector opens connections of the "sqlite" driver with
// SQLITE_FCNTL_PERSIST_WAL set (or not, with persist false).
type persistWALConnector struct {
	driver.Connector
	persist bool
}

func (p persistWALConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := p.Connector.Connect(ctx)
	if err != nil || !p.persist {
		return conn, err
	}
	if err := setPersistWAL(conn, 1); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// setPersistWAL sets SQLITE_FCNTL_PERSIST_WAL on the main database of one
// connection (1 keeps the WAL at close, 0 lets the last close delete it).
func setPersistWAL(conn any, mode int) error {
	fc, ok := conn.(sqlite.FileControl)
	if !ok {
		return fmt.Errorf("the sqlite driver's connection (%T) offers no file control", conn)
	}
	got, err := fc.FileControlPersistWAL("main", mode)
	if err != nil {
		return fmt.Errorf("SQLITE_FCNTL_PERSIST_WAL: %w", err)
	}
	if got != mode {
		return fmt.Errorf("SQLITE_FCNTL_PERSIST_WAL is %d after setting it to %d", got, mode)
	}
	return nil
}

// keepsWAL says whether this catalog's connections keep the WAL at close:
// not a temp created aside (it is linked in as the bare file), not on
// read-only media (no WAL is opened), and, for an inspection, only when
// the -wal was there already: an inspection leaves the files as it found
// them (SQLite creates the -wal and -shm for any reader of a WAL
// database, and without this its last close deletes them again).
func (c *Catalog) keepsWAL() bool {
	if c.aside || c.immutable {
		return false
	}
	if c.mode != ModeReport {
		return true
	}
	_, err := c.fsys.Lstat(c.path + "-wal")
	return err == nil
}

// openDB is sql.Open("sqlite", dsn) whose connections keep the WAL at
// close when persist is set.
func openDB(dsn string, persist bool) (*sql.DB, error) {
	base, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(persistWALConnector{Connector: base, persist: persist}), nil
}

// CloseWAL closes the catalog and then lets SQLite fold its WAL into the
// database and delete the -wal and -shm, as it does at the last close
// without a persistent WAL: for a tool that hands the bare file on (a
// generated repo, a copy), which then has no sidecars. While another
// connection (of any process) has the catalog open, SQLite leaves the
// files; the rows are in them either way.
func (c *Catalog) CloseWAL() error {
	if err := c.Close(); err != nil {
		return err
	}
	if c.db == nil || c.aside || c.immutable || c.mode == ModeReport {
		return nil
	}
	if stillOpen := holdPath(c.path); stillOpen {
		releasePath(c.path)
		return nil // another Catalog of this process has it open
	}
	defer releasePath(c.path)
	db, err := openDB(c.dsn(), false)
	if err != nil {
		return &DBError{Op: "open", Path: c.path, Err: err}
	}
	var mode string
	// The first statement opens the WAL; the close is then the last
	// connection's, which checkpoints and deletes the sidecars.
	qerr := db.QueryRowContext(context.Background(), `PRAGMA journal_mode`).Scan(&mode)
	if err := db.Close(); err != nil && qerr == nil {
		qerr = err
	}
	if qerr != nil {
		return &DBError{Op: "close the WAL of", Path: c.path, Err: qerr}
	}
	return nil
}
