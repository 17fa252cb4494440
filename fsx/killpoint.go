package fsx

// Named kill points: the real binary stops itself with SIGKILL at a chosen
// disk operation, so a test (or `swampj demo`) can crash a real process at
// an exact moment — after the intent commit, after a publish rename, after
// `latest` — and then run the real recovery. The in-process crash suite
// (Fault) cuts after every operation; this is the same cut, made by the
// kernel, with nothing in the process left to clean up.
//
//	SWAMPJ_FAILPOINT=KIND[@PATHSUFFIX][:N]
//
// KIND is an operation kind of Fault's trace (create, write, sync, close,
// mkdir, rename, rename-noreplace, link, remove, syncdir) or a named commit
// point, failpoint:NAME (failpoint:journal.begin is the intent commit,
// failpoint:catalog matches every catalog commit); PATHSUFFIX limits it to
// paths (or rename targets) ending so; N (default 1) is which matching
// operation. The process is killed right after that operation has
// returned; for a failpoint, whose commit runs after the mark, right
// before the next operation (or at exit, see KillPending).
//
// Unset, nothing is wrapped: the real FS is returned as it is.

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// EnvFailpoint names the kill point.
const EnvFailpoint = "SWAMPJ_FAILPOINT"

// killer is armed by a failpoint match and fires at the next operation.
var killer struct {
	sync.Mutex
	armed bool
}

// WithKillPoint wraps inner (nil: the real disk) when SWAMPJ_FAILPOINT is
// set (getenv nil: os.Getenv); a malformed value is an error.
func WithKillPoint(inner FS, getenv func(string) string) (FS, error) {
	inner = OrReal(inner)
	if getenv == nil {
		getenv = os.Getenv
	}
	spec := getenv(EnvFailpoint)
	if spec == "" {
		return inner, nil
	}
	k := &killFS{FS: inner, killSpec: &killSpec{nth: 1}}
	rest := spec
	if i := strings.LastIndex(rest, ":"); i > 0 && !strings.HasSuffix(rest[:i], "failpoint") {
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s=%q: the count after ':' must be a positive number", EnvFailpoint, spec)
		}
		k.nth, rest = n, rest[:i]
	}
	k.kind, k.suffix, _ = strings.Cut(rest, "@")
	if k.kind == "" {
		return nil, fmt.Errorf("%s=%q: no operation kind", EnvFailpoint, spec)
	}
	return k, nil
}

// KillPending kills the process if a failpoint matched and no operation
// has followed it yet (its commit is done by now): called at exit.
func KillPending() {
	killer.Lock()
	armed := killer.armed
	killer.Unlock()
	if armed {
		die()
	}
}

func die() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}

type killFS struct {
	FS
	*killSpec
}

// killSpec is the kill point and its count, shared by every disk Reroot
// makes of one.
type killSpec struct {
	kind, suffix string
	nth          int

	mu   sync.Mutex
	seen int
}

// before fires an armed kill; after counts the operation and kills (or
// arms, for a failpoint) when it is the chosen one.
func (k *killFS) before() {
	killer.Lock()
	armed := killer.armed
	killer.Unlock()
	if armed {
		die()
	}
}

func (k *killFS) after(kind, path, to string) {
	match := kind == k.kind || strings.HasPrefix(kind, k.kind+".") || (strings.HasPrefix(k.kind, "failpoint:") && strings.HasPrefix(kind, k.kind))
	if !match || (k.suffix != "" && !strings.HasSuffix(path, k.suffix) && !strings.HasSuffix(to, k.suffix)) {
		return
	}
	k.mu.Lock()
	k.seen++
	hit := k.seen == k.nth
	k.mu.Unlock()
	if !hit {
		return
	}
	if strings.HasPrefix(kind, "failpoint:") {
		killer.Lock()
		killer.armed = true
		killer.Unlock()
		return
	}
	die()
}

// concurrentSync keeps the real disk's concurrent fsyncs: the wrapper
// changes nothing but the moment of death.
func (k *killFS) concurrentSync() bool { return Concurrent(k.FS) }

func (k *killFS) Create(name string, perm fs.FileMode) (File, error) {
	k.before()
	f, err := k.FS.Create(name, perm)
	k.after("create", name, "")
	if err != nil {
		return nil, err
	}
	return &killFile{File: f, k: k}, nil
}

func (k *killFS) OpenAppend(name string) (File, error) {
	k.before()
	f, err := k.FS.OpenAppend(name)
	k.after("open-append", name, "")
	if err != nil {
		return nil, err
	}
	return &killFile{File: f, k: k}, nil
}

func (k *killFS) Mkdir(name string, perm fs.FileMode) error {
	k.before()
	err := k.FS.Mkdir(name, perm)
	k.after("mkdir", name, "")
	return err
}

func (k *killFS) Rename(o, n string) error {
	k.before()
	err := k.FS.Rename(o, n)
	k.after("rename", o, n)
	return err
}

func (k *killFS) RenameNoReplace(o, n string) error {
	k.before()
	err := k.FS.RenameNoReplace(o, n)
	k.after("rename-noreplace", o, n)
	return err
}

func (k *killFS) Link(o, n string) error {
	k.before()
	err := k.FS.Link(o, n)
	k.after("link", o, n)
	return err
}

func (k *killFS) Remove(name string) error {
	k.before()
	err := k.FS.Remove(name)
	k.after("remove", name, "")
	return err
}

func (k *killFS) SyncDir(name string) error {
	k.before()
	err := k.FS.SyncDir(name)
	k.after("syncdir", name, "")
	return err
}

func (k *killFS) Failpoint(name string) error {
	k.before()
	err := k.FS.Failpoint(name)
	k.after("failpoint:"+name, "", "")
	return err
}

type killFile struct {
	File
	k *killFS
}

func (f *killFile) Write(p []byte) (int, error) {
	f.k.before()
	n, err := f.File.Write(p)
	f.k.after("write", f.Name(), "")
	return n, err
}

func (f *killFile) Sync() error {
	f.k.before()
	err := f.File.Sync()
	f.k.after("sync", f.Name(), "")
	return err
}

func (f *killFile) Close() error {
	f.k.before()
	err := f.File.Close()
	f.k.after("close", f.Name(), "")
	return err
}

// Reroot returns fsys with the disk under its kill point replaced by inner
// (the same kill point, counting on: a command that moves onto a confined
// disk once it knows its repo keeps its place in the count); a disk with no
// kill point is inner itself.
func Reroot(fsys, inner FS) FS {
	inner = OrReal(inner)
	if k, ok := fsys.(*killFS); ok {
		return &killFS{FS: inner, killSpec: k.killSpec}
	}
	return inner
}
