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
