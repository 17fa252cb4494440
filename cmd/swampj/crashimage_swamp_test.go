package main

// Real-kernel power cuts of the real swamp's method runs (opt-in: root,
// loop devices, SWAMPJ_CRASH_IMAGES=1 and SWAMP_BIN). swamp writes its
// versions and run records without fsync, so a power cut leaves #3955's
// zero-byte files and locks; these images check that
//   - under `swampj run --` nothing the command wrote is lost or empty in
//     an image taken the moment the wrapper returns, and
//   - after a cut in the middle of a bare swamp method run,
//     `swampj recover` and `swampj doctor --repair --confirm` leave a repo
//     where swamp's data get, data query, model output search and its next
//     method run all work, and no byte of the synced baseline is lost.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// zeroByteFiles lists the empty regular files below dir.
func zeroByteFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		switch d.Name() {
		case "_journal.db.lock", "_journal.db.gate":
			return nil // swampj's flock files: empty by design, they hold no data
		case "_catalog.db-wal":
			return nil // SQLite's log, kept between processes and truncated at close
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out
}

// imageSwampRunFindings are what a cut of swamp's own method run may leave
// beyond a dead lock: swamp's writes are not crash-safe (#3955), so a cut
// leaves zero-byte versions, `latest` naming one or zero bytes itself, and
// catalog rows for them, and run records (outputs, workflow runs) cut
// short: exactly what swampj's repair exists for.
var imageSwampRunFindings = []string{"version_unreadable", "latest_damaged", "latest_unreadable", "catalog_row_unreadable",
	"catalog_latest_wrong", "record_unreadable"}

func TestCrashImageSwampRuns(t *testing.T) {
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		t.Skip("SWAMP_BIN is not set: the crash images of swamp's own method runs need the real swamp")
	}
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "swamprepo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	swamp := func(dir string, args ...string) result {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		return runResult(t, cmd)
	}
	for _, args := range [][]string{{"init"}, {"model", "create", "command/shell", "m1"},
		{"model", "method", "run", "m1", "execute", "--input", "run=echo base"}} {
		mustOK(t, swamp(repo, args...), "swamp "+strings.Join(args, " "))
	}
	syscall.Sync()
	baseline := treeSums(t, filepath.Join(repo, ".swamp", "data"))
	base := c.finishBase()
	run := []string{"model", "method", "run", "m1", "execute", "--input", "run=echo again"}

	// Under the wrapper: an image taken right after it returns has every
	// file the run wrote, none empty.
	for i := 0; i < 2; i++ {
		img, returned, _ := c.cutIn(base, 100+i, -1, "swamprepo", binary, append([]string{"run", "--", bin}, run...)...)
		if !returned {
			t.Fatal("the wrapped run did not return")
		}
		r, mp := c.open(img, i)
		sr := filepath.Join(r, "..", "swamprepo")
		if z := zeroByteFiles(t, filepath.Join(sr, ".swamp")); len(z) > 0 {
			t.Errorf("image right after swampj run returned holds zero-byte files: %v", z)
		}
		mustOK(t, swamp(sr, "data", "get", "m1", "result"), "swamp data get after the wrapped run")
		c.close(img, mp)
	}

	// The same run without the wrapper, for comparison (logged: whether
	// the kernel had flushed is not this test's to decide).
	img, _, ran := c.cutIn(base, 200, -1, "swamprepo", bin, run...)
	r, mp := c.open(img, 200)
	t.Logf("bare swamp method run (%s): image right after it returned holds %d zero-byte file(s)",
		ran.Round(time.Millisecond), len(zeroByteFiles(t, filepath.Join(r, "..", "swamprepo", ".swamp"))))
	c.close(img, mp)

	// Cuts in the middle of bare runs, then swampj's recovery and repair.
	cuts := imageCuts()
	if cuts > 8 {
		cuts = 8
	}
	for i := 0; i < cuts; i++ {
		// swamp writes in the last part of its run: cuts from 60 % to 100 %.
		delay := time.Duration(float64(ran) * (0.6 + 0.4*float64(i)/float64(cuts)))
		img, _, _ := c.cutIn(base, 300+i, delay, "swamprepo", bin, run...)
		r, mp := c.open(img, i)
		sr := filepath.Join(r, "..", "swamprepo")
		// A reboot takes longer than the doctor's 5 s window for files that
		// may still be being written (a lock between create and write, a
		// run record): age the files the cut left, rather than wait, so the
		// doctor judges them as it would after a real boot.
		past := time.Now().Add(-time.Minute)
		_ = filepath.WalkDir(filepath.Join(sr, ".swamp"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				_ = os.Chtimes(p, past, past)
			}
			return nil
		})
		mustOK(t, swampj(t, sr, "recover"), "recover")
		imageRepair(t, sr, "cut "+strconv.Itoa(i)+" ("+delay.String()+")", imageSwampRunFindings...)
		if res := swampj(t, sr, "doctor"); res.code != 0 {
			t.Errorf("cut %d: doctor after the repair exit %d\n%s", i, res.code, res.stdout)
		}
		for _, args := range [][]string{{"data", "get", "m1", "result"}, {"data", "query", `modelName == "m1"`, "--json"},
			{"model", "output", "search", "--json"}, run} {
			if res := swamp(sr, args...); res.code != 0 {
				t.Errorf("cut %d (%s): swamp %s exit %d after the repair\n%s%s", i, delay, strings.Join(args, " "), res.code, res.stdout, res.stderr)
			}
		}
		now := treeSums(t, filepath.Join(sr, ".swamp", "data"))
		for rel, sum := range baseline {
			if strings.HasPrefix(rel, "_catalog") || strings.HasSuffix(rel, "/latest") {
				continue // derived, or moved on by the next run
			}
			if now[rel] != sum {
				t.Errorf("cut %d: synced baseline file %s lost or changed", i, rel)
			}
		}
		c.close(img, mp)
	}
}
