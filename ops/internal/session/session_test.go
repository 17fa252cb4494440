package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	"github.com/swampj/swampj/ops/internal/session"
)

var ctx = context.Background()

// opts is the journal's options in every test: a short lock wait, so a
// held lock shows as a timeout quickly.
var opts = host.Common{JournalLockTimeout: 300 * time.Millisecond, Command: []string{"session-test"}}

// repoFixture is a repo directory with a data root holding one item
// (src/a with a version) and a file to move; it returns the repo, its data
// root and its journal path.
func repoFixture(t *testing.T) (root, dataRoot, journalPath string) {
	t.Helper()
	root = t.TempDir()
	fsxtest.WriteFiles(t, root, map[string]string{
		".swamp.yaml":                       "swampVersion: test\n",
		".swamp/data/t/m/d/1/raw":           "one",
		".swamp/data/t/m/d/1/metadata.yaml": "version: 1\n",
		".swamp/data/t/m/d/latest":          "1",
		".swamp/data/t/m/x/1/raw":           "ex",
		".swamp/data/t/m/x/latest":          "1",
	})
	return root, filepath.Join(root, ".swamp", "data"), filepath.Join(root, ".swamp", "_journal.db")
}

// movePlan moves item x to a new model directory n: a mkdir, a rename and
// the barrier that makes them durable.
func movePlan(dataRoot string) *journal.Intent {
	return &journal.Intent{Kind: "test", Summary: "move x to n", Steps: []journal.Step{
		{Kind: protocol.KindMkdir, Path: filepath.Join(dataRoot, "t", "n")},
		{Kind: protocol.KindRename, Path: filepath.Join(dataRoot, "t", "m", "x"), To: filepath.Join(dataRoot, "t", "n", "x")},
		{Kind: engine.KindBarrier},
	}}
}

func exists(t *testing.T, p string) bool {
	t.Helper()
	_, err := os.Lstat(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A session holds swampj's repo lock from Open to Close: nobody else opens
// the journal meanwhile, not even to look. Close is idempotent.
func TestOpenHoldsTheRepoLockUntilClose(t *testing.T) {
	_, _, jp := repoFixture(t)
	s, err := session.Open(opts, jp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := session.Open(opts, jp); !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("second Open while the first session runs: %v, want a lock timeout", err)
	}
	if _, _, err := session.InspectState(opts, jp); !errors.Is(err, journal.ErrLockTimeout) {
		t.Fatalf("InspectState while a session runs: %v, want a lock timeout", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	s2, err := session.Open(opts, jp)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

// Inspect is for commands that only look: where there is no journal it
// creates none.
func TestInspectCreatesNoJournal(t *testing.T) {
	_, _, jp := repoFixture(t)
	j, open, err := session.Inspect(opts, jp)
	if err != nil || j != nil || open != nil {
		t.Fatalf("Inspect without a journal = %v, %v, %v; want nothing", j, open, err)
	}
	if err := j.Close(); err != nil { // a nil journal's Close is a no-op
		t.Fatal(err)
	}
	in, stale, err := session.InspectState(opts, jp)
	if err != nil || in != nil || stale != nil {
		t.Fatalf("InspectState without a journal = %v, %v, %v; want nothing", in, stale, err)
	}
	ents, err := os.ReadDir(filepath.Dir(jp))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "_journal") {
			t.Fatalf("a look created %s", e.Name())
		}
	}
}

// InspectState reports the open intents and the stale-catalog mark of a
// journal a crashed process left, and lets the journal go again.
func TestInspectStateReportsOpenIntentsAndTheStaleMark(t *testing.T) {
	root, dataRoot, jp := repoFixture(t)
	j, err := journal.Open(fsx.Real(), jp, session.JournalOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	id, err := j.Begin(movePlan(dataRoot))
	if err != nil {
		t.Fatal(err)
	}
	catalogPath := filepath.Join(root, ".swamp", "data", "_catalog.db")
	if err := j.MarkCatalogStale(id, catalogPath, "the catalog was read-only"); err != nil {
		t.Fatal(err)
	}
	j.Abandon() // the process died

	open, stale, err := session.InspectState(opts, jp)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].ID != id || open[0].Summary != "move x to n" {
		t.Fatalf("open intents = %+v, want intent %d", open, id)
	}
	if stale == nil || !strings.Contains(fmt.Sprintf("%+v", *stale), "the catalog was read-only") {
		t.Fatalf("stale mark = %+v, want the reason recorded", stale)
	}
	// It looked and let go: a session opens at once.
	s, err := session.Open(opts, jp)
	if err != nil {
		t.Fatalf("Open after InspectState: %v", err)
	}
	_ = s.Close()
	// Nothing was done to the data by looking.
	if !exists(t, filepath.Join(dataRoot, "t", "m", "x", "latest")) || exists(t, filepath.Join(dataRoot, "t", "n")) {
		t.Fatal("InspectState changed the data")
	}
}

// mkdirPlan creates the model directory o: the session's second intent.
func mkdirPlan(dataRoot string) *journal.Intent {
	return &journal.Intent{Kind: "test", Summary: "make o", Steps: []journal.Step{
		{Kind: protocol.KindMkdir, Path: filepath.Join(dataRoot, "t", "o")},
		{Kind: engine.KindBarrier},
	}}
}

// A session whose process model crashes is abandoned, not closed: Close
// commits nothing more (not even the done mark of the intent the session
// finished before the crash) and returns nil, and the lock is free. The
// next session finishes what was recorded, from what the disk shows,
// whatever operation the crash cut: the data is as before both intents,
// after the first, or after both.
func TestCrashedSessionIsAbandonedAndTheNextOneFinishesItsIntents(t *testing.T) {
	_, dataRoot0, jp0 := repoFixture(t)
	count := fsx.NewFault(fsx.Real())
	runCutAfter(t, -1, count, jp0, dataRoot0)
	total := count.Ops()
	if total < 8 {
		t.Fatalf("two intents of five steps issued %d operations", total)
	}

	for k := 0; k < total; k++ {
		t.Run(fmt.Sprint("cut", k), func(t *testing.T) {
			_, dataRoot, jp := repoFixture(t)
			runCutAfter(t, k, fsx.NewFault(fsx.Real()).CrashAfter(k), jp, dataRoot)

			next, err := session.Open(opts, jp)
			if err != nil {
				t.Fatalf("Open after the crash: %v", err)
			}
			outs, err := next.FinishOpen(ctx, &engine.Env{FS: fsx.Real()})
			if err != nil {
				t.Fatal(err)
			}
			if err := next.Close(); err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				if o.Status != journal.StatusDone {
					t.Fatalf("outcome %+v, want finished", o)
				}
			}
			moved := exists(t, filepath.Join(dataRoot, "t", "n", "x", "latest"))
			left := exists(t, filepath.Join(dataRoot, "t", "m", "x"))
			made := exists(t, filepath.Join(dataRoot, "t", "o"))
			if moved == left || (made && !moved) {
				t.Fatalf("after recovery: x moved %v, x left %v, o made %v: not a state of the plan", moved, left, made)
			}
			again, _, err := session.InspectState(opts, jp)
			if err != nil || len(again) != 0 {
				t.Fatalf("open intents after finishing: %v, %v", again, err)
			}
		})
	}
}

// runCutAfter runs movePlan and then mkdirPlan in one session on fsys, a
// Fault whose process model dies after k operations (k < 0: never). The
// cut may fall in Open, in either Execute (the session then notes its
// crash, and its Close, abandoning, returns nil) or in Close (which
// commits the done marks).
func runCutAfter(t *testing.T, k int, fsys *fsx.Fault, jp, dataRoot string) {
	t.Helper()
	c := opts
	c.FS = fsys
	s, err := session.Open(c, jp)
	if err != nil {
		if !fsx.IsCrash(err) {
			t.Fatalf("Open cut after %d operations: %v", k, err)
		}
		return
	}
	env := &engine.Env{FS: fsys}
	_, err = s.Execute(ctx, env, movePlan(dataRoot), nil)
	if err == nil {
		_, err = s.Execute(ctx, env, mkdirPlan(dataRoot), nil)
	}
	if err == nil {
		if err := s.Close(); err != nil && (k < 0 || !fsx.IsCrash(err)) {
			t.Fatalf("Close cut after %d operations: %v", k, err)
		}
		return
	}
	if !fsx.IsCrash(err) {
		t.Fatalf("Execute cut after %d operations: %v, want the crash", k, err)
	}
	if !s.Crashed() {
		t.Fatal("the session did not note its crash")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close of a crashed session: %v, want nil (abandoned)", err)
	}
}

// OpenForWrite finishes what an earlier writer left open, then removes the
// staging a writer that died before its intent was durable left (its owner
// is gone), and leaves the staging of a live writer alone.
func TestOpenForWriteFinishesOpenIntentsAndSweepsOrphanStages(t *testing.T) {
	_, dataRoot, jp := repoFixture(t)
	item := filepath.Join(dataRoot, "t", "m", "d")

	deadToken, release := session.NewOwnerToken()
	release() // that write returned: its owner is gone
	orphan := filepath.Join(item, session.StageName(2, deadToken))
	liveToken, stillRunning := session.NewOwnerToken()
	defer stillRunning()
	live := filepath.Join(item, session.StageName(3, liveToken))
	orphanLatest := filepath.Join(item, session.LatestTempName(deadToken))
	fsxtest.WriteFiles(t, dataRoot, map[string]string{
		filepath.Join("t", "m", "d", session.StageName(2, deadToken), "raw"): "never published",
		filepath.Join("t", "m", "d", session.StageName(3, liveToken), "raw"): "being written",
		filepath.Join("t", "m", "d", session.LatestTempName(deadToken)):      "2",
	})

	j, err := journal.Open(fsx.Real(), jp, session.JournalOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	id, err := j.Begin(movePlan(dataRoot))
	if err != nil {
		t.Fatal(err)
	}
	j.Abandon() // the writer died with its intent open

	s, outs, removed, err := session.OpenForWrite(ctx, fsx.Real(), jp, session.JournalOptions(opts), &engine.Env{FS: fsx.Real()}, dataRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Journal().Shared() {
		t.Error("OpenForWrite's session does not hold the journal shared")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].ID != id || outs[0].Status != journal.StatusDone {
		t.Fatalf("outcomes = %+v, want intent %d finished", outs, id)
	}
	if !exists(t, filepath.Join(dataRoot, "t", "n", "x", "latest")) {
		t.Fatal("the open intent's move was not finished")
	}
	want := map[string]bool{orphan: true, orphanLatest: true}
	if len(removed) != len(want) || !want[removed[0]] || !want[removed[1]] {
		t.Fatalf("removed = %v, want %v", removed, want)
	}
	if exists(t, orphan) || exists(t, orphanLatest) {
		t.Fatal("the orphan staging is still there")
	}
	if !exists(t, filepath.Join(live, "raw")) {
		t.Fatal("a live writer's staging was removed")
	}
	if !exists(t, filepath.Join(item, "1", "raw")) || !exists(t, filepath.Join(item, "latest")) {
		t.Fatal("a published version was touched")
	}

	// The sweep happens once per crash: the mark is cleared, so a second
	// open walks nothing and removes nothing, even a new orphan.
	fsxtest.WriteFiles(t, dataRoot, map[string]string{filepath.Join("t", "m", "d", session.StageName(4, deadToken), "raw"): "x"})
	s, outs, removed, err = session.OpenForWrite(ctx, fsx.Real(), jp, session.JournalOptions(opts), &engine.Env{FS: fsx.Real()}, dataRoot)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	if len(outs) != 0 || len(removed) != 0 {
		t.Fatalf("second open after a clean close: outcomes %+v, removed %v; want none", outs, removed)
	}
}

// An owner token names this process and host: a staging name carrying it
// is gone once its write has returned; a name from another host, or one
// without an owner, is never gone; one of a process that has exited is.
func TestStageOwnerGone(t *testing.T) {
	token, release := session.NewOwnerToken()
	name := session.StageName(5, token)
	pid, host, ok := session.StageOwner(name)
	if !ok || pid != os.Getpid() || host == "" {
		t.Fatalf("StageOwner(%q) = %d, %q, %v", name, pid, host, ok)
	}
	if p, h, ok := session.StageOwner(session.LatestTempName(token)); !ok || p != pid || h != host {
		t.Fatalf("StageOwner of the latest temp = %d, %q, %v", p, h, ok)
	}
	if session.StageOwnerGone(name) {
		t.Fatal("the staging of a write still running is gone")
	}
	release()
	if !session.StageOwnerGone(name) || !session.StageOwnerGone(session.LatestTempName(token)) {
		t.Fatal("the staging of a write that returned is not gone")
	}

	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("no process to outlive: %v", err)
	}
	dead := fmt.Sprintf("%d-%s-0badcafe", cmd.Process.Pid, host)
	if !session.StageOwnerGone(session.StageName(1, dead)) {
		t.Error("the staging of an exited process is not gone")
	}
	other := fmt.Sprintf("%d-%s-0badcafe", cmd.Process.Pid, "ffffffff")
	if host == "ffffffff" {
		other = fmt.Sprintf("%d-%s-0badcafe", cmd.Process.Pid, "00000000")
	}
	for _, n := range []string{session.StageName(1, other), session.StagePrefix + "1", ".swampj-stage-1-x-y", "3", "latest"} {
		if session.StageOwnerGone(n) {
			t.Errorf("%q is gone: another host's, or without an owner", n)
		}
	}
}

// openHalfDone leaves movePlan's intent open in the journal, as a process
// that died after its first step (the mkdir) leaves it.
func openHalfDone(t *testing.T, dataRoot, jp string) uint64 {
	t.Helper()
	j, err := journal.Open(fsx.Real(), jp, session.JournalOptions(opts))
	if err != nil {
		t.Fatal(err)
	}
	id, err := j.Begin(movePlan(dataRoot))
	if err != nil {
		t.Fatal(err)
	}
	j.Abandon()
	if err := os.Mkdir(filepath.Join(dataRoot, "t", "n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return id
}

// A preview observes each step of each open intent, in the direction a
// recovery would take, and changes nothing; a step the disk matches in
// neither state is where the run would stop.
func TestPreviewOpenObservesAndChangesNothing(t *testing.T) {
	_, dataRoot, jp := repoFixture(t)
	id := openHalfDone(t, dataRoot, jp)
	before := fsxtest.Snapshot(t, dataRoot, nil)
	s, err := session.Open(opts, jp)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	env := &engine.Env{FS: fsx.Real()}
	for _, rollback := range []bool{false, true} {
		outs, err := session.PreviewOpen(ctx, env, s.Journal(), rollback)
		if err != nil {
			t.Fatal(err)
		}
		want := journal.Forward
		if rollback {
			want = journal.Backward
		}
		if len(outs) != 1 || outs[0].ID != id || outs[0].Direction != want || len(outs[0].Steps) != 3 || outs[0].Blocked != nil {
			t.Fatalf("preview (rollback %v) = %+v, want intent %d going %s, three steps, nothing blocking", rollback, outs, id, want)
		}
		if st := outs[0].Steps; st[0].Observed == st[1].Observed {
			t.Errorf("the mkdir done and the rename not done are observed alike: %+v", st)
		}
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dataRoot, nil)); len(d) != 0 {
		t.Fatalf("the preview changed the data: %v", d)
	}

	// Something else at the rename's target while its source is still
	// there: the disk matches neither side of step 2.
	fsxtest.WriteFiles(t, dataRoot, map[string]string{"t/n/x/latest": "9"})
	outs, err := session.PreviewOpen(ctx, env, s.Journal(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].Blocked == nil || outs[0].Blocked.Index != 2 {
		t.Fatalf("preview of a conflict = %+v, want blocked at step 2", outs)
	}
	recOuts, err := session.RecoverOpen(ctx, env, s.Journal(), false)
	if !session.IsConflict(err) || len(recOuts) != 1 || recOuts[0].Status != journal.StatusOpen || recOuts[0].Error == "" {
		t.Fatalf("recovery of a conflict: %+v, %v; want a conflict, the intent still open with its error", recOuts, err)
	}
}

// Rolling back undoes what the intent's steps did, in reverse, and closes
// it as rolled back.
func TestRecoverOpenRollsBack(t *testing.T) {
	_, dataRoot, jp := repoFixture(t)
	before := fsxtest.Snapshot(t, dataRoot, nil)
	id := openHalfDone(t, dataRoot, jp)
	s, err := session.Open(opts, jp)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := session.RecoverOpen(ctx, &engine.Env{FS: fsx.Real()}, s.Journal(), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || outs[0].ID != id || outs[0].Status != journal.StatusRolledBack || outs[0].Direction != journal.Backward || outs[0].Undone == 0 {
		t.Fatalf("outcomes = %+v, want intent %d rolled back", outs, id)
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dataRoot, nil)); len(d) != 0 {
		t.Fatalf("the rollback did not restore the data: %v", d)
	}
}
