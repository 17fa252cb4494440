package fsx

import (
	"io/fs"
	"os"
	"path/filepath"
)

// OS is the real file system.
type OS struct{}

// Real returns the FS backed by the operating system.
func Real() FS { return OS{} }

func (OS) Stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (OS) Lstat(name string) (fs.FileInfo, error)     { return os.Lstat(name) }
func (OS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }
func (OS) Readlink(name string) (string, error)       { return os.Readlink(name) }
func (OS) EvalSymlinks(name string) (string, error)   { return filepath.EvalSymlinks(name) }

// Open opens name for reading as os.Open does, but never blocks and never
// hands out a FIFO, socket or device (confine.go): a repo's files are
// input, and such a file planted where swampj reads could hang it.
func (OS) Open(name string) (File, error) {
	f, err := openReadable(name, true)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadFile is os.ReadFile for a regular file of at most MaxReadFile bytes.
func (OS) ReadFile(name string) ([]byte, error) {
	f, err := openReadable(name, false)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readBounded(f, name, MaxReadFile)
}

func (OS) Create(name string, perm fs.FileMode) (File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (OS) OpenAppend(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (OS) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (OS) Rename(oldpath, newpath string) error      { return os.Rename(oldpath, newpath) }
func (OS) RenameNoReplace(oldpath, newpath string) error {
	return renameNoReplace(oldpath, newpath)
}
func (OS) Link(oldpath, newpath string) error { return os.Link(oldpath, newpath) }
func (OS) Remove(name string) error           { return os.Remove(name) }

func (OS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "fsync", Path: name, Err: unwrapPathErr(err)}
	}
	return nil
}

func (OS) Failpoint(string) error { return nil }

func (OS) concurrentSync() bool { return true }

func unwrapPathErr(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
