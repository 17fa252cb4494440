package main

// Real processes killed at named failpoints (SWAMPJ_FAILPOINT, fsx/killpoint.go):
// the real binary SIGKILLs itself right after a chosen disk operation; then
// the real `swampj recover` (or `--rollback`, or the same command again)
// must bring the repo to a clean doctor, with old-or-new content only.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// swampjKilledAt runs the binary with SWAMPJ_FAILPOINT=spec and reports
// whether SIGKILL ended it.
func swampjKilledAt(t *testing.T, dir, spec string, stdin []byte, args ...string) bool {
	t.Helper()
	cmd := exec.Command(binary, args...)
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

// TestKillPointsThenRecover kills each protocol at its durability
// boundaries, then takes the ordinary way out: `recover`, `recover
// --rollback`, or nothing, followed by the same command again. Right after
// the first step the content is old or new (never anything else) and no
// intent is open; after the re-run the operation's effect holds, doctor
// is clean and the catalog agrees.
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
			old:    `{"v":1}`, new: `{"v":1}`,
			done: func(dir string) bool {
				return nsExists(dir, ".swamp/ns1/data/command") && !nsExists(dir, ".swamp/data/command")
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
			new:    `{"v":1}`,
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
					if !swampjKilledAt(t, dir, point, p.stdin, p.args...) {
						t.Fatalf("the failpoint %s was never reached", point)
					}
					switch then {
					case "recover":
						mustOK(t, swampj(t, dir, "recover"), "recover")
					case "rollback":
						mustOK(t, swampj(t, dir, "recover", "--rollback"), "recover --rollback")
					}
					if then != "rerun" {
						if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
							t.Fatalf("intent left open after %s:\n%s", then, l.stdout)
						}
						if p.old != "" {
							if got := swampj(t, dir, "data", "get", addr); got.code == 0 && got.stdout != p.old && got.stdout != p.new {
								t.Fatalf("after %s latest serves %q: neither old nor new", then, got.stdout)
							}
						}
					}
					if then == "recover" && p.name == "unset-migrate" && p.done(dir) {
						// Finished by recovery: run again, unset has nothing to
						// unset and says so (exit 1, as swamp's does).
						if r := swampj(t, dir, p.args...); r.code != 1 || !strings.Contains(r.stderr, "No namespace") {
							t.Fatalf("unset again after it finished: %+v", r)
						}
					} else {
						mustOK(t, swampjIn(t, dir, p.stdin, p.args...), "the same command again")
					}
					if got := mustOK(t, swampj(t, dir, "data", "get", addr), "get").stdout; got != p.new {
						t.Fatalf("after the re-run latest serves %q, want %q", got, p.new)
					}
					if p.done != nil && !p.done(dir) {
						t.Fatal("the operation's effect does not hold after the re-run")
					}
					if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
						t.Fatalf("intent left open:\n%s", l.stdout)
					}
					mustOK(t, swampj(t, dir, "doctor"), "doctor")
					mustOK(t, swampj(t, dir, "catalog", "verify"), "catalog verify")
					cc.Recovered()
				})
			}
		}
	}
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
	mustOK(t, swampj(t, dir, "doctor"), "doctor")
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
