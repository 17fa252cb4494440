// Package testseam carries the hooks that tests of package ops need inside
// packages they cannot reach otherwise. From package write: a write whose
// version id and createdAt are fixed, so that two runs leave
// byte-identical trees, and a write handle without its settle timer, so
// that the number of operations a run issues does not depend on how fast
// the machine is. WriteOptions keeps its clock and id source unexported,
// so no host sees them; package write fills these in when it is
// initialised. From package lock: a moment inside the taking of a lock
// that a test holds open. Only code inside ops can import this package.
package testseam

import (
	"sync/atomic"
	"time"
)

// FixWriteIdentity returns a copy of opts, a write.WriteOptions, whose
// versions all get id and createdAt at.
var FixWriteIdentity func(opts any, id string, at time.Time) any

// NoSettleTimer returns a copy of opts, a write.WriteOptions, with which
// write.Open gives a handle that syncs its catalog and marks its parked
// intents only every 64 writes and at Close, never on its timer.
var NoSettleTimer func(opts any) any

// LockTempWritten, when set, is called by package lock each time a lock
// record has been written and fsynced in its temp file tmp, before that
// file is linked into place at path: the window in which the temp alone
// stands for a lock being taken. A test blocks in it to hold the window
// open. It is set while other goroutines take locks, hence atomic.
var LockTempWritten atomic.Pointer[func(tmp, path string)]
