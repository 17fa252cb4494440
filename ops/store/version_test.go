package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

// TestReadVersionDamage gives each kind of damage as a small function over a
// complete version 2 and checks what ReadVersion reports.
func TestReadVersionDamage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		state  store.State
		codes  []store.Code
	}{
		{"complete", func(*testing.T, string) {}, store.StateReadable, nil},
		{"issue 3955: both files zero bytes", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), nil)
			writeFile(t, filepath.Join(dir, "raw"), nil)
		}, store.StateDamaged, []store.Code{store.CodeMetadataEmpty, store.CodeRawEmpty}},
		{"zero-byte metadata", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), nil)
		}, store.StateDamaged, []store.Code{store.CodeMetadataEmpty}},
		{"whitespace metadata", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), []byte("\n  \n"))
		}, store.StateDamaged, []store.Code{store.CodeMetadataEmpty}},
		{"zero-byte raw", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "raw"), nil)
		}, store.StateDamaged, []store.Code{store.CodeRawEmptyMismatch}},
		{"raw of another size", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "raw"), []byte(`{"n":2,"more":true}`))
		}, store.StateDamaged, []store.Code{store.CodeSizeMismatch}},
		{"same size, other bytes: found only with VerifyChecksum", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "raw"), []byte(`{"n":9}`))
		}, store.StateReadable, nil},
		{"not YAML", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), []byte("name: [unclosed\n"))
		}, store.StateDamaged, []store.Code{store.CodeMetadataInvalid}},
		{"fails the schema", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), []byte("name: result\nversion: -1\n"))
		}, store.StateDamaged, []store.Code{store.CodeMetadataInvalid}},
		{"metadata names another version", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), metadataYAML("result", 3, content(2)))
		}, store.StateDamaged, []store.Code{store.CodeVersionMismatch}},
		{"metadata names another item", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "metadata.yaml"), metadataYAML("other", 2, content(2)))
		}, store.StateDamaged, []store.Code{store.CodeNameMismatch}},
		{"metadata is a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "metadata.yaml"))
			mkdir(t, filepath.Join(dir, "metadata.yaml"))
		}, store.StateDamaged, []store.Code{store.CodeMetadataNotRegular}},
		{"raw is a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "raw"))
			mkdir(t, filepath.Join(dir, "raw"))
		}, store.StateDamaged, []store.Code{store.CodeRawNotRegular}},
		{"streaming: raw without metadata", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "metadata.yaml"))
		}, store.StateIncomplete, []store.Code{store.CodeMetadataMissing}},
		{"metadata without raw", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "raw"))
		}, store.StateIncomplete, []store.Code{store.CodeRawMissing}},
		{"allocated, never written", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "raw"))
			os.Remove(filepath.Join(dir, "metadata.yaml"))
		}, store.StateIncomplete, []store.Code{store.CodeMetadataMissing, store.CodeRawMissing}},
		{"no directory", func(t *testing.T, dir string) {
			os.RemoveAll(dir)
		}, store.StateMissing, []store.Code{store.CodeVersionMissing}},
		{"a file where the directory should be", func(t *testing.T, dir string) {
			os.RemoveAll(dir)
			writeFile(t, dir, []byte("2"))
		}, store.StateDamaged, []store.Code{store.CodeVersionNotDir}},
		{"symlinked metadata counts (stat semantics)", func(t *testing.T, dir string) {
			md := filepath.Join(dir, "metadata.yaml")
			os.Rename(md, filepath.Join(dir, "..", "md-elsewhere"))
			symlink(t, "../md-elsewhere", md)
		}, store.StateReadable, nil},
		{"rename tombstone: no size, no checksum (swamp-format §9.22)", func(t *testing.T, dir string) {
			md, _ := os.ReadFile(filepath.Join(dir, "metadata.yaml"))
			s := string(md)
			s = s[:strings.Index(s, "size:")] + "lifecycle: deleted\nrenamedTo: other\n"
			writeFile(t, filepath.Join(dir, "metadata.yaml"), []byte(s))
			writeFile(t, filepath.Join(dir, "raw"), nil) // nothing to compare it with
		}, store.StateReadable, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			item := itemWithVersions(t, 2)
			tc.damage(t, filepath.Join(item, "2"))
			v, err := store.ReadVersion(fsx.Real(), item, 2, store.CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if v.State != tc.state || !reflect.DeepEqual(codes(v.Problems), tc.codes) {
				t.Fatalf("state %v, problems %v; want %v, %v", v.State, v.Problems, tc.state, tc.codes)
			}
			if v.Readable() != (tc.state == store.StateReadable) {
				t.Errorf("Readable() = %v in state %v", v.Readable(), v.State)
			}
			for _, p := range v.Problems {
				if !strings.HasPrefix(p.Path, filepath.Join(item, "2")) || !strings.Contains(p.Message, "version 2") {
					t.Errorf("problem %+v must name its file and version", p)
				}
			}
		})
	}
}

func TestReadVersionStreaming(t *testing.T) {
	item := itemWithVersions(t, 1)
	writeFile(t, filepath.Join(item, "2", "raw"), []byte("line 1\n"))
	v, _ := store.ReadVersion(fsx.Real(), item, 2, store.CheckOptions{})
	if !v.Streaming() || v.Readable() || v.State != store.StateIncomplete || v.RawSize != 7 {
		t.Errorf("streaming version: %+v", v)
	}
	if v, _ := store.ReadVersion(fsx.Real(), item, 1, store.CheckOptions{}); v.Streaming() {
		t.Error("a complete version is not streaming")
	}
}

func TestReadVersionChecksumOnlyWhenAsked(t *testing.T) {
	item := itemWithVersions(t, 1)
	raw := filepath.Join(item, "1", "raw")
	// Same length, other bytes: what a crash can leave on a filesystem that
	// commits the size before the data.
	writeFile(t, raw, []byte(strings.Repeat("\x00", len(content(1)))))

	v, _ := store.ReadVersion(fsx.Real(), item, 1, store.CheckOptions{})
	if !v.Readable() {
		t.Fatalf("without VerifyChecksum: %v", v.Problems)
	}
	v, _ = store.ReadVersion(fsx.Real(), item, 1, store.CheckOptions{VerifyChecksum: true})
	if v.Readable() || !reflect.DeepEqual(codes(v.Problems), []store.Code{store.CodeChecksumMismatch}) || v.Problems[0].Path != raw {
		t.Fatalf("with VerifyChecksum: %v", v.Problems)
	}
	// And an intact version passes the hash.
	good := itemWithVersions(t, 1)
	if v, _ := store.ReadVersion(fsx.Real(), good, 1, store.CheckOptions{VerifyChecksum: true}); !v.Readable() {
		t.Fatalf("intact version with VerifyChecksum: %v", v.Problems)
	}
}

func TestReadVersionRejectsNonPositive(t *testing.T) {
	item := itemWithVersions(t, 1)
	for _, v := range []int64{0, -1} {
		if _, err := store.ReadVersion(fsx.Real(), item, v, store.CheckOptions{}); !errors.Is(err, store.ErrInvalidVersion) {
			t.Errorf("ReadVersion(%d): err = %v", v, err)
		}
	}
}
