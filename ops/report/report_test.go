package report_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/store"
)

// events collects what a Progress receives, from any goroutine.
type events struct {
	mu  sync.Mutex
	got []report.ProgressEvent
}

func (e *events) progress() report.Progress {
	return func(ev report.ProgressEvent) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.got = append(e.got, ev)
	}
}

func (e *events) list() []report.ProgressEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]report.ProgressEvent(nil), e.got...)
}

// A Counter reports once per multiple of Every passed, however the entries
// are added, with the count at that moment, its Total and its Extra.
func TestCounterReportsEveryMultipleOfEvery(t *testing.T) {
	var ev events
	c := &report.Counter{Progress: ev.progress(), Phase: "scanning", Unit: "items", Every: 10,
		Total: func() int64 { return 95 },
		Extra: func(e *report.ProgressEvent) { e.Versions = e.Done * 2 }}
	c.Add(3)  // 3
	c.Add(9)  // 12: passes 10
	c.Add(25) // 37: passes 20 and 30, one report
	c.Add(3)  // 40: reaches 40
	if got := c.Done(); got != 40 {
		t.Fatalf("Done = %d, want 40", got)
	}
	got := ev.list()
	want := []int64{12, 37, 40}
	if len(got) != len(want) {
		t.Fatalf("reports = %+v, want one at each of %v", got, want)
	}
	for i, e := range got {
		if e.Done != want[i] || e.Phase != "scanning" || e.Unit != "items" || e.Total != 95 || e.Versions != 2*want[i] {
			t.Errorf("report %d = %+v, want Done %d of 95 items scanning, Versions %d", i, e, want[i], 2*want[i])
		}
	}
}

// Walks count on several workers: every entry is counted once, and each
// multiple of Every is reported exactly once.
func TestCounterCountsConcurrentAdds(t *testing.T) {
	var ev events
	c := &report.Counter{Progress: ev.progress(), Phase: "scanning", Unit: "items", Every: 100}
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				c.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := c.Done(); got != 8000 {
		t.Fatalf("Done = %d, want 8000", got)
	}
	seen := map[int64]bool{}
	for _, e := range ev.list() {
		if e.Done%100 != 0 || seen[e.Done] {
			t.Fatalf("report at %d: want each multiple of 100 once (adds of 1 land on the multiple)", e.Done)
		}
		seen[e.Done] = true
	}
	if len(seen) != 80 {
		t.Fatalf("%d reports, want 80", len(seen))
	}
}

// The default period is 256 entries; a Counter without Progress (or a nil
// one) reports nothing and does not panic.
func TestCounterDefaultsAndNoProgress(t *testing.T) {
	var ev events
	c := &report.Counter{Progress: ev.progress()}
	c.Add(255)
	if n := len(ev.list()); n != 0 {
		t.Fatalf("%d reports before 256 entries", n)
	}
	c.Add(1)
	if got := ev.list(); len(got) != 1 || got[0].Done != 256 {
		t.Fatalf("reports = %+v, want one at 256", got)
	}

	var silent report.Counter
	silent.Add(1000)
	silent.Report(5)
	var nilCounter *report.Counter
	nilCounter.Add(1)
	nilCounter.Report(1)
}

func TestProgressEmitAndSteps(t *testing.T) {
	var none report.Progress
	none.Emit("planning", 1, 2, "steps") // a nil Progress is a no-op
	if none.Steps("moving") != nil {
		t.Fatal("Steps of a nil Progress is not nil: the executor would report to nothing")
	}
	var ev events
	p := ev.progress()
	p.Steps("moving")(3, 7)
	p.Emit("reading catalog", 0, 0, "")
	want := []report.ProgressEvent{{Phase: "moving", Done: 3, Total: 7, Unit: "steps"}, {Phase: "reading catalog"}}
	got := ev.list()
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("events = %+v, want %+v", got, want)
	}
}

// The sentence names the intent and says what recovery did, and that an
// intent it could not finish is still open, with why.
func TestIntentOutcomeSentence(t *testing.T) {
	base := report.IntentOutcome{ID: 7, Kind: "write", Summary: "write 1 version of x"}
	cases := []struct {
		status journal.Status
		err    string
		stale  string
		want   []string
	}{
		{journal.StatusDone, "", "", []string{"finished interrupted intent 7 (write: write 1 version of x)"}},
		{journal.StatusRolledBack, "", "", []string{"rolled back interrupted intent 7"}},
		{journal.StatusOpen, "step 3: rename failed", "", []string{"could not finish interrupted intent 7", "still open", "step 3: rename failed"}},
		{journal.StatusDone, "", "catalog is read-only", []string{"finished", "marked stale: catalog is read-only"}},
	}
	for _, c := range cases {
		o := base
		o.Status, o.Error, o.CatalogStale = c.status, c.err, c.stale
		s := o.Sentence()
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s: sentence %q lacks %q", c.status, s, w)
			}
		}
	}
}

// An OpenIntentsError names the intents a real journal holds open, says
// nothing was changed and what to run first.
func TestOpenIntentsErrorFromARealJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".swamp", "_journal.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(fsx.Real(), path, journal.Options{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, s := range []string{"first", "second"} {
		id, err := j.Begin(&journal.Intent{Kind: "test", Summary: s, Steps: []journal.Step{{Kind: "mkdir", Path: "/nowhere"}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	open, err := j.OpenIntents()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	e := report.NewOpenIntentsError(open, "rebuild the catalog")
	if len(e.IDs) != 2 || e.IDs[0] != ids[0] || e.IDs[1] != ids[1] {
		t.Fatalf("IDs = %v, want %v", e.IDs, ids)
	}
	msg := e.Error()
	for _, w := range []string{"2 interrupted operation(s)", "nothing was changed", "Recover first, then rebuild the catalog"} {
		if !strings.Contains(msg, w) {
			t.Errorf("%q lacks %q", msg, w)
		}
	}
	if e.Code() != "open_intents" {
		t.Errorf("Code = %q", e.Code())
	}
}

// IntentStillOpenError keeps its cause visible to errors.Is, says the
// intent is still open and that its steps stay on disk, and the next step
// follows the direction it was driven in.
func TestIntentStillOpenError(t *testing.T) {
	cause := fs.ErrPermission
	cases := []struct {
		e    report.IntentStillOpenError
		next string
	}{
		{report.IntentStillOpenError{ID: 4, Summary: "migrate", Direction: journal.Forward, Err: cause}, "recover again once that is fixed, or roll it back"},
		{report.IntentStillOpenError{ID: 4, Summary: "migrate", Direction: journal.Backward, Err: cause}, "roll it back again once that is fixed, or finish it instead"},
		{report.IntentStillOpenError{ID: 4, Summary: "migrate", Direction: journal.Backward, RollbackRecorded: true, Err: cause}, "its rollback is recorded and is finished, never reversed"},
	}
	for _, c := range cases {
		err := error(&c.e)
		if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("errors.Is does not see the cause of %v", err)
		}
		msg := err.Error()
		for _, w := range []string{"intent 4 (migrate), going " + string(c.e.Direction), "Intent 4 is still open", "stays on disk", c.next} {
			if !strings.Contains(msg, w) {
				t.Errorf("%q lacks %q", msg, w)
			}
		}
	}
	// A cause that already names the intent is not prefixed again.
	e := &report.IntentStillOpenError{ID: 9, Summary: "s", Err: errors.New("step 2 of intent 9 failed")}
	if n := strings.Count(e.Error(), "intent 9"); n != 1 {
		t.Errorf("%q names intent 9 %d times", e.Error(), n)
	}
}

// Reports carry problems as code, path and message, and an empty list as
// a JSON array, never null.
func TestProblemsOf(t *testing.T) {
	got, err := json.Marshal(report.ProblemsOf(nil))
	if err != nil || string(got) != "[]" {
		t.Fatalf("ProblemsOf(nil) = %s, %v; want []", got, err)
	}
	p := store.Problem{Code: "metadata_empty", Path: "/r/.swamp/data/t/m/d/3/metadata.yaml", Message: "empty", Err: errors.New("cause")}
	got, err = json.Marshal(report.ProblemsOf([]store.Problem{p}))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"code":"metadata_empty","path":"/r/.swamp/data/t/m/d/3/metadata.yaml","message":"empty"}]`
	if string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// Human is true exactly for the actions a person takes by hand: none of
// swampj's commands, and not "nothing to do".
func TestRemedyHuman(t *testing.T) {
	for _, r := range []report.Remedy{report.RemedyFixAccess, report.RemedyInspect, report.RemedySwampUpgrade, report.RemedyMountReadWrite} {
		if !r.Human() {
			t.Errorf("%s: Human() = false", r)
		}
	}
	for _, r := range []report.Remedy{"", report.RemedyNone, report.RemedyRecover, report.RemedyRecoverOrRollback, report.RemedyRebuildCatalog,
		report.RemedyMigrate, report.RemedyMigrateReverse, report.RemedyUnsetMigrate, report.RemedyUnsetNamespace, report.RemedyRepair} {
		if r.Human() {
			t.Errorf("%q: Human() = true for one of swampj's own actions", r)
		}
	}
}
