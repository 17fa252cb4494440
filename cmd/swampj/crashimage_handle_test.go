package main

// A real-kernel power cut of a host writing through one held write.Handle
// (testdata/batchwrite -handle): the handle commits its catalog rows
// lazily (synchronous=NORMAL) and keeps each write's intent open until a
// sync of the catalog has made the row durable, so a cut loses rows still
// only in the page cache, and recovery must redo them from the journal.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// TestCrashImageHandleWrite cuts a host writing the image batch's ten
// versions one at a time through one handle. After `swampj recover` each
// item holds a prefix of its versions, each with its bytes, every write
// the host saw acknowledged among them, latest naming the last; the
// catalog verifies clean (every version on disk has its row: the rows a
// cut took were redone); and after the doctor's repair data get serves
// each item's last version.
func TestCrashImageHandleWrite(t *testing.T) {
	c := newCrashImg(t)
	prog, err := batchWriter()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(c.mp(), "repo")
	items := imageBatch()
	syscall.Sync()
	orig := treeSums(t, repo)
	base := c.finishBase()
	args := append([]string{"-handle"}, batchArgs(items)...)
	d := measureRunOf(t, c, base, prog, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("ten writes through one handle take about %s (start to exit); %d cut points", d, len(delays))

	ackedTotal, redone := 0, 0
	start := time.Now()
	cc := fsxtest.Count(t, "handle-writes", "image")
	for i, delay := range delays {
		img, _, _ := c.cutIn(base, i, delay, "repo", prog, args...)
		acked := parseAcks(t, c.stdout)
		cc.Check()
		label := fmt.Sprintf("cut %d (delay %s, %d acknowledged)", i, delay, len(acked))
		r, mp := c.open(img, i)
		if pre := swampj(t, r, "catalog", "verify"); strings.Contains(pre.stdout, "missing ") {
			redone++ // rows the cut took, which recovery must redo
		}
		mustOK(t, swampj(t, r, "recover"), label+": recover")
		last := checkHandleWrites(t, label, r, orig, items, acked)
		if verify := swampj(t, r, "catalog", "verify"); verify.code != 0 {
			t.Errorf("%s: catalog verify after recover: exit %d\n%s%s", label, verify.code, verify.stdout, verify.stderr)
		}
		imageSettle(t, r, label)
		for k, it := range items {
			if last[k] < 0 {
				continue
			}
			if get := swampj(t, r, "data", "get", it.addr); get.code != 0 || get.stdout != it.contents[last[k]] {
				t.Errorf("%s: data get %s: exit %d, %d bytes, want version %d of the writes\n%s", label, it.addr, get.code, len(get.stdout), last[k]+1, get.stderr)
			}
		}
		ackedTotal += len(acked)
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("handle writes: %d power-cut images in %s; %d acknowledged writes in all; %d images had catalog rows missing before recovery",
		len(delays), time.Since(start).Round(time.Millisecond), ackedTotal, redone)
}

// parseAcks reads batchwrite -handle's "acked ADDR VERSION" lines.
func parseAcks(t *testing.T, out string) map[string]int {
	t.Helper()
	acked := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "acked" {
			continue
		}
		v, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("batchwrite printed %q", line)
		}
		acked[f[1]] = max(acked[f[1]], v)
	}
	return acked
}

// checkHandleWrites holds the recovered image at r to the handle's oracle
// and returns, per item, the index in its contents of the last version
// written (-1: none). Each item must hold, above what orig had, a run of
// its versions from the first, each with its bytes, reaching every
// acknowledged one, with latest naming the last.
func checkHandleWrites(t *testing.T, label, r string, orig map[string]string, items []batchItem, acked map[string]int) []int {
	t.Helper()
	got := treeSums(t, r)
	last := make([]int, len(items))
	for k, it := range items {
		had := 0
		var added []int
		for rel := range got {
			rest, ok := strings.CutPrefix(rel, it.dir+"/")
			if !ok {
				continue
			}
			v, f, ok := strings.Cut(rest, "/")
			n, err := strconv.Atoi(v)
			if !ok || err != nil || f != "raw" {
				continue
			}
			if _, synced := orig[rel]; synced {
				had = max(had, n)
				continue
			}
			added = append(added, n)
		}
		sort.Ints(added)
		for x, n := range added {
			if n != had+x+1 || x >= len(it.contents) {
				t.Errorf("%s: %s: versions added %v above %d are not a run from %d", label, it.addr, added, had, had+1)
				break
			}
			if got[fmt.Sprintf("%s/%d/raw", it.dir, n)] != sha([]byte(it.contents[x])) {
				t.Errorf("%s: %s version %d is not write %d's bytes", label, it.addr, n, x+1)
			}
		}
		if a, ok := acked[it.addr]; ok && (len(added) == 0 || added[len(added)-1] < a) {
			t.Errorf("%s: %s: version %d was acknowledged, but the image holds %v above %d", label, it.addr, a, added, had)
		}
		last[k] = len(added) - 1
		if len(added) > 0 {
			latest, err := os.ReadFile(filepath.Join(r, it.dir, "latest"))
			if want := strconv.Itoa(added[len(added)-1]); err != nil || strings.TrimSpace(string(latest)) != want {
				t.Errorf("%s: %s: latest is %q (%v), want %s", label, it.addr, latest, err, want)
			}
		}
	}
	latestReadable(t, label, r, got)
	return last
}
