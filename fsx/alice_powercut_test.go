package fsx_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// aliceScene: in dir, an fsynced 4 KiB prefix of "f" plus 6 KiB more not
// fsynced, then a rename of "a" to "b" and a mkdir "d", none of them
// made durable by a directory fsync.
func aliceScene(t *testing.T) (string, *fsx.Fault) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("A"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := fsx.NewFault(fsx.Real()).TrackDurability()
	w, err := f.Create(filepath.Join(dir, "f"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(bytes.Repeat([]byte("x"), 4096))
	w.Sync()
	w.Write(bytes.Repeat([]byte("y"), 6144))
	w.Close()
	if err := f.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := f.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	if err := f.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, f
}

// TestALICECrashStates: each crash state does what its name says, and the
// list is the one this scene allows.
func TestALICECrashStates(t *testing.T) {
	_, probe := aliceScene(t)
	var modes []fsx.CrashMode
	for _, s := range probe.CrashStates() {
		modes = append(modes, s.Mode)
	}
	want := []fsx.CrashMode{fsx.CrashTorn, fsx.CrashGarbage, fsx.CrashOmit, fsx.CrashOmit, fsx.CrashOmit, fsx.CrashRenameNeither, fsx.CrashRenameBoth}
	if len(modes) != len(want) {
		t.Fatalf("states %v, want %v", modes, want)
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	for i, st := range probe.CrashStates() {
		dir, f := aliceScene(t)
		st = f.CrashStates()[i]
		if _, err := f.PowerCutState(st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, "f"))
		a, b, d := exists(filepath.Join(dir, "a")), exists(filepath.Join(dir, "b")), exists(filepath.Join(dir, "d"))
		ok := false
		switch st.Mode {
		case fsx.CrashTorn:
			ok = len(data) == 8192 && bytes.Equal(data[4096:], bytes.Repeat([]byte("y"), 4096)) && b && !a && d
		case fsx.CrashGarbage:
			ok = len(data) == 10240 && !bytes.Equal(data[4096:], bytes.Repeat([]byte("y"), 6144)) && bytes.Equal(data[:4096], bytes.Repeat([]byte("x"), 4096)) && b && d
		case fsx.CrashOmit:
			switch st.What {
			case "rename " + filepath.Join(dir, "b"):
				ok = a && !b && d && len(data) == 10240
			case "mkdir " + filepath.Join(dir, "d"):
				ok = b && !a && !d && len(data) == 10240
			default:
				ok = b && d && len(data) == 4096
			}
		case fsx.CrashRenameNeither:
			ok = !a && !b && d
		case fsx.CrashRenameBoth:
			ok = a && b && d
		}
		if !ok {
			t.Errorf("%s: f has %d bytes, a=%v b=%v d=%v", st, len(data), a, b, d)
		}
	}
}
