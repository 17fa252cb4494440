package ops

import (
	"context"
	"errors"

	"github.com/swampj/swampj/fsx"
)

// CatalogOpener returns the repo's catalog handle, opening it on first use.
type CatalogOpener interface {
	Get(ctx context.Context) (CatalogTx, error)
	Close() error
}

// CatalogTx is the part of the catalog the executor drives.
type CatalogTx interface{}

type repoCatalog struct {
	fsys    fsx.FS
	repoDir string
}

// RepoCatalog opens {repoDir}/.swamp/data/_catalog.db on first use.
func RepoCatalog(fsys fsx.FS, repoDir string) CatalogOpener {
	return &repoCatalog{fsys: fsys, repoDir: repoDir}
}

func (r *repoCatalog) Get(ctx context.Context) (CatalogTx, error) {
	return nil, errors.New("catalog: not wired yet")
}
func (r *repoCatalog) Close() error { return nil }

// CloseCatalog closes the catalog if a step opened it.
func (env *Env) CloseCatalog() {
	if env.Catalog != nil {
		_ = env.Catalog.Close()
	}
}
