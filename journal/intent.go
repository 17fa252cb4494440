package journal

import (
	"encoding/json"
	"time"
)

// Status of an intent.
type Status string

const (
	// StatusOpen: journaled, not known to be finished. Recovery picks it up.
	StatusOpen Status = "open"
	// StatusDone: every step observed done.
	StatusDone Status = "done"
	// StatusRolledBack: every step observed undone.
	StatusRolledBack Status = "rolled-back"
)

// Direction an open intent is being driven in.
type Direction string

const (
	Forward  Direction = "forward"
	Backward Direction = "backward"
)

// Step is one small, idempotent change, stored with everything needed to
// observe it, redo it and undo it. Which fields matter depends on Kind; the
// executor in package ops owns the meaning of each kind.
type Step struct {
	Kind string `json:"kind"`
	// Path is the subject of the step (the old name of a rename, the file
	// written, the directory created or staged).
	Path string `json:"path,omitempty"`
	// To is the new name of a rename, or the published name of a staged
	// version.
	To string `json:"to,omitempty"`
	// Data is the new content of a small file write; OldData and OldExists
	// what it replaced (for undo).
	Data      []byte `json:"data,omitempty"`
	OldData   []byte `json:"oldData,omitempty"`
	OldExists bool   `json:"oldExists,omitempty"`
	// Temp is the temp file a write goes through (fixed at plan time, so
	// recovery can remove a leftover).
	Temp string `json:"temp,omitempty"`
	// Files are the expected files of a staged directory.
	Files []FileExpect `json:"files,omitempty"`
	// Catalog is a catalog change, encoded by package ops.
	Catalog json.RawMessage `json:"catalog,omitempty"`
	// Note says in words what the step is for (shown by journal show).
	Note string `json:"note,omitempty"`
}

// FileExpect is a file a step expects, identified by size and SHA-256 (lower
// hex). An empty SHA256 means "verify against the version's own metadata".
type FileExpect struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	// ID, on a self-verifying version's metadata.yaml, is the metadata id
	// the version must carry: a complete version with another id is
	// someone else's (swamp's, of the same number).
	ID string `json:"id,omitempty"`
}

// Intent is a journaled plan.
type Intent struct {
	ID        uint64    `json:"id"`
	Kind      string    `json:"kind"` // migrate, reverse, unset-migrate, version-write, repair, test
	Summary   string    `json:"summary"`
	Repo      string    `json:"repo"`
	CreatedAt time.Time `json:"createdAt"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Command   []string  `json:"command,omitempty"`
	// Locks are swamp's lock files the intent's steps were planned under
	// (a write's per-model locks). Recovery takes them again before it
	// drives the intent, so it never finishes or undoes a write while
	// swamp writes the same model.
	Locks []string `json:"locks,omitempty"`
	// Concurrent: the intent was begun by a shared holder (Options.Shared),
	// so other writers ran beside it and its writer may be alive while
	// another reads it open. Only an exclusive holder, or a holder of one of
	// its Locks (its writer would hold them all), may drive it (hold.go).
	Concurrent bool   `json:"concurrent,omitempty"`
	Steps      []Step `json:"steps"`

	Status     Status    `json:"status"`
	Direction  Direction `json:"direction,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
	FinishedAt time.Time `json:"finishedAt,omitempty"`
	// CatalogStale, when set, is why this intent's catalog step was skipped
	// (the catalog is derived state; see MarkCatalogStale).
	CatalogStale string `json:"catalogStale,omitempty"`
}

// Open reports whether recovery still has to look at the intent.
func (in *Intent) Open() bool { return in.Status == StatusOpen }
