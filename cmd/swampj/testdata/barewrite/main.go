// Command barewrite is the baseline of the CLI write benchmark
// (BenchmarkDataWriteProcess): a process that makes one version durable
// with the least file work a crash-safe version needs and nothing else —
// no journal, no catalog, no lock, no configuration. It reads PATH and
// writes ITEMDIR/N/{raw,metadata.yaml} through a staging directory, then
// replaces ITEMDIR/latest: 5 flushes, one after another (raw, metadata,
// the staging directory, the `latest` temp file, the item directory).
//
//	barewrite ITEMDIR N PATH
package main

import (
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if len(os.Args) != 4 {
		os.Stderr.WriteString("usage: barewrite ITEMDIR N PATH\n")
		os.Exit(2)
	}
	dir, n, src := os.Args[1], os.Args[2], os.Args[3]
	payload, err := os.ReadFile(src)
	check(err)
	stage := filepath.Join(dir, ".stage-"+n)
	check(os.Mkdir(stage, 0o755))
	writeSynced(filepath.Join(stage, "raw"), payload)
	writeSynced(filepath.Join(stage, "metadata.yaml"), []byte(strings.Repeat("m", 420)))
	syncDir(stage)
	check(os.Rename(stage, filepath.Join(dir, n)))
	tmp := filepath.Join(dir, ".latest.tmp")
	writeSynced(tmp, []byte(n))
	check(os.Rename(tmp, filepath.Join(dir, "latest")))
	syncDir(dir)
}

func writeSynced(path string, data []byte) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	check(err)
	_, err = f.Write(data)
	check(err)
	check(f.Sync())
	check(f.Close())
}

func syncDir(dir string) {
	d, err := os.Open(dir)
	check(err)
	check(d.Sync())
	check(d.Close())
}

func check(err error) {
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
