// Command mkswamp writes swamp repos in swamp's exact layout, for tests,
// benchmarks and the bundled example:
//
//	go run ./cmd/mkswamp example DIR
//	go run ./cmd/mkswamp synthetic DIR --items N --versions M [--seed S]
//
// DIR must not exist or be empty. The data tree comes from package gen; the
// catalog (.swamp/data/_catalog.db) is then built from that tree by swampj's
// own `catalog rebuild` code and verified, so the two agree. The catalog is
// closed cleanly: no -wal or -shm file is left, and the journal the rebuild
// locked is removed, so DIR holds only what swamp itself would have.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/swampj/swampj/catalog"
	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/example"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/repo"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkswamp:", err)
		os.Exit(1)
	}
}

const usage = "usage: mkswamp example DIR | mkswamp synthetic DIR [--items N] [--versions M] [--seed S]"

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fsys := fsx.Real()
	fset := flag.NewFlagSet("mkswamp "+args[0], flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	items := fset.Int("items", 100, "data items")
	versions := fset.Int("versions", 10, "versions per item")
	seed := fset.Uint64("seed", 1, "random seed")
	pos, err := parseInterleaved(fset, args[1:])
	if err != nil {
		return fmt.Errorf("%v\n%s", err, usage)
	}
	if len(pos) != 1 {
		return errors.New(usage)
	}
	dir, err := filepath.Abs(pos[0])
	if err != nil {
		return err
	}
	if err := requireEmpty(dir); err != nil {
		return err
	}

	var st example.Stats
	switch args[0] {
	case "example":
		st, err = example.Write(fsys, dir)
	case "synthetic":
		st, err = example.Synthetic(fsys, dir, example.SyntheticOptions{Items: *items, Versions: *versions, Seed: *seed})
	default:
		return errors.New(usage)
	}
	if err != nil {
		return err
	}
	if err := buildCatalog(ctx, fsys, dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s: %d items, %d versions, catalog in sync\n", dir, st.Items, st.Versions)
	return nil
}

// buildCatalog rebuilds dir's catalog from its data tree, verifies it, and
// removes the journal the rebuild created for its lock.
func buildCatalog(ctx context.Context, fsys fsx.FS, dir string) error {
	// The environment must not redirect the datastore (SWAMP_DATASTORE, swamp-format §9.14).
	r, err := repo.Load(fsys, dir, func(string) string { return "" })
	if err != nil {
		return err
	}
	hadJournal, err := fsx.Exists(fsys, r.JournalPath)
	if err != nil {
		return err
	}
	if _, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Common: host.Common{FS: fsys}, Confirm: true}); err != nil {
		return fmt.Errorf("building the catalog: %w", err)
	}
	rep, err := catalogsync.Verify(ctx, r, catalogsync.Options{Common: host.Common{FS: fsys}})
	if err != nil {
		return fmt.Errorf("verifying the catalog: %w", err)
	}
	if !rep.InSync {
		return fmt.Errorf("the catalog does not agree with the tree after the rebuild: %+v", rep.Counts)
	}
	if !hadJournal {
		for _, p := range []string{r.JournalPath, r.JournalPath + ".holder"} {
			if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	// The repo is handed on as files: the catalog goes without the -wal
	// and -shm SQLite keeps between processes.
	c, err := catalog.Open(ctx, fsys, r.CatalogPath, catalog.Options{NoIntegrityCheck: true})
	if err != nil {
		return err
	}
	if err := c.CloseWAL(); err != nil {
		return err
	}
	for _, suf := range []string{"-wal", "-shm", "-journal"} {
		if ok, _ := fsx.Exists(fsys, r.CatalogPath+suf); ok {
			return fmt.Errorf("%s%s is left behind: the catalog was not closed cleanly", r.CatalogPath, suf)
		}
	}
	return nil
}

// parseInterleaved parses flags that may come before or after positionals.
func parseInterleaved(fset *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fset.Parse(args); err != nil {
			return nil, err
		}
		args = fset.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// requireEmpty refuses a DIR that holds anything.
func requireEmpty(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty; mkswamp writes only into a new or empty directory", dir)
	}
	return nil
}
