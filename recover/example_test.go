package recover_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/swampj/swampj/journal"
	"github.com/swampj/swampj/ops/host"
	swampjrecover "github.com/swampj/swampj/recover" // "recover" shadows the builtin
)

// startupHook is what a host program runs before it touches the repo: it
// finishes whatever an interrupted swampj left half done and maps the
// outcome to an exit status: 0 ready, 75 (EX_TEMPFAIL) someone else holds
// the repo — retry later, 1 anything else (a wrong directory included).
func startupHook(ctx context.Context, dir string, wait time.Duration) int {
	rep, err := swampjrecover.Run(ctx, dir, swampjrecover.Options{Common: host.Common{JournalLockTimeout: wait}})
	switch {
	case errors.Is(err, swampjrecover.ErrBusy):
		fmt.Println("busy, retry later")
		return 75
	case errors.Is(err, swampjrecover.ErrNotARepo):
		fmt.Println("not a swamp repo")
		return 1
	case err != nil:
		fmt.Println("recovery failed:", err)
		return 1
	}
	fmt.Printf("recovered %d, rolled back %d\n", rep.Finished, rep.RolledBack)
	return 0
}

// Recovery at startup, from any directory inside the repo. On a repo with
// nothing interrupted it creates nothing and returns in microseconds; a
// directory outside every repo is a typed error, never a silent success.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "swampj-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	outside := filepath.Join(dir, "elsewhere")
	repoDir := filepath.Join(dir, "repo")
	sub := filepath.Join(repoDir, "models", "command")
	for _, d := range []string{outside, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repoDir, ".swamp.yaml"), []byte("swampVersion: example\n"), 0o644); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	fmt.Println("exit", startupHook(ctx, sub, 2*time.Second))
	fmt.Println("exit", startupHook(ctx, outside, 2*time.Second))
	// Output:
	// recovered 0, rolled back 0
	// exit 0
	// not a swamp repo
	// exit 1
}

// While another swampj process holds the repo (here: this process holds
// its journal open), the hook gives up after its wait with ErrBusy and the
// host exits 75, as the CLI does.
func ExampleRun_busy() {
	dir, err := os.MkdirTemp("", "swampj-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: example\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	other, err := journal.Open(nil, swampjrecover.JournalPath(dir), journal.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer other.Close()

	fmt.Println("exit", startupHook(context.Background(), dir, 100*time.Millisecond))
	// Output:
	// busy, retry later
	// exit 75
}
