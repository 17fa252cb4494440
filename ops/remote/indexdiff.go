package remote

// What a command did to the bucket that it did not mean to: a snapshot of
// the datastore's objects and of the remote index before a wrapped command
// and another after it. A version file that was in the bucket before and is
// gone, or whose bytes changed, or an object still there that the index no
// longer lists (so no other checkout's pull fetches it), is a loss unless
// this command changed that file in its own cache. The extension's push
// deletes the index entries under a dirty folder that are missing locally
// (pushChanged in s3_cache_sync.ts), and a write pulls only its own model:
// files another checkout wrote that this one never fetched are the ones it
// loses.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/swampj/swampj"
)

// BucketSnapshot is what the bucket held at one moment: its objects and its
// index entries, by cache-relative key (without the namespace), and which
// of them the local cache held then.
type BucketSnapshot struct {
	Objects map[string]BucketObject `json:"objects"`
	// Indexed is the set of keys the remote index lists (nil: no index yet).
	Indexed map[string]bool `json:"indexed"`
	// Local: the cache had a file at this key when the snapshot was taken.
	Local map[string]bool `json:"local"`
	Taken time.Time       `json:"taken"`
}

// Lost is one object a command lost.
type Lost struct {
	Path string `json:"path"` // cache-relative key
	Key  string `json:"key"`  // the object's key in the bucket
	// Kind: "deleted" (the object is gone), "overwritten" (other bytes under
	// the same key), "unindexed" (the object is there, the index no longer
	// lists it, so pulls skip it).
	Kind string `json:"kind"`
	Size int64  `json:"size"`
	Hash string `json:"hash"` // the lost bytes' ETag or MD5, to find the version to restore
}

// Loss kinds.
const (
	LostDeleted     = "deleted"
	LostOverwritten = "overwritten"
	LostUnindexed   = "unindexed"
)

// RunLockKey is the bucket key (under the prefix) of swampj's run lock.
// Its base name is ".lock", which both extensions keep out of their sync
// (isInternalCacheFile): an extension that finds no index in the bucket
// rebuilds one from the bucket's listing (discoverIndexFromBucket), and
// any other name would be taken into that index as data, pulled into
// every cache and fetched again after swampj has deleted it.
const RunLockKey = ".swampj-run/.lock"

// indexPrefix is where the bucket keeps c's objects: "" or "{namespace}/".
func indexPrefix(c *Cache) string {
	if c.Namespace != "" {
		return c.Namespace + "/"
	}
	return ""
}

// SnapshotBucket lists c's objects in the bucket and reads its index (the
// sharded index when _index/_meta.json says version 2, else
// .datastore-index.json), and notes which keys the cache holds.
func SnapshotBucket(ctx context.Context, c *Cache, o Options) (*BucketSnapshot, error) {
	br, err := newBucketReader(ctx, c, o.Env)
	if err != nil {
		return nil, err
	}
	ns := indexPrefix(c)
	taken := time.Now() // before the listing: a file the command writes after it is newer
	all, err := br.list(ctx, ns)
	if err != nil {
		return nil, err
	}
	s := &BucketSnapshot{Objects: map[string]BucketObject{}, Local: map[string]bool{}, Taken: taken}
	for key, obj := range all {
		rel := strings.TrimPrefix(key, ns)
		if Internal(rel) || rel == RunLockKey {
			continue
		}
		s.Objects[rel] = obj
	}
	if s.Indexed, err = readRemoteIndex(ctx, br, ns); err != nil {
		return nil, err
	}
	fsys := o.fs()
	mark := func(rel string) {
		if _, err := fsys.Stat(c.LocalPath(rel)); err == nil {
			s.Local[rel] = true
		}
	}
	for rel := range s.Objects {
		mark(rel)
	}
	for rel := range s.Indexed {
		mark(rel)
	}
	return s, nil
}

// readRemoteIndex is the set of keys the bucket's index lists.
func readRemoteIndex(ctx context.Context, br *bucketReader, ns string) (map[string]bool, error) {
	var meta struct {
		Version    int      `json:"version"`
		Partitions []string `json:"partitions"`
	}
	mb, ok, err := br.get(ctx, ns+"_index/_meta.json")
	if err != nil {
		return nil, err
	}
	var bodies [][]byte
	if ok && json.Unmarshal(mb, &meta) == nil && meta.Version == 2 {
		for _, p := range meta.Partitions {
			b, ok, err := br.get(ctx, ns+"_index/"+p+".json")
			if err != nil {
				return nil, err
			}
			if ok {
				bodies = append(bodies, b)
			}
		}
	} else {
		b, ok, err := br.get(ctx, ns+IndexFile)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		bodies = append(bodies, b)
	}
	keys := map[string]bool{}
	for _, b := range bodies {
		var ix struct {
			Entries map[string]json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal(b, &ix); err != nil {
			return nil, fmt.Errorf("the bucket's index does not parse: %v", err)
		}
		for k := range ix.Entries {
			keys[k] = true
		}
	}
	return keys, nil
}

// CommandChanges is what a command changed in its own cache: the keys it
// wrote (modified since it started) and the keys it removed (there at the
// snapshot before, gone now). A loss of either is the command's intent.
type CommandChanges struct {
	Written map[string]bool
	Removed map[string]bool
}

// ChangesSince is what the cache shows the command changed since before
// was taken, over every key before knew.
func ChangesSince(c *Cache, o Options, before *BucketSnapshot) CommandChanges {
	fsys := o.fs()
	ch := CommandChanges{Written: map[string]bool{}, Removed: map[string]bool{}}
	check := func(rel string) {
		fi, err := fsys.Stat(c.LocalPath(rel))
		switch {
		case err == nil && !fi.ModTime().Before(before.Taken):
			ch.Written[rel] = true
		case errors.Is(err, fs.ErrNotExist) && before.Local[rel]:
			ch.Removed[rel] = true
		}
	}
	for rel := range before.Objects {
		check(rel)
	}
	for rel := range before.Indexed {
		if _, seen := before.Objects[rel]; !seen {
			check(rel)
		}
	}
	return ch
}

// Losses lists what was in the bucket before and is gone, changed (a
// version's bytes; a `latest` pointer moves on every write) or dropped from
// the index after, and that the command did not change in its own cache.
func Losses(c *Cache, before, after *BucketSnapshot, ch CommandChanges) []Lost {
	var out []Lost
	key := func(rel string) string {
		k := indexPrefix(c) + rel
		if p := strings.TrimSuffix(c.Prefix(), "/"); p != "" {
			k = p + "/" + k
		}
		return k
	}
	for rel, o := range before.Objects {
		if ch.Removed[rel] {
			continue
		}
		a, ok := after.Objects[rel]
		switch {
		case !ok:
			out = append(out, Lost{Path: rel, Key: key(rel), Kind: LostDeleted, Size: o.Size, Hash: o.Hash})
		case a.Hash != o.Hash && path.Base(rel) != "latest" && !ch.Written[rel]:
			out = append(out, Lost{Path: rel, Key: key(rel), Kind: LostOverwritten, Size: o.Size, Hash: o.Hash})
		}
	}
	if after.Indexed != nil {
		for rel := range before.Indexed {
			_, there := after.Objects[rel]
			if !after.Indexed[rel] && there && !ch.Removed[rel] {
				o := after.Objects[rel]
				out = append(out, Lost{Path: rel, Key: key(rel), Kind: LostUnindexed, Size: o.Size, Hash: o.Hash})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// LossError: objects were lost from the bucket during a command that
// exited 0. A cache that pulled them before may still hold them; the
// bucket's object versioning, where it is on, holds their bytes whatever
// the caches say.
type LossError struct {
	Bucket string
	Kind   string // S3Type or GCSType
	Lost   []Lost
}

func (e *LossError) Code() string { return "bucket_versions_lost" }

// Class: only a person can get the objects back (the bucket's object
// versioning) and decide which checkout's copy wins.
func (e *LossError) Class() swampj.Class { return swampj.ClassNeedsPerson }

func (e *LossError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d object(s) that the command did not write were lost from bucket %q during it (other checkouts can no longer pull them):", len(e.Lost), e.Bucket)
	for i, l := range e.Lost {
		if i == 20 {
			fmt.Fprintf(&b, " and %d more", len(e.Lost)-20)
			break
		}
		fmt.Fprintf(&b, " %s (%s, %d bytes, hash %s);", l.Key, l.Kind, l.Size, l.Hash)
	}
	b.WriteString(" a deleted or overwritten object survives only as an earlier version in the bucket's object versioning, " +
		"if it is on: copy that version back over the key; an unindexed object is still in the bucket, and the next push " +
		"of a checkout that holds it lists it again")
	return b.String()
}
