package ops_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/recover"
)

// TestDoctorRepairCrashAtEveryCutPoint cuts a confirmed repair after every
// operation it issues — lock files, journal commits, mkdirs, renames,
// fsyncs, the writes of `latest`, every catalog transaction — then runs
// `swampj recover` forward on it and, on a fresh copy cut at the same
// point, backward, twice each. Forward must end in the repaired tree,
// backward in the starting one (whole tree, plus the catalog row by row),
// and at no cut may a byte that was there before be gone afterwards.
func TestDoctorRepairCrashAtEveryCutPoint(t *testing.T) {
	cases := []struct {
		name     string
		spec     drSpec
		staging  bool
		deadLock bool     // a zero-byte model lock over the damaged item
		kinds    []string // operations the uncut repair must issue
	}{
		{"3955 under a zero-byte model lock and a torn datastore lock", drSpec{items: []drItem{dr3955()}}, false, true,
			[]string{"rename-noreplace", "failpoint:catalog.remove.commit", "syncdir"}},
		{"3955 plus an item with nothing readable and a staging leftover", drSpec{items: []drItem{
			dr3955(), {name: "state", latest: "1", versions: []drVer{{n: 1, empty: true}}},
		}}, true, false, []string{"rename-noreplace", "failpoint:catalog.remove.commit", "syncdir"}},
		{"workflow step groups with is_step_latest, and flags a backfill got wrong", drSpec{stepCol: true, items: []drItem{
			drWorkflowItem(), {name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}, {n: 3}}},
		}}, false, false, []string{"rename-noreplace", "failpoint:catalog.remove.commit", "failpoint:catalog.upsert.commit", "syncdir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fixture := drCopies(t, func() *repo.Repo {
				r := drBuild(t, t.TempDir(), tc.spec)
				if tc.staging {
					drWrite(t, filepath.Join(drItemDir(r, "result"), ".swampj-stage-6-0a1b2c", "raw"), []byte(`{"torn":`))
				}
				if tc.deadLock {
					dlPlant(t, dlModelLock(r, drModel), nil, 40*time.Second) // past newer swamp's 30 s in-flight window (swamp-format §13.3)
					dlPlant(t, lock.GlobalPath(r.Base, r.Namespace), []byte(`{"holder":`), time.Hour)
				}
				return r
			})
			drCrashEveryCut(t, fixture, tc.kinds)
		})
	}
}

// drCopies builds a fixture once and returns a function that hands out
// fresh copies of it (the catalog's row-by-row write-through makes a build
// cost many commits; a copy costs none). Nothing in a fixture names its
// directory, and the copies keep the files' ages.
func drCopies(t *testing.T, build func() *repo.Repo) func() *repo.Repo {
	tmpl := build()
	return func() *repo.Repo {
		dir := filepath.Join(t.TempDir(), "repo")
		fsxtest.CopyTree(t, tmpl.Dir, dir)
		r, err := repo.Load(fsx.Real(), dir, drEnv)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func drCrashEveryCut(t *testing.T, fixture func() *repo.Repo, kinds []string) {
	ctx := context.Background()
	opts := doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true, Now: drNow}

	// An uncut run gives the repaired tree and the number of cut points.
	start := fixture()
	skip := drSkip(start)
	initial, initialRows := fsxtest.Snapshot(t, start.Dir, skip), drRowsFull(t, start)
	clean := fsx.NewFault(fsx.Real())
	opts.FS = clean
	rep, err := doctor.Run(ctx, start, opts)
	if err != nil || !rep.Clean() {
		t.Fatalf("uncut repair: %+v %v", rep, err)
	}
	final, finalRows := fsxtest.Snapshot(t, start.Dir, skip), drRowsFull(t, start)
	cuts := clean.Ops()
	// A repair that moves dead locks runs two intents (locks, then data):
	// the state after each one's done mark is what a cut between them
	// leaves, forward or backward.
	begins, flushes := drOpIndexes(clean, "failpoint:journal.begin"), drOpIndexes(clean, "failpoint:journal.flush")
	if len(begins) == 0 || len(begins) != len(flushes) {
		t.Fatalf("journal commits: begins %v, flushes %v", begins, flushes)
	}
	states := []fsxtest.Tree{initial}
	stateRows := [][]string{initialRows}
	for _, f := range flushes[:len(flushes)-1] {
		r := fixture()
		opts.FS = fsx.NewFault(fsx.Real()).CrashAfter(f)
		if _, err := doctor.Run(ctx, r, opts); !fsx.IsCrash(err) {
			t.Fatalf("cut after the done mark at %d: want a crash, got %v", f, err)
		}
		states, stateRows = append(states, fsxtest.Snapshot(t, r.Dir, drSkip(r))), append(stateRows, drRowsFull(t, r))
	}
	states, stateRows = append(states, final), append(stateRows, finalRows)
	count := func(at []int, k int) int {
		n := 0
		for _, a := range at {
			if k >= a {
				n++
			}
		}
		return n
	}
	beginAt, flushAt := begins[0], flushes[len(flushes)-1]
	for _, kind := range kinds {
		if clean.Count(kind) == 0 {
			t.Fatalf("the repair never issued %s (%d ops)", kind, clean.Ops())
		}
	}
	if beginAt > flushAt || flushAt > cuts {
		t.Fatalf("journal commits out of order (begin %d, flush %d of %d)", beginAt, flushAt, cuts)
	}

	check := func(k int, what string, r *repo.Repo, want fsxtest.Tree, wantRows []string) {
		t.Helper()
		if d := fsxtest.Diff(want, fsxtest.Snapshot(t, r.Dir, drSkip(r))); len(d) > 0 {
			t.Fatalf("cut %d: %s: tree differs:\n%s", k, what, strings.Join(d, "\n"))
		}
		drWant(t, "cut "+strconv.Itoa(k)+": "+what+": catalog rows", drRowsFull(t, r), wantRows)
		drNothingLost(t, initial, fsxtest.Snapshot(t, r.Dir, drSkip(r)))
	}

	cc := fsxtest.Count(t, "repair", "cut")
	// Every cut in the crash recipe's full mode; otherwise a sample that
	// keeps every journal commit and the cuts either side of it.
	sample := fsxtest.Cuts(0, cuts, 4, append(fsxtest.Around(begins...), fsxtest.Around(flushes...)...)...)
	for _, k := range sample {
		cc.Check()
		// The journal holds absolute paths, so the rollback gets its own
		// tree, cut at the same point (the cut is deterministic).
		crashed, rolled := fixture(), fixture()
		for _, r := range []*repo.Repo{crashed, rolled} {
			f := fsx.NewFault(fsx.Real()).CrashAfter(k)
			opts.FS = f
			if _, err := doctor.Run(ctx, r, opts); err != nil && !fsx.IsCrash(err) {
				t.Fatalf("cut %d (after %s): want a crash, got %v", k, drLastOp(f), err)
			}
		}
		for round := 1; round <= 2; round++ {
			if _, err := recover.Run(ctx, crashed.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
				t.Fatalf("cut %d: forward recovery round %d: %v", k, round, err)
			}
			// Every journaled intent is finished.
			n := count(begins, k)
			check(k, "forward recovery round "+strconv.Itoa(round), crashed, states[n], stateRows[n])

			if _, err := recover.Run(ctx, rolled.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: true}); err != nil {
				t.Fatalf("cut %d: rollback round %d: %v", k, round, err)
			}
			// Intents marked done stay; the open one is undone.
			d := count(flushes, k)
			check(k, "rollback round "+strconv.Itoa(round), rolled, states[d], stateRows[d])
		}
		cc.Recovered()
	}
	t.Logf("%d of %d cut points recovered forward and rolled back, twice each (%d intent(s), first journaled at op %d, last marked done at op %d)",
		len(sample), cuts+1, len(begins), beginAt, flushAt)
}

// drOpIndexes are the 1-based positions of every operation of a kind.
func drOpIndexes(f *fsx.Fault, kind string) []int {
	var out []int
	for _, op := range f.Trace() {
		if op.Kind == kind {
			out = append(out, op.N)
		}
	}
	return out
}

// drOpIndex is the 1-based position of the first operation of a kind.
func drOpIndex(f *fsx.Fault, kind string) int {
	for _, op := range f.Trace() {
		if op.Kind == kind {
			return op.N
		}
	}
	return 1 << 30
}

func drLastOp(f *fsx.Fault) string {
	tr := f.Trace()
	switch {
	case len(tr) == 0:
		return "nothing"
	case f.Crashed() && len(tr) > 1:
		return tr[len(tr)-2].String()
	}
	return tr[len(tr)-1].String()
}

// TestDoctorRepairRecoveryCrashConverges cuts the repair where recovery has
// the most to do — every step applied, the intent not yet marked done, and
// half-way through the catalog step — then cuts that recovery (forward and
// backward) at every one of its own operations, and recovers again: the
// repaired tree or the starting tree must come out however often recovery
// itself is interrupted. The catalog's undo is several transactions (the
// rows re-inserted in their old order, then the flags); this is where its
// idempotence is proven.
func TestDoctorRepairRecoveryCrashConverges(t *testing.T) {
	// Every fourth recovery cut; under -short every sixteenth (the crash
	// recipe's short run must check this cell too).
	every := 4
	if testing.Short() {
		every = 16
	}
	ctx := context.Background()
	opts := doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true, Now: drNow}
	fixture := drCopies(t, func() *repo.Repo {
		return drBuild(t, t.TempDir(), drSpec{stepCol: true, items: []drItem{drWorkflowItem(), dr3955()}})
	})
	start := fixture()
	skip := drSkip(start)
	initial, initialRows := fsxtest.Snapshot(t, start.Dir, skip), drRowsFull(t, start)
	clean := fsx.NewFault(fsx.Real())
	opts.FS = clean
	if rep, err := doctor.Run(ctx, start, opts); err != nil || !rep.Clean() {
		t.Fatalf("uncut repair: %+v %v", rep, err)
	}
	final, finalRows := fsxtest.Snapshot(t, start.Dir, skip), drRowsFull(t, start)
	firstRemove := drOpIndex(clean, "failpoint:catalog.remove.commit")
	flushAt := drOpIndex(clean, "failpoint:journal.flush")

	runs := 0
	cc := fsxtest.Count(t, "repair", "recovery-crash")
	for _, k := range []int{firstRemove + 1, flushAt - 1} {
		for _, rollback := range []bool{false, true} {
			crashAt := func() *repo.Repo {
				r := fixture()
				opts.FS = fsx.NewFault(fsx.Real()).CrashAfter(k)
				if _, err := doctor.Run(ctx, r, opts); !fsx.IsCrash(err) {
					t.Fatalf("cut %d: want a crash, got %v", k, err)
				}
				return r
			}
			probe := crashAt()
			counter := fsx.NewFault(fsx.Real())
			if _, err := recover.Run(ctx, probe.Dir, recover.Options{Common: host.Common{FS: counter, JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
				t.Fatal(err)
			}
			want, wantRows := final, finalRows
			if rollback {
				want, wantRows = initial, initialRows
			}
			for _, m := range fsxtest.Cuts(0, counter.Ops()-1, every) {
				cc.Check()
				r := crashAt()
				_, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{FS: fsx.NewFault(fsx.Real()).CrashAfter(m), JournalLockTimeout: time.Second}, Rollback: rollback})
				if err != nil && !fsx.IsCrash(err) {
					t.Fatalf("cut %d, recovery cut %d: %v", k, m, err)
				}
				if _, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
					t.Fatalf("cut %d, recovery cut %d, second recovery: %v", k, m, err)
				}
				if d := fsxtest.Diff(want, fsxtest.Snapshot(t, r.Dir, drSkip(r))); len(d) > 0 {
					t.Fatalf("cut %d, recovery cut %d (rollback=%v):\n%s", k, m, rollback, strings.Join(d, "\n"))
				}
				drWant(t, fmt.Sprintf("cut %d, recovery cut %d (rollback=%v): rows", k, m, rollback), drRowsFull(t, r), wantRows)
				if open := fmOpenIntents(t, r.Dir); len(open) > 0 {
					t.Fatalf("cut %d, recovery cut %d (rollback=%v): intent %d still open", k, m, rollback, open[0].ID)
				}
				runs++
				cc.Recovered()
			}
		}
	}
	t.Logf("%d crash-in-recovery combinations converged", runs)
}
