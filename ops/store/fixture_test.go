package store_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

// TestFixtureIssue3955 runs the doctor's view over the committed data root
// of testdata/store/issue-3955 (see its README).
func TestFixtureIssue3955(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "store", "issue-3955", "data")
	var got []string
	err := store.Walk(context.Background(), fsx.Real(), root, func(it store.Item) error {
		st, err := store.ScanItem(fsx.Real(), it, store.CheckOptions{VerifyChecksum: true})
		if err != nil {
			return err
		}
		var cs []string
		for _, c := range codes(st.Problems) {
			cs = append(cs, string(c))
		}
		got = append(got, fmt.Sprintf("%s latest=%d readable=%v lastGood=%d problems=[%s]",
			it.DataName, st.Pointer.Version, st.LatestReadable != nil, number(st.LastGood), strings.Join(cs, " ")))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"207333 latest=1 readable=true lastGood=1 problems=[]",
		"journal latest=2 readable=true lastGood=2 problems=[]",
		"state latest=3 readable=false lastGood=2 problems=[latest_unreadable metadata_empty raw_empty]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
	}
}
