package ops_test

// The crash report's "recovery × errors" cell: faults injected into
// recovery itself. Each protocol that leaves an intent for recovery (a
// single write, a batch write, a forward and a reverse migration, a
// doctor repair) is cut where recovery has real steps to do both ways:
// after its intent commit and first rename, and at its done mark (also
// with the journal closed, as a command that stopped there with an error
// leaves it). Each state is recovered forward and rolled back. One clean
// recovery gives its fs trace and the end every other recovery must
// reach; then recovery runs again on the same crashed state with one
// error (ENOSPC, EIO, EACCES, EROFS) injected at an operation of that
// trace — every sixth by default, every one in the crash recipe's full
// mode, every commit (failpoint:*) always. After each injection:
//
//   - a failure's error names the injected error, is more than the bare
//     fs error, and names the intent when one stays open (and the report
//     says that intent is open, and why); a success — a failure recovery
//     tolerates, like a catalog step skipped under the journal's stale
//     mark — has the clean end, and its outcome names the stale mark;
//   - no data file the crashed state and the clean end share is gone or
//     changed, quarantine included (`latest` may be rewritten on the way);
//   - nothing is wedged: the next fault-free recovery, in the same
//     process, with no lock file the first one left removed by hand,
//     proceeds (a lock its holder gave up is stale);
//   - it reaches exactly the clean end (the whole tree and the catalog
//     row by row; a catalog left stale: a rebuild gives what a rebuild
//     gives on the clean end), no intent is open, and a second recovery
//     is a no-op. A forward recovery that failed with the intent open is
//     also, on a fresh copy, rolled back instead: the same, against the
//     clean rollback's end.
//
// Steps hold absolute paths, so every case of one crashed state runs in
// the same directory, restored from a copy of the crashed tree.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/recover"
)

// frProtocol is one protocol whose interrupted state recovery drives.
type frProtocol struct {
	name  string
	build func(t *testing.T, dir string)
	// run is the protocol on fsys; a crash (fsx.IsCrash) is expected.
	run func(t *testing.T, dir string, fsys fsx.FS) error
}

func frProtocols() []frProtocol {
	px := pxProtocols()
	mig := migCrashScenarios()
	asPx := func(p pxProtocol) frProtocol {
		return frProtocol{name: p.name, build: p.template,
			run: func(t *testing.T, dir string, fsys fsx.FS) error { return p.run(t, migLoad(t, dir), fsys) }}
	}
	asMig := func(sc migCrashScenario) frProtocol {
		return frProtocol{name: migProtocolName(sc.name), build: func(t *testing.T, dir string) { sc.fix.buildAt(t, dir) },
			run: func(t *testing.T, dir string, fsys fsx.FS) error {
				o := sc.opts
				oFS := fsys
				_, err := runMigrate(t, dir, oFS, o)
				return err
			}}
	}
	return []frProtocol{
		asPx(px[0]), asPx(px[1]), asMig(mig[0]), asMig(mig[1]),
		{name: "repair", build: fmRepairTemplate, run: func(t *testing.T, dir string, fsys fsx.FS) error {
			_, err := doctor.Run(fmCtx, migLoad(t, dir), doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Repair: true, Confirm: true, Now: drNow})
			return err
		}},
	}
}

// frOpts are the recovery options of every run here, on fsys.
func frOpts(fsys fsx.FS, rollback bool) recover.Options {
	return recover.Options{Common: host.Common{FS: fsys, JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}, Rollback: rollback}
}

// frRestore makes dir the crashed tree saved in saved again.
func frRestore(t *testing.T, saved, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	fsxtest.CopyTree(t, saved, dir)
}

func TestFaultMatrixRecovery(t *testing.T) {
	for _, p := range frProtocols() {
		for _, cut := range []frCut{frAfterFirstRename, frAtDoneMark, frClosedAtDoneMark} {
			for _, rollback := range []bool{false, true} {
				p, cut, rollback := p, cut, rollback
				dir := "forward"
				if rollback {
					dir = "rollback"
				}
				t.Run(fmt.Sprintf("%s/%s/%s", p.name, cut, dir), func(t *testing.T) {
					t.Parallel()
					frCell(t, p, cut, rollback)
				})
			}
		}
	}
}

// frCut is where a protocol is cut: named by what it has just done, not
// by an operation count (a write's staging runs beside its journal commit
// and lock heartbeats write at any time, so counts vary from run to run).
type frCut string

const (
	// frAfterFirstRename: the intent is journaled and its first rename
	// (a version published, an entry moved, a version quarantined) is
	// done; the rest is left for recovery, and a rollback has it to undo.
	frAfterFirstRename frCut = "after-first-rename"
	// frAtDoneMark: every step is done, the intent not yet marked done:
	// forward recovery only observes, a rollback undoes everything.
	frAtDoneMark frCut = "at-done-mark"
	// frClosedAtDoneMark: the same, but the journal's holder record is
	// gone, as a command that stopped there with an error and closed the
	// journal leaves it: no crash to look behind, so recovery's last
	// commit is its done marks, at Close.
	frClosedAtDoneMark frCut = "closed-at-done-mark"
)

// frCutFS crashes the process model (its Fault) at the cut.
type frCutFS struct {
	*fsx.Fault
	cut       frCut
	journaled bool
}

func newFrCutFS(cut frCut) *frCutFS { return &frCutFS{Fault: fsx.NewFault(fsx.Real()), cut: cut} }

func (c *frCutFS) Failpoint(name string) error {
	switch {
	case name == "journal.begin":
		c.journaled = true
	case name == "journal.flush" && c.journaled && (c.cut == frAtDoneMark || c.cut == frClosedAtDoneMark):
		c.CrashAfter(c.Ops()) // this flush is the first operation lost
	}
	return c.Fault.Failpoint(name)
}

func (c *frCutFS) renamed(err error) error {
	if err == nil && c.journaled && c.cut == frAfterFirstRename {
		c.CrashAfter(c.Ops())
	}
	return err
}

func (c *frCutFS) Rename(o, n string) error { return c.renamed(c.Fault.Rename(o, n)) }
func (c *frCutFS) RenameNoReplace(o, n string) error {
	return c.renamed(c.Fault.RenameNoReplace(o, n))
}

// frCell is one crashed state of one protocol, recovered one way, with
// every sampled operation of its recovery failing in turn.
func frCell(t *testing.T, p frProtocol, cut frCut, rollback bool) {
	scratch := fsxtest.ScratchDir(t)
	dir, saved := filepath.Join(scratch, "repo"), filepath.Join(scratch, "crashed")
	p.build(t, dir)
	// A write whose done mark is the lost operation has returned: the mark
	// is lazy (Journal.Finish), and the intent stays open.
	cfs := newFrCutFS(cut)
	if err := p.run(t, dir, cfs); err != nil && !fsx.IsCrash(err) || !cfs.Crashed() {
		t.Fatalf("cut %s: the process model did not crash (%v)", cut, err)
	}
	fmProcessExits(t, dir)
	if cut == frClosedAtDoneMark {
		// A writer that shares the journal (journal.Options.Shared) holds
		// no turn, so no holder record, while it waits to close.
		if err := os.Remove(journal.HolderPath(repo.JournalPathOf(dir))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	if len(fmOpenIntents(t, dir)) == 0 {
		t.Fatalf("cut %s: no intent open: recovery has nothing to do", cut)
	}
	fsxtest.CopyTree(t, dir, saved)
	crashed := fmManifest(t, dir)

	// One clean recovery: its trace and its end. A forward recovery that
	// fails with the intent open is also rolled back instead (the error
	// offers both ways out): the clean rollback's end is that one's.
	end, trace := frCleanEnd(t, dir, crashed, rollback)
	var rollbackEnd *frEnd
	if !rollback {
		frRestore(t, saved, dir)
		rollbackEnd, _ = frCleanEnd(t, dir, crashed, true)
	}

	// Every operation in the crash recipe's full mode; otherwise every
	// sixth (every twelfth under -short), and every commit (failpoint:*).
	sample := fsxtest.Cuts(1, len(trace), 6)
	for _, op := range trace {
		if strings.HasPrefix(op.Kind, "failpoint:") {
			sample = append(sample, op.N)
		}
	}
	sort.Ints(sample)
	sample = slices.Compact(sample)
	cc := fsxtest.Count(t, "recovery", "errors")
	outcomes, rolledBack := map[string]int{}, 0
	for _, n := range sample {
		op := trace[n-1]
		for _, e := range fmErrors {
			cc.Check()
			where := fmt.Sprintf("%s cut %s, rollback=%v, recovery with %v at %v", p.name, cut, rollback, e.err, op)
			frRestore(t, saved, dir)
			outcome, found := frInject(t, dir, op, e.err, rollback, rollback, end)
			outcomes[outcome]++
			frJudge(t, cc, where, frKnownWedge(op, end), found)
			if rollbackEnd != nil && outcome == "failed, intent open" {
				cc.Check()
				rolledBack++
				frRestore(t, saved, dir)
				_, found := frInject(t, dir, op, e.err, false, true, rollbackEnd)
				frJudge(t, cc, where+", then rolled back", frKnownWedge(op, rollbackEnd), found)
			}
		}
	}
	t.Logf("%s cut %s (rollback=%v): %d of %d recovery operations × %d errors injected; first recovery: %v; %d of the failures also rolled back",
		p.name, cut, rollback, len(sample), len(trace), len(fmErrors), outcomes, rolledBack)
}

// frJudge reports one case's findings (a known wedge's are logged) and
// counts it.
func frJudge(t *testing.T, cc *fsxtest.CrashCount, where, known string, found []string) {
	t.Helper()
	switch {
	case known != "" && len(found) == 0:
		t.Errorf("%s: the known wedge (%s) no longer happens: take it out of frKnownWedge", where, known)
	case known != "":
		t.Logf("%s: KNOWN WEDGE, not fixed here (%s): %d findings, first: %s", where, known, len(found), found[0])
	default:
		for _, f := range found {
			t.Errorf("%s: %s", where, f)
		}
	}
	if len(found) == 0 || known != "" {
		cc.Recovered()
	}
}

// frCleanEnd recovers the crashed tree in dir once, without faults, one
// way: the trace of that recovery and where it ends.
func frCleanEnd(t *testing.T, dir string, crashed map[string][]string, rollback bool) (*frEnd, []fsx.Op) {
	t.Helper()
	counter := fsx.NewFault(fsx.Real())
	if _, err := recover.Run(fmCtx, dir, frOpts(counter, rollback)); err != nil {
		t.Fatalf("the clean recovery (rollback=%v) failed: %v", rollback, err)
	}
	end := &frEnd{state: fmState(t, dir), stale: catalogStaleOf(t, dir) != nil, keep: frCommon(crashed, fmManifest(t, dir))}
	// What a catalog rebuild makes of that end: the catalog a recovery
	// that left it stale must come to (the rebuild reads the disk, so its
	// rows may differ from the write-through's on a damaged item or a
	// fixture without metadata). It refuses where the namespace is
	// configured over data at the solo path (a reverse that keeps the
	// namespace, a forward migration rolled back).
	var um *catalogsync.UnmigratedError
	switch _, err := catalogsync.Rebuild(fmCtx, migLoad(t, dir), catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true}); {
	case errors.As(err, &um):
	case err != nil:
		t.Fatalf("rebuilding the catalog after the clean recovery (rollback=%v): %v", rollback, err)
	default:
		rebuilt := fmState(t, dir)
		end.rebuilt = &rebuilt
	}
	return end, counter.Trace()
}

// frCommon is what the crashed state and the clean recovery's end have in
// common: the data files no recovery may lose, by logical path. `latest`
// is left out: it names a version, and a step on the way may rewrite it
// (one going forward, then rolled back, rewrites it twice).
func frCommon(crashed, end map[string][]string) map[string]string {
	out := map[string]string{}
	for p, sums := range crashed {
		if fmLatestOnly(p) {
			continue
		}
		for _, s := range end[p] {
			if s == sums[0] {
				out[p] = s
			}
		}
	}
	return out
}

// frEnd is where one clean recovery of a crashed state ends.
type frEnd struct {
	state migState
	stale bool // it left the catalog marked stale
	// keep: the data files the crashed state and this end share, which
	// no recovery on the way may lose (logical path → sha256).
	keep map[string]string
	// rebuilt is state after a catalog rebuild (nil: the rebuild refuses
	// there, the namespace configured over data at the solo path).
	rebuilt *migState
}

// frKnownWedge names the cells that still end in a state the ordinary
// commands cannot clean, and why ("" for every other cell): logged, not
// failed; a known wedge that stops happening fails.
func frKnownWedge(op fsx.Op, end *frEnd) string {
	return ""
}

// frInject runs one case: recovery (rollback: rolling back) with injected
// at op, then the checks, with the next recoveries going the way next
// says and end where they must come to.
func frInject(t *testing.T, dir string, op fsx.Op, injected error, rollback, next bool, end *frEnd) (outcome string, found []string) {
	t.Helper()
	errorf := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }

	rep, err := recover.Run(fmCtx, dir, frOpts(fsx.NewFault(fsx.Real()).FailAt(op.N, injected), rollback))
	open := fmOpenIntents(t, dir)
	switch {
	case err == nil:
		outcome = "ok"
		if len(open) > 0 {
			errorf("succeeded but intent %d is still open", open[0].ID)
		}
		stale := catalogStaleOf(t, dir) != nil
		if d := fmState(t, dir).diff(end.state); len(d) > 0 && !(stale && frRowsOnly(d)) {
			errorf("succeeded but the repo is not what a clean recovery gives:\n%s", strings.Join(d, "\n"))
		}
		said := false
		for _, o := range rep.Intents {
			said = said || o.CatalogStale != ""
		}
		if stale && !end.stale && !said {
			errorf("succeeded and left the catalog marked stale, but no outcome says so: %+v", rep.Intents)
		}
	default:
		outcome = "failed, intent closed"
		if len(open) > 0 {
			outcome = "failed, intent open"
		}
		var pe *fs.PathError
		switch {
		case !errors.Is(err, injected):
			errorf("the error does not name the injected error: %v", err)
		case errors.As(err, &pe) && err.Error() == pe.Error():
			errorf("the error is the bare fs error, saying nothing of what recovery did or what is true now: %v", err)
		}
		if len(open) > 0 && !strings.Contains(err.Error(), fmt.Sprintf("intent %d", open[0].ID)) {
			errorf("intent %d stays open, but the error does not name it: %v", open[0].ID, err)
		}
		for _, o := range rep.Intents {
			if len(open) > 0 && o.ID == open[0].ID && (o.Status != journal.StatusOpen || o.Error == "") {
				errorf("intent %d stays open, but the report says %q (error %q): %s", o.ID, o.Status, o.Error, o.Sentence())
			}
		}
	}
	if d := frKept(end.keep, fmManifest(t, dir)); len(d) > 0 {
		errorf("after the failed recovery, data files are gone or changed:\n%s", strings.Join(d, "\n"))
	}

	// The next recovery, as the operator runs it: the locks the first one
	// left are not cleaned up by hand.
	if _, err := recover.Run(fmCtx, dir, frOpts(nil, next)); err != nil {
		errorf("WEDGE: the next fault-free recovery failed: %v", err)
		return outcome, found
	}
	if open := fmOpenIntents(t, dir); len(open) > 0 {
		errorf("intent %d still open after the next recovery: %s", open[0].ID, open[0].LastError)
	}
	got := fmState(t, dir)
	if d := got.diff(end.state); len(d) > 0 {
		stale := catalogStaleOf(t, dir) != nil
		switch {
		case stale && !end.stale && frRowsOnly(d) && end.rebuilt != nil:
			if _, err := catalogsync.Rebuild(fmCtx, migLoad(t, dir), catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true}); err != nil {
				errorf("the catalog is marked stale and the rebuild failed: %v", err)
			} else if d := frSortRows(fmState(t, dir)).diff(frSortRows(*end.rebuilt)); len(d) > 0 {
				errorf("the catalog is marked stale, and a rebuild does not give what it gives after a clean recovery:\n%s", strings.Join(d, "\n"))
			} else if catalogStaleOf(t, dir) != nil {
				errorf("the rebuild left the stale mark")
			}
		default:
			errorf("after the next recovery (catalog stale: %v) the repo is not what a clean recovery gives:\n%s", stale, strings.Join(d, "\n"))
		}
	}
	// A second recovery is a no-op.
	before := fmState(t, dir)
	rep2, err := recover.Run(fmCtx, dir, frOpts(nil, next))
	if err != nil {
		errorf("the second recovery failed: %v", err)
	} else if len(rep2.Intents) > 0 {
		errorf("the second recovery found %d intents to drive", len(rep2.Intents))
	}
	if d := fmState(t, dir).diff(before); len(d) > 0 {
		errorf("the second recovery changed the repo:\n%s", strings.Join(d, "\n"))
	}
	return outcome, found
}

// frSortRows orders the catalog's rows: a rebuild keeps the rows that
// are right where they are and adds the rest, so its row order depends on
// what the catalog held before.
func frSortRows(s migState) migState {
	rows := strings.Split(s.rows, "\n")
	sort.Strings(rows)
	s.rows = strings.Join(rows, "\n")
	return s
}

// frRowsOnly: the differences are in the catalog's rows only.
func frRowsOnly(d []string) bool {
	for _, l := range d {
		if !strings.HasPrefix(l, "catalog rows differ") {
			return false
		}
	}
	return true
}

// frKept lists the files of keep that are gone or changed in after.
func frKept(keep map[string]string, after map[string][]string) []string {
	var d []string
	for p, sum := range keep {
		ok := false
		for _, s := range after[p] {
			ok = ok || s == sum
		}
		if !ok {
			d = append(d, "lost or changed "+p)
		}
	}
	sort.Strings(d)
	return d
}
