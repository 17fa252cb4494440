package write

// The vocabulary of a write: what a host passes (VersionWrite, WriteOptions,
// Workflow), what it gets back (WrittenVersion) and the errors it branches
// on, and the in-flight state of one version (pendingVersion) and one item
// (writeItem) that preparing, planning and running share.

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/internal/session"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/jsfmt"
	"github.com/swampj/swampj/ops/lock"
	"github.com/swampj/swampj/ops/meta"
	"github.com/swampj/swampj/ops/repo"
)

// IntentKindVersionWrite is the journal kind of a versioned write.
const IntentKindVersionWrite = "version-write"

// Defaults of a version write (swamp-format §2.4).
const (
	DefaultContentType = "application/json"
	DefaultLifetime    = "infinite"
	DefaultGC          = 10
	// DefaultOwnerRef is the ownerRef of a new item written with an owner
	// type other than model-method and no ref. The owner itself is
	// inherited (writedefaults.go).
	DefaultOwnerRef = "swampj"
	DefaultDataType = "resource"
)

// Workflow is the provenance of a workflow-step output (swamp-format §7.1). Every
// non-empty field is mirrored into the tags (source, workflow, workflowId,
// workflowRunId, job, step — in that order, after modelName) and into
// ownerDefinition, as swamp's data writer does.
type Workflow struct {
	ID     string // workflowId (a UUID)
	RunID  string // workflowRunId (a UUID)
	Name   string // workflow name: tag `workflow`, ownerDefinition.workflowName
	Job    string // tag `job`, ownerDefinition.jobName
	Step   string // tag `step`, ownerDefinition.stepName
	Source string // tag `source`, ownerDefinition.source ("step-output" in swamp)
}

// VersionWrite is one new version of one data item.
type VersionWrite struct {
	Address repo.Address
	// Content is the payload. If it is an io.ReadSeeker that can seek (a
	// regular file), it is hashed first and the exact size and SHA-256 go
	// into the journal; otherwise (a pipe, a generator) the staged version
	// verifies itself against the metadata written after it. Content is
	// read from its current position; it is never held in memory.
	Content io.Reader

	ContentType       string                 // default application/json
	Lifetime          string                 // default infinite
	GarbageCollection meta.GarbageCollection // zero: 10
	// OwnerType and OwnerRef default to the owner of the item's current
	// version, which swamp enforces: a different one is refused
	// (*OwnerMismatchError). A new item defaults to model-method, ownerRef
	// the model id, as swamp's method runs stamp (writedefaults.go).
	OwnerType string
	OwnerRef  string
	// ModelName (tag modelName, catalog model_name) and SpecName (tag
	// specName) default to the current version's; for a new item to the
	// model's name (its definition file) and the data name.
	ModelName string
	SpecName  string
	Workflow  Workflow
	// Tags are applied last (swamp's runtime --tag): a key already present
	// keeps its position and takes the new value. `type` defaults to
	// "resource".
	Tags meta.Tags
}

// WriteOptions configure WriteVersions. The zero value writes to the real
// disk, opens (and closes) the repo's journal and catalog itself, and waits
// for swamp's per-model lock as long as SWAMP_LOCK_TIMEOUT_MS says.
type WriteOptions struct {
	// Common: the disk (FS), the waits for the journal
	// (JournalLockTimeout, 0: journal.DefaultLockTimeout) and for swamp's
	// per-model lock (SwampLockTimeout, 0: SWAMP_LOCK_TIMEOUT_MS, else
	// 60 s), the Command recorded in the intent, and the Logger, which
	// receives what went wrong without failing the write (a lock that could
	// not be released, an earlier intent finished on the way) at level
	// Warn, and the executor's step records at level Debug.
	host.Common
	// fsys is the disk the write goes through (withDefaults: FS, or the
	// real one).
	fsys fsx.FS
	// Journal, if set, is an open journal the caller owns (a long-lived
	// tool): completion marks then ride its next commit. The caller must
	// have recovered open intents when it opened it (recover.Run). When nil,
	// WriteVersions opens the repo's journal, first finishes any intent a
	// crashed process left open (as `swampj recover` would), and closes it.
	// (A host that writes often holds the repo open instead: Open.)
	Journal *journal.Journal
	// Catalog opens the catalog (nil: the repo's own, closed on return).
	Catalog *catalogsync.Handle

	// Test hooks: the clock for createdAt and the id generator (fixed by
	// fixIdentity, for the crash suites); recorded runs when writeOverlapped
	// has journaled its plan, before it waits for the locks.
	now      func() time.Time
	newID    func() string
	recorded func()
	// warn is Logger's Warn (withDefaults).
	warn func(string)
	// noSettleTimer: a handle opened with these options settles its parked
	// intents only every settleEvery writes and at Close, never on its
	// timer (test hook: the crash suites count a handle's operations).
	noSettleTimer bool

	// held is the Handle the write runs on (nil: none).
	held *Handle

	// token names this call's staging directories and temp files after
	// the process making them (stagename.go); live while the call runs.
	token string
}

// WrittenVersion is one version WriteVersions published.
type WrittenVersion struct {
	Address repo.Address
	Version int64
	// Dir is the version directory; raw and metadata.yaml are inside.
	Dir string
	// Metadata is exactly what metadata.yaml holds.
	Metadata *meta.Metadata
	// PreviousLatest is the version `latest` named before (0: none).
	PreviousLatest int64
	IntentID       uint64
	// CatalogStale is set when the version is written but the catalog
	// could not follow (why): swamp's data query misses it until a catalog
	// rebuild; `latest` and the files are complete either way.
	CatalogStale string
}

// ErrInvalidWrite is matched by every *InvalidWriteError.
var ErrInvalidWrite = errors.New("invalid version write")

// InvalidWriteError is a write refused before anything was changed: a bad
// address, metadata swamp would refuse, a `latest` swampj cannot update.
type InvalidWriteError struct {
	Index   int    // position in the writes slice
	Address string // as given
	Err     error
}

func (e *InvalidWriteError) Error() string {
	return fmt.Sprintf("write %d (%s): %v; nothing was changed", e.Index+1, e.Address, e.Err)
}
func (e *InvalidWriteError) Unwrap() []error { return []error{ErrInvalidWrite, e.Err} }

// Code is the code of the cause when it has one (an invalid address, a
// path outside the data root), else "invalid_input".
func (e *InvalidWriteError) Code() string {
	var c swampj.Coded
	if errors.As(e.Err, &c) {
		return c.Code()
	}
	return "invalid_input"
}

func (e *InvalidWriteError) Class() swampj.Class {
	var c swampj.Coded
	if errors.As(e.Err, &c) {
		return c.Class()
	}
	return swampj.ClassFailed
}

// InputChangedError is returned when a source hashed before the write did
// not stream the same bytes during it (a file modified meanwhile).
type InputChangedError struct {
	Address           string
	WantSize, GotSize int64
	WantSHA, GotSHA   string
}

func (e *InputChangedError) Error() string {
	return fmt.Sprintf("%s: the input changed while it was being written (hashed %d bytes, sha256 %s; then read %d bytes, sha256 %s); "+
		"the write was rolled back, write it again once the file is stable", e.Address, e.WantSize, shortSum(e.WantSHA), e.GotSize, shortSum(e.GotSHA))
}
func (e *InputChangedError) Code() string        { return "input_changed" }
func (e *InputChangedError) Class() swampj.Class { return swampj.ClassFailed }

// WriteFailedError is a write that failed after its intent was journaled.
// Err is the cause (errors.Is works through it: ENOSPC, EIO, a source
// error); RollbackErr is set when undoing it failed too, in which case the
// intent stays open for `swampj recover`.
type WriteFailedError struct {
	IntentID    uint64
	Summary     string
	Err         error
	RollbackErr error
	// Live says, per item, which version `latest` names now (set when the
	// rollback failed, so the message says what swamp reads).
	Live []string
}

func (e *WriteFailedError) Error() string {
	if e.RollbackErr != nil {
		live := ""
		if len(e.Live) > 0 {
			live = " Now on disk: " + strings.Join(e.Live, "; ") + "."
		}
		return fmt.Sprintf("%s failed: %v; rolling it back failed too: %v.%s Intent %d is still open, decided backward: "+
			"recovery finishes rolling it back (latest back at the previous version, the new one removed); "+
			"a published version is always complete",
			e.Summary, e.Err, e.RollbackErr, live, e.IntentID)
	}
	if e.IntentID == 0 {
		return fmt.Sprintf("%s failed: %v; nothing was published, the item is as it was", e.Summary, e.Err)
	}
	return fmt.Sprintf("%s failed: %v; rolled back, the item is as it was (intent %d)", e.Summary, e.Err, e.IntentID)
}

func (e *WriteFailedError) Unwrap() []error {
	if e.RollbackErr != nil {
		return []error{e.Err, e.RollbackErr}
	}
	return []error{e.Err}
}

// shortSum is a SHA-256 shortened for a message.
func shortSum(sum string) string {
	if len(sum) > 12 {
		return sum[:12] + "…"
	}
	return sum
}

// pendingVersion is one version on its way.
type pendingVersion struct {
	index   int
	w       VersionWrite
	itemDir string
	md      *meta.Metadata // Size/Checksum set once known

	known  bool   // size and hash known before the write
	size   int64  // known: the source's size
	sum    string // known: its SHA-256
	mdData []byte // known: metadata.yaml bytes

	stagePath string
}

// writeItem is one item touched by the write.
type writeItem struct {
	addr      repo.Address
	dir       string
	oldData   []byte
	oldExists bool
	prev      int64   // version the old `latest` named (0: none or unparsable)
	next      int64   // next number to allocate
	first     int64   // next when the item was inspected (stillPlanned)
	last      int64   // highest number allocated by this write
	allocated []int64 // every number allocated by this write
	mkdirs    []string
	defaults  writeDefaults // what its new versions inherit (stillPlanned)
}

func (o WriteOptions) withDefaults() WriteOptions {
	if o.fsys == nil {
		o.fsys = o.Disk()
	}
	if o.SwampLockTimeout <= 0 {
		o.SwampLockTimeout = lock.TimeoutFromEnv(nil)
	}
	o.warn = session.WarnTo(o.Logger)
	if o.now == nil {
		o.now = time.Now
	}
	if o.newID == nil {
		o.newID = jsfmt.RandomUUID
	}
	return o
}

// UnmigratedWriteError: a namespace is configured but the model's data has
// not been migrated into it yet. Nothing was written.
type UnmigratedWriteError struct {
	Index     int
	Address   string
	Path      string
	Namespace string
}

func (e *UnmigratedWriteError) Error() string {
	return fmt.Sprintf("write %d (%s): namespace %q is configured but this model's data still sits at %s (not migrated yet); "+
		"nothing was written. Migrate the data into the namespace first, then write again", e.Index+1, e.Address, e.Namespace, e.Path)
}
func (e *UnmigratedWriteError) Code() string        { return "unmigrated_data" }
func (e *UnmigratedWriteError) Class() swampj.Class { return swampj.ClassFailed }

// NamespaceChangedError: the datastore's namespace changed while the write
// waited for swamp's locks (a migration ran). Nothing was written.
type NamespaceChangedError struct{ Was, Now string }

func (e *NamespaceChangedError) Error() string {
	return fmt.Sprintf("the datastore namespace changed from %q to %q while the write waited for swamp's locks (a namespace migration ran); "+
		"nothing was written. Run the write again", e.Was, e.Now)
}
func (e *NamespaceChangedError) Code() string        { return "namespace_changed" }
func (e *NamespaceChangedError) Class() swampj.Class { return swampj.ClassFailed }
