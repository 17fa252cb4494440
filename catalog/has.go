package catalog

import "context"

// VersionID is the id (metadata.yaml's id) of the row for one version of
// an item, ok=false when there is none. Observing a write-through step
// compares it with the id the step wrote: a row of the same number that
// swamp wrote is not the step's doing.
func (c *Catalog) VersionID(ctx context.Context, key ItemKey, version int64) (id string, ok bool, err error) {
	r, ok, err := c.rowByVersion(ctx, c.cached(nil), key, version)
	return r.ID, ok, err
}
