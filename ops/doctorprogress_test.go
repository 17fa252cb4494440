package ops_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"sync"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/report"
)

// TestDoctorProgressCounts: the scan reports items (done of walked) with
// the versions checked so far, and verifying checksums also the raw bytes
// hashed, from which the renderer shows MB/s. The last event
// of each run has the totals of the report.
func TestDoctorProgressCounts(t *testing.T) {
	ctx := context.Background()
	var items []drItem
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		items = append(items, drItem{name: name, latest: "3", versions: []drVer{{n: 1}, {n: 2}, {n: 3}}})
	}
	r := drBuild(t, t.TempDir(), drSpec{items: items})
	var rawBytes int64
	if err := filepath.WalkDir(r.DataRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "raw" {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			rawBytes += fi.Size()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if rawBytes == 0 {
		t.Fatal("the fixture has no raw bytes")
	}

	for _, verify := range []bool{false, true} {
		var mu sync.Mutex
		var events []report.ProgressEvent
		rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, VerifyChecksum: verify, Progress: func(ev report.ProgressEvent) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		}})
		if err != nil || !rep.Clean() {
			t.Fatalf("verify=%v: %v %+v", verify, err, rep)
		}
		phase, wantBytes := "scanning", int64(0)
		if verify {
			phase, wantBytes = "verifying checksums", rawBytes
		}
		if len(events) < 2 {
			t.Fatalf("verify=%v: %d events", verify, len(events))
		}
		// The last event of the scan phase (later phases carry no counts).
		var last report.ProgressEvent
		for _, ev := range events {
			if ev.Phase == phase {
				last = ev
			}
		}
		want := report.ProgressEvent{Phase: phase, Done: int64(rep.Items), Total: int64(rep.Items), Unit: "items",
			Versions: int64(rep.Versions), Bytes: wantBytes}
		if last != want || rep.Items != 10 || rep.Versions != 30 {
			t.Errorf("verify=%v: last %q event %+v, want %+v", verify, phase, last, want)
		}
	}
}
