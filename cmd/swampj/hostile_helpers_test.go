package main

// Helpers of the hostile-repo suite (hostile_test.go): the layout each case
// runs in (a repo beside a canary tree, both under one directory of their
// own), snapshots of what lies outside the repo, and a runner that bounds
// every command in time and memory and watches its output.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	// hostileCmdTimeout bounds one command; a hung one gets SIGTERM, then
	// SIGKILL hostileKillGrace later.
	hostileCmdTimeout = 30 * time.Second
	hostileKillGrace  = 5 * time.Second
	// hostileAddressSpace is the hard cap on each command's address space:
	// a command that reads a hostile file whole dies here instead of
	// taking the machine with it.
	hostileAddressSpace = 4 << 30
	// hostileMaxRSSKiB is the peak resident set a command may reach.
	hostileMaxRSSKiB = 512 << 10
	// hostileKeep is how much of each output stream is kept for messages
	// (the rest is only counted and scanned for the secret).
	hostileKeep = 1 << 20
)

// hostileCrashMarkers in stderr mean the process died in the Go runtime (a
// panic, an out-of-memory abort) instead of ending with an error of its own.
var hostileCrashMarkers = []string{"panic:", "fatal error:", "goroutine ", "runtime: out of memory"}

// hostileEnv is one run of a case: a repo at {outside}/r/repo, so that a
// relative link ../../../canary from .swamp reaches the canary, and the
// canary tree at {outside}/canary.
type hostileEnv struct {
	t       *testing.T
	kind    string // "example" or "realswamp"
	outside string
	canary  string
	repo    string
	// item is a data item's directory (TYPE/MODEL_ID/DATA_NAME under
	// .swamp/data); itemAddr its address for `data get`.
	item, itemAddr     string
	modelID, dataName  string
	extraCanaries      []string // more trees nothing may touch
	mustNotExist       []string // paths a link names that must never be created
	secret             string   // bytes no command may print ("" none)
	cmds               [][]string
	outsideLinks       []hostileLink // each needs a path_outside_repo finding
	afterCmd           func(t *testing.T, args []string, r hostileRun)
	afterAll           func(t *testing.T)
	firstCmdMustRefuse func(t *testing.T, r hostileRun)
}

// hostileLink is a symlink planted in the repo that leads outside it.
type hostileLink struct {
	path   string // the link, absolute
	target string // what it resolves to, absolute
	text   string // the link's own text (relative or absolute)
}

// hostileStandardCmds is what every case runs, in order.
func hostileStandardCmds() [][]string {
	return [][]string{
		{"doctor"},
		{"doctor", "--json"},
		{"doctor", "--repair", "--confirm"},
		{"recover"},
		{"catalog", "rebuild", "--confirm"},
		{"catalog", "verify"},
		{"datastore", "namespace", "set", "hns"},
		{"datastore", "namespace", "migrate", "--confirm"},
		{"datastore", "namespace", "migrate", "--reverse", "--confirm"},
		{"datastore", "namespace", "unset", "--confirm"},
		{"run", "--", "true"},
	}
}

// newHostileEnv lays out a fresh repo (a copy of testdata/example-repo, or
// of the real-swamp base) and a canary tree beside it.
func newHostileEnv(t *testing.T, kind string, base *swampBase) *hostileEnv {
	t.Helper()
	h := &hostileEnv{t: t, kind: kind, outside: t.TempDir(), cmds: hostileStandardCmds()}
	h.canary = filepath.Join(h.outside, "canary")
	h.repo = filepath.Join(h.outside, "r", "repo")
	if err := os.MkdirAll(filepath.Dir(h.repo), 0o755); err != nil {
		t.Fatal(err)
	}
	hostileCopyRepo(t, kind, base, h.repo)
	hostileMakeCanary(t, h.canary)
	h.findItem()
	return h
}

// hostileCopyRepo copies the bundled example repo, or the real-swamp base,
// to dst.
func hostileCopyRepo(t *testing.T, kind string, base *swampBase, dst string) {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "example-repo")
	if kind == "realswamp" {
		src = base.dir
	}
	hostileCopyTree(t, src, dst)
}

// findItem picks the first command/shell item named "result" (both kinds
// of repo have one), else the first item with a latest file.
func (h *hostileEnv) findItem() {
	t := h.t
	data := filepath.Join(h.repo, ".swamp", "data")
	var items []string
	_ = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "latest" {
			items = append(items, filepath.Dir(p))
		}
		return nil
	})
	sort.Strings(items)
	if len(items) == 0 {
		t.Fatalf("no data item under %s", data)
	}
	h.item = items[0]
	for _, it := range items {
		if strings.Contains(it, "/command/shell/") && filepath.Base(it) == "result" {
			h.item = it
			break
		}
	}
	rel, _ := filepath.Rel(data, h.item)
	h.itemAddr = filepath.ToSlash(rel)
	h.dataName = filepath.Base(h.item)
	h.modelID = filepath.Base(filepath.Dir(h.item))
}

func (h *hostileEnv) swampDir(parts ...string) string {
	return filepath.Join(append([]string{h.repo, ".swamp"}, parts...)...)
}

// hostileOld is the mtime of everything planted outside the repo: old
// enough for every "not touched for a few seconds, so nobody is writing
// it" rule to apply.
var hostileOld = time.Now().Add(-time.Hour)

// hostileMakeCanary fills dir with what a careless repair would take for
// its own: unparseable records of each kind, lock-named files, and an
// item-shaped tree with a zero-byte version; every mtime an hour old.
func hostileMakeCanary(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"state.json":      `{"unterminated": `,
		"config.yaml":     "key: [unclosed\n\t- : :\n",
		"events.jsonl":    "not json\n{\"torn\": \n",
		".lock":           "{not a lock",
		".datastore.lock": "",
		"latest":          "1\n",
		"1/raw":           "",
		"1/metadata.yaml": ": : :\n",
		"sub/inner.json":  "[[[",
		"sub/run.yaml":    "",
		"sub/x.log":       "log line\n",
	}
	hostileWriteFiles(t, dir, files)
}

func hostileWriteFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hostileAge(t, dir)
}

// hostileAge sets every mtime under dir (dir included) to hostileOld,
// directories last so their own mtime sticks.
func hostileAge(t *testing.T, dir string) {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, p)
		case d.Type()&fs.ModeSymlink == 0:
			return os.Chtimes(p, hostileOld, hostileOld)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chtimes(dirs[i], hostileOld, hostileOld); err != nil {
			t.Fatal(err)
		}
	}
}

// hostileSecret is "7" and 30 random digits: bytes nothing else prints.
func hostileSecret(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteByte('7')
	for i := 0; i < 30; i++ {
		n, err := rand.Int(rand.Reader, big.NewInt(10))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(n.String())
	}
	return b.String()
}

// hostileSymlink replaces whatever is at link (if anything) by a symlink
// to target.
func hostileSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.RemoveAll(link); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// hostileFifo replaces whatever is at p by a FIFO nobody writes to.
func hostileFifo(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostileSparse replaces whatever is at p by a 3 GiB sparse file (no
// disk blocks; reading it whole is 3 GiB of zeros).
func hostileSparse(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// hostileEntry is what a snapshot keeps of one path.
type hostileEntry struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	sum   string // sha256 of a regular file's bytes
	link  string // a symlink's target
}

// hostileSnapshot records every path under root (root included), never
// following a symlink and never opening anything but regular files.
func hostileSnapshot(t *testing.T, root string) map[string]hostileEntry {
	t.Helper()
	out := map[string]hostileEntry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == root {
				return nil
			}
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		e := hostileEntry{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s := sha256.Sum256(b)
			e.sum = hex.EncodeToString(s[:])
		case fi.Mode()&fs.ModeSymlink != 0:
			e.link, _ = os.Readlink(p)
		}
		out[p] = e
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot of %s: %v", root, err)
	}
	return out
}

// hostileDiff lists what differs between two snapshots, paths shown
// relative to show.
func hostileDiff(before, after map[string]hostileEntry, show string) []string {
	rel := func(p string) string {
		if r, err := filepath.Rel(show, p); err == nil {
			return r
		}
		return p
	}
	var out []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			out = append(out, "removed "+rel(p))
		case a != b:
			var what []string
			if a.mode != b.mode {
				what = append(what, fmt.Sprintf("mode %v -> %v", b.mode, a.mode))
			}
			if a.size != b.size {
				what = append(what, fmt.Sprintf("size %d -> %d", b.size, a.size))
			}
			if a.sum != b.sum {
				what = append(what, "content")
			}
			if a.link != b.link {
				what = append(what, "link "+b.link+" -> "+a.link)
			}
			if !a.mtime.Equal(b.mtime) {
				what = append(what, "mtime")
			}
			out = append(out, "changed "+rel(p)+" ("+strings.Join(what, ", ")+")")
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			out = append(out, "new "+rel(p))
		}
	}
	sort.Strings(out)
	return out
}

// hostileDirNames lists the names directly in dir.
func hostileDirNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// hostileRun is one bounded command.
type hostileRun struct {
	args           []string
	code           int
	stdout, stderr string // at most hostileKeep bytes each
	outN, errN     int64  // full sizes
	hung           bool
	maxRSSKiB      int64
	elapsed        time.Duration
	secretSeen     bool
}

func (r hostileRun) name() string { return strings.Join(r.args, " ") }

func (r hostileRun) String() string {
	return fmt.Sprintf("exit %d after %s\nstdout (%d bytes): %s\nstderr (%d bytes): %s",
		r.code, r.elapsed.Round(time.Millisecond), r.outN, tail(r.stdout, 1500), r.errN, tail(r.stderr, 1500))
}

// hostileCapWriter keeps the first hostileKeep bytes, counts the rest, and
// looks for needle across the whole stream (a command that copies
// /dev/zero to stdout must not fill the test's memory).
type hostileCapWriter struct {
	buf    bytes.Buffer
	n      int64
	needle []byte
	carry  []byte
	seen   bool
}

func (w *hostileCapWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if room := hostileKeep - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(room, len(p))])
	}
	if len(w.needle) > 0 && !w.seen {
		joined := append(w.carry, p...)
		if bytes.Contains(joined, w.needle) {
			w.seen = true
		}
		if k := len(w.needle) - 1; len(joined) > k {
			w.carry = append([]byte(nil), joined[len(joined)-k:]...)
		} else {
			w.carry = joined
		}
	}
	return len(p), nil
}

// hostileEnviron is the environment of every command: no inherited
// failpoint or repo, and swamp-lock waits shorter than the hang bound
// (a lock wait is policy, set by the operator; what the suite bounds is
// how long a command spends on hostile files).
func hostileEnviron(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "SWAMPJ_FAILPOINT", "SWAMP_REPO_DIR", "SWAMP_LOCK_TIMEOUT_MS":
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "SWAMP_LOCK_TIMEOUT_MS=10000", "NO_COLOR=1")
	return append(env, extra...)
}

// hostileArgv wraps the binary in a hard address-space cap.
func hostileArgv(args []string) []string {
	if p, err := exec.LookPath("prlimit"); err == nil {
		return append([]string{p, "--as=" + strconv.Itoa(hostileAddressSpace), "--", binary}, args...)
	}
	return append([]string{"sh", "-c", fmt.Sprintf(`ulimit -v %d; exec "$@"`, hostileAddressSpace>>10), "sh", binary}, args...)
}

// hostileExec runs the real binary in dir under the time and memory
// bounds, in its own process group (all of which is killed afterwards).
func hostileExec(t *testing.T, dir, secret string, args ...string) hostileRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileCmdTimeout)
	defer cancel()
	argv := hostileArgv(args)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = hostileEnviron()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = hostileKillGrace
	so, se := &hostileCapWriter{needle: []byte(secret)}, &hostileCapWriter{needle: []byte(secret)}
	if secret == "" {
		so.needle, se.needle = nil, nil
	}
	cmd.Stdout, cmd.Stderr = so, se
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %v: %v", args, err)
	}
	err := cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	r := hostileRun{args: args, elapsed: time.Since(start), stdout: so.buf.String(), stderr: se.buf.String(),
		outN: so.n, errN: se.n, secretSeen: so.seen || se.seen, hung: ctx.Err() != nil, code: -1}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
		// Maxrss (KiB) also counts the test process's own resident set at
		// the fork (the child starts in its address space): a few tens of
		// MiB, far below the bound.
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.maxRSSKiB = ru.Maxrss
		}
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("running %v: %v", args, err)
	}
	return r
}

// hostileSetup runs a setup step (not itself under test) with the time bound.
func hostileSetup(t *testing.T, dir string, env []string, args ...string) (hostileRun, *os.ProcessState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = hostileEnviron(env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("setup %v: %v", args, err)
	}
	return hostileRun{args: args, code: cmd.ProcessState.ExitCode(), stdout: so.String(), stderr: se.String()}, cmd.ProcessState
}

// hostileFindings decodes the findings of `doctor --json`.
type hostileFinding struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	Item    string `json:"item"`
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

func hostileFindings(stdout string) ([]hostileFinding, error) {
	var doc struct {
		Findings []hostileFinding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		return nil, err
	}
	return doc.Findings, nil
}

// hostileCatalogRows counts the catalog rows of one item, read from a copy
// of the catalog (and its WAL) so the repo is not touched.
func hostileCatalogRows(t *testing.T, repo, modelID, dataName string) (int, error) {
	t.Helper()
	src := filepath.Join(repo, ".swamp", "data", "_catalog.db")
	dir := t.TempDir()
	for _, suf := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suf)
		if err != nil {
			if suf != "" && os.IsNotExist(err) {
				continue
			}
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, "c.db"+suf), b, 0o600); err != nil {
			return 0, err
		}
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "c.db"))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int
	err = db.QueryRow(`SELECT count(*) FROM catalog WHERE model_id = ? AND data_name = ?`, modelID, dataName).Scan(&n)
	return n, err
}

// hostileDeadRun leaves a wrapped run whose wrapper died: `swampj run` is
// started on a command that waits, and once that command runs (so the run
// is recorded) the swampj process alone is SIGKILLed; then the command is
// stopped too. Returns the run's change log.
func hostileDeadRun(t *testing.T, repo string) string {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "child.pid")
	cmd := exec.Command(binary, "run", "--", "sh", "-c", "echo $$ > "+marker+"; exec sleep 60")
	cmd.Dir = repo
	cmd.Env = hostileEnviron()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Output to a file, not a pipe: the waiting command keeps a pipe
	// open, and Wait must return as soon as swampj itself is dead.
	out, err := os.Create(filepath.Join(t.TempDir(), "run.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	output := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }
	var child int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(marker); err == nil && strings.HasSuffix(string(b), "\n") {
			child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
	}
	if child == 0 {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("swampj run did not start its command: %s", output())
	}
	// swampj alone first, and reaped, so it cannot see its command end
	// and close the run's record.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	_ = syscall.Kill(child, syscall.SIGKILL)
	logs, _ := filepath.Glob(filepath.Join(repo, ".swamp", "_journal.db.run-*"))
	if len(logs) != 1 {
		t.Fatalf("want one change log of the dead run, got %v", logs)
	}
	return logs[0]
}

func hostileAppend(t *testing.T, p string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// hostileCopyTree copies src to dst with cp -a.
func hostileCopyTree(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v %s", src, dst, err, out)
	}
}
