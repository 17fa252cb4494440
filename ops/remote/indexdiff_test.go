package remote

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// Losses names what was in the bucket before and is deleted, overwritten
// (not a latest pointer) or dropped from the index after, unless the
// command changed it in its own cache; ChangesSince reads that from the
// cache's files.
func TestLossesBeforeAfter(t *testing.T) {
	dir := t.TempDir()
	c := &Cache{Dir: dir, S3: S3Config{Bucket: "b", Prefix: "team"}}
	obj := func(h string) BucketObject { return BucketObject{Size: 3, Hash: h} }
	v := "data/command/shell/id/result/"
	before := &BucketSnapshot{
		Objects: map[string]BucketObject{
			v + "1/raw": obj("a"), v + "2/raw": obj("b"), v + "3/raw": obj("c"), v + "latest": obj("l1"),
			v + "4/raw": obj("d"), v + "5/raw": obj("e"), v + "6/raw": obj("f"), v + "7/raw": obj("g"),
		},
		Indexed: map[string]bool{v + "1/raw": true, v + "6/raw": true, v + "7/raw": true},
		Local:   map[string]bool{v + "4/raw": true, v + "7/raw": true},
		Taken:   time.Now().Add(-time.Minute),
	}
	after := &BucketSnapshot{
		Objects: map[string]BucketObject{
			v + "1/raw": obj("a"), v + "3/raw": obj("X"), v + "latest": obj("l2"), v + "5/raw": obj("Y"),
			v + "6/raw": obj("f"), v + "8/raw": obj("new"),
		},
		Indexed: map[string]bool{v + "1/raw": true, v + "8/raw": true},
	}
	// The command wrote 5 in its cache, and removed 4 and 7 from it (they
	// were there at the snapshot before).
	for _, rel := range []string{v + "5/raw"} {
		p := c.LocalPath(rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("Y"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ch := ChangesSince(c, Options{}, before)
	if !ch.Written[v+"5/raw"] || !ch.Removed[v+"4/raw"] || !ch.Removed[v+"7/raw"] || len(ch.Written) != 1 || len(ch.Removed) != 2 {
		t.Fatalf("changes: %+v", ch)
	}
	got := Losses(c, before, after, ch)
	want := []Lost{
		{Path: v + "2/raw", Key: "team/" + v + "2/raw", Kind: LostDeleted, Size: 3, Hash: "b"},
		{Path: v + "3/raw", Key: "team/" + v + "3/raw", Kind: LostOverwritten, Size: 3, Hash: "c"},
		{Path: v + "6/raw", Key: "team/" + v + "6/raw", Kind: LostUnindexed, Size: 3, Hash: "f"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("losses:\n got %+v\nwant %+v", got, want)
	}
	if l := Losses(c, before, before, CommandChanges{}); len(l) != 0 {
		t.Fatalf("no change, yet losses %+v", l)
	}
	e := &LossError{Bucket: "b", Kind: S3Type, Lost: got}
	if e.Code() != "bucket_versions_lost" {
		t.Fatal(e.Code())
	}
}
