package main

// Opt-in real-kernel crash-image test (SWAMPJ_CRASH_IMAGES=1, root only).
//
// The repo lives on a loop-mounted ext4 image. The backing file of a loop
// device holds exactly what the kernel has written to the "device", so
// copying it while the file system is still mounted gives a power-cut image:
// dirty page cache and uncommitted jbd2 state are absent. Mounting the copy
// replays the journal as a reboot would. The real swampj binary is stopped
// with SIGSTOP at a time-chosen point (after every one of its threads has
// left the kernel), the image is copied, and the copy is mounted, recovered
// and checked. Method: /work/shared/durability-measurements.txt, last section.
//
// Environmental problems (not root, no mkfs/losetup/mount, no loop devices)
// skip the test; it never fails CI because CI does not set the variable.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// imageFS is the file system of the images: SWAMPJ_CRASH_IMAGES_FS=xfs
// (mkfs.xfs from xfsprogs) or ext4, the default.
func imageFS() string {
	if os.Getenv("SWAMPJ_CRASH_IMAGES_FS") == "xfs" {
		return "xfs"
	}
	return "ext4"
}

// imageCuts is how many stop points each image test takes:
// SWAMPJ_CRASH_IMAGES_CUTS (the crash recipe's short mode sets a few), 40
// by default.
func imageCuts() int {
	if n, err := strconv.Atoi(os.Getenv("SWAMPJ_CRASH_IMAGES_CUTS")); err == nil && n > 0 {
		return n
	}
	return 40
}

const crashImageAddr = "command/shell/" + dataModel + "/result"

// crashImg is one scratch area: a base image and the loop mounts made from it.
type crashImg struct {
	t      *testing.T
	dir    string
	mounts map[string]string // mount point -> loop device
	// stdout is what the program of the last cutIn printed before the cut.
	stdout string
}

func (c *crashImg) sh(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// mount attaches img to a loop device and mounts it on mp with a long commit
// interval, so no timer-driven jbd2 commit races an image copy.
func (c *crashImg) mount(img, mp string) error {
	if err := os.MkdirAll(mp, 0o755); err != nil {
		return err
	}
	out, err := c.sh("losetup", "-f", "--show", img)
	if err != nil {
		return err
	}
	dev := strings.TrimSpace(out)
	opts := []string{"-t", "ext4", "-o", "commit=600"}
	if imageFS() == "xfs" {
		opts = []string{"-t", "xfs"}
	}
	if _, err := c.sh("mount", append(opts, dev, mp)...); err != nil {
		_, _ = c.sh("losetup", "-d", dev)
		return err
	}
	c.mounts[mp] = dev
	return nil
}

func (c *crashImg) umount(mp string) {
	dev, ok := c.mounts[mp]
	if !ok {
		return
	}
	delete(c.mounts, mp)
	var err error
	for i := 0; i < 50; i++ { // a just-killed child may still hold files open
		if _, err = c.sh("umount", mp); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Errorf("umount: %v", err)
		_, _ = c.sh("umount", "-l", mp)
	}
	if _, err := c.sh("losetup", "-d", dev); err != nil {
		c.t.Errorf("losetup -d: %v", err)
	}
}

func newCrashImg(t *testing.T) *crashImg {
	t.Helper()
	if os.Getenv("SWAMPJ_CRASH_IMAGES") != "1" {
		t.Skip("set SWAMPJ_CRASH_IMAGES=1 (as root) to run the real-kernel crash-image test")
	}
	if os.Geteuid() != 0 {
		t.Skip("crash images need root (loop devices and mount)")
	}
	for _, tool := range []string{"mkfs." + imageFS(), "losetup", "mount", "umount", "cp", "truncate"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not found: %v", tool, err)
		}
	}
	c := &crashImg{t: t, dir: t.TempDir(), mounts: map[string]string{}}
	t.Cleanup(func() {
		for mp := range c.mounts {
			c.umount(mp)
		}
	})
	base := filepath.Join(c.dir, "base.img")
	size, mkfs := "64M", []string{"mkfs.ext4", "-q", "-F", base}
	if imageFS() == "xfs" {
		size, mkfs = "320M", []string{"mkfs.xfs", "-q", "-f", base} // xfs needs 300 MB
	}
	if _, err := c.sh("truncate", "-s", size, base); err != nil {
		t.Skip(err)
	}
	if _, err := c.sh(mkfs[0], mkfs[1:]...); err != nil {
		t.Skip(err)
	}
	if err := c.mount(base, c.mp()); err != nil {
		t.Skip(err)
	}
	if _, err := c.sh("cp", "-a", "../../testdata/example-repo", filepath.Join(c.mp(), "repo")); err != nil {
		t.Fatal(err)
	}
	return c
}

// mp is the one mount point every image is mounted on in turn: the journal
// and .swamp.yaml hold absolute paths, so a cut image must be recovered where
// it was written, as after a reboot.
func (c *crashImg) mp() string { return filepath.Join(c.dir, "mnt") }

// finishBase unmounts the base image: from here on it is the clean start of
// every trial.
func (c *crashImg) finishBase() string {
	c.umount(c.mp())
	return filepath.Join(c.dir, "base.img")
}

// allStopped reports whether every thread of pid is stopped (or the process
// has exited), i.e. no thread is still inside a system call such as fsync.
func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || i+2 >= len(s) {
			continue
		}
		switch s[i+2] {
		case 'T', 't', 'Z', 'X':
		default:
			return false
		}
	}
	return true
}

// cut is one trial: start from the base image, run swampj args in the repo,
// stop it after delay (delay < 0: let it return first), copy the image (the
// power cut), and return the copy's path, whether swampj had returned with
// exit 0 before the copy, and how long it ran (when it returned).
func (c *crashImg) cut(base string, n int, delay time.Duration, args ...string) (img string, returned bool, ran time.Duration) {
	c.t.Helper()
	return c.cutIn(base, n, delay, "repo", binary, args...)
}

// cutIn is cut for any program name run in the mount's directory rel.
func (c *crashImg) cutIn(base string, n int, delay time.Duration, rel, name string, args ...string) (img string, returned bool, ran time.Duration) {
	t := c.t
	t.Helper()
	live := filepath.Join(c.dir, fmt.Sprintf("live%d.img", n))
	img = filepath.Join(c.dir, fmt.Sprintf("cut%d.img", n))
	if _, err := c.sh("cp", "--sparse=always", base, live); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(live)
	mp := c.mp()
	if err := c.mount(live, mp); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = filepath.Join(mp, rel)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	waited := false
	reap := func() { // never leave a stopped child holding the mount
		if !waited {
			waited = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = cmd.Wait()
		}
	}
	defer reap()
	if delay < 0 {
		err := cmd.Wait()
		waited = true
		if err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, so.String(), se.String())
		}
		returned, ran = true, time.Since(started)
	} else {
		time.Sleep(delay)
		_ = syscall.Kill(pid, syscall.SIGSTOP)
		deadline := time.Now().Add(5 * time.Second)
		for !allStopped(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("swampj pid %d did not stop", pid)
			}
			time.Sleep(50 * time.Microsecond)
		}
	}
	if _, err := c.sh("cp", "--sparse=always", live, img); err != nil { // the power cut
		t.Fatal(err)
	}
	reap()
	c.stdout = so.String() // complete once the process is reaped
	c.umount(mp)
	return img, returned, ran
}

// control checks the method itself: a file written on the live mount without
// fsync must be missing from the copied image, or the copies are not power
// cuts and the test would prove nothing.
func (c *crashImg) control(base string) {
	t := c.t
	t.Helper()
	live := filepath.Join(c.dir, "control-live.img")
	img := filepath.Join(c.dir, "control-cut.img")
	if _, err := c.sh("cp", "--sparse=always", base, live); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(live)
	if err := c.mount(live, c.mp()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.mp(), "repo", "not-synced"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.sh("cp", "--sparse=always", live, img); err != nil {
		t.Fatal(err)
	}
	c.umount(c.mp())
	r, mp := c.open(img, 0)
	_, err := os.Lstat(filepath.Join(r, "not-synced"))
	c.close(img, mp)
	if err == nil {
		t.Fatal("control: a file never fsynced survived the image copy, so the copies are not power-cut images")
	}
}

// open mounts a cut image (journal replay) and returns the repo inside it.
func (c *crashImg) open(img string, n int) (repo, mp string) {
	mp = c.mp()
	if err := c.mount(img, mp); err != nil {
		c.t.Fatalf("mounting power-cut image %s: %v", img, err)
	}
	return filepath.Join(mp, "repo"), mp
}

func (c *crashImg) close(img, mp string) {
	c.umount(mp)
	os.Remove(img)
}

// cutDelays spreads stop points over about 1.3 times a measured run of the
// process (start to exit).
func cutDelays(d time.Duration, n int) []time.Duration {
	var out []time.Duration
	for i := 0; i < n; i++ {
		out = append(out, time.Duration(int64(d)*13*int64(i)/int64(10*n)))
	}
	return append(out, -1, -1) // and two copies taken right after it returned
}

func measureRun(t *testing.T, c *crashImg, base string, args ...string) time.Duration {
	return measureRunOf(t, c, base, binary, args...)
}

// measureRunOf is measureRun for any program run in the repo.
func measureRunOf(t *testing.T, c *crashImg, base, name string, args ...string) time.Duration {
	var best time.Duration
	for i := 0; i < 3; i++ {
		img, _, d := c.cutIn(base, 900+i, -1, "repo", name, args...)
		os.Remove(img)
		if best == 0 || d < best {
			best = d
		}
	}
	return best
}

func TestCrashImageDataWrite(t *testing.T) {
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "repo")
	old := mustOK(t, swampj(t, repo, "data", "get", crashImageAddr), "data get (old)").stdout
	payload := make([]byte, 1<<20)
	for i := range payload {
		payload[i] = byte('a' + (i*7+i/4096)%26)
	}
	file := filepath.Join(repo, "payload.bin")
	if err := os.WriteFile(file, payload, 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	base := c.finishBase()
	c.control(base)
	args := []string{"data", "write", crashImageAddr, "--file", "payload.bin"}
	d := measureRun(t, c, base, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("data write takes about %s (start to exit); %d cut points", d, len(delays))

	counts := map[string]int{}
	start := time.Now()
	cc := fsxtest.Count(t, "version-write", "image")
	for i, delay := range delays {
		img, returned, _ := c.cut(base, i, delay, args...)
		cc.Check()
		r, mp := c.open(img, i)
		rec := mustOK(t, swampj(t, r, "recover"), fmt.Sprintf("cut %d: recover", i))
		pending := !strings.Contains(rec.stdout, "Nothing to recover")
		get := swampj(t, r, "data", "get", crashImageAddr)
		outcome := "garbage"
		switch {
		case get.code == 0 && get.stdout == old:
			outcome = "old"
		case get.code == 0 && get.stdout == string(payload):
			outcome = "new"
		}
		if outcome == "garbage" {
			t.Errorf("cut %d (delay %s): data get exit %d, %d bytes, neither old nor new\nstderr: %s", i, delay, get.code, len(get.stdout), get.stderr)
		}
		if returned && outcome != "new" {
			t.Errorf("cut %d: write returned before the cut but the image holds %s content", i, outcome)
		}
		// A power cut after the write took swamp's model lock leaves that
		// lock naming a dead pid; the doctor reports it (lock_dead) and its
		// repair moves it: the ordinary commands after recover.
		imageRepair(t, r, fmt.Sprintf("cut %d (delay %s, %s)", i, delay, outcome))
		for _, check := range [][]string{{"catalog", "verify"}, {"doctor"}} {
			if res := swampj(t, r, check...); res.code != 0 {
				t.Errorf("cut %d (delay %s, %s): %v exit %d\n%s%s", i, delay, outcome, check, res.code, res.stdout, res.stderr)
			}
		}
		if res := swampj(t, r, "recover"); res.code != 0 || !strings.Contains(res.stdout, "Nothing to recover") {
			t.Errorf("cut %d: second recover is not a no-op: %+v", i, res)
		}
		key := outcome
		if pending {
			key += " (recovered an open intent)"
		}
		if returned {
			key += " (after return)"
		}
		counts[key]++
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("data write: %d power-cut images in %s: %v", len(delays), time.Since(start).Round(time.Millisecond), counts)
}

// treeSums maps every file under root (relative, slash-separated) to its
// SHA-256, leaving out the journal and the catalog's WAL sidecars.
func treeSums(t *testing.T, root string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() == "payload.bin" {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, ".swamp/_journal.db") || strings.HasSuffix(rel, "_catalog.db-wal") || strings.HasSuffix(rel, "_catalog.db-shm") || strings.HasSuffix(rel, "_catalog.db-journal") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		sums[rel] = hex.EncodeToString(s[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

func TestCrashImageNamespaceMigrate(t *testing.T) {
	const ns = "x"
	c := newCrashImg(t)
	repo := filepath.Join(c.mp(), "repo")
	mustOK(t, swampj(t, repo, "datastore", "namespace", "set", ns), "namespace set")
	syscall.Sync()
	// Before the migration the catalog rows carry no namespace and the data
	// is not under it, so verify already reports differences there: an image
	// rolled back to "old" must verify exactly as the uncrashed start does.
	before := swampj(t, repo, "catalog", "verify")
	orig := treeSums(t, repo)
	base := c.finishBase()
	args := []string{"datastore", "namespace", "migrate", "--confirm"}
	d := measureRun(t, c, base, args...)
	delays := cutDelays(d, imageCuts())
	t.Logf("migrate takes about %s (start to exit); %d cut points, %d files", d, len(delays), len(orig))

	counts := map[string]int{}
	start := time.Now()
	cc := fsxtest.Count(t, "migrate", "image")
	for i, delay := range delays {
		img, returned, _ := c.cut(base, i, delay, args...)
		cc.Check()
		r, mp := c.open(img, i)
		rec := mustOK(t, swampj(t, r, "recover"), fmt.Sprintf("cut %d: recover", i))
		pending := !strings.Contains(rec.stdout, "Nothing to recover")
		got := treeSums(t, r)
		moved, stayed := 0, 0
		for rel, sum := range orig {
			var at []string
			cands := []string{rel}
			if strings.HasPrefix(rel, ".swamp/") {
				cands = append(cands, ".swamp/"+ns+"/"+strings.TrimPrefix(rel, ".swamp/"))
			}
			for _, cand := range cands {
				if _, ok := got[cand]; ok {
					at = append(at, cand)
				}
			}
			if len(at) != 1 {
				t.Errorf("cut %d (delay %s): %s exists %d times: %v", i, delay, rel, len(at), at)
				continue
			}
			if at[0] != rel {
				moved++
			} else if strings.HasPrefix(rel, ".swamp/data/") && !strings.HasSuffix(rel, "_catalog.db") {
				stayed++
			}
			if strings.HasSuffix(rel, "_catalog.db") || rel == ".swamp.yaml" {
				continue // the catalog is restamped, not moved
			}
			if got[at[0]] != sum {
				t.Errorf("cut %d (delay %s): %s changed content", i, delay, at[0])
			}
		}
		// A dead datastore lock left by the cut is the doctor's to move.
		imageRepair(t, r, fmt.Sprintf("cut %d (delay %s)", i, delay))
		if res, ok := doctorSettled(t, r); !ok {
			t.Errorf("cut %d (delay %s): doctor exit %d\n%s%s", i, delay, res.code, res.stdout, res.stderr)
		}
		imageNoOpenIntent(t, r, fmt.Sprintf("cut %d", i))
		outcome := "mixed"
		switch {
		case moved == 0:
			outcome = "old"
		case stayed == 0:
			outcome = "new"
		}
		verify := swampj(t, r, "catalog", "verify")
		switch {
		case outcome == "old" && (verify.code != before.code || verify.stdout != before.stdout):
			t.Errorf("cut %d (delay %s, old): catalog verify differs from the uncrashed start (exit %d, want %d)\n%s%s", i, delay, verify.code, before.code, verify.stdout, verify.stderr)
		case outcome != "old" && verify.code != 0:
			t.Errorf("cut %d (delay %s, %s): catalog verify exit %d\n%s%s", i, delay, outcome, verify.code, verify.stdout, verify.stderr)
		}
		if returned && outcome != "new" {
			t.Errorf("cut %d: migrate returned before the cut but the image is %s (%d moved, %d data files stayed)", i, outcome, moved, stayed)
		}
		key := outcome
		if pending {
			key += " (recovered an open intent)"
		}
		if returned {
			key += " (after return)"
		}
		counts[key]++
		if !t.Failed() {
			cc.Recovered()
		}
		c.close(img, mp)
	}
	t.Logf("namespace migrate: %d power-cut images in %s: %v", len(delays), time.Since(start).Round(time.Millisecond), counts)
}
