package fsx

import (
	"io/fs"
	"os"
)

// renameNoReplaceFallback is used where the kernel cannot refuse to replace.
// For a regular file it links the new name (link fails if it exists) and
// then removes the old one, which is race-free. For a directory it checks
// and renames; a racing creator in between is possible but swampj holds the
// repo lock around every such rename, so only a foreign process could race.
func renameNoReplaceFallback(oldpath, newpath string) error {
	fi, err := os.Lstat(oldpath)
	if err != nil {
		return err
	}
	if fi.Mode().IsRegular() {
		if err := os.Link(oldpath, newpath); err != nil {
			return err
		}
		return os.Remove(oldpath)
	}
	if _, err := os.Lstat(newpath); err == nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	return os.Rename(oldpath, newpath)
}
