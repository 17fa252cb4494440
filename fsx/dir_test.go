package fsx_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// TestOpenDirIsReadDirAndStat: OpenDir's listing is os.ReadDir's, and
// Dir.Stat of a relative path gives what os.Stat of the joined path gives
// — regular files, directories, symlinks followed (to a file, to a
// directory, dangling), a missing name, a file used as a directory — the
// same FileInfo fields and the same error text, on the real FS and through
// a wrapping FS (which must see a plain Stat); Dir.ReadFile likewise gives
// os.ReadFile's content and errors.
func TestOpenDirIsReadDirAndStat(t *testing.T) {
	dir := t.TempDir()
	write := func(rel string, data string, perm os.FileMode) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), perm); err != nil {
			t.Fatal(err)
		}
	}
	write("3/raw", "fifty-nine bytes of content", 0o640)
	write("3/metadata.yaml", strings.Repeat("metadata ", 700), 0o644)
	write("10/raw", "", 0o600)
	if err := os.Mkdir(filepath.Join(dir, "4"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "4", "raw"), 0o700); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"5": "3", "latest": "3/raw", "dangling": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	rels := []string{"3/raw", "3/metadata.yaml", "10/raw", "4/raw", "5/raw", "latest", "dangling", "6/raw", "3/raw/x", "3", ".", "", "5/..", "3/../3/raw", "3/raw/"}

	for _, c := range []struct {
		name string
		fsys fsx.FS
	}{{"real", fsx.Real()}, {"wrapped", fsx.NewFault(fsx.Real())}} {
		d, err := fsx.OpenDir(c.fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		names := func(es []fs.DirEntry) (out []string) {
			for _, e := range es {
				out = append(out, e.Name()+":"+e.Type().String())
			}
			return out
		}
		if got := names(d.Entries()); !slices.Equal(got, names(want)) {
			t.Errorf("%s: entries %q, want %q", c.name, got, names(want))
		}
		for _, rel := range rels {
			got, gerr := d.Stat(rel)
			exp, eerr := os.Stat(filepath.Join(dir, rel))
			switch {
			case (gerr == nil) != (eerr == nil):
				t.Errorf("%s: Stat(%q) error %v, os.Stat %v", c.name, rel, gerr, eerr)
			case gerr != nil:
				if gerr.Error() != eerr.Error() || errors.Is(gerr, fs.ErrNotExist) != errors.Is(eerr, fs.ErrNotExist) {
					t.Errorf("%s: Stat(%q) error %q, os.Stat %q", c.name, rel, gerr, eerr)
				}
			case got.Name() != exp.Name() || got.Size() != exp.Size() || got.Mode() != exp.Mode() ||
				!got.ModTime().Equal(exp.ModTime()) || got.IsDir() != exp.IsDir():
				t.Errorf("%s: Stat(%q) = %s %d %v %v, os.Stat %s %d %v %v", c.name, rel,
					got.Name(), got.Size(), got.Mode(), got.ModTime(), exp.Name(), exp.Size(), exp.Mode(), exp.ModTime())
			}
		}
		for _, rel := range rels {
			got, gerr := d.ReadFile(rel)
			exp, eerr := os.ReadFile(filepath.Join(dir, rel))
			switch {
			case (gerr == nil) != (eerr == nil) || gerr != nil && gerr.Error() != eerr.Error():
				t.Errorf("%s: ReadFile(%q) error %v, os.ReadFile %v", c.name, rel, gerr, eerr)
			case gerr == nil && (string(got) != string(exp) || got == nil):
				t.Errorf("%s: ReadFile(%q) = %q, os.ReadFile %q", c.name, rel, got, exp)
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := fsx.OpenDir(fsx.Real(), filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenDir of a missing directory: %v", err)
	}
	_, want := os.ReadDir(filepath.Join(dir, "3", "raw"))
	if _, err := fsx.OpenDir(fsx.Real(), filepath.Join(dir, "3", "raw")); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("OpenDir of a file: %v, os.ReadDir: %v", err, want)
	}
}
