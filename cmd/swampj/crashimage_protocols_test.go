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

// imageCutFindings are the doctor's findings a power cut may leave after
// recover: a lock file (swamp's model or datastore lock) and the journal's
// holder record, each naming the dead pid. The repair moves them; any
// other finding would be damage the repair quietly fixes, and fails.
// data_at_other_root: a reverse leaves the namespace set by design, and a
// forward migration rolled back leaves the data at the root with it set.
var imageCutFindings = []string{"lock_dead", "journal_holder_stale", "data_at_other_root"}

// imageRepair runs the doctor, fails on undecodable JSON and on any
// finding that is neither in imageCutFindings nor in also (what the image
// is expected to hold, such as the damage a repair image starts from),
// then runs doctor --repair --confirm, which must exit 0.
func imageRepair(t *testing.T, r, label string, also ...string) {
	t.Helper()
	res := swampj(t, r, "--json", "doctor")
	var rep struct {
		Findings []struct {
			Code, Path, Message string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Errorf("%s: doctor --json (exit %d) is not JSON: %v\n%s%s", label, res.code, err, res.stdout, res.stderr)
	}
	allowed := map[string]bool{}
	for _, c := range append(append([]string{}, imageCutFindings...), also...) {
		allowed[c] = true
	}
	for _, f := range rep.Findings {
		if !allowed[f.Code] {
			t.Errorf("%s: before the repair the doctor finds %s (%s: %s), which a cut may not leave (expected only %v)",
				label, f.Code, f.Path, f.Message, append(append([]string{}, imageCutFindings...), also...))
		}
	}
	if res, ok := doctorSettled(t, r, "--repair", "--confirm"); !ok {
		t.Errorf("%s: doctor --repair --confirm exit %d\n%s%s", label, res.code, res.stdout, res.stderr)
	}
}

// imageSettle is what every image must satisfy after its recover: the
// doctor finds nothing but what a cut leaves (imageRepair, plus also), its
// repair moves that, then the doctor exits 0, no intent is left open (the
// journal list decoded), and a second recover is a no-op.
func imageSettle(t *testing.T, r, label string, also ...string) {
	t.Helper()
	imageRepair(t, r, label, also...)
	if res, ok := doctorSettled(t, r); !ok {
		t.Errorf("%s: doctor exit %d\n%s%s", label, res.code, res.stdout, res.stderr)
	}
	imageNoOpenIntent(t, r, label)
	if res := swampj(t, r, "recover"); res.code != 0 || !strings.Contains(res.stdout, "Nothing to recover") {
		t.Errorf("%s: second recover is not a no-op: %+v", label, res)
	}
}

// imageNoOpenIntent: journal list --json decodes and every intent is done
// or rolled back.
func imageNoOpenIntent(t *testing.T, r, label string) {
	t.Helper()
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
			} else if strings.HasPrefix(rel, nsPrefix) && rel != marker {
				stayed++ // every unit moves back, not only the data (the marker stays)
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
			t.Errorf("%s: %d files moved back, %d files stayed in the namespace: neither all-old nor all-new", label, moved, stayed)
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
			t.Errorf("%s: %s returned before the cut but the image is %s (%d moved, %d stayed in the namespace)", label, protocol, outcome, moved, stayed)
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

// quarantineCopies maps each data-root-relative path ("aws/ec2/.../2/raw")
// to the image paths of its copies under .swamp/.swampj-quarantine/<stamp>/_solo.
func quarantineCopies(got map[string]string) map[string][]string {
	const q = ".swamp/.swampj-quarantine/"
	out := map[string][]string{}
	for rel := range got {
		if !strings.HasPrefix(rel, q) {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(rel, q), "/", 3) // stamp, _solo, path
		if len(parts) == 3 && parts[1] == "_solo" {
			out[".swamp/data/"+parts[2]] = append(out[".swamp/data/"+parts[2]], rel)
		}
	}
	return out
}

// TestCrashImageRepair cuts `doctor --repair --confirm` on #3955 damage:
// the latest versions of two items are zero-byte (raw and metadata.yaml),
// as a power cut leaves swamp's unsynced writes. In every image each
// original file's bytes are in exactly one place, in the data or in the
// quarantine (never lost, never twice); only the damaged items' files may
// be quarantined, and only their latest may be rewritten. After the
// doctor's repair every item's latest names a readable version.
func TestCrashImageRepair(t *testing.T) {
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "repo")
	type damaged struct{ addr, itemDir, version, readable string }
	items := []damaged{
		{crashImageAddr, ".swamp/data/command/shell/" + dataModel + "/result", "3", "2"},
		{"aws/ec2/vpc/6a97bcef-f0f2-42d2-a5e4-92b00ba884fe/vpc", ".swamp/data/aws/ec2/vpc/6a97bcef-f0f2-42d2-a5e4-92b00ba884fe/vpc", "2", "1"},
	}
	want := map[string]string{} // addr -> the content its latest must serve after the repair
	var damagedFiles []string
	for _, it := range items {
		b, err := os.ReadFile(filepath.Join(repo, it.itemDir, it.readable, "raw"))
		if err != nil {
			t.Fatal(err)
		}
		want[it.addr] = string(b)
		for _, f := range []string{"raw", "metadata.yaml"} {
			rel := it.itemDir + "/" + it.version + "/" + f
			if err := os.Truncate(filepath.Join(repo, rel), 0); err != nil {
				t.Fatal(err)
			}
			damagedFiles = append(damagedFiles, rel)
		}
	}
	syscall.Sync()
	orig := treeSums(t, repo)
	base := c.finishBase()
	args := []string{"doctor", "--repair", "--confirm"}
	d := measureRun(t, c, base, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("doctor --repair takes about %s (start to exit); %d cut points, %d files", d, len(delays), len(orig))

	inDamagedItem := func(rel string) bool {
		for _, it := range items {
			if strings.HasPrefix(rel, it.itemDir+"/") {
				return true
			}
		}
		return false
	}
	// files checks every original file and returns how many of the
	// damaged versions' files are quarantined.
	files := func(label, r string) (quarantined int) {
		got := treeSums(t, r)
		qc := quarantineCopies(got)
		for rel, sum := range orig {
			if strings.HasSuffix(rel, "_catalog.db") {
				continue // derived; the repair fixes its rows
			}
			var at, holding []string
			if _, ok := got[rel]; ok {
				at = append(at, rel)
			}
			at = append(at, qc[rel]...)
			for _, p := range at {
				if got[p] == sum {
					holding = append(holding, p)
				}
			}
			switch {
			case len(holding) != 1:
				t.Errorf("%s: the bytes of %s are in %d places: %v (it exists at %v)", label, rel, len(holding), holding, at)
			case len(qc[rel]) > 0 && !inDamagedItem(rel):
				t.Errorf("%s: %s, which is not damaged, was quarantined: %v", label, rel, qc[rel])
			case len(at) != 1 && !strings.HasSuffix(rel, "/latest"):
				t.Errorf("%s: %s exists %d times: %v", label, rel, len(at), at)
			}
			if len(qc[rel]) > 0 {
				for _, f := range damagedFiles {
					if f == rel {
						quarantined++
					}
				}
			}
		}
		return quarantined
	}

	counts := map[string]int{}
	start := time.Now()
	cc := fsxtest.Count(t, "repair", "image")
	for i, delay := range delays {
		img, returned, _ := c.cut(base, i, delay, args...)
		cc.Check()
		label := fmt.Sprintf("cut %d (delay %s)", i, delay)
		r, mp := c.open(img, i)
		rec := mustOK(t, swampj(t, r, "recover"), label+": recover")
		pending := !strings.Contains(rec.stdout, "Nothing to recover")
		outcome := "mixed"
		switch q := files(label, r); q {
		case 0:
			outcome = "old"
		case len(damagedFiles):
			outcome = "new"
		default:
			t.Errorf("%s: %d of the %d damaged files quarantined: neither all-old nor all-new", label, q, len(damagedFiles))
		}
		if returned && outcome != "new" {
			t.Errorf("%s: the repair returned before the cut but the image is %s", label, outcome)
		}
		// The doctor's repair (again, or for the first time in an old
		// image, which still holds the #3955 damage it starts from: exactly
		// those findings, no others).
		var damage []string
		if outcome == "old" {
			damage = []string{"version_unreadable", "latest_unreadable", "catalog_row_unreadable", "catalog_latest_wrong"}
		}
		imageSettle(t, r, fmt.Sprintf("%s, %s", label, outcome), damage...)
		if q := files(label+" after the doctor's repair", r); q != len(damagedFiles) {
			t.Errorf("%s: after the doctor's repair %d of the %d damaged files are quarantined", label, q, len(damagedFiles))
		}
		for addr, content := range want {
			if get := swampj(t, r, "data", "get", addr); get.code != 0 || get.stdout != content {
				t.Errorf("%s: after the repair data get %s: exit %d, %d bytes, want the readable version's %d\n%s", label, addr, get.code, len(get.stdout), len(content), get.stderr)
			}
		}
		if verify := swampj(t, r, "catalog", "verify"); verify.code != 0 {
			t.Errorf("%s: catalog verify exit %d\n%s%s", label, verify.code, verify.stdout, verify.stderr)
		}
		counts[imageOutcomeKey(outcome, pending, returned)]++
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("doctor --repair: %d power-cut images in %s: %v", len(delays), time.Since(start).Round(time.Millisecond), counts)
}

// TestCrashImageCatalogRebuild cuts `catalog rebuild --confirm` on a repo
// whose catalog is gone. In every image the data is untouched (every file
// with its bytes, nothing new beside the catalog: no temp catalog after
// the recover, nothing moved aside), and the catalog is either still
// missing (verify as at the uncrashed start), complete (verify exit 0), or
// — cut after the new catalog was linked in, before the rebuild's commit —
// complete but empty ("not built", verify exit 0 saying so, fixed by the
// rebuild run again): never a zero-byte or half-created catalog that
// verify or the doctor would trip on.
func TestCrashImageCatalogRebuild(t *testing.T) {
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "repo")
	for _, suf := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(filepath.Join(repo, ".swamp", "data", "_catalog.db"+suf))
	}
	syscall.Sync()
	before := swampj(t, repo, "catalog", "verify")
	if before.code == 0 {
		t.Fatalf("catalog verify passes with no catalog, so the images could not tell old from new: %+v", before)
	}
	orig := treeSums(t, repo)
	base := c.finishBase()
	args := []string{"catalog", "rebuild", "--confirm"}
	d := measureRun(t, c, base, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("catalog rebuild takes about %s (start to exit); %d cut points, %d files", d, len(delays), len(orig))

	// untouched checks the data and that nothing else appeared.
	untouched := func(label, r string) {
		got := treeSums(t, r)
		for rel, sum := range orig {
			if s, ok := got[rel]; !ok || s != sum {
				t.Errorf("%s: %s missing or changed (present: %v)", label, rel, ok)
			}
		}
		for rel := range got {
			if _, ok := orig[rel]; !ok && rel != ".swamp/data/_catalog.db" && !strings.HasPrefix(rel, ".swamp/.locks/") {
				t.Errorf("%s: %s appeared", label, rel)
			}
		}
	}

	counts := map[string]int{}
	start := time.Now()
	cc := fsxtest.Count(t, "catalog-rebuild", "image")
	for i, delay := range delays {
		img, returned, _ := c.cut(base, i, delay, args...)
		cc.Check()
		label := fmt.Sprintf("cut %d (delay %s)", i, delay)
		r, mp := c.open(img, i)
		if fi, err := os.Stat(filepath.Join(r, ".swamp", "data", "_catalog.db")); err == nil && fi.Size() == 0 {
			t.Errorf("%s: a zero-byte _catalog.db after the power cut", label)
		}
		rec := mustOK(t, swampj(t, r, "recover"), label+": recover")
		pending := !strings.Contains(rec.stdout, "Nothing to recover")
		untouched(label, r)
		verify := swampj(t, r, "catalog", "verify")
		outcome := "garbage"
		switch {
		case verify.code == 0:
			var vj struct{ NotBuilt, InSync bool }
			res := mustOK(t, swampj(t, r, "catalog", "verify", "--json"), label+": catalog verify --json")
			if err := json.Unmarshal([]byte(res.stdout), &vj); err != nil {
				t.Errorf("%s: catalog verify --json: %v\n%s", label, err, res.stdout)
			}
			outcome = "new"
			if vj.NotBuilt {
				outcome = "not built (rebuilt again)"
				mustOK(t, swampj(t, r, args...), label+": catalog rebuild again")
				v := swampj(t, r, "catalog", "verify", "--json")
				vj.NotBuilt = true
				_ = json.Unmarshal([]byte(v.stdout), &vj)
				if v.code != 0 || vj.NotBuilt || !vj.InSync {
					t.Errorf("%s: catalog verify after the second rebuild: exit %d, not built %v\n%s%s", label, v.code, vj.NotBuilt, v.stdout, v.stderr)
				}
			}
		case verify.code == before.code && verify.stdout == before.stdout:
			outcome = "old"
		default:
			doc := swampj(t, r, "doctor")
			t.Errorf("%s: catalog verify neither clean nor as at the start (exit %d, start %d)\n%s%s\ndoctor:\n%s%s", label, verify.code, before.code, verify.stdout, verify.stderr, doc.stdout, doc.stderr)
		}
		if returned && outcome != "new" {
			t.Errorf("%s: the rebuild returned before the cut but the image is %s", label, outcome)
		}
		imageSettle(t, r, fmt.Sprintf("%s, %s", label, outcome))
		untouched(label+" after the doctor's repair", r)
		counts[imageOutcomeKey(outcome, pending, returned)]++
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("catalog rebuild: %d power-cut images in %s: %v", len(delays), time.Since(start).Round(time.Millisecond), counts)
}
