package main

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A signal ends a command in bounded time whatever it waits on. recover
// waiting for the journal another process holds does not watch its
// context there; the first SIGTERM cancels it, and 10 s later the process
// exits 130 by itself; a second signal ends it at once.
func TestSignalEndsACommandBlockedOnTheJournal(t *testing.T) {
	dir := newRepo(t)
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", "command/shell/"+dataModel+"/result"), "write")
	hold := exec.Command(binary, "journal", "hold", "--for", "60s")
	hold.Dir = dir
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hold.Process.Kill(); hold.Wait() }()
	time.Sleep(500 * time.Millisecond)

	for _, second := range []bool{false, true} {
		cmd := exec.Command(binary, "recover", "--lock-timeout", "60s")
		cmd.Dir = dir
		var se bytes.Buffer
		cmd.Stderr = &se
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // waiting on the journal by now
		start := time.Now()
		cmd.Process.Signal(syscall.SIGTERM)
		if second {
			time.Sleep(200 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGTERM)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("second signal %v: recover still running 20 s after SIGTERM", second)
		}
		took := time.Since(start)
		if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(se.String(), "stopping now") {
			t.Fatalf("second signal %v: exit %d after %s, want %d saying it stops now:\n%s", second, code, took, exitInterrupted, se.String())
		}
		if second && took > 5*time.Second {
			t.Fatalf("a second signal took %s to end it", took)
		}
		if !second && (took < stopGrace-time.Second || took > stopGrace+5*time.Second) {
			t.Fatalf("after one signal it ended after %s, want about %s", took, stopGrace)
		}
	}
}
