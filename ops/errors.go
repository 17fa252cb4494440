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
)
