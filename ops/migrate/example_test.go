package migrate_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops/migrate"
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

// the job.
func ExampleMigrate() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	if _, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: mustAddr("command/shell/m1/result"), Content: strings.NewReader("{}")}}, write.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := migrate.SetNamespace(ctx, r, "team-a", migrate.NamespaceOptions{}); err != nil {
		log.Fatal(err)
	}

	preview, err := migrate.Migrate(ctx, r, migrate.MigrateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range preview.Preview.Directories {
		fmt.Printf("would move %s: %d file(s)\n", d.Subdir, d.FileCount)
	}
	done, err := migrate.Migrate(ctx, r, migrate.MigrateOptions{Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("moved", done.Completed.MigratedDirectories, "into", done.Completed.Namespace)
	again, err := migrate.Migrate(ctx, r, migrate.MigrateOptions{Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("re-run: nothing to do:", again.Completed.NothingToDo)
	// Output:
	// would move data: 3 file(s)
	// moved [data] into team-a
	// re-run: nothing to do: true
}
