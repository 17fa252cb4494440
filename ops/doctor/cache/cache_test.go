package cache_test

// The doctor of an extension datastore's cache, through the entry point a
// host calls (ops.Doctor): a repo on the S3 extension and its cache on real
// files, laid out as a full pull leaves it (docs/swamp-format.md §1.2.2
// and §2.8: {SWAMP_HOME}/repos/{repoId}, the data tree, the extension's
// index and sync-state sidecar). No bucket is needed: the check reads the
// cache only, and the repair's bucket lock is the test's own.

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

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/doctor/cache"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/report"
)

const (
	cacheRepoID = "4571d162-94cd-4f67-90c3-c661921a639e"
	cacheModel  = "1520fd20-4aaa-47dd-82e7-daf5017bf67f"
	cacheItem   = "data/command/shell/" + cacheModel + "/result"
)

// cacheRepo is a repo on the S3 extension and its cache.
type cacheRepo struct {
	dir, home, cache string
}

func (f *cacheRepo) env(k string) string {
	switch k {
	case "SWAMP_HOME":
		return f.home
	case "HOME":
		return "/nonexistent"
	}
	return ""
}

func put(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// newCacheRepo is a repo whose bucket holds versions 1..n of one item,
// and its cache as a full pull leaves it (the sidecar's fast path armed).
func newCacheRepo(t *testing.T, n int) *cacheRepo {
	t.Helper()
	root := t.TempDir()
	f := &cacheRepo{dir: filepath.Join(root, "repo"), home: filepath.Join(root, "home")}
	f.cache = filepath.Join(f.home, "repos", cacheRepoID)
	put(t, filepath.Join(f.dir, ".swamp.yaml"), []byte("repoId: "+cacheRepoID+`
datastore:
  type: "@swamp/s3-datastore"
  config:
    bucket: "swamp-test"
    region: us-east-1
    endpoint: "http://127.0.0.1:1"
    forcePathStyle: true
`))
	bucket := map[string][]byte{cacheItem + "/latest": []byte(strconv.Itoa(n))}
	for v := 1; v <= n; v++ {
		raw := []byte(fmt.Sprintf(`{"stdout":"v%d"}`, v))
		sum := sha256.Sum256(raw)
		bucket[fmt.Sprintf("%s/%d/raw", cacheItem, v)] = raw
		bucket[fmt.Sprintf("%s/%d/metadata.yaml", cacheItem, v)] = []byte(fmt.Sprintf(`id: 38744004-832f-4abf-a4ee-4bcf5bba8a1f
name: result
version: %d
contentType: application/json
lifetime: infinite
garbageCollection: 10
streaming: false
tags:
  type: resource
ownerDefinition:
  ownerType: model-method
  ownerRef: %s
createdAt: '2026-12-01T21:57:10.371Z'
size: %d
checksum: %s
`, v, cacheModel, len(raw), hex.EncodeToString(sum[:])))
	}
	entries := map[string]remote.IndexEntry{}
	for rel, data := range bucket {
		put(t, filepath.Join(f.cache, filepath.FromSlash(rel)), data)
		sum := sha256.Sum256(data)
		entries[rel] = remote.IndexEntry{Key: rel, Size: int64(len(data)), LastModified: "2026-12-01T21:57:10.000Z", SHA256: hex.EncodeToString(sum[:])}
	}
	ix, err := json.Marshal(remote.Index{Version: 1, LastPulled: "2026-12-01T21:57:10.000Z", Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(f.cache, remote.IndexFile), ix)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) // before lastVerifiedAt: the fast path is armed
	if err := os.Chtimes(filepath.Join(f.cache, remote.IndexFile), old, old); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(f.cache, remote.SyncStateFile), []byte(`{"version":2,"remoteIndexETag":"0d2b","lastVerifiedAt":"2021-01-01T00:00:00.000Z",`+
		`"localDirty":false,"dirtyPaths":[],"bulkInvalidated":false,"lazyPullActive":false,"dirtyPathsOverflowed":false}`))
	return f
}

// lockGranted is the bucket's lock, always free.
type lockGranted struct{ taken, released int }

func (g *lockGranted) Lock(context.Context, *remote.Cache, time.Duration) (func() error, error) {
	g.taken++
	return func() error { g.released++; return nil }, nil
}

// lockBusy is the bucket's lock, held by someone else.
type lockBusy struct{}

func (lockBusy) Lock(context.Context, *remote.Cache, time.Duration) (func() error, error) {
	return nil, fmt.Errorf("%w: another checkout", remote.ErrLockBusy)
}

func finding(rep *doctor.Report, code doctor.Code, path string) *doctor.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Code == code && rep.Findings[i].Path == path {
			return &rep.Findings[i]
		}
	}
	return nil
}

// A host calling the doctor's entry point on an S3-backed repo gets the
// cache's findings, in the doctor's one report: a torn raw (a killed
// pull) and a stale `latest`, each with its code, status, remedy and what
// swamp does next; the cache check; the outcome.
func TestDoctorOnS3RepoChecksTheCache(t *testing.T) {
	f := newCacheRepo(t, 3)
	if err := os.Truncate(filepath.Join(f.cache, cacheItem, "2", "raw"), 0); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(f.cache, cacheItem, "latest"), []byte("1"))
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Env: f.env})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cache == nil || rep.Cache.Dir != f.cache || rep.Cache.Files != 7 || !rep.Cache.FastPath || rep.Mode != "check" {
		t.Fatalf("not the cache's report: %+v (cache %+v)", rep, rep.Cache)
	}
	torn := finding(rep, doctor.CodeCacheTornFile, cacheItem+"/2/raw")
	if torn == nil || torn.Status != doctor.StatusFound || torn.Remedy != report.RemedyRepair || torn.Next != doctor.NextPush {
		t.Errorf("torn raw: %+v", torn)
	}
	latest := finding(rep, doctor.CodeCacheStaleLatest, cacheItem+"/latest")
	if latest == nil || latest.Version != 3 || latest.Status != doctor.StatusFound || latest.Next != doctor.NextServe {
		t.Errorf("stale latest: %+v", latest)
	}
	if rep.Remaining != 2 || rep.Outcome != doctor.OutcomeRepairable || len(rep.Checks) != 1 || rep.Checks[0].ID != "cache" ||
		rep.Checks[0].Passed || rep.Checks[0].Failed != 2 || rep.Checks[0].Checked != 7 {
		t.Errorf("remaining %d, outcome %s, checks %+v; findings %+v", rep.Remaining, rep.Outcome, rep.Checks, rep.Findings)
	}
}

// The cache's report has the doctor's one JSON shape: the status spelled
// as the local doctor spells it, the version a number, the code a string,
// the cache's figures under "cache".
func TestCacheReportJSONShape(t *testing.T) {
	f := newCacheRepo(t, 3)
	put(t, filepath.Join(f.cache, cacheItem, "latest"), []byte("1"))
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Env: f.env, Repair: true})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Mode     string
		Findings []map[string]any
		Cache    map[string]any
		Outcome  string
		Actions  []map[string]any
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Mode != "preview" || len(doc.Findings) != 1 || doc.Outcome != "repairable" || len(doc.Actions) != 1 {
		t.Fatalf("%s", data)
	}
	g := doc.Findings[0]
	if g["status"] != "would-repair" || g["version"] != float64(3) || g["code"] != "cache_stale_latest" || g["remedy"] != "repair" || g["next"] != "serve" {
		t.Errorf("finding %v", g)
	}
	if doc.Cache["cacheDir"] != f.cache || doc.Cache["fastPathArmed"] != true || doc.Cache["files"] != float64(7) {
		t.Errorf("cache %v", doc.Cache)
	}
	if rw, _ := doc.Cache["rewrites"].([]any); len(rw) != 1 {
		t.Errorf("the preview names no rewrite of latest: %v", doc.Cache)
	}
	if b, _ := os.ReadFile(filepath.Join(f.cache, cacheItem, "latest")); string(b) != "1" {
		t.Errorf("a preview changed latest: %q", b)
	}
}

// A confirmed repair under the bucket's lock: the torn raw goes to
// quarantine, `latest` is rewritten, each finding is repaired and the run
// is clean; the doctor run again finds nothing but the note that the
// next pull fetches the quarantined raw.
func TestCacheRepairThroughDoctor(t *testing.T) {
	f := newCacheRepo(t, 3)
	if err := os.Truncate(filepath.Join(f.cache, cacheItem, "2", "raw"), 0); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(f.cache, cacheItem, "latest"), []byte("1"))
	g := &lockGranted{}
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Env: f.env, Repair: true, Confirm: true, BucketLock: g})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != "repair" || rep.IntentID == 0 || rep.Remaining != 0 || rep.Outcome != doctor.OutcomeRepaired || g.taken != 1 || g.released != 1 ||
		rep.Cache.Lock != ".datastore.lock" || len(rep.Moves) != 1 || len(rep.Cache.Rewrites) != 1 {
		t.Fatalf("%+v (cache %+v, lock %+v)", rep, rep.Cache, g)
	}
	for _, fd := range rep.Findings {
		if fd.Status != doctor.StatusRepaired {
			t.Errorf("not repaired: %+v", fd)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.cache, cacheItem, "latest")); string(b) != "3" {
		t.Errorf("latest %q, want 3", b)
	}
	if fi, err := os.Stat(filepath.Join(rep.Quarantine, cacheItem, "2", "raw")); err != nil || fi.Size() != 0 {
		t.Errorf("the torn raw is not in quarantine: %v", err)
	}
	again, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Env: f.env})
	if err != nil || len(again.Findings) != 0 || again.Outcome != doctor.OutcomeClean || len(again.Notices) != 1 ||
		again.Notices[0].Code != doctor.CodeCacheMissingFile || again.Notices[0].Next != doctor.NextRepull || again.Notices[0].Remedy != report.RemedyNone {
		t.Fatalf("after the repair: %v %+v %+v", err, again.Findings, again.Notices)
	}
}

// A file the index does not know is a person's to judge: the finding is
// manual, its remedy a person's, the outcome manual; a confirmed repair
// leaves it and takes no lock.
func TestCacheUnknownFileIsManual(t *testing.T) {
	f := newCacheRepo(t, 1)
	put(t, filepath.Join(f.cache, "outputs", "stray.yaml"), []byte("x: 1\n"))
	g := &lockGranted{}
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Env: f.env, Repair: true, Confirm: true, BucketLock: g})
	if err != nil {
		t.Fatal(err)
	}
	u := finding(rep, doctor.CodeCacheUnknownFile, "outputs/stray.yaml")
	if u == nil || u.Status != doctor.StatusManual || u.Remedy != report.RemedyInspect || !u.NeedsPerson() ||
		rep.Outcome != doctor.OutcomeManual || rep.Remaining != 1 || g.taken != 0 {
		t.Fatalf("%+v outcome %s remaining %d lock %+v", u, rep.Outcome, rep.Remaining, g)
	}
	if _, err := os.Stat(filepath.Join(f.cache, "outputs", "stray.yaml")); err != nil {
		t.Errorf("the unknown file was moved: %v", err)
	}
}

// With the bucket's lock held by someone else, a confirmed repair refuses
// (*CacheLockError, lock_timeout), changes nothing, and reports the
// findings as skipped, saying why.
func TestCacheRepairRefusedWhenTheLockIsBusy(t *testing.T) {
	f := newCacheRepo(t, 3)
	put(t, filepath.Join(f.cache, cacheItem, "latest"), []byte("1"))
	before := fsxtest.Snapshot(t, filepath.Dir(f.dir), nil)
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Env: f.env, Repair: true, Confirm: true, BucketLock: lockBusy{}})
	var le *cache.LockError
	if !errors.As(err, &le) || le.Code() != "lock_timeout" || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("%v", err)
	}
	if rep == nil || len(rep.Findings) != 1 || rep.Findings[0].Status != doctor.StatusSkipped || !strings.Contains(rep.Findings[0].Reason, "lock") ||
		rep.IntentID != 0 || rep.Outcome != doctor.OutcomeBusy {
		t.Fatalf("%+v", rep)
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, filepath.Dir(f.dir), nil)); len(d) > 0 {
		t.Fatalf("a refused repair changed the disk:\n%s", strings.Join(d, "\n"))
	}
}

// An extension datastore swampj does not know is left to swamp: ops.Doctor
// says so and looks at nothing.
func TestDoctorRefusesAnUnknownExtension(t *testing.T) {
	dir := t.TempDir()
	put(t, filepath.Join(dir, ".swamp.yaml"), []byte("repoId: "+cacheRepoID+"\ndatastore:\n  type: \"@acme/tape-datastore\"\n  config: {}\n"))
	_, err := ops.Doctor(context.Background(), dir, doctor.Options{Env: func(string) string { return "" }})
	if !errors.Is(err, remote.ErrUnknownType) {
		t.Fatalf("%v", err)
	}
}

// A repair whose step fails: the error says so (*CacheRepairError), the
// report calls no finding repaired and lists no move, and the cache's
// files are where they were. (Here the engine finds both the source and
// its place in quarantine, so it leaves the intent open for recovery.)
func TestCacheRepairFailedReportsNothingRepaired(t *testing.T) {
	f := newCacheRepo(t, 3)
	raw := filepath.Join(f.cache, cacheItem, "2", "raw")
	if err := os.Truncate(raw, 0); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(f.cache, cacheItem, "latest"), []byte("1"))
	// The move of the torn raw finds its place in quarantine taken (a
	// rename into quarantine never replaces).
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	taken := filepath.Join(f.cache+".swampj-quarantine", now.Format("20060102T150405.000Z"), cacheItem, "2", "raw")
	put(t, taken, []byte("someone's"))
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Env: f.env, Repair: true, Confirm: true, BucketLock: &lockGranted{},
		Now: func() time.Time { return now }})
	var re *cache.RepairError
	if !errors.As(err, &re) || re.IntentID == 0 {
		t.Fatalf("want a *CacheRepairError, got %v", err)
	}
	if rep == nil || rep.IntentID != 0 || len(rep.Moves) != 0 || rep.Quarantine != "" || rep.Remaining != 2 {
		t.Fatalf("%+v", rep)
	}
	for _, fd := range rep.Findings {
		if fd.Status != doctor.StatusSkipped || fd.Reason == "" {
			t.Errorf("a finding of a rolled-back repair: %+v", fd)
		}
	}
	if fi, err := os.Stat(raw); err != nil || fi.Size() != 0 {
		t.Errorf("the torn raw is not in place: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.cache, cacheItem, "latest")); string(b) != "1" {
		t.Errorf("latest %q after the failed repair, want 1", b)
	}
}

// A cache that is not there is clean (nothing pulled, nothing to push),
// and the report says so, with where it looked: a clean report of nothing
// can also be the wrong user's home.
func TestCacheThatIsNotThereIsANote(t *testing.T) {
	f := newCacheRepo(t, 1)
	if err := os.RemoveAll(f.cache); err != nil {
		t.Fatal(err)
	}
	rep, err := ops.Doctor(context.Background(), f.dir, doctor.Options{Env: f.env})
	if err != nil || !rep.Clean() {
		t.Fatalf("doctor of a cache that is not there: %v, %+v", err, rep)
	}
	found := false
	for _, n := range rep.Notices {
		if n.Kind == doctor.NoticeNote && strings.Contains(n.Message, "there is no cache at "+f.cache) {
			found = true
		}
	}
	if !found {
		t.Errorf("no note that the cache is not there: %+v", rep.Notices)
	}
}
