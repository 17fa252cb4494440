//go:build unix

package fsx

import (
	"errors"

	"golang.org/x/sys/unix"
)

// ProcessExists reports whether pid names a live process on this host, for
// judging what a process left behind (a lock, a half-created journal).
// kill(pid, 0) delivers nothing and only checks: ESRCH means no such
// process; EPERM means it exists but belongs to someone else. Anything else
// (or a pid kill would read as a process group) counts as alive, so a
// doubtful probe never lets anyone remove what a live process owns.
func ProcessExists(pid int) bool {
	if pid <= 0 {
		return true
	}
	return !errors.Is(unix.Kill(pid, 0), unix.ESRCH)
}
