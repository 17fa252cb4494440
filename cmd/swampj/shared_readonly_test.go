package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// A user who may read the repo but not write it (not in the owner's
// group): every inspection works and exits 0 on healthy data, as on
// read-only media; a change fails before it begins, with one message that
// says nothing was changed and names the file, its mode and owner, and
// the user.
func TestReadOnlyByPermissionInspectsAndRefusesChanges(t *testing.T) {
	reader := secondUser(t, false)
	dir, payload := sharedWithOwnerWrite(t)
	before := treeManifest(t, dir)

	for _, args := range [][]string{
		{"journal", "list"},
		{"recover", "--dry-run"},
		{"recover"},
		{"doctor"},
		{"catalog", "verify"},
		{"catalog", "rebuild"},
		{"data", "list"},
	} {
		r := swampjAs(t, dir, reader, args...)
		if r.code != 0 {
			t.Errorf("swampj %s as a user who may only read: exit %d\nstdout: %s\nstderr: %s",
				strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
		}
	}
	r := swampjAs(t, dir, reader, "doctor", "--json")
	var doc struct {
		NotWritable bool `json:"notWritable"`
		Findings    []struct{ Code string }
		SwampChecks []struct{ Check, Message string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	if r.code != 0 || !doc.NotWritable || len(doc.Findings) != 0 {
		t.Errorf("doctor --json as a reader: exit %d, notWritable %v, findings %v", r.code, doc.NotWritable, doc.Findings)
	}
	for _, c := range doc.SwampChecks {
		if c.Check == "catalog_completeness" && !strings.Contains(c.Message, "covers all") {
			t.Errorf("swamp's completeness check as a reader: %q", c.Message)
		}
	}

	user := "nobody (uid 65534"
	for _, c := range []struct {
		args []string
		file string // what refused, as the message must name it
		mode string
	}{
		{[]string{"data", "write", roAddr, "--file", payload}, filepath.Join(dir, ".swamp", "data", "command", "shell"), "drwxrwxr-x"},
		{[]string{"catalog", "rebuild", "--confirm"}, filepath.Join(dir, ".swamp", "_journal.db.gate"), "-rw-rw-r--"},
	} {
		r := swampjAs(t, dir, reader, append(c.args, "--json")...)
		code, msg := jsonError(t, r)
		if r.code != 1 || code != "permission_denied" {
			t.Errorf("swampj %s as a reader: exit %d, code %q, want 1 and permission_denied\n%s", strings.Join(c.args, " "), r.code, code, r.stderr)
		}
		for _, want := range []string{"Nothing was changed", c.file, c.mode, "owned by root", user} {
			if !strings.Contains(msg, want) {
				t.Errorf("swampj %s as a reader: the message does not say %q:\n%s", strings.Join(c.args, " "), want, msg)
			}
		}
	}
	if d := diffManifest(before, treeManifest(t, dir)); len(d) != 0 {
		t.Errorf("a user who may only read changed the repo: %v", d)
	}
}
