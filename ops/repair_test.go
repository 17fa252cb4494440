package ops_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/internal/protocol"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"

	_ "modernc.org/sqlite" // raw SQL to give a test catalog the swamp-format §11 column
)

// Fixtures of the doctor tests: real files, a real catalog, a real journal.
// Helper names start with "dr" so they cannot collide with other tests of
// package ops_test.

const (
	drType  = "@acme/scanner"
	drModel = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"
)

// drNow is the fixed clock of every doctor run, so the quarantine path is
// known: .swampj-quarantine/20261022T021804Z.
func drNow() time.Time { return time.Date(2026, 10, 22, 2, 18, 4, 0, time.UTC) }

const drStamp = "20261022T021804Z"

// drVer is one version of a fixture item.
type drVer struct {
	n     int64
	empty bool   // #3955: raw and metadata.yaml both zero bytes, same mtime
	job   string // workflow-step output of job/step when set
	step  string
}

type drItem struct {
	name     string
	versions []drVer
	latest   string // content of `latest`
}

type drSpec struct {
	config  string // .swamp.yaml; "" is a solo default repo
	stepCol bool   // the catalog has is_step_latest (swamp-format §11)
	items   []drItem
}

// drContent is a version's raw payload.
func drContent(name string, v int64) []byte { return fmt.Appendf(nil, `{"item":%q,"n":%d}`, name, v) }

// drMeta is the metadata swamp writes for a version (and what its catalog
// row was built from, before a crash emptied the files).
func drMeta(name string, v drVer) *meta.Metadata {
	raw := drContent(name, v.n)
	sum := sha256.Sum256(raw)
	size := int64(len(raw))
	m := &meta.Metadata{
		ID: fmt.Sprintf("7d3f2c1e-9a4b-4c2d-8e1f-%012d", v.n), Name: name, Version: v.n,
		ContentType: "application/json", Lifetime: "infinite", GarbageCollection: meta.GarbageCollection{N: 10},
		Tags:      meta.Tags{{Key: "type", Value: "resource"}, {Key: "specName", Value: name}, {Key: "modelName", Value: "scanner"}},
		Owner:     meta.Owner{OwnerType: "model-method", OwnerRef: drModel},
		CreatedAt: fmt.Sprintf("2026-10-22T01:00:%02d.000Z", v.n),
		Size:      &size, Checksum: hex.EncodeToString(sum[:]),
	}
	if v.step != "" {
		m.Owner = meta.Owner{OwnerType: "workflow-step", OwnerRef: drModel, WorkflowName: "nightly", JobName: v.job, StepName: v.step, Source: "step-output"}
		m.Tags = append(m.Tags, meta.Tag{Key: "source", Value: "step-output"}, meta.Tag{Key: "workflow", Value: "nightly"},
			meta.Tag{Key: "job", Value: v.job}, meta.Tag{Key: "step", Value: v.step})
	}
	return m
}

func drEnv(string) string { return "" }

// drBuild makes the repo of spec in root: files, `latest`, and a catalog
// whose rows were written in version order by write-through, the way swamp
// left them before the crash (rows for the emptied versions included).
func drBuild(t testing.TB, root string, spec drSpec) *repo.Repo {
	t.Helper()
	cfg := spec.config
	if cfg == "" {
		cfg = "swampVersion: test\n"
	}
	drWrite(t, filepath.Join(root, ".swamp.yaml"), []byte(cfg))
	r, err := repo.Load(fsx.Real(), root, drEnv)
	if err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 10, 22, 1, 59, 0, 0, time.UTC)
	var rows []catalog.Row
	for _, it := range spec.items {
		dir := drItemDir(r, it.name)
		for _, v := range it.versions {
			m := drMeta(it.name, v)
			vdir := filepath.Join(dir, strconv.FormatInt(v.n, 10))
			if v.empty {
				for _, f := range []string{"raw", "metadata.yaml"} {
					drWrite(t, filepath.Join(vdir, f), nil)
					if err := os.Chtimes(filepath.Join(vdir, f), mtime, mtime); err != nil {
						t.Fatal(err)
					}
				}
			} else {
				data, err := meta.Encode(m)
				if err != nil {
					t.Fatal(err)
				}
				drWrite(t, filepath.Join(vdir, "raw"), drContent(it.name, v.n))
				drWrite(t, filepath.Join(vdir, "metadata.yaml"), data)
			}
			row, err := catalogrow.FromMeta(r.Namespace, drType, drModel, m)
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, row)
		}
		if it.latest != "" {
			drWrite(t, filepath.Join(dir, "latest"), []byte(it.latest))
		}
	}
	if len(rows) > 0 {
		drCatalog(t, r, spec.stepCol, rows)
	}
	return r
}

// drCatalog creates the catalog (with the swamp-format §11 column if asked) and writes
// rows one write-through at a time, as swamp does (swamp-format §3.5).
func drCatalog(t testing.TB, r *repo.Repo, stepCol bool, rows []catalog.Row) {
	t.Helper()
	ctx := context.Background()
	c, err := catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if stepCol {
		c.Close()
		db, err := sql.Open("sqlite", "file:"+r.CatalogPath)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`ALTER TABLE catalog ADD COLUMN is_step_latest INTEGER NOT NULL DEFAULT 0`); err != nil {
			t.Fatal(err)
		}
		db.Close()
		if c, err = catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{}); err != nil {
			t.Fatal(err)
		}
		if !c.HasStepLatest() {
			t.Fatal("the catalog did not take the is_step_latest column")
		}
	}
	defer c.Close()
	for _, row := range rows {
		if err := c.UpsertNewVersion(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
}

func drItemDir(r *repo.Repo, name string) string {
	return filepath.Join(r.DataRoot, filepath.FromSlash(drType), drModel, name)
}

func drWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// drRows renders the catalog's rows of the repo namespace in rowid order as
// "name/v<version>:<is_latest><is_step_latest>".
func drRows(t testing.TB, r *repo.Repo) []string {
	t.Helper()
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Rows(context.Background(), r.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, row := range rows {
		out = append(out, fmt.Sprintf("%s/v%d:%d%d", row.DataName, row.Version, drBit(row.IsLatest), drBit(row.IsStepLatest)))
	}
	return out
}

// drRowsFull renders every column of every row of the repo namespace, in
// rowid order: what the crash tests compare the catalog by.
func drRowsFull(t testing.TB, r *repo.Repo) []string {
	t.Helper()
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Rows(context.Background(), r.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, row := range rows {
		out = append(out, fmt.Sprintf("%+v", row))
	}
	return out
}

func drBit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// drLockTemp is the hidden temp file swamp's lock protocol links from.
var drLockTemp = regexp.MustCompile(`^\.[0-9a-f]{32}\.tmp$`)

// drSkip leaves out of tree comparisons what is not data: the journal (and
// its holder and creation files), the catalog (compared row by row
// instead: its bytes change with every checkpoint), and swamp's per-model
// lock file and its link temp, which a crashed process leaves behind and
// the next acquirer takes over (the lock is stale once its pid is gone).
func drSkip(r *repo.Repo) func(string) bool {
	modelDir := filepath.ToSlash(drRel(r.Dir, filepath.Join(r.DataRoot, filepath.FromSlash(drType), drModel)))
	return func(rel string) bool {
		base, dir := filepath.Base(rel), filepath.ToSlash(filepath.Dir(rel))
		switch {
		case strings.HasPrefix(rel, ".swamp/_journal.db"), strings.HasPrefix(rel, ".swamp/._journal.db"):
			return true
		case strings.HasPrefix(rel, ".swamp/data/_catalog.db"):
			return true
		case base == ".lock" && !strings.HasPrefix(rel, ".swamp/.swampj-quarantine/"), dir == modelDir && drLockTemp.MatchString(base):
			return true
		}
		return false
	}
}

func drRel(base, p string) string {
	rel, err := filepath.Rel(base, p)
	if err != nil {
		panic(err)
	}
	return rel
}

// drCodes lists "code@version/status" of every finding, sorted.
func drCodes(rep *doctor.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		out = append(out, fmt.Sprintf("%s@%d/%s", f.Code, f.Version, f.Status))
	}
	sort.Strings(out)
	return out
}

func drWant(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot  %q\nwant %q", what, got, want)
	}
}

func drRead(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// the #3955 item: versions 1..3 readable, 4 and 5 zero-byte, latest = 5.
func dr3955() drItem {
	return drItem{name: "result", latest: "5", versions: []drVer{{n: 1}, {n: 2}, {n: 3}, {n: 4, empty: true}, {n: 5, empty: true}}}
}

// a workflow-step item: steps scan and lint alternate; the last two
// versions (lint 4, scan 5) were emptied.
func drWorkflowItem() drItem {
	return drItem{name: "report", latest: "5", versions: []drVer{
		{n: 1, job: "build", step: "scan"}, {n: 2, job: "build", step: "lint"}, {n: 3, job: "build", step: "scan"},
		{n: 4, job: "build", step: "lint", empty: true}, {n: 5, job: "build", step: "scan", empty: true},
	}}
}

// TestDoctor3955 reproduces issue #3955 and its manual recovery, done by
// the doctor: detect (exit 1 at the CLI), preview, repair, check again.
func TestDoctor3955(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{dr3955()}})
	item := drItemDir(r, "result")
	skip := drSkip(r)
	start := fsxtest.Snapshot(t, r.Dir, skip)
	startRows := drRows(t, r)
	drWant(t, "fixture rows", startRows, []string{"result/v1:00", "result/v2:00", "result/v3:00", "result/v4:00", "result/v5:10"})

	// Detection: every symptom of the report, and nothing changed.
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "findings", drCodes(rep), []string{
		"catalog_latest_wrong@3/found", "catalog_row_unreadable@4/found", "catalog_row_unreadable@5/found",
		"latest_unreadable@5/found", "version_unreadable@4/found", "version_unreadable@5/found",
	})
	if rep.Remaining != 6 || rep.Clean() || rep.Items != 1 || rep.Versions != 5 {
		t.Fatalf("report: %+v", rep)
	}
	for _, f := range rep.Findings {
		if f.Item != drType+"/"+drModel+"/result" || f.Message == "" || f.Fix == "" || f.Path == "" {
			t.Fatalf("finding lacks a field: %+v", f)
		}
		if f.Code == doctor.CodeVersionUnreadable && !strings.Contains(f.Message, "zero bytes") {
			t.Fatalf("a #3955 version must be reported as zero bytes: %+v", f)
		}
	}
	// Preview: the plan, still nothing changed.
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(r.Base, ".swampj-quarantine", drStamp, "_solo", filepath.FromSlash(drType), drModel, "result")
	if len(rep.Moves) != 2 || rep.Moves[0].To != filepath.Join(q, "4") || rep.Moves[1].To != filepath.Join(q, "5") || rep.Remaining != 6 {
		t.Fatalf("preview: %+v", rep)
	}
	for _, f := range rep.Findings {
		if f.Status != doctor.StatusWouldRepair {
			t.Fatalf("preview status: %+v", f)
		}
	}
	if d := fsxtest.Diff(start, fsxtest.Snapshot(t, r.Dir, skip)); len(d) > 0 {
		t.Fatalf("check and preview changed the tree: %v", d)
	}
	drWant(t, "rows after preview", drRows(t, r), startRows)

	// Repair.
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Clean() || rep.IntentID == 0 || len(rep.Moves) != 2 {
		t.Fatalf("repair: %+v", rep)
	}
	for _, f := range rep.Findings {
		if f.Status != doctor.StatusRepaired {
			t.Fatalf("not repaired: %+v", f)
		}
	}
	// Versions 4 and 5 are in quarantine byte for byte (zero bytes kept),
	// with the `latest` they were reached through.
	for _, v := range []string{"4", "5"} {
		if _, err := os.Stat(filepath.Join(item, v)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("version %s still in the data root: %v", v, err)
		}
		for _, f := range []string{"raw", "metadata.yaml"} {
			fi, err := os.Stat(filepath.Join(q, v, f))
			if err != nil || fi.Size() != 0 {
				t.Fatalf("quarantined %s/%s: %v %v", v, f, fi, err)
			}
		}
	}
	if got := drRead(t, filepath.Join(q, "latest")); got != "5" {
		t.Fatalf("old latest kept in quarantine: %q", got)
	}
	if got := drRead(t, filepath.Join(item, "latest")); got != "3" {
		t.Fatalf("latest = %q, want 3", got)
	}
	drWant(t, "rows after repair", drRows(t, r), []string{"result/v1:00", "result/v2:00", "result/v3:10"})
	// What `swampj data get` does: latest, then the content, checked.
	p, err := store.ReadLatest(fsx.Real(), item)
	if err != nil || p.Version != 3 {
		t.Fatalf("latest after repair: %+v %v", p, err)
	}
	f, _, err := store.ReadContent(fsx.Real(), item, p.Version)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, drContent("result", 3)) {
		t.Fatalf("data get after repair: %q %v", got, err)
	}
	// Every byte that was there is still there, somewhere.
	drNothingLost(t, start, fsxtest.Snapshot(t, r.Dir, skip))

	// A second doctor finds nothing; a second repair has nothing to do.
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow})
	if err != nil || !rep.Clean() || len(rep.Findings) != 0 {
		t.Fatalf("second check: %+v %v", rep, err)
	}
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() || rep.IntentID != 0 {
		t.Fatalf("second repair: %+v %v", rep, err)
	}
}

// drNothingLost checks that every file of before (by content) still exists
// in after, as often as before: nothing was deleted, only moved.
func drNothingLost(t testing.TB, before, after fsxtest.Tree) {
	t.Helper()
	have := map[string]int{}
	for _, e := range after.Files() {
		have[e.Content]++
	}
	for p, e := range before.Files() {
		if have[e.Content] == 0 {
			t.Fatalf("the content of %s (%s) is gone", p, e.Content)
		}
		have[e.Content]--
	}
}

// TestDoctorWorkflowStepGroups: a workflow-step item whose steps keep their
// own latest rows. With the swamp-format §11 column, is_latest goes to the highest
// readable version and is_step_latest to the highest remaining version of
// each (workflow, job, step) group, as the report's manual recovery did;
// without it, is_latest is per step_name (swamp-format §3.5).
func TestDoctorWorkflowStepGroups(t *testing.T) {
	for _, tc := range []struct {
		name          string
		stepCol       bool
		before, after []string
	}{
		{"is_step_latest", true,
			[]string{"report/v1:00", "report/v2:00", "report/v3:00", "report/v4:01", "report/v5:11"},
			[]string{"report/v1:00", "report/v2:01", "report/v3:11"}},
		{"step_name scoped is_latest", false,
			[]string{"report/v1:00", "report/v2:00", "report/v3:00", "report/v4:10", "report/v5:10"},
			[]string{"report/v1:00", "report/v2:10", "report/v3:10"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := drBuild(t, t.TempDir(), drSpec{stepCol: tc.stepCol, items: []drItem{drWorkflowItem()}})
			drWant(t, "fixture rows", drRows(t, r), tc.before)
			rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow})
			if err != nil {
				t.Fatal(err)
			}
			if rep.StepLatestColumn != tc.stepCol || rep.Remaining != 6 {
				t.Fatalf("check: %+v", rep)
			}
			rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
			if err != nil || !rep.Clean() {
				t.Fatalf("repair: %+v %v", rep, err)
			}
			drWant(t, "rows after repair", drRows(t, r), tc.after)
			if got := drRead(t, filepath.Join(drItemDir(r, "report"), "latest")); got != "3" {
				t.Fatalf("latest = %q", got)
			}
			if rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow}); err != nil || !rep.Clean() {
				t.Fatalf("second check: %+v %v", rep, err)
			}
		})
	}
}

// TestDoctorNoReadableVersionLeft: when every version is unreadable, the
// versions and `latest` go to quarantine and the item's rows go.
func TestDoctorNoReadableVersionLeft(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{
		dr3955(),
		{name: "state", latest: "1", versions: []drVer{{n: 1, empty: true}}},
	}})
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	item := drItemDir(r, "state")
	ents, err := os.ReadDir(item)
	if err != nil || len(ents) != 0 {
		t.Fatalf("the item directory should be left empty: %v %v", ents, err)
	}
	q := filepath.Join(r.Base, ".swampj-quarantine", drStamp, "_solo", filepath.FromSlash(drType), drModel, "state")
	if got := drRead(t, filepath.Join(q, "latest")); got != "1" {
		t.Fatalf("latest must be moved into quarantine: %q", got)
	}
	drWant(t, "rows", drRows(t, r), []string{"result/v1:00", "result/v2:00", "result/v3:10"})
	if rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow}); err != nil || !rep.Clean() {
		t.Fatalf("second check: %+v %v", rep, err)
	}
}

// TestDoctorSkipsBusyModel: a live per-model lock (a swamp writer at work)
// keeps the doctor's hands off that model; it says so and changes nothing.
func TestDoctorSkipsBusyModel(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{dr3955()}})
	skip := drSkip(r)
	start := fsxtest.Snapshot(t, r.Dir, skip)
	held, err := lock.Acquire(ctx, fsx.Real(), lock.ModelPath(r.Base, r.Namespace, drType, drModel), lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: 300 * time.Millisecond, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Remaining != 6 || !rep.OnlySkipped() || rep.IntentID != 0 {
		t.Fatalf("busy model: %+v", rep)
	}
	for _, f := range rep.Findings {
		if f.Status != doctor.StatusSkipped || !strings.Contains(f.Reason, "lock is busy") {
			t.Fatalf("finding must be skipped for the busy lock: %+v", f)
		}
	}
	if d := fsxtest.Diff(start, fsxtest.Snapshot(t, r.Dir, skip)); len(d) > 0 {
		t.Fatalf("a busy model was changed: %v", d)
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() {
		t.Fatalf("after the lock is released: %+v %v", rep, err)
	}
	if _, err := os.Stat(lock.ModelPath(r.Base, r.Namespace, drType, drModel)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the doctor must release the model lock: %v", err)
	}
}

// TestDoctorStagingAndCatalogCopies: in a namespaced repo, a staging
// directory no intent owns and the catalog copies an older swamp moved into
// {base}/{ns}/data go to quarantine; a staging directory an open intent owns
// is left to `swampj recover`, and the repair refuses until then.
func TestDoctorStagingAndCatalogCopies(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	r := drBuild(t, root, drSpec{
		config: "datastore:\n  type: filesystem\n  path: .swamp\n  namespace: infra\n",
		items:  []drItem{{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}}}},
	})
	if r.Namespace != "infra" || r.DataRoot != filepath.Join(root, ".swamp", "infra", "data") {
		t.Fatalf("fixture repo: %+v", r)
	}
	item := drItemDir(r, "result")
	leftover := filepath.Join(item, ".swampj-stage-3-a1b2c3")
	owned := filepath.Join(item, ".swampj-stage-4-d4e5f6")
	drWrite(t, filepath.Join(leftover, "raw"), []byte(`{"half":`))
	drWrite(t, filepath.Join(owned, "raw"), []byte(`{"busy":`))
	copies := filepath.Join(r.Base, "infra", "data")
	drWrite(t, filepath.Join(copies, "_catalog.db"), []byte("old catalog"))
	drWrite(t, filepath.Join(copies, "_catalog.db-wal"), []byte("old wal"))

	// An interrupted write owns the second staging directory.
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(&journal.Intent{Kind: "test", Summary: "interrupted write", Steps: []journal.Step{
		{Kind: protocol.KindStage, Path: owned, To: filepath.Join(item, "4")}}}); err != nil {
		t.Fatal(err)
	}
	j.Abandon()

	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "findings", drCodes(rep), []string{"catalog_copy@0/found", "open_intent@0/found", "staging_leftover@0/found"}) // a confirmed repair finishes it first
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeStagingLeftover && f.Path != leftover {
			t.Fatalf("the owned staging directory must not be reported: %+v", f)
		}
	}
	// A confirmed repair finishes the interrupted intent first (its stage
	// cannot be redone from the journal, so recovery rolls it back and
	// removes the owned staging directory), then repairs the rest.
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	if _, err := os.Stat(owned); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("recovery before the repair should have removed the owned staging directory: %v", err)
	}
	q := filepath.Join(r.Base, ".swampj-quarantine", drStamp, "infra")
	if got := drRead(t, filepath.Join(q, filepath.FromSlash(drType), drModel, "result", ".swampj-stage-3-a1b2c3", "raw")); got != `{"half":` {
		t.Fatalf("staging directory in quarantine: %q", got)
	}
	if drRead(t, filepath.Join(q, "_catalog.db")) != "old catalog" || drRead(t, filepath.Join(q, "_catalog.db-wal")) != "old wal" {
		t.Fatal("catalog copies must move together into quarantine")
	}
	if _, err := os.Stat(r.CatalogPath); err != nil {
		t.Fatalf("the live catalog must stay: %v", err)
	}
	if rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow}); err != nil || !rep.Clean() {
		t.Fatalf("second check: %+v %v", rep, err)
	}
}

// drEIO is the real disk, except that opening one path fails with EIO.
type drEIO struct {
	fsx.FS
	path string
}

func (f drEIO) Open(name string) (fsx.File, error) {
	if name == f.path {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return f.FS.Open(name)
}

// TestDoctorLeavesUnreadableFilesAlone: an I/O error says nothing about the
// bytes, so the item is reported and not touched.
func TestDoctorLeavesUnreadableFilesAlone(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{dr3955()}})
	fsys := drEIO{FS: fsx.Real(), path: filepath.Join(drItemDir(r, "result"), "2", "metadata.yaml")}
	skip := drSkip(r)
	start := fsxtest.Snapshot(t, r.Dir, skip)
	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsys}, Repair: true, Confirm: true, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	if rep.IntentID != 0 || rep.Remaining != 8 {
		t.Fatalf("report: %+v", rep)
	}
	for _, f := range rep.Findings {
		if f.Status != doctor.StatusManual || !strings.Contains(f.Fix, "cannot be read") {
			t.Fatalf("finding: %+v", f)
		}
	}
	if d := fsxtest.Diff(start, fsxtest.Snapshot(t, r.Dir, skip)); len(d) > 0 {
		t.Fatalf("changed: %v", d)
	}
	drWant(t, "rows", drRows(t, r), []string{"result/v1:00", "result/v2:00", "result/v3:00", "result/v4:00", "result/v5:10"})
}

// TestDoctorCleanRepo: nothing to find, nothing created (no journal).
func TestDoctorCleanRepo(t *testing.T) {
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}}}}})
	rep, err := doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{FS: fsx.Real()}})
	if err != nil || !rep.Clean() || len(rep.Findings) != 0 || rep.Items != 1 {
		t.Fatalf("%+v %v", rep, err)
	}
	if _, err := os.Stat(r.JournalPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a check must not create the journal: %v", err)
	}
}

// TestDoctorCatalogOnlyFixes: the disk is fine, the catalog is not. A
// backfill marked version 3 latest although `latest` says 2 (version 3 is
// an uncommitted deferred write, swamp-format §9.8), and rows remain for an item that is
// gone from disk. The repair fixes the flags as write-through would and
// removes the orphan rows; the files are not touched.
func TestDoctorCatalogOnlyFixes(t *testing.T) {
	ctx := context.Background()
	r := drBuild(t, t.TempDir(), drSpec{items: []drItem{
		{name: "result", latest: "2", versions: []drVer{{n: 1}, {n: 2}, {n: 3}}},
		{name: "ghost", latest: "1", versions: []drVer{{n: 1}}},
	}})
	if err := os.RemoveAll(drItemDir(r, "ghost")); err != nil {
		t.Fatal(err)
	}
	drWant(t, "fixture rows", drRows(t, r), []string{"result/v1:00", "result/v2:00", "result/v3:10", "ghost/v1:10"})
	skip := drSkip(r)
	start := fsxtest.Snapshot(t, r.Dir, skip)

	rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow})
	if err != nil {
		t.Fatal(err)
	}
	drWant(t, "findings", drCodes(rep), []string{"catalog_latest_wrong@2/found", "catalog_row_unreadable@1/found"})
	rep, err = doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Repair: true, Confirm: true, Now: drNow})
	if err != nil || !rep.Clean() || rep.IntentID == 0 || len(rep.Moves) != 0 {
		t.Fatalf("repair: %+v %v", rep, err)
	}
	drWant(t, "rows after repair", drRows(t, r), []string{"result/v1:00", "result/v3:00", "result/v2:10"})
	if d := fsxtest.Diff(start, fsxtest.Snapshot(t, r.Dir, skip)); len(d) > 0 {
		t.Fatalf("a catalog-only repair changed files: %v", d)
	}
	if rep, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{FS: fsx.Real()}, Now: drNow}); err != nil || !rep.Clean() {
		t.Fatalf("second check: %+v %v", rep, err)
	}
}
