package remote

// The bucket's lock protocol (s3_lock.ts), spoken from Go, so that a cache
// repair runs while no swamp process can push:
//
//   - acquire: PUT {prefix}/{lock key} with If-None-Match: * and a JSON body
//     {holder, hostname, pid, acquiredAt, ttlMs, nonce}; 200 is ours, 412
//     is someone else's. A lock whose object is older than its ttlMs (HEAD
//     Last-Modified) is stale: deleted, then the create is retried, as
//     swamp does. Otherwise wait 1 s and retry, up to the timeout.
//   - hold: every ttl/3, read the lock and, if the nonce is still ours,
//     PUT it again (the heartbeat); swamp's stale check reads the object's
//     age.
//   - release: read the lock and delete it only if the nonce is ours. The
//     read-then-delete window is the extension's own (its code notes it);
//     S3 has no conditional delete that every backend honours.
//
// Requests are signed with AWS Signature Version 4 from AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); swampj reads no other
// credential source, and refuses the repair when they are unset.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Locker takes the datastore's lock for a repair; release gives it back.
type Locker interface {
	Lock(ctx context.Context, c *Cache, timeout time.Duration) (release func() error, err error)
}

// ErrLockBusy: another process held the lock for the whole timeout.
var ErrLockBusy = errors.New("the datastore lock stayed held")

// ErrNoCredentials: no AWS credentials in the environment.
var ErrNoCredentials = errors.New("no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (swampj reads no other source)")

// LockTTL is the TTL swampj writes into its lock (the extension's default).
const LockTTL = 30 * time.Second

// LockInfo is the lock object's body (LockInfo in interfaces.ts).
type LockInfo struct {
	Holder     string `json:"holder"`
	Hostname   string `json:"hostname"`
	PID        int    `json:"pid"`
	AcquiredAt string `json:"acquiredAt"`
	TTLMs      int64  `json:"ttlMs"`
	Nonce      string `json:"nonce"`
}

// BucketLocker takes the lock in the bucket over S3.
type BucketLocker struct {
	Env    func(string) string
	Client *http.Client
}

func (b BucketLocker) Lock(ctx context.Context, c *Cache, timeout time.Duration) (func() error, error) {
	cl, err := newS3Client(c.S3, b.Env, b.Client)
	if err != nil {
		return nil, err
	}
	return cl.acquire(ctx, c.LockKey(), timeout)
}

type s3Client struct {
	cfg                   S3Config
	region                string
	access, secret, token string
	http                  *http.Client
}

func newS3Client(cfg S3Config, env func(string) string, hc *http.Client) (*s3Client, error) {
	if env == nil {
		env = os.Getenv
	}
	c := &s3Client{cfg: cfg, access: env("AWS_ACCESS_KEY_ID"), secret: env("AWS_SECRET_ACCESS_KEY"), token: env("AWS_SESSION_TOKEN"), http: hc}
	if c.access == "" || c.secret == "" {
		return nil, ErrNoCredentials
	}
	c.region = cfg.Region
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION"} {
		if c.region == "" {
			c.region = env(k)
		}
	}
	if c.region == "" {
		c.region = "us-east-1"
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Bucket == "" {
		return nil, errors.New("the datastore config names no bucket")
	}
	return c, nil
}

// objectURL is the URL of key under the configured prefix.
func (c *s3Client) objectURL(key string) (*url.URL, error) {
	if c.cfg.Prefix != "" {
		key = strings.TrimSuffix(c.cfg.Prefix, "/") + "/" + key
	}
	ep := c.cfg.Endpoint
	pathStyle := c.cfg.ForcePathStyle
	if ep == "" {
		ep = "https://s3." + c.region + ".amazonaws.com"
		if !pathStyle {
			ep = "https://" + c.cfg.Bucket + ".s3." + c.region + ".amazonaws.com"
		}
	} else if !pathStyle {
		u, err := url.Parse(ep)
		if err != nil {
			return nil, err
		}
		u.Host = c.cfg.Bucket + "." + u.Host
		ep = u.String()
	}
	u, err := url.Parse(strings.TrimSuffix(ep, "/"))
	if err != nil {
		return nil, fmt.Errorf("datastore endpoint %q: %w", ep, err)
	}
	p := "/" + key
	if pathStyle {
		p = "/" + c.cfg.Bucket + p
	}
	u.Path = p
	u.RawPath = uriEncodePath(p)
	return u, nil
}

func uriEncodePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		ch := p[i]
		if ch == '/' || ch == '-' || ch == '_' || ch == '.' || ch == '~' || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

type s3Response struct {
	status       int
	body         []byte
	lastModified time.Time
}

// do sends one signed request (SigV4, payload hashed).
func (c *s3Client) do(ctx context.Context, method, key string, body []byte, hdr map[string]string) (*s3Response, error) {
	u, err := c.objectURL(key)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	now := time.Now().UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	payload := sha256.Sum256(body)
	h := map[string]string{
		"host":                 u.Host,
		"x-amz-date":           amzDate,
		"x-amz-content-sha256": hex.EncodeToString(payload[:]),
	}
	if c.token != "" {
		h["x-amz-security-token"] = c.token
	}
	for k, v := range hdr {
		h[strings.ToLower(k)] = v
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var canonHdr strings.Builder
	for _, k := range names {
		canonHdr.WriteString(k + ":" + strings.TrimSpace(h[k]) + "\n")
		if k != "host" {
			req.Header.Set(k, h[k])
		}
	}
	signed := strings.Join(names, ";")
	canon := strings.Join([]string{method, u.EscapedPath(), "", canonHdr.String(), signed, h["x-amz-content-sha256"]}, "\n")
	scope := day + "/" + c.region + "/s3/aws4_request"
	cs := sha256.Sum256([]byte(canon))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(cs[:])
	k := hmacSHA([]byte("AWS4"+c.secret), day)
	k = hmacSHA(k, c.region)
	k = hmacSHA(k, "s3")
	k = hmacSHA(k, "aws4_request")
	sig := hex.EncodeToString(hmacSHA(k, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.access+"/"+scope+", SignedHeaders="+signed+", Signature="+sig)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	r := &s3Response{status: resp.StatusCode, body: b}
	if lm := resp.Header.Get("Last-Modified"); lm != "" {
		r.lastModified, _ = http.ParseTime(lm)
	}
	return r, nil
}

func hmacSHA(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func (c *s3Client) readLock(ctx context.Context, key string) (*LockInfo, error) {
	r, err := c.do(ctx, http.MethodGet, key, nil, nil)
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
		return nil, nil // the extension's readLock reads garbage as no lock
	}
	return &li, nil
}

func snippet(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strings.TrimSpace(string(b))
}

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func lockBody(nonce string) []byte {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = "unknown"
	}
	b, _ := json.MarshalIndent(LockInfo{Holder: user + "@" + host + " (swampj)", Hostname: host, PID: os.Getpid(),
		AcquiredAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), TTLMs: LockTTL.Milliseconds(), Nonce: nonce}, "", "  ")
	return b
}

// acquire takes the lock at key (s3_lock.ts acquire) and starts its
// heartbeat; the returned function stops it and releases the lock.
func (c *s3Client) acquire(ctx context.Context, key string, timeout time.Duration) (func() error, error) {
	nonce := newNonce()
	deadline := time.Now().Add(timeout)
	var holder *LockInfo
	for {
		r, err := c.do(ctx, http.MethodPut, key, lockBody(nonce), map[string]string{"If-None-Match": "*"})
		if err != nil {
			return nil, err
		}
		switch r.status {
		case http.StatusOK, http.StatusCreated, http.StatusNoContent:
			return c.hold(key, nonce), nil
		case http.StatusPreconditionFailed, http.StatusConflict:
		default:
			return nil, fmt.Errorf("PUT %s: HTTP %d: %s", key, r.status, snippet(r.body))
		}
		holder, err = c.readLock(ctx, key)
		if err != nil {
			return nil, err
		}
		var expires time.Time
		if holder != nil {
			h, err := c.do(ctx, http.MethodHead, key, nil, nil)
			if err == nil && h.status == http.StatusOK && !h.lastModified.IsZero() {
				expires = h.lastModified.Add(time.Duration(holder.TTLMs) * time.Millisecond)
			}
			if !expires.IsZero() && time.Now().After(expires) {
				_, _ = c.do(ctx, http.MethodDelete, key, nil, nil) // stale: taken over, as swamp does
				sleep(ctx, 200*time.Millisecond+time.Duration(time.Now().UnixNano()%300)*time.Millisecond)
				continue
			}
		}
		if time.Now().After(deadline) {
			who := "someone"
			if holder != nil {
				who = fmt.Sprintf("%s (pid %d, since %s)", holder.Holder, holder.PID, holder.AcquiredAt)
			}
			msg := fmt.Sprintf("%s held %s for the whole %s", who, key, timeout)
			if !expires.IsZero() {
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

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *s3Client) hold(key, nonce string) func() error {
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
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if cur, err := c.readLock(ctx, key); err == nil && cur != nil && cur.Nonce == nonce {
					_, _ = c.do(ctx, http.MethodPut, key, lockBody(nonce), nil)
				}
				cancel()
			}
		}
	}()
	var once sync.Once
	var rerr error
	return func() error {
		once.Do(func() {
			close(stop)
			wg.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cur, err := c.readLock(ctx, key)
			if err != nil {
				rerr = err
				return
			}
			if cur == nil || cur.Nonce != nonce {
				rerr = fmt.Errorf("the lock %s was taken over while held; not deleting it", key)
				return
			}
			r, err := c.do(ctx, http.MethodDelete, key, nil, nil)
			if err == nil && r.status/100 != 2 {
				err = fmt.Errorf("DELETE %s: HTTP %d", key, r.status)
			}
			rerr = err
		})
		return rerr
	}
}
