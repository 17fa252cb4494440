package write

// The write tests' fixtures: a scratch repo, one write, what an item looks
// like on disk, and the journal and staging left behind.

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/repo"
)

// FixIdentity makes a write deterministic: every version gets id and
// createdAt at.
func FixIdentity(o WriteOptions, id string, at time.Time) WriteOptions {
	return fixIdentity(o, id, at)
}

// The 124-byte result of the command/shell model (swamp-format §2.4.2).
const shellResult = `{"exitCode":0,"executedAt":"2026-08-01T12:00:00.000Z","command":"echo hello","durationMs":12,"stdout":"hello\n","stderr":""}`

const shellModel = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"

// nonSeeker hides Seek, so the write cannot hash in advance (stdin mode).
type nonSeeker struct{ r io.Reader }

func (s nonSeeker) Read(b []byte) (int, error) { return s.r.Read(b) }

// newWriteRepo makes an empty solo repo and loads it without looking at the
// process environment.
func newWriteRepo(t testing.TB) *repo.Repo {
	t.Helper()
	dir := fsxtest.ScratchDir(t)
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Load(fsx.Real(), dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeAddr(t testing.TB, s string) repo.Address {
	t.Helper()
	a, err := repo.ParseAddress(s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func write1(t testing.TB, r *repo.Repo, w VersionWrite, o WriteOptions) WrittenVersion {
	t.Helper()
	o.SwampLockTimeout = time.Second
	if o.fsys != nil {
		o.FS = o.fsys
	}
	res, err := WriteVersions(context.Background(), r, []VersionWrite{w}, o)
	if err != nil {
		t.Fatal(err)
	}
	return res[0]
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// itemView is everything a reader can see of one item: `latest`, each
// version directory's files, and the catalog's latest row and versions.
type itemView struct {
	Latest        string
	Files         map[string]string // relative path → sha256 prefix and size
	CatalogLatest int64
	CatalogRows   []int64
}

func viewItem(t testing.TB, r *repo.Repo, a repo.Address) itemView {
	t.Helper()
	dir := filepath.Join(r.DataRoot, filepath.FromSlash(a.Type), a.ModelID, a.DataName)
	v := itemView{Files: map[string]string{}}
	if b, err := os.ReadFile(filepath.Join(dir, "latest")); err == nil {
		v.Latest = string(b)
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b, _ := os.ReadFile(p)
		s := sha256.Sum256(b)
		v.Files[rel] = fmt.Sprintf("%d:%x", len(b), s[:6])
		return nil
	})
	if ok, _ := fsx.Exists(fsx.Real(), r.CatalogPath); ok {
		c, err := catalog.Open(context.Background(), fsx.Real(), r.CatalogPath, catalog.Options{Mode: catalog.ModeReport})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		key := catalog.ItemKey{Namespace: r.Namespace, TypeNormalized: a.Type, ModelID: a.ModelID, DataName: a.DataName}
		if row, ok, err := c.LatestRow(context.Background(), key); err != nil {
			t.Fatal(err)
		} else if ok {
			v.CatalogLatest = row.Version
		}
		rows, err := c.Rows(context.Background(), r.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			if row.Key() == key {
				v.CatalogRows = append(v.CatalogRows, row.Version)
			}
		}
	}
	return v
}

func (v itemView) String() string {
	type plain itemView // no String method: fmt prints the fields (maps sorted)
	return fmt.Sprintf("%+v", plain(v))
}

func sameView(a, b itemView) bool { return a.String() == b.String() }

// noStagingLeft fails if a staging directory is left anywhere in the data root.
func noStagingLeft(t testing.TB, r *repo.Repo) {
	t.Helper()
	_ = filepath.WalkDir(r.DataRoot, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), session.StagePrefix) {
			t.Errorf("staging directory left behind: %s", p)
		}
		return nil
	})
}

func openWriteIntents(t testing.TB, r *repo.Repo) []*journal.Intent {
	t.Helper()
	var open []*journal.Intent
	withJournal(t, r, func(j *journal.Journal) {
		var err error
		if open, err = j.OpenIntents(); err != nil {
			t.Fatal(err)
		}
	})
	return open
}

// withJournal opens the repo's journal (if there is one) read-only for
// fn, as journal list does, so it also works beside a held write handle.
func withJournal(t testing.TB, r *repo.Repo, fn func(*journal.Journal)) {
	t.Helper()
	if ok, _ := fsx.Exists(fsx.Real(), r.JournalPath); !ok {
		return
	}
	j, err := journal.OpenReadOnly(fsx.Real(), r.JournalPath, journal.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	fn(j)
}

// catalogStaleMark is the journal's stale-catalog mark (nil: none).
func catalogStaleMark(t testing.TB, r *repo.Repo) *journal.CatalogStale {
	t.Helper()
	var cs *journal.CatalogStale
	withJournal(t, r, func(j *journal.Journal) {
		var err error
		if cs, err = j.CatalogStale(); err != nil {
			t.Fatal(err)
		}
	})
	return cs
}
