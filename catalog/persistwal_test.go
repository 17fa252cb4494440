package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// inode is the inode number of path (0 when it does not exist).
func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// TestWALIsKeptBetweenProcesses: a catalog closed after a write keeps its
// -wal (truncated to zero bytes) and -shm, the same files serve the next
// open and write, and the close still folded every committed row into the
// database file: a copy of the file alone, without its sidecars, holds
// them all.
func TestWALIsKeptBetweenProcesses(t *testing.T) {
	path := catalogPath(t)
	c, err := catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	wal, shm := inode(t, path+"-wal"), inode(t, path+"-shm")
	if wal == 0 || shm == 0 {
		t.Fatalf("after close: -wal inode %d, -shm inode %d; want both kept", wal, shm)
	}

	c, err = catalog.Open(ctx, fsx.Real(), path, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", 2)); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, path+"-wal"); got != wal {
		t.Fatalf("the second write's -wal is inode %d, the kept one was %d: it was re-created", got, wal)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Truncated at the close: a kept log whose checkpointed frames stayed
	// would be recovered again by the next process and grow by every write.
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("the kept -wal after close: %v, size %d; want zero bytes", err, fi.Size())
	}

	alone := filepath.Join(t.TempDir(), "_catalog.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := rawDB(t, alone).QueryRow(`SELECT count(*) FROM catalog`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("the database file alone holds %d rows (%v), want 2: the close did not checkpoint", n, err)
	}
	// A reader that does not keep the WAL (swamp) sees the rows, and its
	// close leaves the catalog readable by the next writer.
	db := rawDB(t, path)
	if err := db.QueryRow(`SELECT count(*) FROM catalog`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("a plain SQLite reader sees %d rows (%v), want 2", n, err)
	}
	_ = db.Close()
	c = openRW(t, path)
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", 3)); err != nil {
		t.Fatal(err)
	}
}

// TestCloseWALRemovesTheSidecars: CloseWAL leaves the bare database file
// with every row, as a tool handing the file on needs; while another
// Catalog of the process has it open, the sidecars stay.
func TestCloseWALRemovesTheSidecars(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	other := openRW(t, path)
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWAL(); err != nil {
		t.Fatal(err)
	}
	if inode(t, path+"-wal") == 0 {
		t.Fatal("CloseWAL removed the -wal while another Catalog had the file open")
	}
	if err := other.CloseWAL(); err != nil {
		t.Fatal(err)
	}
	for _, suf := range []string{"-wal", "-shm"} {
		if inode(t, path+suf) != 0 {
			t.Fatalf("%s left after CloseWAL", suf)
		}
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM catalog`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("after CloseWAL the file holds %d rows (%v), want 1", n, err)
	}
}

// TestDeletedCatalogBesideKeptSidecars: a catalog deleted by hand leaves
// the kept zero-byte -wal and the -shm; the next Open creates a fresh
// catalog beside them without moving them aside (they hold nothing), and
// it works. A -wal with frames beside no database is still moved aside
// (TestOrphanSidecarsAreMovedAside).
func TestDeletedCatalogBesideKeptSidecars(t *testing.T) {
	path := catalogPath(t)
	c := openRW(t, path)
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", 1)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	c = openRW(t, path)
	if m := c.MovedAside(); m != nil {
		t.Fatalf("moved aside: %+v", m)
	}
	if !c.Created() {
		t.Fatal("want a fresh catalog")
	}
	if err := c.UpsertNewVersion(ctx, row("", "aws/ec2/vpc", "m1", "main", 2)); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := sortedKeys(dirListing(t, filepath.Dir(path)))
	if want := "_catalog.db _catalog.db-shm _catalog.db-wal"; strings.Join(got, " ") != want {
		t.Fatalf("beside the catalog: %v, want %s", got, want)
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM catalog`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the fresh catalog holds %d rows (%v), want 1", n, err)
	}
}
