package main

// A loss made on purpose while a wrapped command runs: another process
// deletes a version the checkout holds, and `swampj run` names it.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote"
)

// pausingSwamp is a swamp wrapper (its name starts with "swamp", so swampj
// guards it) that, for a model command, touches mark and waits for goOn
// before running the real swamp; other commands (the pull before) run at
// once.
func pausingSwamp(t *testing.T, real string) (bin, mark, goOn string) {
	dir := t.TempDir()
	bin, mark, goOn = filepath.Join(dir, "swamp-pausing"), filepath.Join(dir, "started"), filepath.Join(dir, "go-on")
	script := "#!/bin/sh\nif [ \"$1\" = model ]; then touch " + mark + "; while [ ! -e " + goOn + " ]; do sleep 0.1; done; fi\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, mark, goOn
}

// namesLoss runs a wrapped write of m1 by co through the pausing swamp,
// deletes the bucket's version 1 of m1 while it waits, and asserts the
// loss is named.
func namesLoss(t *testing.T, co teamCheckout, del func(rel string)) {
	bin, mark, goOn := pausingSwamp(t, co.swampPath())
	rel := co.itemRel("m1", "result") + "/1/raw"
	if _, err := os.Stat(filepath.Join(co.cacheDir(), filepath.FromSlash(rel))); err != nil {
		t.Fatalf("the checkout holds no version 1 to lose: %v", err)
	}
	go func() {
		deadline := time.Now().Add(3 * time.Minute)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(mark); err == nil {
				del(rel)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = os.WriteFile(goOn, nil, 0o644)
	}()
	r := co.swampj("--json", "run", "--", bin, "model", "method", "run", "m1", "execute", "--input", "run=echo after")
	if r.code != exitManual {
		t.Fatalf("swampj run: exit %d, want %d\n%s", r.code, exitManual, tail(r.stderr, 3000))
	}
	var doc struct {
		Code     string `json:"code"`
		ExitCode int    `json:"exitCode"`
		Error    string `json:"error"`
		Lost     []struct{ Path, Key, Kind string }
	}
	line := r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:]
	if err := json.Unmarshal([]byte(line), &doc); err != nil {
		t.Fatalf("the last stderr line is no JSON error document: %v\n%s", err, tail(r.stderr, 2000))
	}
	if doc.Code != "bucket_versions_lost" || doc.ExitCode != exitManual || len(doc.Lost) != 1 ||
		doc.Lost[0].Path != rel || doc.Lost[0].Kind != "deleted" || doc.Lost[0].Key != "team/"+rel {
		t.Fatalf("error document: %+v", doc)
	}
	if !strings.Contains(doc.Error, "object versioning") {
		t.Errorf("the message does not say how to get it back: %s", doc.Error)
	}
}

func TestS3RunNamesLostVersion(t *testing.T) {
	a, _ := newS3Team(t, 1)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	namesLoss(t, a, func(rel string) {
		req, _ := http.NewRequest(http.MethodDelete, "http://127.0.0.1:"+strconv.Itoa(a.srv.port)+"/"+s3Bucket+"/"+s3Prefix+"/"+rel, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Errorf("deleting %s: %v %v", rel, err, resp)
			return
		}
		resp.Body.Close()
		if a.srv.object(rel) != nil {
			t.Errorf("%s is still in the bucket", rel)
		}
	})
}

func TestGCSRunNamesLostVersion(t *testing.T) {
	a, _ := newGCSTeam(t, 1)
	namesLoss(t, a, func(rel string) {
		u := "http://127.0.0.1:" + strconv.Itoa(a.srv.port) + "/storage/v1/b/" + gcsBucket + "/o/" + url.PathEscape(gcsPrefix+"/"+rel)
		req, _ := http.NewRequest(http.MethodDelete, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode/100 != 2 {
			t.Errorf("deleting %s: %v %v", rel, err, resp)
			return
		}
		resp.Body.Close()
	})
}

// runLockHeldByAnother is a two-checkout S3 team in which checkout b holds
// swampj's run lock: checkout a and b's release.
func runLockHeldByAnother(t *testing.T) (*checkout, func() error) {
	t.Helper()
	a, b := newS3Team(t, 1)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	c, err := remote.Discover(b.dir, remote.Options{Env: envLookup(b.env())})
	if err != nil {
		t.Fatal(err)
	}
	release, err := remote.RunLock(context.Background(), c, nil, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return a, release
}

// While another checkout's wrapped command holds swampj's run lock, a
// wrapped command waits up to --run-lock-timeout, then is not run: exit
// 75, lock_timeout, and the bucket gains nothing.
func TestS3RunWaitsForRunLock(t *testing.T) {
	a, release := runLockHeldByAnother(t)
	before := bucketData(t, a.srv)
	r := a.swampj("--json", "run", "--run-lock-timeout", "3s", "--", a.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo blocked")
	if r.code != exitLockTimeout || !strings.Contains(r.stderr, `"code":"lock_timeout"`) || !strings.Contains(r.stderr, "was not run") {
		t.Fatalf("swampj run under another's run lock: exit %d\n%s", r.code, tail(r.stderr, 2000))
	}
	if after := bucketData(t, a.srv); len(after) != len(before) {
		t.Fatalf("the bucket changed while the command was refused: %d objects, was %d", len(after), len(before))
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if r := a.swampj("run", "--run-lock-timeout", "3s", "--", a.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo free"); r.code != 0 {
		t.Fatalf("swampj run once the run lock is free: exit %d\n%s", r.code, tail(r.stderr, 2000))
	}
}

// TestS3RunInterruptedWhileWaitingForRunLock: Ctrl-C while another
// checkout's wrapped command holds the run lock stops swampj with 130, and
// the command is not run without the guard.
func TestS3RunInterruptedWhileWaitingForRunLock(t *testing.T) {
	a, release := runLockHeldByAnother(t)
	defer func() { _ = release() }()
	before := bucketData(t, a.srv)
	cmd := exec.Command(binary, "run", "--run-lock-timeout", "2m", "--", a.s.swamp, "model", "method", "run", "m1", "execute", "--input", "run=echo interrupted")
	cmd.Dir, cmd.Env = a.dir, a.env()
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // waiting for the run lock by now
	_ = cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != exitInterrupted || !strings.Contains(se.String(), "was not run") || strings.Contains(se.String(), "runs without it") {
		t.Fatalf("Ctrl-C while waiting for the run lock: exit %d\n%s", code, tail(se.String(), 2000))
	}
	if after := bucketData(t, a.srv); len(after) != len(before) {
		t.Fatalf("the bucket changed after an interrupted wait: %d objects, was %d", len(after), len(before))
	}
}
