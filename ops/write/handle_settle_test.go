package write

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
)

// A held write's intent stays open, parked, until a sync of the catalog
// has made its lazily committed row durable: the timer settles a handle
// that stopped writing (marks committed, nothing left open), and without
// the timer the settleEvery-th write settles every parked intent, whose
// marks ride the next write's journal commit. Close settles the rest.
func TestHandleSettlesParkedIntents(t *testing.T) {
	ctx := context.Background()
	write := func(t *testing.T, h *Handle, n int) {
		t.Helper()
		if _, err := h.WriteVersions(ctx, []VersionWrite{{Address: handleAddr(t, 0), Content: strings.NewReader(fmt.Sprint("version ", n))}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("timer", func(t *testing.T) {
		r := newWriteRepo(t)
		h, err := Open(ctx, r, WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second, FS: fsx.Real()}})
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		write(t, h, 1)
		if !h.isParked(openWriteIntents(t, r)[0].ID) {
			t.Fatal("the write's intent is open but not parked")
		}
		deadline := time.Now().Add(10 * settleAfter)
		for len(openWriteIntents(t, r)) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the intent is still open %v after the write", 10*settleAfter)
			}
			time.Sleep(settleAfter / 5)
		}
	})
	t.Run("every", func(t *testing.T) {
		r := newWriteRepo(t)
		o := WriteOptions{Common: host.Common{SwampLockTimeout: 5 * time.Second, FS: fsx.Real()}}
		o.noSettleTimer = true
		h, err := Open(ctx, r, o)
		if err != nil {
			t.Fatal(err)
		}
		for n := 1; n < settleEvery; n++ {
			write(t, h, n)
		}
		if got := len(openWriteIntents(t, r)); got != settleEvery-1 {
			t.Fatalf("%d intents open after %d writes, want all of them", got, settleEvery-1)
		}
		write(t, h, settleEvery) // settles: the marks are pending
		write(t, h, settleEvery+1)
		if got := len(openWriteIntents(t, r)); got != 1 {
			t.Fatalf("%d intents open after the settling write and one more, want that last one", got)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if got := len(openWriteIntents(t, r)); got != 0 {
			t.Fatalf("%d intents open after Close", got)
		}
	})
}
