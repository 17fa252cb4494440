package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// mutant is one deliberate protocol bug: an exact replacement in one file
// that must match once (a mutant that no longer applies fails the recipe:
// the code moved, and the mutant must move with it), and the crash tests
// that must catch it.
type mutant struct {
	name     string
	file     string
	old, new string
	pkg, run string
}

const writeTests = "TestWritePowerCutAtEveryCutPoint|TestProtocolCrashAtEveryCutPoint"

var mutants = []mutant{
	{
		name: "raw-not-fsynced-before-publish", file: "ops/write/writeplan.go",
		old: "if err := d.DeferFile(raw); err != nil {",
		new: "if err := raw.Close(); err != nil {",
		pkg: "./ops", run: writeTests,
	},
	{
		name: "stage-directory-not-fsynced", file: "ops/write/writeplan.go",
		old: "\td.DeferDir(s.Path)\n\treturn nil\n}",
		new: "\treturn nil\n}",
		pkg: "./ops", run: writeTests,
	},
	{
		name: "publish-before-staged-content-is-synced", file: "ops/internal/engine/exec.go",
		old: "if !k.Stages && d.hasUnsynced() {",
		new: "if !k.Stages && d.hasUnsynced() && false {",
		pkg: "./ops", run: writeTests,
	},
	{
		name: "latest-written-before-the-version-is-renamed-in", file: "ops/write/writeplan.go",
		old: publishLoop + latestLoop,
		new: latestLoop + publishLoop,
		pkg: "./ops", run: writeTests,
	},
	{
		name: "catalog-committed-before-latest", file: "ops/write/writeplan.go",
		old: publishSteps + catalogStep,
		new: catalogStep + publishSteps,
		pkg: "./ops", run: writeTests,
	},
	{
		name: "migration-rename-parents-never-fsynced", file: "ops/internal/protocol/fs.go",
		old: "func applyRename(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {\n\tif err := env.FS.RenameNoReplace(s.Path, s.To); err != nil {\n\t\treturn err\n\t}\n\td.Add(filepath.Dir(s.Path), filepath.Dir(s.To))\n",
		new: "func applyRename(_ context.Context, env *engine.Env, s *journal.Step, d *engine.Dirty) error {\n\tif err := env.FS.RenameNoReplace(s.Path, s.To); err != nil {\n\t\treturn err\n\t}\n",
		pkg: "./ops", run: "TestMigratePowerCutAtEveryCutPoint",
	},
	{
		name: "latest-renamed-in-before-its-fsync", file: "fsx/durable.go",
		old: "\tif _, err := WriteNew(fsys, tmp, bytesReader(data), perm, nil); err != nil {\n\t\t_ = fsys.Remove(tmp)\n\t\treturn err\n\t}\n\tif err := fsys.Rename(tmp, path); err != nil {",
		new: "\tif f, _, err := WriteNewUnsynced(fsys, tmp, bytesReader(data), perm, nil); err != nil {\n\t\t_ = fsys.Remove(tmp)\n\t\treturn err\n\t} else {\n\t\t_ = f.Close()\n\t}\n\tif err := fsys.Rename(tmp, path); err != nil {",
		// The repair rewrites latest through it (a write's latest temp is
		// prepared and synced with the staged content instead).
		pkg: "./ops", run: "TestDoctorRepairPowerCutAtEveryCutPoint|TestMigratePowerCutAtEveryCutPoint",
	},
	{
		// SQLite creating the catalog in place (no temp, no link): a cut
		// leaves a zero-byte catalog with no table. (Moving the temp's
		// fsync after the link is not a mutant any layer can catch: SQLite
		// syncs the temp itself at synchronous=FULL, and the power-cut
		// model does not follow hard links.)
		name: "new-catalog-created-in-place", file: "catalog/open.go",
		old: "\tif !report && missing {\n\t\tif c.noCreate {\n\t\t\treturn c.notCreated()\n\t\t}\n\t\tif err := c.createFresh(ctx, nil); err != nil {",
		new: "\tif !report && missing && false {\n\t\tif c.noCreate {\n\t\t\treturn c.notCreated()\n\t\t}\n\t\tif err := c.createFresh(ctx, nil); err != nil {",
		pkg: "./ops", run: "TestProtocolCrashAtEveryCutPoint",
	},
	{
		// The write's intent is marked done, in a journal commit of its
		// own, before the catalog transaction that holds the new row: a
		// cut in between leaves the row missing and nothing open to redo
		// it, so forward recovery gives a tree whose catalog lacks an
		// acknowledged version.
		name: "intent-closed-before-its-catalog-row-is-durable", file: "ops/internal/engine/exec.go",
		old: "\t\t\tapply := k.Apply\n\t\t\tif f := live[i]; f != nil {\n",
		new: "\t\t\tif k.Derived {\n\t\t\t\tj.Finish(in.ID, journal.StatusDone)\n\t\t\t\tif err := j.Flush(); err != nil {\n\t\t\t\t\treturn err\n\t\t\t\t}\n\t\t\t}\n\t\t\tapply := k.Apply\n\t\t\tif f := live[i]; f != nil {\n",
		pkg: "./ops", run: writeTests,
	},
	{
		// Recovery that refuses every rename it finds half done (the
		// source gone, the target there: the rename happened) instead of
		// taking it as done: every such state is refused, none recovered.
		// A refusal counts only where the protocol cannot decide, so the
		// ALICE layer fails it.
		name: "recovery-refuses-every-half-done-rename", file: "ops/internal/protocol/fs.go",
		old: "\tcase !from && to:\n\t\treturn engine.Done, \"\", nil\n",
		new: "\tcase !from && to:\n\t\treturn engine.Conflict, fmt.Sprintf(\"both %s and %s exist\", s.Path, s.To), nil\n",
		pkg: "./ops", run: "ALICE",
	},
	{
		name: "recovery-guesses-when-a-rename-left-neither-name", file: "ops/internal/protocol/fs.go",
		old: "return engine.Missing, fmt.Sprintf(\"neither %s nor %s exists\", s.Path, s.To), nil",
		new: "return engine.Done, fmt.Sprintf(\"neither %s nor %s exists\", s.Path, s.To), nil",
		pkg: "./ops", run: "ALICE",
	},
	{
		// A write through a held handle plans without first finishing
		// what a crashed process left open for its models.
		name: "handle-write-plans-over-a-crashed-writers-intent", file: "ops/write/handle.go",
		old: "outs, err := session.RecoverOpen(ctx, env, j, false)",
		new: "outs, err := session.PreviewOpen(ctx, env, j, false)",
		pkg: "./ops/write", run: "TestHandleFinishesACrashedWriteOfItsModelFirst",
	},
	{
		// The write handle marks its parked intents done without first
		// syncing the catalog that holds their lazily committed rows.
		name: "handle-closes-intents-before-their-rows-are-durable", file: "ops/write/handle.go",
		old: "\tif err := h.syncCatalog(ctx); err != nil {\n\t\treturn err\n\t}\n\tj := h.sess.Journal()",
		new: "\tj := h.sess.Journal()",
		pkg: "./ops", run: "TestHandleWritersPowerCutAtEveryCutPoint|TestHandleSameItemPowerCutAtEveryCutPoint",
	},
	{
		// A writer finishing another writer's intent closes it on a
		// catalog row it found, which may be a lazy commit not yet durable.
		name: "writer-closes-an-intent-on-an-unsynced-row", file: "ops/internal/engine/catalogdurable.go",
		old: "if lazy || res.catalogFound {",
		new: "if lazy {",
		pkg: "./ops", run: "TestHandleNeighbourPowerCutAtEveryCutPoint",
	},
	{
		// Recovery finishing a write after a later one was published on
		// top of it skips the write's lost catalog row (the catalog left
		// stale) instead of putting it in below the later version.
		name: "recovery-skips-the-row-of-a-superseded-write", file: "ops/internal/protocol/kinds.go",
		old: "ApplyBelow: applyPublishBelow, ",
		new: "",
		pkg: "./ops", run: "TestHandleSameItemPowerCutAtEveryCutPoint",
	},
	{
		// A writer beside others (journal/hold.go) drives every open
		// intent begun beside it, its live neighbours' included.
		name: "writer-drives-a-live-writers-intent", file: "ops/internal/engine/recovery.go",
		old: "\t\t\tcase !holdsAny(env.HeldLocks, in.Locks):\n\t\t\t\tcontinue\n",
		new: "",
		pkg: "./ops", run: "TestConcurrentWritersCrashAtEveryCutPoint|TestWritersOfOtherModelsRunBeside",
	},
	{
		// Settling a dead wrapped run closes its record without doctoring
		// what its change log names: the torn version stays.
		name: "dead-wrapped-run-closed-without-its-doctor", file: "ops/wrapped/settle.go",
		old: "\tif len(paths) > 0 || !rec.Guarded {\n",
		new: "\tif false {\n",
		pkg: "./ops/wrapped", run: "TestSettle",
	},
	{
		// A wrapped run is judged dead by its record alone, so a live
		// serve's run is settled (and closed) under it.
		name: "live-wrapped-run-settled", file: "ops/wrapped/settle.go",
		old: "\t\tif journal.RunLive(l) {\n\t\t\tcontinue\n\t\t}\n\t\ts, err := settleOne(",
		new: "\t\ts, err := settleOne(",
		pkg: "./ops/wrapped", run: "TestSettle",
	},
}

const publishLoop = `	for _, p := range ps {
		to := filepath.Join(p.itemDir, strconv.FormatInt(p.md.Version, 10))
		in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindRename, Path: p.stagePath, To: to,
			Files: published[to], Note: "publish the version"})
	}
`

const latestLoop = `	for _, it := range order {
		to := filepath.Join(it.dir, strconv.FormatInt(it.last, 10))
		// The temp name carries the owner (it may be written before the
		// intent is durable: engine.Recording).
		in.Steps = append(in.Steps, journal.Step{Kind: protocol.KindWrite, Path: filepath.Join(it.dir, "latest"),
			Temp: filepath.Join(it.dir, session.LatestTempName(token)),
			Data: []byte(strconv.FormatInt(it.last, 10)), OldData: it.oldData, OldExists: it.oldExists,
			To: to, Files: published[to],
			Note: fmt.Sprintf("point latest of %s at version %d", it.addr, it.last)})
	}
`

// publishSteps adds the publish renames and the latest writes (the two
// loops above); the catalog step follows it.
const publishSteps = "\tappendPublishSteps(in, ps, order, o.token)\n"

const catalogStep = `	cs := protocol.CatalogStep(fmt.Sprintf("upsert %d version(s), latest moves to the new ones", len(rows)),
		protocol.CatalogChange{Op: "upsert-versions", Rows: rows})
	cs.Kind, cs.Path, cs.To = protocol.KindCatalogPublish, r.CatalogPath, r.DataRoot
	in.Steps = append(in.Steps, cs)
`

// runMutants first runs every mutant's test selection on an unmutated
// copy of the module (the control: it must pass, and it says which tests
// pass), then applies each mutant to its own copy (the files git knows,
// committed or not) and runs its tests there. A mutant is caught only
// when a test that passed in the control fails under it.
func runMutants(root string, mutants []mutant) Mutants {
	m := Mutants{Control: "passed"}
	files, err := moduleFiles(root)
	if err != nil {
		fatal(err)
	}
	passed := map[string]bool{}
	for _, sel := range controlSelections(mutants) {
		t0 := time.Now()
		res, err := runSelection(root, files, nil, sel.pkg, sel.run)
		switch {
		case err != nil:
			m.Control = "failed"
			m.ControlFailures = append(m.ControlFailures, fmt.Sprintf("go test %s -run '%s': %v", sel.pkg, sel.run, err))
		case len(res.failed) > 0:
			m.Control = "failed"
			m.ControlFailures = append(m.ControlFailures, res.failed...)
		}
		for _, n := range res.passed {
			passed[sel.pkg+" "+n] = true
		}
		fmt.Printf("== mutant control (unmutated, go test %s -run '%s'): %d tests passed, %d failed (%s)\n",
			sel.pkg, sel.run, len(res.passed), len(res.failed), time.Since(t0).Round(time.Second))
	}
	for _, mu := range mutants {
		m.Total++
		m.Names = append(m.Names, mu.name)
		t0 := time.Now()
		r := MutantResult{Name: mu.name}
		res, err := runSelection(root, files, &mu, mu.pkg, mu.run)
		if err == nil {
			r.CaughtBy, r.Why = caughtBy(res, passed, mu.pkg)
		} else {
			r.Why = err.Error()
		}
		r.Caught = len(r.CaughtBy) > 0 && m.Control == "passed"
		verdict := "caught"
		if r.Caught {
			m.Caught++
		} else {
			verdict = "NOT CAUGHT"
			m.Survived = append(m.Survived, mu.name+": "+r.Why)
		}
		m.Results = append(m.Results, r)
		fmt.Printf("== mutant %s (%s, go test %s -run '%s'): %s, %s (%s)\n", mu.name, mu.file, mu.pkg, mu.run, verdict, r.Why, time.Since(t0).Round(time.Second))
	}
	return m
}

// selectMutants is ms, or only the one named name when name is not empty
// (crashreport stops when no mutant has that name).
func selectMutants(ms []mutant, name string) []mutant {
	if name == "" {
		return ms
	}
	for _, mu := range ms {
		if mu.name == name {
			return []mutant{mu}
		}
	}
	fatal(fmt.Errorf("no mutant is named %q", name))
	return nil
}

// selection is one go test run: a package and a -run pattern.
type selection struct{ pkg, run string }

// controlSelections: per package, the union of its mutants' patterns (a
// test that passes under the union passes under each part).
func controlSelections(ms []mutant) []selection {
	var out []selection
	at := map[string]int{}
	for _, mu := range ms {
		i, ok := at[mu.pkg]
		if !ok {
			at[mu.pkg] = len(out)
			out = append(out, selection{pkg: mu.pkg, run: mu.run})
			continue
		}
		if !strings.Contains("|"+out[i].run+"|", "|"+mu.run+"|") {
			out[i].run += "|" + mu.run
		}
	}
	return out
}

// testResult is what one go test -v run said about its tests.
type testResult struct {
	passed, failed []string
	output         string
}

// caughtBy: the tests that passed in the control (passed, keyed by
// package and name) and failed here, and the verdict in words.
func caughtBy(res testResult, passed map[string]bool, pkg string) ([]string, string) {
	var by, other []string
	for _, n := range res.failed {
		if passed[pkg+" "+n] {
			by = append(by, n)
		} else {
			other = append(other, n)
		}
	}
	switch {
	case len(by) > 0:
		return by, "failed " + strings.Join(by, ", ")
	case len(other) > 0:
		return nil, "only tests that did not pass in the control failed: " + strings.Join(other, ", ")
	}
	return nil, "the tests passed"
}

// parseTestOutput reads go test -v's "--- PASS" and "--- FAIL" lines
// (subtests indented).
func parseTestOutput(s string) testResult {
	res := testResult{output: s}
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		for _, k := range []struct {
			prefix string
			to     *[]string
		}{{"--- PASS: ", &res.passed}, {"--- FAIL: ", &res.failed}} {
			if rest, ok := strings.CutPrefix(t, k.prefix); ok {
				if i := strings.Index(rest, " ("); i >= 0 {
					rest = rest[:i]
				}
				*k.to = append(*k.to, rest)
			}
		}
	}
	return res
}

// runSelection copies the module to a fresh directory, applying mu if it
// is not nil, and runs go test -v on the selection there (-short, without
// the suite's SWAMPJ_ variables). err is set when the run says nothing
// about tests: the mutation no longer applies, the copy does not build, or
// go test failed without a test failing.
func runSelection(root string, files []string, mu *mutant, pkg, run string) (testResult, error) {
	dir, err := os.MkdirTemp("", "swampj-mutant-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue // deleted in the worktree
		}
		if mu != nil && f == mu.file {
			if n := bytes.Count(b, []byte(mu.old)); n != 1 {
				return testResult{}, fmt.Errorf("the mutation matches %d times in %s (want exactly 1): the code moved, move the mutant", n, f)
			}
			b = bytes.Replace(b, []byte(mu.old), []byte(mu.new), 1)
		}
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fatal(err)
		}
		fi, _ := os.Stat(filepath.Join(root, f))
		if err := os.WriteFile(p, b, fi.Mode().Perm()); err != nil {
			fatal(err)
		}
	}
	args := []string{"test", "-count=1", "-short", "-v", "-run", run, pkg}
	if mu != nil {
		args = append(args, "-failfast")
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "SWAMPJ_") {
			env = append(env, e)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	s := string(out)
	res := parseTestOutput(s)
	switch {
	case err == nil:
		return res, nil
	case strings.Contains(s, "[build failed]") || strings.Contains(s, "[setup failed]"):
		return res, errors.New("does not build: " + firstLines(s, 5))
	case len(res.failed) == 0:
		return res, errors.New("go test failed without a test failure: " + firstLines(s, 5))
	}
	return res, nil
}

func firstLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, " | ")
}

// moduleFiles lists the files git knows in root, tracked or new.
func moduleFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %v", err)
	}
	return strings.Fields(string(out)), nil
}
