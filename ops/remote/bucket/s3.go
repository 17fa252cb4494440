package bucket

// The bucket's lock protocol (s3_lock.ts), spoken from Go through the AWS
// SDK, so that a cache repair runs while no swamp process can push:
//
//   - acquire: PutObject {prefix}/{lock key} with If-None-Match: * and a
//     JSON body {holder, hostname, pid, acquiredAt, ttlMs, nonce}; success
//     is ours, 412 is someone else's. A lock whose object is older than its
//     ttlMs (HeadObject LastModified) is stale: deleted (If-Match its
//     ETag, so a fresh lock made meanwhile survives), then the create is
//     retried, as swamp does. Otherwise wait 1 s and retry, up to the
//     timeout.
//   - hold: every ttl/3, PutObject again with If-Match: the ETag of our
//     last write (the heartbeat); a 412 means it was taken over, and the
//     heartbeat stops. swamp's stale check reads the object's age.
//   - release: read the lock and delete it only if the nonce is ours,
//     If-Match its ETag where the backend honours conditional deletes.
//
// Credentials, region and profile come from wherever the AWS SDK's
// default chain finds them (AWS_* variables, ~/.aws/credentials and
// config with AWS_PROFILE, SSO, web identity, the instance role) in this
// process's environment, which swampj sets when it starts the agent.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// errLockBusy: another process held the lock for the whole timeout.
var errLockBusy = errors.New("the datastore lock stayed held")

// errNoCredentials: the SDK's default chain found no credentials.
var errNoCredentials = errors.New(bucketwire.NoCredentials)

// S3Config is the S3 extension's configuration (ops/remote S3Config, as JSON).
type S3Config struct {
	Bucket         string `json:"bucket"`
	Prefix         string `json:"prefix,omitempty"`
	Region         string `json:"region,omitempty"`
	Endpoint       string `json:"endpoint,omitempty"`
	ForcePathStyle bool   `json:"forcePathStyle,omitempty"`
}

type s3Client struct {
	cfg    S3Config
	region string
	api    *s3.Client
	pid    int // swampj's, written into the lock body
}

func newS3Client(ctx context.Context, cfg S3Config, pid int) (*s3Client, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("the datastore config names no bucket")
	}
	// The SDK logs to stderr by itself (its instance-role probe warns
	// when IMDSv2 is refused); a library never prints, and the outcome of
	// the credential chain is in the error below.
	opts := []func(*config.LoadOptions) error{config.WithLogger(logging.Nop{})}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	ac, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// A profile AWS_PROFILE names that the config files lack, or
		// files that do not parse: no usable credentials.
		return nil, &accessError{Kind: bucketwire.AccessNoCredentials, Bucket: cfg.Bucket, Endpoint: cfg.Endpoint,
			Err: fmt.Errorf("loading the AWS configuration: %w", err)}
	}
	if ac.Region == "" {
		ac.Region = "us-east-1"
	}
	if _, err := ac.Credentials.Retrieve(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &accessError{Kind: bucketwire.AccessNoCredentials, Bucket: cfg.Bucket, Endpoint: cfg.Endpoint, Err: fmt.Errorf("%w: %v", errNoCredentials, err)}
	}
	api := s3.NewFromConfig(ac, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.ForcePathStyle
		// Checksums only where S3 requires them: the extension's own
		// client sends none, and S3-compatible servers differ in the
		// trailers they accept.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &s3Client{cfg: cfg, region: ac.Region, api: api, pid: pid}, nil
}

// key is the object key of rel under the configured prefix.
func (c *s3Client) key(rel string) string {
	if c.cfg.Prefix != "" {
		return strings.TrimSuffix(c.cfg.Prefix, "/") + "/" + rel
	}
	return rel
}

// endpoint names where requests go, for messages.
func (c *s3Client) endpoint() string {
	if c.cfg.Endpoint != "" {
		return c.cfg.Endpoint
	}
	return "S3 in " + c.region
}

// accessError: the bucket could not be used at all, whatever its lock
// says: it does not exist, its endpoint does not answer, or no
// credentials were found or they were refused. ops/remote's AccessError
// words it.
type accessError struct {
	Kind     string // one of bucketwire's Access* kinds
	Bucket   string
	Endpoint string
	Err      error
}

func (e *accessError) Error() string { return e.Kind + ": " + e.Err.Error() }
func (e *accessError) Unwrap() error { return e.Err }

// classify turns an SDK error into an *AccessError where the bucket could
// not be used at all, and otherwise names the operation, without the
// response body.
func (c *s3Client) classify(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket":
			return &accessError{Kind: bucketwire.AccessNoBucket, Bucket: c.cfg.Bucket, Endpoint: c.cfg.Endpoint, Err: err}
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken",
			"TokenRefreshRequired", "AuthorizationHeaderMalformed", "Forbidden":
			return &accessError{Kind: bucketwire.AccessCredentials, Bucket: c.cfg.Bucket, Endpoint: c.cfg.Endpoint,
				Err: fmt.Errorf("%s: %s", ae.ErrorCode(), ae.ErrorMessage())}
		}
		return fmt.Errorf("%s %s: %s: %s", op, key, ae.ErrorCode(), ae.ErrorMessage())
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusForbidden {
		return &accessError{Kind: bucketwire.AccessCredentials, Bucket: c.cfg.Bucket, Endpoint: c.cfg.Endpoint, Err: errors.New("HTTP 403")}
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) {
		return &accessError{Kind: bucketwire.AccessUnreachable, Bucket: c.cfg.Bucket, Endpoint: c.endpoint(), Err: rootCause(err)}
	}
	return fmt.Errorf("%s %s: %w", op, key, err)
}

// rootCause is the innermost network error, for a one-line message.
func rootCause(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return oe
	}
	var de *net.DNSError
	if errors.As(err, &de) {
		return de
	}
	return err
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// readLock is the lock's body and ETag; (nil, "", nil) when there is none.
func (c *s3Client) readLock(ctx context.Context, key string) (*bucketwire.LockInfo, string, error) {
	out, err := c.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(c.key(key))})
	if err != nil {
		var ae smithy.APIError
		if (errors.As(err, &ae) && ae.ErrorCode() == "NoSuchKey") || httpStatus(err) == http.StatusNotFound && !isNoBucket(err) {
			return nil, "", nil
		}
		return nil, "", c.classify("GET", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, 1<<20))
	if err != nil {
		return nil, "", err
	}
	etag := aws.ToString(out.ETag)
	var li bucketwire.LockInfo
	if json.Unmarshal(b, &li) != nil {
		return nil, etag, nil // the extension's readLock reads garbage as no lock
	}
	return &li, etag, nil
}

func isNoBucket(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket"
}

func (c *s3Client) put(ctx context.Context, key string, body []byte, ifNoneMatch, ifMatch string) (etag string, err error) {
	in := &s3.PutObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(c.key(key)), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String("application/json")}
	if ifNoneMatch != "" {
		in.IfNoneMatch = aws.String(ifNoneMatch)
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	out, err := c.api.PutObject(ctx, in)
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

// preconditionFailed: a conditional write lost (412), or a concurrent
// conditional write was in flight (409).
func preconditionFailed(err error) bool {
	s := httpStatus(err)
	return s == http.StatusPreconditionFailed || s == http.StatusConflict
}

func (c *s3Client) del(ctx context.Context, key, ifMatch string) error {
	in := &s3.DeleteObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(c.key(key))}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	}
	_, err := c.api.DeleteObject(ctx, in)
	var ae smithy.APIError
	if err != nil && ifMatch != "" && errors.As(err, &ae) && ae.ErrorCode() == "NotImplemented" {
		// A backend without conditional deletes: the extension's own
		// read-then-delete.
		_, err = c.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(c.key(key))})
	}
	return err
}

func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func lockBody(nonce string, pid int) []byte {
	host, _ := os.Hostname()
	user := os.Getenv("USER")
	if user == "" {
		user = "unknown"
	}
	b, _ := json.MarshalIndent(bucketwire.LockInfo{Holder: user + "@" + host + " (swampj)", Hostname: host, PID: pid,
		AcquiredAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), TTLMs: bucketwire.LockTTL.Milliseconds(), Nonce: nonce}, "", "  ")
	return b
}

// acquire takes the lock at key (s3_lock.ts acquire) and starts its
// heartbeat; the returned function stops it and releases the lock.
func (c *s3Client) acquire(ctx context.Context, key string, timeout time.Duration) (func() error, error) {
	nonce := newNonce()
	deadline := time.Now().Add(timeout)
	var holder *bucketwire.LockInfo
	for {
		etag, err := c.put(ctx, key, lockBody(nonce, c.pid), "*", "")
		if err == nil {
			return c.hold(key, nonce, etag), nil
		}
		if !preconditionFailed(err) {
			return nil, c.classify("PUT", key, err)
		}
		holder, _, err = c.readLock(ctx, key)
		if err != nil {
			return nil, err
		}
		var expires time.Time
		if holder != nil {
			h, err := c.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(c.cfg.Bucket), Key: aws.String(c.key(key))})
			if err == nil && h.LastModified != nil {
				expires = h.LastModified.Add(time.Duration(holder.TTLMs) * time.Millisecond)
			}
			if !expires.IsZero() && time.Now().After(expires) {
				_ = c.del(ctx, key, aws.ToString(h.ETag)) // stale: taken over, as swamp does
				_ = sleep(ctx, 200*time.Millisecond+time.Duration(time.Now().UnixNano()%300)*time.Millisecond)
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
			return nil, fmt.Errorf("%w: %s", errLockBusy, msg)
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

func (c *s3Client) hold(key, nonce, etag string) func() error {
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
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				next, err := c.put(ctx, key, lockBody(nonce, c.pid), "", etag)
				if err == nil {
					etag = next
				}
				cancel()
				if err != nil && preconditionFailed(err) {
					return // taken over: the release finds out and says so
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
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cur, curTag, err := c.readLock(ctx, key)
			if err != nil {
				rerr = err
				return
			}
			if cur == nil || cur.Nonce != nonce {
				rerr = fmt.Errorf("the lock %s was taken over while held; not deleting it", key)
				return
			}
			if err := c.del(ctx, key, curTag); err != nil {
				rerr = c.classify("DELETE", key, err)
			}
		})
		return rerr
	}
}
