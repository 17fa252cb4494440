package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote"
)

// gofakes3 starts the shared stack's S3 server (../shared/realswamp-s3,
// s3.sh) on a free loopback port with bucket swamp-test, or skips.
func gofakes3(t *testing.T) (dir string, port int) {
	t.Helper()
	shared := os.Getenv("SWAMPJ_REALSWAMP_S3")
	if shared == "" {
		root, _ := filepath.Abs("../..")
		shared = filepath.Join(root, "..", "shared", "realswamp-s3")
	}
	s3sh := filepath.Join(shared, "s3.sh")
	if _, err := os.Stat(s3sh); err != nil {
		t.Skipf("bucket-lock test skipped: %s is absent (SWAMPJ_REALSWAMP_S3=/path/to/realswamp-s3)", shared)
	}
	prefix := os.Getenv("SWAMP_S3_PREFIX")
	if prefix == "" {
		prefix = "/opt/realswamp-s3"
	}
	if _, err := os.Stat(filepath.Join(prefix, "bin", "gofakes3")); err != nil {
		t.Skipf("bucket-lock test skipped: gofakes3 is not installed; run bash %s/setup.sh", shared)
	}
	dir = t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	out, err := exec.Command("bash", s3sh, "start", dir, strconv.Itoa(port)).CombinedOutput()
	if err != nil {
		t.Fatalf("s3.sh start: %v %s", err, out)
	}
	pid := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("bash", s3sh, "stop", pid).Run() })
	req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:"+strconv.Itoa(port)+"/swamp-test", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return dir, port
}

// staticCredentials is an environment with only an access key and its secret.
func staticCredentials(id, secret string) func(string) string {
	return func(k string) string {
		switch k {
		case "AWS_ACCESS_KEY_ID":
			return id
		case "AWS_SECRET_ACCESS_KEY":
			return secret
		case "AWS_EC2_METADATA_DISABLED":
			return "true"
		}
		return ""
	}
}

func TestBucketLockProtocol(t *testing.T) {
	dir, port := gofakes3(t)
	ctx := context.Background()
	c := &remote.Cache{S3: remote.S3Config{Bucket: "swamp-test", Prefix: "team", Region: "us-east-1",
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port), ForcePathStyle: true}}
	lk := remote.BucketLocker{Env: staticCredentials("test", "test")}
	obj := filepath.Join(dir, "buckets", "swamp-test", "team", ".datastore.lock")

	release, err := lk.Lock(ctx, c, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(obj)
	var li remote.LockInfo
	if err != nil || json.Unmarshal(b, &li) != nil || li.Nonce == "" || li.TTLMs != 30000 || li.PID != os.Getpid() {
		t.Fatalf("the lock object: %v %s", err, b)
	}
	// Held: a second taker waits its timeout and gives up.
	t0 := time.Now()
	if _, err := lk.Lock(ctx, c, 1500*time.Millisecond); !errors.Is(err, remote.ErrLockBusy) || time.Since(t0) < 1500*time.Millisecond {
		t.Fatalf("second lock: %v after %s", err, time.Since(t0))
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(obj); !os.IsNotExist(err) {
		t.Fatalf("release left the lock object: %v", err)
	}
	// A lock whose holder died (older than its TTL) is taken over, as swamp does.
	dead := `{"holder":"ghost@elsewhere","hostname":"elsewhere","pid":1,"acquiredAt":"2020-01-01T00:00:00.000Z","ttlMs":1,"nonce":"dead"}`
	req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:"+strconv.Itoa(port)+"/swamp-test/team/.datastore.lock", strings.NewReader(dead))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	time.Sleep(1100 * time.Millisecond) // Last-Modified has a one-second grain
	release, err = lk.Lock(ctx, c, 5*time.Second)
	if err != nil {
		t.Fatalf("taking over a stale lock: %v", err)
	}
	if b, _ := os.ReadFile(obj); strings.Contains(string(b), `"dead"`) {
		t.Fatalf("still the dead holder's: %s", b)
	}
	// Taken over while held: release leaves the successor's lock alone.
	req, _ = http.NewRequest(http.MethodPut, "http://127.0.0.1:"+strconv.Itoa(port)+"/swamp-test/team/.datastore.lock",
		strings.NewReader(`{"holder":"next","pid":2,"acquiredAt":"2026-01-01T00:00:00.000Z","ttlMs":30000,"nonce":"next"}`))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if err := release(); err == nil || !strings.Contains(err.Error(), "taken over") {
		t.Fatalf("release of a taken-over lock: %v", err)
	}
	if b, _ := os.ReadFile(obj); !strings.Contains(string(b), `"next"`) {
		t.Fatalf("the successor's lock is gone: %s", b)
	}
	// No credentials anywhere the SDK looks: refused before any request.
	t.Setenv("HOME", t.TempDir())
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true") // no instance role to ask here
	var ae *remote.AccessError
	if _, err := (remote.BucketLocker{}).Lock(ctx, c, time.Second); !errors.Is(err, remote.ErrNoCredentials) ||
		!errors.As(err, &ae) || ae.Code() != remote.AccessNoCredentials {
		t.Fatalf("no credentials: %v", err)
	}
}

// Credentials the endpoint refuses are their own error, not a lock
// someone holds. gofakes3 checks no signature, so an HTTP server that
// answers every request as S3 does for an unknown access key stands in.
func TestBucketLockCredentialsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message>` +
			`<AWSAccessKeyId>nobody</AWSAccessKeyId><RequestId>1</RequestId><HostId>1</HostId></Error>`))
	}))
	defer srv.Close()
	c := &remote.Cache{S3: remote.S3Config{Bucket: "swamp-test", Prefix: "team", Region: "us-east-1", Endpoint: srv.URL, ForcePathStyle: true}}
	lk := remote.BucketLocker{Env: staticCredentials("nobody", "wrong")}
	_, err := lk.Lock(context.Background(), c, 5*time.Second)
	var ae *remote.AccessError
	if !errors.As(err, &ae) || ae.Code() != remote.AccessCredentials || errors.Is(err, remote.ErrLockBusy) {
		t.Fatalf("refused credentials: %v", err)
	}
	if msg := err.Error(); strings.Contains(strings.ToLower(msg), "lock") || strings.Contains(msg, "<?xml") || !strings.Contains(msg, "InvalidAccessKeyId") {
		t.Errorf("message: %s", msg)
	}
}
