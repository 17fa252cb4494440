package main

// Real-kernel power cuts of a checkout's cache during `swamp datastore
// sync` (opt-in like the other images: root, loop devices,
// SWAMPJ_CRASH_IMAGES=1, and the S3 stack of s3stack_test.go). Checkout B
// (its repo and its HOME, so its cache) lives on the loop-mounted image;
// the S3 server and checkout A stay outside it, as another machine and the
// bucket would. Each image is a power cut of B during or right after its
// pull; B's next write, run through `swampj run`, must leave every object
// the bucket held byte-identical, and B must read every version afterwards.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestCrashImageS3Pull(t *testing.T) {
	s := needS3Stack(t)
	c := newCrashImg(t)
	a := newS3Origin(t, 4)
	before := bucketData(t, a.srv)
	b := a.clone(t, filepath.Join(c.mp(), "b"), filepath.Join(c.mp(), "homeB"))
	for k, v := range map[string]string{"HOME": b.home, "SWAMP_S3_HOME": b.home, "SWAMP_S3_PORT": strconv.Itoa(a.srv.port),
		"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1", "NO_COLOR": "1"} {
		t.Setenv(k, v) // cutIn's child inherits them
	}
	base := c.finishBase()
	sync := []string{"datastore", "sync"}
	img0, _, ran := c.cutIn(base, 600, -1, "b", s.swamp, sync...)
	os.Remove(img0)
	delays := []time.Duration{-1, ran * 6 / 10, ran * 85 / 100}
	if n := imageCuts(); n < len(delays) {
		delays = delays[:n]
	}
	for i, delay := range delays {
		img, returned, _ := c.cutIn(base, 610+i, delay, "b", s.swamp, sync...)
		_, mp := c.open(img, i)
		co := &checkout{t: t, s: s, srv: a.srv, dir: filepath.Join(mp, "b"), home: filepath.Join(mp, "homeB")}
		t.Logf("cut %d (%v, returned %v): %s", i, delay, returned, imageCacheState(co))
		// A killed sync leaves its bucket lock until the TTL: swampj's
		// repair (and swamp) wait it out.
		r := co.swampj("--lock-timeout", "90s", "run", "--", s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo cut"+strconv.Itoa(i))
		if r.code != 0 {
			t.Errorf("cut %d: swampj run: exit %d\n%s", i, r.code, tail(r.stderr, 3000))
		}
		after := bucketData(t, a.srv)
		for rel, data := range before {
			if !bytes.Equal(after[rel], data) {
				t.Errorf("cut %d: the bucket's %s changed: %d bytes, was %d", i, rel, len(after[rel]), len(data))
			}
		}
		for n := 1; n <= 4; n++ {
			if v, _, ok := co.dataGet("m1", "result", "--version", strconv.Itoa(n)); !ok || v != n {
				t.Errorf("cut %d: B: data get --version %d: %d ok=%v", i, n, v, ok)
			}
		}
		c.close(img, mp)
	}
}

// imageCacheState says what a cut left in the checkout's cache.
func imageCacheState(co *checkout) string {
	var n, empty int
	_ = filepath.Walk(filepath.Join(co.home, ".swamp", "repos"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n++
			if fi.Size() == 0 {
				empty++
			}
		}
		return nil
	})
	_, sidecar := os.Stat(filepath.Join(co.home, ".swamp", "repos"))
	return strconv.Itoa(n) + " cache file(s), " + strconv.Itoa(empty) + " empty" + map[bool]string{true: "", false: " (no cache dir)"}[sidecar == nil]
}
