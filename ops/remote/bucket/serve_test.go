package bucket_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote/bucket"
	"github.com/swampj/swampj/ops/remote/buckettest"
	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// agentConn is one Serve, spoken to over pipes as swampj speaks to the
// program.
type agentConn struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Scanner
	done chan error
	next int64
}

func startAgent(t *testing.T) *agentConn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &agentConn{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan error, 1)}
	go func() { c.done <- bucket.Serve(context.Background(), inR, outW); outW.Close() }()
	t.Cleanup(func() { inW.Close() })
	return c
}

// call sends req and returns the response to it (responses to one
// request at a time, so the next line is it).
func (c *agentConn) call(req bucketwire.Request) bucketwire.Response {
	c.t.Helper()
	c.next++
	req.ID = c.next
	b, _ := json.Marshal(req)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatal(err)
	}
	if !c.out.Scan() {
		c.t.Fatalf("no response to %+v: %v", req, c.out.Err())
	}
	var resp bucketwire.Response
	if err := json.Unmarshal(c.out.Bytes(), &resp); err != nil || resp.ID != req.ID {
		c.t.Fatalf("response %s to request %d: %v", c.out.Bytes(), req.ID, err)
	}
	return resp
}

// The agent's lock on GCS, through its line protocol: a lock is created
// only where none is, a second taker is told it is busy and who holds it,
// an unlock deletes the lock (only while it is still ours), and the end
// of the input leaves a held lock in the bucket.
func TestServeLocksOnGCS(t *testing.T) {
	f := buckettest.NewFakeGCS(t, "swamp-test")
	cfg, _ := json.Marshal(bucket.GCSConfig{Bucket: "swamp-test", Prefix: "team", APIEndpoint: f.URL()})
	c := startAgent(t)
	open := c.call(bucketwire.Request{Op: bucketwire.OpOpen, Kind: bucketwire.KindGCS, Config: cfg, PID: 4321})
	if open.Err != nil || open.Client == 0 {
		t.Fatalf("open: %+v", open)
	}
	lock := c.call(bucketwire.Request{Op: bucketwire.OpLock, Client: open.Client, Key: ".swampj-run/.lock", TimeoutMs: 2000})
	if lock.Err != nil || lock.Handle == 0 {
		t.Fatalf("lock: %+v", lock.Err)
	}
	held := f.Object("team/.swampj-run/.lock")
	var li bucketwire.LockInfo
	if held == nil || json.Unmarshal(held.Data, &li) != nil || li.PID != 4321 || li.TTLMs != bucketwire.LockTTL.Milliseconds() {
		t.Fatalf("the lock object: %+v (%+v)", held, li)
	}
	busy := c.call(bucketwire.Request{Op: bucketwire.OpLock, Client: open.Client, Key: ".swampj-run/.lock", TimeoutMs: 300})
	if busy.Err == nil || busy.Err.Kind != bucketwire.ErrBusy {
		t.Fatalf("a second lock while held: %+v, want busy", busy)
	}
	if un := c.call(bucketwire.Request{Op: bucketwire.OpUnlock, Handle: lock.Handle}); un.Err != nil {
		t.Fatalf("unlock: %+v", un.Err)
	}
	if f.Object("team/.swampj-run/.lock") != nil {
		t.Fatal("the unlock left the lock in the bucket")
	}
	again := c.call(bucketwire.Request{Op: bucketwire.OpLock, Client: open.Client, Key: ".swampj-run/.lock", TimeoutMs: 2000})
	if again.Err != nil {
		t.Fatalf("lock after unlock: %+v", again.Err)
	}
	got := c.call(bucketwire.Request{Op: bucketwire.OpGet, Client: open.Client, Rel: ".swampj-run/.lock"})
	if got.Err != nil || !got.Found || len(got.Data) == 0 {
		t.Fatalf("get of the held lock: %+v", got)
	}
	if len(f.Auth()) != 0 {
		t.Errorf("credentials were sent to an apiEndpoint: %v", f.Auth())
	}
	c.in.Close()
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("Serve at the end of its input: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return at the end of its input")
	}
	if f.Object("team/.swampj-run/.lock") == nil {
		t.Fatal("the end of the input released a held lock (a dead swampj must look dead)")
	}
}
