package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

// walkTree builds a data root exercising every rule of swamp-format §2.7.3 and returns
// it with the item keys Walk must report, in walk order.
func walkTree(t *testing.T) (string, []string) {
	root := t.TempDir()
	item := func(rel string, vs ...int64) string {
		dir := filepath.Join(root, filepath.FromSlash(rel))
		mkdir(t, dir)
		for _, v := range vs {
			writeVersion(t, dir, v, content(v))
		}
		if len(vs) > 0 {
			writeLatest(t, dir, vs[len(vs)-1])
		}
		return dir
	}
	m := "command/shell/" + modelID
	item(m+"/result", 1, 2)
	item(m+"/207333", 1)       // a purely numeric data name is an item, not a version
	item(m + "/execution-log") // an item with no version yet is still listed
	// One bad latest metadata must not hide its siblings (swamp-format §9.2).
	bad := item(m+"/broken", 1, 2)
	writeFile(t, filepath.Join(bad, "2", "metadata.yaml"), nil)
	writeFile(t, filepath.Join(root, "command", "shell", modelID, ".lock"), []byte(`{"pid":1}`))
	mkdir(t, filepath.Join(root, "command", "shell", modelID, ".swampj-stage-1", "1"))
	symlink(t, filepath.Join(root, m, "result"), filepath.Join(root, m, "alias")) // skipped (findAllForModel)

	// A model whose only proof is a numeric data name holding a version.
	item("@acme/scanner/model-001/42", 7)

	// A deep type, and a type directory that is all digits.
	item("aws/ec2/vpc/m2/state", 3)
	item("123/m3/x", 1)

	// Catalog and lock files in the root are files: ignored.
	for _, f := range []string{"_catalog.db", "_catalog.db-wal", "_catalog.db-shm", "_catalog.db-journal", "_catalog.db.compact", ".lock", ".datastore.lock", ".0a1b.tmp"} {
		writeFile(t, filepath.Join(root, f), []byte("x"))
	}
	// A dot-directory is walked like swamp walks it; swampj's own are not.
	item(".trash/old/m4/kept", 1)
	item(store.QuarantineDirName+"/20261201/command/shell/"+modelID+"/result", 1)
	item(".swampj-staging/command/shell/m5/x", 1)

	// Not models: a model-shaped tree at depth 1, a version dir lacking
	// metadata.yaml, a version whose name is not all digits, and a symlinked
	// type directory.
	item("m6/x", 1) // depth 1: "m6" is a type, x a model with no item dirs
	mkdir(t, filepath.Join(root, "t7", "m7", "x", "1"))
	writeFile(t, filepath.Join(root, "t7", "m7", "x", "1", "raw"), []byte("{}"))
	item("t8/m8/x/2-old")
	writeFile(t, filepath.Join(root, "t8", "m8", "x", "2-old", "metadata.yaml"), []byte("x"))
	symlink(t, filepath.Join(root, "aws"), filepath.Join(root, "aws-link"))

	want := []string{
		".trash/old/m4/kept",
		"123/m3/x",
		"@acme/scanner/model-001/42",
		"aws/ec2/vpc/m2/state",
		"command/shell/" + modelID + "/207333",
		"command/shell/" + modelID + "/broken",
		"command/shell/" + modelID + "/execution-log",
		"command/shell/" + modelID + "/result",
	}
	return root, want
}

func TestWalkClassifiesLikeSwamp(t *testing.T) {
	root, want := walkTree(t)
	var got []string
	err := store.Walk(context.Background(), fsx.Real(), root, func(it store.Item) error {
		got = append(got, it.Key())
		if it.Dir != filepath.Join(root, filepath.FromSlash(it.Key())) {
			t.Errorf("item %s: Dir %s", it.Key(), it.Dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Walk found\n %q\nwant\n %q", got, want)
	}
}

func TestWalkItemFields(t *testing.T) {
	root, _ := walkTree(t)
	items, err := store.FindItems(context.Background(), fsx.Real(), root, "aws/")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Item{{Type: "aws/ec2/vpc", ModelID: "m2", DataName: "state", Dir: filepath.Join(root, "aws", "ec2", "vpc", "m2", "state")}}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("got %+v", items)
	}
}

func TestFindItemsPrefix(t *testing.T) {
	root, all := walkTree(t)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"command/shell/" + modelID + "/r", []string{"command/shell/" + modelID + "/result"}},
		{"command/shell/" + modelID + "/", all[4:]},
		{"command/sh", all[4:]},
		{"a", []string{"aws/ec2/vpc/m2/state"}},
		{"@acme/scanner/model-001/42", []string{"@acme/scanner/model-001/42"}},
		{"zzz", nil},
	} {
		items, err := store.FindItems(context.Background(), fsx.Real(), root, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.Key())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("prefix %q: got %q, want %q", tc.prefix, got, tc.want)
		}
	}
}

func TestWalkStopsOnCallbackErrorAndCancel(t *testing.T) {
	root, _ := walkTree(t)
	stop := errors.New("stop")
	n := 0
	err := store.Walk(context.Background(), fsx.Real(), root, func(store.Item) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("err %v after %d items", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := store.Walk(ctx, fsx.Real(), root, func(store.Item) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk: err %v", err)
	}
}

func TestWalkMissingRootHasNoItems(t *testing.T) {
	err := store.Walk(context.Background(), fsx.Real(), filepath.Join(t.TempDir(), "data"), func(store.Item) error {
		t.Error("no item expected")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
