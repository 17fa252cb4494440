package swampj_test

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/wrapped"
	swampjrecover "github.com/swampj/swampj/recover"
)

// subpackageNilCalls are the nil-is-real calls of the entry points whose FS
// rides in their options (each through its options entry), the doctor's and the
// catalog sync's calls not covered there, and the store's pipeline and repo
// generator.
func subpackageNilCalls() map[string]func(t *testing.T, fx *nilFixture) error {
	via := func(name string) func(t *testing.T, fx *nilFixture) error {
		return func(t *testing.T, fx *nilFixture) error { return nilCalls[name](t, fx) }
	}
	return map[string]func(t *testing.T, fx *nilFixture) error{
		// The entry points whose FS rides in their options, and
		// WriteVersions, whose FS is still a parameter (their options
		// entries call each with a nil FS).
		"ops/write.WriteVersions":    via("ops/write.WriteOptions"),
		"ops/migrate.SetNamespace":   via("ops/migrate.NamespaceOptions"),
		"ops/migrate.UnsetNamespace": via("ops/migrate.NamespaceOptions"),
		"ops/migrate.Migrate":        via("ops/migrate.MigrateOptions"),
		"ops.Recover":                via("ops.RecoverOptions"),
		"ops.PreviewRecovery":        via("ops.RecoverOptions"),
		"ops.InspectRecovery":        via("ops.RecoverOptions"),
		"recover.Run":                via("recover.Options"),

		"ops/catalogsync.BuildIfNotBuilt": func(t *testing.T, fx *nilFixture) error {
			_, err := catalogsync.BuildIfNotBuilt(fx.ctx, fx.r, nil, host.Common{})
			return err
		},
		"ops/store.WalkScan": func(t *testing.T, fx *nilFixture) error {
			n := 0
			err := store.WalkScan(fx.ctx, nil, fx.r.DataRoot, store.WalkScanOptions{},
				func(store.Item) int { return 1 }, func(_ store.Item, v int) error { n += v; return nil })
			if err == nil && n == 0 {
				t.Error("store.WalkScan with a nil FS found no item of the fixture")
			}
			return err
		},
		"ops/store.WalkScanOptions": func(t *testing.T, fx *nilFixture) error { return nilCalls["ops/store.WalkScan"](t, fx) },
		"recover.InspectOptions": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			if _, err := swampjrecover.List(fx.dir, true, swampjrecover.InspectOptions{}); err != nil {
				return err
			}
			_, err := swampjrecover.Show(fx.dir, 1, swampjrecover.InspectOptions{})
			var notFound *journal.NotFoundError
			if errors.As(err, &notFound) {
				return nil
			}
			return err
		},
		"ops/wrapped.FindRemote": func(t *testing.T, fx *nilFixture) error {
			rem, err := wrapped.FindRemote(fx.dir, nil, nil)
			if err == nil && rem != nil {
				t.Errorf("a filesystem datastore was found remote: %s", rem.CacheDir())
			}
			return err
		},
		"ops/wrapped.GuardOptions": func(t *testing.T, fx *nilFixture) error {
			// nil getenv is the process's: the datastore and the emulator
			// named only in the environment are the ones used (a closed
			// port, so the run lock cannot be taken and the command runs
			// unguarded, with a warning to the logger).
			t.Setenv("SWAMP_DATASTORE", `@swamp/gcs-datastore:{"bucket":"nilreal"}`)
			t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
			t.Setenv("SWAMP_HOME", fx.scratch)
			rem, err := wrapped.FindRemote(fx.dir, nil, nil)
			if err != nil || rem == nil || rem.Bucket() != "nilreal" || !rem.GCS() {
				t.Fatalf("the GCS datastore named in the environment: %v %v", rem, err)
			}
			var warned strings.Builder
			g, err := wrapped.Begin(fx.ctx, rem, fx.dir, []string{"swamp", "model", "get", "m1"},
				wrapped.GuardOptions{RunLockTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(&warned, nil))})
			if g != nil || err != nil || !strings.Contains(warned.String(), "runs without it") {
				t.Errorf("Begin with the bucket out of reach: guard %v, error %v, warnings %q", g, err, warned.String())
			}
			rem.SyncFS(wrapped.GuardOptions{}) // the cache does not exist: nothing to flush
			return nil
		},
		"ops/example.Write": func(t *testing.T, fx *nilFixture) error {
			_, err := example.Write(nil, filepath.Join(fx.scratch, "example"))
			return err
		},
		"ops/example.Synthetic": func(t *testing.T, fx *nilFixture) error {
			_, err := example.Synthetic(nil, filepath.Join(fx.scratch, "synthetic"), example.SyntheticOptions{Items: 1, Versions: 1})
			return err
		},
	}
}
