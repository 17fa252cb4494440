package recover

import (
	"context"
	"errors"
	"sync"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/repo"
)

// reportCatalog opens the repo's catalog in catalog.ModeReport for a dry
// run: steps are observed, never applied, so nothing on disk is created,
// converted or moved (read-only media included).
func reportCatalog(fsys fsx.FS, repoDir string) ops.CatalogOpener {
	return &roCatalog{fsys: fsys, path: repo.CatalogPathOf(repoDir)}
}

type roCatalog struct {
	fsys fsx.FS
	path string
	mu   sync.Mutex
	cat  *catalog.Catalog
}

func (r *roCatalog) Get(ctx context.Context) (*catalog.Catalog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat != nil {
		return r.cat, nil
	}
	c, err := catalog.Open(ctx, r.fsys, r.path, catalog.Options{Mode: catalog.ModeReport})
	if err != nil {
		return nil, err
	}
	if f := c.Foreign(); f != nil {
		_ = c.Close()
		return nil, f // what a read-write open would refuse
	}
	r.cat = c
	return c, nil
}

func (r *roCatalog) Existing(ctx context.Context) (*catalog.Catalog, bool, error) {
	r.mu.Lock()
	opened := r.cat != nil
	r.mu.Unlock()
	if !opened {
		if ok, err := fsx.Exists(r.fsys, r.path); err != nil || !ok {
			return nil, false, err
		}
	}
	c, err := r.Get(ctx)
	var missing *catalog.MissingError
	if errors.As(err, &missing) {
		return nil, false, nil // a file without the catalog table: no rows yet
	}
	return c, err == nil, err
}

func (r *roCatalog) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cat == nil {
		return nil
	}
	err := r.cat.Close()
	r.cat = nil
	return err
}
