package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// (g) A host writes versions of swamp's item through one held
// write.Handle, whose catalog rows are committed lazily, and the power
// fails before the handle syncs them (fsx's power-cut model: the rows are
// lost, the files and the open intents are not). After `swampj recover`
// the catalog agrees with the disk before swamp has touched it (swamp's
// own reads fill in rows they find missing), swamp's data query and data
// versions show every acknowledged version, the last as latest, and
// swamp's method run writes the next one.
func realSwampG(t *testing.T, base swampBase) {
	dir := copyRepo(t, base)
	m1 := base.models["m1"]
	addr := "command/shell/" + m1 + "/result"
	prev := latestOf(t, dir, addr)
	r, err := repo.Load(fsx.Real(), dir, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	a, err := repo.ParseAddress(addr)
	if err != nil {
		t.Fatal(err)
	}
	f := fsx.NewFault(fsx.Real()).TrackDurability()
	ctx := context.Background()
	h, err := write.Open(ctx, r, write.WriteOptions{Common: host.Common{FS: f}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	for i := 1; i <= n; i++ {
		body := fmt.Sprintf(`{"exitCode":0,"command":"handle write %d","stdout":"","stderr":""}`, i)
		if _, err := h.WriteVersions(ctx, []write.VersionWrite{{Address: a, Content: strings.NewReader(body)}}); err != nil {
			t.Fatal(err)
		}
	}
	f.CrashAfter(f.Ops()) // the power fails before the handle syncs its catalog
	_ = h.Close()
	lost, err := f.PowerCut()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(lost, "\n"), "unsynced commits") {
		t.Fatalf("the power cut took no catalog commit (%v): the handle's rows were durable already, and this test shows nothing", lost)
	}
	if pre := swampj(t, dir, "catalog", "verify"); pre.code == 0 || !strings.Contains(pre.stdout, "missing ") {
		t.Fatalf("catalog verify before recovery: exit %d, want rows missing (the power cut took them)\n%s", pre.code, pre.stdout)
	}
	swampjOK(t, dir, "recover")
	// Before any swamp command: swamp's own reads fill in rows they find
	// missing, so only swampj's verify shows what recovery did.
	if v := swampj(t, dir, "catalog", "verify"); v.code != 0 {
		t.Errorf("catalog verify after recover: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
	rows, _ := swampQuery(t, dir, `modelName == "m1"`)
	got := map[int64]bool{}
	for _, row := range rows {
		if row.Name == "result" {
			got[row.Version] = row.IsLatest
		}
	}
	if !got[prev+n] || got[prev+n-1] {
		t.Errorf("swamp data query after recover: %v, want version %d latest (and not %d)", got, prev+n, prev+n-1)
	}
	var sv swVersions
	if swampJSON(t, dir, &sv, "data", "versions", "m1", "result") {
		listed := map[int64]bool{}
		for _, v := range sv.Versions {
			listed[v.Version] = v.IsLatest
		}
		for v := prev + 1; v <= prev+n; v++ {
			if latest, ok := listed[v]; !ok || latest != (v == prev+n) {
				t.Errorf("swamp data versions after recover: version %d listed %v, latest %v; want listed, latest only for %d (%+v)", v, ok, latest, prev+n, sv.Versions)
			}
		}
	}
	healthy(t, dir, "", "after a handle's power cut and recover")
	if _, ok := swampOK(t, dir, "model", "method", "run", "m1", "execute", "--input", "run=echo after-the-handle"); ok {
		if v := latestOf(t, dir, addr); v != prev+n+1 {
			t.Errorf("swamp's method run after recovery wrote version %s, want %d", strconv.FormatInt(v, 10), prev+n+1)
		}
	}
}
