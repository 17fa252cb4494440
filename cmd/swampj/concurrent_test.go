package main

// Real processes writing different models at once: they run
// side by side, and a SIGKILL of one leaves the others' writes and intents
// alone; the next writer of the killed one's model finishes its work.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swampj/swampj/fsx/fsxtest"
)

func concAddrCLI(i int) string {
	return fmt.Sprintf("command/shell/%08d-5a1d-4e8f-9b6c-0d2e4f6a8b1c/result", i)
}

func TestKillRandomConcurrentWriters(t *testing.T) {
	rng := rand.New(rand.NewPCG(fsxtest.Seed(t), 23))
	payload := filepath.Join(t.TempDir(), "payload")
	if err := os.WriteFile(payload, []byte(strings.Repeat("concurrent writers of different models\n", 2000)), 0o644); err != nil {
		t.Fatal(err)
	}
	cc := fsxtest.Count(t, "concurrent-writes", "kill")
	for trial := 0; trial < killTrials(2, 4, 20); trial++ {
		cc.Check()
		dir := newRepo(t)
		for i := 0; i < 3; i++ {
			mustOK(t, swampj(t, dir, "data", "write", concAddrCLI(i), "--file", payload), "first version")
		}
		// Writers of models 1 and 2 write 4 versions each, while one write
		// of model 0 is killed at a random moment.
		var wg sync.WaitGroup
		errs := make(chan string, 8)
		for i := 1; i <= 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; k < 4; k++ {
					if r := swampj(t, dir, "data", "write", concAddrCLI(i), "--file", payload, "--lock-timeout", "20s"); r.code != 0 {
						errs <- fmt.Sprintf("model %d write %d: exit %d: %s", i, k, r.code, r.stderr)
					}
				}
			}()
		}
		delay := time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
		killed, _ := killAfter(t, dir, delay, nil, "data", "write", concAddrCLI(0), "--file", payload)
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatalf("trial %d (kill after %s, killed=%v): %s", trial, delay, killed, e)
		}
		// The next writer of model 0 finishes or undoes the killed write.
		mustOK(t, swampj(t, dir, "data", "write", concAddrCLI(0), "--file", payload), "the next write of the killed model")
		if l := mustOK(t, swampj(t, dir, "journal", "list"), "journal list"); strings.Contains(l.stdout, " open ") {
			t.Fatalf("trial %d: intent left open:\n%s", trial, l.stdout)
		}
		for i := 1; i <= 2; i++ {
			r := mustOK(t, swampj(t, dir, "data", "get", concAddrCLI(i), "--json"), "data get")
			if !strings.Contains(r.stdout, `"version": 5`) && !strings.Contains(r.stdout, `"version":5`) {
				t.Fatalf("trial %d: model %d's latest is not version 5: %s", trial, i, r.stdout)
			}
		}
		if r := swampj(t, dir, "doctor", "datastores"); r.code != 0 {
			t.Fatalf("trial %d: doctor after the writers (exit %d):\n%s%s", trial, r.code, r.stdout, r.stderr)
		}
		cc.Recovered()
	}
}
