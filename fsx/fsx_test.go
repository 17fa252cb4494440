package fsx_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// At every cut point of a durable atomic replace, and after a power cut
// there, the file holds the old content or the new — never a mix, never
// empty, never missing — and once the call returned, always the new.
func TestWriteFileAtomicUnderPowerCutAtEveryPoint(t *testing.T) {
	probe := fsx.NewFault(fsx.Real())
	dir := t.TempDir()
	if err := fsx.WriteFileAtomic(probe, filepath.Join(dir, "f"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := probe.Ops()
	if n != 6 { // create, write, sync, close, rename, syncdir
		t.Fatalf("the recipe is 6 operations, got %d: %v", n, probe.Trace())
	}
	for k := 0; k <= n; k++ {
		dir := t.TempDir()
		p := filepath.Join(dir, "f")
		os.WriteFile(p, []byte("old"), 0o644)
		f := fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
		err := fsx.WriteFileAtomic(f, p, []byte("new"), 0o644)
		if _, perr := f.PowerCut(); perr != nil {
			t.Fatal(perr)
		}
		got := read(t, p)
		if err == nil && got != "new" {
			t.Fatalf("cut %d: call succeeded but a power cut left %q", k, got)
		}
		if got != "old" && got != "new" {
			t.Fatalf("cut %d: %q", k, got)
		}
	}
}

func TestPowerCutLosesWhatWasNotFsynced(t *testing.T) {
	dir := t.TempDir()
	f := fsx.NewFault(fsx.Real()).TrackDurability()
	// Written and renamed, never fsynced: lost entirely.
	w, _ := f.Create(filepath.Join(dir, "a.tmp"), 0o644)
	w.Write([]byte("lost"))
	w.Close()
	f.Rename(filepath.Join(dir, "a.tmp"), filepath.Join(dir, "a"))
	// A directory whose parent is not fsynced takes its fsynced content with it.
	f.Mkdir(filepath.Join(dir, "d"), 0o755)
	fsx.WriteFileAtomic(f, filepath.Join(dir, "d", "x"), []byte("x"), 0o644)
	// The full recipe survives.
	if err := fsx.WriteFileAtomic(f, filepath.Join(dir, "kept"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	lost, err := f.PowerCut()
	if err != nil {
		t.Fatal(err)
	}
	if len(lost) == 0 {
		t.Fatal("nothing reported lost")
	}
	// kept's SyncDir of dir also made a, d durable as entries — POSIX says
	// the directory fsync covers every entry in it, whoever made it.
	if got := read(t, filepath.Join(dir, "kept")); got != "kept" {
		t.Fatalf("kept: %q", got)
	}
	if got := read(t, filepath.Join(dir, "a")); got != "" {
		t.Fatalf("a's data was never fsynced, want it empty, got %q", got)
	}
}

func TestPowerCutUndoesUnsyncedRenameOfDirectory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "old", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "old", "sub", "f"), []byte("f"), 0o644)
	f := fsx.NewFault(fsx.Real()).TrackDurability()
	if err := f.RenameNoReplace(filepath.Join(dir, "old"), filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "old", "sub", "f")) != "f" {
		t.Fatal("an un-fsynced directory rename must be lost (measured on ext4; docs/design.md §2)")
	}
	// With the parent fsynced, it stays.
	f = fsx.NewFault(fsx.Real()).TrackDurability()
	if err := fsx.RenameDurable(f, filepath.Join(dir, "old"), filepath.Join(dir, "new")); err != nil {
		t.Fatal(err)
	}
	f.PowerCut()
	if read(t, filepath.Join(dir, "new", "sub", "f")) != "f" {
		t.Fatal("a durable rename was undone")
	}
}

func TestFaultCrashAndInjectedErrors(t *testing.T) {
	dir := t.TempDir()
	f := fsx.NewFault(fsx.Real()).CrashAfter(1)
	if err := f.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Mkdir(filepath.Join(dir, "b"), 0o755); !fsx.IsCrash(err) {
		t.Fatalf("op 2 must crash, got %v", err)
	}
	if _, err := f.Stat(dir); !fsx.IsCrash(err) {
		t.Fatal("after a crash even reads fail")
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the crashed op must not run")
	}

	f = fsx.NewFault(fsx.Real()).FailKind("sync", syscall.EIO)
	err := fsx.WriteFileAtomic(f, filepath.Join(dir, "x"), []byte("x"), 0o644)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("want EIO, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a failed fsync must not publish the file")
	}
	// The temp file is cleaned up, and fsync was not retried (fsyncgate).
	if n := f.Count("sync"); n != 1 {
		t.Fatalf("fsync attempted %d times", n)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}

	f = fsx.NewFault(fsx.Real()).FailAt(2, syscall.ENOSPC)
	if err := fsx.WriteFileAtomic(f, filepath.Join(dir, "y"), []byte("y"), 0o644); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("want ENOSPC on the write, got %v", err)
	}
}

func TestRenameNoReplaceRefusesExisting(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(a, []byte("a"), 0o644)
	os.WriteFile(b, []byte("b"), 0o644)
	if err := fsx.Real().RenameNoReplace(a, b); !errors.Is(err, os.ErrExist) {
		t.Fatalf("want ErrExist, got %v", err)
	}
	if read(t, b) != "b" || read(t, a) != "a" {
		t.Fatal("nothing may change")
	}
	os.MkdirAll(filepath.Join(dir, "d1"), 0o755)
	os.MkdirAll(filepath.Join(dir, "d2"), 0o755)
	if err := fsx.Real().RenameNoReplace(filepath.Join(dir, "d1"), filepath.Join(dir, "d2")); !errors.Is(err, os.ErrExist) {
		t.Fatalf("an empty directory must not be replaced either: %v", err)
	}
}
