// Command hostprog is a host program written from swampj's README ("For
// other tools") and `go doc` alone, as another swamp tool would use swampj:
// at startup it finishes whatever an interrupted swampj left half done,
// then it reads the repo. It imports only public packages.
//
// Usage: hostprog [DIR]   (DIR: any directory inside the repo; default ".")
//
// Exit status: 0 ready (the data items are listed on stdout), 75 the repo
// is busy — another process holds it, retry later (EX_TEMPFAIL) — 3 DIR is
// not inside a swamp repo, 1 anything else.
//
// The root package's TestHostProgram builds and runs it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	swampjrecover "github.com/swampj/swampj/recover" // "recover" shadows the builtin
)

const (
	exitBusy     = 75 // EX_TEMPFAIL: retry later
	exitNotARepo = 3
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	os.Exit(run(context.Background(), dir))
}

func run(ctx context.Context, dir string) int {
	rep, err := swampjrecover.Run(ctx, dir, swampjrecover.Options{Common: host.Common{JournalLockTimeout: 2 * time.Second}})
	switch {
	case errors.Is(err, swampjrecover.ErrBusy):
		fmt.Fprintf(os.Stderr, "hostprog: the repo is busy, retry later: %v\n", err)
		return exitBusy
	case errors.Is(err, swampjrecover.ErrNotARepo):
		fmt.Fprintf(os.Stderr, "hostprog: %s is not inside a swamp repo: %v\n", dir, err)
		return exitNotARepo
	case err != nil:
		fmt.Fprintf(os.Stderr, "hostprog: recovery failed: %v\n", err)
		return 1
	}
	fmt.Printf("recovered %d, rolled back %d\n", rep.Finished, rep.RolledBack)

	// The repo is consistent now: read it (nil FS: the real disk, nil
	// getenv: the process environment).
	root, err := repo.Find(nil, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostprog: %v\n", err)
		return 1
	}
	r, err := repo.Load(nil, root, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostprog: %v\n", err)
		return 1
	}
	items, err := read.ListData(ctx, r, "", host.Common{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostprog: listing the data: %v\n", err)
		return 1
	}
	for _, it := range items {
		fmt.Println(it.Address)
	}
	fmt.Printf("%d data item(s)\n", len(items))
	return 0
}
