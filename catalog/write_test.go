package catalog_test

import (
	"errors"
	"testing"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
)

// stepCatalog opens a catalog swamp created with the swamp-format §11 is_step_latest column.
func stepCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	path := catalogPath(t)
	db := buildFromFixture(t, path, "swamp-schema4-step-latest.sql")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	c := openRW(t, path)
	if !c.HasStepLatest() {
		t.Fatal("fixture catalog has no is_step_latest")
	}
	return c
}

func upsert(t *testing.T, c *catalog.Catalog, rs ...catalog.Row) {
	t.Helper()
	for _, r := range rs {
		if err := c.UpsertNewVersion(ctx, r); err != nil {
			t.Fatalf("UpsertNewVersion v%d: %v", r.Version, err)
		}
	}
}

func TestUpsertNewVersionPlainItem(t *testing.T) {
	c := openRW(t, catalogPath(t))
	upsert(t, c,
		row("", "aws/ec2/vpc", "m1", "state", 1),
		row("", "aws/ec2/vpc", "m1", "state", 2),
		row("", "aws/ec2/vpc", "m1", "other", 1),
		row("", "aws/ec2/vpc", "m1", "state", 3),
	)
	wantStrings(t, "rows", flags(rows(t, c, "")),
		[]string{"state/v1:00", "state/v2:00", "other/v1:10", "state/v3:10"})

	// Re-writing a version replaces its row: new rowid, at the end (swamp-format §3.2).
	upsert(t, c, row("", "aws/ec2/vpc", "m1", "state", 3))
	wantStrings(t, "after rewrite", flags(rows(t, c, "")),
		[]string{"state/v1:00", "state/v2:00", "other/v1:10", "state/v3:10"})
	upsert(t, c, row("", "aws/ec2/vpc", "m1", "state", 2))
	wantStrings(t, "after rewriting v2", flags(rows(t, c, "")),
		[]string{"state/v1:00", "other/v1:10", "state/v3:00", "state/v2:10"})

	got, ok, err := c.LatestRow(ctx, catalog.ItemKey{"", "aws/ec2/vpc", "m1", "state"})
	if err != nil || !ok || got.Version != 2 {
		t.Fatalf("LatestRow = v%d %v %v", got.Version, ok, err)
	}
}

// Without is_step_latest, is_latest is per (item, step_name) (swamp-format §3.5).
func TestUpsertNewVersionStepScopedLatestWithoutColumn(t *testing.T) {
	c := openRW(t, catalogPath(t))
	upsert(t, c,
		stepRow("", "out", 1, "wf", "job", "A"),
		stepRow("", "out", 2, "wf", "job", "B"),
		stepRow("", "out", 3, "wf", "job", "A"),
		stepRow("", "out", 4, "wf2", "job", "B"), // workflow_name is not part of the group
	)
	wantStrings(t, "rows", flags(rows(t, c, "")),
		[]string{"out/v1:00", "out/v2:00", "out/v3:10", "out/v4:10"})
	got, _, _ := c.LatestRow(ctx, catalog.ItemKey{"", "aws/ec2/vpc", "m1", "out"})
	if got.Version != 4 {
		t.Fatalf("LatestRow picks the newest rowid among latest rows: got v%d", got.Version)
	}

	// Removing step A's latest hands the flag to A's highest remaining.
	if err := c.RemoveVersion(ctx, catalog.ItemKey{"", "aws/ec2/vpc", "m1", "out"}, 3); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "after remove v3", flags(rows(t, c, "")),
		[]string{"out/v1:10", "out/v2:00", "out/v4:10"})
}

// With is_step_latest: is_latest per item, is_step_latest per
// (workflow, job, step) group (swamp-format §11).
func TestUpsertNewVersionWithStepLatestColumn(t *testing.T) {
	c := stepCatalog(t)
	upsert(t, c,
		stepRow("", "out", 1, "wf", "job", "A"),
		stepRow("", "out", 2, "wf", "job", "B"),
		stepRow("", "out", 3, "wf", "job", "A"),
		stepRow("", "out", 4, "wf2", "job", "A"), // another workflow: its own step group
		stepRow("", "out", 5, "wf", "job2", "A"), // another job: its own step group
	)
	wantStrings(t, "rows", flags(rows(t, c, "")),
		[]string{"out/v1:00", "out/v2:01", "out/v3:01", "out/v4:01", "out/v5:11"})

	key := catalog.ItemKey{"", "aws/ec2/vpc", "m1", "out"}
	// Remove the item's latest: v4 becomes latest; (wf,job2,A) group is now empty.
	if err := c.RemoveVersion(ctx, key, 5); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "after remove v5", flags(rows(t, c, "")),
		[]string{"out/v1:00", "out/v2:01", "out/v3:01", "out/v4:11"})
	// Remove step (wf,job,A)'s latest: v1 takes is_step_latest, is_latest stays on v4.
	if err := c.RemoveVersion(ctx, key, 3); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "after remove v3", flags(rows(t, c, "")),
		[]string{"out/v1:01", "out/v2:01", "out/v4:11"})
	// Removing a row without flags, or a missing one, changes no flag.
	if err := c.RemoveVersion(ctx, key, 99); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "after remove missing", flags(rows(t, c, "")),
		[]string{"out/v1:01", "out/v2:01", "out/v4:11"})

	// Re-writing v2 from another step: group B loses its only row, A's v2 is newest.
	moved := stepRow("", "out", 2, "wf", "job", "A")
	upsert(t, c, moved)
	wantStrings(t, "after moving v2 to step A", flags(rows(t, c, "")),
		[]string{"out/v1:00", "out/v4:01", "out/v2:11"})
}

func TestRemoveVersionRowidOrderKept(t *testing.T) {
	c := openRW(t, catalogPath(t))
	upsert(t, c,
		row("", "t", "m", "a", 1), row("", "t", "m", "b", 1), row("", "t", "m", "a", 2))
	if err := c.RemoveVersion(ctx, catalog.ItemKey{"", "t", "m", "a"}, 2); err != nil {
		t.Fatal(err)
	}
	// a/v1 is re-flagged in place: it keeps its rowid before b/v1 (swamp-format §9.9).
	wantStrings(t, "rows", flags(rows(t, c, "")), []string{"a/v1:10", "b/v1:10"})
}

func TestUpsertVersionsOneTransaction(t *testing.T) {
	path := catalogPath(t)
	boom := errors.New("boom")
	fault := fsx.NewFault(fsx.Real()).FailKind("failpoint:"+catalog.FailpointUpsert, boom)
	c := openWith(t, fault, path)
	batch := []catalog.Row{
		stepRow("", "out", 1, "wf", "job", "A"),
		stepRow("", "out", 2, "wf", "job", "B"),
		stepRow("", "out", 3, "wf", "job", "A"),
	}
	if err := c.UpsertVersions(ctx, batch); !errors.Is(err, boom) {
		t.Fatalf("UpsertVersions with failing commit: %v", err)
	}
	if got := rows(t, c, ""); len(got) != 0 {
		t.Fatalf("rolled-back batch left rows: %v", flags(got))
	}
	if err := c.UpsertNewVersion(ctx, batch[0]); !errors.Is(err, boom) {
		t.Fatalf("UpsertNewVersion with failing commit: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = openRW(t, path)
	if err := c.UpsertVersions(ctx, batch); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "rows", flags(rows(t, c, "")), []string{"out/v1:00", "out/v2:10", "out/v3:10"})
}

func TestUpsertDeferredAndRemoveItem(t *testing.T) {
	c := openRW(t, catalogPath(t))
	upsert(t, c, row("", "t", "m", "a", 1), row("", "t", "m", "b", 1))
	if err := c.UpsertDeferred(ctx, row("", "t", "m", "a", 2)); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "deferred", flags(rows(t, c, "")), []string{"a/v1:10", "b/v1:10", "a/v2:00"})
	upsert(t, c, row("", "t", "m", "a", 2)) // advanceLatestMarkers
	wantStrings(t, "advanced", flags(rows(t, c, "")), []string{"a/v1:00", "b/v1:10", "a/v2:10"})

	if err := c.RemoveItem(ctx, catalog.ItemKey{"", "t", "m", "a"}); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "after RemoveItem", flags(rows(t, c, "")), []string{"b/v1:10"})
}

func TestRestamp(t *testing.T) {
	c := stepCatalog(t)
	// Old solo rows v1..v3 of "a", v1 of "b"; the new namespace already has
	// a/v2 and a/v4 (written after `namespace set`).
	upsert(t, c,
		row("", "t", "m", "a", 1), row("", "t", "m", "a", 2), row("", "t", "m", "a", 3),
		row("", "t", "m", "b", 1),
		row("ns1", "t", "m", "a", 2), row("ns1", "t", "m", "a", 4),
		row("", "t", "m", "untouched", 1),
	)
	keys := []catalog.ItemKey{{"", "t", "m", "a"}, {"", "t", "m", "b"}}
	if err := c.Restamp(ctx, "", "ns1", keys); err != nil {
		t.Fatal(err)
	}
	// a/v2 existed in ns1: the solo one is gone, no duplicates; the rest
	// keep their rowid order; flags recomputed over the merged item.
	wantStrings(t, "ns1", flags(rows(t, c, "ns1")),
		[]string{"a/v1:00", "a/v3:00", "b/v1:11", "a/v2:00", "a/v4:11"})
	wantStrings(t, "solo", flags(rows(t, c, "")), []string{"untouched/v1:11"})
	ns, err := c.Namespaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "namespaces", ns, []string{"", "ns1"})

	// Idempotent: running it again changes nothing.
	if err := c.Restamp(ctx, "", "ns1", keys); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "ns1 again", flags(rows(t, c, "ns1")),
		[]string{"a/v1:00", "a/v3:00", "b/v1:11", "a/v2:00", "a/v4:11"})

	// A key stamped with another namespace is refused before any write.
	err = c.Restamp(ctx, "", "ns1", []catalog.ItemKey{{"ns2", "t", "m", "a"}})
	if catalog.ErrorCode(err) != catalog.CodeInvalidRow {
		t.Fatalf("Restamp with a foreign key: %v", err)
	}
}

func TestInvalidateKeepsRows(t *testing.T) {
	c := openRW(t, catalogPath(t))
	upsert(t, c, row("", "t", "m", "a", 1))
	if err := c.Apply(ctx, "", rows(t, c, ""), nil); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Populated(ctx); !p {
		t.Fatal("Apply did not set populated")
	}
	if err := c.Invalidate(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := c.Meta(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["populated"]; ok || m["schema_version"] != "4" {
		t.Fatalf("meta after Invalidate: %v", m)
	}
	if len(rows(t, c, "")) != 1 {
		t.Fatal("Invalidate removed rows")
	}
}

func TestWritesRejectInvalidRows(t *testing.T) {
	c := openRW(t, catalogPath(t))
	bad := row("", "", "m", "a", 1)
	if err := c.UpsertNewVersion(ctx, bad); catalog.ErrorCode(err) != catalog.CodeInvalidRow {
		t.Fatalf("empty type: %v", err)
	}
	if err := c.RemoveItem(ctx, catalog.ItemKey{"", "t", "", "a"}); catalog.ErrorCode(err) != catalog.CodeInvalidRow {
		t.Fatalf("empty model id: %v", err)
	}
}

// TestPrepareUpsertVersions: the prepared transaction's rows stay invisible
// (to this handle's other connections and to the VersionID a step observes
// with) until Commit; Rollback leaves the catalog as it was.
func TestPrepareUpsertVersions(t *testing.T) {
	c := openRW(t, catalogPath(t))
	key := catalog.ItemKey{Namespace: "", TypeNormalized: "aws/ec2/vpc", ModelID: "m1", DataName: "state"}
	upsert(t, c, row("", "aws/ec2/vpc", "m1", "state", 1))

	p, err := c.PrepareUpsertVersions(ctx, []catalog.Row{row("", "aws/ec2/vpc", "m1", "state", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.VersionID(ctx, key, 2); err != nil || ok {
		t.Fatalf("an uncommitted row is visible: %v %v", ok, err)
	}
	p.Rollback()
	wantStrings(t, "after rollback", flags(rows(t, c, "")), []string{"state/v1:10"})

	p, err = c.PrepareUpsertVersions(ctx, []catalog.Row{row("", "aws/ec2/vpc", "m1", "state", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "after commit", flags(rows(t, c, "")), []string{"state/v1:00", "state/v2:10"})
	if id, ok, err := c.VersionID(ctx, key, 2); err != nil || !ok || id != row("", "aws/ec2/vpc", "m1", "state", 2).ID {
		t.Fatalf("VersionID = %q %v %v", id, ok, err)
	}
}

// UpsertVersionsBelow puts a version in below a later one, which keeps the
// latest flag; with no later row it takes the flag, as the highest version
// with a row. Recovery uses it for a write a later one was published on
// top of.
func TestUpsertVersionsBelowLeavesTheLaterVersionLatest(t *testing.T) {
	c := openRW(t, catalogPath(t))
	for _, v := range []int64{1, 3} {
		if err := c.UpsertNewVersion(ctx, row("", "t/x", "m1", "d", v)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.UpsertVersionsBelow(ctx, []catalog.Row{row("", "t/x", "m1", "d", 2)}); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "flags with a later row", flags(rows(t, c, "")), []string{"d/v1:00", "d/v3:10", "d/v2:00"})
	if err := c.UpsertVersionsBelow(ctx, []catalog.Row{row("", "t/x", "m1", "d", 4)}); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "flags with no later row", flags(rows(t, c, "")), []string{"d/v1:00", "d/v3:00", "d/v2:00", "d/v4:10"})
}
