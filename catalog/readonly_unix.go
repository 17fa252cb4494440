//go:build unix

package catalog

import "syscall"

// dirWritable asks the kernel whether this process may create files in dir
// (access(2) W_OK: EROFS on a read-only mount, EACCES without permission).
// It is a question, not a touch of the disk, so it does not go through fsx.
func dirWritable(dir string) error { return syscall.Access(dir, 0x2) }
