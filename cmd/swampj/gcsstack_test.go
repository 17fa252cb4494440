package main

// The GCS shared-datastore suite: two checkouts (two HOMEs, two caches) of
// one repo on one bucket, with the real swamp, the real
// @swamp/gcs-datastore extension and fake-gcs-server on 127.0.0.1, from
// ../shared/realswamp-gcs beside the repo (or SWAMPJ_REALSWAMP_GCS). Each
// test starts its own emulator on a free loopback port and stops it.
// Skipped with a notice where the stack is absent; .ci/run sets it up
// where it is present.
//
//	SWAMPJ_REALSWAMP_GCS=/path/to/shared/realswamp-gcs go test -timeout 30m ./cmd/swampj -run TestGCS -count=1 -v
//
// The emulator ignores ifGenerationMatch on DELETE, so the lock's
// conditional release and stale break are tested in ops/remote against an
// API that enforces it (gcslock_test.go); here the lock is tested as swamp
// sees it.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/remote"
)

const gcsBucket, gcsPrefix = "swamp-test", "team"

// gcsStack is the installed stack.
type gcsStack struct {
	shared string // ../shared/realswamp-gcs
	swamp  string // its wrapper, bin/swamp-gcs
}

// needGCSStack finds ../shared/realswamp-gcs from the repo root (or
// SWAMPJ_REALSWAMP_GCS) and the wrapper its setup.sh installed
// (SWAMP_GCS_BIN, else $SWAMP_GCS_PREFIX/bin/swamp-gcs, else
// /opt/realswamp-gcs/bin/swamp-gcs). Absent: the test skips with a notice.
func needGCSStack(t *testing.T) *gcsStack {
	t.Helper()
	shared := os.Getenv("SWAMPJ_REALSWAMP_GCS")
	if shared == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		shared = filepath.Join(root, "..", "shared", "realswamp-gcs")
	}
	if _, err := os.Stat(filepath.Join(shared, "gcs.sh")); err != nil {
		t.Skipf("GCS shared-datastore suite skipped: %s is absent (it runs where ../shared/realswamp-gcs exists, or with SWAMPJ_REALSWAMP_GCS=/path/to/realswamp-gcs)", shared)
	}
	bin := os.Getenv("SWAMP_GCS_BIN")
	if bin == "" {
		prefix := os.Getenv("SWAMP_GCS_PREFIX")
		if prefix == "" {
			prefix = "/opt/realswamp-gcs"
		}
		bin = filepath.Join(prefix, "bin", "swamp-gcs")
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("GCS shared-datastore suite skipped: %s is not installed; run SWAMP_GCS_BIN=$(bash %s/setup.sh)", bin, shared)
		}
	} else if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SWAMP_GCS_BIN=%s: %v", bin, err)
	}
	return &gcsStack{shared: shared, swamp: bin}
}

// gcsServer is one fake-gcs-server of a test (memory backend).
type gcsServer struct{ port int }

// startGCS starts fake-gcs-server on a free loopback port (gcs.sh start)
// and stops it when the test ends.
func (s *gcsStack) startGCS(t *testing.T) *gcsServer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "gcs")
	var lastErr string
	for try := 0; try < 3; try++ { // a port taken between close and start: another one
		port := freeLoopbackPort(t)
		out, err := exec.Command("bash", filepath.Join(s.shared, "gcs.sh"), "start", dir, strconv.Itoa(port)).CombinedOutput()
		if err == nil {
			pid := strings.TrimSpace(string(out))
			t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(s.shared, "gcs.sh"), "stop", pid).Run() })
			return &gcsServer{port: port}
		}
		lastErr = string(out)
	}
	t.Fatalf("gcs.sh start: %s", lastErr)
	return nil
}

// object is the bucket's copy of cache-relative rel and its generation
// (nil, "" when absent), read over the emulator's JSON API.
func (srv *gcsServer) object(t *testing.T, rel string) ([]byte, string) {
	t.Helper()
	u := "http://127.0.0.1:" + strconv.Itoa(srv.port) + "/storage/v1/b/" + gcsBucket + "/o/" + url.PathEscape(gcsPrefix+"/"+rel) + "?alt=media"
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, ""
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d: %s", rel, resp.StatusCode, b)
	}
	if b == nil {
		b = []byte{}
	}
	return b, resp.Header.Get("x-goog-generation")
}

func (srv *gcsServer) data(t *testing.T, rel string) []byte {
	t.Helper()
	b, _ := srv.object(t, rel)
	return b
}

// gcsCheckout is one user's working copy: its repo and its HOME (cache).
type gcsCheckout struct {
	t    *testing.T
	s    *gcsStack
	srv  *gcsServer
	dir  string
	home string
}

func (co *gcsCheckout) env() []string {
	return append(os.Environ(), "NO_COLOR=1", "SWAMP_NO_TELEMETRY=1",
		"SWAMP_GCS_HOME="+co.home, "HOME="+co.home, "SWAMP_GCS_PORT="+strconv.Itoa(co.srv.port))
}

func (co *gcsCheckout) run(name string, args ...string) result {
	co.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = co.dir, co.env()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		co.t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{code: code, stdout: ansiRE.ReplaceAllString(so.String(), ""), stderr: ansiRE.ReplaceAllString(se.String(), "")}
}

func (co *gcsCheckout) swamp(args ...string) result {
	co.t.Helper()
	return co.run(co.s.swamp, args...)
}

func (co *gcsCheckout) swampOK(args ...string) result {
	co.t.Helper()
	r := co.swamp(args...)
	if r.code != 0 {
		co.t.Fatalf("swamp %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
	}
	return r
}

func (co *gcsCheckout) swampj(args ...string) result {
	co.t.Helper()
	return co.run(binary, args...)
}

// dataGet is swamp's `data get MODEL NAME --json` (ok false: it failed or
// printed no version).
func (co *gcsCheckout) dataGet(model, name string, extra ...string) (version int, stdout string, ok bool) {
	co.t.Helper()
	r := co.swamp(append([]string{"data", "get", model, name, "--json"}, extra...)...)
	if r.code != 0 {
		return 0, r.stderr + r.stdout, false
	}
	var v struct {
		Version int            `json:"version"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Version == 0 {
		return 0, r.stdout, false
	}
	out, _ := v.Content["stdout"].(string)
	return v.Version, out, true
}

func (co *gcsCheckout) cacheDir() string {
	co.t.Helper()
	m, _ := filepath.Glob(filepath.Join(co.home, ".swamp", "repos", "*-*-*-*-*"))
	for _, d := range m {
		if !strings.HasSuffix(d, ".swampj-quarantine") {
			return d
		}
	}
	co.t.Fatalf("no cache under %s", co.home)
	return ""
}

func (co *gcsCheckout) itemRel(model, name string) string {
	co.t.Helper()
	id := yamlID(co.t, filepath.Join(co.dir, "models", "command", "shell", model+".yaml"))
	return "data/command/shell/" + id + "/" + name
}

// newGCSTeam is checkout A (it made the repo and wrote m1 `versions`
// times) and checkout B (a copy without .swamp/, as git clone gives, its
// own HOME, synced once), on one bucket.
func newGCSTeam(t *testing.T, versions int) (a, b *gcsCheckout) {
	t.Helper()
	s := needGCSStack(t)
	srv := s.startGCS(t)
	root := t.TempDir()
	a = &gcsCheckout{t: t, s: s, srv: srv, dir: filepath.Join(root, "a"), home: filepath.Join(root, "homeA")}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a.swampOK("init")
	if out, err := exec.Command("bash", filepath.Join(s.shared, "gcs.sh"), "init-repo", a.dir, gcsBucket, gcsPrefix, strconv.Itoa(srv.port)).CombinedOutput(); err != nil {
		t.Fatalf("gcs.sh init-repo: %v %s", err, out)
	}
	a.swampOK("model", "create", "command/shell", "m1")
	for i := 1; i <= versions; i++ {
		a.swampOK("model", "method", "run", "m1", "execute", "--input", "run=echo v"+strconv.Itoa(i))
	}
	b = &gcsCheckout{t: t, s: s, srv: srv, dir: filepath.Join(root, "b"), home: filepath.Join(root, "homeB")}
	if out, err := exec.Command("cp", "-r", a.dir, b.dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(b.dir, ".swamp")); err != nil {
		t.Fatal(err)
	}
	b.swampOK("datastore", "sync")
	return a, b
}

// gcsTornV2 cuts version 2 of m1's result in b's cache to zero bytes and
// returns the bucket's copies before.
func gcsTornV2(t *testing.T, b *gcsCheckout) (rel string, raw, md []byte) {
	t.Helper()
	rel = b.itemRel("m1", "result") + "/2"
	raw, md = b.srv.data(t, rel+"/raw"), b.srv.data(t, rel+"/metadata.yaml")
	if len(raw) == 0 || len(md) == 0 {
		t.Fatalf("the bucket has no good version 2 to start from (raw %d, metadata %d bytes)", len(raw), len(md))
	}
	truncate(t, filepath.Join(b.cacheDir(), filepath.FromSlash(rel), "raw"))
	truncate(t, filepath.Join(b.cacheDir(), filepath.FromSlash(rel), "metadata.yaml"))
	return rel, raw, md
}

// The defect, reproduced with swamp alone: B's write command pushes its
// zero-byte version over the bucket's good copy.
func TestGCSTornCachePlainSwampPushesZeros(t *testing.T) {
	_, b := newGCSTeam(t, 2)
	rel, _, _ := gcsTornV2(t, b)
	r := b.swamp("model", "method", "run", "m1", "execute", "--input", "run=echo v3")
	t.Logf("swamp model method run: exit %d", r.code)
	if got := b.srv.data(t, rel+"/raw"); got == nil || len(got) != 0 {
		t.Fatalf("defect not reproduced: the bucket's version 2 raw has %d bytes (has the extension changed?)", len(got))
	}
}

// The fix: `swampj run` finds the zero-byte version and moves it out of
// the push's way before the command, so the bucket keeps its good copy and
// the other checkout still reads it.
func TestGCSRunKeepsTornCacheOutOfBucket(t *testing.T) {
	a, b := newGCSTeam(t, 2)
	rel, raw, md := gcsTornV2(t, b)
	r := b.swampj("run", "--", b.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo v3")
	if r.code != 0 {
		t.Fatalf("swampj run: exit %d\nstdout: %s\nstderr: %s", r.code, tail(r.stdout, 1500), tail(r.stderr, 3000))
	}
	if !strings.Contains(r.stderr, "cache_torn_file") {
		t.Errorf("swampj run said nothing about the torn files:\n%s", r.stderr)
	}
	if got := b.srv.data(t, rel+"/raw"); !bytes.Equal(got, raw) {
		t.Errorf("the bucket's version 2 raw changed: %d bytes, was %d", len(got), len(raw))
	}
	if got := b.srv.data(t, rel+"/metadata.yaml"); !bytes.Equal(got, md) {
		t.Errorf("the bucket's version 2 metadata.yaml changed: %d bytes, was %d", len(got), len(md))
	}
	// A's pull leaves its one-byte latest at "2" (a pull compares sizes
	// only); swampj's doctor repairs that too.
	a.swampOK("datastore", "sync", "--pull")
	if r := a.swampj("doctor", "--repair", "--confirm"); r.code != 0 {
		t.Errorf("swampj doctor --repair --confirm in A: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, co := range []*gcsCheckout{a, b} {
		if v, out, ok := co.dataGet("m1", "result", "--version", "2"); !ok || v != 2 || out != "v2" {
			t.Errorf("%s: data get --version 2: version %d %q ok=%v", filepath.Base(co.dir), v, out, ok)
		}
		if v, out, ok := co.dataGet("m1", "result"); !ok || v != 3 || out != "v3" {
			t.Errorf("%s: data get: version %d %q ok=%v", filepath.Base(co.dir), v, out, ok)
		}
	}
	q, _ := filepath.Glob(filepath.Join(b.cacheDir()+".swampj-quarantine", "*", filepath.FromSlash(rel), "raw"))
	if len(q) != 1 {
		t.Errorf("quarantine holds %v, want the torn raw", q)
	}
	if r := b.swampj("doctor"); r.code != 0 {
		t.Errorf("swampj doctor after the run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A one-byte `latest` left stale by a pull (sizes equal) is found by
// `swampj doctor` and rewritten by its repair; swamp then reads the new
// version.
func TestGCSStaleLatestRepairedByDoctor(t *testing.T) {
	a, b := newGCSTeam(t, 4)
	a.swampOK("model", "method", "run", "m1", "execute", "--input", "run=echo v5")
	b.swampOK("datastore", "sync", "--pull")
	if v, out, ok := b.dataGet("m1", "result"); !ok || v != 4 {
		t.Fatalf("defect not reproduced: data get returned version %d %q ok=%v, want the stale 4", v, out, ok)
	}
	r := b.swampj("doctor", "--json")
	if r.code != 1 {
		t.Fatalf("swampj doctor: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Cache    struct{ Type string }
		Findings []struct{ Code, Path, Next string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Code == string(doctor.CodeCacheStaleLatest) && strings.HasSuffix(f.Path, "/result/latest") && f.Next == doctor.NextServe {
			found = true
		}
	}
	if !found || rep.Cache.Type != remote.GCSType {
		t.Fatalf("no cache_stale_latest finding for result/latest on a %s cache: %+v", rep.Cache.Type, rep.Findings)
	}
	if r := b.swampj("doctor", "--repair", "--confirm"); r.code != 0 {
		t.Fatalf("swampj doctor --repair --confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v, out, ok := b.dataGet("m1", "result"); !ok || v != 5 || out != "v5" {
		t.Fatalf("after the repair data get returned version %d %q ok=%v, want 5", v, out, ok)
	}
	if r := b.swampj("doctor"); r.code != 0 || !strings.Contains(r.stdout, "bucket "+gcsBucket+", prefix "+gcsPrefix) {
		t.Errorf("swampj doctor after the repair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// swamp honours the lock swampj's repair takes: the lock is created by
// generation in the bucket, a write command started while swampj holds it
// pushes only after swampj let it go, and the release deletes it.
func TestGCSSwampWaitsForSwampjLock(t *testing.T) {
	_, b := newGCSTeam(t, 1)
	c, err := remote.Discover(b.dir, remote.Options{Env: func(k string) string {
		if k == "HOME" {
			return b.home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	release, err := remote.GCSLocker{Env: func(string) string { return "" }}.Lock(context.Background(), c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	body, gen := b.srv.object(t, ".datastore.lock")
	var li remote.LockInfo
	if json.Unmarshal(body, &li) != nil || li.TTLMs != 30000 || gen == "" {
		t.Fatalf("the lock in the bucket: generation %q %s", gen, body)
	}
	done := make(chan result, 1)
	go func() { done <- b.swamp("model", "method", "run", "m1", "execute", "--input", "run=echo v2") }()
	item := b.itemRel("m1", "result")
	time.Sleep(8 * time.Second)
	if got := b.srv.data(t, item+"/2/raw"); got != nil {
		t.Errorf("swamp pushed version 2 while swampj held the lock")
	}
	released := time.Now()
	if err := release(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 0 {
		t.Fatalf("swamp: exit %d\n%s", r.code, tail(r.stderr, 2000))
	}
	if got := b.srv.data(t, item+"/latest"); string(got) != "2" {
		t.Errorf("the bucket's latest is %q after swamp's run, want 2", got)
	}
	t.Logf("swamp finished %s after the release", time.Since(released).Round(time.Millisecond))
	// swamp's own lock is gone too: swampj takes it again at once.
	release, err = remote.GCSLocker{Env: func(string) string { return "" }}.Lock(context.Background(), c, 2*time.Second)
	if err != nil {
		t.Fatalf("the lock after swamp's run: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
}

// swampj's run lock stays out of swamp's sync on a fresh bucket. With no
// index in the bucket yet, the extension builds one from the bucket's
// listing, which the run lock is in while the first wrapped command runs:
// unless the lock's name is one the extension keeps out of its sync, it
// becomes an index entry, is pulled into the caches, and each checkout's
// doctor then finds a file the index no longer knows once swampj deletes it.
func TestGCSRunLockStaysOutOfTheIndexOnAFreshBucket(t *testing.T) {
	s := needGCSStack(t)
	srv := s.startGCS(t)
	root := t.TempDir()
	a := &gcsCheckout{t: t, s: s, srv: srv, dir: filepath.Join(root, "a"), home: filepath.Join(root, "homeA")}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a.swampOK("init")
	if out, err := exec.Command("bash", filepath.Join(s.shared, "gcs.sh"), "init-repo", a.dir, gcsBucket, gcsPrefix, strconv.Itoa(srv.port)).CombinedOutput(); err != nil {
		t.Fatalf("gcs.sh init-repo: %v %s", err, out)
	}
	a.swampOK("model", "create", "command/shell", "m1")
	for i, args := range [][]string{
		{"run", "--", s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo first"},
		{"run", "--", s.swamp, "datastore", "sync"},
	} {
		if r := a.swampj(args...); r.code != 0 {
			t.Fatalf("wrapped command %d: exit %d\n%s%s", i+1, r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		}
	}
	if index := srv.data(t, ".datastore-index.json"); strings.Contains(string(index), "swampj-run") {
		t.Errorf("the bucket's index lists swampj's run lock:\n%s", index)
	}
	_ = filepath.WalkDir(a.cacheDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(p, "swampj-run") {
			t.Errorf("swampj's run lock is in the cache: %s", p)
		}
		return nil
	})
	if r := a.swampj("doctor"); r.code != 0 {
		t.Errorf("swampj doctor after the wrapped commands: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
