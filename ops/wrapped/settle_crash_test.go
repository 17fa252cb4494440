package wrapped_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/wrapped"
	"github.com/swampj/swampj/recover"
)

// deadRunRepo is a repo with what a power cut of a wrapped swamp leaves:
// a version written zero-byte with `latest` naming it, and the run's
// record open with its change log and no wrapper.
func deadRunRepo(t *testing.T) (r *repo.Repo, item, prev string) {
	t.Helper()
	r = exampleRepo(t)
	item, prev = someItem(t, r)
	torn := filepath.Join(item, "99")
	if err := os.MkdirAll(torn, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.WriteFile(filepath.Join(torn, f), nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(item, "latest"), []byte("99"), 0o666); err != nil {
		t.Fatal(err)
	}
	deadRun(t, r, filepath.Join(torn, "raw"), filepath.Join(torn, "metadata.yaml"), filepath.Join(item, "latest"))
	return r, item, prev
}

// Settling a dead wrapped run is cut after every disk operation it makes
// (its record's commits, the repair's steps, the log's removal); the next
// command that needs a settled repo (recover.Run, the startup hook every
// other command runs first) then ends it: nothing pending, the torn
// version in quarantine, latest naming the last readable version, the
// doctor clean, the run's record closed.
func TestSettleCrashAtEveryCutPoint(t *testing.T) {
	count := fsxtest.Count(t, "wrapped-run", "cut")
	settle := func(fsys fsx.FS, r *repo.Repo) error {
		_, err := wrapped.Settle(context.Background(), r, wrapped.SettleOptions{Common: host.Common{JournalLockTimeout: 5 * time.Second, FS: fsys}})
		return err
	}
	r, _, _ := deadRunRepo(t)
	probe := fsx.NewFault(fsx.Real())
	if err := settle(probe, r); err != nil {
		t.Fatal(err)
	}
	n := probe.Ops()
	if n < 5 {
		t.Fatalf("settling made only %d operations", n)
	}
	for _, k := range fsxtest.Cuts(0, n-1, 7) {
		count.Check()
		r, item, prev := deadRunRepo(t)
		f := fsx.NewFault(fsx.Real()).CrashAfter(k)
		if err := settle(f, r); err == nil {
			t.Fatalf("cut %d of %d: settling did not crash", k, n)
		}
		if _, err := recover.Run(context.Background(), r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: 5 * time.Second}}); err != nil {
			t.Fatalf("cut %d of %d: recovery after the cut: %v", k, n, err)
		}
		if wrapped.Pending(nil, r.JournalPath) {
			t.Fatalf("cut %d: the dead run is still pending after recovery", k)
		}
		if b, _ := os.ReadFile(filepath.Join(item, "latest")); strings.TrimSpace(string(b)) != prev {
			t.Fatalf("cut %d: latest is %q, want %s", k, b, prev)
		}
		if _, err := os.Stat(filepath.Join(item, "99")); !os.IsNotExist(err) {
			t.Fatalf("cut %d: the torn version is still in the item (%v)", k, err)
		}
		rep, err := doctor.Run(context.Background(), r, doctor.Options{})
		if err != nil || rep.Remaining != 0 {
			t.Fatalf("cut %d: doctor after recovery: %v %+v", k, err, rep.Findings)
		}
		j, err := journal.OpenReadOnly(nil, r.JournalPath, journal.Options{})
		if err != nil {
			t.Fatal(err)
		}
		runs, _ := j.Runs(false)
		j.Close()
		if len(runs) != 0 {
			t.Fatalf("cut %d: run records still open: %+v", k, runs)
		}
		count.Recovered()
	}
}
