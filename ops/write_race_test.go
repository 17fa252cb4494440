package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// A writer and a structural change do not interleave: the writer
// waits while a live process holds swamp's global datastore lock, and a
// write to data not migrated yet is refused before anything is journaled.

func raceWrite(t *testing.T, r *repo.Repo, addr, content string, timeout time.Duration) error {
	t.Helper()
	a, err := repo.ParseAddress(addr)
	if err != nil {
		t.Fatal(err)
	}
	_, err = write.WriteVersions(migCtx, r, []write.VersionWrite{{Address: a, Content: strings.NewReader(content)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: timeout}})
	return err
}

// liveGlobalLock writes swamp's global lock as a live foreign process holds
// it (pid 1 of this host, fresh), and returns its path.
func liveGlobalLock(t *testing.T, r *repo.Repo) string {
	t.Helper()
	host, _ := os.Hostname()
	p := lock.GlobalPath(r.Base, r.Namespace)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	info := lock.Info{Holder: "swamp@" + host, Hostname: host, Pid: 1, AcquiredAt: time.Now().UTC().Truncate(time.Millisecond), TTLMs: 30000, Nonce: "structural"}
	if err := os.WriteFile(p, info.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteWaitsForGlobalLock(t *testing.T) {
	dir := migFixture{nsLayout: true, catalogStamp: migNS, manifest: true}.build(t)
	r := migLoad(t, dir)
	g := liveGlobalLock(t, r)

	// Held the whole time: the lock timeout, and no per-model lock (nor
	// its parent directories) was created.
	err := raceWrite(t, r, "command/shell/m7/out", "x", 300*time.Millisecond)
	var te *lock.TimeoutError
	if !errors.As(err, &te) || te.Path != g {
		t.Fatalf("want a lock timeout naming %s, got %v", g, err)
	}
	if migExists(filepath.Join(dir, ".swamp", migNS, "data", "command", "shell", "m7")) {
		t.Fatal("a writer waiting for the global lock must not create its model lock's directories")
	}

	// Released part way: the write goes on after it.
	go func() {
		time.Sleep(400 * time.Millisecond)
		_ = os.Remove(g)
	}()
	start := time.Now()
	if err := raceWrite(t, r, "command/shell/m7/out", "after", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 350*time.Millisecond {
		t.Fatal("the write did not wait for the global lock")
	}
	got, err := os.ReadFile(filepath.Join(dir, ".swamp", migNS, "data", "command", "shell", "m7", "out", "1", "raw"))
	if err != nil || string(got) != "after" {
		t.Fatalf("raw: %q, %v", got, err)
	}
}

func TestWriteRefusesDataNotMigrated(t *testing.T) {
	// Namespace set, data still solo (migFixture without nsLayout).
	dir := migFixture{catalogStamp: "", manifest: true}.build(t)
	r := migLoad(t, dir)
	err := raceWrite(t, r, "command/shell/m1/out", "x", time.Second)
	var ue *write.UnmigratedWriteError
	if !errors.As(err, &ue) || ue.Code() != "unmigrated_data" || !strings.Contains(err.Error(), "Migrate the data into the namespace first") {
		t.Fatalf("want an unmigrated-data refusal, got %v", err)
	}
	if migExists(filepath.Join(dir, ".swamp", migNS, "data")) || migExists(r.JournalPath) {
		t.Fatal("a refused write must create nothing: no lock directories under the namespace, no journal")
	}
	// A model with no data at the solo path is written into the namespace.
	if err := raceWrite(t, r, "command/shell/new/out", "x", time.Second); err != nil {
		t.Fatal(err)
	}
	// Once migrated, the model is written again.
	mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	if err := raceWrite(t, migLoad(t, dir), "command/shell/m1/out", "v3", time.Second); err != nil {
		t.Fatal(err)
	}
}
