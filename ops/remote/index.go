package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/swampj/swampj/fsx"
)

// The cache's bookkeeping files (s3_cache_sync.ts).
const (
	IndexFile     = ".datastore-index.json"
	SyncStateFile = ".datastore-sync-state.json"
)

// IndexEntry is one object of the remote index (IndexEntry in
// s3_cache_sync.ts). SHA256 is set for objects a push uploaded.
type IndexEntry struct {
	Key          string `json:"key"`
	Size         int64  `json:"size"`
	LastModified string `json:"lastModified"`
	LocalMtime   string `json:"localMtime,omitempty"`
	SHA256       string `json:"sha256,omitempty"`
}

// Index is the cache's copy of the remote .datastore-index.json: what the
// bucket held when this cache last pulled or pushed.
type Index struct {
	Version    int                   `json:"version"`
	LastPulled string                `json:"lastPulled"`
	Entries    map[string]IndexEntry `json:"entries"`
	ModTime    time.Time             `json:"-"`
}

// SyncState is the fast-path sidecar (DatastoreSyncStateV2; a v1 sidecar
// fills the first four fields). Raw keeps every field as read, so a
// rewrite changes only what it means to. The S3 extension records the
// remote index's ETag, the GCS one its generation: one of the two is set.
type SyncState struct {
	Version               int      `json:"version"`
	RemoteIndexETag       string   `json:"remoteIndexETag"`
	RemoteIndexGeneration string   `json:"remoteIndexGeneration"`
	LastVerifiedAt        string   `json:"lastVerifiedAt"`
	LocalDirty            bool     `json:"localDirty"`
	DirtyPaths            []string `json:"dirtyPaths"`
	BulkInvalidated       bool     `json:"bulkInvalidated"`
	LazyPullActive        bool     `json:"lazyPullActive"`
	DirtyPathsOverflowed  bool     `json:"dirtyPathsOverflowed"`
	CommitSeq             *int64   `json:"commitSeq,omitempty"`

	Raw  map[string]json.RawMessage `json:"-"`
	Data []byte                     `json:"-"`
}

// ReadIndex reads the cache's index; (nil, nil) when there is none yet.
func ReadIndex(fsys fsx.FS, c *Cache) (*Index, error) {
	fsys = fsx.OrReal(fsys)
	data, err := fsys.ReadFile(c.IndexPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ix Index
	if err := json.Unmarshal(data, &ix); err != nil {
		return nil, fmt.Errorf("%s does not parse (%v); swamp's next pull replaces it", c.IndexPath(), err)
	}
	if fi, err := fsys.Stat(c.IndexPath()); err == nil {
		ix.ModTime = fi.ModTime()
	}
	if ix.Entries == nil {
		ix.Entries = map[string]IndexEntry{}
	}
	return &ix, nil
}

// ReadSyncState reads the sidecar; (nil, nil) when there is none or it does
// not parse (the extension then treats it as absent: loadSyncState).
func ReadSyncState(fsys fsx.FS, c *Cache) (*SyncState, error) {
	fsys = fsx.OrReal(fsys)
	data, err := fsys.ReadFile(c.SyncStatePath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s SyncState
	if json.Unmarshal(data, &s) != nil || json.Unmarshal(data, &s.Raw) != nil {
		return nil, nil
	}
	s.Data = data
	return &s, nil
}

// FastPathArmed reports whether the extension's next pull may skip the walk
// entirely (tryFastPullChanged): a recorded remote ETag or generation (or
// commitSeq) and an index not touched since it was verified. While it is
// armed a damaged or missing cache file is not fetched again.
func FastPathArmed(s *SyncState, ix *Index) bool {
	if s == nil {
		return false
	}
	if s.CommitSeq != nil {
		return true
	}
	// The GCS extension reads generation "0" as none (gcs_cache_sync.ts).
	recorded := s.RemoteIndexETag != "" || (s.RemoteIndexGeneration != "" && s.RemoteIndexGeneration != "0")
	if !recorded || ix == nil {
		return false
	}
	v, err := time.Parse(time.RFC3339Nano, s.LastVerifiedAt)
	return err == nil && ix.ModTime.Before(v)
}

// Disarmed is the sidecar with its fast path turned off: no remote ETag or
// generation, no commitSeq, everything else as it was, so the next pull
// walks the index and fetches every file the cache lacks. The field the
// extension wrote is the one emptied (both extensions refuse a sidecar
// without theirs, and would drop its dirty paths with it); a sidecar with
// neither gets the S3 one.
func (s *SyncState) Disarmed() ([]byte, error) {
	m := map[string]json.RawMessage{}
	for k, v := range s.Raw {
		m[k] = v
	}
	_, etag := m["remoteIndexETag"]
	_, gen := m["remoteIndexGeneration"]
	if etag || !gen {
		m["remoteIndexETag"] = json.RawMessage(`""`)
	}
	if gen {
		m["remoteIndexGeneration"] = json.RawMessage(`""`)
	}
	delete(m, "commitSeq")
	return json.MarshalIndent(m, "", "  ")
}

// Dirty reports whether rel (cache-relative, without the namespace) is a
// local change the next push will upload on purpose: under a dirty path,
// or anywhere when the sidecar says the whole cache is invalidated.
func (s *SyncState) Dirty(rel string) bool {
	if s == nil {
		return false
	}
	if s.BulkInvalidated || s.DirtyPathsOverflowed {
		return s.LocalDirty
	}
	for _, d := range s.DirtyPaths {
		d = strings.TrimSuffix(d, "/")
		if rel == d || strings.HasPrefix(rel, d+"/") {
			return true
		}
	}
	return false
}

// Internal reports whether rel never crosses the sync boundary
// (isInternalCacheFile in s3_cache_sync.ts).
func Internal(rel string) bool {
	switch rel {
	case IndexFile, ".push-queue.json", ".datastore.lock", SyncStateFile:
		return true
	}
	if rel == "_index" || strings.HasPrefix(rel, "_index/") || rel == "_control" || strings.HasPrefix(rel, "_control/") {
		return true
	}
	base := rel[strings.LastIndexByte(rel, '/')+1:]
	return base == ".lock" || base == ".namespace.json" || base == "_catalog.db" || strings.HasPrefix(base, "_catalog.db-")
}
