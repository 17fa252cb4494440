package journal

import (
	"errors"
	"fmt"
	"time"
)

// ErrLockTimeout is matched (errors.Is) by a LockTimeoutError.
var ErrLockTimeout = errors.New("journal: timed out waiting for the repo lock")

// ErrCorrupt is matched (errors.Is) by a CorruptError.
var ErrCorrupt = errors.New("journal: damaged journal file")

// LockTimeoutError is returned when another process holds the repo lock for
// longer than the lock timeout.
type LockTimeoutError struct {
	Path   string
	Waited time.Duration
	Holder *Holder // nil when the holder record could not be read
}

func (e *LockTimeoutError) Error() string {
	who := "another swampj process (its holder record is missing)"
	if e.Holder != nil {
		who = fmt.Sprintf("pid %d on %s since %s", e.Holder.PID, e.Holder.Host, e.Holder.StartedAt.Format(time.RFC3339))
		if len(e.Holder.Command) > 0 {
			who += fmt.Sprintf(" (%s)", joinCmd(e.Holder.Command))
		}
	}
	return fmt.Sprintf("the repo is locked by %s; waited %s. Wait for it to finish, or raise --lock-timeout", who, e.Waited)
}

func (e *LockTimeoutError) Is(target error) bool { return target == ErrLockTimeout }

// CorruptError is returned when the journal file cannot be read. The file
// has been moved to MovedTo (when not empty) and nothing was deleted.
type CorruptError struct {
	Path    string
	Reason  string
	MovedTo string
}

func (e *CorruptError) Error() string {
	if e.MovedTo == "" {
		return fmt.Sprintf("journal %s is damaged: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("journal %s was damaged (%s) and has been moved to %s. It may have recorded unfinished operations: "+
		"swampj plans from the disk, so re-run the interrupted command to finish it, and run 'swampj catalog verify'. "+
		"Running swampj again now starts a fresh journal", e.Path, e.Reason, e.MovedTo)
}

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// NotFoundError is returned for an unknown intent id.
type NotFoundError struct{ ID uint64 }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no intent %d in the journal (run 'swampj journal list --all')", e.ID)
}

func joinCmd(c []string) string {
	s := ""
	for i, a := range c {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}
