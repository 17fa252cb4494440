package store_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/fsx"
	"github.com/swampj/swampj/ops/store"
)

func TestReadContentServesReadableVersion(t *testing.T) {
	item := itemWithVersions(t, 1, 2)
	f, v, err := store.ReadContent(fsx.Real(), item, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil || string(got) != string(content(2)) || v.Number != 2 {
		t.Fatalf("got %q, %v (version %d)", got, err, v.Number)
	}
}

// TestReadContentRefusesUnreadable: `data get` on an empty version is an
// error that says why, never empty output (#3955).
func TestReadContentRefusesUnreadable(t *testing.T) {
	item := itemWithVersions(t, 1, 2)
	writeFile(t, filepath.Join(item, "2", "metadata.yaml"), nil)
	writeFile(t, filepath.Join(item, "2", "raw"), nil)

	f, v, err := store.ReadContent(fsx.Real(), item, 2)
	var ue *store.UnreadableError
	if f != nil || !errors.As(err, &ue) {
		t.Fatalf("got file %v, err %v; want *UnreadableError", f, err)
	}
	if ue.Path != filepath.Join(item, "2") || !ue.Has(store.CodeMetadataEmpty) || !ue.Has(store.CodeRawEmpty) || v == nil {
		t.Fatalf("error %+v", ue)
	}
	if msg := err.Error(); !strings.Contains(msg, "metadata.yaml is zero bytes") || !strings.Contains(msg, "raw is zero bytes") {
		t.Errorf("message %q must say what is wrong with which file", msg)
	}

	if _, _, err := store.ReadContent(fsx.Real(), item, 7); !errors.As(err, &ue) || !ue.Has(store.CodeVersionMissing) {
		t.Errorf("missing version: err = %v", err)
	}
}

// TestReadContentVerifiesBeforeServing: raw of the right size but other
// bytes is refused before a byte is handed out, naming raw.
func TestReadContentVerifiesBeforeServing(t *testing.T) {
	item := itemWithVersions(t, 1)
	writeFile(t, filepath.Join(item, "1", "raw"), []byte(strings.Repeat("\x00", len(content(1)))))
	f, _, err := store.ReadContent(fsx.Real(), item, 1)
	var ue *store.UnreadableError
	if f != nil || !errors.As(err, &ue) || !ue.Has(store.CodeChecksumMismatch) || ue.Problems[0].Path != filepath.Join(item, "1", "raw") {
		t.Fatalf("file %v, err = %v; want a checksum mismatch before any byte", f, err)
	}
}

// TestReadContentChecksAgainAtEOF: raw changed after it was verified is
// reported by the read that reaches EOF.
func TestReadContentChecksAgainAtEOF(t *testing.T) {
	item := itemWithVersions(t, 1)
	f, _, err := store.ReadContent(fsx.Real(), item, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	writeFile(t, filepath.Join(item, "1", "raw"), []byte(strings.Repeat("\x00", len(content(1)))))
	_, err = io.ReadAll(f)
	var ue *store.UnreadableError
	if !errors.As(err, &ue) || !ue.Has(store.CodeChecksumMismatch) {
		t.Fatalf("err = %v; want checksum mismatch at EOF", err)
	}
}

// TestReadContentContextEndsHashing: an ended context stops the hashing.
func TestReadContentContextEndsHashing(t *testing.T) {
	item := itemWithVersions(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if f, _, err := store.ReadContentContext(ctx, fsx.Real(), item, 1); f != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("file %v, err %v; want context.Canceled", f, err)
	}
}
