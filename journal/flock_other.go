//go:build !unix

package journal

import (
	"os"
	"time"
)

// flockWait without flock(2): no lock beyond bbolt's own (which polls).
// Shared holds are then off (sharedHoldsSupported), so every holder keeps
// bbolt's lock from Open to Close and the repo lock is never needed.
func flockWait(f *os.File, exclusive bool, timeout time.Duration) error { return nil }

const sharedHoldsSupported = false

// Without flock no wrapper can be seen alive: wrapped runs are refused
// before they start (package ops/wrapped), so no log exists to judge.
func tryFlockShared(f *os.File) (bool, error) { return true, nil }

// HoldRunLog without flock: nothing to hold.
func HoldRunLog(f *os.File) error { return nil }
