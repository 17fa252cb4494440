package ops_test

// The fault matrix: every protocol (write, batch write,
// migrate, reverse, unset --migrate, doctor repair, catalog rebuild) is
// run once clean under fsx.Fault to get its trace, then again with one
// error (ENOSPC, EIO, EACCES, EROFS) injected at each operation of that
// trace in turn — file ops, directory fsyncs, lock files, and the bbolt
// and SQLite commits (failpoint:*). After each injection:
//
//   - the first call is truthful: an error leaves the repo exactly as
//     before, or says the intent is open (and one is); a success left its
//     effect complete (the catalog may lag only under the journal's stale
//     mark);
//   - the process "exits" (the lock files it left are removed, as a dead
//     pid's would be taken over), and an operator runs `recover` on the
//     real disk. The disk is clean now, so forward recovery must succeed: a
//     failure is a failure of the cell, whatever a rollback does after it;
//   - right after recovery, before anything is re-run: every data file that
//     was there before exists exactly once with its bytes, and no file is
//     there that neither the start nor the clean run's end has (a stage or
//     a temp fails unless the doctor reports it as a live writer's); for
//     the writes (one intent, every version or none), the whole repo — every
//     file and the catalog row by row — is exactly the start or the clean
//     run's end (the catalog may lag only under the journal's stale mark);
//   - then the ordinary commands: the same command again, doctor --repair
//     --confirm, and catalog rebuild --confirm when doctor or verify says
//     the catalog is stale or drifts;
//   - then: no open intent, doctor clean, catalog verify in sync, every
//     data file that was there before exists exactly once with its bytes
//     (quarantine included), nothing the clean run does not leave, the repo
//     exactly the clean run's end, and the operation's effect holds.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

var fmCtx = context.Background()

// fmErrors are the injected errors of the matrix.
var fmErrors = []struct {
	name string
	err  error
}{{"ENOSPC", syscall.ENOSPC}, {"EIO", syscall.EIO}, {"EACCES", syscall.EACCES}, {"EROFS", syscall.EROFS}}

// fmProtocol is one protocol of the matrix.
type fmProtocol struct {
	name string
	// template builds the starting repo in dir on the real disk (once per
	// protocol; each injection gets a copy).
	template func(t *testing.T, dir string)
	// run is the protocol's Go API on fsys. rerun says this is the
	// operator's re-run (real disk), where "nothing to do" answers count
	// as success.
	run func(t *testing.T, r *repo.Repo, fsys fsx.FS, rerun bool) (any, error)
	// complete checks, right after a successful first call, that its
	// effect is all there (stale: the journal's stale mark is set).
	complete func(t *testing.T, r *repo.Repo, res any, stale bool) string
	// effect checks the operation's effect after the operator's commands.
	effect func(t *testing.T, r *repo.Repo) string
	// mayChange: logical data paths the operation may change or remove.
	mayChange func(logical string) bool
	// exact: the operation ends in one tree and one catalog whatever
	// happened on the way (the clean run's), compared whole.
	exact bool
	// atomic: recovery leaves exactly the start or the clean run's end
	// (tree and catalog rows), checked before the re-run: the writes, whose
	// intent publishes every version or none.
	atomic bool
	// plant, if set, changes the repo right after recovery (the tests of
	// the oracle itself: what it plants must fail the cell).
	plant func(t *testing.T, dir string)
	// plantBeforeRecover, if set, changes the repo after the faulted call
	// and before recover (the same).
	plantBeforeRecover func(t *testing.T, dir string)
	// unmigratedEnd: the operation ends with a namespace configured and
	// the data at the solo path (a reverse migration that keeps the
	// namespace): catalog verify then reports the rows as not migrated,
	// rebuild refuses, and the catalog must be exactly the clean run's.
	unmigratedEnd bool
}

func fmLatestOnly(logical string) bool { return filepath.Base(logical) == "latest" }

const (
	fmType = "command/shell"
	fmM1   = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"
	fmM2   = "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9"
)

func fmAddr(model, name string) repo.Address {
	return repo.Address{Type: fmType, ModelID: model, DataName: name}
}

// fmBaseRepo is a solo repo with two items (three versions) written by
// swampj itself, so metadata and catalog are real, plus a few files of the
// other datastore subdirectories.
func fmBaseRepo(t *testing.T, dir string) {
	fsxtest.WriteFiles(t, dir, map[string]string{
		".swamp.yaml":                         migConfig(dir, ""),
		".swamp/outputs/run-1/output.json":    `{"ok":true}`,
		".swamp/workflow-runs/wf/run-1.yaml":  "status: done\n",
		".swamp/audit/2026-08-01.jsonl":       `{"e":1}` + "\n",
		".swamp/outputs/run-1/extra/note.txt": "notes",
	})
	r := migLoad(t, dir)
	for _, w := range []struct {
		a repo.Address
		s string
	}{{fmAddr(fmM1, "out"), "hello\n"}, {fmAddr(fmM1, "out"), "hello again\n"}, {fmAddr(fmM2, "log"), `{"log":1}`}} {
		if _, err := write.WriteVersions(fmCtx, r, []write.VersionWrite{{Address: w.a, Content: strings.NewReader(w.s)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}}); err != nil {
			t.Fatal(err)
		}
	}
}

// fmNamespaced sets the namespace (config and manifest) on a base repo.
func fmNamespaced(t *testing.T, dir string) {
	fmBaseRepo(t, dir)
	fsxtest.WriteFiles(t, dir, map[string]string{
		".swamp.yaml": migConfig(dir, migNS),
		".swamp/" + migNS + "/.namespace.json": string(repo.WriteManifestBytes(migNS, migRepoID,
			time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC))),
	})
}

// fmMigrated is a namespaced repo whose data was migrated by swampj.
func fmMigrated(t *testing.T, dir string) {
	fmNamespaced(t, dir)
	if _, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}); err != nil {
		t.Fatal(err)
	}
}

// ---- write protocols

type fmWrite struct {
	a       repo.Address
	payload string
	stream  bool
}

func fmWriteProtocol(name string, ws []fmWrite) fmProtocol {
	return fmProtocol{
		name:     name,
		template: fmBaseRepo,
		run: func(t *testing.T, r *repo.Repo, fsys fsx.FS, rerun bool) (any, error) {
			var in []write.VersionWrite
			for _, w := range ws {
				var c io.Reader = strings.NewReader(w.payload)
				if w.stream {
					c = nonSeekerT{c}
				}
				in = append(in, write.VersionWrite{Address: w.a, Content: c})
			}
			// One fixed id and time: every run writes the same bytes and
			// rows, so whole repos compare.
			o := ops.FixIdentity(write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, JournalLockTimeout: time.Second}}, "55555555-5555-4555-8555-555555555555", crashNewAt)
			o.FS = fsys
			return write.WriteVersions(fmCtx, r, in, o)
		},
		complete: func(t *testing.T, r *repo.Repo, res any, stale bool) string {
			out := res.([]write.WrittenVersion)
			if len(out) != len(ws) {
				return fmt.Sprintf("%d versions written, want %d", len(out), len(ws))
			}
			last := map[repo.Address]int64{}
			for i, v := range out {
				if got := fmReadVersion(r, v.Address, v.Version); got != ws[i].payload {
					return fmt.Sprintf("version %d of %s reads %q, want %q", v.Version, v.Address, got, ws[i].payload)
				}
				last[v.Address] = v.Version
			}
			for a, v := range last {
				if l := fmLatest(r, a); l != fmt.Sprint(v) {
					return fmt.Sprintf("%s: latest is %q, want %d", a, l, v)
				}
				if !stale {
					if rows := fmCatalogLatest(t, r, a); rows != v {
						return fmt.Sprintf("%s: the catalog's latest is %d, want %d, and no stale mark says it lags", a, rows, v)
					}
				}
			}
			return ""
		},
		effect: func(t *testing.T, r *repo.Repo) string {
			want := map[repo.Address]string{}
			for _, w := range ws {
				want[w.a] = w.payload
			}
			for a, p := range want {
				if got := fmReadVersion(r, a, 0); got != p {
					return fmt.Sprintf("%s: latest reads %q, want %q", a, got, p)
				}
			}
			return ""
		},
		mayChange: fmLatestOnly,
		exact:     true,
		atomic:    true,
	}
}

type nonSeekerT struct{ r io.Reader }

func (s nonSeekerT) Read(b []byte) (int, error) { return s.r.Read(b) }

func fmReadVersion(r *repo.Repo, a repo.Address, v int64) string {
	c, err := read.OpenData(fmCtx, r, a, v, host.Common{FS: fsx.Real()})
	if err != nil {
		return "<" + err.Error() + ">"
	}
	defer c.Reader.Close()
	b, err := io.ReadAll(c.Reader)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func fmLatest(r *repo.Repo, a repo.Address) string {
	b, err := os.ReadFile(filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName, "latest"))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func fmCatalogLatest(t *testing.T, r *repo.Repo, a repo.Address) int64 {
	for _, row := range migCatalogRows(t, r.Dir) {
		if strings.Contains(row, "ModelID:"+a.ModelID+" DataName:"+a.DataName+" ") && strings.Contains(row, "IsLatest:true") &&
			strings.Contains(row, "Namespace:"+r.Namespace+" ") {
			var v int64
			if m := regexp.MustCompile(` Version:(\d+) `).FindStringSubmatch(row); m != nil {
				fmt.Sscan(m[1], &v)
			}
			return v
		}
	}
	return 0
}

// ---- migration protocols

func fmMigrateProtocol(name string, template func(*testing.T, string), o migrate.MigrateOptions) fmProtocol {
	preview := o
	preview.Confirm = false
	nothingToDo := func(t *testing.T, r *repo.Repo) string {
		r = migLoad(t, r.Dir)
		if o.Unset {
			if r.Namespace != "" {
				return "the namespace is still set: " + r.Namespace
			}
			if !migExists(filepath.Join(r.Base, "data", fmType, fmM1, "out", "latest")) {
				return "the data is not back at the solo path"
			}
			return ""
		}
		res, err := runMigrate(t, r.Dir, nil, preview)
		if err != nil {
			return "preview: " + err.Error()
		}
		if !res.Preview.NothingToDo {
			return fmt.Sprintf("the migration is not complete: the preview still plans %+v", res.Preview.Directories)
		}
		return ""
	}
	return fmProtocol{
		name:     name,
		template: template,
		run: func(t *testing.T, r *repo.Repo, fsys fsx.FS, rerun bool) (any, error) {
			oo := o
			ooFS := fsys
			res, err := runMigrate(t, r.Dir, ooFS, oo)
			var ne *migrate.NoNamespaceError
			if rerun && o.Unset && errors.As(err, &ne) {
				return res, nil // the unset was complete: nothing to unset
			}
			return res, err
		},
		complete: func(t *testing.T, r *repo.Repo, res any, stale bool) string { return nothingToDo(t, r) },
		effect:   nothingToDo,
		mayChange: func(logical string) bool {
			return o.Unset && logical == ".namespace.json"
		},
		exact:         true,
		unmigratedEnd: o.Reverse && !o.Unset,
	}
}

// ---- doctor repair, catalog rebuild

func fmRepairTemplate(t *testing.T, dir string) {
	drBuild(t, dir, drSpec{items: []drItem{dr3955()}})
}

func fmRebuildTemplate(t *testing.T, dir string) {
	fmBaseRepo(t, dir)
	// Drift: a row missing, a latest flag wrong.
	r := migLoad(t, dir)
	csWithDB(t, r, func(db *sql.DB) {
		csExec1(t, db, `DELETE FROM catalog WHERE data_name = 'log'`)
		csExec1(t, db, `UPDATE catalog SET is_latest = 1 - is_latest WHERE data_name = 'out'`)
	})
}

func fmProtocols() []fmProtocol {
	w := fmWriteProtocol("write", []fmWrite{{a: fmAddr(fmM1, "out"), payload: "version three"}})
	b := fmWriteProtocol("batch", []fmWrite{
		{a: fmAddr(fmM1, "out"), payload: "batch one"},
		{a: fmAddr(fmM2, "log"), payload: "batch two", stream: true},
		{a: fmAddr(fmM1, "out"), payload: "batch three", stream: true},
		{a: fmAddr(fmM2, "log"), payload: "batch four"},
	})
	repair := fmProtocol{
		name:     "repair",
		template: fmRepairTemplate,
		run: func(t *testing.T, r *repo.Repo, fsys fsx.FS, rerun bool) (any, error) {
			return doctor.Run(fmCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Repair: true, Confirm: true, Now: drNow})
		},
		complete: func(t *testing.T, r *repo.Repo, res any, stale bool) string {
			rep := res.(*doctor.Report)
			if rep.OnlySkipped() {
				// swamp's per-model lock could not be taken: the repair
				// skipped the item and says so (rep.Findings' reasons).
				return fmSkippedUnchanged(t, r, rep)
			}
			if !cleanBesideOtherRoot(rep) {
				return fmt.Sprintf("the repair succeeded but left %d findings: %v", rep.Remaining, drCodes(rep))
			}
			return fmRepaired(t, r)
		},
		effect:    fmRepaired,
		mayChange: fmLatestOnly,
		exact:     true,
	}
	rebuild := fmProtocol{
		name:     "rebuild",
		template: fmRebuildTemplate,
		run: func(t *testing.T, r *repo.Repo, fsys fsx.FS, rerun bool) (any, error) {
			return catalogsync.Rebuild(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Confirm: true})
		},
		complete: func(t *testing.T, r *repo.Repo, res any, stale bool) string {
			return fmInSync(t, r, false)
		},
		effect:    func(t *testing.T, r *repo.Repo) string { return fmInSync(t, r, false) },
		mayChange: func(string) bool { return false },
		exact:     true,
	}
	return []fmProtocol{
		w, b,
		fmMigrateProtocol("migrate", fmNamespaced, migrate.MigrateOptions{Confirm: true}),
		fmMigrateProtocol("reverse", fmMigrated, migrate.MigrateOptions{Reverse: true, Confirm: true}),
		fmMigrateProtocol("unset", fmMigrated, migrate.MigrateOptions{Unset: true, Confirm: true}),
		repair, rebuild,
	}
}

// fmSkippedUnchanged: a repair that skipped every finding left the item
// alone and says why.
func fmSkippedUnchanged(t *testing.T, r *repo.Repo, rep *doctor.Report) string {
	for _, f := range rep.Findings {
		if f.Status == doctor.StatusSkipped && f.Reason == "" {
			return fmt.Sprintf("finding %s skipped without a reason", f.Code)
		}
	}
	if l := drReadQuiet(filepath.Join(drItemDir(r, "result"), "latest")); l != "5" {
		return fmt.Sprintf("the repair skipped the item but latest is %q", l)
	}
	return ""
}

// fmRepaired: the #3955 item's bad versions are out of the data root and
// `latest` names the last readable one.
func fmRepaired(t *testing.T, r *repo.Repo) string {
	dir := drItemDir(r, "result")
	for _, v := range []string{"4", "5"} {
		if migExists(filepath.Join(dir, v)) {
			return "the zero-byte version " + v + " is still in the data root"
		}
	}
	if l := drReadQuiet(filepath.Join(dir, "latest")); l != "3" {
		return fmt.Sprintf("latest is %q, want 3", l)
	}
	return ""
}

func drReadQuiet(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func fmInSync(t *testing.T, r *repo.Repo, unmigrated bool) string {
	rep, err := catalogsync.Verify(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil {
		return "verify: " + err.Error()
	}
	if unmigrated {
		if rep.UnmigratedData == "" {
			return "catalog verify does not report the data as not migrated"
		}
	} else if !rep.InSync {
		return fmt.Sprintf("catalog verify: not in sync: %+v", rep.Counts)
	}
	if rep.CatalogStale != nil {
		return fmt.Sprintf("catalog verify: stale mark left: %+v", rep.CatalogStale)
	}
	return ""
}

// ---- the matrix

func TestFaultMatrix(t *testing.T) {
	// Every operation in the crash recipe's full mode; otherwise every
	// fourth (every sixth under -short), and every commit (failpoint:*).
	every := 4
	switch {
	case fsxtest.Full():
		every = 1
	case testing.Short():
		every = 6
	}
	for _, p := range fmProtocols() {
		p := p
		base := fmMeasure(t, p)
		for _, e := range fmErrors {
			e := e
			t.Run(p.name+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				n, outcomes := 0, map[string]int{}
				cc := fsxtest.Count(t, fmReportName(p.name), "errors")
				for i, op := range base.trace {
					if i%every != 0 && !strings.HasPrefix(op.Kind, "failpoint:") {
						continue
					}
					cc.Check()
					outcomes[fmInject(t, p, base, op, e.err)]++
					if !t.Failed() {
						cc.Recovered()
					}
					n++
				}
				t.Logf("%s × %s: %d of %d operations injected; first call: %v", p.name, e.name, n, len(base.trace), outcomes)
			})
		}
	}
}

// fmBase is one protocol's template and clean run, shared by its cells.
type fmBase struct {
	tmpl  string
	trace []fsx.Op
	// final and finalManifest: the repo the clean run leaves.
	final         migState
	finalManifest map[string][]string
}

// fmMeasure builds p's template and runs p once clean on a copy (made
// here, so the parent test owns them).
func fmMeasure(t *testing.T, p fmProtocol) *fmBase {
	t.Helper()
	tmpl := filepath.Join(fsxtest.ScratchDir(t), "tmpl")
	p.template(t, tmpl)
	fmDropJournal(t, tmpl)
	dir := fmCopy(t, tmpl)
	clean := fsx.NewFault(fsx.Real())
	res, err := p.run(t, migLoad(t, dir), clean, false)
	if err != nil {
		t.Fatalf("%s: the clean run failed: %v", p.name, err)
	}
	if msg := p.complete(t, migLoad(t, dir), res, catalogStaleOf(t, dir) != nil); msg != "" {
		t.Fatalf("%s: the clean run is not complete: %s", p.name, msg)
	}
	if msg := fmInSync(t, migLoad(t, dir), p.unmigratedEnd); msg != "" {
		t.Fatalf("%s: after the clean run: %s", p.name, msg)
	}
	return &fmBase{tmpl: tmpl, trace: clean.Trace(), final: fmState(t, dir), finalManifest: fmManifest(t, dir)}
}

// fmReportName is the crash report's name of a matrix protocol.
func fmReportName(p string) string {
	switch p {
	case "write":
		return "version-write"
	case "batch":
		return "batch-write"
	case "unset":
		return "unset-migrate"
	case "rebuild":
		return "catalog-rebuild"
	}
	return p
}

var fmOpenClaim = regexp.MustCompile(`(still open|stays open|left open|is open|remains open|intent \d+ .*open)`)

// fmInject runs one cell of the matrix: protocol p, error err at op, and
// fails t with what the cell found (a known wedge is logged instead). It
// returns how the first call ended: "ok", "failed, unchanged" or "failed,
// intent open".
func fmInject(t *testing.T, p fmProtocol, base *fmBase, op fsx.Op, injected error) (outcome string) {
	t.Helper()
	outcome, found := fmCell(t, p, base, op, injected)
	where := fmt.Sprintf("%s, %v at %v", p.name, injected, op)
	known := fmKnownWedge(p.name, op)
	switch {
	case known != "" && len(found) == 0:
		t.Errorf("%s: the known wedge (%s) no longer happens: take it out of fmKnownWedge", where, known)
	case known != "":
		t.Logf("%s: KNOWN WEDGE, not fixed here (%s): %d findings, first: %s", where, known, len(found), found[0])
	default:
		for _, f := range found {
			t.Error(f)
		}
	}
	return outcome
}

// fmCell runs one cell and returns the first call's outcome and every
// way the cell failed its oracle (none: it held).
func fmCell(t *testing.T, p fmProtocol, base *fmBase, op fsx.Op, injected error) (outcome string, found []string) {
	t.Helper()
	dir := fmCopy(t, base.tmpl)
	where := fmt.Sprintf("%s, %v at %v", p.name, injected, op)
	errorf := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	before := fmState(t, dir)
	manifest := fmManifest(t, dir)

	// 1. The command, with the fault.
	f := fsx.NewFault(fsx.Real()).FailAt(op.N, injected)
	res, err := p.run(t, migLoad(t, dir), f, false)
	fmProcessExits(t, dir)
	open := fmOpenIntents(t, dir)
	stale := catalogStaleOf(t, dir) != nil
	outcome = "ok"
	if err != nil {
		outcome = "failed, unchanged"
		if len(open) > 0 {
			outcome = "failed, intent open"
		}
	}
	if err == nil {
		// An open intent after a success is the lazy done mark that did
		// not reach the journal (Journal.Finish): the effect is complete
		// and the next recovery observes every step done. The operator's
		// commands below must close it.
		if msg := p.complete(t, migLoad(t, dir), res, stale); msg != "" {
			errorf("%s: succeeded but %s", where, msg)
		}
	} else {
		changed := fmState(t, dir).diff(before)
		claims := fmOpenClaim.MatchString(err.Error())
		switch {
		case len(changed) > 0 && len(open) == 0:
			errorf("%s: failed (%v) and changed the repo with no intent open to finish or undo it:\n%s", where, err, strings.Join(changed, "\n"))
		case len(changed) > 0 && !claims:
			errorf("%s: failed and changed the repo, but the error does not say an intent is open: %v\n%s", where, err, strings.Join(changed, "\n"))
		case len(open) > 0 && !claims:
			errorf("%s: failed leaving intent %d open, but the error does not say so: %v", where, open[0].ID, err)
		case claims && len(open) == 0:
			errorf("%s: the error says an intent is open, but none is: %v", where, err)
		}
	}

	if p.plantBeforeRecover != nil {
		p.plantBeforeRecover(t, dir)
	}

	// 2. The operator's recover, on the real disk, where nothing fails any
	// more: forward recovery must succeed. (The rollback after a failed
	// one only lets the rest of the cell say what else is wrong.)
	migLoad(t, dir) // the configuration reads before recovery too
	if _, rerr := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}}); rerr != nil {
		errorf("%s: recover failed on a clean disk: %v", where, rerr)
		if _, rberr := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}, Rollback: true}); rberr != nil {
			errorf("%s: WEDGE: recover failed (%v) and recover --rollback failed (%v)", where, rerr, rberr)
			return outcome, found
		}
	}
	if p.plant != nil {
		p.plant(t, dir)
	}

	// 3. What recovery left, before anything is re-run.
	var live func(string) bool // the doctor's live writers' paths, asked only when needed
	liveOf := func(rel string) bool {
		if live == nil {
			live = fmLiveWriters(t, dir)
		}
		return live(rel)
	}
	for _, d := range fmManifestCheck(manifest, base.finalManifest, fmManifest(t, dir), p.mayChange, liveOf) {
		errorf("%s: after recover, before the re-run: %s", where, d)
	}
	rerun := true
	if p.atomic {
		atEnd, d := fmStartOrEnd(t, dir, before, base.final, liveOf)
		for _, d := range d {
			errorf("%s: after recover, before the re-run: %s", where, d)
		}
		// A write is not idempotent: the operator re-runs one that did not
		// happen, and one that did would write new versions.
		rerun = !atEnd
	}

	// 4. The rest of the ordinary commands.
	r := migLoad(t, dir)
	if rerun {
		if _, rerr := p.run(t, r, fsx.Real(), true); rerr != nil {
			errorf("%s: re-running the command after recover failed: %v", where, rerr)
		}
	}
	r = migLoad(t, dir)
	// A confirmed repair rebuilds a catalog the journal marks stale,
	// so a stale mark seen now means the rows are rebuilt either way.
	rebuilt := catalogStaleOf(t, r.Dir) != nil
	if _, derr := doctor.Run(fmCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow}); derr != nil {
		errorf("%s: doctor --repair --confirm: %v", where, derr)
	}
	// What the doctor's catalog_stale remedy says (also where the end is
	// un-migrated: the rebuild then describes the data at the solo path),
	// or what verify's disagreement calls for.
	if catalogStaleOf(t, r.Dir) != nil || (!p.unmigratedEnd && fmNeedsRebuild(t, r)) {
		rebuilt = true
		if _, berr := catalogsync.Rebuild(fmCtx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Confirm: true}); berr != nil {
			errorf("%s: catalog rebuild --confirm: %v", where, berr)
		}
	}

	// 5. Clean.
	if open := fmOpenIntents(t, dir); len(open) > 0 {
		errorf("%s: intent %d (%s) still open after the ordinary commands: %s", where, open[0].ID, open[0].Summary, open[0].LastError)
	}
	rep, derr := doctor.Run(fmCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Now: drNow})
	if derr != nil {
		errorf("%s: doctor: %v", where, derr)
	} else if !cleanBesideOtherRoot(rep) {
		errorf("%s: doctor not clean after the ordinary commands: %v %+v", where, drCodes(rep), rep.Findings)
	}
	if msg := fmInSync(t, r, p.unmigratedEnd); msg != "" {
		errorf("%s: %s", where, msg)
	}
	if p.exact {
		got, want := fmState(t, dir), base.final
		if rebuilt && p.atomic {
			// A rebuild inserts the rows it adds in (created_at, version)
			// order (swamp-format §9.9); the writes here all carry one fixed time, so
			// among them that order is not the batch's.
			got.rows, want.rows = fmSortedRows(got.rows), fmSortedRows(want.rows)
		}
		if d := got.diff(want); len(d) > 0 {
			errorf("%s: the repo differs from the one a clean run leaves:\n%s", where, strings.Join(d, "\n"))
		}
	}
	if d := fmManifestCheck(manifest, base.finalManifest, fmManifest(t, dir), p.mayChange, func(string) bool { return false }); len(d) > 0 {
		errorf("%s: data files lost, duplicated, changed or left over:\n%s", where, strings.Join(d, "\n"))
	}
	if msg := p.effect(t, r); msg != "" {
		errorf("%s: the operation's effect does not hold after the ordinary commands: %s", where, msg)
	}
	return outcome, found
}
