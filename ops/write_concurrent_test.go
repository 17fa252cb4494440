package ops_test

// Writers of different models share the journal (journal/hold.go):
// they run side by side, and none finishes or undoes an intent of a
// writer that is still alive.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
	"github.com/swampj/swampj/ops/write"
	"github.com/swampj/swampj/recover"
)

var concModels = []string{
	"aaaaaaaa-1111-4111-8111-111111111111",
	"bbbbbbbb-2222-4222-8222-222222222222",
	"cccccccc-3333-4333-8333-333333333333",
	"dddddddd-4444-4444-8444-444444444444",
}

func concAddr(i int) repo.Address {
	return repo.Address{Type: "command/shell", ModelID: concModels[i], DataName: "result"}
}

func concItemDir(r *repo.Repo, i int) string {
	return filepath.Join(r.DataRoot, "command", "shell", concModels[i], "result")
}

// concOld and concNew are each model's payloads before and after.
func concOld(i int) []byte { return []byte(fmt.Sprintf(`{"model":%d,"version":"old"}`, i)) }
func concNew(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("model %d, the new version. ", i)), 300<<10/26)
}

// concWrite writes payload as the next version of model i through fsys.
func concWrite(fsys fsx.FS, r *repo.Repo, i int, payload []byte, timeout time.Duration) error {
	_, err := write.WriteVersions(context.Background(), r, []write.VersionWrite{{Address: concAddr(i), Content: bytes.NewReader(payload),
		ModelName: fmt.Sprintf("m%d", i), SpecName: "result"}}, write.WriteOptions{Common: host.Common{SwampLockTimeout: timeout, JournalLockTimeout: timeout, FS: fsys}})
	return err
}

// concRepo is a repo where each of n models has version 1 (concOld).
func concRepo(t *testing.T, n int) *repo.Repo {
	t.Helper()
	dir := fsxtest.ScratchDir(t)
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := loadCrashRepo(t, dir)
	for i := 0; i < n; i++ {
		if err := concWrite(nil, r, i, concOld(i), 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// pauseFS is the real disk, concurrent as fsx.Real, on which a write stops
// before it publishes its staged version (its intent durable, nothing
// visible yet) until resume is closed: a writer alive in the middle of its
// intent.
type pauseFS struct {
	fsx.OS
	paused, resume chan struct{}
	once           *sync.Once
}

func newPauseFS() pauseFS {
	return pauseFS{paused: make(chan struct{}), resume: make(chan struct{}), once: &sync.Once{}}
}

func (p pauseFS) RenameNoReplace(from, to string) error {
	if strings.HasPrefix(filepath.Base(from), ".swampj-stage-") {
		p.once.Do(func() {
			close(p.paused)
			<-p.resume
		})
	}
	return p.OS.RenameNoReplace(from, to)
}

// checkConcItem verifies that model i's item is exactly all-old (version 1,
// concOld) or all-new (versions 1 and 2, latest 2 holding concNew), with
// the catalog's latest row agreeing and nothing else in the item directory;
// it returns whether it is new.
func checkConcItem(t *testing.T, where string, r *repo.Repo, i int) bool {
	t.Helper()
	dir := concItemDir(r, i)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s: model %d: %v", where, i, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	latest, err := os.ReadFile(filepath.Join(dir, "latest"))
	if err != nil {
		t.Fatalf("%s: model %d: latest: %v", where, i, err)
	}
	var isNew bool
	switch got := strings.Join(names, ","); {
	case string(latest) == "1" && got == "1,latest":
	case string(latest) == "2" && got == "1,2,latest":
		isNew = true
	default:
		t.Fatalf("%s: model %d: latest = %q and the item holds %s: neither all-old nor all-new", where, i, latest, got)
	}
	want, v := concOld(i), int64(1)
	if isNew {
		want, v = concNew(i), 2
	}
	f, _, err := store.ReadContent(fsx.Real(), dir, v)
	if err != nil {
		t.Fatalf("%s: model %d: version %d: %v", where, i, v, err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s: model %d: version %d holds %d bytes (%v), want its %d", where, i, v, len(got), err, len(want))
	}
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatalf("%s: catalog: %v", where, err)
	}
	defer c.Close()
	key := catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: "command/shell", ModelID: concModels[i], DataName: "result"}
	row, ok, err := c.LatestRow(context.Background(), key)
	if err != nil || !ok || row.Version != v {
		t.Fatalf("%s: model %d: catalog latest row %+v (found %v, %v), want version %d", where, i, row, ok, err, v)
	}
	return isNew
}

// TestWritersOfOtherModelsRunBeside: a writer stopped in the middle of its
// intent (committed, staged, before its publish) does not keep a
// writer of another model waiting: that one runs from start to end, leaves
// the first one's intent open and untouched, and the first then finishes.
func TestWritersOfOtherModelsRunBeside(t *testing.T) {
	r := concRepo(t, 3)
	a := newPauseFS()
	aDone := make(chan error, 1)
	go func() { aDone <- concWrite(a, r, 0, concNew(0), 5*time.Second) }()
	select {
	case <-a.paused:
	case err := <-aDone:
		t.Fatalf("writer A returned (%v) before its publish", err)
	}
	open := openIntentsOf(t, r)
	if len(open) != 1 || !open[0].Concurrent {
		t.Fatalf("with A stopped, want its one open intent (concurrent), got %+v", open)
	}
	aIntent := open[0]

	// B writes another model while A is alive with its intent open.
	start := time.Now()
	if err := concWrite(nil, r, 1, concNew(1), 2*time.Second); err != nil {
		close(a.resume)
		t.Fatalf("writer B, beside a live writer of another model: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("writer B took %s beside A: it waited", d)
	}
	open = openIntentsOf(t, r)
	if len(open) != 1 || open[0].ID != aIntent.ID || open[0].Status != journal.StatusOpen || open[0].Direction != aIntent.Direction {
		t.Fatalf("B's recovery touched A's intent: open now %+v, A's was %+v", open, aIntent)
	}
	if !checkConcItem(t, "B written, A stopped", r, 1) {
		t.Fatal("B's version is not there")
	}
	// A's version is staged, not published: the old one is what readers see.
	if isNew := checkConcItemStaged(t, r, 0); isNew {
		t.Fatal("A's version is visible while A is stopped before its publish")
	}

	// The doctor sees A's intent as a live writer's, not as a problem.
	rep, err := doctor.Run(context.Background(), r, doctor.Options{Common: host.Common{JournalLockTimeout: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("doctor beside a live writer reports %s: %s", f.Code, f.Message)
	}

	// recover needs the repo alone: it waits for A and times out.
	if _, err := recover.Run(context.Background(), r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: 200 * time.Millisecond}}); !errors.Is(err, journal.ErrLockTimeout) {
		t.Errorf("recover beside a live writer: want a lock timeout, got %v", err)
	}

	close(a.resume)
	if err := <-aDone; err != nil {
		t.Fatalf("writer A after B: %v", err)
	}
	if n := len(openIntentsOf(t, r)); n != 0 {
		t.Fatalf("%d intents open after both writers returned", n)
	}
	for i := 0; i < 3; i++ {
		if got := checkConcItem(t, "both returned", r, i); got != (i < 2) {
			t.Fatalf("model %d new=%v", i, got)
		}
	}
}

// TestConcurrentWritersAllLand: many writers of different models at once,
// each several versions; every version lands, once, in the item and the
// catalog, and no intent stays open.
func TestConcurrentWritersAllLand(t *testing.T) {
	const writers, each = 4, 5
	r := concRepo(t, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < each; k++ {
				if err := concWrite(nil, r, i, concNew(i), 10*time.Second); err != nil {
					errs <- fmt.Errorf("model %d write %d: %w", i, k, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(openIntentsOf(t, r)); n != 0 {
		t.Fatalf("%d intents open", n)
	}
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rows, err := c.Rows(context.Background(), r.Namespace)
	if err != nil || len(rows) != writers*(each+1) {
		t.Fatalf("catalog holds %d rows (%v), want %d", len(rows), err, writers*(each+1))
	}
	for i := 0; i < writers; i++ {
		dir := concItemDir(r, i)
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := []string{"latest"}
		for v := 1; v <= each+1; v++ {
			want = append(want, strconv.Itoa(v))
		}
		slices.Sort(names)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Errorf("model %d holds %v, want %v", i, names, want)
		}
		if l, _ := os.ReadFile(filepath.Join(dir, "latest")); string(l) != strconv.Itoa(each+1) {
			t.Errorf("model %d: latest = %q", i, l)
		}
	}
}

// TestConcurrentWritersCrashAtEveryCutPoint: two writers of different models,
// each cut after its k-th operation, at once (pairs of cut points; every
// pair with SWAMPJ_CRASH_FULL), beside a third writer L that stays alive
// in the middle of its intent throughout. Then: a writer of a fourth model
// runs and leaves every open intent alone; a new writer of A's model
// finishes or undoes A's intent and nothing else; L finishes; recover
// (which needs the repo alone, so only now) finishes or undoes B's. Every
// item is then all-old or all-new, each file once; a writer that returned
// success is all-new; L's intent was never closed by another while L was
// alive; no intent stays open.
func TestConcurrentWritersCrashAtEveryCutPoint(t *testing.T) {
	clean := concRepo(t, 2)
	f := fsx.NewFault(fsx.Real())
	if err := concWrite(f, clean, 0, concNew(0), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	cuts := f.Ops()
	step := 5
	if testing.Short() {
		step = 17
	}
	if os.Getenv("SWAMPJ_CRASH_FULL") != "" {
		step = 1
	}
	var pairs [][2]int
	for ka := 0; ka <= cuts; ka += step {
		// B's cut walks the other way, so every part of one writer's
		// protocol meets every part of the other's across the cells.
		pairs = append(pairs, [2]int{ka, (cuts - ka + 3*step) % (cuts + 1)}, [2]int{ka, ka})
	}
	cells := 0
	cc := fsxtest.Count(t, "concurrent-writes", "cut")
	for _, p := range pairs {
		cc.Check()
		where := fmt.Sprintf("cuts A=%d B=%d (of %d)", p[0], p[1], cuts)
		r := concRepo(t, 4)
		// L (model 3): alive, stopped before its publish, all along.
		l := newPauseFS()
		lDone := make(chan error, 1)
		go func() { lDone <- concWrite(l, r, 3, concNew(3), 5*time.Second) }()
		<-l.paused
		lIntent := openIntentsOf(t, r)[0]

		fa, fb := fsx.NewFault(fsx.Real()).CrashAfter(p[0]), fsx.NewFault(fsx.Real()).CrashAfter(p[1])
		var wg sync.WaitGroup
		var errA, errB error
		wg.Add(2)
		go func() { defer wg.Done(); errA = concWrite(fa, r, 0, concNew(0), 5*time.Second) }()
		go func() { defer wg.Done(); errB = concWrite(fb, r, 1, concNew(1), 5*time.Second) }()
		wg.Wait()
		for _, e := range []error{errA, errB} {
			if e != nil && !fsx.IsCrash(e) {
				close(l.resume)
				t.Fatalf("%s: want a crash or success, got %v", where, e)
			}
		}
		byModel := func() map[int]uint64 {
			m := map[int]uint64{}
			for _, in := range openIntentsOf(t, r) {
				for i, id := range concModels {
					if strings.Contains(in.Summary, id) {
						m[i] = in.ID
					}
				}
			}
			return m
		}
		before := byModel()
		if before[3] != lIntent.ID {
			close(l.resume)
			t.Fatalf("%s: L's intent %d is not open after A and B crashed: %v", where, lIntent.ID, before)
		}
		// A writer of model 2: none of the open intents is its business.
		if err := concWrite(nil, r, 2, concNew(2), 5*time.Second); err != nil {
			close(l.resume)
			t.Fatalf("%s: a writer of another model after the crash: %v", where, err)
		}
		if after := byModel(); !maps.Equal(after, before) {
			close(l.resume)
			t.Fatalf("%s: a writer of model 2 changed the open intents from %v to %v", where, before, after)
		}
		// A new writer of A's model finishes or undoes A's intent first.
		if err := concWrite(nil, r, 0, concNew(0), 5*time.Second); err != nil {
			close(l.resume)
			t.Fatalf("%s: the next writer of A's model: %v", where, err)
		}
		after := byModel()
		want := maps.Clone(before)
		delete(want, 0)
		if !maps.Equal(after, want) {
			close(l.resume)
			t.Fatalf("%s: the next writer of A's model left open %v, want %v", where, after, want)
		}
		close(l.resume)
		if err := <-lDone; err != nil {
			t.Fatalf("%s: L, resumed: %v", where, err)
		}
		if _, err := recover.Run(context.Background(), r.Dir, recover.Options{Common: host.Common{JournalLockTimeout: time.Second}}); err != nil {
			t.Fatalf("%s: recover: %v", where, err)
		}
		if n := len(openIntentsOf(t, r)); n != 0 {
			t.Fatalf("%s: %d intents open after recover", where, n)
		}
		// A's item took a second write after the crash: all-old plus it,
		// or all-new plus it.
		checkConcItemAfterRewrite(t, where, r, 0)
		if isNew := checkConcItem(t, where, r, 1); errB == nil && !isNew {
			t.Fatalf("%s: writer B returned success but its item is the old one", where)
		}
		for _, i := range []int{2, 3} {
			if !checkConcItem(t, where, r, i) {
				t.Fatalf("%s: model %d's write is not there", where, i)
			}
		}
		_ = filepath.WalkDir(r.DataRoot, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".swampj-") {
				t.Fatalf("%s: left %s", where, p)
			}
			return nil
		})
		cc.Recovered()
		cells++
	}
	t.Logf("%d pairs of cut points (a write has %d operations) beside a live writer, each recovered to all-old or all-new per writer", cells, cuts)
}

// checkConcItemAfterRewrite: model i's item after a crashed write and one
// more write: versions 1 and the rewrite (all-old: 1,2) or 1, the crashed
// write and the rewrite (all-new: 1,2,3), latest naming the rewrite.
func checkConcItemAfterRewrite(t *testing.T, where string, r *repo.Repo, i int) {
	t.Helper()
	dir := concItemDir(r, i)
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	latest, _ := os.ReadFile(filepath.Join(dir, "latest"))
	switch got := strings.Join(names, ","); {
	case got == "1,2,latest" && string(latest) == "2":
	case got == "1,2,3,latest" && string(latest) == "3":
	default:
		t.Fatalf("%s: model %d after a crashed write and a rewrite holds %s, latest %q", where, i, got, latest)
	}
	c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: "command/shell", ModelID: concModels[i], DataName: "result"}
	row, ok, err := c.LatestRow(context.Background(), key)
	if err != nil || !ok || strconv.FormatInt(row.Version, 10) != string(latest) {
		t.Fatalf("%s: model %d: catalog latest row %+v (%v %v), latest %q", where, i, row, ok, err, latest)
	}
}

// checkConcItemStaged is checkConcItem for an item with a live writer's
// staging directory beside its versions.
func checkConcItemStaged(t *testing.T, r *repo.Repo, i int) bool {
	t.Helper()
	l, err := os.ReadFile(filepath.Join(concItemDir(r, i), "latest"))
	if err != nil {
		t.Fatal(err)
	}
	return string(l) != "1"
}

func openIntentsOf(t *testing.T, r *repo.Repo) []*journal.Intent {
	t.Helper()
	j, err := journal.OpenReadOnly(nil, r.JournalPath, journal.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	open, err := j.OpenIntents()
	if err != nil {
		t.Fatal(err)
	}
	return open
}
