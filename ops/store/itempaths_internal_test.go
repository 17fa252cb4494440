package store

import (
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// The precomputed paths are filepath.Join's, byte for byte, for any item
// directory spelling.
func TestItemPathsMatchJoin(t *testing.T) {
	for _, dir := range []string{"", ".", "/", "..", "a", "a/b", "/a/b", "/a/b/", "a//b", "./a", "a/./b", "a/../b", "../a", "/a/b/..", "a/b/."} {
		p := newItemPaths(dir)
		if want := filepath.Base(filepath.Clean(dir)); p.name != want {
			t.Errorf("%q: name %q, want %q", dir, p.name, want)
		}
		for _, v := range []int64{1, 7, 42, 1000000} {
			ver := p.readVersion(fsx.Real(), v, CheckOptions{}) // nothing exists there
			d := filepath.Join(dir, versionName(v))
			if ver.Dir != d || ver.MetadataPath != filepath.Join(d, MetadataFileName) || ver.RawPath != filepath.Join(d, RawFileName) {
				t.Errorf("%q v%d: %q %q %q", dir, v, ver.Dir, ver.MetadataPath, ver.RawPath)
			}
		}
	}
}
