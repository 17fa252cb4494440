package main

// Real processes killed from outside at random moments: a
// long namespace migration (hundreds of items, a catalog to restamp) and a
// loop of data writes are sent SIGKILL at a random time within their run,
// then the ordinary way out is taken (`recover`, `recover --rollback`, or
// the same command again). Every data file must exist exactly once with its
// bytes, no intent may stay open, every acknowledged write must read back,
// `latest` must name a readable version, and doctor and catalog verify
// must be clean once the operation is finished.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/fsx/fsxtest"
	"github.com/swampj/swampj/ops/example"
)

// killTrials: a few in short mode, more by default, many in the crash
// recipe's full mode.
func killTrials(short, normal, full int) int {
	switch {
	case fsxtest.Full():
		return full
	case testing.Short():
		return short
	}
	return normal
}

// killAfter starts the binary and sends SIGKILL after delay; it reports
// whether the process was killed (false: it finished first, with exit 0).
func killAfter(t *testing.T, dir string, delay time.Duration, stdin []byte, args ...string) (killed bool, ran time.Duration) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var se bytes.Buffer
	cmd.Stderr = &se
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
	err := cmd.Wait()
	timer.Stop()
	ran = time.Since(start)
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true, ran
		}
		t.Fatalf("%v: exit %d: %s", args, ee.ExitCode(), se.String())
	} else if err != nil {
		t.Fatal(err)
	}
	return false, ran
}

// killMigrationRepo is a synthetic repo (the benchmarks' generator) with a
// namespace set and the catalog built: the migration has every item to
// move and every row to restamp. The generated repo and its catalog are
// built once per test and copied for each trial (they are most of a
// trial's time), without a journal, as a repo that never crashed; the
// namespace is set on the copy (.swamp.yaml then names the datastore by
// its absolute path).
func killMigrationRepo(t *testing.T) func() string {
	tmpl := killMigrationTemplate(t)
	return func() string {
		dir := filepath.Join(t.TempDir(), "repo")
		fsxtest.CopyTree(t, tmpl, dir)
		mustOK(t, swampj(t, dir, "datastore", "namespace", "set", "ns1"), "namespace set")
		return dir
	}
}

func killMigrationTemplate(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "repo")
	if _, err := example.Synthetic(fsx.Real(), dir, example.SyntheticOptions{Items: 400, Versions: 3, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	mustOK(t, swampj(t, dir, "catalog", "rebuild", "--confirm"), "catalog rebuild")
	journals, _ := filepath.Glob(filepath.Join(dir, ".swamp", "*_journal.db*"))
	for _, j := range journals {
		if err := os.RemoveAll(j); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestKillRandomMigration(t *testing.T) {
	rng := rand.New(rand.NewPCG(fsxtest.Seed(t), 12))
	fresh := killMigrationRepo(t)
	probe := fresh()
	orig := treeSums(t, probe)
	args := []string{"datastore", "namespace", "migrate", "--confirm"}
	_, d := killAfter(t, probe, time.Hour, nil, args...)
	trials := killTrials(1, 1, 30)
	cc := fsxtest.Count(t, "migrate", "kill")
	outcomes := map[string]int{}
	for i := 0; i < trials; i++ {
		cc.Check()
		dir := fresh()
		delay := time.Duration(rng.Int64N(int64(d) * 12 / 10))
		killed, _ := killAfter(t, dir, delay, nil, args...)
		then := []string{"recover", "rollback", "rerun"}[rng.IntN(3)]
		where := fmt.Sprintf("trial %d: SIGKILL after %s of a %s run (killed=%v), then %s", i, delay, d, killed, then)
		switch then {
		case "recover":
			mustOK(t, swampj(t, dir, "recover"), where+": recover")
		case "rollback":
			mustOK(t, swampj(t, dir, "recover", "--rollback"), where+": recover --rollback")
		}
		if then != "rerun" {
			if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
				t.Fatalf("%s: intent left open:\n%s", where, l.stdout)
			}
			killOnceEach(t, dir, orig, where)
		}
		mustOK(t, swampj(t, dir, args...), where+": the same command again")
		killOnceEach(t, dir, orig, where+", after the re-run")
		got := treeSums(t, dir)
		for rel := range orig {
			if strings.HasPrefix(rel, ".swamp/data/") && !strings.Contains(rel, "_catalog.db") {
				if _, ok := got[rel]; ok {
					t.Fatalf("%s: %s is still at the solo path after the re-run", where, rel)
				}
			}
		}
		mustOK(t, swampj(t, dir, "doctor"), where+": doctor")
		mustOK(t, swampj(t, dir, "catalog", "verify"), where+": catalog verify")
		outcomes[fmt.Sprintf("killed=%v/%s", killed, then)]++
		cc.Recovered()
	}
	t.Logf("migration of %d files (%s uncut): %d random SIGKILLs recovered: %v", len(orig), d, trials, outcomes)
}

// killOnceEach: every file of the start exists exactly once, at its solo
// or its namespace path, with its bytes (the catalog and .swamp.yaml
// change by design).
func killOnceEach(t *testing.T, dir string, orig map[string]string, where string) {
	t.Helper()
	got := treeSums(t, dir)
	for rel, sum := range orig {
		if strings.Contains(rel, "_catalog.db") || rel == ".swamp.yaml" || strings.HasSuffix(rel, ".namespace.json") {
			continue
		}
		var at []string
		for _, cand := range []string{rel, ".swamp/ns1/" + strings.TrimPrefix(rel, ".swamp/")} {
			if _, ok := got[cand]; ok {
				at = append(at, cand)
			}
		}
		if len(at) != 1 {
			t.Fatalf("%s: %s exists %d times: %v", where, rel, len(at), at)
		}
		if got[at[0]] != sum {
			t.Fatalf("%s: %s changed content", where, at[0])
		}
	}
}

func TestKillRandomWriteLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(fsxtest.Seed(t), 13))
	dir := newRepo(t)
	addr := "command/shell/" + dataModel + "/result"
	payload := func(i int) []byte {
		return []byte(fmt.Sprintf("write %d ", i) + strings.Repeat(fmt.Sprintf("%03d", i%1000), 20000))
	}
	_, d := killAfter(t, dir, time.Hour, payload(0), "data", "write", addr)
	acked := map[string]bool{string(payload(0)): true}
	written := map[string]bool{string(payload(0)): true}
	trials := killTrials(8, 16, 80)
	cc := fsxtest.Count(t, "version-write", "kill")
	kills := 0
	for i := 1; i <= trials; i++ {
		cc.Check()
		p := payload(i)
		written[string(p)] = true
		delay := time.Duration(rng.Int64N(int64(d) * 15 / 10))
		killed, _ := killAfter(t, dir, delay, p, "data", "write", addr)
		where := fmt.Sprintf("write %d: SIGKILL after %s (killed=%v)", i, delay, killed)
		if !killed {
			acked[string(p)] = true
		} else {
			kills++
			rec := []string{"recover"}
			if rng.IntN(2) == 0 {
				rec = append(rec, "--rollback")
			}
			mustOK(t, swampj(t, dir, rec...), where+": "+strings.Join(rec, " "))
		}
		get := mustOK(t, swampj(t, dir, "data", "get", addr), where+": data get").stdout
		if !written[get] {
			t.Fatalf("%s: latest serves %d bytes that no write wrote", where, len(get))
		}
		if !killed && get != string(p) {
			t.Fatalf("%s: the write was acknowledged, but latest serves another version", where)
		}
		cc.Recovered()
	}
	// A writer killed in the last trial leaves its per-model lock, with a
	// dead pid. The next write takes it over, as the next run of swamp or
	// swampj would; without one the final doctor rightly calls it
	// lock_dead (an empty one only once older than newer swamp's 30 s
	// in-flight window, swamp-format §13.3).
	final := payload(trials + 1)
	written[string(final)], acked[string(final)] = true, true
	if r := swampjIn(t, dir, final, "data", "write", addr); r.code != 0 {
		t.Fatalf("the write after the loop: exit %d\n%s", r.code, r.stderr)
	}
	// Every acknowledged write reads back as one of the versions.
	cc.Check()
	latest, err := os.ReadFile(filepath.Join(dir, ".swamp", "data", "command", "shell", dataModel, "result", "latest"))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(string(latest), &n)
	found := map[string]bool{}
	for v := 1; v <= n; v++ {
		if r := swampj(t, dir, "data", "get", addr, "--version", fmt.Sprint(v)); r.code == 0 {
			found[r.stdout] = true
		}
	}
	for p := range acked {
		if !found[p] {
			t.Fatalf("an acknowledged write (%.12q...) is not among the %d versions", p, n)
		}
	}
	mustOK(t, swampj(t, dir, "doctor"), "doctor")
	mustOK(t, swampj(t, dir, "catalog", "verify"), "catalog verify")
	if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
		t.Fatalf("intent left open:\n%s", l.stdout)
	}
	cc.Recovered()
	t.Logf("write loop: %d writes (%s each uncut), %d killed at random, %d acknowledged, all read back; %d versions", trials, d, kills, len(acked), n)
}
