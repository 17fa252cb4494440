//go:build linux

package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Confined is the real disk held to the trust boundary (confine.go): every
// operation resolves its path with openat2(RESOLVE_BENEATH) under the open
// descriptor of its root, so the kernel refuses, in the same step as the
// use, any symlink or ".." that would leave the root.
type Confined struct {
	roots []confineRoot // longest path first
	names []string      // the root paths, for rootOf and errors
	// owner, when not nil, is who every created file and directory is given
	// to: the repo's owner, when swampj runs as root on a repo owned by
	// someone else.
	owner *[2]int
}

type confineRoot struct {
	path string
	fd   int
}

// NewConfined opens each root (a directory, named as the user or the
// repo's configuration named it: a symlink in that name is the user's
// choice and followed) and returns the real disk held to them. The first
// root is the repo: when the process runs as root and the repo belongs to
// another user, what it creates is given to that user. Close releases the
// roots.
func NewConfined(roots ...string) (*Confined, error) {
	c := &Confined{}
	for _, r := range outermost(roots) {
		fd, err := unix.Open(r, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			c.Close()
			return nil, &fs.PathError{Op: "open", Path: r, Err: err}
		}
		c.roots = append(c.roots, confineRoot{path: r, fd: fd})
		c.names = append(c.names, r)
		// The same directory by its resolved name: a caller may hold either.
		if real, err := filepath.EvalSymlinks(r); err == nil && real != r && !slices.Contains(c.names, real) {
			if fd2, err := unix.Dup(fd); err == nil {
				unix.CloseOnExec(fd2)
				c.roots = append(c.roots, confineRoot{path: real, fd: fd2})
				c.names = append(c.names, real)
			}
		}
	}
	if len(c.roots) > 0 && os.Geteuid() == 0 {
		var st unix.Stat_t
		if unix.Fstat(c.roots[0].fd, &st) == nil && st.Uid != 0 {
			c.owner = &[2]int{int(st.Uid), int(st.Gid)}
		}
	}
	slices.SortStableFunc(c.roots, func(a, b confineRoot) int { return len(b.path) - len(a.path) })
	return c, nil
}

// Close releases the roots' descriptors.
func (c *Confined) Close() error {
	for _, r := range c.roots {
		unix.Close(r.fd)
	}
	c.roots = nil
	return nil
}

// Roots are the directories c is held to.
func (c *Confined) Roots() []string { return slices.Clone(c.names) }

// Owner is the uid and gid created files are given to, or ok false when
// they keep the process's own.
func (c *Confined) Owner() (uid, gid int, ok bool) {
	if c.owner == nil {
		return 0, 0, false
	}
	return c.owner[0], c.owner[1], true
}

func (c *Confined) concurrentSync() bool { return true }

// locate finds name's root and its path relative to it.
func (c *Confined) locate(op, name string) (confineRoot, string, error) {
	if !filepath.IsAbs(name) {
		if abs, err := filepath.Abs(name); err == nil {
			name = abs
		}
	}
	root, rel, ok := rootOf(c.names, name)
	if !ok {
		return confineRoot{}, "", &OutsideError{Op: op, Path: name, Roots: c.names}
	}
	for _, r := range c.roots {
		if r.path == root {
			return r, rel, nil
		}
	}
	return confineRoot{}, "", &OutsideError{Op: op, Path: name, Roots: c.names}
}

// openBeneath is openat2(root, rel, flags, RESOLVE_BENEATH|NO_MAGICLINKS):
// the kernel's confined resolution. EXDEV (a link or ".." leaving the
// root) becomes an *OutsideError naming the link.
func (c *Confined) openBeneath(op, name string, flags int, mode uint32) (int, error) {
	r, rel, err := c.locate(op, name)
	if err != nil {
		return -1, err
	}
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: uint64(mode), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(r.fd, rel, &how)
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue // EAGAIN: a rename raced the lookup; the kernel asks to retry
		}
		if err == nil {
			return fd, nil
		}
		if err == syscall.EXDEV {
			return -1, c.outside(op, name, r, rel)
		}
		return -1, &fs.PathError{Op: op, Path: name, Err: err}
	}
}

func (c *Confined) outside(op, name string, r confineRoot, rel string) error {
	link, target := leavingLink(r.path, rel)
	return &OutsideError{Op: op, Path: name, Link: link, Target: target, Roots: c.names}
}

// parent opens name's directory (resolved beneath its root) for an *at
// call on its last element, which is never followed.
func (c *Confined) parent(op, name string) (dirfd int, base string, err error) {
	name = filepath.Clean(name)
	if _, rel, err := c.locate(op, name); err != nil {
		return -1, "", err
	} else if rel == "." {
		// A root itself: it exists (Mkdir's answer), and it is the
		// boundary, never renamed, linked or removed through it.
		if op == "mkdir" {
			return -1, "", &fs.PathError{Op: op, Path: name, Err: syscall.EEXIST}
		}
		return -1, "", &fs.PathError{Op: op, Path: name, Err: syscall.EPERM}
	}
	base = filepath.Base(name)
	if base == "." || base == ".." || base == "/" {
		return -1, "", &fs.PathError{Op: op, Path: name, Err: syscall.EINVAL}
	}
	fd, err := c.openBeneath(op, filepath.Dir(name), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = name
		}
		return -1, "", err
	}
	return fd, base, nil
}

func (c *Confined) fstatPath(op, name string, follow bool) (fs.FileInfo, error) {
	if r, rel, err := c.locate(op, name); err == nil && rel == "." {
		// A root itself, as it was named and opened.
		var st unix.Stat_t
		if err := retryEINTR(func() error { return unix.Fstat(r.fd, &st) }); err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		return &statInfo{name: filepath.Base(filepath.Clean(name)), st: st}, nil
	}
	if !follow {
		dfd, base, err := c.parent(op, name)
		if err != nil {
			return nil, err
		}
		defer unix.Close(dfd)
		var st unix.Stat_t
		if err := retryEINTR(func() error { return unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
			return nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		return &statInfo{name: base, st: st}, nil
	}
	fd, err := c.openBeneath(op, name, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: err}
	}
	return &statInfo{name: filepath.Base(filepath.Clean(name)), st: st}, nil
}

func (c *Confined) Stat(name string) (fs.FileInfo, error)  { return c.fstatPath("stat", name, true) }
func (c *Confined) Lstat(name string) (fs.FileInfo, error) { return c.fstatPath("lstat", name, false) }

func (c *Confined) ReadDir(name string) ([]fs.DirEntry, error) {
	fd, err := c.openBeneath("open", name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// openRead opens name for reading without blocking and refuses anything
// but a regular file (or, with dirOK, a directory) before it is read.
func (c *Confined) openRead(name string, dirOK bool) (*os.File, error) {
	fd, err := c.openBeneath("open", name, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return keepReadable(fd, name, dirOK)
}

func (c *Confined) Open(name string) (File, error) {
	f, err := c.openRead(name, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (c *Confined) ReadFile(name string) ([]byte, error) {
	f, err := c.openRead(name, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, name, MaxReadFile)
}

func (c *Confined) Readlink(name string) (string, error) {
	dfd, base, err := c.parent("readlink", name)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	for n := 256; n <= 1<<16; n *= 2 {
		buf := make([]byte, n)
		var k int
		if err := retryEINTR(func() (e error) { k, e = unix.Readlinkat(dfd, base, buf); return e }); err != nil {
			return "", &fs.PathError{Op: "readlink", Path: name, Err: err}
		}
		if k < n {
			return string(buf[:k]), nil
		}
	}
	return "", &fs.PathError{Op: "readlink", Path: name, Err: syscall.ENAMETOOLONG}
}

// EvalSymlinks resolves name as the plain disk does, and refuses a result
// outside the roots or a name the kernel will not resolve beneath them.
func (c *Confined) EvalSymlinks(name string) (string, error) {
	fd, err := c.openBeneath("lstat", name, unix.O_PATH, 0)
	if err != nil {
		return "", err
	}
	unix.Close(fd)
	p, err := filepath.EvalSymlinks(name)
	if err != nil {
		return "", err
	}
	if _, _, ok := rootOf(c.names, p); !ok {
		return "", &OutsideError{Op: "lstat", Path: name, Roots: c.names}
	}
	return p, nil
}

// give hands a file or directory just created to the repo's owner (see
// Confined.owner); a failure to is ignored: the file is made either way,
// and the owner's access is what the umask gave.
func (c *Confined) give(dfd int, base string) {
	if c.owner != nil {
		_ = unix.Fchownat(dfd, base, c.owner[0], c.owner[1], unix.AT_SYMLINK_NOFOLLOW)
	}
}

func (c *Confined) Create(name string, perm fs.FileMode) (File, error) {
	dfd, base, err := c.parent("open", name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	var fd int
	if err := retryEINTR(func() (e error) {
		fd, e = unix.Openat(dfd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		return e
	}); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	if c.owner != nil {
		_ = unix.Fchown(fd, c.owner[0], c.owner[1])
	}
	return os.NewFile(uintptr(fd), name), nil
}

func (c *Confined) OpenAppend(name string) (File, error) {
	fd, err := c.openBeneath("open", name, unix.O_WRONLY|unix.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f, err := keepReadable(fd, name, false)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (c *Confined) Mkdir(name string, perm fs.FileMode) error {
	dfd, base, err := c.parent("mkdir", name)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	if err := retryEINTR(func() error { return unix.Mkdirat(dfd, base, uint32(perm.Perm())) }); err != nil {
		return &fs.PathError{Op: "mkdir", Path: name, Err: err}
	}
	c.give(dfd, base)
	return nil
}

func (c *Confined) rename2(oldpath, newpath string, flags uint) error {
	ofd, obase, err := c.parent("rename", oldpath)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nbase, err := c.parent("rename", newpath)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	err = retryEINTR(func() error { return unix.Renameat2(ofd, obase, nfd, nbase, flags) })
	if err != nil && flags != 0 && (err == unix.EINVAL || err == unix.ENOSYS) {
		// A file system without RENAME_NOREPLACE (some FUSE, old NFS): the
		// fallback's reasoning (rename_fallback.go), at the same descriptors.
		var st unix.Stat_t
		if e := unix.Fstatat(ofd, obase, &st, unix.AT_SYMLINK_NOFOLLOW); e != nil {
			err = e
		} else if st.Mode&unix.S_IFMT == unix.S_IFREG {
			if err = unix.Linkat(ofd, obase, nfd, nbase, 0); err == nil {
				err = unix.Unlinkat(ofd, obase, 0)
			}
		} else if e := unix.Fstatat(nfd, nbase, &st, unix.AT_SYMLINK_NOFOLLOW); e == nil {
			err = syscall.EEXIST
		} else {
			err = unix.Renameat(ofd, obase, nfd, nbase)
		}
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

func (c *Confined) Rename(oldpath, newpath string) error { return c.rename2(oldpath, newpath, 0) }
func (c *Confined) RenameNoReplace(oldpath, newpath string) error {
	return c.rename2(oldpath, newpath, unix.RENAME_NOREPLACE)
}

func (c *Confined) Link(oldpath, newpath string) error {
	ofd, obase, err := c.parent("link", oldpath)
	if err != nil {
		return err
	}
	defer unix.Close(ofd)
	nfd, nbase, err := c.parent("link", newpath)
	if err != nil {
		return err
	}
	defer unix.Close(nfd)
	if err := retryEINTR(func() error { return unix.Linkat(ofd, obase, nfd, nbase, 0) }); err != nil {
		return &os.LinkError{Op: "link", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}

// Remove is os.Remove at the last name itself: a file (or link) is
// unlinked, an empty directory removed.
func (c *Confined) Remove(name string) error {
	dfd, base, err := c.parent("remove", name)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	e := retryEINTR(func() error { return unix.Unlinkat(dfd, base, 0) })
	if e == nil {
		return nil
	}
	e1 := retryEINTR(func() error { return unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR) })
	if e1 == nil {
		return nil
	}
	// os.Remove's choice of which error to report.
	if e1 != syscall.ENOTDIR {
		e = e1
	}
	return &fs.PathError{Op: "remove", Path: name, Err: e}
}

func (c *Confined) SyncDir(name string) error {
	fd, err := c.openBeneath("open", name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	err = retryEINTR(func() error { return unix.Fsync(fd) })
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "fsync", Path: name, Err: err}
	}
	return nil
}

func (c *Confined) Failpoint(string) error { return nil }

// openDirAt opens a directory for Dir, beneath the roots.
func (c *Confined) openDirAt(name string) (*os.File, error) {
	fd, err := c.openBeneath("open", name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}
