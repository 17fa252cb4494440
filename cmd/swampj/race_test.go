package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

// TestWritesRaceMigrations: swampj writer processes in loops against
// repeated namespace migrations back and forth (set, migrate --confirm,
// unset --migrate --confirm), for a bounded time. Afterwards: every write
// that reported success is readable with its exact bytes, every file that
// was there before is there exactly once (at the solo path, not in the
// namespace as well), `swampj recover` exits 0 and `swampj doctor` is
// clean. A write may be refused meanwhile — lock timeout (75), data not
// migrated yet, namespace changed — but nothing else.
func TestWritesRaceMigrations(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the race runs for ~12 s")
	}
	const ns = "race-ns"
	dir := t.TempDir()
	pre := map[string]string{
		".swamp.yaml":                   "swampVersion: test\nrepoId: 5b0c9e2a-7f4d-4e1b-9a3c-2d8e6f1a0b7c\n",
		".swamp/outputs/run-1/out.json": `{"ok":true}`,
		".swamp/workflow-runs/wf/1.yml": "status: done\n",
		".swamp/audit/a.jsonl":          "{}\n",
	}
	fsxtest.WriteFiles(t, dir, pre)
	type written struct {
		addr    string
		version int64
		content string
	}
	var mu sync.Mutex
	var ok []written
	refused := map[string]int{}
	for _, a := range []string{"command/shell/m1/out", "command/shell/m2/out"} {
		if r := swampjIn(t, dir, []byte("seed "+a), "data", "write", a, "--json"); r.code != 0 {
			t.Fatalf("seed: %+v", r)
		}
	}
	preData := fsxtest.Snapshot(t, filepath.Join(dir, ".swamp", "data"), func(rel string) bool { return strings.HasPrefix(rel, "_catalog.db") })

	deadline := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	var failMu sync.Mutex
	var failures []string
	fail := func(s string) {
		failMu.Lock()
		failures = append(failures, s)
		failMu.Unlock()
	}
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline) && i < 2000; i++ {
				addr := fmt.Sprintf("command/shell/m%d/out", 1+(i+w)%2)
				content := fmt.Sprintf("writer %d write %d", w, i)
				r := swampjIn(t, dir, []byte(content), "data", "write", addr, "--json", "--lock-timeout", "5s")
				if r.code == 0 {
					var out struct {
						Version int64 `json:"version"`
					}
					if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
						fail("write output: " + r.stdout)
						continue
					}
					mu.Lock()
					ok = append(ok, written{addr, out.Version, content})
					mu.Unlock()
					continue
				}
				code := nsErrorCode(t, r.stderr)
				switch code {
				case "lock_timeout", "catalog_busy", "unmigrated_data", "namespace_changed":
					mu.Lock()
					refused[code]++
					mu.Unlock()
					time.Sleep(20 * time.Millisecond) // the migration is on its way: let it run
				default:
					fail(fmt.Sprintf("write %s: exit %d: %s", addr, r.code, r.stderr))
				}
			}
		}(w)
	}
	cycles := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for time.Now().Before(deadline) && cycles < 40 {
			for _, args := range [][]string{
				{"datastore", "namespace", "set", ns},
				{"datastore", "namespace", "migrate", "--confirm"},
				{"datastore", "namespace", "unset", "--migrate", "--confirm"},
			} {
				r := swampj(t, dir, append(args, "--lock-timeout", "20s")...)
				for tries := 0; r.code == 75 && tries < 3; tries++ {
					// Busy (the writers held their model locks past the
					// timeout on a loaded machine): retry later, as exit
					// 75 says. The intent, if any, stays open and the
					// re-run finishes it.
					mu.Lock()
					refused["structural_busy"]++
					mu.Unlock()
					r = swampj(t, dir, append(args, "--lock-timeout", "20s")...)
				}
				if r.code != 0 {
					fail(fmt.Sprintf("%s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr))
					return
				}
				if args[2] != "set" {
					time.Sleep(150 * time.Millisecond) // a window for writes in each layout
				}
			}
			cycles++
		}
	}()
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d unexpected failure(s):\n%s", len(failures), strings.Join(failures, "\n"))
	}
	t.Logf("%d migration cycles, %d writes succeeded, refused: %v", cycles, len(ok), refused)
	if cycles == 0 || len(ok) == 0 {
		t.Fatalf("the race did not run: %d cycles, %d writes", cycles, len(ok))
	}

	nsWant(t, 0, dir, "recover")
	for _, w := range ok {
		r := nsWant(t, 0, dir, "data", "get", w.addr, "--version", fmt.Sprint(w.version))
		if r.stdout != w.content {
			t.Fatalf("%s v%d: got %q, want %q", w.addr, w.version, r.stdout, w.content)
		}
	}
	for rel, content := range pre {
		if rel == ".swamp.yaml" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil || string(got) != content {
			t.Fatalf("%s: %q, %v", rel, got, err)
		}
		if nsExists(dir, strings.Replace(rel, ".swamp/", ".swamp/"+ns+"/", 1)) {
			t.Fatalf("%s is also in the namespace", rel)
		}
	}
	now := fsxtest.Snapshot(t, filepath.Join(dir, ".swamp", "data"), func(rel string) bool { return strings.HasPrefix(rel, "_catalog.db") })
	for rel, e := range preData {
		if e.Kind == "file" && now[rel] != e && !strings.HasSuffix(rel, "latest") {
			t.Fatalf("seed file data/%s changed or lost", rel)
		}
	}
	nsWant(t, 0, dir, "doctor")
	nsWant(t, 0, dir, "catalog", "verify")
	// A writer that prepared for the namespace and found it gone under
	// its locks leaves the empty parents of its model lock there: debris,
	// never a file (the next migration absorbs it).
	if !nsExists(dir, ".swamp/"+ns) {
		return
	}
	if left := fsxtest.Snapshot(t, filepath.Join(dir, ".swamp", ns), nil); len(left) > 0 {
		for rel, e := range left {
			if e.Kind != "dir" {
				t.Fatalf("the namespace directory holds %s (%s) after unset --migrate", rel, e.Kind)
			}
		}
		t.Logf("debris left in the namespace directory: %d empty directories", len(left))
	}
}
