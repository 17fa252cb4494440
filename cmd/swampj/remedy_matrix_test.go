package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/wrapped"
)

// The remedy matrix: for every code the doctor reports, damage made
// the way it really happens, then what an operator does at 3 a.m.: run
// `swampj doctor`, do what the finding's fix says — the person's action
// it names (performed here by the row), then every swampj command it
// prints, exactly as printed and in order — and run `swampj doctor`
// again: exit 0, and the finding is gone. Every code of doctor.Codes()
// must have a row: a new code without one fails this test.

// matrixRow is one way a code really happens and what ends it.
type matrixRow struct {
	code Code
	how  string
	// setup makes the damage in a new repo and returns the repo.
	setup func(t *testing.T) string
	// remedy is the remedy code the finding must carry.
	remedy string
	// person performs the person's action the fix names (rows whose
	// remedy is a person's: fix_access, inspect, …).
	person func(t *testing.T, dir string)
	// as, when set, runs every swampj command of the row (another user).
	as func(t *testing.T, dir string, args ...string) result
}

// Code is a doctor finding code as the JSON spells it.
type Code = string

const matrixAddr = "command/shell/" + dataModel + "/result"

// matrixItem is the item directory of matrixAddr.
func matrixItem(dir string) string {
	return filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result")
}

// matrixWrites writes versions 1..n of matrixAddr through swampj.
func matrixWrites(t *testing.T, n int) string {
	t.Helper()
	dir := newRepo(t)
	for v := 1; v <= n; v++ {
		mustOK(t, swampjIn(t, dir, []byte(`{"v":`+itoa(v)+`}`), "data", "write", matrixAddr), "write")
	}
	return dir
}

// powerCutLatest is #3955: an unclean shutdown left the latest version's
// files zero bytes (swamp does not fsync them), `latest` and the catalog
// still naming it.
func powerCutLatest(t *testing.T) string {
	dir := matrixWrites(t, 2)
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.Truncate(filepath.Join(matrixItem(dir), "2", f), 0); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// killedWrite is a data write SIGKILLed at its first mkdir (its staging
// directory), before its intent was journaled: the model lock and the
// journal holder record name a process that is gone, the staging
// directory holds bytes nobody acknowledged.
func killedWrite(t *testing.T) string {
	dir := matrixWrites(t, 1)
	if !swampjKilledAt(t, dir, "mkdir:1", []byte(`{"v":2}`), "data", "write", matrixAddr) {
		t.Fatal("the write was not killed")
	}
	return dir
}

// killedBeforeItsIntent is killedWrite whose kill landed after the stage's
// mkdir and before the intent's commit. A write that plans under the
// model lock commits its intent before it stages; which path a write takes
// can change with what the item holds, and under load the first mkdir was
// seen after the intent once (CI: the doctor found open_intent, not the
// stage). The damage this row is about needs the stage without an intent,
// so the setup is tried again until the kill gives it.
func killedBeforeItsIntent(t *testing.T) string {
	t.Helper()
	for try := 1; ; try++ {
		dir := killedWrite(t)
		stages, _ := filepath.Glob(filepath.Join(matrixItem(dir), ".swampj-stage-*"))
		if len(stages) > 0 {
			return dir
		}
		if try == 5 {
			t.Fatalf("five writes killed at their first mkdir left no staging directory (the intent came first every time)")
		}
		t.Logf("try %d: the kill landed after the intent's commit; again", try)
	}
}

// catalogAwayWrite is a write made while the catalog could not be opened
// (its path held by a directory, which no user can open as a database;
// as root, permissions would not stop anyone), after which the catalog is
// put back: the catalog missed the write and the journal marks it stale.
func catalogAwayWrite(t *testing.T) string {
	dir := matrixWrites(t, 1)
	cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	must(t, os.Rename(cat, cat+".aside"))
	must(t, os.Mkdir(cat, 0o755))
	mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", matrixAddr), "write with the catalog unusable")
	must(t, os.Remove(cat))
	must(t, os.Rename(cat+".aside", cat))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// old makes p older than swamp's create-then-write window.
func old(t *testing.T, p string) {
	t.Helper()
	past := time.Now().Add(-time.Minute)
	must(t, os.Chtimes(p, past, past))
}

func remedyMatrix() []matrixRow {
	repair := "repair"
	return []matrixRow{
		{code: "version_unreadable", how: "power cut zeroed the latest version", setup: powerCutLatest, remedy: repair},
		{code: "latest_unreadable", how: "power cut zeroed the latest version", setup: powerCutLatest, remedy: repair},
		{code: "catalog_row_unreadable", how: "power cut zeroed the latest version", setup: powerCutLatest, remedy: repair},
		{code: "latest_not_found", how: "the version directory's rename was lost, latest was not", remedy: repair,
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 2)
				must(t, os.RemoveAll(filepath.Join(matrixItem(dir), "2")))
				return dir
			}},
		{code: "latest_damaged", how: "power cut while latest was rewritten: zero bytes", remedy: repair,
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 2)
				must(t, os.Truncate(filepath.Join(matrixItem(dir), "latest"), 0))
				return dir
			}},
		{code: "catalog_latest_wrong", how: "a write while the catalog could not be opened", setup: catalogAwayWrite, remedy: repair},
		{code: "catalog_stale", how: "a write while the catalog could not be opened", setup: catalogAwayWrite, remedy: repair},
		{code: "catalog_unusable", how: "a torn catalog: its first half only", remedy: "rebuild_catalog",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				for _, side := range []string{"-wal", "-shm"} {
					_ = os.Remove(filepath.Join(dir, ".swamp", "data", "_catalog.db"+side))
				}
				cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
				fi, err := os.Stat(cat)
				must(t, err)
				must(t, os.Truncate(cat, fi.Size()/2))
				return dir
			}},
		{code: "catalog_unusable", how: "a directory where the catalog file belongs", remedy: "fix_access",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
				for _, side := range []string{"", "-wal", "-shm"} {
					_ = os.Remove(cat + side)
				}
				must(t, os.Mkdir(cat, 0o755))
				return dir
			},
			// "make … a catalog file this user can read and write (or move it aside)"
			person: func(t *testing.T, dir string) {
				cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
				must(t, os.Rename(cat, cat+".moved-by-hand"))
			}},
		{code: "catalog_copy", how: "an older swamp's migration carried the catalog into the namespace", setup: nsOlderSwampRepo, remedy: repair},
		{code: "local_dir_hidden", how: "swamp 06b6147's own namespace migrate carried the vault and the bundles into the namespace (a repo the real swamp left, testdata/swamp-migrated-local)", remedy: repair,
			setup: func(t *testing.T) string {
				dir := t.TempDir()
				fsxtest.CopyTree(t, filepath.Join("..", "..", "testdata", "swamp-migrated-local", "repo"), dir)
				return dir
			}},
		{code: "staging_leftover", how: "a write killed before its intent was journaled", setup: killedBeforeItsIntent, remedy: repair},
		{code: "lock_dead", how: "a write killed holding the model lock", setup: killedWrite, remedy: repair},
		{code: "lock_dead", how: "a zero-byte lock (killed between swamp's create and write)", remedy: repair,
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				l := filepath.Join(filepath.Dir(matrixItem(dir)), ".lock")
				must(t, os.WriteFile(l, nil, 0o644))
				old(t, l)
				return dir
			}},
		{code: "journal_holder_stale", how: "a write killed holding the journal", setup: killedWrite, remedy: repair},
		{code: "journal_damaged", how: "the journal's bytes overwritten (a bad sector, a stray copy)", remedy: "recover",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				must(t, os.WriteFile(filepath.Join(dir, ".swamp", "_journal.db"), bytes.Repeat([]byte("not a bbolt page "), 4096), 0o644))
				return dir
			}},
		{code: "data_at_other_root", how: "a namespace set while the data stays at the un-namespaced root", remedy: "unset_namespace",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
				return dir
			}},
		{code: "path_outside_repo", how: "a record directory linked to a directory outside the repo", remedy: "inspect",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				outside := t.TempDir()
				must(t, os.WriteFile(filepath.Join(outside, "not-a-record.json"), []byte("{torn"), 0o644))
				old(t, filepath.Join(outside, "not-a-record.json"))
				must(t, os.RemoveAll(filepath.Join(dir, ".swamp", "audit")))
				must(t, os.Symlink(outside, filepath.Join(dir, ".swamp", "audit")))
				return dir
			},
			person: func(t *testing.T, dir string) {
				must(t, os.Remove(filepath.Join(dir, ".swamp", "audit"))) // the operator's answer: not this repo's
			}},
		{code: "record_unreadable", how: "power cut zeroed a method output record", remedy: repair,
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				rec := filepath.Join(dir, ".swamp", "outputs", "command", "shell", "execute", dataModel+"-20261201T010203Z.yaml")
				must(t, os.MkdirAll(filepath.Dir(rec), 0o755))
				must(t, os.WriteFile(rec, nil, 0o644))
				old(t, rec)
				return dir
			}},
		{code: "wrapped_run_unsettled", how: "swampj run's wrapper killed while its command wrote a version", remedy: "recover",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				if err := wrapped.Supported(); err != nil {
					t.Skipf("the write barrier cannot run here: %v", err)
				}
				res := swampj(t, dir, "run", "--", "sh", "-c", tearAndDie(matrixItem(dir)))
				if res.code != -1 && res.code != 137 {
					t.Fatalf("the wrapper was not killed: exit %d\n%s", res.code, res.stderr)
				}
				return dir
			}},
		{code: "open_intent", how: "a write killed after its first publish rename", remedy: "recover_or_rollback",
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				if !swampjKilledAt(t, dir, "rename-noreplace:1", []byte(`{"v":2}`), "data", "write", matrixAddr) {
					t.Fatal("the write was not killed")
				}
				return dir
			}},
		{code: "swamp_check_failed", how: "the catalog restored from a backup older than the data", remedy: repair,
			setup: func(t *testing.T) string {
				dir := matrixWrites(t, 1)
				mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "rebuild (marks the catalog populated)")
				cat := filepath.Join(dir, ".swamp", "data", "_catalog.db")
				backup, err := os.ReadFile(cat)
				must(t, err)
				mustOK(t, swampjIn(t, dir, []byte(`{"other":1}`), "data", "write", "command/shell/"+dataModel+"/other"), "write")
				for _, side := range []string{"-wal", "-shm"} {
					_ = os.Remove(cat + side)
				}
				must(t, os.WriteFile(cat, backup, 0o644))
				return dir
			}},
		directoryUnreadableRow(),
	}
}

// directoryUnreadableRow: a model directory this user cannot list (a
// permission problem). As root nothing is unreadable, so there every
// command of the row runs as nobody (setpriv), over a repo nobody owns.
func directoryUnreadableRow() matrixRow {
	row := matrixRow{code: "directory_unreadable", how: "a model directory with mode 000", remedy: "fix_access"}
	modelDir := func(dir string) string { return filepath.Dir(matrixItem(dir)) }
	row.setup = func(t *testing.T) string {
		dir := matrixWrites(t, 1)
		if os.Geteuid() == 0 {
			if _, err := exec.LookPath("setpriv"); err != nil {
				t.Skip("setpriv not installed: as root no directory is unreadable")
			}
			out, err := exec.Command("chown", "-R", "65534:65534", dir).CombinedOutput()
			if err != nil {
				t.Fatalf("chown: %v %s", err, out)
			}
			for d := dir; d != "/"; d = filepath.Dir(d) {
				if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
					_ = os.Chmod(d, fi.Mode().Perm()|0o001)
				}
			}
		}
		must(t, os.Chmod(modelDir(dir), 0))
		t.Cleanup(func() { _ = os.Chmod(modelDir(dir), 0o755) })
		return dir
	}
	row.person = func(t *testing.T, dir string) { must(t, os.Chmod(modelDir(dir), 0o755)) }
	row.as = func(t *testing.T, dir string, args ...string) result {
		if os.Geteuid() != 0 {
			return swampj(t, dir, args...)
		}
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", binary}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir)
		return runResult(t, cmd)
	}
	return row
}

// printedCommands are the swampj commands a fix prints, in order; an
// alternative offered in parentheses ("(or 'swampj recover --rollback')")
// is not one to run.
var printedCommand = regexp.MustCompile(`(\(or )?'(swampj [^']+)'`)

func printedCommands(fix string) [][]string {
	var out [][]string
	for _, m := range printedCommand.FindAllStringSubmatch(fix, -1) {
		if m[1] == "" {
			out = append(out, strings.Fields(m[2])[1:])
		}
	}
	return out
}

func TestRemedyMatrix(t *testing.T) {
	rows := append(remedyMatrix(), cacheMatrixRows()...)
	has := map[string]bool{}
	for _, r := range rows {
		has[r.code] = true
	}
	for _, c := range doctor.Codes() {
		if !has[string(c.Code)] {
			t.Errorf("doctor code %s has no row in the remedy matrix (remedy_matrix_test.go): add the damage that really produces it", c.Code)
		}
	}
	for _, row := range rows {
		t.Run(row.code+"/"+row.how, func(t *testing.T) {
			dir := row.setup(t)
			run := row.as
			if run == nil {
				run = swampj
			}
			r := run(t, dir, "doctor", "--json")
			f := matrixFinding(t, r, row.code)
			if f == nil {
				t.Fatalf("doctor does not report %s: exit %d\n%s\n%s", row.code, r.code, r.stdout, r.stderr)
			}
			if f.Remedy != row.remedy {
				t.Fatalf("%s carries remedy %q (fix: %s), want %q", row.code, f.Remedy, f.Fix, row.remedy)
			}
			cmds := printedCommands(f.Fix)
			human := isHuman(f.Remedy)
			if f.Then != "" && len(cmds) < map[bool]int{true: 1, false: 2}[human] {
				t.Fatalf("%s needs %s then %s, but its fix does not print both: %s", row.code, f.Remedy, f.Then, f.Fix)
			}
			switch {
			case human && row.person == nil:
				t.Fatalf("%s names a person's action (%s) the row does not perform: %s", row.code, f.Remedy, f.Fix)
			case human:
				row.person(t, dir)
			case len(cmds) == 0:
				t.Fatalf("%s's fix prints no command: %s", row.code, f.Fix)
			}
			t.Logf("%s: fix: %s", row.code, f.Fix)
			for _, c := range cmds {
				if r := run(t, dir, c...); r.code != 0 {
					t.Fatalf("the printed remedy 'swampj %s' failed: exit %d\n%s%s", strings.Join(c, " "), r.code, r.stdout, r.stderr)
				}
			}
			r = run(t, dir, "doctor", "--json")
			if f := matrixFinding(t, r, row.code); r.code != 0 || f != nil {
				t.Fatalf("after the remedy, doctor exits %d (want 0) and reports %s: %+v\n%s\n%s", r.code, row.code, f, r.stdout, r.stderr)
			}
		})
	}
}

type matrixFindingJSON struct {
	Code, Status, Remedy, Then, Fix, Message string
}

func matrixFinding(t *testing.T, r result, code string) *matrixFindingJSON {
	t.Helper()
	var d struct{ Findings []matrixFindingJSON }
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("doctor --json: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	for i := range d.Findings {
		if d.Findings[i].Code == code {
			return &d.Findings[i]
		}
	}
	return nil
}

// isHuman mirrors report.Remedy.Human for the codes the JSON carries.
func isHuman(remedy string) bool {
	switch remedy {
	case "fix_access", "inspect", "swamp_repo_upgrade", "mount_read_write":
		return true
	}
	return false
}
