package lock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
)

func TestLiveModelLocks(t *testing.T) {
	fsys := fsx.Real()
	base := t.TempDir()
	now := time.Now()
	live := func(pid int) Info {
		return Info{Holder: "a@h", Hostname: "h", Pid: pid, AcquiredAt: now.Add(-time.Second), TTLMs: 30000, Nonce: "n"}
	}
	expired := Info{Hostname: "h", Pid: 7, AcquiredAt: now.Add(-31 * time.Second), TTLMs: 30000, Nonce: "old"}

	writeLock(t, ModelPath(base, "", "@acme/scanner", "m1"), live(101))
	writeLock(t, ModelPath(base, "", "aws/ec2/vpc", "m2"), live(102))
	writeLock(t, ModelPath(base, "", "t", "expired"), expired)
	writeLock(t, ModelPath(base, "", "t", "self"), live(999))
	writeLock(t, ModelPath(base, "infra", "t", "ns-model"), live(103))
	writeLock(t, ModelPath(base, "other", "t", "other-model"), live(104))
	writeLock(t, filepath.Join(base, "data", "t", ".lock"), live(105))       // type only, no model id
	writeLock(t, filepath.Join(base, "data", "t", "m", "x.lock"), live(106)) // not named .lock
	writeLock(t, filepath.Join(base, ".datastore.lock"), live(107))          // the global lock
	unparseable := ModelPath(base, "", "t", "broken")
	_ = os.WriteFile(unparseable, nil, 0o644)
	// Version directories and catalog files are walked past.
	_ = os.MkdirAll(filepath.Join(base, "data", "t", "m3", "result", "1"), 0o755)
	_ = os.WriteFile(filepath.Join(base, "data", "_catalog.db"), []byte("x"), 0o644)
	// A symlinked directory is not followed.
	elsewhere := t.TempDir()
	writeLock(t, ModelPath(elsewhere, "", "t", "linked"), live(108))
	_ = os.Symlink(filepath.Join(elsewhere, "data", "t"), filepath.Join(base, "data", "via-link"))

	got, err := LiveModelLocks(fsys, base, "", now, 999)
	if err != nil {
		t.Fatal(err)
	}
	if s := describe(got); s != "@acme/scanner/m1:101 aws/ec2/vpc/m2:102" {
		t.Errorf("solo: %s", s)
	}
	if got[0].Path != ModelPath(base, "", "@acme/scanner", "m1") {
		t.Errorf("path %s", got[0].Path)
	}

	// Namespaced: this namespace's locks, plus un-namespaced per-model locks
	// (older swamp kept those keys un-namespaced); never another namespace's.
	got, err = LiveModelLocks(fsys, base, "infra", now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := describe(got); s != "@acme/scanner/m1:101 aws/ec2/vpc/m2:102 t/self:999 t/ns-model:103" {
		t.Errorf("namespaced: %s", s)
	}

	// Missing base: nothing held.
	if got, err := LiveModelLocks(fsys, filepath.Join(base, "nope"), "", now, 0); err != nil || len(got) != 0 {
		t.Errorf("missing base: %v %v", got, err)
	}
}

func describe(hs []Held) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.Type+"/"+h.ModelID+":"+strconv.Itoa(h.Info.Pid))
	}
	return strings.Join(parts, " ")
}

func TestWaitNoLiveModelLocks(t *testing.T) {
	fsys := fsx.Real()
	base := t.TempDir()
	path := ModelPath(base, "", "t", "m1")
	writeLock(t, path, Info{Holder: "bob@box", Hostname: "box", Pid: 4242, AcquiredAt: time.Now(), TTLMs: 30000, Nonce: "n"})

	start := time.Now()
	err := WaitNoLiveModelLocks(context.Background(), fsys, base, "", 0, 200*time.Millisecond, 30*time.Millisecond)
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) || te.Path != path || te.Holder.Pid != 4242 {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "bob@box") || time.Since(start) < 200*time.Millisecond {
		t.Errorf("message %q after %v", err, time.Since(start))
	}

	// Released while waiting: returns nil.
	go func() {
		time.Sleep(80 * time.Millisecond)
		_ = os.Remove(path)
	}()
	if err := WaitNoLiveModelLocks(context.Background(), fsys, base, "", 0, 2*time.Second, 20*time.Millisecond); err != nil {
		t.Errorf("after release: %v", err)
	}
}
