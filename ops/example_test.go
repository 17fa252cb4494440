package ops_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/swampj/swampj/ops"
	"github.com/swampj/swampj/ops/repo"
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

// Writing one version: staged, fsynced, published, then latest and the
// catalog move, all under one journaled intent.
func ExampleWriteVersions() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()

	out, err := ops.WriteVersions(ctx, nil, r, []ops.VersionWrite{{
		Address: mustAddr("command/shell/m1/result"),
		Content: strings.NewReader(`{"exitCode":0}`),
	}}, ops.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0].Address, "version", out[0].Version, *out[0].Metadata.Size, "bytes")
	// Output: command/shell/m1/result version 1 14 bytes
}

// Writing many versions, of one item or several, in one intent: either all
// of them are published or none is.
func ExampleWriteVersions_many() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()

	var writes []ops.VersionWrite
	for _, w := range []struct{ addr, body string }{
		{"command/shell/m1/result", `{"n":1}`},
		{"command/shell/m1/result", `{"n":2}`},
		{"command/shell/m2/log", "line\n"},
	} {
		writes = append(writes, ops.VersionWrite{Address: mustAddr(w.addr), Content: strings.NewReader(w.body)})
	}
	out, err := ops.WriteVersions(ctx, nil, r, writes, ops.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, v := range out {
		fmt.Println(v.Address, v.Version)
	}
	// Output:
	// command/shell/m1/result 1
	// command/shell/m1/result 2
	// command/shell/m2/log 1
}

// Reading the latest version (or one by number) with its metadata; a
// damaged version is an *ops.UnreadableDataError naming the last readable.
func ExampleOpenData() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	a := mustAddr("command/shell/m1/result")
	if _, err := ops.WriteVersions(ctx, nil, r, []ops.VersionWrite{{Address: a, Content: strings.NewReader(`{"ok":true}`)}}, ops.WriteOptions{}); err != nil {
		log.Fatal(err)
	}

	d, err := ops.OpenData(ctx, nil, r, a, 0) // 0: the version latest names
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

// A namespace migration: set the namespace (it moves no data), preview the
// plan, then confirm it. Migrate plans from the disk, so the same *Repo
// serves before and after SetNamespace; a re-run after any failure finishes
// the job.
func ExampleMigrate() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	if _, err := ops.WriteVersions(ctx, nil, r, []ops.VersionWrite{{Address: mustAddr("command/shell/m1/result"), Content: strings.NewReader("{}")}}, ops.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	if _, err := ops.SetNamespace(ctx, nil, r, "team-a", ops.NamespaceOptions{}); err != nil {
		log.Fatal(err)
	}

	preview, err := ops.Migrate(ctx, nil, r, ops.MigrateOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range preview.Preview.Directories {
		fmt.Printf("would move %s: %d file(s)\n", d.Subdir, d.FileCount)
	}
	done, err := ops.Migrate(ctx, nil, r, ops.MigrateOptions{Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("moved", done.Completed.MigratedDirectories, "into", done.Completed.Namespace)
	again, err := ops.Migrate(ctx, nil, r, ops.MigrateOptions{Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("re-run: nothing to do:", again.Completed.NothingToDo)
	// Output:
	// would move data: 3 file(s)
	// moved [data] into team-a
	// re-run: nothing to do: true
}

// The doctor finds a zero-byte latest version (what an unclean shutdown of
// swamp leaves, swamp #3955); a confirmed repair quarantines it and points
// latest back at the last readable version.
func ExampleDoctor() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	a := mustAddr("command/shell/m1/result")
	for _, body := range []string{`{"v":1}`, `{"v":2}`} {
		if _, err := ops.WriteVersions(ctx, nil, r, []ops.VersionWrite{{Address: a, Content: strings.NewReader(body)}}, ops.WriteOptions{}); err != nil {
			log.Fatal(err)
		}
	}
	// Damage version 2 as a power cut under swamp would.
	raw := filepath.Join(r.DataRoot, "command", "shell", "m1", "result", "2", "raw")
	if err := os.Truncate(raw, 0); err != nil {
		log.Fatal(err)
	}

	check, err := ops.Doctor(ctx, nil, r, ops.DoctorOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("clean before:", check.Clean())
	fixed, err := ops.Doctor(ctx, nil, r, ops.DoctorOptions{Repair: true, Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("clean after repair:", fixed.Clean())
	d, err := ops.OpenData(ctx, nil, r, a, 0)
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

// Rebuilding the catalog (derived state) from the data on disk, then
// verifying it: a preview without Confirm changes nothing.
func ExampleRebuildCatalog() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()
	if _, err := ops.WriteVersions(ctx, nil, r, []ops.VersionWrite{{Address: mustAddr("command/shell/m1/result"), Content: strings.NewReader("{}")}}, ops.WriteOptions{}); err != nil {
		log.Fatal(err)
	}
	if err := os.Remove(r.CatalogPath); err != nil { // lost, or never built
		log.Fatal(err)
	}

	before, err := ops.VerifyCatalog(ctx, nil, r, ops.CatalogOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in sync before:", before.InSync)
	rebuilt, err := ops.RebuildCatalog(ctx, nil, r, ops.CatalogOptions{Confirm: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", rebuilt.CatalogCreated)
	after, err := ops.VerifyCatalog(ctx, nil, r, ops.CatalogOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in sync after:", after.InSync)
	// Output:
	// in sync before: false
	// created: true
	// in sync after: true
}
