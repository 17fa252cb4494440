package main

// The shared-datastore suite (#26): two checkouts (two HOMEs, two caches)
// of one repo on one bucket, with the real swamp, the real
// @swamp/s3-datastore extension and gofakes3 on 127.0.0.1. Skipped with a
// notice where ../shared/realswamp-s3 is absent; .ci/run sets it up where
// it is present.
//
//	SWAMPJ_REALSWAMP_S3=/path/to/shared/realswamp-s3 go test ./cmd/swampj -run TestS3 -count=1 -v

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
