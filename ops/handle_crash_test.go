package ops_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// handleWriters is how many goroutines write through one handle in the
// handle's crash cells, each a new version of its own model.
const handleWriters = 3

// handleCrashRun is one crash of a process whose goroutines write through
// one write.Handle on fsys: the handle is opened (uncut), then
// handleWriters goroutines write at once, one version each (concNew),
// until the cut (k < 0: none). It returns the repo's directory and which
// writes returned success.
func handleCrashRun(t *testing.T, f *fsx.Fault, k int, where string) handleRun {
	t.Helper()
	r := concRepo(t, handleWriters)
	ctx := context.Background()
	h, err := write.Open(ctx, r, ops.NoSettleTimer(write.WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second, JournalLockTimeout: 5 * time.Second, FS: f}}))
	if err != nil {
		t.Fatalf("%s: open: %v", where, err)
	}
	if k >= 0 {
		f.CrashAfter(f.Ops() + k)
	}
	acked := make([]bool, handleWriters)
	var wg sync.WaitGroup
	for i := range handleWriters {
		wg.Go(func() {
			_, err := h.WriteVersions(ctx, []write.VersionWrite{handleCrashWrite(i)})
			if err != nil && !fsx.IsCrash(err) {
				t.Errorf("%s: writer %d: want a crash or success, got %v", where, i, err)
			}
			acked[i] = err == nil
		})
	}
	wg.Wait()
	_ = h.Close() // after a crash: abandoned, nothing more reaches the disk
	return handleRun{dir: r.Dir, acked: acked}
}

// handleCrashWrite is writer i's write: a new version of its own model.
func handleCrashWrite(i int) write.VersionWrite {
	return write.VersionWrite{Address: concAddr(i), Content: bytes.NewReader(concNew(i)), ModelName: fmt.Sprintf("m%d", i), SpecName: "result"}
}

type handleRun struct {
	dir   string
	acked []bool
}

// handleCrashCheck recovers the repo of a handle crash and checks it: no
// intent left open, each writer's item all-old or all-new (files, latest
// and catalog row), every acknowledged write all-new, no staging or temp
// file left; a second recovery changes nothing.
func handleCrashCheck(t *testing.T, dir string, acked []bool, where string) {
	t.Helper()
	r := loadCrashRepo(t, dir)
	var first fsxtest.Tree
	for round := 1; round <= 2; round++ {
		if _, err := recover.Run(context.Background(), r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
			t.Fatalf("%s: recover (round %d): %v", where, round, err)
		}
		tree := fsxtest.Snapshot(t, r.Dir, func(rel string) bool {
			return fsxtest.SkipJournal(rel) || strings.HasPrefix(filepath.Base(rel), "_catalog.db")
		})
		if round == 2 {
			if d := fsxtest.Diff(first, tree); len(d) > 0 {
				t.Fatalf("%s: the second recovery changed the tree:\n%s", where, strings.Join(d, "\n"))
			}
		}
		first = tree
	}
	if n := len(openIntentsOf(t, r)); n != 0 {
		t.Fatalf("%s: %d intents open after recover", where, n)
	}
	for i := range handleWriters {
		if isNew := checkConcItem(t, where, r, i); acked[i] && !isNew {
			t.Fatalf("%s: writer %d returned success but its item is the old one", where, i)
		}
	}
	_ = filepath.WalkDir(r.DataRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".swampj-") {
			t.Fatalf("%s: left %s", where, p)
		}
		return nil
	})
}

// handleCuts is how many operations the writes of one handle run issue,
// and the step between the cuts tried. It counts them with the writers
// one after another: at once, how many commits they share (and so how
// many operations there are) depends on the scheduler, and the count of
// cells must not, since the crash report compares it exactly. Sharing
// only removes operations, so the serial count covers every operation of
// the concurrent runs; a cut past a run's last operation leaves it uncut,
// and the run is checked all the same.
func handleCuts(t *testing.T) (cuts, step int) {
	t.Helper()
	f := fsx.NewFault(fsx.Real())
	r := concRepo(t, handleWriters)
	h, err := write.Open(context.Background(), r, ops.NoSettleTimer(write.WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second, FS: f}}))
	if err != nil {
		t.Fatal(err)
	}
	start := f.Ops()
	for i := range handleWriters {
		if _, err := h.WriteVersions(context.Background(), []write.VersionWrite{handleCrashWrite(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	cuts = f.Ops() - start
	step = 3
	if testing.Short() {
		step = 11
	}
	if os.Getenv("SWAMPJ_CRASH_FULL") != "" {
		step = 1
	}
	return cuts, step
}

// TestHandleWritersCrashAtEveryCutPoint: goroutines writing through one
// handle, the process cut after its k-th operation for every k (with
// SWAMPJ_CRASH_FULL; sampled otherwise). The writers run at once, so a
// cut falls at a different pair (or triple) of their operations in each
// cell: in one writer's staging while another's intent commits, between
// two intents carried by one group commit and their publishes, inside one
// catalog transaction carrying several writers' rows. After recovery each
// item is all-old or all-new, and every acknowledged write is there.
func TestHandleWritersCrashAtEveryCutPoint(t *testing.T) {
	cuts, step := handleCuts(t)
	cc := fsxtest.Count(t, "handle-writes", "cut")
	for k := 0; k <= cuts+2; k += step {
		cc.Check()
		where := fmt.Sprintf("cut %d (of about %d)", k, cuts)
		f := fsx.NewFault(fsx.Real())
		run := handleCrashRun(t, f, k, where)
		handleCrashCheck(t, run.dir, run.acked, where)
		cc.Recovered()
	}
}

// TestHandleWritersPowerCutAtEveryCutPoint is the same with a power cut at
// the crash: whatever was not made durable by then is lost (fsx's
// power-cut model), and still each item is all-old or all-new and every
// acknowledged write is there.
func TestHandleWritersPowerCutAtEveryCutPoint(t *testing.T) {
	cuts, step := handleCuts(t)
	cc := fsxtest.Count(t, "handle-writes", "powercut")
	lost, rows := 0, 0
	for k := 0; k <= cuts+2; k += step {
		cc.Check()
		where := fmt.Sprintf("power cut %d (of about %d)", k, cuts)
		f := fsx.NewFault(fsx.Real()).TrackDurability()
		run := handleCrashRun(t, f, k, where)
		gone, err := f.PowerCut()
		if err != nil {
			t.Fatalf("%s: power cut: %v", where, err)
		}
		if len(gone) > 0 {
			lost++
		}
		for _, g := range gone {
			if strings.HasPrefix(g, "unsynced commits of") {
				rows++ // the catalog's lazy commits: the journal must redo them
			}
		}
		handleCrashCheck(t, run.dir, run.acked, where+fmt.Sprintf(" (lost %v)", gone))
		cc.Recovered()
	}
	t.Logf("%d cuts of %d writers on one handle (about %d operations); %d power cuts lost something not yet durable, %d of them catalog commits", (cuts+2)/step+1, handleWriters, cuts, lost, rows)
}

// TestHandleNeighbourPowerCutAtEveryCutPoint: a handle's write is
// acknowledged with its catalog row committed lazily and its intent parked,
// open. A writer of the same model in another process (its own journal
// session on the same disk) finishes that intent before its own write,
// then commits its row at FULL. The power fails after each of its
// operations in turn. The handle's version must keep its catalog row after
// recovery: the writer may close the parked intent only once the catalog
// is synced, else a cut between its journal commit (which carries the done
// mark) and its own catalog commit loses the row for good.
func TestHandleNeighbourPowerCutAtEveryCutPoint(t *testing.T) {
	cuts := handlePowerCuts(t, func(t *testing.T, k int) bool {
		r := concRepo(t, 1)
		h, f := openTrackedHandle(t, r)
		if _, err := h.WriteVersions(context.Background(), []write.VersionWrite{handleCrashWrite(0)}); err != nil {
			t.Fatal(err)
		}
		if k >= 0 {
			f.CrashAfter(f.Ops() + k)
		}
		if err := concWrite(f, r, 0, []byte("the neighbour's version"), 5*time.Second); err != nil && !fsx.IsCrash(err) {
			t.Fatalf("cut %d: the neighbour's write: %v", k, err)
		}
		cut := f.Crashed()
		if !cut {
			f.CrashAfter(f.Ops()) // the power fails now: the handle never settles
		}
		_ = h.Close()
		powerCutAndRecover(t, f, r, k)
		c := openCatalogT(t, r)
		defer c.Close()
		if _, ok, err := c.VersionID(context.Background(), handleItemKey, 2); err != nil || !ok {
			t.Fatalf("cut %d: the handle's acknowledged version 2 has no catalog row after recovery (ok %v, %v)", k, ok, err)
		}
		if !cut {
			if _, ok, err := c.VersionID(context.Background(), handleItemKey, 3); err != nil || !ok {
				t.Fatalf("cut %d: the neighbour's acknowledged version 3 has no catalog row (ok %v, %v)", k, ok, err)
			}
		}
		return cut
	})
	if cuts < 10 {
		t.Fatalf("only %d cut points in the neighbour's write", cuts)
	}
	t.Logf("%d cut points in the neighbour's write", cuts)
}

// TestHandleSameItemPowerCutAtEveryCutPoint: one handle writes three
// versions of one item one after another, so up to three intents of the
// item are parked at once with their rows lazily committed, then closes,
// and the power is cut after every operation, Close's included. Recovery
// finishes the older intents after the later versions were published on
// top of them; their rows must go in below the later ones, not be skipped
// (which left the catalog stale) nor flagged latest. After recovery the
// catalog agrees with the disk and every acknowledged version is there.
func TestHandleSameItemPowerCutAtEveryCutPoint(t *testing.T) {
	const writes = 3
	cuts := handlePowerCuts(t, func(t *testing.T, k int) bool {
		ctx := context.Background()
		r := concRepo(t, 1)
		h, f := openTrackedHandle(t, r)
		if k >= 0 {
			f.CrashAfter(f.Ops() + k)
		}
		acked := int64(1)
		for n := range writes {
			res, err := h.WriteVersions(ctx, []write.VersionWrite{{Address: concAddr(0), Content: strings.NewReader(fmt.Sprint("version ", n+2)), ModelName: "m0", SpecName: "result"}})
			if err != nil {
				if !fsx.IsCrash(err) {
					t.Fatalf("cut %d: write %d: %v", k, n+1, err)
				}
				break
			}
			acked = res[0].Version
		}
		// The cuts go on through Close, whose settle syncs the catalog
		// and then marks the intents done.
		_ = h.Close()
		cut := f.Crashed()
		powerCutAndRecover(t, f, r, k)
		rep, err := catalogsync.Verify(ctx, r, catalogsync.Options{})
		if err != nil {
			t.Fatalf("cut %d: verify: %v", k, err)
		}
		if !rep.InSync {
			t.Fatalf("cut %d: the catalog does not agree with the disk after recovery: %+v", k, rep.Counts)
		}
		c := openCatalogT(t, r)
		defer c.Close()
		if row, ok, err := c.LatestRow(ctx, handleItemKey); err != nil || !ok || row.Version < acked {
			t.Fatalf("cut %d: version %d was acknowledged; the catalog's latest row is %d (found %v, %v)", k, acked, row.Version, ok, err)
		}
		return cut
	})
	t.Logf("%d cut points in %d writes of one item through one handle", cuts, writes)
}

// handleItemKey is model 0's item in the catalog (concRepo).
var handleItemKey = catalog.ItemKey{TypeNormalized: "command/shell", ModelID: concModels[0], DataName: "result"}

// handlePowerCuts runs run for k = 0, 1, … until a run is not cut (run
// reports whether the Fault crashed), each counted as one handle-writes ×
// powercut cell, and returns how many runs were cut.
func handlePowerCuts(t *testing.T, run func(t *testing.T, k int) (cut bool)) int {
	t.Helper()
	cc := fsxtest.Count(t, "handle-writes", "powercut")
	cuts := 0
	for k := 0; ; k++ {
		cc.Check()
		cut := run(t, k)
		cc.Recovered()
		if !cut {
			return cuts
		}
		cuts++
	}
}

// openTrackedHandle opens a handle on r through a new Fault keeping the
// power-cut model, without the settle timer (the cells count operations).
func openTrackedHandle(t *testing.T, r *repo.Repo) (*write.Handle, *fsx.Fault) {
	t.Helper()
	f := fsx.NewFault(fsx.Real()).TrackDurability()
	h, err := write.Open(context.Background(), r, ops.NoSettleTimer(write.WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second, JournalLockTimeout: 5 * time.Second, FS: f}}))
	if err != nil {
		t.Fatal(err)
	}
	return h, f
}

// powerCutAndRecover applies the power-cut model to r's tree and recovers it.
func powerCutAndRecover(t *testing.T, f *fsx.Fault, r *repo.Repo, k int) {
	t.Helper()
	if _, err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if _, err := recover.Run(context.Background(), r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
		t.Fatalf("cut %d: recover: %v", k, err)
	}
}

// openCatalogT opens r's catalog; the caller closes it.
func openCatalogT(t *testing.T, r *repo.Repo) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(context.Background(), nil, r.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
