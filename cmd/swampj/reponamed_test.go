package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNamedRepoIsTheRootItself: --repo-dir (and its alias --repo) and
// SWAMP_REPO_DIR name the repo's root, as in swamp: a mistyped or inner
// directory is refused, saying which it is, and nothing is written to the
// repo around it. Only without them is the working directory's repo
// searched for upward. The real swamp, when SWAMP_BIN is set, refuses the
// same directories.
func TestNamedRepoIsTheRootItself(t *testing.T) {
	dir, item := smallRepo(t, 1)
	inner := filepath.Join(dir, "models")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--repo", filepath.Join(dir, "typo-dir"), "data", "write", smallAddr}, filepath.Join(dir, "typo-dir") + " does not exist"},
		{nil, []string{"--repo-dir", inner, "data", "write", smallAddr}, inner + " holds no .swamp.yaml"},
		{nil, []string{"--repo", file, "data", "write", smallAddr}, file + " is not a directory"},
		{nil, []string{"--repo", inner, "journal", "list"}, inner + " holds no .swamp.yaml"},
		{[]string{"SWAMP_REPO_DIR=" + inner}, []string{"data", "write", smallAddr}, inner + " holds no .swamp.yaml"},
		{[]string{"SWAMP_REPO_DIR=" + filepath.Join(dir, "typo-dir")}, []string{"journal", "list"}, "does not exist"},
	} {
		r := swampjEnv(t, elsewhere, tc.env, []byte(`{"n":99}`), tc.args...)
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "its parents are not searched") {
			t.Errorf("%v %v: exit %d, want 1 saying %q\nstdout: %s\nstderr: %s", tc.env, tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
	}
	if b, err := os.ReadFile(filepath.Join(item, "latest")); err != nil || string(b) != "1" {
		t.Fatalf("a refused --repo wrote to the repo around it: latest = %q (%v)", b, err)
	}
	// Without a name, the repo is found from a directory inside it.
	mustOK(t, swampjIn(t, inner, []byte(`{"n":2}`), "data", "write", smallAddr, "-q"), "data write from a subdirectory")
	mustOK(t, swampj(t, elsewhere, "--repo", dir, "data", "versions", smallAddr), "data versions --repo ROOT")

	if os.Getenv("SWAMP_BIN") == "" {
		t.Log("the real swamp's side skipped: SWAMP_BIN is not set")
		return
	}
	needSwamp(t)
	sw := t.TempDir()
	if _, ok := swampOK(t, sw, "repo", "init"); !ok {
		return
	}
	swInner := filepath.Join(sw, "models")
	if err := os.MkdirAll(swInner, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, named := range []string{swInner, filepath.Join(sw, "typo-dir")} {
		if r := swampCmd(t, elsewhere, "datastore", "status", "--repo-dir", named); r.code == 0 || !strings.Contains(r.stdout+r.stderr, "Not a swamp repository: "+named) {
			t.Errorf("the real swamp accepted --repo-dir %s: %+v", named, r)
		}
		if r := swampj(t, elsewhere, "data", "list", "--repo-dir", named); r.code != 1 {
			t.Errorf("swampj accepted --repo-dir %s, which swamp refuses: %+v", named, r)
		}
	}
	if r := swampCmd(t, elsewhere, "datastore", "status", "--repo-dir", sw); r.code != 0 {
		t.Errorf("the real swamp refused its own repo's root: %+v", r)
	}
	mustOK(t, swampj(t, elsewhere, "data", "list", "--repo-dir", sw), "swampj data list --repo-dir on swamp's repo")
}
