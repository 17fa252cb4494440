package write

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"
	"github.com/swampj/swampj/ops/read"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
)

// TestWriteGoldenMetadata checks byte parity with swamp's metadata.yaml for
// both examples of swamp-format §2.4.2, in both modes (hashed in advance and
// self-verifying), and the catalog row of the new version (swamp-format §3.4).
func TestWriteGoldenMetadata(t *testing.T) {
	golden := func(name string) []byte { return mustRead(t, filepath.Join("..", "..", "testdata", "golden", name)) }
	for _, mode := range []string{"known", "stream"} {
		t.Run(mode, func(t *testing.T) {
			content := func() io.Reader {
				if mode == "known" {
					return strings.NewReader(shellResult)
				}
				return nonSeeker{strings.NewReader(shellResult)}
			}
			r := newWriteRepo(t)
			a := writeAddr(t, "command/shell/"+shellModel+"/result")
			w := VersionWrite{Address: a, ModelName: "hello-shell", SpecName: "result", OwnerType: "model-method", OwnerRef: shellModel}
			for i := 0; i < 2; i++ {
				w.Content = content()
				write1(t, r, w, WriteOptions{})
			}
			w.Content = content()
			at := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
			got := write1(t, r, w, FixIdentity(WriteOptions{}, "7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f", at))
			if got.Version != 3 || got.PreviousLatest != 2 {
				t.Fatalf("wrote version %d over %d, want 3 over 2", got.Version, got.PreviousLatest)
			}
			if md := mustRead(t, filepath.Join(got.Dir, "metadata.yaml")); !bytes.Equal(md, golden("metadata-model-method.yaml")) {
				t.Fatalf("metadata.yaml differs from swamp's:\n%s\nwant:\n%s", md, golden("metadata-model-method.yaml"))
			}
			if raw := mustRead(t, filepath.Join(got.Dir, "raw")); string(raw) != shellResult {
				t.Fatalf("raw = %q", raw)
			}
			if l := mustRead(t, filepath.Join(filepath.Dir(got.Dir), "latest")); string(l) != "3" {
				t.Fatalf("latest = %q, want the single byte 3", l)
			}
			c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			row, ok, err := c.LatestRow(context.Background(), catalog.ItemKey{TypeNormalized: "command/shell", ModelID: shellModel, DataName: "result"})
			if err != nil || !ok {
				t.Fatalf("no latest row: %v", err)
			}
			want := fmt.Sprintf("%d %s %s %s %d %s %s %s", 3, "hello-shell", "result", "resource", 124, "2026-08-01T12:00:00.000Z",
				`{"type":"resource","specName":"result","modelName":"hello-shell"}`, shellModel)
			if g := fmt.Sprintf("%d %s %s %s %d %s %s %s", row.Version, row.ModelName, row.SpecName, row.DataType, row.Size, row.CreatedAt, row.Tags, row.OwnerRef); g != want {
				t.Fatalf("catalog row\n got %s\nwant %s", g, want)
			}

			// Example B: a workflow-step output, first version, gc 30d.
			wf := VersionWrite{
				Address: writeAddr(t, "command/shell/9e8d7c6b-5a49-4837-a625-1403f2e1d0c9/result"), Content: content(),
				ModelName: "scan-shell", SpecName: "result", OwnerType: "model-method", OwnerRef: "9e8d7c6b-5a49-4837-a625-1403f2e1d0c9",
				GarbageCollection: meta.GarbageCollection{Duration: "30d"},
				Workflow: Workflow{ID: "b5e1d0c4-2f3a-4b6c-8d7e-9f0a1b2c3d4e", RunID: "c8a7f6e5-d4c3-4b2a-9180-7f6e5d4c3b2a",
					Name: "nightly-scan", Job: "scan", Step: "run-shell", Source: "step-output"},
			}
			got = write1(t, r, wf, FixIdentity(WriteOptions{}, "0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d", time.Date(2026, 8, 1, 12, 5, 9, 7e6, time.UTC)))
			if md := mustRead(t, filepath.Join(got.Dir, "metadata.yaml")); !bytes.Equal(md, golden("metadata-workflow-step.yaml")) {
				t.Fatalf("workflow metadata.yaml differs from swamp's:\n%s\nwant:\n%s", md, golden("metadata-workflow-step.yaml"))
			}
		})
	}
}

// TestWriteBatchOneIntent writes seven versions of three items in one call:
// one journal commit, one catalog transaction, one fsync per directory.
func TestWriteBatchOneIntent(t *testing.T) {
	r := newWriteRepo(t)
	a1, a2, a3 := writeAddr(t, "aws/ec2/vpc/m1/state"), writeAddr(t, "aws/ec2/vpc/m1/log"), writeAddr(t, "@acme/scan/m2/result")
	write1(t, r, VersionWrite{Address: a1, Content: strings.NewReader("old")}, WriteOptions{})

	var ws []VersionWrite
	for i, a := range []repo.Address{a1, a2, a1, a3, a2, a1, a3} {
		var c io.Reader = strings.NewReader(fmt.Sprintf("payload %d", i))
		if i%2 == 1 {
			c = nonSeeker{c}
		}
		ws = append(ws, VersionWrite{Address: a, Content: c, SpecName: a.DataName})
	}
	f := fsx.NewFault(fsx.Real())
	res, err := WriteVersions(context.Background(), r, ws, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: f}})
	if err != nil {
		t.Fatal(err)
	}
	wantVersions := []int64{2, 1, 3, 1, 2, 4, 2}
	for i, v := range res {
		if v.Version != wantVersions[i] || v.IntentID != res[0].IntentID {
			t.Fatalf("write %d: version %d intent %d, want %d in one intent", i, v.Version, v.IntentID, wantVersions[i])
		}
		if got := mustRead(t, filepath.Join(v.Dir, "raw")); string(got) != fmt.Sprintf("payload %d", i) {
			t.Fatalf("write %d: raw %q", i, got)
		}
	}
	for a, latest := range map[repo.Address]string{a1: "4", a2: "2", a3: "2"} {
		v := viewItem(t, r, a)
		if v.Latest != latest || fmt.Sprint(v.CatalogLatest) != latest {
			t.Fatalf("%s: latest %q, catalog latest %d, want %s", a, v.Latest, v.CatalogLatest, latest)
		}
	}
	if n := f.Count("failpoint:journal.begin"); n != 1 {
		t.Errorf("%d journal intents, want 1", n)
	}
	if n := f.Count("failpoint:" + catalog.FailpointUpsert); n != 1 {
		t.Errorf("%d catalog transactions, want 1", n)
	}
	synced := map[string]int{}
	for _, op := range f.Trace() {
		if op.Kind == "syncdir" {
			synced[op.Path]++
		}
	}
	for dir, n := range synced {
		if n > 1 && !strings.HasSuffix(dir, "/m1") && !strings.HasSuffix(dir, "/m2") {
			// The model directory is fsynced by the lock protocol too.
			t.Errorf("directory %s fsynced %d times", dir, n)
		}
	}
	noStagingLeft(t, r)
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Fatalf("open intents left: %v", open)
	}
}

// TestWriteAllocatesAboveEveryVersionDir never reuses a number swamp counts:
// crash remnants, uncommitted deferred versions and non-canonical
// directories included, and a plain file with the next number is skipped.
func TestWriteAllocatesAboveEveryVersionDir(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("1")}, WriteOptions{})
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("2")}, WriteOptions{})
	dir := filepath.Join(r.DataRoot, "command", "shell", "m", "state")
	for _, d := range []string{"5", "7", "8-old"} { // deferred / crash remnant / renamed by hand
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "9"), []byte("not a version"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("new")}, WriteOptions{})
	if got.Version != 10 || got.PreviousLatest != 2 {
		t.Fatalf("wrote version %d over %d, want 10 over 2", got.Version, got.PreviousLatest)
	}
	if l := mustRead(t, filepath.Join(dir, "latest")); string(l) != "10" {
		t.Fatalf("latest = %q", l)
	}
}

// TestWriteLegacySymlinkLatest: a `latest -> 2` symlink is first replaced by
// the file swamp writes today (same version), then moved on.
func TestWriteLegacySymlinkLatest(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("1")}, WriteOptions{})
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("2")}, WriteOptions{})
	dir := filepath.Join(r.DataRoot, "command", "shell", "m", "state")
	latest := filepath.Join(dir, "latest")
	if err := os.Remove(latest); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("2/", latest); err != nil {
		t.Fatal(err)
	}
	// A failing write leaves version 2 designated (now by a file).
	_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: nonSeeker{brokenSource{}}}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}})
	var src *fsx.SourceError
	if !errors.As(err, &src) {
		t.Fatalf("want a source error, got %v", err)
	}
	if l := mustRead(t, latest); string(l) != "2" {
		t.Fatalf("latest = %q after a failed write", l)
	}
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("3")}, WriteOptions{})
	if fi, err := os.Lstat(latest); err != nil || fi.Mode()&fs.ModeSymlink != 0 || string(mustRead(t, latest)) != "3" || got.Version != 3 {
		t.Fatalf("latest after write: %v %v %q (version %d)", fi.Mode(), err, mustRead(t, latest), got.Version)
	}
}

// brokenSource fails after a few bytes, like a stdin that breaks.
type brokenSource struct{}

func (brokenSource) Read(b []byte) (int, error) { return 0, errors.New("broken pipe") }

// TestWriteRefusesBadInput: refused writes change nothing at all.
func TestWriteRefusesBadInput(t *testing.T) {
	r := newWriteRepo(t)
	good := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: good, Content: strings.NewReader("v1")}, WriteOptions{})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(r.DataRoot, "evil")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]VersionWrite{
		"latest":          {Address: repo.Address{Type: "command/shell", ModelID: "m", DataName: "latest"}},
		"LaTeSt":          {Address: repo.Address{Type: "command/shell", ModelID: "m", DataName: "LaTeSt"}},
		"dotdot":          {Address: repo.Address{Type: "command/shell", ModelID: "m", DataName: "a..b"}},
		"nul":             {Address: repo.Address{Type: "command/shell", ModelID: "m", DataName: "a\x00b"}},
		"slash in model":  {Address: repo.Address{Type: "command", ModelID: "shell/m", DataName: "x"}},
		"not normalised":  {Address: repo.Address{Type: "AWS::EC2", ModelID: "m", DataName: "x"}},
		"empty model":     {Address: repo.Address{Type: "command/shell", ModelID: "", DataName: "x"}},
		"symlink escape":  {Address: repo.Address{Type: "evil/t", ModelID: "m", DataName: "x"}},
		"bad workflow id": {Address: good, Workflow: Workflow{ID: "not-a-uuid"}},
		"bad lifetime":    {Address: good, Lifetime: "forever"},
		"bad owner":       {Address: good, OwnerType: "robot"},
		"bad gc":          {Address: good, GarbageCollection: meta.GarbageCollection{Duration: "0d"}},
	}
	before := snapshotWriteTree(t, r.Dir)
	for name, w := range cases {
		if w.Content == nil {
			w.Content = strings.NewReader("x")
		}
		_, err := WriteVersions(context.Background(), r, []VersionWrite{w}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}})
		var inv *InvalidWriteError
		if !errors.As(err, &inv) || !errors.Is(err, ErrInvalidWrite) {
			t.Errorf("%s: want *InvalidWriteError, got %v", name, err)
			continue
		}
		if name == "symlink escape" && !errors.Is(err, repo.ErrOutsideDataRoot) {
			t.Errorf("symlink escape: %v", err)
		}
	}
	if d := diffWriteTrees(before, snapshotWriteTree(t, r.Dir)); d != "" {
		t.Fatalf("refused writes changed the tree:\n%s", d)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("a write escaped the data root: %v", ents)
	}
}

// TestWriteFailKind: ENOSPC on every write, EIO on every fsync of a file or
// of a directory: a clear error of the right kind, nothing changed. (These
// first hit swamp's lock file; TestWriteFaultAtEveryOp aims at each op.)
func TestWriteFailKind(t *testing.T) {
	for _, fk := range []struct {
		kind string
		err  error
	}{{"write", syscall.ENOSPC}, {"sync", syscall.EIO}, {"syncdir", syscall.EIO}, {"rename-noreplace", syscall.EXDEV}} {
		for _, mode := range []string{"known", "stream"} {
			t.Run(fk.kind+"/"+mode, func(t *testing.T) {
				r := newWriteRepo(t)
				a := writeAddr(t, "command/shell/m/state")
				write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
				before := viewItem(t, r, a)
				var c io.Reader = strings.NewReader("v2")
				if mode == "stream" {
					c = nonSeeker{c}
				}
				f := fsx.NewFault(fsx.Real()).FailKind(fk.kind, fk.err)
				_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: c}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: f}})
				if !errors.Is(err, fk.err) {
					t.Fatalf("want %v, got %v", fk.err, err)
				}
				if after := viewItem(t, r, a); !sameView(before, after) {
					t.Fatalf("item changed:\nbefore %v\nafter  %v", before, after)
				}
				noStagingLeft(t, r)
			})
		}
	}
}

// TestWriteFaultAtEveryOp injects one error at each mutating operation of a
// write in turn (EIO, or ENOSPC on writes): the call either fails with the
// item exactly as before — rolled back in the same run, no open intent — or
// succeeds (the error hit something that does not decide the outcome, such
// as releasing the lock) with the new version complete.
func TestWriteFaultAtEveryOp(t *testing.T) {
	for _, mode := range []string{"known", "stream"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			run := func(f *fsx.Fault) (*repo.Repo, itemView, error) {
				r := newWriteRepo(t)
				a := writeAddr(t, "command/shell/m/state")
				write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
				before := viewItem(t, r, a)
				var c io.Reader = strings.NewReader("version two")
				if mode == "stream" {
					c = nonSeeker{c}
				}
				_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: c}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: f}})
				return r, before, err
			}
			clean := fsx.NewFault(fsx.Real())
			if _, _, err := run(clean); err != nil {
				t.Fatal(err)
			}
			trace := clean.Trace()
			failed, succeeded := 0, 0
			for _, op := range trace {
				inj := error(syscall.EIO)
				if op.Kind == "write" {
					inj = syscall.ENOSPC
				}
				r, before, err := run(fsx.NewFault(fsx.Real()).FailAt(op.N, inj))
				a := writeAddr(t, "command/shell/m/state")
				after := viewItem(t, r, a)
				if err != nil {
					failed++
					if !sameView(before, after) {
						t.Errorf("fault at %v: %v\nitem changed:\nbefore %v\nafter  %v", op, err, before, after)
					}
					if open := openWriteIntents(t, r); len(open) != 0 {
						t.Errorf("fault at %v: intent left open: %s", op, open[0].LastError)
					}
				} else {
					succeeded++
					// The catalog is derived state: a failed catalog commit
					// leaves the version written and the catalog marked stale.
					catalogOK := after.CatalogLatest == 2 || catalogStaleMark(t, r) != nil
					if after.Latest != "2" || !catalogOK || after.Files["2/raw"] == "" {
						t.Errorf("fault at %v ignored but the write is not complete: %v", op, after)
					}
				}
				noStagingLeft(t, r)
			}
			t.Logf("%d of %d fault points: %d failed cleanly (item unchanged), %d did not affect the outcome", failed+succeeded, len(trace), failed, succeeded)
		})
	}
}

// TestWriteInputChanged: a file modified between hashing and streaming is
// refused and rolled back.
func TestWriteInputChanged(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	before := viewItem(t, r, a)
	_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: &changingSource{data: []byte("first pass")}}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}})
	var ic *InputChangedError
	if !errors.As(err, &ic) {
		t.Fatalf("want *InputChangedError, got %v", err)
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("item changed: %v", after)
	}
	noStagingLeft(t, r)
}

// changingSource is a ReadSeeker whose content changes after the first seek back.
type changingSource struct {
	data  []byte
	off   int
	seeks int
}

func (c *changingSource) Read(b []byte) (int, error) {
	if c.off >= len(c.data) {
		return 0, io.EOF
	}
	n := copy(b, c.data[c.off:])
	c.off += n
	return n, nil
}

func (c *changingSource) Seek(off int64, whence int) (int64, error) {
	if whence == io.SeekStart {
		c.seeks++
		c.off = int(off)
		if c.seeks == 1 {
			c.data = []byte("second pass, longer")
		}
	}
	return int64(c.off), nil
}

// TestWriteLockTimeout: swamp's per-model lock held elsewhere → lock.ErrTimeout
// after the timeout, nothing changed.
func TestWriteLockTimeout(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	held, err := lock.Acquire(context.Background(), fsx.Real(), lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID), lock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	before := viewItem(t, r, a)
	start := time.Now()
	_, err = WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: strings.NewReader("v2")}}, WriteOptions{Common: host.Common{SwampLockTimeout: 300 * time.Millisecond}})
	if !errors.Is(err, lock.ErrTimeout) {
		t.Fatalf("want lock.ErrTimeout, got %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Fatalf("waited %s", d)
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("item changed: %v", after)
	}
}

// TestWriteFinishesInterruptedIntentFirst: an intent a crashed process left
// open is finished before a new write plans (so the new version cannot
// collide with it), and reported through Warn.
func TestWriteFinishesInterruptedIntentFirst(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	// Crash right after the second version's metadata.yaml is written.
	probe := fsx.NewFault(fsx.Real())
	probeRepo := newWriteRepo(t)
	write1(t, probeRepo, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	write1(t, probeRepo, VersionWrite{Address: a, Content: strings.NewReader("v2")}, WriteOptions{fsys: probe})
	cut := 0
	for _, op := range probe.Trace() {
		if op.Kind == "close" && strings.HasSuffix(op.Path, "/metadata.yaml") {
			cut = op.N
		}
	}
	_, err := WriteVersions(context.Background(), r, []VersionWrite{{Address: a, Content: strings.NewReader("v2")}},
		WriteOptions{Common: host.Common{SwampLockTimeout: time.Second, FS: fsx.NewFault(fsx.Real()).CrashAfter(cut)}})
	if !fsx.IsCrash(err) {
		t.Fatalf("want a crash, got %v", err)
	}
	// The crashed process held swamp's lock with this (live) pid; a dead
	// process's lock would be stale. Remove it as the pid check would.
	_ = os.Remove(lock.ModelPath(r.Base, r.Namespace, a.Type, a.ModelID))
	var logged bytes.Buffer
	warn := slog.New(slog.NewJSONHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v3")}, WriteOptions{Common: host.Common{Logger: warn}})
	var warnings []string
	for _, rec := range decodeLog(t, &logged) {
		warnings = append(warnings, rec["msg"].(string))
	}
	if got.Version != 3 || got.PreviousLatest != 2 {
		t.Fatalf("wrote version %d over %d, want 3 over 2 (the interrupted version 2 finished first)", got.Version, got.PreviousLatest)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "finished interrupted intent") {
		t.Fatalf("warnings: %q", warnings)
	}
	if v := viewItem(t, r, a); v.Latest != "3" || v.CatalogLatest != 3 || fmt.Sprint(v.CatalogRows) != "[1 2 3]" {
		t.Fatalf("after: %v", v)
	}
}

// TestStageObservationSelfVerifying: a stage journaled with unknown sizes
// counts as done only for a version consistent with its own metadata.
func TestStageObservationSelfVerifying(t *testing.T) {
	dir := t.TempDir()
	raw := []byte(shellResult)
	sum := sha256.Sum256(raw)
	size := int64(len(raw))
	md := &meta.Metadata{ID: "7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f", Name: "result", Version: 1, ContentType: "application/json",
		Lifetime: "infinite", GarbageCollection: meta.GarbageCollection{N: 10}, Tags: meta.Tags{{Key: "type", Value: "resource"}},
		Owner: meta.Owner{OwnerType: "manual", OwnerRef: "swampj"}, CreatedAt: "2026-08-01T12:00:00.000Z", Size: &size, Checksum: hex.EncodeToString(sum[:])}
	good, err := meta.Encode(md)
	if err != nil {
		t.Fatal(err)
	}
	wrongSum := *md
	wrongSum.Checksum = strings.Repeat("0", 64)
	bad, _ := meta.Encode(&wrongSum)

	stage := filepath.Join(dir, ".swampj-stage-1-x")
	step := &journal.Step{Kind: protocol.KindStage, Path: stage, To: filepath.Join(dir, "1"),
		Files: []journal.FileExpect{{Name: "raw", Size: -1}, {Name: "metadata.yaml", Size: -1}}}
	cases := []struct {
		name  string
		files map[string][]byte
		want  engine.Observation
	}{
		{"nothing staged", nil, engine.NotDone},
		{"raw only (metadata not yet written)", map[string][]byte{"raw": raw}, engine.Partial},
		{"raw torn", map[string][]byte{"raw": raw[:10], "metadata.yaml": good}, engine.Partial},
		{"zero-byte metadata (#3955)", map[string][]byte{"raw": raw, "metadata.yaml": {}}, engine.Partial},
		{"checksum disagrees", map[string][]byte{"raw": raw, "metadata.yaml": bad}, engine.Partial},
		{"complete", map[string][]byte{"raw": raw, "metadata.yaml": good}, engine.Done},
	}
	env := &engine.Env{FS: fsx.Real()}
	for _, c := range cases {
		os.RemoveAll(stage)
		if c.files != nil {
			os.Mkdir(stage, 0o755)
			for n, b := range c.files {
				os.WriteFile(filepath.Join(stage, n), b, 0o644)
			}
		}
		obs, detail, err := observeByKind(context.Background(), env, step)
		if err != nil || obs != c.want {
			t.Errorf("%s: observed %v (%s, %v), want %v", c.name, obs, detail, err, c.want)
		}
	}
	// The exact mode is unchanged: a size-only expectation still matches on
	// size, a full one on the hash.
	exact := &journal.Step{Kind: protocol.KindStage, Path: stage, To: filepath.Join(dir, "1"),
		Files: []journal.FileExpect{{Name: "raw", Size: size, SHA256: strings.Repeat("0", 64)}}}
	if obs, _, _ := observeByKind(context.Background(), env, exact); obs != engine.Partial {
		t.Errorf("exact mode with a wrong hash observed %v", obs)
	}
	exact.Files[0].SHA256 = hex.EncodeToString(sum[:])
	if obs, _, _ := observeByKind(context.Background(), env, exact); obs != engine.Done {
		t.Errorf("exact mode with the right hash observed %v", obs)
	}
}

// snapshotWriteTree maps every path below root to its kind and content.
func snapshotWriteTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, _ := os.ReadFile(p)
			s := sha256.Sum256(b)
			out[rel] = hex.EncodeToString(s[:8])
		}
		return nil
	})
	return out
}

func diffWriteTrees(a, b map[string]string) string {
	var out []string
	for p, v := range a {
		if b[p] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", p, v, b[p]))
		}
	}
	for p, v := range b {
		if _, ok := a[p]; !ok {
			out = append(out, fmt.Sprintf("%s: new %q", p, v))
		}
	}
	return strings.Join(out, "\n")
}

// cancelAfterFirstRead cancels the context once the stream has begun, as
// Ctrl-C in the middle of a long write does.
type cancelAfterFirstRead struct {
	cancel context.CancelFunc
	r      io.Reader
}

func (c *cancelAfterFirstRead) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.cancel()
	return n, err
}

// TestWriteCanceledRollsBack: an interrupted stream is rolled back in the
// same run, and the error says it was canceled.
func TestWriteCanceledRollsBack(t *testing.T) {
	r := newWriteRepo(t)
	a := writeAddr(t, "command/shell/m/state")
	write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("v1")}, WriteOptions{})
	before := viewItem(t, r, a)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	big := io.LimitReader(nonSeeker{strings.NewReader(strings.Repeat("x", 1<<20))}, 1<<20)
	_, err := WriteVersions(ctx, r, []VersionWrite{{Address: a, Content: &cancelAfterFirstRead{cancel: cancel, r: big}}}, WriteOptions{Common: host.Common{SwampLockTimeout: time.Second}})
	var wf *WriteFailedError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &wf) || wf.RollbackErr != nil {
		t.Fatalf("want a rolled-back canceled write, got %v", err)
	}
	if after := viewItem(t, r, a); !sameView(before, after) {
		t.Fatalf("item changed: %v", after)
	}
	noStagingLeft(t, r)
	if open := openWriteIntents(t, r); len(open) != 0 {
		t.Fatalf("intent left open: %v", open[0].LastError)
	}
}

// TestWriteNamespacedDatastore: in a namespaced filesystem datastore the
// version lands under {base}/{ns}/data, swamp's per-model lock is taken at
// {base}/{ns}/data/{type}/{model}/.lock (swamp-format §8), and the catalog rows are
// stamped with the namespace (swamp-format §3.4).
func TestWriteNamespacedDatastore(t *testing.T) {
	dir, base := t.TempDir(), t.TempDir()
	cfg := "swampVersion: test\ndatastore:\n  type: filesystem\n  path: " + base + "\n  namespace: team-a\n"
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	a := writeAddr(t, "aws/ec2/vpc/m1/state")
	f := fsx.NewFault(fsx.Real())
	got := write1(t, r, VersionWrite{Address: a, Content: strings.NewReader("ns")}, WriteOptions{fsys: f})
	want := filepath.Join(base, "team-a", "data", "aws", "ec2", "vpc", "m1", "state", "1")
	if got.Dir != want || string(mustRead(t, filepath.Join(want, "raw"))) != "ns" {
		t.Fatalf("version at %s, want %s", got.Dir, want)
	}
	lockPath := filepath.Join(base, "team-a", "data", "aws", "ec2", "vpc", "m1", ".lock")
	linked := false
	for _, op := range f.Trace() {
		linked = linked || (op.Kind == "link" && op.To == lockPath)
	}
	if !linked {
		t.Fatalf("swamp's lock was not taken at %s", lockPath)
	}
	if ok, _ := fsx.Exists(fsx.Real(), lockPath); ok {
		t.Fatal("the lock was not released")
	}
	if v := viewItem(t, r, a); v.CatalogLatest != 1 || v.Latest != "1" {
		t.Fatalf("catalog (namespace team-a) and latest: %v", v)
	}
	item, vs, err := read.DataVersions(context.Background(), r, a, host.Common{FS: fsx.Real()})
	if err != nil || len(vs) != 1 || !vs[0].Latest || item.Address != "aws/ec2/vpc/m1/state" {
		t.Fatalf("versions: %+v %+v %v", item, vs, err)
	}
}

// decodeLog reads the records a slog JSON handler wrote.
func decodeLog(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var recs []map[string]any
	dec := json.NewDecoder(r)
	for dec.More() {
		var rec map[string]any
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("log record: %v", err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// observeByKind observes s through the executor's table of step kinds.
func observeByKind(ctx context.Context, env *engine.Env, s *journal.Step) (engine.Observation, string, error) {
	k, err := engine.KindOf(s)
	if err != nil {
		return engine.Conflict, "", err
	}
	return k.Observe(ctx, env, s)
}
