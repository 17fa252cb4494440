package fsx_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// deadPID is the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestRemoveDeadCreations(t *testing.T) {
	dir := t.TempDir()
	const prefix = ".thing.creating-"
	dead, alive := deadPID(t), os.Getppid()
	names := map[string]bool{ // name -> stays
		fmt.Sprintf("%s%d-aaaa", prefix, dead):            false,
		fmt.Sprintf("%s%d-aaaa-wal", prefix, dead):        false, // a sidecar of the same creation
		fmt.Sprintf("%s%d-bbbb", prefix, alive):           true,
		fmt.Sprintf("%s%d-cccc", prefix, os.Getpid()):     true, // busy below
		fmt.Sprintf("%s%d-cccc-shm", prefix, os.Getpid()): true,
		fmt.Sprintf("%s%d-dddd", prefix, os.Getpid()):     false, // this process, not busy: a creation that returned
		"thing": true,
		fmt.Sprintf(".other.creating-%d-eeee", dead): true,
	}
	for n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("%s%d-ffff", prefix, dead)), 0o755); err != nil {
		t.Fatal(err)
	}
	names[fmt.Sprintf("%s%d-ffff", prefix, dead)] = true // not a regular file
	busy := filepath.Join(dir, fmt.Sprintf("%s%d-cccc", prefix, os.Getpid()))
	if err := fsx.RemoveDeadCreations(nil, dir, prefix, func(owner string) bool { return owner == busy }); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for n, stays := range names {
		if stays {
			want = append(want, n)
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		got = append(got, e.Name())
	}
	sort.Strings(want)
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	if err := fsx.RemoveDeadCreations(nil, filepath.Join(dir, "missing"), prefix, nil); err != nil {
		t.Fatalf("a missing directory: %v", err)
	}
}

// PublishNoReplace links the complete file in, never over an existing
// name, and leaves the temp for the caller.
func TestPublishNoReplace(t *testing.T) {
	dir := t.TempDir()
	tmp, path := filepath.Join(dir, ".new.tmp"), filepath.Join(dir, "name")
	if err := os.WriteFile(tmp, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	moved, err := fsx.PublishNoReplace(nil, tmp, path)
	if err != nil || moved {
		t.Fatalf("publish: moved %v, %v; want a link", moved, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("published %q", b)
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Fatalf("the temp name is gone after a link: %v", err)
	}
	other := filepath.Join(dir, ".other.tmp")
	if err := os.WriteFile(other, []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fsx.PublishNoReplace(nil, other, path); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("publishing over an existing name: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("the existing file was replaced: %q", b)
	}
}
