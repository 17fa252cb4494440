package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// TestRecoverUnderSwampsLock: `swampj recover` finishes an interrupted
// write only under swamp's lock on that model. While a live process holds
// it, recover exits 75 (lock_timeout) and changes nothing; once it is
// free, recover finishes the write.
func TestRecoverUnderSwampsLock(t *testing.T) {
	dir := newRepo(t)
	load := func(dir string) *repo.Repo {
		r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, err := repo.ParseAddress("command/shell/" + dataModel + "/result")
	if err != nil {
		t.Fatal(err)
	}
	write := func(r *repo.Repo, fsys fsx.FS, content string) error {
		_, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: a, Content: strings.NewReader(content)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsys}})
		return err
	}
	// Where version 2's publish rename falls, from a probe run.
	probeRepo := load(newRepo(t))
	probe := fsx.NewFault(fsx.Real())
	if err := write(probeRepo, fsx.Real(), "v1"); err != nil {
		t.Fatal(err)
	}
	if err := write(probeRepo, probe, "v2"); err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, op := range probe.Trace() {
		if op.Kind == "rename-noreplace" {
			cut = op.N
			break
		}
	}
	if cut == 0 {
		t.Fatal("no publish rename in the probe run")
	}

	// Version 2 is published, then this "process" dies: its model lock
	// stays behind, held by a pid that is alive (this test) — to the
	// binary, a swamp writer still at work on the model.
	r := load(dir)
	if err := write(r, fsx.Real(), "v1"); err != nil {
		t.Fatal(err)
	}
	if err := write(r, fsx.NewFault(fsx.Real()).CrashAfter(cut), "v2"); !fsx.IsCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	lockPath := lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID)
	if _, err := os.Stat(lockPath); err != nil {
		t.Fatalf("the crashed write left no lock: %v", err)
	}
	latest := filepath.Join(r.DataRoot, "command", "shell", dataModel, "result", "latest")

	res := swampjEnv(t, dir, []string{"SWAMP_LOCK_TIMEOUT_MS=300"}, nil, "recover", "--json")
	if res.code != 75 {
		t.Fatalf("recover under a live lock: exit %d, want 75\n%s", res.code, res.stderr)
	}
	if code, msg := errCode(t, res); code != "lock_timeout" || !strings.Contains(msg, lockPath) {
		t.Fatalf("error %s: %s", code, msg)
	}
	if b, _ := os.ReadFile(latest); string(b) != "1" {
		t.Fatalf("latest moved to %q under swamp's lock", b)
	}

	if err := os.Remove(lockPath); err != nil { // the writer is done
		t.Fatal(err)
	}
	mustOK(t, swampj(t, dir, "recover"), "recover after the lock is free")
	if b, _ := os.ReadFile(latest); string(b) != "2" {
		t.Fatalf("latest = %q after recovery, want 2", b)
	}
}
