package swampj

// Next names the step that answers an error of a package a host does not
// import (the journal, swamp's catalog, swamp's locks), for a program to
// carry out in its own terms: the CLI names its command or flag, a host
// calls the function. The error's text says the same in words. The zero
// Next says nothing more than the text.
type Next uint8

const (
	NextNone Next = iota
	// NextWaitLonger: another swampj process holds the repo; the same
	// call with a longer journal lock timeout waits it out.
	NextWaitLonger
	// NextInspectSwampLock: a swamp process holds the model's lock; look
	// at its holder (swamp's own lock status) before forcing anything.
	NextInspectSwampLock
	// NextWaitLongerForSwampLock: swamp's lock names no holder; swamp's
	// own lock timeout (SWAMP_LOCK_TIMEOUT_MS) bounds the wait.
	NextWaitLongerForSwampLock
	// NextCheck: swamp's lock changed under the operation; check the repo
	// (the doctor).
	NextCheck
	// NextRecoverWhereWritable: the damaged journal is on read-only
	// media; recovery runs where the repo can be written.
	NextRecoverWhereWritable
	// NextVerifyCatalog: the damaged journal was set aside; verify the
	// catalog against the data.
	NextVerifyCatalog
	// NextInspectOnReadOnlyMedia: the media is read-only; the inspections
	// that only read (a dry-run recovery, the journal's listing, the
	// doctor, the catalog's verification) work there.
	NextInspectOnReadOnlyMedia
	// NextInspectReadOnly: the journal cannot be written by this user;
	// the inspections that only read work.
	NextInspectReadOnly
	// NextListAllIntents: no intent has that id; list every kept intent.
	NextListAllIntents
	// NextNothingToRecover: the journal's path is not a file; recovery
	// then has nothing to do.
	NextNothingToRecover
	// NextRebuildCatalog: the catalog is damaged or missing; rebuild it
	// from the data (confirmed).
	NextRebuildCatalog
	// NextRebuildCatalogAgain: a rebuild could not set the old catalog
	// aside; run it again.
	NextRebuildCatalogAgain
	// NextInspectCatalogThenRebuild: the catalog has a schema this swampj
	// does not know; verify it (read-only) before rebuilding it.
	NextInspectCatalogThenRebuild
)

// Advised is implemented by the errors that name their Next.
type Advised interface {
	error
	Next() Next
}

// NextIn reports whether an error of err's chain (wrapped or joined) names
// n as its Next.
func NextIn(err error, n Next) bool {
	if err == nil {
		return false
	}
	if a, ok := err.(Advised); ok && a.Next() == n {
		return true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		return NextIn(u.Unwrap(), n)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if NextIn(e, n) {
				return true
			}
		}
	}
	return false
}
