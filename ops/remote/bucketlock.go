package remote

// The datastore's lock in the bucket, and reading the bucket itself, for
// S3 (s3_lock.ts) and GCS (gcs_lock.ts): the protocols are spoken by
// swampj-bucket (ops/remote/bucket, which documents them), reached through
// agent.go. What callers see here is as it was with the clients linked
// in: the same types, the same errors.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// Locker takes the datastore's lock for a repair; release gives it back.
// BucketLocker is the S3 extension's, GCSLocker the GCS one's, and the
// repair holds whichever the cache's type names for its whole run.
type Locker interface {
	Lock(ctx context.Context, c *Cache, timeout time.Duration) (release func() error, err error)
}

// ErrLockBusy: another process held the lock for the whole timeout.
var ErrLockBusy = errors.New("the datastore lock stayed held")

// ErrNoCredentials: the SDK's default chain found no credentials.
var ErrNoCredentials = errors.New(bucketwire.NoCredentials)

// LockTTL is the TTL swampj writes into its lock (the extension's default).
const LockTTL = bucketwire.LockTTL

// LockInfo is the lock object's body (LockInfo in interfaces.ts).
type LockInfo = bucketwire.LockInfo

// BucketObject is one object of the bucket as a listing shows it: Hash is
// the S3 ETag or the GCS MD5 hash, so a rewrite with the same bytes keeps it.
type BucketObject = bucketwire.Object

// BucketLocker takes the lock in the bucket over S3.
type BucketLocker struct {
	// Env looks up the credentials' variables (AWS_*, HOME) for the
	// client (nil: the process environment).
	Env func(string) string
}

// Lock takes the datastore's global lock in the bucket. A bucket that
// does not exist, an endpoint that does not answer and credentials that
// are missing or refused are *AccessError, told apart from a busy lock.
func (b BucketLocker) Lock(ctx context.Context, c *Cache, timeout time.Duration) (func() error, error) {
	return lockKey(ctx, c, b.Env, c.LockKey(), timeout)
}

// GCSLocker takes the lock in the bucket over the GCS JSON API.
type GCSLocker struct {
	// Env looks up STORAGE_EMULATOR_HOST and the credentials' variables
	// (nil: the process environment).
	Env func(string) string
}

func (g GCSLocker) Lock(ctx context.Context, c *Cache, timeout time.Duration) (func() error, error) {
	if c.GCS == nil {
		return nil, fmt.Errorf("%s: not a GCS datastore (%s)", c.Source, c.Type)
	}
	return lockKey(ctx, c, g.Env, c.LockKey(), timeout)
}

// LockerFor is the bucket lock of c's datastore kind.
func LockerFor(c *Cache, env func(string) string) Locker {
	if c.GCS != nil {
		return GCSLocker{Env: env}
	}
	return BucketLocker{Env: env}
}

// lockKey takes the lock at key in c's bucket through the agent; the
// returned function releases it there.
func lockKey(ctx context.Context, c *Cache, env func(string) string, key string, timeout time.Duration) (func() error, error) {
	b, err := newBucketReader(ctx, c, env)
	if err != nil {
		return nil, err
	}
	a, id := b.a, b.id
	r, err := a.call(ctx, bucketwire.Request{Op: bucketwire.OpLock, Client: id, Key: key, TimeoutMs: timeout.Milliseconds()})
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := a.call(context.Background(), bucketwire.Request{Op: bucketwire.OpUnlock, Handle: r.Handle})
		return err
	}, nil
}

// Kinds of AccessError.
const (
	AccessNoBucket      = bucketwire.AccessNoBucket
	AccessUnreachable   = bucketwire.AccessUnreachable
	AccessCredentials   = bucketwire.AccessCredentials
	AccessNoCredentials = bucketwire.AccessNoCredentials
)

// AccessError: the bucket could not be used at all, whatever its lock
// says: it does not exist, its endpoint does not answer, or no
// credentials were found or they were refused. Nothing was changed.
type AccessError struct {
	Kind     string // one of the Access* codes
	Bucket   string
	Endpoint string
	Err      error
}

func (e *AccessError) Error() string {
	where := e.Endpoint
	if where == "" {
		where = "AWS S3"
	}
	switch e.Kind {
	case AccessNoBucket:
		return fmt.Sprintf("the bucket %q does not exist at %s: check the datastore's bucket and endpoint in .swamp.yaml "+
			"(or SWAMP_DATASTORE); nothing was changed", e.Bucket, where)
	case AccessUnreachable:
		return fmt.Sprintf("cannot reach %s (%v): check that the server is running and the datastore's endpoint; nothing was changed", where, e.Err)
	case AccessNoCredentials:
		return fmt.Sprintf("%v; configure credentials as for the AWS CLI (for example AWS_PROFILE or ~/.aws/credentials); nothing was changed", e.Err)
	default:
		return fmt.Sprintf("%s refused the credentials for bucket %q (%v): check AWS_PROFILE, ~/.aws/credentials or the "+
			"AWS_* variables; nothing was changed", where, e.Bucket, e.Err)
	}
}
func (e *AccessError) Unwrap() error { return e.Err }

// Code is the code of what failed below when that has one, else e.Kind.
func (e *AccessError) Code() string { return swampj.CodeOr(swampj.CauseOf(e.Err), e.Kind) }

// Class is the class of what failed below when that has one, else ClassFailed.
func (e *AccessError) Class() swampj.Class {
	return swampj.ClassOr(swampj.CauseOf(e.Err), swampj.ClassFailed)
}

// bucketReader lists and reads the datastore's objects, by key relative to
// the configured prefix.
type bucketReader struct {
	a  *agent
	id int64
}

// newBucketReader is c's datastore's bucket, opened in the agent (the
// lock takes its locks through it too).
func newBucketReader(ctx context.Context, c *Cache, env func(string) string) (*bucketReader, error) {
	if c.Bucket() == "" {
		return nil, errors.New("the datastore config names no bucket")
	}
	a, err := agentFor(env)
	if err != nil {
		return nil, err
	}
	id, err := a.open(ctx, c)
	if err != nil {
		return nil, err
	}
	return &bucketReader{a: a, id: id}, nil
}

func (b *bucketReader) list(ctx context.Context, under string) (map[string]BucketObject, error) {
	r, err := b.a.call(ctx, bucketwire.Request{Op: bucketwire.OpList, Client: b.id, Under: under})
	if err != nil {
		return nil, err
	}
	if r.Objects == nil {
		r.Objects = map[string]BucketObject{}
	}
	return r.Objects, nil
}

func (b *bucketReader) get(ctx context.Context, rel string) ([]byte, bool, error) {
	r, err := b.a.call(ctx, bucketwire.Request{Op: bucketwire.OpGet, Client: b.id, Rel: rel})
	if err != nil {
		return nil, false, err
	}
	return r.Data, r.Found, nil
}
