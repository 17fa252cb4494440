package doctor

// What the report says of an extension datastore's cache: its finding
// codes, what swamp does next with a finding's file, and Report.Cache. The
// cache doctor itself is ops/doctor/cache.

import "github.com/swampj/swampj/ops/remote"

// Finding codes of an extension datastore's cache.
const (
	// CodeCacheTornFile: a cache file whose size is not the index's (a
	// zero-byte or cut file a killed pull or a power cut left), or a
	// version file its own metadata.yaml refuses.
	CodeCacheTornFile Code = "cache_torn_file"
	// CodeCacheStaleFile: a cache file of the index's size but other bytes
	// (a pull compares sizes only, so it is never fetched again).
	CodeCacheStaleFile Code = "cache_stale_file"
	// CodeCacheStaleLatest: a `latest` that names another version than the
	// one the index says is latest, or a version neither the cache nor the
	// bucket holds.
	CodeCacheStaleLatest Code = "cache_stale_latest"
	// CodeCacheUnknownFile: a cache file the index does not know and the
	// sync state does not list as a local change.
	CodeCacheUnknownFile Code = "cache_unknown_file"
	// CodeCacheMissingFile: an index entry the cache lacks while the fast
	// path is armed, so no pull fetches it (without the fast path it is a
	// note: the next pull fetches it).
	CodeCacheMissingFile Code = "cache_missing_file"
	// CodeCacheTempLeftover: a .{uuid}.tmp of the extension's atomic
	// writes that a crash left; the next push would upload it.
	CodeCacheTempLeftover Code = "cache_temp_leftover"
)

// What swamp does next with a cache finding's file, when nothing
// intervenes (Finding.Next).
const (
	NextPush   = "push"    // the next push uploads it to the bucket
	NextServe  = "serve"   // reads get it (or miss it) as it is; no pull fetches it again
	NextRepull = "re-pull" // the next pull fetches the bucket's copy
)

// CacheReport is what the doctor of an extension datastore's cache
// (Report.Cache) adds to the report: the datastore and its cache, and
// what the repair rewrote and under which lock.
type CacheReport struct {
	*remote.Cache
	Files        int  `json:"files"`
	IndexEntries int  `json:"indexEntries"`
	FastPath     bool `json:"fastPathArmed"`
	// Rewrites are the `latest` pointers the repair rewrites (rewrote).
	Rewrites []string `json:"rewrites,omitempty"`
	// Lock is the bucket lock the repair held.
	Lock string `json:"lock,omitempty"`
}

// cacheCheck is the id of the cache's check (Report.Checks).
const cacheCheck = "cache"
