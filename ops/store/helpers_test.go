package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swampj/swampj/ops/store"
)

// modelID is a UUID-shaped model id, as swamp writes them (swamp-format §2.2).
const modelID = "3f9c2b7e-5a1d-4e8f-9b6c-0d2e4f6a8b1c"

// metadataYAML renders a metadata.yaml in swamp's byte layout (swamp-format §2.4.2 A) for
// a resource whose raw content is raw.
func metadataYAML(name string, v int64, raw []byte) []byte {
	sum := sha256.Sum256(raw)
	if strings.Trim(name, "0123456789") == "" {
		name = "'" + name + "'" // swamp quotes strings that would read as numbers (swamp-format §9.1)
	}
	return fmt.Appendf(nil, `id: 7d3f2c1e-9a4b-4c2d-8e1f-0a1b2c3d4e5f
name: %s
version: %d
contentType: application/json
lifetime: infinite
garbageCollection: 10
streaming: false
tags:
  type: resource
  specName: %s
  modelName: hello-shell
ownerDefinition:
  ownerType: model-method
  ownerRef: %s
createdAt: '2026-08-01T12:00:00.000Z'
size: %d
checksum: %s
`, name, v, name, modelID, len(raw), hex.EncodeToString(sum[:]))
}

// writeFile creates path (and its parents) with data.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// writeVersion writes a complete, readable version v of the item in itemDir.
func writeVersion(t testing.TB, itemDir string, v int64, raw []byte) {
	t.Helper()
	dir := filepath.Join(itemDir, fmt.Sprint(v))
	writeFile(t, filepath.Join(dir, "raw"), raw)
	writeFile(t, filepath.Join(dir, "metadata.yaml"), metadataYAML(filepath.Base(itemDir), v, raw))
}

// writeLatest writes the `latest` pointer as swamp does: decimal, no newline.
func writeLatest(t testing.TB, itemDir string, v int64) {
	t.Helper()
	writeFile(t, filepath.Join(itemDir, "latest"), fmt.Append(nil, v))
}

// content is a version's raw payload: compact JSON, like a resource.
func content(v int64) []byte { return fmt.Appendf(nil, `{"n":%d}`, v) }

// codes lists the codes of ps, for comparisons.
func codes(ps []store.Problem) []store.Code {
	var cs []store.Code
	for _, p := range ps {
		cs = append(cs, p.Code)
	}
	return cs
}
