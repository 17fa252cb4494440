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
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/remote"
)

type gcsObj struct {
	data    []byte
	gen     int64
	updated time.Time
}

// fakeGCS is the part of the GCS JSON API the lock speaks: media and
// multipart upload with ifGenerationMatch, object metadata and media GET, conditional
// DELETE. It answers 412 whenever a precondition does not hold.
type fakeGCS struct {
	mu      sync.Mutex
	bucket  string
	objs    map[string]*gcsObj
	nextGen int64
	auth    []string // Authorization headers seen
	srv     *httptest.Server
}

func newFakeGCS(t *testing.T, bucket string) *fakeGCS {
	f := &fakeGCS{bucket: bucket, objs: map[string]*gcsObj{}, nextGen: 1000}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// genMatch reports whether ifGenerationMatch (if given) holds for o.
func genMatch(q string, o *gcsObj) bool {
	if q == "" {
		return true
	}
	g, err := strconv.ParseInt(q, 10, 64)
	if err != nil {
		return false
	}
	if g == 0 {
		return o == nil
	}
	return o != nil && o.gen == g
}

func (f *fakeGCS) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a := r.Header.Get("Authorization"); a != "" {
		f.auth = append(f.auth, a)
	}
	q := r.URL.Query()
	upload := "/upload/storage/v1/b/" + f.bucket + "/o"
	objPrefix := "/storage/v1/b/" + f.bucket + "/o/"
	resource := func(name string, o *gcsObj) {
		w.Header().Set("Content-Type", "application/json")
		crc := binary.BigEndian.AppendUint32(nil, crc32.Checksum(o.data, crc32.MakeTable(crc32.Castagnoli)))
		sum := md5.Sum(o.data)
		_ = json.NewEncoder(w).Encode(map[string]string{"name": name, "bucket": f.bucket, "generation": strconv.FormatInt(o.gen, 10),
			"updated": o.updated.UTC().Format(time.RFC3339Nano), "size": strconv.Itoa(len(o.data)),
			"crc32c": base64.StdEncoding.EncodeToString(crc), "md5Hash": base64.StdEncoding.EncodeToString(sum[:])})
	}
	switch {
	case r.Method == http.MethodPost && r.URL.Path == upload:
		name, data, err := uploaded(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !genMatch(q.Get("ifGenerationMatch"), f.objs[name]) {
			http.Error(w, `{"error":{"code":412}}`, http.StatusPreconditionFailed)
			return
		}
		f.nextGen++
		o := &gcsObj{data: data, gen: f.nextGen, updated: time.Now()}
		f.objs[name] = o
		resource(name, o)
	case strings.HasPrefix(r.URL.Path, objPrefix):
		name := strings.TrimPrefix(r.URL.Path, objPrefix) // net/http decodes %2F
		o := f.objs[name]
		switch r.Method {
		case http.MethodGet:
			if o == nil {
				http.Error(w, `{"error":{"code":404}}`, http.StatusNotFound)
				return
			}
			if q.Get("alt") == "media" {
				w.Header().Set("x-goog-generation", strconv.FormatInt(o.gen, 10))
				_, _ = w.Write(o.data)
				return
			}
			resource(name, o)
		case http.MethodDelete:
			if o == nil {
				http.Error(w, `{"error":{"code":404}}`, http.StatusNotFound)
				return
			}
			if !genMatch(q.Get("ifGenerationMatch"), o) {
				http.Error(w, `{"error":{"code":412}}`, http.StatusPreconditionFailed)
				return
			}
			delete(f.objs, name)
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "method", http.StatusMethodNotAllowed)
		}
	default:
		http.Error(w, "not found: "+r.URL.String(), http.StatusNotFound)
	}
}

// uploaded is the object name and body of a media upload (the name in the
// query) or a multipart one (the name in the metadata part), as the JSON
// API takes them.
func uploaded(r *http.Request) (string, []byte, error) {
	if r.URL.Query().Get("uploadType") != "multipart" {
		data, err := io.ReadAll(r.Body)
		return r.URL.Query().Get("name"), data, err
	}
	_, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return "", nil, err
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	meta, err := mr.NextPart()
	if err != nil {
		return "", nil, err
	}
	var m struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(meta).Decode(&m); err != nil {
		return "", nil, err
	}
	media, err := mr.NextPart()
	if err != nil {
		return "", nil, err
	}
	data, err := io.ReadAll(media)
	return m.Name, data, err
}

// object is name's live copy (nil when absent).
func (f *fakeGCS) object(name string) *gcsObj {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.objs[name]; o != nil {
		c := *o
		return &c
	}
	return nil
}

// steal replaces name as another process taking the lock over would: a new
// generation with another holder's body.
func (f *fakeGCS) steal(name string, updated time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextGen++
	f.objs[name] = &gcsObj{data: []byte(`{"holder":"other@elsewhere","pid":4242,"ttlMs":30000,"nonce":"theirs"}`), gen: f.nextGen, updated: updated}
}

func gcsCache(t *testing.T, f *fakeGCS) *remote.Cache {
	t.Helper()
	root := t.TempDir()
	write(t, filepath.Join(root, "repo", ".swamp.yaml"), []byte(fmt.Sprintf(`repoId: %s
datastore:
  type: "@swamp/gcs-datastore"
  config:
    bucket: %q
    prefix: "team"
    apiEndpoint: %q
`, fxRepoID, f.bucket, f.srv.URL)))
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

func lockHolder(t *testing.T, o *gcsObj) remote.LockInfo {
	t.Helper()
	var li remote.LockInfo
	if o == nil || json.Unmarshal(o.data, &li) != nil {
		t.Fatalf("no lock object: %+v", o)
	}
	return li
}

func noEnv(string) string { return "" }

func TestGCSLockByGeneration(t *testing.T) {
	f := newFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	if c.Type != remote.GCSType || c.GCS == nil || c.Bucket() != "swamp-test" || c.Prefix() != "team" {
		t.Fatalf("discovered %+v", c)
	}
	ctx := context.Background()
	release, err := remote.GCSLocker{Env: noEnv}.Lock(ctx, c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	o := f.object("team/.datastore.lock")
	if li := lockHolder(t, o); li.TTLMs != 30000 || li.Nonce == "" || !strings.Contains(li.Holder, "swampj") {
		t.Errorf("lock body %+v", li)
	}
	// A second taker waits and gives up: the create is conditional.
	start := time.Now()
	_, err = remote.GCSLocker{Env: noEnv}.Lock(ctx, c, 1500*time.Millisecond)
	if !errors.Is(err, remote.ErrLockBusy) || time.Since(start) < time.Second {
		t.Fatalf("second Lock: %v after %s, want ErrLockBusy after waiting", err, time.Since(start))
	}
	if got := f.object("team/.datastore.lock"); got == nil || got.gen != o.gen {
		t.Fatalf("the waiter changed the held lock: %+v", got)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if f.object("team/.datastore.lock") != nil {
		t.Error("the released lock is still in the bucket")
	}
	if len(f.auth) != 0 {
		t.Errorf("credentials were sent to the apiEndpoint: %v", f.auth)
	}
}

// A lock taken over while held (its holder stalled past the TTL and
// another process broke it) is not deleted by the late release.
func TestGCSLockReleaseSparesTakenOverLock(t *testing.T) {
	f := newFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	release, err := remote.GCSLocker{Env: noEnv}.Lock(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	f.steal("team/.datastore.lock", time.Now())
	err = release()
	if err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("release: %v, want a taken-over error", err)
	}
	if li := lockHolder(t, f.object("team/.datastore.lock")); li.Nonce != "theirs" {
		t.Errorf("the other holder's lock was replaced or deleted: %+v", li)
	}
}

// A stale lock (older than its TTL) is broken, and only the generation
// that was judged stale is deleted.
func TestGCSLockBreaksStaleLock(t *testing.T) {
	f := newFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	f.steal("team/.datastore.lock", time.Now().Add(-time.Minute))
	release, err := remote.GCSLocker{Env: noEnv}.Lock(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatalf("a stale lock was not broken: %v", err)
	}
	if li := lockHolder(t, f.object("team/.datastore.lock")); li.Nonce == "theirs" {
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
	f := newFakeGCS(t, "swamp-test")
	c := gcsCache(t, f)
	release, err := remote.GCSLocker{Env: noEnv}.Lock(context.Background(), c, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	first := f.object("team/.datastore.lock")
	time.Sleep(remote.LockTTL/3 + 2*time.Second)
	renewed := f.object("team/.datastore.lock")
	if renewed == nil || renewed.gen == first.gen || lockHolder(t, renewed).Nonce != lockHolder(t, first).Nonce {
		t.Fatalf("no heartbeat: generation %d, was %d", renewed.gen, first.gen)
	}
	f.steal("team/.datastore.lock", time.Now())
	time.Sleep(remote.LockTTL/3 + 2*time.Second)
	if li := lockHolder(t, f.object("team/.datastore.lock")); li.Nonce != "theirs" {
		t.Errorf("the heartbeat overwrote the new holder's lock: %+v", li)
	}
	if err := release(); err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("release after the takeover: %v", err)
	}
	if li := lockHolder(t, f.object("team/.datastore.lock")); li.Nonce != "theirs" {
		t.Errorf("the release deleted the new holder's lock: %+v", li)
	}
}

// The doctor's repair of a GCS cache takes the lock over GCS (no Lock
// option: the datastore's own) and turns off the generation fast path the
// GCS extension reads, leaving no S3 field behind.
func TestGCSRepairTakesTheGCSLock(t *testing.T) {
	f := newFakeGCS(t, "swamp-test")
	fx := newFixture(t, 3)
	write(t, filepath.Join(fx.repo, ".swamp.yaml"), []byte(fmt.Sprintf(`repoId: %s
datastore:
  type: "@swamp/gcs-datastore"
  config:
    bucket: swamp-test
    prefix: team
    apiEndpoint: %q
`, fxRepoID, f.srv.URL)))
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
	rep, err := doctor.RunAt(ctx, c.Repo, doctor.Options{Env: fx.env})
	if err != nil || !rep.Cache.FastPath || !rep.Clean() {
		t.Fatalf("before: %v fast path %v %+v", err, rep.Cache.FastPath, rep.Findings)
	}
	if err := os.Truncate(filepath.Join(fx.cache, fxItem, "2", "raw"), 0); err != nil {
		t.Fatal(err)
	}
	rep, err = doctor.RunAt(ctx, c.Repo, doctor.Options{Env: fx.env, Repair: true, Confirm: true})
	if err != nil || rep.IntentID == 0 || len(rep.Moves) != 1 || rep.Cache.Lock != ".datastore.lock" {
		t.Fatalf("repair: %v %+v", err, rep)
	}
	if f.nextGen == 1000 {
		t.Error("the repair never took the lock in the bucket")
	}
	if f.object("team/.datastore.lock") != nil {
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
	if rep, _ := doctor.RunAt(ctx, c.Repo, doctor.Options{Env: fx.env}); rep.Cache.FastPath {
		t.Error("the fast path is still armed after the repair")
	}
}
