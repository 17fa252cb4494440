package ops

import (
	"strconv"
	"strings"
	"time"

	"github.com/swampj/swampj/ops/internal/engine"
	"github.com/swampj/swampj/ops/internal/session"
	"github.com/swampj/swampj/ops/internal/testseam"
	"github.com/swampj/swampj/ops/write"
)

// FixIdentity makes a write deterministic: every version gets id and
// createdAt at. The crash suites compare whole trees.
func FixIdentity(o write.WriteOptions, id string, at time.Time) write.WriteOptions {
	return testseam.FixWriteIdentity(o, id, at).(write.WriteOptions)
}

// NoSettleTimer gives a write handle that settles its parked intents only
// every 64 writes and at Close (the crash cells count its operations).
func NoSettleTimer(o write.WriteOptions) write.WriteOptions {
	return testseam.NoSettleTimer(o).(write.WriteOptions)
}

// SetFlushObserver installs the executor's flush observer (benchmarks of
// the serial flush depth) and returns a function that removes it.
func SetFlushObserver(f func(kind string, flushes int, start, end time.Time)) func() {
	return engine.SetFlushObserver(f)
}

// StageOwnerGone is session.StageOwnerGone (the write tests check the names a
// crash leaves).
func StageOwnerGone(name string) bool { return session.StageOwnerGone(name) }

// SetLockTempWritten installs f as package lock's hook between writing a
// lock's temp file and linking it into place (testseam.LockTempWritten)
// and returns a function that removes it.
func SetLockTempWritten(f func(tmp, path string)) (restore func()) {
	testseam.LockTempWritten.Store(&f)
	return func() { testseam.LockTempWritten.Store(nil) }
}

// LeftoverNames are the staging directory of version n and the `latest`
// temp file that a write by process pid on this host names (the owner
// token of stagename.go).
func LeftoverNames(pid int, n int64) (stage, latestTemp string) {
	token, release := session.NewOwnerToken()
	release()
	_, rest, _ := strings.Cut(token, "-")
	token = strconv.Itoa(pid) + "-" + rest
	return session.StageName(n, token), session.LatestTempName(token)
}
