//go:build unix

package journal

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processAlive reports whether pid exists on this host (EPERM: it exists
// but belongs to someone else).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
