package fsxtest

import (
	"os"
	"testing"
)

// A scratch directory is fresh and empty, and gone once its test ends.
func TestScratchDirIsFreshAndRemoved(t *testing.T) {
	var dir string
	t.Run("user", func(t *testing.T) {
		dir = ScratchDir(t)
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("%s: %v entries, %v", dir, ents, err)
		}
		if other := ScratchDir(t); other == dir {
			t.Fatalf("two scratch directories are both %s", dir)
		}
		if err := os.WriteFile(dir+"/f", []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s after its test ended: %v", dir, err)
	}
}
