package read

import (
	"context"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/store"
)

// ChangedItems lists the data-name directories of the repo that changed
// at or after since (a version directory created in them, `latest`
// replaced, a file of a version written), then the run records modified
// since (method outputs, workflow runs, audit logs: a method run writes
// those too, and a crash leaves them zero-byte as it leaves versions). It
// reads directory entries and modification times only, so a doctor of
// just those (DoctorOptions Only) after a command costs what that command
// touched, not the repo.
// The times come from the file system, so a clock step backwards during
// the command can hide a change; one second of slack covers coarse
// timestamps.
func ChangedItems(ctx context.Context, r *repo.Repo, since time.Time, c host.Common) ([]string, error) {
	fsys := c.Disk()
	since = since.Add(-time.Second)
	var out []string
	err := store.Walk(ctx, fsys, r.DataRoot, func(it store.Item) error {
		if changedSince(fsys, it.Dir, since) {
			out = append(out, it.Dir)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	records, err := changedRecords(ctx, fsys, r, since)
	return append(out, records...), err
}

// changedSince reports whether dir, its latest, or any directory or file
// one level below it (the versions and their files) was modified at or
// after since.
func changedSince(fsys fsx.FS, dir string, since time.Time) bool {
	newer := func(p string) bool {
		fi, err := fsys.Lstat(p)
		return err == nil && !fi.ModTime().Before(since)
	}
	if newer(dir) || newer(filepath.Join(dir, "latest")) {
		return true
	}
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return true // cannot tell: let the doctor look
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			continue
		}
		if newer(p) || newer(filepath.Join(p, store.RawFileName)) || newer(filepath.Join(p, store.MetadataFileName)) {
			return true
		}
	}
	return false
}

// changedRecords lists the record files under the record trees modified at
// or after since: what a command wrote or appended to.
func changedRecords(ctx context.Context, fsys fsx.FS, r *repo.Repo, since time.Time) ([]string, error) {
	var out []string
	var walk func(dir string) error
	walk = func(dir string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ents, err := fsys.ReadDir(dir)
		if err != nil {
			return nil // not there, or not listable: the full doctor says so
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir():
				if err := walk(p); err != nil {
					return err
				}
			case e.Type().IsRegular() && repo.IsRecordName(e.Name()):
				if fi, err := fsys.Lstat(p); err == nil && !fi.ModTime().Before(since) {
					out = append(out, p)
				}
			}
		}
		return nil
	}
	for _, root := range r.RecordRoots() {
		if err := walk(root); err != nil {
			return out, err
		}
	}
	return out, nil
}
