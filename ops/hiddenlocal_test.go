package ops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
)

// Always-local directories that swamp 06b6147's own migrate carried into a
// namespace (swamp-format §13.9): the doctor names each and what swamp cannot see
// because of it; its confirmed repair, and a confirmed swampj migrate that
// finishes the migration, bring them back merged entry by entry, refusing a
// real conflict and deleting nothing.

// hlRepo is the state swamp's migrate leaves: the data and the always-local
// directories under .swamp/{ns}/, extra files added to the tree as given.
func hlRepo(t *testing.T, extra map[string]string) (string, string) {
	t.Helper()
	dir := migFixture{nsLayout: true, catalogStamp: "-", manifest: true}.build(t)
	files := map[string]string{
		".swamp/" + migNS + "/secrets/local_encryption/v1/k1.enc":  "ciphertext-1",
		".swamp/" + migNS + "/secrets/local_encryption/v1/.key":    "vault-key",
		".swamp/" + migNS + "/bundles/ext/abc/bundle.js":           "bundle",
		".swamp/" + migNS + "/vault-bundles/aws/bundle.js":         "vault-bundle",
		".swamp/" + migNS + "/secrets/local_encryption/v1/sub/.gk": "nested",
	}
	for k, v := range extra {
		files[k] = v
	}
	fsxtest.WriteFiles(t, dir, files)
	return dir, filepath.Join(dir, ".swamp")
}

func hlFindings(rep *doctor.Report) []doctor.Finding {
	var out []doctor.Finding
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeHiddenLocalDir {
			out = append(out, f)
		}
	}
	return out
}

// hlFiles is every regular file under root with its content.
func hlFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, e := range fsxtest.Snapshot(t, root, nil).Files() {
		if strings.Contains(rel, "_journal.db") || strings.Contains(rel, "_catalog.db") || strings.HasSuffix(rel, ".lock") {
			continue
		}
		out[rel] = e.Content
	}
	return out
}

// contents is the multiset of file contents (what moved is still there,
// wherever it went).
func contents(files map[string]string) map[string]int {
	out := map[string]int{}
	for _, c := range files {
		out[c]++
	}
	return out
}

func TestDoctorFindsAndReturnsHiddenLocalDirs(t *testing.T) {
	// The root already holds one vault file with the same bytes: it goes
	// to quarantine, not over the root's.
	dir, base := hlRepo(t, map[string]string{".swamp/secrets/local_encryption/v1/.key": "vault-key"})
	r := migLoad(t, dir)
	rep, err := doctor.Run(migCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	fs := hlFindings(rep)
	if len(fs) != 3 {
		t.Fatalf("want one finding per hidden directory (secrets, bundles, vault-bundles), got %+v", fs)
	}
	secrets := fs[0]
	for _, f := range fs {
		if strings.HasSuffix(f.Path, "/secrets") {
			secrets = f
		}
	}
	for _, w := range []string{filepath.Join(base, migNS, "secrets"), "local_encryption/v1", "1 secret", filepath.Join(base, "secrets")} {
		if !strings.Contains(secrets.Message, w) {
			t.Errorf("the secrets finding must say %q: %s", w, secrets.Message)
		}
	}
	before := hlFiles(t, dir)
	rep, err = doctor.Run(migCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.IntentID == 0 {
		t.Fatalf("no repair intent: %+v", rep.Findings)
	}
	for _, p := range []string{"secrets/local_encryption/v1/k1.enc", "secrets/local_encryption/v1/sub/.gk", "bundles/ext/abc/bundle.js", "vault-bundles/aws/bundle.js", "secrets/local_encryption/v1/.key"} {
		if _, err := os.Stat(filepath.Join(base, p)); err != nil {
			t.Errorf("%s is not back at the root: %v", p, err)
		}
	}
	for _, sub := range []string{"secrets", "bundles", "vault-bundles"} {
		if _, err := os.Lstat(filepath.Join(base, migNS, sub)); !os.IsNotExist(err) {
			t.Errorf("%s/%s is still in the namespace: %v", migNS, sub, err)
		}
	}
	after := hlFiles(t, dir)
	if b, a := contents(before), contents(after); len(b) != len(a) {
		t.Fatalf("contents before %v, after %v: something was lost", b, a)
	} else {
		for c, n := range b {
			if a[c] != n {
				t.Fatalf("content %s: %d copies before, %d after (nothing may be deleted)", c, n, a[c])
			}
		}
	}
	rep, err = doctor.Run(migCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil || len(hlFindings(rep)) != 0 {
		t.Fatalf("after the repair: %v %+v", err, hlFindings(rep))
	}
}

func TestDoctorRefusesAHiddenLocalConflict(t *testing.T) {
	dir, base := hlRepo(t, map[string]string{
		".swamp/secrets/local_encryption/v1/k1.enc": "another ciphertext",
		".swamp/secrets/local_encryption/v1/.key":   "another key",
	})
	r := migLoad(t, dir)
	before := fsxtest.Snapshot(t, filepath.Join(base, migNS, "secrets"), nil)
	rep, err := doctor.Run(migCtx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true})
	if err != nil {
		t.Fatal(err)
	}
	var secrets *doctor.Finding
	for _, f := range hlFindings(rep) {
		if strings.HasSuffix(f.Path, "/secrets") {
			f := f
			secrets = &f
		}
	}
	if secrets == nil || secrets.Status == doctor.StatusRepaired {
		t.Fatalf("the conflicting secrets directory must be reported and not repaired: %+v", hlFindings(rep))
	}
	for _, w := range []string{"local_encryption/v1/k1.enc", "local_encryption/v1/.key"} {
		if !strings.Contains(secrets.Fix, w) {
			t.Errorf("the finding must list every conflicting path, %q missing: %s", w, secrets.Fix)
		}
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, filepath.Join(base, migNS, "secrets"), nil)); len(d) > 0 {
		t.Fatalf("the conflicting directory was changed: %v", d)
	}
	if got := drRead(t, filepath.Join(base, "secrets/local_encryption/v1/k1.enc")); got != "another ciphertext" {
		t.Fatalf("the root's file was replaced: %q", got)
	}
	// The other directories, without conflicts, came back.
	if _, err := os.Stat(filepath.Join(base, "bundles/ext/abc/bundle.js")); err != nil {
		t.Errorf("bundles not back: %v", err)
	}
}

// A confirmed swampj migrate on what swamp's migrate left finishes the job:
// the always-local directories come back; a conflict refuses the run.
func TestMigrateReturnsHiddenLocalDirs(t *testing.T) {
	dir, base := hlRepo(t, nil)
	mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	if got := drRead(t, filepath.Join(base, "secrets/local_encryption/v1/k1.enc")); got != "ciphertext-1" {
		t.Fatalf("the secret is not back at the root: %q", got)
	}
	for _, sub := range []string{"secrets", "bundles", "vault-bundles"} {
		if _, err := os.Lstat(filepath.Join(base, migNS, sub)); !os.IsNotExist(err) {
			t.Errorf("%s/%s is still in the namespace: %v", migNS, sub, err)
		}
	}

	dir, _ = hlRepo(t, map[string]string{".swamp/secrets/local_encryption/v1/k1.enc": "another ciphertext"})
	before := fsxtest.Snapshot(t, dir, migSkipInfra)
	_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	var ce *migrate.CollisionError
	if !asCollision(err, &ce) || len(ce.Paths) != 1 || !strings.HasSuffix(ce.Paths[0], "secrets/local_encryption/v1/k1.enc") {
		t.Fatalf("want a collision naming the secret, got %v", err)
	}
	if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dir, migSkipInfra)); len(d) > 0 {
		t.Fatalf("a refused migration changed the tree: %v", d)
	}
}

func asCollision(err error, ce **migrate.CollisionError) bool { return errors.As(err, ce) }
