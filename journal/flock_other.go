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
