// Package remote is swampj's side of an extension datastore (the S3
// extension, @swamp/s3-datastore, and the GCS one, @swamp/gcs-datastore,
// whose cache has the same layout): the local cache swamp keeps for it at
// $SWAMP_HOME/repos/{repoId}/ (or $HOME/.swamp/repos/{repoId}/), the
// cache's bookkeeping (.datastore-index.json, .datastore-sync-state.json)
// and the bucket's own lock, taken through swampj-bucket (agent.go,
// bucketlock.go; the clients themselves are ops/remote/bucket, which swampj
// does not link). The doctor of the cache and its journaled repair are
// ops/doctor/cache.
//
// Reading order: cache.go (where the cache is and what swamp would read
// there), index.go (the index and the sync-state sidecar, and what the
// extension's next pull and push do with a file), bucketlock.go (the
// bucket's lock and reads, as callers see them) and agent.go (how they
// reach swampj-bucket); for GCS, gcscache.go (what differs from S3). The
// lock protocols themselves: ops/remote/bucket (s3.go, gcs.go).
//
// The extension's protocol, as read from s3_cache_sync.ts at
// swamp-club/swamp-extensions c25ec917 and checked against it running:
//   - a write command takes the bucket lock (conditional create of
//     {prefix}/.datastore.lock, TTL 30 s), pulls, runs, pushes, releases;
//   - a pull fetches the remote index, then every file whose local SIZE
//     differs from the index's (Deno.writeFile in place: no temp, no fsync),
//     unless the sidecar's fast path says nothing changed remotely;
//   - a push walks the cache and uploads every file whose size differs
//     from the index's, or whose SHA-256 does when the mtime moved.
//
// So a torn cache file is served to reads, never re-pulled while the fast
// path holds, and uploaded over the bucket's good copy by the next push;
// a stale one-byte `latest` has the index's size and is never re-pulled.
package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/swampyaml"
)

// S3Type is the datastore type of the S3 extension; legacy "s3" is
// remapped to it, as swamp does (RENAMED_DATASTORE_TYPES).
const S3Type = "@swamp/s3-datastore"

// Options are what every entry point of this package takes.
type Options struct {
	// FS is the disk (nil: the real one).
	FS fsx.FS
	// Env looks environment variables up (nil: the process environment):
	// SWAMP_DATASTORE, SWAMP_HOME, HOME. (The bucket lock's AWS SDK
	// reads its own configuration: BucketLocker.)
	Env func(string) string
}

func (o Options) fs() fsx.FS { return fsx.OrReal(o.FS) }

func (o Options) env(k string) string {
	if o.Env != nil {
		return o.Env(k)
	}
	return os.Getenv(k)
}

// S3Config is the extension's configuration (s3.ts s3ConfigSchema).
type S3Config struct {
	Bucket         string `json:"bucket"`
	Prefix         string `json:"prefix,omitempty"`
	Region         string `json:"region,omitempty"`
	Endpoint       string `json:"endpoint,omitempty"`
	ForcePathStyle bool   `json:"forcePathStyle,omitempty"`
}

// Cache is a remote-backed repo and the local cache swamp keeps for it.
type Cache struct {
	Repo   string `json:"repo"`   // the repo directory
	RepoID string `json:"repoId"` // .swamp.yaml repoId, the cache's name
	Type   string `json:"type"`   // datastore type (@swamp/s3-datastore)
	Source string `json:"source"` // where the datastore came from: the .swamp.yaml path or SWAMP_DATASTORE
	// Dir is the cache directory: $SWAMP_HOME/repos/{repoId}, else
	// $HOME/.swamp/repos/{repoId} (paths.ts getSwampDataDir).
	Dir string `json:"cacheDir"`
	// Namespace, when set, prefixes every cache-relative path (the
	// extension's localRelPath).
	Namespace string   `json:"namespace,omitempty"`
	S3        S3Config `json:"s3"`
	// GCS is set for the GCS extension (GCSType) and nil otherwise.
	GCS *GCSConfig `json:"gcs,omitempty"`
	// LocalDir is {repo}/.swamp: the catalog, the bundles and swampj's
	// journal; never synced.
	LocalDir string `json:"localDir"`
	// JournalPath is swampj's journal, in the repo-local tier.
	JournalPath string `json:"journal"`
}

// IndexPath is the cache's copy of the remote index.
func (c *Cache) IndexPath() string { return filepath.Join(c.Dir, IndexFile) }

// SyncStatePath is the fast-path sidecar.
func (c *Cache) SyncStatePath() string { return filepath.Join(c.Dir, SyncStateFile) }

// LocalPath is where the cache keeps the object of index key rel.
func (c *Cache) LocalPath(rel string) string {
	if c.Namespace != "" {
		rel = c.Namespace + "/" + rel
	}
	return filepath.Join(c.Dir, filepath.FromSlash(rel))
}

// QuarantineRoot is where repairs move cache files: beside the cache (same
// file system, so a rename), never inside it, where a push walk would find
// them.
func (c *Cache) QuarantineRoot() string { return c.Dir + ".swampj-quarantine" }

// LockKey is the bucket key (under the prefix) of the datastore's global
// lock: .datastore.lock, or .locks/{namespace}.lock
// (repo_context.ts datastoreGlobalLockOptions).
func (c *Cache) LockKey() string {
	if c.Namespace != "" {
		return ".locks/" + c.Namespace + ".lock"
	}
	return ".datastore.lock"
}

// ErrNotRemote: the repo's datastore is a filesystem one (no cache).
var ErrNotRemote = errors.New("the datastore is not a remote (extension) datastore")

// ErrUnknownType: an extension datastore swampj has not been tested on:
// it is reported, never repaired.
var ErrUnknownType = errors.New("extension datastore type not supported")

// UnknownTypeError names the type.
type UnknownTypeError struct{ Source, Type string }

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("%s: datastore type %q: swampj knows the cache of %s only (tested against the real extensions); "+
		"it leaves this datastore to swamp", e.Source, e.Type, S3Type+" and "+GCSType)
}
func (e *UnknownTypeError) Unwrap() error       { return ErrUnknownType }
func (e *UnknownTypeError) Code() string        { return "unsupported_datastore" }
func (e *UnknownTypeError) Class() swampj.Class { return swampj.ClassFailed }

// Discover finds the repo at or above dir and, when its datastore is the S3
// or the GCS extension, its cache, resolved as swamp resolves it
// (resolve_datastore.ts): SWAMP_DATASTORE first, then the .swamp.yaml
// block. A filesystem datastore is ErrNotRemote.
func Discover(dir string, o Options) (*Cache, error) {
	fsys := o.fs()
	root, err := repo.Find(fsys, dir)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(root, repo.ConfigFileName)
	data, err := fsys.ReadFile(cfgPath)
	if err != nil {
		return nil, err
	}
	n, err := swampyaml.Parse(data)
	if err != nil {
		return nil, &repo.ConfigError{Path: cfgPath, Msg: "is not valid YAML", Err: err}
	}
	c := &Cache{Repo: root, LocalDir: filepath.Join(root, repo.LocalDirName), JournalPath: repo.JournalPathOf(root)}
	c.RepoID = str(n, "repoId")
	if env := o.env(repo.EnvDatastore); env != "" {
		c.Source = repo.EnvDatastore
		typ, val, _ := strings.Cut(env, ":")
		switch typ {
		case "filesystem":
			return nil, ErrNotRemote
		case "s3": // legacy "s3:bucket/prefix"
			c.Type = S3Type
			c.S3.Bucket, c.S3.Prefix, _ = strings.Cut(val, "/")
		default:
			c.Type = typ
			if typ == S3Type && json.Unmarshal([]byte(val), &c.S3) != nil {
				return nil, &repo.ConfigError{Path: repo.EnvDatastore, Msg: "the JSON after the type does not parse"}
			}
			if typ == GCSType {
				g, err := gcsFromEnv(val)
				if err != nil {
					return nil, &repo.ConfigError{Path: repo.EnvDatastore, Msg: "the JSON after the type does not parse"}
				}
				c.GCS = g
			}
		}
	} else {
		c.Source = cfgPath
		ds, _ := n.Get("datastore")
		typ := str(ds, "type")
		switch typ {
		case "", "filesystem":
			return nil, ErrNotRemote
		case "s3":
			c.Type = S3Type
			c.S3 = s3From(ds)
		default:
			c.Type = typ
			cfg, _ := ds.Get("config")
			if typ == GCSType {
				c.GCS = gcsFrom(cfg)
			} else {
				c.S3 = s3From(cfg)
			}
		}
		c.Namespace = str(ds, "namespace")
	}
	if c.Type != S3Type && c.Type != GCSType {
		return nil, &UnknownTypeError{Source: c.Source, Type: c.Type}
	}
	if c.RepoID == "" {
		return nil, &repo.ConfigError{Path: cfgPath, Field: "repoId", Msg: "missing: swamp names the cache by it"}
	}
	home := o.env("SWAMP_HOME")
	if home == "" {
		h := o.env("HOME")
		if h == "" {
			h = o.env("USERPROFILE")
		}
		if h == "" {
			return nil, errors.New("cannot find swamp's cache: neither SWAMP_HOME nor HOME is set")
		}
		home = filepath.Join(h, ".swamp")
	}
	c.Dir = filepath.Join(home, "repos", c.RepoID)
	return c, nil
}

func s3From(n *swampyaml.Node) S3Config {
	s := S3Config{Bucket: str(n, "bucket"), Prefix: str(n, "prefix"), Region: str(n, "region"), Endpoint: str(n, "endpoint")}
	if v, ok := n.Get("forcePathStyle"); ok && v.Kind == swampyaml.BoolKind {
		s.ForcePathStyle = v.Bool
	}
	return s
}

func str(n *swampyaml.Node, key string) string {
	v, ok := n.Get(key)
	if !ok || v == nil || v.Kind != swampyaml.StringKind {
		return ""
	}
	return v.Str
}
