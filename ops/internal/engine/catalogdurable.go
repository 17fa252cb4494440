package engine

// When an intent may be marked finished, as far as the catalog goes.
//
// The catalog is committed at synchronous=FULL by every command, and a
// row is durable when its commit returns. A write handle commits lazily
// (catalog.Options.Lazy: synchronous=NORMAL) and keeps each intent open
// until a sync of the catalog has made its row durable: the journal is
// the catalog's redo log, and recovery redoes a row a power cut lost.
// Two rules keep that true:
//
//   - A live forward run on a lazy catalog does not mark its intent
//     done: it parks it with Env.ParkDone, and the holder marks it after
//     its next sync (ops/write/handle.go).
//   - Any other run whose catalog may hold rows not yet durable syncs the
//     catalog before the mark: a run on a lazy catalog, and any run that
//     found a catalog step already in place (a recovery of another
//     writer's intent: its row may be a lazy commit still only in the
//     page cache, visible through the shared WAL). Without that sync a
//     recovery could close an intent whose row a power cut then takes.

import (
	"context"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/journal"
)

// CatalogSyncer is implemented by an Env.Catalog that can make the
// catalog's commits durable (protocol.CatalogOpener).
type CatalogSyncer interface {
	// SyncCatalog makes every commit to the catalog so far durable,
	// whoever made it; nothing when there is no catalog.
	SyncCatalog(ctx context.Context) error
	// LazyCatalog reports whether this opener's own commits are not
	// durable until SyncCatalog.
	LazyCatalog() bool
}

// finish marks the intent finished (lazily, journal.Finish), parks it, or
// syncs the catalog first, by the rules above. live: the run that began
// the intent.
func finish(ctx context.Context, env *Env, j *journal.Journal, in *journal.Intent, res *Result, live bool) error {
	cs, ok := env.Catalog.(CatalogSyncer)
	if !ok || !hasDerived(in) {
		j.Finish(in.ID, res.Status)
		return nil
	}
	lazy := cs.LazyCatalog()
	if lazy && live && res.Direction == journal.Forward && env.ParkDone != nil {
		env.ParkDone(in.ID)
		return nil
	}
	if lazy || res.catalogFound {
		if err := cs.SyncCatalog(ctx); err != nil {
			if fsx.IsCrash(err) {
				return err
			}
			// The catalog never holds the data hostage: the rows may be
			// lost to a power cut, so the catalog is marked stale (a
			// rebuild brings it back) and the intent finishes.
			reason := "the catalog could not be synced: " + err.Error()
			if err := j.MarkCatalogStale(in.ID, protocols.CatalogPath(in.Repo), reason); err != nil {
				return err
			}
			res.CatalogStale, res.CatalogErr = reason, err
		}
	}
	j.Finish(in.ID, res.Status)
	return nil
}

// hasDerived reports whether the intent has a catalog step.
func hasDerived(in *journal.Intent) bool {
	for i := range in.Steps {
		if k, err := KindOf(&in.Steps[i]); err == nil && k.Derived {
			return true
		}
	}
	return false
}
