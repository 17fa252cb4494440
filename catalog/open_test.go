package catalog_test

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

func fixedClock(s string) func() time.Time {
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return func() time.Time { return tm }
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// A catalog whose rows live only in the -wal (another connection holds it
// open with auto-checkpoint off) is read through, written to, and survives.
func TestHotWALIsReadAndKept(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	other := rawDB(t, path)
	other.SetMaxOpenConns(1)
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_autocheckpoint=0`); err != nil {
		t.Fatal(err)
	}
	hot := []catalog.Row{row("", "t", "m", "a", 1), row("", "t", "m", "a", 2)}
	hot[1].IsLatest = true
	for _, r := range hot {
		if _, err := conn.ExecContext(ctx, `INSERT INTO catalog (namespace, type_normalized, model_id, data_name, id, version,
			is_latest, model_name, spec_name, data_type, content_type, lifetime, owner_type, size, created_at, tags, owner_ref)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Namespace, r.TypeNormalized, r.ModelID, r.DataName, r.ID, r.Version, b(r.IsLatest), r.ModelName,
			r.SpecName, r.DataType, r.ContentType, r.Lifetime, r.OwnerType, r.Size, r.CreatedAt, r.Tags, r.OwnerRef); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := fsx.Real().Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("expected a hot -wal: %v", err)
	}

	c = openRW(t, path)
	if c.MovedAside() != nil || c.Created() {
		t.Fatalf("hot WAL catalog treated as damaged: %+v", c.MovedAside())
	}
	if got := rows(t, c, ""); !reflect.DeepEqual(got, hot) {
		t.Fatalf("rows from the WAL: %v", flags(got))
	}
	upsert(t, c, row("", "t", "m", "a", 3))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// The other connection still sees everything, and so does a new open
	// after it is gone.
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM catalog`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("other connection sees %d rows, %v", n, err)
	}
	conn.Close()
	other.Close()
	c = openRW(t, path)
	wantStrings(t, "rows after reopen", flags(rows(t, c, "")), []string{"a/v1:00", "a/v2:00", "a/v3:10"})
}

// Damaged files are moved aside with every sidecar, under one stamp, and a
// fresh catalog takes their place. Nothing is deleted.
func TestDamagedCatalogIsMovedAsideWithSidecars(t *testing.T) {
	cases := map[string]func(t *testing.T, path string){
		"random bytes": func(t *testing.T, path string) {
			writeFile(t, path, randomBytes(8192))
		},
		"zero bytes": func(t *testing.T, path string) {
			writeFile(t, path, nil)
		},
		"short file": func(t *testing.T, path string) {
			writeFile(t, path, []byte("SQLite"))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := catalogPath(t)
			damage(t, path)
			for _, suf := range []string{"-wal", "-shm", "-journal"} {
				writeFile(t, path+suf, []byte("sidecar "+suf+" of the damaged catalog"))
			}
			dir := filepath.Dir(path)
			before := dirListing(t, dir)

			c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Now: fixedClock("2026-11-30T12:34:56Z")})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer c.Close()
			moved := c.MovedAside()
			if moved == nil || !c.Created() {
				t.Fatalf("MovedAside=%v Created=%v", moved, c.Created())
			}
			stamp := ".corrupt-20261130T123456Z"
			var gotMoves []string
			for _, m := range moved.Files {
				gotMoves = append(gotMoves, filepath.Base(m.From)+" -> "+filepath.Base(m.To))
			}
			wantStrings(t, "moves (sidecars first)", gotMoves, []string{
				"_catalog.db-wal -> _catalog.db" + stamp + "-wal",
				"_catalog.db-shm -> _catalog.db" + stamp + "-shm",
				"_catalog.db-journal -> _catalog.db" + stamp + "-journal",
				"_catalog.db -> _catalog.db" + stamp,
			})
			// Every original byte is still on disk under the moved name.
			after := dirListing(t, dir)
			for name, content := range before {
				movedName := strings.Replace(name, "_catalog.db", "_catalog.db"+stamp, 1)
				if after[movedName] != content {
					t.Fatalf("%s not preserved as %s", name, movedName)
				}
			}
			// The fresh catalog works.
			upsert(t, c, row("", "t", "m", "a", 1))
			if m, _ := c.Meta(ctx); m["schema_version"] != "4" {
				t.Fatalf("fresh catalog meta: %v", m)
			}
		})
	}
}

// A database with a valid header but damaged pages fails quick_check (or
// SQLite's own read) and is moved aside too.
func TestCorruptPagesAreMovedAside(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	var many []catalog.Row
	for v := int64(1); v <= 400; v++ {
		many = append(many, row("", "aws/ec2/vpc", "m1", "state", v))
	}
	if err := c.UpsertVersions(ctx, many); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 4*4096 {
		t.Fatalf("catalog too small to damage: %d bytes", len(data))
	}
	copy(data[2*4096:], randomBytes(4096)) // page 3
	writeFile(t, path, data)

	_, err = catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if catalog.ErrorCode(err) != catalog.CodeCorrupt {
		t.Fatalf("report mode on a corrupt catalog: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal("report mode moved the file")
	}

	c = openRW(t, path)
	if c.MovedAside() == nil || len(c.MovedAside().Files) == 0 {
		t.Fatal("corrupt pages not moved aside")
	}
	t.Logf("reason: %s", c.MovedAside().Reason)
	if len(rows(t, c, "")) != 0 {
		t.Fatal("fresh catalog is not empty")
	}
}

// A -wal/-journal without its database is moved aside before SQLite can
// delete it on creating the new file.
func TestOrphanSidecarsAreMovedAside(t *testing.T) {
	path := catalogPath(t)
	writeFile(t, path+"-wal", []byte("orphaned wal"))
	c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Now: fixedClock("2026-11-30T00:00:00Z")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.MovedAside() == nil || len(c.MovedAside().Files) != 1 {
		t.Fatalf("MovedAside = %+v", c.MovedAside())
	}
	got, err := os.ReadFile(path + ".orphan-20261130T000000Z-wal")
	if err != nil || string(got) != "orphaned wal" {
		t.Fatalf("orphan not preserved: %q %v", got, err)
	}
}

// A move-aside cut after the sidecars is finished by the next Open under the
// same stamp, so the damaged unit stays together.
func TestInterruptedMoveAsideIsFinishedUnderOneStamp(t *testing.T) {
	path := catalogPath(t)
	writeFile(t, path, randomBytes(4096))
	writeFile(t, path+"-wal", []byte("wal"))
	writeFile(t, path+"-shm", []byte("shm"))

	fault := fsx.NewFault(fsx.Real()).CrashAfter(2) // both sidecar renames, then crash
	_, err := catalog.Open(ctx, fault, path, catalog.Options{Now: fixedClock("2026-11-30T01:00:00Z")})
	if !fsx.IsCrash(err) || catalog.ErrorCode(err) != catalog.CodeMoveAside {
		t.Fatalf("Open with crash = %v", err)
	}
	var mae *catalog.MoveAsideError
	if !errors.As(err, &mae) || len(mae.Moved) != 2 {
		t.Fatalf("MoveAsideError: %+v", mae)
	}

	c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Now: fixedClock("2026-11-30T02:00:00Z")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.MovedAside().Files; len(got) != 1 || filepath.Base(got[0].To) != "_catalog.db.corrupt-20261130T010000Z" {
		t.Fatalf("second Open moved %+v", got)
	}
	names := sortedKeys(dirListing(t, filepath.Dir(path)))
	var moved []string
	for _, n := range names {
		if strings.Contains(n, ".corrupt-") {
			moved = append(moved, n)
		}
	}
	wantStrings(t, "moved set", moved, []string{
		"_catalog.db.corrupt-20261130T010000Z",
		"_catalog.db.corrupt-20261130T010000Z-shm",
		"_catalog.db.corrupt-20261130T010000Z-wal",
	})
}

func TestSecondMoveAsideInTheSameSecondGetsItsOwnName(t *testing.T) {
	path := catalogPath(t)
	clock := fixedClock("2026-11-30T03:00:00Z")
	for i := 0; i < 2; i++ {
		writeFile(t, path, randomBytes(100))
		c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		os.Remove(path + "-wal") // test cleanup of the fresh catalog's own files
		os.Remove(path + "-shm")
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"_catalog.db.corrupt-20261130T030000Z", "_catalog.db.corrupt-20261130T030000Z.1"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), n)); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
}

// schema_version "3": swamp would drop the table; swampj reports and keeps it.
func TestForeignSchemaVersionIsReportedNotDropped(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	upsert(t, c, row("", "t", "m", "a", 1))
	c.Close()
	db := rawDB(t, path)
	mustExec(t, db, `UPDATE catalog_meta SET value = '3' WHERE key = 'schema_version'`)
	db.Close()
	schemaBefore := masterSnapshot(t, path)

	_, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
	var fe *catalog.ForeignSchemaError
	if !errors.As(err, &fe) || fe.Code() != "catalog_schema" || fe.SchemaVersion != "3" || !fe.VersionPresent {
		t.Fatalf("Open = %v", err)
	}
	// What was found and what to do, in words; the CLI names its command.
	if !strings.Contains(err.Error(), `"3"`) || !strings.Contains(err.Error(), "rebuild the catalog") || strings.Contains(err.Error(), "swampj catalog") {
		t.Fatalf("message does not say what was found and what to do, or names a CLI command: %v", err)
	}

	// Report mode opens it for inspection, read-only.
	c, err = catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	if c.Foreign() == nil {
		t.Fatal("report mode: Foreign() is nil")
	}
	if m, err := c.Meta(ctx); err != nil || m["schema_version"] != "3" {
		t.Fatalf("Meta in report mode: %v %v", m, err)
	}
	if err := c.Invalidate(ctx); catalog.ErrorCode(err) != catalog.CodeReadOnly {
		t.Fatalf("write in report mode: %v", err)
	}
	if _, err := c.Rows(ctx, ""); catalog.ErrorCode(err) != catalog.CodeSchema {
		t.Fatalf("Rows on a foreign catalog: %v", err)
	}
	c.Close()

	wantStrings(t, "schema", masterSnapshot(t, path), schemaBefore)
	db = rawDB(t, path)
	var n int
	var v string
	if err := db.QueryRow(`SELECT count(*) FROM catalog`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows after foreign open: %d %v", n, err)
	}
	if err := db.QueryRow(`SELECT value FROM catalog_meta WHERE key='schema_version'`).Scan(&v); err != nil || v != "3" {
		t.Fatalf("schema_version now %q %v", v, err)
	}
}

func TestUnknownTableShapeIsForeign(t *testing.T) {
	path := catalogPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	mustExec(t, db, `CREATE TABLE catalog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`)
	mustExec(t, db, `INSERT INTO catalog_meta VALUES ('schema_version', '4')`)
	mustExec(t, db, `CREATE TABLE catalog (namespace TEXT, name TEXT, version INTEGER)`)
	db.Close()
	_, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
	var fe *catalog.ForeignSchemaError
	if !errors.As(err, &fe) || !strings.Contains(fe.Problem, "columns") {
		t.Fatalf("Open = %v", err)
	}
}

// swamp creates the catalog table before it stores schema_version; an empty
// table without the version is finished, a table with rows is not touched.
func TestInterruptedSwampCreation(t *testing.T) {
	build := func(t *testing.T, withRow bool) string {
		path := catalogPath(t)
		db := buildFromFixture(t, path, "swamp-schema4.sql")
		mustExec(t, db, `DELETE FROM catalog_meta`)
		if withRow {
			insertRaw(t, db, row("", "t", "m", "a", 1), false)
		}
		db.Close()
		return path
	}
	t.Run("empty", func(t *testing.T) {
		path := build(t, false)
		c := openRW(t, path)
		if m, _ := c.Meta(ctx); m["schema_version"] != "4" || !c.Created() {
			t.Fatalf("meta %v created %v", m, c.Created())
		}
	})
	t.Run("with rows", func(t *testing.T) {
		path := build(t, true)
		_, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
		if catalog.ErrorCode(err) != catalog.CodeSchema {
			t.Fatalf("Open = %v", err)
		}
	})
}

func TestReportModeCreatesNothing(t *testing.T) {
	path := catalogPath(t)
	_, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if catalog.ErrorCode(err) != catalog.CodeMissing {
		t.Fatalf("Open = %v", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatal("report mode created the directory")
	}

	writeFile(t, path, randomBytes(100))
	_, err = catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if catalog.ErrorCode(err) != catalog.CodeCorrupt {
		t.Fatalf("Open = %v", err)
	}
	if names := sortedKeys(dirListing(t, filepath.Dir(path))); !reflect.DeepEqual(names, []string{"_catalog.db"}) {
		t.Fatalf("report mode changed the directory: %v", names)
	}
}

func TestReportModeReadsAndRefusesWrites(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	upsert(t, c, row("", "t", "m", "a", 1))
	c.Close()
	r, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(rows(t, r, "")) != 1 {
		t.Fatal("report mode cannot read")
	}
	if _, err := r.Diff(ctx, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.UpsertNewVersion(ctx, row("", "t", "m", "a", 2)); catalog.ErrorCode(err) != catalog.CodeReadOnly {
		t.Fatalf("upsert in report mode: %v", err)
	}
	if err := r.Apply(ctx, "", nil, nil); catalog.ErrorCode(err) != catalog.CodeReadOnly {
		t.Fatalf("apply in report mode: %v", err)
	}
}

// Two Catalogs on one file in one process: the second skips the file-level
// checks (no fd of the database is opened beside live connections) and both
// work.
func TestTwoCatalogsOnOneFile(t *testing.T) {
	path := catalogPath(t)
	a := openRW(t, path)
	b := openRW(t, path)
	upsert(t, a, row("", "t", "m", "a", 1))
	upsert(t, b, row("", "t", "m", "a", 2))
	wantStrings(t, "rows via a", flags(rows(t, a, "")), []string{"a/v1:00", "a/v2:10"})
}

func TestPathWithURICharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#% dir", ".swamp", "data", "_catalog.db")
	c := openRW(t, path)
	upsert(t, c, row("", "t", "m", "a", 1))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("catalog not at the literal path: %v", err)
	}
}

func TestMoveAsideFilesRefusesAnOpenCatalog(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	if _, err := catalog.MoveAsideFiles(fsx.Real(), path, "test", time.Now()); catalog.ErrorCode(err) != catalog.CodeMoveAside {
		t.Fatalf("MoveAsideFiles on an open catalog: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	moved, err := catalog.MoveAsideFiles(fsx.Real(), path, "user asked", fixedClock("2026-11-30T05:00:00Z")())
	if err != nil || moved == nil || filepath.Base(moved.Files[len(moved.Files)-1].To) != "_catalog.db.corrupt-20261130T050000Z" {
		t.Fatalf("MoveAsideFiles = %+v, %v", moved, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("catalog still at its name")
	}
}

// A zero-byte file with no sidecar holds nothing: it is used in place.
func TestZeroByteFileWithoutSidecarsIsUsedInPlace(t *testing.T) {
	path := catalogPath(t)
	writeFile(t, path, nil)
	c := openRW(t, path)
	if c.MovedAside() != nil || !c.Created() {
		t.Fatalf("MovedAside=%+v Created=%v", c.MovedAside(), c.Created())
	}
	if names := sortedKeys(dirListing(t, filepath.Dir(path))); strings.Contains(strings.Join(names, " "), "corrupt") {
		t.Fatalf("moved aside: %v", names)
	}
}

// Crash at every cut point of "open a new catalog, write one version": the
// next Open always succeeds without moving anything aside, and the row is
// there exactly when its commit's failpoint was passed.
func TestCrashAtEveryCutOfOpenAndWrite(t *testing.T) {
	for k := 0; ; k++ {
		path := catalogPath(t)
		fault := fsx.NewFault(fsx.Real()).CrashAfter(k)
		err := func() error {
			c, err := catalog.Open(ctx, fault, path, catalog.Options{})
			if err != nil {
				return err
			}
			defer c.Close()
			return c.UpsertNewVersion(ctx, row("", "t", "m", "a", 1))
		}()
		if err != nil && !fsx.IsCrash(err) {
			t.Fatalf("cut %d: unexpected error %v", k, err)
		}
		upsertCommitted := false
		for _, op := range fault.Trace() {
			if op.Kind == "failpoint:"+catalog.FailpointUpsert && op.N <= k {
				upsertCommitted = true
			}
		}

		c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
		if err != nil {
			t.Fatalf("cut %d: reopen: %v (trace %v)", k, err, fault.Trace())
		}
		if c.MovedAside() != nil {
			t.Fatalf("cut %d: reopen moved files aside: %+v", k, c.MovedAside())
		}
		got := rows(t, c, "")
		c.Close()
		if upsertCommitted != (len(got) == 1) {
			t.Fatalf("cut %d: upsert committed=%v, rows=%v", k, upsertCommitted, flags(got))
		}
		if !fault.Crashed() {
			t.Logf("%d cut points: %v", k, fault.Trace())
			if k < 3 {
				t.Fatalf("only %d cut points", k)
			}
			return
		}
	}
}

// Crash at every cut point of moving a damaged catalog aside: the next Open
// finishes the move under the first stamp, and every original byte is kept.
func TestCrashAtEveryCutOfMoveAside(t *testing.T) {
	t.Run("random bytes", func(t *testing.T) { crashDuringMoveAside(t, randomBytes(4096)) })
	t.Run("zero bytes", func(t *testing.T) { crashDuringMoveAside(t, nil) })
}

func crashDuringMoveAside(t *testing.T, db []byte) {
	for k := 0; ; k++ {
		path := catalogPath(t)
		originals := map[string]string{"": string(db)}
		writeFile(t, path, []byte(originals[""]))
		for _, suf := range []string{"-wal", "-shm", "-journal"} {
			originals[suf] = "sidecar" + suf
			writeFile(t, path+suf, []byte(originals[suf]))
		}
		fault := fsx.NewFault(fsx.Real()).CrashAfter(k)
		c, err := catalog.Open(ctx, fault, path, catalog.Options{Now: fixedClock("2026-11-30T06:00:00Z")})
		if err == nil {
			c.Close()
		} else if !fsx.IsCrash(err) {
			t.Fatalf("cut %d: %v", k, err)
		}
		c, err = catalog.Open(ctx, fsx.Real(), path, catalog.Options{Now: fixedClock("2026-11-30T07:00:00Z")})
		if err != nil {
			t.Fatalf("cut %d: reopen: %v", k, err)
		}
		c.Close()
		// The stamp is the first Open's once it renamed anything.
		stamp, other := "20261130T060000Z", "20261130T070000Z"
		if !renamedBefore(fault, k) {
			stamp, other = other, stamp
		}
		after := dirListing(t, filepath.Dir(path))
		for suf, content := range originals {
			if after["_catalog.db.corrupt-"+stamp+suf] != content {
				t.Fatalf("cut %d: %q not kept under stamp %s; dir: %v", k, suf, stamp, sortedKeys(after))
			}
		}
		for name := range after {
			if strings.Contains(name, other) {
				t.Fatalf("cut %d: the set is split across two stamps: %v", k, sortedKeys(after))
			}
		}
		if !fault.Crashed() {
			return
		}
	}
}

func renamedBefore(f *fsx.Fault, k int) bool {
	for _, op := range f.Trace() {
		if strings.HasPrefix(op.Kind, "rename") && op.N <= k {
			return true
		}
	}
	return false
}
