package remote_test

import (
	"os"
	"testing"

	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/remote/buckettest"
)

// The bucket is reached through swampj-bucket, built once here.
func TestMain(m *testing.M) {
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
