// Package bucket holds the S3 and GCS clients of remote datastores and
// serves them to swampj over bucketwire's line protocol: it is the body of
// the swampj-bucket program. swampj does not link it (the SDKs' package
// init would cost every local command its start-up); ops/remote starts the
// program when a command needs the bucket.
package bucket

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// client is one datastore's bucket, S3 or GCS.
type client interface {
	acquire(ctx context.Context, key string, timeout time.Duration) (func() error, error)
	list(ctx context.Context, under string) (map[string]bucketwire.Object, error)
	get(ctx context.Context, rel string) ([]byte, bool, error)
}

// agent is the state of one Serve: the opened clients, the held locks
// (their heartbeats run here) and the requests in flight.
type agent struct {
	mu       sync.Mutex // guards the maps and next
	clients  map[int64]client
	locks    map[int64]func() error
	inflight map[int64]context.CancelFunc
	next     int64
	wmu      sync.Mutex // one response line at a time
	out      *json.Encoder
}

// Serve answers the requests read from in, one JSON line each, on out,
// until in ends. It returns then without releasing the locks it holds:
// the end of in is the end of swampj, and a swampj that died must look
// like a holder that died (its locks go stale after their TTL).
func Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	a := &agent{clients: map[int64]client{}, locks: map[int64]func() error{}, inflight: map[int64]context.CancelFunc{},
		out: json.NewEncoder(out)}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var req bucketwire.Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("a request that does not parse: %w", err)
		}
		if req.Op == bucketwire.OpCancel {
			a.mu.Lock()
			if cancel := a.inflight[req.Target]; cancel != nil {
				cancel()
			}
			a.mu.Unlock()
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		a.mu.Lock()
		a.inflight[req.ID] = cancel
		a.mu.Unlock()
		go func() {
			resp := a.handle(rctx, req)
			a.mu.Lock()
			delete(a.inflight, req.ID)
			a.mu.Unlock()
			cancel()
			resp.ID = req.ID
			a.wmu.Lock()
			_ = a.out.Encode(resp)
			a.wmu.Unlock()
		}()
	}
	return sc.Err()
}

func (a *agent) handle(ctx context.Context, req bucketwire.Request) bucketwire.Response {
	var resp bucketwire.Response
	var err error
	switch req.Op {
	case bucketwire.OpOpen:
		resp.Client, err = a.open(ctx, req)
	case bucketwire.OpLock:
		var release func() error
		if cl := a.client(req.Client); cl == nil {
			err = fmt.Errorf("no client %d", req.Client)
		} else if release, err = cl.acquire(ctx, req.Key, time.Duration(req.TimeoutMs)*time.Millisecond); err == nil {
			resp.Handle = a.add(func(id int64) { a.locks[id] = release })
		}
	case bucketwire.OpUnlock:
		a.mu.Lock()
		release := a.locks[req.Handle]
		delete(a.locks, req.Handle)
		a.mu.Unlock()
		if release == nil {
			err = fmt.Errorf("no lock %d", req.Handle)
		} else {
			err = release()
		}
	case bucketwire.OpList:
		if cl := a.client(req.Client); cl == nil {
			err = fmt.Errorf("no client %d", req.Client)
		} else {
			resp.Objects, err = cl.list(ctx, req.Under)
		}
	case bucketwire.OpGet:
		if cl := a.client(req.Client); cl == nil {
			err = fmt.Errorf("no client %d", req.Client)
		} else {
			resp.Data, resp.Found, err = cl.get(ctx, req.Rel)
		}
	default:
		err = fmt.Errorf("unknown operation %q", req.Op)
	}
	resp.Err = wireError(err)
	return resp
}

func (a *agent) open(ctx context.Context, req bucketwire.Request) (int64, error) {
	var cl client
	switch req.Kind {
	case bucketwire.KindS3:
		var cfg S3Config
		if err := json.Unmarshal(req.Config, &cfg); err != nil {
			return 0, fmt.Errorf("the S3 config does not parse: %w", err)
		}
		c, err := newS3Client(ctx, cfg, req.PID)
		if err != nil {
			return 0, err
		}
		cl = c
	case bucketwire.KindGCS:
		var cfg GCSConfig
		if err := json.Unmarshal(req.Config, &cfg); err != nil {
			return 0, fmt.Errorf("the GCS config does not parse: %w", err)
		}
		c, err := newGCSClient(ctx, cfg, req.PID)
		if err != nil {
			return 0, err
		}
		cl = c
	default:
		return 0, fmt.Errorf("unknown datastore kind %q", req.Kind)
	}
	return a.add(func(id int64) { a.clients[id] = cl }), nil
}

// add stores a new entry under a fresh id, under the lock.
func (a *agent) add(store func(id int64)) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.next++
	store(a.next)
	return a.next
}

func (a *agent) client(id int64) client {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.clients[id]
}

// wireError is err as the protocol carries it, for ops/remote to rebuild
// the same typed error.
func wireError(err error) *bucketwire.Error {
	if err == nil {
		return nil
	}
	var ae *accessError
	if errors.As(err, &ae) {
		return &bucketwire.Error{Kind: bucketwire.ErrAccess, Access: ae.Kind, Bucket: ae.Bucket, Endpoint: ae.Endpoint, Message: ae.Err.Error()}
	}
	if errors.Is(err, errLockBusy) {
		msg := err.Error()
		if len(msg) > len(errLockBusy.Error())+2 {
			msg = msg[len(errLockBusy.Error())+2:]
		}
		return &bucketwire.Error{Kind: bucketwire.ErrBusy, Message: msg}
	}
	return &bucketwire.Error{Kind: bucketwire.ErrFailed, Message: err.Error()}
}

// parseLock is a lock object's body; nil when it is not one (the
// extensions' readLock reads garbage as no lock).
func parseLock(b []byte) *bucketwire.LockInfo {
	var li bucketwire.LockInfo
	if json.Unmarshal(b, &li) != nil {
		return nil
	}
	return &li
}
