//go:build unix

package lock

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processExists reports whether pid names a live process on this host.
// kill(pid, 0) delivers nothing and only checks: ESRCH means no such
// process; EPERM means it exists but belongs to someone else. Anything else
// (or a pid that kill would read as a process group) counts as alive, so a
// doubtful probe never declares a lock stale.
func processExists(pid int) bool {
	if pid <= 0 {
		return true
	}
	err := unix.Kill(pid, 0)
	return !errors.Is(err, unix.ESRCH)
}
