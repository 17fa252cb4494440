package catalog

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Stable error codes. The CLI prints them (`--json`) and maps them to exit
// codes; never change a value, only add new ones.
const (
	CodeSchema     = "catalog_schema"      // the file holds a catalog schema swampj does not know
	CodeCorrupt    = "catalog_corrupt"     // the file is not a usable SQLite database (report mode)
	CodeMissing    = "catalog_missing"     // no catalog at the path (report mode)
	CodeMoveAside  = "catalog_move_aside"  // moving a damaged catalog aside stopped part-way
	CodeReadOnly   = "catalog_read_only"   // a write on a catalog opened in report mode
	CodeInvalidRow = "catalog_invalid_row" // a caller passed a row or key that cannot be written
	CodeBusy       = "catalog_busy"        // another connection held the lock past busy_timeout
	CodeSQLite     = "catalog_sqlite"      // any other SQLite failure
)

// Coded is implemented by every error this package returns on purpose.
// Each also says DerivedState: the catalog is derived state, so an error
// that only says where a failure happened (a step, a repair) keeps its own
// code over a catalog error under it (swampj.CauseOf).
type Coded = swampj.Coded

// ErrorCode returns the stable code of err, or "" when err carries none.
func ErrorCode(err error) string {
	var c Coded
	if errors.As(err, &c) {
		return c.Code()
	}
	return ""
}

// ForeignSchemaError is returned when the file is an SQLite database whose
// catalog this package does not recognise: schema_version is not "4", or the
// catalog/catalog_meta tables do not have swamp's shape (swamp-format §3.3). swamp would
// drop such a table; swampj leaves the file exactly as it found it.
type ForeignSchemaError struct {
	Path string `json:"path"`
	// SchemaVersion is catalog_meta.schema_version as found; VersionPresent
	// is false when the key (or the catalog_meta table) is absent.
	SchemaVersion  string `json:"schema_version"`
	VersionPresent bool   `json:"version_present"`
	// Problem says what does not match, in one sentence.
	Problem string `json:"problem"`
	// Columns is the catalog table as found (nil when there is none).
	Columns []Column `json:"columns,omitempty"`
}

func (e *ForeignSchemaError) Code() string        { return CodeSchema }
func (e *ForeignSchemaError) Class() swampj.Class { return swampj.ClassFailed }
func (e *ForeignSchemaError) DerivedState() bool  { return true }
func (e *ForeignSchemaError) Error() string {
	return fmt.Sprintf("catalog %s: %s; swampj left it untouched (swamp itself would drop it). "+
		"If it is disposable, stop every swamp process, move %s together with its -wal, -shm and -journal "+
		"files (never one without the others), then rebuild the catalog",
		e.Path, e.Problem, e.Path)
}

// CorruptError is returned in report mode (or when the catalog is also open
// elsewhere in this process) for a file that is not a usable SQLite
// database. In read-write mode the file is moved aside instead (quarantine.go).
type CorruptError struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Err    error  `json:"-"`
}

// Code is the code of a failure of the system below when that caused it
// (a full disk, an I/O error), else CodeCorrupt.
func (e *CorruptError) Code() string { return swampj.CodeOr(swampj.SystemFailure(e.Err), CodeCorrupt) }

func (e *CorruptError) Class() swampj.Class {
	return swampj.ClassOr(swampj.SystemFailure(e.Err), swampj.ClassFailed)
}
func (e *CorruptError) DerivedState() bool { return true }
func (e *CorruptError) Unwrap() error      { return e.Err }
func (e *CorruptError) Error() string {
	return fmt.Sprintf("catalog %s is not usable: %s. A confirmed rebuild "+
		"moves it aside with its sidecars (nothing is deleted) and rebuilds it from the data on disk",
		e.Path, e.Reason)
}

// MissingError is returned in report mode when there is no catalog to read,
// and by a read-write Open with Options.NoCreate when there is none to open.
type MissingError struct {
	Path   string `json:"path"`
	Detail string `json:"detail"`
	// MovedAside is the damaged catalog a read-write Open with
	// Options.NoCreate moved out of the way before it found none to open.
	MovedAside *MoveAside `json:"movedAside,omitempty"`
}

func (e *MissingError) Code() string        { return CodeMissing }
func (e *MissingError) Class() swampj.Class { return swampj.ClassFailed }
func (e *MissingError) DerivedState() bool  { return true }
func (e *MissingError) Error() string {
	return fmt.Sprintf("catalog %s: %s. A confirmed rebuild builds it from the data on disk",
		e.Path, e.Detail)
}

// MoveAsideError is returned when moving a damaged catalog aside stopped
// part-way. Moved lists what was renamed before the failure; nothing was
// deleted. Running the same command again finishes the move under the same
// time stamp (quarantine.go).
type MoveAsideError struct {
	Path   string      `json:"path"`
	Reason string      `json:"reason"`
	Moved  []MovedFile `json:"moved"`
	Err    error       `json:"-"`
}

// Code is the code of a failure of the system below when that caused it
// (a full disk, an I/O error), else CodeMoveAside.
func (e *MoveAsideError) Code() string {
	return swampj.CodeOr(swampj.SystemFailure(e.Err), CodeMoveAside)
}

func (e *MoveAsideError) Class() swampj.Class {
	return swampj.ClassOr(swampj.SystemFailure(e.Err), swampj.ClassFailed)
}
func (e *MoveAsideError) DerivedState() bool { return true }
func (e *MoveAsideError) Unwrap() error      { return e.Err }
func (e *MoveAsideError) Error() string {
	var moved []string
	for _, m := range e.Moved {
		moved = append(moved, m.From+" -> "+m.To)
	}
	done := "nothing was moved"
	if len(moved) > 0 {
		done = "moved so far: " + strings.Join(moved, ", ")
	}
	return fmt.Sprintf("moving damaged catalog %s aside (%s) failed: %v; %s; nothing was deleted. "+
		"Fix the cause and run the confirmed rebuild again to finish the move",
		e.Path, e.Reason, e.Err, done)
}

// ReadOnlyError is returned by every write on a catalog opened in report mode.
type ReadOnlyError struct {
	Path string
	Op   string
}

func (e *ReadOnlyError) Code() string        { return CodeReadOnly }
func (e *ReadOnlyError) Class() swampj.Class { return swampj.ClassFailed }
func (e *ReadOnlyError) DerivedState() bool  { return true }
func (e *ReadOnlyError) Error() string {
	return fmt.Sprintf("catalog %s was opened in report mode; %s needs a read-write Open", e.Path, e.Op)
}

// InvalidRowError is returned before anything is written when a caller
// passes a row or key that cannot be stored (empty key part, wrong
// namespace, duplicate version).
type InvalidRowError struct {
	Op     string
	Row    ItemKey
	Reason string
}

func (e *InvalidRowError) Code() string        { return CodeInvalidRow }
func (e *InvalidRowError) Class() swampj.Class { return swampj.ClassFailed }
func (e *InvalidRowError) DerivedState() bool  { return true }
func (e *InvalidRowError) Error() string {
	return fmt.Sprintf("catalog %s: invalid row %s/%s/%s (namespace %q): %s",
		e.Op, e.Row.TypeNormalized, e.Row.ModelID, e.Row.DataName, e.Row.Namespace, e.Reason)
}

// DBError wraps a failure reported by SQLite.
type DBError struct {
	Op   string
	Path string
	Err  error
}

// Unwrap gives the SQLite error and, when the disk is full, ENOSPC, so
// errors.Is(err, syscall.ENOSPC) holds for a catalog on a full disk.
func (e *DBError) Unwrap() []error {
	if e.diskFull() {
		return []error{e.Err, syscall.ENOSPC}
	}
	return []error{e.Err}
}

// Is matches swampj.ErrBusy when another connection held the catalog past
// the busy timeout (code catalog_busy): retry later.
func (e *DBError) Is(target error) bool { return target == swampj.ErrBusy && isBusy(e.Err) }

// Code is CodeBusy when another connection held the lock, the full disk's
// code when the disk is full, else CodeSQLite.
func (e *DBError) Code() string {
	if isBusy(e.Err) {
		return CodeBusy
	}
	if c := swampj.SystemFailure(e); c != nil {
		return c.Code()
	}
	return CodeSQLite
}

// Class is swampj.ClassBusy when another connection held the lock.
func (e *DBError) Class() swampj.Class {
	if isBusy(e.Err) {
		return swampj.ClassBusy
	}
	if c := swampj.SystemFailure(e); c != nil {
		return c.Class()
	}
	return swampj.ClassFailed
}
func (e *DBError) DerivedState() bool { return true }
func (e *DBError) Error() string {
	msg := fmt.Sprintf("catalog %s %s: %v", e.Op, e.Path, e.Err)
	switch {
	case isBusy(e.Err):
		msg += "; another swamp or swampj process holds the catalog lock longer than 5s — retry when it has finished"
	case e.diskFull():
		msg += "; no space left on device: free space on the file system holding the catalog"
	}
	return msg
}

// diskFull reports whether SQLite's failure is a full disk: SQLITE_FULL,
// or an I/O error while the file system holding the catalog has no space
// left (SQLite reports ENOSPC on its -shm or -wal as "disk I/O error").
func (e *DBError) diskFull() bool {
	switch sqliteCode(e.Err) {
	case sqlite3.SQLITE_FULL:
		return true
	case sqlite3.SQLITE_IOERR:
		free, err := fsx.FreeBytes(filepath.Dir(e.Path))
		return err == nil && free < 64<<10
	}
	return false
}

// sqliteCode returns the primary SQLite result code carried by err, or 0.
// Extended result codes are on in modernc.org/sqlite, so the low byte is the
// primary code.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// isCorruption reports whether SQLite judged the file itself unusable.
func isCorruption(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CORRUPT || c == sqlite3.SQLITE_NOTADB
}

func isBusy(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// Next: the catalog is derived state; a rebuild makes it again.
func (e *CorruptError) Next() swampj.Next { return swampj.NextRebuildCatalog }

// Next: a rebuild makes the missing catalog.
func (e *MissingError) Next() swampj.Next { return swampj.NextRebuildCatalog }

// Next: the rebuild that could not set the old catalog aside, again.
func (e *MoveAsideError) Next() swampj.Next { return swampj.NextRebuildCatalogAgain }

// Next: look at the foreign catalog (read-only) before a rebuild replaces it.
func (e *ForeignSchemaError) Next() swampj.Next { return swampj.NextInspectCatalogThenRebuild }
