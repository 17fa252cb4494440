package store

import (
	"context"
	"io/fs"
	"sync"

	"github.com/swampj/swampj/fsx"
)

// WalkScanOptions configure WalkScan.
type WalkScanOptions struct {
	// Workers is how many goroutines scan items while the walk goes on
	// (≤ 0: one). Each caller keeps its own policy: the doctor scans on
	// one worker where the file system does not allow concurrent use, the
	// catalog's expected rows always on several.
	Workers int
	// Only, if set, says which items are scanned at all.
	Only func(Item) bool
	// Walked, if set, is called on the walk's goroutine for every item
	// handed to the workers (a progress total that grows with the walk).
	Walked func(Item)
	// Listings, if set, receives every directory listing the walk makes
	// (WalkListings), on the walk's goroutine.
	Listings func(dir string, entries []fs.DirEntry)
}

// WalkScan is the one walk-and-scan pipeline of the data root: Walk feeds
// items, o.Workers goroutines run scan on them, and use gets each item's
// result in walk order, on the caller's goroutine, so the outcome does not
// depend on scheduling. Items are independent and the scan (every version's
// files opened, checksums hashed) is most of the time, so it runs beside
// the walk instead of after it.
//
// use's first error stops the walk: the results still in flight are
// drained without use, and that error is returned. Otherwise the walk's
// own error (a directory it could not list, joined with the others; the
// context's) is returned once every result was used.
func WalkScan[T any](ctx context.Context, fsys fsx.FS, dataRoot string, o WalkScanOptions, scan func(Item) T, use func(Item, T) error) error {
	fsys = fsx.OrReal(fsys)
	workers := max(o.Workers, 1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		item Item
		out  chan T
	}
	type job struct {
		item Item
		out  chan T
	}
	jobs := make(chan job, workers*4)
	order := make(chan result, workers*16)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				j.out <- scan(j.item)
			}
		}()
	}
	walkErr := make(chan error, 1)
	go func() {
		defer close(order)
		defer close(jobs)
		walkErr <- WalkListings(ctx, fsys, dataRoot, func(it Item) error {
			if o.Only != nil && !o.Only(it) {
				return nil
			}
			if o.Walked != nil {
				o.Walked(it)
			}
			out := make(chan T, 1)
			select {
			case jobs <- job{it, out}:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case order <- result{it, out}:
			case <-ctx.Done():
				return ctx.Err()
			}
			return nil
		}, o.Listings)
	}()
	var useErr error
	for r := range order {
		v := <-r.out
		if useErr != nil {
			continue
		}
		if err := use(r.item, v); err != nil {
			useErr = err
			cancel()
		}
	}
	wg.Wait()
	werr := <-walkErr
	if useErr != nil {
		return useErr
	}
	return werr
}
