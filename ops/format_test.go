package ops_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
	swampjrecover "github.com/swampj/swampj/recover"
)

// The Go API refuses a datastore by its format marker as the CLI does
// (swamp-format §13.1): every entry point, before any lock, journal
// open or write, so a host (its startup hook included) never recovers,
// writes or migrates into a layout swampj does not know.

// formatEntryPoints are the Go API's entry points on the repo at dir, each
// run on fsys; changes says whether it changes the repo.
func formatEntryPoints(dir string) []struct {
	name    string
	changes bool
	run     func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error
} {
	a, _ := repo.ParseAddress("command/shell/m1/result")
	noEnv := func(string) string { return "" }
	return []struct {
		name    string
		changes bool
		run     func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error
	}{
		{"WriteVersions", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: a, Content: strings.NewReader("{}")}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsys}})
			return err
		}},
		{"Migrate", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := migrate.Migrate(ctx, r, migrate.MigrateOptions{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Confirm: true, Getenv: noEnv})
			return err
		}},
		{"Migrate preview", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := migrate.Migrate(ctx, r, migrate.MigrateOptions{Common: host.Common{FS: fsys}, Getenv: noEnv})
			return err
		}},
		{"SetNamespace", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := migrate.SetNamespace(ctx, r, "ns2", migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Getenv: noEnv})
			return err
		}},
		{"UnsetNamespace", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := migrate.UnsetNamespace(ctx, r, migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Getenv: noEnv})
			return err
		}},
		{"Doctor repair", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Repair: true, Confirm: true})
			return err
		}},
		{"Doctor", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}})
			return err
		}},
		{"RebuildCatalog", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}, Confirm: true})
			return err
		}},
		{"VerifyCatalog", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := catalogsync.Verify(ctx, r, catalogsync.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsys}})
			return err
		}},
		{"OpenData", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			d, err := read.OpenData(ctx, r, a, 0, host.Common{FS: fsys})
			if err == nil {
				d.Reader.Close()
			}
			return err
		}},
		{"ResolveItem", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, _, err := read.ResolveItem(ctx, r, "command/shell/m1/result", "", host.Common{FS: fsys})
			return err
		}},
		{"ListData", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := read.ListData(ctx, r, "", host.Common{FS: fsys})
			return err
		}},
		{"DataVersions", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, _, err := read.DataVersions(ctx, r, a, host.Common{FS: fsys})
			return err
		}},
		{"recover.Run", true, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := swampjrecover.Run(ctx, dir, swampjrecover.Options{Common: host.Common{FS: fsys, JournalLockTimeout: time.Second}})
			return err
		}},
		{"recover.Run dry run", false, func(ctx context.Context, fsys fsx.FS, r *repo.Repo) error {
			_, err := swampjrecover.Run(ctx, dir, swampjrecover.Options{Common: host.Common{FS: fsys, JournalLockTimeout: time.Second}, DryRun: true})
			return err
		}},
	}
}

// formatAPIRepo is apiRepo with a namespace set (so a migration has work).
func formatAPIRepo(t *testing.T) (string, *repo.Repo) {
	t.Helper()
	dir := apiRepo(t)
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.SetNamespace(context.Background(), r, "ns1", migrate.NamespaceOptions{Getenv: func(string) string { return "" }}); err != nil {
		t.Fatal(err)
	}
	if r, err = repo.Load(fsx.Real(), dir, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func TestGoAPIRefusesUnsupportedFormat(t *testing.T) {
	dir, r := formatAPIRepo(t)
	marker := filepath.Join(r.Base, repo.FormatMarkerName)
	if err := os.WriteFile(marker, []byte(`{"format":3,"writtenBy":"swamp 2027"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	before := fsxtest.Snapshot(t, dir, nil)
	for _, ep := range formatEntryPoints(dir) {
		err := ep.run(context.Background(), nil, r)
		var ue *repo.FormatUnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, repo.ErrDatastoreFormat) {
			t.Errorf("%s: err = %v, want a *repo.FormatUnsupportedError", ep.name, err)
		}
		if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dir, nil)); len(d) > 0 {
			t.Fatalf("%s changed the tree although refused: %v", ep.name, d)
		}
	}
}

// markerDeniedFS is the real disk, except that reading the marker fails
// with EACCES (as for a user without read permission; the tests may run as
// root, whom the kernel never denies).
type markerDeniedFS struct{ fsx.FS }

func (d markerDeniedFS) ReadFile(name string) ([]byte, error) {
	if filepath.Base(name) == repo.FormatMarkerName {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return d.FS.ReadFile(name)
}

func TestGoAPIUnreadableFormatMarker(t *testing.T) {
	dir, r := formatAPIRepo(t)
	if err := os.WriteFile(filepath.Join(r.Base, repo.FormatMarkerName), []byte(`{"format":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := markerDeniedFS{fsx.Real()}
	before := fsxtest.Snapshot(t, dir, nil)
	for _, ep := range formatEntryPoints(dir) {
		if !ep.changes {
			continue // run below, after every writer
		}
		err := ep.run(context.Background(), fsys, r)
		var ue *repo.FormatMarkerUnreadableError
		if !errors.As(err, &ue) {
			t.Errorf("%s: err = %v, want a *repo.FormatMarkerUnreadableError (a writer refuses a marker it cannot read)", ep.name, err)
		}
		if d := fsxtest.Diff(before, fsxtest.Snapshot(t, dir, nil)); len(d) > 0 {
			t.Fatalf("%s changed the tree although refused: %v", ep.name, d)
		}
	}
	for _, ep := range formatEntryPoints(dir) {
		if ep.changes {
			continue
		}
		if err := ep.run(context.Background(), fsys, r); errors.Is(err, repo.ErrDatastoreFormat) {
			t.Errorf("%s (read-only): err = %v, want it to read on past an unreadable marker", ep.name, err)
		}
	}
}
