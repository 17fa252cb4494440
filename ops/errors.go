package ops

import (
	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/repo"
)

// Error classes a host program branches on (errors.Is). Every message says
// what happened; none names a CLI command or flag — a CLI adds those.
var (
	// ErrBusy: someone else holds what the call needed — the journal lock
	// (another swampj), a swamp lock, the catalog — past the timeout.
	// Nothing was changed; retry later. It is swampj.ErrBusy.
	ErrBusy = swampj.ErrBusy
	// ErrNotARepo: no .swamp.yaml at or above the directory given. It is
	// repo.ErrNotARepo.
	ErrNotARepo = repo.ErrNotARepo
	// ErrConflict: a step of the operation found the disk in neither the
	// state before it nor the state after it — something else changed
	// those paths — so swampj stopped rather than guess. Nothing more was
	// changed and the operation's intent stays open: once the paths are
	// settled, recovery finishes or rolls it back. It is swampj.ErrConflict.
	ErrConflict = swampj.ErrConflict
	// ErrStepFailed: a step of the operation failed (the error wraps the
	// cause: ENOSPC, EIO, ...). Its intent stays open for recovery, which
	// finishes or rolls it back. It is swampj.ErrStepFailed.
	ErrStepFailed = swampj.ErrStepFailed
)
