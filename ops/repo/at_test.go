package repo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAtIsTheRootItself: At accepts the directory holding .swamp.yaml and
// refuses, each saying why, a directory inside it (Find would climb from
// there), a missing path and a file; a root whose .swamp.yaml is lost but
// whose journal is there is a *ConfigLostError, as for Find.
func TestAtIsTheRootItself(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ConfigFileName), []byte("swampVersion: test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(root, "models")
	file := filepath.Join(root, "notes.txt")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := At(nil, root); err != nil || got != root {
		t.Fatalf("At(root) = %q, %v", got, err)
	}
	if got, err := Find(nil, inner); err != nil || got != root {
		t.Fatalf("Find(inner) = %q, %v: Find still climbs", got, err)
	}
	for path, reason := range map[string]string{inner: "holds no .swamp.yaml", filepath.Join(root, "typo"): "does not exist", file: "is not a directory"} {
		_, err := At(nil, path)
		var nr *NotARepoError
		if !errors.As(err, &nr) || !errors.Is(err, ErrNotARepo) || nr.Dir != path || nr.Reason != reason || !strings.Contains(err.Error(), path+" "+reason) {
			t.Errorf("At(%s) = %v, want a NotARepoError saying %q", path, err, reason)
		}
	}
	lost := t.TempDir()
	if err := os.MkdirAll(filepath.Join(lost, LocalDirName), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(JournalPathOf(lost), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var cl *ConfigLostError
	if _, err := At(nil, lost); !errors.As(err, &cl) || cl.Dir != lost {
		t.Errorf("At(a repo whose .swamp.yaml is lost) = %v, want a ConfigLostError", err)
	}
}
