package protocol

import (
	"testing"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/engine"
)

// TestEngineRunsThisTable: the executor is handed this package's table as
// it is initialized: every kind in it is one the engine runs, the barrier
// is the engine's own, and a kind outside it is refused.
func TestEngineRunsThisTable(t *testing.T) {
	for name := range kinds {
		if _, err := engine.KindOf(&journal.Step{Kind: name}); err != nil {
			t.Errorf("the engine does not run %q: %v", name, err)
		}
	}
	if _, ok := kinds[engine.KindBarrier]; !ok {
		t.Errorf("the table has no %q step", engine.KindBarrier)
	}
	if _, err := engine.KindOf(&journal.Step{Kind: "from-a-newer-swampj"}); err == nil {
		t.Error("an unknown kind was accepted")
	}
}

// TestStepsDescribeThemselves: what a step reads as in errors, traces and
// dry runs (engine.Describe) comes from its kind.
func TestStepsDescribeThemselves(t *testing.T) {
	for _, tc := range []struct {
		step journal.Step
		want string
	}{
		{journal.Step{Kind: KindRename, Path: "a", To: "b"}, "rename a -> b"},
		{journal.Step{Kind: KindMove, Path: "a", To: "b"}, "move a -> b"},
		{journal.Step{Kind: KindStage, Path: ".s", To: "v/1"}, "stage .s (published as v/1)"},
		{journal.Step{Kind: KindDropDup, Path: "a", To: "b"}, "drop a (identical to b)"},
		{journal.Step{Kind: engine.KindBarrier}, "fsync dirtied directories"},
		{journal.Step{Kind: KindCatalog, Note: "restamp"}, "catalog: restamp"},
		{journal.Step{Kind: KindMkdir, Path: "d"}, "mkdir d"},
		{journal.Step{Kind: KindCatalogPublish, Path: "c.db"}, "catalog-publish c.db"},
		{journal.Step{Kind: "from-a-newer-swampj"}, "from-a-newer-swampj"},
	} {
		if got := engine.Describe(&tc.step); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.step.Kind, got, tc.want)
		}
	}
}
