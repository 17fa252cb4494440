// Package catalogsync is catalog rebuild and verify: the catalog made true
// to the disk again.
//
// swamp's own rebuild is additive (swamp-format §3.7): it never removes the rows of
// versions that vanished or were emptied (issue #3955), never fixes old
// namespace stamps (swamp-format §9.18), and its only full repair deletes the file, which
// loses foreign rows (swamp-format §3.9). Here the disk is walked, the rows the catalog
// should hold for the repo's namespace are built (ExpectedRows), and the
// catalog package compares (catalog.Diff, for verify) or reconciles
// (catalog.Rebuild: Diff and Apply in one transaction) exactly that
// namespace plus the repo's own old stamps.
//
// Guarantees:
//
//   - Both commands hold the journal lock, so no other swampj runs meanwhile,
//     and refuse (rebuild) or report (verify) an interrupted swampj operation
//     still open in the journal: the disk is mid-change until `swampj
//     recover` has run.
//   - verify writes nothing to the catalog: it is opened query-only.
//   - rebuild without Confirm writes nothing either (it opens query-only,
//     and only says what it would create or move aside).
//   - rebuild with Confirm changes the catalog in ONE transaction. A crash or
//     error before the commit leaves the previous catalog as it was. A
//     damaged catalog is moved aside with its sidecars (never deleted) by
//     catalog.Open and rebuilt.
//   - Rows of foreign namespaces (swamp-format §3.9) are never touched (classifyNamespaces
//     says which namespaces are the repo's old stamps and which are foreign).
//
// Not guaranteed: swamp takes no swampj lock, so a swamp process writing
// between the walk and the commit can leave its new row out (or its old row
// in); a second verify shows it and a second rebuild fixes it.
//
// Reading order: catalogsync.go (options and report), expected.go (the
// rows the disk implies: ExpectedRows, on store.WalkScan), verify.go,
// rebuild.go (including BuildIfNotBuilt, a migration's build of a catalog
// that is not built yet), handle.go (a catalog shared by several calls).
package catalogsync

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/report"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/repo"
)

// Options configure Rebuild and Verify.
type Options struct {
	// Confirm makes Rebuild change the catalog; without it the
	// rebuild only reports what it would change. Verify ignores it.
	Confirm bool
	// Common is the file system, the journal lock's timeout, the recorded
	// command and the logger (warnings at level Warn).
	host.Common
	// VerifyChecksum, Workers and Progress are passed to ExpectedRows.
	VerifyChecksum bool
	Workers        int
	Progress       report.Progress
}

// StaleNamespace is another namespace's rows that rebuild treats as this
// repo's old stamps (staleNamespaces) and reconciles.
type StaleNamespace struct {
	Namespace string `json:"namespace"`
	Rows      int    `json:"rows"`
	Reason    string `json:"reason"`
}

// ForeignNamespace is another namespace's rows that are kept untouched.
type ForeignNamespace struct {
	Namespace string `json:"namespace"`
	Rows      int    `json:"rows"`
	Reason    string `json:"reason"`
}

// Counts sums up a report.
type Counts struct {
	Items           int `json:"items"`
	VersionsOnDisk  int `json:"versionsOnDisk"`
	Readable        int `json:"readable"`
	Unreadable      int `json:"unreadable"`
	RenamedVersions int `json:"renamedVersions"`
	ExpectedRows    int `json:"expectedRows"`
	RowsMissing     int `json:"rowsMissing"`
	RowsStale       int `json:"rowsStale"`
	FlagsWrong      int `json:"flagsWrong"`
	FieldsWrong     int `json:"fieldsWrong"`
	WrongNamespace  int `json:"wrongNamespace"`
	ForeignKept     int `json:"foreignKept"`
}

// Report is what Rebuild and Verify found and did.
type Report struct {
	Command   string `json:"command"` // "verify" or "rebuild"
	Repo      string `json:"repo"`
	Catalog   string `json:"catalog"`
	DataRoot  string `json:"dataRoot"`
	Namespace string `json:"namespace"`
	// Confirmed: a rebuild run with Confirm. Applied: it committed a change.
	Confirmed bool `json:"confirmed"`
	Applied   bool `json:"applied"`
	// InSync: the catalog agreed with the disk before anything was done.
	InSync bool `json:"inSync"`
	// CatalogMissing: there was no catalog (verify, preview); a confirmed
	// rebuild creates it (CatalogCreated).
	CatalogMissing bool `json:"catalogMissing"`
	CatalogCreated bool `json:"catalogCreated"`
	// CatalogDamaged is why the catalog is unusable (verify, preview: a
	// confirmed rebuild would move it aside); MovedAside is what a confirmed
	// rebuild moved.
	CatalogDamaged   string             `json:"catalogDamaged,omitempty"`
	MovedAside       *catalog.MoveAside `json:"movedAside,omitempty"`
	StepLatestColumn bool               `json:"stepLatestColumn"`
	// Populated is catalog_meta.populated as found (swamp-format §3.7).
	Populated bool `json:"populated"`
	// NotBuilt: the catalog exists but holds no row at all and is not
	// marked populated — what swamp leaves after invalidating or
	// recreating it (its own namespace migrate does both, swamp-format §3.8). That is
	// not drift: swamp fills it with its full backfill on its next read,
	// and 'swampj catalog rebuild --confirm' (or a confirmed swampj
	// migrate) builds it now. Verify reports the rows it would hold as
	// missing but does not count them as a disagreement.
	NotBuilt bool `json:"notBuilt"`
	// OpenIntents is how many interrupted swampj operations the journal
	// holds (verify reports them; rebuild refuses to run while there are).
	OpenIntents       int                 `json:"openIntents"`
	Counts            Counts              `json:"counts"`
	StaleNamespaces   []StaleNamespace    `json:"staleNamespaces"`
	ForeignNamespaces []ForeignNamespace  `json:"foreignNamespaces"`
	Unreadable        []UnreadableVersion `json:"unreadable"`
	ItemProblems      []ItemProblem       `json:"itemProblems"`
	Diff              *catalog.Diff       `json:"diff"`
	// UnmigratedData names the un-namespaced data directory that still
	// holds data while a namespace is configured: its rows are not
	// expected (they do not describe data in the namespace), and migrating
	// first keeps them (the migration restamps them).
	UnmigratedData string `json:"unmigratedData,omitempty"`
	// SoloView (rebuild only): the namespace's own data root holds no data,
	// so the rebuild describes the un-migrated data where it is, stamped
	// solo — what a reverse migration that keeps the namespace leaves —
	// and Namespace and DataRoot are the solo ones. With data on both
	// sides a confirmed rebuild refuses (*UnmigratedError) instead.
	SoloView bool `json:"soloView,omitempty"`
	// CatalogStale is the journal's mark that a swampj operation could not
	// update the catalog (verify): a confirmed rebuild clears it.
	CatalogStale *journal.CatalogStale `json:"catalogStale,omitempty"`
	// Timings says where a confirmed rebuild spent its time.
	Timings *Timings `json:"timings,omitempty"`
}

// Timings is where a confirmed rebuild spent its time (wall clock,
// nanoseconds in JSON), phase by phase: the numbers that say whether the
// disk walk or SQLite is what a rebuild waits for.
type Timings struct {
	Lock  time.Duration `json:"lock"`  // the journal lock taken and its open intents listed
	Open  time.Duration `json:"open"`  // catalog.Open with its integrity check
	Scan  time.Duration `json:"scan"`  // the walk, every version read and checked, rows built and flagged
	Other time.Duration `json:"other"` // the catalog's other namespaces classified
	catalog.RebuildTimings
	Close time.Duration `json:"close"` // the catalog closed (SQLite checkpoints its WAL into the file); a catalog built aside closes within Publish
}

// UnmigratedError refuses a confirmed rebuild while data still sits at the
// un-namespaced path: the rebuild would drop rows that a migration keeps.
type UnmigratedError struct{ Path, Namespace string }

func (e *UnmigratedError) Code() string        { return "unmigrated_data" }
func (e *UnmigratedError) Class() swampj.Class { return swampj.ClassFailed }
func (e *UnmigratedError) Error() string {
	return fmt.Sprintf("namespace %q is configured but data still sits at %s; migrate it into the namespace first "+
		"(it keeps the catalog rows of that data), then rebuild", e.Namespace, e.Path)
}

// unmigratedData returns {base}/data when a namespace is configured and that
// directory holds anything but catalog files.
func unmigratedData(fsys fsx.FS, r *repo.Repo) string {
	if r.Namespace == "" {
		return ""
	}
	dir := filepath.Join(r.Base, "data")
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if !repo.IsCatalogFile(e.Name()) {
			return dir
		}
	}
	return ""
}

func newReport(cmd string, r *repo.Repo) *Report {
	return &Report{
		Command: cmd, Repo: r.Dir, Catalog: r.CatalogPath, DataRoot: r.DataRoot, Namespace: r.Namespace,
		StaleNamespaces: []StaleNamespace{}, ForeignNamespaces: []ForeignNamespace{},
		Unreadable: []UnreadableVersion{}, ItemProblems: []ItemProblem{},
	}
}

func (rep *Report) fill(exp *Expected, d *catalog.Diff) {
	rep.StepLatestColumn = exp.StepLatestColumn
	rep.Unreadable, rep.ItemProblems = exp.Unreadable, exp.ItemProblems
	rep.Diff = d
	rep.Counts.Items = exp.Items
	rep.Counts.VersionsOnDisk = exp.Versions
	rep.Counts.Readable = exp.Readable
	rep.Counts.Unreadable = len(exp.Unreadable)
	rep.Counts.RenamedVersions = exp.RenamedVersions
	rep.Counts.ExpectedRows = len(exp.Rows)
	rep.Counts.RowsMissing = len(d.Missing)
	rep.Counts.RowsStale = len(d.Stale)
	rep.Counts.FlagsWrong = len(d.FlagsWrong)
	rep.Counts.FieldsWrong = len(d.FieldsWrong)
	rep.Counts.WrongNamespace = len(d.WrongNamespace)
}
