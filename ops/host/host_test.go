package host_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
)

// The zero Common is the real disk; a Common with an FS goes through it.
func TestDiskIsTheRealDiskUnlessAnFSIsGiven(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (host.Common{}).Disk().Lstat(p); err != nil {
		t.Fatalf("the zero Common's disk cannot see a real file: %v", err)
	}
	trace := fsx.NewFault(fsx.Real())
	if _, err := (host.Common{FS: trace}).Disk().Lstat(p); err != nil {
		t.Fatal(err)
	}
	if err := (host.Common{FS: trace}).Disk().Remove(p); err != nil {
		t.Fatal(err)
	}
	if trace.Ops() == 0 {
		t.Fatal("a Common with an FS did not go through it")
	}
}
