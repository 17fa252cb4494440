package journal

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
)

// ErrLockTimeout is matched (errors.Is) by a LockTimeoutError.
var ErrLockTimeout error = swampj.NewClassError(swampj.ClassBusy, "lock_timeout", "journal: timed out waiting for the repo lock")

// ErrCorrupt is matched (errors.Is) by a CorruptError.
var ErrCorrupt error = swampj.NewError("journal_corrupt", "journal: damaged journal file")

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
	return fmt.Sprintf("the repo is locked by %s; waited %s. Wait for it to finish and retry", who, e.Waited)
}

// Is matches ErrLockTimeout and swampj.ErrBusy (retry later).
func (e *LockTimeoutError) Is(target error) bool {
	return target == ErrLockTimeout || target == swampj.ErrBusy
}

// Code is ErrLockTimeout's; Class is swampj.ClassBusy.
func (e *LockTimeoutError) Code() string        { return ErrLockTimeout.(swampj.Coded).Code() }
func (e *LockTimeoutError) Class() swampj.Class { return swampj.ClassBusy }

// CorruptError is returned when the journal file cannot be read. The file
// has been moved to MovedTo (when not empty) and nothing was deleted.
type CorruptError struct {
	Path    string
	Reason  string
	MovedTo string
	// ReadOnly: the journal was opened read-only (an inspection), so it
	// was left in place.
	ReadOnly bool
}

func (e *CorruptError) Error() string {
	if e.ReadOnly {
		return fmt.Sprintf("journal %s is damaged: %s. It was opened read-only for inspection, so it was left in place and nothing was changed. "+
			"Recovering where the repo can be written moves the file aside (nothing is deleted) and starts a fresh journal", e.Path, e.Reason)
	}
	if e.MovedTo == "" {
		return fmt.Sprintf("journal %s is damaged: %s", e.Path, e.Reason)
	}
	return fmt.Sprintf("journal %s was damaged (%s) and has been moved to %s. It may have recorded unfinished operations: "+
		"swampj plans from the disk, so re-run the interrupted operation to finish it, and verify the catalog. "+
		"The next swampj operation starts a fresh journal", e.Path, e.Reason, e.MovedTo)
}

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// Code is ErrCorrupt's.
func (e *CorruptError) Code() string        { return ErrCorrupt.(swampj.Coded).Code() }
func (e *CorruptError) Class() swampj.Class { return swampj.ClassFailed }

// NotFoundError is returned for an unknown intent id.
type NotFoundError struct{ ID uint64 }

// Code is "not_found".
func (e *NotFoundError) Code() string        { return "not_found" }
func (e *NotFoundError) Class() swampj.Class { return swampj.ClassFailed }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no intent %d in the journal", e.ID)
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

// ErrMedia is matched (errors.Is) by a MediaError.
var ErrMedia = errors.New("journal: the journal's media cannot be written")

// MediaError is returned when the journal cannot be opened or created for
// writing because its file system is read-only (EROFS) or the process may
// not write it (EACCES, EPERM). Nothing was changed and nothing is damaged:
// the journal was neither moved nor rewritten. errors.Is(err, syscall.EROFS)
// and errors.Is(err, fs.ErrPermission) see the cause.
type MediaError struct {
	Path string
	Op   string // what could not be done, e.g. "open the journal for writing"
	Err  error
	// Access is what refused a permission (the file, its mode and owner,
	// the user), nil on read-only media or when it cannot be told.
	Access *fsx.Access
}

// opReading is the Op of a journal that could not even be read: then
// inspection cannot work either.
const opReading = "open the journal for reading"

// newMediaError builds a MediaError and, for a refused permission, looks
// up (stat) what refused it while the cause is fresh.
func newMediaError(path, op string, err error) *MediaError {
	e := &MediaError{Path: path, Op: op, Err: err}
	if !e.ReadOnly() {
		e.Access = fsx.DescribeAccess(err)
	}
	return e
}

// ReadOnly reports whether the media is read-only (EROFS) rather than the
// process lacking permission.
func (e *MediaError) ReadOnly() bool { return errors.Is(e.Err, syscall.EROFS) }

// Reading reports whether the journal could not even be opened for
// reading, so that no inspection can read it either.
func (e *MediaError) Reading() bool { return e.Op == opReading }

func (e *MediaError) Code() string {
	if c := swampj.Interruption(e.Err); c != nil {
		return c.Code()
	}
	if e.ReadOnly() {
		return "read_only_media"
	}
	return "permission_denied"
}

// Class is swampj.ClassInterrupted when the cause was an interruption.
func (e *MediaError) Class() swampj.Class {
	return swampj.ClassOr(swampj.Interruption(e.Err), swampj.ClassFailed)
}

func (e *MediaError) Error() string {
	if e.ReadOnly() {
		return fmt.Sprintf("journal %s: could not %s: the file system is read-only (EROFS). Nothing was changed and the journal is not damaged. "+
			"Run it where the repo can be written (remount it read-write, or on a writable copy); "+
			"inspection (a dry-run recovery, listing the journal, the doctor, verifying the catalog) works on read-only media",
			e.Path, e.Op)
	}
	why := fmt.Sprintf("%v", e.Err)
	if e.Access != nil {
		why = e.Access.String()
	}
	if e.Reading() {
		return fmt.Sprintf("journal %s: could not %s: permission denied (%s). Nothing was changed and the journal is not damaged. "+
			"Every command reads the journal first, inspection included: run it as a user who may read the repo's .swamp directory "+
			"and the journal, or give this user read permission (the group's, when the repo is shared by a group)",
			e.Path, e.Op, why)
	}
	return fmt.Sprintf("journal %s: could not %s: permission denied (%s). Nothing was changed and the journal is not damaged. "+
		"Run it as a user who may write the repo's .swamp directory and the journal's files, or give this user write permission "+
		"(the group's, when the repo is shared by a group); "+
		"inspection (a dry-run recovery, listing the journal, the doctor, verifying the catalog) only needs to read it",
		e.Path, e.Op, why)
}

func (e *MediaError) Unwrap() error { return e.Err }

func (e *MediaError) Is(target error) bool { return target == ErrMedia }

// IsMediaErr reports whether err means the media refuses writes (EROFS) or
// the process may not write or open the file (EACCES, EPERM): never damage.
func IsMediaErr(err error) bool {
	return errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission)
}

// NotAFileError is returned when something other than a regular file sits at
// the journal path (a directory, a symlink, a device). swampj never reads,
// moves or deletes it.
type NotAFileError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotAFileError) Code() string        { return "journal_not_a_file" }
func (e *NotAFileError) Class() swampj.Class { return swampj.ClassFailed }

func (e *NotAFileError) Error() string {
	what := "not a regular file (" + e.Mode.Type().String() + ")"
	switch {
	case e.Mode.IsDir():
		what = "a directory, not a journal file"
	case e.Mode&fs.ModeSymlink != 0:
		what = "a symbolic link; the journal must be a regular file"
	}
	return fmt.Sprintf("journal %s is %s. swampj did not read, move or delete it, and nothing was changed. "+
		"Check what it holds, then move it out of the way yourself (for example 'mv %s %s.aside'); "+
		"with no journal at that path there is nothing to recover, and the next operation that changes data creates a fresh journal there",
		e.Path, what, e.Path, e.Path)
}

// Next: a longer journal lock timeout waits the holder out.
func (e *LockTimeoutError) Next() swampj.Next { return swampj.NextWaitLonger }

// Next: where the damaged journal was left or set aside, what to do about it.
func (e *CorruptError) Next() swampj.Next {
	switch {
	case e.ReadOnly:
		return swampj.NextRecoverWhereWritable
	case e.MovedTo != "":
		return swampj.NextVerifyCatalog
	}
	return swampj.NextNone
}

// Next: the intent may be among those no longer listed by default.
func (e *NotFoundError) Next() swampj.Next { return swampj.NextListAllIntents }

// Next: recovery has nothing to do with a journal path that is not a file.
func (e *NotAFileError) Next() swampj.Next { return swampj.NextNothingToRecover }

// Next: the inspections that only read work, unless reading failed too.
func (e *MediaError) Next() swampj.Next {
	switch {
	case e.ReadOnly():
		return swampj.NextInspectOnReadOnlyMedia
	case e.Reading():
		return swampj.NextNone
	}
	return swampj.NextInspectReadOnly
}
