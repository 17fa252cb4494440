package lock

// Fixture tests for the lock rules of newer swamp (swamp-format §13.2–13.5):
// each plants real lock files, held where it matters by a real
// live process (a sleeping child), and checks what swampj makes of them.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/jsfmt"
)

// liveProcess starts a process that lives until the test ends and returns
// its pid: a holder swampj must treat as alive.
func liveProcess(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

func thisHost(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil || h == "" {
		t.Skip("no hostname")
	}
	return h
}

// heldBy is a fresh lock record of pid on host.
func heldBy(pid int, host string) Info {
	return Info{Holder: "swamp@" + host, Hostname: host, Pid: pid, AcquiredAt: stamp(time.Now()), TTLMs: 30000, Nonce: jsfmt.RandomUUID()}
}

// plantRaw writes data at path and backdates it by age.
func plantRaw(t *testing.T, path string, data []byte, age time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// A zero-byte lock younger than the TTL is a writer at work under newer
// swamp's rule (swamp-format §13.3), not the 5 s window the doctor used: 10 s old, it is
// in flight; 31 s old, dead.
func TestEmptyLockInFlightWithinTTL(t *testing.T) {
	path := ModelPath(t.TempDir(), "", "command/shell", "m1")
	plantRaw(t, path, nil, 10*time.Second)
	j, missing, err := JudgeWithin(nil, path, time.Now(), InFlightWindow)
	if err != nil || missing {
		t.Fatal(missing, err)
	}
	if j.Dead || !j.InFlight || !strings.Contains(j.Why, "zero bytes") {
		t.Errorf("10 s old empty lock: %+v, want in flight", j)
	}
	if ok, detail, err := StillDeadWithin(nil, path, nil, time.Now(), InFlightWindow); ok || err != nil {
		t.Errorf("StillDeadWithin = %v %q %v, want not dead", ok, detail, err)
	}
	// Acquire agrees: it waits, and leaves the file alone.
	_, err = Acquire(context.Background(), nil, path, here(150*time.Millisecond))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Acquire over a 10 s old empty lock: %v, want a timeout", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the in-flight lock was touched: %v", err)
	}

	plantRaw(t, path, nil, 31*time.Second)
	j, _, _ = JudgeWithin(nil, path, time.Now(), InFlightWindow)
	if !j.Dead || j.InFlight {
		t.Errorf("31 s old empty lock: %+v, want dead", j)
	}
	l, err := Acquire(context.Background(), nil, path, here(time.Second))
	if err != nil {
		t.Fatalf("a dead empty lock is taken over: %v", err)
	}
	_ = l.Release()
}

// deniedFS is the real disk, except that reading one file fails with
// EACCES, as a mode-000 lock does for a non-root user (the tests may run as
// root, whom the kernel never denies).
type deniedFS struct {
	fsx.FS
	path string
}

func (d deniedFS) ReadFile(name string) ([]byte, error) {
	if filepath.Clean(name) == d.path {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return d.FS.ReadFile(name)
}

// An unreadable lock is judged as an empty one (swamp-format §13.3): in flight while
// younger than the TTL, dead after — never an error that stops the doctor
// or an acquirer.
func TestUnreadableLockJudgedLikeAnEmptyOne(t *testing.T) {
	path := ModelPath(t.TempDir(), "", "command/shell", "m1")
	var fsys fsx.FS = deniedFS{FS: fsx.Real(), path: path}
	plantRaw(t, path, heldBy(1, "elsewhere").Encode(), 10*time.Second)
	if os.Geteuid() != 0 {
		_ = os.Chmod(path, 0)
		t.Cleanup(func() { _ = os.Chmod(path, 0o644) })
		fsys = fsx.Real()
	}
	j, missing, err := JudgeWithin(fsys, path, time.Now(), InFlightWindow)
	if err != nil || missing {
		t.Fatalf("JudgeWithin: %v %v", missing, err)
	}
	if !j.InFlight || j.Dead || !errors.Is(j.Unreadable, syscall.EACCES) || !strings.Contains(j.Why, "cannot be read") {
		t.Errorf("fresh unreadable lock: %+v", j)
	}
	_, err = Acquire(context.Background(), fsys, path, here(150*time.Millisecond))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Holder != nil {
		t.Fatalf("Acquire over a fresh unreadable lock: %v, want a timeout without holder", err)
	}
	old := time.Now().Add(-time.Minute)
	_ = os.Chtimes(path, old, old)
	if j, _, _ := JudgeWithin(fsys, path, time.Now(), InFlightWindow); !j.Dead {
		t.Errorf("old unreadable lock: %+v, want dead", j)
	}
	l, err := Acquire(context.Background(), fsys, path, here(time.Second))
	if err != nil {
		t.Fatalf("Acquire over an old unreadable lock: %v", err)
	}
	_ = l.Release()
}

// Newer swamp's optional skipping list is part of a live lock record
// (swamp-format §13.4): parsed, judged alive, waited on.
func TestSkippingFieldAccepted(t *testing.T) {
	host := thisHost(t)
	pid := liveProcess(t)
	base := t.TempDir()
	path := ModelPath(base, "", "command/shell", "m1")
	i := heldBy(pid, host)
	rec := strings.TrimSuffix(string(i.Encode()), "\n}") + ",\n  \"skipping\": [\n    \"run-1\",\n    \"0f8e2b1a-step\"\n  ]\n}"
	plantRaw(t, path, []byte(rec), 0)
	got, err := DecodeInfo([]byte(rec))
	if err != nil || got != i {
		t.Fatalf("DecodeInfo with skipping: %+v %v", got, err)
	}
	if j, _, err := JudgeWithin(nil, path, time.Now(), InFlightWindow); err != nil || j.Dead || j.InFlight || j.Info == nil {
		t.Errorf("judgement %+v %v, want a live holder", j, err)
	}
	live, err := LiveModelLocks(nil, base, "", time.Now(), 0)
	if err != nil || len(live) != 1 || live[0].Info.Nonce != i.Nonce {
		t.Errorf("LiveModelLocks = %+v %v", live, err)
	}
	if _, err := Acquire(context.Background(), nil, path, here(100*time.Millisecond)); !errors.Is(err, ErrTimeout) {
		t.Errorf("Acquire = %v, want a timeout on the live holder", err)
	}
}

// rekey replaces the record at path with the same holder under a new
// nonce, as newer swamp does during a hold: a .{uuid}.tmp beside the lock,
// renamed over it. The temp is left, as a crash between the two would.
func rekey(t *testing.T, path string, i Info) (Info, string) {
	t.Helper()
	i.Nonce = jsfmt.RandomUUID()
	tmp := filepath.Join(filepath.Dir(path), "."+jsfmt.RandomUUID()+".tmp")
	if err := os.WriteFile(tmp, i.Encode(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(tmp, path+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	return i, tmp
}

// A nonce that changes during a hold (swamp-format §13.4) is the same live holder: never
// dead, never damage; a move planned on the old bytes is refused as
// "changed"; the temp beside it is not a lock file; an acquirer keeps
// waiting and never removes it.
func TestRekeyedLockIsNotDamage(t *testing.T) {
	host := thisHost(t)
	pid := liveProcess(t)
	base := t.TempDir()
	path := ModelPath(base, "", "command/shell", "m1")
	first := heldBy(pid, host)
	plantRaw(t, path, first.Encode(), 0)
	j1, _, _ := JudgeWithin(nil, path, time.Now(), InFlightWindow)

	done := make(chan error, 1)
	go func() {
		_, err := Acquire(context.Background(), nil, path, here(600*time.Millisecond))
		done <- err
	}()
	time.Sleep(150 * time.Millisecond)
	second, tmp := rekey(t, path, first)

	j2, _, err := JudgeWithin(nil, path, time.Now(), InFlightWindow)
	if err != nil || j2.Dead || j2.InFlight || j2.Info == nil || j2.Info.Nonce != second.Nonce {
		t.Errorf("re-keyed lock: %+v %v, want the live holder under its new nonce", j2, err)
	}
	if ok, detail, err := StillDeadWithin(nil, path, j1.Data, time.Now(), InFlightWindow); ok || err != nil || !strings.Contains(detail, "changed") {
		t.Errorf("StillDead on the old bytes = %v %q %v", ok, detail, err)
	}
	found, err := FindLockFiles(nil, base, "")
	if err != nil || len(found) != 1 || found[0].Path != path {
		t.Errorf("FindLockFiles = %+v %v, want only the lock (not %s)", found, err, filepath.Base(tmp))
	}
	if err := <-done; !errors.Is(err, ErrTimeout) {
		t.Errorf("the waiting acquirer: %v, want a timeout", err)
	}
	if got := readLock(t, path); got != second {
		t.Errorf("the re-keyed lock was touched: %+v", got)
	}
}

// swampj's own lock files: the record names this host and a nonce of its
// own, is written whole in one write to a temp file, fsynced, and only then
// given the lock's name (a link that never replaces).
func TestOwnLockWrittenWholeAndDurableBeforeVisible(t *testing.T) {
	path := ModelPath(t.TempDir(), "", "command/shell", "m1")
	nonces := map[string]bool{}
	for round := 0; round < 2; round++ {
		f := fsx.NewFault(nil)
		l, err := Acquire(context.Background(), f, path, Options{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		got := readLock(t, path)
		if got.Hostname == "" || got.Hostname != strings.SplitN(got.Holder, "@", 2)[1] || len(got.Nonce) != 36 || nonces[got.Nonce] {
			t.Errorf("record %+v: want a hostname and a fresh nonce", got)
		}
		nonces[got.Nonce] = true
		var tmp string
		writes, synced, linked := 0, false, false
		for _, op := range f.Trace() {
			switch {
			case op.Kind == "create" && op.Path != path:
				tmp = op.Path
			case op.Kind == "write" && op.Path == tmp:
				writes++
			case op.Kind == "sync" && op.Path == tmp:
				synced = true
			case op.Kind == "link" && op.To == path:
				linked = true
				if !synced || writes != 1 {
					t.Errorf("linked after %d writes, synced %v: %v", writes, synced, f.Trace())
				}
			case op.Path == path && op.Kind != "remove":
				t.Errorf("lock file touched in place: %v", op)
			}
		}
		if !linked || !strings.HasSuffix(tmp, ".tmp") || !strings.HasPrefix(filepath.Base(tmp), ".") {
			t.Errorf("no link from a hidden .tmp: %v", f.Trace())
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGlobalPaths(t *testing.T) {
	if got := GlobalPaths("/s", ""); len(got) != 1 || got[0] != filepath.FromSlash("/s/.datastore.lock") {
		t.Errorf("solo: %v", got)
	}
	got := GlobalPaths("/s", "ns1")
	if len(got) != 2 || got[0] != filepath.FromSlash("/s/.locks/ns1.lock") || got[1] != filepath.FromSlash("/s/ns1/.datastore.lock") {
		t.Errorf("namespaced: %v", got)
	}
	if NewerGlobalPath("/s", "") != GlobalPath("/s", "") {
		t.Error("solo: both versions take one path")
	}
}

// Both global locks of a namespace, taken in order and released; either
// one held by another live process makes AcquireGlobal wait and time out
// with the busy error, leaving nothing of its own behind; once the holder
// is gone both are taken.
func TestAcquireGlobalBothLocks(t *testing.T) {
	host := thisHost(t)
	base := t.TempDir()
	paths := GlobalPaths(base, "ns1")

	locks, err := AcquireGlobal(context.Background(), nil, base, "ns1", Options{Timeout: time.Second})
	if err != nil || len(locks) != 2 {
		t.Fatalf("AcquireGlobal: %v %v", locks, err)
	}
	for i, l := range locks {
		if l.Path() != paths[i] || readLock(t, paths[i]).Nonce != l.Nonce() {
			t.Errorf("lock %d: %s", i, l.Path())
		}
	}
	if free, err := GlobalFree(nil, base, "ns1", 0); err != nil || free {
		t.Errorf("GlobalFree while held by this process = %v %v", free, err)
	}
	found, _ := FindLockFiles(nil, base, "ns1")
	if len(found) != 2 || found[0].Scope != "global" || found[1].Scope != "global" {
		t.Errorf("FindLockFiles = %+v, want both global locks", found)
	}
	ReleaseAll(locks, func(s string) { t.Error(s) })
	for _, p := range paths {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after release: %v", p, err)
		}
	}

	for i, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			holder := exec.Command("sleep", "300")
			if err := holder.Start(); err != nil {
				t.Skip(err)
			}
			defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
			foreign := heldBy(holder.Process.Pid, host)
			writeLock(t, p, foreign)
			if free, _ := GlobalFree(nil, base, "ns1", 0); free {
				t.Error("GlobalFree with one held")
			}
			start := time.Now()
			_, err := AcquireGlobal(context.Background(), nil, base, "ns1", here(300*time.Millisecond))
			var te *TimeoutError
			if !errors.As(err, &te) || !errors.Is(err, swampj.ErrBusy) || te.Path != p || te.Holder == nil || te.Holder.Nonce != foreign.Nonce {
				t.Fatalf("AcquireGlobal with %s held: %v", p, err)
			}
			if took := time.Since(start); took < 300*time.Millisecond || took > 3*time.Second {
				t.Errorf("waited %v for a 300 ms timeout", took)
			}
			if err := WaitGlobalFree(context.Background(), nil, base, "ns1", 200*time.Millisecond, 0); !errors.Is(err, ErrTimeout) {
				t.Errorf("WaitGlobalFree = %v", err)
			}
			other := paths[1-i]
			if _, err := os.Stat(other); !os.IsNotExist(err) {
				t.Errorf("%s left behind by the refused acquisition: %v", other, err)
			}
			if readLock(t, p) != foreign {
				t.Error("the foreign lock was touched")
			}
			// The holder exits: its lock is stale by its dead pid.
			_ = holder.Process.Kill()
			_ = holder.Wait()
			locks, err := AcquireGlobal(context.Background(), nil, base, "ns1", here(2*time.Second))
			if err != nil {
				t.Fatalf("after the holder died: %v", err)
			}
			ReleaseAll(locks, nil)
		})
	}
}

func TestAncestryRelation(t *testing.T) {
	const self, host = 500, "h1"
	rec := func(pid int, hostname, nonce string) Info {
		return Info{Pid: pid, Hostname: hostname, Nonce: nonce}
	}
	for _, c := range []struct {
		name                  string
		holder, chain, tokens string
		lock                  Info
		want                  Relation
	}{
		{"nothing inherited", "", "", "", rec(100, host, "n1"), Other},
		{"06b6147: holder pid alone", "100", "", "", rec(100, host, "n1"), Ancestor},
		{"holder pid, another host", "100", "", "", rec(100, "h2", "n1"), Other},
		{"holder pid, no hostname recorded", "100", "", "", rec(100, "", "n1"), Ancestor},
		{"ancestor chain", "", "90,100", "", rec(90, host, "n1"), Ancestor},
		{"not in the chain", "", "90,100", "", rec(101, host, "n1"), Other},
		{"own pid is never an ancestor", "500", "500", "", rec(500, host, "n1"), Other},
		{"handed-down nonce, any host", "", "", "777:n1+n2", rec(777, "h9", "n2"), Ancestor},
		{"handed-down nonce, foreign pid", "", "", "777:n1", rec(12, "h9", "n1"), Ancestor},
		{"ancestor listed other nonces: another run", "", "100", "100:n1", rec(100, host, "n3"), AncestorOtherRun},
		{"ancestor with an empty entry: another run", "", "100", "100:", rec(100, host, "n3"), AncestorOtherRun},
		{"ancestor without an entry: pid decides", "", "100,200", "200:n1", rec(100, host, "n3"), Ancestor},
		{"stale token (re-keyed since)", "", "100", "100:old", rec(100, host, "new"), AncestorOtherRun},
		{"malformed entries dropped", " 100 ", "x,0,-3,1e3", "abc:n1,100:bad nonce+n5", rec(100, host, "n5"), Ancestor},
		{"malformed nonce not handed down", "", "", "100:bad!nonce", rec(100, host, "bad!nonce"), Other},
	} {
		a := NewAncestry(c.holder, c.chain, c.tokens, self, host)
		if got := a.Relation(c.lock); got != c.want {
			t.Errorf("%s: Relation = %v, want %v", c.name, got, c.want)
		}
	}
	// The newest 64 ancestors are kept.
	var chain []string
	for p := 1; p <= 70; p++ {
		chain = append(chain, strconv.Itoa(1000+p))
	}
	a := NewAncestry("", strings.Join(chain, ","), "", self, host)
	if got := a.Pids(); len(got) != MaxAncestors || got[0] != 1007 || a.Relation(rec(1001, host, "n")) != Other || a.Relation(rec(1070, host, "n")) != Ancestor {
		t.Errorf("cap: %v", got)
	}
}

// A per-model lock held by the swamp that started this process is borrowed
// under both versions' variables; with a stale or foreign token, or a
// holder that is no ancestor, it is waited on and never taken.
func TestAcquireOrBorrow(t *testing.T) {
	host := thisHost(t)
	parent := liveProcess(t)
	base := t.TempDir()
	path := ModelPath(base, "", "command/shell", "m1")
	lock := heldBy(parent, host)
	writeLock(t, path, lock)
	p := strconv.Itoa(parent)

	for _, c := range []struct {
		name                  string
		holder, chain, tokens string
		borrow                bool
	}{
		{"06b6147: SWAMP_LOCK_HOLDER_PID", p, "", "", true},
		{"newer: ancestor chain and token", "", "1," + p, p + ":" + lock.Nonce, true},
		{"newer: token alone (handed over a dispatch)", "", "", "4242:" + lock.Nonce, true},
		{"stale token: the ancestor re-keyed", "", p, p + ":" + jsfmt.RandomUUID(), false},
		{"foreign token, holder no ancestor", "", "1", "1:" + jsfmt.RandomUUID(), false},
		{"nothing inherited", "", "", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			anc := NewAncestry(c.holder, c.chain, c.tokens, os.Getpid(), host)
			l, err := AcquireOrBorrow(context.Background(), nil, path, anc, here(200*time.Millisecond))
			if c.borrow {
				if err != nil || !l.Borrowed() || l.Nonce() != lock.Nonce {
					t.Fatalf("AcquireOrBorrow = %v, %v; want the ancestor's lock borrowed", l, err)
				}
				l.StartHeartbeat(context.Background())
				if err := l.Release(); err != nil {
					t.Errorf("releasing a borrowed lock: %v", err)
				}
			} else if !errors.Is(err, ErrTimeout) {
				t.Fatalf("AcquireOrBorrow = %v, %v; want a wait that times out", l, err)
			}
			if got := readLock(t, path); got != lock {
				t.Errorf("the ancestor's lock was touched: %+v", got)
			}
			skip := anc.Lends
			live, err := LiveModelLocksSkipping(nil, base, "", time.Now(), skip)
			if err != nil || (len(live) == 0) != c.borrow {
				t.Errorf("drain skipping ancestors: %+v %v", live, err)
			}
		})
	}

	// An ancestor's lock long past its TTL is still the ancestor's: borrowed,
	// never taken over. A pid-matched ancestor that is gone lends nothing.
	old := lock
	old.AcquiredAt = stamp(time.Now().Add(-time.Hour))
	writeLock(t, path, old)
	anc := NewAncestry(p, "", "", os.Getpid(), host)
	if l, err := AcquireOrBorrow(context.Background(), nil, path, anc, here(200*time.Millisecond)); err != nil || !l.Borrowed() {
		t.Errorf("expired ancestor lock: %v %v", l, err)
	}
	dead := deadPid(t)
	gone := heldBy(dead, host)
	writeLock(t, path, gone)
	anc = NewAncestry(strconv.Itoa(dead), "", "", os.Getpid(), host)
	l, err := AcquireOrBorrow(context.Background(), nil, path, anc, here(time.Second))
	if err != nil || l.Borrowed() {
		t.Fatalf("a dead ancestor's lock: %v %v, want it taken over as stale", l, err)
	}
	_ = l.Release()
}

// here is fast on this very host, so that a holder's pid is probed.
func here(timeout time.Duration) Options {
	o := fast(timeout)
	o.Host, _ = os.Hostname()
	return o
}
