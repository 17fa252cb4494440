package bucket

// The GCS bucket's lock protocol (gcs_lock.ts), spoken through Google's
// storage library (cloud.google.com/go/storage, over the JSON API), so
// that a cache repair runs while no swamp process can push:
//
//   - acquire: create {prefix}/{lock key} only if no live object exists
//     (DoesNotExist: ifGenerationMatch=0) with the JSON body {holder,
//     hostname, pid, acquiredAt, ttlMs, nonce}; success is ours and names
//     its generation, 412 is someone else's. A lock whose object's
//     `updated` is older than its ttlMs is stale: deleted on condition of
//     the generation that was judged stale (so a lock renewed meanwhile
//     survives), then the create is retried, as swamp does. Otherwise wait
//     1 s and retry, up to the timeout.
//   - hold: every ttl/3, write it again on condition of the held
//     generation (GenerationMatch: compare-and-swap); 412 means it was
//     taken over, and the heartbeat stops.
//   - release: delete it on condition of the held generation, so a lock
//     someone else took over is never deleted.
//
// Credentials: with the datastore config's apiEndpoint, or
// STORAGE_EMULATOR_HOST, none are sent (an emulator; the extension does the
// same with apiEndpoint). Otherwise the library's Application Default
// Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the
// metadata server).

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// GCSConfig is the GCS extension's configuration (ops/remote GCSConfig,
// as JSON).
type GCSConfig struct {
	Bucket      string `json:"bucket"`
	Prefix      string `json:"prefix,omitempty"`
	ProjectID   string `json:"projectId,omitempty"`
	APIEndpoint string `json:"apiEndpoint,omitempty"`
}

type gcsClient struct {
	cfg GCSConfig
	bkt *storage.BucketHandle
	pid int // swampj's, written into the lock body
}

func newGCSClient(ctx context.Context, cfg GCSConfig, pid int) (*gcsClient, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("the datastore config names no bucket")
	}
	// Reads over the JSON API, as every other call: one protocol for
	// emulators to speak, as the extension's own client does.
	opts := []option.ClientOption{storage.WithJSONReads(), storage.WithDisabledClientMetrics()}
	if cfg.APIEndpoint != "" {
		// An emulator: no credentials, as the extension does with apiEndpoint.
		// STORAGE_EMULATOR_HOST has the library do the same by itself.
		opts = append(opts, option.WithEndpoint(strings.TrimRight(cfg.APIEndpoint, "/")+"/storage/v1/"), option.WithoutAuthentication())
	} else {
		opts = append(opts, option.WithScopes(storage.ScopeReadWrite)) // the lock and the reads need no more
	}
	cl, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("no GCS client (for credentials, %s): %w", credentialsHint, err)
	}
	// A few attempts, not the library's retry-until-the-context-ends: an
	// endpoint that does not answer is reported, not waited for.
	cl.SetRetry(storage.WithMaxAttempts(3))
	return &gcsClient{cfg: cfg, bkt: cl.Bucket(cfg.Bucket), pid: pid}, nil
}

// objectName is key under the configured prefix, joined as the extension
// joins it (fullKey: prefix + "/" + key).
func (c *gcsClient) objectName(key string) string {
	if c.cfg.Prefix != "" {
		return c.cfg.Prefix + "/" + key
	}
	return key
}

func (c *gcsClient) obj(key string) *storage.ObjectHandle { return c.bkt.Object(c.objectName(key)) }

func gcsStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	return 0
}

// put writes key on condition cond. It returns the new generation, or 0 on
// 412 (the condition did not hold).
func (c *gcsClient) put(ctx context.Context, key string, body []byte, cond storage.Conditions) (int64, error) {
	w := c.obj(key).If(cond).NewWriter(ctx)
	w.ContentType = "application/json"
	w.ChunkSize = 0 // one request: the body is small
	_, werr := w.Write(body)
	err := w.Close()
	if werr != nil && err == nil {
		err = werr
	}
	switch {
	case gcsStatus(err) == http.StatusPreconditionFailed:
		return 0, nil
	case err != nil:
		return 0, gcsFailed(fmt.Sprintf("upload %s (%s)", key, condition(cond)), err)
	}
	return w.Attrs().Generation, nil
}

// condition is cond as the JSON API's query spells it.
func condition(cond storage.Conditions) string {
	if cond.DoesNotExist {
		return "ifGenerationMatch=0"
	}
	return fmt.Sprintf("ifGenerationMatch=%d", cond.GenerationMatch)
}

// credentialsHint is where Application Default Credentials come from.
const credentialsHint = "set GOOGLE_APPLICATION_CREDENTIALS or run 'gcloud auth application-default login'"

// gcsFailed names the operation that failed, and where the library could
// not get a token, where credentials come from.
func gcsFailed(op string, err error) error {
	if strings.Contains(err.Error(), "credentials: ") {
		return fmt.Errorf("%s: no usable GCS credentials (%s): %w", op, credentialsHint, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// readLock is the lock's body (nil when absent or not a lock, as the
// extension's readLock reads it).
func (c *gcsClient) readLock(ctx context.Context, key string) (*bucketwire.LockInfo, error) {
	b, ok, err := c.get(ctx, key)
	if err != nil || !ok {
		return nil, err
	}
	return parseLock(b), nil
}

// deleteIf deletes key if its live generation is gen: done is false on
// 412 (another generation) and 404 (gone).
func (c *gcsClient) deleteIf(ctx context.Context, key string, gen int64) (done bool, err error) {
	err = c.obj(key).If(storage.Conditions{GenerationMatch: gen}).Delete(ctx)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrObjectNotExist) || gcsStatus(err) == http.StatusPreconditionFailed:
		return false, nil
	}
	return false, gcsFailed(fmt.Sprintf("DELETE %s (ifGenerationMatch=%d)", key, gen), err)
}

// acquire takes the lock at key (gcs_lock.ts acquire) and starts its
// heartbeat; the returned function stops it and releases the lock.
func (c *gcsClient) acquire(ctx context.Context, key string, timeout time.Duration) (func() error, error) {
	nonce := newNonce()
	deadline := time.Now().Add(timeout)
	for {
		gen, err := c.put(ctx, key, lockBody(nonce, c.pid), storage.Conditions{DoesNotExist: true})
		if err != nil {
			return nil, err
		}
		if gen != 0 {
			return c.hold(key, gen, nonce), nil
		}
		holder, err := c.readLock(ctx, key)
		if err != nil {
			return nil, err
		}
		var expires time.Time
		var staleErr error // why a stale lock could not be broken
		if holder != nil {
			a, err := c.obj(key).Attrs(ctx)
			if err == nil && !a.Updated.IsZero() {
				expires = a.Updated.Add(time.Duration(holder.TTLMs) * time.Millisecond)
			}
			if !expires.IsZero() && time.Now().After(expires) && a.Generation != 0 {
				// Stale: deleted only if it is still the generation judged
				// stale; a heartbeat that landed meanwhile keeps it.
				// Retried until the deadline, never past it.
				if _, staleErr = c.deleteIf(ctx, key, a.Generation); !time.Now().After(deadline) {
					if err := sleep(ctx, 200*time.Millisecond+time.Duration(time.Now().UnixNano()%300)*time.Millisecond); err != nil {
						return nil, err
					}
					continue
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, gcsBusy(key, timeout, holder, expires, staleErr)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}

// gcsBusy says who held key for the whole timeout, and when it goes stale.
func gcsBusy(key string, timeout time.Duration, holder *bucketwire.LockInfo, expires time.Time, staleErr error) error {
	who := "someone"
	if holder != nil {
		who = fmt.Sprintf("%s (pid %d, since %s)", holder.Holder, holder.PID, holder.AcquiredAt)
	}
	msg := fmt.Sprintf("%s held %s for the whole %s", who, key, timeout)
	switch {
	case staleErr != nil:
		msg += fmt.Sprintf(" (it is stale, but deleting it failed: %v)", staleErr)
	case !expires.IsZero() && time.Now().After(expires):
		msg += fmt.Sprintf(" (it has been stale since %s UTC, but its generation changed whenever swampj deleted it: "+
			"another process keeps taking it)", expires.UTC().Format("15:04:05"))
	case !expires.IsZero():
		msg += fmt.Sprintf(" (unless its holder renews it, it goes stale at %s UTC, %s after its last heartbeat: "+
			"a holder that was killed leaves it until then)",
			expires.UTC().Format("15:04:05"), time.Duration(holder.TTLMs)*time.Millisecond)
	}
	return fmt.Errorf("%w: %s", errLockBusy, msg)
}

// hold renews the lock of generation gen every LockTTL/3 by
// compare-and-swap, and returns its release.
func (c *gcsClient) hold(key string, gen int64, nonce string) func() error {
	var mu sync.Mutex // guards gen and lost
	lost := false
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(bucketwire.LockTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				held := gen
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				next, err := c.put(ctx, key, lockBody(nonce, c.pid), storage.Conditions{GenerationMatch: held})
				cancel()
				if err != nil {
					continue // a failed heartbeat: the next one retries; the TTL covers the gap
				}
				mu.Lock()
				if next == 0 {
					lost = true
				} else {
					gen = next
				}
				mu.Unlock()
				if next == 0 {
					return
				}
			}
		}
	}()
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			close(stop)
			wg.Wait()
			mu.Lock()
			held, wasLost := gen, lost
			mu.Unlock()
			if wasLost {
				rerr = fmt.Errorf("the lock %s was taken over while held (its generation %d was replaced); not deleting it", key, held)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done, err := c.deleteIf(ctx, key, held)
			if err == nil && !done {
				err = fmt.Errorf("the lock %s was taken over while held (generation %d is no longer the live one); not deleting it", key, held)
			}
			rerr = err
		})
		return rerr
	}
}

func (c *gcsClient) list(ctx context.Context, under string) (map[string]bucketwire.Object, error) {
	base := c.objectName("")
	q := &storage.Query{Prefix: base + under}
	if err := q.SetAttrSelection([]string{"Name", "Size", "MD5", "Generation"}); err != nil {
		return nil, err
	}
	out := map[string]bucketwire.Object{}
	it := c.bkt.Objects(ctx, q)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return out, nil
		}
		if err != nil {
			return nil, gcsFailed("listing "+base+under, err)
		}
		h := base64.StdEncoding.EncodeToString(a.MD5)
		if len(a.MD5) == 0 {
			h = fmt.Sprintf("generation %d", a.Generation)
		}
		out[strings.TrimPrefix(a.Name, base)] = bucketwire.Object{Size: a.Size, Hash: h}
	}
}

func (c *gcsClient) get(ctx context.Context, rel string) ([]byte, bool, error) {
	r, err := c.obj(rel).NewReader(ctx)
	if errors.Is(err, storage.ErrObjectNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, gcsFailed("GET "+rel, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, false, fmt.Errorf("GET %s: %w", rel, err)
	}
	return b, true, nil
}
