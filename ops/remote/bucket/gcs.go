package remote

// The GCS bucket's lock protocol (gcs_lock.ts), spoken from Go over the
// JSON API, so that a cache repair runs while no swamp process can push:
//
//   - acquire: upload {prefix}/{lock key} with ifGenerationMatch=0 (only if
//     no live object exists) and the JSON body {holder, hostname, pid,
//     acquiredAt, ttlMs, nonce}; 200 is ours and names its generation, 412
//     is someone else's. A lock whose object's `updated` is older than its
//     ttlMs is stale: deleted with ifGenerationMatch set to the generation
//     that was judged stale (so a lock renewed meanwhile survives), then the
//     create is retried, as swamp does. Otherwise wait 1 s and retry, up to
//     the timeout.
//   - hold: every ttl/3, upload it again with ifGenerationMatch set to the
//     held generation (compare-and-swap); 412 means it was taken over, and
//     the heartbeat stops.
//   - release: delete it with ifGenerationMatch set to the held generation,
//     so a lock someone else took over is never deleted.
//
// Credentials: with the datastore config's apiEndpoint, or
// STORAGE_EMULATOR_HOST, none are sent (an emulator; the extension does the
// same with apiEndpoint). Otherwise Application Default Credentials
// (gcsauth.go: GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the
// metadata server).
//
// The client is built only when a repair takes the lock. Google's storage
// SDK is not linked: its packages' init work (grpc, protobuf, otel) would
// run at every start of swampj, and this lock needs five JSON API calls.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// GCSLocker takes the lock in the bucket over the GCS JSON API.
type GCSLocker struct {
	// Env looks up STORAGE_EMULATOR_HOST and the credentials' variables
	// (nil: the process environment).
	Env func(string) string
	// Client, when set, is used as is (no credentials are added).
	Client *http.Client
}

// LockerFor is the bucket lock of c's datastore kind.
func LockerFor(c *Cache, env func(string) string) Locker {
	if c.GCS != nil {
		return GCSLocker{Env: env}
	}
	return BucketLocker{} // the AWS SDK's default credential chain
}

func (g GCSLocker) Lock(ctx context.Context, c *Cache, timeout time.Duration) (func() error, error) {
	if c.GCS == nil {
		return nil, fmt.Errorf("%s: not a GCS datastore (%s)", c.Source, c.Type)
	}
	cl, err := newGCSClient(*c.GCS, g.Env, g.Client)
	if err != nil {
		return nil, err
	}
	return cl.acquire(ctx, c.LockKey(), timeout)
}

type gcsClient struct {
	cfg  GCSConfig
	base string // API base URL, no trailing slash
	http *http.Client
}

const gcsDefaultAPI = "https://storage.googleapis.com"

func newGCSClient(cfg GCSConfig, env func(string) string, hc *http.Client) (*gcsClient, error) {
	if env == nil {
		env = os.Getenv
	}
	if cfg.Bucket == "" {
		return nil, errors.New("the datastore config names no bucket")
	}
	c := &gcsClient{cfg: cfg, http: hc}
	emulator := true
	switch {
	case cfg.APIEndpoint != "":
		c.base = cfg.APIEndpoint
	case env("STORAGE_EMULATOR_HOST") != "":
		c.base = env("STORAGE_EMULATOR_HOST")
		if !strings.Contains(c.base, "://") {
			c.base = "http://" + c.base // the Go SDK's reading of a bare host:port
		}
	default:
		c.base, emulator = gcsDefaultAPI, false
	}
	c.base = strings.TrimRight(c.base, "/")
	if _, err := url.Parse(c.base); err != nil {
		return nil, fmt.Errorf("GCS endpoint %q: %w", c.base, err)
	}
	if c.http == nil {
		if emulator {
			c.http = &http.Client{Timeout: 30 * time.Second}
		} else {
			ts, err := gcsTokenSource(env)
			if err != nil {
				return nil, fmt.Errorf("no GCS credentials (%s): %w", credentialsHint, err)
			}
			ac := oauth2.NewClient(context.Background(), ts)
			ac.Timeout = 30 * time.Second
			c.http = ac
		}
	}
	return c, nil
}

// objectName is key under the configured prefix, joined as the extension
// joins it (fullKey: prefix + "/" + key).
func (c *gcsClient) objectName(key string) string {
	if c.cfg.Prefix != "" {
		return c.cfg.Prefix + "/" + key
	}
	return key
}

func (c *gcsClient) objectURL(key string, q url.Values) string {
	u := c.base + "/storage/v1/b/" + url.PathEscape(c.cfg.Bucket) + "/o/" + url.PathEscape(c.objectName(key))
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

type gcsResponse struct {
	status int
	body   []byte
	header http.Header
}

func (c *gcsClient) do(ctx context.Context, method, u string, body []byte) (*gcsResponse, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<26)) // the remote index too, not only the lock
	if err != nil {
		return nil, err
	}
	return &gcsResponse{status: resp.StatusCode, body: b, header: resp.Header}, nil
}

// gcsObject is the part of the object resource the lock reads.
type gcsObject struct {
	Generation string    `json:"generation"`
	Updated    time.Time `json:"updated"`
}

// put uploads key only if its live generation is ifGeneration ("0": only
// if there is none). It returns the new generation, or "" on 412.
func (c *gcsClient) put(ctx context.Context, key string, body []byte, ifGeneration string) (string, error) {
	q := url.Values{"uploadType": {"media"}, "name": {c.objectName(key)}, "ifGenerationMatch": {ifGeneration}}
	u := c.base + "/upload/storage/v1/b/" + url.PathEscape(c.cfg.Bucket) + "/o?" + q.Encode()
	r, err := c.do(ctx, http.MethodPost, u, body)
	if err != nil {
		return "", err
	}
	switch {
	case r.status == http.StatusPreconditionFailed:
		return "", nil
	case r.status/100 != 2:
		return "", fmt.Errorf("upload %s (ifGenerationMatch=%s): HTTP %d: %s", key, ifGeneration, r.status, snippet(r.body))
	}
	var o gcsObject
	if err := json.Unmarshal(r.body, &o); err != nil || o.Generation == "" {
		return "", fmt.Errorf("upload %s: HTTP %d without a generation: %s", key, r.status, snippet(r.body))
	}
	return o.Generation, nil
}

// meta is key's object resource (nil when there is none).
func (c *gcsClient) meta(ctx context.Context, key string) (*gcsObject, error) {
	r, err := c.do(ctx, http.MethodGet, c.objectURL(key, nil), nil)
	if err != nil {
		return nil, err
	}
	if r.status == http.StatusNotFound {
		return nil, nil
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", key, r.status, snippet(r.body))
	}
	var o gcsObject
	if err := json.Unmarshal(r.body, &o); err != nil {
		return nil, fmt.Errorf("GET %s: %v", key, err)
	}
	return &o, nil
}

// readLock is the lock's body (nil when absent or not a lock, as the
// extension's readLock reads it).
func (c *gcsClient) readLock(ctx context.Context, key string) (*LockInfo, error) {
	r, err := c.do(ctx, http.MethodGet, c.objectURL(key, url.Values{"alt": {"media"}}), nil)
	if err != nil {
		return nil, err
	}
	if r.status == http.StatusNotFound {
		return nil, nil
	}
	if r.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", key, r.status, snippet(r.body))
	}
	var li LockInfo
	if json.Unmarshal(r.body, &li) != nil {
		return nil, nil
	}
	return &li, nil
}

// deleteIf deletes key if its live generation is gen: done is false on
// 412 (another generation) and 404 (gone).
func (c *gcsClient) deleteIf(ctx context.Context, key, gen string) (done bool, err error) {
	r, err := c.do(ctx, http.MethodDelete, c.objectURL(key, url.Values{"ifGenerationMatch": {gen}}), nil)
	if err != nil {
		return false, err
	}
	switch {
	case r.status == http.StatusPreconditionFailed || r.status == http.StatusNotFound:
		return false, nil
	case r.status/100 != 2:
		return false, fmt.Errorf("DELETE %s (ifGenerationMatch=%s): HTTP %d: %s", key, gen, r.status, snippet(r.body))
	}
	return true, nil
}

// acquire takes the lock at key (gcs_lock.ts acquire) and starts its
// heartbeat; the returned function stops it and releases the lock.
func (c *gcsClient) acquire(ctx context.Context, key string, timeout time.Duration) (func() error, error) {
	nonce := newNonce()
	deadline := time.Now().Add(timeout)
	for {
		gen, err := c.put(ctx, key, lockBody(nonce), "0")
		if err != nil {
			return nil, err
		}
		if gen != "" {
			return c.hold(key, gen, nonce), nil
		}
		holder, err := c.readLock(ctx, key)
		if err != nil {
			return nil, err
		}
		var expires time.Time
		var staleErr error // why a stale lock could not be broken
		if holder != nil {
			m, err := c.meta(ctx, key)
			if err == nil && m != nil && !m.Updated.IsZero() {
				expires = m.Updated.Add(time.Duration(holder.TTLMs) * time.Millisecond)
			}
			if !expires.IsZero() && time.Now().After(expires) && m.Generation != "" {
				// Stale: deleted only if it is still the generation judged
				// stale; a heartbeat that landed meanwhile keeps it.
				// Retried until the deadline, never past it.
				if _, staleErr = c.deleteIf(ctx, key, m.Generation); !time.Now().After(deadline) {
					if err := sleep(ctx, 200*time.Millisecond+time.Duration(time.Now().UnixNano()%300)*time.Millisecond); err != nil {
						return nil, err
					}
					continue
				}
			}
		}
		if time.Now().After(deadline) {
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
			return nil, fmt.Errorf("%w: %s", ErrLockBusy, msg)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}

// hold renews the lock of generation gen every LockTTL/3 by
// compare-and-swap, and returns its release.
func (c *gcsClient) hold(key, gen, nonce string) func() error {
	var mu sync.Mutex // guards gen and lost
	lost := false
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(LockTTL / 3)
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
				next, err := c.put(ctx, key, lockBody(nonce), held)
				cancel()
				if err != nil {
					continue // a failed heartbeat: the next one retries; the TTL covers the gap
				}
				mu.Lock()
				if next == "" {
					lost = true
				} else {
					gen = next
				}
				mu.Unlock()
				if next == "" {
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
				rerr = fmt.Errorf("the lock %s was taken over while held (its generation %s was replaced); not deleting it", key, held)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done, err := c.deleteIf(ctx, key, held)
			if err == nil && !done {
				err = fmt.Errorf("the lock %s was taken over while held (generation %s is no longer the live one); not deleting it", key, held)
			}
			rerr = err
		})
		return rerr
	}
}

// snippet is the start of a response body, for an error message.
func snippet(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.TrimSpace(string(b))
}
