package main

// The shared-datastore suite: two checkouts (two HOMEs, two caches)
// of one repo on one bucket, with the real swamp, the real
// @swamp/s3-datastore extension and gofakes3 on 127.0.0.1. Skipped with a
// notice where ../shared/realswamp-s3 is absent; .ci/run sets it up where
// it is present.
//
//	SWAMPJ_REALSWAMP_S3=/path/to/shared/realswamp-s3 go test -timeout 30m ./cmd/swampj -run TestS3 -count=1 -v

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/remote"
)

// tornV2 cuts version 2 of m1's result in b's cache to zero bytes (what a
// pull killed part way leaves) and returns the bucket's copies before.
func tornV2(t *testing.T, b *checkout) (rel string, raw, md []byte) {
	t.Helper()
	rel = b.itemRel("m1", "result") + "/2"
	raw, md = b.srv.object(rel+"/raw"), b.srv.object(rel+"/metadata.yaml")
	if len(raw) == 0 || len(md) == 0 {
		t.Fatalf("the bucket has no good version 2 to start from (raw %d, metadata %d bytes)", len(raw), len(md))
	}
	truncate(t, filepath.Join(b.cacheDir(), filepath.FromSlash(rel), "raw"))
	truncate(t, filepath.Join(b.cacheDir(), filepath.FromSlash(rel), "metadata.yaml"))
	return rel, raw, md
}

// The defect, reproduced with swamp alone: the write command's push
// uploads the torn cache files over the bucket's good copy.
func TestS3TornCachePlainSwampPushesZeros(t *testing.T) {
	_, b := newS3Team(t, 2)
	rel, _, _ := tornV2(t, b)
	if _, out, ok := b.dataGet("m1", "result", "--version", "2"); ok {
		t.Fatalf("swamp read the torn version 2: %s", out)
	}
	r := b.swamp("model", "method", "run", "m1", "execute", "--input", "run=echo v3")
	t.Logf("swamp model method run: exit %d", r.code)
	if got := b.srv.object(rel + "/raw"); len(got) != 0 {
		t.Fatalf("defect not reproduced: the bucket's version 2 raw kept %d bytes (has the extension changed?)", len(got))
	}
}

// The fix: `swampj run` quarantines the torn files before the command, so
// its pull fetches the bucket's copies and its push uploads no damage.
func TestS3RunKeepsTornCacheOutOfBucket(t *testing.T) {
	a, b := newS3Team(t, 2)
	rel, raw, md := tornV2(t, b)
	r := b.swampj("run", "--", b.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo v3")
	if r.code != 0 {
		t.Fatalf("swampj run: exit %d\nstdout: %s\nstderr: %s", r.code, tail(r.stdout, 1500), tail(r.stderr, 3000))
	}
	if got := b.srv.object(rel + "/raw"); !bytes.Equal(got, raw) {
		t.Errorf("the bucket's version 2 raw changed: %d bytes, was %d", len(got), len(raw))
	}
	if got := b.srv.object(rel + "/metadata.yaml"); !bytes.Equal(got, md) {
		t.Errorf("the bucket's version 2 metadata.yaml changed: %d bytes, was %d", len(got), len(md))
	}
	if !strings.Contains(r.stderr, "cache_torn_file") {
		t.Errorf("swampj run said nothing about the torn files:\n%s", r.stderr)
	}
	// The other checkout still reads version 2, after pulling, and so does B.
	// A's pull leaves its one-byte latest at "2" (the second defect,
	// TestS3StaleLatestPlainSwamp); swampj's doctor repairs that too.
	a.swampOK("datastore", "sync", "--pull")
	if r := a.swampj("doctor", "--repair", "--confirm"); r.code != 0 {
		t.Errorf("swampj doctor --repair --confirm in A: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, co := range []*checkout{a, b} {
		if v, out, ok := co.dataGet("m1", "result", "--version", "2"); !ok || v != 2 || out != "v2" {
			t.Errorf("%s: data get --version 2: version %d %q ok=%v", filepath.Base(co.dir), v, out, ok)
		}
		if v, out, ok := co.dataGet("m1", "result"); !ok || v != 3 || out != "v3" {
			t.Errorf("%s: data get: version %d %q ok=%v", filepath.Base(co.dir), v, out, ok)
		}
	}
	// The torn bytes are kept, outside the cache.
	q, _ := filepath.Glob(filepath.Join(b.cacheDir()+".swampj-quarantine", "*", filepath.FromSlash(rel), "raw"))
	if len(q) != 1 {
		t.Errorf("quarantine holds %v, want the torn raw", q)
	}
	if r := b.swampj("doctor"); r.code != 0 {
		t.Errorf("swampj doctor after the run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// staleLatest: A writes version 5 after B synced at 4; B pulls.
func staleLatest(t *testing.T) (a, b *checkout) {
	a, b = newS3Team(t, 4)
	a.swampOK("model", "method", "run", "m1", "execute", "--input", "run=echo v5")
	b.swampOK("datastore", "sync", "--pull")
	return a, b
}

// The defect, reproduced with swamp alone: after `datastore sync --pull`
// B has result/5/ but its one-byte latest still says 4.
func TestS3StaleLatestPlainSwamp(t *testing.T) {
	_, b := staleLatest(t)
	if _, err := os.Stat(filepath.Join(b.cacheDir(), filepath.FromSlash(b.itemRel("m1", "result")), "5", "raw")); err != nil {
		t.Fatalf("the pull did not bring version 5: %v", err)
	}
	if v, out, ok := b.dataGet("m1", "result"); !ok || v != 4 {
		t.Fatalf("defect not reproduced: data get returned version %d %q ok=%v, want the stale 4", v, out, ok)
	}
}

// The fix: `swampj doctor` finds the stale latest, and --repair --confirm
// rewrites it through the journal; swamp then returns version 5.
func TestS3StaleLatestRepairedByDoctor(t *testing.T) {
	_, b := staleLatest(t)
	r := b.swampj("doctor", "--json")
	if r.code != 1 {
		t.Fatalf("swampj doctor: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var rep struct {
		Findings []struct{ Code, Path, Next string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Code == "cache_stale_latest" && strings.HasSuffix(f.Path, "/result/latest") && f.Next == "serve" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no cache_stale_latest finding for result/latest: %+v", rep.Findings)
	}
	if r := b.swampj("doctor", "--repair", "--confirm"); r.code != 0 {
		t.Fatalf("swampj doctor --repair --confirm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v, out, ok := b.dataGet("m1", "result"); !ok || v != 5 || out != "v5" {
		t.Fatalf("after the repair data get returned version %d %q ok=%v, want 5", v, out, ok)
	}
	if r := b.swampj("doctor"); r.code != 0 {
		t.Errorf("swampj doctor after the repair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// B's next write pushes nothing stale: the bucket's latest stays 6 after it.
	b.swampOK("model", "method", "run", "m1", "execute", "--input", "run=echo v6")
	if got := string(b.srv.object(b.itemRel("m1", "result") + "/latest")); got != "6" {
		t.Errorf("the bucket's latest is %q after B's write, want 6", got)
	}
}

// bucketData is every object under data/ of the bucket but the `latest`
// pointers, by cache-relative key.
func bucketData(t *testing.T, srv *s3Server) map[string][]byte {
	t.Helper()
	root := filepath.Join(srv.dir, "buckets", s3Bucket, s3Prefix)
	out := map[string][]byte{}
	_ = filepath.Walk(filepath.Join(root, "data"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || fi.Name() == "latest" || fi.Name() == ".lock" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		b, _ := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out
}

// Two checkouts writing the same model through `swampj run` at once: every
// write lands in the bucket as its own version, and after a pull (and the
// stale-latest repair) both caches hold the bucket's bytes.
func TestS3TwoCheckoutsWriteAtOnce(t *testing.T) {
	a, b := newS3Team(t, 1)
	const each = 3
	type outcome struct {
		who  string
		i    int
		code int
		err  string
	}
	done := make(chan outcome, 2*each)
	for _, co := range []*checkout{a, b} {
		go func(co *checkout) {
			for i := 0; i < each; i++ {
				who := filepath.Base(co.dir)
				r := co.swampj("run", "--", co.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo "+who+strconv.Itoa(i))
				done <- outcome{who, i, r.code, tail(r.stderr, 1500)}
			}
		}(co)
	}
	for n := 0; n < 2*each; n++ {
		o := <-done
		if o.code != 0 {
			t.Errorf("%s run %d: exit %d\n%s", o.who, o.i, o.code, o.err)
		}
	}
	item := a.itemRel("m1", "result")
	want := map[string]bool{"v1": true}
	for _, w := range []string{"a", "b"} {
		for i := 0; i < each; i++ {
			want[w+strconv.Itoa(i)] = true
		}
	}
	// Both histories complete in the bucket: 1 + 2*each versions, each
	// output once.
	got := map[string]int{}
	for n := 1; n <= 1+2*each; n++ {
		raw := a.srv.object(item + "/" + strconv.Itoa(n) + "/raw")
		var v struct{ Stdout string }
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Errorf("bucket version %d: %v (%d bytes)", n, err, len(raw))
			continue
		}
		got[v.Stdout] = n
	}
	for w := range want {
		if _, ok := got[w]; !ok {
			t.Errorf("the bucket has no version with output %q: %v", w, got)
		}
	}
	if extra := a.srv.object(item + "/" + strconv.Itoa(2+2*each) + "/raw"); extra != nil {
		t.Errorf("the bucket has a version %d", 2+2*each)
	}
	// Versions consistent in both caches.
	bucket := bucketData(t, a.srv)
	for _, co := range []*checkout{a, b} {
		co.swampOK("datastore", "sync", "--pull")
		if r := co.swampj("doctor", "--repair", "--confirm"); r.code != 0 {
			t.Errorf("%s: swampj doctor --repair --confirm: exit %d\n%s%s", filepath.Base(co.dir), r.code, r.stdout, r.stderr)
		}
		for rel, data := range bucket {
			local, err := os.ReadFile(filepath.Join(co.cacheDir(), filepath.FromSlash(rel)))
			if err != nil || !bytes.Equal(local, data) {
				t.Errorf("%s's cache differs from the bucket at %s (%d vs %d bytes, %v)", filepath.Base(co.dir), rel, len(local), len(data), err)
			}
		}
		if v, _, ok := co.dataGet("m1", "result"); !ok || v != 1+2*each {
			t.Errorf("%s: data get returned version %d ok=%v, want %d", filepath.Base(co.dir), v, ok, 1+2*each)
		}
	}
}

// A pull killed for real (SIGKILL while `datastore sync` fetches many
// files, one at a time), then the wrapped write: nothing torn reaches the
// bucket, and every version stays readable in both checkouts.
func TestS3KilledPullThenRun(t *testing.T) {
	a := newS3Origin(t, 0)
	for i := 1; i <= 5; i++ { // large outputs, so the pull takes a while
		a.swampOK("model", "method", "run", "m1", "execute", "--input", "run=head -c 3000000 /dev/zero | tr '\\0' "+string(rune('a'+i)))
	}
	before := bucketData(t, a.srv)
	for _, delay := range []time.Duration{0} { // each costs ~55 s: swamp waits out the killed sync's lock (TTL 30 s)
		t.Run(delay.String(), func(t *testing.T) {
			b := a.clone(t, filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "homeB"))
			cfg := filepath.Join(b.dir, ".swamp.yaml")
			y, _ := os.ReadFile(cfg)
			if err := os.WriteFile(cfg, bytes.Replace(y, []byte("    forcePathStyle: true\n"), []byte("    forcePathStyle: true\n    pullConcurrency: 1\n"), 1), 0o644); err != nil {
				t.Fatal(err)
			}
			killed := b.killDuringPull(t, delay)
			t.Logf("SIGKILL after %s: %s", delay, killed)
			r := b.swampj("run", "--", b.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo after")
			if r.code != 0 {
				t.Fatalf("swampj run after the killed pull: exit %d\n%s", r.code, tail(r.stderr, 3000))
			}
			after := bucketData(t, a.srv)
			for rel, data := range before {
				if !bytes.Equal(after[rel], data) {
					t.Errorf("the bucket's %s changed: %d bytes, was %d", rel, len(after[rel]), len(data))
				}
			}
			for n := 1; n <= 5; n++ {
				if v, _, ok := b.dataGet("m1", "result", "--version", strconv.Itoa(n)); !ok || v != n {
					t.Errorf("B: data get --version %d: %d ok=%v", n, v, ok)
				}
			}
		})
	}
}

// killDuringPull starts `swamp datastore sync` and SIGKILLs it once the
// pull has written its first data files (after delay more), and says what
// the cache held then.
func (co *checkout) killDuringPull(t *testing.T, delay time.Duration) string {
	t.Helper()
	cmd := exec.Command(co.s.swamp, "datastore", "sync")
	cmd.Dir, cmd.Env = co.dir, co.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		m, _ := filepath.Glob(filepath.Join(co.home, ".swamp", "repos", "*", "data", "command", "shell", "*", "*", "*", "raw"))
		if len(m) >= 2 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	time.Sleep(delay)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
	var n, torn int
	_ = filepath.Walk(filepath.Join(co.home, ".swamp", "repos"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.Contains(p, "/data/") {
			n++
			if fi.Size() == 0 {
				torn++
			}
		}
		return nil
	})
	return fmt.Sprintf("%d data file(s) in the cache, %d of them empty", n, torn)
}

// swampj's own writes into a remote-backed repo are refused with a clear
// error (exit 1, code unsupported_datastore), and change nothing in the
// cache or the bucket: see docs/remote.md for why.
func TestS3SwampjWriteRefused(t *testing.T) {
	_, b := newS3Team(t, 1)
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	bucket := bucketData(t, b.srv)
	cache := snapshotTree(t, b.cacheDir())
	r := b.swampj("--json", "data", "write", "m1", "note", "--file", in)
	if r.code != 1 {
		t.Fatalf("swampj data write: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil || e.Code != "unsupported_datastore" ||
		!strings.Contains(e.Error, "never a remote (extension) one") || !strings.Contains(e.Error, "swampj run -- swamp") {
		t.Errorf("error: %+v (%v)\n%s", e, err, r.stderr)
	}
	if got := bucketData(t, b.srv); len(got) != len(bucket) {
		t.Errorf("the bucket changed: %d objects, was %d", len(got), len(bucket))
	}
	if got := snapshotTree(t, b.cacheDir()); got != cache {
		t.Errorf("the cache changed:\n%s\nwas\n%s", got, cache)
	}
}

// snapshotTree lists every file under dir with its size and SHA-256.
func snapshotTree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s %d %x\n", strings.TrimPrefix(p, dir), fi.Size(), sha256.Sum256(data))
		}
		return nil
	})
	return b.String()
}

// swamp honours the lock swampj's repair takes: a write command started
// while swampj holds the bucket lock pushes only after swampj let it go.
func TestS3SwampWaitsForSwampjLock(t *testing.T) {
	_, b := newS3Team(t, 1)
	c, err := remote.Discover(b.dir, remote.Options{Env: func(k string) string {
		if k == "HOME" {
			return b.home
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	lk := remote.BucketLocker{Env: func(k string) string {
		switch k {
		case "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY":
			return "test"
		case "AWS_EC2_METADATA_DISABLED":
			return "true"
		}
		return ""
	}}
	release, err := lk.Lock(context.Background(), c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan result, 1)
	go func() { done <- b.swamp("model", "method", "run", "m1", "execute", "--input", "run=echo v2") }()
	item := b.itemRel("m1", "result")
	time.Sleep(8 * time.Second)
	if got := b.srv.object(item + "/2/raw"); got != nil {
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
	if got := b.srv.object(item + "/2/raw"); got == nil {
		t.Errorf("swamp never pushed version 2")
	}
	t.Logf("swamp finished %s after the release", time.Since(released).Round(time.Millisecond))
}

// lazyTeam: A and B (synced once) on models m1 and m2; then A writes m1
// and B writes m2. B's cache has not fetched A's new version of m1 (a
// write command pulls the model it runs), and so its sync state keeps its
// dirty paths: the everyday state of a team's checkout.
func lazyTeam(t *testing.T) (a, b *checkout) {
	t.Helper()
	a = newS3Origin(t, 1)
	a.swampOK("model", "create", "command/shell", "m2")
	a.swampOK("model", "method", "run", "m2", "execute", "--input", "run=echo w1")
	b = a.clone(t, filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "homeB"))
	b.swampOK("datastore", "sync")
	a.swampOK("model", "method", "run", "m1", "execute", "--input", "run=echo v2")
	b.swampOK("model", "method", "run", "m2", "execute", "--input", "run=echo w2")
	return a, b
}

// A healthy checkout of a team: files another checkout wrote that this
// cache has not fetched are notes, the doctor exits 0, and a repair with
// nothing to repair exits 0 and says so. B's `latest` of m1 still names
// version 1 while the index names A's version 2, which B has not fetched:
// the repair leaves it (reads keep working) until the pull brings
// version 2, and then points it there.
func TestS3DoctorUnpulledFilesAreNotes(t *testing.T) {
	_, b := lazyTeam(t)
	r := b.swampj("doctor", "--json")
	var rep struct {
		Findings []struct{ Code, Path string }
		Notices  []struct{ Code, Path string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	item := b.itemRel("m1", "result")
	noted := false
	for _, n := range rep.Notices {
		noted = noted || (n.Code == string(doctor.CodeCacheMissingFile) && strings.HasPrefix(n.Path, item+"/2/"))
	}
	if r.code != 0 || len(rep.Findings) != 0 || !noted {
		t.Fatalf("swampj doctor: exit %d, want 0, no findings and a note for A's %s/2: findings %+v, notes %+v\n%s",
			r.code, item, rep.Findings, rep.Notices, r.stderr)
	}
	r = b.swampj("doctor", "--repair", "--confirm")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to repair") || strings.Contains(r.stdout+r.stderr, "Apply the repair") {
		t.Fatalf("swampj doctor --repair --confirm: exit %d, want 0 and 'nothing to repair'\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v, out, ok := b.dataGet("m1", "result"); !ok || v != 1 || out != "v1" {
		t.Fatalf("B: data get m1 after the repair: version %d %q ok=%v, want the (stale) version 1 still readable", v, out, ok)
	}
	b.swampOK("datastore", "sync", "--pull")
	if r := b.swampj("doctor", "--repair", "--confirm"); r.code != 0 {
		t.Fatalf("swampj doctor --repair --confirm after the pull: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v, out, ok := b.dataGet("m1", "result"); !ok || v != 2 || out != "v2" {
		t.Errorf("B: data get m1 after the pull and the repair: version %d %q ok=%v, want 2", v, out, ok)
	}
}

// sameSizeGarbage: in a team, B's sidecar keeps its dirty paths (the
// extension clears them only when the cache holds every index entry, and
// A wrote a version of m1 that B has not pulled), and B's cache copy of
// m2's version 1 raw is overwritten with garbage of the same size, under
// one of those dirty paths. It returns the raw's cache-relative path and
// the bucket's good bytes.
func sameSizeGarbage(t *testing.T) (b *checkout, rel string, good []byte) {
	t.Helper()
	_, b = lazyTeam(t)
	item := b.itemRel("m2", "result")
	st, err := os.ReadFile(filepath.Join(b.cacheDir(), ".datastore-sync-state.json"))
	if err != nil || !strings.Contains(string(st), item) {
		t.Fatalf("B's sync state does not list %s as dirty (has the extension changed?): %v\n%s", item, err, st)
	}
	rel = item + "/1/raw"
	good = b.srv.object(rel)
	if len(good) == 0 {
		t.Fatalf("the bucket has no %s", rel)
	}
	if err := os.WriteFile(filepath.Join(b.cacheDir(), filepath.FromSlash(rel)), bytes.Repeat([]byte("#"), len(good)), 0o644); err != nil {
		t.Fatal(err)
	}
	return b, rel, good
}

// A same-size garbage raw under a dirty path: the doctor finds it (with
// and without --verify-checksums), and `swampj run` keeps it out of the
// bucket, so the command's push does not replace the good object.
func TestS3SameSizeDamageUnderDirtyPath(t *testing.T) {
	b, rel, good := sameSizeGarbage(t)
	for _, args := range [][]string{{"doctor", "--json"}, {"doctor", "--json", "--verify-checksums"}} {
		r := b.swampj(args...)
		var rep struct {
			Findings []struct{ Code, Path, Next string }
		}
		_ = json.Unmarshal([]byte(r.stdout), &rep)
		found := false
		for _, f := range rep.Findings {
			found = found || (f.Path == rel && f.Code == string(doctor.CodeCacheStaleFile) && f.Next == doctor.NextPush)
		}
		if r.code != 1 || !found {
			t.Errorf("swampj %v: exit %d, want 1 and a %s finding (next: push) for %s\n%s%s", args, r.code, doctor.CodeCacheStaleFile, rel, r.stdout, r.stderr)
		}
	}
	r := b.swampj("run", "--", b.s.swamp, "model", "method", "run", "m2", "execute", "--input", "run=echo w3")
	if r.code != 0 {
		t.Fatalf("swampj run: exit %d\n%s", r.code, tail(r.stderr, 3000))
	}
	if got := b.srv.object(rel); !bytes.Equal(got, good) {
		t.Fatalf("the bucket's %s was replaced: %q, was %q", rel, got, good)
	}
	if v, out, ok := b.dataGet("m2", "result", "--version", "1"); !ok || v != 1 || out != "w1" {
		t.Errorf("B: data get m2 --version 1: %d %q ok=%v", v, out, ok)
	}
	q, _ := filepath.Glob(filepath.Join(b.cacheDir()+".swampj-quarantine", "*", filepath.FromSlash(rel)))
	if len(q) != 1 {
		t.Errorf("quarantine holds %v, want the garbage raw", q)
	}
}

// runEnv runs name in the checkout with exactly env.
func (co *checkout) runEnv(env []string, name string, args ...string) result {
	co.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = co.dir, env
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

// envWithoutAWS is the checkout's environment with no AWS_* variable.
func (co *checkout) envWithoutAWS() []string {
	var out []string
	for _, kv := range co.env() {
		if !strings.HasPrefix(kv, "AWS_") {
			out = append(out, kv)
		}
	}
	return out
}

// Credentials from ~/.aws/credentials alone (HOME a temp dir, no AWS_*
// variable): the repair takes the bucket lock with them, as the AWS SDK's
// default chain finds them, and swamp then reads the repaired version.
func TestS3RepairWithSharedCredentialsFile(t *testing.T) {
	_, b := newS3Team(t, 2)
	rel, raw, _ := tornV2(t, b)
	if err := os.MkdirAll(filepath.Join(b.home, ".aws"), 0o700); err != nil {
		t.Fatal(err)
	}
	creds := "[default]\naws_access_key_id = test\naws_secret_access_key = test\n"
	if err := os.WriteFile(filepath.Join(b.home, ".aws", "credentials"), []byte(creds), 0o600); err != nil {
		t.Fatal(err)
	}
	env := b.envWithoutAWS()
	r := b.runEnv(env, binary, "doctor", "--repair", "--confirm")
	if r.code != 0 || !strings.Contains(r.stdout, "under the bucket lock") {
		t.Fatalf("swampj doctor --repair --confirm with ~/.aws/credentials only: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := b.runEnv(env, b.s.swamp, "datastore", "sync", "--pull"); r.code != 0 {
		t.Fatalf("swamp datastore sync --pull: exit %d\n%s", r.code, tail(r.stderr, 2000))
	}
	if v, out, ok := b.dataGet("m1", "result", "--version", "2"); !ok || v != 2 || out != "v2" {
		t.Errorf("data get --version 2 after the repair: %d %q ok=%v", v, out, ok)
	}
	if got := b.srv.object(rel + "/raw"); !bytes.Equal(got, raw) {
		t.Errorf("the bucket's version 2 raw changed: %d bytes, was %d", len(got), len(raw))
	}
}

// Without swampj-bucket, a command that needs the bucket fails with its
// own code (exit 1), says how to install the program and changes nothing.
func TestBucketProgramMissing(t *testing.T) {
	_, b := newS3Team(t, 2)
	missing := append(b.env(), remote.BucketProgramEnv+"="+filepath.Join(t.TempDir(), "no-such-program"))
	var e struct{ Error, Code string }
	// A wrapped swamp command on a clean cache is not run without the
	// bucket's run lock (not run unguarded, as a bucket that cannot be
	// read would be).
	r := b.runEnv(missing, binary, "--json", "run", "--", b.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo v3")
	if err := json.Unmarshal([]byte(strings.TrimSpace(lastLine(r.stderr))), &e); err != nil || r.code != 1 || e.Code != "bucket_client_missing" {
		t.Fatalf("run: exit %d, want 1 with code bucket_client_missing: %v\n%s", r.code, err, r.stderr)
	}
	if got := b.srv.object(b.itemRel("m1", "result") + "/3/raw"); got != nil {
		t.Errorf("the command ran without the run lock: version 3 is in the bucket")
	}
	// The repair of a torn cache file is refused, and nothing is changed.
	item, _, _ := tornV2(t, b)
	torn, err := os.ReadFile(filepath.Join(b.cacheDir(), filepath.FromSlash(item), "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r = b.runEnv(missing, binary, "--json", "doctor", "--repair", "--confirm")
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil || r.code != 1 || e.Code != "bucket_client_missing" {
		t.Fatalf("exit %d, want 1 with code bucket_client_missing: %v\n%s", r.code, err, r.stderr)
	}
	if !strings.Contains(e.Error, "go install github.com/swampj/swampj/cmd/...") || !strings.Contains(e.Error, "nothing was changed") {
		t.Errorf("the error does not say how to install the program: %s", e.Error)
	}
	if now, err := os.ReadFile(filepath.Join(b.cacheDir(), filepath.FromSlash(item), "metadata.yaml")); err != nil || !bytes.Equal(now, torn) {
		t.Errorf("the torn file was changed without the lock: %v", err)
	}
	// Without the variable, the program beside swampj is the one started.
	var beside []string
	for _, kv := range b.env() {
		if !strings.HasPrefix(kv, remote.BucketProgramEnv+"=") {
			beside = append(beside, kv)
		}
	}
	if r := b.runEnv(beside, binary, "doctor", "--repair", "--confirm"); r.code != 0 {
		t.Fatalf("with swampj-bucket beside swampj: exit %d\n%s", r.code, r.stderr)
	}
}

// A bucket that does not exist and an endpoint nobody listens on are each
// their own error, with their own code, and neither is called a lock.
func TestS3BucketAccessErrors(t *testing.T) {
	_, b := newS3Team(t, 2)
	tornV2(t, b)
	cfg := filepath.Join(b.dir, ".swamp.yaml")
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(b.srv.port)
	for _, tc := range []struct{ name, from, to, code string }{
		{"no such bucket", `bucket: "` + s3Bucket + `"`, `bucket: "no-such-bucket"`, remote.AccessNoBucket},
		{"nobody listening", "127.0.0.1:" + port, "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t)), remote.AccessUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := bytes.Replace(orig, []byte(tc.from), []byte(tc.to), 1)
			if bytes.Equal(changed, orig) {
				t.Fatalf(".swamp.yaml has no %q", tc.from)
			}
			if err := os.WriteFile(cfg, changed, 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(cfg, orig, 0o644)
			r := b.swampj("--json", "doctor", "--repair", "--confirm")
			var e struct{ Error, Code string }
			if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil || r.code != 1 || e.Code != tc.code {
				t.Fatalf("exit %d, want 1 with code %s: %v\n%s", r.code, tc.code, err, r.stderr)
			}
			if strings.Contains(strings.ToLower(e.Error), "lock") || strings.Contains(e.Error, "<?xml") {
				t.Errorf("the error speaks of a lock or carries the response body: %s", e.Error)
			}
			t.Logf("%s: %s", tc.code, e.Error)
		})
	}
}

// The S3 twin of TestGCSRunLockStaysOutOfTheIndexOnAFreshBucket: the S3
// extension also builds a missing index from the bucket's listing.
func TestS3RunLockStaysOutOfTheIndexOnAFreshBucket(t *testing.T) {
	a := newS3Origin(t, 0)
	for i, args := range [][]string{
		{"run", "--", a.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo first"},
		{"run", "--", a.s.swamp, "datastore", "sync"},
	} {
		if r := a.swampj(args...); r.code != 0 {
			t.Fatalf("wrapped command %d: exit %d\n%s%s", i+1, r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		}
	}
	if index := a.srv.object(".datastore-index.json"); strings.Contains(string(index), "swampj-run") {
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
