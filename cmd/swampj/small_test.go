package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tests of issue #10's smaller items, against the real binary.

const smallAddr = "command/shell/" + dataModel + "/result"

// smallRepo writes versions 1..n of smallAddr with swampj (catalog rows
// included) and returns the repo and the item directory.
func smallRepo(t *testing.T, n int) (dir, item string) {
	t.Helper()
	dir = newRepo(t)
	for i := 1; i <= n; i++ {
		mustOK(t, swampjIn(t, dir, []byte(`{"n":`+itoa(i)+`}`), "data", "write", smallAddr, "-q"), "write")
	}
	return dir, filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result")
}

// TestSymlinkedVersionIsNotAVersionAnywhere: version 3 replaced by a symlink
// to its directory (swamp's walk never descends it, its listVersions and
// catalog backfill skip it). data get refuses it, versions and list mark
// it, the doctor and catalog verify agree before and after the repair.
func TestSymlinkedVersionIsNotAVersionAnywhere(t *testing.T) {
	dir, item := smallRepo(t, 3)
	elsewhere := filepath.Join(dir, "elsewhere3")
	if err := os.Rename(filepath.Join(item, "3"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(item, "3")); err != nil {
		t.Fatal(err)
	}

	r := swampj(t, dir, "data", "get", smallAddr)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "symlink") || !strings.Contains(r.stderr, "--version 2") {
		t.Fatalf("data get of a symlinked latest: %+v", r)
	}
	r = swampj(t, dir, "data", "get", smallAddr, "--version", "3", "--json")
	if code, msg := errCode(t, r); r.code != 1 || code != "unreadable_version" || !strings.Contains(msg, "symlink") {
		t.Fatalf("data get --version 3: %+v", r)
	}
	r = mustOK(t, swampj(t, dir, "data", "list", "--json"), "list")
	var items []struct {
		LatestReadable bool   `json:"latestReadable"`
		LastReadable   *int64 `json:"lastReadable"`
		Versions       int    `json:"versions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &items); err != nil || len(items) != 1 ||
		items[0].LatestReadable || items[0].LastReadable == nil || *items[0].LastReadable != 2 || items[0].Versions != 2 {
		t.Fatalf("data list: %v %s", err, r.stdout)
	}

	// Detection: both say the catalog's row 3 has no readable version.
	doc := swampj(t, dir, "doctor")
	ver := swampj(t, dir, "catalog", "verify")
	if doc.code != 1 || ver.code != 1 || !strings.Contains(doc.stdout, "version_symlink") {
		t.Fatalf("before the repair:\ndoctor %+v\nverify %+v", doc, ver)
	}
	mustOK(t, swampj(t, dir, "doctor", "--repair", "--confirm"), "repair")
	doc = swampj(t, dir, "doctor")
	ver = swampj(t, dir, "catalog", "verify")
	if doc.code != 0 || ver.code != 0 {
		t.Fatalf("after the repair the doctor and verify must agree it is clean:\ndoctor %+v\nverify %+v", doc, ver)
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", smallAddr), "get"); r.stdout != `{"n":2}` {
		t.Fatalf("data get after the repair: %q", r.stdout)
	}
	if fi, err := os.Lstat(filepath.Join(item, "3")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink must be left alone: %v %v", fi, err)
	}
}

// TestDoctorSaysWhetherChecksumsWereRead: a clean doctor without
// --verify-checksums says the checksums were not read (text and JSON); with
// it, it says they were, and finds a raw of the right size with the wrong
// bytes.
func TestDoctorSaysWhetherChecksumsWereRead(t *testing.T) {
	dir, item := smallRepo(t, 2)
	if err := os.WriteFile(filepath.Join(item, "2", "raw"), []byte(`{"n":0}`), 0o644); err != nil { // same size
		t.Fatal(err)
	}
	r := mustOK(t, swampj(t, dir, "doctor"), "doctor")
	if !strings.Contains(r.stdout, "No problems found.") || !strings.Contains(r.stdout, "Checksums were not verified") ||
		!strings.Contains(r.stdout, "--verify-checksums") {
		t.Fatalf("doctor text must say the checksums were not read:\n%s", r.stdout)
	}
	var d struct {
		ChecksumsVerified *bool `json:"checksumsVerified"`
	}
	r = mustOK(t, swampj(t, dir, "doctor", "--json"), "doctor --json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.ChecksumsVerified == nil || *d.ChecksumsVerified {
		t.Fatalf("doctor --json: want checksumsVerified false: %v %s", err, r.stdout)
	}
	r = swampj(t, dir, "doctor", "--verify-checksums", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || r.code != 1 || d.ChecksumsVerified == nil || !*d.ChecksumsVerified ||
		!strings.Contains(r.stdout, "checksum_mismatch") {
		t.Fatalf("doctor --verify-checksums --json: %v %+v", err, r)
	}
	r = swampj(t, dir, "doctor", "--verify-checksums")
	if r.code != 1 || !strings.Contains(r.stdout, "checksums: every raw read") {
		t.Fatalf("doctor --verify-checksums text: %+v", r)
	}
}

// TestDataGetWritesNoBytesThatFailTheirChecksum: raw of the right size but
// other bytes (what a crash can leave) is refused before a byte reaches
// stdout, exit 1, code unreadable_version, naming raw.
func TestDataGetWritesNoBytesThatFailTheirChecksum(t *testing.T) {
	dir, item := smallRepo(t, 2)
	raw := filepath.Join(item, "2", "raw")
	if err := os.WriteFile(raw, []byte("\x00\x00\x00\x00\x00\x00\x00"), 0o644); err != nil { // same size as {"n":2}
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"data", "get", smallAddr},
		{"data", "get", smallAddr, "--version", "2"},
		{"data", "get", smallAddr, "--json"},
	} {
		r := swampj(t, dir, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, raw) || !strings.Contains(r.stderr, "SHA-256") {
			t.Errorf("%v: want exit 1, nothing on stdout, raw named: %+v", args, r)
		}
	}
	r := swampj(t, dir, "data", "get", smallAddr, "--json")
	if code, msg := errCode(t, r); code != "unreadable_version" || !strings.Contains(msg, "--version 1") {
		t.Errorf("--json error: %s %s", code, msg)
	}
	if r := mustOK(t, swampj(t, dir, "data", "get", smallAddr, "--version", "1"), "get v1"); r.stdout != `{"n":1}` {
		t.Errorf("version 1: %q", r.stdout)
	}
}
