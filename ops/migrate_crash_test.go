package ops_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/migrate"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/recover"
)

// The crash suite of namespace migration: a forward, a reverse and an
// unset --migrate run are cut after every operation they issue — file ops,
// directory fsyncs, lock files, journal and catalog commits (fsx.Fault
// failpoints) — and each cut is then
//
//   - recovered forward (`swampj recover`, twice): the tree must be the one
//     an uncut run leaves, or the start when the cut came before the intent
//     was journaled;
//   - on a fresh copy cut at the same point (journal steps hold absolute
//     paths), rolled back (`swampj recover --rollback`, twice): the tree
//     must be the start, or the finished tree when the intent was already
//     marked done;
//   - on a third copy, finished by re-running the command itself.
//
// Trees are compared whole, every file by size and SHA-256, so a file lost,
// duplicated or changed shows up; the catalog is compared row by row.

type migCrashScenario struct {
	name string
	fix  migFixture
	opts migrate.MigrateOptions
	// restampOp is the catalog op the intent journals for the restamp
	// ("move-stamp" unless the destination stamp has rows already).
	restampOp string
}

func migCrashScenarios() []migCrashScenario {
	ns := ".swamp/" + migNS + "/"
	return []migCrashScenario{
		{
			// data is emptied around the live catalog, outputs is merged
			// (an identical file dropped, a new entry renamed, the emptied
			// source removed), workflow-runs and audit move whole, secrets
			// stay.
			name: "forward",
			fix: migFixture{catalogStamp: "", secrets: true, manifest: true, extra: map[string]string{
				ns + "outputs/run-1/extra/notes.txt": "notes",
				ns + "outputs/run-0/old.json":        "older run",
			}},
			opts:      migrate.MigrateOptions{Confirm: true},
			restampOp: "move-stamp",
		},
		{
			// Older swamp's layout: secrets and catalog copies inside the
			// namespace; a bundle already at the solo path is merged.
			name: "reverse",
			fix: migFixture{nsLayout: true, catalogStamp: migNS, secrets: true, oldCopies: true, manifest: true, extra: map[string]string{
				ns + "vault-bundles/b.js":   "bundle",
				".swamp/vault-bundles/b.js": "bundle",
			}},
			opts:      migrate.MigrateOptions{Reverse: true, Confirm: true},
			restampOp: "move-stamp",
		},
		{
			// Reverse after ordinary use: the solo path holds files
			// of its own (a method run's .log swamp wrote to the root
			// outputs/, a solo-only data item), so every subdirectory is
			// merged entry by entry: identical files dropped, the rest
			// moved in, the solo files left.
			name: "reverse merge",
			fix: migFixture{nsLayout: true, catalogStamp: migNS, manifest: true, extra: map[string]string{
				".swamp/outputs/cmd/execute/m1.log":       "solo log",
				".swamp/outputs/run-1/output.json":        `{"ok":true}`, // identical to the namespace copy
				".swamp/data/command/shell/m3/log/latest": "1",
				".swamp/audit/2026-08-02.jsonl":           "solo audit",
			}},
			opts:      migrate.MigrateOptions{Reverse: true, Confirm: true},
			restampOp: "move-stamp",
		},
		{
			// Adds the .swamp.yaml edit, the manifest removal and the rmdir of
			// the emptied namespace directory to the same intent.
			name:      "unset --migrate",
			fix:       migFixture{nsLayout: true, catalogStamp: migNS, manifest: true},
			opts:      migrate.MigrateOptions{Unset: true, Confirm: true},
			restampOp: "move-stamp",
		},
		{
			// (Last: other tests pick scenarios by index.) The destination stamp has a row already (a rare catalog):
			// the restamp names its items (keyed "restamp"), and an undo
			// leaves the row that was there before.
			name:      "forward onto stamped rows",
			fix:       migFixture{catalogStamp: "", alsoStamped: []string{migNS}, manifest: true},
			opts:      migrate.MigrateOptions{Confirm: true},
			restampOp: "restamp",
		},
	}
}

func TestMigrateCrashAtEveryCutPoint(t *testing.T) {
	for _, sc := range migCrashScenarios() {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) { migCrashMatrix(t, sc) })
	}
}

// migState is a whole tree plus the catalog's rows.
type migState struct {
	tree fsxtest.Tree
	rows string
}

// migSnapshot records the tree (infrastructure left out, see migSkipInfra)
// with .swamp.yaml recorded by content with the repo path made neutral, and
// the catalog by rows.
func migSnapshot(t *testing.T, dir string) migState {
	t.Helper()
	tree := fsxtest.Snapshot(t, dir, func(rel string) bool { return migSkipInfra(rel) || rel == ".swamp.yaml" })
	cfg, err := os.ReadFile(filepath.Join(dir, ".swamp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tree[".swamp.yaml"] = fsxtest.Entry{Kind: "file", Content: strings.ReplaceAll(string(cfg), dir, "{repo}")}
	return migState{tree: tree, rows: strings.Join(migCatalogRows(t, dir), "\n")}
}

func (s migState) diff(want migState) []string {
	d := fsxtest.Diff(want.tree, s.tree)
	if s.rows != want.rows {
		d = append(d, "catalog rows differ:\n  got  "+strings.ReplaceAll(s.rows, "\n", "\n       ")+"\n  want "+strings.ReplaceAll(want.rows, "\n", "\n       "))
	}
	return d
}

// migCrashRun runs the scenario's command on fsys; a crash is expected.
func migCrashRun(t *testing.T, sc migCrashScenario, dir string, fsys fsx.FS) {
	t.Helper()
	o := sc.opts
	oFS := fsys
	if _, err := runMigrate(t, dir, oFS, o); err != nil && !fsx.IsCrash(err) {
		t.Fatalf("want a crash or success, got %v", err)
	}
}

func (sc migCrashScenario) build(t *testing.T) string {
	dir := fsxtest.ScratchDir(t)
	sc.fix.buildAt(t, dir)
	return dir
}

func migCrashMatrix(t *testing.T, sc migCrashScenario) {
	start := sc.build(t)
	initial := migSnapshot(t, start)
	clean := fsx.NewFault(fsx.Real())
	o := sc.opts
	oFS := clean
	res, err := runMigrate(t, start, oFS, o)
	if err != nil {
		t.Fatal(err)
	}
	if done := res.Completed; done.Steps != res.Preview.Steps || done.DirFsyncs != res.Preview.Fsyncs {
		t.Fatalf("the plan promised %d steps and %d directory fsyncs; the run made %d and %d",
			res.Preview.Steps, res.Preview.Fsyncs, done.Steps, done.DirFsyncs)
	}
	final := migSnapshot(t, start)
	cuts := clean.Ops()
	beginAt, finishAt := migOpIndex(clean, "failpoint:journal.begin"), migOpIndex(clean, "failpoint:journal.flush")
	for _, kind := range []string{"failpoint:journal.begin", "failpoint:journal.flush", "syncdir", "rename-noreplace"} {
		if migOpIndex(clean, kind) > cuts {
			t.Fatalf("the uncut run never issued %s: %v", kind, clean.Trace())
		}
	}
	if sc.opts.Confirm && !strings.Contains(migTraceKinds(clean), "failpoint:catalog.restamp.commit") {
		t.Fatalf("the uncut run never committed the catalog restamp: %s", migTraceKinds(clean))
	}
	if d := final.diff(initial); len(d) == 0 {
		t.Fatal("the uncut run changed nothing")
	}
	migCheckRestampOp(t, start, sc.restampOp)

	cc := fsxtest.Count(t, migProtocolName(sc.name), "cut")
	for k := 0; k <= cuts; k++ {
		cc.Check()
		crashedAt := func(dir string) *fsx.Fault {
			f := fsx.NewFault(fsx.Real()).CrashAfter(k)
			migCrashRun(t, sc, dir, f)
			return f
		}

		// Recover forward, twice.
		dir := sc.build(t)
		f := crashedAt(dir)
		want := final
		if k < beginAt {
			want = initial // cut before the intent was journaled: nothing was done
		}
		for round := 1; round <= 2; round++ {
			if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
				t.Fatalf("cut %d (after %s): recover round %d: %v", k, migLastOp(f), round, err)
			}
			if d := migSnapshot(t, dir).diff(want); len(d) > 0 {
				t.Fatalf("cut %d (after %s): forward recovery round %d:\n%s", k, migLastOp(f), round, strings.Join(d, "\n"))
			}
		}

		// Roll back, twice, on a fresh tree cut at the same point.
		dir = sc.build(t)
		crashedAt(dir)
		want = initial
		if k >= finishAt {
			want = final // the intent was already marked done: nothing to roll back
		}
		for round := 1; round <= 2; round++ {
			if _, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Rollback: true}); err != nil {
				t.Fatalf("cut %d (after %s): rollback round %d: %v", k, migLastOp(f), round, err)
			}
			if d := migSnapshot(t, dir).diff(want); len(d) > 0 {
				t.Fatalf("cut %d (after %s): rollback round %d:\n%s", k, migLastOp(f), round, strings.Join(d, "\n"))
			}
		}

		// Re-run the command on a third copy: it finishes what was cut.
		dir = sc.build(t)
		crashedAt(dir)
		migRemoveDeadLocks(t, dir)
		o := sc.opts
		_, err := runMigrate(t, dir, oFS, o)
		var ne *migrate.NoNamespaceError
		if err != nil && !(sc.opts.Unset && errors.As(err, &ne)) {
			// (An unset whose intent was already marked done leaves no
			// namespace to unset: swamp's error, with the work complete.)
			t.Fatalf("cut %d (after %s): re-run: %v", k, migLastOp(f), err)
		}
		if d := migSnapshot(t, dir).diff(final); len(d) > 0 {
			t.Fatalf("cut %d (after %s): re-run:\n%s", k, migLastOp(f), strings.Join(d, "\n"))
		}
		cc.Recovered()
	}
	t.Logf("%s: %d of %d cut points recovered forward, rolled back and re-run (intent journaled at op %d, marked done at op %d)",
		sc.name, cuts+1, cuts+1, beginAt, finishAt)
}

// migCheckRestampOp checks that the last intent journaled its restamp as
// op, so the cut points above cover that step kind.
func migCheckRestampOp(t *testing.T, dir, op string) {
	t.Helper()
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	all, err := j.List(true)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, in := range all {
		for _, s := range in.Steps {
			if s.Kind != protocol.KindCatalog {
				continue
			}
			var ch struct {
				Op string `json:"op"`
			}
			if err := json.Unmarshal(s.Catalog, &ch); err != nil {
				t.Fatal(err)
			}
			if ch.Op == op {
				return
			}
			found = append(found, ch.Op)
		}
	}
	t.Fatalf("no intent journaled a %q catalog step (found %v)", op, found)
}

// migRemoveDeadLocks removes the lock files a crashed run left. In a real
// crash their pid is dead and the next acquirer removes them as stale; here
// the "dead" process is this test, whose pid lives on.
func migRemoveDeadLocks(t *testing.T, dir string) {
	t.Helper()
	locks, _ := filepath.Glob(filepath.Join(dir, ".swamp", ".locks", "*"))
	for _, l := range locks {
		if err := os.Remove(l); err != nil {
			t.Fatal(err)
		}
	}
}

// migProtocolName is the crash report's name of a migration scenario.
func migProtocolName(scenario string) string {
	switch {
	case strings.HasPrefix(scenario, "reverse"):
		return "reverse"
	case strings.HasPrefix(scenario, "unset"):
		return "unset-migrate"
	}
	return "migrate"
}

func migOpIndex(f *fsx.Fault, kind string) int {
	for _, op := range f.Trace() {
		if op.Kind == kind {
			return op.N
		}
	}
	return 1 << 30
}

func migTraceKinds(f *fsx.Fault) string {
	var kinds []string
	for _, op := range f.Trace() {
		kinds = append(kinds, op.Kind)
	}
	return strings.Join(kinds, " ")
}

func migLastOp(f *fsx.Fault) string {
	tr := f.Trace()
	switch {
	case len(tr) == 0:
		return "nothing"
	case f.Crashed() && len(tr) > 1:
		return tr[len(tr)-2].String()
	case f.Crashed():
		return "nothing"
	}
	return tr[len(tr)-1].String()
}

// TestRecoverMigrationUnderSwampsGlobalLock: a forward migration cut just
// after its first rename is recovered only under swamp's global lock, as
// the migration ran: while a live process holds it, recover times out
// (lock.ErrTimeout) and changes nothing; once it is free, recover finishes
// the migration.
func TestRecoverMigrationUnderSwampsGlobalLock(t *testing.T) {
	sc := migCrashScenarios()[0] // forward
	probe := fsx.NewFault(fsx.Real())
	migCrashRun(t, sc, sc.build(t), probe)
	begin, cut := migOpIndex(probe, "failpoint:journal.begin"), 0
	for _, op := range probe.Trace() {
		if op.Kind == "rename-noreplace" && op.N > begin {
			cut = op.N
			break
		}
	}
	if cut == 0 {
		t.Fatalf("no rename after the intent in the uncut run: %s", migTraceKinds(probe))
	}
	dir := sc.build(t)
	migCrashRun(t, sc, dir, fsx.NewFault(fsx.Real()).CrashAfter(cut))

	r := migLoad(t, dir)
	global := lock.GlobalPath(r.Base, r.Namespace)
	swamp := lock.Info{Holder: "swamp@host", Hostname: migHostname(t), Pid: os.Getppid(), AcquiredAt: time.Now().UTC(), TTLMs: 30000, Nonce: "swamp"}
	if err := os.WriteFile(global, swamp.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := migSnapshot(t, dir)
	_, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{SwampLockTimeout: 200 * time.Millisecond}})
	if !errors.Is(err, lock.ErrTimeout) {
		t.Fatalf("want lock.ErrTimeout while swamp holds the datastore, got %v", err)
	}
	if d := migSnapshot(t, dir).diff(before); len(d) != 0 {
		t.Fatalf("recovery changed the tree under swamp's lock: %v", d)
	}

	if err := os.Remove(global); err != nil {
		t.Fatal(err)
	}
	rep, err := recover.Run(migCtx, dir, recover.Options{Common: host.Common{SwampLockTimeout: time.Second}})
	if err != nil || rep.Finished != 1 {
		t.Fatalf("recovery after the lock is free: %+v, %v", rep, err)
	}
	if _, err := os.Stat(global); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("recovery left swamp's global lock behind: %v", err)
	}
}
