package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swampj/swampj/fsx"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Mode says what Open may do to the file.
type Mode int

const (
	// ModeReadWrite opens for write-through and rebuild: a missing catalog is
	// created, a damaged one is moved aside and replaced by a fresh one, and
	// the journal is switched to WAL.
	ModeReadWrite Mode = iota
	// ModeReport opens for inspection (verify, doctor): nothing on disk is
	// created, moved or converted, connections are query_only, and a catalog
	// with a foreign schema is opened anyway (see Catalog.Foreign) instead of
	// being refused.
	ModeReport
)

// Options configure Open.
type Options struct {
	Mode Mode
	// Now is the clock for moved-aside names; nil means time.Now.
	Now func() time.Time
	// NoIntegrityCheck skips PRAGMA quick_check, which reads the whole
	// file (its cost grows with the catalog). One-item commands set it:
	// their open then costs the same on any catalog. Damage quick_check
	// would have found shows up as SQLITE_CORRUPT in the statement that
	// meets it (a write-through step then leaves the catalog stale); the
	// commands that look at the whole catalog — doctor, verify, rebuild —
	// open without it and move a damaged file aside (rebuild) or report it.
	NoIntegrityCheck bool
	// NoCreate (ModeReadWrite): a missing catalog, or the fresh one that
	// would replace a damaged file Open moved aside, is not created; Open
	// returns *MissingError instead (its MovedAside says what was moved).
	// A confirmed rebuild uses it to build the new catalog complete,
	// aside, and link it in with its rows (CreateBuilt, create.go).
	NoCreate bool
	// Lazy commits at synchronous=NORMAL: a commit returns once its rows
	// are in the WAL, and is durable only after Sync (or Close, which
	// syncs). A host holding the catalog open across many writes uses it,
	// with its intents open until a Sync has made their rows durable
	// (lazy.go).
	Lazy bool
}

// Failpoint names, one per kind of commit (fsx.FS.Failpoint). The crash suite
// cuts at "failpoint:<name>".
const (
	FailpointWAL        = "catalog.wal.commit" // the journal_mode=WAL switch rewrites the header
	FailpointCreate     = "catalog.create.commit"
	FailpointUpsert     = "catalog.upsert.commit"
	FailpointRemove     = "catalog.remove.commit"
	FailpointRestamp    = "catalog.restamp.commit"
	FailpointInvalidate = "catalog.invalidate.commit"
	FailpointRebuild    = "catalog.rebuild.commit"
)

// sqliteHeader starts every SQLite database file (fileformat2.html §1.3).
const sqliteHeader = "SQLite format 3\x00"

// Catalog is an open _catalog.db. It is safe for concurrent use; every write
// is its own transaction.
type Catalog struct {
	fsys          fsx.FS
	path          string
	mode          Mode
	db            *sql.DB
	hasStepLatest bool
	created       bool
	movedAside    *MoveAside
	foreign       *ForeignSchemaError
	immutable     bool // report mode on read-only media (readonly.go)
	noCheck       bool // Options.NoIntegrityCheck
	noCreate      bool // Options.NoCreate
	building      bool // a temp catalog being built aside (create.go): no journal, no sync
	lazy          bool // Options.Lazy: commits at synchronous=NORMAL (lazy.go)
	walDirSynced  atomic.Bool
	unsynced      atomic.Bool // a lazy commit since the last Sync
	aside         bool        // a temp catalog created aside (create.go): its last close deletes its WAL
	closeOnce     sync.Once
	closeErr      error
	stmts         stmtCache
	rows          rowGroup // deferred row commits waiting to share one (groupcommit.go)
}

// Path is the absolute path of the catalog file.
func (c *Catalog) Path() string { return c.path }

// HasStepLatest reports whether the catalog has the swamp-format §11 is_step_latest
// column, which decides the latest-flag rule (latest.go).
func (c *Catalog) HasStepLatest() bool { return c.hasStepLatest }

// Created reports whether Open created the catalog schema (the file was
// missing, empty of tables, or replaced after a move-aside). Such a catalog
// has no rows and no `populated` flag: the caller rebuilds it.
func (c *Catalog) Created() bool { return c.created }

// MovedAside reports the damaged catalog Open moved out of the way, or nil.
func (c *Catalog) MovedAside() *MoveAside { return c.movedAside }

// Foreign is the reason a catalog opened in ModeReport is not one swampj may
// write, or nil. In ModeReadWrite, Open returns this error instead.
func (c *Catalog) Foreign() *ForeignSchemaError { return c.foreign }

// Close closes every connection. SQLite checkpoints the WAL when the last
// connection of any process closes; the -wal and -shm stay (persistwal.go,
// CloseWAL removes them).
func (c *Catalog) Close() error {
	c.closeOnce.Do(func() {
		var syncErr error
		if c.lazy && c.db != nil && c.unsynced.Load() {
			// Before the checkpoint, so that what the caller was told is
			// durable by Close is durable whatever the checkpoint does.
			syncErr = c.Sync()
		}
		defer func() {
			if c.closeErr == nil {
				c.closeErr = syncErr
			}
		}()
		if c.db != nil {
			c.stmts.close()
			c.closeErr = c.db.Close()
		}
		releasePath(c.path)
	})
	return c.closeErr
}

// Open opens the catalog at path the way swamp does (swamp-format §3.2) with the
// durability settings of design §2.3:
//
//   - busy_timeout 5000 ms, like swamp, so concurrent swamp readers and
//     writers wait instead of failing;
//   - synchronous=FULL, because the commit of a catalog write is the switch
//     point of a versioned write and must survive a power cut;
//   - BEGIN IMMEDIATE for every write (no SQLITE_BUSY from lock upgrades);
//   - journal_mode queried and switched to WAL only when it is not WAL.
//
// In ModeReadWrite: the parent directory is created; a missing catalog is
// created with swamp's DDL (swamp-format §3.3); a file that is not a usable database
// (zero bytes, no SQLite header, SQLITE_NOTADB/SQLITE_CORRUPT, quick_check
// failing) is moved aside with its sidecars (quarantine.go, see MovedAside)
// and replaced by a fresh catalog; a catalog with another schema is left
// untouched and reported as *ForeignSchemaError. With
// Options.NoIntegrityCheck, quick_check is not run.
func Open(ctx context.Context, fsys fsx.FS, path string, opts Options) (*Catalog, error) {
	fsys = fsx.OrReal(fsys)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &DBError{Op: "open", Path: path, Err: err}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	c := &Catalog{fsys: fsys, path: abs, mode: opts.Mode, noCheck: opts.NoIntegrityCheck, noCreate: opts.NoCreate, lazy: opts.Lazy && opts.Mode != ModeReport}
	alreadyOpen := holdPath(abs)
	if err := c.open(ctx, alreadyOpen, now); err != nil {
		if c.db != nil {
			_ = c.db.Close()
		}
		releasePath(abs)
		return nil, err
	}
	return c, nil
}

// open runs the steps of Open in order.
func (c *Catalog) open(ctx context.Context, alreadyOpen bool, now func() time.Time) error {
	report := c.mode == ModeReport

	// Parent directory (swamp creates it on open, swamp-format §3.1).
	if !report {
		if err := fsx.MkdirAllDurable(c.fsys, filepath.Dir(c.path), fsx.DirMode); err != nil {
			return &DBError{Op: "create directory for", Path: c.path, Err: err}
		}
	}

	// File-level checks before SQLite opens the file. SQLite itself deletes
	// a -wal or -journal that sits beside a missing, zero-byte or non-SQLite
	// file (measured with modernc.org/sqlite v1.62.0), so those cases must be
	// caught before it looks. Reading the header through fsx is safe only
	// while this process has no connection to the file (POSIX-lock hazard,
	// design §2.3); when another Catalog of this process has it open,
	// the file was checked by that Open and is never moved from under it.
	if !alreadyOpen {
		if err := c.checkBeforeOpen(ctx, report, now); err != nil {
			return err
		}
	}

	// Open and let SQLite judge the file; a damaged file is moved aside once
	// and the open repeated on the fresh file.
	st, err := c.connectOrReplace(ctx, report, alreadyOpen, now)
	if err != nil {
		return err
	}

	action, problem := classify(st)
	if action == foreignSchema {
		fe := st.foreignError(c.path, problem)
		if report {
			c.foreign = fe
			return nil
		}
		return fe
	}
	if report {
		if action == createSchema {
			return &MissingError{Path: c.path, Detail: "the file holds no catalog table"}
		}
		c.hasStepLatest = st.hasStepLatest
		return nil
	}

	// WAL before the schema, as swamp does on a new file (swamp-format §3.3 statement order).
	if err := c.ensureWAL(ctx); err != nil {
		return err
	}
	if action == createSchema || action == finishCreation {
		var err error
		if st, err = c.createSchema(ctx); err != nil {
			return err
		}
		c.created = true
	}
	c.hasStepLatest = st.hasStepLatest
	return nil
}

// checkBeforeOpen checks the file before SQLite opens it: a missing or
// damaged file is reported (ModeReport), or moved aside and created fresh.
func (c *Catalog) checkBeforeOpen(ctx context.Context, report bool, now func() time.Time) error {
	missing, damage, err := checkFile(c.fsys, c.path)
	if err != nil {
		return &DBError{Op: "check", Path: c.path, Err: err}
	}
	switch {
	case report && missing:
		return &MissingError{Path: c.path, Detail: "the file does not exist"}
	case report && damage != "":
		return &CorruptError{Path: c.path, Reason: damage}
	case damage != "": // includes sidecars left without their database
		if err := c.moveAside(damage, now()); err != nil {
			return err
		}
		missing = true
	}
	if !report {
		if err := CleanCreationLeftovers(c.fsys, c.path); err != nil {
			return &DBError{Op: "remove the unfinished creations beside", Path: c.path, Err: err}
		}
	}
	if !report && missing {
		if c.noCreate {
			return c.notCreated()
		}
		if err := c.createFresh(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// connectOrReplace opens the file and lets SQLite judge it: a damaged file
// is moved aside once and the open repeated on a fresh file (never in
// ModeReport, nor when this process has the file open already).
func (c *Catalog) connectOrReplace(ctx context.Context, report, alreadyOpen bool, now func() time.Time) (schemaState, error) {
	var st schemaState
	for attempt := 0; ; attempt++ {
		var err error
		st, err = c.connect(ctx)
		var dmg *damagedError
		if !errors.As(err, &dmg) {
			if err != nil && report {
				retry, ferr := c.readOnlyFallback(err)
				if retry {
					c.immutable = true
					continue
				}
				err = ferr
			}
			if err != nil {
				return st, err
			}
			break
		}
		if report || alreadyOpen || attempt > 0 {
			return st, &CorruptError{Path: c.path, Reason: dmg.reason, Err: dmg.err}
		}
		if err := c.moveAside(dmg.reason, now()); err != nil {
			return st, err
		}
		if c.noCreate {
			return st, c.notCreated()
		}
		if err := c.createFresh(ctx, nil); err != nil {
			return st, err
		}
	}

	return st, nil
}

// notCreated is Open's answer under Options.NoCreate when there is no
// catalog to open (any more).
func (c *Catalog) notCreated() error {
	if c.movedAside != nil {
		return &MissingError{Path: c.path, Detail: "the damaged file was moved aside", MovedAside: c.movedAside}
	}
	return &MissingError{Path: c.path, Detail: "the file does not exist"}
}

// damagedError is a file SQLite cannot use; Open turns it into a move-aside
// (read-write) or a CorruptError (report).
type damagedError struct {
	reason string
	err    error
}

func (e *damagedError) Error() string { return e.reason }

// checkFile looks at the catalog and its sidecars without SQLite. missing is
// true when there is no database file; damage is non-empty when the files
// must be moved aside before SQLite may open the path.
func checkFile(fsys fsx.FS, path string) (missing bool, damage string, err error) {
	fi, err := fsys.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		var orphans []string
		for _, suf := range sidecarSuffixes {
			ok, err := orphanWithContent(fsys, path+suf)
			if err != nil {
				return true, "", err
			}
			if ok {
				orphans = append(orphans, filepath.Base(path+suf))
			}
		}
		if len(orphans) > 0 {
			return true, fmt.Sprintf("%s without a database file (SQLite would delete them when it creates a new one)",
				strings.Join(orphans, ", ")), nil
		}
		return true, "", nil
	}
	if err != nil {
		return false, "", err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		// SQLite follows the link and keeps the sidecars beside the target;
		// renaming the link would split the unit. Leave judgement to SQLite
		// and never move it (a damaged one is reported as CorruptError).
		return false, "", nil
	case fi.IsDir():
		return false, "", fmt.Errorf("%s is a directory", path)
	case fi.Size() == 0:
		// SQLite treats a zero-byte file as an empty database (a crash
		// right after it created the file leaves one). With no sidecar
		// there is nothing to lose and it is used in place; with one,
		// SQLite would delete the sidecar, so the unit is moved aside.
		// Its sidecars may also have been moved already by an interrupted
		// move-aside, which is then finished.
		for _, suf := range sidecarSuffixes {
			if ok, err := orphanWithContent(fsys, path+suf); err != nil || ok {
				return false, "zero-byte file beside " + filepath.Base(path+suf), err
			}
		}
		if unfinished, err := unfinishedStamps(fsys, path); err != nil || len(unfinished) > 0 {
			return false, "zero-byte file whose sidecars an interrupted move-aside already moved", err
		}
		return false, "", nil
	}
	f, err := fsys.Open(path)
	if err != nil {
		return false, "", err
	}
	var hdr [len(sqliteHeader)]byte
	_, rerr := io.ReadFull(f, hdr[:])
	if cerr := f.Close(); cerr != nil && rerr == nil {
		rerr = cerr
	}
	switch {
	case errors.Is(rerr, io.ErrUnexpectedEOF):
		return false, fmt.Sprintf("%d-byte file, too short for an SQLite database", fi.Size()), nil
	case rerr != nil:
		return false, "", rerr
	case string(hdr[:]) != sqliteHeader:
		return false, "not an SQLite database (no \"SQLite format 3\" header)", nil
	}
	return false, "", nil
}

// orphanWithContent reports whether a sidecar of a missing database could
// hold something: a -journal, or a -wal with frames. A zero-byte -wal (the
// one kept between processes, persistwal.go, after its database was
// deleted) and a -shm (an index the first connection resets) are left in
// place: the new catalog is built aside and linked in beside them, and
// SQLite finds nothing in them to replay.
func orphanWithContent(fsys fsx.FS, p string) (bool, error) {
	fi, err := fsys.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case strings.HasSuffix(p, "-shm"):
		return false, nil
	case strings.HasSuffix(p, "-wal") && fi.Mode().IsRegular() && fi.Size() == 0:
		return false, nil
	}
	return true, nil
}

// moveAside closes any connection (a database must not be renamed while in
// use, design §2.3) and moves the catalog unit aside.
func (c *Catalog) moveAside(reason string, now time.Time) error {
	if c.db != nil {
		if err := c.db.Close(); err != nil {
			return &DBError{Op: "close before moving aside", Path: c.path, Err: err}
		}
		c.db = nil
	}
	moved, err := moveAside(c.fsys, c.path, reason, now)
	if err != nil {
		return err
	}
	if moved != nil {
		if c.movedAside == nil {
			c.movedAside = moved
		} else {
			c.movedAside.Files = append(c.movedAside.Files, moved.Files...)
			c.movedAside.Reason += "; " + moved.Reason
		}
	}
	c.created = true
	return nil
}

// dsn is the modernc.org/sqlite data source name: a file: URI (so no
// character of the path is taken for a parameter) with the connection
// pragmas every pooled connection runs.
func (c *Catalog) dsn() string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	if c.building {
		// A temp file nobody else can see yet (create.go): no rollback
		// journal and no sync per commit; the finished file is fsynced
		// once before it is linked in.
		q.Add("_pragma", "journal_mode(OFF)")
		q.Add("_pragma", "synchronous(OFF)")
		// CREATE INDEX may sort with helper threads: the other core
		// works while the build is the only thing running.
		q.Add("_pragma", "threads("+strconv.Itoa(buildSortThreads())+")")
	} else if c.lazy {
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walSizeLimit)+")")
	} else {
		q.Add("_pragma", "synchronous(FULL)")
		// With the WAL kept between processes (persistwal.go), a
		// non-negative limit makes the last close truncate it to zero
		// bytes; without one the log grows by every process's write
		// (measured: about 45 KB per one-version write).
		q.Add("_pragma", "journal_size_limit("+strconv.Itoa(walSizeLimit)+")")
	}
	if c.mode == ModeReport {
		q.Add("_pragma", "query_only(1)")
	}
	if c.immutable {
		// Read-only media without -wal/-shm (readonly.go): nobody can
		// change the file, so SQLite may skip locks and the -shm.
		q.Set("mode", "ro")
		q.Set("immutable", "1")
	}
	q.Set("_txlock", "immediate")
	u := url.URL{Path: filepath.ToSlash(c.path)}
	return "file:" + u.EscapedPath() + "?" + q.Encode()
}

// buildSortThreads is how many helper threads SQLite's sorter may use
// while a catalog is built aside: one fewer than the cores Go may use, at
// least one, at most three.
func buildSortThreads() int { return min(max(runtime.GOMAXPROCS(0)-1, 1), 3) }

// connect opens the pool, asks for the journal mode (the first read of the
// file, where SQLITE_NOTADB shows up), runs quick_check (unless
// Options.NoIntegrityCheck) and inspects the schema. Damage is returned as *damagedError with the pool closed.
func (c *Catalog) connect(ctx context.Context) (schemaState, error) {
	db, err := openDB(c.dsn(), c.keepsWAL())
	if err != nil {
		return schemaState{}, &DBError{Op: "open", Path: c.path, Err: err}
	}
	fail := func(op string, err error) (schemaState, error) {
		_ = db.Close()
		if isCorruption(err) {
			return schemaState{}, &damagedError{reason: "SQLite: " + err.Error(), err: err}
		}
		return schemaState{}, &DBError{Op: op, Path: c.path, Err: err}
	}

	var mode string
	if err := db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return fail("read journal_mode of", err)
	}
	if !c.noCheck {
		problems, err := quickCheck(ctx, db)
		if err != nil {
			return fail("quick_check", err)
		}
		if len(problems) > 0 {
			_ = db.Close()
			return schemaState{}, &damagedError{reason: "quick_check: " + strings.Join(problems, "; ")}
		}
	}
	st, err := inspectSchema(ctx, db)
	if err != nil {
		return fail("inspect schema of", err)
	}
	c.db = db
	return st, nil
}

// quickCheck returns quick_check's findings (none when it says "ok").
func quickCheck(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check(10)`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		if s != "ok" {
			out = append(out, s)
		}
	}
	return out, rows.Err()
}

// ensureWAL switches the file to WAL when it is not in WAL already (swamp-format §3.2).
// WAL is persistent, so this is normally a one-time event per file.
func (c *Catalog) ensureWAL(ctx context.Context) error {
	var mode string
	if err := c.db.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		return &DBError{Op: "read journal_mode of", Path: c.path, Err: err}
	}
	if strings.EqualFold(mode, "wal") {
		return nil
	}
	if err := c.fsys.Failpoint(FailpointWAL); err != nil {
		return err
	}
	if err := c.db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode); err != nil {
		return &DBError{Op: "switch to WAL", Path: c.path, Err: err}
	}
	if !strings.EqualFold(mode, "wal") {
		return &DBError{Op: "switch to WAL", Path: c.path, Err: fmt.Errorf("journal_mode stays %q", mode)}
	}
	return nil
}

// createSchema runs swamp's creation statements in one IMMEDIATE
// transaction. swamp runs them in autocommit; one transaction means a crash
// leaves either no schema or all of it. The schema is inspected again under
// the write lock: if another process created or changed it meanwhile,
// nothing is written (or the foreign schema is reported).
func (c *Catalog) createSchema(ctx context.Context) (schemaState, error) {
	var st schemaState
	err := c.writeTx(ctx, "create schema", FailpointCreate, func(tx *sql.Tx) error {
		var err error
		if st, err = inspectSchema(ctx, tx); err != nil {
			return err
		}
		action, problem := classify(st)
		switch action {
		case useAsIs:
			return nil
		case foreignSchema:
			return st.foreignError(c.path, problem)
		}
		for _, stmt := range createStatements() {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		st, err = inspectSchema(ctx, tx)
		return err
	})
	return st, err
}

// openPaths counts the Catalogs of this process per absolute path. A path
// already open here is never read with fsx or moved (POSIX-lock hazard).
var openPaths = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

func holdPath(p string) (alreadyOpen bool) {
	openPaths.Lock()
	defer openPaths.Unlock()
	openPaths.n[p]++
	return openPaths.n[p] > 1
}

func releasePath(p string) {
	openPaths.Lock()
	defer openPaths.Unlock()
	if openPaths.n[p]--; openPaths.n[p] <= 0 {
		delete(openPaths.n, p)
	}
}
