package store_test

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

// itemWithVersions makes an item directory holding complete versions vs.
func itemWithVersions(t *testing.T, vs ...int64) string {
	t.Helper()
	item := filepath.Join(t.TempDir(), "result")
	mkdir(t, item)
	for _, v := range vs {
		writeVersion(t, item, v, content(v))
	}
	return item
}

// TestReadLatestFileIsLenient pins swamp-format §2.5's trim + parseInt reading.
func TestReadLatestFileIsLenient(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int64
	}{
		{"12", 12},
		{"12\n", 12},
		{" 12", 12},
		{"\t12 \r\n", 12},
		{"12abc", 12},
		{"3", 3},
		{"0", 0},   // used as is: designates nothing
		{"-3", -3}, // likewise
	} {
		item := itemWithVersions(t, 1, 2)
		writeFile(t, filepath.Join(item, "latest"), []byte(tc.text))
		p, err := store.ReadLatest(fsx.Real(), item)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rule != store.PointerFile || p.Version != tc.want || string(p.Raw) != tc.text || !p.Present {
			t.Errorf("latest %q: got %+v, want file rule, version %d", tc.text, p, tc.want)
		}
	}
}

func TestReadLatestFallsBackToHighestVersion(t *testing.T) {
	for name, text := range map[string][]byte{
		"missing":    nil,
		"zero-byte":  {},
		"whitespace": []byte(" \n"),
		"garbage":    []byte("abc12"),
	} {
		t.Run(name, func(t *testing.T) {
			item := itemWithVersions(t, 1, 3)
			mkdir(t, filepath.Join(item, "2-old")) // lenient: counts as 2, below 3
			if text != nil {
				writeFile(t, filepath.Join(item, "latest"), text)
			}
			p, err := store.ReadLatest(fsx.Real(), item)
			if err != nil {
				t.Fatal(err)
			}
			if p.Rule != store.PointerFallback || p.Version != 3 || p.Present != (text != nil) {
				t.Errorf("got %+v, want fallback to 3", p)
			}
			if text != nil && string(p.Raw) != string(text) {
				t.Errorf("Raw = %q, want %q", p.Raw, text)
			}
		})
	}
}

func TestReadLatestFallbackCountsNonCanonicalDirs(t *testing.T) {
	// swamp's max comes from listVersions, so "5-old" makes the fallback 5
	// even though no directory "5" exists (swamp-format §9.7).
	item := itemWithVersions(t, 1)
	mkdir(t, filepath.Join(item, "5-old"))
	p, err := store.ReadLatest(fsx.Real(), item)
	if err != nil || p.Rule != store.PointerFallback || p.Version != 5 {
		t.Fatalf("got %+v, %v; want fallback to 5", p, err)
	}
}

func TestReadLatestLegacySymlink(t *testing.T) {
	for _, target := range []string{"3", "3/"} {
		item := itemWithVersions(t, 1, 2, 3, 4)
		symlink(t, target, filepath.Join(item, "latest"))
		p, err := store.ReadLatest(fsx.Real(), item)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rule != store.PointerSymlink || p.Version != 3 || p.LinkTarget != target || !p.Present {
			t.Errorf("symlink %q: got %+v, want symlink rule, version 3", target, p)
		}
	}
	// A dangling legacy symlink still designates its number, as in swamp.
	item := itemWithVersions(t, 1)
	symlink(t, "9", filepath.Join(item, "latest"))
	if p, _ := store.ReadLatest(fsx.Real(), item); p.Rule != store.PointerSymlink || p.Version != 9 {
		t.Errorf("dangling symlink: got %+v", p)
	}
	// A symlink to a file holding a number is read as the file (step 1).
	item = itemWithVersions(t, 1, 2)
	writeFile(t, filepath.Join(item, "pointer.txt"), []byte("2"))
	symlink(t, "pointer.txt", filepath.Join(item, "latest"))
	if p, _ := store.ReadLatest(fsx.Real(), item); p.Rule != store.PointerFile || p.Version != 2 {
		t.Errorf("symlink to file: got %+v", p)
	}
}

func TestReadLatestNone(t *testing.T) {
	item := itemWithVersions(t)
	p, err := store.ReadLatest(fsx.Real(), item)
	if err != nil || p.Rule != store.PointerNone || p.Version != 0 || p.Present {
		t.Fatalf("empty item: got %+v, %v", p, err)
	}
	_, err = store.ReadLatest(fsx.Real(), filepath.Join(item, "nope"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing item: err = %v, want ErrNotExist", err)
	}
}

func TestVersionDirsAndListVersions(t *testing.T) {
	item := itemWithVersions(t, 1, 2, 10)
	for _, d := range []string{"2-old", "007", "0", ".1", "latest", ".swampj-stage-1", "abc", "+4"} {
		mkdir(t, filepath.Join(item, d))
	}
	writeFile(t, filepath.Join(item, "8"), nil)                     // a file is never a version
	writeFile(t, filepath.Join(item, ".0a1b.tmp"), []byte("x"))     // swamp's temp file (swamp-format §9.3)
	symlink(t, filepath.Join(item, "10"), filepath.Join(item, "9")) // nor is a symlink

	dirs, err := store.VersionDirs(fsx.Real(), item)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.VersionDir{
		{Name: "1", Number: 1, Canonical: true},
		{Name: "2", Number: 2, Canonical: true},
		{Name: "2-old", Number: 2},
		{Name: "+4", Number: 4},
		{Name: "007", Number: 7},
		{Name: "10", Number: 10, Canonical: true},
	}
	if !reflect.DeepEqual(dirs, want) {
		t.Errorf("VersionDirs =\n %+v\nwant\n %+v", dirs, want)
	}
	vs, err := store.ListVersions(fsx.Real(), item)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(vs, []int64{1, 2, 2, 4, 7, 10}) {
		t.Errorf("ListVersions = %v", vs)
	}
}
