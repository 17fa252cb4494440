package main

import (
	"bytes"
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
		name: "raw-not-fsynced-before-publish", file: "ops/writeplan.go",
		old: "if err := d.DeferFile(raw); err != nil {",
		new: "if err := raw.Close(); err != nil {",
		pkg: "./ops", run: writeTests,
	},
	{
		name: "stage-directory-not-fsynced", file: "ops/writeplan.go",
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
		name: "latest-written-before-the-version-is-renamed-in", file: "ops/writeplan.go",
		old: publishLoop + latestLoop,
		new: latestLoop + publishLoop,
		pkg: "./ops", run: writeTests,
	},
	{
		name: "catalog-committed-before-latest", file: "ops/writeplan.go",
		old: publishSteps + catalogStep,
		new: catalogStep + publishSteps,
		pkg: "./ops", run: writeTests,
	},
	{
		name: "migration-rename-parents-never-fsynced", file: "ops/internal/engine/steps.go",
		old: "func applyRename(_ context.Context, env *Env, s *journal.Step, d *Dirty) error {\n\tif err := env.FS.RenameNoReplace(s.Path, s.To); err != nil {\n\t\treturn err\n\t}\n\td.Add(filepath.Dir(s.Path), filepath.Dir(s.To))\n",
		new: "func applyRename(_ context.Context, env *Env, s *journal.Step, d *Dirty) error {\n\tif err := env.FS.RenameNoReplace(s.Path, s.To); err != nil {\n\t\treturn err\n\t}\n",
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
		old: "\tif !report && missing {\n\t\tif err := c.createFresh(ctx); err != nil {",
		new: "\tif !report && missing && false {\n\t\tif err := c.createFresh(ctx); err != nil {",
		pkg: "./ops", run: "TestProtocolCrashAtEveryCutPoint",
	},
	{
		name: "recovery-guesses-when-a-rename-left-neither-name", file: "ops/internal/engine/steps.go",
		old: "return Missing, fmt.Sprintf(\"neither %s nor %s exists\", s.Path, s.To), nil",
		new: "return Done, fmt.Sprintf(\"neither %s nor %s exists\", s.Path, s.To), nil",
		pkg: "./ops", run: "ALICE",
	},
}

const publishLoop = `	for _, p := range ps {
		to := filepath.Join(p.itemDir, strconv.FormatInt(p.md.Version, 10))
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindRename, Path: p.stagePath, To: to,
			Files: published[to], Note: "publish the version"})
	}
`

const latestLoop = `	for _, it := range order {
		to := filepath.Join(it.dir, strconv.FormatInt(it.last, 10))
		// The temp name carries the owner (it may be written before the
		// intent is durable: engine.Recording).
		in.Steps = append(in.Steps, journal.Step{Kind: engine.KindWrite, Path: filepath.Join(it.dir, "latest"),
			Temp: filepath.Join(it.dir, session.LatestTempName(token)),
			Data: []byte(strconv.FormatInt(it.last, 10)), OldData: it.oldData, OldExists: it.oldExists,
			To: to, Files: published[to],
			Note: fmt.Sprintf("point latest of %s at version %d", it.addr, it.last)})
	}
`

// publishSteps adds the publish renames and the latest writes (the two
// loops above); the catalog step follows it.
const publishSteps = "\tappendPublishSteps(in, ps, order, o.token)\n"

const catalogStep = `	cs := engine.CatalogStep(fmt.Sprintf("upsert %d version(s), latest moves to the new ones", len(rows)),
		engine.CatalogChange{Op: "upsert-versions", Rows: rows})
	cs.Kind, cs.Path, cs.To = engine.KindCatalogPublish, r.CatalogPath, r.DataRoot
	in.Steps = append(in.Steps, cs)
`

// runMutants applies each mutant to its own copy of the module (the files
// git knows, committed or not) and runs its tests there: caught means the
// tests compiled, ran and failed.
func runMutants(root string) Mutants {
	var m Mutants
	files, err := moduleFiles(root)
	if err != nil {
		fatal(err)
	}
	for _, mu := range mutants {
		m.Total++
		m.Names = append(m.Names, mu.name)
		t0 := time.Now()
		caught, why := runMutant(root, files, mu)
		verdict := "caught"
		if caught {
			m.Caught++
		} else {
			verdict = "NOT CAUGHT"
			m.Survived = append(m.Survived, mu.name+": "+why)
		}
		fmt.Printf("== mutant %s (%s, go test %s -run '%s'): %s, %s (%s)\n", mu.name, mu.file, mu.pkg, mu.run, verdict, why, time.Since(t0).Round(time.Second))
	}
	return m
}

func runMutant(root string, files []string, mu mutant) (bool, string) {
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
		if f == mu.file {
			if n := bytes.Count(b, []byte(mu.old)); n != 1 {
				return false, fmt.Sprintf("the mutation matches %d times in %s (want exactly 1): the code moved, move the mutant", n, f)
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
	cmd := exec.Command("go", "test", "-count=1", "-short", "-failfast", "-run", mu.run, mu.pkg)
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
	switch {
	case err == nil:
		return false, "the tests passed"
	case strings.Contains(s, "[build failed]") || strings.Contains(s, "[setup failed]"):
		return false, "the mutant does not build: " + firstLines(s, 5)
	case strings.Contains(s, "--- FAIL"):
		return true, "failed " + firstFail(s)
	}
	return false, "go test failed without a test failure: " + firstLines(s, 5)
}

func firstFail(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "--- FAIL") {
			return strings.TrimPrefix(t, "--- FAIL: ")
		}
	}
	return ""
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
