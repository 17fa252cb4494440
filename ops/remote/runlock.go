package remote

// swampj's run lock: one object in the bucket, RunLockKey under the
// prefix, taken by every wrapped swamp command on a remote-backed repo for
// the whole command, so that wrapped commands from different checkouts run
// one at a time and each can bring its cache up to date before it writes.
// It is the datastore lock's protocol (create-if-absent, heartbeat every
// TTL/3, stale after the TTL, release only if still ours) on another key;
// swamp itself never takes it, so plain swamp commands are not serialized
// by it.

import (
	"context"
	"time"
)

// RunLock takes swampj's run lock in c's bucket, waiting up to timeout.
// ErrLockBusy when another holder kept it the whole time.
func RunLock(ctx context.Context, c *Cache, env func(string) string, timeout time.Duration) (release func() error, err error) {
	return lockKey(ctx, c, env, RunLockKey, timeout)
}
