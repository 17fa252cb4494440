package write

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
)

// handleAddr is goroutine i's item, of model i.
func handleAddr(t testing.TB, i int) repo.Address {
	return writeAddr(t, fmt.Sprintf("command/shell/3f9c2b7e-5a1d-4e8f-9b6c-%012d/result", i))
}

// Many goroutines writing through one handle: every write is published,
// named by `latest` and the catalog, with its own bytes; the done marks
// ride later commits or Close, so no intent is left open once the handle
// is closed; and a write after Close is refused, changing nothing.
func TestHandleConcurrentWriters(t *testing.T) {
	r := newWriteRepo(t)
	ctx := context.Background()
	h, err := Open(ctx, r, WriteOptions{Common: host.Common{SwampLockTimeout: 10 * time.Second, FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 5
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for n := 1; n <= each; n++ {
				body := fmt.Sprintf("writer %d version %d", i, n)
				res, err := h.WriteVersions(ctx, []VersionWrite{{Address: handleAddr(t, i), Content: strings.NewReader(body)}})
				if err != nil {
					t.Error(err)
					return
				}
				if res[0].Version != int64(n) {
					t.Errorf("writer %d write %d: version %d", i, n, res[0].Version)
				}
			}
		})
	}
	// Two goroutines on one model queue on its lock: both writes land.
	for range 2 {
		wg.Go(func() {
			if _, err := h.WriteVersions(ctx, []VersionWrite{{Address: handleAddr(t, 99), Content: strings.NewReader("shared model")}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range writers {
		v := viewItem(t, r, handleAddr(t, i))
		if v.Latest != strconv.Itoa(each) || v.CatalogLatest != each || len(v.CatalogRows) != each {
			t.Errorf("writer %d: %s", i, v)
		}
		want := fmt.Sprintf("writer %d version %d", i, each)
		dir := r.DataRoot + "/command/shell/" + handleAddr(t, i).ModelID + "/result/" + strconv.Itoa(each) + "/raw"
		if got := string(mustRead(t, dir)); got != want {
			t.Errorf("writer %d: raw %q, want %q", i, got, want)
		}
	}
	if v := viewItem(t, r, handleAddr(t, 99)); v.Latest != "2" || v.CatalogLatest != 2 {
		t.Errorf("the shared model: %s", v)
	}
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Errorf("open intents after Close: %d", len(open))
	}
	withJournal(t, r, func(j *journal.Journal) {
		all, err := j.List(true)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != writers*each+2 {
			t.Errorf("intents in the journal: %d, want %d", len(all), writers*each+2)
		}
	})
	noStagingLeft(t, r)
	_, err = h.WriteVersions(ctx, []VersionWrite{{Address: handleAddr(t, 0), Content: strings.NewReader("late")}})
	if !errors.Is(err, ErrHandleClosed) {
		t.Errorf("a write after Close: %v, want ErrHandleClosed", err)
	}
	if v := viewItem(t, r, handleAddr(t, 0)); v.Latest != strconv.Itoa(each) {
		t.Errorf("a refused write changed the item: %s", v)
	}
}

// A handle holds the repo shared: `swampj data write` (a process opening
// the journal itself) writes beside it, and a command that needs the repo
// alone waits until the handle is closed.
func TestHandleSharesTheRepoWithOtherWriters(t *testing.T) {
	r := newWriteRepo(t)
	ctx := context.Background()
	h, err := Open(ctx, r, WriteOptions{Common: host.Common{SwampLockTimeout: 10 * time.Second, FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.WriteVersions(ctx, []VersionWrite{{Address: handleAddr(t, 1), Content: strings.NewReader("through the handle")}}); err != nil {
		t.Fatal(err)
	}
	// A writer that opens the journal itself, while the handle is open.
	write1(t, r, VersionWrite{Address: handleAddr(t, 2), Content: strings.NewReader("beside it")}, WriteOptions{Common: host.Common{JournalLockTimeout: 2 * time.Second}})
	_, err = journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("an exclusive open of the journal succeeded while a write handle was open")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	j, err := journal.Open(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("an exclusive open after Close: %v", err)
	}
	_ = j.Close()
}

// A process that crashed writing a model after its version was published
// leaves its intent open; the handle, opened after it, finishes that
// intent under the model's lock before its own write of the model plans.
// (Opening the handle finishes nothing of it: a shared holder drives an
// intent only while it holds that intent's swamp lock.)
func TestHandleFinishesACrashedWriteOfItsModelFirst(t *testing.T) {
	r := newWriteRepo(t)
	ctx := context.Background()
	a := handleAddr(t, 7)
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("one")}, WriteOptions{})

	// Find the cut: just after version 2's publish rename.
	probe := fsx.NewFault(fsx.Real())
	cut := -1
	o := WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}, fsys: probe}
	probe.CrashAfter(-1)
	scratch := newWriteRepo(t)
	write1(t, scratch, VersionWrite{Address: a, Content: strings.NewReader("one")}, WriteOptions{})
	write1(t, scratch, VersionWrite{Address: a, Content: strings.NewReader("two")}, o)
	for _, op := range probe.Trace() {
		if strings.HasPrefix(op.Kind, "rename") && strings.HasSuffix(op.To, "/result/2") {
			cut = op.N
		}
	}
	if cut < 0 {
		t.Fatalf("no publish rename of version 2 in the trace: %v", probe.Trace())
	}
	crash := fsx.NewFault(fsx.Real()).CrashAfter(cut)
	_, err := WriteVersions(ctx, r, []VersionWrite{{Address: a, Content: strings.NewReader("two")}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: crash}})
	if !fsx.IsCrash(err) {
		t.Fatalf("the cut write: %v, want a crash", err)
	}
	if open := openWriteIntents(t, r); len(open) != 1 {
		t.Fatalf("open intents after the crash: %d, want 1", len(open))
	}

	h, err := Open(ctx, r, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsx.Real()}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.WriteVersions(ctx, []VersionWrite{{Address: a, Content: strings.NewReader("three")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if res[0].Version != 3 {
		t.Errorf("the handle's write got version %d, want 3", res[0].Version)
	}
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Errorf("open intents after the handle's write: %+v", open)
	}
	if v := viewItem(t, r, a); v.Latest != "3" || v.CatalogLatest != 3 || len(v.CatalogRows) != 3 {
		t.Errorf("after the handle's write: %s", v)
	}
}
