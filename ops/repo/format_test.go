package repo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/swampj/swampj/fsx"
)

// writeMarker puts content at base/datastore-format.json.
func writeMarker(t *testing.T, base, content string) string {
	t.Helper()
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(base, FormatMarkerName)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheckDatastoreFormatAccepts(t *testing.T) {
	for _, c := range []struct {
		name, marker string
		format       int64
	}{
		{"format 2", `{"format":2}`, 2},
		{"format 5 readable by 2", `{"format": 5, "minReaderFormat": 2, "writtenBy": "20270101.0.0"}`, 5},
		{"format 1", `{"format":1}`, 1},
		{"unknown keys", `{"format":2,"layout":{"x":[1,2]},"commitLog":true}`, 2},
		{"integral double", `{"format":2.0,"minReaderFormat":1e0}`, 2},
		{"byte order mark", "\xef\xbb\xbf{\"format\":2}", 2},
		{"repeated key, last wins", `{"format":3,"format":2}`, 2},
		{"whitespace", " \n\t{ \"format\" : 2 }\r\n", 2},
		{"exactly 64 KiB", `{"format":2}` + strings.Repeat(" ", FormatMarkerMaxBytes-len(`{"format":2}`)), 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			p := writeMarker(t, base, c.marker)
			got, err := CheckDatastoreFormat(nil, base)
			if err != nil {
				t.Fatalf("CheckDatastoreFormat: %v", err)
			}
			if got.Marker == nil || got.Format != c.format || got.MarkerPath != p {
				t.Errorf("got %+v (marker %+v), want format %d at %s", got, got.Marker, c.format, p)
			}
		})
	}
}

func TestCheckDatastoreFormatNoMarker(t *testing.T) {
	base := t.TempDir()
	got, err := CheckDatastoreFormat(nil, base)
	if err != nil || got.Marker != nil || got.Format != UnmarkedFormat {
		t.Fatalf("no marker: %+v, %v", got, err)
	}
	// A base that does not exist, or is a file, has no marker under it.
	for _, b := range []string{filepath.Join(base, "missing", "deeper"), writeMarker(t, filepath.Join(base, "f"), "x")} {
		if got, err := CheckDatastoreFormat(nil, b); err != nil || got.Marker != nil {
			t.Errorf("base %s: %+v, %v", b, got, err)
		}
	}
}

func TestCheckDatastoreFormatRefusesNewerReader(t *testing.T) {
	for _, c := range []struct{ name, marker, want string }{
		{"format 3", `{"format":3}`, "uses format 3"},
		{"min reader 3", `{"format":4,"minReaderFormat":3,"writtenBy":"20270301.0.0-sha.abc"}`, "reading it needs format 3 support"},
		{"format 3 below a format-2 reader bound is still 3", `{"format":3,"minReaderFormat":3}`, "uses format 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			p := writeMarker(t, base, c.marker)
			_, err := CheckDatastoreFormat(nil, base)
			var ue *FormatUnsupportedError
			if !errors.As(err, &ue) || !errors.Is(err, ErrDatastoreFormat) {
				t.Fatalf("err = %v, want *FormatUnsupportedError", err)
			}
			msg := err.Error()
			for _, w := range []string{p, c.want, "supports format 2 only", "Nothing was changed."} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if ue.Code() != "datastore_format_unsupported" {
				t.Errorf("code %q", ue.Code())
			}
		})
	}
}

func TestCheckDatastoreFormatWrittenByIsSanitised(t *testing.T) {
	base := t.TempDir()
	writeMarker(t, base, `{"format":9,"writtenBy":"\u001b[31mevil\u0007 `+strings.Repeat("v", 100)+`"}`)
	_, err := CheckDatastoreFormat(nil, base)
	if err == nil || strings.ContainsAny(err.Error(), "\x1b\x07") || !strings.Contains(err.Error(), "[31mevil "+strings.Repeat("v", 55)+"…") {
		t.Fatalf("err = %q", err)
	}
}

func TestCheckDatastoreFormatRefusesInvalid(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, base string)
		want  string
	}{
		{"directory", func(t *testing.T, base string) {
			if err := os.Mkdir(filepath.Join(base, FormatMarkerName), 0o755); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a directory)"},
		{"symlink to a valid marker", func(t *testing.T, base string) {
			writeMarker(t, filepath.Join(base, "elsewhere"), `{"format":2}`)
			if err := os.Symlink(filepath.Join(base, "elsewhere", FormatMarkerName), filepath.Join(base, FormatMarkerName)); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a symbolic link)"},
		{"named pipe", func(t *testing.T, base string) {
			if err := syscall.Mkfifo(filepath.Join(base, FormatMarkerName), 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, "not a regular file (a named pipe)"},
		{"65 KiB", func(t *testing.T, base string) {
			writeMarker(t, base, `{"format":2}`+strings.Repeat(" ", 65*1024))
		}, "larger than 65536 bytes"},
		{"one byte over 64 KiB", func(t *testing.T, base string) {
			writeMarker(t, base, `{"format":2}`+strings.Repeat(" ", FormatMarkerMaxBytes+1-len(`{"format":2}`)))
		}, "65537 bytes"},
		{"invalid UTF-8", func(t *testing.T, base string) { writeMarker(t, base, "{\"format\":2,\"writtenBy\":\"\xff\xfe\"}") }, "not UTF-8"},
		{"JSON array", func(t *testing.T, base string) { writeMarker(t, base, `[{"format":2}]`) }, "not a JSON object"},
		{"null", func(t *testing.T, base string) { writeMarker(t, base, `null`) }, "not a JSON object"},
		{"empty file", func(t *testing.T, base string) { writeMarker(t, base, ``) }, "not valid JSON"},
		{"truncated", func(t *testing.T, base string) { writeMarker(t, base, `{"format":`) }, "not valid JSON"},
		{"no format", func(t *testing.T, base string) { writeMarker(t, base, `{"minReaderFormat":2}`) }, "format must be a positive integer"},
		{"format as string", func(t *testing.T, base string) { writeMarker(t, base, `{"format":"2"}`) }, "format must be"},
		{"format zero", func(t *testing.T, base string) { writeMarker(t, base, `{"format":0}`) }, "format must be"},
		{"format fraction", func(t *testing.T, base string) { writeMarker(t, base, `{"format":2.5}`) }, "format must be"},
		{"format beyond safe integers", func(t *testing.T, base string) { writeMarker(t, base, `{"format":9007199254740992}`) }, "format must be"},
		{"format infinite", func(t *testing.T, base string) { writeMarker(t, base, `{"format":1e400}`) }, "format must be"},
		{"format key in another case", func(t *testing.T, base string) { writeMarker(t, base, `{"Format":2}`) }, "format must be"},
		{"minReaderFormat null", func(t *testing.T, base string) { writeMarker(t, base, `{"format":2,"minReaderFormat":null}`) }, "minReaderFormat must be"},
		{"minReaderFormat negative", func(t *testing.T, base string) { writeMarker(t, base, `{"format":2,"minReaderFormat":-2}`) }, "minReaderFormat must be"},
		{"writtenBy number", func(t *testing.T, base string) { writeMarker(t, base, `{"format":2,"writtenBy":5}`) }, "writtenBy must be a string"},
		{"writtenBy null", func(t *testing.T, base string) { writeMarker(t, base, `{"format":2,"writtenBy":null}`) }, "writtenBy must be a string"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			c.setup(t, base)
			_, err := CheckDatastoreFormat(nil, base)
			var ie *FormatMarkerInvalidError
			if !errors.As(err, &ie) || !errors.Is(err, ErrDatastoreFormat) {
				t.Fatalf("err = %v, want *FormatMarkerInvalidError", err)
			}
			msg := err.Error()
			for _, w := range []string{filepath.Join(base, FormatMarkerName), c.want, "Nothing was changed."} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			if ie.Code() != "datastore_format_marker_invalid" {
				t.Errorf("code %q", ie.Code())
			}
		})
	}
}

// deniedFS is the real disk, except that reading one file fails with
// EACCES, as it does for a non-root user on a mode-000 file (the tests
// may run as root, whom the kernel never denies).
type deniedFS struct {
	fsx.FS
	path string
}

func (d deniedFS) ReadFile(name string) ([]byte, error) {
	if filepath.Clean(name) == d.path {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return d.FS.ReadFile(name)
}

func TestCheckDatastoreFormatUnreadable(t *testing.T) {
	base := t.TempDir()
	p := writeMarker(t, base, `{"format":2}`)
	var fsys fsx.FS = deniedFS{FS: fsx.Real(), path: p}
	if os.Geteuid() != 0 {
		// A real EACCES.
		if err := os.Chmod(p, 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(p, 0o644) })
		fsys = nil
	}
	got, err := CheckDatastoreFormat(fsys, base)
	var ue *FormatMarkerUnreadableError
	if !errors.As(err, &ue) || !errors.Is(err, ErrDatastoreFormat) || !errors.Is(err, syscall.EACCES) {
		t.Fatalf("err = %v, want *FormatMarkerUnreadableError wrapping EACCES", err)
	}
	var inv *FormatMarkerInvalidError
	var uns *FormatUnsupportedError
	if errors.As(err, &inv) || errors.As(err, &uns) {
		t.Errorf("an unreadable marker must be told apart from an invalid or unsupported one: %v", err)
	}
	if ue.Code() != "datastore_format_marker_unreadable" || got.Format != UnmarkedFormat || got.Marker != nil {
		t.Errorf("code %q, found %+v", ue.Code(), got)
	}
	for _, w := range []string{p, "Nothing was changed."} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
	if !strings.Contains(ue.Warning(), p) {
		t.Errorf("warning %q", ue.Warning())
	}
}

// The check only reads: no create, write, rename, remove or sync, whatever
// it finds.
func TestCheckDatastoreFormatChangesNothing(t *testing.T) {
	for _, marker := range []string{"", `{"format":2}`, `{"format":3}`, `[]`} {
		base := t.TempDir()
		if marker != "" {
			writeMarker(t, base, marker)
		}
		f := fsx.NewFault(nil)
		_, _ = CheckDatastoreFormat(f, base)
		if ops := f.Trace(); len(ops) != 0 {
			t.Errorf("marker %q: the check mutated the disk: %v", marker, ops)
		}
	}
}

func TestRepoCheckFormatUsesTheUnnamespacedBase(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "store")
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte("datastore:\n  type: filesystem\n  path: "+base+"\n  namespace: ns1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeMarker(t, base, `{"format":3}`)
	// A marker inside the namespace is not the datastore's marker.
	writeMarker(t, filepath.Join(base, "ns1"), `{"format":2}`)
	r, err := Load(nil, dir, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CheckFormat(nil); !errors.Is(err, ErrDatastoreFormat) {
		t.Fatalf("CheckFormat = %v, want the root marker's refusal", err)
	}
}

func TestCheckRepoFormatWithoutALoadableConfig(t *testing.T) {
	dir := t.TempDir()
	writeMarker(t, filepath.Join(dir, LocalDirName), `{"format":3}`)
	// No .swamp.yaml at all (a repo whose configuration is lost): the
	// default base is checked.
	if _, err := CheckRepoFormat(nil, dir, func(string) string { return "" }); !errors.Is(err, ErrDatastoreFormat) {
		t.Fatalf("no config: %v", err)
	}
	// A configuration naming another base: that base is checked.
	other := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte("datastore:\n  type: filesystem\n  path: "+other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := CheckRepoFormat(nil, dir, func(string) string { return "" }); err != nil || got.MarkerPath != filepath.Join(other, FormatMarkerName) {
		t.Fatalf("configured base: %+v %v", got, err)
	}
}

// The committed fixtures (testdata/datastore-format): the name says the outcome.
func TestFormatMarkerFixtures(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "datastore-format")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		n++
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		base := t.TempDir()
		writeMarker(t, base, string(data))
		_, err = CheckDatastoreFormat(nil, base)
		var ue *FormatUnsupportedError
		var ie *FormatMarkerInvalidError
		switch {
		case strings.HasPrefix(e.Name(), "accepted-") && err != nil,
			strings.HasPrefix(e.Name(), "refused-") && !errors.As(err, &ue),
			strings.HasPrefix(e.Name(), "invalid-") && !errors.As(err, &ie):
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
	if n < 7 {
		t.Errorf("%d fixtures", n)
	}
}
