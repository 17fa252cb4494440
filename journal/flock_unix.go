//go:build unix

package journal

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// flockWait takes f's flock (exclusive or shared), waiting at most timeout.
// The wait is a blocking flock(2) on a goroutine of its own, so the kernel
// wakes it the moment the holder lets go. On a timeout that goroutine is
// left waiting: it owns f from then on and closes it (releasing whatever it
// got) when its flock returns.
func flockWait(f *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	fd := int(f.Fd())
	err := syscall.Flock(fd, how|syscall.LOCK_NB)
	if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) {
		return err
	}
	got := make(chan error, 1)
	go func() { got <- flockRetryEINTR(fd, how) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case err := <-got:
		return err
	case <-t.C:
		go func() {
			<-got
			_ = f.Close()
		}()
		return errFlockTimeout
	}
}

func flockRetryEINTR(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// sharedHoldsSupported: flock locks exist here, so writers may share.
const sharedHoldsSupported = true

// tryFlockShared takes f's shared flock if nobody holds it exclusively,
// without waiting (locked false: an exclusive holder exists). The lock is
// released when f is closed.
func tryFlockShared(f *os.File) (locked bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// HoldRunLog takes the exclusive flock on a wrapped run's change log that
// says its wrapper is alive (RunLive); the kernel drops it when the
// process dies.
func HoldRunLog(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
