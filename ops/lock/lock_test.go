package lock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
)

// The byte-exact example of swamp-format §8 (the last byte is "}").
const infoGolden = `{
  "holder": "alice@build-7",
  "hostname": "build-7",
  "pid": 41872,
  "acquiredAt": "2026-08-01T12:00:00.000Z",
  "ttlMs": 30000,
  "nonce": "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d"
}`

var goldenInfo = Info{
	Holder: "alice@build-7", Hostname: "build-7", Pid: 41872,
	AcquiredAt: time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC), TTLMs: 30000,
	Nonce: "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d",
}

func TestInfoEncodeGolden(t *testing.T) {
	if got := string(goldenInfo.Encode()); got != infoGolden {
		t.Errorf("Encode =\n%q\nwant\n%q", got, infoGolden)
	}
	got, err := DecodeInfo([]byte(infoGolden))
	if err != nil || got != goldenInfo {
		t.Errorf("DecodeInfo = %+v, %v", got, err)
	}
	// A holder with characters JSON.stringify leaves alone, and one it escapes.
	i := goldenInfo
	i.Holder = "<b>&\u2028\t"
	if enc := string(i.Encode()); !strings.Contains(enc, `"holder": "<b>&`+"\u2028"+`\t",`) {
		t.Errorf("escaping: %q", enc)
	}
}

func TestDecodeInfoRejects(t *testing.T) {
	for _, in := range []string{
		"", "   ", "{", `{"holder":"a"}`, "null", "[]",
		`{"pid":1,"acquiredAt":"yesterday","ttlMs":1,"nonce":"n"}`,
		`{"pid":1.5,"acquiredAt":"2026-08-01T12:00:00.000Z","ttlMs":1,"nonce":"n"}`,
		infoGolden[:len(infoGolden)/2],
	} {
		if _, err := DecodeInfo([]byte(in)); !errors.Is(err, ErrUnparseable) {
			t.Errorf("DecodeInfo(%q) = %v, want ErrUnparseable", in, err)
		}
	}
}

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{GlobalPath("/srv/s", ""), "/srv/s/.datastore.lock"},
		{GlobalPath("/srv/s", "infra"), "/srv/s/.locks/infra.lock"},
		{ModelPath("/srv/s", "", "@acme/scanner", "m1"), "/srv/s/data/@acme/scanner/m1/.lock"},
		{ModelPath("/srv/s", "infra", "aws/ec2/vpc", "m1"), "/srv/s/infra/data/aws/ec2/vpc/m1/.lock"},
	} {
		if tc.got != filepath.FromSlash(tc.want) {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestTimeoutFromEnv(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": DefaultTimeout, "250": 250 * time.Millisecond, "0": DefaultTimeout, "-5": DefaultTimeout, "abc": DefaultTimeout,
	} {
		if got := TimeoutFromEnv(func(string) string { return v }); got != want {
			t.Errorf("TimeoutFromEnv(%q) = %v, want %v", v, got, want)
		}
	}
}

// fast are options for tests: short waits, a fixed identity on this host.
func fast(timeout time.Duration) Options {
	return Options{Timeout: timeout, InitialBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		Host: "testhost", User: "tester"}
}

// writeLock puts a lock record at path directly (as another process would).
func writeLock(t *testing.T, path string, i Info) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, i.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readLock(t *testing.T, path string) Info {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, err := DecodeInfo(b)
	if err != nil {
		t.Fatalf("lock %s: %v (%q)", path, err, b)
	}
	return i
}

// deadPid returns the pid of a process that has exited and been reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run true: %v", err)
	}
	pid := cmd.Process.Pid
	if fsx.ProcessExists(pid) {
		t.Skipf("pid %d was reused", pid)
	}
	return pid
}

func TestAcquireRelease(t *testing.T) {
	fsys := fsx.Real()
	base := t.TempDir()
	path := GlobalPath(base, "infra") // .locks/ does not exist yet
	l, err := Acquire(context.Background(), fsys, path, fast(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := readLock(t, path)
	if got != l.Info() || got.Pid != os.Getpid() || got.Holder != "tester@testhost" || got.Hostname != "testhost" ||
		got.TTLMs != 30000 || got.Nonce != l.Nonce() || len(got.Nonce) != 36 {
		t.Errorf("lock content %+v, lock %+v", got, l.Info())
	}
	raw, _ := os.ReadFile(path)
	if raw[len(raw)-1] != '}' {
		t.Errorf("lock ends with %q, want no trailing newline", raw[len(raw)-1])
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("lock dir holds %d entries, want only the lock (no temp file left)", len(ents))
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("lock still there after release: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
}

func TestSecondAcquireTimesOutNamingHolder(t *testing.T) {
	fsys := fsx.Real()
	path := GlobalPath(t.TempDir(), "")
	first, err := Acquire(context.Background(), fsys, path, fast(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()

	start := time.Now()
	_, err = Acquire(context.Background(), fsys, path, fast(300*time.Millisecond))
	elapsed := time.Since(start)
	var te *TimeoutError
	if !errors.Is(err, ErrTimeout) || !errors.As(err, &te) {
		t.Fatalf("second acquire: %v", err)
	}
	// Measured: the 300 ms timeout plus a backoff step (≤ 80 ms). The
	// bound is ten times the timeout, far under DefaultTimeout (60 s).
	if elapsed < 300*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("waited %v for a 300ms timeout", elapsed)
	}
	if te.Holder == nil || te.Holder.Nonce != first.Nonce() || te.Path != path {
		t.Errorf("holder %+v", te.Holder)
	}
	msg := err.Error()
	for _, want := range []string{"tester@testhost", "pid " + strconv.Itoa(os.Getpid()), "testhost", first.Info().AcquiredAt.UTC().Format("2006-01-02T15:04:05"), "retry"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "`swamp ") || strings.Contains(msg, "--") {
		t.Errorf("a library message names a CLI command (the CLI adds it): %q", msg)
	}
	if readLock(t, path).Nonce != first.Nonce() {
		t.Error("the waiting acquirer touched the held lock")
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	fsys := fsx.Real()
	path := GlobalPath(t.TempDir(), "")
	first, err := Acquire(context.Background(), fsys, path, fast(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer first.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, fsys, path, fast(10*time.Second)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v", err)
	}
}

func TestStaleByDeadPid(t *testing.T) {
	fsys := fsx.Real()
	pid := deadPid(t)
	path := GlobalPath(t.TempDir(), "")

	// Same host, pid gone: stale at once, even though the TTL has not run out.
	old := Info{Holder: "x@testhost", Hostname: "testhost", Pid: pid, AcquiredAt: time.Now(), TTLMs: 30000, Nonce: "old"}
	writeLock(t, path, old)
	l, err := Acquire(context.Background(), fsys, path, fast(300*time.Millisecond))
	if err != nil {
		t.Fatalf("dead-pid lock not taken over: %v", err)
	}
	if readLock(t, path).Nonce != l.Nonce() {
		t.Error("lock not ours")
	}
	_ = l.Release()

	// Another host's lock with a pid that happens not to exist here is NOT
	// stale (swamp would delete it, swamp-format §9.20): only its TTL can free it.
	foreign := old
	foreign.Hostname, foreign.Holder = "otherhost", "x@otherhost"
	writeLock(t, path, foreign)
	if _, err := Acquire(context.Background(), fsys, path, fast(150*time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Errorf("foreign lock taken over: %v", err)
	}
	if readLock(t, path).Nonce != "old" {
		t.Error("foreign lock replaced")
	}
}

func TestStaleByTTL(t *testing.T) {
	fsys := fsx.Real()
	path := ModelPath(t.TempDir(), "", "t", "m")
	// A live pid (ours) on a foreign host, last refreshed 31 s ago with a 30 s TTL.
	writeLock(t, path, Info{Holder: "x@far", Hostname: "far", Pid: os.Getpid(),
		AcquiredAt: time.Now().Add(-31 * time.Second), TTLMs: 30000, Nonce: "expired"})
	l, err := Acquire(context.Background(), fsys, path, fast(300*time.Millisecond))
	if err != nil {
		t.Fatalf("expired lock not taken over: %v", err)
	}
	defer l.Release()

	// With a clock that has not reached the expiry it would have waited.
	path2 := ModelPath(t.TempDir(), "", "t", "m")
	writeLock(t, path2, Info{Hostname: "far", Pid: os.Getpid(), AcquiredAt: time.Now(), TTLMs: 30000, Nonce: "fresh"})
	opts := fast(100 * time.Millisecond)
	if _, err := Acquire(context.Background(), fsys, path2, opts); !errors.Is(err, ErrTimeout) {
		t.Errorf("fresh lock: %v", err)
	}
	opts.Now = func() time.Time { return time.Now().Add(31 * time.Second) }
	l2, err := Acquire(context.Background(), fsys, path2, opts)
	if err != nil {
		t.Fatalf("expired by clock: %v", err)
	}
	_ = l2.Release()
}

func TestZeroByteLock(t *testing.T) {
	fsys := fsx.Real()

	// Old (mtime beyond the TTL): a crash remnant, taken over.
	path := GlobalPath(t.TempDir(), "")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	_ = os.Chtimes(path, past, past)
	l, err := Acquire(context.Background(), fsys, path, fast(300*time.Millisecond))
	if err != nil {
		t.Fatalf("old zero-byte lock not taken over: %v", err)
	}
	_ = l.Release()

	// Fresh: maybe swamp between its create and its write; waited for.
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(context.Background(), fsys, path, fast(150*time.Millisecond))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Holder != nil || !strings.Contains(err.Error(), "empty or unreadable") {
		t.Fatalf("fresh zero-byte lock: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("fresh zero-byte lock was touched: %v", err)
	}
	// ... and taken as soon as its writer fills it in and releases it.
	go func() {
		time.Sleep(60 * time.Millisecond)
		_ = os.Remove(path)
	}()
	l, err = Acquire(context.Background(), fsys, path, fast(2*time.Second))
	if err != nil {
		t.Fatalf("after removal: %v", err)
	}
	_ = l.Release()
}

func TestHeartbeat(t *testing.T) {
	fsys := fsx.Real()
	path := GlobalPath(t.TempDir(), "")
	opts := fast(time.Second)
	// A TTL with room for a starved heartbeat goroutine: at load 20 and
	// above on 2 cores, 90 ms (a beat every 30 ms) failed about 1 run in 5.
	opts.TTL = 600 * time.Millisecond // heartbeat every 200 ms
	l, err := Acquire(context.Background(), fsys, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	first := readLock(t, path)
	l.StartHeartbeat(context.Background())
	l.StartHeartbeat(context.Background()) // no-op
	now := first
	for deadline := time.Now().Add(5 * time.Second); !now.AcquiredAt.After(first.AcquiredAt) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		now = readLock(t, path)
	}
	if !now.AcquiredAt.After(first.AcquiredAt) || now.Nonce != first.Nonce || now.TTLMs != 600 || now.Pid != first.Pid {
		t.Errorf("heartbeat: before %+v after %+v", first, now)
	}
	// The heartbeat writes the file, then updates what Info returns: a
	// reader of the file can be a moment ahead of Info.
	for deadline := time.Now().Add(2 * time.Second); l.Info().AcquiredAt.Before(now.AcquiredAt) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if l.Info().AcquiredAt.Before(now.AcquiredAt) {
		t.Errorf("Info() not refreshed")
	}
	select {
	case <-l.Lost():
		t.Fatalf("lost: %v", l.LostErr())
	default:
	}
	// A lock refreshed within its TTL is never stale for another acquirer.
	if _, err := Acquire(context.Background(), fsys, path, fast(time.Second)); !errors.Is(err, ErrTimeout) {
		t.Errorf("heartbeated lock taken: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestHeartbeatDetectsTakeover(t *testing.T) {
	fsys := fsx.Real()
	path := GlobalPath(t.TempDir(), "")
	opts := fast(time.Second)
	opts.TTL = 60 * time.Millisecond
	l, err := Acquire(context.Background(), fsys, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	l.StartHeartbeat(context.Background())
	other := l.Info()
	other.Nonce, other.Pid = "someone-else", 1
	writeLock(t, path, other)
	select {
	case <-l.Lost():
	case <-time.After(2 * time.Second):
		t.Fatal("takeover not detected")
	}
	var nh *NotHolderError
	if !errors.As(l.LostErr(), &nh) || nh.Found == nil || nh.Found.Nonce != "someone-else" {
		t.Errorf("LostErr = %v", l.LostErr())
	}
	if readLock(t, path).Nonce != "someone-else" {
		t.Error("heartbeat overwrote the new holder")
	}
	if err := l.Release(); !errors.Is(err, ErrNotHolder) {
		t.Errorf("release after loss: %v", err)
	}
}

func TestReleaseWrongNonceRefuses(t *testing.T) {
	fsys := fsx.Real()
	path := GlobalPath(t.TempDir(), "")
	l, err := Acquire(context.Background(), fsys, path, fast(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := ReleaseNonce(fsys, path, "not-the-nonce"); !errors.Is(err, ErrNotHolder) {
		t.Errorf("ReleaseNonce(wrong) = %v", err)
	}
	other := l.Info()
	other.Nonce = "replaced"
	writeLock(t, path, other)
	err = l.Release()
	if !errors.Is(err, ErrNotHolder) || !strings.Contains(err.Error(), "replaced") {
		t.Errorf("Release = %v", err)
	}
	if readLock(t, path).Nonce != "replaced" {
		t.Error("someone else's lock was removed")
	}
	if err := ReleaseNonce(fsys, path, "replaced"); err != nil {
		t.Errorf("ReleaseNonce(right) = %v", err)
	}
	if err := ReleaseNonce(fsys, path, "replaced"); !errors.Is(err, ErrNotHolder) {
		t.Errorf("ReleaseNonce(missing) = %v", err)
	}
}

// Every prefix of the acquire's disk operations leaves either no lock or a
// complete one: a crash can never leave an empty lock file (swamp-format §9.25).
func TestAcquireNeverExposesPartialLock(t *testing.T) {
	for k := 0; ; k++ {
		base := t.TempDir()
		path := GlobalPath(base, "")
		f := fsx.NewFault(fsx.Real()).CrashAfter(k)
		_, err := Acquire(context.Background(), f, path, fast(time.Second))
		if b, rerr := os.ReadFile(path); rerr == nil {
			if _, derr := DecodeInfo(b); derr != nil {
				t.Fatalf("crash after op %d left an unparseable lock %q", k, b)
			}
		}
		for _, op := range f.Trace() {
			if op.Path == path && (op.Kind == "create" || op.Kind == "write") {
				t.Fatalf("lock file written in place: %v", op)
			}
		}
		if err == nil {
			if k < 5 {
				t.Errorf("acquire completed in %d ops", k)
			}
			return
		}
		if !fsx.IsCrash(err) {
			t.Fatalf("op %d: %v", k, err)
		}
	}
}

// TestOwnPidLockNotHeldIsStale: a record carrying this process's pid is
// live only while this process holds it; once released — even if removing
// the file failed, as when a write is cut short — the next Acquire takes it
// over instead of waiting on itself.
func TestOwnPidLockNotHeldIsStale(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lock")
	first, err := Acquire(context.Background(), fsx.Real(), path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Held: a second acquisition in this process waits and times out.
	if _, err := Acquire(context.Background(), fsx.Real(), path, Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("a held lock was taken over: %v", err)
	}
	// Given up, file left behind (a crash during Release).
	crashed := fsx.NewFault(fsx.Real()).CrashAfter(0)
	first.fsys = crashed
	if err := first.Release(); err == nil {
		t.Fatal("release through a crashed file system succeeded")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the lock file should still be there: %v", err)
	}
	second, err := Acquire(context.Background(), fsx.Real(), path, Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("a lock this process gave up was not taken over: %v", err)
	}
	if err := second.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestAcquireSurvivesAParentRemovedMidMkdir: a namespace migration may
// remove an ancestor of a lock's directory between two of the mkdirs that
// create it (the race test hit "creating lock directory …: no such file or
// directory" under load). Acquire creates the path again.
func TestAcquireSurvivesAParentRemovedMidMkdir(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "ns", "data", "command", "shell", "m1", ".lock")
	probe := fsx.NewFault(fsx.Real())
	if err := fsx.MkdirAllDurable(probe, filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	failAt, mkdirs := 0, 0 // the second mkdir of the chain: its parent is "gone"
	for i, op := range probe.Trace() {
		if op.Kind == "mkdir" {
			if mkdirs++; mkdirs == 2 {
				failAt = i + 1
				break
			}
		}
	}
	if err := os.RemoveAll(filepath.Join(base, "ns")); err != nil {
		t.Fatal(err)
	}
	fsys := fsx.NewFault(fsx.Real()).FailAt(failAt, &os.PathError{Op: "mkdir", Path: "x", Err: os.ErrNotExist})
	l, err := Acquire(context.Background(), fsys, path, fast(time.Second))
	if err != nil {
		t.Fatalf("Acquire gave up on a parent removed mid-mkdir: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// TestTempDead: a file named like a lock's temp is a lock being taken
// while its writer may still link it, debris once it cannot, and not a
// lock at all when it holds something other than a lock record.
func TestTempDead(t *testing.T) {
	dir := t.TempDir()
	host := hostname()
	now := time.Now()
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	record := func(pid int, h string) string {
		return string(Info{Holder: "u@" + h, Hostname: h, Pid: pid, AcquiredAt: now, TTLMs: 30000, Nonce: "n"}.Encode())
	}
	cases := []struct {
		name           string
		content        string
		age            time.Duration
		lockTemp, dead bool
	}{
		{"a live writer's record", record(sleeper.Process.Pid, host), 0, true, false},
		{"a dead writer's record", record(deadPid(t), host), 0, true, true},
		{"this process's record, not being linked", record(os.Getpid(), host), 0, true, true},
		{"another host's record", record(deadPid(t), "elsewhere."+host), 0, true, false},
		{"a live writer's record, untouched past the TTL", record(sleeper.Process.Pid, host), DefaultTTL + time.Second, true, true},
		{"empty, just created", "", 0, true, false},
		{"empty, past the write window", "", WriteWindow + time.Second, true, true},
		{"data", "some bytes", DefaultTTL + time.Hour, false, false},
	}
	for i, c := range cases {
		p := filepath.Join(dir, fmt.Sprintf(".%032x.tmp", i))
		if !IsTempName(filepath.Base(p)) {
			t.Fatalf("%s is not a temp name", p)
		}
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-c.age), now.Add(-c.age)); err != nil {
			t.Fatal(err)
		}
		lockTemp, dead, err := TempDead(fsx.Real(), p, now)
		if err != nil || lockTemp != c.lockTemp || dead != c.dead {
			t.Errorf("%s: TempDead = lock temp %v, dead %v, %v; want %v, %v", c.name, lockTemp, dead, err, c.lockTemp, c.dead)
		}
	}
	// This process's record while it is being linked: a lock being taken.
	p := filepath.Join(dir, fmt.Sprintf(".%032x.tmp", 99))
	if err := os.WriteFile(p, []byte(record(os.Getpid(), host)), 0o644); err != nil {
		t.Fatal(err)
	}
	creating.Store(filepath.Clean(p), true)
	if lockTemp, dead, err := TempDead(fsx.Real(), p, now); err != nil || !lockTemp || dead {
		t.Errorf("this process's temp being linked: lock temp %v, dead %v, %v; want a live lock temp", lockTemp, dead, err)
	}
	creating.Delete(filepath.Clean(p))
	if lockTemp, dead, err := TempDead(fsx.Real(), filepath.Join(dir, ".gone.tmp"), now); err != nil || !lockTemp || !dead {
		t.Errorf("a temp that is gone: lock temp %v, dead %v, %v; want gone (dead)", lockTemp, dead, err)
	}
	for _, n := range []string{".0123456789abcdef0123456789abcdef.tmp"} {
		if !IsTempName(n) {
			t.Errorf("IsTempName(%q) = false", n)
		}
	}
	for _, n := range []string{".lock", "0123456789abcdef0123456789abcdef.tmp", ".0123456789ABCDEF0123456789abcdef.tmp",
		".0123456789abcdef0123456789abcde.tmp", ".12345678-1234-4123-8123-123456789abc.tmp", ".0123456789abcdef0123456789abcdef.tmpx"} {
		if IsTempName(n) {
			t.Errorf("IsTempName(%q) = true", n)
		}
	}
}
