package fsx

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
)

// ErrCrashed is returned by every operation of a Fault after its crash point:
// the process model has stopped. Code that sees it must not try to clean up
// (nothing it does would reach the disk anyway).
var ErrCrashed = errors.New("fsx: simulated crash")

// IsCrash reports whether err comes from a simulated crash.
func IsCrash(err error) bool { return errors.Is(err, ErrCrashed) }

// Op is one mutating operation seen by a Fault, in the order it was issued.
type Op struct {
	N    int    // 1-based position in the trace
	Kind string // create, write, sync, close, mkdir, rename, rename-noreplace, link, remove, syncdir, failpoint:<name>
	Path string
	To   string // second path of a rename or link
}

func (o Op) String() string {
	if o.To != "" {
		return fmt.Sprintf("#%d %s %s -> %s", o.N, o.Kind, o.Path, o.To)
	}
	return fmt.Sprintf("#%d %s %s", o.N, o.Kind, o.Path)
}

// Fault wraps an FS for the crash suite. Every mutating operation (including
// each Write, Sync and Close of a file, and each Failpoint) is a numbered cut
// point. CrashAfter(k) lets operations 1..k run and makes operation k+1 and
// everything after it fail with ErrCrashed, as if the process had died right
// after operation k. FailAt(k, err) makes only operation k fail with err (an
// EIO on fsync, ENOSPC on write, EXDEV on rename) and lets the rest run.
//
// What Fault does not model: loss of un-fsynced data or renames at a power
// cut. A cut here is a process crash; the richer crash-state model is built
// on top of the trace it records.
type Fault struct {
	Inner FS

	mu         sync.Mutex
	trace      []Op
	crashAfter int // -1: never
	crashed    bool
	failAt     map[int]error
	failKind   map[string]error // inject on every op of this kind (e.g. "syncdir")
	dur        *durability      // power-cut model (powercut.go), nil when off
}

// NewFault wraps inner; with no crash point set it only records.
func NewFault(inner FS) *Fault {
	inner = OrReal(inner)
	return &Fault{Inner: inner, crashAfter: -1, failAt: map[int]error{}, failKind: map[string]error{}}
}

// CrashAfter stops the process model after operation k (k=0: before the first).
func (f *Fault) CrashAfter(k int) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashAfter = k
	return f
}

// FailAt makes operation k (1-based) return err.
func (f *Fault) FailAt(k int, err error) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt[k] = err
	return f
}

// FailKind makes every operation whose kind (or path suffix "kind@suffix")
// matches return err; e.g. FailKind("sync", EIO).
func (f *Fault) FailKind(kind string, err error) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failKind[kind] = err
	return f
}

// Trace returns the operations issued so far (including the one that crashed).
func (f *Fault) Trace() []Op {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Op(nil), f.trace...)
}

// Ops is the number of operations issued so far.
func (f *Fault) Ops() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.trace)
}

// Crashed reports whether the crash point was reached.
func (f *Fault) Crashed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crashed
}

// Count returns how many recorded operations have the given kind.
func (f *Fault) Count(kind string) int {
	n := 0
	for _, op := range f.Trace() {
		if op.Kind == kind {
			n++
		}
	}
	return n
}

// step records an operation and decides whether it may run.
func (f *Fault) step(kind, path, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return ErrCrashed
	}
	n := len(f.trace) + 1
	f.trace = append(f.trace, Op{N: n, Kind: kind, Path: path, To: to})
	if f.crashAfter >= 0 && n > f.crashAfter {
		f.crashed = true
		return ErrCrashed
	}
	if err, ok := f.failAt[n]; ok {
		return opError(kind, path, err)
	}
	for k, err := range f.failKind {
		if k == kind || strings.HasPrefix(kind, k+":") {
			return opError(kind, path, err)
		}
	}
	return nil
}

func opError(kind, path string, err error) error {
	return &fs.PathError{Op: kind, Path: path, Err: err}
}

// Reads pass through unless the model has crashed.
func (f *Fault) alive() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.crashed {
		return ErrCrashed
	}
	return nil
}

func (f *Fault) Stat(name string) (fs.FileInfo, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return f.Inner.Stat(name)
}
func (f *Fault) Lstat(name string) (fs.FileInfo, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return f.Inner.Lstat(name)
}
func (f *Fault) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return f.Inner.ReadDir(name)
}
func (f *Fault) ReadFile(name string) ([]byte, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return f.Inner.ReadFile(name)
}
func (f *Fault) Readlink(name string) (string, error) {
	if err := f.alive(); err != nil {
		return "", err
	}
	return f.Inner.Readlink(name)
}
func (f *Fault) EvalSymlinks(name string) (string, error) {
	if err := f.alive(); err != nil {
		return "", err
	}
	return f.Inner.EvalSymlinks(name)
}
func (f *Fault) Open(name string) (File, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return f.Inner.Open(name)
}

func (f *Fault) Create(name string, perm fs.FileMode) (File, error) {
	if err := f.step("create", name, ""); err != nil {
		return nil, err
	}
	inner, err := f.Inner.Create(name, perm)
	if err != nil {
		return nil, err
	}
	f.noteEntry("create", name, "")
	return &faultFile{File: inner, f: f}, nil
}

func (f *Fault) OpenAppend(name string) (File, error) {
	if err := f.step("open-append", name, ""); err != nil {
		return nil, err
	}
	inner, err := f.Inner.OpenAppend(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: inner, f: f}, nil
}

func (f *Fault) Mkdir(name string, perm fs.FileMode) error {
	if err := f.step("mkdir", name, ""); err != nil {
		return err
	}
	if err := f.Inner.Mkdir(name, perm); err != nil {
		return err
	}
	f.noteEntry("mkdir", name, "")
	return nil
}
func (f *Fault) Rename(o, n string) error {
	if err := f.step("rename", o, n); err != nil {
		return err
	}
	old, hadOld := f.snapshotTarget(n)
	if err := f.Inner.Rename(o, n); err != nil {
		return err
	}
	f.noteRename("rename", n, o, old, hadOld)
	return nil
}
func (f *Fault) RenameNoReplace(o, n string) error {
	if err := f.step("rename-noreplace", o, n); err != nil {
		return err
	}
	if err := f.Inner.RenameNoReplace(o, n); err != nil {
		return err
	}
	f.noteEntry("rename", n, o)
	return nil
}
func (f *Fault) Link(o, n string) error {
	if err := f.step("link", o, n); err != nil {
		return err
	}
	if err := f.Inner.Link(o, n); err != nil {
		return err
	}
	f.noteEntry("link", n, "")
	return nil
}
func (f *Fault) Remove(name string) error {
	if err := f.step("remove", name, ""); err != nil {
		return err
	}
	isDir := f.removingDir(name)
	if err := f.Inner.Remove(name); err != nil {
		return err
	}
	f.noteRemove(name, isDir)
	return nil
}
func (f *Fault) SyncDir(name string) error {
	if err := f.step("syncdir", name, ""); err != nil {
		return err
	}
	if err := f.Inner.SyncDir(name); err != nil {
		return err
	}
	f.noteSyncDir(name)
	return nil
}
func (f *Fault) Failpoint(name string) error {
	return f.step("failpoint:"+name, "", "")
}

// faultFile makes each Write, Sync and Close of a file a cut point. A crash
// in the middle of a stream therefore leaves a partial file behind, as a
// real crash would.
type faultFile struct {
	File
	f *Fault
}

func (ff *faultFile) Write(p []byte) (int, error) {
	if err := ff.f.step("write", ff.Name(), ""); err != nil {
		return 0, err
	}
	return ff.File.Write(p)
}
func (ff *faultFile) Sync() error {
	if err := ff.f.step("sync", ff.Name(), ""); err != nil {
		return err
	}
	if err := ff.File.Sync(); err != nil {
		return err
	}
	ff.f.noteSyncFile(ff.Name())
	return nil
}
func (ff *faultFile) Close() error {
	if err := ff.f.step("close", ff.Name(), ""); err != nil {
		// The descriptor is released anyway; a dead process holds none.
		_ = ff.File.Close()
		return err
	}
	return ff.File.Close()
}
