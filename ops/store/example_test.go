package store_test

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

// The doctor's loop: walk a data root and scan every item. Here it runs over
// the committed fixture of issue #3955.
func ExampleScanItem() {
	root := filepath.Join("..", "..", "testdata", "store", "issue-3955", "data")
	fsys := fsx.Real()
	_ = store.Walk(context.Background(), fsys, root, func(it store.Item) error {
		st, err := store.ScanItem(fsys, it, store.CheckOptions{})
		if err != nil {
			return err
		}
		if st.LatestReadable != nil {
			fmt.Printf("%s: ok, version %d\n", it.DataName, st.LatestReadable.Number)
			return nil
		}
		fmt.Printf("%s: latest %d is unreadable; last good is %d\n", it.DataName, st.Pointer.Version, st.LastGood.Number)
		for _, p := range st.Problems {
			fmt.Printf("  %s: %s\n", p.Code, p.Message)
		}
		return nil
	})
	// Output:
	// 207333: ok, version 1
	// journal: ok, version 2
	// state: latest 3 is unreadable; last good is 2
	//   latest_unreadable: latest designates version 3, which is damaged (metadata_empty, raw_empty)
	//   metadata_empty: version 3: metadata.yaml is zero bytes
	//   raw_empty: version 3: raw is zero bytes
}
