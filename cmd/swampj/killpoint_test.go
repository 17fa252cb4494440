package main

// Real processes killed at named failpoints (SWAMPJ_FAILPOINT, fsx/killpoint.go):
// the real binary SIGKILLs itself right after a chosen disk operation; then
// the real `swampj recover` (or `--rollback`, or the same command again)
// must bring the repo to a clean doctor, with old-or-new content only.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// swampjKilledAt runs the binary with SWAMPJ_FAILPOINT=spec and reports
// whether SIGKILL ended it.
func swampjKilledAt(t *testing.T, dir, spec string, stdin []byte, args ...string) bool {
	t.Helper()
	return killedAt(t, binary, dir, spec, stdin, args...)
}

// killedAt is swampjKilledAt for any program that honours SWAMPJ_FAILPOINT.
func killedAt(t *testing.T, prog, dir, spec string, stdin []byte, args ...string) bool {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SWAMPJ_FAILPOINT="+spec)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var se bytes.Buffer
	cmd.Stderr = &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
		t.Fatalf("%s: exit %d, not killed: %s", spec, ee.ExitCode(), se.String())
	} else if err != nil {
		t.Fatal(err)
	}
	return false
}

// batchWriter is testdata/batchwrite, built on first use: several versions
// in one intent through the public API (the CLI writes one per command).
var batchWriter = sync.OnceValues(func() (string, error) {
	out := filepath.Join(filepath.Dir(binary), "batchwrite")
	b, err := exec.Command("go", "build", "-o", out, "./testdata/batchwrite").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building testdata/batchwrite: %v\n%s", err, b)
	}
	return out, nil
})

// rawOf is the content the latest of item (type command/shell, model
// dataModel) names under the data root rel, and whether it is readable.
func rawOf(dir, rel, item string) (string, bool) {
	d := filepath.Join(dir, rel, "command", "shell", dataModel, item)
	l, err := os.ReadFile(filepath.Join(d, "latest"))
	if err != nil {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(d, strings.TrimSpace(string(l)), "raw"))
	return string(b), err == nil
}

// killTree is the repo as the kill oracle compares it: every file by size
// and hash under the repo, infrastructure left out (the journal, lock
// files, the live catalog, which `catalog verify` checks) and what differs
// between two runs of one command made neutral: a version's id and
// createdAt in metadata.yaml, the quarantine's per-run directory, the
// repo's path.
func killTree(t *testing.T, dir string) fsxtest.Tree {
	t.Helper()
	quarantineRun := regexp.MustCompile(`\.swampj-quarantine/[^/]+`)
	skip := func(rel string) bool {
		base := filepath.Base(rel)
		return strings.HasPrefix(rel, ".swamp/_journal.db") || strings.HasPrefix(rel, ".swamp/.locks") || base == ".lock" ||
			strings.HasPrefix(rel, ".swamp/data/_catalog.db") || strings.HasPrefix(base, ".lock.")
	}
	tree := fsxtest.Snapshot(t, dir, skip)
	out := fsxtest.Tree{}
	for rel, e := range tree {
		if e.Kind == "file" && (filepath.Base(rel) == "metadata.yaml" || rel == ".swamp.yaml") {
			b, err := os.ReadFile(filepath.Join(dir, rel))
			if err != nil {
				t.Fatal(err)
			}
			var keep []string
			for _, l := range strings.Split(strings.ReplaceAll(string(b), dir, "{repo}"), "\n") {
				// (a long path may be folded onto its own line: the
				// replacement above still sees it whole)
				if !strings.HasPrefix(l, "id:") && !strings.HasPrefix(l, "createdAt:") {
					keep = append(keep, l)
				}
			}
			e.Content = strings.Join(keep, "\n")
		}
		out[quarantineRun.ReplaceAllString(rel, ".swampj-quarantine/{run}")] = e
	}
	return out
}

// killCopy copies a set-up repo for the clean run the kill is compared
// with (the journal left out: its finished intents name the original), its
// .swamp.yaml pointing at the copy.
func killCopy(t *testing.T, dir string) string {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "clean")
	fsxtest.CopyTree(t, dir, cp)
	cfg := filepath.Join(cp, ".swamp.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(string(b), dir, cp)), 0o644); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(cp, ".swamp", "_journal.db*"))
	for _, m := range matches {
		if err := os.RemoveAll(m); err != nil {
			t.Fatal(err)
		}
	}
	return cp
}

// TestKillPointsThenRecover kills each protocol at its durability
// boundaries, then takes the ordinary way out: `recover`, `recover
// --rollback`, or nothing, followed by the same command again. Right after
// recover or rollback no intent is open, the whole repo (every file's
// bytes, see killTree) is exactly the start or the end a clean run of the
// same command on a copy leaves, and `data get` succeeds with the old or
// the new content (for the repair, whose start is unreadable: the end, or
// the start's zero-byte version); after the re-run the operation's effect
// holds, doctor is clean and the catalog agrees.
func TestKillPointsThenRecover(t *testing.T) {
	addr := "command/shell/" + dataModel + "/result"
	type proto struct {
		name     string
		setup    func(t *testing.T) string
		args     []string
		stdin    []byte
		points   []string
		old, new string // content latest serves before and after
		done     func(dir string) bool
		// get reads the content latest serves (nil: `data get`); verify
		// checks the catalog at the end (nil: `catalog verify` exits 0).
		get    func(t *testing.T, dir string) (string, bool)
		verify func(t *testing.T, dir string)
		// prog runs args instead of swampj (a test-only program).
		prog func(t *testing.T) string
		// settled, if set, checks the state right after recover or
		// rollback ("" when it holds).
		settled func(dir string) string
		// oldUnreadable: in the start, `data get` fails (the damage the
		// repair removes); right after recover or rollback it then may
		// fail, but only where the repo is exactly the start.
		oldUnreadable bool
	}
	writeRepo := func(t *testing.T) string {
		dir := newRepo(t)
		mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
		return dir
	}
	protos := []proto{
		{
			name: "version-write", setup: writeRepo, args: []string{"data", "write", addr}, stdin: []byte(`{"v":2}`),
			points: []string{"failpoint:journal.begin", "rename-noreplace", "rename@/latest", "failpoint:catalog"},
			old:    `{"v":1}`, new: `{"v":2}`,
		},
		{
			name: "migrate",
			setup: func(t *testing.T) string {
				dir := writeRepo(t)
				mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
				return dir
			},
			args:   []string{"datastore", "namespace", "migrate", "--confirm"},
			points: []string{"failpoint:journal.begin", "mkdir:1", "rename-noreplace:1", "syncdir:1", "failpoint:catalog"},
			// The start has the namespace set over data at the solo path,
			// which data get does not read (as swamp's does not): the
			// start's bytes are checked by the whole-tree comparison.
			old: `{"v":1}`, new: `{"v":1}`, oldUnreadable: true,
			done: func(dir string) bool {
				return nsExists(dir, ".swamp/ns1/data/command") && !nsExists(dir, ".swamp/data/command")
			},
		},
		{
			// Reverse keeping the namespace: the end state has the data at
			// the root while the namespace stays configured, which data get
			// cannot read and catalog verify calls un-migrated.
			name: "reverse",
			setup: func(t *testing.T) string {
				dir := writeRepo(t)
				mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
				mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
				return dir
			},
			args:   []string{"datastore", "namespace", "migrate", "--reverse", "--confirm"},
			points: []string{"failpoint:journal.begin", "rename-noreplace:1", "syncdir:1", "failpoint:catalog"},
			old:    `{"v":1}`, new: `{"v":1}`,
			done: func(dir string) bool {
				return nsExists(dir, ".swamp/data/command") && !nsExists(dir, ".swamp/ns1/data/command")
			},
			get: func(t *testing.T, dir string) (string, bool) {
				if got, ok := rawOf(dir, ".swamp/data", "result"); ok {
					return got, ok
				}
				return rawOf(dir, ".swamp/ns1/data", "result")
			},
			verify: killReverseVerify,
		},
		{
			// Two items, one new, in one intent: every kill leaves both
			// old or both new.
			name:  "batch-write",
			setup: writeRepo,
			prog: func(t *testing.T) string {
				prog, err := batchWriter()
				if err != nil {
					t.Fatal(err)
				}
				return prog
			},
			args: []string{"command/shell/" + dataModel + `/result={"v":2}`, "command/shell/" + dataModel + `/other={"o":1}`},
			points: []string{"failpoint:journal.begin", "rename-noreplace:1", "rename-noreplace:2", "rename@/latest",
				"rename@/latest:2", "failpoint:catalog"},
			old: `{"v":1}`, new: `{"v":2}`,
			done: func(dir string) bool {
				got, ok := rawOf(dir, ".swamp/data", "other")
				return ok && got == `{"o":1}`
			},
			settled: func(dir string) string {
				result, _ := rawOf(dir, ".swamp/data", "result")
				other, otherOK := rawOf(dir, ".swamp/data", "other")
				if (result == `{"v":2}`) != (otherOK && other == `{"o":1}`) {
					return fmt.Sprintf("half a batch: result serves %q, other %q (readable: %v)", result, other, otherOK)
				}
				return ""
			},
		},
		{
			name: "catalog-rebuild",
			setup: func(t *testing.T) string {
				dir := writeRepo(t)
				for _, suf := range []string{"", "-wal", "-shm"} {
					_ = os.Remove(filepath.Join(dir, ".swamp", "data", "_catalog.db"+suf))
				}
				return dir
			},
			args:   []string{"catalog", "rebuild", "--confirm"},
			points: []string{"create:1", "rename:1", "failpoint:catalog", "failpoint:catalog:2"},
			old:    `{"v":1}`, new: `{"v":1}`,
		},
		{
			name: "unset-migrate",
			setup: func(t *testing.T) string {
				dir := writeRepo(t)
				mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
				mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate")
				return dir
			},
			args:   []string{"datastore", "namespace", "unset", "--migrate", "--confirm"},
			points: []string{"failpoint:journal.begin", "rename-noreplace:1", "syncdir:1", "failpoint:catalog", "rename@/.swamp.yaml"},
			old:    `{"v":1}`, new: `{"v":1}`,
			done: func(dir string) bool {
				cfg, _ := os.ReadFile(filepath.Join(dir, ".swamp.yaml"))
				return nsExists(dir, ".swamp/data/command") && !nsExists(dir, ".swamp/ns1/data/command") && !strings.Contains(string(cfg), "ns1")
			},
		},
		{
			name: "repair",
			setup: func(t *testing.T) string {
				dir := writeRepo(t)
				mustOK(t, swampjIn(t, dir, []byte(`{"v":2}`), "data", "write", addr), "v2")
				v2 := filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "2")
				for _, f := range []string{"raw", "metadata.yaml"} {
					if err := os.Truncate(filepath.Join(v2, f), 0); err != nil {
						t.Fatal(err)
					}
				}
				return dir
			},
			args:   []string{"doctor", "--repair", "--confirm"},
			points: []string{"failpoint:journal.begin", "mkdir:1", "rename:1", "rename@/latest", "failpoint:catalog"},
			// The start serves version 2, zero bytes: swampj's data get
			// refuses it (oldUnreadable), the end serves version 1.
			old: "", new: `{"v":1}`, oldUnreadable: true,
		},
	}
	counts := map[string]*fsxtest.CrashCount{}
	for _, p := range protos {
		counts[p.name] = fsxtest.Count(t, p.name, "kill")
	}
	ways := []string{"recover", "rollback", "rerun"}
	for _, p := range protos {
		for i, point := range p.points {
			// Every way out of every kill point in the crash recipe's full
			// mode; otherwise each point is killed once and left one way,
			// the ways taken in turn.
			thens := ways
			if !fsxtest.Full() {
				thens = ways[i%3 : i%3+1]
			}
			for _, then := range thens {
				p, point, then := p, point, then
				t.Run(p.name+"/"+point+"/"+then, func(t *testing.T) {
					t.Parallel()
					cc := counts[p.name]
					cc.Check()
					dir := p.setup(t)
					prog := binary
					if p.prog != nil {
						prog = p.prog(t)
					}
					// The start, and the end of a clean run on a copy.
					startTree := killTree(t, dir)
					clean := killCopy(t, dir)
					cleanRun := exec.Command(prog, p.args...)
					cleanRun.Dir = clean
					if p.stdin != nil {
						cleanRun.Stdin = bytes.NewReader(p.stdin)
					}
					if r := runResult(t, cleanRun); r.code != 0 && !(p.name == "reverse" && r.code == 1) {
						t.Fatalf("the clean run on a copy: %+v", r)
					}
					endTree := killTree(t, clean)
					if !killedAt(t, prog, dir, point, p.stdin, p.args...) {
						t.Fatalf("the failpoint %s was never reached", point)
					}
					switch then {
					case "recover":
						mustOK(t, swampj(t, dir, "recover"), "recover")
					case "rollback":
						mustOK(t, swampj(t, dir, "recover", "--rollback"), "recover --rollback")
					}
					get := p.get
					if get == nil {
						get = func(t *testing.T, dir string) (string, bool) {
							r := swampj(t, dir, "data", "get", addr)
							return r.stdout, r.code == 0
						}
					}
					if then != "rerun" {
						if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
							t.Fatalf("intent left open after %s:\n%s", then, l.stdout)
						}
						got := killTree(t, dir)
						dStart, dEnd := fsxtest.Diff(startTree, got), fsxtest.Diff(endTree, got)
						if len(dStart) > 0 && len(dEnd) > 0 {
							t.Fatalf("after %s the repo is neither the start nor a clean run's end:\n  against the start: %s\n  against the end: %s",
								then, strings.Join(dStart, "\n    "), strings.Join(dEnd, "\n    "))
						}
						content, ok := get(t, dir)
						switch {
						case !ok && p.oldUnreadable && len(dStart) == 0:
							// The start, unreadable as it was.
						case !ok:
							t.Fatalf("after %s data get fails (the repo is the %s)", then, map[bool]string{true: "end", false: "start"}[len(dEnd) == 0])
						case content != p.old && content != p.new:
							t.Fatalf("after %s latest serves %q: neither old (%q) nor new (%q)", then, content, p.old, p.new)
						case len(dEnd) == 0 && content != p.new, len(dEnd) > 0 && content != p.old:
							t.Fatalf("after %s latest serves %q, but the repo is the %s", then, content, map[bool]string{true: "end", false: "start"}[len(dEnd) == 0])
						}
						if p.settled != nil {
							if msg := p.settled(dir); msg != "" {
								t.Fatalf("after %s: %s", then, msg)
							}
						}
					}
					if then == "recover" && p.name == "unset-migrate" && p.done(dir) {
						// Finished by recovery: run again, unset has nothing to
						// unset and says so (exit 1, as swamp's does).
						if r := swampj(t, dir, p.args...); r.code != 1 || !strings.Contains(r.stderr, "No namespace") {
							t.Fatalf("unset again after it finished: %+v", r)
						}
					} else if prog != binary {
						rerun := exec.Command(prog, p.args...)
						rerun.Dir = dir
						mustOK(t, runResult(t, rerun), "the same command again")
					} else {
						mustOK(t, swampjIn(t, dir, p.stdin, p.args...), "the same command again")
					}
					if got, ok := get(t, dir); !ok || got != p.new {
						t.Fatalf("after the re-run latest serves %q (readable: %v), want %q", got, ok, p.new)
					}
					if p.done != nil && !p.done(dir) {
						t.Fatal("the operation's effect does not hold after the re-run")
					}
					if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
						t.Fatalf("intent left open:\n%s", l.stdout)
					}
					mustDoctorSettled(t, dir)
					if p.verify != nil {
						p.verify(t, dir)
					} else {
						mustOK(t, swampj(t, dir, "catalog", "verify"), "catalog verify")
					}
					cc.Recovered()
				})
			}
		}
	}
}

// killReverseVerify accepts exactly the end state of a reverse migration
// that keeps the namespace: catalog verify reports the data as not
// migrated (exit 1, unmigrated_data) at the root data directory, and the
// catalog agrees with that data row for row — every row stamped with the
// solo namespace "" is one of the root's versions, none missing, none with
// wrong fields or flags — so the only difference is the stamp the next
// forward migration keeps.
func killReverseVerify(t *testing.T, dir string) {
	t.Helper()
	r := swampj(t, dir, "--json", "catalog", "verify")
	var rep struct {
		UnmigratedData string `json:"unmigratedData"`
		Counts         struct {
			RowsMissing, RowsStale, FlagsWrong, FieldsWrong, WrongNamespace int
		} `json:"counts"`
		StaleNamespaces []struct {
			Namespace string `json:"namespace"`
			Rows      int    `json:"rows"`
		} `json:"staleNamespaces"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("catalog verify --json: %v: %+v", err, r)
	}
	code, _ := errCode(t, r)
	c := rep.Counts
	if r.code != 1 || code != "unmigrated_data" || rep.UnmigratedData != filepath.Join(dir, ".swamp", "data") ||
		c.RowsMissing != 0 || c.FlagsWrong != 0 || c.FieldsWrong != 0 || c.WrongNamespace != 0 ||
		len(rep.StaleNamespaces) != 1 || rep.StaleNamespaces[0].Namespace != "" || rep.StaleNamespaces[0].Rows != c.RowsStale || c.RowsStale == 0 {
		t.Fatalf("catalog verify after a reverse that kept the namespace: want exactly the un-migrated state (data at the root, rows stamped \"\"): %+v\n%s", rep, r.stdout)
	}
	// The stamp is the forward migration's to keep: it restores a clean
	// verify without a rebuild.
	mustOK(t, swampj(t, dir, "datastore", "namespace", "migrate", "--confirm"), "migrate forward again")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "catalog verify after migrating forward again")
}

// TestKillDuringRecovery: recovery itself is killed part way (at its first
// rename) and run again: it converges.
func TestKillDuringRecovery(t *testing.T) {
	cc := fsxtest.Count(t, "recovery", "kill")
	cc.Check()
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	mustOK(t, swampjIn(t, dir, []byte(`{"v":1}`), "data", "write", addr), "v1")
	mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "set")
	if !swampjKilledAt(t, dir, "failpoint:journal.begin", nil, "datastore", "namespace", "migrate", "--confirm") {
		t.Fatal("migration not killed")
	}
	if !swampjKilledAt(t, dir, "rename:1", nil, "recover") {
		t.Fatal("recovery not killed")
	}
	mustOK(t, swampj(t, dir, "recover"), "recover again")
	mustDoctorSettled(t, dir)
	mustOK(t, swampj(t, dir, "catalog", "verify"), "verify")
	if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get").stdout; got != `{"v":1}` {
		t.Fatalf("content = %q", got)
	}
	cc.Recovered()
}

// TestKillPointSpecIsValidated: a malformed SWAMPJ_FAILPOINT is a usage error.
func TestKillPointSpecIsValidated(t *testing.T) {
	r := swampjEnv(t, newRepo(t), []string{"SWAMPJ_FAILPOINT=rename:zero"}, nil, "recover")
	if r.code != 2 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

// doctorSettled is the crash oracles' "the doctor is clean": exit 0, or
// findings that are all data_at_other_root. A reverse migration leaves the
// namespace set by design (its report says to unset it), and a forward one
// rolled back leaves the data at the root with the namespace set: the
// doctor names that (swamp reads an empty root), which no recovery
// changes. args are extra doctor flags (--repair --confirm).
func doctorSettled(t *testing.T, dir string, args ...string) (result, bool) {
	t.Helper()
	res := swampj(t, dir, append([]string{"--json", "doctor"}, args...)...)
	if res.code == 0 {
		return res, true
	}
	var rep struct {
		Findings []struct {
			Code, Status string
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || len(rep.Findings) == 0 {
		return res, false
	}
	for _, f := range rep.Findings {
		if f.Code != "data_at_other_root" && f.Status != "repaired" {
			return res, false
		}
	}
	return res, true
}

// mustDoctorSettled fails the test unless doctorSettled.
func mustDoctorSettled(t *testing.T, dir string) {
	t.Helper()
	if res, ok := doctorSettled(t, dir); !ok {
		t.Fatalf("doctor: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}
