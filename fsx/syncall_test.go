package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// failingFile is a File whose Sync fails (what EIO on fsync looks like).
type failingFile struct {
	File
	closed *bool
}

func (f failingFile) Sync() error  { return &fs.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO} }
func (f failingFile) Close() error { *f.closed = true; return f.File.Close() }

// TestSyncAll: on the real file system (concurrent) and under Fault (in
// order) every file is fsynced and closed, every directory fsynced, and one
// failing fsync is reported while the others still complete and close.
func TestSyncAll(t *testing.T) {
	for _, mode := range []string{"real", "fault"} {
		t.Run(mode, func(t *testing.T) {
			var fsys FS = Real()
			var fault *Fault
			if mode == "fault" {
				fault = NewFault(Real())
				fsys = fault
			}
			if Concurrent(fsys) != (mode == "real") {
				t.Fatalf("Concurrent(%s) = %v", mode, Concurrent(fsys))
			}
			dir := t.TempDir()
			var files []File
			for _, name := range []string{"a", "b", "c"} {
				f, _, err := WriteNewUnsynced(fsys, filepath.Join(dir, name), strings.NewReader(name), 0o644, nil)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			if err := SyncAll(fsys, files, []string{dir}); err != nil {
				t.Fatal(err)
			}
			if fault != nil && (fault.Count("sync") != 3 || fault.Count("syncdir") != 1) {
				t.Fatalf("fault saw %d file and %d directory fsyncs", fault.Count("sync"), fault.Count("syncdir"))
			}
			for _, f := range files {
				if err := f.Sync(); err == nil {
					t.Fatalf("%s still open after SyncAll", f.Name())
				}
			}

			closed := false
			ok, _, err := WriteNewUnsynced(fsys, filepath.Join(dir, "ok"), strings.NewReader("x"), 0o644, nil)
			if err != nil {
				t.Fatal(err)
			}
			bad, err := os.Create(filepath.Join(dir, "bad"))
			if err != nil {
				t.Fatal(err)
			}
			err = SyncAll(fsys, []File{failingFile{bad, &closed}, ok}, []string{dir})
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("want EIO, got %v", err)
			}
			if !closed || ok.Sync() == nil {
				t.Fatalf("files left open after a failed SyncAll (bad closed: %v)", closed)
			}
		})
	}
}
