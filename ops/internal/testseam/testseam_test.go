package testseam_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/internal/testseam"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// Linking package write fills the hook in, and a write through the options
// it returns carries the fixed id and createdAt into the version's
// metadata: what the cross-protocol crash suites rely on for identical
// trees.
func TestFixWriteIdentityReachesTheMetadata(t *testing.T) {
	if testseam.FixWriteIdentity == nil {
		t.Fatal("package write is linked but did not fill FixWriteIdentity in")
	}
	dir := t.TempDir()
	if _, err := example.Write(nil, dir); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(nil, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	o := testseam.FixWriteIdentity(write.WriteOptions{}, "00000000-0000-4000-8000-000000000042", at).(write.WriteOptions)
	addr, err := repo.ParseAddress("command/shell/" + example.HelloShell + "/seam")
	if err != nil {
		t.Fatal(err)
	}
	got, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: addr, Content: strings.NewReader("x")}}, o)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := os.ReadFile(filepath.Join(got[0].Dir, "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"00000000-0000-4000-8000-000000000042", "2026-08-01T12:00:00.000Z"} {
		if !strings.Contains(string(meta), want) {
			t.Errorf("metadata.yaml lacks %s:\n%s", want, meta)
		}
	}
}
