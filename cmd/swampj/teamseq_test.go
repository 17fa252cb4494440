package main

// Three checkouts of one repo writing to one bucket in turn and at once
// (the same sequence on S3 and on GCS): through `swampj run` no
// acknowledged version is lost and every one is readable in every
// checkout after a sync; with plain swamp the losses are counted and
// logged. And a loss made on purpose during a wrapped command is named.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote"
)

// teamCheckout is one checkout of either stack.
type teamCheckout interface {
	swamp(args ...string) result
	swampj(args ...string) result
	cacheDir() string
	itemRel(model, name string) string
	label() string
	swampPath() string
	envList() []string
}

func (co *checkout) label() string        { return filepath.Base(co.dir) }
func (co *checkout) swampPath() string    { return co.s.swamp }
func (co *checkout) envList() []string    { return co.env() }
func (co *gcsCheckout) label() string     { return filepath.Base(co.dir) }
func (co *gcsCheckout) swampPath() string { return co.s.swamp }
func (co *gcsCheckout) envList() []string { return co.env() }

// team is three checkouts and how to read an object of their bucket.
type team struct {
	t     *testing.T
	cos   []teamCheckout // a, b, c
	fetch func(rel string) []byte
}

// newS3Trio is checkouts a, b and c of a repo with models m1, m2 and m3 on
// one gofakes3 bucket, each synced once.
func newS3Trio(t *testing.T) *team {
	a := newS3Origin(t, 0)
	for _, m := range []string{"m2", "m3"} {
		a.swampOK("model", "create", "command/shell", m)
	}
	tm := &team{t: t, cos: []teamCheckout{a}, fetch: a.srv.object}
	for _, n := range []string{"b", "c"} {
		co := a.clone(t, filepath.Join(t.TempDir(), n), filepath.Join(t.TempDir(), "home"+n))
		co.swampOK("datastore", "sync")
		tm.cos = append(tm.cos, co)
	}
	// The test reads the bucket with the S3 SDK, as swampj does.
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	return tm
}

// newGCSTrio is the same on fake-gcs-server.
func newGCSTrio(t *testing.T) *team {
	a, _ := newGCSTeam(t, 0) // its b predates m2 and m3: fresh clones below
	for _, m := range []string{"m2", "m3"} {
		a.swampOK("model", "create", "command/shell", m)
	}
	tm := &team{t: t, cos: []teamCheckout{a}, fetch: func(rel string) []byte { return a.srv.data(t, rel) }}
	for _, n := range []string{"b", "c"} {
		co := &gcsCheckout{t: t, s: a.s, srv: a.srv, dir: filepath.Join(t.TempDir(), n), home: filepath.Join(t.TempDir(), "home"+n)}
		if out, err := exec.Command("cp", "-r", a.dir, co.dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		if err := os.RemoveAll(filepath.Join(co.dir, ".swamp")); err != nil {
			t.Fatal(err)
		}
		co.swampOK("datastore", "sync")
		tm.cos = append(tm.cos, co)
	}
	return tm
}

// teamWrite is one acknowledged or failed write of the sequence.
type teamWrite struct {
	who, model, tag string
	code            int
	stderr          string
}

// writeOnce runs one write of model by co, wrapped or plain, with a tag
// that names it.
func (tm *team) writeOnce(co teamCheckout, model, tag string, wrapped bool) teamWrite {
	args := []string{"model", "method", "run", model, "execute", "--input", "run=echo " + tag}
	var r result
	if wrapped {
		r = co.swampj(append([]string{"run", "--", co.swampPath()}, args...)...)
	} else {
		r = co.swamp(args...)
	}
	return teamWrite{who: co.label(), model: model, tag: tag, code: r.code, stderr: tail(r.stderr, 2000)}
}

// atOnce runs the writes concurrently (co index, model).
func (tm *team) atOnce(step string, wrapped bool, ws ...[2]string) []teamWrite {
	out := make([]teamWrite, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func(i int, who, model string) {
			defer wg.Done()
			co := tm.cos[strings.Index("abc", who)]
			out[i] = tm.writeOnce(co, model, step+"-"+who+fmtIndex(i)+"-"+model, wrapped)
		}(i, w[0], w[1])
	}
	wg.Wait()
	return out
}

func fmtIndex(i int) string { return string(rune('0' + i)) }

// sequence is the three-checkout sequence: a, b and c write m1 at once;
// then a m2, b m3 and c m1 at once; then, in turn, b m2, c m2 and a m1;
// then all three m3 while a second process in a writes m2.
func (tm *team) sequence(wrapped bool) []teamWrite {
	var all []teamWrite
	all = append(all, tm.atOnce("s1", wrapped, [2]string{"a", "m1"}, [2]string{"b", "m1"}, [2]string{"c", "m1"})...)
	all = append(all, tm.atOnce("s2", wrapped, [2]string{"a", "m2"}, [2]string{"b", "m3"}, [2]string{"c", "m1"})...)
	for _, w := range [][2]string{{"b", "m2"}, {"c", "m2"}, {"a", "m1"}} {
		all = append(all, tm.atOnce("s3", wrapped, w)...)
	}
	all = append(all, tm.atOnce("s4", wrapped, [2]string{"a", "m3"}, [2]string{"b", "m3"}, [2]string{"c", "m3"}, [2]string{"a", "m2"})...)
	return all
}

var versionRaw = regexp.MustCompile(`^(data/command/shell/[^/]+/result)/[0-9]+/raw$`)

// bucketTags is every version's output in the bucket, by model.
func (tm *team) bucketTags() map[string]map[string]bool {
	tm.t.Helper()
	c, err := remote.Discover(tm.cos[0].(interface{ dirOf() string }).dirOf(), remote.Options{Env: envLookup(tm.cos[0].envList())})
	if err != nil {
		tm.t.Fatal(err)
	}
	snap, err := remote.SnapshotBucket(context.Background(), c, remote.Options{Env: envLookup(tm.cos[0].envList())})
	if err != nil {
		tm.t.Fatal(err)
	}
	item := map[string]string{}
	for _, m := range []string{"m1", "m2", "m3"} {
		item[tm.cos[0].itemRel(m, "result")] = m
	}
	out := map[string]map[string]bool{"m1": {}, "m2": {}, "m3": {}}
	for rel := range snap.Objects {
		mm := versionRaw.FindStringSubmatch(rel)
		if mm == nil {
			continue
		}
		var v struct{ Stdout string }
		if json.Unmarshal(tm.fetch(rel), &v) == nil {
			out[item[mm[1]]][strings.TrimSpace(v.Stdout)] = true
		}
	}
	return out
}

// cacheTags is every version's output in co's cache, by model.
func (tm *team) cacheTags(co teamCheckout) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, m := range []string{"m1", "m2", "m3"} {
		out[m] = map[string]bool{}
		raws, _ := filepath.Glob(filepath.Join(co.cacheDir(), filepath.FromSlash(co.itemRel(m, "result")), "*", "raw"))
		for _, p := range raws {
			b, _ := os.ReadFile(p)
			var v struct{ Stdout string }
			if json.Unmarshal(b, &v) == nil {
				out[m][strings.TrimSpace(v.Stdout)] = true
			}
		}
	}
	return out
}

func envLookup(env []string) func(string) string {
	return func(k string) string {
		v := ""
		for _, kv := range env { // the last one wins, as exec does
			if name, val, ok := strings.Cut(kv, "="); ok && name == k {
				v = val
			}
		}
		return v
	}
}

func (co *checkout) dirOf() string    { return co.dir }
func (co *gcsCheckout) dirOf() string { return co.dir }

// lostTags are the acknowledged writes whose version is not in the bucket.
func (tm *team) lostTags(ws []teamWrite) []teamWrite {
	in := tm.bucketTags()
	var lost []teamWrite
	for _, w := range ws {
		if w.code == 0 && !in[w.model][w.tag] {
			lost = append(lost, w)
		}
	}
	return lost
}

// throughSwampj runs the sequence through `swampj run` and asserts nothing
// acknowledged is lost and everything is readable in every checkout after
// a wrapped sync.
func (tm *team) throughSwampj(t *testing.T) {
	start := time.Now()
	ws := tm.sequence(true)
	t.Logf("sequence through swampj: %d writes in %s", len(ws), time.Since(start).Round(time.Second))
	for _, w := range ws {
		if w.code != 0 {
			t.Errorf("%s writing %s (%s): exit %d\n%s", w.who, w.model, w.tag, w.code, w.stderr)
		}
	}
	lost := tm.lostTags(ws)
	for _, w := range lost {
		t.Errorf("acknowledged write lost from the bucket: %s wrote %s (%s)", w.who, w.model, w.tag)
	}
	for _, co := range tm.cos {
		if r := co.swampj("run", "--", co.swampPath(), "datastore", "sync"); r.code != 0 {
			t.Errorf("%s: swampj run -- swamp datastore sync: exit %d\n%s", co.label(), r.code, tail(r.stderr, 2000))
		}
		have := tm.cacheTags(co)
		for _, w := range ws {
			if w.code == 0 && !have[w.model][w.tag] {
				t.Errorf("%s's cache lacks %s's version of %s (%s) after a sync", co.label(), w.who, w.model, w.tag)
			}
		}
	}
}

// plainSwamp runs the sequence with plain swamp and logs what it loses.
func (tm *team) plainSwamp(t *testing.T) {
	ws := tm.sequence(false)
	lost := tm.lostTags(ws)
	acked := 0
	for _, w := range ws {
		if w.code == 0 {
			acked++
		}
	}
	t.Logf("plain swamp: %d of %d writes acknowledged, %d acknowledged version(s) lost from the bucket", acked, len(ws), len(lost))
	for _, w := range lost {
		t.Logf("lost: %s wrote %s (%s)", w.who, w.model, w.tag)
	}
}

func TestS3TeamSequenceThroughSwampj(t *testing.T)  { newS3Trio(t).throughSwampj(t) }
func TestGCSTeamSequenceThroughSwampj(t *testing.T) { newGCSTrio(t).throughSwampj(t) }
func TestS3TeamSequencePlainSwamp(t *testing.T)     { newS3Trio(t).plainSwamp(t) }
func TestGCSTeamSequencePlainSwamp(t *testing.T)    { newGCSTrio(t).plainSwamp(t) }
