package migrate

// What the migration planner observes on disk: where each subdirectory sits, catalog
// files, identical content, the catalog rows a restamp changes; and the
// prediction of the directory fsyncs a plan costs.

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/protocol"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// positionKind looks at a subdirectory position (source or destination). A
// symlink there is refused (topLevelDir).
func positionKind(fsys fsx.FS, base, path string) (subdirPosition, error) {
	fi, err := fsys.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return posAbsent, nil
	case err != nil:
		return posAbsent, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return posAbsent, symlinkError(fsys, base, path)
	case fi.IsDir():
		return posDir, nil
	}
	return posOther, nil
}

func catalogNames(fsys fsx.FS, dir string) ([]string, error) {
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if repo.IsCatalogFile(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// sameContent compares two regular files of equal size by SHA-256 and
// returns the digest (the drop-duplicate step re-checks it at run time).
func sameContent(fsys fsx.FS, a, b string) (bool, string, error) {
	sa, err := store.HashFile(fsys, a)
	if err != nil {
		return false, "", err
	}
	sb, err := store.HashFile(fsys, b)
	if err != nil {
		return false, "", err
	}
	return sa == sb, sa, nil
}

// stampRows is how the planner reads the catalog: rows per stamp, and the
// items of a stamp (for a keyed restamp). A catalog that cannot be read
// counts as empty: the catalog is derived state and never stops a plan.
type stampRows struct {
	count func(ns string) int64
	keys  func(ns string) []catalog.ItemKey
}

// migrationStamps is the stamp a migration moves rows from and the one it
// moves them to.
func migrationStamps(r *repo.Repo, opts MigrateOptions) (from, to string) {
	if opts.Reverse {
		return r.Namespace, ""
	}
	return "", r.Namespace
}

// previewStampRows reads the catalog, if it exists, opened read-only for
// each question (a preview changes nothing).
func previewStampRows(ctx context.Context, fsys fsx.FS, path string) stampRows {
	open := func() *catalog.Catalog {
		if ok, err := fsx.Exists(fsys, path); err != nil || !ok {
			return nil
		}
		c, err := catalog.Open(ctx, fsys, path, catalog.Options{Mode: catalog.ModeReport, NoIntegrityCheck: true})
		if err != nil {
			return nil
		}
		return c
	}
	return stampRows{
		count: func(ns string) int64 {
			c := open()
			if c == nil {
				return 0
			}
			defer c.Close()
			n, _ := c.CountStamped(ctx, ns)
			return n
		},
		keys: func(ns string) []catalog.ItemKey {
			c := open()
			if c == nil {
				return nil
			}
			defer c.Close()
			keys, _ := protocol.ItemKeys(ctx, c, ns)
			return keys
		},
	}
}

// runStampRows reads through the run's own catalog handle, so a confirmed
// run opens the catalog once. A missing catalog is not created: without
// rows there is no restamp step to open it for.
func runStampRows(ctx context.Context, cat protocol.CatalogOpener) stampRows {
	return stampRows{
		count: func(ns string) int64 {
			c, ok, err := cat.Existing(ctx)
			if err != nil || !ok {
				return 0
			}
			n, _ := c.CountStamped(ctx, ns)
			return n
		},
		keys: func(ns string) []catalog.ItemKey {
			c, ok, err := cat.Existing(ctx)
			if err != nil || !ok {
				return nil
			}
			keys, _ := protocol.ItemKeys(ctx, c, ns)
			return keys
		},
	}
}

func pathJoin(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// predictDirFsyncs counts the directory fsyncs running steps will make,
// by the executor's rules (exec.go Dirty): renames, mkdirs, rmdirs and
// removals mark parents dirty; a barrier and the end of the run fsync each
// dirty directory that still exists once; a small-file write fsyncs its
// own directory.
func predictDirFsyncs(steps []journal.Step) int {
	n := 0
	var order []string
	dirty := map[string]bool{}
	removed := map[string]bool{}
	mark := func(dirs ...string) {
		for _, d := range dirs {
			if !dirty[d] {
				dirty[d] = true
				order = append(order, d)
			}
		}
	}
	flush := func() {
		for _, d := range order {
			if !removed[d] {
				n++
			}
		}
		order, dirty = nil, map[string]bool{}
	}
	for _, s := range steps {
		switch s.Kind {
		case protocol.KindMkdir, protocol.KindMoveMkdir:
			mark(filepath.Dir(s.Path))
			delete(removed, s.Path)
		case protocol.KindRename, protocol.KindMove:
			mark(filepath.Dir(s.Path), filepath.Dir(s.To))
			removed[s.Path] = true
			delete(removed, s.To)
		case protocol.KindRmdir, protocol.KindMoveRmdir:
			mark(filepath.Dir(s.Path))
			removed[s.Path] = true
		case protocol.KindDropDup, protocol.KindRemoveFile:
			mark(filepath.Dir(s.Path))
		case protocol.KindWrite:
			d := filepath.Dir(s.Path)
			if dirty[d] {
				delete(dirty, d)
				for i, x := range order {
					if x == d {
						order = append(order[:i], order[i+1:]...)
						break
					}
				}
			}
			n++
		case engine.KindBarrier:
			flush()
		}
	}
	flush()
	return n
}
