package ops_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// apiRepo is a solo repo with one version written through the public API.
func apiRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte(migConfig(dir, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, err := repo.ParseAddress("command/shell/m1/result")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: a, Content: strings.NewReader(`{"ok":true}`)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestNilFSIsTheRealDisk: every options struct says "FS (nil: the real
// one)"; the functions that take the FS as an argument honour it too, and a
// nil getenv is os.Getenv.
func TestNilFSIsTheRealDisk(t *testing.T) {
	t.Setenv("SWAMP_DATASTORE", "")
	ctx := context.Background()
	dir := apiRepo(t)
	root, err := repo.Find(nil, filepath.Join(dir, ".swamp", "data"))
	if err != nil || root != dir {
		t.Fatalf("Find(nil): %q %v", root, err)
	}
	r, err := repo.Load(nil, dir, nil)
	if err != nil {
		t.Fatalf("Load(nil, dir, nil): %v", err)
	}
	if ms, err := repo.ListNamespaces(nil, r.Base); err != nil || len(ms) != 0 {
		t.Fatalf("ListNamespaces(nil): %v %v", ms, err)
	}
	if _, ok, err := repo.ReadManifest(nil, r.Base, "x"); ok || err != nil {
		t.Fatalf("ReadManifest(nil): %v %v", ok, err)
	}
	doc, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil || doc.Versions != 1 {
		t.Fatalf("Doctor(nil): %+v %v", doc, err)
	}
	if _, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}, Repair: true, Confirm: true}); err != nil {
		t.Fatalf("Doctor(nil) repair: %v", err)
	}
	if rep, err := catalogsync.Verify(ctx, r, catalogsync.Options{}); err != nil || !rep.InSync {
		t.Fatalf("VerifyCatalog(nil): %+v %v", rep, err)
	}
	if _, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Confirm: true}); err != nil {
		t.Fatalf("RebuildCatalog(nil): %v", err)
	}
	if items, err := read.ListData(ctx, r, "", host.Common{}); err != nil || len(items) != 1 {
		t.Fatalf("ListData(nil): %v %v", items, err)
	}
	if _, err := migrate.ListNamespaceManifests(r, host.Common{}); err != nil {
		t.Fatalf("ListNamespaceManifests(nil): %v", err)
	}
	j, err := journal.Open(nil, r.JournalPath, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatalf("journal.Open(nil): %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Recover(ctx, ops.RecoverOptions{Repo: r.Dir}); err != nil {
		t.Fatalf("Recover with a nil FS: %v", err)
	}
}

// TestSameRepoAfterSetNamespace: the *repo.Repo a host loaded once keeps
// working for the namespace operations after it set the namespace: they
// plan from .swamp.yaml as it is on disk.
func TestSameRepoAfterSetNamespace(t *testing.T) {
	ctx := context.Background()
	dir := apiRepo(t)
	env := func(string) string { return "" }
	r, err := repo.Load(nil, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	no := migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second}, Getenv: env}
	if _, err := migrate.SetNamespace(ctx, r, "team", no); err != nil {
		t.Fatal(err)
	}
	mo := migrate.MigrateOptions{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}, Getenv: env}
	prev, err := migrate.Migrate(ctx, r, mo)
	if err != nil {
		t.Fatalf("preview with the Repo loaded before SetNamespace: %v", err)
	}
	if prev.Preview.Namespace != "team" || prev.Preview.NothingToDo {
		t.Fatalf("preview: %+v", prev.Preview)
	}
	mo.Confirm = true
	if _, err := migrate.Migrate(ctx, r, mo); err != nil {
		t.Fatalf("confirmed migration with the same Repo: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".swamp", "team", "data", "command", "shell", "m1", "result", "latest")); err != nil {
		t.Fatalf("data not in the namespace: %v", err)
	}
	mo.Unset = true
	if _, err := migrate.Migrate(ctx, r, mo); err != nil {
		t.Fatalf("unset --migrate with the same Repo: %v", err)
	}
	if r2, err := repo.Load(nil, dir, env); err != nil || r2.Namespace != "" {
		t.Fatalf("after unset: %+v %v", r2, err)
	}
	if _, err := migrate.SetNamespace(ctx, r, "team", no); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.UnsetNamespace(ctx, r, no); err != nil {
		t.Fatalf("UnsetNamespace with the Repo loaded before SetNamespace: %v", err)
	}
	var nn *migrate.NoNamespaceError
	if _, err := migrate.Migrate(ctx, r, mo); !errors.As(err, &nn) {
		t.Fatalf("after unset, want NoNamespaceError, got %v", err)
	}
}
