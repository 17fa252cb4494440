package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// TestNextVersionAgreesWithVersionDirs: the unsorted scan a writer uses
// allocates exactly what the sorted listing says, over every kind of entry
// swamp counts or ignores.
func TestNextVersionAgreesWithVersionDirs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"1", "2", "10", "9-old", "007", ".swampj-stage-11-abc", "0", "-3", "x12"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"latest", "40", ".tmp"} { // a file "40" is not a version
		if err := os.WriteFile(filepath.Join(dir, f), []byte("2"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("10", filepath.Join(dir, "50")); err != nil { // nor is a symlink
		t.Fatal(err)
	}
	check := func(want int64) {
		t.Helper()
		got, err := NextVersion(fsx.Real(), dir)
		if err != nil {
			t.Fatal(err)
		}
		dirs, err := VersionDirs(fsx.Real(), dir)
		if err != nil {
			t.Fatal(err)
		}
		sorted := int64(1)
		if len(dirs) > 0 {
			sorted = dirs[len(dirs)-1].Number + 1
		}
		if got != want || sorted != want {
			t.Fatalf("NextVersion %d, VersionDirs says %d, want %d", got, sorted, want)
		}
	}
	check(11)
	// More entries than one ReadDir batch.
	for i := 100; i < 700; i++ {
		if err := os.Mkdir(filepath.Join(dir, filepath.Base(string(rune('a'+i%26)))+itoa(i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "699"), 0o755); err != nil {
		t.Fatal(err)
	}
	check(700)
	empty := t.TempDir()
	if n, err := NextVersion(fsx.Real(), empty); err != nil || n != 1 {
		t.Fatalf("empty item: %d, %v", n, err)
	}
}

func itoa(i int) string {
	return string([]byte{byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}
