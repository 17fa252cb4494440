package write

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"

	_ "modernc.org/sqlite"
)

// damageCatalogIndex overwrites the root page of the catalog's primary-key
// index with garbage: opening the file (header, journal mode, schema, the
// catalog_meta keys) still works, the first lookup of a row by key meets
// SQLITE_CORRUPT, and quick_check finds it.
func damageCatalogIndex(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var root, pageSize int64
	if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_catalog_1'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(strings.Repeat("\xa5", int(pageSize))), (root-1)*pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestWriteOnDamagedCatalogFinishesDataAndRebuildMovesItAside: a write
// opens the catalog without a whole-file check (its cost would grow with
// the catalog); damage it then meets in its own statements (SQLITE_CORRUPT)
// does not stop the version: it is published, `latest` names it, the
// catalog is marked stale and left where it is. The next rebuild, which
// checks the whole file, moves the damaged catalog aside and builds a new
// one that agrees with the disk.
func TestWriteOnDamagedCatalogFinishesDataAndRebuildMovesItAside(t *testing.T) {
	ctx := context.Background()
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	for _, s := range []string{"v1", "v2"} {
		write1(t, r, VersionWrite{Address: a, Content: strings.NewReader(s)}, WriteOptions{})
	}
	damageCatalogIndex(t, r.CatalogPath)

	w := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v3")}, WriteOptions{})
	if w.Version != 3 || !strings.Contains(w.CatalogStale, "malformed") {
		t.Fatalf("version %d, catalogStale %q; want version 3 and a stale catalog naming the damage", w.Version, w.CatalogStale)
	}
	if got := latestFile(t, r, a); got != "3" {
		t.Fatalf("latest = %q, want 3", got)
	}
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Fatalf("intent left open: %s", open[0].LastError)
	}
	if cs := catalogStaleMark(t, r); cs == nil {
		t.Fatal("no stale mark")
	}
	if aside, _ := filepath.Glob(r.CatalogPath + ".corrupt-*"); len(aside) != 0 {
		t.Fatalf("the write moved the catalog aside (%v): that is the rebuild's job", aside)
	}

	rep, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.MovedAside == nil {
		t.Fatalf("the rebuild did not move the damaged catalog aside: %+v", rep)
	}
	if cs := catalogStaleMark(t, r); cs != nil {
		t.Fatalf("rebuild left the stale mark: %+v", cs)
	}
	vr, err := catalogsync.Verify(ctx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil || !vr.InSync {
		t.Fatalf("verify after the rebuild: %v %+v", err, vr)
	}
	if v := viewItem(t, r, a); v.CatalogLatest != 3 {
		t.Fatalf("catalog latest after rebuild = %d, want 3", v.CatalogLatest)
	}
}
