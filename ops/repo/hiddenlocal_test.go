package repo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// The fixture the real swamp 06b6147 left after its migrate: secrets and a
// bundle inside ns1, nothing at the root.
func TestHiddenLocalDirsSwampFixture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	fsxtest.CopyTree(t, filepath.Join("..", "..", "testdata", "swamp-migrated-local", "repo"), dir)
	r, err := Load(nil, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got, err := HiddenLocalDirs(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Subdir != "secrets" || got[1].Subdir != "bundles" {
		t.Fatalf("found %+v, want secrets and bundles", got)
	}
	s := got[0]
	if s.Namespace != "ns1" || s.Path != filepath.Join(dir, ".swamp", "ns1", "secrets") || s.Home != filepath.Join(dir, ".swamp", "secrets") {
		t.Errorf("secrets: %+v", s)
	}
	if !reflect.DeepEqual(s.Files, []string{"local_encryption/v1/.key", "local_encryption/v1/k1.enc"}) ||
		!reflect.DeepEqual(s.Vaults, []string{"local_encryption/v1"}) || len(s.Same)+len(s.Conflicts) != 0 {
		t.Errorf("secrets: files %v vaults %v same %v conflicts %v", s.Files, s.Vaults, s.Same, s.Conflicts)
	}
	if b := got[1]; !reflect.DeepEqual(b.Files, []string{"e9c5c01e/hello_ext.js"}) || b.Vaults != nil {
		t.Errorf("bundles: %+v", b)
	}
}

// Files already at home: the same bytes are "same" (swamp rebuilt the
// bundle there); different bytes or another kind are conflicts (a vault
// created again at the root after the migrate has a new key).
func TestHiddenLocalDirsComparesWithHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	fsxtest.CopyTree(t, filepath.Join("..", "..", "testdata", "swamp-migrated-local", "repo"), dir)
	home := filepath.Join(dir, ".swamp")
	hidden := filepath.Join(home, "ns1")
	put := func(p string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bundle, _ := os.ReadFile(filepath.Join(hidden, "bundles", "e9c5c01e", "hello_ext.js"))
	put(filepath.Join(home, "bundles", "e9c5c01e", "hello_ext.js"), bundle)
	// The same size, other bytes: a key made again.
	key, _ := os.ReadFile(filepath.Join(hidden, "secrets", "local_encryption", "v1", ".key"))
	key[0] ^= 1
	put(filepath.Join(home, "secrets", "local_encryption", "v1", ".key"), key)
	if err := os.MkdirAll(filepath.Join(home, "secrets", "local_encryption", "v1", "k1.enc"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := Load(nil, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	got, err := HiddenLocalDirs(nil, r)
	if err != nil || len(got) != 2 {
		t.Fatalf("%+v %v", got, err)
	}
	if s := got[0]; !reflect.DeepEqual(s.Conflicts, []string{"local_encryption/v1/.key", "local_encryption/v1/k1.enc"}) || s.Same != nil {
		t.Errorf("secrets: same %v conflicts %v", s.Same, s.Conflicts)
	}
	if b := got[1]; !reflect.DeepEqual(b.Same, []string{"e9c5c01e/hello_ext.js"}) || b.Conflicts != nil {
		t.Errorf("bundles: same %v conflicts %v", b.Same, b.Conflicts)
	}
	// Nothing hidden: nothing found.
	if err := os.RemoveAll(filepath.Join(hidden, "secrets")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(hidden, "bundles")); err != nil {
		t.Fatal(err)
	}
	if got, err := HiddenLocalDirs(nil, r); err != nil || len(got) != 0 {
		t.Errorf("after removal: %+v %v", got, err)
	}
}
