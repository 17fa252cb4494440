//go:build !unix

package fsx

import (
	"io/fs"
	"os"
	"syscall"
)

// openReadable is os.Open, keeping only a regular file (or, with dirOK, a
// directory). Without O_NONBLOCK the open itself may still block.
func openReadable(name string, dirOK bool) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() && !dirOK {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: name, Err: syscall.EISDIR}
	}
	if !st.Mode().IsRegular() && !st.IsDir() {
		f.Close()
		return nil, &NotRegularError{Path: name, Mode: st.Mode()}
	}
	return f, nil
}

// OpenPlain is os.OpenFile, keeping only a regular file.
func OpenPlain(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &NotRegularError{Path: name, Mode: st.Mode()}
		}
		return nil, err
	}
	return f, nil
}

// GiveToDirOwner does nothing here.
func GiveToDirOwner(string) {}
