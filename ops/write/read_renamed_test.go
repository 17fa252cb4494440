package write

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/read"
)

// TestListHidesRenamedItem: swamp's `data list` does not show an item whose
// latest version is a rename marker; `data versions` shows its versions,
// the marker with where it points.
func TestListHidesRenamedItem(t *testing.T) {
	r := newWriteRepo(t)
	owner := meta.Owner{OwnerType: "model-method", OwnerRef: shellModel}
	old, nu := writeAddr(t, "command/shell/"+shellModel+"/old"), writeAddr(t, "command/shell/"+shellModel+"/new")
	plantSwampVersion(t, r, old, 1, owner, swampTags("old", "m1"), "")
	plantSwampVersion(t, r, old, 2, owner, swampTags("old", "m1"), "new")
	plantSwampVersion(t, r, nu, 1, owner, swampTags("new", "m1"), "")
	other := writeAddr(t, "command/shell/"+shellModel+"/other")
	plantSwampVersion(t, r, other, 1, owner, swampTags("other", "m1"), "")
	items, err := read.ListData(context.Background(), r, "", host.Common{FS: fsx.Real()})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.DataName)
	}
	if fmt.Sprint(got) != "[new other]" {
		t.Fatalf("listed %v, want [new other] (old was renamed away)", got)
	}
	_, vs, err := read.DataVersions(context.Background(), r, old, host.Common{FS: fsx.Real()})
	if err != nil || len(vs) != 2 || vs[1].RenamedTo != "new" || vs[1].Lifecycle != "deleted" || !vs[1].Latest {
		t.Fatalf("versions of the renamed item: %+v, %v", vs, err)
	}
}

// TestOpenDataFollowsFiveRenames: swamp's findByName follows up to five
// rename markers (it gives up at a sixth).
func TestOpenDataFollowsFiveRenames(t *testing.T) {
	r := newWriteRepo(t)
	owner := meta.Owner{OwnerType: "model-method", OwnerRef: shellModel}
	name := func(i int) string { return fmt.Sprintf("n%d", i) }
	for i := 0; i <= 6; i++ {
		a := writeAddr(t, "command/shell/"+shellModel+"/"+name(i))
		plantSwampVersion(t, r, a, 1, owner, swampTags(name(i), "m1"), "")
		if i < 6 {
			plantSwampVersion(t, r, a, 2, owner, swampTags(name(i), "m1"), name(i+1))
		}
	}
	for start, want := range map[int]string{1: "n6", 0: ""} { // n1: five markers; n0: six
		c, err := read.OpenData(context.Background(), r, writeAddr(t, "command/shell/"+shellModel+"/"+name(start)), 0, host.Common{FS: fsx.Real()})
		if want == "" {
			if err == nil {
				c.Reader.Close()
				t.Fatalf("six renames from n0 resolved to %s, swamp finds no data", c.Address.DataName)
			}
			continue
		}
		if err != nil {
			t.Fatalf("five renames from n%d: %v", start, err)
		}
		_, _ = io.Copy(io.Discard, c.Reader)
		c.Reader.Close()
		if c.Address.DataName != want {
			t.Fatalf("from n%d resolved to %s, want %s", start, c.Address.DataName, want)
		}
	}
}
