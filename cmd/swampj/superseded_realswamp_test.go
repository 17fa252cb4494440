package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A swampj write whose process died after its version and `latest` were
// on disk, before its done mark was committed (killed right after its
// catalog commit: the state a Go API host leaves when it dies before its lazy mark
// rides a commit), then the real swamp writes the same item before
// anything recovers. `swampj recover` used to stop there with a conflict
// ("latest holds bytes that are neither the old nor the new content")
// that no command could get past, and the doctor reported the open
// intent for ever. Now recovery finishes the intent as it stands and
// swamp's version stays the latest; a rollback is refused, changing
// nothing.
func TestRealSwampWritesOverAnUnfinishedIntent(t *testing.T) {
	needSwamp(t)
	base := buildSwampBase(t)
	for _, rollbackFirst := range []bool{false, true} {
		name := "recover"
		if rollbackFirst {
			name = "rollback_refused_then_recover"
		}
		t.Run(name, func(t *testing.T) {
			dir := copyRepo(t, base)
			m1 := base.models["m1"]
			addr := "command/shell/" + m1 + "/result"
			prev := latestOf(t, dir, addr)
			pf := filepath.Join(t.TempDir(), "p.json")
			payload := []byte(`{"exitCode":0,"command":"written by swampj","stdout":"from swampj","stderr":""}`)
			if err := os.WriteFile(pf, payload, 0o644); err != nil {
				t.Fatal(err)
			}
			if !swampjKilledAt(t, dir, "failpoint:catalog", nil, "data", "write", addr, "--file", pf, "--content-type", "application/json") {
				t.Fatal("the write was not killed after its catalog commit")
			}
			if v := latestOf(t, dir, addr); v != prev+1 {
				t.Fatalf("after the killed write latest is %d, want %d (the write complete on disk)", v, prev+1)
			}
			if _, ok := swampOK(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo after-the-kill"); !ok {
				t.FailNow()
			}
			if v := latestOf(t, dir, addr); v != prev+2 {
				t.Fatalf("after swamp's method run latest is %d, want %d", v, prev+2)
			}
			before := takeManifest(t, dir, "")
			if rollbackFirst {
				res := swampj(t, dir, "recover", "--rollback")
				if res.code == 0 || !strings.Contains(res.stderr, "later write") {
					t.Fatalf("recover --rollback: exit %d, want a refusal naming the later write\n%s%s", res.code, res.stdout, res.stderr)
				}
				sameExcept(t, "a refused rollback", before, takeManifest(t, dir, ""), nil)
			}
			if _, ok := swampjOK(t, dir, "recover"); !ok {
				t.FailNow()
			}
			if v := latestOf(t, dir, addr); v != prev+2 {
				t.Fatalf("after recover latest is %d, want swamp's %d", v, prev+2)
			}
			var g swGet
			if swampJSON(t, dir, &g, "data", "get", "m1", "result") && g.Version != prev+2 {
				t.Errorf("swamp data get m1 result: version %d, want %d", g.Version, prev+2)
			}
			if vs := sjVersions(t, dir, addr); len(vs) == 0 {
				t.Error("swampj lists no versions")
			}
			if b, ok := sjGet(t, dir, addr, prev+1); !ok || !sameBytes(b, payload) {
				t.Errorf("swampj's version %d is not readable as written", prev+1)
			}
			healthy(t, dir, "", "after recovering over swamp's write")
			if _, ok := swampOK(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo next"); !ok {
				t.Error("swamp's next method run failed")
			}
		})
	}
}
