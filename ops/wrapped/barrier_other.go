//go:build !(linux && (amd64 || arm64))

package wrapped

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

// MaybeExec: there is no trampoline without the barrier.
func MaybeExec() {}

func supported() error {
	return errors.New("the barrier needs Linux's seccomp user notification (amd64 or arm64)")
}

type supervisor struct{}

func prepare(*exec.Cmd, []string, time.Duration, func([]string, bool) error, func()) (*supervisor, error) {
	return nil, supported()
}
func (*supervisor) start(*exec.Cmd) error { return supported() }
func (*supervisor) close() error          { return nil }
func syncFSes(fds []*os.File) error {
	var first error
	for _, f := range fds {
		if err := f.Sync(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
func fsKey(f *os.File) (uint64, error) { return 0, errors.New("no file system identity here") }
