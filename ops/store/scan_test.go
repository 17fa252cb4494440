package store_test

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

func scan(t *testing.T, item string, opts store.CheckOptions) *store.ItemState {
	t.Helper()
	st, err := store.ScanItem(fsx.Real(), store.Item{DataName: filepath.Base(item), Dir: item}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func number(v *store.Version) int64 {
	if v == nil {
		return 0
	}
	return v.Number
}

// TestScanIssue3955 is the reported state: latest names a version whose
// files are zero bytes. The scan must say so and point at the last good one.
func TestScanIssue3955(t *testing.T) {
	item := itemWithVersions(t, 1, 2, 3)
	writeFile(t, filepath.Join(item, "3", "metadata.yaml"), nil)
	writeFile(t, filepath.Join(item, "3", "raw"), nil)
	writeLatest(t, item, 3)

	st := scan(t, item, store.CheckOptions{})
	if st.Pointer.Rule != store.PointerFile || number(st.Latest) != 3 || st.LatestReadable != nil {
		t.Fatalf("pointer %+v latest %v readable %v", st.Pointer, number(st.Latest), st.LatestReadable)
	}
	if number(st.LastGood) != 2 || number(st.HighestReadable) != 2 {
		t.Errorf("LastGood %d HighestReadable %d, want 2, 2", number(st.LastGood), number(st.HighestReadable))
	}
	want := []store.Code{store.CodeLatestUnreadable, store.CodeMetadataEmpty, store.CodeRawEmpty}
	if !reflect.DeepEqual(codes(st.Problems), want) {
		t.Errorf("problems %v, want %v", st.Problems, want)
	}
	if msg := st.Problems[0].Message; !strings.Contains(msg, "version 3") || !strings.Contains(msg, "metadata_empty") {
		t.Errorf("message %q", msg)
	}
}

// TestScanDeferredVersionAboveLatest: a complete version above `latest` may
// be an uncommitted deferred write (swamp-format §9.8). It is listed, but latest wins.
func TestScanDeferredVersionAboveLatest(t *testing.T) {
	item := itemWithVersions(t, 1, 2, 3)
	writeLatest(t, item, 2)
	st := scan(t, item, store.CheckOptions{})
	if len(st.Versions) != 3 || number(st.LatestReadable) != 2 || number(st.LastGood) != 2 || number(st.HighestReadable) != 3 {
		t.Errorf("versions %d latest %d lastGood %d highest %d", len(st.Versions), number(st.LatestReadable), number(st.LastGood), number(st.HighestReadable))
	}
	if len(st.Problems) != 0 {
		t.Errorf("problems %v", st.Problems)
	}
}

func TestScanStreamingVersionAboveLatest(t *testing.T) {
	item := itemWithVersions(t, 1)
	writeLatest(t, item, 1)
	writeFile(t, filepath.Join(item, "2", "raw"), []byte("partial"))
	st := scan(t, item, store.CheckOptions{})
	if number(st.LatestReadable) != 1 || !st.Versions[1].Streaming() {
		t.Fatalf("%+v", st)
	}
	if !reflect.DeepEqual(codes(st.Problems), []store.Code{store.CodeMetadataMissing}) {
		t.Errorf("problems %v", st.Problems)
	}
}

func TestScanPointerProblems(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, item string)
		rule     store.PointerRule
		latest   int64
		lastGood int64
		codes    []store.Code
	}{
		{"missing latest falls back to max", func(t *testing.T, item string) {},
			store.PointerFallback, 2, 2, []store.Code{store.CodeLatestMissing}},
		{"empty latest falls back to max", func(t *testing.T, item string) {
			writeFile(t, filepath.Join(item, "latest"), nil)
		}, store.PointerFallback, 2, 2, []store.Code{store.CodeLatestEmpty}},
		{"garbage latest", func(t *testing.T, item string) {
			writeFile(t, filepath.Join(item, "latest"), []byte("none"))
		}, store.PointerFallback, 2, 2, []store.Code{store.CodeLatestUnparsable}},
		{"latest 0", func(t *testing.T, item string) {
			writeFile(t, filepath.Join(item, "latest"), []byte("0"))
		}, store.PointerFile, 0, 0, []store.Code{store.CodeLatestInvalid}},
		{"latest names a vanished version", func(t *testing.T, item string) {
			writeLatest(t, item, 5)
		}, store.PointerFile, 5, 2, []store.Code{store.CodeLatestNotFound}},
		{"fallback max from a non-canonical dir", func(t *testing.T, item string) {
			mkdir(t, filepath.Join(item, "3-old"))
		}, store.PointerFallback, 3, 2, []store.Code{store.CodeLatestMissing, store.CodeNonCanonicalVersionDir, store.CodeLatestNotFound}},
		{"latest names a symlinked version directory", func(t *testing.T, item string) {
			// Not a version (walk.go): swamp's walk, listVersions and
			// catalog backfill skip it, and so does every swampj reader.
			other := filepath.Join(t.TempDir(), "result")
			writeVersion(t, other, 3, content(3))
			symlink(t, filepath.Join(other, "3"), filepath.Join(item, "3"))
			writeLatest(t, item, 3)
		}, store.PointerFile, 3, 2, []store.Code{store.CodeLatestUnreadable}},
		{"legacy symlink is fine", func(t *testing.T, item string) {
			symlink(t, "1/", filepath.Join(item, "latest"))
		}, store.PointerSymlink, 1, 1, nil},
		{"fallback onto an unreadable max", func(t *testing.T, item string) {
			mkdir(t, filepath.Join(item, "3"))
		}, store.PointerFallback, 3, 2, []store.Code{store.CodeLatestMissing, store.CodeLatestUnreadable, store.CodeMetadataMissing, store.CodeRawMissing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := itemWithVersions(t, 1, 2)
			tc.setup(t, item)
			st := scan(t, item, store.CheckOptions{})
			if st.Pointer.Rule != tc.rule || st.Pointer.Version != tc.latest || number(st.LastGood) != tc.lastGood {
				t.Errorf("pointer %v %d, lastGood %d; want %v %d, %d", st.Pointer.Rule, st.Pointer.Version, number(st.LastGood), tc.rule, tc.latest, tc.lastGood)
			}
			if !reflect.DeepEqual(codes(st.Problems), tc.codes) {
				t.Errorf("problems %v, want %v", st.Problems, tc.codes)
			}
		})
	}
}

func TestScanEmptyItem(t *testing.T) {
	st := scan(t, itemWithVersions(t), store.CheckOptions{})
	if st.Pointer.Rule != store.PointerNone || st.Latest != nil || !reflect.DeepEqual(codes(st.Problems), []store.Code{store.CodeNoVersions}) {
		t.Errorf("%+v", st)
	}
}

func TestScanChecksumOnlyWithVerify(t *testing.T) {
	item := itemWithVersions(t, 1, 2)
	writeLatest(t, item, 2)
	writeFile(t, filepath.Join(item, "2", "raw"), []byte(`{"n":0}`)) // same size
	if st := scan(t, item, store.CheckOptions{}); len(st.Problems) != 0 || number(st.LatestReadable) != 2 {
		t.Errorf("without hashing: %v", st.Problems)
	}
	st := scan(t, item, store.CheckOptions{VerifyChecksum: true})
	if !reflect.DeepEqual(codes(st.Problems), []store.Code{store.CodeLatestUnreadable, store.CodeChecksumMismatch}) || number(st.LastGood) != 1 {
		t.Errorf("with hashing: %v, lastGood %d", st.Problems, number(st.LastGood))
	}
}

// TestScanBadLatestDoesNotHideSiblings is swamp-format §9.2 end to end: swamp drops every
// item of a model whose one latest metadata is bad; Walk + ScanItem report
// every item, the bad one with its problem.
func TestScanBadLatestDoesNotHideSiblings(t *testing.T) {
	root, _ := walkTree(t)
	prefix := "command/shell/" + modelID + "/"
	readable := map[string]bool{}
	err := store.Walk(context.Background(), fsx.Real(), root, func(it store.Item) error {
		if !strings.HasPrefix(it.Key(), prefix) {
			return nil
		}
		st, err := store.ScanItem(fsx.Real(), it, store.CheckOptions{})
		if err != nil {
			return err
		}
		readable[it.DataName] = st.LatestReadable != nil
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"result": true, "207333": true, "broken": false, "execution-log": false}
	if !reflect.DeepEqual(readable, want) {
		t.Errorf("got %v, want %v", readable, want)
	}
}

// countingFS counts read operations, to hold ScanItem to its cost.
type countingFS struct {
	fsx.FS
	readDir, stat, lstat, open, readFile, readlink atomic.Int64
}

func (c *countingFS) ReadDir(n string) ([]fs.DirEntry, error) {
	c.readDir.Add(1)
	return c.FS.ReadDir(n)
}
func (c *countingFS) Stat(n string) (fs.FileInfo, error)  { c.stat.Add(1); return c.FS.Stat(n) }
func (c *countingFS) Lstat(n string) (fs.FileInfo, error) { c.lstat.Add(1); return c.FS.Lstat(n) }
func (c *countingFS) Open(n string) (fsx.File, error)     { c.open.Add(1); return c.FS.Open(n) }
func (c *countingFS) ReadFile(n string) ([]byte, error)   { c.readFile.Add(1); return c.FS.ReadFile(n) }
func (c *countingFS) Readlink(n string) (string, error)   { c.readlink.Add(1); return c.FS.Readlink(n) }

func TestScanCost(t *testing.T) {
	const n = 50
	var vs []int64
	for v := int64(1); v <= n; v++ {
		vs = append(vs, v)
	}
	item := itemWithVersions(t, vs...)
	writeLatest(t, item, n)
	c := &countingFS{FS: fsx.Real()}
	st, err := store.ScanItem(c, store.Item{Dir: item, DataName: "result"}, store.CheckOptions{})
	if err != nil || len(st.Problems) != 0 {
		t.Fatal(err, st.Problems)
	}
	got := [6]int64{c.readDir.Load(), c.readFile.Load(), c.open.Load(), c.stat.Load(), c.lstat.Load(), c.readlink.Load()}
	want := [6]int64{1, 1, n, n, 0, 0} // one listing, latest, then per version one metadata read and one raw stat
	if got != want {
		t.Errorf("readDir, readFile, open, stat, lstat, readlink = %v, want %v", got, want)
	}
}

// failingFS fails ReadDir of one directory.
type failingFS struct {
	fsx.FS
	dir string
}

func (f failingFS) ReadDir(n string) ([]fs.DirEntry, error) {
	if n == f.dir {
		return nil, &fs.PathError{Op: "readdirent", Path: n, Err: syscall.EACCES}
	}
	return f.FS.ReadDir(n)
}

// TestWalkContinuesPastUnlistableDirectory: swamp aborts its whole walk on
// one unreadable type directory (swamp-format §2.7.3); Walk reports the rest and the error.
func TestWalkContinuesPastUnlistableDirectory(t *testing.T) {
	root, all := walkTree(t)
	var got []string
	err := store.Walk(context.Background(), failingFS{fsx.Real(), filepath.Join(root, "aws")}, root, func(it store.Item) error {
		got = append(got, it.Key())
		return nil
	})
	if !errors.Is(err, syscall.EACCES) || !strings.Contains(err.Error(), filepath.Join(root, "aws")) {
		t.Errorf("err = %v", err)
	}
	var want []string
	for _, k := range all {
		if !strings.HasPrefix(k, "aws/") {
			want = append(want, k)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestScanManyVersions takes the concurrent path of ScanItem (run it with
// -race): results keep version order and every damaged version is found.
func TestScanManyVersions(t *testing.T) {
	const n = 300
	var vs []int64
	for v := int64(1); v <= n; v++ {
		vs = append(vs, v)
	}
	item := itemWithVersions(t, vs...)
	writeLatest(t, item, n)
	writeFile(t, filepath.Join(item, "100", "metadata.yaml"), nil)
	writeFile(t, filepath.Join(item, "250", "raw"), nil)
	st := scan(t, item, store.CheckOptions{})
	for i, v := range st.Versions {
		if v.Number != int64(i+1) {
			t.Fatalf("Versions[%d] is version %d", i, v.Number)
		}
	}
	want := []store.Code{store.CodeMetadataEmpty, store.CodeRawEmptyMismatch}
	if len(st.Versions) != n || !reflect.DeepEqual(codes(st.Problems), want) || number(st.LastGood) != n {
		t.Errorf("%d versions, problems %v, lastGood %d", len(st.Versions), st.Problems, number(st.LastGood))
	}
}
