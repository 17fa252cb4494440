package main

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The remedy matrix's rows of an extension datastore's cache: damage made
// in a real swamp checkout of an S3 bucket (the shared S3 stack: the rows
// skip with a notice where it is absent), every command run with that
// checkout's HOME, so swampj finds the cache swamp keeps.

// matrixCheckouts maps a row's repo directory to its checkout.
var matrixCheckouts sync.Map

// cacheRow is a row whose damage is made in checkout A of a new S3 origin
// (versions 1 and 2 of m1 written by swamp, so its cache holds them and
// their index entries) by damage(cache dir, item's cache-relative dir).
func cacheRow(code, how, remedy string, damage func(t *testing.T, co *checkout, cache, item string)) matrixRow {
	return matrixRow{code: code, how: how, remedy: remedy,
		setup: func(t *testing.T) string {
			co := newS3Origin(t, 2)
			damage(t, co, co.cacheDir(), co.itemRel("m1", "result"))
			matrixCheckouts.Store(co.dir, co)
			return co.dir
		},
		as: func(t *testing.T, dir string, args ...string) result {
			co, ok := matrixCheckouts.Load(dir)
			if !ok {
				t.Fatalf("no checkout for %s", dir)
			}
			return co.(*checkout).swampj(args...)
		},
	}
}

func cacheMatrixRows() []matrixRow {
	unknown := cacheRow("cache_unknown_file", "a file something other than swamp wrote into the cache", "inspect",
		func(t *testing.T, co *checkout, cache, item string) {
			must(t, os.WriteFile(filepath.Join(cache, "stray.yaml"), []byte("x: 1\n"), 0o644))
		})
	unknown.person = func(t *testing.T, dir string) {
		co, _ := matrixCheckouts.Load(dir)
		cache := co.(*checkout).cacheDir()
		must(t, os.Rename(filepath.Join(cache, "stray.yaml"), filepath.Join(co.(*checkout).home, "stray.yaml")))
	}
	return []matrixRow{
		cacheRow("cache_torn_file", "a cache raw cut to zero bytes (a killed pull)", "repair",
			func(t *testing.T, co *checkout, cache, item string) {
				truncate(t, filepath.Join(cache, filepath.FromSlash(item), "1", "raw"))
			}),
		cacheRow("cache_stale_file", "a cache metadata.yaml of the index's size but other bytes", "repair",
			func(t *testing.T, co *checkout, cache, item string) {
				p := filepath.Join(cache, filepath.FromSlash(item), "1", "metadata.yaml")
				b, err := os.ReadFile(p)
				must(t, err)
				b[0] = '#'
				must(t, os.WriteFile(p, b, 0o644))
			}),
		cacheRow("cache_stale_latest", "a latest of the same size naming the older version", "repair",
			func(t *testing.T, co *checkout, cache, item string) {
				must(t, os.WriteFile(filepath.Join(cache, filepath.FromSlash(item), "latest"), []byte("1"), 0o644))
			}),
		cacheRow("cache_missing_file", "an indexed raw gone from the cache while the fast path is armed", "repair",
			func(t *testing.T, co *checkout, cache, item string) {
				must(t, os.Remove(filepath.Join(cache, filepath.FromSlash(item), "1", "raw")))
			}),
		cacheRow("cache_temp_leftover", "a temp file of the extension's atomic write a crash left", "repair",
			func(t *testing.T, co *checkout, cache, item string) {
				must(t, os.WriteFile(filepath.Join(cache, ".0b0e6f1d-3a8e-4a57-9b0c-1f7c8a3c5e21.tmp"), []byte("{"), 0o644))
			}),
		unknown,
	}
}
