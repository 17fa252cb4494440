package swampj_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/store/storetest"
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

		"ops/doctor.ChangedRecords": func(t *testing.T, fx *nilFixture) error {
			_, err := doctor.ChangedRecords(fx.ctx, fx.r, time.Time{}, host.Common{})
			return err
		},
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
		"ops/store/storetest.Example": func(t *testing.T, fx *nilFixture) error {
			_, err := storetest.Example(nil, filepath.Join(fx.scratch, "example"))
			return err
		},
		"ops/store/storetest.Synthetic": func(t *testing.T, fx *nilFixture) error {
			_, err := storetest.Synthetic(nil, filepath.Join(fx.scratch, "synthetic"), storetest.SyntheticOptions{Items: 1, Versions: 1})
			return err
		},
	}
}
