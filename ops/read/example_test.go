package read_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

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

// damaged version is an *read.UnreadableDataError naming the last readable.
func ExampleOpenData() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	a := mustAddr("command/shell/m1/result")
	if _, err := write.WriteVersions(ctx, r, []write.VersionWrite{{Address: a, Content: strings.NewReader(`{"ok":true}`)}}, write.WriteOptions{}); err != nil {
		log.Fatal(err)
	}

	d, err := read.OpenData(ctx, r, a, 0, host.Common{}) // 0: the version latest names
	if err != nil {
		log.Fatal(err)
	}
	defer d.Reader.Close()
	body, err := io.ReadAll(d.Reader)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("version %d (%s): %s %s\n", d.Version, d.Metadata.ContentType, body, d.Rule)
	// Output: version 1 (application/json): {"ok":true} file
}
