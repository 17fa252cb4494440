package ops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// crashModel is the model every crash scenario writes to.
const crashModel = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"

var crashAddr = repo.Address{Type: "command/shell", ModelID: crashModel, DataName: "result"}

// crashPayload is larger than fsx's 256 KiB copy buffer, so raw takes two
// writes and one cut point leaves it torn.
var crashPayload = bytes.Repeat([]byte("0123456789abcdef"), 300<<10/16)

var crashOldPayload = []byte(`{"version":1}`)

type crashScenario struct {
	existing bool   // the item has version 1 before the write
	stream   bool   // the content cannot be hashed in advance (stdin mode)
	template string // a repo in the starting state, copied by setup
}

func (s *crashScenario) String() string {
	item, mode := "new-item", "known-hash"
	if s.existing {
		item = "existing-item"
	}
	if s.stream {
		mode = "stdin"
	}
	return item + "/" + mode
}

// crashPipe hides Seek, as a stdin crashPipe does.
type crashPipe struct{ r io.Reader }

func (p crashPipe) Read(b []byte) (int, error) { return p.r.Read(b) }

var (
	crashOldAt = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	crashNewAt = time.Date(2026, 8, 2, 12, 0, 0, 0, time.UTC)
)

// setup makes a repo in the scenario's starting state. The existing item
// (with its journal and catalog) is written once and then copied: a
// finished intent's paths do not matter, and the copy costs no fsync.
func (s *crashScenario) setup(t *testing.T) *repo.Repo {
	t.Helper()
	dir := fsxtest.ScratchDir(t)
	if s.existing && s.template != "" {
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		fsxtest.CopyTree(t, s.template, dir)
		return loadCrashRepo(t, dir)
	}
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := loadCrashRepo(t, dir)
	if s.existing {
		o := ops.FixIdentity(write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}}, "11111111-1111-4111-8111-111111111111", crashOldAt)
		if _, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: crashAddr, Content: bytes.NewReader(crashOldPayload)}}, o); err != nil {
			t.Fatal(err)
		}
		s.template = dir
		return s.setup(t) // never write into the template itself
	}
	return r
}

func loadCrashRepo(t *testing.T, dir string) *repo.Repo {
	t.Helper()
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// write is the write under test, through fsys.
func (s *crashScenario) write(r *repo.Repo, fsys fsx.FS) error {
	var c io.Reader = bytes.NewReader(crashPayload)
	if s.stream {
		c = crashPipe{c}
	}
	o := ops.FixIdentity(write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}}, "22222222-2222-4222-8222-222222222222", crashNewAt)
	o.FS = fsys
	_, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: crashAddr, Content: c, ModelName: "m", SpecName: "result"}}, o)
	return err
}

// TestWriteCrashAtEveryCutPoint cuts one write after every operation it
// issues — swamp's lock protocol, journal creation and commits, every
// create/write/fsync/close of the staged files, the publish rename, the
// `latest` replace, the catalog commit — for a new and an existing item, with
// the size known in advance and with a stream. After each cut, recovery runs
// forward twice on one crashed tree and backward twice on another. Each time:
// `latest` names a readable version whose bytes are exactly the old or the
// new payload (the new one iff the staged version was complete at the cut;
// backward always the old one unless the intent had already been marked
// done), the catalog's latest row agrees, no staging directory is left, the
// tree is exactly the old or the new tree, and the second round changes
// nothing.
// writeCrashScenarios: a new item and an existing one, each written from a
// known-size source (hashed ahead) and from a stream (self-verifying).
func writeCrashScenarios() []*crashScenario {
	return []*crashScenario{{existing: false}, {stream: true}, {existing: true}, {existing: true, stream: true}}
}

func TestWriteCrashAtEveryCutPoint(t *testing.T) {
	for _, sc := range writeCrashScenarios() {
		t.Run(sc.String(), func(t *testing.T) {
			t.Parallel()
			crashMatrix(t, sc)
		})
	}
}

func crashMatrix(t *testing.T, sc *crashScenario) {
	ctx := context.Background()
	start := sc.setup(t)
	initial := crashTree(t, start)
	clean := fsx.NewFault(fsx.Real())
	if err := sc.write(start, clean); err != nil {
		t.Fatal(err)
	}
	final := crashTree(t, start)
	cuts := clean.Ops()
	// The version is complete once its metadata.yaml is written (the stage
	// observation); the intent is marked done by the journal flush at close.
	completeAt, committedAt, doneAt := 1<<30, 1<<30, 1<<30
	for _, op := range clean.Trace() {
		switch {
		case op.Kind == "write" && strings.HasSuffix(op.Path, "/"+store.MetadataFileName):
			completeAt = min(completeAt, op.N)
		case op.Kind == "failpoint:"+catalog.FailpointUpsert:
			committedAt = min(committedAt, op.N)
		case op.Kind == "failpoint:journal.flush":
			doneAt = min(doneAt, op.N)
		}
	}
	if completeAt == 1<<30 || committedAt == 1<<30 || doneAt == 1<<30 || cuts < 30 {
		t.Fatalf("unexpected trace (%d ops): %v", cuts, clean.Trace())
	}

	cc := fsxtest.Count(t, "version-write", "cut")
	for _, k := range fsxtest.Cuts(0, cuts, 2, fsxtest.Around(completeAt, committedAt, doneAt)...) {
		cc.Check()
		crashed, rolled := sc.setup(t), sc.setup(t)
		var trace []fsx.Op
		for _, r := range []*repo.Repo{crashed, rolled} {
			f := fsx.NewFault(fsx.Real()).CrashAfter(k)
			err := sc.write(r, f)
			switch {
			case err != nil && !fsx.IsCrash(err):
				t.Fatalf("cut %d: want a crash, got %v", k, err)
			case err == nil && k < committedAt:
				// Only what follows the catalog commit (the done mark, the
				// holder record, swamp's lock) may fail without failing
				// the write: the version is durable and visible by then.
				t.Fatalf("cut %d: the write reported success before its catalog commit", k)
			}
			trace = f.Trace()
		}
		at := "nothing"
		if k > 0 {
			at = trace[k-1].String()
		}

		wantForward := k >= completeAt
		wantBackward := k >= doneAt
		for _, c := range []struct {
			r        *repo.Repo
			rollback bool
			wantNew  bool
		}{{crashed, false, wantForward}, {rolled, true, wantBackward}} {
			var prev fsxtest.Tree
			for round := 1; round <= 2; round++ {
				if _, err := recover.Run(ctx, c.r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: c.rollback}); err != nil {
					t.Fatalf("cut %d (after %s): recover (rollback=%v) round %d: %v", k, at, c.rollback, round, err)
				}
				where := fmt.Sprintf("cut %d (after %s), rollback=%v, round %d", k, at, c.rollback, round)
				checkOutcome(t, where, sc, c.r, c.wantNew)
				got := crashTree(t, c.r)
				want := initial
				if c.wantNew {
					want = final
				}
				if d := fsxtest.Diff(want, got); len(d) > 0 {
					t.Fatalf("%s: tree is neither the old nor the new one as expected (new=%v):\n%s", where, c.wantNew, strings.Join(d, "\n"))
				}
				if prev != nil {
					if d := fsxtest.Diff(prev, got); len(d) > 0 {
						t.Fatalf("%s: the second recovery changed the tree:\n%s", where, strings.Join(d, "\n"))
					}
				}
				prev = got
			}
			if n := openIntentCount(t, c.r); n != 0 {
				t.Fatalf("cut %d: %d intents still open after recovery", k, n)
			}
		}
		cc.Recovered()
	}
	t.Logf("%s: %d of %d cut points recovered forward and backward, twice each (version complete from op %d, intent done from op %d)",
		sc, cuts+1, cuts+1, completeAt, doneAt)
}

// checkOutcome verifies what a reader sees: `latest`, the bytes it leads
// to, the catalog's latest row, no staging directory.
func checkOutcome(t *testing.T, where string, sc *crashScenario, r *repo.Repo, wantNew bool) {
	t.Helper()
	itemDir := filepath.Join(r.DataRoot, "command", "shell", crashModel, "result")
	var wantVersion int64
	var wantBytes []byte
	switch {
	case wantNew && sc.existing:
		wantVersion, wantBytes = 2, crashPayload
	case wantNew:
		wantVersion, wantBytes = 1, crashPayload
	case sc.existing:
		wantVersion, wantBytes = 1, crashOldPayload
	}

	latest, err := os.ReadFile(filepath.Join(itemDir, "latest"))
	switch {
	case wantVersion == 0:
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%s: the new item must not exist, but latest reads %q (%v)", where, latest, err)
		}
	case err != nil || string(latest) != strconv.FormatInt(wantVersion, 10):
		t.Fatalf("%s: latest = %q (%v), want %d", where, latest, err, wantVersion)
	default:
		f, _, err := store.ReadContent(fsx.Real(), itemDir, wantVersion)
		if err != nil {
			t.Fatalf("%s: latest names version %d, which is not readable: %v", where, wantVersion, err)
		}
		got, err := io.ReadAll(f)
		f.Close()
		if err != nil || !bytes.Equal(got, wantBytes) {
			t.Fatalf("%s: version %d holds %d bytes (%v), want the %d written", where, wantVersion, len(got), err, len(wantBytes))
		}
	}

	var catLatest int64
	var rows int
	if ok, _ := fsx.Exists(fsx.Real(), r.CatalogPath); ok {
		c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
		if err != nil && !catalogMissing(err) {
			t.Fatalf("%s: catalog: %v", where, err)
		}
		if err == nil {
			key := catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: crashAddr.Type, ModelID: crashAddr.ModelID, DataName: crashAddr.DataName}
			if row, ok, err := c.LatestRow(context.Background(), key); err != nil {
				t.Fatalf("%s: %v", where, err)
			} else if ok {
				catLatest = row.Version
				if wantNew && (row.Size != int64(len(crashPayload)) || row.ID != "22222222-2222-4222-8222-222222222222") {
					t.Fatalf("%s: catalog row of the new version is wrong: %+v", where, row)
				}
			}
			all, _ := c.Rows(context.Background(), r.Namespace)
			rows = len(all)
			c.Close()
		}
	}
	if catLatest != wantVersion || int64(rows) != wantVersion {
		t.Fatalf("%s: catalog latest row %d with %d rows, want version %d", where, catLatest, rows, wantVersion)
	}

	_ = filepath.WalkDir(r.DataRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".swampj-stage-") {
			t.Fatalf("%s: staging directory left: %s", where, p)
		}
		return nil
	})
}

func catalogMissing(err error) bool {
	var m *catalog.MissingError
	return errors.As(err, &m)
}

func openIntentCount(t *testing.T, r *repo.Repo) int {
	t.Helper()
	if ok, _ := fsx.Exists(fsx.Real(), r.JournalPath); !ok {
		return 0
	}
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	open, err := j.OpenIntents()
	if err != nil {
		t.Fatal(err)
	}
	return len(open)
}

// crashTree is the repo tree without what legitimately differs between a
// crashed and a clean run: the journal, the catalog files (checked by
// query instead), swamp's lock file and its temp files, and the model
// directories the lock protocol creates before the intent.
func crashTree(t *testing.T, r *repo.Repo) fsxtest.Tree {
	t.Helper()
	modelRel := filepath.ToSlash(filepath.Join(".swamp", "data", "command", "shell", crashModel))
	tree := fsxtest.Snapshot(t, r.Dir, func(rel string) bool {
		base := filepath.Base(rel)
		return fsxtest.SkipJournal(rel) || strings.HasPrefix(base, "_catalog.db") || base == ".lock" ||
			(filepath.Dir(rel) == modelRel && strings.HasSuffix(base, ".tmp"))
	})
	for _, p := range []string{".swamp", ".swamp/data", ".swamp/data/command", ".swamp/data/command/shell", modelRel} {
		delete(tree, p)
	}
	return tree
}

// TestWriteCrashDuringRecovery goes two levels deep: the write is cut at
// every point after its intent is journaled, then the recovery of that
// crash is itself cut at every operation it issues, then a last recovery
// runs. The outcome must be the one a single recovery gives: the new
// version iff it was complete at the first cut, readable, with the catalog
// agreeing and nothing left behind.
func TestWriteCrashDuringRecovery(t *testing.T) {
	for _, sc := range []*crashScenario{{existing: true, stream: true}, {existing: true}} {
		t.Run(sc.String(), func(t *testing.T) {
			if testing.Short() && !sc.stream {
				t.Skip("the stdin scenario covers the same steps plus the self-verifying ones")
			}
			t.Parallel()
			ctx := context.Background()
			probe := sc.setup(t)
			clean := fsx.NewFault(fsx.Real())
			if err := sc.write(probe, clean); err != nil {
				t.Fatal(err)
			}
			final := crashTree(t, probe)
			beginAt, completeAt, cuts := 1<<30, 1<<30, clean.Ops()
			for _, op := range clean.Trace() {
				switch {
				case op.Kind == "failpoint:journal.begin":
					beginAt = min(beginAt, op.N)
				case op.Kind == "write" && strings.HasSuffix(op.Path, "/"+store.MetadataFileName):
					completeAt = min(completeAt, op.N)
				}
			}
			initial := crashTree(t, sc.setup(t))
			total := 0
			cc := fsxtest.Count(t, "version-write", "recovery-crash")
			// Every pair in the crash recipe's full mode; otherwise a sample
			// of both levels that keeps the cuts around the version's
			// completion.
			for _, k := range fsxtest.Cuts(beginAt, cuts-1, 3, fsxtest.Around(completeAt)...) {
				// How many operations does recovering this crash take?
				r := sc.setup(t)
				if err := sc.write(r, fsx.NewFault(fsx.Real()).CrashAfter(k)); !fsx.IsCrash(err) && err != nil {
					t.Fatalf("cut %d: %v", k, err)
				}
				rf := fsx.NewFault(fsx.Real())
				if _, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{FS: rf, JournalLockTimeout: time.Second}}); err != nil {
					t.Fatalf("cut %d: recover: %v", k, err)
				}
				for _, j := range fsxtest.Cuts(0, rf.Ops()-1, 3) {
					cc.Check()
					r := sc.setup(t)
					if err := sc.write(r, fsx.NewFault(fsx.Real()).CrashAfter(k)); !fsx.IsCrash(err) && err != nil {
						t.Fatalf("cut %d: %v", k, err)
					}
					_, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{FS: fsx.NewFault(fsx.Real()).CrashAfter(j), JournalLockTimeout: time.Second}})
					if err != nil && !fsx.IsCrash(err) {
						t.Fatalf("cut %d, recovery cut %d: %v", k, j, err)
					}
					if _, err := recover.Run(ctx, r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
						t.Fatalf("cut %d, recovery cut %d: final recover: %v", k, j, err)
					}
					where := fmt.Sprintf("cut %d, recovery cut %d", k, j)
					wantNew := k >= completeAt
					checkOutcome(t, where, sc, r, wantNew)
					want := initial
					if wantNew {
						want = final
					}
					if d := fsxtest.Diff(want, crashTree(t, r)); len(d) > 0 {
						t.Fatalf("%s: tree:\n%s", where, strings.Join(d, "\n"))
					}
					if n := openIntentCount(t, r); n != 0 {
						t.Fatalf("%s: %d intents open", where, n)
					}
					total++
					cc.Recovered()
				}
			}
			t.Logf("%s: %d (write cut, recovery cut) pairs recovered", sc, total)
		})
	}
}
