package ops_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// The fault matrix's oracle itself: states it must fail, planted right
// after recovery in cells that otherwise hold. Each would
// pass the matrix's older checks, which looked only at the end, after a
// re-run and a repair had covered them.

// fmCellWith runs the first cell of protocol name whose injected operation
// satisfies at, with plant applied after recovery, and returns what the
// cell found.
func fmCellWith(t *testing.T, name string, at func(fsx.Op) bool, plant func(t *testing.T, dir string)) []string {
	return fmCellPlanted(t, name, at, plant, nil)
}

// fmCellPlanted is fmCellWith with before planted between the faulted call
// and recover as well.
func fmCellPlanted(t *testing.T, name string, at func(fsx.Op) bool, plant, before func(t *testing.T, dir string)) []string {
	t.Helper()
	for _, p := range fmProtocols() {
		if p.name != name {
			continue
		}
		base := fmMeasure(t, p)
		p.plant, p.plantBeforeRecover = plant, before
		for _, op := range base.trace {
			if at(op) {
				_, found := fmCell(t, p, base, op, syscall.EIO)
				return found
			}
		}
		t.Fatalf("%s: no operation matches in the clean trace", name)
	}
	t.Fatalf("no protocol %s", name)
	return nil
}

func fmFoundAll(found []string, subs ...string) bool {
	for _, f := range found {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(f, s)
		}
		if ok {
			return true
		}
	}
	return false
}

// A stage a rolled-back write left behind (its owner gone) fails the cell.
func TestFaultMatrixFailsALeftoverStage(t *testing.T) {
	// This host's tag (stagename.go's hostTag) and a pid no process has:
	// the owner is gone, as a crashed writer's is.
	h, _ := os.Hostname()
	sum := sha256.Sum256([]byte(h))
	stage := ".swampj-stage-3-2147483646-" + hex.EncodeToString(sum[:4]) + "-dead"
	found := fmCellWith(t, "write",
		// The first write into the stage: the call fails and rolls back.
		func(op fsx.Op) bool { return op.Kind == "write" && strings.Contains(op.Path, "/.swampj-stage-") },
		func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".swamp", "data", fmType, fmM1, "out", stage, "raw")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("version three"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	if !fmFoundAll(found, "after recover, before the re-run", "left over", stage) {
		t.Fatalf("the planted stage did not fail the cell: %q", found)
	}
}

// A batch that recovery leaves half old, half new fails the cell: here the
// call succeeded, and one item's new versions are then taken away again.
func TestFaultMatrixFailsAHalfDoneBatch(t *testing.T) {
	found := fmCellWith(t, "batch",
		// The done mark's flush fails after everything is published: the
		// call succeeds.
		func(op fsx.Op) bool { return op.Kind == "failpoint:journal.flush" },
		func(t *testing.T, dir string) {
			item := filepath.Join(dir, ".swamp", "data", fmType, fmM2, "log")
			for _, v := range []string{"2", "3"} {
				if err := os.RemoveAll(filepath.Join(item, v)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(item, "latest"), []byte("1"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	if !fmFoundAll(found, "after recover, before the re-run", "neither the start nor the clean run's end") {
		t.Fatalf("the half-done batch did not fail the cell: %q", found)
	}
}

// A forward recovery that fails on the clean disk fails the cell as such,
// whatever the rollback does after it. Here the migration's intent is left
// open by a failed rename, and a file is then put where a pending rename
// must go: forward recovery refuses. (In this state the rollback refuses
// too, so the older oracle failed the cell as well, as a wedge; a state
// where only the forward direction fails was not found without changing
// engine code.)
func TestFaultMatrixFailsAFailedForwardRecovery(t *testing.T) {
	var blocked string
	found := fmCellPlanted(t, "migrate",
		func(op fsx.Op) bool {
			return strings.HasPrefix(op.Kind, "rename") && strings.Contains(op.Path, "/.swamp/outputs")
		},
		nil,
		func(t *testing.T, dir string) {
			open := fmOpenIntents(t, dir)
			if len(open) == 0 {
				t.Fatal("the faulted migration left no intent open")
			}
			for _, st := range open[0].Steps {
				if st.To == "" || !migExists(st.Path) || migExists(st.To) {
					continue
				}
				if err := os.MkdirAll(filepath.Dir(st.To), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(st.To, []byte("in the way"), 0o644); err != nil {
					t.Fatal(err)
				}
				blocked = st.To
				return
			}
			t.Fatal("no pending rename in the open intent")
		})
	t.Logf("blocked %s; found: %q", blocked, found)
	if !fmFoundAll(found, "recover failed on a clean disk") {
		t.Fatalf("a failed forward recovery did not fail the cell: %q", found)
	}
}

// A stage the doctor reports as a live writer's is not a leftover right
// after recovery: its writer (here the test's parent process, alive, on
// this host) may still be staging. (It is at the end, when the clean run's
// repo has no such writer: the cell as a whole still fails.)
func TestFaultMatrixExemptsALiveWritersStage(t *testing.T) {
	h, _ := os.Hostname()
	sum := sha256.Sum256([]byte(h))
	stage := fmt.Sprintf(".swampj-stage-3-%d-%s-live", os.Getppid(), hex.EncodeToString(sum[:4]))
	found := fmCellWith(t, "write",
		func(op fsx.Op) bool { return op.Kind == "write" && strings.Contains(op.Path, "/.swampj-stage-") },
		func(t *testing.T, dir string) {
			p := filepath.Join(dir, ".swamp", "data", fmType, fmM1, "out", stage, "raw")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("being written"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	if fmFoundAll(found, "after recover, before the re-run", stage) {
		t.Fatalf("a live writer's stage failed the check right after recovery: %q", found)
	}
	if !fmFoundAll(found, stage) {
		t.Fatalf("the live writer's stage was not seen at all (is its writer judged live?): %q", found)
	}
}
