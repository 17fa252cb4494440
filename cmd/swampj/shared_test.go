package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A repo shared by a group (its members work under umask 002) and a repo
// another user may only read: the tests run parts of themselves as a second
// user, uid nobody, through the real binary started with that credential.

const nobodyUID = 65534

// secondUser is the credential of a second user: nobody, in the repo
// owner's group when inGroup (a member of the team), else in its own group
// only. Skipped with a notice unless the tests run as root.
func secondUser(t *testing.T, inGroup bool) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("second-user tests start the binary as uid 65534 and need root; skipped")
	}
	c := &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID, Groups: []uint32{nobodyUID}}
	if inGroup {
		c.Groups = []uint32{uint32(os.Getegid())}
	}
	return c
}

// openToOthers lets the group and others read path and search each
// directory above it (t.TempDir and the test binary's directory are 0700;
// a member of the owner's group is judged by the group bits alone).
func openToOthers(t *testing.T, path string) {
	t.Helper()
	for p := path; p != "/" && p != "."; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m&0o055 != 0o055 {
			if err := os.Chmod(p, m|0o055); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// runShared runs name with args in dir under umask 002, as cred (nil: as
// this process's user), with a HOME of its own.
func runShared(t *testing.T, dir string, cred *syscall.Credential, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `umask 002; exec "$0" "$@"`, name}, args...)...)
	cmd.Dir = dir
	home := filepath.Join(t.TempDir(), "home")
	if err := os.Mkdir(home, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o777); err != nil {
		t.Fatal(err)
	}
	openToOthers(t, home)
	cmd.Env = append(append(os.Environ(), "HOME="+home, "NO_COLOR=1", "SWAMP_NO_TELEMETRY=1"), env...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: so.String(), stderr: se.String()}
}

// swampjAs runs the real swampj as cred under umask 002.
func swampjAs(t *testing.T, dir string, cred *syscall.Credential, args ...string) result {
	t.Helper()
	openToOthers(t, binary)
	return runShared(t, dir, cred, nil, binary, args...)
}

// groupShared makes the example repo look made by a team under umask 002:
// every directory 0775 and every file 0664.
func groupShared(t *testing.T) string {
	t.Helper()
	dir := exampleRepo(t)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o775)
		}
		return os.Chmod(p, 0o664)
	})
	if err != nil {
		t.Fatal(err)
	}
	openToOthers(t, dir)
	return dir
}

// modeOf is the permission bits of path.
func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// wantModes checks that every file and directory under root created by
// swampj since before (a set of paths) has the modes umask 002 gives.
func wantModes(t *testing.T, root string, before map[string]string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if _, old := before[rel]; old {
			return nil
		}
		n++
		want := fs.FileMode(0o664)
		if d.IsDir() {
			want = 0o775
		}
		if got := modeOf(t, p); got != want {
			t.Errorf("%s was created %v under umask 002, want %v (swamp's modes)", rel, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("swampj created nothing to check")
	}
}

func TestGroupSharedRepoSecondMemberWorks(t *testing.T) {
	member := secondUser(t, true)
	dir := groupShared(t)
	in := filepath.Join(dir, "payload")
	if err := os.WriteFile(in, []byte("from the owner\n"), 0o664); err != nil {
		t.Fatal(err)
	}
	before := treeManifest(t, dir)
	// The owner writes first: the journal, its lock and gate, the catalog
	// and the new version are all created now, by swampj.
	mustOK(t, swampjAs(t, dir, nil, "data", "write", roAddr, "--file", in), "owner's data write")
	mustOK(t, swampjAs(t, dir, nil, "catalog", "rebuild", "--confirm"), "owner's catalog rebuild")
	for _, f := range []string{"_journal.db", "_journal.db.lock", "_journal.db.gate"} {
		if _, ok := before[filepath.Join(".swamp", f)]; ok {
			t.Fatalf("%s existed before the owner's write", f)
		}
	}
	wantModes(t, dir, before)

	// A second member of the group, in the same umask.
	before = treeManifest(t, dir)
	if err := os.WriteFile(in, []byte("from a second member\n"), 0o664); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"data", "write", roAddr, "--file", in},
		{"journal", "list"},
		{"recover", "--dry-run"},
		{"recover"},
		{"doctor"},
		{"catalog", "verify"},
		{"run", "--", "true"},
	} {
		r := swampjAs(t, dir, member, args...)
		if r.code != 0 || strings.Contains(r.stderr, "warning") {
			t.Errorf("swampj %s as a second member of the group: exit %d\nstdout: %s\nstderr: %s",
				strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		}
	}
	wantModes(t, dir, before)
	item := filepath.Join(dir, ".swamp", "data", filepath.FromSlash(roAddr))
	latest, err := os.ReadFile(filepath.Join(item, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(item, strings.TrimSpace(string(latest)), "raw"))
	if err != nil || string(got) != "from a second member\n" {
		t.Fatalf("latest version (%s) of %s: %q, %v", latest, roAddr, got, err)
	}
}

// The real swamp judges: in a repo a team shares under umask 002, a second
// member's swamp writes into the model directory the owner's swampj created
// and reads the version the second member's swampj wrote.
func TestRealSwampSecondMemberUsesWhatSwampjCreated(t *testing.T) {
	swampBin := needSwamp(t)
	member := secondUser(t, true)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	openToOthers(t, dir)
	swampAs := func(cred *syscall.Credential, args ...string) result {
		t.Helper()
		r := runShared(t, dir, cred, nil, swampBin, args...)
		if r.code != 0 {
			t.Fatalf("swamp %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		}
		return r
	}
	swampAs(nil, "init")
	swampAs(nil, "model", "create", "command/shell", "m1")
	swampAs(nil, "model", "create", "command/shell", "m2")
	swampAs(nil, "model", "method", "run", "m1", "execute", "--input", "run=echo hi")
	// swamp's own SQLite files are created 0644 whatever the umask
	// (SQLite's default mode): without this a second member's swamp
	// cannot run at all, swampj or not.
	err := filepath.WalkDir(filepath.Join(dir, ".swamp"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), ".db") {
			err = os.Chmod(p, 0o664)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	payload := filepath.Join(dir, "payload")
	if err := os.WriteFile(payload, []byte("notes from the owner\n"), 0o664); err != nil {
		t.Fatal(err)
	}
	// m2 has no data yet: the owner's swampj creates its model directory.
	mustOK(t, swampjAs(t, dir, nil, "data", "write", "m2", "notes", "--file", payload), "owner's data write")
	// The second member's swamp writes m2's first method run into it.
	swampAs(member, "model", "method", "run", "m2", "execute", "--input", "run=echo two")

	if err := os.WriteFile(payload, []byte("result from a second member\n"), 0o664); err != nil {
		t.Fatal(err)
	}
	mustOK(t, swampjAs(t, dir, member, "data", "write", "m1", "result", "--file", payload), "second member's data write")
	for _, c := range []struct{ model, name, want string }{
		{"m1", "result", "result from a second member\n"},
		{"m2", "notes", "notes from the owner\n"},
	} {
		r := swampAs(member, "data", "get", c.model, c.name, "--json")
		if !strings.Contains(r.stdout, strings.TrimSuffix(c.want, "\n")) {
			t.Errorf("swamp data get %s %s as the second member: want %q\n%s", c.model, c.name, c.want, tail(r.stdout, 1500))
		}
	}
}

// sharedWithOwnerWrite is groupShared after the owner's swampj wrote a
// version and rebuilt the catalog: healthy, with a journal and a catalog.
func sharedWithOwnerWrite(t *testing.T) (dir, payload string) {
	t.Helper()
	dir = groupShared(t)
	payload = filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payload, []byte("from the owner\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	openToOthers(t, payload)
	mustOK(t, swampjAs(t, dir, nil, "data", "write", roAddr, "--file", payload), "owner's data write")
	mustOK(t, swampjAs(t, dir, nil, "catalog", "rebuild", "--confirm"), "owner's catalog rebuild")
	mustOK(t, swampjAs(t, dir, nil, "doctor"), "owner's doctor")
	return dir, payload
}

// jsonError is the --json error document (the last line of stderr).
func jsonError(t *testing.T, r result) (code, msg string) {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(lastLine(r.stderr)), &e); err != nil || e.Error == "" {
		t.Fatalf("stderr does not end in one JSON error: %q", r.stderr)
	}
	return e.Code, e.Error
}

// A repo an older swampj wrote under umask 002 (journal 0600, its lock and
// gate 0644): a second member of the group is refused, and the message
// names the file, its mode and owner, and the user; when the journal cannot
// even be read, it does not recommend the inspections, which read it too.
func TestGroupMemberRefusedByOldModesIsToldWhatAndWho(t *testing.T) {
	member := secondUser(t, true)
	dir, payload := sharedWithOwnerWrite(t)
	j := filepath.Join(dir, ".swamp", "_journal.db")
	for p, m := range map[string]fs.FileMode{j: 0o600, j + ".lock": 0o644, j + ".gate": 0o644} {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	user := "nobody (uid 65534, gid 65534, groups root)"
	r := swampjAs(t, dir, member, "data", "write", roAddr, "--file", payload, "--json")
	code, msg := jsonError(t, r)
	if r.code != 1 || code != "permission_denied" {
		t.Errorf("data write: exit %d, code %q\n%s", r.code, code, r.stderr)
	}
	for _, want := range []string{"Nothing was changed", j + ".gate is -rw-r--r-- owned by root:root", user} {
		if !strings.Contains(msg, want) {
			t.Errorf("data write: the message does not say %q:\n%s", want, msg)
		}
	}
	for _, args := range [][]string{{"journal", "list"}, {"doctor"}, {"recover"}, {"run", "--", "true"}} {
		var r result
		code, msg := "permission_denied", ""
		if args[0] == "run" { // its flags end at "--": no --json
			r = swampjAs(t, dir, member, args...)
			msg = r.stderr
		} else {
			r = swampjAs(t, dir, member, append(args, "--json")...)
			code, msg = jsonError(t, r)
		}
		if r.code != 1 || code != "permission_denied" {
			t.Errorf("%s: exit %d, code %q\n%s", strings.Join(args, " "), r.code, code, r.stderr)
		}
		for _, want := range []string{j + " is -rw------- owned by root:root", user} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the message does not say %q:\n%s", strings.Join(args, " "), want, msg)
			}
		}
		if strings.Contains(msg, "swampj journal list") || strings.Contains(msg, "only needs to read") || strings.Contains(msg, "only need to read") {
			t.Errorf("%s: the message recommends inspections that fail the same way:\n%s", strings.Join(args, " "), msg)
		}
	}
}
