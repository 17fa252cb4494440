package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/recover"
)

// renamePlan moves a small tree from src/ to dst/ the way a migration does:
// create the destination, rename entries, barrier, then write a marker.
func renamePlan(root string) *journal.Intent {
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	return &journal.Intent{Kind: "test", Summary: "move src to dst", Steps: []journal.Step{
		{Kind: protocol.KindMkdir, Path: dst},
		{Kind: protocol.KindMkdir, Path: filepath.Join(dst, "nested")},
		{Kind: protocol.KindRename, Path: filepath.Join(src, "a"), To: filepath.Join(dst, "a")},
		{Kind: protocol.KindRename, Path: filepath.Join(src, "b"), To: filepath.Join(dst, "b")},
		{Kind: protocol.KindRename, Path: filepath.Join(src, "nested", "c.txt"), To: filepath.Join(dst, "nested", "c.txt")},
		{Kind: engine.KindBarrier},
		{Kind: protocol.KindWrite, Path: filepath.Join(root, "marker"), Data: []byte("after"), OldData: []byte("before"), OldExists: true},
		{Kind: protocol.KindRmdir, Path: filepath.Join(src, "nested")},
	}}
}

func fixture(t *testing.T) string {
	root := t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{
		".swamp.yaml":       "swampVersion: test\n",
		"src/a/1/raw":       "one",
		"src/a/latest":      "1",
		"src/b/file":        "bee",
		"src/nested/c.txt":  "sea",
		"marker":            "before",
		".swamp/keep/x.txt": "x",
	})
	return root
}

func runPlan(t *testing.T, root string, fsys fsx.FS) error {
	t.Helper()
	j, err := journal.Open(fsys, recover.JournalPath(root), journal.Options{LockTimeout: time.Second})
	if err != nil {
		return err
	}
	env := &engine.Env{FS: fsys}
	_, err = engine.Execute(context.Background(), env, j, renamePlan(root), nil)
	if err != nil {
		j.Abandon() // a crashed process commits nothing more
		return err
	}
	return j.Close()
}

// TestCrashAtEveryCutPointThenRecover is the spine's crash test: the plan is
// cut after every operation it issues (file ops, fsyncs, journal commits),
// then recovery runs forward — and, on a copy of the same crashed tree,
// backward. Forward must reach the finished tree, backward the starting
// tree, and a second recovery must change nothing.
func TestCrashAtEveryCutPointThenRecover(t *testing.T) {
	ctx := context.Background()
	skip := fsxtest.SkipJournal

	b := measure(t)
	initial, final, cuts, beginAt, finishAt := b.initial, b.final, b.cuts, b.beginAt, b.finishAt
	if cuts < 15 {
		t.Fatalf("suspiciously few cut points: %d", cuts)
	}

	cc := fsxtest.Count(t, "recovery", "cut")
	for k := 0; k <= cuts; k++ {
		cc.Check()
		crashed := fixture(t)
		f := fsx.NewFault(fsx.Real()).CrashAfter(k)
		err := runPlan(t, crashed, f)
		if err != nil && !fsx.IsCrash(err) {
			t.Fatalf("cut %d: want a crash, got %v", k, err)
		}
		// The journal holds absolute paths, so the rollback gets its own
		// crashed tree, cut at the same point (the cut is deterministic).
		rolled := fixture(t)
		if err := runPlan(t, rolled, fsx.NewFault(fsx.Real()).CrashAfter(k)); err != nil && !fsx.IsCrash(err) {
			t.Fatalf("cut %d: second crash run: %v", k, err)
		}

		for round := 1; round <= 2; round++ {
			if _, err := recover.Run(ctx, crashed, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
				t.Fatalf("cut %d (after %v): recover round %d: %v", k, lastOp(f), round, err)
			}
			want := final
			if k < beginAt {
				want = initial // crashed before the intent was recorded: nothing was done
			}
			if d := fsxtest.Diff(want, fsxtest.Snapshot(t, crashed, skip)); len(d) > 0 {
				t.Fatalf("cut %d (after %v): forward recovery round %d:\n%s", k, lastOp(f), round, strings.Join(d, "\n"))
			}
		}
		for round := 1; round <= 2; round++ {
			if _, err := recover.Run(ctx, rolled, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: true}); err != nil {
				t.Fatalf("cut %d: rollback round %d: %v", k, round, err)
			}
			want := initial
			if k >= finishAt {
				want = final // the intent was already marked done: nothing to roll back
			}
			if d := fsxtest.Diff(want, fsxtest.Snapshot(t, rolled, skip)); len(d) > 0 {
				t.Fatalf("cut %d (after %v): rollback round %d:\n%s", k, lastOp(f), round, strings.Join(d, "\n"))
			}
		}
		cc.Recovered()
	}
	t.Logf("%d of %d cut points recovered forward and backward, twice each", cuts+1, cuts+1)
}

// baseline is what an uncut run of the rename plan shows: the trees before
// and after, how many cut points it has, and where the intent is journaled
// (begin) and marked done (flush).
type baseline struct {
	initial, final          fsxtest.Tree
	cuts, beginAt, finishAt int
}

func measure(t *testing.T) baseline {
	start := fixture(t)
	b := baseline{initial: fsxtest.Snapshot(t, start, fsxtest.SkipJournal)}
	clean := fsx.NewFault(fsx.Real())
	if err := runPlan(t, start, clean); err != nil {
		t.Fatal(err)
	}
	b.final = fsxtest.Snapshot(t, start, fsxtest.SkipJournal)
	b.cuts = clean.Ops()
	b.beginAt, b.finishAt = opIndex(clean, "failpoint:journal.begin"), opIndex(clean, "failpoint:journal.flush")
	return b
}

// opIndex is the 1-based position of the first operation of a kind.
func opIndex(f *fsx.Fault, kind string) int {
	for _, op := range f.Trace() {
		if op.Kind == kind {
			return op.N
		}
	}
	return 1 << 30
}

func lastOp(f *fsx.Fault) string {
	tr := f.Trace()
	if len(tr) == 0 {
		return "nothing"
	}
	if f.Crashed() && len(tr) > 1 {
		return tr[len(tr)-2].String()
	}
	return tr[len(tr)-1].String()
}

func TestConflictStopsAndNamesPaths(t *testing.T) {
	root := fixture(t)
	// Journal the plan and stop right after the commit: nothing was moved.
	j, err := journal.Open(fsx.Real(), recover.JournalPath(root), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(renamePlan(root)); err != nil {
		t.Fatal(err)
	}
	j.Abandon()
	// Somebody creates dst/a by hand: step 3 now sees both names.
	fsxtest.WriteFiles(t, root, map[string]string{"dst/a/other": "x"})
	_, err = recover.Run(context.Background(), root, recover.Options{})
	var ce *engine.ConflictError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), filepath.Join(root, "src", "a")) {
		t.Fatalf("want conflict naming src/a, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "src", "a", "latest")); err != nil {
		t.Fatal("conflicting source must be left untouched")
	}
	// The intent stays open, with the reason recorded.
	j, err = journal.Open(fsx.Real(), recover.JournalPath(root), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	open, _ := j.OpenIntents()
	if len(open) != 1 || !strings.Contains(open[0].LastError, "both") {
		t.Fatalf("intent must stay open with its error: %+v", open)
	}
}

// TestCrashDuringRecoveryConverges cuts the plan at every point, then cuts
// the recovery itself at every point of its own run, then recovers again:
// recovery must be a fixpoint however often it is interrupted.
func TestCrashDuringRecoveryConverges(t *testing.T) {
	ctx := context.Background()
	skip := fsxtest.SkipJournal
	b := measure(t)
	initial, final, beginAt, finishAt := b.initial, b.final, b.beginAt, b.finishAt
	runs := 0
	cc := fsxtest.Count(t, "recovery", "recovery-crash")
	// Every pair in the crash recipe's full mode; otherwise a sample of
	// both levels.
	for _, k := range fsxtest.Cuts(beginAt, finishAt-1, 2) {
		for _, rollback := range []bool{false, true} {
			// How many operations does an uninterrupted recovery take here?
			probe := fixture(t)
			_ = runPlan(t, probe, fsx.NewFault(fsx.Real()).CrashAfter(k))
			counter := fsx.NewFault(fsx.Real())
			if _, err := recover.Run(ctx, probe, recover.Options{Common: host.Common{FS: counter}, Rollback: rollback}); err != nil {
				t.Fatal(err)
			}
			for _, m := range fsxtest.Cuts(0, counter.Ops()-1, 3) {
				cc.Check()
				root := fixture(t)
				_ = runPlan(t, root, fsx.NewFault(fsx.Real()).CrashAfter(k))
				_, err := recover.Run(ctx, root, recover.Options{Common: host.Common{FS: fsx.NewFault(fsx.Real()).CrashAfter(m)}, Rollback: rollback})
				if err != nil && !fsx.IsCrash(err) {
					t.Fatalf("cut %d, recovery cut %d: %v", k, m, err)
				}
				if _, err := recover.Run(ctx, root, recover.Options{Rollback: rollback}); err != nil {
					t.Fatalf("cut %d, recovery cut %d, second recovery: %v", k, m, err)
				}
				want := final
				if rollback {
					want = initial
				}
				if d := fsxtest.Diff(want, fsxtest.Snapshot(t, root, skip)); len(d) > 0 {
					t.Fatalf("cut %d, recovery cut %d (rollback=%v):\n%s", k, m, rollback, strings.Join(d, "\n"))
				}
				runs++
				cc.Recovered()
			}
		}
	}
	t.Logf("%d crash-in-recovery combinations converged", runs)
}

// TestPowerCutAtEveryPointThenRecover is the crash test under the
// POSIX-pessimistic power-cut model (fsx/powercut.go): at every cut point,
// every rename, mkdir and create whose parent directory was not yet fsynced
// is lost, and file data is cut back to its last fsync. Recovery must still
// reach the finished tree (forward) or the starting tree (rollback). This is
// what proves the fsyncs are in the right places — and no more than needed.
func TestPowerCutAtEveryPointThenRecover(t *testing.T) {
	ctx := context.Background()
	skip := fsxtest.SkipJournal
	b := measure(t)
	initial, final, cuts, beginAt, finishAt := b.initial, b.final, b.cuts, b.beginAt, b.finishAt
	lostSome := 0
	cc := fsxtest.Count(t, "recovery", "powercut")
	for k := 0; k <= cuts; k++ {
		for _, rollback := range []bool{false, true} {
			cc.Check()
			root := fixture(t)
			f := fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
			if err := runPlan(t, root, f); err != nil && !fsx.IsCrash(err) {
				t.Fatal(err)
			}
			lost, err := f.PowerCut()
			if err != nil {
				t.Fatal(err)
			}
			if len(lost) > 0 {
				lostSome++
			}
			if _, err := recover.Run(ctx, root, recover.Options{Rollback: rollback}); err != nil {
				t.Fatalf("cut %d (after %v), lost %v: recover: %v", k, lastOp(f), lost, err)
			}
			want := final
			switch {
			case k < beginAt:
				want = initial
			case rollback && k < finishAt:
				want = initial
			}
			if d := fsxtest.Diff(want, fsxtest.Snapshot(t, root, skip)); len(d) > 0 {
				t.Fatalf("cut %d (after %v), rollback=%v, lost %v:\n%s", k, lastOp(f), rollback, lost, strings.Join(d, "\n"))
			}
			cc.Recovered()
		}
	}
	if lostSome == 0 {
		t.Fatal("the power-cut model never lost anything: it is not being exercised")
	}
	t.Logf("%d of %d cut points recovered after a power cut (%d runs lost un-fsynced changes)", cuts+1, cuts+1, lostSome)
}

// TestRunFromSubdirectoryFindsTheRepo: a hook started anywhere inside the
// repo recovers the whole repo, as the CLI does (nearest .swamp.yaml).
func TestRunFromSubdirectoryFindsTheRepo(t *testing.T) {
	root := fixture(t)
	if err := runPlan(t, root, fsx.NewFault(fsx.Real()).CrashAfter(measure(t).beginAt+1)); err != nil && !fsx.IsCrash(err) {
		t.Fatal(err)
	}
	sub := filepath.Join(root, ".swamp", "keep")
	rep, err := recover.Run(context.Background(), sub, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Repo != root || !rep.JournalExists || rep.Finished != 1 {
		t.Fatalf("from %s: want the open intent of %s finished, got %+v", sub, root, rep)
	}
	if _, err := os.Stat(filepath.Join(root, "dst", "a", "latest")); err != nil {
		t.Fatalf("the plan was not finished: %v", err)
	}
}

// TestRecoveryLogsItsSteps: recover.Run with a Logger at level Debug logs
// the interrupted intent it drives — one record per step with the intent
// id, kind, observation and outcome — forward (finishing it) and backward
// (undoing it).
func TestRecoveryLogsItsSteps(t *testing.T) {
	cut := measure(t).beginAt + 1
	for _, rollback := range []bool{false, true} {
		root := fixture(t)
		if err := runPlan(t, root, fsx.NewFault(fsx.Real()).CrashAfter(cut)); err != nil && !fsx.IsCrash(err) {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		rep, err := recover.Run(context.Background(), root, recover.Options{Common: host.Common{JournalLockTimeout: time.Second, Logger: log}, Rollback: rollback})
		if err != nil || len(rep.Intents) != 1 {
			t.Fatalf("rollback=%v: %+v %v", rollback, rep, err)
		}
		id := float64(rep.Intents[0].ID)
		steps, outcomes, settled := 0, map[string]int{}, ""
		dec := json.NewDecoder(&buf)
		for dec.More() {
			var rec map[string]any
			if err := dec.Decode(&rec); err != nil {
				t.Fatal(err)
			}
			if rec["intent"] != id {
				t.Errorf("rollback=%v: a record of another intent: %v", rollback, rec)
			}
			switch rec["msg"] {
			case "step":
				steps++
				if rec["kind"] == nil || rec["observed"] == nil {
					t.Errorf("rollback=%v: step record without kind or observation: %v", rollback, rec)
				}
				outcomes[rec["outcome"].(string)]++
			case "intent settled":
				settled, _ = rec["status"].(string)
			}
		}
		want, did := "done", "applied"
		if rollback {
			want, did = "rolled-back", "undone"
		}
		if steps != len(renamePlan(root).Steps) || settled != want || outcomes[did] == 0 {
			t.Errorf("rollback=%v: %d step records (plan has %d), settled %q, outcomes %v", rollback, steps, len(renamePlan(root).Steps), settled, outcomes)
		}
	}
}
