package catalog_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// expectedRows is what a disk walk of namespace ns would produce: two items,
// one of them written by two workflow steps, flags by the catalog's rule.
func expectedRows(c *catalog.Catalog, ns string) []catalog.Row {
	rs := []catalog.Row{
		row(ns, "aws/ec2/vpc", "m1", "state", 1),
		row(ns, "aws/ec2/vpc", "m1", "state", 2),
		row(ns, "aws/ec2/vpc", "m1", "state", 3),
		stepRow(ns, "out", 1, "wf", "job", "A"),
		stepRow(ns, "out", 2, "wf", "job", "B"),
		stepRow(ns, "out", 3, "wf", "job", "A"),
	}
	c.MarkLatest(rs)
	return rs
}

func diff(t *testing.T, c *catalog.Catalog, ns string, expected []catalog.Row, stale ...string) *catalog.Diff {
	t.Helper()
	d, err := c.Diff(ctx, ns, expected, stale)
	if err != nil {
		t.Fatalf("Diff: %v", err)
	}
	return d
}

func apply(t *testing.T, c *catalog.Catalog, ns string, expected []catalog.Row, d *catalog.Diff) {
	t.Helper()
	if err := c.Apply(ctx, ns, expected, d); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if d2 := diff(t, c, ns, expected, d.StaleNamespaces...); !d2.Empty() {
		t.Fatalf("Diff after Apply is not empty: %+v", d2)
	}
	if p, err := c.Populated(ctx); err != nil || !p {
		t.Fatalf("populated after Apply = %v, %v", p, err)
	}
}

func versions(rs []catalog.Row) []string {
	return flags(rs)
}

func driftVersions(ds []catalog.RowDrift) []string {
	var out []string
	for _, d := range ds {
		out = append(out, flags([]catalog.Row{d.Expected})[0])
	}
	return out
}

func TestDiffApplyEachDriftKind(t *testing.T) {
	for _, withStep := range []bool{false, true} {
		name := "plain"
		if withStep {
			name = "is_step_latest"
		}
		t.Run(name, func(t *testing.T) {
			path := catalogPath(t)
			var c *catalog.Catalog
			if withStep {
				c = stepCatalog(t)
				path = c.Path()
			} else {
				c = openRW(t, path)
			}
			want := expectedRows(c, "ns1")

			// Empty catalog: everything is missing. Apply inserts in
			// (created_at, version) order (swamp-format §9.9).
			d := diff(t, c, "ns1", want)
			if len(d.Missing) != len(want) || d.Empty() {
				t.Fatalf("fresh catalog: %+v", d)
			}
			apply(t, c, "ns1", want, d)
			wantStrings(t, "rowid order after rebuild", versions(rows(t, c, "ns1")),
				versions(sortedByCreated(want)))

			// Drift made behind the catalog's back, as another writer or a
			// crash would leave it.
			db := rawDB(t, path)
			mustExec(t, db, `DELETE FROM catalog WHERE data_name = 'state' AND version = 1`) // missing
			stale := row("ns1", "aws/ec2/vpc", "m1", "state", 4)                             // deleted version
			stale.IsLatest = true
			insertRaw(t, db, stale, withStep)
			mustExec(t, db, `UPDATE catalog SET is_latest = 0 WHERE data_name = 'state' AND version = 3`) // wrong flag
			mustExec(t, db, `UPDATE catalog SET size = 999 WHERE data_name = 'out' AND version = 2`)      // wrong field
			// Old stamps: solo rows of versions that exist, and one that does not.
			old1 := row("", "aws/ec2/vpc", "m1", "state", 2)
			old2 := row("", "aws/ec2/vpc", "m1", "gone", 1)
			insertRaw(t, db, old1, withStep)
			insertRaw(t, db, old2, withStep)
			// Foreign rows: another repo's namespace, same item and versions.
			foreign := []catalog.Row{row("other", "aws/ec2/vpc", "m1", "state", 1), row("other", "aws/ec2/vpc", "m1", "state", 2)}
			foreign[1].IsLatest = true
			for _, r := range foreign {
				insertRaw(t, db, r, withStep)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}

			d = diff(t, c, "ns1", want, "")
			wantStrings(t, "missing", versions(d.Missing), []string{"state/v1:0" + stepFlag(withStep, false)})
			wantStrings(t, "stale", versions(d.Stale), []string{"gone/v1:00", "state/v4:10"})
			wantStrings(t, "flags wrong", driftVersions(d.FlagsWrong), []string{"state/v3:1" + stepFlag(withStep, true)})
			if !reflect.DeepEqual(d.FlagsWrong[0].Columns, []string{"is_latest"}) {
				t.Fatalf("flag columns: %v", d.FlagsWrong[0].Columns)
			}
			wantStrings(t, "fields wrong", driftVersions(d.FieldsWrong), []string{"out/v2:" + outV2Flags(withStep)})
			if !reflect.DeepEqual(d.FieldsWrong[0].Columns, []string{"size"}) {
				t.Fatalf("field columns: %v", d.FieldsWrong[0].Columns)
			}
			wantStrings(t, "wrong namespace", versions(d.WrongNamespace), []string{"state/v2:00"})
			if d.WrongNamespace[0].Namespace != "" || d.Stale[0].Namespace != "" {
				t.Fatalf("old-stamp rows should carry their stamp: %+v", d.WrongNamespace)
			}

			apply(t, c, "ns1", want, d)
			if got := rows(t, c, ""); len(got) != 0 {
				t.Fatalf("old stamps survived: %v", flags(got))
			}
			if got := rows(t, c, "other"); !reflect.DeepEqual(got, foreign) {
				t.Fatalf("foreign rows changed:\n got  %+v\n want %+v", got, foreign)
			}
			sortRows := func(rs []catalog.Row) []catalog.Row {
				sort.Slice(rs, func(i, j int) bool {
					if rs[i].DataName != rs[j].DataName {
						return rs[i].DataName < rs[j].DataName
					}
					return rs[i].Version < rs[j].Version
				})
				return rs
			}
			if got := sortRows(rows(t, c, "ns1")); !reflect.DeepEqual(got, sortRows(append([]catalog.Row(nil), want...))) {
				t.Fatalf("rows after Apply:\n got  %+v\n want %+v", got, want)
			}
		})
	}
}

func stepFlag(withStep, v bool) string {
	if withStep && v {
		return "1"
	}
	return "0"
}

// out/v2 is step B's only version: latest without the column (swamp-format §3.5),
// step-latest but not item-latest with it (swamp-format §11).
func outV2Flags(withStep bool) string {
	if withStep {
		return "01"
	}
	return "10"
}

func sortedByCreated(rs []catalog.Row) []catalog.Row {
	out := append([]catalog.Row(nil), rs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		if out[i].Version != out[j].Version {
			return out[i].Version < out[j].Version
		}
		return out[i].DataName < out[j].DataName
	})
	return out
}

func TestApplyIsOneTransaction(t *testing.T) {
	path := catalogPath(t)
	boom := errors.New("injected commit failure")
	fault := fsx.NewFault(fsx.Real()).FailKind("failpoint:"+catalog.FailpointRebuild, boom)
	c := openWith(t, fault, path)
	upsert(t, c,
		row("ns1", "t", "m", "a", 1), row("ns1", "t", "m", "a", 2), row("ns1", "t", "m", "gone", 1),
		row("foreign", "t", "m", "a", 1))
	if err := c.Invalidate(ctx); err != nil {
		t.Fatal(err)
	}
	before := rows(t, c, "ns1")
	metaBefore, _ := c.Meta(ctx)

	want := []catalog.Row{row("ns1", "t", "m", "a", 1), row("ns1", "t", "m", "a", 2), row("ns1", "t", "m", "b", 1)}
	c.MarkLatest(want)
	want[0].Size = 12345 // a field to rewrite
	d := diff(t, c, "ns1", want)
	if d.Empty() {
		t.Fatal("expected drift")
	}
	err := c.Apply(ctx, "ns1", want, d)
	if !errors.Is(err, boom) {
		t.Fatalf("Apply = %v, want the injected failure", err)
	}
	if got := rows(t, c, "ns1"); !reflect.DeepEqual(got, before) {
		t.Fatalf("rows changed by a failed Apply:\n got  %v\n want %v", flags(got), flags(before))
	}
	if m, _ := c.Meta(ctx); !reflect.DeepEqual(m, metaBefore) {
		t.Fatalf("catalog_meta changed by a failed Apply: %v", m)
	}
	if len(rows(t, c, "foreign")) != 1 {
		t.Fatal("foreign row lost")
	}
	if n := fault.Count("failpoint:" + catalog.FailpointRebuild); n != 1 {
		t.Fatalf("rebuild failpoint hit %d times", n)
	}
	// A crash at the same point behaves the same way.
	crash := fsx.NewFault(fsx.Real())
	c2 := openWith(t, crash, path)
	crash.CrashAfter(crash.Ops())
	if err := c2.Apply(ctx, "ns1", want, d); !fsx.IsCrash(err) {
		t.Fatalf("Apply after crash point = %v", err)
	}
	if got := rows(t, c, "ns1"); !reflect.DeepEqual(got, before) {
		t.Fatalf("rows changed by a crashed Apply: %v", flags(got))
	}
}

func TestApplyRecomputesInsideTheTransaction(t *testing.T) {
	c := openRW(t, catalogPath(t))
	want := []catalog.Row{row("", "t", "m", "a", 1)}
	c.MarkLatest(want)
	d := diff(t, c, "", want)
	// A row appears between Diff and Apply: Apply still converges.
	upsert(t, c, row("", "t", "m", "late", 1))
	apply(t, c, "", want, d)
	wantStrings(t, "rows", flags(rows(t, c, "")), []string{"a/v1:10"})
}

func TestDiffValidatesExpected(t *testing.T) {
	c := openRW(t, catalogPath(t))
	if _, err := c.Diff(ctx, "ns1", []catalog.Row{row("", "t", "m", "a", 1)}, nil); catalog.ErrorCode(err) != catalog.CodeInvalidRow {
		t.Fatalf("row of another namespace: %v", err)
	}
	dup := []catalog.Row{row("", "t", "m", "a", 1), row("", "t", "m", "a", 1)}
	if _, err := c.Diff(ctx, "", dup, nil); catalog.ErrorCode(err) != catalog.CodeInvalidRow {
		t.Fatalf("duplicate version: %v", err)
	}
}

func TestDiffJSONIsStable(t *testing.T) {
	c := openRW(t, catalogPath(t))
	upsert(t, c, row("", "t", "m", "a", 1))
	d := diff(t, c, "", nil)
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	wantStrings(t, "diff JSON keys", keys, []string{
		"fields_wrong", "flags_wrong", "missing", "namespace", "stale", "stale_namespaces",
		"step_latest_column", "wrong_namespace",
	})
	if string(m["missing"]) != "[]" || string(m["stale_namespaces"]) != "[]" {
		t.Fatalf("empty lists must be [], got %s", data)
	}
	var stale []map[string]any
	if err := json.Unmarshal(m["stale"], &stale); err != nil || len(stale) != 1 {
		t.Fatalf("stale: %s %v", m["stale"], err)
	}
	for _, col := range []string{"namespace", "type_normalized", "model_id", "data_name", "id", "version",
		"is_latest", "model_name", "spec_name", "data_type", "content_type", "lifetime", "owner_type",
		"streaming", "size", "created_at", "tags", "owner_ref", "workflow_run_id", "workflow_name",
		"job_name", "step_name", "source", "is_step_latest"} {
		if _, ok := stale[0][col]; !ok {
			t.Fatalf("row JSON lacks %q: %v", col, stale[0])
		}
	}
}
