package ops_test

// The fault matrix of issue #10: every protocol (write, batch write,
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
//     pid's would be taken over), and an operator runs, on the real disk,
//     the ordinary commands: recover (rollback if forward fails), the same
//     command again, doctor --repair --confirm, and catalog rebuild
//     --confirm when doctor or verify says the catalog is stale or drifts;
//   - then: no open intent, doctor clean, catalog verify in sync, every
//     data file that was there before exists exactly once with its bytes
//     (quarantine included), and the operation's effect holds.

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/repo"
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
		if _, err := ops.WriteVersions(fmCtx, nil, r, []ops.VersionWrite{{Address: w.a, Content: strings.NewReader(w.s)}},
			ops.WriteOptions{SwampLockTimeout: time.Second}); err != nil {
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
	if _, err := runMigrate(t, dir, nil, ops.MigrateOptions{Confirm: true}); err != nil {
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
			var in []ops.VersionWrite
			for _, w := range ws {
				var c io.Reader = strings.NewReader(w.payload)
				if w.stream {
					c = nonSeekerT{c}
				}
				in = append(in, ops.VersionWrite{Address: w.a, Content: c})
			}
			return ops.WriteVersions(fmCtx, fsys, r, in, ops.WriteOptions{SwampLockTimeout: time.Second, JournalLockTimeout: time.Second})
		},
		complete: func(t *testing.T, r *repo.Repo, res any, stale bool) string {
			out := res.([]ops.WrittenVersion)
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
	}
}

type nonSeekerT struct{ r io.Reader }

func (s nonSeekerT) Read(b []byte) (int, error) { return s.r.Read(b) }

func fmReadVersion(r *repo.Repo, a repo.Address, v int64) string {
	c, err := ops.OpenData(fmCtx, fsx.Real(), r, a, v)
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

func fmMigrateProtocol(name string, template func(*testing.T, string), o ops.MigrateOptions) fmProtocol {
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
			var ne *ops.NoNamespaceError
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
			return ops.Doctor(fmCtx, fsys, r, ops.DoctorOptions{Repair: true, Confirm: true, Now: drNow, JournalLockTimeout: time.Second})
		},
		complete: func(t *testing.T, r *repo.Repo, res any, stale bool) string {
			rep := res.(*ops.DoctorReport)
			if rep.OnlySkipped() {
				// swamp's per-model lock could not be taken: the repair
				// skipped the item and says so (rep.Findings' reasons).
				return fmSkippedUnchanged(t, r, rep)
			}
			if !rep.Clean() {
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
			return ops.RebuildCatalog(fmCtx, fsys, r, ops.CatalogOptions{Confirm: true, JournalLockTimeout: time.Second})
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
		fmMigrateProtocol("migrate", fmNamespaced, ops.MigrateOptions{Confirm: true}),
		fmMigrateProtocol("reverse", fmMigrated, ops.MigrateOptions{Reverse: true, Confirm: true}),
		fmMigrateProtocol("unset", fmMigrated, ops.MigrateOptions{Unset: true, Confirm: true}),
		repair, rebuild,
	}
}

// fmSkippedUnchanged: a repair that skipped every finding left the item
// alone and says why.
func fmSkippedUnchanged(t *testing.T, r *repo.Repo, rep *ops.DoctorReport) string {
	for _, f := range rep.Findings {
		if f.Status == ops.DoctorSkipped && f.Reason == "" {
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
	rep, err := ops.VerifyCatalog(fmCtx, fsx.Real(), r, ops.CatalogOptions{JournalLockTimeout: time.Second})
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
		// One template and one clean trace per protocol, shared by its
		// error subtests (made here, so the parent test owns them).
		tmpl := filepath.Join(ops.ScratchDir(t), "tmpl")
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
		trace := clean.Trace()
		final := fmState(t, dir)
		if msg := fmInSync(t, migLoad(t, dir), p.unmigratedEnd); msg != "" {
			t.Fatalf("%s: after the clean run: %s", p.name, msg)
		}
		for _, e := range fmErrors {
			e := e
			t.Run(p.name+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				n, outcomes := 0, map[string]int{}
				cc := fsxtest.Count(t, fmReportName(p.name), "errors")
				for i, op := range trace {
					if i%every != 0 && !strings.HasPrefix(op.Kind, "failpoint:") {
						continue
					}
					cc.Check()
					outcomes[fmInject(t, p, tmpl, final, op, e.err)]++
					if !t.Failed() {
						cc.Recovered()
					}
					n++
				}
				t.Logf("%s × %s: %d of %d operations injected; first call: %v", p.name, e.name, n, len(trace), outcomes)
			})
		}
	}
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

// fmInject runs one cell of the matrix: protocol p, error err at op.
// It returns how the first call ended: "ok", "failed, unchanged" or
// "failed, intent open".
func fmInject(t *testing.T, p fmProtocol, tmpl string, final migState, op fsx.Op, injected error) (outcome string) {
	t.Helper()
	dir := fmCopy(t, tmpl)
	where := fmt.Sprintf("%s, %v at %v", p.name, injected, op)
	var found []string
	errorf := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	known := fmKnownWedge(p.name, op)
	defer func() {
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
	}()
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

	// 2. The operator, on the real disk.
	migLoad(t, dir) // the configuration reads before recovery too
	if _, rerr := recover.Run(fmCtx, nil, dir, recover.Options{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}); rerr != nil {
		if _, rberr := recover.Run(fmCtx, nil, dir, recover.Options{Rollback: true, JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}); rberr != nil {
			errorf("%s: WEDGE: recover failed (%v) and recover --rollback failed (%v)", where, rerr, rberr)
			return outcome
		}
	}
	r := migLoad(t, dir)
	if _, rerr := p.run(t, r, fsx.Real(), true); rerr != nil {
		errorf("%s: re-running the command after recover failed: %v", where, rerr)
	}
	r = migLoad(t, dir)
	if _, derr := ops.Doctor(fmCtx, fsx.Real(), r, ops.DoctorOptions{Repair: true, Confirm: true, Now: drNow, JournalLockTimeout: time.Second}); derr != nil {
		errorf("%s: doctor --repair --confirm: %v", where, derr)
	}
	// What the doctor's catalog_stale remedy says (also where the end is
	// un-migrated: the rebuild then describes the data at the solo path),
	// or what verify's disagreement calls for.
	if catalogStaleOf(t, r.Dir) != nil || (!p.unmigratedEnd && fmNeedsRebuild(t, r)) {
		if _, berr := ops.RebuildCatalog(fmCtx, fsx.Real(), r, ops.CatalogOptions{Confirm: true, JournalLockTimeout: time.Second}); berr != nil {
			errorf("%s: catalog rebuild --confirm: %v", where, berr)
		}
	}

	// 3. Clean.
	if open := fmOpenIntents(t, dir); len(open) > 0 {
		errorf("%s: intent %d (%s) still open after the ordinary commands: %s", where, open[0].ID, open[0].Summary, open[0].LastError)
	}
	rep, derr := ops.Doctor(fmCtx, fsx.Real(), r, ops.DoctorOptions{Now: drNow, JournalLockTimeout: time.Second})
	if derr != nil {
		errorf("%s: doctor: %v", where, derr)
	} else if !rep.Clean() {
		errorf("%s: doctor not clean after the ordinary commands: %v %+v", where, drCodes(rep), rep.Findings)
	}
	if msg := fmInSync(t, r, p.unmigratedEnd); msg != "" {
		errorf("%s: %s", where, msg)
	}
	if p.exact {
		if d := fmState(t, dir).diff(final); len(d) > 0 {
			errorf("%s: the repo differs from the one a clean run leaves:\n%s", where, strings.Join(d, "\n"))
		}
	}
	if d := fmManifestCheck(manifest, fmManifest(t, dir), p.mayChange); len(d) > 0 {
		errorf("%s: data files lost, duplicated or changed:\n%s", where, strings.Join(d, "\n"))
	}
	if msg := p.effect(t, r); msg != "" {
		errorf("%s: the operation's effect does not hold after the ordinary commands: %s", where, msg)
	}
	return outcome
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
	rep, err := ops.VerifyCatalog(fmCtx, fsx.Real(), r, ops.CatalogOptions{JournalLockTimeout: time.Second})
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
		if !d.IsDir() && (d.Name() == ".lock" || filepath.Base(filepath.Dir(p)) == ".locks") {
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
		return migSkipInfra(rel) || rel == ".swamp/.locks" || base == ".lock" || drLockTemp.MatchString(base) || rel == ".swamp.yaml"
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
			if name == ".locks" || strings.HasPrefix(name, ".swampj-stage-") {
				return filepath.SkipDir
			}
			return nil
		}
		if repo.IsCatalogFile(name) && (rel == "data/"+name) || strings.Contains(name, "_journal.db") ||
			name == ".lock" || drLockTemp.MatchString(name) {
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
// bytes, unless the operation may change it.
func fmManifestCheck(before, after map[string][]string, mayChange func(string) bool) []string {
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
	sort.Strings(d)
	return d
}
