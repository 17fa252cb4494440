package write

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
)

// plantSwampVersion writes version v of the item at a as swamp's method run
// writes it (raw, metadata.yaml, then latest), with the given owner and
// tags, renamedTo making it a rename marker.
func plantSwampVersion(t *testing.T, r *repo.Repo, a repo.Address, v int64, owner meta.Owner, tags meta.Tags, renamedTo string) {
	t.Helper()
	dir := filepath.Join(r.ModelDir(a), a.DataName, strconv.FormatInt(v, 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw := []byte(shellResult)
	size := int64(len(raw))
	md := &meta.Metadata{ID: "c6164d04-f509-467a-b1c2-9072c7c920ac", Name: a.DataName, Version: v, ContentType: "application/json",
		Lifetime: "infinite", GarbageCollection: meta.GarbageCollection{N: 10}, Tags: tags, Owner: owner,
		CreatedAt: "2026-07-01T10:42:45.917Z", Size: &size, Checksum: hexSHA256(raw)}
	if renamedTo != "" {
		md.Lifecycle, md.RenamedTo = "deleted", renamedTo
	}
	data, err := meta.Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raw"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(dir), "latest"), []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func swampTags(spec, model string) meta.Tags {
	return meta.Tags{{Key: "type", Value: "resource"}, {Key: "specName", Value: spec}, {Key: "modelName", Value: model}, {Key: "initiatedBy", Value: "ghost"}}
}

// plantDefinition writes models/{type}/{name}.yaml as `swamp model create` does.
func plantDefinition(t *testing.T, r *repo.Repo, typ, id, name string) {
	t.Helper()
	dir := filepath.Join(r.Dir, "models", filepath.FromSlash(typ))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	def := "type: " + typ + "\ntypeVersion: 2026.02.09.1\nid: " + id + "\nname: " + name + "\nversion: 1\ntags: {}\nglobalArguments: {}\nmethods: {}\n"
	if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(def), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWriteInheritsOwnerOfSwampVersion: a write with no owner, model or spec
// name over a version swamp's method run wrote carries that version's
// owner and tags, byte for byte what swamp writes (the golden file).
func TestWriteInheritsOwnerOfSwampVersion(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/"+shellModel+"/result")
	owner := meta.Owner{OwnerType: "model-method", OwnerRef: shellModel}
	plantSwampVersion(t, r, a, 1, owner, swampTags("result", "hello-shell"), "")
	plantSwampVersion(t, r, a, 2, owner, swampTags("result", "hello-shell"), "")
	at := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader(shellResult)},
		FixIdentity(WriteOptions{}, "7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f", at))
	golden := mustRead(t, filepath.Join("..", "..", "testdata", "golden", "metadata-model-method.yaml"))
	if md := mustRead(t, filepath.Join(got.Dir, "metadata.yaml")); got.Version != 3 || !bytes.Equal(md, golden) {
		t.Fatalf("version %d metadata.yaml:\n%s\nwant (swamp's):\n%s", got.Version, md, golden)
	}
	row := latestRow(t, r, a)
	if row.ModelName != "hello-shell" || row.SpecName != "result" || row.OwnerType != "model-method" || row.OwnerRef != shellModel {
		t.Fatalf("catalog row: model_name %q spec_name %q owner %s:%s", row.ModelName, row.SpecName, row.OwnerType, row.OwnerRef)
	}
}

func latestRow(t *testing.T, r *repo.Repo, a repo.Address) catalog.Row {
	t.Helper()
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	row, ok, err := c.LatestRow(context.Background(), catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: a.Type, ModelID: a.ModelID, DataName: a.DataName})
	if err != nil || !ok {
		t.Fatalf("no latest catalog row of %s: %v", a, err)
	}
	return row
}

// TestWriteRefusesOtherOwner: an explicit owner that is not the current
// version's is refused as swamp refuses it, before anything is journaled.
func TestWriteRefusesOtherOwner(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/"+shellModel+"/result")
	plantSwampVersion(t, r, a, 1, meta.Owner{OwnerType: "model-method", OwnerRef: shellModel}, swampTags("result", "m1"), "")
	before := viewItem(t, r, a)
	for name, w := range map[string]VersionWrite{
		"type":      {OwnerType: "manual", OwnerRef: "swampj"},
		"ref only":  {OwnerRef: "someone-else"},
		"type only": {OwnerType: "workflow-step"},
	} {
		t.Run(name, func(t *testing.T) {
			w.Address, w.Content = a, strings.NewReader("x")
			_, err := WriteVersions(context.Background(), r, []VersionWrite{w}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}})
			var inv *InvalidWriteError
			var mis *OwnerMismatchError
			if !errors.As(err, &inv) || !errors.As(err, &mis) {
				t.Fatalf("err = %v, want an *InvalidWriteError with an *OwnerMismatchError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `"model-method:`+shellModel+`"`) || !strings.Contains(msg, "nothing was changed") {
				t.Fatalf("message does not name the existing owner: %s", msg)
			}
			if v := viewItem(t, r, a); !sameView(v, before) {
				t.Fatalf("item changed: %v", v)
			}
			if ok, _ := fsx.Exists(fsx.Real(), r.JournalPath); ok {
				j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				all, err := j.List(true)
				j.Close()
				if err != nil || len(all) != 0 {
					t.Fatalf("journaled %d intents (%v), want none", len(all), err)
				}
			}
		})
	}
	// The same owner, given explicitly, is fine.
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("x"), OwnerType: "model-method", OwnerRef: shellModel}, WriteOptions{})
	if got.Version != 2 {
		t.Fatalf("wrote version %d", got.Version)
	}
}

// TestWriteNewItemOfDefinedModel: the first version of an item of a model
// that has a definition file is owned and named as swamp's method run
// would own and name it.
func TestWriteNewItemOfDefinedModel(t *testing.T) {
	r := newWriteRepo(t)
	const id = "bf105efe-655c-43e5-a453-e44b169bb171"
	plantDefinition(t, r, "command/shell", id, "m1")
	a := writeAddr(t, "command/shell/"+id+"/result")
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader(shellResult)}, WriteOptions{})
	md := got.Metadata
	if md.Owner.OwnerType != "model-method" || md.Owner.OwnerRef != id {
		t.Fatalf("owner %s:%s", md.Owner.OwnerType, md.Owner.OwnerRef)
	}
	if m, _ := md.Tags.Get("modelName"); m != "m1" {
		t.Fatalf("modelName %q, tags %v", m, md.Tags)
	}
	if s, _ := md.Tags.Get("specName"); s != "result" {
		t.Fatalf("specName %q", s)
	}
	if row := latestRow(t, r, a); row.ModelName != "m1" {
		t.Fatalf("catalog model_name %q", row.ModelName)
	}

	// No definition: the model's name comes from another item's tags.
	b := writeAddr(t, "command/shell/"+shellModel+"/log")
	plantSwampVersion(t, r, writeAddr(t, "command/shell/"+shellModel+"/result"), 1,
		meta.Owner{OwnerType: "model-method", OwnerRef: shellModel}, swampTags("result", "hello-shell"), "")
	got = write1(t, r, VersionWrite{Address: b, Content: strings.NewReader("hi\n")}, WriteOptions{})
	if m, _ := got.Metadata.Tags.Get("modelName"); m != "hello-shell" || got.Metadata.Owner.OwnerRef != shellModel {
		t.Fatalf("modelName %q owner %v", m, got.Metadata.Owner)
	}
}

// TestWriteFollowsRenameForOwner: an item swamp renamed away is current at
// its new name (findByName follows the marker): a write to the old name
// must carry the new name's owner.
func TestWriteFollowsRenameForOwner(t *testing.T) {
	r := newWriteRepo(t)
	old, nu := writeAddr(t, "command/shell/"+shellModel+"/old"), writeAddr(t, "command/shell/"+shellModel+"/new")
	// (swamp's rename copies the owner; a different one here tells which
	// version the write inherited from)
	planted := meta.Owner{OwnerType: "manual", OwnerRef: "after-rename"}
	plantSwampVersion(t, r, old, 1, meta.Owner{OwnerType: "manual", OwnerRef: "before-rename"}, swampTags("old", "m1"), "")
	plantSwampVersion(t, r, old, 2, meta.Owner{OwnerType: "manual", OwnerRef: "before-rename"}, swampTags("old", "m1"), "new")
	plantSwampVersion(t, r, nu, 1, planted, swampTags("new", "m1"), "")
	got := write1(t, r, VersionWrite{Address: old, Content: strings.NewReader("x")}, WriteOptions{})
	if got.Metadata.Owner != planted {
		t.Fatalf("owner %v, want the renamed-to item's", got.Metadata.Owner)
	}
	if s, _ := got.Metadata.Tags.Get("specName"); s != "new" {
		t.Fatalf("specName %q", s)
	}
}

// TestWriteOverlappedRechecksDefaults: the overlapped path plans before the
// lock; if what the version inherits changes meanwhile (the model is
// renamed in its definition while swamp holds the lock), the plan made
// before the lock must not be used.
func TestWriteOverlappedRechecksDefaults(t *testing.T) {
	r := newWriteRepo(t)
	const id = "bf105efe-655c-43e5-a453-e44b169bb171"
	plantDefinition(t, r, "command/shell", id, "m1")
	a := writeAddr(t, "command/shell/"+id+"/result")
	if err := os.MkdirAll(filepath.Join(r.ModelDir(a), a.DataName), 0o755); err != nil { // exists, no versions
		t.Fatal(err)
	}
	swampLock, err := lock.Acquire(context.Background(), fsx.Real(), lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID), lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	j, cat := openLibJournal(t, r)
	recorded := 0
	rename := func() {
		recorded++
		if err := os.Remove(filepath.Join(r.Dir, "models", "command", "shell", "m1.yaml")); err != nil {
			t.Error(err)
		}
		plantDefinition(t, r, "command/shell", id, "m2")
		if err := swampLock.Release(); err != nil {
			t.Error(err)
		}
	}
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("x")}, WriteOptions{Journal: j, Catalog: cat, recorded: rename})
	if recorded != 1 {
		t.Fatalf("the overlapped path ran %d times", recorded)
	}
	if m, _ := got.Metadata.Tags.Get("modelName"); m != "m2" {
		t.Fatalf("modelName %q, want m2 (the name under the lock)", m)
	}
	if md := mustRead(t, filepath.Join(got.Dir, "metadata.yaml")); !bytes.Contains(md, []byte("modelName: m2\n")) {
		t.Fatalf("metadata.yaml:\n%s", md)
	}
}
