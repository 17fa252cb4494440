// Command batchwrite is a test-only program: it writes several versions in
// one intent, through the public API (write.WriteVersions), on the disk that
// SWAMPJ_FAILPOINT wraps, so the kill-point test can kill a real batch
// write. swampj's CLI writes one version per command, as swamp's does
// (swamp has no data write command taking several), and a multi-item form
// there would be CLI surface only tests use.
//
// With -handle it writes each version on its own, one after another,
// through one held write.Handle (write.Open), and prints "acked ADDR
// VERSION" as each write returns, so the power-cut image test knows which
// writes were acknowledged before the cut.
//
//	batchwrite ADDR=CONTENT...           (in the repo; exit 0 when all are written)
//	batchwrite -handle ADDR=CONTENT...
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "batchwrite:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fsys, err := fsx.WithKillPoint(fsx.Real(), os.Getenv)
	if err != nil {
		return err
	}
	defer fsx.KillPending()
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	root, err := repo.Find(fsys, wd)
	if err != nil {
		return err
	}
	r, err := repo.Load(fsys, root, os.Getenv)
	if err != nil {
		return err
	}
	handle := len(args) > 0 && args[0] == "-handle"
	if handle {
		args = args[1:]
	}
	var writes []write.VersionWrite
	for _, a := range args {
		addr, content, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("%q: want ADDR=CONTENT", a)
		}
		ad, err := repo.ParseAddress(addr)
		if err != nil {
			return err
		}
		writes = append(writes, write.VersionWrite{Address: ad, Content: strings.NewReader(content)})
	}
	opts := write.WriteOptions{Common: host.Common{FS: fsys}}
	if handle {
		return writeEach(r, writes, opts)
	}
	_, err = write.WriteVersions(context.Background(), r, writes, opts)
	return err
}

// writeEach writes one version at a time through one held handle.
func writeEach(r *repo.Repo, writes []write.VersionWrite, opts write.WriteOptions) error {
	ctx := context.Background()
	h, err := write.Open(ctx, r, opts)
	if err != nil {
		return err
	}
	for _, w := range writes {
		out, err := h.WriteVersions(ctx, []write.VersionWrite{w})
		if err != nil {
			_ = h.Close()
			return err
		}
		fmt.Printf("acked %s %d\n", w.Address, out[0].Version)
	}
	return h.Close()
}
