package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swampj/swampj/ops/lock"
)

// Either global lock of a namespace held by another live process (swamp-format
// §13.2: 06b6147's .locks/{ns}.lock, newer swamp's {ns}/.datastore.lock)
// makes a confirmed migrate and a data write wait, then exit 75 after the
// lock timeout, naming the holder, with nothing changed.
func TestEitherGlobalLockMakesSwampjExit75(t *testing.T) {
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	host, _ := os.Hostname()
	rec := lock.Info{Holder: "op@" + host, Hostname: host, Pid: sleeper.Process.Pid, AcquiredAt: time.Now().UTC().Truncate(time.Millisecond),
		TTLMs: 3_600_000, Nonce: "2c5e9f0a-8b1d-4e7c-9a36-5f0d1e2b3c4d"}.Encode()
	for _, newer := range []bool{false, true} {
		name := "06b6147's"
		if newer {
			name = "newer swamp's"
		}
		t.Run(name, func(t *testing.T) {
			// One repo to migrate, one already migrated to write into.
			toMigrate, toWrite := nsRepo(t), nsRepo(t)
			mustOK(t, swampj(t, toMigrate, "datastore", "namespace", "set", nsSlug), "namespace set")
			mustOK(t, swampj(t, toWrite, "datastore", "namespace", "set", nsSlug), "namespace set")
			mustOK(t, swampj(t, toWrite, "datastore", "namespace", "migrate", "--confirm"), "namespace migrate")
			plant := func(dir string) string {
				base := filepath.Join(dir, ".swamp")
				held := lock.GlobalPath(base, nsSlug)
				if newer {
					held = lock.NewerGlobalPath(base, nsSlug)
				}
				if err := os.MkdirAll(filepath.Dir(held), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(held, rec, 0o644); err != nil {
					t.Fatal(err)
				}
				return held
			}
			for _, c := range []struct {
				dir  string
				args []string
			}{
				{toMigrate, []string{"datastore", "namespace", "migrate", "--confirm"}},
				{toWrite, []string{"data", "write", "command/shell/m1/out"}},
			} {
				dir, args := c.dir, c.args
				held := plant(dir)
				before := treeManifest(t, dir)
				cmd := exec.Command(binary, append([]string{"--json", "--lock-timeout", "500ms"}, args...)...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "SWAMP_LOCK_TIMEOUT_MS=500")
				cmd.Stdin = strings.NewReader(`{"v":9}`)
				start := time.Now()
				r := runResult(t, cmd)
				if r.code != exitLockTimeout {
					t.Fatalf("%v: exit %d, want 75\n%s%s", args, r.code, r.stdout, r.stderr)
				}
				if waited := time.Since(start); waited < 400*time.Millisecond || waited > 20*time.Second {
					t.Errorf("%v: waited %s, want about the lock timeout", args, waited)
				}
				if !strings.Contains(r.stderr, held) || !strings.Contains(r.stderr, itoa(sleeper.Process.Pid)) {
					t.Errorf("%v: the error must name %s and pid %d: %s", args, held, sleeper.Process.Pid, r.stderr)
				}
				// Only the lock directory of 06b6147's global lock, which
				// swampj (as swamp) creates to take it first, may appear.
				var d []string
				for _, c := range diffManifest(before, treeManifest(t, dir)) {
					if c != "created .swamp/.locks" {
						d = append(d, c)
					}
				}
				if len(d) > 0 {
					t.Fatalf("%v changed the tree while refused: %v", args, d)
				}
			}
		})
	}
}
