package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/swampj/swampj"
)

// Read-only media (an inspection in ModeReport).
//
// SQLite reads a WAL database only through its -shm index. When the -wal and
// -shm files exist it opens them read-only by itself (measured with
// modernc.org/sqlite v1.62.0 on a read-only bind mount, hot WAL included).
// When they do not exist and cannot be created (EROFS, or a directory this
// process may not write), the open fails with SQLITE_CANTOPEN or
// SQLITE_READONLY_DIRECTORY. Then:
//
//   - no -wal, or an empty one: every committed row is in the database
//     file, which nobody can change here, so it is opened with immutable=1
//     (SQLite then takes no locks and needs no -shm). Where only this
//     user may not write (a repo another user owns), the owner can: a
//     checkpoint of theirs during the read could show torn pages. That
//     costs at most a wrong report (the inspection changes nothing), and
//     running it again answers;
//   - a non-empty -wal without a usable -shm: its changes cannot be read
//     (immutable=1 would silently ignore them), so the open fails with
//     WALUnreadableError — not damage, nothing moved.

// CodeWALUnreadable: a hot WAL that cannot be read on read-only media.
const CodeWALUnreadable = "catalog_wal_unreadable"

// WALUnreadableError is returned in report mode on media this process cannot
// write when the catalog's write-ahead log holds changes that SQLite cannot
// read without creating its -shm index. The catalog is not damaged.
type WALUnreadableError struct {
	Path    string `json:"path"`
	WAL     string `json:"wal"`
	WALSize int64  `json:"walSize"`
	Err     error  `json:"-"`
}

// Code is CodeWALUnreadable, what the RUNBOOK names, though the cause is
// the read-only media (or a directory this user may not write).
func (e *WALUnreadableError) Code() string        { return CodeWALUnreadable }
func (e *WALUnreadableError) Class() swampj.Class { return swampj.ClassFailed }
func (e *WALUnreadableError) DerivedState() bool  { return true }
func (e *WALUnreadableError) Unwrap() error       { return e.Err }
func (e *WALUnreadableError) Error() string {
	return fmt.Sprintf("catalog %s was not inspected: its write-ahead log %s (%d bytes) holds changes not yet copied into the database, "+
		"and SQLite cannot read them here because it cannot create the -shm index beside them (the directory is not writable: %v). "+
		"The catalog is not damaged and nothing was changed. Run this where the repo can be written (SQLite then folds the log into "+
		"the database), or on a writable copy of the repo that keeps the -wal file", e.Path, e.WAL, e.WALSize, e.Err)
}

// readOnlyFallback decides, after connect failed with err in report mode,
// whether to retry with immutable=1. It returns a *WALUnreadableError when
// a non-empty WAL cannot be read, or err itself when the failure is not the
// read-only-media case.
func (c *Catalog) readOnlyFallback(err error) (retryImmutable bool, _ error) {
	// EROFS makes SQLite fail with SQLITE_CANTOPEN; a directory this user
	// may not write, with SQLITE_READONLY (SQLITE_READONLY_DIRECTORY: it
	// cannot create the -wal or -shm).
	if code := sqliteCode(err); c.immutable || (code != sqlite3.SQLITE_CANTOPEN && code != sqlite3.SQLITE_READONLY) {
		return false, err
	}
	werr := dirWritable(filepath.Dir(c.path))
	if werr == nil {
		return false, err // a writable directory: not this case
	}
	wal := c.path + "-wal"
	fi, serr := c.fsys.Lstat(wal)
	switch {
	case errors.Is(serr, fs.ErrNotExist):
		return true, nil
	case serr != nil:
		return false, err
	case fi.Size() == 0:
		return true, nil
	}
	return false, &WALUnreadableError{Path: c.path, WAL: wal, WALSize: fi.Size(), Err: werr}
}

// ReadOnlyMedia reports whether the catalog was opened immutable because its
// directory cannot be written (report mode only).
func (c *Catalog) ReadOnlyMedia() bool { return c.immutable }
