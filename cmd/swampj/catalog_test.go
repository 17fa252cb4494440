package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/example"
)

// exampleRepo writes the example tree (no catalog) into a fresh directory.
func exampleRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := example.Write(fsx.Real(), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// verifyJSON is the part of `catalog verify --json` the tests read.
type verifyJSON struct {
	Command string `json:"command"`
	InSync  bool   `json:"inSync"`
	Missing bool   `json:"catalogMissing"`
	Counts  struct {
		VersionsOnDisk, Readable, Unreadable, ExpectedRows int
		RowsMissing, RowsStale, FlagsWrong, FieldsWrong    int
	} `json:"counts"`
	Unreadable []struct {
		Version  int64
		Problems []struct{ Code string }
	} `json:"unreadable"`
	Diff struct {
		Missing []struct{ Version int64 } `json:"missing"`
		Stale   []struct {
			DataName string `json:"data_name"`
			Version  int64
		} `json:"stale"`
		FlagsWrong []struct {
			Expected struct{ Version int64 } `json:"expected"`
			Columns  []string                `json:"columns"`
		} `json:"flags_wrong"`
	} `json:"diff"`
}

func decodeVerify(t *testing.T, r result) verifyJSON {
	t.Helper()
	var v verifyJSON
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
	}
	return v
}

func errorCode(t *testing.T, r result) string {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil || e.Error == "" {
		t.Fatalf("stderr is not one JSON error: %q", r.stderr)
	}
	return e.Code
}

func TestCatalogVerifyExitCodesAndJSON(t *testing.T) {
	dir := exampleRepo(t)

	// No catalog yet: every row is missing; exit 1, catalog_drift.
	r := swampj(t, dir, "catalog", "verify", "--json")
	if r.code != 1 || errorCode(t, r) != "catalog_drift" {
		t.Fatalf("verify without a catalog: %+v", r)
	}
	if v := decodeVerify(t, r); !v.Missing || v.InSync || v.Counts.RowsMissing != 14 || len(v.Diff.Missing) != 14 {
		t.Fatalf("verify without a catalog: %+v", v)
	}

	// rebuild without --confirm previews and changes nothing.
	r = swampj(t, dir, "catalog", "rebuild")
	if r.code != 0 || !strings.Contains(r.stdout, "Nothing was changed") || !strings.Contains(r.stdout, "rebuild --confirm") {
		t.Fatalf("preview: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, ".swamp", "data", "_catalog.db")); err == nil {
		t.Fatal("the preview created the catalog")
	}

	if r = swampj(t, dir, "catalog", "rebuild", "--confirm"); r.code != 0 || !strings.Contains(r.stdout, "Rebuilt") {
		t.Fatalf("rebuild --confirm: %+v", r)
	}
	r = swampj(t, dir, "catalog", "verify")
	if r.code != 0 || !strings.Contains(r.stdout, "agrees with the data on disk") || r.stderr != "" {
		t.Fatalf("verify after rebuild: %+v", r)
	}
	r = swampj(t, dir, "catalog", "verify", "--json")
	if v := decodeVerify(t, r); r.code != 0 || !v.InSync || v.Counts.ExpectedRows != 14 || v.Command != "verify" {
		t.Fatalf("verify --json after rebuild: %+v %+v", r, v)
	}

	// #3955: the latest version of hello-shell's result emptied by a crash.
	v3 := filepath.Join(dir, ".swamp", "data", "command", "shell", example.HelloShell, "result", "3")
	for _, f := range []string{"metadata.yaml", "raw"} {
		if err := os.WriteFile(filepath.Join(v3, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r = swampj(t, dir, "catalog", "verify", "--json")
	if r.code != 1 || errorCode(t, r) != "catalog_drift" {
		t.Fatalf("verify after #3955: %+v", r)
	}
	v := decodeVerify(t, r)
	if v.InSync || v.Counts.RowsStale != 1 || v.Counts.FlagsWrong != 1 || v.Counts.Unreadable != 1 ||
		len(v.Diff.Stale) != 1 || v.Diff.Stale[0].Version != 3 || v.Diff.Stale[0].DataName != "result" ||
		len(v.Diff.FlagsWrong) != 1 || v.Diff.FlagsWrong[0].Expected.Version != 2 ||
		len(v.Unreadable) != 1 || v.Unreadable[0].Problems[0].Code != "metadata_empty" {
		t.Fatalf("verify --json after #3955: %+v", v)
	}

	// Text: a summary, the differences, and the command that fixes them.
	r = swampj(t, dir, "catalog", "verify")
	for _, want := range []string{"1 stale", "1 with wrong latest flags", "result v3: no readable version on disk",
		"result v2: is_latest=0, should be is_latest=1", "metadata_empty", "run 'swampj catalog rebuild --confirm'"} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Fatalf("verify text lacks %q:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	if r.code != 1 {
		t.Fatalf("verify text exit: %d", r.code)
	}

	if r = swampj(t, dir, "catalog", "rebuild", "--confirm", "--json"); r.code != 0 {
		t.Fatalf("rebuild: %+v", r)
	}
	if r = swampj(t, dir, "catalog", "verify"); r.code != 0 {
		t.Fatalf("verify after the second rebuild: %+v", r)
	}
}

func TestCatalogTextListsOnlyTheFirstDifferences(t *testing.T) {
	dir := exampleRepo(t)
	if r := swampj(t, dir, "catalog", "rebuild", "--confirm"); r.code != 0 {
		t.Fatal(r)
	}
	// Move every item away: all 14 rows are stale, more than the text lists.
	for _, typ := range []string{"command", "@acme", "aws"} {
		if err := os.Rename(filepath.Join(dir, ".swamp", "data", typ), filepath.Join(dir, typ)); err != nil {
			t.Fatal(err)
		}
	}
	r := swampj(t, dir, "catalog", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "14 stale") || !strings.Contains(r.stdout, "… and 4 more (--json lists every one)") {
		t.Fatalf("%+v", r)
	}
	if n := strings.Count(r.stdout, "\n    stale "); n != shownDifferences {
		t.Fatalf("%d stale lines, want %d:\n%s", n, shownDifferences, r.stdout)
	}
	if r = swampj(t, dir, "catalog", "verify", "--json"); len(decodeVerify(t, r).Diff.Stale) != 14 {
		t.Fatalf("--json must list every difference: %s", r.stdout)
	}
}

func TestCatalogRebuildRefusesOpenIntents(t *testing.T) {
	dir := exampleRepo(t)
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(&journal.Intent{Kind: "test", Summary: "interrupted"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	r := swampj(t, dir, "catalog", "rebuild", "--confirm", "--json")
	if r.code != 1 || errorCode(t, r) != "open_intents" {
		t.Fatalf("%+v", r)
	}
	if !strings.Contains(r.stderr, "swampj recover") {
		t.Fatalf("the error must name the fix: %s", r.stderr)
	}
}

func TestCatalogVerifyLockTimeout(t *testing.T) {
	dir := exampleRepo(t)
	holder := exec.Command(binary, "journal", "hold", "--for", "20s")
	holder.Dir = dir
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	buf := make([]byte, 16)
	if n, _ := stdout.Read(buf); !strings.Contains(string(buf[:n]), "holding") {
		t.Fatalf("holder did not start: %q", buf[:n])
	}
	if r := swampj(t, dir, "catalog", "verify", "--lock-timeout", "300ms", "--json"); r.code != 75 || errorCode(t, r) != "lock_timeout" {
		t.Fatalf("%+v", r)
	}
}

func TestCatalogDamagedCatalog(t *testing.T) {
	dir := exampleRepo(t)
	db := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	if err := os.WriteFile(db, []byte("garbage, not SQLite"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := swampj(t, dir, "catalog", "verify", "--json"); r.code != 1 || errorCode(t, r) != "catalog_corrupt" {
		t.Fatalf("verify of a damaged catalog: %+v", r)
	}
	r := swampj(t, dir, "catalog", "rebuild", "--confirm")
	if r.code != 0 || !strings.Contains(r.stdout, "moved aside") {
		t.Fatalf("rebuild of a damaged catalog: %+v", r)
	}
	if aside, _ := filepath.Glob(db + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("the damaged catalog must be kept aside: %v", aside)
	}
	if r := swampj(t, dir, "catalog", "verify"); r.code != 0 {
		t.Fatalf("%+v", r)
	}
}

// The bundled example repo (testdata/example-repo) ships a catalog that
// agrees with its tree, checkpointed: no -wal or -shm beside it.
func TestBundledExampleRepoIsInSync(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "example-repo")
	for _, suf := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(filepath.Join(src, ".swamp", "data", "_catalog.db"+suf)); err == nil {
			t.Fatalf("testdata/example-repo has a _catalog.db%s: the catalog was not closed cleanly", suf)
		}
	}
	dir := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-R", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if r := swampj(t, dir, "catalog", "verify"); r.code != 0 {
		t.Fatalf("the bundled example's catalog does not agree with its tree: %+v", r)
	}
	// It is exactly what the generator writes today.
	fresh := exampleRepo(t)
	if out, err := exec.Command("diff", "-r", "-x", "_catalog.db", src, fresh).CombinedOutput(); err != nil {
		t.Fatalf("testdata/example-repo differs from `go run ./cmd/mkswamp example`: %v\n%s", err, out)
	}
}
