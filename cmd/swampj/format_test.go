package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/ops/repo"
)

// The datastore format marker at every entry point (docs/swamp-format.md
// §13.1): a marker swampj cannot use refuses every command, read-only ones
// included, before any lock, journal open or write, with exit 65 and the
// error's own code, and leaves the whole tree byte-identical.

// formatCommands is every command that works on a repo, and whether it
// changes it. Each runs under --json.
var formatCommands = []struct {
	args    []string
	changes bool
}{
	{[]string{"doctor"}, false},
	{[]string{"doctor", "--repair"}, false},
	{[]string{"doctor", "--repair", "--confirm"}, true},
	{[]string{"catalog", "verify"}, false},
	{[]string{"catalog", "rebuild"}, false},
	{[]string{"catalog", "rebuild", "--confirm"}, true},
	{[]string{"data", "get", "command/shell/m1/out"}, false},
	{[]string{"data", "versions", "command/shell/m1/out"}, false},
	{[]string{"data", "list"}, false},
	{[]string{"data", "write", "command/shell/m1/out"}, true},
	{[]string{"journal", "list"}, false},
	{[]string{"journal", "show", "1"}, false},
	{[]string{"journal", "hold", "--for", "1ms"}, true},
	{[]string{"recover", "--dry-run"}, false},
	{[]string{"recover"}, true},
	{[]string{"run", "--", "true"}, true},
	{[]string{"datastore", "namespace", "list"}, false},
	{[]string{"datastore", "namespace", "migrate"}, false},
	{[]string{"datastore", "namespace", "migrate", "--confirm"}, true},
	{[]string{"datastore", "namespace", "migrate", "--reverse", "--confirm"}, true},
	{[]string{"datastore", "namespace", "set", "other-ns"}, true},
	{[]string{"datastore", "namespace", "unset"}, false},
	{[]string{"datastore", "namespace", "unset", "--confirm"}, true},
	{[]string{"datastore", "namespace", "unset", "--migrate", "--confirm"}, true},
}

// formatRepo is nsRepo with a namespace set by swampj (so the journal holds
// intent 1) and the data not migrated yet.
func formatRepo(t *testing.T) string {
	t.Helper()
	dir := nsRepo(t)
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", nsSlug), "namespace set")
	return dir
}

func putMarker(t *testing.T, dir string, body []byte) string {
	t.Helper()
	p := filepath.Join(dir, ".swamp", repo.FormatMarkerName)
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fixtureMarker(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "datastore-format", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// refusedEverywhere runs every command in dir and checks each exits 65 with
// code, changing nothing anywhere under dir.
func refusedEverywhere(t *testing.T, dir, code string) {
	t.Helper()
	before := treeManifest(t, dir)
	for _, c := range formatCommands {
		r := swampjIn(t, dir, []byte(`{"v":9}`), append([]string{"--json", "--lock-timeout", "1s"}, c.args...)...)
		if r.code != exitFormat {
			t.Errorf("%v: exit %d, want %d (refused)\nstdout: %s\nstderr: %s", c.args, r.code, exitFormat, r.stdout, r.stderr)
			continue
		}
		if got := errCodeOf(t, r); got != code {
			t.Errorf("%v: code %q, want %q", c.args, got, code)
		}
		if !strings.Contains(r.stderr, "Nothing was changed.") || !strings.Contains(r.stderr, repo.FormatMarkerName) {
			t.Errorf("%v: the message must name the marker and say nothing was changed: %s", c.args, r.stderr)
		}
		if d := diffManifest(before, treeManifest(t, dir)); len(d) > 0 {
			t.Fatalf("%v changed the tree although refused: %v", c.args, d)
		}
	}
}

func TestFormatMarkerRefusesEveryCommand(t *testing.T) {
	for _, tc := range []struct {
		name string
		put  func(t *testing.T, dir string)
		code string
	}{
		{"format 3", func(t *testing.T, dir string) { putMarker(t, dir, fixtureMarker(t, "refused-format-3.json")) }, repo.CodeFormatUnsupported},
		{"minReaderFormat 3", func(t *testing.T, dir string) { putMarker(t, dir, fixtureMarker(t, "refused-min-reader-3.json")) }, repo.CodeFormatUnsupported},
		{"a directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, ".swamp", repo.FormatMarkerName), 0o755); err != nil {
				t.Fatal(err)
			}
		}, repo.CodeFormatMarkerInvalid},
		{"65 KiB", func(t *testing.T, dir string) { putMarker(t, dir, fixtureMarker(t, "invalid-65-kib.json")) }, repo.CodeFormatMarkerInvalid},
		{"invalid UTF-8", func(t *testing.T, dir string) { putMarker(t, dir, fixtureMarker(t, "invalid-utf8.json")) }, repo.CodeFormatMarkerInvalid},
		{"a JSON array", func(t *testing.T, dir string) { putMarker(t, dir, fixtureMarker(t, "invalid-json-array.json")) }, repo.CodeFormatMarkerInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := formatRepo(t)
			tc.put(t, dir)
			refusedEverywhere(t, dir, tc.code)
		})
	}
}

// A format-5 marker whose minReaderFormat is 2 is read and written, and a
// migration there and back leaves it byte-identical at the datastore root
// (no command creates, changes, moves or deletes it).
func TestFormatMarkerAcceptedAndKeptByMigration(t *testing.T) {
	dir := formatRepo(t)
	body := fixtureMarker(t, "accepted-format-5-min-reader-2.json")
	p := putMarker(t, dir, body)
	for _, args := range [][]string{
		{"doctor"},
		{"datastore", "namespace", "migrate", "--confirm"},
		{"data", "list"},
		{"datastore", "namespace", "migrate", "--reverse", "--confirm"},
		{"datastore", "namespace", "migrate", "--confirm"},
	} {
		if args[0] == "doctor" {
			// Before the migration the doctor finds the data at the root
			// swamp does not read (and the fixture's versions are not
			// swamp's): exit 1 with findings, not a refusal of the format.
			if r := swampj(t, dir, args...); r.code != 0 && r.code != 1 {
				t.Fatalf("doctor: exit %d\n%s", r.code, r.stderr)
			}
		} else {
			mustOK(t, swampj(t, dir, args...), strings.Join(args, " "))
		}
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("after %v the marker at the datastore root is %q (%v), want it byte-identical", args, got, err)
		}
		if _, err := os.Lstat(filepath.Join(dir, ".swamp", nsSlug, repo.FormatMarkerName)); err == nil {
			t.Fatalf("after %v a marker appeared inside the namespace", args)
		}
	}
	mustOK(t, swampjIn(t, dir, []byte(`{"v":3}`), "data", "write", "command/shell/m1/out"), "write")
	if got, _ := os.ReadFile(p); !bytes.Equal(got, body) {
		t.Fatalf("the write changed the marker: %q", got)
	}
}

// shmPresentOnly keeps only the presence of the catalog's -shm: the catalog
// keeps its WAL and -shm between processes, and any open of it, the
// read-only commands' too, rewrites SQLite's shared-memory index there
// (nothing of the data: the -wal and the database are still compared).
func shmPresentOnly(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if strings.HasSuffix(k, "_catalog.db-shm") {
			v = "present"
		}
		out[k] = v
	}
	return out
}

// An unreadable marker (EACCES, for a user who cannot read it) is refused by
// every command that changes the repo; read-only commands say so and go on.
func TestFormatMarkerUnreadable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run swampj as another user through setpriv (root is never denied a read)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv not installed")
	}
	dir := formatRepo(t)
	p := putMarker(t, dir, []byte(`{"format":2}`))
	if out, err := exec.Command("chown", "-R", "65534:65534", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	if err := os.Chown(p, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
			_ = os.Chmod(d, fi.Mode().Perm()|0o001)
		}
	}
	asNobody := func(args ...string) result {
		cmd := exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", binary, "--json", "--lock-timeout", "1s"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir)
		cmd.Stdin = strings.NewReader(`{"v":9}`)
		return runResult(t, cmd)
	}
	before := treeManifest(t, dir)
	for _, c := range formatCommands {
		r := asNobody(c.args...)
		if c.changes {
			if r.code != exitFormat || errCodeOf(t, r) != repo.CodeFormatMarkerUnreadable {
				t.Errorf("%v: exit %d, want %d with code %s\n%s%s", c.args, r.code, exitFormat, repo.CodeFormatMarkerUnreadable, r.stdout, r.stderr)
			}
			if d := diffManifest(shmPresentOnly(before), shmPresentOnly(treeManifest(t, dir))); len(d) > 0 {
				t.Fatalf("%v changed the tree although refused: %v", c.args, d)
			}
			continue
		}
		if r.code == exitFormat || !strings.Contains(r.stderr, "cannot be read") {
			t.Errorf("%v (read-only): exit %d, want it to go on after a warning about the marker\n%s%s", c.args, r.code, r.stdout, r.stderr)
		}
	}
}
