package main

// The vault that swamp's own namespace migrate hides, on the
// real swamp. swamp 06b6147's `datastore namespace migrate` iterates all 15
// DEFAULT_DATASTORE_SUBDIRS, the always-local ones included, so it moves
// .swamp/secrets into .swamp/{ns}/secrets; its vault reads secrets only
// from .swamp/secrets, and afterwards `vault read-secret` says "Secret 'k1'
// not found in local vault 'v1'" and `vault list-keys` shows 0 keys
// (swamp-format §13.9). swampj's own migrate keeps secrets local;
// swampj's doctor names the hidden directory, and its repair, or a
// confirmed swampj migrate, brings it back where the vault reads it.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const secretValue = "s3cret"

// newVaultRepo is a swamp repo with a local_encryption vault v1 holding k1.
func newVaultRepo(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init"},
		{"vault", "create", "local_encryption", "v1"},
		{"vault", "put", "v1", "k1", secretValue},
	} {
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	return dir
}

// swampReadsSecret reports whether swamp's vault gives back k1, and the
// key count its list-keys reports.
func swampReadsSecret(t *testing.T, dir string) (ok bool, detail string) {
	t.Helper()
	r := swampCmd(t, dir, "vault", "read-secret", "v1", "k1", "-y")
	if r.code == 0 && strings.TrimSpace(r.stdout) == secretValue {
		return true, ""
	}
	return false, strings.TrimSpace(r.stdout + r.stderr)
}

func swampKeyCount(t *testing.T, dir string) string {
	t.Helper()
	r, _ := swampOK(t, dir, "vault", "list-keys", "v1")
	out := r.stdout + r.stderr
	if i := strings.Index(out, "key(s)"); i > 0 {
		j := strings.LastIndex(out[:i], ":")
		return strings.TrimSpace(out[j+1 : i])
	}
	return "?"
}

func TestRealSwampMigrateHidesTheVault(t *testing.T) {
	needSwamp(t)
	dir := newVaultRepo(t)
	local := filepath.Join(dir, ".swamp", "secrets")
	moved := filepath.Join(dir, ".swamp", "ns1", "secrets")

	t.Run("swamp reads the secret before its migrate", func(t *testing.T) {
		if ok, detail := swampReadsSecret(t, dir); !ok {
			t.Fatalf("swamp vault read-secret v1 k1: %s", detail)
		}
		if n := swampKeyCount(t, dir); n != "1" {
			t.Errorf("vault list-keys v1: %s key(s), want 1", n)
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	if _, ok := swampOK(t, dir, "datastore", "namespace", "set", "ns1"); !ok {
		t.FailNow()
	}
	if _, ok := swampOK(t, dir, "datastore", "namespace", "migrate", "-y"); !ok {
		t.FailNow()
	}

	t.Run("swamp cannot read it after its migrate", func(t *testing.T) {
		if _, err := os.Stat(local); !os.IsNotExist(err) {
			t.Errorf("%s after swamp's migrate: %v (swamp 06b6147 moves it into the namespace)", local, err)
		}
		if fi, err := os.Stat(moved); err != nil || !fi.IsDir() {
			t.Fatalf("%s after swamp's migrate: %v", moved, err)
		}
		ok, detail := swampReadsSecret(t, dir)
		if ok {
			t.Fatal("swamp still reads the secret after its migrate: the defect of swamp 06b6147 this test pins is gone; revisit the always-local directories (swamp-format §13)")
		}
		if !strings.Contains(detail, "Secret 'k1' not found in local vault 'v1'") {
			t.Errorf("read-secret after migrate: %q", detail)
		}
		if n := swampKeyCount(t, dir); n != "0" {
			t.Errorf("vault list-keys v1 after migrate: %s key(s), want 0", n)
		}
	})

	t.Run("swamp reads it again after swampj's repair", func(t *testing.T) {
		r := swampj(t, dir, "doctor", "--json")
		var rep struct {
			Findings []struct{ Code, Path, Message string }
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("doctor --json: %v\n%s\n%s", err, r.stdout, r.stderr)
		}
		found := false
		for _, f := range rep.Findings {
			if f.Code == "local_dir_hidden" && f.Path == moved {
				found = true
				if !strings.Contains(f.Message, "v1") || !strings.Contains(f.Message, local) {
					t.Errorf("the finding must name the hidden vault and where swamp reads it: %s", f.Message)
				}
			}
		}
		if !found {
			t.Fatalf("swampj doctor does not name %s: %+v", moved, rep.Findings)
		}
		before := treeManifest(t, moved)
		mustOK(t, swampj(t, dir, "doctor", "--repair", "--confirm"), "doctor --repair --confirm")
		if _, err := os.Stat(moved); !os.IsNotExist(err) {
			t.Errorf("%s after the repair: %v", moved, err)
		}
		after := treeManifest(t, local)
		for rel, sum := range before {
			if sum != "dir" && after[rel] != sum {
				t.Errorf("%s did not come back to %s byte for byte", rel, local)
			}
		}
		if ok, detail := swampReadsSecret(t, dir); !ok {
			t.Fatalf("swamp vault read-secret after swampj's repair: %s", detail)
		}
		if n := swampKeyCount(t, dir); n != "1" {
			t.Errorf("vault list-keys v1 after swampj's repair: %s key(s), want 1", n)
		}
	})
}

// swampj's own migrate and `unset --migrate` keep the always-local
// secrets where swamp's vault reads them.
func TestRealSwampSwampjMigrateKeepsTheVault(t *testing.T) {
	needSwamp(t)
	dir := newVaultRepo(t)
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "namespace migrate")
	if _, err := os.Stat(filepath.Join(dir, ".swamp", "ns1", "secrets")); !os.IsNotExist(err) {
		t.Errorf("swampj's migrate moved secrets into the namespace: %v", err)
	}
	if ok, detail := swampReadsSecret(t, dir); !ok {
		t.Errorf("after swampj's migrate: %s", detail)
	}
	mustOK(t, swampj(t, dir, "datastore", "namespace", "unset", "--migrate", "--confirm"), "namespace unset --migrate")
	if ok, detail := swampReadsSecret(t, dir); !ok {
		t.Errorf("after swampj's unset --migrate: %s", detail)
	}
}

// A confirmed swampj migrate on what swamp's migrate left finishes the
// migration and brings the vault back where swamp reads it.
func TestRealSwampSwampjMigrateFinishesSwampsMigrate(t *testing.T) {
	needSwamp(t)
	dir := newVaultRepo(t)
	for _, args := range [][]string{{"datastore", "namespace", "set", "ns1"}, {"datastore", "namespace", "migrate", "-y"}} {
		if _, ok := swampOK(t, dir, args...); !ok {
			t.FailNow()
		}
	}
	if ok, _ := swampReadsSecret(t, dir); ok {
		t.Fatal("swamp still reads the secret after its migrate: the defect of swamp 06b6147 this test pins is gone; revisit the always-local directories (swamp-format §13)")
	}
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "swampj namespace migrate")
	if _, err := os.Stat(filepath.Join(dir, ".swamp", "ns1", "secrets")); !os.IsNotExist(err) {
		t.Errorf("secrets still in the namespace after swampj's migrate: %v", err)
	}
	if ok, detail := swampReadsSecret(t, dir); !ok {
		t.Fatalf("swamp vault read-secret after swampj's migrate: %s", detail)
	}
}
