package ops_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/recover"
)

// The power-cut variants of the three protocol crash suites (version
// writes, namespace migration, doctor --repair). Each cut point of the
// suite's uncut run is taken again, but the process crash is followed by a
// power cut under fsx's POSIX-pessimistic model (fsx/powercut.go): every
// create, mkdir and rename whose parent directories were not yet fsynced
// is undone (a lost mkdir takes its subtree), and file data is cut back to
// its last fsync; bbolt and SQLite commits stay, they are durable at
// commit. Recovery (forward, and on a fresh tree cut at the same point,
// rollback) must then reach the outcome the suite's own checkers demand.
// A failure here is a durability bug: a change the protocol relied on was
// not yet on disk. The trees live in /dev/shm where it exists: the model is
// applied by the test, not by the kernel, so tmpfs loses nothing of it.

// pcRun is one run cut at k and then power-cut.
type pcRun struct {
	k    int
	f    *fsx.Fault
	lost []string
}

// newPCFault is the fault FS for one power-cut run.
func newPCFault(k int) *fsx.Fault {
	return fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
}

// powerCut applies the model after the crash.
func (p *pcRun) powerCut(t *testing.T) {
	t.Helper()
	lost, err := p.f.PowerCut()
	if err != nil {
		t.Fatalf("cut %d: power cut: %v", p.k, err)
	}
	p.lost = lost
}

// String names the cut, the operations around it and what the power cut
// lost, for a failure message.
func (p *pcRun) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cut %d", p.k)
	tr := p.f.Trace()
	if p.k > 0 && p.k <= len(tr) {
		fmt.Fprintf(&b, " (after %s)", tr[p.k-1])
	}
	b.WriteString("\n  ops around the cut:")
	for i := max(0, p.k-6); i < min(len(tr), p.k+1); i++ {
		mark := "   "
		if i == p.k-1 {
			mark = "-> "
		}
		if i == p.k {
			mark = "x  " // the operation the crash refused
		}
		fmt.Fprintf(&b, "\n    %s%s", mark, tr[i])
	}
	if len(p.lost) == 0 {
		b.WriteString("\n  the power cut lost nothing")
	} else {
		b.WriteString("\n  the power cut lost:")
		for _, l := range p.lost {
			b.WriteString("\n    " + l)
		}
	}
	return b.String()
}

// TestWritePowerCutAtEveryCutPoint: after a power cut at any point of a
// version write and a recovery, `latest` names a readable version that is
// the old or the new one with exactly the bytes written, the catalog's
// latest row agrees, no staging directory remains and the tree is exactly
// the old or the new tree. The new version must be the outcome of forward
// recovery whenever the write had returned success (acknowledged data is
// never lost: the cut at the last point is a power cut after the call
// returned) and whenever its catalog row had been committed (readers may
// have seen it). Rollback gives the old version unless the intent had been
// marked done.
func TestWritePowerCutAtEveryCutPoint(t *testing.T) {
	for _, sc := range writeCrashScenarios() {
		t.Run(sc.String(), func(t *testing.T) {
			t.Parallel()
			writePowerCutMatrix(t, sc)
		})
	}
}

func writePowerCutMatrix(t *testing.T, sc *crashScenario) {
	ctx := context.Background()
	start := sc.setup(t)
	initial := crashTree(t, start)
	clean := fsx.NewFault(fsx.Real())
	if err := sc.write(start, clean); err != nil {
		t.Fatal(err)
	}
	final := crashTree(t, start)
	cuts := clean.Ops()
	committedAt, doneAt := 1<<30, 1<<30
	for _, op := range clean.Trace() {
		switch op.Kind {
		case "failpoint:" + catalog.FailpointUpsert:
			committedAt = min(committedAt, op.N)
		case "failpoint:journal.flush":
			doneAt = min(doneAt, op.N)
		}
	}
	if committedAt == 1<<30 || doneAt == 1<<30 {
		t.Fatalf("unexpected trace (%d ops): %v", cuts, clean.Trace())
	}

	lostSome, newForward, acked := 0, 0, 0
	cc := fsxtest.Count(t, "version-write", "powercut")
	for k := 0; k <= cuts; k++ {
		for _, rollback := range []bool{false, true} {
			cc.Check()
			r := sc.setup(t)
			p := &pcRun{k: k, f: newPCFault(k)}
			err := sc.write(r, p.f)
			if err != nil && !fsx.IsCrash(err) {
				t.Fatalf("%s: want a crash, got %v", p, err)
			}
			returned := err == nil
			p.powerCut(t)
			if len(p.lost) > 0 {
				lostSome++
			}
			var prev fsxtest.Tree
			for round := 1; round <= 2; round++ {
				where := fmt.Sprintf("rollback=%v, round %d, %s", rollback, round, p)
				if _, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
					t.Fatalf("recover: %v\n%s", err, where)
				}
				got := crashTree(t, r)
				isNew := len(fsxtest.Diff(final, got)) == 0
				if !isNew {
					if d := fsxtest.Diff(initial, got); len(d) > 0 {
						t.Fatalf("the tree is neither the old nor the new one:\n%s\n(against the new tree:\n%s)\n%s",
							strings.Join(d, "\n"), strings.Join(fsxtest.Diff(final, got), "\n"), where)
					}
				}
				switch {
				case !rollback && returned && !isNew:
					t.Fatalf("the write returned success, but after the power cut forward recovery gives the old version\n%s", where)
				case !rollback && k >= committedAt && !isNew:
					t.Fatalf("the new version's catalog row was committed (op %d), but after the power cut forward recovery gives the old version\n%s", committedAt, where)
				case rollback && isNew != (k >= doneAt):
					t.Fatalf("rollback gives the new version=%v, want %v (intent marked done at op %d)\n%s", isNew, k >= doneAt, doneAt, where)
				}
				checkOutcome(t, where, sc, r, isNew)
				if prev != nil {
					if d := fsxtest.Diff(prev, got); len(d) > 0 {
						t.Fatalf("the second recovery changed the tree:\n%s\n%s", strings.Join(d, "\n"), where)
					}
				}
				prev = got
				if !rollback && round == 1 && isNew {
					newForward++
				}
			}
			if returned && !rollback {
				acked++
			}
			if n := openIntentCount(t, r); n != 0 {
				t.Fatalf("%d intents still open after recovery\n%s", n, p)
			}
			cc.Recovered()
		}
	}
	if lostSome == 0 {
		t.Fatal("the power-cut model never lost anything: it is not being exercised")
	}
	if acked == 0 {
		t.Fatal("no run returned success before the power cut: acknowledged durability is not being checked")
	}
	t.Logf("%s: %d of %d cut points recovered forward and backward after a power cut (%d runs lost un-fsynced changes; forward gave the new version at %d cuts, the write had returned success at %d)",
		sc, cuts+1, cuts+1, lostSome, newForward, acked)
}

// TestMigratePowerCutAtEveryCutPoint: after a power cut at any point of a
// forward, reverse or unset --migrate run, forward recovery gives the
// finished tree (the starting one when the cut came before the intent was
// journaled), rollback the starting tree (the finished one when the intent
// had been marked done) — whole trees, every file by size and SHA-256, and
// the catalog row by row, so a file lost, duplicated or changed shows up.
func TestMigratePowerCutAtEveryCutPoint(t *testing.T) {
	for _, sc := range migCrashScenarios() {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			migPowerCutMatrix(t, sc)
		})
	}
}

func migPowerCutMatrix(t *testing.T, sc migCrashScenario) {
	start := sc.build(t)
	initial := migSnapshot(t, start)
	clean := fsx.NewFault(fsx.Real())
	o := sc.opts
	oFS := clean
	if _, err := runMigrate(t, start, oFS, o); err != nil {
		t.Fatal(err)
	}
	final := migSnapshot(t, start)
	cuts := clean.Ops()
	beginAt, finishAt := migOpIndex(clean, "failpoint:journal.begin"), migOpIndex(clean, "failpoint:journal.flush")
	if beginAt > finishAt || finishAt > cuts {
		t.Fatalf("journal commits out of order (begin %d, flush %d of %d)", beginAt, finishAt, cuts)
	}

	lostSome := 0
	cc := fsxtest.Count(t, migProtocolName(sc.name), "powercut")
	for k := 0; k <= cuts; k++ {
		for _, rollback := range []bool{false, true} {
			cc.Check()
			dir := sc.build(t)
			p := &pcRun{k: k, f: newPCFault(k)}
			migCrashRun(t, sc, dir, p.f)
			p.powerCut(t)
			if len(p.lost) > 0 {
				lostSome++
			}
			// Before the intent was journaled nothing was done; rollback
			// undoes everything until the intent was marked done.
			old := k < beginAt || rollback && k < finishAt
			want := final
			if old {
				want = initial
			}
			for round := 1; round <= 2; round++ {
				where := fmt.Sprintf("rollback=%v, round %d, %s", rollback, round, p)
				if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
					t.Fatalf("recover: %v\n%s", err, where)
				}
				got := migSnapshot(t, dir)
				if d := got.diff(want); len(d) > 0 {
					t.Fatalf("tree differs:\n%s\n%s", strings.Join(d, "\n"), where)
				}
				if old {
					// Every file once, with its bytes (implied by the diff;
					// checked again for a clearer message).
					drNothingLost(t, initial.tree, got.tree)
				}
			}
			cc.Recovered()
		}
	}
	if lostSome == 0 {
		t.Fatal("the power-cut model never lost anything: it is not being exercised")
	}
	t.Logf("%s: %d of %d cut points recovered forward and rolled back after a power cut (%d runs lost un-fsynced changes; intent journaled at op %d, marked done at op %d)",
		sc.name, cuts+1, cuts+1, lostSome, beginAt, finishAt)
}

// TestDoctorRepairPowerCutAtEveryCutPoint: after a power cut at any point
// of a confirmed repair, forward recovery gives the repaired tree (the
// starting one when the cut came before the intent was journaled), rollback
// the starting tree (the repaired one once the intent was marked done),
// whole tree plus the catalog row by row, and no byte that was there
// before is gone.
func TestDoctorRepairPowerCutAtEveryCutPoint(t *testing.T) {
	cases := []struct {
		name    string
		spec    drSpec
		staging bool
	}{
		{"3955 plus an item with nothing readable and a staging leftover", drSpec{items: []drItem{
			dr3955(), {name: "state", latest: "1", versions: []drVer{{n: 1, empty: true}}},
		}}, true},
		{"workflow step groups with is_step_latest, and flags a backfill got wrong", drSpec{stepCol: true, items: []drItem{
			drWorkflowItem(), {name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}, {n: 3}}},
		}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fixture := func() *repo.Repo {
				r := drBuild(t, fsxtest.ScratchDir(t), tc.spec)
				if tc.staging {
					drWrite(t, filepath.Join(drItemDir(r, "result"), ".swampj-stage-6-0a1b2c", "raw"), []byte(`{"torn":`))
				}
				return r
			}
			drPowerCutEveryCut(t, fixture)
		})
	}
}

func drPowerCutEveryCut(t *testing.T, fixture func() *repo.Repo) {
	ctx := context.Background()
	opts := doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true, Now: drNow}
	start := fixture()
	skip := drSkip(start)
	initial, initialRows := fsxtest.Snapshot(t, start.Dir, skip), drRowsFull(t, start)
	clean := fsx.NewFault(fsx.Real())
	opts.FS = clean
	if rep, err := doctor.Run(ctx, start, opts); err != nil || !rep.Clean() {
		t.Fatalf("uncut repair: %+v %v", rep, err)
	}
	final, finalRows := fsxtest.Snapshot(t, start.Dir, skip), drRowsFull(t, start)
	cuts := clean.Ops()
	beginAt, flushAt := drOpIndex(clean, "failpoint:journal.begin"), drOpIndex(clean, "failpoint:journal.flush")
	if beginAt > flushAt || flushAt > cuts {
		t.Fatalf("journal commits out of order (begin %d, flush %d of %d)", beginAt, flushAt, cuts)
	}

	lostSome := 0
	cc := fsxtest.Count(t, "repair", "powercut")
	for k := 0; k <= cuts; k++ {
		for _, rollback := range []bool{false, true} {
			cc.Check()
			r := fixture()
			p := &pcRun{k: k, f: newPCFault(k)}
			opts.FS = p.f
			if _, err := doctor.Run(ctx, r, opts); err != nil && !fsx.IsCrash(err) {
				t.Fatalf("want a crash, got %v\n%s", err, p)
			}
			p.powerCut(t)
			if len(p.lost) > 0 {
				lostSome++
			}
			want, wantRows := final, finalRows
			switch {
			case k < beginAt:
				want, wantRows = initial, initialRows // nothing was journaled, nothing was done
			case rollback && k < flushAt:
				want, wantRows = initial, initialRows
			}
			for round := 1; round <= 2; round++ {
				where := fmt.Sprintf("rollback=%v, round %d, %s", rollback, round, p)
				if _, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
					t.Fatalf("recover: %v\n%s", err, where)
				}
				got := fsxtest.Snapshot(t, r.Dir, drSkip(r))
				if d := fsxtest.Diff(want, got); len(d) > 0 {
					t.Fatalf("tree differs:\n%s\n%s", strings.Join(d, "\n"), where)
				}
				drWant(t, "catalog rows, "+where, drRowsFull(t, r), wantRows)
				drNothingLost(t, initial, got)
			}
			cc.Recovered()
		}
	}
	if lostSome == 0 {
		t.Fatal("the power-cut model never lost anything: it is not being exercised")
	}
	t.Logf("%d of %d cut points recovered forward and rolled back after a power cut (%d runs lost un-fsynced changes; intent journaled at op %d, marked done at op %d)",
		cuts+1, cuts+1, lostSome, beginAt, flushAt)
}
