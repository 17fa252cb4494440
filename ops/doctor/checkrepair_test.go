package doctor_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/recover"
)

var ctx = context.Background()

// The example repo's item of three versions, latest 3, and its model.
const (
	helloType  = "command/shell"
	helloItem  = helloType + "/" + example.HelloShell + "/result"
	quarantine = ".swamp/.swampj-quarantine"
)

// now is the doctor's clock: the quarantine stamp is known.
func now() time.Time { return time.Date(2026, 10, 22, 2, 18, 4, 0, time.UTC) }

// damaged is example.Write with a catalog rebuilt from it, and then
// the latest version of helloItem left as an unclean shutdown leaves it
// (swamp's bug report #3955): raw and metadata.yaml zero bytes, their
// catalog row still there.
func damaged(t *testing.T) *repo.Repo {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := example.Write(fsx.Real(), dir); err != nil {
		t.Fatal(err)
	}
	r := load(t, dir)
	if _, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{FS: fsx.Real()}, Confirm: true}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.Truncate(filepath.Join(r.DataRoot, helloItem, "3", f), 0); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func load(t *testing.T, dir string) *repo.Repo {
	t.Helper()
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, r *repo.Repo, o doctor.Options) *doctor.Report {
	t.Helper()
	o.Now, o.JournalLockTimeout = now, time.Second
	rep, err := doctor.Run(ctx, r, o)
	if err != nil {
		t.Fatalf("doctor %+v: %v", o, err)
	}
	return rep
}

// unreadable is the report's finding about helloItem's version 3.
func unreadable(t *testing.T, rep *doctor.Report) doctor.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeVersionUnreadable && f.Item == helloItem && f.Version == 3 {
			return f
		}
	}
	t.Fatalf("no %s finding for %s v3 in %+v", doctor.CodeVersionUnreadable, helloItem, rep.Findings)
	return doctor.Finding{}
}

// everything is the repo's tree, but for swampj's journal (its lock and
// holder files change whenever a swampj looks).
func everything(t *testing.T, r *repo.Repo) fsxtest.Tree {
	return fsxtest.Snapshot(t, r.Dir, fsxtest.SkipJournal)
}

// catalogRows is the catalog's rows of helloItem: "v" plus "*" when
// is_latest.
func catalogRows(t *testing.T, r *repo.Repo) []string {
	t.Helper()
	c, err := catalog.Open(ctx, fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.ItemRows(ctx, catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: helloType, ModelID: example.HelloShell, DataName: "result"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, row := range rows {
		s := fmt.Sprint(row.Version)
		if row.IsLatest {
			s += "*"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Detection finds the emptied version, says what the repair would do,
// and changes nothing.
func TestCheckFindsTheEmptiedVersionAndChangesNothing(t *testing.T) {
	r := damaged(t)
	before := everything(t, r)
	rep := run(t, r, doctor.Options{})
	f := unreadable(t, rep)
	if f.Status != doctor.StatusFound || f.Remedy != report.RemedyRepair || f.Fix == "" {
		t.Errorf("finding = %+v, want found, with the repair as its remedy", f)
	}
	if rep.Mode != "check" || rep.Clean() || rep.Remaining == 0 || rep.Outcome != doctor.OutcomeRepairable || len(rep.Moves) != 0 {
		t.Errorf("report: mode %s, clean %v, remaining %d, outcome %s, moves %v", rep.Mode, rep.Clean(), rep.Remaining, rep.Outcome, rep.Moves)
	}
	if d := fsxtest.Diff(before, everything(t, r)); len(d) != 0 {
		t.Fatalf("the check changed the repo: %v", d)
	}
}

// The preview plans the moves into quarantine and changes nothing.
func TestPreviewPlansTheRepairAndChangesNothing(t *testing.T) {
	r := damaged(t)
	before := everything(t, r)
	rep := run(t, r, doctor.Options{Repair: true})
	if f := unreadable(t, rep); f.Status != doctor.StatusWouldRepair {
		t.Errorf("finding status %s, want %s", f.Status, doctor.StatusWouldRepair)
	}
	from := filepath.Join(r.DataRoot, helloItem, "3")
	i := slices.IndexFunc(rep.Moves, func(m doctor.Move) bool { return m.From == from })
	if rep.Mode != "preview" || i < 0 || !strings.HasPrefix(rep.Moves[i].To, filepath.Join(r.Dir, quarantine)+"/") {
		t.Fatalf("preview: mode %s, moves %+v; want %s moved into %s", rep.Mode, rep.Moves, from, quarantine)
	}
	if d := fsxtest.Diff(before, everything(t, r)); len(d) != 0 {
		t.Fatalf("the preview changed the repo: %v", d)
	}
}

// The confirmed repair moves the emptied version into quarantine, keeps
// every byte (the old `latest` too), points `latest` at the last readable
// version, removes the version's catalog row, closes its intent, and
// leaves nothing for a second run.
func TestRepairQuarantinesTheVersionAndKeepsEveryByte(t *testing.T) {
	r := damaged(t)
	before := everything(t, r)
	rep := run(t, r, doctor.Options{Repair: true, Confirm: true})
	if f := unreadable(t, rep); f.Status != doctor.StatusRepaired {
		t.Fatalf("finding status %s, want %s", f.Status, doctor.StatusRepaired)
	}
	if rep.Mode != "repair" || rep.IntentID == 0 || rep.Remaining != 0 || rep.Outcome != doctor.OutcomeRepaired {
		t.Fatalf("repair: mode %s, intent %d, remaining %d, outcome %s", rep.Mode, rep.IntentID, rep.Remaining, rep.Outcome)
	}
	latest, err := os.ReadFile(filepath.Join(r.DataRoot, helloItem, "latest"))
	if err != nil || strings.TrimSpace(string(latest)) != "2" {
		t.Fatalf("latest = %q, %v; want 2", latest, err)
	}

	// Nothing deleted: every file of the repo (the catalog, which the
	// journal holds the removed rows of, aside) is where it was, or in the
	// quarantine with the same bytes.
	after := everything(t, r)
	for rel, e := range before {
		if strings.HasPrefix(rel, ".swamp/data/_catalog.db") || e == after[rel] {
			continue
		}
		kept := false
		for q, qe := range after {
			kept = kept || (strings.HasPrefix(q, quarantine+"/") && strings.HasSuffix(q, "/"+filepath.Base(rel)) && qe == e)
		}
		if !kept {
			t.Errorf("%s changed or vanished, and its bytes are not in the quarantine", rel)
		}
	}
	if _, err := os.Stat(filepath.Join(r.DataRoot, helloItem, "3")); !os.IsNotExist(err) {
		t.Errorf("the emptied version is still in the data root: %v", err)
	}
	if got, want := catalogRows(t, r), []string{"1", "2*"}; !slices.Equal(got, want) {
		t.Errorf("catalog rows of %s = %v, want %v", helloItem, got, want)
	}
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	open, err := j.OpenIntents()
	_ = j.Close()
	if err != nil || len(open) != 0 {
		t.Fatalf("open intents after the repair: %v, %v", open, err)
	}

	again := run(t, r, doctor.Options{Repair: true, Confirm: true})
	if !again.Clean() || again.Outcome != doctor.OutcomeClean || again.IntentID != 0 {
		t.Fatalf("second repair: clean %v, outcome %s, intent %d, findings %+v", again.Clean(), again.Outcome, again.IntentID, again.Findings)
	}
}

// An item whose swamp lock is held by a live writer is skipped, never
// changed under it; the run says to come back when it is idle.
func TestRepairSkipsAModelWhoseLockIsBusy(t *testing.T) {
	r := damaged(t)
	path := lock.ModelPath(r.Base, r.Namespace, helloType, example.HelloShell)
	// Held in the name of a live process other than this one (the go
	// command that runs the test), as a running swamp holds it.
	l, err := lock.Acquire(ctx, fsx.Real(), path, lock.Options{Timeout: time.Second, Pid: os.Getppid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	before := everything(t, r)
	rep := run(t, r, doctor.Options{Common: host.Common{SwampLockTimeout: 200 * time.Millisecond}, Repair: true, Confirm: true})
	f := unreadable(t, rep)
	if f.Status != doctor.StatusSkipped || f.Reason == "" {
		t.Fatalf("finding %+v, want skipped with a reason", f)
	}
	if !rep.OnlySkipped() || rep.Outcome != doctor.OutcomeBusy {
		t.Errorf("outcome %s, only skipped %v; want busy", rep.Outcome, rep.OnlySkipped())
	}
	item := filepath.Join(".swamp", "data", helloItem) + "/"
	for rel, e := range everything(t, r) {
		if strings.HasPrefix(rel, item) && before[rel] != e {
			t.Errorf("%s changed under a live lock", rel)
		}
	}
}

// A repair cut at any operation is finished by recover: the repo ends as
// an uninterrupted repair leaves it (or, cut before its intent was
// recorded, as it was, and the next repair does it).
func TestRepairCutAnywhereIsFinishedByRecover(t *testing.T) {
	template := damaged(t)
	untouched := everything(t, template)
	baseline := findingKeys(run(t, template, doctor.Options{}))
	count := fsx.NewFault(fsx.Real())
	scratch := filepath.Join(t.TempDir(), "repo")
	fsxtest.CopyTree(t, template.Dir, scratch)
	if _, err := doctor.Run(ctx, load(t, scratch), doctor.Options{Common: host.Common{FS: count}, Repair: true, Confirm: true, Now: now}); err != nil {
		t.Fatal(err)
	}
	total := count.Ops()
	if total < 10 {
		t.Fatalf("the repair issued %d operations", total)
	}
	// Every cut in the full suite (fsxtest.Full), a sample otherwise.
	cuts := fsxtest.Cuts(0, total-1, 3)
	outcomes := map[bool]int{} // finished by recover or not: how many cuts
	for _, k := range cuts {
		t.Run(fmt.Sprint("cut", k), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			fsxtest.CopyTree(t, template.Dir, dir)
			r := load(t, dir)
			fault := fsx.NewFault(fsx.Real()).CrashAfter(k)
			if _, err := doctor.Run(ctx, r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fault}, Repair: true, Confirm: true, Now: now}); err != nil && !fsx.IsCrash(err) {
				t.Fatalf("repair cut after %d operations: %v", k, err)
			}
			if _, err := recover.Run(ctx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}}); err != nil {
				t.Fatalf("recover: %v", err)
			}
			// Finished by recover, or (cut before its intent was
			// recorded) no data changed. Either way the cut may leave
			// empty quarantine directories, and swamp's lock of the model
			// (and its temp file) as a process that dies holding it does:
			// a dead lock, which swamp takes over and a repair moves aside.
			got := findingKeys(run(t, r, doctor.Options{}))
			finished := len(got) == 0
			if !finished && !slices.Equal(got, baseline) {
				t.Fatalf("after the cut and recover: findings %v, want none (finished) or %v (untouched)", got, baseline)
			}
			outcomes[finished]++
			if !finished {
				modelDir := filepath.Join(".swamp", "data", helloType, example.HelloShell) + "/."
				for _, d := range fsxtest.Diff(untouched, everything(t, r)) {
					if !strings.Contains(d, quarantine) && !strings.Contains(d, modelDir) {
						t.Fatalf("the repair was cut, recover did not finish it, and the repo changed: %s", d)
					}
				}
			}
			if rep := run(t, r, doctor.Options{Repair: true, Confirm: true}); rep.Remaining != 0 {
				t.Fatalf("a repair after the cut and recover left %+v", rep.Findings)
			}
			if got, want := catalogRows(t, r), []string{"1", "2*"}; !slices.Equal(got, want) {
				t.Errorf("catalog rows = %v, want %v", got, want)
			}
			latest, _ := os.ReadFile(filepath.Join(r.DataRoot, helloItem, "latest"))
			if strings.TrimSpace(string(latest)) != "2" {
				t.Errorf("latest = %q, want 2", latest)
			}
		})
	}
	if outcomes[true] == 0 || outcomes[false] == 0 {
		t.Fatalf("of %d cuts, %d were finished by recover and %d left untouched: the cuts miss the repair's intent", len(cuts), outcomes[true], outcomes[false])
	}
	t.Logf("%d cuts: %d finished by recover, %d cut before the intent was recorded", len(cuts), outcomes[true], outcomes[false])
}

// findingKeys are a report's findings as code, item and version, sorted,
// without the dead locks a cut leaves (lock files are not data).
func findingKeys(rep *doctor.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Code != doctor.CodeLockDead {
			out = append(out, fmt.Sprintf("%s %s v%d", f.Code, f.Item, f.Version))
		}
	}
	slices.Sort(out)
	return out
}

// The table of codes is what scripts read: each code once, counted under
// a check, raised in a file of this package.
func TestCodesTable(t *testing.T) {
	seen := map[doctor.Code]bool{}
	for _, c := range doctor.Codes() {
		if seen[c.Code] {
			t.Errorf("%s listed twice", c.Code)
		}
		seen[c.Code] = true
		if c.Check == "" && c.Code != doctor.CodeSwampCheck { // that one counts under the failing swamp check's id
			t.Errorf("%s has no check", c.Code)
		}
		if _, err := os.Stat(c.File); err != nil {
			t.Errorf("%s: raised in %s: %v", c.Code, c.File, err)
		}
	}
	for _, c := range []doctor.Code{doctor.CodeVersionUnreadable, doctor.CodeDataAtOtherRoot, doctor.CodeHiddenLocalDir} {
		if !seen[c] {
			t.Errorf("%s is not in the table", c)
		}
	}
}

// Only limits a run to the named item directories (what a command just
// changed): damage elsewhere is not looked at, and not repaired.
func TestOnlyLimitsTheRunToTheNamedItems(t *testing.T) {
	r := damaged(t)
	scanItem := filepath.Join(r.DataRoot, helloType, example.ScanShell, "result")
	for _, f := range []string{"raw", "metadata.yaml"} {
		if err := os.Truncate(filepath.Join(scanItem, "4", f), 0); err != nil {
			t.Fatal(err)
		}
	}
	rep := run(t, r, doctor.Options{Repair: true, Confirm: true, Only: []string{scanItem}})
	if rep.Items != 1 || rep.Remaining != 0 || len(rep.Findings) == 0 {
		t.Fatalf("a run limited to one item: %d items, %d remaining, findings %+v", rep.Items, rep.Remaining, rep.Findings)
	}
	for _, f := range rep.Findings {
		if !strings.Contains(f.Item, example.ScanShell) {
			t.Errorf("finding outside the item it was limited to: %+v", f)
		}
	}
	if latest, _ := os.ReadFile(filepath.Join(scanItem, "latest")); strings.TrimSpace(string(latest)) != "3" {
		t.Errorf("the named item's latest = %q, want 3", latest)
	}
	// The other damaged item was not looked at: the full run still finds it.
	unreadable(t, run(t, r, doctor.Options{}))
}

// A confirmed repair that changes data in a repo whose catalog is damaged
// rebuilds the catalog in the repair's own journal session: the journal is
// taken for writing once (one holder record written), where a rebuild in a
// session of its own takes it a second time.
func TestRepairRebuildsTheCatalogInItsOwnSession(t *testing.T) {
	r := damaged(t)
	sidecars, err := filepath.Glob(r.CatalogPath + "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range sidecars {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(r.CatalogPath, []byte(strings.Repeat("not a catalog ", 512)), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := fsx.NewFault(fsx.Real())
	rep := run(t, r, doctor.Options{Common: host.Common{FS: trace}, Repair: true, Confirm: true})
	if !rep.Clean() {
		t.Fatalf("the repair left %d findings: %+v", rep.Remaining, rep.Findings)
	}
	if got := unreadable(t, rep); got.Status != doctor.StatusRepaired {
		t.Fatalf("the data finding: %+v, want it repaired", got)
	}
	holds := 0
	for _, op := range trace.Trace() {
		if op.Kind == "create" && op.Path == journal.HolderPath(r.JournalPath)+".tmp" {
			holds++
		}
	}
	if holds != 1 {
		t.Fatalf("the repair took the journal for writing %d times, want once (the catalog rebuilt in the repair's session)", holds)
	}
}
