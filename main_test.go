package swampj_test

import (
	"os"
	"testing"

	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/remote/buckettest"
	"github.com/swampj/swampj/ops/wrapped"
)

// The wrapped-run entry (nilreal_test.go) starts its command through this
// test binary: the write barrier's trampoline.
func TestMain(m *testing.M) {
	wrapped.MaybeExec()
	// The bucket is reached through swampj-bucket (nilreal_test.go's run lock).
	dir, err := os.MkdirTemp("", "swampj-bucket-")
	if err != nil {
		panic(err)
	}
	if _, err := buckettest.Install(dir); err != nil {
		panic(err)
	}
	code := m.Run()
	remote.CloseBucketAgents()
	os.RemoveAll(dir)
	os.Exit(code)
}
