package migrate

import (
	"syscall"

	"github.com/swampj/swampj/fsx"
)

// sameDevice reports whether a and b are on the same file system, so that a
// rename between them cannot fail with EXDEV.
func sameDevice(fsys fsx.FS, a, b string) (bool, error) {
	da, err := deviceOf(fsys, a)
	if err != nil {
		return false, err
	}
	db, err := deviceOf(fsys, b)
	if err != nil {
		return false, err
	}
	return da == db, nil
}

func deviceOf(fsys fsx.FS, path string) (uint64, error) {
	fi, err := fsys.Lstat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, nil // not a real file system (a test double): no device to compare
	}
	return st.Dev, nil
}
