package catalog

import "context"

// HasVersion reports whether the catalog has a row for one version of an
// item (under key.Namespace). The executor uses it to observe whether a
// write-through step is done.
func (c *Catalog) HasVersion(ctx context.Context, key ItemKey, version int64) (bool, error) {
	_, ok, err := c.rowByVersion(ctx, c.db, key, version)
	return ok, err
}
