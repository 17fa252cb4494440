package migrate

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// vanishingFS removes each listed entry named gone right after the
// listing that shows it, as a writer releasing its lock (or removing its
// staging) between a migration's ReadDir and its Lstat does.
type vanishingFS struct {
	fsx.FS
	gone map[string]bool
}

func (v vanishingFS) ReadDir(dir string) ([]fs.DirEntry, error) {
	ents, err := v.FS.ReadDir(dir)
	for _, e := range ents {
		if v.gone[e.Name()] {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return ents, err
}

// A file or directory that goes between the listing and the look at it is
// not counted and is no error: the migration's count runs while writers
// of other models take and release their locks.
func TestCountTreesSkipsWhatWentMeanwhile(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"m1/.lock", "m1/out/1/raw", "m2/out/1/raw", "m2/.swampj-stage-2-x/raw"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fsys := vanishingFS{FS: fsx.Real(), gone: map[string]bool{".lock": true, ".swampj-stage-2-x": true}}
	files, _, locks, err := countTrees(context.Background(), fsys, []string{root}, nil)
	if err != nil {
		t.Fatalf("countTrees with entries going meanwhile: %v", err)
	}
	if files[0] != 2 || len(locks) != 0 {
		t.Errorf("counted %d files and locks %v, want the 2 raws and no lock", files[0], locks)
	}
}
