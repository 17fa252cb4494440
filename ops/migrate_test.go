package ops_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/recover"
)

var migCtx = context.Background()

const (
	migNS     = "half-ns"
	migRepoID = "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c"
)

// ---- fixtures: a default-layout repo (datastore base = {repo}/.swamp)

// migDataFiles is the content of a small datastore, keyed by path relative to
// the datastore base (or to {base}/{ns} once namespaced).
func migDataFiles() map[string]string {
	return map[string]string{
		"data/command/shell/m1/out/1/raw":           "hello\n",
		"data/command/shell/m1/out/1/metadata.yaml": "version: 1\n",
		"data/command/shell/m1/out/2/raw":           "hello again\n",
		"data/command/shell/m1/out/2/metadata.yaml": "version: 2\n",
		"data/command/shell/m1/out/latest":          "2",
		"data/command/shell/m2/log/1/raw":           "log\n",
		"data/command/shell/m2/log/1/metadata.yaml": "version: 1\n",
		"data/command/shell/m2/log/latest":          "1",
		"outputs/run-1/output.json":                 `{"ok":true}`,
		"outputs/run-1/extra/notes.txt":             "notes",
		"workflow-runs/wf/run-1.yaml":               "status: done\n",
		"audit/2026-08-01.jsonl":                    `{"e":1}` + "\n",
	}
}

// migConfig is .swamp.yaml for a repo at dir, namespaced when ns != "".
func migConfig(dir, ns string) string {
	s := "swampVersion: test\nrepoId: " + migRepoID + "\n"
	if ns != "" {
		s += "datastore:\n  type: filesystem\n  path: " + filepath.Join(dir, ".swamp") + "\n  namespace: " + ns + "\n"
	}
	return s
}

type migFixture struct {
	nsLayout     bool   // data under .swamp/{ns}/ (else the solo layout)
	catalogStamp string // namespace of the catalog rows; "-" for no catalog
	// alsoStamped: the catalog also holds a row of another item under each
	// of these stamps (a destination stamp that has rows before the run).
	alsoStamped []string
	secrets     bool // a .swamp/secrets key (moved into the namespace when nsLayout, as older swamp did)
	oldCopies   bool // catalog copies an older swamp carried into .swamp/{ns}/data
	manifest    bool // .swamp/{ns}/.namespace.json
	extra       map[string]string
}

// build writes the migFixture into a fresh repo directory and returns it.
func (f migFixture) build(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	f.buildAt(t, dir)
	return dir
}

func (f migFixture) buildAt(t testing.TB, dir string) {
	files := map[string]string{".swamp.yaml": migConfig(dir, migNS)}
	prefix := ".swamp/"
	if f.nsLayout {
		prefix = ".swamp/" + migNS + "/"
	}
	for p, c := range migDataFiles() {
		files[prefix+p] = c
	}
	if f.secrets {
		files[prefix+"secrets/vault.key"] = "secret"
	}
	if f.manifest {
		files[".swamp/"+migNS+"/.namespace.json"] = string(repo.WriteManifestBytes(migNS, migRepoID, time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)))
	}
	if f.oldCopies {
		files[".swamp/"+migNS+"/data/_catalog.db"] = "old catalog copy"
		files[".swamp/"+migNS+"/data/_catalog.db-wal"] = "old wal"
		files[".swamp/"+migNS+"/data/_catalog.db-shm"] = "old shm"
	}
	for p, c := range f.extra {
		files[p] = c
	}
	fsxtest.WriteFiles(t, dir, files)
	// swamp creates .swamp/.locks on its first structural command; a lock
	// file inside it is the only trace a crashed holder leaves there.
	if err := os.MkdirAll(filepath.Join(dir, ".swamp", ".locks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if f.catalogStamp != "-" {
		if err := os.MkdirAll(filepath.Join(dir, ".swamp", "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".swamp", "data", "_catalog.db"), migCatalogBytes(t, f.catalogStamp, f.alsoStamped...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var migCatalogCache sync.Map

// migCatalogBytes is a real catalog (catalog.Open + two items, three rows)
// whose rows carry stamp, built once per stamp and copied into fixtures.
func migCatalogBytes(t testing.TB, stamp string, also ...string) []byte {
	cacheKey := strings.Join(append([]string{stamp}, also...), "\x00")
	if b, ok := migCatalogCache.Load(cacheKey); ok {
		return b.([]byte)
	}
	path := filepath.Join(t.TempDir(), "_catalog.db")
	c, err := catalog.Open(migCtx, fsx.Real(), path, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := func(model, name string, v int64) catalog.Row {
		return catalog.Row{Namespace: stamp, TypeNormalized: "command/shell", ModelID: model, DataName: name, ID: fmt.Sprintf("%s-%s-%d", model, name, v),
			Version: v, ModelName: model, ContentType: "text/plain", Lifetime: "infinite", OwnerType: "model-method",
			CreatedAt: fmt.Sprintf("2026-08-01T12:00:0%d.000Z", v), Tags: "{}"}
	}
	rows := []catalog.Row{row("m1", "out", 1), row("m1", "out", 2), row("m2", "log", 1)}
	for _, ns := range also {
		r := row("m9", "other", 1)
		r.Namespace, r.ID = ns, "m9-other-1-"+ns
		rows = append(rows, r)
	}
	if err := c.UpsertVersions(migCtx, rows); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Fatalf("catalog migFixture left a non-empty WAL; copying the database alone would lose rows")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	migCatalogCache.Store(cacheKey, b)
	return b
}

// migCatalogRows renders every row of the repo's catalog, per namespace in
// rowid order: the catalog compared by content, not by bytes.
func migCatalogRows(t testing.TB, dir string) []string {
	t.Helper()
	path := filepath.Join(dir, ".swamp", "data", "_catalog.db")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	c, err := catalog.Open(migCtx, fsx.Real(), path, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nss, err := c.Namespaces(migCtx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ns := range nss {
		rows, err := c.Rows(migCtx, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%+v", r))
		}
	}
	return out
}

// migSkipInfra leaves out of tree snapshots what is not datastore content: the
// journal, lock files (a crashed holder leaves its own behind, and the
// next acquirer removes it as stale), and the live catalog with its
// sidecars, which migCatalogRows compares by content instead.
func migSkipInfra(rel string) bool {
	return fsxtest.SkipJournal(rel) || strings.HasPrefix(rel, ".swamp/.locks/") ||
		strings.HasPrefix(rel, ".swamp/data/_catalog.db") || migNewerGlobalLock(rel)
}

// migNewerGlobalLock: newer swamp's global lock of a namespace,
// .swamp/{ns}/.datastore.lock, which swampj takes beside 06b6147's,
// and the temp file a crash can leave beside it while creating it.
func migNewerGlobalLock(rel string) bool {
	dir, base := filepath.Split(rel)
	return strings.Count(dir, "/") == 2 && strings.HasPrefix(dir, ".swamp/") &&
		(base == ".datastore.lock" || drLockTemp.MatchString(base))
}

func migLoad(t testing.TB, dir string) *repo.Repo {
	t.Helper()
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runMigrate(t testing.TB, dir string, fsys fsx.FS, o migrate.MigrateOptions) (*migrate.MigrateResult, error) {
	t.Helper()
	if o.JournalLockTimeout == 0 {
		o.JournalLockTimeout = 2 * time.Second
	}
	if o.SwampLockTimeout == 0 {
		o.SwampLockTimeout = 2 * time.Second
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	o.FS = fsys
	return migrate.Migrate(migCtx, migLoad(t, dir), o)
}

func mustRunMigrate(t testing.TB, dir string, fsys fsx.FS, o migrate.MigrateOptions) *migrate.MigrateResult {
	t.Helper()
	res, err := runMigrate(t, dir, fsys, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// migRelocated maps a snapshot of data files under one prefix to another.
func migRelocated(tree fsxtest.Tree, from, to string) fsxtest.Tree {
	out := fsxtest.Tree{}
	for p, e := range tree {
		if strings.HasPrefix(p, from) {
			p = to + strings.TrimPrefix(p, from)
		}
		out[p] = e
	}
	return out
}

func migNoDiff(t testing.TB, what string, want, got fsxtest.Tree) {
	t.Helper()
	if d := fsxtest.Diff(want, got); len(d) > 0 {
		t.Fatalf("%s:\n%s", what, strings.Join(d, "\n"))
	}
}

func migExists(path string) bool { _, err := os.Lstat(path); return err == nil }

// ---- tests

// TestForwardThenReverseOnADefaultRepo is report #3316 at the API level:
// the catalog stays at .swamp/data, secrets are never namespaced, a second
// run has nothing to do, and the reverse run is not blocked by the
// catalog's -wal/-shm.
func TestForwardThenReverseOnADefaultRepo(t *testing.T) {
	dir := migFixture{catalogStamp: "", secrets: true, manifest: true}.build(t)
	start := fsxtest.Snapshot(t, dir, migSkipInfra)
	startRows := migCatalogRows(t, dir)

	pv := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{}).Preview
	var subdirs []string
	for _, d := range pv.Directories {
		subdirs = append(subdirs, d.Subdir)
	}
	if got := strings.Join(subdirs, ","); got != "data,outputs,workflow-runs,audit" {
		t.Fatalf("forward preview moves %s", got)
	}
	if pv.TotalFiles != int64(len(migDataFiles())) || pv.Confirm || pv.NothingToDo || pv.Steps == 0 {
		t.Fatalf("preview: %+v", pv)
	}
	if d := fsxtest.Diff(start, fsxtest.Snapshot(t, dir, migSkipInfra)); len(d) > 0 {
		t.Fatalf("a preview changed the tree: %v", d)
	}

	res := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	done := res.Completed
	if done.NothingToDo || done.IntentID == 0 || !done.CatalogRestamped || len(done.MigratedDirectories) != 4 {
		t.Fatalf("completed: %+v", done)
	}
	if done.Steps != res.Preview.Steps || done.DirFsyncs != res.Preview.Fsyncs {
		t.Fatalf("the plan promised %d steps / %d fsyncs, the run made %d / %d", res.Preview.Steps, res.Preview.Fsyncs, done.Steps, done.DirFsyncs)
	}
	want := migRelocated(start, ".swamp/", ".swamp/"+migNS+"/")
	for p, e := range start { // what stays: secrets and the namespace directory itself
		if strings.HasPrefix(p, ".swamp/secrets") || strings.HasPrefix(p, ".swamp/"+migNS) || p == ".swamp" || p == ".swamp/.locks" || p == ".swamp.yaml" {
			want[p] = e
			delete(want, ".swamp/"+migNS+"/"+strings.TrimPrefix(p, ".swamp/"))
		}
	}
	want[".swamp/data"] = fsxtest.Entry{Kind: "dir"} // keeps the catalog
	migNoDiff(t, "after forward migration", want, fsxtest.Snapshot(t, dir, migSkipInfra))
	if !migExists(filepath.Join(dir, ".swamp", "data", "_catalog.db")) {
		t.Fatal("the catalog moved")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".swamp", migNS, "*", "_catalog*")); len(m) > 0 {
		t.Fatalf("catalog files under the namespace: %v", m)
	}
	for _, row := range migCatalogRows(t, dir) {
		if !strings.Contains(row, "Namespace:"+migNS+" ") {
			t.Fatalf("row not restamped: %s", row)
		}
	}

	for _, confirm := range []bool{false, true} {
		again := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: confirm})
		if !again.Preview.NothingToDo || (confirm && !again.Completed.NothingToDo) {
			t.Fatalf("second run (confirm=%v) found work: %+v", confirm, again.Preview)
		}
	}

	// A second connection gives the catalog its -wal and -shm.
	reader, err := catalog.Open(migCtx, fsx.Real(), filepath.Join(dir, ".swamp", "data", "_catalog.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reader.Rows(migCtx, migNS); err != nil {
		t.Fatal(err)
	}
	if !migExists(filepath.Join(dir, ".swamp", "data", "_catalog.db-shm")) || !migExists(filepath.Join(dir, ".swamp", "data", "_catalog.db-wal")) {
		t.Fatal("expected -wal and -shm beside the open catalog")
	}
	back := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Reverse: true, Confirm: true}).Completed
	_ = reader.Close()
	if back.NothingToDo || len(back.MigratedDirectories) != 4 {
		t.Fatalf("reverse: %+v", back)
	}
	migNoDiff(t, "after the round trip", start, fsxtest.Snapshot(t, dir, migSkipInfra))
	if got := migCatalogRows(t, dir); strings.Join(got, "\n") != strings.Join(startRows, "\n") {
		t.Fatalf("catalog rows after the round trip:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(startRows, "\n"))
	}
}

// TestUnsetMigrateIsOneIntent: the data comes back, the namespace leaves
// .swamp.yaml and the manifest goes, in one journaled intent.
func TestUnsetMigrateIsOneIntent(t *testing.T) {
	dir := migFixture{nsLayout: true, catalogStamp: migNS, manifest: true}.build(t)
	res := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Unset: true, Confirm: true}).Completed
	if !res.NamespaceUnset || res.Reverse != true || len(res.MigratedDirectories) != 4 {
		t.Fatalf("%+v", res)
	}
	if r := migLoad(t, dir); r.Namespace != "" {
		t.Fatalf("namespace still configured: %q", r.Namespace)
	}
	// The manifest goes; the emptied directory stays, empty: it held newer
	// swamp's global lock of the namespace, {ns}/.datastore.lock, for the
	// whole run (swamp-format §13.2).
	if ents, err := os.ReadDir(filepath.Join(dir, ".swamp", migNS)); err != nil || len(ents) != 0 {
		t.Fatalf("the namespace directory must be left empty (manifest and newer swamp's lock gone): %v %v", ents, err)
	}
	for p := range migDataFiles() {
		if !migExists(filepath.Join(dir, ".swamp", p)) {
			t.Fatalf("%s did not come back", p)
		}
	}
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	all, _ := j.List(true)
	if len(all) != 1 || all[0].Kind != "unset-migrate" || all[0].Status != journal.StatusDone {
		t.Fatalf("want one done unset-migrate intent, got %+v", all)
	}
}

// TestForwardMergeRefusesEveryDifferingPath: where the namespace already
// holds a subdirectory, identical files are dropped from the source, and
// any differing file refuses the whole run, listing every path, before
// anything is touched.
func TestForwardMergeRefusesEveryDifferingPath(t *testing.T) {
	ns := ".swamp/" + migNS + "/"
	dir := migFixture{catalogStamp: "", manifest: true, extra: map[string]string{
		ns + "outputs/run-1/output.json":     `{"ok":false}`, // differs
		ns + "outputs/run-1/extra/notes.txt": "notes",        // identical
		ns + "outputs/run-0/old.json":        "older run",    // only at the destination
		ns + "audit/2026-08-01.jsonl":        "different\n",  // differs
	}}.build(t)
	// A refused run changes no data; swampj's own journal may be created,
	// and the catalog's WAL, kept between processes.
	skip := func(rel string) bool { return fsxtest.SkipJournal(rel) || fsxtest.SkipCatalogSidecars(rel) }
	before := fsxtest.Snapshot(t, dir, skip)
	_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	var ce *migrate.CollisionError
	if !errors.As(err, &ce) || ce.Code() != "collision" {
		t.Fatalf("want a collision error, got %v", err)
	}
	if got := strings.Join(ce.Paths, ","); got != "audit/2026-08-01.jsonl,outputs/run-1/output.json" {
		t.Fatalf("collision paths: %s", got)
	}
	migNoDiff(t, "a refused run must change nothing", before, fsxtest.Snapshot(t, dir, skip))

	// Resolve the two clashes; the identical file is then dropped, not kept twice.
	for _, p := range []string{ns + "outputs/run-1/output.json", ns + "audit/2026-08-01.jsonl"} {
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			t.Fatal(err)
		}
	}
	done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed
	if done.NothingToDo {
		t.Fatal("nothing moved")
	}
	for _, p := range []string{"outputs/run-1/output.json", "outputs/run-1/extra/notes.txt", "outputs/run-0/old.json", "audit/2026-08-01.jsonl"} {
		if !migExists(filepath.Join(dir, ns, p)) {
			t.Fatalf("%s missing in the namespace", p)
		}
	}
	for _, p := range []string{"outputs", "audit"} {
		if migExists(filepath.Join(dir, ".swamp", p)) {
			t.Fatalf(".swamp/%s must be gone once merged", p)
		}
	}
}

// TestReverseMergesEntryByEntry (#3316 case C): after
// ordinary use the solo path holds data of its own — swamp writes each
// method run's .log under the un-namespaced outputs/ — and a reverse run
// merges into it as a forward one does: identical files are dropped from
// the namespace, files only there are moved in, the solo files stay. Only
// a real clash (same path, different bytes; a file facing a directory)
// refuses the run, naming every clashing path, and nothing is touched.
func TestReverseMergesEntryByEntry(t *testing.T) {
	fix := migFixture{nsLayout: true, catalogStamp: migNS, manifest: true, extra: map[string]string{
		".swamp/data/_catalog.db-wal":                  "wal",
		".swamp/data/_catalog.db-shm":                  "shm",
		".swamp/" + migNS + "/vault-bundles/b.js":      "bundle",
		".swamp/vault-bundles/b.js":                    "bundle", // identical: dropped from the namespace
		".swamp/" + migNS + "/outputs/run-2/x.json":    "x",
		".swamp/outputs/cmd/execute/m1-2026.log":       "log swamp wrote at the solo path",
		".swamp/" + migNS + "/audit/2026-08-02.jsonl":  "same",
		".swamp/audit/2026-08-02.jsonl":                "same", // identical: dropped
		".swamp/audit/stray.jsonl":                     "solo only",
		".swamp/data/command/shell/m3/log/1/raw":       "solo model",
		".swamp/data/command/shell/m3/log/latest":      "1",
		".swamp/" + migNS + "/workflow-runs/wf/x.yaml": "ns",
	}}

	t.Run("clashes refuse up front, every path listed", func(t *testing.T) {
		dir := fix.build(t)
		fsxtest.WriteFiles(t, dir, map[string]string{
			".swamp/audit/2026-08-01.jsonl":        "differs from the namespace copy",
			".swamp/workflow-runs/wf/run-1.yaml":   "differs too",
			".swamp/outputs/run-1/extra/notes.txt": "and this",
		})
		before := fsxtest.Snapshot(t, dir, fsxtest.SkipJournal)
		_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Reverse: true, Confirm: true})
		var ce *migrate.CollisionError
		if !errors.As(err, &ce) || ce.Code() != "collision" {
			t.Fatalf("want a collision, got %v", err)
		}
		want := []string{"audit/2026-08-01.jsonl", "outputs/run-1/extra/notes.txt", "workflow-runs/wf/run-1.yaml"}
		if strings.Join(ce.Paths, ",") != strings.Join(want, ",") {
			t.Fatalf("collision paths %v, want %v", ce.Paths, want)
		}
		migNoDiff(t, "a refused reverse run must change nothing", before, fsxtest.Snapshot(t, dir, fsxtest.SkipJournal))
	})

	t.Run("merged", func(t *testing.T) {
		dir := fix.build(t)
		mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Reverse: true, Confirm: true})
		want := map[string]string{
			"outputs/run-2/x.json":             "x",
			"outputs/run-1/output.json":        `{"ok":true}`,
			"outputs/cmd/execute/m1-2026.log":  "log swamp wrote at the solo path",
			"vault-bundles/b.js":               "bundle",
			"audit/2026-08-01.jsonl":           `{"e":1}` + "\n",
			"audit/2026-08-02.jsonl":           "same",
			"audit/stray.jsonl":                "solo only",
			"data/command/shell/m1/out/latest": "2",
			"data/command/shell/m3/log/1/raw":  "solo model",
			"workflow-runs/wf/x.yaml":          "ns",
		}
		for p, c := range want {
			got, err := os.ReadFile(filepath.Join(dir, ".swamp", p))
			if err != nil || string(got) != c {
				t.Fatalf("%s: %q, %v; want %q", p, got, err, c)
			}
		}
		for _, p := range []string{"vault-bundles", "audit", "outputs", "data", "workflow-runs"} {
			if migExists(filepath.Join(dir, ".swamp", migNS, p)) {
				t.Fatalf("%s must be gone from the namespace once merged", p)
			}
		}
		if done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Reverse: true, Confirm: true}).Completed; !done.NothingToDo {
			t.Fatalf("a re-run must find nothing to do: %+v", done)
		}
	})
}

// TestStatesOlderSwampLeaves: catalog copies inside .swamp/{ns}/data and a
// fresh catalog at .swamp/data never block a run in either direction; a
// forward run moves the copies to quarantine (nothing deleted), a reverse
// run leaves them and reports them.
func TestStatesOlderSwampLeaves(t *testing.T) {
	older := migFixture{nsLayout: true, catalogStamp: migNS, secrets: true, oldCopies: true, manifest: true}

	t.Run("fully migrated: nothing to do", func(t *testing.T) {
		dir := older.build(t)
		done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed
		if done.NothingToDo || len(done.MigratedDirectories) != 0 || len(done.Warnings) != 1 || len(done.Warnings[0].Files) != 3 {
			t.Fatalf("%+v", done)
		}
		if q, _ := filepath.Glob(filepath.Join(dir, ".swamp", ".swampj-quarantine", "*", migNS, "data", "_catalog.db*")); len(q) != 3 {
			t.Fatalf("the three catalog copies are not in quarantine: %v", q)
		}
		if migExists(filepath.Join(dir, ".swamp", migNS, "data", "_catalog.db")) || !migExists(filepath.Join(dir, ".swamp", "data", "_catalog.db")) {
			t.Fatal("the copy must leave the namespace, the live catalog stay")
		}
		if again := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed; !again.NothingToDo {
			t.Fatalf("a second run must find nothing to do: %+v", again)
		}
	})

	t.Run("half migrated: the rest moves", func(t *testing.T) {
		dir := older.build(t)
		for _, sub := range []string{"outputs", "workflow-runs"} {
			if err := os.Rename(filepath.Join(dir, ".swamp", migNS, sub), filepath.Join(dir, ".swamp", sub)); err != nil {
				t.Fatal(err)
			}
		}
		done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed
		if got := strings.Join(done.MigratedDirectories, ","); got != "outputs,workflow-runs" || len(done.Warnings) != 1 {
			t.Fatalf("%+v", done)
		}
		if migExists(filepath.Join(dir, ".swamp", migNS, "data", "_catalog.db")) || !migExists(filepath.Join(dir, ".swamp", "data", "_catalog.db")) {
			t.Fatal("the copy must go to quarantine, the live catalog stay where it is")
		}
	})

	t.Run("reverse brings everything back, secrets included", func(t *testing.T) {
		dir := older.build(t)
		done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Reverse: true, Confirm: true}).Completed
		if !strings.Contains(strings.Join(done.MigratedDirectories, ","), "secrets") || len(done.Warnings) != 1 {
			t.Fatalf("%+v", done)
		}
		if !migExists(filepath.Join(dir, ".swamp", "secrets", "vault.key")) || !migExists(filepath.Join(dir, ".swamp", "data", "command")) {
			t.Fatal("data did not come back")
		}
		ents, _ := os.ReadDir(filepath.Join(dir, ".swamp", migNS, "data"))
		if len(ents) != 3 {
			t.Fatalf("only the three catalog copies may stay in the namespace's data: %v", ents)
		}
	})
}

// TestFailedStepThenRerun is case B of #3316: a plain file where a
// directory must go makes the run fail part way; the intent stays open, the
// error names what moved and what failed; once the file is gone a re-run
// finishes the interrupted intent and there is nothing more to do.
func TestFailedStepThenRerun(t *testing.T) {
	dir := migFixture{catalogStamp: "", manifest: true, extra: map[string]string{".swamp/" + migNS + "/outputs": "obstacle"}}.build(t)
	_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true})
	var fe *migrate.MigrateFailedError
	if !errors.As(err, &fe) || fe.Failed != "outputs" || strings.Join(fe.Succeeded, ",") != "data" || fe.IntentID == 0 {
		t.Fatalf("want a partial failure at outputs after data, got %#v", err)
	}
	// Both ways out, in words; the CLI adds the commands (fe.Rerun).
	for _, hint := range []string{"run the same migration again", "roll it back"} {
		if !strings.Contains(err.Error(), hint) {
			t.Fatalf("the error must name %q: %v", hint, err)
		}
	}
	if fe.Rerun != report.RemedyMigrate || strings.Contains(err.Error(), "'swampj ") {
		t.Fatalf("rerun %q; the message must not name CLI commands: %v", fe.Rerun, err)
	}
	if err := os.Remove(filepath.Join(dir, ".swamp", migNS, "outputs")); err != nil {
		t.Fatal(err)
	}
	done := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed
	if len(done.Recovered) != 1 || done.Recovered[0].Status != journal.StatusDone || done.NothingToDo {
		t.Fatalf("the re-run must finish the open intent: %+v", done)
	}
	for p := range migDataFiles() {
		if !migExists(filepath.Join(dir, ".swamp", migNS, p)) {
			t.Fatalf("%s was not moved", p)
		}
	}
	if again := mustRunMigrate(t, dir, nil, migrate.MigrateOptions{Confirm: true}).Completed; !again.NothingToDo {
		t.Fatalf("third run: %+v", again)
	}
}

// TestExdevAtRenameLeavesIntentForRollback: an EXDEV injected on a rename
// stops the run (errors.Is EXDEV, so the CLI says cross_device) and
// `recover --rollback` restores the start exactly.
func TestExdevAtRenameLeavesIntentForRollback(t *testing.T) {
	dir := migFixture{catalogStamp: "", manifest: true}.build(t)
	start := fsxtest.Snapshot(t, dir, migSkipInfra)
	// The journal exists already, so the injected EXDEV hits the data renames.
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	f := fsx.NewFault(fsx.Real())
	f.FailKind("rename-noreplace", syscall.EXDEV)
	_, err = runMigrate(t, dir, f, migrate.MigrateOptions{Confirm: true})
	var fe *migrate.MigrateFailedError
	if !errors.As(err, &fe) || !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("want a failed migration carrying EXDEV, got %v", err)
	}
	if _, err := recover.Run(migCtx, dir, recover.Options{Rollback: true}); err != nil {
		t.Fatal(err)
	}
	migNoDiff(t, "after rollback", start, fsxtest.Snapshot(t, dir, migSkipInfra))
}

// TestBadInputChangesNothing: a missing base, a symlink leaving the base
// and no namespace are refused before any file — journal or lock included —
// is created. (A device boundary: migrate_dev_linux_test.go.)
func TestBadInputChangesNothing(t *testing.T) {
	check := func(t *testing.T, dir string, o migrate.MigrateOptions, want func(error) bool) {
		t.Helper()
		before := fsxtest.Snapshot(t, dir, nil)
		_, err := runMigrate(t, dir, nil, o)
		if err == nil || !want(err) {
			t.Fatalf("unexpected error: %v", err)
		}
		migNoDiff(t, "refused run", before, fsxtest.Snapshot(t, dir, nil))
	}
	t.Run("symlink leaving the base", func(t *testing.T) {
		dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
		elsewhere := t.TempDir()
		if err := os.Rename(filepath.Join(dir, ".swamp", "outputs"), filepath.Join(elsewhere, "outputs")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(elsewhere, "outputs"), filepath.Join(dir, ".swamp", "outputs")); err != nil {
			t.Fatal(err)
		}
		check(t, dir, migrate.MigrateOptions{Confirm: true}, func(err error) bool {
			var se *migrate.SymlinkedPathError
			return errors.As(err, &se) && se.Outside && se.Code() == "outside_base"
		})
	})
	t.Run("missing base", func(t *testing.T) {
		dir := t.TempDir()
		fsxtest.WriteFiles(t, dir, map[string]string{".swamp.yaml": "datastore:\n  type: filesystem\n  path: ./nowhere\n  namespace: x\n"})
		check(t, dir, migrate.MigrateOptions{Confirm: true}, func(err error) bool {
			var be *migrate.BaseMissingError
			return errors.As(err, &be)
		})
	})
	t.Run("no namespace", func(t *testing.T) {
		dir := migFixture{catalogStamp: "-"}.build(t)
		fsxtest.WriteFiles(t, dir, map[string]string{".swamp.yaml": migConfig(dir, "")})
		check(t, dir, migrate.MigrateOptions{Confirm: true}, func(err error) bool {
			var ne *migrate.NoNamespaceError
			return errors.As(err, &ne)
		})
	})
}

// TestLocks: a live holder of swamp's global lock, or of a per-model lock,
// makes the run time out (the CLI exits 75) and touch nothing.
func TestLocks(t *testing.T) {
	fresh := func(path string) {
		// A live process other than this one (a record with this
		// process's pid that it does not hold counts as left behind).
		info := lock.Info{Holder: "test@host", Hostname: migHostname(t), Pid: os.Getppid(), AcquiredAt: time.Now().UTC(), TTLMs: 30000, Nonce: "n-1"}
		fsxtest.WriteFiles(t, filepath.Dir(path), map[string]string{filepath.Base(path): string(info.Encode())})
	}
	t.Run("global", func(t *testing.T) {
		dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
		fresh(lock.GlobalPath(filepath.Join(dir, ".swamp"), migNS))
		_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Common: host.Common{SwampLockTimeout: 300 * time.Millisecond}, Confirm: true})
		var te *lock.TimeoutError
		if !errors.As(err, &te) || te.Holder == nil || te.Holder.Pid != os.Getppid() {
			t.Fatalf("want a lock timeout naming pid %d, got %v", os.Getppid(), err)
		}
	})
	t.Run("per-model", func(t *testing.T) {
		dir := migFixture{catalogStamp: "-", manifest: true}.build(t)
		fresh(lock.ModelPath(filepath.Join(dir, ".swamp"), "", "command/shell", "m1"))
		start := time.Now()
		_, err := runMigrate(t, dir, nil, migrate.MigrateOptions{Common: host.Common{SwampLockTimeout: 300 * time.Millisecond}, Confirm: true})
		if !errors.Is(err, lock.ErrTimeout) || !strings.Contains(err.Error(), "m1") {
			t.Fatalf("want a model-lock timeout, got %v", err)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the wait must be bounded by the lock timeout")
		}
		if !migExists(filepath.Join(dir, ".swamp", "data", "command", "shell", "m1")) {
			t.Fatal("nothing may move while a model is locked")
		}
	})
}

func migHostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestSetUnsetList covers the namespace commands that move no data.
func TestSetUnsetList(t *testing.T) {
	dir := t.TempDir()
	fsxtest.WriteFiles(t, dir, map[string]string{".swamp.yaml": migConfig(dir, ""), ".swamp/data/x": "1"})
	o := migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second}, Getenv: func(string) string { return "" }}
	res, err := migrate.SetNamespace(migCtx, migLoad(t, dir), "infra", o)
	if err != nil || res.IntentID == 0 || res.WarningRemedy != report.RemedyMigrate || !strings.Contains(res.Warning, "namespace migration moves it") {
		t.Fatalf("%+v %v", res, err)
	}
	if r := migLoad(t, dir); r.Namespace != "infra" {
		t.Fatalf("namespace %q", r.Namespace)
	}
	m, ok, err := repo.ReadManifest(fsx.Real(), filepath.Join(dir, ".swamp"), "infra")
	if err != nil || !ok || m.RepoID != migRepoID {
		t.Fatalf("manifest: %+v %v %v", m, ok, err)
	}
	if !migExists(filepath.Join(dir, ".swamp", "data", "x")) {
		t.Fatal("set must not move data")
	}
	if _, err := migrate.SetNamespace(migCtx, migLoad(t, dir), "infra", o); !errors.As(err, new(*migrate.AlreadySetError)) {
		t.Fatalf("want already set, got %v", err)
	}
	if _, err := migrate.SetNamespace(migCtx, migLoad(t, dir), "Bad_Slug", o); !errors.Is(err, repo.ErrInvalidNamespace) {
		t.Fatalf("want invalid namespace, got %v", err)
	}
	fsxtest.WriteFiles(t, dir, map[string]string{".swamp/other/.namespace.json": string(repo.WriteManifestBytes("other", "someone-else", time.Now()))})
	if _, err := migrate.SetNamespace(migCtx, migLoad(t, dir), "other", o); !errors.As(err, new(*migrate.NamespaceTakenError)) {
		t.Fatalf("want namespace taken, got %v", err)
	}
	l, err := migrate.ListNamespaceManifests(migLoad(t, dir), host.Common{})
	if err != nil || len(l.Namespaces) != 2 || !l.Namespaces[0].IsCurrent || l.CurrentNamespace != "infra" {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := migrate.UnsetNamespace(migCtx, migLoad(t, dir), o); !errors.As(err, new(*migrate.MultipleNamespacesError)) {
		t.Fatalf("want multiple namespaces, got %v", err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".swamp", "other")); err != nil {
		t.Fatal(err)
	}
	un, err := migrate.UnsetNamespace(migCtx, migLoad(t, dir), o)
	if err != nil || un.PreviousNamespace != "infra" {
		t.Fatalf("%+v %v", un, err)
	}
	cfg, _ := os.ReadFile(filepath.Join(dir, ".swamp.yaml"))
	if strings.Contains(string(cfg), "namespace") || !strings.Contains(string(cfg), "type: filesystem") {
		t.Fatalf("unset must drop only the namespace key:\n%s", cfg)
	}
	if !migExists(repo.ManifestPath(filepath.Join(dir, ".swamp"), "infra")) {
		t.Fatal("plain unset leaves the manifest")
	}
	if _, err := migrate.UnsetNamespace(migCtx, migLoad(t, dir), o); !errors.As(err, new(*migrate.NoNamespaceError)) {
		t.Fatalf("want no namespace, got %v", err)
	}
}
