package main

import (
	"testing"
	"time"

	"github.com/swampj/swampj/ops/report"
)

// TestProgressLineVersionsAndBytes: the doctor's scan events carry the
// versions checked and the raw bytes hashed; the line shows them after the
// item count, the bytes as a rate in MB/s over the phase.
func TestProgressLineVersionsAndBytes(t *testing.T) {
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	b := &progressLine{start: start, phaseAt: start,
		ev: report.ProgressEvent{Phase: "verifying checksums", Done: 400, Total: 1000, Unit: "items", Versions: 4000, Bytes: 50e6}}
	got := b.format(start.Add(2 * time.Second))
	want := "verifying checksums 400/1000 items (200/s, 2s), 4000 versions, 25.0 MB/s"
	if got != want {
		t.Errorf("line:\ngot  %q\nwant %q", got, want)
	}
	b.ev = report.ProgressEvent{Phase: "scanning", Done: 5, Total: 9, Unit: "items"}
	if got, want := b.format(start.Add(time.Second)), "scanning 5/9 items (5.0/s, 1s)"; got != want {
		t.Errorf("without versions and bytes:\ngot  %q\nwant %q", got, want)
	}
}
