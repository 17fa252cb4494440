//go:build linux

package fsx

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncFS flushes every dirty page and inode of the file system holding
// path (syncfs(2)): what another program wrote without fsync is on disk
// when it returns. swampj run uses it after a swamp command, whose own
// writes are not fsynced.
func SyncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
