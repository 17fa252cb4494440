package ops_test

// Cut at every point, for the protocols the older suites do not cut
// (batch writes of several versions of several items, the catalog
// rebuild) and, with a reader's oracle checked before any recovery runs,
// for single writes too. Each cut is taken as a process crash (fsx.Fault)
// and as a power cut under fsx's POSIX-pessimistic model, then recovered
// forward and, on a fresh copy, rolled back, twice each. The oracle:
//
//   - before recovery, what a reader that never runs swampj sees (swamp
//     itself): every item's `latest` names a readable version, and the
//     catalog never names a newer latest than `latest` does;
//   - after recovery the whole repo (every file by size and SHA-256, the
//     catalog row by row) is exactly the clean run's start or its end:
//     the end when the call returned or its catalog commit had been made
//     (acknowledged or visible data is never lost), the start after a
//     rollback of an intent not yet marked done;
//   - no intent is open, and a second recovery changes nothing.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// pxProtocol is one protocol of this suite.
type pxProtocol struct {
	name     string // the crash report's name
	variant  string // which start, when a protocol is cut from more than one
	template func(t *testing.T, dir string)
	run      func(t *testing.T, r *repo.Repo, fsys fsx.FS) error
	// commit is the failpoint after which the effect is visible.
	commit string
	// linkedIn: the effect is visible only once a file built aside is
	// linked in under this base name, after the commit failpoint, and
	// durable once its directory is synced (a catalog rebuilt from empty,
	// catalog.CreateBuilt).
	linkedIn string
	// journaled: the protocol runs as an intent (rollback applies).
	journaled bool
	// items: the addresses a reader checks before recovery.
	items []repo.Address
	// rerun: after recovery, running the protocol again must reach the end.
	rerun bool
}

func pxProtocols() []pxProtocol {
	items := []repo.Address{fmAddr(fmM1, "out"), fmAddr(fmM2, "log")}
	single := []fmWrite{{a: fmAddr(fmM1, "out"), payload: "version three"}}
	batch := []fmWrite{
		{a: fmAddr(fmM1, "out"), payload: "batch one"},
		{a: fmAddr(fmM2, "log"), payload: "batch two", stream: true},
		{a: fmAddr(fmM1, "out"), payload: "batch three", stream: true},
		{a: fmAddr(fmM2, "log"), payload: "batch four"},
		{a: fmAddr(fmM2, "new"), payload: "a new item in the batch"},
	}
	// The writes get one fixed id and time, so that every run writes the
	// same bytes and rows and whole repos can be compared.
	asRun := func(ws []fmWrite) func(t *testing.T, r *repo.Repo, fsys fsx.FS) error {
		return func(t *testing.T, r *repo.Repo, fsys fsx.FS) error {
			var in []write.VersionWrite
			for _, w := range ws {
				var c io.Reader = strings.NewReader(w.payload)
				if w.stream {
					c = nonSeekerT{c}
				}
				in = append(in, write.VersionWrite{Address: w.a, Content: c})
			}
			o := ops.FixIdentity(write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, JournalLockTimeout: time.Second}}, "44444444-4444-4444-8444-444444444444", crashNewAt)
			o.FS = fsys
			_, err := write.WriteVersions(fmCtx, r, in, o)
			return err
		}
	}
	return []pxProtocol{
		{name: "version-write", template: fmBaseRepo, run: asRun(single), commit: catalog.FailpointUpsert, journaled: true, items: items},
		{name: "batch-write", template: fmBaseRepo, run: asRun(batch), commit: catalog.FailpointUpsert, journaled: true,
			items: append(items, fmAddr(fmM2, "new"))},
		{name: "catalog-rebuild", template: fmRebuildTemplate, commit: catalog.FailpointRebuild, rerun: true,
			run: func(t *testing.T, r *repo.Repo, fsys fsx.FS) error {
				_, err := catalogsync.Rebuild(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Confirm: true})
				return err
			}},
		// The first rebuild of a repo without a catalog: the catalog is
		// built under a temp name, rows and all, and linked in complete:
		// it is visible from the link on.
		{name: "catalog-rebuild", variant: "from-empty", template: fmNoCatalogTemplate, commit: catalog.FailpointRebuild, rerun: true,
			linkedIn: filepath.Base(repo.CatalogPathOf("/")),
			run: func(t *testing.T, r *repo.Repo, fsys fsx.FS) error {
				_, err := catalogsync.Rebuild(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Confirm: true})
				return err
			}},
	}
}

// label is the subtest name of a protocol.
func (p pxProtocol) label() string {
	if p.variant == "" {
		return p.name
	}
	return p.name + "/" + p.variant
}

// fmNoCatalogTemplate is the base repo without its catalog (and sidecars).
func fmNoCatalogTemplate(t *testing.T, dir string) {
	fmBaseRepo(t, dir)
	matches, _ := filepath.Glob(repo.CatalogPathOf(dir) + "*")
	for _, m := range matches {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
}

// pxBase is a protocol's template and clean run.
type pxBase struct {
	p                 pxProtocol
	tmpl              string
	initial, final    migState
	cuts              int
	beginAt, commitAt int
	doneAt            int
	trace             []fsx.Op
}

func pxMeasure(t *testing.T, p pxProtocol) *pxBase {
	t.Helper()
	b := &pxBase{p: p, tmpl: filepath.Join(fsxtest.ScratchDir(t), "tmpl")}
	p.template(t, b.tmpl)
	fmDropJournal(t, b.tmpl)
	b.initial = fmState(t, fmCopy(t, b.tmpl))
	dir := fmCopy(t, b.tmpl)
	clean := fsx.NewFault(fsx.Real())
	if err := p.run(t, migLoad(t, dir), clean); err != nil {
		t.Fatalf("%s: the clean run failed: %v", p.name, err)
	}
	b.final = fmState(t, dir)
	if d := b.final.diff(b.initial); len(d) == 0 {
		t.Fatalf("%s: the clean run changed nothing", p.name)
	}
	b.trace = clean.Trace()
	b.cuts = clean.Ops()
	b.beginAt = migOpIndex(clean, "failpoint:journal.begin")
	b.commitAt = migOpIndex(clean, "failpoint:"+p.commit)
	if p.linkedIn != "" {
		at := b.commitAt
		b.commitAt = 1 << 30
		// Durable once its directory is synced after the link (a power
		// cut may take an unsynced link away).
		linked := ""
		for _, op := range clean.Trace() {
			switch {
			case op.N > at && linked == "" && (op.Kind == "link" || op.Kind == "rename-noreplace") && filepath.Base(op.To) == p.linkedIn:
				linked = filepath.Dir(op.To)
			case linked != "" && op.Kind == "syncdir" && op.Path == linked && b.commitAt == 1<<30:
				b.commitAt = op.N
			}
		}
	}
	b.doneAt = migOpIndex(clean, "failpoint:journal.flush")
	if b.commitAt > b.cuts || (p.journaled && (b.beginAt > b.commitAt || b.doneAt > b.cuts)) {
		t.Fatalf("%s: unexpected trace: begin %d, commit %d, done %d of %d", p.name, b.beginAt, b.commitAt, b.doneAt, b.cuts)
	}
	return b
}

// pxReaderSees checks what a reader that never recovers sees.
func pxReaderSees(t *testing.T, r *repo.Repo, items []repo.Address) string {
	for _, a := range items {
		l := fmLatest(r, a)
		if strings.HasPrefix(l, "<") {
			if !os.IsNotExist(statErr(filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName, "latest"))) {
				return fmt.Sprintf("%s: latest unreadable: %s", a, l)
			}
			if v := fmCatalogLatest(t, r, a); v != 0 {
				return fmt.Sprintf("%s: no latest file, but the catalog names version %d as latest", a, v)
			}
			continue
		}
		v, err := strconv.ParseInt(l, 10, 64)
		if err != nil {
			return fmt.Sprintf("%s: latest holds %q", a, l)
		}
		if got := fmReadVersion(r, a, v); strings.HasPrefix(got, "<") {
			return fmt.Sprintf("%s: latest names version %d, which is not readable: %s", a, v, got)
		}
		if c := fmCatalogLatest(t, r, a); c > v {
			return fmt.Sprintf("%s: the catalog names version %d as latest, ahead of latest (%d)", a, c, v)
		}
	}
	return ""
}

func statErr(p string) error { _, err := os.Stat(p); return err }

// pxRun is one cut of one protocol, recovered one way, checked.
func pxRun(t *testing.T, b *pxBase, k int, power, rollback bool) {
	t.Helper()
	dir := fmCopy(t, b.tmpl)
	f := fsx.NewFault(fsx.Real()).CrashAfter(k)
	if power {
		f.TrackDurability()
	}
	err := b.p.run(t, migLoad(t, dir), f)
	if err != nil && !fsx.IsCrash(err) {
		t.Fatalf("%s cut %d: want a crash, got %v", b.p.name, k, err)
	}
	returned := err == nil
	var lost []string
	if power {
		if lost, err = f.PowerCut(); err != nil {
			t.Fatalf("cut %d: power cut: %v", k, err)
		}
	}
	at := "nothing"
	if k > 0 {
		at = b.trace[k-1].String()
	}
	where := fmt.Sprintf("%s, cut %d (after %s), power cut=%v (lost %v), rollback=%v", b.p.name, k, at, power, lost, rollback)
	if msg := pxReaderSees(t, migLoad(t, dir), b.p.items); msg != "" {
		t.Fatalf("before recovery: %s\n%s", msg, where)
	}
	fmProcessExits(t, dir)
	var prev *migState
	for round := 1; round <= 2; round++ {
		if _, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
			t.Fatalf("recover round %d: %v\n%s", round, err, where)
		}
		got := fmState(t, dir)
		isNew := len(got.diff(b.final)) == 0
		if !isNew && len(got.diff(b.initial)) > 0 {
			t.Fatalf("round %d: neither the start nor the end:\n%s\n%s", round, strings.Join(got.diff(b.final), "\n"), where)
		}
		switch {
		case !rollback && (returned || k >= b.commitAt) && !isNew:
			t.Fatalf("round %d: the call returned or committed its catalog (op %d), but forward recovery gives the start\n%s", round, b.commitAt, where)
		case rollback && b.p.journaled && k >= b.beginAt && isNew != (k >= b.doneAt):
			t.Fatalf("round %d: rollback gives the end=%v, want %v (done at op %d)\n%s", round, isNew, k >= b.doneAt, b.doneAt, where)
		}
		if prev != nil {
			if d := got.diff(*prev); len(d) > 0 {
				t.Fatalf("the second recovery changed the repo:\n%s\n%s", strings.Join(d, "\n"), where)
			}
		}
		prev = &got
	}
	if open := fmOpenIntents(t, dir); len(open) != 0 {
		t.Fatalf("%d intents open after recovery\n%s", len(open), where)
	}
	if b.p.rerun {
		if err := b.p.run(t, migLoad(t, dir), fsx.Real()); err != nil {
			t.Fatalf("re-run: %v\n%s", err, where)
		}
		if d := fmState(t, dir).diff(b.final); len(d) > 0 {
			t.Fatalf("re-run does not reach the end:\n%s\n%s", strings.Join(d, "\n"), where)
		}
	}
}

// TestProtocolCrashAtEveryCutPoint: batch write, catalog rebuild and a
// single write, cut at every operation, process crash and power cut,
// recovered forward and rolled back.
func TestProtocolCrashAtEveryCutPoint(t *testing.T) {
	for _, p := range pxProtocols() {
		t.Run(p.label(), func(t *testing.T) {
			t.Parallel()
			b := pxMeasure(t, p)
			// Every cut point in the crash recipe's full mode; otherwise
			// every second (the batch every third) and those around the
			// commits.
			every := 2
			if p.name == "batch-write" {
				every = 3
			}
			sample := fsxtest.Cuts(0, b.cuts, every, append(fsxtest.Around(b.commitAt, b.doneAt), b.beginAt-1, b.beginAt)...)
			for _, layer := range []string{"cut", "powercut"} {
				cc := fsxtest.Count(t, p.name, layer)
				for _, k := range sample {
					for _, rollback := range []bool{false, true} {
						if rollback && !p.journaled {
							continue
						}
						cc.Check()
						pxRun(t, b, k, layer == "powercut", rollback)
						cc.Recovered()
					}
				}
				t.Logf("%s/%s: %d of %d cut points (those around the commits among them) recovered (intent at op %d, commit at op %d, done at op %d)",
					p.name, layer, len(sample), b.cuts+1, b.beginAt, b.commitAt, b.doneAt)
			}
		})
	}
}

// TestBatchWriteCrashDuringRecovery: the batch write is cut after its
// intent is journaled, then the recovery of that crash is cut at every one
// of its own operations and recovered again (forward and rollback): the
// outcome is that of one uninterrupted recovery. The crash recipe's full
// mode takes every first cut; otherwise the last cut before the catalog
// commit and the last before the done mark.
func TestBatchWriteCrashDuringRecovery(t *testing.T) {
	p := pxProtocols()[1]
	b := pxMeasure(t, p)
	var firstCuts []int
	switch {
	case crashFull():
		for k := b.beginAt; k < b.doneAt; k++ {
			firstCuts = append(firstCuts, k)
		}
	default:
		firstCuts = []int{b.commitAt - 1, b.doneAt - 1}
	}
	cc := fsxtest.Count(t, p.name, "recovery-crash")
	runs := 0
	for _, k := range firstCuts {
		for _, rollback := range []bool{false, true} {
			crashAt := func() string {
				dir := fmCopy(t, b.tmpl)
				if err := p.run(t, migLoad(t, dir), fsx.NewFault(fsx.Real()).CrashAfter(k)); err != nil && !fsx.IsCrash(err) {
					t.Fatalf("cut %d: %v", k, err)
				}
				fmProcessExits(t, dir)
				return dir
			}
			probe := crashAt()
			counter := fsx.NewFault(fsx.Real())
			if _, err := recover.Run(fmCtx, probe, recover.Options{Common: host.Common{FS: counter, JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
				t.Fatalf("cut %d: recover: %v", k, err)
			}
			want := fmState(t, probe)
			for m := 0; m < counter.Ops(); m++ {
				cc.Check()
				dir := crashAt()
				if _, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{FS: fsx.NewFault(fsx.Real()).CrashAfter(m), JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil && !fsx.IsCrash(err) {
					t.Fatalf("cut %d, recovery cut %d: %v", k, m, err)
				}
				fmProcessExits(t, dir)
				if _, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
					t.Fatalf("cut %d, recovery cut %d: second recovery: %v", k, m, err)
				}
				if d := fmState(t, dir).diff(want); len(d) > 0 {
					t.Fatalf("cut %d, recovery cut %d (rollback=%v): not what one recovery gives:\n%s", k, m, rollback, strings.Join(d, "\n"))
				}
				if open := fmOpenIntents(t, dir); len(open) != 0 {
					t.Fatalf("cut %d, recovery cut %d: %d intents open", k, m, len(open))
				}
				runs++
				cc.Recovered()
			}
		}
	}
	t.Logf("batch write: %d (write cut, recovery cut) pairs converged", runs)
}

// TestMigrateCrashDuringRecovery: forward, reverse and unset --migrate,
// each cut where recovery has the most to do (the intent journaled, every
// rename issued, not yet marked done) and half-way through, then that
// recovery is cut at every one of its operations and recovered again.
func TestMigrateCrashDuringRecovery(t *testing.T) {
	for _, sc := range migCrashScenarios() {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			start := sc.build(t)
			clean := fsx.NewFault(fsx.Real())
			o := sc.opts
			oFS := clean
			if _, err := runMigrate(t, start, oFS, o); err != nil {
				t.Fatal(err)
			}
			beginAt, doneAt := migOpIndex(clean, "failpoint:journal.begin"), migOpIndex(clean, "failpoint:journal.flush")
			cuts := []int{(beginAt + doneAt) / 2, doneAt - 1}
			cc := fsxtest.Count(t, migProtocolName(sc.name), "recovery-crash")
			runs := 0
			for _, k := range cuts {
				for _, rollback := range []bool{false, true} {
					crashAt := func() string {
						dir := sc.build(t)
						migCrashRun(t, sc, dir, fsx.NewFault(fsx.Real()).CrashAfter(k))
						migRemoveDeadLocks(t, dir)
						return dir
					}
					probe := crashAt()
					counter := fsx.NewFault(fsx.Real())
					if _, err := recover.Run(migCtx, probe, recover.Options{Common: host.Common{FS: counter, JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
						t.Fatalf("cut %d: recover: %v", k, err)
					}
					want := migSnapshot(t, probe)
					for _, m := range fsxtest.Cuts(0, counter.Ops()-1, 2) {
						cc.Check()
						dir := crashAt()
						if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{FS: fsx.NewFault(fsx.Real()).CrashAfter(m), JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil && !fsx.IsCrash(err) {
							t.Fatalf("cut %d, recovery cut %d: %v", k, m, err)
						}
						migRemoveDeadLocks(t, dir)
						if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: rollback}); err != nil {
							t.Fatalf("cut %d, recovery cut %d: second recovery: %v", k, m, err)
						}
						if d := migSnapshot(t, dir).diff(want); len(d) > 0 {
							t.Fatalf("cut %d, recovery cut %d (rollback=%v):\n%s", k, m, rollback, strings.Join(d, "\n"))
						}
						runs++
						cc.Recovered()
					}
				}
			}
			t.Logf("%s: %d (cut, recovery cut) pairs converged", sc.name, runs)
		})
	}
}

// TestCatalogRebuildCrashDuringRecovery: the catalog rebuild (from a
// populated, drifted catalog and from none) is cut at sampled points, as
// a process crash and as a power cut; then what an operator runs next —
// `swampj recover`, then the rebuild again — is cut at its operations, and
// run once more uninterrupted. The repo must be exactly what one
// uninterrupted rebuild gives (every file, the catalog row by row), with
// nothing beside the catalog but the catalog itself, no open intent, and a
// further recover-and-rebuild changes nothing. The crash recipe's full mode
// takes every first cut and every second cut.
func TestCatalogRebuildCrashDuringRecovery(t *testing.T) {
	var rebuilds []pxProtocol
	for _, p := range pxProtocols() {
		if p.name == "catalog-rebuild" {
			rebuilds = append(rebuilds, p)
		}
	}
	if len(rebuilds) != 2 {
		t.Fatalf("want the populated and the from-empty rebuild, got %d", len(rebuilds))
	}
	cc := fsxtest.Count(t, "catalog-rebuild", "recovery-crash")
	for _, p := range rebuilds {
		t.Run(p.label(), func(t *testing.T) {
			t.Parallel()
			b := pxMeasure(t, p)
			keep := fsxtest.Around(b.commitAt)
			for _, op := range b.trace {
				if op.Kind == "link" && op.To == repo.CatalogPathOf(filepath.Dir(filepath.Dir(filepath.Dir(op.To)))) {
					keep = append(keep, fsxtest.Around(op.N)...) // the new catalog linked in
				}
			}
			firstCuts := fsxtest.Cuts(1, b.cuts-1, 4, keep...)
			// next is what the operator runs after the crash.
			next := func(dir string, fsys fsx.FS) error {
				if _, err := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{FS: fsys, JournalLockTimeout: time.Second}}); err != nil {
					return err
				}
				return p.run(t, migLoad(t, dir), fsys)
			}
			runs := 0
			for _, k := range firstCuts {
				for _, power := range []bool{false, true} {
					crashAt := func() string {
						dir := fmCopy(t, b.tmpl)
						f := fsx.NewFault(fsx.Real()).CrashAfter(k)
						if power {
							f.TrackDurability()
						}
						if err := p.run(t, migLoad(t, dir), f); err != nil && !fsx.IsCrash(err) {
							t.Fatalf("cut %d: %v", k, err)
						}
						if power {
							if _, err := f.PowerCut(); err != nil {
								t.Fatal(err)
							}
						}
						fmProcessExits(t, dir)
						return dir
					}
					counter := fsx.NewFault(fsx.Real())
					if err := next(crashAt(), counter); err != nil {
						t.Fatalf("cut %d (power cut %v): recover and rebuild: %v", k, power, err)
					}
					for _, m := range fsxtest.Cuts(0, counter.Ops()-1, 3) {
						cc.Check()
						where := fmt.Sprintf("%s: cut %d (after %s, power cut %v), then recover-and-rebuild cut %d (after %s)",
							p.label(), k, b.trace[k-1], power, m, opAt(counter, m))
						dir := crashAt()
						if err := next(dir, fsx.NewFault(fsx.Real()).CrashAfter(m)); err != nil && !fsx.IsCrash(err) {
							t.Fatalf("%s: %v", where, err)
						}
						fmProcessExits(t, dir)
						if err := next(dir, fsx.Real()); err != nil {
							t.Fatalf("%s: recover and rebuild again: %v", where, err)
						}
						got := fmState(t, dir)
						if d := got.diff(b.final); len(d) > 0 {
							t.Fatalf("%s: not what one rebuild gives:\n%s", where, strings.Join(d, "\n"))
						}
						ents, err := os.ReadDir(filepath.Dir(repo.CatalogPathOf(dir)))
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range ents {
							if !e.IsDir() && e.Name() != repo.CatalogName && !fsxtest.SkipCatalogSidecars(e.Name()) {
								t.Fatalf("%s: %s left beside the catalog", where, e.Name())
							}
						}
						if open := fmOpenIntents(t, dir); len(open) != 0 {
							t.Fatalf("%s: %d intents open", where, len(open))
						}
						if err := next(dir, fsx.Real()); err != nil {
							t.Fatalf("%s: third recover and rebuild: %v", where, err)
						}
						if d := fmState(t, dir).diff(got); len(d) > 0 {
							t.Fatalf("%s: not a fixpoint, the third run changed:\n%s", where, strings.Join(d, "\n"))
						}
						runs++
						cc.Recovered()
					}
				}
			}
			t.Logf("%s: %d (rebuild cut, recover-and-rebuild cut) pairs converged; first cuts %v of %d", p.label(), runs, firstCuts, b.cuts)
		})
	}
}

// opAt names the m-th operation of a trace ("nothing" for 0).
func opAt(f *fsx.Fault, m int) string {
	if m == 0 {
		return "nothing"
	}
	return f.Trace()[m-1].String()
}
