package catalog

import "context"

// HasVersion reports whether the catalog has a row for one version of an
// item (under key.Namespace). The executor uses it to observe whether a
// write-through step is done.
func (c *Catalog) HasVersion(ctx context.Context, key ItemKey, version int64) (bool, error) {
	_, ok, err := c.rowByVersion(ctx, c.cached(nil), key, version)
	return ok, err
}

// VersionID is the id (metadata.yaml's id) of the row for one version of
// an item, ok=false when there is none. Observing a write-through step
// compares it with the id the step wrote: a row of the same number that
// swamp wrote is not the step's doing.
func (c *Catalog) VersionID(ctx context.Context, key ItemKey, version int64) (id string, ok bool, err error) {
	r, ok, err := c.rowByVersion(ctx, c.cached(nil), key, version)
	return r.ID, ok, err
}
