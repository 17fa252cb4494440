package migrate

// The vocabulary of a migration and of the namespace commands: the
// migration's options, what a preview and a run return, the errors a host
// branches on, and where a subdirectory stands.

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
)

// MigrateOptions configure Migrate.
type MigrateOptions struct {
	// Reverse moves {base}/{ns}/… back to the solo layout {base}/….
	Reverse bool
	// Unset is `namespace unset --migrate`: the reverse migration plus the
	// removal of the namespace from .swamp.yaml and of its manifest, in the
	// same intent. It implies Reverse.
	Unset bool
	// Confirm executes the plan; without it Migrate only previews.
	Confirm bool
	// Common is the file system, the lock timeouts, the command recorded
	// as the lock holder and in the intent, and the logger (the executor's
	// step records at level Debug). SwampLockTimeout bounds the wait for
	// swamp's global datastore lock and for live per-model locks (0:
	// SWAMP_LOCK_TIMEOUT_MS, else 60 s).
	host.Common
	// fsys is Migrate's disk, carried to the planner.
	fsys fsx.FS
	// Progress, if set, receives the run's phases: "planning" (files
	// walked), "moving" (steps applied of the plan's steps) and, before the
	// catalog commit, "restamping catalog".
	Progress report.Progress
	// Catalog serves the catalog steps (nil: the repo's own catalog).
	Catalog *catalogsync.Handle
	// Getenv looks up SWAMP_LOCK_TIMEOUT_MS, SWAMP_LOCK_HOLDER_PID and
	// SWAMP_DATASTORE (nil: the process environment).
	Getenv func(string) string
}

// DirectoryMove is one subdirectory the plan moves (swamp's preview entry).
// FileCount and TotalBytes count the files that change sides; catalog files
// are not counted.
type DirectoryMove struct {
	Subdir      string `json:"subdir"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	FileCount   int64  `json:"fileCount"`
	TotalBytes  int64  `json:"totalBytes"`
	// Blocked says what stops this move on the disk as it is (a plain
	// file where the directory must go); "" when nothing does. A
	// confirmed run moves the directories before it and stops there,
	// its intent open.
	Blocked string `json:"blocked,omitempty"`
}

// MigrateWarning reports files the migration leaves where they are on
// purpose: catalog copies an older swamp moved into the namespace.
type MigrateWarning struct {
	Subdir  string   `json:"subdir"`
	Path    string   `json:"path"`
	Files   []string `json:"files"`
	Message string   `json:"message"`
	// Remedy is the action the message advises, when it is one of
	// swampj's own (the CLI appends its command); "" otherwise.
	Remedy report.Remedy `json:"remedy,omitempty"`
}

// MigratePreview is the plan: swamp's preview object plus the number of
// steps and of directory fsyncs the plan will make.
type MigratePreview struct {
	Namespace     string           `json:"namespace"`
	DatastorePath string           `json:"datastorePath"`
	Reverse       bool             `json:"reverse"`
	Confirm       bool             `json:"confirm"`
	Directories   []DirectoryMove  `json:"directories"`
	TotalFiles    int64            `json:"totalFiles"`
	TotalBytes    int64            `json:"totalBytes"`
	Steps         int              `json:"steps"`
	Fsyncs        int              `json:"fsyncs"`
	NothingToDo   bool             `json:"nothingToDo"`
	Warnings      []MigrateWarning `json:"warnings,omitempty"`
	// OpenIntents counts interrupted operations in the journal; a confirmed
	// run finishes them before it plans.
	OpenIntents int `json:"openIntents,omitempty"`
}

// MigrateCompleted is a confirmed run: swamp's completed object plus the
// intent, its step count, the directory fsyncs made and whether there was
// nothing to do.
type MigrateCompleted struct {
	Namespace           string   `json:"namespace"`
	DatastorePath       string   `json:"datastorePath"`
	Reverse             bool     `json:"reverse"`
	MigratedDirectories []string `json:"migratedDirectories"`
	TotalFiles          int64    `json:"totalFiles"`
	TotalBytes          int64    `json:"totalBytes"`
	IntentID            uint64   `json:"intentId"`
	Steps               int      `json:"steps"`
	DirFsyncs           int      `json:"dirFsyncs"`
	NothingToDo         bool     `json:"nothingToDo"`
	NamespaceUnset      bool     `json:"namespaceUnset,omitempty"`
	CatalogRestamped    bool     `json:"catalogRestamped,omitempty"`
	// CatalogBuilt: the catalog was not built yet (swamp invalidated it)
	// and the run filled it from the disk.
	CatalogBuilt bool             `json:"catalogBuilt,omitempty"`
	Warnings     []MigrateWarning `json:"warnings,omitempty"`
	// Recovered lists the interrupted operations finished before planning.
	Recovered []report.IntentOutcome `json:"recovered,omitempty"`
	// NamespaceStillSet: a reverse migration left the namespace in
	// .swamp.yaml, so swamp reads SwampReads (the namespace's data root,
	// now empty) and finds no data until the namespace is unset.
	NamespaceStillSet bool   `json:"namespaceStillSet,omitempty"`
	SwampReads        string `json:"swampReads,omitempty"`
}

// MigrateResult is the plan (always) and, for a confirmed run, what it did.
type MigrateResult struct {
	Preview   *MigratePreview
	Completed *MigrateCompleted
}

// MigrateInterruptedError: the run was cancelled (its context: Ctrl-C,
// SIGTERM). IntentID 0: before its intent was journaled, so nothing of the
// migration changed; otherwise the intent stays open, Done steps of it
// done: the same migration run again (Rerun) finishes it, a rollback
// undoes it. It matches context.Canceled.
type MigrateInterruptedError struct {
	Phase    string
	IntentID uint64
	Done     int
	Rerun    report.Remedy
	Err      error
}

func (e *MigrateInterruptedError) Error() string {
	if e.IntentID == 0 {
		return fmt.Sprintf("interrupted during %s; nothing was changed", e.Phase)
	}
	return fmt.Sprintf("interrupted during %s (%d step(s) done); intent %d is open: the same migration run again finishes it, or a rollback undoes it",
		e.Phase, e.Done, e.IntentID)
}
func (e *MigrateInterruptedError) Unwrap() error       { return e.Err }
func (e *MigrateInterruptedError) Code() string        { return "interrupted" }
func (e *MigrateInterruptedError) Class() swampj.Class { return swampj.ClassInterrupted }

// subdirPosition is what stands at a subdirectory position (positionKind).
type subdirPosition int

const (
	posAbsent subdirPosition = iota
	posDir
	posOther
)

// CollisionError: files exist on both sides with different content (or a
// file faces a directory). Nothing was touched.
type CollisionError struct{ Paths []string }

func (e *CollisionError) Error() string {
	return fmt.Sprintf("Cannot migrate: %d path(s) exist on both sides with different content and would be lost in a merge. "+
		"Nothing was changed. Remove or rename the conflicting files first:\n  %s", len(e.Paths), strings.Join(e.Paths, "\n  "))
}
func (e *CollisionError) Code() string        { return "collision" }
func (e *CollisionError) Class() swampj.Class { return swampj.ClassFailed }

// ForeignNamespacesError: other namespaces are registered under the base
// (swamp's guard, swamp-format §4.4 step 2; swamp-format §9.12).
type ForeignNamespacesError struct{ Namespaces []string }

func (e *ForeignNamespacesError) Error() string {
	return fmt.Sprintf("Cannot migrate: the datastore also holds other namespaces (%s). Their data must not be absorbed into "+
		"this namespace, and the un-namespaced paths may hold data of theirs. Nothing was changed. Move this repo's "+
		"un-namespaced data by hand, or remove the other namespaces' manifests if they are stale", strings.Join(e.Namespaces, ", "))
}
func (e *ForeignNamespacesError) Code() string        { return "foreign_namespaces" }
func (e *ForeignNamespacesError) Class() swampj.Class { return swampj.ClassFailed }

// CrossDeviceError: source and destination are on different file systems,
// so renames would fail with EXDEV. Nothing was touched.
type CrossDeviceError struct{ Source, Destination string }

func (e *CrossDeviceError) Error() string {
	return fmt.Sprintf("Cannot migrate: %s and %s are on different file systems, and swampj only moves by rename. Nothing was changed. "+
		"Put the namespace directory on the same file system as the data", e.Source, e.Destination)
}
func (e *CrossDeviceError) Unwrap() error       { return syscall.EXDEV }
func (e *CrossDeviceError) Code() string        { return "cross_device" }
func (e *CrossDeviceError) Class() swampj.Class { return swampj.ClassFailed }

// MigrateFailedError: a step failed part way. The intent stays open; the
// error names both ways out.
type MigrateFailedError struct {
	Namespace     string   `json:"namespace"`
	DatastorePath string   `json:"datastorePath"`
	Reverse       bool     `json:"reverse"`
	IntentID      uint64   `json:"intentId"`
	Succeeded     []string `json:"succeededDirectories"`
	Failed        string   `json:"failedDirectory"`
	Err           error    `json:"-"`
	// Rerun is the run that finishes the job: this same migration again.
	Rerun report.Remedy `json:"-"`
}

func (e *MigrateFailedError) Error() string {
	what := "Failed to finish the migration"
	if e.Failed != "" {
		what = fmt.Sprintf("Failed to migrate %q", e.Failed)
	}
	return fmt.Sprintf("%s: %v. Partially migrated: %d directory(s) moved before the failure. "+
		"The run is journaled as intent %d and stays open: fix the cause and run the same migration again to finish it, "+
		"or roll it back to return to the starting layout", what, e.Err, len(e.Succeeded), e.IntentID)
}
func (e *MigrateFailedError) Unwrap() error { return e.Err }

// NoNamespaceError: the command needs a configured namespace.
type NoNamespaceError struct {
	Msg string
	// NeedSet: the operation needs a namespace set first.
	NeedSet bool
}

func (e *NoNamespaceError) Error() string       { return e.Msg }
func (e *NoNamespaceError) Code() string        { return "no_namespace" }
func (e *NoNamespaceError) Class() swampj.Class { return swampj.ClassFailed }

// AlreadySetError: `set` to the namespace already configured.
type AlreadySetError struct{ Slug string }

func (e *AlreadySetError) Error() string {
	return fmt.Sprintf("Namespace is already set to %q.", e.Slug)
}
func (e *AlreadySetError) Code() string        { return "already_set" }
func (e *AlreadySetError) Class() swampj.Class { return swampj.ClassFailed }

// NamespaceTakenError: another repo registered the slug in this datastore.
type NamespaceTakenError struct{ Slug, RepoID string }

func (e *NamespaceTakenError) Error() string {
	return fmt.Sprintf("Namespace %q is already registered in this datastore by repo %s. Choose another slug "+
		"(or, if that repo is gone, remove its manifest first).", e.Slug, e.RepoID)
}
func (e *NamespaceTakenError) Code() string        { return "namespace_taken" }
func (e *NamespaceTakenError) Class() swampj.Class { return swampj.ClassFailed }

// ReservedNamespaceError: the slug is the name of a datastore subdirectory,
// so {base}/{slug} would share a directory with the solo layout.
type ReservedNamespaceError struct{ Slug string }

func (e *ReservedNamespaceError) Error() string {
	return fmt.Sprintf("namespace %q is the name of a datastore subdirectory; {base}/%s would mix namespaced and solo data. Choose another slug", e.Slug, e.Slug)
}
func (e *ReservedNamespaceError) Unwrap() error { return repo.ErrInvalidNamespace }

// MultipleNamespacesError: unset is allowed only with a single namespace.
type MultipleNamespacesError struct{ Namespaces []string }

func (e *MultipleNamespacesError) Error() string {
	return fmt.Sprintf("Cannot unset namespace: datastore contains %d namespaces (%s). Unsetting is only allowed when a single namespace exists.",
		len(e.Namespaces), strings.Join(e.Namespaces, ", "))
}
func (e *MultipleNamespacesError) Code() string        { return "multiple_namespaces" }
func (e *MultipleNamespacesError) Class() swampj.Class { return swampj.ClassFailed }

// EnvOverrideError: SWAMP_DATASTORE replaces the datastore block, namespace
// included (swamp-format §9.14), so namespace commands would act on the wrong layout.
type EnvOverrideError struct{}

func (e *EnvOverrideError) Error() string {
	return "SWAMP_DATASTORE is set: it overrides the datastore block of .swamp.yaml, namespace included, " +
		"so namespace commands cannot act on it. Unset SWAMP_DATASTORE and run the command again"
}
func (e *EnvOverrideError) Code() string        { return "env_override" }
func (e *EnvOverrideError) Class() swampj.Class { return swampj.ClassFailed }

// BaseMissingError: the datastore base directory does not exist.
type BaseMissingError struct {
	Base   string
	NotDir bool
}

func (e *BaseMissingError) Error() string {
	if e.NotDir {
		return fmt.Sprintf("the datastore base %s is not a directory; fix datastore.path in .swamp.yaml", e.Base)
	}
	return fmt.Sprintf("the datastore base %s does not exist; fix datastore.path in .swamp.yaml or create the directory", e.Base)
}
func (e *BaseMissingError) Code() string        { return "base_missing" }
func (e *BaseMissingError) Class() swampj.Class { return swampj.ClassFailed }

// NotADirectoryError: a namespace directory position holds something else.
type NotADirectoryError struct{ Path string }

func (e *NotADirectoryError) Error() string {
	return fmt.Sprintf("%s exists and is not a directory; move it away and run the command again", e.Path)
}
func (e *NotADirectoryError) Code() string        { return "not_a_directory" }
func (e *NotADirectoryError) Class() swampj.Class { return swampj.ClassFailed }

// SymlinkedPathError: a namespace or subdirectory position is a symlink.
type SymlinkedPathError struct {
	Path, Target string
	Outside      bool // the link leaves the datastore base
	Dangling     bool
}

func (e *SymlinkedPathError) Error() string {
	switch {
	case e.Dangling:
		return fmt.Sprintf("%s is a symlink that points nowhere; remove it and run the command again", e.Path)
	case e.Outside:
		return fmt.Sprintf("%s is a symlink to %s, outside the datastore base; swampj moves directories, not links to them. "+
			"Move the data into the base (or point datastore.path at it) and run the command again", e.Path, e.Target)
	}
	return fmt.Sprintf("%s is a symlink to %s; swampj moves directories, not links to them. Replace the link by the directory and run the command again",
		e.Path, e.Target)
}
func (e *SymlinkedPathError) Code() string {
	if e.Outside {
		return "outside_base"
	}
	return "symlink"
}
func (e *SymlinkedPathError) Class() swampj.Class { return swampj.ClassFailed }
