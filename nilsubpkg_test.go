package swampj_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/store/storetest"
)

// subpackageNilCalls are the nil-is-real calls of the packages ops
// re-exports (ops/doctor, ops/catalogsync) and of the store's pipeline and
// repo generator. The facade's entries (ops.Doctor, ops.RebuildCatalog, …)
// call straight through to the first ones; the others are called here.
func subpackageNilCalls() map[string]func(t *testing.T, fx *nilFixture) error {
	via := func(name string) func(t *testing.T, fx *nilFixture) error {
		return func(t *testing.T, fx *nilFixture) error { return nilCalls[name](t, fx) }
	}
	return map[string]func(t *testing.T, fx *nilFixture) error{
		// The entry points whose FS is a parameter (their options entries
		// call each with a nil FS).
		"ops.WriteVersions":   via("ops.WriteOptions"),
		"ops.SetNamespace":    via("ops.NamespaceOptions"),
		"ops.UnsetNamespace":  via("ops.NamespaceOptions"),
		"ops.Migrate":         via("ops.MigrateOptions"),
		"ops.Recover":         via("ops.RecoverOptions"),
		"ops.PreviewRecovery": via("ops.RecoverOptions"),
		"recover.Run":         via("recover.Options"),

		"ops/doctor.Run":               via("ops.Doctor"),
		"ops/doctor.Options":           via("ops.DoctorOptions"),
		"ops/catalogsync.Verify":       via("ops.VerifyCatalog"),
		"ops/catalogsync.Rebuild":      via("ops.RebuildCatalog"),
		"ops/catalogsync.ExpectedRows": via("ops.ExpectedRows"),
		"ops/catalogsync.OpenHandle":   via("ops.OpenCatalog"),
		"ops/doctor.ChangedRecords": func(t *testing.T, fx *nilFixture) error {
			_, err := doctor.ChangedRecords(fx.ctx, nil, fx.r, time.Time{})
			return err
		},
		"ops/catalogsync.BuildIfNotBuilt": func(t *testing.T, fx *nilFixture) error {
			_, err := catalogsync.BuildIfNotBuilt(fx.ctx, nil, fx.r, nil)
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
