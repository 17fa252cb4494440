package journal

// The stale-catalog mark. The catalog is derived state (swamp's design:
// "deleting _catalog.db loses no local data"), so a catalog step that
// cannot be done — the file is unreadable, owned by another user, on a
// full disk, busy, damaged — never holds a data change or a recovery
// hostage. The executor finishes the data part and records here, with one
// synced commit, that the catalog no longer agrees with the disk. The mark
// stays until a catalog rebuild makes the catalog agree again; doctor and
// catalog verify report it, so nothing is silently wrong.

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var keyCatalogStale = []byte("catalog-stale")

// CatalogStale says why, and since when, the catalog misses changes the
// data tree has.
type CatalogStale struct {
	// Catalog is the catalog file that could not be updated.
	Catalog string `json:"catalog"`
	// Since is when the first change was missed; Reason the last failure.
	Since  time.Time `json:"since"`
	Reason string    `json:"reason"`
	// Intents are the intents whose catalog step was skipped (the newest
	// 100).
	Intents []uint64 `json:"intents"`
}

const keepStaleIntents = 100

// MarkCatalogStale durably records that intent id's catalog step was
// skipped because of reason (one synced commit; pending lazy marks ride
// along). The intent itself notes it too (journal show).
func (j *Journal) MarkCatalogStale(id uint64, catalogPath, reason string) error {
	if err := j.failpoint("journal.stale"); err != nil {
		return err
	}
	now := j.opts.Now().UTC()
	err := j.updateTx(func(tx *bolt.Tx) error {
		if err := j.flushPending(tx); err != nil {
			return err
		}
		m := tx.Bucket(bucketMeta)
		if m == nil {
			return fmt.Errorf("journal has no meta bucket")
		}
		cs := &CatalogStale{Catalog: catalogPath, Since: now}
		if b := m.Get(keyCatalogStale); b != nil {
			var old CatalogStale
			if json.Unmarshal(b, &old) == nil {
				cs = &old
			}
		}
		cs.Catalog, cs.Reason = catalogPath, reason
		if len(cs.Intents) == 0 || cs.Intents[len(cs.Intents)-1] != id {
			cs.Intents = append(cs.Intents, id)
		}
		if n := len(cs.Intents); n > keepStaleIntents {
			cs.Intents = cs.Intents[n-keepStaleIntents:]
		}
		b, err := json.Marshal(cs)
		if err != nil {
			return err
		}
		if err := m.Put(keyCatalogStale, b); err != nil {
			return err
		}
		ib := tx.Bucket(bucketIntents)
		in, err := getIntent(ib, id)
		if nf := (*NotFoundError)(nil); errors.As(err, &nf) {
			return nil
		} else if err != nil {
			return err
		}
		in.CatalogStale = reason
		return putIntent(ib, in)
	})
	if err != nil {
		return fmt.Errorf("journal: recording that the catalog is stale: %w", err)
	}
	return nil
}

// CatalogStale returns the stale-catalog mark (nil: the catalog missed
// nothing swampj knows of).
func (j *Journal) CatalogStale() (*CatalogStale, error) {
	var cs *CatalogStale
	if j == nil || j.empty() {
		// No journal, or an empty one opened read-only (an interrupted
		// creation): nothing was ever skipped.
		return nil, nil
	}
	err := j.view(func(tx *bolt.Tx) error {
		m := tx.Bucket(bucketMeta)
		if m == nil {
			return nil
		}
		b := m.Get(keyCatalogStale)
		if b == nil {
			return nil
		}
		cs = &CatalogStale{}
		return json.Unmarshal(b, cs)
	})
	return cs, err
}

// ClearCatalogStale removes the mark once the catalog agrees with the disk
// again (a rebuild committed). A no-op without a mark.
func (j *Journal) ClearCatalogStale() error {
	if cs, err := j.CatalogStale(); err != nil || cs == nil {
		return err
	}
	return j.updateTx(func(tx *bolt.Tx) error {
		if err := j.flushPending(tx); err != nil {
			return err
		}
		if m := tx.Bucket(bucketMeta); m != nil {
			return m.Delete(keyCatalogStale)
		}
		return nil
	})
}
