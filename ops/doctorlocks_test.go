package ops_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
)

// dlLive starts a process that stays alive for the test and returns its pid.
func dlLive(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a helper process: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// dlRecord is a swamp lock record held by pid on this host, refreshed now.
func dlRecord(pid int) []byte {
	host, _ := os.Hostname()
	return lock.Info{Holder: "alice@" + host, Hostname: host, Pid: pid, AcquiredAt: time.Now().UTC().Truncate(time.Millisecond),
		TTLMs: 30000, Nonce: "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d"}.Encode()
}

// dlPlant writes a lock file and backdates it by age.
func dlPlant(t *testing.T, path string, data []byte, age time.Duration) {
	t.Helper()
	drWrite(t, path, data)
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func dlModelLock(r *repo.Repo, model string) string {
	return lock.ModelPath(r.Base, r.Namespace, drType, model)
}

// TestDoctorDeadLocks: a zero-byte per-model lock over a #3955 item (what a
// power cut leaves: swamp waits on it forever) and a torn datastore lock are
// findings; the repair moves both to quarantine and repairs the item in the
// same run — without waiting out the lock timeout — while a live process's
// lock and zero-byte locks younger than newer swamp's TTL (swamp-format §13.3: a holder
// between create and write, or mid-heartbeat) stay where they are, the
// 10 s-old one reported in flight.
func TestDoctorDeadLocks(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{dr3955()}})
	dead := dlModelLock(r, drModel)
	// 40 s old: past newer swamp's 30 s in-flight window for an empty lock
	// (swamp-format §13.3), so dead by both versions' rules.
	dlPlant(t, dead, nil, 40*time.Second)
	global := lock.GlobalPath(r.Base, r.Namespace)
	torn := []byte("{\n  \"holder\": \"alice@bu")
	dlPlant(t, global, torn, time.Hour)
	liveModel := "9a9a9a9a-0000-4000-8000-000000000001"
	live := dlModelLock(r, liveModel)
	dlPlant(t, live, dlRecord(dlLive(t)), 0)
	youngModel := "9a9a9a9a-0000-4000-8000-000000000002"
	young := dlModelLock(r, youngModel)
	dlPlant(t, young, nil, 0)
	// 10 s old: past 06b6147-era swampj's 5 s write window, within newer
	// swamp's TTL: in flight, never repaired.
	tenModel := "9a9a9a9a-0000-4000-8000-000000000004"
	ten := dlModelLock(r, tenModel)
	dlPlant(t, ten, nil, 10*time.Second)
	goneModel := "9a9a9a9a-0000-4000-8000-000000000003"
	gone := dlModelLock(r, goneModel)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	dlPlant(t, gone, dlRecord(cmd.Process.Pid), 0) // a pid that has exited

	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	var deadPaths []string
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeLockDead {
			deadPaths = append(deadPaths, f.Path)
		}
	}
	drWant(t, "dead locks", deadPaths, []string{global, dead, gone})
	if rep.Locks != 6 {
		t.Errorf("locks judged = %d, want 6", rep.Locks)
	}
	var inFlight []string
	for _, f := range rep.InFlight {
		if f.Lock == f.Path {
			inFlight = append(inFlight, f.Path)
		}
	}
	drWant(t, "locks in flight", inFlight, []string{young, ten})

	// A repair that waited on the dead lock would take the whole
	// LockTimeout (60 s); measured, the repair takes ~0.1 s. The bound,
	// 30 s, is far over ten times that and far under the timeout.
	start := time.Now()
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: 60 * time.Second, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("the repair took %s", took)
	if took > 30*time.Second {
		t.Errorf("the repair took %s: it waited on the dead lock", took)
	}
	if !rep.Clean() || rep.LockIntentID == 0 || rep.IntentID == 0 {
		t.Fatalf("repair: clean=%v lockIntent=%d intent=%d findings=%+v", rep.Clean(), rep.LockIntentID, rep.IntentID, rep.Findings)
	}
	for _, c := range rep.Checks {
		if !c.Passed || c.ID == "locks" && c.Fixed != 3 {
			t.Errorf("check after the repair: %+v", c)
		}
	}
	if len(rep.Checks) != 11 {
		t.Errorf("checks: %+v", rep.Checks)
	}
	if got := drRead(t, filepath.Join(drItemDir(r, "result"), "latest")); got != "3" {
		t.Errorf("latest = %q, want 3 (the item in the dead-locked model is repaired in the same run)", got)
	}
	for _, p := range []string{dead, global, gone} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there (%v)", p, err)
		}
	}
	qtop := filepath.Join(r.Base, ".swampj-quarantine", drStamp)
	if got := drRead(t, filepath.Join(qtop, "locks", ".datastore.lock")); got != string(torn) {
		t.Errorf("quarantined datastore lock = %q", got)
	}
	rel, _ := filepath.Rel(r.Base, dead)
	if _, err := os.Stat(filepath.Join(qtop, "locks", rel)); err != nil {
		t.Errorf("the dead model lock is not in quarantine: %v", err)
	}
	for _, p := range []string{live, young, ten} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was touched: %v", p, err)
		}
	}
	for _, m := range rep.Moves {
		if !strings.HasPrefix(m.To, qtop+string(filepath.Separator)) {
			t.Errorf("move %s -> %s is outside the run's one quarantine %s", m.From, m.To, qtop)
		}
	}
}

// TestDoctorInFlightVersion: a version above latest with raw but no
// metadata.yaml yet, in a model whose lock a live process holds, is a write
// in progress: it passes and is never quarantined. Once the holder is dead,
// the same version is a finding.
func TestDoctorInFlightVersion(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}}}}})
	v3 := filepath.Join(drItemDir(r, "result"), "3")
	drWrite(t, filepath.Join(v3, "raw"), []byte(`{"streaming":`))
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lp := dlModelLock(r, drModel)
	dlPlant(t, lp, dlRecord(cmd.Process.Pid), 0)

	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || len(rep.InFlight) != 1 || rep.InFlight[0].Version != 3 || rep.InFlight[0].Pid != cmd.Process.Pid {
		t.Fatalf("with a live holder: clean=%v inFlight=%+v findings=%+v", rep.Clean(), rep.InFlight, rep.Findings)
	}
	if !strings.Contains(rep.InFlight[0].Message, "in progress (model locked by pid") {
		t.Errorf("message %q", rep.InFlight[0].Message)
	}
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() {
		t.Fatalf("repair with a live holder: %+v %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(v3, "raw")); err != nil {
		t.Fatalf("the version in flight was touched: %v", err)
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "codes once the holder died", drCodes(rep), []string{"lock_dead@0/found", "version_unreadable@3/found"})
	if len(rep.InFlight) != 0 {
		t.Errorf("still in flight: %+v", rep.InFlight)
	}
}

// TestDoctorFindsEveryLockFileFindLockFilesFinds: the doctor finds lock
// files in the listings its walk and scan already made (listing only what
// they did not), and must find exactly the set lock.FindLockFiles finds by
// listing the tree itself — in model directories, in a type directory two
// levels down, inside an item, inside a version of an item without
// `latest`, and in a model with no items — and judge each one.
func TestDoctorFindsEveryLockFileFindLockFilesFinds(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{
		{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}}},
		{name: "nolatest", versions: []drVer{{n: 1}}},
	}})
	typeDir := filepath.Join(r.DataRoot, filepath.FromSlash(drType))
	places := []string{
		dlModelLock(r, drModel),
		filepath.Join(typeDir, ".lock"),                                    // @acme/scanner: two levels down
		filepath.Join(drItemDir(r, "result"), ".lock"),                     // inside an item
		filepath.Join(drItemDir(r, "nolatest"), "1", ".lock"),              // inside a version of an item without latest
		filepath.Join(drItemDir(r, "nolatest"), "1", "deeper", ".lock"),    // and below it
		dlModelLock(r, "9a9a9a9a-0000-4000-8000-000000000009"),             // a model with no items
		filepath.Join(r.DataRoot, "other", "kind", "not-a-model", ".lock"), // under directories that are no model
	}
	for _, p := range places {
		dlPlant(t, p, nil, time.Hour) // zero bytes, an hour old: dead
	}
	want, err := lock.FindLockFiles(fsx.Real(), r.Base, r.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	var wantPaths []string
	for _, f := range want {
		wantPaths = append(wantPaths, f.Path)
	}
	if len(wantPaths) != len(places) {
		t.Fatalf("the fixture: FindLockFiles finds %q, planted %q", wantPaths, places)
	}
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	var dead []string
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeLockDead {
			dead = append(dead, f.Path)
		}
	}
	drWant(t, "dead locks the doctor found", dead, wantPaths)
	if rep.Locks != len(want) {
		t.Errorf("locks judged = %d, want %d", rep.Locks, len(want))
	}
}
