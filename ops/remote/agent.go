package remote

// The S3 and GCS clients live in another program, swampj-bucket
// (ops/remote/bucket): linked here, the SDKs' package init would run at
// every start of swampj, local commands included. A command that needs
// the bucket starts the program on first need and speaks to it in JSON
// lines on its stdin and stdout (bucketwire); the program keeps the held
// locks' heartbeats. One agent serves every bucket of the process that
// asks with the same environment; CloseBucketAgents ends them.
//
// The agent is started with Pdeathsig (agent_linux.go) and exits when its
// stdin ends, without releasing what it holds: when swampj dies, its locks
// go stale after their TTL as any dead holder's do.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/ops/remote/bucketwire"
)

// BucketProgram is the name of the program that holds the bucket clients.
const BucketProgram = "swampj-bucket"

// BucketProgramEnv names the variable that points at the program, first
// of the places looked in.
const BucketProgramEnv = "SWAMPJ_BUCKET_BIN"

// BucketClientMissingError: a command needed the bucket and the program
// that reaches it was not found. Nothing was changed.
type BucketClientMissingError struct {
	Tried []string // where it was looked for, in order
	Err   error
}

func (e *BucketClientMissingError) Error() string {
	return fmt.Sprintf("%s, the program swampj starts to reach a remote datastore's bucket, was not found (looked at %s: %v); "+
		"install it beside swampj with `go install github.com/swampj/swampj/cmd/...` (or `just build` in a checkout, "+
		"which puts both in ./bin), or point %s at it; nothing was changed",
		BucketProgram, strings.Join(e.Tried, ", "), e.Err, BucketProgramEnv)
}
func (e *BucketClientMissingError) Unwrap() error { return e.Err }

// Code is the error code of the CLI.
func (e *BucketClientMissingError) Code() string { return "bucket_client_missing" }

// Class is ClassFailed: install the program and run again.
func (e *BucketClientMissingError) Class() swampj.Class { return swampj.ClassFailed }

// findBucketProgram is the program to start: BucketProgramEnv when set,
// else the one beside this executable, else the one on $PATH.
func findBucketProgram() (string, error) {
	var tried []string
	if p := os.Getenv(BucketProgramEnv); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			if err == nil {
				err = errors.New("a directory")
			}
			return "", &BucketClientMissingError{Tried: []string{BucketProgramEnv + "=" + p}, Err: err}
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), BucketProgram)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
		tried = append(tried, p)
	}
	p, err := exec.LookPath(BucketProgram)
	if err != nil {
		return "", &BucketClientMissingError{Tried: append(tried, "$PATH"), Err: errors.New("not there")}
	}
	return p, nil
}

// clientEnvNames are the variables the bucket clients read: when a caller
// passes its own lookup, the agent's environment takes these from it.
var clientEnvNames = []string{
	"HOME",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_EC2_METADATA_DISABLED",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
	"STORAGE_EMULATOR_HOST", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCE_METADATA_HOST", "CLOUDSDK_CONFIG",
}

// agentEnv is the agent's environment: this process's, with the clients'
// variables as env has them (nil env: this process's). key tells
// environments apart.
func agentEnv(env func(string) string) (vars []string, key string) {
	vars = os.Environ()
	if env == nil {
		env = os.Getenv
	}
	own := map[string]bool{}
	for _, n := range clientEnvNames {
		own[n] = true
	}
	kept := vars[:0:0]
	for _, kv := range vars {
		if n, _, _ := strings.Cut(kv, "="); !own[n] {
			kept = append(kept, kv)
		}
	}
	var set []string
	for _, n := range clientEnvNames {
		if v := env(n); v != "" {
			set = append(set, n+"="+v)
		}
	}
	sort.Strings(set)
	return append(kept, set...), "\x00" + strings.Join(set, "\x00")
}

var agents = struct {
	sync.Mutex
	m map[string]*agent
}{m: map[string]*agent{}}

// agentFor is the running agent of env's environment, started if need be.
func agentFor(env func(string) string) (*agent, error) {
	vars, key := agentEnv(env)
	agents.Lock()
	defer agents.Unlock()
	if a := agents.m[key]; a != nil && a.alive() {
		return a, nil
	}
	a, err := startAgent(vars)
	if err != nil {
		return nil, err
	}
	agents.m[key] = a
	return a, nil
}

// CloseBucketAgents ends the agents this process started (each exits at
// the end of its stdin) and waits for them. Locks still held are not
// released: release them first.
func CloseBucketAgents() {
	agents.Lock()
	all := agents.m
	agents.m = map[string]*agent{}
	agents.Unlock()
	for _, a := range all {
		a.close()
	}
}

// agent is one running swampj-bucket.
type agent struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer
	done   chan struct{} // closed when its stdout ends

	mu      sync.Mutex // guards the fields below and the writes to stdin
	next    int64
	pending map[int64]chan bucketwire.Response
	dead    error
	clients map[string]int64 // opened datastores by kind and config
}

func startAgent(env []string) (*agent, error) {
	path, err := findBucketProgram()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path)
	cmd.Env = env
	cmd.SysProcAttr = agentSysProcAttr()
	a := &agent{cmd: cmd, stderr: &tailBuffer{max: 4096}, done: make(chan struct{}),
		pending: map[int64]chan bucketwire.Response{}, clients: map[string]int64{}}
	cmd.Stderr = a.stderr
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, &BucketClientMissingError{Tried: []string{path}, Err: err}
	}
	go a.read(stdout)
	return a, nil
}

// read hands each response to its caller until the agent's stdout ends.
func (a *agent) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	for sc.Scan() {
		var r bucketwire.Response
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		a.mu.Lock()
		ch := a.pending[r.ID]
		delete(a.pending, r.ID)
		a.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	werr := a.cmd.Wait()
	a.mu.Lock()
	a.dead = fmt.Errorf("%s exited (%v): %s", BucketProgram, werr, strings.TrimSpace(a.stderr.String()))
	for id, ch := range a.pending {
		close(ch)
		delete(a.pending, id)
	}
	a.mu.Unlock()
	close(a.done)
}

func (a *agent) alive() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.dead == nil
}

func (a *agent) close() {
	_ = a.stdin.Close()
	<-a.done
}

// call sends req and waits for its response. When ctx ends first, the
// agent is told to give the request up, and its answer is still awaited
// (a lock it took meanwhile is released, not left held).
func (a *agent) call(ctx context.Context, req bucketwire.Request) (bucketwire.Response, error) {
	ch := make(chan bucketwire.Response, 1)
	a.mu.Lock()
	if a.dead != nil {
		err := a.dead
		a.mu.Unlock()
		return bucketwire.Response{}, err
	}
	a.next++
	req.ID = a.next
	a.pending[req.ID] = ch
	err := a.send(req)
	a.mu.Unlock()
	if err != nil {
		return bucketwire.Response{}, err
	}
	select {
	case r, ok := <-ch:
		return a.answer(r, ok)
	case <-ctx.Done():
	}
	a.mu.Lock()
	_ = a.send(bucketwire.Request{Op: bucketwire.OpCancel, Target: req.ID})
	a.mu.Unlock()
	r, ok := <-ch
	if ok && r.Err == nil && r.Handle != 0 {
		_, _ = a.call(context.WithoutCancel(ctx), bucketwire.Request{Op: bucketwire.OpUnlock, Handle: r.Handle})
	}
	return bucketwire.Response{}, ctx.Err()
}

// send writes one request line; a.mu is held.
func (a *agent) send(req bucketwire.Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: %w", BucketProgram, err)
	}
	return nil
}

func (a *agent) answer(r bucketwire.Response, ok bool) (bucketwire.Response, error) {
	if !ok {
		a.mu.Lock()
		defer a.mu.Unlock()
		return r, a.dead
	}
	return r, typedError(r.Err)
}

// typedError rebuilds the agent's error as the type ops/remote's callers
// test for: *AccessError, ErrLockBusy, ErrNoCredentials.
func typedError(e *bucketwire.Error) error {
	if e == nil {
		return nil
	}
	switch e.Kind {
	case bucketwire.ErrAccess:
		cause := errors.New(e.Message)
		if rest, ok := strings.CutPrefix(e.Message, bucketwire.NoCredentials+": "); ok && e.Access == AccessNoCredentials {
			cause = fmt.Errorf("%w: %s", ErrNoCredentials, rest)
		}
		return &AccessError{Kind: e.Access, Bucket: e.Bucket, Endpoint: e.Endpoint, Err: cause}
	case bucketwire.ErrBusy:
		return fmt.Errorf("%w: %s", ErrLockBusy, e.Message)
	}
	return errors.New(e.Message)
}

// open is the agent's client of c's datastore, opened on first use.
func (a *agent) open(ctx context.Context, c *Cache) (int64, error) {
	kind, cfg := bucketwire.KindS3, any(c.S3)
	if c.GCS != nil {
		kind, cfg = bucketwire.KindGCS, any(*c.GCS)
	}
	conf, err := json.Marshal(cfg)
	if err != nil {
		return 0, err
	}
	key := kind + "\x00" + string(conf)
	a.mu.Lock()
	id := a.clients[key]
	a.mu.Unlock()
	if id != 0 {
		return id, nil
	}
	r, err := a.call(ctx, bucketwire.Request{Op: bucketwire.OpOpen, Kind: kind, Config: conf, PID: os.Getpid()})
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	a.clients[key] = r.Client
	a.mu.Unlock()
	return r.Client, nil
}

// tailBuffer keeps the last max bytes written to it (the agent's stderr,
// for the message when it dies).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
