package lock

import (
	"fmt"

	"github.com/swampj/swampj"
)

// ChangedError: a lock judged dead was taken (or rewritten) before the
// repair could move it.
type ChangedError struct{ Path, Detail string }

func (e *ChangedError) Error() string {
	return fmt.Sprintf("did not move lock %s: %s; someone may hold it now, so it is left in place. Run the doctor again", e.Path, e.Detail)
}

// Next: check the repo again (the doctor).
func (e *ChangedError) Next() swampj.Next { return swampj.NextCheck }
