package remote_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/remote"
	"github.com/swampj/swampj/ops/remote/buckettest"
)

// gcsCacheAt is a GCS datastore on the fake at url, prefix team.
func gcsCacheAt(url string) *remote.Cache {
	return &remote.Cache{Type: remote.GCSType, GCS: &remote.GCSConfig{Bucket: "swamp-test", Prefix: "team", APIEndpoint: url}}
}

// The end of the agent's stdin is the end of swampj: the agent exits and
// leaves the locks it holds in the bucket, as a killed holder does.
func TestAgentEndOfInputLeavesTheLock(t *testing.T) {
	f := buckettest.NewFakeGCS(t, "swamp-test")
	release, err := remote.RunLock(context.Background(), gcsCacheAt(f.URL()), noEnv, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	held := f.Object("team/" + remote.RunLockKey)
	remote.CloseBucketAgents()
	if got := f.Object("team/" + remote.RunLockKey); got == nil || got.Gen != held.Gen {
		t.Fatalf("the lock was released or changed when the agent's input ended: %+v, was %+v", got, held)
	}
	if err := release(); err == nil {
		t.Error("a release through an agent that is gone succeeded")
	}
}

// A swampj killed while it holds a lock leaves it to go stale: its agent
// dies with it (Pdeathsig, else the end of its stdin) and renews nothing.
func TestKilledSwampjLeavesItsLockToGoStale(t *testing.T) {
	if url := os.Getenv("SWAMPJ_TEST_HOLD_LOCK_AT"); url != "" {
		holdLockForever(url)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip("waits for a heartbeat (LockTTL/3)")
	}
	f := buckettest.NewFakeGCS(t, "swamp-test")
	holder := exec.Command(os.Args[0], "-test.run=^TestKilledSwampjLeavesItsLockToGoStale$")
	holder.Env = append(os.Environ(), "SWAMPJ_TEST_HOLD_LOCK_AT="+f.URL())
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "locked") {
		t.Fatalf("the holder did not take the lock: %q %v", line, err)
	}
	agentPID := childOf(t, holder.Process.Pid)
	held := f.Object("team/" + remote.RunLockKey)
	if held == nil || lockHolder(t, held).PID != holder.Process.Pid {
		t.Fatalf("no lock of the holder's pid %d: %+v", holder.Process.Pid, held)
	}
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", agentPID)); errors.Is(err, os.ErrNotExist) || zombie(agentPID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent (pid %d) outlived its killed parent by 5 s", agentPID)
		}
	}
	time.Sleep(remote.LockTTL/3 + 2*time.Second)
	if got := f.Object("team/" + remote.RunLockKey); got == nil || got.Gen != held.Gen || !got.Updated.Equal(held.Updated) {
		t.Fatalf("the dead holder's lock was released or renewed: %+v, was %+v", got, held)
	}
}

// holdLockForever is the killed swampj: it takes the run lock, says so, and
// waits to be killed.
func holdLockForever(url string) {
	if _, err := remote.RunLock(context.Background(), gcsCacheAt(url), noEnv, 5*time.Second); err != nil {
		fmt.Println("failed:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	select {}
}

// childOf is the pid of the one swampj-bucket whose parent is pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "("+remote.BucketProgram) {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(strings.Fields(s)[0])
			return child
		}
	}
	t.Fatalf("no %s child of pid %d", remote.BucketProgram, pid)
	return 0
}

// zombie: pid has exited and waits for its (new) parent to reap it.
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(s[i+1:]), "Z")
}

// Without the program, the bucket's callers get its own typed error, which
// says where it was looked for and how to install it.
func TestBucketProgramMissingIsTyped(t *testing.T) {
	remote.CloseBucketAgents()
	t.Cleanup(remote.CloseBucketAgents)
	t.Setenv(remote.BucketProgramEnv, filepath.Join(t.TempDir(), "no-such-program"))
	_, err := remote.RunLock(context.Background(), gcsCacheAt("http://127.0.0.1:1"), noEnv, time.Second)
	var me *remote.BucketClientMissingError
	if !errors.As(err, &me) || me.Code() != "bucket_client_missing" ||
		!strings.Contains(err.Error(), "no-such-program") || !strings.Contains(err.Error(), "go install github.com/swampj/swampj/cmd/...") {
		t.Fatalf("RunLock without the program: %v", err)
	}
	_, err = remote.SnapshotBucket(context.Background(), gcsCacheAt("http://127.0.0.1:1"), remote.Options{Env: noEnv})
	if !errors.As(err, &me) {
		t.Fatalf("SnapshotBucket without the program: %v", err)
	}
}
