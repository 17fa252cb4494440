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
// (design §2.1, §2.2):
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
// are durable at their own commits (bbolt; SQLite at synchronous=FULL) and
// are not touched; a SQLite database committing unsynced says so, and
// loses those commits (powercut_sqlite.go).

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
	seq      int  // order of all recorded changes
	durable  bool // no longer pending
}

type durability struct {
	seq     int
	renames []*pendingEntry // every rename, pending or durable, in order
	pending []*pendingEntry
	synced  map[string]int64 // file -> durable size
	tracked map[string]bool  // files created through fsx
	// sqlite: the databases with unsynced commits, as of their last
	// durable state (powercut_sqlite.go).
	sqlite map[string]*sqliteCopy
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
	f.dur.seq++
	e := &pendingEntry{op: op, path: path, from: from, waiting: map[string]bool{filepath.Dir(path): true}, replaced: replaced, hadOld: hadOld, seq: f.dur.seq}
	if op == "rename" {
		// A renamed directory keeps its inode: the files written in it and
		// the changes waiting for its fsync follow it to the new name.
		for n := range f.dur.tracked {
			if under(n, from) {
				m := path + strings.TrimPrefix(n, from)
				f.dur.tracked[m], f.dur.synced[m] = true, f.dur.synced[n]
				delete(f.dur.tracked, n)
				delete(f.dur.synced, n)
			}
		}
		for _, p := range f.dur.pending {
			for w := range p.waiting {
				if w == from || under(w, from) {
					delete(p.waiting, w)
					p.waiting[path+strings.TrimPrefix(w, from)] = true
				}
			}
		}
		f.dur.renames = append(f.dur.renames, e)
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
		} else {
			e.durable = true
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
		// Its names now: the newer pending changes are undone already,
		// the durable renames of its directories since then stay.
		e := f.dur.now(f.dur.pending[i], false)
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
	gone, err := f.cutSQLite()
	return append(lost, gone...), err
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

// ---- ALICE's crash states (design §2.1)
//
// PowerCut gives the one pessimistic state: everything not yet durable is
// lost. ALICE (Pillai et al., OSDI '14) explores more states at each cut,
// and so does PowerCutState:
//
//   - CrashTorn: every directory change persists, but each file's data
//     written since its last fsync reached the disk only in whole 4 KiB
//     blocks (a write torn at 4 KiB alignment, ALICE's "aligned 4096");
//   - CrashGarbage: every directory change persists, and each file's
//     un-fsynced tail has its final size but garbage for content (an append
//     that grows the file before its data lands);
//   - CrashOmit (Index i): exactly one un-fsynced operation is lost — the
//     i-th pending directory change, or (after those) the un-fsynced data of
//     one file — while every later one persists;
//   - CrashRenameNeither / CrashRenameBoth (Index i): the i-th pending
//     rename is not atomic: neither name is left, or both are (the old
//     name holds a copy). No POSIX file system may do this; some have
//     (CrashMonkey's "broken rename atomicity"), and recovery must then
//     refuse to guess rather than take the missing side as done.
//
// CrashStates lists the states a power cut at this point can give.

// CrashMode is one kind of crash state.
type CrashMode string

const (
	CrashPessimistic   CrashMode = "pessimistic"
	CrashTorn          CrashMode = "torn-4k"
	CrashGarbage       CrashMode = "garbage-append"
	CrashOmit          CrashMode = "omit-one"
	CrashRenameNeither CrashMode = "rename-neither"
	CrashRenameBoth    CrashMode = "rename-both"
)

// CrashState is one crash state at the current cut.
type CrashState struct {
	Mode  CrashMode
	Index int
	What  string // the operation it concerns, for messages
}

func (s CrashState) String() string {
	if s.What != "" {
		return fmt.Sprintf("%s(%s)", s.Mode, s.What)
	}
	return string(s.Mode)
}

// unsyncedFiles lists tracked files whose size exceeds their durable size.
func (f *Fault) unsyncedFiles() []string {
	var out []string
	for n := range f.dur.tracked {
		fi, err := f.Inner.Stat(n)
		if err == nil && fi.Mode().IsRegular() && fi.Size() > f.dur.synced[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// CrashStates lists every crash state beyond the pessimistic one that a
// power cut now can give (each applies to a fresh copy of the same cut).
func (f *Fault) CrashStates() []CrashState {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return nil
	}
	var out []CrashState
	files := f.unsyncedFiles()
	torn := false
	for _, n := range files {
		fi, _ := f.Inner.Stat(n)
		if keep := (fi.Size() - 1) &^ 4095; keep > f.dur.synced[n] {
			torn = true
		}
	}
	if torn {
		out = append(out, CrashState{Mode: CrashTorn})
	}
	if len(files) > 0 {
		out = append(out, CrashState{Mode: CrashGarbage})
	}
	for i, e := range f.dur.pending {
		out = append(out, CrashState{Mode: CrashOmit, Index: i, What: e.op + " " + e.path})
	}
	for i, n := range files {
		out = append(out, CrashState{Mode: CrashOmit, Index: len(f.dur.pending) + i, What: "data of " + n})
	}
	for i, e := range f.dur.pending {
		if e.op == "rename" {
			out = append(out, CrashState{Mode: CrashRenameNeither, Index: i, What: e.from + " -> " + e.path},
				CrashState{Mode: CrashRenameBoth, Index: i, What: e.from + " -> " + e.path})
		}
	}
	return out
}

// PowerCutState applies one crash state (CrashStates) to the real tree, as
// PowerCut applies the pessimistic one, and describes what it did.
func (f *Fault) PowerCutState(s CrashState) ([]string, error) {
	if s.Mode == CrashPessimistic || s.Mode == "" {
		return f.PowerCut()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dur == nil {
		return nil, errors.New("fsx: PowerCutState without TrackDurability")
	}
	in := f.Inner
	var did []string
	files := f.unsyncedFiles()
	switch s.Mode {
	case CrashTorn, CrashGarbage:
		for _, n := range files {
			data, err := in.ReadFile(n)
			if err != nil {
				return did, err
			}
			synced := f.dur.synced[n]
			if s.Mode == CrashTorn {
				keep := max(synced, (int64(len(data))-1)&^4095)
				if err := truncate(in, n, keep); err != nil {
					return did, err
				}
				did = append(did, fmt.Sprintf("data of %s torn at %d of %d bytes", n, keep, len(data)))
				continue
			}
			for i := synced; i < int64(len(data)); i++ {
				data[i] = byte(0xA5 ^ i)
			}
			if err := rewriteInPlace(in, n, data); err != nil {
				return did, err
			}
			did = append(did, fmt.Sprintf("data of %s: bytes %d..%d garbage", n, synced, len(data)))
		}
	case CrashOmit:
		if s.Index < len(f.dur.pending) {
			l, err := f.undoEntry(f.dur.now(f.dur.pending[s.Index], true))
			if err != nil {
				return did, err
			}
			did = append(did, l...)
		} else if i := s.Index - len(f.dur.pending); i < len(files) {
			n := files[i]
			if err := truncate(in, n, f.dur.synced[n]); err != nil {
				return did, err
			}
			did = append(did, fmt.Sprintf("data of %s cut back to %d bytes", n, f.dur.synced[n]))
		}
	case CrashRenameNeither, CrashRenameBoth:
		e := f.dur.now(f.dur.pending[s.Index], true)
		if e.op != "rename" {
			return did, fmt.Errorf("fsx: crash state %s: pending change %d is a %s", s, s.Index, e.op)
		}
		if ok, _ := Exists(in, e.path); !ok {
			break
		}
		if s.Mode == CrashRenameNeither {
			if err := RemoveAll(in, e.path); err != nil {
				return did, err
			}
			did = append(did, fmt.Sprintf("rename %s -> %s left neither name", e.from, e.path))
			break
		}
		if ok, _ := Exists(in, e.from); ok {
			break
		}
		if err := copyTree(in, e.path, e.from); err != nil {
			return did, err
		}
		did = append(did, fmt.Sprintf("rename %s -> %s left both names", e.from, e.path))
	default:
		return did, fmt.Errorf("fsx: unknown crash state %s", s)
	}
	f.dur.pending = nil
	gone, err := f.cutSQLite()
	return append(did, gone...), err
}

// under reports whether p lies inside directory dir.
func under(p, dir string) bool { return strings.HasPrefix(p, dir+string(filepath.Separator)) }

// now is e with its names as they are now: moved along by every rename of
// one of their directories made after e (only the durable ones, unless all).
func (d *durability) now(e *pendingEntry, all bool) *pendingEntry {
	c := *e
	for _, r := range d.renames {
		if r.seq <= e.seq || r == e || !(all || r.durable) {
			continue
		}
		for _, p := range []*string{&c.path, &c.from} {
			if *p != "" && under(*p, r.from) {
				*p = r.path + strings.TrimPrefix(*p, r.from)
			}
		}
	}
	return &c
}

// undoEntry undoes one pending directory change (as PowerCut does for all).
func (f *Fault) undoEntry(e *pendingEntry) ([]string, error) {
	in := f.Inner
	switch e.op {
	case "rmdir":
		if ok, _ := Exists(in, filepath.Dir(e.path)); !ok {
			return nil, nil
		}
		if ok, _ := Exists(in, e.path); ok {
			return nil, nil
		}
		return []string{fmt.Sprintf("rmdir %s lost", e.path)}, in.Mkdir(e.path, 0o755)
	case "rename":
		if ok, _ := Exists(in, e.path); !ok {
			return nil, nil
		}
		if ok, _ := Exists(in, e.from); ok {
			return nil, nil
		}
		if ok, _ := Exists(in, filepath.Dir(e.from)); !ok {
			return nil, nil // its old directory is gone: keep the new name
		}
		if err := in.Rename(e.path, e.from); err != nil {
			return nil, err
		}
		if e.hadOld {
			if err := rewrite(in, e.path, e.replaced); err != nil {
				return nil, err
			}
		}
		return []string{fmt.Sprintf("rename %s -> %s lost", e.from, e.path)}, nil
	default:
		if ok, _ := Exists(in, e.path); !ok {
			return nil, nil
		}
		return []string{fmt.Sprintf("%s %s lost", e.op, e.path)}, RemoveAll(in, e.path)
	}
}

// rewriteInPlace replaces a file's content keeping its name.
func rewriteInPlace(fsys FS, name string, data []byte) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return rewrite(fsys, name, data)
}

// copyTree copies a file or a directory tree from src to dst (new).
func copyTree(fsys FS, src, dst string) error {
	fi, err := fsys.Lstat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		data, err := fsys.ReadFile(src)
		if err != nil {
			return err
		}
		return rewrite(fsys, dst, data)
	}
	if err := fsys.Mkdir(dst, fi.Mode().Perm()); err != nil {
		return err
	}
	ents, err := fsys.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := copyTree(fsys, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
