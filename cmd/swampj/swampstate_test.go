package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
)

// States the real swamp leaves after ordinary use of a namespaced repo:
// a .log under the root outputs/ after every method run, a
// catalog its own migrate invalidated, and its doctor calling both
// "un-migrated data".

// realSwamp is the real swamp CLI, or a skip with a notice.
func swampBinOrSkip(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SWAMP_BIN")
	if bin == "" {
		t.Skip("SWAMP_BIN is not set: skipping the check against the real swamp (set SWAMP_BIN=/path/to/swamp)")
	}
	if testing.Short() {
		t.Skip("-short: the real swamp takes ~1.5 s a command")
	}
	return bin
}

func swampOut(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("swamp %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writtenRepo is a default repo with real versions written by swampj.
func writtenRepo(t *testing.T) string {
	t.Helper()
	dir := newRepo(t)
	for _, c := range []string{"one\n", "two\n"} {
		if r := swampjIn(t, dir, []byte(c), "data", "write", "command/shell/m1/out"); r.code != 0 {
			t.Fatalf("data write: %+v", r)
		}
	}
	return dir
}

func findFiles(t *testing.T, root, suffix string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, suffix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// TestRealSwampReverseAfterUse (#3316 case C, and what the doctor notes
// about it): after a method run in a namespaced repo, reverse migration
// merges the root outputs/ .log swamp wrote with the namespaced outputs.
func TestRealSwampReverseAfterUse(t *testing.T) {
	bin := swampBinOrSkip(t)
	dir := t.TempDir()
	swampOut(t, bin, dir, "init")
	swampOut(t, bin, dir, "model", "create", "command/shell", "m1")
	swampOut(t, bin, dir, "datastore", "namespace", "set", "ns1")
	nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	swampOut(t, bin, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo hi")
	logs := findFiles(t, filepath.Join(dir, ".swamp", "outputs"), ".log")
	if len(logs) == 0 {
		t.Fatal("expected swamp to write the run's .log under the root outputs/ (swamp-format §9.3)")
	}
	// The premise: swamp's doctor calls the root .log files un-migrated
	// data and exits 1. Without that report the swampj check below
	// explains nothing, so a swamp that stopped making it fails here.
	doctor := exec.Command(bin, "doctor", "datastores")
	doctor.Dir = dir
	out, err := doctor.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "Un-migrated data") {
		t.Fatalf("swamp doctor datastores: want exit 1 reporting \"Un-migrated data\" (swamp's defect this test is about), got %v:\n%s", err, out)
	}
	r := nsWant(t, 0, dir, "doctor")
	if !strings.Contains(r.stdout, "swamp's defect") || !strings.Contains(r.stdout, ".swamp/outputs") || !strings.Contains(r.stdout, "repo-local catalog") {
		t.Fatalf("swampj doctor must explain swamp's report:\n%s", r.stdout)
	}
	yamls := findFiles(t, filepath.Join(dir, ".swamp", "ns1", "outputs"), ".yaml")
	nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm")
	for _, p := range logs {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the solo .log must stay: %v", err)
		}
	}
	for _, p := range yamls {
		back := strings.Replace(p, filepath.Join(".swamp", "ns1", "outputs"), filepath.Join(".swamp", "outputs"), 1)
		if _, err := os.Stat(back); err != nil {
			t.Fatalf("the namespaced output must be merged back: %v", err)
		}
	}
	nsWant(t, 0, dir, "datastore", "namespace", "unset", "--migrate", "--confirm")
	nsWant(t, 0, dir, "recover")
	swampOut(t, bin, dir, "data", "list", "m1")
}

// TestRealSwampInvalidatedCatalogIsNotBuilt: swamp's own migrate
// leaves an invalidated catalog; swampj calls it not built (exit 0), and
// its migrate builds it.
func TestRealSwampInvalidatedCatalogIsNotBuilt(t *testing.T) {
	bin := swampBinOrSkip(t)
	dir := t.TempDir()
	swampOut(t, bin, dir, "init")
	swampOut(t, bin, dir, "model", "create", "command/shell", "m1")
	swampOut(t, bin, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo hi")
	swampOut(t, bin, dir, "datastore", "namespace", "set", "ns1")
	swampOut(t, bin, dir, "datastore", "namespace", "migrate", "--confirm")
	r := nsWant(t, 0, dir, "catalog", "verify")
	if !strings.Contains(r.stdout, "not built yet") {
		t.Fatalf("verify: %s", r.stdout)
	}
	r = nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	if !strings.Contains(r.stdout, "built it from the disk") {
		t.Fatalf("migrate: %s", r.stdout)
	}
	r = nsWant(t, 0, dir, "catalog", "verify")
	if !strings.Contains(r.stdout, "agrees") {
		t.Fatalf("verify after migrate: %s", r.stdout)
	}
}

// TestInvalidatedCatalogIsNotBuilt is the same state without swamp: an
// empty, unpopulated catalog beside migrated data.
func TestInvalidatedCatalogIsNotBuilt(t *testing.T) {
	dir := writtenRepo(t)
	nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
	nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	for _, side := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(filepath.Join(dir, ".swamp", "data", "_catalog.db"+side))
	}
	c, err := catalog.Open(context.Background(), fsx.Real(), filepath.Join(dir, ".swamp", "data", "_catalog.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()

	r := nsWant(t, 0, dir, "catalog", "verify")
	if !strings.Contains(r.stdout, "not built yet") || !strings.Contains(r.stdout, "swampj catalog rebuild --confirm") {
		t.Fatalf("verify: %s", r.stdout)
	}
	r = nsWant(t, 0, dir, "catalog", "verify", "--json")
	if !strings.Contains(r.stdout, `"notBuilt": true`) {
		t.Fatalf("verify --json: %s", r.stdout)
	}
	r = nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	if !strings.Contains(r.stdout, "built it from the disk") {
		t.Fatalf("migrate: %s", r.stdout)
	}
	r = nsWant(t, 0, dir, "catalog", "verify", "--json")
	if !strings.Contains(r.stdout, `"inSync": true`) || !strings.Contains(r.stdout, `"populated": true`) {
		t.Fatalf("verify after migrate: %s", r.stdout)
	}

	// A catalog with rows is compared as it is: a missing row is drift
	// even when populated is unset (swamp's backfill never removes stale
	// rows, so a catalog with rows is held to the disk).
	if err := os.Remove(filepath.Join(dir, ".swamp", nsSlug, "data", "command", "shell", "m1", "out", "1", "raw")); err != nil {
		t.Fatal(err)
	}
	nsWant(t, 1, dir, "catalog", "verify")
}

// TestDoctorExplainsSwampsUnmigratedReport: the repo-local catalog
// and root outputs .log files are what swamp's doctor calls un-migrated;
// swampj's doctor notes it and exits 0.
func TestDoctorExplainsSwampsUnmigratedReport(t *testing.T) {
	dir := writtenRepo(t)
	nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
	nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	r := nsWant(t, 0, dir, "doctor")
	if !strings.Contains(r.stdout, "repo-local catalog") || strings.Contains(r.stdout, ".swamp/outputs (") {
		t.Fatalf("doctor after migrate: %s", r.stdout)
	}
	fsxtest.WriteFiles(t, dir, map[string]string{".swamp/outputs/command/shell/execute/m1-2026.log": "log\n"})
	r = nsWant(t, 0, dir, "doctor", "--json")
	if !strings.Contains(r.stdout, "1 .log file(s)") || !strings.Contains(r.stdout, "swampj datastore namespace migrate --confirm") {
		t.Fatalf("doctor --json: %s", r.stdout)
	}
	nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	if r = nsWant(t, 0, dir, "doctor"); strings.Contains(r.stdout, ".log file") {
		t.Fatalf("the log must be folded in by migrate: %s", r.stdout)
	}
	// Solo: no note.
	nsWant(t, 0, dir, "datastore", "namespace", "unset", "--migrate", "--confirm")
	if r = nsWant(t, 0, dir, "doctor"); strings.Contains(r.stdout, "note:") {
		t.Fatalf("solo repo: %s", r.stdout)
	}
}
