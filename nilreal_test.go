package swampj_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/catalogwriters"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/wrapped"
	"github.com/swampj/swampj/ops/write"
	swampjrecover "github.com/swampj/swampj/recover" // "recover" shadows the builtin
)

// nilFixture is a real repo with one written version, a stray empty journal
// beside nothing (so journal opens warn through a nil Warn), and the paths
// the calls below need.
type nilFixture struct {
	ctx     context.Context
	dir     string
	r       *repo.Repo
	addr    repo.Address
	itemDir string
	lock    string // a swamp model lock path (not held)
	scratch string // an empty directory of the test's own
}

func newNilFixture(t *testing.T) *nilFixture {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("repoId: 7f0c3a52-0d7e-4b5e-9a57-1d1f6f2d9c11\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fx := &nilFixture{ctx: context.Background(), dir: dir, scratch: t.TempDir()}
	if fx.r, err = repo.Load(nil, dir, nil); err != nil {
		t.Fatal(err)
	}
	if fx.addr, err = repo.ParseAddress("command/shell/m1/result"); err != nil {
		t.Fatal(err)
	}
	if _, err := write.WriteVersions(fx.ctx, fx.r, []write.VersionWrite{{Address: fx.addr, Content: strings.NewReader("{}")}}, write.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if fx.itemDir, err = fx.r.ItemDir(nil, fx.addr); err != nil {
		t.Fatal(err)
	}
	fx.lock = lock.ModelPath(fx.r.Base, fx.r.Namespace, fx.addr.Type, fx.addr.ModelID)
	return fx
}

// emptyJournal leaves a zero-byte journal (an interrupted creation): every
// open of it warns, through whatever Warn the options hold.
func (fx *nilFixture) emptyJournal(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(fx.r.JournalPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// nilCalls calls every exported function and options struct of the public
// packages that takes a disk, a logger or an environment lookup, with nil
// for each: nil must mean the real disk, a discarding logger and the process
// environment. The keys are checked against the source by
// TestNilRealCoversEveryEntry.
var nilCalls map[string]func(t *testing.T, fx *nilFixture) error

func init() { // an init, not an initializer: some entries reuse others
	nilCalls = map[string]func(t *testing.T, fx *nilFixture) error{
		// catalog
		"catalog.Open": func(t *testing.T, fx *nilFixture) error {
			c, err := catalog.Open(fx.ctx, nil, fx.r.CatalogPath, catalog.Options{})
			if err == nil {
				err = c.Close()
			}
			return err
		},
		"catalog.CreateBuilt": func(t *testing.T, fx *nilFixture) error {
			p := filepath.Join(fx.scratch, "built", "_catalog.db")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if _, err := catalog.CreateBuilt(fx.ctx, nil, p, "", nil, nil); err != nil {
				return err
			}
			c, err := catalog.Open(fx.ctx, nil, p, catalog.Options{Mode: catalog.ModeReport})
			if err == nil {
				err = c.Close()
			}
			return err
		},
		"catalog.MoveAsideFiles": func(t *testing.T, fx *nilFixture) error {
			p := filepath.Join(fx.scratch, "_catalog.db")
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				return err
			}
			_, err := catalog.MoveAsideFiles(nil, p, "test", time.Now())
			return err
		},
		"catalog.Options": func(t *testing.T, fx *nilFixture) error { return nilCalls["catalog.Open"](t, fx) },

		// journal
		"journal.Exists": func(t *testing.T, fx *nilFixture) error { _, err := journal.Exists(nil, fx.r.JournalPath); return err },
		"journal.Open": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			j, err := journal.Open(nil, fx.r.JournalPath, journal.Options{})
			if err == nil {
				err = j.Close()
			}
			return err
		},
		"journal.OpenReadOnly": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			j, err := journal.OpenReadOnly(nil, fx.r.JournalPath, journal.Options{})
			if err == nil {
				err = j.Close()
			}
			return err
		},
		"journal.Options":                func(t *testing.T, fx *nilFixture) error { return nilCalls["journal.Open"](t, fx) },
		"journal.CleanCreationLeftovers": func(t *testing.T, fx *nilFixture) error { return journal.CleanCreationLeftovers(nil, fx.r.JournalPath) },
		"catalog.CleanCreationLeftovers": func(t *testing.T, fx *nilFixture) error { return catalog.CleanCreationLeftovers(nil, fx.r.CatalogPath) },

		// recover
		"recover.Options": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := swampjrecover.Run(fx.ctx, fx.dir, swampjrecover.Options{})
			return err
		},

		// ops/wrapped (a dead run's change log, settled; the barrier runs
		// a real command)
		"journal.RunLogs": func(t *testing.T, fx *nilFixture) error { _, err := journal.RunLogs(nil, fx.r.JournalPath); return err },
		"ops/wrapped.LiveRuns": func(t *testing.T, fx *nilFixture) error {
			j, err := journal.Open(nil, fx.r.JournalPath, journal.Options{})
			if err != nil {
				return err
			}
			defer j.Close()
			_, err = wrapped.LiveRuns(nil, j, fx.r.JournalPath)
			return err
		},
		"ops/write.UnmigratedData": func(t *testing.T, fx *nilFixture) error {
			_, err := write.UnmigratedData(fx.r, host.Common{})
			return err
		},
		"ops/wrapped.Pending": func(t *testing.T, fx *nilFixture) error {
			_ = wrapped.Pending(nil, fx.r.JournalPath)
			return nil
		},
		"ops/wrapped.CountPending": func(t *testing.T, fx *nilFixture) error {
			_ = wrapped.CountPending(nil, fx.r.JournalPath)
			return nil
		},
		"ops/wrapped.Scope": func(t *testing.T, fx *nilFixture) error {
			if got := wrapped.Scope(nil, fx.r, []string{filepath.Join(fx.itemDir, "latest")}); len(got) != 1 {
				return fmt.Errorf("scope of an item's latest: %v", got)
			}
			return nil
		},
		"ops/wrapped.SettleOptions": func(t *testing.T, fx *nilFixture) error {
			_, err := wrapped.Settle(fx.ctx, fx.r, wrapped.SettleOptions{})
			return err
		},
		"ops/wrapped.Options": func(t *testing.T, fx *nilFixture) error {
			if wrapped.Supported() != nil {
				return nil // the barrier cannot run here: Start refuses before any disk work
			}
			cmd := exec.Command("true")
			cmd.Dir = fx.dir
			w, err := wrapped.Start(fx.ctx, fx.r, cmd, wrapped.Options{})
			if err != nil {
				return err
			}
			if err := cmd.Wait(); err != nil {
				return err
			}
			if _, err := w.Finish(fx.ctx); err != nil {
				return err
			}
			return w.Close("nil-FS test")
		},

		// ops/remote (a cache directory of the test's own)
		"ops/remote.ReadIndex": func(t *testing.T, fx *nilFixture) error {
			_, err := remote.ReadIndex(nil, &remote.Cache{Dir: fx.scratch})
			return err
		},
		"ops/remote.ReadSyncState": func(t *testing.T, fx *nilFixture) error {
			_, err := remote.ReadSyncState(nil, &remote.Cache{Dir: fx.scratch})
			return err
		},
		"ops/remote.LockerFor": func(t *testing.T, fx *nilFixture) error {
			if remote.LockerFor(&remote.Cache{}, nil) == nil {
				return errors.New("no locker")
			}
			return nil
		},
		"ops/remote.RunLock": func(t *testing.T, fx *nilFixture) error {
			// nil getenv is the process's: the emulator named only in the
			// environment is the one asked (a closed port, so refused).
			t.Setenv("STORAGE_EMULATOR_HOST", "127.0.0.1:1")
			c := &remote.Cache{Dir: fx.scratch, Type: remote.GCSType, GCS: &remote.GCSConfig{Bucket: "nilreal"}}
			release, err := remote.RunLock(context.Background(), c, nil, time.Second)
			if err == nil {
				_ = release()
				return errors.New("a run lock was taken from a closed port")
			}
			if !strings.Contains(err.Error(), "127.0.0.1:1") {
				return fmt.Errorf("the error does not name the emulator from the environment: %w", err)
			}
			return nil
		},
		"ops/remote.Options": func(t *testing.T, fx *nilFixture) error {
			_, err := remote.Discover(fx.dir, remote.Options{})
			if errors.Is(err, remote.ErrNotRemote) {
				return nil
			}
			return err
		},

		// ops/repo
		"ops/repo.Load":                      func(t *testing.T, fx *nilFixture) error { _, err := repo.Load(nil, fx.dir, nil); return err },
		"ops/repo.Find":                      func(t *testing.T, fx *nilFixture) error { _, err := repo.Find(nil, fx.itemDir); return err },
		"ops/repo.ExpandEnvPath":             func(t *testing.T, fx *nilFixture) error { _, err := repo.ExpandEnvPath("/a/b", nil); return err },
		"ops/repo.*Repo.ItemDir":             func(t *testing.T, fx *nilFixture) error { _, err := fx.r.ItemDir(nil, fx.addr); return err },
		"ops/repo.*Repo.CheckInsideDataRoot": func(t *testing.T, fx *nilFixture) error { return fx.r.CheckInsideDataRoot(nil, fx.itemDir) },
		"ops/repo.*Repo.FindModelDefinition": func(t *testing.T, fx *nilFixture) error {
			_, _, err := fx.r.FindModelDefinition(nil, fx.addr.Type, fx.addr.ModelID)
			return err
		},
		"ops/repo.*Repo.ModelDefinitions": func(t *testing.T, fx *nilFixture) error { _, err := fx.r.ModelDefinitions(nil); return err },
		"ops/repo.WriteManifest": func(t *testing.T, fx *nilFixture) error {
			return repo.WriteManifest(nil, fx.scratch, "infra", fx.r.RepoID, time.Now())
		},
		"ops/repo.ReadManifest": func(t *testing.T, fx *nilFixture) error {
			_, _, err := repo.ReadManifest(nil, fx.r.Base, "infra")
			return err
		},
		"ops/repo.At":             func(t *testing.T, fx *nilFixture) error { _, err := repo.At(nil, fx.dir); return err },
		"ops/repo.ListNamespaces": func(t *testing.T, fx *nilFixture) error { _, err := repo.ListNamespaces(nil, fx.r.Base); return err },

		// ops/store
		"ops/store.VersionDirs":  func(t *testing.T, fx *nilFixture) error { _, err := store.VersionDirs(nil, fx.itemDir); return err },
		"ops/store.ListVersions": func(t *testing.T, fx *nilFixture) error { _, err := store.ListVersions(nil, fx.itemDir); return err },
		"ops/store.NextVersion":  func(t *testing.T, fx *nilFixture) error { _, err := store.NextVersion(nil, fx.itemDir); return err },
		"ops/store.ReadLatest":   func(t *testing.T, fx *nilFixture) error { _, err := store.ReadLatest(nil, fx.itemDir); return err },
		"ops/store.ReadVersion": func(t *testing.T, fx *nilFixture) error {
			_, err := store.ReadVersion(nil, fx.itemDir, 1, store.CheckOptions{})
			return err
		},
		"ops/store.ReadContent": func(t *testing.T, fx *nilFixture) error {
			f, _, err := store.ReadContent(nil, fx.itemDir, 1)
			if err == nil {
				err = f.Close()
			}
			return err
		},
		"ops/store.ReadContentContext": func(t *testing.T, fx *nilFixture) error {
			f, _, err := store.ReadContentContext(fx.ctx, nil, fx.itemDir, 1)
			if err == nil {
				err = f.Close()
			}
			return err
		},
		"ops/store.HashFile": func(t *testing.T, fx *nilFixture) error {
			_, err := store.HashFile(nil, filepath.Join(fx.itemDir, "1", store.RawFileName))
			return err
		},
		"ops/store.Walk": func(t *testing.T, fx *nilFixture) error {
			return store.Walk(fx.ctx, nil, fx.r.DataRoot, func(store.Item) error { return nil })
		},
		"ops/store.WalkListings": func(t *testing.T, fx *nilFixture) error {
			return store.WalkListings(fx.ctx, nil, fx.r.DataRoot, func(store.Item) error { return nil }, nil)
		},
		"ops/store.FindItems": func(t *testing.T, fx *nilFixture) error {
			_, err := store.FindItems(fx.ctx, nil, fx.r.DataRoot, "")
			return err
		},
		"ops/store.ScanItem": func(t *testing.T, fx *nilFixture) error {
			items, err := store.FindItems(fx.ctx, nil, fx.r.DataRoot, "")
			if err != nil || len(items) != 1 {
				return fmt.Errorf("items %v: %v", items, err)
			}
			_, err = store.ScanItem(nil, items[0], store.CheckOptions{})
			return err
		},

		// ops/lock
		"ops/lock.Acquire": func(t *testing.T, fx *nilFixture) error {
			l, err := lock.Acquire(fx.ctx, nil, fx.lock, lock.Options{})
			if err != nil {
				return err
			}
			if _, _, err := lock.Judge(nil, fx.lock, time.Now()); err != nil {
				return err
			}
			return lock.ReleaseNonce(nil, fx.lock, l.Nonce())
		},
		"ops/lock.Options":      func(t *testing.T, fx *nilFixture) error { return nilCalls["ops/lock.Acquire"](t, fx) },
		"ops/lock.Judge":        func(t *testing.T, fx *nilFixture) error { return nilCalls["ops/lock.Acquire"](t, fx) },
		"ops/lock.ReleaseNonce": func(t *testing.T, fx *nilFixture) error { return nilCalls["ops/lock.Acquire"](t, fx) },
		"ops/lock.StillDead": func(t *testing.T, fx *nilFixture) error {
			_, _, err := lock.StillDead(nil, fx.lock, nil, time.Now())
			return err
		},
		"ops/lock.FindLockFiles": func(t *testing.T, fx *nilFixture) error { _, err := lock.FindLockFiles(nil, fx.r.Base, ""); return err },
		"ops/lock.FindLockFilesListed": func(t *testing.T, fx *nilFixture) error {
			_, err := lock.FindLockFilesListed(nil, fx.r.Base, "", fsx.Real().ReadDir)
			return err
		},
		"ops/lock.LiveModelLocks": func(t *testing.T, fx *nilFixture) error {
			_, err := lock.LiveModelLocks(nil, fx.r.Base, "", time.Now(), 0)
			return err
		},
		"ops/lock.WaitNoLiveModelLocks": func(t *testing.T, fx *nilFixture) error {
			return lock.WaitNoLiveModelLocks(fx.ctx, nil, fx.r.Base, "", 0, time.Second, 0)
		},
		"ops/lock.LentBy": func(t *testing.T, fx *nilFixture) error { lock.LentBy(nil, fx.lock, 1, time.Now()); return nil },
		"ops/lock.Dead":   func(t *testing.T, fx *nilFixture) error { _, err := lock.Dead(nil, fx.lock); return err },
		"ops/lock.TempDead": func(t *testing.T, fx *nilFixture) error {
			_, _, err := lock.TempDead(nil, fx.lock, time.Now())
			return err
		},
		"ops/lock.Free": func(t *testing.T, fx *nilFixture) error { _, err := lock.Free(nil, fx.lock, 0); return err },
		"ops/lock.WaitFree": func(t *testing.T, fx *nilFixture) error {
			return lock.WaitFree(fx.ctx, nil, fx.lock, time.Second, 0)
		},
		"ops/lock.HolderPidFromEnv": func(t *testing.T, fx *nilFixture) error { lock.HolderPidFromEnv(nil); return nil },
		"ops/lock.TimeoutFromEnv":   func(t *testing.T, fx *nilFixture) error { lock.TimeoutFromEnv(nil); return nil },
		"ops/lock.JudgeWithin": func(t *testing.T, fx *nilFixture) error {
			_, _, err := lock.JudgeWithin(nil, fx.lock, time.Now(), lock.InFlightWindow)
			return err
		},
		"ops/lock.StillDeadWithin": func(t *testing.T, fx *nilFixture) error {
			_, _, err := lock.StillDeadWithin(nil, fx.lock, nil, time.Now(), lock.InFlightWindow)
			return err
		},
		"ops/lock.AcquireGlobal": func(t *testing.T, fx *nilFixture) error {
			ls, err := lock.AcquireGlobal(fx.ctx, nil, fx.r.Base, "infra", lock.Options{Timeout: time.Second})
			lock.ReleaseAll(ls, nil)
			return err
		},
		"ops/lock.GlobalFree": func(t *testing.T, fx *nilFixture) error {
			_, err := lock.GlobalFree(nil, fx.r.Base, "infra", 0)
			return err
		},
		"ops/lock.WaitGlobalFree": func(t *testing.T, fx *nilFixture) error {
			return lock.WaitGlobalFree(fx.ctx, nil, fx.r.Base, "infra", time.Second, 0)
		},
		"ops/lock.AncestryFromEnv": func(t *testing.T, fx *nilFixture) error { lock.AncestryFromEnv(nil); return nil },
		"ops/lock.AcquireOrBorrow": func(t *testing.T, fx *nilFixture) error {
			l, err := lock.AcquireOrBorrow(fx.ctx, nil, fx.lock, lock.AncestryFromEnv(nil), lock.Options{Timeout: time.Second})
			if err != nil {
				return err
			}
			return l.Release()
		},
		"ops/lock.LiveModelLocksSkipping": func(t *testing.T, fx *nilFixture) error {
			_, err := lock.LiveModelLocksSkipping(nil, fx.r.Base, "", time.Now(), nil)
			return err
		},
		"ops/lock.WaitNoLiveModelLocksSkipping": func(t *testing.T, fx *nilFixture) error {
			return lock.WaitNoLiveModelLocksSkipping(fx.ctx, nil, fx.r.Base, "", nil, time.Second, 0)
		},

		// ops/repo: the format marker
		"ops/repo.CheckDatastoreFormat": func(t *testing.T, fx *nilFixture) error {
			_, err := repo.CheckDatastoreFormat(nil, fx.r.Base)
			return err
		},
		"ops/repo.*Repo.CheckFormat": func(t *testing.T, fx *nilFixture) error { _, err := fx.r.CheckFormat(nil); return err },
		"ops/repo.HiddenLocalDirs":   func(t *testing.T, fx *nilFixture) error { _, err := repo.HiddenLocalDirs(nil, fx.r); return err },
		"ops/repo.RefuseUnknownFormat": func(t *testing.T, fx *nilFixture) error {
			return repo.RefuseUnknownFormat(nil, fx.r.Base, true, nil)
		},
		"ops/repo.CheckRepoFormat": func(t *testing.T, fx *nilFixture) error {
			_, err := repo.CheckRepoFormat(nil, fx.dir, nil)
			return err
		},

		// ops/catalogwriters (the repo-local fixture writes no token; the
		// calls must still read and resolve through the real disk)
		"ops/catalogwriters.Record": func(t *testing.T, fx *nilFixture) error { _, err := catalogwriters.Record(nil, fx.r); return err },
		"ops/catalogwriters.WriterID": func(t *testing.T, fx *nilFixture) error {
			_, err := catalogwriters.WriterID(nil, fx.r)
			return err
		},

		// ops: the protocols
		"ops/write.WriteOptions": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := write.WriteVersions(fx.ctx, fx.r, []write.VersionWrite{{Address: fx.addr, Content: strings.NewReader("{}")}}, write.WriteOptions{})
			return err
		},
		"ops/write.Open": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			h, err := write.Open(fx.ctx, fx.r, write.WriteOptions{})
			if err != nil {
				return err
			}
			if _, err := h.WriteVersions(fx.ctx, []write.VersionWrite{{Address: fx.addr, Content: strings.NewReader("{}")}}); err != nil {
				return err
			}
			return h.Close()
		},
		"ops/migrate.NamespaceOptions": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			if _, err := migrate.SetNamespace(fx.ctx, fx.r, "infra", migrate.NamespaceOptions{}); err != nil {
				return err
			}
			_, err := migrate.UnsetNamespace(fx.ctx, fx.r, migrate.NamespaceOptions{})
			return err
		},
		"ops/migrate.MigrateOptions": func(t *testing.T, fx *nilFixture) error {
			if _, err := migrate.SetNamespace(fx.ctx, fx.r, "infra", migrate.NamespaceOptions{}); err != nil {
				return err
			}
			fx.emptyJournal(t)
			if _, err := migrate.Migrate(fx.ctx, fx.r, migrate.MigrateOptions{}); err != nil { // the preview
				return err
			}
			_, err := migrate.Migrate(fx.ctx, fx.r, migrate.MigrateOptions{Confirm: true})
			return err
		},
		"ops/doctor.Run": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := doctor.Run(fx.ctx, fx.r, doctor.Options{})
			return err
		},
		"ops.Doctor": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := ops.Doctor(fx.ctx, fx.dir, doctor.Options{})
			return err
		},
		"ops/doctor.Options": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := doctor.Run(fx.ctx, fx.r, doctor.Options{Repair: true, Confirm: true})
			return err
		},
		"ops/read.CurrentVersion": func(t *testing.T, fx *nilFixture) error {
			md, _, err := read.CurrentVersion(nil, fx.r, fx.addr, fx.itemDir)
			if err == nil && md == nil {
				t.Error("read.CurrentVersion with a nil FS found no version of the fixture")
			}
			return err
		},
		"ops/read.ModelName": func(t *testing.T, fx *nilFixture) error {
			_, err := read.ModelName(nil, fx.r, fx.addr)
			return err
		},
		"ops/read.ChangedItems": func(t *testing.T, fx *nilFixture) error {
			_, err := read.ChangedItems(fx.ctx, fx.r, time.Time{}, host.Common{})
			return err
		},
		"ops/migrate.PreviewUnsetNamespace": func(t *testing.T, fx *nilFixture) error {
			r := *fx.r
			r.Namespace = "infra"
			_, err := migrate.PreviewUnsetNamespace(&r, host.Common{})
			return err
		},
		"ops/migrate.ListNamespaceManifests": func(t *testing.T, fx *nilFixture) error {
			_, err := migrate.ListNamespaceManifests(fx.r, host.Common{})
			return err
		},
		"ops/catalogsync.ExpectedRows": func(t *testing.T, fx *nilFixture) error {
			_, err := catalogsync.ExpectedRows(fx.ctx, fx.r, catalogsync.ExpectedOptions{})
			return err
		},
		"ops/catalogsync.ExpectedOptions": func(t *testing.T, fx *nilFixture) error { return nilCalls["ops/catalogsync.ExpectedRows"](t, fx) },
		"ops/catalogsync.Rebuild": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := catalogsync.Rebuild(fx.ctx, fx.r, catalogsync.Options{Confirm: true})
			return err
		},
		"ops/catalogsync.Verify": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			_, err := catalogsync.Verify(fx.ctx, fx.r, catalogsync.Options{})
			return err
		},
		"ops/catalogsync.Options": func(t *testing.T, fx *nilFixture) error { return nilCalls["ops/catalogsync.Rebuild"](t, fx) },
		"ops/catalogsync.OpenHandle": func(t *testing.T, fx *nilFixture) error {
			h := catalogsync.OpenHandle(nil, fx.dir)
			if _, err := write.WriteVersions(fx.ctx, fx.r, []write.VersionWrite{{Address: fx.addr, Content: strings.NewReader("{}")}}, write.WriteOptions{Catalog: h}); err != nil {
				return err
			}
			return h.Close()
		},
		"ops/catalogsync.OpenLazyHandle": func(t *testing.T, fx *nilFixture) error {
			h := catalogsync.OpenLazyHandle(nil, fx.dir)
			if _, err := write.WriteVersions(fx.ctx, fx.r, []write.VersionWrite{{Address: fx.addr, Content: strings.NewReader("{}")}}, write.WriteOptions{Catalog: h}); err != nil {
				return err
			}
			return h.Close()
		},
		"ops.RecoverOptions": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			if _, err := ops.PreviewRecovery(fx.ctx, ops.RecoverOptions{Repo: fx.dir}); err != nil {
				return err
			}
			if _, err := ops.InspectRecovery(ops.RecoverOptions{Repo: fx.dir}); err != nil {
				return err
			}
			_, err := ops.Recover(fx.ctx, ops.RecoverOptions{Repo: fx.dir})
			return err
		},
		"ops.RemoveCrashLeftovers": func(t *testing.T, fx *nilFixture) error {
			fx.emptyJournal(t)
			j, err := journal.Open(nil, fx.r.JournalPath, journal.Options{})
			if err != nil {
				return err
			}
			defer j.Close()
			_, err = ops.RemoveCrashLeftovers(fx.ctx, j, fx.r.DataRoot, host.Common{})
			return err
		},
		"ops/read.ResolveModel": func(t *testing.T, fx *nilFixture) error {
			_, err := read.ResolveModel(fx.ctx, fx.r, fx.addr.ModelID, host.Common{})
			return err
		},
		"ops/read.ResolveItem": func(t *testing.T, fx *nilFixture) error {
			_, _, err := read.ResolveItem(fx.ctx, fx.r, fx.addr.ModelID, fx.addr.DataName, host.Common{})
			return err
		},
		"ops/read.OpenData": func(t *testing.T, fx *nilFixture) error {
			d, err := read.OpenData(fx.ctx, fx.r, fx.addr, 0, host.Common{})
			if err == nil {
				err = d.Reader.Close()
			}
			return err
		},
		"ops/read.DataVersions": func(t *testing.T, fx *nilFixture) error {
			_, _, err := read.DataVersions(fx.ctx, fx.r, fx.addr, host.Common{})
			return err
		},
		"ops/read.ListData": func(t *testing.T, fx *nilFixture) error {
			_, err := read.ListData(fx.ctx, fx.r, "", host.Common{})
			return err
		},

		// fsx: the door itself
		"fsx.OrReal":     func(t *testing.T, fx *nilFixture) error { _, err := fsx.OrReal(nil).Stat(fx.dir); return err },
		"fsx.Concurrent": func(t *testing.T, fx *nilFixture) error { fsx.Concurrent(nil); return nil },
		"fsx.Exists":     func(t *testing.T, fx *nilFixture) error { _, err := fsx.Exists(nil, fx.dir); return err },
		"fsx.PublishNoReplace": func(t *testing.T, fx *nilFixture) error {
			tmp := filepath.Join(fx.dir, ".publish.tmp")
			if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
				return err
			}
			_, err := fsx.PublishNoReplace(nil, tmp, filepath.Join(fx.dir, "published"))
			return err
		},
		"fsx.RemoveDeadCreations": func(t *testing.T, fx *nilFixture) error {
			return fsx.RemoveDeadCreations(nil, fx.dir, ".none.creating-", nil)
		},
		"fsx.OpenDir": func(t *testing.T, fx *nilFixture) error {
			d, err := fsx.OpenDir(nil, fx.dir)
			if err != nil {
				return err
			}
			defer d.Close()
			_, err = d.Stat(".swamp.yaml")
			return err
		},
		"fsx.NewFault": func(t *testing.T, fx *nilFixture) error {
			_, err := fsx.NewFault(nil).Stat(fx.dir)
			return err
		},
		"fsx.Reroot": func(t *testing.T, fx *nilFixture) error { _, err := fsx.Reroot(nil, nil).Stat(fx.dir); return err },
		"fsx.ReadFileMax": func(t *testing.T, fx *nilFixture) error {
			p := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
				return err
			}
			_, err := fsx.ReadFileMax(nil, p, 1)
			return err
		},
		"fsx.WithKillPoint": func(t *testing.T, fx *nilFixture) error {
			f, err := fsx.WithKillPoint(nil, nil)
			if err == nil {
				_, err = f.Stat(fx.dir)
			}
			return err
		},
		"fsx.WriteFileAtomic": func(t *testing.T, fx *nilFixture) error {
			return fsx.WriteFileAtomic(nil, filepath.Join(fx.scratch, "a"), []byte("a"), 0o644)
		},
		"fsx.WriteFileAtomicVia": func(t *testing.T, fx *nilFixture) error {
			return fsx.WriteFileAtomicVia(nil, filepath.Join(fx.scratch, "b"), filepath.Join(fx.scratch, "b.tmp"), []byte("b"), 0o644)
		},
		"fsx.WriteStreamAtomic": func(t *testing.T, fx *nilFixture) error {
			_, _, err := fsx.WriteStreamAtomic(nil, filepath.Join(fx.scratch, "c"), strings.NewReader("c"), 0o644, nil)
			return err
		},
		"fsx.WriteTemp": func(t *testing.T, fx *nilFixture) error {
			_, _, err := fsx.WriteTemp(nil, filepath.Join(fx.scratch, "d"), strings.NewReader("d"), 0o644, nil)
			return err
		},
		"fsx.WriteNew": func(t *testing.T, fx *nilFixture) error {
			_, err := fsx.WriteNew(nil, filepath.Join(fx.scratch, "e"), strings.NewReader("e"), 0o644, nil)
			return err
		},
		"fsx.WriteNewUnsynced": func(t *testing.T, fx *nilFixture) error {
			f, _, err := fsx.WriteNewUnsynced(nil, filepath.Join(fx.scratch, "f"), strings.NewReader("f"), 0o644, nil)
			if err != nil {
				return err
			}
			return fsx.SyncAll(nil, []fsx.File{f}, []string{fx.scratch}) // closes f
		},
		"fsx.SyncAll": func(t *testing.T, fx *nilFixture) error { return fsx.SyncAll(nil, nil, []string{fx.scratch}) },
		"fsx.MkdirDurable": func(t *testing.T, fx *nilFixture) error {
			return fsx.MkdirDurable(nil, filepath.Join(fx.scratch, "g"), 0o755)
		},
		"fsx.MkdirAllDurable": func(t *testing.T, fx *nilFixture) error {
			return fsx.MkdirAllDurable(nil, filepath.Join(fx.scratch, "h", "i"), 0o755)
		},
		"fsx.RenameDurable": func(t *testing.T, fx *nilFixture) error {
			p := filepath.Join(fx.scratch, "j")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			return fsx.RenameDurable(nil, p, p+"2")
		},
		"fsx.RenameNoReplaceDurable": func(t *testing.T, fx *nilFixture) error {
			p := filepath.Join(fx.scratch, "k")
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			return fsx.RenameNoReplaceDurable(nil, p, p+"2")
		},
		"fsx.SyncParents": func(t *testing.T, fx *nilFixture) error { return fsx.SyncParents(nil, filepath.Join(fx.scratch, "x")) },
		"fsx.NoteSQLiteUnsynced": func(t *testing.T, fx *nilFixture) error {
			fsx.NoteSQLiteUnsynced(nil, filepath.Join(fx.scratch, "x.db"))
			return nil
		},
		"fsx.NoteSQLiteSynced": func(t *testing.T, fx *nilFixture) error {
			fsx.NoteSQLiteSynced(nil, filepath.Join(fx.scratch, "x.db"))
			return nil
		},
		"fsx.RemoveAll": func(t *testing.T, fx *nilFixture) error {
			if err := os.MkdirAll(filepath.Join(fx.scratch, "l", "m"), 0o755); err != nil {
				return err
			}
			return fsx.RemoveAll(nil, filepath.Join(fx.scratch, "l"))
		},
	}
	for name, call := range subpackageNilCalls() {
		nilCalls[name] = call
	}
}

func TestNilMeansTheRealThing(t *testing.T) {
	names := make([]string, 0, len(nilCalls))
	for name := range nilCalls {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s with nil FS/logger/getenv panicked: %v\n%s", name, p, debug.Stack())
					}
				}()
				fx := newNilFixture(t)
				if err := nilCalls[name](t, fx); err != nil {
					t.Fatalf("%s with nil FS/logger/getenv: %v", name, err)
				}
			}()
		})
	}
}

// TestNilRealCoversEveryEntry lists, from the source, every exported
// function of the public packages with a parameter of type fsx.FS or
// host.Common (or an environment lookup func(string) string), and every
// exported options struct with a field of type fsx.FS, an embedded
// host.Common or a func field (loggers, getenv, clocks), and fails on any
// that nilCalls does not call.
func TestNilRealCoversEveryEntry(t *testing.T) {
	want := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "internal" || d.Name() == "testdata" || p == "cmd") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, src, 0)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(p))
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				name := decl.Name.Name
				if decl.Recv != nil {
					recv := exprString(src, decl.Recv.List[0].Type)
					if !ast.IsExported(strings.TrimPrefix(recv, "*")) {
						continue
					}
					name = recv + "." + name
				}
				for _, prm := range decl.Type.Params.List {
					if ts := exprString(src, prm.Type); ts == "fsx.FS" || ts == "FS" || ts == "host.Common" || ts == "func(string) string" {
						want[pkg+"."+name] = true
					}
				}
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, isStruct := ts.Type.(*ast.StructType)
					if !isStruct || !ts.Name.IsExported() || !strings.HasSuffix(ts.Name.Name, "Options") {
						continue
					}
					for _, field := range st.Fields.List {
						_, isFunc := field.Type.(*ast.FuncType)
						if len(field.Names) == 0 && exprString(src, field.Type) == "host.Common" {
							want[pkg+"."+ts.Name.Name] = true
						}
						if exprString(src, field.Type) == "fsx.FS" || isFunc {
							for _, n := range field.Names {
								if n.IsExported() {
									want[pkg+"."+ts.Name.Name] = true
								}
							}
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 20 {
		t.Fatalf("found only %d entries; is the walk looking at the source?", len(want))
	}
	for name := range want {
		if nilCalls[name] == nil {
			t.Errorf("%s takes an FS, a logger or a getenv but TestNilMeansTheRealThing does not call it with nil", name)
		}
	}
}

func exprString(src []byte, e ast.Expr) string {
	return string(bytes.TrimSpace(src[e.Pos()-1 : e.End()-1]))
}
