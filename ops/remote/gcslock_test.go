package remote_test

// The GCS lock against a small in-test GCS JSON API on loopback that
// enforces ifGenerationMatch on every write and delete, as GCS does. The
// emulator of the shared stack (fake-gcs-server 1.56.1) ignores it on
// DELETE, so what rests on a conditional delete (a release never deletes a
// lock someone else took over; a stale break never deletes a renewed lock)
// is shown here; cmd/swampj/gcsstack_test.go runs the rest with the real
// swamp.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/remote/buckettest"
)

func gcsCache(t *testing.T, f *buckettest.FakeGCS) *remote.Cache {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "repo", ".swamp.yaml"), []byte(fmt.Sprintf(`repoId: %s
datastore:
  type: "@swamp/gcs-datastore"
  config:
    bucket: %q
    prefix: "team"
    apiEndpoint: %q
`, fxRepoID, f.Bucket, f.URL())))
	c, err := remote.Discover(filepath.Join(root, "repo"), remote.Options{Env: func(k string) string {
		if k == "SWAMP_HOME" {
			return filepath.Join(root, "swamphome")
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func lockHolder(t *testing.T, o *buckettest.GCSObject) remote.LockInfo {
	t.Helper()
	var li remote.LockInfo
	if o == nil || json.Unmarshal(o.Data, &li) != nil {
		t.Fatalf("no lock object: %+v", o)
	}
	return li
}

func noEnv(string) string { return "" }

func TestGCSLockByGeneration(t *testing.T) {
	f := buckettest.NewFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	if c.Type != remote.GCSType || c.GCS == nil || c.Bucket() != "swamp-test" || c.Prefix() != "team" {
		t.Fatalf("discovered %+v", c)
	}
	ctx := context.Background()
	release, err := remote.GCSLocker{Env: noEnv}.Lock(ctx, c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	o := f.Object("team/.datastore.lock")
	if li := lockHolder(t, o); li.TTLMs != 30000 || li.Nonce == "" || !strings.Contains(li.Holder, "swampj") {
		t.Errorf("lock body %+v", li)
	}
	// A second taker waits and gives up: the create is conditional.
	start := time.Now()
	_, err = remote.GCSLocker{Env: noEnv}.Lock(ctx, c, 1500*time.Millisecond)
	if !errors.Is(err, remote.ErrLockBusy) || time.Since(start) < time.Second {
		t.Fatalf("second Lock: %v after %s, want ErrLockBusy after waiting", err, time.Since(start))
	}
	if got := f.Object("team/.datastore.lock"); got == nil || got.Gen != o.Gen {
		t.Fatalf("the waiter changed the held lock: %+v", got)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if f.Object("team/.datastore.lock") != nil {
		t.Error("the released lock is still in the bucket")
	}
	if len(f.Auth()) != 0 {
		t.Errorf("credentials were sent to the apiEndpoint: %v", f.Auth())
	}
}

// A lock taken over while held (its holder stalled past the TTL and
// another process broke it) is not deleted by the late release.
func TestGCSLockReleaseSparesTakenOverLock(t *testing.T) {
	f := buckettest.NewFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	release, err := remote.GCSLocker{Env: noEnv}.Lock(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f.Steal("team/.datastore.lock", time.Now())
	err = release()
	if err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("release: %v, want a taken-over error", err)
	}
	if li := lockHolder(t, f.Object("team/.datastore.lock")); li.Nonce != "theirs" {
		t.Errorf("the other holder's lock was replaced or deleted: %+v", li)
	}
}

// A stale lock (older than its TTL) is broken, and only the generation
// that was judged stale is deleted.
func TestGCSLockBreaksStaleLock(t *testing.T) {
	f := buckettest.NewFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	f.Steal("team/.datastore.lock", time.Now().Add(-time.Minute))
	release, err := remote.GCSLocker{Env: noEnv}.Lock(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatalf("a stale lock was not broken: %v", err)
	}
	if li := lockHolder(t, f.Object("team/.datastore.lock")); li.Nonce == "theirs" {
		t.Errorf("still the stale holder's lock: %+v", li)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}

// The heartbeat renews by compare-and-swap: after a takeover it stops
// without overwriting the new holder's lock.
func TestGCSLockHeartbeatIsCompareAndSwap(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a heartbeat (LockTTL/3)")
	}
	f := buckettest.NewFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	release, err := remote.GCSLocker{Env: noEnv}.Lock(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := f.Object("team/.datastore.lock")
	time.Sleep(remote.LockTTL/3 + 2*time.Second)
	renewed := f.Object("team/.datastore.lock")
	if renewed == nil || renewed.Gen == first.Gen || lockHolder(t, renewed).Nonce != lockHolder(t, first).Nonce {
		t.Fatalf("no heartbeat: generation %d, was %d", renewed.Gen, first.Gen)
	}
	f.Steal("team/.datastore.lock", time.Now())
	time.Sleep(remote.LockTTL/3 + 2*time.Second)
	if li := lockHolder(t, f.Object("team/.datastore.lock")); li.Nonce != "theirs" {
		t.Errorf("the heartbeat overwrote the new holder's lock: %+v", li)
	}
	if err := release(); err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("release after the takeover: %v", err)
	}
	if li := lockHolder(t, f.Object("team/.datastore.lock")); li.Nonce != "theirs" {
		t.Errorf("the release deleted the new holder's lock: %+v", li)
	}
}

// The doctor's repair of a GCS cache takes the lock over GCS (no Lock
// option: the datastore's own) and turns off the generation fast path the
// GCS extension reads, leaving no S3 field behind.
func TestGCSRepairTakesTheGCSLock(t *testing.T) {
	f := buckettest.NewFakeGCS(t, "swamp-test")
	fx := newFixture(t, 3)
	write(t, filepath.Join(fx.repo, ".swamp.yaml"), []byte(fmt.Sprintf(`repoId: %s
datastore:
  type: "@swamp/gcs-datastore"
  config:
    bucket: swamp-test
    prefix: team
    apiEndpoint: %q
`, fxRepoID, f.URL())))
	write(t, filepath.Join(fx.cache, remote.SyncStateFile), []byte(`{
  "version": 2,
  "remoteIndexGeneration": "1796313861650551",
  "lastVerifiedAt": "2021-01-01T00:00:00.000Z",
  "localDirty": false,
  "dirtyPaths": [],
  "bulkInvalidated": false,
  "lazyPullActive": false,
  "dirtyPathsOverflowed": false
}`))
	c := fx.discover(t)
	ctx := context.Background()
	rep, err := ops.Doctor(ctx, c.Repo, doctor.Options{Env: fx.env})
	if err != nil || !rep.Cache.FastPath || !rep.Clean() {
		t.Fatalf("before: %v fast path %v %+v", err, rep.Cache.FastPath, rep.Findings)
	}
	if err := os.Truncate(filepath.Join(fx.cache, fxItem, "2", "raw"), 0); err != nil {
		t.Fatal(err)
	}
	rep, err = ops.Doctor(ctx, c.Repo, doctor.Options{Env: fx.env, Repair: true, Confirm: true})
	if err != nil || rep.IntentID == 0 || len(rep.Moves) != 1 || rep.Cache.Lock != ".datastore.lock" {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	if f.Writes() == 0 {
		t.Error("the repair never took the lock in the bucket")
	}
	if f.Object("team/.datastore.lock") != nil {
		t.Error("the repair left its lock in the bucket")
	}
	data, err := os.ReadFile(c.SyncStatePath())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["remoteIndexGeneration"] != "" {
		t.Errorf("remoteIndexGeneration %v, want it emptied", m["remoteIndexGeneration"])
	}
	if _, ok := m["remoteIndexETag"]; ok {
		t.Errorf("the S3 field was added to a GCS sidecar: %s", data)
	}
	if rep, _ := ops.Doctor(ctx, c.Repo, doctor.Options{Env: fx.env}); rep.Cache.FastPath {
		t.Error("the fast path is still armed after the repair")
	}
}
