package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogrow"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
)

// End-to-end tests of `swampj doctor` against the real binary. Helper names
// start with "doc" so they cannot collide with other tests of package main.

const (
	docType  = "@acme/scanner"
	docModel = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"
)

// doctorJSON is the part of `doctor --json` the tests read.
type doctorJSON struct {
	Mode       string `json:"mode"`
	Remaining  int    `json:"remaining"`
	IntentID   uint64 `json:"intentId"`
	Quarantine string `json:"quarantine"`
	Moves      []struct{ From, To string }
	Findings   []map[string]any `json:"findings"`
}

func docDecode(t *testing.T, r result) doctorJSON {
	t.Helper()
	var d doctorJSON
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return d
}

func docErrCode(t *testing.T, r result) string {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stderr)), &e); err != nil || e.Error == "" {
		t.Fatalf("stderr is not one JSON error: %q", r.stderr)
	}
	return e.Code
}

// docRepo writes the #3955 item — versions 1..3 readable, 4 and 5 zero
// bytes, latest = 5 — and a catalog holding rows 1..5 with is_latest on 5,
// as swamp's write-through left them.
func docRepo(t *testing.T) (dir, item string) {
	t.Helper()
	dir = newRepo(t)
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	item = filepath.Join(r.DataRoot, filepath.FromSlash(docType), docModel, "result")
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for v := int64(1); v <= 5; v++ {
		raw := fmt.Appendf(nil, `{"n":%d}`, v)
		sum := sha256.Sum256(raw)
		size := int64(len(raw))
		m := &meta.Metadata{
			ID: fmt.Sprintf("7d3f2c1e-9a4b-4c2d-8e1f-%012d", v), Name: "result", Version: v,
			ContentType: "application/json", Lifetime: "infinite", GarbageCollection: meta.GarbageCollection{N: 10},
			Tags:      meta.Tags{{Key: "type", Value: "resource"}, {Key: "specName", Value: "result"}, {Key: "modelName", Value: "scanner"}},
			Owner:     meta.Owner{OwnerType: "model-method", OwnerRef: docModel},
			CreatedAt: fmt.Sprintf("2026-10-22T01:00:%02d.000Z", v), Size: &size, Checksum: hex.EncodeToString(sum[:]),
		}
		vdir := filepath.Join(item, fmt.Sprint(v))
		if v >= 4 {
			fsxtest.WriteFiles(t, vdir, map[string]string{"raw": "", "metadata.yaml": ""})
		} else {
			data, err := meta.Encode(m)
			if err != nil {
				t.Fatal(err)
			}
			fsxtest.WriteFiles(t, vdir, map[string]string{"raw": string(raw), "metadata.yaml": string(data)})
		}
		row, err := catalogrow.FromMeta("", docType, docModel, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.UpsertNewVersion(context.Background(), row); err != nil {
			t.Fatal(err)
		}
	}
	fsxtest.WriteFiles(t, item, map[string]string{"latest": "5"})
	return dir, item
}

// docSkip leaves the journal and the catalog out of tree comparisons.
func docSkip(rel string) bool {
	return strings.HasPrefix(rel, ".swamp/_journal.db") || strings.HasPrefix(rel, ".swamp/data/_catalog.db")
}

func TestDoctorExitCodesAndJSON(t *testing.T) {
	dir, item := docRepo(t)
	start := fsxtest.Snapshot(t, dir, docSkip)

	// Detection: exit 1, every finding in the JSON with its fields.
	r := swampj(t, dir, "doctor", "--json")
	if r.code != 1 || docErrCode(t, r) != "doctor_findings" {
		t.Fatalf("check: %+v", r)
	}
	d := docDecode(t, r)
	if d.Mode != "check" || d.Remaining != 6 || len(d.Findings) != 6 {
		t.Fatalf("check report: %+v", d)
	}
	codes := map[string]int{}
	for _, f := range d.Findings {
		for _, key := range []string{"code", "path", "item", "version", "message", "fix", "status"} {
			if _, ok := f[key]; !ok {
				t.Fatalf("finding lacks %q: %v", key, f)
			}
		}
		codes[f["code"].(string)]++
	}
	want := map[string]int{"version_unreadable": 2, "latest_unreadable": 1, "catalog_row_unreadable": 2, "catalog_latest_wrong": 1}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}

	// Text mode says the same, and what to do next.
	r = swampj(t, dir, "doctor")
	if r.code != 1 || !strings.Contains(r.stdout, "version_unreadable") || !strings.Contains(r.stdout, "metadata.yaml is zero bytes") ||
		!strings.Contains(r.stdout, "swampj doctor --repair") || !strings.Contains(r.stderr, "6 problem(s) found") {
		t.Fatalf("text check: %+v", r)
	}

	// Usage: --confirm alone.
	if r := swampj(t, dir, "doctor", "--confirm"); r.code != 2 {
		t.Fatalf("--confirm without --repair: %+v", r)
	}

	// Preview: the plan, exit 1 (nothing fixed yet), nothing changed.
	r = swampj(t, dir, "doctor", "--repair", "--json")
	d = docDecode(t, r)
	if r.code != 1 || d.Mode != "preview" || len(d.Moves) != 2 || d.Findings[0]["status"] != "would-repair" {
		t.Fatalf("preview: %+v %+v", r, d)
	}
	if diff := fsxtest.Diff(start, fsxtest.Snapshot(t, dir, docSkip)); len(diff) > 0 {
		t.Fatalf("check and preview changed the tree: %v", diff)
	}

	// Repair: exit 0, one intent, everything repaired.
	r = swampj(t, dir, "doctor", "--repair", "--confirm", "--json")
	d = docDecode(t, r)
	if r.code != 0 || d.Mode != "repair" || d.Remaining != 0 || d.IntentID == 0 || len(d.Moves) != 2 {
		t.Fatalf("repair: %+v %+v", r, d)
	}
	for _, f := range d.Findings {
		if f["status"] != "repaired" {
			t.Fatalf("not repaired: %v", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(item, "latest")); string(b) != "3" {
		t.Fatalf("latest = %q", b)
	}
	for _, v := range []string{"4", "5"} {
		fi, err := os.Stat(filepath.Join(d.Quarantine, "_solo", filepath.FromSlash(docType), docModel, "result", v, "metadata.yaml"))
		if err != nil || fi.Size() != 0 {
			t.Fatalf("version %s in quarantine: %v %v", v, fi, err)
		}
	}

	// Checked again: clean, exit 0 — in text and JSON.
	if r := swampj(t, dir, "doctor"); r.code != 0 || !strings.Contains(r.stdout, "No problems found.") {
		t.Fatalf("second check: %+v", r)
	}
	if r := swampj(t, dir, "doctor", "--json"); r.code != 0 || docDecode(t, r).Remaining != 0 {
		t.Fatalf("second check --json: %+v", r)
	}
	// The journal holds the repair as done.
	if r := swampj(t, dir, "recover"); r.code != 0 || !strings.Contains(r.stdout, "Nothing to recover") {
		t.Fatalf("recover after a repair: %+v", r)
	}
}

// TestDoctorBusyModelExits75: a live swamp lock on the model keeps the
// doctor off it; the run says so and exits 75 (try again later).
func TestDoctorBusyModelExits75(t *testing.T) {
	dir, item := docRepo(t)
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	// This test process holds the lock: same host, a live pid.
	held, err := lock.Acquire(context.Background(), fsx.Real(), lock.ModelPath(r.Base, "", docType, docModel), lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	res := swampj(t, dir, "doctor", "--repair", "--confirm", "--lock-timeout", "300ms", "--json")
	d := docDecode(t, res)
	if res.code != 75 || docErrCode(t, res) != "lock_timeout" || d.Remaining != 6 || d.IntentID != 0 {
		t.Fatalf("busy model: %+v %+v", res, d)
	}
	for _, f := range d.Findings {
		if f["status"] != "skipped" || !strings.Contains(fmt.Sprint(f["reason"]), "busy") {
			t.Fatalf("finding: %v", f)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(item, "latest")); string(b) != "5" {
		t.Fatalf("a busy model was changed: latest = %q", b)
	}
}

// TestDoctorRefusesWhileAnIntentIsOpen: the disk is mid-change until
// `swampj recover` has run.
func TestDoctorRepairFinishesAnOpenIntentFirst(t *testing.T) {
	dir, item := docRepo(t)
	j, err := journal.Open(fsx.Real(), filepath.Join(dir, ".swamp", "_journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Begin(&journal.Intent{Kind: "test", Summary: "interrupted", Steps: []journal.Step{{Kind: "barrier"}}}); err != nil {
		t.Fatal(err)
	}
	j.Abandon()
	r := swampj(t, dir, "doctor", "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"open_intent"`) {
		t.Fatalf("check: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(item, "latest")); string(b) != "5" {
		t.Fatalf("the check changed latest: %q", b)
	}
	// The confirmed repair, like every mutating command, finishes the
	// interrupted operation first (and says so), then repairs the rest.
	r = swampj(t, dir, "doctor", "--repair", "--confirm")
	if r.code != 0 || !strings.Contains(r.stdout, "Repaired 6 problem(s)") || !strings.Contains(r.stderr, "finished interrupted intent 1") {
		t.Fatalf("repair with an open intent: %+v", r)
	}
	if l := swampj(t, dir, "journal", "list"); strings.Contains(l.stdout, " open ") {
		t.Fatalf("intent left open:\n%s", l.stdout)
	}
}

// TestDoctorRepairsCommittedFixture runs on the committed #3955 data root
// (testdata/store): `state` has latest 3, zero-byte; its model carries an
// abandoned, unparseable per-model lock from the crashed swamp: a finding
// of its own (lock_dead), moved to quarantine by the repair.
func TestDoctorRepairsCommittedFixture(t *testing.T) {
	dir := newRepo(t)
	data := filepath.Join(dir, ".swamp", "data")
	fsxtest.CopyTree(t, filepath.Join("..", "..", "testdata", "store", "issue-3955", "data"), data)
	model := filepath.Join(data, "command", "shell", docModel)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(model, ".lock"), old, old); err != nil {
		t.Fatal(err)
	}
	r := swampj(t, dir, "doctor", "--json")
	d := docDecode(t, r)
	if r.code != 1 || d.Remaining != 3 || d.Findings[0]["code"] != "lock_dead" {
		t.Fatalf("check: %+v %+v", r, d)
	}
	r = swampj(t, dir, "doctor", "--repair", "--confirm", "--lock-timeout", "2s")
	if r.code != 0 || !strings.Contains(r.stdout, "Repaired 3 problem(s)") {
		t.Fatalf("repair: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(model, "state", "latest")); string(b) != "2" {
		t.Fatalf("latest = %q, want 2", b)
	}
	if r := swampj(t, dir, "doctor"); r.code != 0 {
		t.Fatalf("second check: %+v", r)
	}
}
