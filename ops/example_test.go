package ops_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops/catalogsync"
	"github.com/swampj/swampj/ops/doctor"
	"github.com/swampj/swampj/ops/host"
	"github.com/swampj/swampj/ops/read"
	"github.com/swampj/swampj/ops/repo"
	"github.com/swampj/swampj/ops/write"
)

// exampleRepo makes an empty swamp repo in a temporary directory and loads
// it: what a host program has once it knows where the repo is.
func exampleRepo() (*repo.Repo, func()) {
	dir, err := os.MkdirTemp("", "swampj-example-")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".swamp.yaml"), []byte("swampVersion: example\nrepoId: 7f0c3a52-0d7e-4b5e-9a57-1d1f6f2d9c11\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	r, err := repo.Load(nil, dir, func(string) string { return "" }) // nil FS: the real disk
	if err != nil {
		log.Fatal(err)
	}
	return r, func() { os.RemoveAll(dir) }
}

func mustAddr(s string) repo.Address {
	a, err := repo.ParseAddress(s)
	if err != nil {
		log.Fatal(err)
	}
	return a
}

// latest back at the last readable version.
func Example_doctor() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	a := mustAddr("command/shell/m1/result")
	for _, body := range []string{`{"v":1}`, `{"v":2}`} {
		if _, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: a, Content: strings.NewReader(body)}}, write.WriteOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	// Damage version 2 as a power cut under swamp would.
	raw := filepath.Join(r.DataRoot, "command", "shell", "m1", "result", "2", "raw")
	if err := os.Truncate(raw, 0); err != nil {
		log.Fatal(err)
	}

	check, err := doctor.Run(ctx, r, doctor.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("clean before:", check.Clean())
	fixed, err := doctor.Run(ctx, r, doctor.Options{Repair: true, Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("clean after repair:", fixed.Clean())
	d, err := read.OpenData(ctx, r, a, 0, host.Common{})
	if err != nil {
		log.Fatal(err)
	}
	d.Reader.Close()
	fmt.Println("latest is version", d.Version)
	// Output:
	// clean before: false
	// clean after repair: true
	// latest is version 1
}

// verifying it: a preview without Confirm changes nothing.
func Example_rebuildCatalog() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	if _, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: mustAddr("command/shell/m1/result"), Content: strings.NewReader("{}")}}, write.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	if err := os.Remove(r.CatalogPath); err != nil { // lost, or never built
		log.Fatal(err)
	}

	before, err := catalogsync.Verify(ctx, r, catalogsync.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in sync before:", before.InSync)
	rebuilt, err := catalogsync.Rebuild(ctx, r, catalogsync.Options{Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", rebuilt.CatalogCreated)
	after, err := catalogsync.Verify(ctx, r, catalogsync.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in sync after:", after.InSync)
	// Output:
	// in sync before: false
	// created: true
	// in sync after: true
}
