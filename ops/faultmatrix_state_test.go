package ops_test

// How a fault-matrix cell's end is observed (faultmatrix_test.go runs the
// cells): the repo exactly at its start or at the clean run's end, files
// and catalog rows both, the manifest of data files, the live writers, the
// open intents and the journal's stale mark.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
)

// fmStartOrEnd: the repo is exactly the start or exactly the clean run's
// end, every file and (unless the journal's stale mark says the catalog
// lags) the catalog's rows with it. Paths the doctor reports as a live
// writer's are left out.
func fmStartOrEnd(t *testing.T, dir string, start, end migState, live func(string) bool) (atEnd bool, _ []string) {
	got := fmState(t, dir)
	dStart, dEnd := fsxtest.Diff(start.tree, got.tree), fsxtest.Diff(end.tree, got.tree)
	if len(dStart) > 0 && len(dEnd) > 0 {
		// Only a live writer's paths may differ.
		keep := fsxtest.Tree{}
		for p, e := range got.tree {
			if !live(strings.TrimPrefix(p, ".swamp/")) {
				keep[p] = e
			}
		}
		got.tree = keep
		dStart, dEnd = fsxtest.Diff(start.tree, got.tree), fsxtest.Diff(end.tree, got.tree)
	}
	var want migState
	switch {
	case len(dEnd) == 0:
		want = end
	case len(dStart) == 0:
		want = start
	default:
		return false, []string{"the repo is neither the start nor the clean run's end (half old, half new, or something else left):\n  against the start: " +
			strings.Join(dStart, "\n    ") + "\n  against the end: " + strings.Join(dEnd, "\n    ")}
	}
	atEnd = len(dEnd) == 0
	if got.rows != want.rows && catalogStaleOf(t, dir) == nil {
		return atEnd, []string{"the files are the " + map[bool]string{true: "end", false: "start"}[len(dEnd) == 0] +
			" but the catalog's rows are not, and no stale mark says it lags:\n  got  " + strings.ReplaceAll(got.rows, "\n", "\n       ") +
			"\n  want " + strings.ReplaceAll(want.rows, "\n", "\n       ")}
	}
	return atEnd, nil
}

func fmSortedRows(rows string) string {
	l := strings.Split(rows, "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// fmLiveWriters asks the doctor (report only) which paths live writers
// are writing, and returns whether a path relative to the datastore base
// is one of them or below one.
func fmLiveWriters(t *testing.T, dir string) func(string) bool {
	r := migLoad(t, dir)
	rep, err := doctor.Run(fmCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Now: drNow})
	var paths []string
	if err == nil {
		for _, f := range rep.InFlight {
			if rel, err := filepath.Rel(r.Base, f.Path); err == nil {
				paths = append(paths, filepath.ToSlash(rel))
			}
		}
	}
	return func(rel string) bool {
		rel = strings.TrimPrefix(rel, migNS+"/")
		for _, p := range paths {
			p = strings.TrimPrefix(p, migNS+"/")
			if rel == p || strings.HasPrefix(rel, p+"/") {
				return true
			}
		}
		return false
	}
}

// fmKnownWedge names the cells of the matrix that still end in a state
// the ordinary commands cannot clean, and why ("" for every other cell).
// They are logged, not failed; a known wedge that stops happening fails.
// There is none now: the last (a reverse migration whose catalog restamp
// failed) is repaired by a rebuild (TestReverseRestampFailureIsRepairedByARebuild).
func fmKnownWedge(protocol string, op fsx.Op) string {
	return ""
}

func fmNeedsRebuild(t *testing.T, r *repo.Repo) bool {
	if catalogStaleOf(t, r.Dir) != nil {
		return true
	}
	rep, err := catalogsync.Verify(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	return err != nil || !rep.InSync
}

// fmProcessExits does what the end of the faulted process does to the
// locks it may have left: a dead pid's lock files are stale and the next
// acquirer takes them over. Here the pid lives on, so they are removed.
func fmProcessExits(t *testing.T, dir string) {
	_ = filepath.WalkDir(filepath.Join(dir, ".swamp"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() && (d.Name() == ".lock" || d.Name() == ".datastore.lock" || filepath.Base(filepath.Dir(p)) == ".locks") {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
}

func fmOpenIntents(t *testing.T, dir string) []*journal.Intent {
	path := repo.JournalPathOf(dir)
	if !migExists(path) {
		return nil
	}
	j, err := journal.OpenReadOnly(fsx.Real(), path, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("opening the journal: %v", err)
	}
	defer j.Close()
	open, err := j.OpenIntents()
	if err != nil {
		t.Fatal(err)
	}
	return open
}

func catalogStaleOf(t *testing.T, dir string) *journal.CatalogStale {
	path := repo.JournalPathOf(dir)
	if !migExists(path) {
		return nil
	}
	j, err := journal.OpenReadOnly(fsx.Real(), path, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("opening the journal: %v", err)
	}
	defer j.Close()
	cs, err := j.CatalogStale()
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ---- repo copies and states

var fmSeq struct {
	sync.Mutex
	n int
}

// fmCopy copies the template into a fresh directory (modes and mtimes
// kept), pointing .swamp.yaml's datastore path at the copy.
func fmCopy(t *testing.T, tmpl string) string {
	fmSeq.Lock()
	fmSeq.n++
	n := fmSeq.n
	fmSeq.Unlock()
	dir := filepath.Join(filepath.Dir(tmpl), fmt.Sprintf("r%d", n))
	err := filepath.WalkDir(tmpl, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tmpl, p)
		out := filepath.Join(dir, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(out, fi.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if rel == ".swamp.yaml" {
			b = []byte(strings.ReplaceAll(string(b), tmpl, dir))
		}
		if err := os.WriteFile(out, b, fi.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(out, fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// fmDropJournal removes the template's journal (it holds absolute paths of
// the template); the copies start without one, as a repo swampj has only
// written finished intents to would after a journal prune.
func fmDropJournal(t *testing.T, dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".swamp", "*_journal.db*"))
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil {
			t.Fatal(err)
		}
	}
}

// fmState is the whole repo as a user sees it (infrastructure left out)
// plus the catalog's rows.
func fmState(t *testing.T, dir string) migState {
	skip := func(rel string) bool {
		base := filepath.Base(rel)
		return migSkipInfra(rel) || rel == ".swamp/.locks" || base == ".lock" || base == ".datastore.lock" || drLockTemp.MatchString(base) || rel == ".swamp.yaml"
	}
	tree := fsxtest.Snapshot(t, dir, skip)
	cfg, err := os.ReadFile(filepath.Join(dir, ".swamp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tree[".swamp.yaml"] = fsxtest.Entry{Kind: "file", Content: strings.ReplaceAll(string(cfg), dir, "{repo}")}
	return migState{tree: tree, rows: strings.Join(migCatalogRows(t, dir), "\n")}
}

var fmQuarantine = regexp.MustCompile(`^\.swampj-quarantine/[^/]+/[^/]+/`)

// fmManifest maps every data file under the datastore base to its sha256,
// keyed by its logical path: relative to {base} or {base}/{ns}, and a
// quarantined file by the data-root path it had. Each key lists every
// copy found.
func fmManifest(t *testing.T, dir string) map[string][]string {
	base := filepath.Join(dir, ".swamp")
	out := map[string][]string{}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if d.IsDir() {
			if name == ".locks" {
				return filepath.SkipDir
			}
			return nil
		}
		if repo.IsCatalogFile(name) && (rel == "data/"+name) || strings.Contains(name, "_journal.db") ||
			name == ".lock" || name == ".datastore.lock" || drLockTemp.MatchString(name) {
			return nil
		}
		logical := strings.TrimPrefix(rel, migNS+"/")
		if m := fmQuarantine.FindString(rel); m != "" {
			logical = "data/" + strings.TrimPrefix(rel, m)
			if name == "latest" {
				return nil // the copy the repair keeps of a rewritten latest
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[logical] = append(out[logical], hex.EncodeToString(sum[:]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// fmManifestCheck: every file of before is there exactly once with its
// bytes, unless the operation may change it; and every file that is not in
// before is one the clean run leaves too (end), with its bytes, or one the
// doctor calls a live writer's (live). A leftover stage, a temp or a stray
// copy fails (a stage is keyed by its own path: no clean end has it).
func fmManifestCheck(before, end, after map[string][]string, mayChange func(string) bool, live func(string) bool) []string {
	var d []string
	for p, sums := range before {
		got := after[p]
		switch {
		case mayChange(p):
			if len(got) > 1 {
				d = append(d, fmt.Sprintf("%s: %d copies", p, len(got)))
			}
		case len(got) == 0:
			d = append(d, "lost "+p)
		case len(got) > 1:
			d = append(d, fmt.Sprintf("%s: %d copies", p, len(got)))
		case got[0] != sums[0]:
			d = append(d, "changed "+p)
		}
	}
	for p, sums := range after {
		if _, ok := before[p]; ok {
			continue
		}
		want, ok := end[p]
		switch {
		case !ok && live(p):
		case !ok:
			d = append(d, "left over "+p+" (neither the start nor the clean run's end has it)")
		case len(sums) > 1:
			d = append(d, fmt.Sprintf("%s: %d copies", p, len(sums)))
		case sums[0] != want[0] && !mayChange(p):
			d = append(d, "new file "+p+" does not have the clean run's bytes")
		}
	}
	sort.Strings(d)
	return d
}

// cleanBesideOtherRoot is rep.Clean, or findings that are all
// data_at_other_root: a reverse migration leaves the namespace set by
// design (its report says to unset it), which the doctor names and no
// recovery changes.
func cleanBesideOtherRoot(rep *doctor.Report) bool {
	if rep.Clean() {
		return true
	}
	for _, f := range rep.Findings {
		if f.Code != "data_at_other_root" {
			return false
		}
	}
	return true
}
