package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryMutantStillApplies: each mutant's replacement matches its file
// exactly once. A protocol change that moves the code it mutates fails
// here, in `go test ./...`, instead of only in the crash recipe (h/write's
// reordering of the write plan did exactly that to two mutants).
func TestEveryMutantStillApplies(t *testing.T) {
	for _, m := range mutants {
		b, err := os.ReadFile(filepath.Join("..", "..", m.file))
		if err != nil {
			t.Fatalf("mutant %s: %v", m.name, err)
		}
		if n := strings.Count(string(b), m.old); n != 1 {
			t.Errorf("mutant %s matches %d times in %s (want exactly 1): the code moved, move the mutant", m.name, n, m.file)
		}
	}
}

func TestControlSelectionsUnitePatternsPerPackage(t *testing.T) {
	got := controlSelections([]mutant{
		{pkg: "./ops", run: "A|B"}, {pkg: "./ops", run: "C"}, {pkg: "./x", run: "D"}, {pkg: "./ops", run: "A|B"},
	})
	want := []selection{{"./ops", "A|B|C"}, {"./x", "D"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestParseTestOutput(t *testing.T) {
	res := parseTestOutput("=== RUN   TestA\n--- PASS: TestA (0.01s)\n=== RUN   TestB\n    --- FAIL: TestB/sub (0.00s)\n--- FAIL: TestB (0.02s)\nFAIL\n")
	if strings.Join(res.passed, ",") != "TestA" || strings.Join(res.failed, ",") != "TestB/sub,TestB" {
		t.Fatalf("passed %v failed %v", res.passed, res.failed)
	}
}

// A mutant is caught only by a test that passed in the control: one that
// fails anyway (a flaky or broken test) catches nothing.
func TestCaughtByNeedsATestThatPassedInTheControl(t *testing.T) {
	passed := map[string]bool{"./ops TestA": true}
	if by, why := caughtBy(testResult{failed: []string{"TestBroken"}}, passed, "./ops"); len(by) != 0 {
		t.Fatalf("a test that did not pass in the control caught the mutant: %v (%s)", by, why)
	}
	if by, _ := caughtBy(testResult{failed: []string{"TestA"}}, passed, "./x"); len(by) != 0 {
		t.Fatalf("a test of another package caught the mutant: %v", by)
	}
	if by, _ := caughtBy(testResult{failed: []string{"TestBroken", "TestA"}}, passed, "./ops"); len(by) != 1 || by[0] != "TestA" {
		t.Fatalf("caughtBy = %v, want [TestA]", by)
	}
	if by, why := caughtBy(testResult{passed: []string{"TestA"}}, passed, "./ops"); len(by) != 0 || why != "the tests passed" {
		t.Fatalf("%v %q", by, why)
	}
}
