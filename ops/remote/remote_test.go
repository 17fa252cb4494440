package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/doctor/cache"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/recover"
)

const (
	fxRepoID = "4571d162-94cd-4f67-90c3-c661921a639e"
	fxModel  = "1520fd20-4aaa-47dd-82e7-daf5017bf67f"
	fxItem   = "data/command/shell/" + fxModel + "/result"
)

const fxYAML = `repoId: ` + fxRepoID + `
datastore:
  type: "@swamp/s3-datastore"
  config:
    bucket: "swamp-test"
    prefix: "team"
    region: us-east-1
    endpoint: "http://127.0.0.1:1"
    forcePathStyle: true
`

func fxRaw(n int) []byte {
	return []byte(fmt.Sprintf(`{"exitCode":0,"executedAt":"2026-12-01T21:57:1%d.348Z","command":"echo v%d","durationMs":7,"stdout":"v%d","stderr":""}`, n, n, n))
}

func fxMeta(n int) []byte {
	raw := fxRaw(n)
	sum := sha256.Sum256(raw)
	return []byte(fmt.Sprintf(`id: 38744004-832f-4abf-a4ee-4bcf5bba8a1f
name: result
version: %d
contentType: application/json
lifetime: infinite
garbageCollection: 10
streaming: false
tags:
  type: resource
  specName: result
  modelName: m1
  initiatedBy: ghost
ownerDefinition:
  ownerType: model-method
  ownerRef: %s
createdAt: '2026-12-01T21:57:10.371Z'
size: %d
checksum: %s
`, n, fxModel, len(raw), hex.EncodeToString(sum[:])))
}

// fixture is a repo on the S3 extension and its cache, as a full pull of
// a bucket holding `versions` versions of one item leaves it (sidecar armed).
type fixture struct {
	repo, home, cache string
	bucket            map[string][]byte // what the index describes
}

func (f *fixture) env(k string) string {
	switch k {
	case "SWAMP_HOME":
		return f.home
	case "HOME":
		return "/nonexistent"
	}
	return ""
}

func (f *fixture) discover(t *testing.T) *remote.Cache {
	t.Helper()
	c, err := remote.Discover(f.repo, remote.Options{Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func write(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newFixture(t *testing.T, versions int) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{repo: filepath.Join(root, "repo"), home: filepath.Join(root, "swamphome"), bucket: map[string][]byte{}}
	f.cache = filepath.Join(f.home, "repos", fxRepoID)
	write(t, filepath.Join(f.repo, ".swamp.yaml"), []byte(fxYAML))
	for n := 1; n <= versions; n++ {
		f.bucket[fmt.Sprintf("%s/%d/raw", fxItem, n)] = fxRaw(n)
		f.bucket[fmt.Sprintf("%s/%d/metadata.yaml", fxItem, n)] = fxMeta(n)
	}
	f.bucket[fxItem+"/latest"] = []byte(strconv.Itoa(versions))
	entries := map[string]remote.IndexEntry{}
	for rel, data := range f.bucket {
		write(t, filepath.Join(f.cache, filepath.FromSlash(rel)), data)
		sum := sha256.Sum256(data)
		entries[rel] = remote.IndexEntry{Key: rel, Size: int64(len(data)), LastModified: "2026-12-01T21:57:10.000Z", SHA256: hex.EncodeToString(sum[:])}
	}
	ix, _ := json.MarshalIndent(remote.Index{Version: 1, LastPulled: "2026-12-01T21:57:10.000Z", Entries: entries}, "", "  ")
	write(t, filepath.Join(f.cache, remote.IndexFile), ix)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // before lastVerifiedAt: the fast path is armed
	if err := os.Chtimes(filepath.Join(f.cache, remote.IndexFile), old, old); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.cache, remote.SyncStateFile), []byte(`{
  "version": 2,
  "remoteIndexETag": "0d2b4546e84ab6458123279f5f11595d",
  "lastVerifiedAt": "2021-01-01T00:00:00.000Z",
  "localDirty": false,
  "dirtyPaths": [],
  "bulkInvalidated": false,
  "lazyPullActive": false,
  "dirtyPathsOverflowed": false
}`))
	return f
}

func TestDiscover(t *testing.T) {
	f := newFixture(t, 1)
	c := f.discover(t)
	if c.Dir != f.cache || c.Type != remote.S3Type || c.S3.Bucket != "swamp-test" || c.S3.Prefix != "team" ||
		!c.S3.ForcePathStyle || c.S3.Endpoint != "http://127.0.0.1:1" || c.LockKey() != ".datastore.lock" {
		t.Fatalf("%+v", c)
	}
	// HOME when SWAMP_HOME is unset.
	c, err := remote.Discover(filepath.Join(f.repo), remote.Options{Env: func(k string) string {
		if k == "HOME" {
			return "/home/u"
		}
		return ""
	}})
	if err != nil || c.Dir != "/home/u/.swamp/repos/"+fxRepoID {
		t.Fatalf("%v %+v", err, c)
	}
	// SWAMP_DATASTORE wins over the block, as in swamp.
	for _, tc := range []struct {
		env    string
		bucket string
		err    error
	}{
		{`@swamp/s3-datastore:{"bucket":"other","prefix":"p"}`, "other", nil},
		{`s3:legacy/pre`, "legacy", nil},
		{`filesystem:/srv/swamp`, "", remote.ErrNotRemote},
		{`@acme/gcs:{"bucket":"g"}`, "", remote.ErrUnknownType},
	} {
		c, err := remote.Discover(f.repo, remote.Options{Env: func(k string) string {
			if k == "SWAMP_DATASTORE" {
				return tc.env
			}
			return f.env(k)
		}})
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%s: %v, want %v", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || c.S3.Bucket != tc.bucket {
			t.Errorf("%s: %v %+v", tc.env, err, c)
		}
	}
	write(t, filepath.Join(f.repo, ".swamp.yaml"), []byte("repoId: "+fxRepoID+"\n"))
	if _, err := remote.Discover(f.repo, remote.Options{Env: f.env}); !errors.Is(err, remote.ErrNotRemote) {
		t.Errorf("filesystem repo: %v", err)
	}
}

func codes(rep *doctor.Report) map[doctor.Code]doctor.Finding {
	out := map[doctor.Code]doctor.Finding{}
	for _, f := range rep.Findings {
		out[f.Code+" "+doctor.Code(f.Path)] = f
	}
	return out
}

func TestDoctorFindings(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, 4)
	c := f.discover(t)
	rep, err := ops.Doctor(ctx, c.Repo, doctor.Options{Env: f.env})
	if err != nil || !rep.Clean() || rep.Cache.Files != 9 || rep.Cache.IndexEntries != 9 || !rep.Cache.FastPath {
		t.Fatalf("clean fixture: %v %+v", err, rep)
	}
	// The damage a killed pull and a stale pull leave.
	if err := os.Truncate(filepath.Join(f.cache, fxItem, "2", "raw"), 0); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.cache, fxItem, "4", "metadata.yaml"), append([]byte("#"), fxMeta(4)[1:]...)) // same size, other bytes
	if err := os.Remove(filepath.Join(f.cache, fxItem, "1", "raw")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(f.cache, "outputs", "stray.yaml"), []byte("x: 1\n"))
	write(t, filepath.Join(f.cache, ".0b0e6f1d-3a8e-4a57-9b0c-1f7c8a3c5e21.tmp"), []byte("{"))
	rep, err = ops.Doctor(ctx, c.Repo, doctor.Options{Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	got := codes(rep)
	want := map[doctor.Code]string{
		doctor.CodeCacheTornFile + " " + fxItem + "/2/raw":                          doctor.NextPush,
		doctor.CodeCacheStaleFile + " " + fxItem + "/4/metadata.yaml":               doctor.NextServe,
		doctor.CodeCacheMissingFile + " " + fxItem + "/1/raw":                       doctor.NextServe,
		doctor.CodeCacheUnknownFile + " outputs/stray.yaml":                         doctor.NextPush,
		doctor.CodeCacheTempLeftover + " .0b0e6f1d-3a8e-4a57-9b0c-1f7c8a3c5e21.tmp": doctor.NextPush,
	}
	for k, next := range want {
		if g, ok := got[k]; !ok || g.Next != next {
			t.Errorf("%s: got %+v, want next %q", k, g, next)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings: %+v", rep.Findings)
	}
	if rep.Remaining != len(want) {
		t.Errorf("remaining %d", rep.Remaining)
	}
}

// The stale latest: the pull brought version 5 but kept latest "4" (same
// size as "5"); the index names "5".
func staleLatest(t *testing.T) *fixture {
	f := newFixture(t, 5)
	write(t, filepath.Join(f.cache, fxItem, "latest"), []byte("4"))
	return f
}

func TestDoctorStaleLatest(t *testing.T) {
	f := staleLatest(t)
	rep, err := ops.Doctor(context.Background(), f.repo, doctor.Options{Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	g, ok := codes(rep)[doctor.CodeCacheStaleLatest+" "+fxItem+"/latest"]
	if !ok || g.Version != 5 || g.Next != doctor.NextServe || len(rep.Findings) != 1 {
		t.Fatalf("%+v", rep.Findings)
	}
}

// grant is the bucket's lock, always free; deny never is.
type grant struct{ taken, released int }

func (g *grant) Lock(context.Context, *remote.Cache, time.Duration) (func() error, error) {
	g.taken++
	return func() error { g.released++; return nil }, nil
}

type deny struct{}

func (deny) Lock(context.Context, *remote.Cache, time.Duration) (func() error, error) {
	return nil, fmt.Errorf("%w: someone", remote.ErrLockBusy)
}

func skipJournal(rel string) bool {
	return strings.Contains(rel, "_journal.db")
}

func TestRepairRefusedWithoutTheLock(t *testing.T) {
	f := staleLatest(t)
	_ = os.Truncate(filepath.Join(f.cache, fxItem, "2", "raw"), 0)
	before := fsxtest.Snapshot(t, filepath.Dir(f.repo), skipJournal)
	_, err := ops.Doctor(context.Background(), f.repo, doctor.Options{Env: f.env,
		Repair: true, Confirm: true, BucketLock: deny{}})
	var le *cache.LockError
	if !errors.As(err, &le) || le.Code() != "lock_timeout" || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("%v", err)
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, filepath.Dir(f.repo), skipJournal)); len(d) > 0 {
		t.Fatalf("a refused repair changed the disk:\n%s", strings.Join(d, "\n"))
	}
}

func TestRepairUnderTheLock(t *testing.T) {
	f := staleLatest(t)
	_ = os.Truncate(filepath.Join(f.cache, fxItem, "2", "raw"), 0)
	g := &grant{}
	c := f.discover(t)
	rep, err := ops.Doctor(context.Background(), c.Repo, doctor.Options{Env: f.env,
		Repair: true, Confirm: true, BucketLock: g})
	if err != nil || !rep.Clean() || rep.IntentID == 0 || g.taken != 1 || g.released != 1 {
		t.Fatalf("%v %+v %+v", err, rep, g)
	}
	if b, _ := os.ReadFile(filepath.Join(f.cache, fxItem, "latest")); string(b) != "5" {
		t.Errorf("latest %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.cache, fxItem, "2", "raw")); !os.IsNotExist(err) {
		t.Errorf("the torn raw is still in the cache: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(rep.Quarantine, fxItem, "2", "raw")); err != nil || fi.Size() != 0 {
		t.Errorf("quarantine: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(rep.Quarantine, fxItem, "latest")); string(b) != "4" {
		t.Errorf("the old latest kept in quarantine: %q", b)
	}
	st, _ := remote.ReadSyncState(nil, c)
	if st == nil || st.RemoteIndexETag != "" || st.LastVerifiedAt == "" {
		t.Errorf("sidecar not disarmed: %+v", st)
	}
	// Afterwards only the missing raw is left, as a note, not a problem:
	// the next pull fetches it.
	rep, err = ops.Doctor(context.Background(), c.Repo, doctor.Options{Env: f.env})
	if err != nil || !rep.Clean() || len(rep.Notices) != 1 || rep.Notices[0].Code != doctor.CodeCacheMissingFile || rep.Notices[0].Next != doctor.NextRepull {
		t.Fatalf("%v %+v %+v", err, rep.Findings, rep.Notices)
	}
}

// TestRepairCrashAtEveryCutPoint cuts the repair after every operation it
// issues, then runs `swampj recover` forward on it and, on a copy cut at
// the same point, backward: forward ends in the repaired tree, backward in
// the starting one, and no byte that was there before is ever gone.
func TestRepairCrashAtEveryCutPoint(t *testing.T) {
	ctx := context.Background()
	build := func() *fixture {
		f := staleLatest(t)
		_ = os.Truncate(filepath.Join(f.cache, fxItem, "2", "raw"), 0)
		return f
	}
	now := func() time.Time { return time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC) }
	opts := func(f *fixture, fsys fsx.FS) doctor.Options {
		return doctor.Options{Common: host.Common{FS: fsys, JournalLockTimeout: time.Second}, Env: f.env, Repair: true, Confirm: true, BucketLock: &grant{}, Now: now}
	}
	snap := func(f *fixture) fsxtest.Tree {
		return fsxtest.Snapshot(t, filepath.Dir(f.repo), func(rel string) bool {
			return skipJournal(rel) || strings.HasSuffix(rel, ".swamp") || strings.HasSuffix(rel, ".swamp.yaml")
		})
	}
	start := build()
	initial := snap(start)
	clean := fsx.NewFault(fsx.Real())
	if rep, err := ops.Doctor(ctx, start.repo, opts(start, clean)); err != nil || !rep.Clean() {
		t.Fatalf("uncut repair: %v %+v", err, rep)
	}
	final := snap(start)
	cuts := clean.Ops()
	if cuts < 5 || clean.Count("rename-noreplace")+clean.Count("rename") == 0 {
		t.Fatalf("the uncut repair issued %d ops: %v", cuts, clean.Trace())
	}
	t.Logf("%d cut points, each recovered forward and backward", cuts)
	for k := 0; k < cuts; k++ {
		for _, back := range []bool{false, true} {
			f := build()
			fault := fsx.NewFault(fsx.Real()).CrashAfter(k)
			if _, err := ops.Doctor(ctx, f.repo, opts(f, fault)); err != nil && !fsx.IsCrash(err) {
				t.Fatalf("cut %d: want a crash, got %v", k, err)
			}
			for round := 0; round < 2; round++ {
				if _, err := recover.Run(ctx, f.repo, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: back}); err != nil {
					t.Fatalf("cut %d (rollback %v): recovery: %v", k, back, err)
				}
			}
			got := snap(f)
			dInit, dFinal := fsxtest.Diff(initial, got), fsxtest.Diff(final, got)
			if back && len(dInit) > 0 && len(dFinal) > 0 {
				t.Fatalf("cut %d, rolled back: neither the start nor the repaired tree:\n%s", k, strings.Join(dInit, "\n"))
			}
			if !back && len(dFinal) > 0 && len(dInit) > 0 {
				t.Fatalf("cut %d, recovered: neither the repaired nor the starting tree:\n%s", k, strings.Join(dFinal, "\n"))
			}
		}
	}
}

// With the sync state's dirty tracking overflowed, a push deletes from the
// bucket every indexed object the cache lacks: a torn copy of a version
// the bucket holds stays in place (a copy goes to quarantine) and the
// fast path is turned off, so the next pull replaces it.
func TestRepairKeepsTornFileWhenDirtyTrackingOverflowed(t *testing.T) {
	f := newFixture(t, 2)
	write(t, filepath.Join(f.cache, remote.SyncStateFile), []byte(`{"version":2,"remoteIndexETag":"abc","lastVerifiedAt":"2021-01-01T00:00:00.000Z",
"localDirty":true,"dirtyPaths":[],"bulkInvalidated":true,"lazyPullActive":false,"dirtyPathsOverflowed":true}`))
	raw := filepath.Join(f.cache, fxItem, "2", "raw")
	_ = os.Truncate(raw, 0)
	c := f.discover(t)
	rep, err := ops.Doctor(context.Background(), c.Repo, doctor.Options{Env: f.env,
		Repair: true, Confirm: true, BucketLock: &grant{}})
	if err != nil || rep.IntentID == 0 {
		t.Fatalf("%v %+v", err, rep)
	}
	if g, ok := codes(rep)[doctor.CodeCacheTornFile+" "+fxItem+"/2/raw"]; !ok || g.Next != doctor.NextPush {
		t.Fatalf("%+v", rep.Findings)
	}
	if fi, err := os.Stat(raw); err != nil || fi.Size() != 0 {
		t.Errorf("the torn raw must stay in place: %v", err)
	}
	if _, err := os.Stat(filepath.Join(rep.Quarantine, fxItem, "2", "raw")); err != nil {
		t.Errorf("no copy in quarantine: %v", err)
	}
	if st, _ := remote.ReadSyncState(nil, c); st == nil || st.RemoteIndexETag != "" || !st.DirtyPathsOverflowed {
		t.Errorf("sidecar: %+v", st)
	}
}
