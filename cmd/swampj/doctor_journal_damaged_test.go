package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/lock"
)

// A confirmed repair on a repo whose journal is damaged sets the journal
// aside as recover does (nothing deleted), repairs the data with a fresh
// journal, says so, and exits 0 when the data is then healthy.
func TestDoctorRepairSetsADamagedJournalAside(t *testing.T) {
	dir := newRepo(t)
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", "command/shell/"+dataModel+"/result"), "write")
	jpath := filepath.Join(dir, ".swamp", "_journal.db")
	garbage := make([]byte, 40000)
	for i := range garbage {
		garbage[i] = byte(i*7 + 3)
	}
	if err := os.WriteFile(jpath, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	r := swampj(t, dir, "doctor", "--repair", "--confirm")
	if r.code != 0 || !strings.Contains(r.stderr+r.stdout, "was damaged") || strings.Contains(r.stderr, "where the repo can be written") {
		t.Fatalf("doctor --repair --confirm on a damaged journal: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	aside, _ := filepath.Glob(jpath + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("the damaged journal was not set aside: %v", aside)
	}
	if b, err := os.ReadFile(aside[0]); err != nil || len(b) != len(garbage) {
		t.Fatalf("the set-aside journal is not the damaged bytes: %v", err)
	}
	if d := swampj(t, dir, "doctor"); d.code != 0 {
		t.Fatalf("doctor after: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
}

// Ctrl-C while recover waits for swamp's lock of the model an interrupted
// write touched: exit 130, a message that says it was interrupted and
// what to run, and the intent still open (the next recover finishes it).
func TestCtrlCWhileRecoverWaits(t *testing.T) {
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
	if !swampjKilledAt(t, dir, "rename-noreplace:1", []byte(`{"v":2}`), "data", "write", addr) {
		t.Fatal("the write was not killed")
	}
	host, _ := os.Hostname()
	held := lock.Info{Holder: "tester@" + host, Hostname: host, Pid: os.Getpid(), AcquiredAt: time.Now().UTC(), TTLMs: 60000, Nonce: "test-nonce"}
	lockPath := lock.ModelPath(filepath.Join(dir, ".swamp"), "", "command/shell", dataModel)
	fsxtest.WriteFiles(t, filepath.Dir(lockPath), map[string]string{filepath.Base(lockPath): string(held.Encode())})

	cmd := exec.Command(binary, "recover")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWAMP_LOCK_TIMEOUT_MS=60000")
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitSignalHandled(t, cmd.Process.Pid, 2)
	time.Sleep(500 * time.Millisecond)
	if code := interruptAndWait(t, cmd, &se, 15*time.Second); code != 130 || !strings.Contains(se.String(), "interrupted") ||
		!strings.Contains(se.String(), "'swampj recover'") {
		t.Fatalf("exit %d (want 130), stderr: %s", code, se.String())
	}
	os.Remove(lockPath)
	mustOK(t, swampj(t, dir, "recover"), "the next recover")
	if d := swampj(t, dir, "doctor"); d.code != 0 {
		t.Fatalf("doctor after: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
}
