package write

import (
	"time"

	"github.com/swampj/swampj/ops/internal/testseam"
)

func init() {
	testseam.FixWriteIdentity = func(o any, id string, at time.Time) any { return fixIdentity(o.(WriteOptions), id, at) }
	testseam.NoSettleTimer = func(o any) any {
		w := o.(WriteOptions)
		w.noSettleTimer = true
		return w
	}
}

// fixIdentity makes a write deterministic: every version gets id and
// createdAt at (the crash suites compare whole trees).
func fixIdentity(o WriteOptions, id string, at time.Time) WriteOptions {
	o.newID = func() string { return id }
	o.now = func() time.Time { return at }
	return o
}
