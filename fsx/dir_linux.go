//go:build linux

package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const statAtSupported = true

// openDirFile opens a directory as os.ReadDir does (O_DIRECTORY, the same
// error, and no poller registration: a directory is never polled).
func openDirFile(name string) (*os.File, error) {
	var fd int
	var err error
	for {
		if fd, err = unix.Open(name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// statAt is one fstatat(2) of rel relative to the open directory fd
// (named name), following symlinks as stat(2) does, with os.Stat's
// FileInfo and error.
func statAt(fd int, name, rel string) (fs.FileInfo, error) {
	var st unix.Stat_t
	var err error
	for {
		if err = unix.Fstatat(fd, rel, &st, 0); err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: filepath.Join(name, rel), Err: err}
	}
	return &statInfo{name: filepath.Base(rel), st: st}, nil // rel is clean: its tail is the joined path's
}

// readFileAt is os.ReadFile of rel relative to the open directory fd
// (named name), with os.ReadFile's errors, for a regular file of at most
// MaxReadFile bytes only: the open never blocks (a FIFO is refused by
// fstat before any read).
func readFileAt(dirfd int, name, rel string) ([]byte, error) {
	return readFileAtHow(dirfd, name, rel, nil)
}

// readFileBeneath is readFileAt resolved beneath the directory (openat2,
// RESOLVE_BENEATH); a path that leaves it is read through fsys (the
// confined disk), which refuses it if it leaves the roots too.
func readFileBeneath(fsys FS, dirfd int, name, rel string) ([]byte, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	data, err := readFileAtHow(dirfd, name, rel, how)
	if errors.Is(err, syscall.EXDEV) {
		return fsys.ReadFile(filepath.Join(name, rel))
	}
	return data, err
}

func readFileAtHow(dirfd int, name, rel string, how *unix.OpenHow) ([]byte, error) {
	var fd int
	var err error
	for {
		if how != nil {
			fd, err = unix.Openat2(dirfd, rel, how)
		} else {
			fd, err = unix.Openat(dirfd, rel, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		}
		if err != syscall.EINTR && err != syscall.EAGAIN {
			break
		}
	}
	path := filepath.Join(name, rel)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	size := 512
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if st.Size > MaxReadFile {
			return nil, &TooLargeError{Path: path, Size: st.Size, Limit: MaxReadFile}
		}
		size = int(st.Size) + 1 // one more, so that EOF needs no growing (as os.ReadFile)
	case unix.S_IFDIR:
		return nil, &fs.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	default:
		return nil, &NotRegularError{Path: path, Mode: typeOf(uint32(st.Mode))}
	}
	data := make([]byte, 0, max(size, 512))
	for {
		n, err := unix.Read(fd, data[len(data):cap(data)])
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue
		}
		if err != nil {
			return data, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return data, nil
		}
		data = data[:len(data)+n]
		if len(data) > MaxReadFile {
			return nil, &TooLargeError{Path: path, Size: int64(len(data)), Limit: MaxReadFile}
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// statBeneath is statAt that never follows a symlink at rel's end out of
// the directory: the entry is looked at itself, and a link there is
// stat'ed through fsys (the confined disk), which refuses one that leaves
// the roots. Only the last element is checked here: the directories rel
// passes are the item's own version directories, which scans take from the
// listing as real directories.
func statBeneath(fsys FS, fd int, name, rel string) (fs.FileInfo, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(fd, rel, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: filepath.Join(name, rel), Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return fsys.Stat(filepath.Join(name, rel))
	}
	return &statInfo{name: filepath.Base(rel), st: st}, nil
}

func (OS) openDirAt(name string) (*os.File, error) { return openDirFile(name) }

// statInfo is os's fileStat for a stat_t that os did not make.
type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Sec, s.st.Mtim.Nsec) }
func (s *statInfo) IsDir() bool        { return s.Mode().IsDir() }
func (s *statInfo) Sys() any           { return &s.st } // *unix.Stat_t

// Mode is os's fillFileStatFromSys conversion.
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if s.st.Mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}
