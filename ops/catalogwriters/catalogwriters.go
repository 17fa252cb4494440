// Package catalogwriters is newer swamp's writer tokens for shared
// filesystem datastores (swamp-format §13.7, swamp-club#2858,
// src/infrastructure/persistence/shared_datastore_write_tracker.ts).
//
// Every checkout keeps its own SQLite catalog, so a write by one checkout
// into a datastore shared with others (one that lives outside the repo's
// .swamp/) never reaches the others' catalogs. Newer swamp closes that gap
// with plain files: each catalog owns one file .catalog-writers/{writerId}
// at the datastore tier root and rewrites it with a fresh random UUID after
// every data write; a catalog whose peers' tokens changed since it last
// looked invalidates itself and is rebuilt from the disk. A swampj write,
// repair or rebuild into such a datastore that touched no token would leave
// every other checkout's catalog blind to it, so swampj keeps a writer
// token of its own (one per checkout) and rewrites it after each change.
//
// swamp 06b6147 has no writer tokens (no file of its source names
// .catalog-writers): it neither writes nor reads them, and a token swampj
// writes is a harmless hidden directory to it.
//
// The token is replaced atomically and durably: the new UUID is written to
// a hidden .{random}.tmp beside it (a name swamp's reader skips, as it
// skips every name ending in .tmp), fsynced, renamed over the token, and
// the directory fsynced. A reader sees the old token or the new one, never
// an empty or partial file, whenever a crash comes.
package catalogwriters

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/jsfmt"
	"github.com/swampj/swampj/ops/repo"
)

const (
	// DirName is CATALOG_WRITERS_DIR.
	DirName = ".catalog-writers"
	// WriterIDName is where swampj keeps its writer id, in the checkout's
	// local tier ({repo}/.swamp/), which no migration moves. The id is
	// random, not derived from the path, so two machines with the same
	// repository path never share one (as swamp's own writer_id).
	WriterIDName = "_swampj_writer_id"
)

// idPattern is what a writer id and a token may be: a UUID in practice.
// Compiled on first use, not at every process's start-up.
var idPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`) })

// Shared reports whether the repo's data lives outside its own .swamp/: a
// datastore other checkouts may share, whose catalogs learn of writes
// through tokens. A repo-local datastore gets no token directory (swamp's
// own rule: "a repo-local datastore gets no writers directory").
func Shared(r *repo.Repo) bool {
	rel, err := filepath.Rel(r.LocalDir, r.DataRoot)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel)
}

// Dir is the token directory: .catalog-writers at the datastore tier root,
// {base}/{ns} when namespaced, {base} solo — the root the repo's data tier
// lives in (resolver.datastorePath()). Read from swamp's comments ("at the
// datastore tier root"); the call that builds the tracker was not in any
// stored copy of swamp's files.
func Dir(r *repo.Repo) string { return r.DatastorePath(DirName) }

// WriterID returns swampj's writer id for this checkout, creating it on
// first use: a random UUID published durably without replacing one a
// concurrent swampj published first.
func WriterID(fsys fsx.FS, r *repo.Repo) (string, error) {
	fsys = fsx.OrReal(fsys)
	p := filepath.Join(r.LocalDir, WriterIDName)
	for attempt := 0; ; attempt++ {
		data, err := fsys.ReadFile(p)
		if err == nil {
			id := string(bytes.TrimSpace(data))
			if !idPattern().MatchString(id) {
				return "", fmt.Errorf("swampj's writer id %s holds %q, not an id: nothing was written; remove the file and a new id is made", p, short(data))
			}
			return id, nil
		}
		if !errors.Is(err, fs.ErrNotExist) || attempt > 0 {
			return "", fmt.Errorf("reading swampj's writer id %s: %w", p, err)
		}
		if err := fsx.MkdirAllDurable(fsys, r.LocalDir, fsx.DirMode); err != nil {
			return "", err
		}
		_, tmp, err := fsx.WriteTemp(fsys, p, strings.NewReader(jsfmt.RandomUUID()), fsx.FileMode, nil)
		if err != nil {
			return "", fmt.Errorf("creating swampj's writer id %s: %w", p, err)
		}
		moved, err := fsx.PublishNoReplace(fsys, tmp, p)
		if !moved {
			_ = fsys.Remove(tmp)
		}
		if err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("creating swampj's writer id %s: %w", p, err)
		}
		if err == nil {
			if err := fsys.SyncDir(r.LocalDir); err != nil {
				return "", err
			}
		}
		// Read back what is there now: ours, or a concurrent swampj's.
	}
}

// Record rewrites swampj's writer token with a fresh UUID, durably, when
// the repo's datastore is shared (Shared); call it after every change to
// the data (a write, a repair, a catalog rebuild), once the change itself
// is durable. It returns the token file written ("" when the datastore is
// repo-local and nothing was written). An error means the peers' catalogs
// may not notice the change until their next rebuild; the change itself
// stands.
func Record(fsys fsx.FS, r *repo.Repo) (string, error) {
	fsys = fsx.OrReal(fsys)
	if !Shared(r) {
		return "", nil
	}
	id, err := WriterID(fsys, r)
	if err != nil {
		return "", err
	}
	dir := Dir(r)
	if err := fsx.MkdirAllDurable(fsys, dir, fsx.DirMode); err != nil {
		return "", fmt.Errorf("creating the writer token directory %s: %w", dir, err)
	}
	p := filepath.Join(dir, id)
	if err := fsx.WriteFileAtomic(fsys, p, []byte(jsfmt.RandomUUID()), fsx.FileMode); err != nil {
		return "", fmt.Errorf("rewriting swampj's writer token %s: %w", p, err)
	}
	return p, nil
}

func short(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
