package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// Power-cut model. A Fault with TrackDurability records, for every directory
// entry it creates, renames or links and for every file it writes, whether a
// later fsync made that change durable, following POSIX pessimistically
// (durability-notes §1.2, §1.7):
//
//   - a new entry (create, mkdir, link) is durable once its parent
//     directory is fsynced;
//   - a rename is durable once BOTH parent directories are fsynced;
//   - file data is durable up to the size it had at its last fsync;
//   - a remove of a file is taken as durable at once (optimistic:
//     resurrected files are not modelled);
//   - a remove of a directory is durable once its parent is fsynced; until
//     then a power cut brings the (empty) directory back, so entries renamed
//     out of it can return. Once it is durably gone, the entries renamed
//     out of it earlier no longer wait for its fsync (it can have none).
//
// PowerCut then rolls the real tree back to what a power cut at the crash
// point would leave: every change not yet durable is undone, newest first
// (a lost mkdir takes its whole subtree with it — that is what happens to
// entries written into a directory whose own entry never reached the disk),
// and every file is cut back to its durable size. Writes made outside fsx
// (bbolt, SQLite) are durable at their own commits and are not touched.

type pendingEntry struct {
	op      string // create, mkdir, link, rename, rmdir
	path    string // the new name
	from    string // rename source
	waiting map[string]bool
	// replaced is the content of a regular file a rename replaced, restored
	// when the rename is lost.
	replaced []byte
	hadOld   bool
	released bool // rmdir: durable, the entries renamed out of it released
}

type durability struct {
	pending []*pendingEntry
	synced  map[string]int64 // file -> durable size
	tracked map[string]bool  // files created through fsx
}

// TrackDurability turns on the power-cut model.
func (f *Fault) TrackDurability() *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dur = &durability{synced: map[string]int64{}, tracked: map[string]bool{}}
	return f
}

// snapshotTarget reads the regular file a rename is about to replace.
func (f *Fault) snapshotTarget(path string) ([]byte, bool) {
	f.mu.Lock()
	on := f.dur != nil
	f.mu.Unlock()
	if !on {
		return nil, false
	}
	fi, err := f.Inner.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	b, err := f.Inner.ReadFile(path)
	return b, err == nil
}

func (f *Fault) noteEntry(op, path, from string) { f.noteRename(op, path, from, nil, false) }

func (f *Fault) noteRename(op, path, from string, replaced []byte, hadOld bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return
	}
	e := &pendingEntry{op: op, path: path, from: from, waiting: map[string]bool{filepath.Dir(path): true}, replaced: replaced, hadOld: hadOld}
	if op == "rename" {
		e.waiting[filepath.Dir(from)] = true
		if f.dur.tracked[from] {
			f.dur.tracked[path] = true
			f.dur.synced[path] = f.dur.synced[from]
			delete(f.dur.tracked, from)
			delete(f.dur.synced, from)
		}
	}
	if op == "create" {
		f.dur.tracked[path] = true
		f.dur.synced[path] = 0
	}
	f.dur.pending = append(f.dur.pending, e)
}

func (f *Fault) noteSyncDir(dir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return
	}
	for _, e := range f.dur.pending {
		delete(e.waiting, dir)
	}
	// A directory whose removal is now durable can never be fsynced again:
	// the changes made inside it before it was removed (an entry renamed
	// out of it) stop waiting for it. That can make further removals
	// durable, so repeat until nothing changes.
	for changed := true; changed; {
		changed = false
		for i, e := range f.dur.pending {
			if e.op != "rmdir" || len(e.waiting) > 0 || e.released {
				continue
			}
			e.released, changed = true, true
			for _, older := range f.dur.pending[:i] {
				for w := range older.waiting {
					if w == e.path || strings.HasPrefix(w, e.path+string(filepath.Separator)) {
						delete(older.waiting, w)
					}
				}
			}
		}
	}
	kept := f.dur.pending[:0]
	for _, e := range f.dur.pending {
		if len(e.waiting) > 0 {
			kept = append(kept, e)
		}
	}
	f.dur.pending = kept
}

// removingDir reports whether name, about to be removed, is a directory
// (only asked when the model is on).
func (f *Fault) removingDir(name string) bool {
	f.mu.Lock()
	on := f.dur != nil
	f.mu.Unlock()
	if !on {
		return false
	}
	fi, err := f.Inner.Lstat(name)
	return err == nil && fi.IsDir()
}

func (f *Fault) noteSyncFile(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil || !f.dur.tracked[name] {
		return
	}
	if fi, err := f.Inner.Stat(name); err == nil {
		f.dur.synced[name] = fi.Size()
	}
}

func (f *Fault) noteRemove(name string, isDir bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return
	}
	delete(f.dur.tracked, name)
	delete(f.dur.synced, name)
	if isDir {
		f.dur.pending = append(f.dur.pending, &pendingEntry{op: "rmdir", path: name, waiting: map[string]bool{filepath.Dir(name): true}})
	}
}

// PendingChanges is how many directory-entry changes are not yet durable.
func (f *Fault) PendingChanges() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return 0
	}
	return len(f.dur.pending)
}

// PowerCut applies the power-cut model to the real tree (see above) and
// returns a description of what was lost. Call it after the crash, when
// nothing else uses the tree.
func (f *Fault) PowerCut() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return nil, errors.New("fsx: PowerCut without TrackDurability")
	}
	in := f.Inner
	var lost []string
	// Files first: cut every tracked file back to its durable size, so a
	// rename undone below carries the truncated content.
	names := make([]string, 0, len(f.dur.tracked))
	for n := range f.dur.tracked {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fi, err := in.Stat(n)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if want := f.dur.synced[n]; fi.Size() != want {
			if err := truncate(in, n, want); err != nil {
				return lost, err
			}
			lost = append(lost, fmt.Sprintf("data of %s cut from %d to %d bytes", n, fi.Size(), want))
		}
	}
	for i := len(f.dur.pending) - 1; i >= 0; i-- {
		e := f.dur.pending[i]
		switch e.op {
		case "rmdir":
			// Not durable: the directory is back, empty (what was in it
			// comes back with the undone renames, newest first).
			if ok, _ := Exists(in, filepath.Dir(e.path)); !ok {
				continue // its parent's removal was durable: gone with it
			}
			if ok, _ := Exists(in, e.path); ok {
				continue
			}
			if err := in.Mkdir(e.path, 0o755); err != nil {
				return lost, err
			}
			lost = append(lost, fmt.Sprintf("rmdir %s lost", e.path))
		case "rename":
			if ok, _ := Exists(in, e.path); !ok {
				continue
			}
			if ok, _ := Exists(in, e.from); ok {
				lost = append(lost, fmt.Sprintf("rename %s -> %s not undone: the old name exists again", e.from, e.path))
				continue
			}
			if ok, _ := Exists(in, filepath.Dir(e.from)); !ok {
				// The old directory is durably gone and the new entry never
				// reached the disk: what was renamed is lost altogether.
				if err := RemoveAll(in, e.path); err != nil {
					return lost, err
				}
				lost = append(lost, fmt.Sprintf("rename %s -> %s lost, and its old directory durably removed: %s is gone", e.from, e.path, e.from))
				continue
			}
			if err := in.Rename(e.path, e.from); err != nil {
				return lost, err
			}
			if e.hadOld {
				if err := rewrite(in, e.path, e.replaced); err != nil {
					return lost, err
				}
			}
			lost = append(lost, fmt.Sprintf("rename %s -> %s lost", e.from, e.path))
		default:
			if ok, _ := Exists(in, e.path); !ok {
				continue
			}
			if err := RemoveAll(in, e.path); err != nil {
				return lost, err
			}
			lost = append(lost, fmt.Sprintf("%s %s lost", e.op, e.path))
		}
	}
	f.dur.pending = nil
	return lost, nil
}

func rewrite(fsys FS, name string, data []byte) error {
	w, err := fsys.Create(name, 0o644)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// truncate cuts a file to size by rewriting its durable prefix (fsx has no
// truncate: the engine never needs one).
func truncate(fsys FS, name string, size int64) error {
	data, err := fsys.ReadFile(name)
	if err != nil {
		return err
	}
	if int64(len(data)) < size {
		size = int64(len(data))
	}
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	w, err := fsys.Create(name, 0o644)
	if err != nil {
		return err
	}
	_, err = w.Write(data[:size])
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}
