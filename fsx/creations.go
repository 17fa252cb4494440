package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RemoveDeadCreations removes, in dir, the files that a creation under a
// temp name left when its process died: names prefix + "{pid}-{random}",
// optionally followed by "-{anything}" (a sidecar of the same creation,
// such as SQLite's -wal). A creation is left alone while busy(owner)
// reports this process is running it (owner is dir/prefix+"{pid}-{random}")
// or while a process with that pid exists on this host. Only regular files
// are removed. The journal and the catalog build a new file this way and
// link or rename it in complete (journal.CleanCreationLeftovers,
// catalog.CleanCreationLeftovers); what is left never held anything.
func RemoveDeadCreations(fsys FS, dir, prefix string, busy func(owner string) bool) error {
	fsys = OrReal(fsys)
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) || !e.Type().IsRegular() {
			continue
		}
		pidText, tail, _ := strings.Cut(strings.TrimPrefix(name, prefix), "-")
		random, _, _ := strings.Cut(tail, "-")
		if busy != nil && busy(filepath.Join(dir, prefix+pidText+"-"+random)) {
			continue // this process is creating it right now
		}
		if pid, perr := strconv.Atoi(pidText); perr == nil && pid != os.Getpid() && ProcessExists(pid) {
			continue
		}
		if err := fsys.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
