package catalog

// Lazy commits (Options.Lazy). A catalog opened lazy commits at
// synchronous=NORMAL: a commit appends its frames to the WAL and returns
// without an fsync, so a power cut may lose it, and every commit after it,
// until the WAL is next synced. That is safe only for a caller that keeps
// a redo record of every row until the row is durable, as a write handle
// does with its journal's intents (ops/write/handle.go): the intent stays
// open until Sync returns, and recovery redoes a row a power cut lost.
//
// Sync is one fsync of the -wal, which makes every frame in it durable,
// this connection's and any other process's. SQLite holds no lock on the
// -wal (its WAL locks are in the -shm), so opening and closing it here
// cannot release one of SQLite's POSIX locks (design §2.3).
//
// Every commit tells fsx's power-cut model what it did (before a lazy
// commit, after a synced one), so the crash suite loses exactly the
// commits a power cut can lose.

import (
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/swampj/swampj/fsx"
)

// Lazy reports whether the catalog commits without syncing (Options.Lazy).
func (c *Catalog) Lazy() bool { return c.lazy }

// Sync makes every commit to the catalog so far durable, by anyone: one
// fsync of its -wal (and, the first time, of its directory, which SQLite
// syncs only on the first sync it makes itself). A catalog with no -wal
// has nothing unsynced.
func (c *Catalog) Sync() error {
	// Cleared first: a commit that lands during the fsync sets it again.
	c.unsynced.Store(false)
	err := c.syncWAL()
	if err != nil {
		c.unsynced.Store(true)
	}
	return err
}

func (c *Catalog) syncWAL() error {
	wal := c.path + "-wal"
	f, err := c.fsys.OpenAppend(wal)
	if errors.Is(err, fs.ErrNotExist) {
		fsx.NoteSQLiteSynced(c.fsys, c.path)
		return nil
	}
	if err != nil {
		return &DBError{Op: "sync (open the WAL)", Path: c.path, Err: err}
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !c.walDirSynced.Load() {
		if err = c.fsys.SyncDir(filepath.Dir(c.path)); err == nil {
			c.walDirSynced.Store(true)
		}
	}
	if err != nil {
		return &DBError{Op: "sync (fsync the WAL)", Path: c.path, Err: err}
	}
	fsx.NoteSQLiteSynced(c.fsys, c.path)
	return nil
}

// commitTx commits a write transaction and tells the power-cut model
// whether the commit is durable.
func (c *Catalog) commitTx(tx *sql.Tx) error {
	if c.lazy {
		fsx.NoteSQLiteUnsynced(c.fsys, c.path)
		c.unsynced.Store(true)
		return tx.Commit()
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	fsx.NoteSQLiteSynced(c.fsys, c.path)
	return nil
}
