//go:build unix

package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// openReadable opens name for reading without blocking (O_NONBLOCK: the
// open of a FIFO with no writer returns at once) and keeps it only if it
// is a regular file, or, with dirOK, a directory (confine.go).
func openReadable(name string, dirOK bool) (*os.File, error) {
	var fd int
	err := retryEINTR(func() (e error) {
		fd, e = unix.Open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		return e
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return keepReadable(fd, name, dirOK)
}

// keepReadable keeps fd (opened O_NONBLOCK) only if fstat says it is a
// regular file (or, with dirOK, a directory), and clears O_NONBLOCK so it
// reads as a plain open file does; anything else is closed unread and a
// *NotRegularError.
func keepReadable(fd int, name string, dirOK bool) (*os.File, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		if !dirOK {
			unix.Close(fd)
			// What reading a directory has always said (os.ReadFile).
			return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
		}
	default:
		unix.Close(fd)
		return nil, &NotRegularError{Path: name, Mode: typeOf(uint32(st.Mode))}
	}
	_ = unix.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), name), nil
}

func typeOf(mode uint32) fs.FileMode {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFDIR:
		return fs.ModeDir
	}
	return fs.ModeIrregular
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}

// OpenPlain opens name as os.OpenFile does, for the files swampj opens
// outside an FS (bbolt's journal, flock files, a wrapped run's change
// log), under the trust boundary's rules for them (confine.go): never
// through a symlink at name (O_NOFOLLOW: a link planted there cannot
// redirect a create outside the repo), never blocking, a regular file only
// (a FIFO or device is a *NotRegularError), and, run as root, a file owned
// by root in a directory that belongs to someone else is given to that
// owner, so the repo's owner is never locked out of what swampj left.
func OpenPlain(name string, flag int, perm fs.FileMode) (*os.File, error) {
	var fd int
	err := retryEINTR(func() (e error) {
		fd, e = unix.Open(name, flag|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, uint32(perm.Perm()))
		return e
	})
	if err == syscall.ELOOP {
		return nil, &NotRegularError{Path: name, Mode: fs.ModeSymlink}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := keepReadable(fd, name, false)
	if err != nil {
		return nil, err
	}
	giveToDirOwner(f, name)
	return f, nil
}

// giveToDirOwner gives f (named name) to the owner of its directory when
// the process is root, f is root's and the directory is not.
func giveToDirOwner(f *os.File, name string) {
	if os.Geteuid() != 0 {
		return
	}
	var st, dst unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) != nil || st.Uid != 0 {
		return
	}
	if unix.Stat(filepath.Dir(name), &dst) != nil || dst.Uid == 0 {
		return
	}
	_ = unix.Fchown(int(f.Fd()), int(dst.Uid), int(dst.Gid))
}

// GiveToDirOwner is giveToDirOwner for a path made outside an FS (a file
// bbolt created).
func GiveToDirOwner(name string) {
	if os.Geteuid() != 0 {
		return
	}
	var st, dst unix.Stat_t
	if unix.Lstat(name, &st) != nil || st.Uid != 0 || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return
	}
	if unix.Stat(filepath.Dir(name), &dst) != nil || dst.Uid == 0 {
		return
	}
	_ = unix.Lchown(name, int(dst.Uid), int(dst.Gid))
}
