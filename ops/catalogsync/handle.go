package catalogsync

import (
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/internal/protocol"
)

// Handle is a repo's catalog that a long-lived host keeps open
// across calls (WriteOptions.Catalog, MigrateOptions.Catalog,
// NamespaceOptions.Catalog), as it keeps the journal open: the catalog is
// opened on first use and stays open until Close. Without one, each call
// opens the repo's catalog itself and closes it before returning.
type Handle struct{ opener protocol.CatalogOpener }

// OpenHandle returns a handle on {repoDir}/.swamp/data/_catalog.db; nothing
// is opened until a call needs it. A nil fsys is the real disk.
func OpenHandle(fsys fsx.FS, repoDir string) *Handle {
	return &Handle{opener: protocol.RepoCatalog(fsys, repoDir)}
}

// OpenLazyHandle is OpenHandle committing lazily (catalog.Options.Lazy):
// a row is durable only once the handle's holder has synced the catalog,
// and until then the intent that wrote it stays open (a write.Handle).
func OpenLazyHandle(fsys fsx.FS, repoDir string) *Handle {
	return &Handle{opener: protocol.LazyRepoCatalog(fsys, repoDir)}
}

// Close closes the catalog if a call opened it.
func (h *Handle) Close() error {
	if h == nil {
		return nil
	}
	return h.opener.Close()
}

// Opener is the handle's opener, nil for a nil handle (the caller then opens
// the repo's own).
func (h *Handle) Opener() protocol.CatalogOpener {
	if h == nil {
		return nil
	}
	return h.opener
}
