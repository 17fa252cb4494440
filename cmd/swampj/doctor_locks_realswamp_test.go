package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/lock"
)

// TestRealSwampDeadLocksAndRecords, with the real swamp: a
// zero-byte model lock (what a power cut between swamp's create and write
// leaves) and a torn datastore lock make swamp exit 75, a zero-byte output
// record breaks `swamp model output search`; `swampj doctor` names all
// three, `--repair --confirm` moves them to quarantine and leaves a live
// process's lock alone; swamp then runs.
func TestRealSwampDeadLocksAndRecords(t *testing.T) {
	needSwamp(t)
	t.Setenv("SWAMP_LOCK_TIMEOUT_MS", "2000")
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init"}, {"model", "create", "command/shell", "m1"}, {"model", "create", "command/shell", "m2"},
		{"model", "method", "run", "m1", "execute", "--input", "run=echo hi"},
	} {
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	base := filepath.Join(dir, ".swamp")
	m1 := yamlID(t, filepath.Join(dir, "models", "command", "shell", "m1.yaml"))
	m2 := yamlID(t, filepath.Join(dir, "models", "command", "shell", "m2.yaml"))
	plant := func(p string, data []byte, age time.Duration) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	deadModel := lock.ModelPath(base, "", "command/shell", m1)
	// 40 s old: dead by both versions' rules (newer swamp holds an empty
	// lock for its 30 s TTL, swamp-format §13.3; 06b6147 waits on it forever).
	plant(deadModel, nil, 40*time.Second)
	global := lock.GlobalPath(base, "")
	plant(global, []byte("{\n  \"holder\": \"al"), time.Hour)
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	host, _ := os.Hostname()
	liveModel := lock.ModelPath(base, "", "command/shell", m2)
	liveRec := lock.Info{Holder: "op@" + host, Hostname: host, Pid: sleeper.Process.Pid, AcquiredAt: time.Now().UTC().Truncate(time.Millisecond),
		TTLMs: 3_600_000, Nonce: "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d"}.Encode()
	plant(liveModel, liveRec, 0)
	outs, _ := filepath.Glob(filepath.Join(base, "outputs", "command", "shell", "execute", "*.yaml"))
	if len(outs) == 0 {
		t.Fatal("swamp wrote no output record")
	}
	plant(outs[0], nil, time.Minute)

	// swamp is stuck.
	if r := swampCmd(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo again"); r.code != 75 {
		t.Fatalf("swamp model method run under a zero-byte lock: exit %d, want 75\n%s", r.code, tail(r.stderr, 800))
	}
	if r := swampCmd(t, dir, "data", "gc", "--json"); r.code != 75 {
		t.Fatalf("swamp data gc under a torn datastore lock: exit %d, want 75\n%s", r.code, tail(r.stdout+r.stderr, 800))
	}
	if r := swampCmd(t, dir, "model", "output", "search", "--json"); r.code == 0 {
		t.Fatalf("swamp model output search read a zero-byte record: %s", tail(r.stdout, 400))
	}

	// swampj names all three, and only those.
	r := swampj(t, dir, "doctor", "--json")
	if r.code != 1 {
		t.Fatalf("doctor: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Findings []struct{ Code, Path string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range rep.Findings {
		got[f.Path] = f.Code
	}
	want := map[string]string{deadModel: "lock_dead", global: "lock_dead", outs[0]: "record_unreadable"}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("doctor: %s: got %q, want %q (all: %v)", p, got[p], c, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("doctor found more than the three: %v", got)
	}

	if r := swampj(t, dir, "doctor", "--repair", "--confirm"); r.code != 0 {
		t.Fatalf("doctor --repair --confirm: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(liveModel); err != nil || string(b) != string(liveRec) {
		t.Fatalf("the live process's lock was touched: %q %v", b, err)
	}
	for _, p := range []string{deadModel, global, outs[0]} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there", p)
		}
	}
	if _, ok := swampOK(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo again"); !ok {
		t.FailNow()
	}
	if r, ok := swampOK(t, dir, "model", "output", "search", "--json"); ok && !strings.Contains(r.stdout, m1) {
		t.Errorf("output search after the repair does not list m1's run: %s", tail(r.stdout, 400))
	}
	// The structural side: a command that takes the datastore lock runs
	// (once the live holder of m2 has released its lock: swamp's drain
	// waits for live model locks, rightly).
	if err := os.Remove(liveModel); err != nil {
		t.Fatal(err)
	}
	if _, ok := swampOK(t, dir, "data", "gc", "--json"); !ok {
		t.Error("swamp data gc still blocked after the repair")
	}
	if r := swampj(t, dir, "doctor"); r.code != 0 {
		t.Errorf("doctor after the repair: exit %d\n%s", r.code, r.stdout)
	}
}
