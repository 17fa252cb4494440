package main

// Helpers of the shared-datastore suite (s3stack_test.go): the real swamp
// with the real @swamp/s3-datastore extension and a real S3 server
// (gofakes3) on 127.0.0.1, from ../shared/realswamp-s3 beside the repo.
// Each test starts its own server on a free loopback port and stops it.

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// s3Stack is the installed stack.
type s3Stack struct {
	shared string // ../shared/realswamp-s3
	swamp  string // its wrapper, bin/swamp-s3
}

// needS3Stack finds ../shared/realswamp-s3 from the repo root (or
// SWAMPJ_REALSWAMP_S3) and the wrapper its setup.sh installed
// (SWAMP_S3_BIN, else $SWAMP_S3_PREFIX/bin/swamp-s3, else
// /opt/realswamp-s3/bin/swamp-s3). Absent: the test skips with a notice.
func needS3Stack(t *testing.T) *s3Stack {
	t.Helper()
	shared := os.Getenv("SWAMPJ_REALSWAMP_S3")
	if shared == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		shared = filepath.Join(root, "..", "shared", "realswamp-s3")
	}
	if _, err := os.Stat(filepath.Join(shared, "s3.sh")); err != nil {
		t.Skipf("shared-datastore suite skipped: %s is absent (it runs where ../shared/realswamp-s3 exists, or with SWAMPJ_REALSWAMP_S3=/path/to/realswamp-s3)", shared)
	}
	bin := os.Getenv("SWAMP_S3_BIN")
	if bin == "" {
		prefix := os.Getenv("SWAMP_S3_PREFIX")
		if prefix == "" {
			prefix = "/opt/realswamp-s3"
		}
		bin = filepath.Join(prefix, "bin", "swamp-s3")
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("shared-datastore suite skipped: %s is not installed; run SWAMP_S3_BIN=$(bash %s/setup.sh)", bin, shared)
		}
	} else if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SWAMP_S3_BIN=%s: %v", bin, err)
	}
	return &s3Stack{shared: shared, swamp: bin}
}

// freeLoopbackPort listens on 127.0.0.1:0, closes, and returns the port.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// s3Server is one gofakes3 of a test.
type s3Server struct {
	dir  string // objects are files under dir/buckets/<bucket>/
	port int
}

const s3Bucket, s3Prefix = "swamp-test", "team"

// startS3 starts gofakes3 on a free loopback port (s3.sh start) and stops
// it when the test ends.
func (s *s3Stack) startS3(t *testing.T) *s3Server {
	t.Helper()
	srv := &s3Server{dir: filepath.Join(t.TempDir(), "s3")}
	var lastErr string
	for try := 0; try < 3; try++ { // a port taken between close and start: another one
		srv.port = freeLoopbackPort(t)
		out, err := exec.Command("bash", filepath.Join(s.shared, "s3.sh"), "start", srv.dir, strconv.Itoa(srv.port)).CombinedOutput()
		if err == nil {
			pid := strings.TrimSpace(string(out))
			t.Cleanup(func() { _ = exec.Command("bash", filepath.Join(s.shared, "s3.sh"), "stop", pid).Run() })
			return srv
		}
		lastErr = string(out)
	}
	t.Fatalf("s3.sh start: %s", lastErr)
	return nil
}

// object is the bucket's copy of cache-relative rel (nil when absent).
func (srv *s3Server) object(rel string) []byte {
	b, err := os.ReadFile(filepath.Join(srv.dir, "buckets", s3Bucket, s3Prefix, filepath.FromSlash(rel)))
	if err != nil {
		return nil
	}
	return b
}

// checkout is one user's working copy: its repo and its HOME (cache).
type checkout struct {
	t    *testing.T
	s    *s3Stack
	srv  *s3Server
	dir  string
	home string
}

func (co *checkout) env() []string {
	return append(os.Environ(), "NO_COLOR=1", "SWAMP_NO_TELEMETRY=1",
		"SWAMP_S3_HOME="+co.home, "HOME="+co.home, "SWAMP_S3_PORT="+strconv.Itoa(co.srv.port),
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
}

func (co *checkout) run(name string, args ...string) result {
	co.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = co.dir, co.env()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		co.t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{code: code, stdout: ansiRE.ReplaceAllString(so.String(), ""), stderr: ansiRE.ReplaceAllString(se.String(), "")}
}

// swamp runs the real swamp (the wrapper) in the checkout.
func (co *checkout) swamp(args ...string) result {
	co.t.Helper()
	return co.run(co.s.swamp, args...)
}

func (co *checkout) swampOK(args ...string) result {
	co.t.Helper()
	r := co.swamp(args...)
	if r.code != 0 {
		co.t.Fatalf("swamp %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, tail(r.stdout, 1500), tail(r.stderr, 1500))
	}
	return r
}

// swampj runs swampj in the checkout, with the checkout's HOME.
func (co *checkout) swampj(args ...string) result {
	co.t.Helper()
	return co.run(binary, args...)
}

// dataGet is swamp's `data get MODEL NAME --json` (ok false: it failed).
func (co *checkout) dataGet(model, name string, extra ...string) (version int, stdout string, ok bool) {
	co.t.Helper()
	r := co.swamp(append([]string{"data", "get", model, name, "--json"}, extra...)...)
	if r.code != 0 {
		return 0, r.stderr + r.stdout, false
	}
	var v struct {
		Version int            `json:"version"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		return 0, r.stdout, false
	}
	out, _ := v.Content["stdout"].(string)
	return v.Version, out, true
}

// cacheDir is the checkout's cache ($HOME/.swamp/repos/{repoId}).
func (co *checkout) cacheDir() string {
	co.t.Helper()
	m, _ := filepath.Glob(filepath.Join(co.home, ".swamp", "repos", "*-*-*-*-*"))
	for _, d := range m {
		if !strings.HasSuffix(d, ".swampj-quarantine") {
			return d
		}
	}
	co.t.Fatalf("no cache under %s", co.home)
	return ""
}

// itemRel is the cache-relative directory of model's data item name.
func (co *checkout) itemRel(model, name string) string {
	co.t.Helper()
	id := yamlID(co.t, filepath.Join(co.dir, "models", "command", "shell", model+".yaml"))
	return "data/command/shell/" + id + "/" + name
}

// s3Team is checkout A (it made the repo and wrote m1 `versions` times)
// and checkout B (a copy without .swamp/, as git clone gives, its own
// HOME, synced once), on one bucket.
func newS3Team(t *testing.T, versions int) (a, b *checkout) {
	t.Helper()
	a = newS3Origin(t, versions)
	b = a.clone(t, filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "homeB"))
	b.swampOK("datastore", "sync")
	return a, b
}

// clone is a second checkout of co's repo at dir with its own HOME, not
// synced yet: a copy without .swamp/, as git clone gives.
func (co *checkout) clone(t *testing.T, dir, home string) *checkout {
	t.Helper()
	b := &checkout{t: t, s: co.s, srv: co.srv, dir: dir, home: home}
	if out, err := exec.Command("cp", "-r", co.dir, b.dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(b.dir, ".swamp")); err != nil {
		t.Fatal(err)
	}
	return b
}

// newS3Origin starts a server and makes checkout A: swamp init, the
// bucket, model m1 written `versions` times.
func newS3Origin(t *testing.T, versions int) (a *checkout) {
	t.Helper()
	s := needS3Stack(t)
	srv := s.startS3(t)
	root := t.TempDir()
	a = &checkout{t: t, s: s, srv: srv, dir: filepath.Join(root, "a"), home: filepath.Join(root, "homeA")}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	a.swampOK("init")
	if out, err := exec.Command("bash", filepath.Join(s.shared, "s3.sh"), "init-repo", a.dir, s3Bucket, s3Prefix, strconv.Itoa(srv.port)).CombinedOutput(); err != nil {
		t.Fatalf("s3.sh init-repo: %v %s", err, out)
	}
	a.swampOK("model", "create", "command/shell", "m1")
	for i := 1; i <= versions; i++ {
		a.swampOK("model", "method", "run", "m1", "execute", "--input", "run=echo v"+strconv.Itoa(i))
	}
	return a
}

// truncate cuts a cache file to zero bytes, what a killed pull leaves.
func truncate(t *testing.T, path string) {
	t.Helper()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
}
