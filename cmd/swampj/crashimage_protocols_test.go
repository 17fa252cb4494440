package main

// Real-kernel power-cut images (crashimage_test.go) of the protocols the
// first two image tests leave out: a reverse migration, unset --migrate,
// the doctor's repair of #3955 damage and a catalog rebuild. Each is cut
// at time-spread stop points of the real binary, the copy is mounted,
// recovered and held to the same oracle as the migrate image test: every
// original file exactly once with its bytes, the doctor clean after its
// repair, no open intent, the catalog as the end state wants it, and a
// command that returned before the cut leaves the new state.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// imageSettle is what every image must satisfy after its recover: the
// doctor's repair (a cut leaves dead locks, which it moves) and then the
// doctor exit 0, no intent left open, and a second recover a no-op.
func imageSettle(t *testing.T, r, label string) {
	t.Helper()
	if res := swampj(t, r, "doctor", "--repair", "--confirm"); res.code != 0 {
		t.Errorf("%s: doctor --repair --confirm exit %d\n%s%s", label, res.code, res.stdout, res.stderr)
	}
	if res := swampj(t, r, "doctor"); res.code != 0 {
		t.Errorf("%s: doctor exit %d\n%s%s", label, res.code, res.stdout, res.stderr)
	}
	var jl struct{ Intents []struct{ Status string } }
	res := mustOK(t, swampj(t, r, "journal", "list", "--json"), "journal list")
	if err := json.Unmarshal([]byte(res.stdout), &jl); err != nil {
		t.Errorf("%s: journal list --json: %v\n%s", label, err, res.stdout)
	}
	for _, in := range jl.Intents {
		if in.Status != "done" && in.Status != "rolled-back" {
			t.Errorf("%s: intent left with status %q after recover", label, in.Status)
		}
	}
	if res := swampj(t, r, "recover"); res.code != 0 || !strings.Contains(res.stdout, "Nothing to recover") {
		t.Errorf("%s: second recover is not a no-op: %+v", label, res)
	}
}

// imageOutcomeKey is the counts key of one image.
func imageOutcomeKey(outcome string, pending, returned bool) string {
	if pending {
		outcome += " (recovered an open intent)"
	}
	if returned {
		outcome += " (after return)"
	}
	return outcome
}

// reverseImages cuts a move of the namespace's data back to the root
// (args) on a repo migrated forward into namespace ns, and checks every
// image. unset: the command also removes the namespace from .swamp.yaml,
// so the end state verifies clean; otherwise the namespace stays and the
// end state is exactly the un-migrated one (killReverseVerify).
func reverseImages(t *testing.T, protocol string, unset bool, args ...string) {
	const ns = "x"
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "repo")
	mustOK(t, swampj(t, repo, "datastore", "namespace", "set", ns), "namespace set")
	mustOK(t, swampj(t, repo, "datastore", "namespace", "migrate", "--confirm"), "namespace migrate")
	syscall.Sync()
	before := swampj(t, repo, "catalog", "verify")
	orig := treeSums(t, repo)
	base := c.finishBase()
	d := measureRun(t, c, base, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("%s takes about %s (start to exit); %d cut points, %d files", protocol, d, len(delays), len(orig))
	nsPrefix := ".swamp/" + ns + "/"
	marker := nsPrefix + ".namespace.json"

	counts := map[string]int{}
	start := time.Now()
	cc := fsxtest.Count(t, protocol, "image")
	for i, delay := range delays {
		img, returned, _ := c.cut(base, i, delay, args...)
		cc.Check()
		label := fmt.Sprintf("cut %d (delay %s)", i, delay)
		r, mp := c.open(img, i)
		rec := mustOK(t, swampj(t, r, "recover"), label+": recover")
		pending := !strings.Contains(rec.stdout, "Nothing to recover")
		got := treeSums(t, r)
		moved, stayed := 0, 0
		for rel, sum := range orig {
			if unset && rel == marker {
				continue // unset removes the namespace's marker: checked below
			}
			cands := []string{rel}
			if strings.HasPrefix(rel, nsPrefix) {
				cands = append(cands, ".swamp/"+strings.TrimPrefix(rel, nsPrefix))
			}
			var at []string
			for _, cand := range cands {
				if _, ok := got[cand]; ok {
					at = append(at, cand)
				}
			}
			if len(at) != 1 {
				t.Errorf("%s: %s exists %d times: %v", label, rel, len(at), at)
				continue
			}
			if at[0] != rel {
				moved++
			} else if strings.HasPrefix(rel, nsPrefix+"data/") && !strings.HasSuffix(rel, "_catalog.db") {
				stayed++
			}
			if strings.HasSuffix(rel, "_catalog.db") || rel == ".swamp.yaml" {
				continue // the catalog is restamped and the config rewritten, not moved
			}
			if got[at[0]] != sum {
				t.Errorf("%s: %s changed content", label, at[0])
			}
		}
		outcome := "mixed"
		switch {
		case moved == 0:
			outcome = "old"
		case stayed == 0:
			outcome = "new"
		}
		if outcome == "mixed" {
			t.Errorf("%s: %d files moved back, %d data files stayed in the namespace: neither all-old nor all-new", label, moved, stayed)
		}
		if unset {
			cfg, err := os.ReadFile(filepath.Join(r, ".swamp.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			kept := strings.Contains(string(cfg), "namespace: "+ns)
			_, markerErr := os.Lstat(filepath.Join(r, marker))
			if kept != (outcome == "old") {
				t.Errorf("%s (%s): .swamp.yaml names the namespace: %v\n%s", label, outcome, kept, cfg)
			}
			if outcome == "old" && markerErr != nil {
				t.Errorf("%s (old): the namespace marker %s is gone: %v", label, marker, markerErr)
			}
		}
		if returned && outcome != "new" {
			t.Errorf("%s: %s returned before the cut but the image is %s (%d moved, %d data files stayed)", label, protocol, outcome, moved, stayed)
		}
		imageSettle(t, r, fmt.Sprintf("%s, %s", label, outcome))
		verify := swampj(t, r, "catalog", "verify")
		switch {
		case outcome == "old" && (verify.code != before.code || verify.stdout != before.stdout):
			t.Errorf("%s (old): catalog verify differs from the uncrashed start (exit %d, want %d)\n%s%s", label, verify.code, before.code, verify.stdout, verify.stderr)
		case outcome == "new" && unset && verify.code != 0:
			t.Errorf("%s (new): catalog verify exit %d\n%s%s", label, verify.code, verify.stdout, verify.stderr)
		case outcome == "new" && !unset:
			killReverseVerify(t, r) // exactly un-migrated; then forward again verifies clean
		}
		counts[imageOutcomeKey(outcome, pending, returned)]++
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("%s: %d power-cut images in %s: %v", protocol, len(delays), time.Since(start).Round(time.Millisecond), counts)
}

func TestCrashImageReverse(t *testing.T) {
	reverseImages(t, "reverse", false, "datastore", "namespace", "migrate", "--reverse", "--confirm")
}

func TestCrashImageUnsetMigrate(t *testing.T) {
	reverseImages(t, "unset-migrate", true, "datastore", "namespace", "unset", "--migrate", "--confirm")
}
