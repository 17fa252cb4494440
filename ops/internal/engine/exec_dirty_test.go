package engine

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// TestDirtySyncErrorSticks: when a flush of deferred content fails (here
// the one DeferFile starts at maxUnsynced files), every later SyncContent
// reports it, so nothing after it can publish content that is not durable
// — even though the failed files have left the pending list.
func TestDirtySyncErrorSticks(t *testing.T) {
	dir := t.TempDir()
	f := fsx.NewFault(fsx.Real()).FailKind("sync", syscall.EIO)
	d := &Dirty{fs: f}
	var err error
	for i := 0; i < maxUnsynced && err == nil; i++ {
		file, _, werr := fsx.WriteNewUnsynced(f, filepath.Join(dir, strconv.Itoa(i)), strings.NewReader("x"), 0o644, nil)
		if werr != nil {
			t.Fatal(werr)
		}
		err = d.DeferFile(file)
	}
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("the flush at %d files: %v", maxUnsynced, err)
	}
	if d.hasUnsynced() {
		t.Fatal("files still pending after the flush")
	}
	if err := d.SyncContent(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("a later SyncContent forgot the failure: %v", err)
	}
}
