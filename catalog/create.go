package catalog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/swampj/swampj/fsx"
)

// A new catalog is never created in place. SQLite creates the file when it
// opens it and syncs its content only at the first commit, so a power cut
// in between can keep the directory entry without the content: a zero-byte
// _catalog.db beside its -journal, which every later Open must move aside
// (found by the real-kernel image test of a first `catalog rebuild`).
// Instead the schema is built in a temp file beside the catalog, the temp
// is fsynced, and it is linked in under the catalog's name, refusing to
// replace, then the directory is fsynced and the temp name removed: a crash
// leaves no catalog or a complete, empty one (schema, WAL mode), and the
// rows are added by ordinary committed transactions after that.
//
// Link rather than rename: link(2) refuses to replace on every POSIX file
// system, and the file keeps the temp name it was created and fsynced under
// until the catalog's name is durable; after that only SQLite writes the
// file, and it syncs its own commits.
//
// The temp name is CreationPrefix + "<pid>-<random>" (hidden, so swamp's
// walk and readers never look at it). A temp left by a process that died
// is removed by the next read-write Open or recovery (CleanCreationLeftovers): it is
// derived state that never held a row, and only swampj ever opens that
// name, so no swamp reader can have it open. A temp whose creator is alive
// is left alone.

// CreationPrefix starts the name of every temp file (and its SQLite
// sidecars) in which Open builds a new catalog next to dbBase (the
// catalog's base name, "_catalog.db"). Layers that sort the files of the
// catalog's directory count these names as the catalog's.
func CreationPrefix(dbBase string) string { return "." + dbBase + ".creating-" }

// creating holds the temp paths this process is building right now.
var creating sync.Map

// A confirmed rebuild that finds no catalog (or moved a damaged one aside)
// builds the new one the same way, rows and all (CreateBuilt): the temp is
// filled before anybody can see it, so it needs none of what a shared
// file needs while it is written. Its connection runs without a rollback
// journal and without a sync per commit (journal_mode=OFF,
// synchronous=OFF): the rows go into the file once, not into a WAL first
// and the file again at the checkpoint, and nothing is flushed until the
// one fsync of the finished file. Only then, with the rows committed and
// the indexes built, is the file switched to WAL, the mode swamp expects
// of the file (swamp-format §3.2), and closed. A crash anywhere before the link leaves
// a temp that never had a name a reader would open, removed like any
// other (CleanCreationLeftovers); after the link the catalog is complete.
// The file is what the empty creation followed by Rebuild would leave:
// the same DDL in the same order, the same rows in the same order, the
// same meta keys, WAL mode.

// CreateBuilt creates the catalog at path complete: swamp's schema, rows
// (Rebuild's rows of namespace ns into an empty catalog: same order, same
// flags) and the populated mark, built aside and linked in (see above).
// It returns the diff it applied (every row missing). If a catalog exists
// at path, or another process creates one meanwhile, it changes nothing
// and returns an error that errors.Is fs.ErrExist: the caller opens that
// catalog and rebuilds it in place.
func CreateBuilt(ctx context.Context, fsys fsx.FS, path, ns string, rows []Row, t *RebuildTimings) (*Diff, error) {
	fsys = fsx.OrReal(fsys)
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &DBError{Op: "create", Path: path, Err: err}
	}
	if t == nil {
		t = &RebuildTimings{}
	}
	c := &Catalog{fsys: fsys, path: abs, mode: ModeReadWrite}
	defer releasePath(abs)
	if holdPath(abs) {
		// This process has it open: it exists.
		return nil, &DBError{Op: "create", Path: abs, Err: fs.ErrExist}
	}
	if _, err := fsys.Lstat(abs); err == nil {
		return nil, &DBError{Op: "create", Path: abs, Err: fs.ErrExist} // the link would refuse; build nothing
	}
	var d *Diff
	var filled time.Time
	err = c.createFresh(ctx, func(b *Catalog) error {
		var err error
		d, _, err = b.RebuildTimed(ctx, ns, rows, nil, t)
		filled = time.Now()
		return err
	})
	if err != nil {
		return nil, err
	}
	t.Publish += time.Since(filled)
	if !c.created {
		return nil, &DBError{Op: "create", Path: abs, Err: fs.ErrExist}
	}
	return d, nil
}

// createFresh builds a new catalog at c.path (see above): empty, or,
// with fill, filled by fill on the temp before it is linked in. If
// another process created the catalog meanwhile (swamp, or another
// swampj), the temp is removed and theirs is used (c.created stays false).
func (c *Catalog) createFresh(ctx context.Context, fill func(b *Catalog) error) error {
	dir := filepath.Dir(c.path)
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, fmt.Sprintf("%s%d-%s", CreationPrefix(filepath.Base(c.path)), os.Getpid(), hex.EncodeToString(rnd[:])))
	creating.Store(tmp, true)
	defer creating.Delete(tmp)
	discard := func(err error) error {
		if !fsx.IsCrash(err) { // a dead process removes nothing
			removeCreation(c.fsys, tmp)
		}
		return err
	}

	// Created through fsx, so the crash suite cuts here and a power cut
	// before the directory's fsync takes the name away, and closed before
	// SQLite opens it.
	f, err := c.fsys.Create(tmp, fsx.FileMode)
	if err != nil {
		return &DBError{Op: "create", Path: tmp, Err: err}
	}
	if err := f.Close(); err != nil {
		return discard(&DBError{Op: "create", Path: tmp, Err: err})
	}
	t := &Catalog{fsys: c.fsys, path: tmp, mode: ModeReadWrite, noCheck: true, building: fill != nil, aside: true}
	err = func() error {
		if _, err := t.connect(ctx); err != nil {
			return err
		}
		if fill == nil {
			// WAL before the schema, as swamp does on a new file.
			if err := t.ensureWAL(ctx); err != nil {
				return err
			}
		} else {
			// One connection: its pragmas are the build's, and no
			// other connection of the pool can set the journal mode
			// back after the switch below.
			t.db.SetMaxOpenConns(1)
		}
		st, err := t.createSchema(ctx)
		if err != nil || fill == nil {
			return err
		}
		t.hasStepLatest = st.hasStepLatest
		if err := fill(t); err != nil {
			return err
		}
		return t.ensureWAL(ctx)
	}()
	if t.db != nil {
		// The last connection checkpoints the WAL into the file and
		// removes the -wal and -shm.
		if cerr := t.db.Close(); err == nil && cerr != nil {
			err = &DBError{Op: "close", Path: tmp, Err: cerr}
		}
	}
	if err != nil {
		return discard(err)
	}
	if err := syncFile(c.fsys, tmp); err != nil {
		return discard(&DBError{Op: "fsync", Path: tmp, Err: err})
	}
	if _, err := fsx.PublishNoReplace(c.fsys, tmp, c.path); err != nil {
		switch {
		case errors.Is(err, fs.ErrExist):
			return discard(nil) // created meanwhile: use that one
		case fsx.IsCrash(err):
			return err
		}
		return discard(&DBError{Op: "publish the new catalog as", Path: c.path, Err: err})
	}
	if err := c.fsys.SyncDir(dir); err != nil {
		return &DBError{Op: "fsync the directory of", Path: c.path, Err: err}
	}
	if err := c.fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &DBError{Op: "remove the temp name of the new catalog", Path: tmp, Err: err}
	}
	c.created = true
	return nil
}

// syncFile fsyncs a file SQLite wrote, through fsx (a cut point). SQLite
// has synced its own commits at synchronous=FULL; this one makes the
// content durable before the link whatever the connection's settings. No
// connection to it may be open: closing this descriptor would drop
// SQLite's POSIX locks (design §2.3).
func syncFile(fsys fsx.FS, path string) error {
	f, err := fsys.OpenAppend(path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// removeCreation removes a temp catalog and any sidecar SQLite left beside
// it, best effort (what stays is removed by the next Open).
func removeCreation(fsys fsx.FS, tmp string) {
	for _, suf := range append([]string{""}, sidecarSuffixes...) {
		_ = fsys.Remove(tmp + suf)
	}
}

// CleanCreationLeftovers removes, beside the catalog at path, the temp
// catalogs (and their sidecars) of creations whose process is gone. They
// never held a row. A read-write Open does it; recovery does it too.
func CleanCreationLeftovers(fsys fsx.FS, path string) error {
	return fsx.RemoveDeadCreations(fsys, filepath.Dir(path), CreationPrefix(filepath.Base(path)), func(owner string) bool {
		_, busy := creating.Load(owner)
		return busy
	})
}
