package main

// Real-kernel power-cut images (crashimage_test.go) of the two protocols
// the other image tests leave out: a batch write (one intent writing many
// versions of several items, through testdata/batchwrite, the public API)
// and recovery itself (`swampj recover` and `recover --rollback` cut while
// they finish or undo an interrupted migration or batch write). The
// oracles are the migrate image test's: every synced file exactly once
// with its bytes, the operation all-old or all-new, every item's latest
// naming a readable version, the catalog as the end state wants it, no
// open intent, recovery a fixpoint.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// batchItem is one item the image batch writes: its address, its
// directory in the repo, and the contents of the versions the batch adds
// to it, in write order.
type batchItem struct {
	addr, dir string
	contents  []string
}

// imageBatch is the batch of the image tests: four new versions of an item
// with three, three of an item of another model, and three of an item that
// does not exist yet — ten versions of 12 KiB in one intent, each content
// distinct, so a torn or misplaced version cannot pass for another.
func imageBatch() []batchItem {
	items := []batchItem{
		{addr: crashImageAddr},
		{addr: "@acme/scanner/04187c35-334a-493d-857f-8743ad421411/result"},
		{addr: "command/shell/" + dataModel + "/batch"},
	}
	for i := range items {
		it := &items[i]
		it.dir = ".swamp/data/" + it.addr
		n := 3
		if i == 0 {
			n = 4
		}
		for k := 0; k < n; k++ {
			pad := make([]byte, 12<<10)
			for j := range pad {
				pad[j] = byte('a' + (j/64+i*7+k*3)%26)
			}
			it.contents = append(it.contents, fmt.Sprintf(`{"item":%d,"version":%d,"pad":"%s"}`, i, k, pad))
		}
	}
	return items
}

// batchArgs are batchwrite's arguments for items (ADDR=CONTENT each).
func batchArgs(items []batchItem) []string {
	var args []string
	for _, it := range items {
		for _, c := range it.contents {
			args = append(args, it.addr+"="+c)
		}
	}
	return args
}

// lockLeftover: swamp's and swampj's lock files, which a cut leaves naming
// a dead process and the doctor's repair moves to the quarantine, and the
// hidden temp a lock is written in before it is linked to its name
// (createExclusive leaves it, harmless to swamp's readers, swamp-format §9.3, when
// the cut keeps the fsynced temp but not its removal): accepted only with
// a lock's content.
func lockLeftover(r, rel string) bool {
	if strings.HasPrefix(rel, ".swamp/.locks/") || strings.HasSuffix(rel, "/.lock") ||
		(strings.HasPrefix(rel, ".swamp/.swampj-quarantine/") && strings.HasSuffix(rel, ".lock")) {
		return true
	}
	name := filepath.Base(rel)
	if len(name) != len(".")+32+len(".tmp") || name[0] != '.' || !strings.HasSuffix(name, ".tmp") {
		return false
	}
	b, err := os.ReadFile(filepath.Join(r, rel))
	return err == nil && bytes.Contains(b, []byte(`"holder"`)) && bytes.Contains(b, []byte(`"nonce"`))
}

// checkBatch holds the image at r (after its recover) to the batch oracle
// against orig, the synced tree before the batch, and returns "old" (no
// version of the batch, every latest as it was) or "new" (every version
// with its bytes, every latest naming the item's last). Anything else is
// an error, as is a synced file lost or changed, a file that is neither
// the batch's nor a lock, and an item's latest naming no readable version.
func checkBatch(t *testing.T, label, r string, orig map[string]string, items []batchItem) string {
	t.Helper()
	got := treeSums(t, r)
	batchFile := map[string]bool{} // new version files and latest of the batch's items
	outcomes := map[string]int{}
	for _, it := range items {
		batchFile[it.dir+"/latest"] = true
		var added []int
		for rel := range got {
			rest, ok := strings.CutPrefix(rel, it.dir+"/")
			if !ok {
				continue
			}
			v, f, ok := strings.Cut(rest, "/")
			n, err := strconv.Atoi(v)
			if !ok || err != nil {
				continue
			}
			if _, synced := orig[rel]; synced {
				continue
			}
			batchFile[rel] = true
			if f == "raw" {
				added = append(added, n)
			}
		}
		sort.Ints(added)
		latest, latestErr := os.ReadFile(filepath.Join(r, it.dir, "latest"))
		switch len(added) {
		case 0:
			if _, existed := orig[it.dir+"/latest"]; existed && got[it.dir+"/latest"] != orig[it.dir+"/latest"] {
				t.Errorf("%s: %s: no version of the batch, but latest changed to %q", label, it.addr, latest)
			} else if !existed && latestErr == nil {
				t.Errorf("%s: %s: no version of the batch, but the new item has a latest (%q)", label, it.addr, latest)
			}
			outcomes["old"]++
		case len(it.contents):
			for k, n := range added {
				v := fmt.Sprintf("%s/%d/", it.dir, n)
				if got[v+"raw"] != sha([]byte(it.contents[k])) {
					t.Errorf("%s: %s version %d: raw is not the batch's version %d", label, it.addr, n, k+1)
				}
				if _, ok := got[v+"metadata.yaml"]; !ok {
					t.Errorf("%s: %s version %d has no metadata.yaml", label, it.addr, n)
				}
			}
			if want := strconv.Itoa(added[len(added)-1]); strings.TrimSpace(string(latest)) != want {
				t.Errorf("%s: %s: every version of the batch is in, but latest is %q (read error %v), want %s", label, it.addr, latest, latestErr, want)
			}
			outcomes["new"]++
		default:
			t.Errorf("%s: %s: %d of the batch's %d versions are in: %v", label, it.addr, len(added), len(it.contents), added)
			outcomes["part"]++
		}
	}
	for rel, sum := range orig {
		if rel == ".swamp/data/_catalog.db" || batchFile[rel] || lockLeftover(r, rel) {
			continue // derived, the batch's own latest (checked above), or a lock
		}
		if got[rel] != sum {
			_, present := got[rel]
			t.Errorf("%s: synced file %s lost or changed (present: %v)", label, rel, present)
		}
	}
	for rel := range got {
		if _, synced := orig[rel]; !synced && !batchFile[rel] && !lockLeftover(r, rel) && rel != ".swamp/data/_catalog.db" {
			t.Errorf("%s: %s appeared (neither a version of the batch nor a lock)", label, rel)
		}
	}
	latestReadable(t, label, r, got)
	switch {
	case outcomes["old"] == len(items):
		return "old"
	case outcomes["new"] == len(items):
		return "new"
	}
	t.Errorf("%s: half a batch: %v of %d items (one intent is all-or-nothing)", label, outcomes, len(items))
	return "mixed"
}

// batchReads: after an image settled, data get serves each batch item's
// last version (new) or what it served before the batch (old; nothing
// for the new item), and the catalog verifies clean.
func batchReads(t *testing.T, label, r, outcome string, items []batchItem, olds map[string]string) {
	t.Helper()
	for _, it := range items {
		want, ok := olds[it.addr]
		if outcome == "new" {
			want, ok = it.contents[len(it.contents)-1], true
		}
		get := swampj(t, r, "data", "get", it.addr)
		if ok && (get.code != 0 || get.stdout != want) || !ok && get.code == 0 {
			t.Errorf("%s (%s): data get %s: exit %d, %d bytes, want %d bytes (exists: %v)\n%s", label, outcome, it.addr, get.code, len(get.stdout), len(want), ok, get.stderr)
		}
	}
	if verify := swampj(t, r, "catalog", "verify"); verify.code != 0 {
		t.Errorf("%s (%s): catalog verify exit %d\n%s%s", label, outcome, verify.code, verify.stdout, verify.stderr)
	}
}

// latestReadable: every item's latest under the data roots names a
// version whose raw is there.
func latestReadable(t *testing.T, label, r string, got map[string]string) {
	t.Helper()
	for rel := range got {
		if !strings.HasSuffix(rel, "/latest") || strings.HasPrefix(rel, ".swamp/.swampj-quarantine/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r, rel))
		if err != nil {
			t.Errorf("%s: %s: %v", label, rel, err)
			continue
		}
		raw := strings.TrimSuffix(rel, "latest") + strings.TrimSpace(string(b)) + "/raw"
		if _, ok := got[raw]; !ok {
			t.Errorf("%s: %s names %q, which has no raw", label, rel, b)
		}
	}
}

// TestCrashImageBatchWrite cuts one batch write of ten versions of three
// items (one of them new). Every image holds the whole batch or none of
// it, and the whole batch if batchwrite returned before the cut.
func TestCrashImageBatchWrite(t *testing.T) {
	c := newCrashImg(t)
	prog, err := batchWriter()
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(c.mp(), "repo")
	items := imageBatch()
	olds := map[string]string{}
	for _, it := range items {
		if get := swampj(t, repo, "data", "get", it.addr); get.code == 0 {
			olds[it.addr] = get.stdout
		}
	}
	syscall.Sync()
	orig := treeSums(t, repo)
	base := c.finishBase()
	args := batchArgs(items)
	d := measureRunOf(t, c, base, prog, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("batch write of %d versions takes about %s (start to exit); %d cut points, %d files", len(args), d, len(delays), len(orig))

	counts := map[string]int{}
	start := time.Now()
	cc := fsxtest.Count(t, "batch-write", "image")
	for i, delay := range delays {
		img, returned, _ := c.cutIn(base, i, delay, "repo", prog, args...)
		cc.Check()
		label := fmt.Sprintf("cut %d (delay %s)", i, delay)
		r, mp := c.open(img, i)
		rec := mustOK(t, swampj(t, r, "recover"), label+": recover")
		pending := !strings.Contains(rec.stdout, "Nothing to recover")
		outcome := checkBatch(t, label, r, orig, items)
		if returned && outcome != "new" {
			t.Errorf("%s: batchwrite returned before the cut but the image is %s", label, outcome)
		}
		imageSettle(t, r, fmt.Sprintf("%s, %s", label, outcome))
		checkBatch(t, label+" after the doctor's repair", r, orig, items)
		batchReads(t, label, r, outcome, items, olds)
		counts[imageOutcomeKey(outcome, pending, returned)]++
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("batch write: %d power-cut images in %s: %v", len(delays), time.Since(start).Round(time.Millisecond), counts)
}

// recoveryImages cuts `swampj recover` and then `swampj recover
// --rollback` (cuts time-spread points each, and two right after it
// returned) on base, an image holding one open intent. Each image is
// mounted and recovered again in the same direction; files then judges
// the tree ("old" or "new", errors of its own), the direction decides
// which one it must be (forward: new, rollback: old), the image settles,
// and final checks the end state (the catalog, reads). progress, read
// from the image as the cut left it, says how far the intent's effect
// was (logged: where the cuts landed in the recovery's work).
func recoveryImages(t *testing.T, c *crashImg, base string, cc *fsxtest.CrashCount, cuts int, what string,
	progress func(r string) string, files func(label, r string) string, final func(label, r, outcome string)) {
	t.Helper()
	for _, rollback := range []bool{false, true} {
		args, want := []string{"recover"}, "new"
		if rollback {
			args, want = []string{"recover", "--rollback"}, "old"
		}
		cmd := strings.Join(args, " ")
		d := measureRun(t, c, base, args...)
		delays := cutDelays(d, cuts)
		t.Logf("%s: %s takes about %s (start to exit); %d cut points", what, cmd, d, len(delays))
		counts, landed := map[string]int{}, map[string]int{}
		start := time.Now()
		for i, delay := range delays {
			img, returned, _ := c.cut(base, i, delay, args...)
			cc.Check()
			label := fmt.Sprintf("%s: %s cut %d (delay %s)", what, cmd, i, delay)
			r, mp := c.open(img, i)
			landed[progress(r)]++
			rec := mustOK(t, swampj(t, r, args...), label+": "+cmd+" again")
			pending := !strings.Contains(rec.stdout, "Nothing to recover")
			outcome := files(label, r)
			if outcome != want {
				t.Errorf("%s: %s twice left the image %s, want %s", label, cmd, outcome, want)
			}
			imageSettle(t, r, fmt.Sprintf("%s, %s", label, outcome))
			final(label, r, outcome)
			counts[imageOutcomeKey(outcome, pending, returned)]++
			if !t.Failed() {
				cc.Recovered()
			}
			c.close(img, mp)
		}
		t.Logf("%s: %s: %d power-cut images in %s: %v; progress as cut (images at each): %v", what, cmd, len(delays), time.Since(start).Round(time.Millisecond), counts, landed)
	}
}

// migrationUnits judges a tree against orig, the synced tree before a
// migration into namespace ns: every file the migration moves must be
// exactly once, at its old path or under the namespace, with its bytes;
// every unit (a type directory of the data, outputs, workflow-runs,
// audit) all at the old paths or all at the new; files the migration
// leaves (secrets, the namespace marker, the config) where they were with
// their bytes, and the catalog, restamped in place, where it was. It returns "old", "new" or "mixed" (units on both sides).
func migrationUnits(t *testing.T, label, r string, orig map[string]string, ns string) string {
	t.Helper()
	got := treeSums(t, r)
	nsPrefix := ".swamp/" + ns + "/"
	units := map[string]map[string]int{} // unit -> "old"/"new" -> files
	for rel, sum := range orig {
		under, ok := strings.CutPrefix(rel, ".swamp/")
		if rel == ".swamp/data/_catalog.db" {
			if _, ok := got[rel]; !ok {
				t.Errorf("%s: the catalog (restamped in place, never moved) is gone", label)
			}
			continue
		}
		if !ok || strings.HasPrefix(rel, nsPrefix) || strings.HasPrefix(under, "secrets/") {
			if got[rel] != sum {
				t.Errorf("%s: %s, which no migration moves, is lost or changed", label, rel)
			}
			continue
		}
		if lockLeftover(r, rel) {
			continue // a lock: the doctor's repair may quarantine it
		}
		parts := strings.SplitN(under, "/", 3)
		unit := parts[0]
		if unit == "data" && len(parts) > 1 {
			unit += "/" + parts[1]
		}
		var at []string
		for _, cand := range []string{rel, nsPrefix + under} {
			if _, ok := got[cand]; ok {
				at = append(at, cand)
			}
		}
		if len(at) != 1 {
			t.Errorf("%s: %s exists %d times: %v", label, rel, len(at), at)
			continue
		}
		if got[at[0]] != sum {
			t.Errorf("%s: %s changed content", label, at[0])
		}
		if units[unit] == nil {
			units[unit] = map[string]int{}
		}
		if at[0] == rel {
			units[unit]["old"]++
		} else {
			units[unit]["new"]++
		}
	}
	sides := map[string]int{}
	for unit, n := range units {
		switch {
		case n["old"] > 0 && n["new"] > 0:
			t.Errorf("%s: unit %s is half moved: %d files at the old paths, %d under the namespace", label, unit, n["old"], n["new"])
			sides["mixed"]++
		case n["new"] > 0:
			sides["new"]++
		default:
			sides["old"]++
		}
	}
	switch {
	case sides["old"] == len(units):
		return "old"
	case sides["new"] == len(units):
		return "new"
	}
	t.Logf("%s: units on both sides: %v", label, units)
	return "mixed"
}

// imageExtraTypes is how many model types the recovery test adds to the
// example repo (one item each, a unit of the migration each), so that
// recovering the interrupted migration has many moves to make and takes a
// time the cuts can spread over.
const imageExtraTypes = 40

// TestCrashImageRecovery cuts recovery itself. A namespace migration of
// the example repo (plus imageExtraTypes model types, a migration unit
// each) is killed at a named failpoint half way through its moves, and a
// batch write of ten versions right after the first of its latest
// pointers moved; the image is synced with that intent open, and `recover` / `recover
// --rollback` is cut at time-spread points. After recovering again in the
// same direction the migration is all-new (forward) or all-old (rollback)
// with every file exactly once, the batch whole or absent, the catalog as
// the end state wants it.
func TestCrashImageRecovery(t *testing.T) {
	cc := fsxtest.Count(t, "recovery", "image")
	const ns = "x"
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "repo")
	var extra []batchItem
	for i := 0; i < imageExtraTypes; i++ {
		extra = append(extra, batchItem{
			addr:     fmt.Sprintf("t%03d/kind/00000000-0000-4000-8000-%012d/result", i, i),
			contents: []string{fmt.Sprintf(`{"type":%d}`, i)},
		})
	}
	prog, err := batchWriter()
	if err != nil {
		t.Fatal(err)
	}
	bw := exec.Command(prog, batchArgs(extra)...)
	bw.Dir = repo
	mustOK(t, runResult(t, bw), "batchwrite of the extra types")
	content := mustOK(t, swampj(t, repo, "data", "get", crashImageAddr), "data get").stdout
	mustOK(t, swampj(t, repo, "datastore", "namespace", "set", ns), "namespace set")
	syscall.Sync()
	before := swampj(t, repo, "catalog", "verify")
	orig := treeSums(t, repo)
	moves := 6 + len(extra) // data/@acme, data/aws, data/command, outputs, workflow-runs, audit, the extra types
	if !swampjKilledAt(t, repo, fmt.Sprintf("rename-noreplace:%d", moves/2), nil, "datastore", "namespace", "migrate", "--confirm") {
		t.Fatal("the migration was not killed")
	}
	if l := mustOK(t, swampj(t, repo, "journal", "list"), "journal list"); !strings.Contains(l.stdout, " open ") {
		t.Fatalf("no open intent after the killed migration:\n%s", l.stdout)
	}
	made := movedUnits(repo, ns)
	if made == 0 || made == moves {
		t.Fatalf("the killed migration made %d of its %d moves: recovery would have no half to finish or undo", made, moves)
	}
	syscall.Sync()
	base := c.finishBase()
	want := fmt.Sprintf("%d of %d moves made, %d files", made, moves, len(orig))
	recoveryImages(t, c, base, cc, max(imageCuts()/4, 1), "migration ("+want+")",
		func(r string) string { return fmt.Sprintf("%d moved", movedUnits(r, ns)) },
		func(label, r string) string { return migrationUnits(t, label, r, orig, ns) },
		func(label, r, outcome string) {
			verify := swampj(t, r, "catalog", "verify")
			switch {
			case outcome == "old" && (verify.code != before.code || verify.stdout != before.stdout):
				t.Errorf("%s (old): catalog verify differs from the uncrashed start (exit %d, want %d)\n%s%s", label, verify.code, before.code, verify.stdout, verify.stderr)
			case outcome == "new" && verify.code != 0:
				t.Errorf("%s (new): catalog verify exit %d\n%s%s", label, verify.code, verify.stdout, verify.stderr)
			}
			if get := swampj(t, r, "data", "get", crashImageAddr); outcome == "new" && (get.code != 0 || get.stdout != content) {
				t.Errorf("%s (new): data get %s in the namespace: exit %d, %d bytes, want %d\n%s", label, crashImageAddr, get.code, len(get.stdout), len(content), get.stderr)
			}
		})

	// Written versions: the batch write killed right after the first of
	// its three latest pointers moved (all ten versions published), so
	// going forward moves the other two and commits the catalog, and
	// rolling back restores that latest and takes every version out.
	c = newCrashImg(t)
	repo = filepath.Join(c.mp(), "repo")
	items := imageBatch()
	olds := map[string]string{}
	for _, it := range items {
		if get := swampj(t, repo, "data", "get", it.addr); get.code == 0 {
			olds[it.addr] = get.stdout
		}
	}
	syscall.Sync()
	origBatch := treeSums(t, repo)
	if !killedAt(t, prog, repo, "rename@/latest", nil, batchArgs(items)...) {
		t.Fatal("the batch write was not killed")
	}
	published, moved := publishedVersions(repo, origBatch, items), movedLatests(repo, origBatch, items)
	if published != len(batchArgs(items)) || moved != 1 {
		t.Fatalf("the killed batch write published %d of its %d versions and moved %d latest pointers, want all and 1", published, len(batchArgs(items)), moved)
	}
	syscall.Sync()
	base = c.finishBase()
	recoveryImages(t, c, base, cc, max(imageCuts()/4, 1), fmt.Sprintf("batch write (%d versions published, %d of %d latest moved)", published, moved, len(items)),
		func(r string) string {
			return fmt.Sprintf("%d versions, %d latest", publishedVersions(r, origBatch, items), movedLatests(r, origBatch, items))
		},
		func(label, r string) string { return checkBatch(t, label, r, origBatch, items) },
		func(label, r, outcome string) {
			checkBatch(t, label+" after the doctor's repair", r, origBatch, items)
			batchReads(t, label, r, outcome, items, olds)
		})
}

// movedUnits counts the migration units under namespace ns.
func movedUnits(r, ns string) int {
	n := 0
	data, _ := os.ReadDir(filepath.Join(r, ".swamp", ns, "data"))
	for _, e := range data {
		if e.IsDir() {
			n++
		}
	}
	for _, d := range []string{"outputs", "workflow-runs", "audit"} {
		if _, err := os.Lstat(filepath.Join(r, ".swamp", ns, d)); err == nil {
			n++
		}
	}
	return n
}

// publishedVersions counts the version directories of items that are not
// in orig (the batch's, published).
func publishedVersions(r string, orig map[string]string, items []batchItem) int {
	n := 0
	for _, it := range items {
		vs, _ := os.ReadDir(filepath.Join(r, it.dir))
		for _, v := range vs {
			if _, err := strconv.Atoi(v.Name()); err != nil || !v.IsDir() {
				continue
			}
			if _, synced := orig[it.dir+"/"+v.Name()+"/raw"]; !synced {
				n++
			}
		}
	}
	return n
}

// movedLatests counts the items whose latest is no longer what orig has.
func movedLatests(r string, orig map[string]string, items []batchItem) int {
	n := 0
	for _, it := range items {
		b, err := os.ReadFile(filepath.Join(r, it.dir, "latest"))
		if err == nil && sha(b) != orig[it.dir+"/latest"] {
			n++
		}
	}
	return n
}
