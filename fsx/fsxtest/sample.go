package fsxtest

import (
	"os"
	"sort"
	"testing"
)

// FullEnv names the crash recipe's full mode: set to 1 (cmd/crashreport
// does), every crash test enumerates every cut point of every layer.
const FullEnv = "SWAMPJ_CRASH_FULL"

// Full reports the crash recipe's full mode.
func Full() bool { return os.Getenv(FullEnv) == "1" }

// Cuts are the points in [lo, hi] a crash test checks. In the full mode
// that is every one. Otherwise (plain `go test ./...`, which must stay
// quick on a small machine) it is lo, hi, every every-th point from lo —
// every 2·every-th under -short — and each of keep that lies in [lo, hi]:
// the boundaries a protocol must get right (the intent commit, the
// version complete, the catalog commit, the done mark) and their
// neighbours, which no sample may skip. The result is sorted and has no
// duplicates; it is empty when hi < lo.
func Cuts(lo, hi, every int, keep ...int) []int {
	if hi < lo {
		return nil
	}
	step := max(every, 1)
	switch {
	case Full():
		step = 1
	case testing.Short():
		step *= 2
	}
	seen := map[int]bool{}
	add := func(k int) {
		if k >= lo && k <= hi {
			seen[k] = true
		}
	}
	for k := lo; k <= hi; k += step {
		add(k)
	}
	add(hi)
	for _, k := range keep {
		add(k)
	}
	out := make([]int, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// Around is k-1, k and k+1: a boundary and the cut points either side.
func Around(ks ...int) []int {
	var out []int
	for _, k := range ks {
		out = append(out, k-1, k, k+1)
	}
	return out
}
