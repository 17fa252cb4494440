package journal

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// A wrapped run's record survives a reopen while open, closes once, and a
// closed record keeps its outcome; Runs(false) lists only open ones.
func TestWrappedRunRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".swamp", "_journal.db")
	j := openT(t, path)
	log := RunLogPath(path, time.Now(), 42)
	id, err := j.BeginRun(&Run{Command: []string{"swamp", "serve"}, PID: 42, Started: time.Now(), Log: log, Guarded: true})
	if err != nil || id == 0 {
		t.Fatalf("BeginRun: %d %v", id, err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j = openT(t, path)
	runs, err := j.Runs(false)
	if err != nil || len(runs) != 1 || runs[0].ID != id || !runs[0].Open() || runs[0].Log != log {
		t.Fatalf("open runs after reopen: %+v %v", runs, err)
	}
	if r, err := j.RunByLog(log); err != nil || r == nil || r.ID != id {
		t.Fatalf("RunByLog: %+v %v", r, err)
	}
	if err := j.CloseRun(id, "exited 0"); err != nil {
		t.Fatal(err)
	}
	if err := j.CloseRun(id, "again"); err != nil {
		t.Fatal(err)
	}
	if runs, _ := j.Runs(false); len(runs) != 0 {
		t.Fatalf("a closed run is listed as open: %+v", runs)
	}
	all, _ := j.Runs(true)
	if len(all) != 1 || all[0].Open() || all[0].Outcome != "exited 0" {
		t.Fatalf("closed run: %+v", all)
	}
	j.Close()
}

// RunLogs finds the change logs beside the journal and nothing else;
// RunLive is true exactly while a process holds the log's flock, and the
// kernel's release at a process's death makes it false.
func TestRunLogLiveness(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "_journal.db")
	log := RunLogPath(path, time.Now(), 7)
	for _, p := range []string{log, path + ".lock", filepath.Join(dir, "other")} {
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := RunLogs(nil, path)
	if err != nil || len(logs) != 1 || logs[0] != log {
		t.Fatalf("RunLogs: %v %v", logs, err)
	}
	if RunLive(log) {
		t.Fatal("a log nobody holds is live")
	}
	// Another process holds it: flock(1) from util-linux, if present.
	flock, err := exec.LookPath("flock")
	if err != nil {
		f, _ := os.Open(log)
		if err := HoldRunLog(f); err != nil {
			t.Fatal(err)
		}
		if !RunLive(log) {
			t.Fatal("a held log is not live")
		}
		f.Close()
	} else {
		holder := exec.Command(flock, "-x", "-o", log, "sleep", "30")
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !RunLive(log) {
			if time.Now().After(deadline) {
				t.Fatal("a log held by a live process is not live")
			}
			time.Sleep(5 * time.Millisecond)
		}
		holder.Process.Kill()
		holder.Wait()
	}
	// flock(1) forks its command and closes the lock's descriptor in the
	// child only before exec: killed early, that child can hold it a
	// moment longer. The kernel releases the lock with the last
	// descriptor, so the log stops being live within that moment.
	deadline := time.Now().Add(5 * time.Second)
	for RunLive(log) {
		if time.Now().After(deadline) {
			t.Fatal("the log is live after its holder is gone")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
