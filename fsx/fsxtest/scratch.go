package fsxtest

import (
	"os"
	"testing"
)

// ScratchDir is a fresh directory for one test repo, in memory (/dev/shm)
// when there is one, removed when the test ends. It is for tests that
// model process crashes and injected errors (fsx.Fault): what reached the
// kernel survives them, so an fsync's cost would only slow the tests down
// without changing an outcome. Tests whose outcome depends on the disk
// (power cuts on real images, benchmarks, the CLI's) use t.TempDir.
func ScratchDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "swampj-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
