package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMkswampWritesACatalogInSync(t *testing.T) {
	for _, args := range [][]string{
		{"example", "DIR"},
		{"synthetic", "DIR", "--items", "7", "--versions", "3"},
		{"synthetic", "--items", "7", "DIR", "--versions", "3"},
	} {
		dir := filepath.Join(t.TempDir(), "repo")
		for i, a := range args {
			if a == "DIR" {
				args[i] = dir
			}
		}
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		if !strings.Contains(out.String(), "catalog in sync") {
			t.Fatalf("%v: %s", args, out.String())
		}
		data := filepath.Join(dir, ".swamp", "data")
		if _, err := os.Stat(filepath.Join(data, "_catalog.db")); err != nil {
			t.Fatal(err)
		}
		for _, left := range []string{filepath.Join(data, "_catalog.db-wal"), filepath.Join(data, "_catalog.db-shm"),
			filepath.Join(dir, ".swamp", "_journal.db"), filepath.Join(dir, ".swamp", "_journal.db.holder")} {
			if _, err := os.Stat(left); err == nil {
				t.Fatalf("%v: %s left behind", args, left)
			}
		}
		if args[0] == "synthetic" && !strings.Contains(out.String(), "7 items, 21 versions") {
			t.Fatalf("%v: %s", args, out.String())
		}
		if err := run(context.Background(), args, &out); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("a second run into the same DIR must refuse: %v", err)
		}
	}
}

func TestMkswampUsage(t *testing.T) {
	for _, args := range [][]string{nil, {"example"}, {"nope", t.TempDir()}, {"synthetic", "a", "b"}} {
		if err := run(context.Background(), args, &bytes.Buffer{}); err == nil {
			t.Fatalf("%v: want a usage error", args)
		}
	}
}
