package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
)

// End-to-end tests of `swampj datastore namespace …` with the real binary,
// on repos laid out as swamp lays them out, replaying report #3316.

const nsSlug = "half-ns"

// nsData is a small default-layout datastore, relative to .swamp/ (or to
// .swamp/{ns}/ once namespaced).
var nsData = map[string]string{
	"data/command/shell/m1/out/1/raw":           "hi\n",
	"data/command/shell/m1/out/1/metadata.yaml": "version: 1\n",
	"data/command/shell/m1/out/2/raw":           "hi again\n",
	"data/command/shell/m1/out/2/metadata.yaml": "version: 2\n",
	"data/command/shell/m1/out/latest":          "2",
	"outputs/run-1/output.json":                 `{"exitCode":0}`,
	"workflow-runs/wf/run-1.yaml":               "status: done\n",
	"definitions-evaluated/m1.yaml":             "name: m1\n",
	"workflows-evaluated/wf.yaml":               "name: wf\n",
}

// nsRepo builds a default repo (datastore base {repo}/.swamp): data,
// outputs, workflow runs, a secret, and a real catalog with rows.
func nsRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		".swamp.yaml":               "swampVersion: test\nrepoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c\n",
		".swamp/secrets/vault.key":  "secret",
		".swamp/vault-bundles/v.js": "bundle",
	}
	for p, c := range nsData {
		files[".swamp/"+p] = c
	}
	fsxtest.WriteFiles(t, dir, files)
	nsCatalog(t, dir, "")
	return dir
}

// nsOlderSwampRepo is the state an older swamp leaves after `set` and a
// migration: everything (secrets included) under .swamp/{ns}/, the catalog
// and its sidecars carried into .swamp/{ns}/data/, and a fresh catalog
// recreated at .swamp/data/.
func nsOlderSwampRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		".swamp.yaml": fmt.Sprintf("swampVersion: test\nrepoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c\ndatastore:\n  type: filesystem\n  path: %s\n  namespace: %s\n",
			filepath.Join(dir, ".swamp"), nsSlug),
		".swamp/" + nsSlug + "/.namespace.json":      string(repo.WriteManifestBytes(nsSlug, "5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c", time.Now())),
		".swamp/" + nsSlug + "/secrets/vault.key":    "secret",
		".swamp/" + nsSlug + "/data/_catalog.db":     "old catalog",
		".swamp/" + nsSlug + "/data/_catalog.db-wal": "old wal",
		".swamp/" + nsSlug + "/data/_catalog.db-shm": "old shm",
	}
	for p, c := range nsData {
		files[".swamp/"+nsSlug+"/"+p] = c
	}
	fsxtest.WriteFiles(t, dir, files)
	nsCatalog(t, dir, nsSlug)
	return dir
}

func nsCatalog(t *testing.T, dir, stamp string) {
	t.Helper()
	c, err := catalog.Open(context.Background(), fsx.Real(), filepath.Join(dir, ".swamp", "data", "_catalog.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rows []catalog.Row
	for v := int64(1); v <= 2; v++ {
		rows = append(rows, catalog.Row{Namespace: stamp, TypeNormalized: "command/shell", ModelID: "m1", DataName: "out",
			ID: fmt.Sprint("id-", v), Version: v, ContentType: "text/plain", Lifetime: "infinite", OwnerType: "model-method",
			CreatedAt: fmt.Sprintf("2026-08-01T12:00:0%d.000Z", v), Tags: "{}"})
	}
	if err := c.UpsertVersions(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
}

// holdCatalogOpen opens the catalog as a reader would (swamp's `data
// list`), so that -wal and -shm sit beside it while the binary runs.
func nsHoldCatalogOpen(t *testing.T, dir string) {
	t.Helper()
	c, err := catalog.Open(context.Background(), fsx.Real(), filepath.Join(dir, ".swamp", "data", "_catalog.db"), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Rows(context.Background(), nsSlug); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		if !nsExists(dir, ".swamp/data/_catalog.db"+side) {
			t.Fatalf("expected _catalog.db%s beside the open catalog", side)
		}
	}
}

func nsExists(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

// want runs the binary and checks its exit code.
func nsWant(t *testing.T, code int, dir string, args ...string) result {
	t.Helper()
	r := swampj(t, dir, args...)
	if r.code != code {
		t.Fatalf("swampj %s: want exit %d, got %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, r.code, r.stdout, r.stderr)
	}
	return r
}

// catalogFiles lists every catalog file below .swamp, relative.
func nsCatalogFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(filepath.Join(dir, ".swamp"), func(p string, d os.DirEntry, err error) error {
		if err == nil && repo.IsCatalogFile(d.Name()) {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// assertNamespaced checks that every data file sits under .swamp/{ns}/, that
// the catalog stayed at .swamp/data and that no new catalog file appeared
// under the namespace.
func nsAssertNamespaced(t *testing.T, dir string, catalogsInNS int) {
	t.Helper()
	for p := range nsData {
		if !nsExists(dir, ".swamp/"+nsSlug+"/"+p) || nsExists(dir, ".swamp/"+p) {
			t.Fatalf("%s is not (only) in the namespace", p)
		}
	}
	if !nsExists(dir, ".swamp/data/_catalog.db") {
		t.Fatal(".swamp/data/_catalog.db must stay where it is")
	}
	n := 0
	for _, f := range nsCatalogFiles(t, dir) {
		if strings.HasPrefix(f, ".swamp/"+nsSlug+"/") {
			n++
		}
	}
	if n != catalogsInNS {
		t.Fatalf("want %d catalog files under the namespace, got %v", catalogsInNS, nsCatalogFiles(t, dir))
	}
}

func nsAssertSolo(t *testing.T, dir string) {
	t.Helper()
	for p := range nsData {
		if !nsExists(dir, ".swamp/"+p) || nsExists(dir, ".swamp/"+nsSlug+"/"+p) {
			t.Fatalf("%s did not come back to the solo layout", p)
		}
	}
	if !nsExists(dir, ".swamp/secrets/vault.key") || !nsExists(dir, ".swamp/data/_catalog.db") {
		t.Fatal("secrets and the catalog must be at the solo paths")
	}
}

// TestIssue3316CaseA: migrate, then migrate again — preview and confirm —
// with nothing left to move.
func TestIssue3316CaseA(t *testing.T) {
	t.Run("fresh repo", func(t *testing.T) {
		dir := nsRepo(t)
		r := nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
		if !strings.Contains(r.stdout, "migrate --confirm") {
			t.Fatalf("set must say no data moved and suggest migrate: %s", r.stdout)
		}
		nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
		for _, args := range [][]string{{"migrate"}, {"migrate", "--confirm"}} {
			r := nsWant(t, 0, dir, append([]string{"datastore", "namespace"}, args...)...)
			if !strings.Contains(r.stdout, "Nothing to migrate") {
				t.Fatalf("%v: %s", args, r.stdout)
			}
		}
		nsAssertNamespaced(t, dir, 0)
		if !nsExists(dir, ".swamp/secrets/vault.key") || !nsExists(dir, ".swamp/vault-bundles/v.js") {
			t.Fatal("secrets and bundles are never namespaced")
		}
	})
	t.Run("after older swamp", func(t *testing.T) {
		// The catalog copies swamp's own migrate carried into the
		// namespace are moved to quarantine by the first confirmed run
		// (doctor is clean afterwards); later runs have nothing to do.
		dir := nsOlderSwampRepo(t)
		before := nsCatalogFiles(t, dir)
		r := nsWant(t, 0, dir, "datastore", "namespace", "migrate")
		if !strings.Contains(r.stderr, "catalog files") || !strings.Contains(r.stderr, "quarantine") {
			t.Fatalf("the preview must say the catalog copies go to quarantine: %+v", r)
		}
		if got := nsCatalogFiles(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
			t.Fatalf("the preview changed the catalog files: %v -> %v", before, got)
		}
		nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
		nsAssertNamespaced(t, dir, 0)
		quarantined := 0
		for _, f := range nsCatalogFiles(t, dir) {
			if strings.HasPrefix(f, ".swamp/.swampj-quarantine/") && strings.Contains(f, "/"+nsSlug+"/data/") {
				quarantined++
			}
		}
		if quarantined != 3 {
			t.Fatalf("want the 3 catalog copies in quarantine, got %v", nsCatalogFiles(t, dir))
		}
		r = nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
		if !strings.Contains(r.stdout, "Nothing to migrate") {
			t.Fatalf("second run: %+v", r)
		}
	})
}

// TestIssue3316CaseB: a plain file where outputs must go fails the run
// part way; once it is removed, migrate --confirm finishes.
func TestIssue3316CaseB(t *testing.T) {
	t.Run("fresh repo", func(t *testing.T) {
		dir := nsRepo(t)
		nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
		fsxtest.WriteFiles(t, dir, map[string]string{".swamp/" + nsSlug + "/outputs": ""})
		r := nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--confirm")
		for _, s := range []string{"Partially migrated", "Succeeded: definitions-evaluated, workflows-evaluated, data", "Failed: outputs"} {
			if !strings.Contains(r.stdout, s) {
				t.Fatalf("partial report must say %q:\n%s", s, r.stdout)
			}
		}
		for _, s := range []string{"swampj recover --rollback", "migrate --confirm"} {
			if !strings.Contains(r.stderr, s) {
				t.Fatalf("the error must name both ways out (%q): %s", s, r.stderr)
			}
		}
		// The same failure under --json, on a second repo: the partial
		// report on stdout, the error on stderr.
		other := nsRepo(t)
		nsWant(t, 0, other, "datastore", "namespace", "set", nsSlug)
		fsxtest.WriteFiles(t, other, map[string]string{".swamp/" + nsSlug + "/outputs": ""})
		r = nsWant(t, 1, other, "datastore", "namespace", "migrate", "--confirm", "--json")
		var partial struct {
			Succeeded []string `json:"succeededDirectories"`
			Failed    string   `json:"failedDirectory"`
			IntentID  uint64   `json:"intentId"`
			Error     string   `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &partial); err != nil || partial.Failed != "outputs" || partial.IntentID == 0 || partial.Error == "" {
			t.Fatalf("partial JSON: %v %s", err, r.stdout)
		}
		if code := nsErrorCode(t, r.stderr); code != "partial_migration" {
			t.Fatalf("error code %q", code)
		}
		// Re-running with the obstacle still there fails the same way.
		r = nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
		if code := nsErrorCode(t, r.stderr); code != "partial_migration" {
			t.Fatalf("re-run error code %q", code)
		}

		if err := os.Remove(filepath.Join(dir, ".swamp", nsSlug, "outputs")); err != nil {
			t.Fatal(err)
		}
		nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
		nsAssertNamespaced(t, dir, 0)
		nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
	})
	t.Run("half migrated by older swamp", func(t *testing.T) {
		dir := nsOlderSwampRepo(t)
		for _, sub := range []string{"outputs", "workflow-runs"} {
			if err := os.Rename(filepath.Join(dir, ".swamp", nsSlug, sub), filepath.Join(dir, ".swamp", sub)); err != nil {
				t.Fatal(err)
			}
		}
		nsHoldCatalogOpen(t, dir) // `data list` ran once: sidecars at .swamp/data
		r := nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
		var done struct{ MigratedDirectories []string }
		if err := json.Unmarshal([]byte(r.stdout), &done); err != nil || strings.Join(done.MigratedDirectories, ",") != "outputs,workflow-runs" {
			t.Fatalf("%v %s", err, r.stdout)
		}
		nsAssertNamespaced(t, dir, 0) // the copies went to quarantine
	})
}

// TestIssue3316CaseC: reverse after the catalog was read (its -wal and
// -shm present), by unset --migrate and by migrate --reverse.
func TestIssue3316CaseC(t *testing.T) {
	for _, start := range []struct {
		name  string
		build func(t *testing.T) string
	}{
		{"fresh repo", func(t *testing.T) string {
			dir := nsRepo(t)
			nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
			nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm")
			return dir
		}},
		{"after older swamp", nsOlderSwampRepo},
	} {
		t.Run(start.name+"/unset --migrate", func(t *testing.T) {
			dir := start.build(t)
			nsHoldCatalogOpen(t, dir)
			nsWant(t, 0, dir, "datastore", "namespace", "unset", "--migrate")
			if !nsExists(dir, ".swamp/"+nsSlug+"/data/command") {
				t.Fatal("unset --migrate without --confirm must only preview")
			}
			nsWant(t, 0, dir, "datastore", "namespace", "unset", "--migrate", "--confirm")
			nsAssertSolo(t, dir)
			cfg, _ := os.ReadFile(filepath.Join(dir, ".swamp.yaml"))
			if strings.Contains(string(cfg), "namespace") {
				t.Fatalf("namespace still in .swamp.yaml:\n%s", cfg)
			}
			if nsExists(dir, ".swamp/"+nsSlug+"/.namespace.json") {
				t.Fatal("the manifest must be removed")
			}
		})
		t.Run(start.name+"/migrate --reverse", func(t *testing.T) {
			dir := start.build(t)
			nsHoldCatalogOpen(t, dir)
			nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm")
			nsAssertSolo(t, dir)
			r := nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm")
			if !strings.Contains(r.stdout, "Nothing to migrate") {
				t.Fatalf("second reverse run: %s", r.stdout)
			}
		})
	}
}

func nsErrorCode(t *testing.T, stderr string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &e); err != nil || e.Error == "" {
		t.Fatalf("stderr does not end with a JSON error: %q", stderr)
	}
	return e.Code
}

func nsJSONKeys(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, doc)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// TestNamespaceJSONShapes pins the preview and completion documents.
func TestNamespaceJSONShapes(t *testing.T) {
	dir := nsRepo(t)
	r := nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug, "--json")
	if got := nsJSONKeys(t, r.stdout); got != "datastorePath,intentId,namespace,registrationSkipped,warning" {
		t.Fatalf("set JSON keys: %s", got)
	}

	r = nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--json")
	if got := nsJSONKeys(t, r.stdout); got != "confirm,datastorePath,directories,fsyncs,namespace,nothingToDo,reverse,steps,totalBytes,totalFiles" {
		t.Fatalf("preview JSON keys: %s", got)
	}
	var pv struct {
		Directories []map[string]json.RawMessage
		Steps       int
		Fsyncs      int
		TotalFiles  int
	}
	_ = json.Unmarshal([]byte(r.stdout), &pv)
	if len(pv.Directories) == 0 || pv.Steps == 0 || pv.Fsyncs == 0 || pv.TotalFiles != len(nsData) {
		t.Fatalf("preview: %s", r.stdout)
	}
	var dk []string
	for k := range pv.Directories[0] {
		dk = append(dk, k)
	}
	sort.Strings(dk)
	if strings.Join(dk, ",") != "destination,fileCount,source,subdir,totalBytes" {
		t.Fatalf("directory keys: %v", dk)
	}

	r = nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
	if got := nsJSONKeys(t, r.stdout); got != "catalogRestamped,datastorePath,dirFsyncs,intentId,migratedDirectories,namespace,nothingToDo,reverse,steps,totalBytes,totalFiles" {
		t.Fatalf("completion JSON keys: %s", got)
	}
	var done struct {
		Steps, DirFsyncs int
		IntentID         uint64
		NothingToDo      bool
	}
	_ = json.Unmarshal([]byte(r.stdout), &done)
	if done.Steps != pv.Steps || done.DirFsyncs != pv.Fsyncs || done.IntentID == 0 || done.NothingToDo {
		t.Fatalf("the run must make the steps and fsyncs the preview announced (%d, %d): %s", pv.Steps, pv.Fsyncs, r.stdout)
	}
	r = nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
	if !strings.Contains(r.stdout, `"nothingToDo": true`) {
		t.Fatalf("second run: %s", r.stdout)
	}

	r = nsWant(t, 0, dir, "datastore", "namespace", "list", "--json")
	var l struct {
		Namespaces []struct {
			Namespace string
			IsCurrent bool
		}
		CurrentNamespace string
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil || len(l.Namespaces) != 1 || !l.Namespaces[0].IsCurrent || l.CurrentNamespace != nsSlug {
		t.Fatalf("list: %v %s", err, r.stdout)
	}
}

// TestNamespaceRefusals: collisions (every path listed), a reverse
// conflict, bad input — each exit 1 with its code and nothing moved.
func TestNamespaceRefusals(t *testing.T) {
	t.Run("collision", func(t *testing.T) {
		dir := nsRepo(t)
		nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
		fsxtest.WriteFiles(t, dir, map[string]string{
			".swamp/" + nsSlug + "/outputs/run-1/output.json":     "different",
			".swamp/" + nsSlug + "/workflow-runs/wf/run-1.yaml":   "different too",
			".swamp/" + nsSlug + "/data/command/shell/m1/out/1/x": "only here",
		})
		r := nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
		if code := nsErrorCode(t, r.stderr); code != "collision" {
			t.Fatalf("code %q", code)
		}
		for _, p := range []string{"outputs/run-1/output.json", "workflow-runs/wf/run-1.yaml"} {
			if !strings.Contains(r.stderr, p) {
				t.Fatalf("the refusal must list %s: %s", p, r.stderr)
			}
		}
		if !nsExists(dir, ".swamp/data/command/shell/m1/out/latest") {
			t.Fatal("a refused run must move nothing")
		}
	})
	t.Run("reverse collision", func(t *testing.T) {
		// A file only at the solo path is merged around; the same
		// path with other bytes is a collision, listed, nothing moved.
		dir := nsOlderSwampRepo(t)
		fsxtest.WriteFiles(t, dir, map[string]string{
			".swamp/outputs/stray.json":        "{}",
			".swamp/outputs/run-1/output.json": `{"exitCode":1}`,
		})
		r := nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm", "--json")
		if code := nsErrorCode(t, r.stderr); code != "collision" || !strings.Contains(r.stderr, "outputs/run-1/output.json") || strings.Contains(r.stderr, "stray.json") {
			t.Fatalf("%+v", r)
		}
		if !nsExists(dir, ".swamp/"+nsSlug+"/outputs/run-1/output.json") {
			t.Fatal("a refused run must move nothing")
		}
		if err := os.Remove(filepath.Join(dir, ".swamp", "outputs", "run-1", "output.json")); err != nil {
			t.Fatal(err)
		}
		nsWant(t, 0, dir, "datastore", "namespace", "migrate", "--reverse", "--confirm")
		for _, p := range []string{"outputs/stray.json", "outputs/run-1/output.json"} {
			if !nsExists(dir, ".swamp/"+p) {
				t.Fatalf("%s missing after the merge", p)
			}
		}
	})
	t.Run("bad input", func(t *testing.T) {
		dir := nsRepo(t)
		r := nsWant(t, 1, dir, "datastore", "namespace", "set", "Bad_Slug", "--json")
		if code := nsErrorCode(t, r.stderr); code != "invalid_namespace" {
			t.Fatalf("bad slug: %q", code)
		}
		r = nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
		if code := nsErrorCode(t, r.stderr); code != "no_namespace" {
			t.Fatalf("no namespace: %q", code)
		}
		fsxtest.WriteFiles(t, dir, map[string]string{".swamp.yaml": "datastore: [unclosed\n"})
		r = nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
		if code := nsErrorCode(t, r.stderr); code != "config_invalid" {
			t.Fatalf("unparseable .swamp.yaml: %q", code)
		}
		fsxtest.WriteFiles(t, dir, map[string]string{".swamp.yaml": "datastore:\n  type: filesystem\n  path: /nonexistent/base\n  namespace: x\n"})
		r = nsWant(t, 1, dir, "datastore", "namespace", "migrate", "--confirm", "--json")
		if code := nsErrorCode(t, r.stderr); code != "base_missing" {
			t.Fatalf("missing base: %q", code)
		}
		if nsExists(dir, ".swamp/_journal.db") {
			t.Fatal("refused runs must not create the journal")
		}
	})
}

// TestNamespaceMigrateLockTimeout: swamp's global lock held by a live
// process makes migrate exit 75 naming the holder, and move nothing.
func TestNamespaceMigrateLockTimeout(t *testing.T) {
	dir := nsRepo(t)
	nsWant(t, 0, dir, "datastore", "namespace", "set", nsSlug)
	host, _ := os.Hostname()
	held := lock.Info{Holder: "tester@" + host, Hostname: host, Pid: os.Getpid(), AcquiredAt: time.Now().UTC(), TTLMs: 30000, Nonce: "test-nonce"}
	lockPath := lock.GlobalPath(filepath.Join(dir, ".swamp"), nsSlug)
	fsxtest.WriteFiles(t, filepath.Dir(lockPath), map[string]string{filepath.Base(lockPath): string(held.Encode())})

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "datastore", "namespace", "migrate", "--confirm", "--json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWAMP_LOCK_TIMEOUT_MS=300")
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 75 {
		t.Fatalf("want exit 75, got %v\n%s", err, se.String())
	}
	if code := nsErrorCode(t, se.String()); code != "lock_timeout" || !strings.Contains(se.String(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("the error must name the holder: %s", se.String())
	}
	if !nsExists(dir, ".swamp/outputs/run-1/output.json") {
		t.Fatal("nothing may move without the lock")
	}
}
