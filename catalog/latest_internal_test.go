package catalog

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMarkLatestFewIsMarkLatestMaps: for the row counts markLatestFew takes,
// it sets exactly the flags the map version sets, with and without the swamp-format §11
// column, on random rows of a few items, steps and repeated versions (ties
// included: the first of equal versions wins in both).
func TestMarkLatestFewIsMarkLatestMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for round := range 5000 {
		n := rng.IntN(markLatestLinear + 1)
		rows := make([]Row, n)
		for i := range rows {
			rows[i] = Row{Namespace: "", TypeNormalized: pick("a", "a/b"), ModelID: pick("m1", "m2"), DataName: pick("x", "y"),
				Version: int64(1 + rng.IntN(6)), WorkflowName: pick("", "w"), JobName: pick("", "j"), StepName: pick("", "s1", "s2"),
				IsLatest: rng.IntN(2) == 0, IsStepLatest: rng.IntN(2) == 0}
		}
		for _, step := range []bool{false, true} {
			few, maps := append([]Row(nil), rows...), append([]Row(nil), rows...)
			markLatestFew(few, step)
			markLatestMaps(maps, step)
			for i := range few {
				if few[i].IsLatest != maps[i].IsLatest || few[i].IsStepLatest != maps[i].IsStepLatest {
					t.Fatalf("round %d, step=%v, row %d of %s: few %v/%v, maps %v/%v", round, step, i, fmt.Sprint(rows),
						few[i].IsLatest, few[i].IsStepLatest, maps[i].IsLatest, maps[i].IsStepLatest)
				}
			}
		}
	}
}
