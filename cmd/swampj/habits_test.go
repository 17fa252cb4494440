package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// swamp's global habits: --repo-dir and SWAMP_REPO_DIR, -y,
// -v, --no-color, `doctor datastores`.

// TestRepoDirAndSwampRepoDir: --repo-dir DIR, its alias --repo and
// SWAMP_REPO_DIR name the repo from anywhere; the flag wins over the
// variable, the variable over the working directory.
func TestRepoDirAndSwampRepoDir(t *testing.T) {
	dir, _ := smallRepo(t, 2)
	other := newRepo(t) // a repo without data
	elsewhere := t.TempDir()
	count := func(r result) string { return r.stdout }
	want := count(mustOK(t, swampj(t, dir, "data", "versions", smallAddr), "versions in the repo"))
	for _, tc := range []struct {
		cwd  string
		env  []string
		args []string
	}{
		{elsewhere, nil, []string{"data", "versions", smallAddr, "--repo-dir", dir}},
		{elsewhere, nil, []string{"--repo-dir=" + dir, "data", "versions", smallAddr}},
		{elsewhere, nil, []string{"data", "versions", smallAddr, "--repo", dir}},
		{elsewhere, []string{"SWAMP_REPO_DIR=" + dir}, []string{"data", "versions", smallAddr}},
		{other, []string{"SWAMP_REPO_DIR=" + dir}, []string{"data", "versions", smallAddr}},
		{elsewhere, []string{"SWAMP_REPO_DIR=" + other}, []string{"data", "versions", smallAddr, "--repo-dir", dir}},
	} {
		r := swampjEnv(t, tc.cwd, tc.env, nil, tc.args...)
		if r.code != 0 || r.stdout != want {
			t.Errorf("%v %v in %s: %+v", tc.env, tc.args, tc.cwd, r)
		}
	}
	// The variable names the repo: the working directory's is not used.
	if r := swampjEnv(t, dir, []string{"SWAMP_REPO_DIR=" + other}, nil, "data", "versions", smallAddr); r.code != 1 {
		t.Errorf("SWAMP_REPO_DIR must win over the working directory: %+v", r)
	}
}

// TestYesConfirmsLikeConfirm: -y and --yes apply the doctor's repair and
// the catalog rebuild, as --confirm does (and as migrate already had them).
func TestYesConfirmsLikeConfirm(t *testing.T) {
	for _, yes := range []string{"-y", "--yes"} {
		dir, item := docRepo(t)
		mustOK(t, swampj(t, dir, "doctor", "--repair", yes), "doctor --repair "+yes)
		if b, _ := os.ReadFile(filepath.Join(item, "latest")); string(b) != "3" {
			t.Fatalf("doctor --repair %s: latest = %q, want 3", yes, b)
		}
		dir, _ = smallRepo(t, 2)
		if err := os.Remove(filepath.Join(dir, ".swamp", "data", "_catalog.db")); err != nil {
			t.Fatal(err)
		}
		mustOK(t, swampj(t, dir, "catalog", "rebuild", yes), "catalog rebuild "+yes)
		mustOK(t, swampj(t, dir, "catalog", "verify"), "verify after catalog rebuild "+yes)
	}
}

// TestDoctorDatastoresIsTheDoctor: swamp's spelling finds and repairs what
// `doctor` does, with the flags on either side of the word.
func TestDoctorDatastoresIsTheDoctor(t *testing.T) {
	dir, item := docRepo(t)
	a, b := swampj(t, dir, "doctor", "--json"), swampj(t, dir, "doctor", "datastores", "--json")
	// The quarantine the fixes name is stamped to the second of each run.
	stamp := regexp.MustCompile(`\.swampj-quarantine/[0-9TZ-]+`)
	a.stdout = stamp.ReplaceAllString(a.stdout, ".swampj-quarantine/STAMP")
	b.stdout = stamp.ReplaceAllString(b.stdout, ".swampj-quarantine/STAMP")
	if a.code != 1 || a.code != b.code || a.stdout != b.stdout {
		t.Fatalf("doctor and doctor datastores differ:\n%+v\n%+v", a, b)
	}
	if r := swampj(t, dir, "doctor", "datastores", "vaults"); r.code != 2 {
		t.Fatalf("doctor datastores vaults: %+v", r)
	}
	mustOK(t, swampj(t, dir, "doctor", "--repair", "datastores", "-y"), "doctor --repair datastores -y")
	if b, _ := os.ReadFile(filepath.Join(item, "latest")); string(b) != "3" {
		t.Fatalf("latest = %q, want 3: the --repair before 'datastores' was ignored", b)
	}
	mustOK(t, swampj(t, dir, "doctor", "datastores"), "doctor datastores after the repair")
}

// TestVerboseAndNoColor: -v/--verbose prints debug detail on stderr (never
// on stdout), --version still prints the version, --no-color is accepted.
func TestVerboseAndNoColor(t *testing.T) {
	dir, _ := smallRepo(t, 1)
	plain := mustOK(t, swampj(t, dir, "data", "get", smallAddr), "get")
	for _, v := range []string{"-v", "--verbose"} {
		r := mustOK(t, swampj(t, dir, "data", "get", smallAddr, v), "get "+v)
		if r.stdout != plain.stdout || !strings.Contains(r.stderr, "swampj: debug: repo "+dir) {
			t.Errorf("%s: %+v", v, r)
		}
	}
	if plain.stderr != "" {
		t.Errorf("debug detail without -v: %q", plain.stderr)
	}
	r := swampj(t, dir, "data", "get", "command/shell/nope/result", "-v", "--json")
	if r.code != 1 || !strings.Contains(r.stderr, `"debug"`) || !strings.Contains(r.stderr, "error code not_found") {
		t.Errorf("-v on an error: %+v", r)
	}
	if code, _ := errCode(t, result{code: r.code, stderr: lastLine(r.stderr)}); code != "not_found" {
		t.Errorf("the error must stay the last line: %q", r.stderr)
	}
	if r := mustOK(t, swampj(t, dir, "--version"), "--version"); !strings.Contains(r.stdout, "swampj version") {
		t.Errorf("--version: %+v", r)
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", smallAddr, "--no-color"), "--no-color"); r.stdout != plain.stdout {
		t.Errorf("--no-color: %+v", r)
	}
}
