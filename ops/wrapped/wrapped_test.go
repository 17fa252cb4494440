package wrapped_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/wrapped"
)

// The barrier starts commands through this executable (the trampoline).
func TestMain(m *testing.M) {
	wrapped.MaybeExec()
	code := m.Run()
	if bucketDir != "" {
		os.RemoveAll(bucketDir)
	}
	os.Exit(code)
}

func exampleRepo(t *testing.T) *repo.Repo {
	t.Helper()
	dir := t.TempDir()
	if _, err := example.Write(nil, dir); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(nil, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func needBarrier(t *testing.T) {
	t.Helper()
	if err := wrapped.Supported(); err != nil {
		t.Skipf("the write barrier cannot run here: %v", err)
	}
}

// runWrapped runs script under sh with the barrier and returns the doctor's
// scope of what it changed and the run.
func runWrapped(t *testing.T, r *repo.Repo, script string, env ...string) ([]string, *wrapped.Run) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = r.Dir
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	w, err := wrapped.Start(context.Background(), r, cmd, wrapped.Options{Common: host.Common{Command: []string{"sh", "-c", "test"}}, SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the wrapped command failed: %v\n%s", err, out.String())
	}
	scope, err := w.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close("test"); err != nil {
		t.Fatal(err)
	}
	return scope, w
}

// A data item created while the command runs, in directories that did not
// exist when it started, is covered: its rename waits for a barrier and
// the item is in the doctor's scope. A rename outside the roots is not.
func TestBarrierCoversDirectoriesCreatedDuringTheRun(t *testing.T) {
	needBarrier(t)
	r := exampleRepo(t)
	outside := t.TempDir()
	item := filepath.Join(r.DataRoot, "new", "type", "m9", "fresh")
	script := `set -e
mkdir -p "$ITEM/1"
printf hello > "$ITEM/1/.raw.tmp"
mv "$ITEM/1/.raw.tmp" "$ITEM/1/raw"
printf x > "$OUT/a"; mv "$OUT/a" "$OUT/b"`
	scope, w := runWrapped(t, r, script, "ITEM="+item, "OUT="+outside)
	if !slices.Contains(scope, item) {
		t.Fatalf("scope %q does not hold the item created during the run, %s", scope, item)
	}
	for _, s := range scope {
		if strings.HasPrefix(s, outside) {
			t.Fatalf("a path outside the datastore is in the scope: %s", s)
		}
	}
	if w.Syncs() < 1 {
		t.Fatalf("no barrier ran for a rename under the datastore")
	}
}

// Each stopped call's path is in the change log before the call returns to
// the command: the command itself reads it back right after its mv.
func TestChangeIsLoggedBeforeTheCallGoesOn(t *testing.T) {
	needBarrier(t)
	r := exampleRepo(t)
	item := filepath.Join(r.DataRoot, "command", "shell", "logged", "x")
	script := `set -e
mkdir -p "$ITEM/1"
printf y > "$ITEM/1/.t"
mv "$ITEM/1/.t" "$ITEM/1/raw"
grep -qx "$ITEM/1/raw" "$(ls "$JDIR"/_journal.db.run-* | head -1)" || { echo "not in the change log when mv returned"; exit 3; }`
	runWrapped(t, r, script, "ITEM="+item, "JDIR="+filepath.Dir(r.JournalPath))
}

// The barrier syncs before the call goes on: with a rename under the
// datastore, the file systems are synced once per stopped call, and a
// command that renames nothing under it costs no barrier.
func TestNoBarrierOutsideTheDatastore(t *testing.T) {
	needBarrier(t)
	r := exampleRepo(t)
	outside := t.TempDir()
	_, w := runWrapped(t, r, `for i in 1 2 3; do printf x > "$OUT/t$i"; mv "$OUT/t$i" "$OUT/f$i"; rm "$OUT/f$i"; done`, "OUT="+outside)
	if n := w.Syncs(); n != 0 {
		t.Fatalf("%d barrier(s) for changes outside every root", n)
	}
}

// A run whose wrapper died (its change log unlocked, its record open) is
// settled: the version it left torn goes to quarantine, latest names the
// last readable version again, the record is closed and its log removed.
func TestSettleRepairsWhatADeadRunChanged(t *testing.T) {
	r := exampleRepo(t)
	item, prev := someItem(t, r)
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
	deadRun(t, r, filepath.Join(torn, "raw"), filepath.Join(item, "latest"))

	if !wrapped.Pending(nil, r.JournalPath) {
		t.Fatal("a dead run is not pending")
	}
	settled, err := wrapped.Settle(context.Background(), r, wrapped.SettleOptions{Common: host.Common{JournalLockTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if len(settled) != 1 || len(settled[0].Moves) == 0 || settled[0].Remaining != 0 {
		t.Fatalf("settled %+v", settled)
	}
	if b, _ := os.ReadFile(filepath.Join(item, "latest")); strings.TrimSpace(string(b)) != prev {
		t.Fatalf("latest is %q after settling, want the last readable version %s", b, prev)
	}
	if _, err := os.Stat(torn); !os.IsNotExist(err) {
		t.Fatalf("the torn version is still in the item: %v", err)
	}
	if wrapped.Pending(nil, r.JournalPath) {
		t.Fatal("still pending after settling")
	}
	rep, err := doctor.Run(context.Background(), r, doctor.Options{})
	if err != nil || rep.Remaining != 0 {
		t.Fatalf("doctor after settling: %v %+v", err, rep.Findings)
	}
	j, err := journal.OpenReadOnly(nil, r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	runs, _ := j.Runs(true)
	if len(runs) != 1 || runs[0].Open() || !strings.Contains(runs[0].Outcome, "settled") {
		t.Fatalf("run records after settling: %+v", runs)
	}
}

// A live run is never settled by another process's command.
func TestSettleLeavesALiveRun(t *testing.T) {
	r := exampleRepo(t)
	item, _ := someItem(t, r)
	log := journal.RunLogPath(r.JournalPath, time.Now(), os.Getpid())
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := journal.HoldRunLog(f); err != nil {
		t.Fatal(err)
	}
	f.WriteString(filepath.Join(item, "latest") + "\n")
	if wrapped.Pending(nil, r.JournalPath) {
		t.Fatal("a live run is pending")
	}
	settled, err := wrapped.Settle(context.Background(), r, wrapped.SettleOptions{})
	if err != nil || len(settled) != 0 {
		t.Fatalf("settled a live run: %+v %v", settled, err)
	}
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("the live run's log is gone: %v", err)
	}
}

// deadRun leaves what a wrapper killed mid-run leaves: its record open and
// its change log, naming paths, with no process holding it.
func deadRun(t *testing.T, r *repo.Repo, paths ...string) {
	t.Helper()
	log := journal.RunLogPath(r.JournalPath, time.Now(), 999999)
	if err := os.WriteFile(log, []byte(strings.Join(paths, "\n")+"\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.BeginRun(&journal.Run{Command: []string{"swamp", "serve"}, PID: 999999, Started: time.Now(), Log: log, Guarded: true}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// someItem is an item of the example repo with at least one version, and
// the version its latest names.
func someItem(t *testing.T, r *repo.Repo) (string, string) {
	t.Helper()
	var found, latest string
	filepath.WalkDir(r.DataRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil || found != "" || d.Name() != "latest" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil {
			found, latest = filepath.Dir(p), strings.TrimSpace(string(b))
		}
		return nil
	})
	if found == "" {
		t.Fatal("no item with a latest in the example repo")
	}
	return found, latest
}
