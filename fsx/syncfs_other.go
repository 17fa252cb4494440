//go:build !linux

package fsx

import "syscall"

// SyncFS flushes the file systems (sync(2): there is no per-file-system
// call here).
func SyncFS(string) error {
	syscall.Sync()
	return nil
}
