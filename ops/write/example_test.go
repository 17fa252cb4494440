package write_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

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

// catalog move, all under one journaled intent.
func ExampleWriteVersions() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()

	out, err := write.WriteVersions(ctx, r, []write.VersionWrite{{
		Address: mustAddr("command/shell/m1/result"),
		Content: strings.NewReader(`{"exitCode":0}`),
	}}, write.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out[0].Address, "version", out[0].Version, *out[0].Metadata.Size, "bytes")
	// Output: command/shell/m1/result version 1 14 bytes
}

// of them are published or none is.
func ExampleWriteVersions_many() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()

	var writes []write.VersionWrite
	for _, w := range []struct{ addr, body string }{
		{"command/shell/m1/result", `{"n":1}`},
		{"command/shell/m1/result", `{"n":2}`},
		{"command/shell/m2/log", "line\n"},
	} {
		writes = append(writes, write.VersionWrite{Address: mustAddr(w.addr), Content: strings.NewReader(w.body)})
	}
	out, err := write.WriteVersions(ctx, r, writes, write.WriteOptions{})
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

// A host that writes often holds the repo open: one handle for the
// process, used from every goroutine, closed once.
func ExampleOpen() {
	r, cleanup := exampleRepo()
	defer cleanup()
	ctx := context.Background()

	h, err := write.Open(ctx, r, write.WriteOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	done := make(chan []write.WrittenVersion)
	for _, name := range []string{"alpha", "beta"} {
		go func() {
			a := mustAddr("command/shell/3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c/" + name)
			out, err := h.WriteVersions(ctx, []write.VersionWrite{{Address: a, Content: strings.NewReader(name + " output")}})
			if err != nil {
				log.Fatal(err)
			}
			done <- out
		}()
	}
	versions := map[string]int64{}
	for range 2 {
		out := <-done
		versions[out[0].Address.DataName] = out[0].Version
	}
	fmt.Println("alpha", versions["alpha"], "beta", versions["beta"])
	// Output: alpha 1 beta 1
}
