package ops_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/report"
)

// phaseLog records the phases a Progress callback saw, in order, once each.
type phaseLog struct {
	mu     sync.Mutex
	phases []string
}

func (l *phaseLog) progress(ev report.ProgressEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.phases); n == 0 || l.phases[n-1] != ev.Phase {
		l.phases = append(l.phases, ev.Phase)
	}
}

// TestProgressPhasesAfterTheScan: the work after the walk — the catalog
// read, compare and commit — is a phase of its own, so a renderer does not
// show a finished scan while seconds pass (50,000 versions: 1-4 s each).
func TestProgressPhasesAfterTheScan(t *testing.T) {
	ctx := context.Background()
	dir := apiRepo(t)
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		run  func(report.Progress) error
		want []string
	}{
		{"rebuild", func(p report.Progress) error {
			_, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Confirm: true, Progress: p})
			return err
		}, []string{"scanning", "writing catalog"}},
		{"verify", func(p report.Progress) error {
			_, err := catalogsync.Verify(ctx, r, catalogsync.Options{Progress: p})
			return err
		}, []string{"scanning", "comparing with catalog"}},
		{"doctor", func(p report.Progress) error {
			_, err := doctor.Run(ctx, r, doctor.Options{Progress: p})
			return err
		}, []string{"scanning", "checking locks", "reading catalog", "checking items", "checking staging and run records", "swamp's checks"}},
	}
	for _, c := range cases {
		var l phaseLog
		if err := c.run(l.progress); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(l.phases, c.want) {
			t.Errorf("%s: phases %q, want %q", c.name, l.phases, c.want)
		}
	}
}
