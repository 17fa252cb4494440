package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/migrate"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

// What -v and the progress line say.

// eventLog records every progress event.
type eventLog struct {
	mu     sync.Mutex
	events []report.ProgressEvent
}

func (l *eventLog) progress(ev report.ProgressEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *eventLog) phase(name string) []report.ProgressEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []report.ProgressEvent
	for _, ev := range l.events {
		if ev.Phase == name {
			out = append(out, ev)
		}
	}
	return out
}

// TestWriteTraceSaysWrittenAhead: a healthy write's `latest` step finds
// the temp file the write wrote ahead on purpose; its -v record says so
// ("written ahead"), not "partial".
func TestWriteTraceSaysWrittenAhead(t *testing.T) {
	dir := apiRepo(t)
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a, _ := repo.ParseAddress("command/shell/m1/result")
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: a, Content: strings.NewReader(`{"v":2}`)}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, Logger: log}}); err != nil {
		t.Fatal(err)
	}
	ahead := false
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec["observed"] == "partial" {
			t.Errorf("a healthy write's step observed as partial: %s", line)
		}
		if rec["observed"] == "written ahead" && strings.HasSuffix(rec["path"].(string), "/latest") {
			ahead = true
		}
	}
	if !ahead {
		t.Fatalf("no 'written ahead' record for latest:\n%s", buf.String())
	}
}

// TestPlanningProgressEndsWithItsTotal: once the planning walk is over,
// its last event says done of total.
func TestPlanningProgressEndsWithItsTotal(t *testing.T) {
	dir := apiRepo(t)
	env := func(string) string { return "" }
	r, err := repo.Load(nil, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.SetNamespace(context.Background(), r, "team", migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second}, Getenv: env}); err != nil {
		t.Fatal(err)
	}
	var l eventLog
	if _, err := migrate.Migrate(context.Background(), r, migrate.MigrateOptions{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}, Confirm: true, Getenv: env, Progress: l.progress}); err != nil {
		t.Fatal(err)
	}
	evs := l.phase("planning")
	if len(evs) == 0 {
		t.Fatal("no planning events")
	}
	if last := evs[len(evs)-1]; last.Total <= 0 || last.Done != last.Total {
		t.Fatalf("the last planning event is %d of %d %s; want done of a known total", last.Done, last.Total, last.Unit)
	}
}

// TestRecoveryShowsTheRestampByName: a migration killed after its renames,
// before its catalog restamp committed; recovering it shows the restamp as
// "restamping catalog" while it runs, as the migration does, not as one
// more of the "recovering" steps.
func TestRecoveryShowsTheRestampByName(t *testing.T) {
	dir := apiRepo(t)
	env := func(string) string { return "" }
	r, err := repo.Load(nil, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.SetNamespace(context.Background(), r, "team", migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second}, Getenv: env}); err != nil {
		t.Fatal(err)
	}
	probeDir := apiRepo(t)
	probe := fsx.NewFault(fsx.Real())
	pr, _ := repo.Load(nil, probeDir, env)
	if _, err := migrate.SetNamespace(context.Background(), pr, "team", migrate.NamespaceOptions{Common: host.Common{JournalLockTimeout: time.Second}, Getenv: env}); err != nil {
		t.Fatal(err)
	}
	mo := migrate.MigrateOptions{Common: host.Common{JournalLockTimeout: time.Second, SwampLockTimeout: time.Second}, Confirm: true, Getenv: env}
	po := mo
	po.FS = probe
	if _, err := migrate.Migrate(context.Background(), pr, po); err != nil {
		t.Fatal(err)
	}
	cut := -1
	for _, op := range probe.Trace() {
		if op.Kind == "failpoint:catalog.restamp.commit" {
			cut = op.N - 1
		}
	}
	if cut < 0 {
		t.Fatalf("no restamp commit in the trace")
	}
	mo.FS = fsx.NewFault(fsx.Real()).CrashAfter(cut)
	if _, err := migrate.Migrate(context.Background(), r, mo); !fsx.IsCrash(err) {
		t.Fatalf("want the migration to crash before its restamp commit, got %v", err)
	}
	var l eventLog
	rep, err := recover.Run(context.Background(), dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}, Progress: l.progress})
	if err != nil || len(rep.Intents) == 0 {
		t.Fatalf("recover: %+v %v", rep, err)
	}
	if len(l.phase("restamping catalog")) == 0 {
		t.Fatalf("the restamp during recovery was not shown under its own name: %+v", l.events)
	}
}
