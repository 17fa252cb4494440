package swampj_test

import (
	"os"
	"testing"

	"github.com/swampj/swampj/ops/wrapped"
)

// The wrapped-run entry (nilreal_test.go) starts its command through this
// test binary: the write barrier's trampoline.
func TestMain(m *testing.M) {
	wrapped.MaybeExec()
	os.Exit(m.Run())
}
