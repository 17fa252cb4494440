package ops_test

// ALICE's crash states (fsx.PowerCutState, design §2.1) at every
// cut point of the version write, the batch write and every migration
// scenario: a write torn at 4 KiB, an un-fsynced tail grown with garbage,
// one un-fsynced operation omitted while the later ones persist — after
// each of these recovery must reach the suite's oracle (the start or the
// end, exactly, acknowledged work kept) — and a rename that left neither
// name or both: then recovery either still reaches the oracle (the rename
// was of a lock or temp file it does not depend on) or refuses, naming one
// of the rename's paths, with the intent left open and the doctor
// reporting it (a refusal is allowed only for a rename the intent depends
// on: of the journal's, .swamp.yaml's and lock files' temps recovery must
// decide). It never guesses. A refusal is counted as refused, with
// its reason, never as recovered: "recovered" means no open intent.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/recover"
)

// crashFull: the crash recipe's full mode (every cut point of every
// layer); without it the costlier layers take a sample.
func crashFull() bool { return fsxtest.Full() }

// aliceEvery is the step between the cut points the ALICE layer takes.
func aliceEvery() int {
	switch {
	case crashFull():
		return 1
	case testing.Short():
		return 5 // fsxtest.Cuts doubles it
	}
	return 8
}

// aliceKeep are the cut points every ALICE sample takes: the operations
// the crash states there are about (the journal's creation rename, the
// intent commit, every rename of .swamp.yaml, the done mark), each with
// the cut before it.
func aliceKeep(trace []fsx.Op) []int {
	var keep []int
	for _, op := range trace {
		switch {
		case strings.HasPrefix(op.Kind, "rename") && (strings.Contains(op.Path, "._journal.db.creating-") || strings.HasSuffix(op.To, "/.swamp.yaml")),
			op.Kind == "failpoint:journal.begin", op.Kind == "failpoint:journal.flush":
			keep = append(keep, op.N-1, op.N)
		}
	}
	return keep
}

// aliceRefuses: recovery may refuse st — a rename that left neither
// name or both, of something the intent depends on. Of swampj's own
// bookkeeping (the journal's creation and holder temps, the temp of a
// .swamp.yaml replace, a lock file) it must decide: those it never needs
// to guess about.
func aliceRefuses(st fsx.CrashState) bool {
	if st.Mode != fsx.CrashRenameNeither && st.Mode != fsx.CrashRenameBoth {
		return false
	}
	for _, p := range strings.Split(st.What, " -> ") {
		base := filepath.Base(p)
		if strings.Contains(base, "_journal.db") || strings.HasSuffix(base, ".tmp") || base == ".lock" ||
			strings.Contains(p, "/.locks/") || base == ".swamp.yaml" {
			return false
		}
	}
	return true
}

// aliceReason is the crash report's refusal reason of a crash state
// (fsxtest.RefusalReasons).
func aliceReason(m fsx.CrashMode) string {
	if m == fsx.CrashRenameNeither {
		return "rename-left-neither-name"
	}
	return "rename-left-both-names"
}

// aliceRefusal checks a refused recovery: the error names a path of the
// broken rename, the intent is open, the doctor reports it with the same
// detail (where recovery stops and what it saw there).
func aliceRefusal(t *testing.T, dir string, st fsx.CrashState, err error, where string) {
	t.Helper()
	names := func(msg string) bool {
		for _, p := range strings.Split(st.What, " -> ") {
			if strings.Contains(msg, p) || strings.Contains(msg, filepath.Dir(p)+" ") {
				return true
			}
		}
		return false
	}
	if !names(err.Error()) {
		t.Fatalf("recovery refused without naming the paths: %v\n%s", err, where)
	}
	if _, serr := os.Stat(filepath.Join(dir, ".swamp.yaml")); serr != nil {
		// The journal holds .swamp.yaml's old and new content: recovery
		// puts it back whichever way it goes, and never stops without it.
		t.Fatalf("recovery refused (%v) and left no .swamp.yaml: %v\n%s", err, serr, where)
	}
	if len(fmOpenIntents(t, dir)) == 0 {
		t.Fatalf("recovery refused (%v) but left no intent open\n%s", err, where)
	}
	rep, derr := doctor.Run(fmCtx, migLoad(t, dir), doctor.Options{Common: host.Common{JournalLockTimeout: time.Second, FS: fsx.Real()}})
	if derr != nil {
		t.Fatalf("doctor after a refused recovery: %v\n%s", derr, where)
	}
	open := false
	for _, f := range rep.Findings {
		if f.Code == doctor.CodeOpenIntent {
			open = true
			if !names(f.Message) || !strings.Contains(f.Message, "recovery stops at step") {
				t.Fatalf("the doctor's open_intent finding lacks the conflict (%v): %s\n%s", err, f.Message, where)
			}
		}
	}
	if !open {
		t.Fatalf("the doctor does not describe the open intent: %+v\n%s", rep.Findings, where)
	}
}

func TestWriteALICECrashStates(t *testing.T) {
	for _, p := range pxProtocols()[:2] {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			b := pxMeasure(t, p)
			cc := fsxtest.Count(t, p.name, "powercut")
			states := map[fsx.CrashMode]int{}
			for _, k := range fsxtest.Cuts(0, b.cuts, aliceEvery(), aliceKeep(b.trace)...) {
				probe := fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
				_ = p.run(t, migLoad(t, fmCopy(t, b.tmpl)), probe)
				for i := range probe.CrashStates() {
					cc.Check()
					dir := fmCopy(t, b.tmpl)
					f := fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
					err := p.run(t, migLoad(t, dir), f)
					if err != nil && !fsx.IsCrash(err) {
						t.Fatalf("cut %d: want a crash, got %v", k, err)
					}
					st := f.CrashStates()[i]
					returned := err == nil
					did, err := f.PowerCutState(st)
					if err != nil {
						t.Fatalf("cut %d: %s: %v", k, st, err)
					}
					where := fmt.Sprintf("%s, cut %d (after %s), crash state %s: %v", p.name, k, b.trace[max(k-1, 0)], st, did)
					fmProcessExits(t, dir)
					_, rerr := recover.Run(fmCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
					got := fmState(t, dir)
					isNew, isOld := len(got.diff(b.final)) == 0, len(got.diff(b.initial)) == 0
					switch {
					case rerr != nil && aliceRefuses(st):
						// Refused, not recovered: the intent stays open.
						aliceRefusal(t, dir, st, rerr, where)
						states[st.Mode]++
						cc.Refused(aliceReason(st.Mode))
						continue
					case rerr != nil:
						t.Fatalf("recover: %v\n%s", rerr, where)
					case !isNew && !isOld:
						t.Fatalf("neither the start nor the end:\n%s\n%s", strings.Join(got.diff(b.final), "\n"), where)
					case (returned || k >= b.commitAt) && !isNew:
						t.Fatalf("the write returned or committed, but recovery gives the start\n%s", where)
					case len(fmOpenIntents(t, dir)) > 0:
						t.Fatalf("an intent is open after recovery\n%s", where)
					}
					states[st.Mode]++
					cc.Recovered()
				}
			}
			t.Logf("%s: crash states at every %d. cut point: %v; %s", p.name, aliceEvery(), states, cc)
		})
	}
}

func TestMigrateALICECrashStates(t *testing.T) {
	for _, sc := range migCrashScenarios() {
		t.Run(strings.ReplaceAll(sc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			start := sc.build(t)
			initial := migSnapshot(t, start)
			clean := fsx.NewFault(fsx.Real())
			o := sc.opts
			oFS := clean
			if _, err := runMigrate(t, start, oFS, o); err != nil {
				t.Fatal(err)
			}
			final := migSnapshot(t, start)
			beginAt, cuts := migOpIndex(clean, "failpoint:journal.begin"), clean.Ops()
			cc := fsxtest.Count(t, migProtocolName(sc.name), "powercut")
			states := map[fsx.CrashMode]int{}
			for _, k := range fsxtest.Cuts(0, cuts, aliceEvery(), aliceKeep(clean.Trace())...) {
				probe := fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
				migCrashRun(t, sc, sc.build(t), probe)
				for i := range probe.CrashStates() {
					cc.Check()
					dir := sc.build(t)
					f := fsx.NewFault(fsx.Real()).TrackDurability().CrashAfter(k)
					migCrashRun(t, sc, dir, f)
					st := f.CrashStates()[i]
					did, err := f.PowerCutState(st)
					if err != nil {
						t.Fatalf("cut %d: %s: %v", k, st, err)
					}
					where := fmt.Sprintf("%s, cut %d, crash state %s: %v", sc.name, k, st, did)
					migRemoveDeadLocks(t, dir)
					_, rerr := recover.Run(migCtx, dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}})
					want := final
					if k < beginAt {
						want = initial
					}
					switch {
					case rerr != nil && aliceRefuses(st):
						// Refused, not recovered: the intent stays open.
						aliceRefusal(t, dir, st, rerr, where)
						states[st.Mode]++
						cc.Refused(aliceReason(st.Mode))
						continue
					case rerr != nil:
						t.Fatalf("recover: %v\n%s", rerr, where)
					default:
						got := migSnapshot(t, dir)
						if d := got.diff(want); len(d) > 0 {
							t.Fatalf("tree differs:\n%s\n%s", strings.Join(d, "\n"), where)
						}
						if open := fmOpenIntents(t, dir); len(open) > 0 {
							t.Fatalf("recover succeeded but intent %d is still open\n%s", open[0].ID, where)
						}
					}
					states[st.Mode]++
					cc.Recovered()
				}
			}
			t.Logf("%s: crash states at every %d. cut point: %v; %s", sc.name, aliceEvery(), states, cc)
		})
	}
}
